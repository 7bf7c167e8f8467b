"""The P x Q force-matrix decomposition of all-pairs forces (the IUMD seed's MPI algorithm).

The N x N force matrix (targets down, sources across) is cut into P block rows and Q block
columns, one block per rank of a P x Q grid (rank = row * Q + column).  Atoms are numbered in id
order; target block ``r`` and source block ``c`` are contiguous ranges of that order
(:func:`~pycumd.parallel.grid.block_range`).  Each step, on rank (r, c):

1. the column's source positions: each rank puts its targets that fall in source block ``c`` into a
   zeroed buffer, and a sum all-reduce over the process column delivers the whole block (every atom
   is the target of exactly one rank of the column; x + 0 = x exactly);
2. the all-pairs kernel with the rank's targets and that source block only
   (:meth:`~pycumd.neighbors.allpairs.AllPairsForces.compute_block`: the self pair skipped by index);
3. a sum all-reduce of the forces (and, on reporting steps, per-atom energies and virials) over the
   process row: every rank of the row then holds the total force on its targets and integrates them
   (the Q ranks of a row repeat the same O(N/P) update, as IUMD does, instead of communicating it).

Energies and the kinetic energy are summed over one process column (each atom once).
"""

from __future__ import annotations

import numpy as np

from ..contracts import ForceEvaluatorBase
from ..system import System
from .decomposition import Decomposition
from .grid import block_range, choose_matrix_grid


class MatrixDecomposition(Decomposition):
    """Ranks as a P x Q grid over the force matrix; this rank's targets as its State.

    Parameters
    ----------
    system : System
        The whole system (every rank passes the same one).
    comm : Communicator
    grid : (P, Q) or "PxQ", optional
        Default: the most square (:func:`~pycumd.parallel.grid.choose_matrix_grid`).
    """

    kind = "all-pairs force matrix"

    def __init__(self, system: System, comm, grid=None):
        self.P, self.Q = choose_matrix_grid(comm.size, grid)
        self.row, self.column = divmod(comm.rank, self.Q)
        self.row_comm = comm.split(self.row, self.column)
        self.column_comm = comm.split(self.column, self.row)
        super().__init__(comm, self.column_comm, self.column == 0, system.n_atoms, system.box,
                         system.masses, system.units)
        n = system.n_atoms
        if n < max(self.P, self.Q):
            raise ValueError(f"{n} atoms cannot fill a {self.P} x {self.Q} force matrix grid")
        self.targets = block_range(n, self.P, self.row)
        self.sources = block_range(n, self.Q, self.column)
        order = np.argsort(system.ids, kind="stable")
        self._order = order
        self._system = system
        self.source_types = np.ascontiguousarray(system.types[order[slice(*self.sources)]])

    def local_system(self) -> System:
        s, idx = self._system, self._order[slice(*self.targets)]
        return System(s.box, s.positions[idx], s.masses, s.units, types=s.types[idx],
                      velocities=s.velocities[idx], images=s.images[idx], ids=s.ids[idx],
                      charges=None if s.charges is None else s.charges[idx])

    def describe(self) -> str:
        return f"{self.kind} {self.P} x {self.Q} over {self.comm.size} MPI ranks ({self.comm.transport})"


class MatrixForces(ForceEvaluatorBase):
    """Force evaluator of one block of the force matrix; the interface of
    :class:`~pycumd.neighbors.allpairs.AllPairsForces` (``compute(state, neighbors, with_energy)``).

    Parameters
    ----------
    all_pairs : AllPairsForces
        The kernel (built with ``fast=False`` on the GPU: the Yukawa fast path takes one array).
    decomposition : MatrixDecomposition
    backend : Backend
    """

    def __init__(self, all_pairs, decomposition: MatrixDecomposition, backend):
        self.all_pairs = all_pairs
        self.potential = all_pairs.potential
        self.d = decomposition
        self.backend = backend
        self._sources = None
        self._source_types = backend.xp.asarray(decomposition.source_types, dtype=np.int32)

    def gather_sources(self, state):
        """Positions of the column's source block, from the targets of the column's ranks (step 1)."""
        (t0, t1), (s0, s1) = self.d.targets, self.d.sources
        if self._sources is None:
            self._sources = self.backend.xp.zeros((s1 - s0,) + tuple(state.positions.shape[1:]),
                                                  dtype=state.positions.dtype)
        src = self._sources
        src[...] = 0
        a, b = max(t0, s0), min(t1, s1)
        if a < b:
            src[a - s0:b - s0] = state.positions[a - t0:b - t0]
        return self.d.column_comm.allreduce_sum(src)

    def compute(self, state, neighbors, with_energy: bool) -> None:
        """Forces (and energies/virials when asked) on this rank's targets from all atoms."""
        sources = self.gather_sources(state)
        self.all_pairs.compute_block(state, sources, self._source_types, self.d.targets[0] - self.d.sources[0],
                                     with_energy)
        row = self.d.row_comm
        row.allreduce_sum(state.forces)
        if with_energy:
            row.allreduce_sum(state.energy)
            row.allreduce_sum(state.virial)
