"""Construction of a simulation's components from a system, a potential and the run options.

:func:`build_components` is the one place that decides the backend, the precision, the pair method
(neighbour list or all pairs), the neighbour-list policy and the force evaluator, and uploads the
state; :class:`~pycumd.simulation.Simulation` only runs them.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

import numpy as np

from . import backend as _backend
from .contracts import STEP_CONTROL_SIZE, Communicator, ForceEvaluator, Integrator, NeighborStructure
from .eam_forces import list_forces_class
from .neighbors.allpairs import AllPairsForces, AllPairsNeighbors, choose_pair_method
from .neighbors.verlet import NeighborList
from .parallel.comm import communicator
from .parallel.threads import configure_cpu_threads
from .precision import get_precision
from .state import State
from .system import InputError, System


@dataclass
class NeighborOptions:
    """Neighbour-list policy (LAMMPS ``neighbor SKIN bin`` and ``neigh_modify every/delay/check``).

    skin : float or None
        Length units; None: 0.3 sigma in lj units, 2.0 A otherwise (LAMMPS' defaults).
    every, delay, check :
        Default: check every step, rebuild when an atom has moved half the skin.
    exclude : tuple of rules
        Pairs left out of the list (LAMMPS ``neigh_modify exclude``): ``("type", i, j)`` (0-based types),
        ``("molecule/intra",)``, ``("molecule/inter",)`` (over all atoms).
    """

    skin: float | None = None
    every: int = 1
    delay: int = 0
    check: bool = True
    exclude: tuple = ()

    def resolved_skin(self, units_name: str) -> float:
        if self.skin is not None:
            return float(self.skin)
        return 0.3 if units_name == "lj" else 2.0


@dataclass
class EngineOptions:
    """Where and how the kernels run.

    device : {"auto", "cpu", "cuda"}
    precision : {"auto", "single", "mixed", "double", "composite"}
        ``auto``: double on the CPU, mixed on the GPU.
    deterministic : bool
        GPU kernels without fused multiply-add, CPU full list (double-precision NVE gives the same
        bits on both, see :func:`_half_list`).
    pair_method : {"auto", "neighbor", "all_pairs"}
    use_graphs : bool or {"loop", "blocks"}
        On the GPU, the steps between reports in CUDA graphs where they are plain NVE or have only
        capturable hooks (Langevin; see ``Simulation``); over
        spatial domains joined by NCCL the steps between builds, one graph a step
        (:class:`pycumd.step_graph.HostBuildStepGraph`; ``False`` runs them host-driven).
    comm : mpi4py communicator, Communicator or None
        Run decomposed over its ranks when it has more than one (:mod:`pycumd.parallel`); None:
        one process.
    processors : tuple of 3 ints or None
        Spatial-domain grid, 0 = free (LAMMPS ``processors``); matrix_grid : (P, Q) or None.
    threads : int or None
        CPU: Numba threads of this process; None: ``NUMBA_NUM_THREADS`` if set, else over MPI ranks
        the cores divided by the ranks on the node, else Numba's default
        (:mod:`pycumd.parallel.threads`).
    """

    device: str = "auto"
    precision: str = "auto"
    deterministic: bool = False
    pair_method: str = "auto"
    use_graphs: bool | str = True
    comm: object = None
    processors: tuple | None = None
    matrix_grid: tuple | None = None
    threads: int | None = None


#: Simulation's keyword arguments for interactive use -> the NeighborOptions field they set
NEIGHBOR_KEYWORDS = {"skin": "skin", "neighbor_every": "every", "neighbor_delay": "delay", "neighbor_check": "check"}


def resolve_options(neighbor: NeighborOptions | None = None, engine: EngineOptions | None = None,
                    **keywords) -> tuple[NeighborOptions, EngineOptions]:
    """The one converter from :class:`~pycumd.simulation.Simulation`'s keyword arguments to the
    option dataclasses: ``skin``, ``neighbor_every``, ``neighbor_delay``, ``neighbor_check`` set
    fields of ``neighbor``, every :class:`EngineOptions` field name sets that field of ``engine``
    (copies; the arguments are not changed).  A TypeError names an unknown keyword.
    """
    engine_names = {f.name for f in fields(EngineOptions)}
    unknown = sorted(k for k in keywords if k not in NEIGHBOR_KEYWORDS and k not in engine_names)
    if unknown:
        raise TypeError(f"Simulation got unexpected keyword argument(s) {', '.join(unknown)} (options: "
                        f"{', '.join([*NEIGHBOR_KEYWORDS, *sorted(engine_names)])})")
    neighbor = replace(neighbor or NeighborOptions(),
                       **{NEIGHBOR_KEYWORDS[k]: v for k, v in keywords.items() if k in NEIGHBOR_KEYWORDS})
    engine = replace(engine or EngineOptions(), **{k: v for k, v in keywords.items() if k in engine_names})
    return neighbor, engine


@dataclass
class Components:
    """What a simulation runs: the backend, the precision policy, the state and the three
    components of a step (integrator, neighbour structure, force evaluator), each through its
    contract (:mod:`pycumd.contracts`)."""

    backend: object
    precision: object
    state: State
    integrator: Integrator
    neighbors: NeighborStructure
    forces: ForceEvaluator
    pair_method: str
    #: the ranks of the run (pycumd.parallel.comm: SerialCommunicator on one process)
    comm: Communicator
    decomposition: object = None      # pycumd.parallel decomposition of a run over MPI ranks, or None
    cpu_threads: str = ""             # CPU: the threads of this process, in the run header's words
    #: GPU: the step-control array (contracts.STEP_CONTROL_SIZE int32, zero outside captured steps)
    #: that the integrator's and the force evaluator's kernels read and the CUDA-graph step steers
    #: (:func:`with_step_control`); None on the CPU
    control: object = None


def _half_list(backend, precision, decomposed: bool) -> bool:
    """Whether the neighbour list is a half list (each pair once, Newton's third law in the forces).

    On the CPU in one process, unless ``deterministic``: that keeps the full list and the GPU's
    summation order, so that double-precision runs give the GPU's bits (``tests/test_determinism.py``).
    Spatial domains (``decomposed``) use full lists over their ghost atoms (no reverse communication).
    Many-body potentials (EAM, :mod:`pycumd.eam_forces`) follow the same rule: over spatial domains
    the full list keeps each atom's density its own sum (no reverse communication of densities).
    """
    return not backend.is_gpu and not precision.deterministic and not decomposed


def build_components(system: System, potential, integrator, neighbor: NeighborOptions,
                     engine: EngineOptions) -> Components:
    """Choose the backend and the pair method, bind the integrator, upload the state.

    Raises NotImplementedError for combinations a precision does not cover, and InputError for a
    box too small for the cutoff.
    """
    if system.n_atoms == 0:
        raise InputError("the system has no atoms: nothing to simulate (is create_atoms or read_data missing?)")
    backend = _backend.select(engine.device)
    comm = communicator(engine.comm)
    decomposed = comm.size > 1                    # several MPI ranks: pycumd.parallel
    if decomposed and backend.is_gpu:             # one GPU per rank, by local rank
        from .parallel import select_device
        select_device(comm)
    cpu_threads = "" if backend.is_gpu else configure_cpu_threads(engine.comm if decomposed else None,
                                                                  engine.threads)
    precision = get_precision(engine.precision, backend.name, engine.deterministic)
    integrator.bind(backend, precision, system.units)
    # per-atom charges through pycumd.long_range: */coul/long and */coul/msm + a k-space solver, lj/charmm/coul/charmm
    long_range = getattr(potential, "per_atom_coulomb", False)
    kspace = long_range and getattr(potential, "long_range", False)
    if long_range and decomposed and backend.is_gpu:
        raise NotImplementedError(f"per-atom Coulomb (kspace, */coul/charmm) over MPI ranks runs on the CPU only "
                                  f"(pair_style {potential.name}); run the GPU on one rank")
    if kspace:                  # the solver's real-space cutoff first (MSM's cutoff/adjust): the list's cutoff reads it
        potential.resolve_cutoff(system)
    skin = neighbor.resolved_skin(system.units.name)
    r_cut = potential.max_cutoff(system.n_types)
    pair_method = choose_pair_method(engine.pair_method, r_cut, skin, system.box.L)
    if potential.many_body:
        pair_method = _many_body_pair_method(engine.pair_method, potential, r_cut, skin, system.box.L)
    if long_range and engine.pair_method == "auto" and min(system.box.L) >= 2.0 * (r_cut + skin):
        pair_method = "neighbor"         # the Coulomb pass and the special pairs run over the list
    if long_range and pair_method == "all_pairs":
        raise NotImplementedError(f"pair_style {potential.name} needs the neighbour list, and this run computes all "
                                  f"pairs (a box shorter than 2 (r_cut + skin) = {2.0 * (r_cut + skin):g} along an edge, or "
                                  f"pair_method='all_pairs'); use a larger box, a shorter cutoff or a smaller skin")
    if precision.composite:
        _check_composite_supported(pair_method, integrator.thermostat)
    if pair_method == "all_pairs":
        neighbors = AllPairsNeighbors(backend, r_cut)
        forces_class = AllPairsForces
    else:
        neighbors = NeighborList(backend, r_cut, skin, every=neighbor.every, delay=neighbor.delay,
                                 check=neighbor.check, cuda_options=precision.cuda_options,
                                 position_error=_storage_rounding(precision, system.box.L),
                                 list_dtype=precision.list_dtype,
                                 half=_half_list(backend, precision, decomposed),
                                 canonical_order=precision.deterministic)
        forces_class = list_forces_class(potential)
    topology = system.topology
    # bonds and angles that the step hooks constrain are off the force field (fix shake)
    off = integrator.thermostat.off_terms(system) if integrator.thermostat is not None else {}
    if topology is not None and decomposed and pair_method == "all_pairs":
        raise NotImplementedError("molecular topology over MPI ranks needs spatial domains (the neighbour list), and "
                                  "this run computes all pairs (a box shorter than 2 (r_cut + skin) along an edge, or "
                                  "pair_method='all_pairs'); use a larger box or one rank")
    if neighbor.exclude and decomposed:
        raise NotImplementedError("neigh_modify exclude over MPI ranks is not implemented yet; run on one rank")
    if (topology is not None or neighbor.exclude) and potential.many_body:
        raise NotImplementedError(f"molecular topology and neigh_modify exclude with pair_style {potential.name} "
                                  f"(a many-body potential) are not implemented")
    if decomposed:
        from .parallel import decompose
        pair_potential = potential.short_range(system.n_types) if long_range else potential
        parts = decompose(system, pair_potential, integrator, backend, precision, pair_method, r_cut, skin, neighbor,
                          engine, serial_list=neighbors)
        forces = parts.forces
        if topology is not None:       # each domain's owned atoms gather their bonded terms from the extended rows
            forces = _molecular_forces(forces, topology, backend, precision, pair_method, system.n_types, off=off,
                                       weighted_14=long_range, domains=True)
        if long_range:         # the Coulomb pass over the domains' list, the solver's grid summed over the ranks,
            from .long_range import LongRangeForces      # the special pairs' corrections over the extended rows

            forces = LongRangeForces(forces, potential, parts.state, system.units, backend, precision, topology,
                                     system.n_types, decomposition=parts.decomposition)
        return with_step_control(Components(backend, precision, parts.state, integrator, parts.neighbors,
                                            forces, pair_method, parts.decomposition.comm,
                                            parts.decomposition, cpu_threads))
    neighbors.check_box(system.box.L)
    state = State.from_system(system, backend, precision)
    pair_potential = potential.short_range(system.n_types) if long_range else potential
    forces = forces_class(pair_potential, system.n_types, backend, precision)
    if topology is not None or neighbor.exclude:
        if topology is None:
            from .molecular.topology import empty_topology
            if any(rule[0].startswith("molecule") for rule in neighbor.exclude):
                raise InputError("neigh_modify exclude molecule/intra or molecule/inter needs molecule IDs (atom style "
                                 "bond, angle, molecular or full)")
            topology = empty_topology(system.ids)
        forces = _molecular_forces(forces, topology, backend, precision, pair_method, system.n_types,
                                   tuple(neighbor.exclude), weighted_14=long_range, off=off)
    if long_range:             # outermost: its Coulomb pass reads the list the molecular exclusions filtered
        from .long_range import LongRangeForces

        forces = LongRangeForces(forces, potential, state, system.units, backend, precision, topology, system.n_types)
    return with_step_control(Components(backend, precision, state, integrator, neighbors, forces, pair_method, comm,
                                        None, cpu_threads))


def with_step_control(parts: Components) -> Components:
    """``parts`` with the step-control array allocated (GPU) and handed to the integrator and the force
    evaluator, whose kernels read its freeze flag."""
    if parts.backend.is_gpu:
        parts.control = parts.backend.xp.zeros(STEP_CONTROL_SIZE, dtype=np.int32)
    parts.integrator.control = parts.forces.control = parts.control
    return parts


def _many_body_pair_method(pair_method: str, potential, r_cut: float, skin: float, L) -> str:
    """A many-body potential runs over the neighbour list, whatever ``auto`` would take; all pairs
    (and so boxes shorter than twice the list radius) are not implemented for it."""
    if pair_method == "all_pairs":
        raise NotImplementedError(f"pair_method 'all_pairs' is not implemented for pair_style {potential.name} "
                                  f"(a many-body potential): use 'neighbor' or 'auto', on a box of at least "
                                  f"2 (r_cut + skin)")
    short = [(axis, float(length)) for axis, length in zip("xyz", L) if length < 2.0 * (r_cut + skin)]
    if short:
        axis, length = short[0]
        raise InputError(f"box length {axis} = {length:g} is smaller than twice the cutoff plus skin "
                         f"2 * ({r_cut:g} + {skin:g}) = {2.0 * (r_cut + skin):g}, which pair_style {potential.name} "
                         f"needs (its neighbour list; all pairs are not implemented for many-body potentials): "
                         f"use a larger box (more cells) or a smaller skin")
    return "neighbor"


def _molecular_forces(forces, topology, backend, precision, pair_method: str, n_types: int, exclude=(),
                      weighted_14: bool = False, off=None, domains: bool = False):
    """The pair evaluator with the molecular terms (:class:`pycumd.molecular.bonded.MolecularForces`);
    the all-pairs kernel has no list to exclude special pairs from."""
    from .molecular.bonded import MolecularForces

    if pair_method == "all_pairs" and (len(topology.excluded_pairs()[1]) or exclude):
        raise NotImplementedError("special pairs (special_bonds factors other than 1) need the neighbour list, and this run "
                                  "computes all pairs (a box shorter than about 3 (r_cut + skin) along an edge, "
                                  "or pair_method='all_pairs'); use a larger box")
    return MolecularForces(forces, topology, backend, precision, n_types, exclude, weighted_14, off, domains)


def _check_composite_supported(pair_method: str, thermostat) -> None:
    """Composite precision covers NVE and Nose-Hoover over a neighbour list; say what it does not."""
    if pair_method == "all_pairs":
        raise NotImplementedError("composite precision is not implemented for the all-pairs force kernel "
                                  "(also the one of boxes shorter than 2 (r_cut + skin)); use precision "
                                  "'single', 'mixed' or 'double', or pair_method='neighbor' on a box of at "
                                  "least 2 (r_cut + skin)")
    if thermostat is not None and not thermostat.runs_in_composite:
        raise NotImplementedError(f"composite precision is not implemented for {thermostat.describe()}; "
                                  "use NVE or Nose-Hoover, or precision 'mixed' or 'double'")


def _storage_rounding(precision, box_lengths) -> float:
    """How far the float32 positions the neighbour list is built from (single; composite's high
    parts; mixed's float32 copy) may be from the positions the forces use: ``4 * 2^-23 * L``
    (4 to 8 float32 ulps of L)."""
    if precision.list_dtype != np.float32:
        return 0.0
    return 4.0 * float(np.finfo(np.float32).eps) * float(np.max(box_lengths))
