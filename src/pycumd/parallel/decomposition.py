"""What every decomposition gives the Simulation: global reductions, collective checks, gathers.

A decomposition (:class:`~pycumd.parallel.matrix.MatrixDecomposition`,
:class:`~pycumd.parallel.domains.DomainDecomposition`) leaves each rank a :class:`~pycumd.state.State`
of the atoms it integrates (its *owned* atoms) and a force evaluator and neighbour structure that
communicate inside their calls.  The step loop is the serial one; what differs is here:

* :class:`DistributedBookkeeping`: kinetic and potential energy, virial and atom count summed over
  the ranks that own distinct atoms (:attr:`Decomposition.owners`); the finiteness check is
  collective, so a blow-up on one rank raises the same :class:`SimulationError` (naming the step and
  the atom) on every rank, never a hang.
* :meth:`Decomposition.gather_arrays`: every owned atom's arrays, on every rank, in id order (the
  Simulation's ``system()``, trajectory frames; only rank 0 writes them).
"""

from __future__ import annotations

import numpy as np

from ..bookkeeping import Bookkeeping, SimulationError
from ..system import System


class Decomposition:
    """Base of the decompositions.

    Attributes
    ----------
    comm : Communicator
        All ranks of the run.
    owners : Communicator
        Ranks whose owned atoms are disjoint and together all atoms (every rank for spatial domains;
        one process column for the force matrix): global sums are taken over it.
    owns : bool
        Whether this rank's atoms count in gathers (a member of one fixed owners group).
    n_atoms : int
        Atoms of the whole system.
    """

    kind = "decomposed"
    #: the decomposition follows a barostat's box changes (:meth:`set_box`): spatial domains do; the
    #: all-pairs decompositions, whose ranks hold copies of the atoms, do not yet
    follows_box_changes = False

    def __init__(self, comm, owners, owns: bool, n_atoms: int, box, masses, units):
        self.comm = comm
        self.owners = owners
        self.owns = owns
        self.n_atoms = int(n_atoms)
        self.box = box
        self.masses = np.asarray(masses, dtype=np.float64)
        self.units = units

    def set_box(self, box) -> None:
        raise NotImplementedError(f"{self.kind} do not follow box changes (barostats) over MPI ranks yet")

    def bookkeeping(self, components, units, volume) -> "DistributedBookkeeping":
        return DistributedBookkeeping(components, units, volume, self)

    def gather_arrays(self, state, backend, extra=()) -> dict:
        """Positions (N, 3) float64, velocities (N, 3), images (N, 3) int32, types (N,) int32 and
        ids (N,) int64 of all atoms, in id order, on every rank (a collective call); ``extra``: more
        per-atom arrays of the state by name, as float64 (``per_atom_mass``, ``forces``, ``energy``,
        ``virial``)."""
        if self.owns:
            local = {"positions": state.host_positions(backend), "velocities": state.host_values("velocities", backend),
                     "images": backend.to_host(state.images), "types": backend.to_host(state.types),
                     "ids": backend.to_host(state.ids)}
            if state.charges is not None:
                local["charges"] = backend.to_host(state.charges)
            for name in extra:
                local[name] = state.host_values(name, backend)
        else:
            local = None
        parts = [p for p in self.comm.allgather(local) if p is not None]
        out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        order = np.argsort(out["ids"], kind="stable")
        out = {k: v[order] for k, v in out.items()}
        if len(out["ids"]) != self.n_atoms:
            raise SimulationError(f"the ranks hold {len(out['ids'])} atoms, the system has {self.n_atoms}: "
                                  f"atoms were lost or duplicated in the decomposition")
        return out

    def gather_system(self, state, backend) -> System:
        """The whole system as a host :class:`System` on every rank (collective)."""
        a = self.gather_arrays(state, backend)
        return System(self.box, a["positions"], self.masses, self.units, types=a["types"],
                      velocities=a["velocities"], images=a["images"], ids=a["ids"], charges=a.get("charges"))

    def report_view(self, simulation) -> "GatheredView":
        """What reporters' snapshots read: the simulation with its state gathered on demand."""
        return GatheredView(simulation, self)

    def describe(self) -> str:
        return f"{self.kind} over {self.comm.size} MPI ranks ({self.comm.transport})"


class GatheredView:
    """A simulation seen with all its atoms: ``state`` is gathered (collectively, once) when first
    read; everything else is the simulation's.  Snapshots of decomposed runs are taken of this."""

    def __init__(self, simulation, decomposition):
        self._sim = simulation
        self._decomposition = decomposition
        self._state = None

    def __getattr__(self, name):
        return getattr(self._sim, name)

    @property
    def backend(self):
        from ..backend import select

        return select("cpu")

    @property
    def state(self):
        if self._state is None:
            a = self._decomposition.gather_arrays(self._sim.state, self._sim.backend,
                                                  extra=("per_atom_mass", "forces", "energy", "virial"))
            self._state = GatheredState(a, self._sim.state.step)
        return self._state


class GatheredState:
    """Every atom's per-atom arrays on the host, in id order (float64 where they are numbers): what
    :class:`GatheredView` gives reporters and thermo keywords in place of a rank's State (the
    ``values``/``host_values``/``host_positions`` readers of :class:`~pycumd.state.State`)."""

    lo = None

    def __init__(self, arrays: dict, step: int):
        self.__dict__.update(arrays)
        self.charges = arrays.get("charges")
        self.step = step

    @property
    def n_atoms(self) -> int:
        return len(self.ids)

    def values(self, name: str, backend=None):
        return getattr(self, name)

    def host_values(self, name: str, backend=None) -> np.ndarray:
        return np.asarray(getattr(self, name), dtype=np.float64)

    def host_positions(self, backend=None) -> np.ndarray:
        return self.host_values("positions")[:, :3]


class DistributedBookkeeping(Bookkeeping):
    """:class:`~pycumd.bookkeeping.Bookkeeping` with sums over the owner ranks and collective checks."""

    def __init__(self, components, units, volume, decomposition):
        super().__init__(components, units, volume)
        self.d = decomposition

    @property
    def n_atoms(self) -> int:
        return self.d.n_atoms

    def kinetic_energy(self) -> float:
        return self.d.owners.sum(super().kinetic_energy())

    def potential_energy(self) -> float:
        return self.d.owners.sum(super().potential_energy())

    def virial_trace(self) -> float:
        return self.d.owners.sum(super().virial_trace())

    def virial_diagonal(self) -> np.ndarray:
        return self.d.owners.sum(super().virial_diagonal())

    def kinetic_tensor(self) -> np.ndarray:
        return self.d.owners.sum(super().kinetic_tensor())

    def bonded_energies(self) -> dict:
        """Each kind's energy summed over the ranks (a rank counts the terms whose first atom it owns)."""
        return {kind: self.d.owners.sum(value) for kind, value in super().bonded_energies().items()}

    def check_finite(self) -> None:
        """Every rank raises the same :class:`SimulationError` if some rank's atoms blew up (the
        message of the lowest such rank, naming the step and the atom id)."""
        try:
            super().check_finite()
            message = None
        except SimulationError as exc:
            message = str(exc)
        messages = [m for m in self.d.comm.allgather(message) if m is not None]
        if messages:
            raise SimulationError(messages[0])
