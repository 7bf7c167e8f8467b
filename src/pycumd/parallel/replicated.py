"""All-pairs forces over MPI ranks with every atom on every rank: the pairs split, one force all-reduce.

For all-pairs forces (ions, pasta) the work is O(N^2) and the data O(N), so a rank can hold every
atom: each rank computes a share of the pairs, a sum all-reduce over the ranks completes every
atom's force (and, on reporting steps, its energy and virial), and every rank then integrates every
atom with the same numbers, so the copies stay identical without any exchange of positions.  Per
step one all-reduce of ``N x 3`` force values crosses the ranks.

The share (:class:`~pycumd.neighbors.allpairs.AllPairsForces` ``share=(rank, size)``):

* the Yukawa fast path (single and mixed precision): a contiguous range of the Newton kernel's tile
  pairs of about equal work (:func:`~pycumd.neighbors.allpairs.newton_block_share`): every unordered
  pair is computed once over all ranks;
* otherwise (double precision, other potentials, the CPU, deterministic mode): the targets of
  ``block_range(N, P, rank)`` against every source with the serial kernel's order, zeros for the
  other targets, so that the sum over the ranks is the 1-rank result bit for bit.

This is the default decomposition of all-pairs runs; the P x Q force matrix of the IUMD seed
(:mod:`pycumd.parallel.matrix`) is taken when a ``matrix_grid`` is given.  See docs/scaling.md for
the measurements behind the choice.
"""

from __future__ import annotations

from ..contracts import ForceEvaluatorBase
from ..system import System
from .decomposition import Decomposition


class ReplicatedDecomposition(Decomposition):
    """Every rank holds every atom; rank 0's copy is the one gathered and reported.

    Parameters
    ----------
    system : System
        The whole system (every rank passes the same one).
    comm : Communicator
    """

    kind = "all pairs, replicated atoms"

    def __init__(self, system: System, comm):
        # each rank's atoms are all atoms: sums of kinetic and potential energy over one rank
        owners = comm.split(comm.rank, 0)
        super().__init__(comm, owners, comm.rank == 0, system.n_atoms, system.box, system.masses, system.units)
        self._system = system
        self.share_kind = None              # set by ReplicatedForces: "tile pairs" or "targets"

    def local_system(self) -> System:
        return self._system.copy()

    def describe(self) -> str:
        split = f", {self.share_kind} split" if self.share_kind else ""
        return f"{self.kind} over {self.comm.size} MPI ranks{split} ({self.comm.transport})"


class ReplicatedForces(ForceEvaluatorBase):
    """This rank's share of the all-pairs forces, completed by a sum all-reduce over the ranks.

    Parameters
    ----------
    all_pairs : AllPairsForces
        Built with ``share=(rank, size)``.
    decomposition : ReplicatedDecomposition
    """

    def __init__(self, all_pairs, decomposition: ReplicatedDecomposition):
        self.all_pairs = all_pairs
        self.potential = all_pairs.potential
        self.d = decomposition
        decomposition.share_kind = "tile pairs" if all_pairs.fast else "targets"

    def compute(self, state, neighbors, with_energy: bool) -> None:
        """Forces (and energies/virials when asked) on every atom from every atom."""
        self.all_pairs.compute(state, neighbors, with_energy)
        comm = self.d.comm
        comm.allreduce_sum(state.forces)
        if with_energy:
            comm.allreduce_sum(state.energy)
            comm.allreduce_sum(state.virial)


__all__ = ["ReplicatedDecomposition", "ReplicatedForces"]
