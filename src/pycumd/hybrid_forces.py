"""Forces of ``pair_style hybrid/overlay`` and ``hybrid`` (:class:`~pycumd.potentials.hybrid.PairHybrid`):
the EAM sub-style's two passes (:class:`~pycumd.eam_forces.EAMForces`) and the pair sub-style's pass
(:class:`~pycumd.forces.PairForces`) over one neighbour list, summed.

Each evaluator reads the tables of its own type pairs (the others zero or empty, see
:mod:`pycumd.potentials.hybrid`) and tests its own cutoff per pair; the list's cutoff is the larger
of the two.  The EAM pass writes the state's forces, per-atom energies and virials, the pair pass
writes its own arrays, which are then added: ``f_i = f_i(EAM) + f_i(pair)``, and with energies the
same for ``e_i`` and ``W_i`` (LAMMPS accumulates the sub-styles' pairs into one sum; the two orders
differ in the last bits only).  Works over the CPU's half or full list in one process and over MPI
spatial domains (inside :class:`~pycumd.parallel.domains.DomainForces`: the EAM pass forwards the
ghosts' F'(rho), the pair pass reads the extended rows).  CPU only: a GPU run stops at construction.
"""

from __future__ import annotations

import numpy as np

from .contracts import ForceEvaluatorBase
from .eam_forces import EAMForces
from .forces import PairForces
from .potentials.hybrid import GPU_REFUSAL


class _PairOutputs:
    """What the pair pass reads and writes: the state's (or a domain view's) members, with its own
    forces, energy and virial arrays of the same shapes."""

    def __init__(self, state, forces, energy, virial):
        self._state = state
        self.forces, self.energy, self.virial = forces, energy, virial

    def __getattr__(self, name):
        return getattr(self._state, name)


class HybridForces(ForceEvaluatorBase):
    """Evaluates a :class:`~pycumd.potentials.hybrid.PairHybrid` over a neighbour list (CPU).

    Parameters
    ----------
    potential : PairHybrid
    n_types : int
    backend, precision : as chosen by the Simulation (a GPU backend raises NotImplementedError)
    lanes : int, optional
        The pair pass's summation lanes (:class:`~pycumd.forces.PairForces`).
    """

    capturable = False

    def __init__(self, potential, n_types: int, backend, precision, lanes: int | None = None):
        if backend.is_gpu:
            raise NotImplementedError(GPU_REFUSAL.format(style=potential.style))
        self.potential = potential
        self.n_types = n_types
        self.backend = backend
        self.eam = EAMForces(potential.eam, n_types, backend, precision, tables=potential.eam_table(n_types))
        self.pair = PairForces(potential.pair, n_types, backend, precision, lanes=lanes,
                               table=potential.pair_table(n_types))
        self._arrays = None

    def _outputs_of(self, state) -> _PairOutputs:
        """The pair pass's view of ``state``, its arrays allocated at the first call of a shape."""
        shapes = (state.forces.shape, state.energy.shape, state.virial.shape)
        if self._arrays is None or tuple(a.shape for a in self._arrays) != shapes:
            self._arrays = tuple(np.zeros(shape) for shape in shapes)
        return _PairOutputs(state, *self._arrays)

    def compute(self, state, neighbors, with_energy: bool) -> None:
        """Forces (and with ``with_energy`` per-atom energies and virials) of the targets: the EAM
        pass into the state, the pair pass into its own arrays, then added."""
        self.eam.compute(state, neighbors, with_energy)
        outputs = self._outputs_of(state)
        self.pair.compute(outputs, neighbors, with_energy)
        state.forces += outputs.forces
        if with_energy:
            state.energy += outputs.energy
            state.virial += outputs.virial
