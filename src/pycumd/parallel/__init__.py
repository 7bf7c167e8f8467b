"""Several processes (MPI ranks; one per GPU): spatial domains and the all-pairs force matrix.

``Simulation(..., comm=MPI.COMM_WORLD)`` (or ``mpirun -n P pycumd run in.lj``) runs one simulation
over the ranks of ``comm``:

* neighbour-list forces (LJ and every short-range potential): spatial domains with ghost atoms
  (:mod:`pycumd.parallel.domains`); CPU backend;
* all-pairs forces (ions, pasta): the P x Q force matrix of the IUMD seed
  (:mod:`pycumd.parallel.matrix`); CPU and GPU backends.

The step loop is the serial one (:class:`~pycumd.simulation.Simulation`); the decomposition's
neighbour structure and force evaluator communicate inside their calls, its bookkeeping sums over
the ranks (:mod:`pycumd.parallel.decomposition`).  See docs/scaling.md.
"""

from __future__ import annotations

from .comm import Communicator, abort_on_error, as_communicator, launched_size, select_device, world
from .grid import block_range, choose_domain_grid, choose_matrix_grid, parse_processors


def decompose(system, potential, integrator, backend, precision, pair_method: str, r_cut: float, skin: float,
              neighbor, engine):
    """The decomposed parts of a run: ``(decomposition, state, neighbors, forces)``.

    Called by :func:`pycumd.components.build_components` when ``EngineOptions.comm`` is set.
    ``engine.processors`` (LAMMPS ``processors``) fixes the domain grid, ``engine.matrix_grid`` the
    P x Q grid.  Raises NotImplementedError for what is not decomposed yet (thermostats; spatial
    domains on the GPU) and InputError for a grid the box cannot hold.
    """
    from ..forces import PairForces, default_lanes
    from ..neighbors.allpairs import AllPairsForces, AllPairsNeighbors
    from ..state import State
    from .domains import DomainDecomposition, DomainForces, DomainNeighborList
    from .matrix import MatrixDecomposition, MatrixForces

    comm = as_communicator(engine.comm, backend)
    if integrator.thermostat is not None:
        raise NotImplementedError("thermostats are not decomposed yet: a run over several MPI ranks is NVE "
                                  "(fix nve) only")
    if precision.composite:
        raise NotImplementedError("composite precision is not decomposed over MPI ranks")
    if pair_method == "all_pairs":
        d = MatrixDecomposition(system, comm, getattr(engine, "matrix_grid", None))
        state = State.from_system(d.local_system(), backend, precision)
        neighbors = AllPairsNeighbors(backend, r_cut)
        neighbors.check_box(system.box.L)
        forces = MatrixForces(AllPairsForces(potential, system.n_types, backend, precision, fast=False), d, backend)
        return d, state, neighbors, forces
    d = DomainDecomposition(system, comm, r_cut + skin, getattr(engine, "processors", None))
    neighbors = DomainNeighborList(backend, r_cut, skin, d, every=neighbor.every, delay=neighbor.delay,
                                   check=neighbor.check)
    neighbors.check_box(system.box.L)
    state = State.from_system(d.local_system(), backend, precision)
    forces = DomainForces(PairForces(potential, system.n_types, backend, precision,
                                     lanes=default_lanes(system.n_atoms)), d)
    return d, state, neighbors, forces


__all__ = ["Communicator", "abort_on_error", "as_communicator", "block_range", "choose_domain_grid", "choose_matrix_grid",
           "decompose", "launched_size", "parse_processors", "select_device", "world"]
