"""Several processes (MPI ranks; one per GPU): spatial domains and the all-pairs force matrix.

``Simulation(..., comm=MPI.COMM_WORLD)`` (or ``mpirun -n P pycumd run in.lj``) runs one simulation
over the ranks of ``comm``:

* neighbour-list forces (LJ and every short-range potential): spatial domains with ghost atoms
  (:mod:`pycumd.parallel.domains`); CPU and GPU backends;
* all-pairs forces (ions, pasta): every atom on every rank, the pairs split over the ranks and the
  forces summed by one all-reduce (:mod:`pycumd.parallel.replicated`, the default), or the P x Q
  force matrix of the IUMD seed (:mod:`pycumd.parallel.matrix`) when a ``matrix_grid`` is given;
  CPU and GPU backends.

The step loop is the serial one (:class:`~pycumd.simulation.Simulation`); the decomposition's
neighbour structure and force evaluator communicate inside their calls, its bookkeeping sums over
the ranks (:mod:`pycumd.parallel.decomposition`).  See docs/scaling.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from .comm import (Communicator, SerialCommunicator, abort_on_error, as_communicator, communicator, launched_size,
                   rank_of, select_device, world)
from .grid import block_range, choose_domain_grid, choose_matrix_grid, parse_processors


@dataclass
class DecomposedParts:
    """What :func:`decompose` gives a rank: the decomposition and this rank's state, neighbour
    structure and force evaluator."""

    decomposition: object
    state: object
    neighbors: object
    forces: object


def decompose(system, potential, integrator, backend, precision, pair_method: str, r_cut: float, skin: float,
              neighbor, engine, serial_list=None):
    """The decomposed parts of a run (:class:`DecomposedParts`).

    Called by :func:`pycumd.components.build_components` when ``EngineOptions.comm`` has several ranks.
    ``engine.processors`` (LAMMPS ``processors``) fixes the domain grid, ``engine.matrix_grid`` the
    P x Q grid.  ``serial_list`` (the run's :class:`~pycumd.neighbors.verlet.NeighborList`, with
    the precision's kernel options and position error) lends its kernels to the domains' list.  Raises NotImplementedError for what is not decomposed yet (barostats, per-step fixes,
    composite precision) and InputError for a grid the box cannot hold.
    """
    from ..eam_forces import list_forces_class
    from ..forces import default_lanes
    from ..neighbors.allpairs import AllPairsForces, AllPairsNeighbors
    from ..state import State
    from .domains import DomainDecomposition, DomainForces, DomainNeighborList
    from .matrix import MatrixDecomposition, MatrixForces
    from .replicated import ReplicatedDecomposition, ReplicatedForces

    comm = as_communicator(engine.comm, backend)
    thermostat = integrator.thermostat
    if thermostat is not None and not thermostat.runs_over_ranks:
        raise NotImplementedError(f"{type(thermostat).__name__} is not decomposed over MPI ranks: a run over several "
                                  f"ranks takes fix nve, nvt (Nose-Hoover) or langevin")
    if precision.composite:
        raise NotImplementedError("composite precision is not decomposed over MPI ranks")
    if pair_method == "all_pairs":
        neighbors = AllPairsNeighbors(backend, r_cut)
        neighbors.check_box(system.box.L)
        if getattr(engine, "matrix_grid", None) is None:      # the default: replicated atoms, pairs split
            d = ReplicatedDecomposition(system, comm)
            state = State.from_system(d.local_system(), backend, precision)
            share = dict(share=(comm.rank, comm.size), target_rows=block_range(system.n_atoms, comm.size, comm.rank))
            all_pairs = AllPairsForces(potential, system.n_types, backend, precision, fast=not precision.deterministic,
                                       **share)
            if all_pairs.fast and not any(all_pairs.newton_applies(b, system.n_atoms) for b in all_pairs.candidates):
                all_pairs = AllPairsForces(potential, system.n_types, backend, precision, fast=False, **share)
            return DecomposedParts(d, state, neighbors, ReplicatedForces(all_pairs, d))
        d = MatrixDecomposition(system, comm, engine.matrix_grid)
        state = State.from_system(d.local_system(), backend, precision)
        forces = MatrixForces(AllPairsForces(potential, system.n_types, backend, precision, fast=False), d, backend)
        return DecomposedParts(d, state, neighbors, forces)
    d = DomainDecomposition(system, comm, r_cut + skin, getattr(engine, "processors", None))
    neighbors = DomainNeighborList(backend, r_cut, skin, d, every=neighbor.every, delay=neighbor.delay,
                                   check=neighbor.check, serial=serial_list)
    neighbors.check_box(system.box.L)
    state = State.from_system(d.local_system(), backend, precision)
    forces = DomainForces(list_forces_class(potential)(potential, system.n_types, backend, precision,
                                                       lanes=default_lanes(max(1, system.n_atoms // comm.size))), d)
    return DecomposedParts(d, state, neighbors, forces)


__all__ = ["Communicator", "DecomposedParts", "SerialCommunicator", "communicator", "rank_of", "abort_on_error", "as_communicator", "block_range", "choose_domain_grid", "choose_matrix_grid",
           "decompose", "launched_size", "parse_processors", "select_device", "world"]
