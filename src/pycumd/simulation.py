"""The Simulation: runs the time steps of one system's components and reports.

Where things are: the components are built in :mod:`pycumd.components`; energies, thermo rows and
blow-up checks are kept in :mod:`pycumd.bookkeeping`; what reporters need and when is the contract of
:mod:`pycumd.outputs.reporter`. This module is the step loop, and :meth:`Simulation.run`'s docstring
is the one place the order of a step is written.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from .bookkeeping import Bookkeeping, RunStopped, SimulationError
from .components import EngineOptions, NeighborOptions, build_components, resolve_options
from .integrators import VelocityVerlet
from .outputs.progress import Progress
from .outputs.reporter import Snapshot
from .observables import temperature
from .molecular.topology import CHECKPOINT_PREFIX as TOPOLOGY_PREFIX, checkpoint_record
from .step_graph import CudaStepGraph, HostBuildStepGraph
from .step_order import STEP_ORDER
from .system import System


#: decomposed runs: steps between two collective stop decisions (signals, wall time) after a run's first step
STOP_CHECK_STEPS = 16


class Simulation:
    """Molecular dynamics of one :class:`System` with one pair potential.

    Parameters
    ----------
    system : System
        Initial positions, velocities, types, masses, box and units (copied to the backend).
    potential : PairPotential
        E.g. ``LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=1)``.
    integrator : VelocityVerlet, optional
        Default: NVE with the unit system's time step.
    neighbor : NeighborOptions, optional
        The neighbour-list policy (default: LAMMPS' defaults).
    engine : EngineOptions, optional
        Where and how the kernels run (default: the best device, its default precision).
    reporters : sequence of Reporter
    **options :
        For interactive use, the fields of ``neighbor`` and ``engine`` as keywords (converted by
        :func:`~pycumd.components.resolve_options`; they override the dataclasses' fields):
    skin : float
        Neighbour-list skin (length units); default 0.3 sigma in lj units, 2.0 A otherwise
        (LAMMPS' defaults).
    neighbor_every, neighbor_delay, neighbor_check :
        LAMMPS ``neigh_modify every/delay/check``; default: check every step, rebuild when an atom
        has moved half the skin.
    device : {"auto", "cpu", "cuda"}
    precision : {"auto", "single", "mixed", "double", "composite"}
        ``auto``: double on the CPU, mixed on the GPU.
    pair_method : {"auto", "neighbor", "all_pairs"}
        ``all_pairs``: every pair with the minimum image, no neighbour list
        (:mod:`pycumd.neighbors.allpairs`); where a finite cutoff exceeds half a box edge, every
        periodic image in range.  ``neighbor`` needs every edge ``>= 2 (r_cut + skin)``.
        ``auto``: all pairs when the potential has no cutoff or ``r_cut + skin > 0.35 L_min``
        (small boxes included), else the neighbour list.
    deterministic : bool
        Build the GPU kernels without fused multiply-add and keep the CPU's full neighbour list
        (not its faster half list), so that a double-precision NVE run gives the same bits on the
        CPU and the GPU, whatever the CPU's thread count (runs repeat bit for bit in every mode;
        see :mod:`pycumd.precision`).
    use_graphs : bool or {"loop", "blocks"}
        On the GPU, run the steps between reports in CUDA graphs (:mod:`pycumd.step_graph`) where the
        step has no hooks or only capturable ones (``StepHooks.capturable``: Langevin; Nose-Hoover,
        Berendsen, the barostats and the other fixes take host-driven steps):
        True (default) as one launch per stretch between reports where the driver has conditional
        graph nodes (CUDA 12.4+; ``"loop"`` insists), else as captured blocks with one host read
        per block (``"blocks"`` asks for those).  False forces the step-by-step path.
        All give the same bits.

    Examples
    --------
    >>> system = lattice_system("fcc", 5, density=0.8442)
    >>> create_velocities(system, 1.44, seed=87287)
    >>> sim = Simulation(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0))
    >>> sim.reporters.append(ThermoReporter(every=50))
    >>> sim.run(100)
    """

    def __init__(self, system: System, potential, integrator=None, *, neighbor: NeighborOptions | None = None,
                 engine: EngineOptions | None = None, reporters=(), **options):
        neighbor, engine = resolve_options(neighbor, engine, **options)
        use_graphs = engine.use_graphs
        #: the options this simulation was built with (NeighborOptions, EngineOptions)
        self.neighbor_options, self.engine_options = neighbor, engine
        self.units = system.units
        self.potential = potential
        self.n_types = system.n_types
        self.box = system.box
        self._masses = system.masses.copy()
        self._topology = system.topology      # in atom ids: unchanged by the run
        parts = build_components(system, potential, integrator or VelocityVerlet(), neighbor, engine)
        self.backend, self.precision, self.state = parts.backend, parts.precision, parts.state
        self.integrator, self.neighbors, self.forces = parts.integrator, parts.neighbors, parts.forces
        #: GPU: the step-control array the kernels read and the CUDA-graph step steers (None on the CPU)
        self.control = parts.control
        self.pair_method = parts.pair_method
        #: the ranks of the run (pycumd.parallel.comm.SerialCommunicator on one process)
        self.comm = parts.comm
        self.cpu_threads = parts.cpu_threads
        #: pycumd.parallel decomposition over MPI ranks (a comm of several ranks given), else None
        self.decomposition = d = parts.decomposition
        self.book = (d.bookkeeping if d else Bookkeeping)(parts, system.units, system.box.volume)
        #: the bound ``_phase_<name>`` methods of a host-driven step, in STEP_ORDER's order
        self._step_phases = tuple(getattr(self, f"_phase_{phase.name}") for phase in STEP_ORDER)
        if use_graphs not in (True, False, "loop", "blocks"):
            raise ValueError(f"use_graphs must be True, False, 'loop' or 'blocks', got {use_graphs!r}")
        self.use_graphs = use_graphs
        self._step_graph = None
        self.reporters: list = list(reporters)
        self._run_start = self._run_end = 0
        #: (start, stop) steps that ramps span (LAMMPS ``run N start S stop S``); None: the run's own
        self.ramp: tuple | None = None
        #: bind the thermostat and fixes again at the next run's set-up (LAMMPS ``run ... pre yes``);
        #: False continues their state as the last step left it (``pre no``: no fix set-up)
        self.rebind_fixes = True
        self._resume = None          # (run_start, run_end, thermostat state) of a restored checkpoint
        self.stop_request: str | None = None   # set (e.g. by a signal handler) to stop at the next block
        self.wall_deadline: float | None = None  # time.monotonic() at which to stop (--walltime)
        self._next_stop_check = 0    # decomposed runs: the step of the next collective stop decision
        self._rebuild_at_resume = False   # a restored checkpoint's lists are built again (restore_checkpoint)

    # -- properties ------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.state.step

    @property
    def time(self) -> float:
        """Simulated time since step 0 (time units)."""
        return self.state.step * self.integrator.dt

    @property
    def step_graph(self):
        """The CUDA-graph runner of the ordinary steps (:mod:`pycumd.step_graph`), None before the
        first stretch that used one or where none applies."""
        return self._step_graph

    @property
    def thermostat(self):
        return self.integrator.thermostat

    def ramp_bounds(self) -> tuple:
        """``(start, stop)`` steps that temperature ramps span: :attr:`ramp` when it is set, else the
        current run's first and last steps (the CUDA-graph step's captured Langevin kernel computes
        :meth:`run_fraction` from them on the device)."""
        return tuple(self.ramp) if self.ramp is not None else (self._run_start, self._run_end)

    def run_fraction(self) -> float:
        """Fraction of the current run done (for temperature ramps), as LAMMPS computes it:
        ``(step - start) / (stop - start)`` over the run, or over :attr:`ramp` when it is set."""
        start, stop = self.ramp_bounds()
        span = stop - start
        return (self.state.step - start) / span if span else 0.0

    def system(self) -> System:
        """A host copy of the current state as a :class:`System`, particles in id order."""
        b, s = self.backend, self.state
        if self.decomposition is not None:          # every rank gets the whole system (collective)
            return self.decomposition.gather_system(s, b)
        by_id = np.argsort(b.to_host(s.ids), kind="stable")
        return System(self.box, s.host_positions(b)[by_id], self._masses, self.units,
                      types=b.to_host(s.types)[by_id],
                      velocities=s.host_values("velocities", b)[by_id],
                      images=b.to_host(s.images)[by_id], ids=b.to_host(s.ids)[by_id],
                      topology=None if self._topology is None else self._topology.copy(),
                      charges=None if s.charges is None else b.to_host(s.charges)[by_id])

    @property
    def topology(self):
        """The molecular topology (:class:`pycumd.molecular.topology.Topology`, in atom ids) or None."""
        return self._topology

    # -- observables (kept by self.book) -----------------------------------------------------
    def kinetic_energy(self) -> float:
        return self.book.kinetic_energy()

    @property
    def n_atoms(self) -> int:
        """Atoms of the whole system (over all MPI ranks of a decomposed run)."""
        return self.state.n_atoms if self.decomposition is None else self.decomposition.n_atoms

    def degrees_of_freedom(self) -> int:
        """``3 N - 3`` less the constrained ones (fix shake), as LAMMPS' compute temp counts them."""
        return self.book.degrees_of_freedom()

    def constraint_virial(self):
        """The constraint forces' virial of the last step ((6,) xx, yy, zz, xy, xz, yz, energy units) or None."""
        return self.book.constraint_virial()

    def temperature(self) -> float:
        return temperature(self.kinetic_energy(), self.n_atoms, self.units, self.degrees_of_freedom())

    def potential_energy(self) -> float:
        """Total pair energy (energy units) at the current step."""
        self.book.ensure_energy(self.setup)
        return self.book.potential_energy()

    def virial_trace(self) -> float:
        """Sum over pairs of r_ij . f_ij (energy units) at the current step."""
        self.book.ensure_energy(self.setup)
        return self.book.virial_trace()

    def thermo_row(self) -> dict:
        """Step, Temp, E_pair, E_mol, TotEng, Press, normalised as LAMMPS does."""
        self.book.ensure_energy(self.setup)
        return self.book.thermo_row()

    # -- running ---------------------------------------------------------------------------
    def setup(self) -> None:
        """As LAMMPS at the start of each run: build the neighbour list, compute forces (with
        per-atom energy and virial), check the state is finite, bind the thermostat (unless
        :attr:`rebind_fixes` is False)."""
        self.neighbors.schedule_reorder()     # a run starts in cell order
        self.neighbors.build(self.state)
        self.forces.compute(self.state, self.neighbors, True)
        self.book.mark_energy_current()
        self.book.check_finite()
        if self.thermostat is not None:
            if self.rebind_fixes:
                self.thermostat.bind(self)
            self.thermostat.setup(self)

    def run(self, steps: int, progress: bool | None = None) -> None:
        """Advance ``steps`` time steps.

        Each step runs the phases of :data:`pycumd.step_order.STEP_ORDER` (LAMMPS' ``Verlet::run``
        order), which the CUDA-graph step reads too:

        1. thermostat ``begin_step`` (Nose-Hoover: chain half step, velocity scaling);
        2. ``v += dt/2 f/m``, ``x += dt v`` (initial integrate; with a barostat,
           :mod:`pycumd.integrators.barostats`, also the box change: positions, box and volume scaled,
           and its begin_step/end_step hooks run in place of the thermostat's, with the virial
           computed every step);
        3. neighbour decision; on a rebuild: wrap into the box, counting-sort into cells, new list;
        4. pair forces, with per-atom energy and virial only if a reporter due this step needs them;
        5. thermostat ``post_force`` (Langevin: friction and noise forces);
        6. ``v += dt/2 f/m`` (final integrate);
        7. thermostat ``end_step`` (Nose-Hoover: chain half step, velocity scaling);
        8. reporters due this step, all served by one :class:`~pycumd.outputs.reporter.Snapshot`
           (thermo rows, trajectory frames).

        Before the first step: :meth:`setup` (list, forces, energies), then the reporters due at
        the run's first step. Between reports, the loop runs uninterrupted to the nearest step some
        reporter asks for (:meth:`~pycumd.outputs.reporter.Reporter.next_report`); on the GPU plain
        NVE steps in between, and steps whose hooks are capturable (Langevin's post_force: its
        kernel reads the step number from the device), run in CUDA graphs with the rebuild decision
        on the device (:mod:`pycumd.step_graph`): the same kernels in the same order, one host
        synchronisation per block (or per stretch, the device loop) instead of one per step.

        A run continued from a checkpoint (:meth:`restore_checkpoint`) starts with
        :meth:`_setup_from_checkpoint` instead of :meth:`setup` and reports nothing at its first step
        (the checkpointing run did). Between blocks the loop stops with :class:`RunStopped` if
        :attr:`stop_request` is set or :attr:`wall_deadline` has passed; a :attr:`stop_request` set
        before the first step (during set-up) stops it before that step.

        Positions and velocities are checked for finite values at every report and at the end.
        A run that produces non-finite positions, velocities or energies stops with
        :class:`SimulationError` naming the step and the atom; reporters keep what they wrote.
        """
        self.begin_run(steps)
        bar = Progress(steps, enabled=progress)
        try:
            self.advance(self._run_end, bar)
            self.book.check_finite()
        finally:
            self.backend.synchronize()
            bar.close()

    def begin_run(self, steps: int) -> None:
        """The start of :meth:`run` without its steps: set-up (or a restored checkpoint's), the
        reporters' ``begin_run`` and those due at the run's first step, and a stop asked for before
        the first step.  :meth:`advance` then runs the steps; :class:`~pycumd.ensemble.Ensemble`
        drives its members through these two calls so that they advance in lockstep."""
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"run length must be a whole number of steps >= 0, got {steps!r}")
        if self._resume is not None:     # a restored checkpoint: the run it was written in goes on
            self._run_start, self._run_end, thermostat_state = self._resume
            self._resume = None
            if self._run_end - self.state.step != steps:
                raise ValueError(f"the checkpoint's run has {self._run_end - self.state.step} steps left, "
                                 f"not {steps}")
            self._setup_from_checkpoint(thermostat_state)
            for r in self.reporters:
                r.begin_run(self)
        else:
            self._run_start = self.state.step
            self._run_end = self.state.step + int(steps)
            self.setup()
            for r in self.reporters:
                r.begin_run(self)
            self._report(self._due(self.state.step))
        self._next_stop_check = self.state.step + 1     # decomposed runs: the first step decides (_stop_if_asked)
        self._stop_if_asked(wall_time=False)      # a signal before the first step: no step is run

    @property
    def run_end(self) -> int:
        """The last step of the current run (set by :meth:`begin_run`)."""
        return self._run_end

    def next_report_step(self, step: int) -> int:
        """The first step >= ``step`` that some reporter reports (the run's last step at the latest)."""
        return self._next_report_step(step)

    def advance(self, until: int, bar=None) -> None:
        """Run the steps of the current run (:meth:`begin_run`) up to step ``until`` (<= its end),
        in stretches between reports (graph blocks on the GPU where they apply).  Stopping at any
        step leaves the bits of the trajectory as they are: a stretch ends at a step, never
        inside one, and nothing is set up again."""
        if until > self._run_end:
            raise ValueError(f"advance to step {until} is past the run's end {self._run_end}")
        graph = None
        if self.use_graphs and CudaStepGraph.applicable(self):
            mode = "auto" if self.use_graphs is True else self.use_graphs
            graph = self._step_graph = self._step_graph or CudaStepGraph(self, mode=mode)
        elif self.use_graphs and HostBuildStepGraph.applicable(self):    # spatial domains over NCCL
            graph = self._step_graph = self._step_graph or HostBuildStepGraph(self)
        state = self.state
        while state.step < until:
            step = state.step + 1
            ordinary = min(self._next_report_step(step), until) - step     # steps before the next stop
            if graph is not None and ordinary > 1:
                graph.advance(ordinary)
            else:
                self._one_step(step)
            if bar is not None:
                bar.update(state.step - self._run_start)
            self._stop_if_asked()

    def due_reporters(self, step: int) -> list:
        """The reporters that report at ``step`` of the current run."""
        return self._due(step)

    def report_step(self, step: int, due: list, with_energy: bool) -> None:
        """The end of a step whose phases ran elsewhere (the batched engine of an
        :class:`~pycumd.ensemble.Ensemble`, :mod:`pycumd.batch_engine`, which wrote this simulation's
        arrays): the step number set, energies marked current (``with_energy``: the forces of the
        step computed them) and the ``due`` reporters served, as :meth:`_one_step`'s last phase."""
        self.state.step = step
        self._phase_report(due, with_energy)

    def _one_step(self, step: int) -> None:
        """One step on the host-driven path: the phases of :data:`pycumd.step_order.STEP_ORDER`, in
        its order (the order of :meth:`run`'s docstring)."""
        due = self._due(step)
        # a barostat reads the virial every step
        th = self.thermostat
        with_energy = any(r.needs.energy for r in due) or (th is not None and th.needs_virial)
        self.state.step = step              # as LAMMPS, the step number advances first
        for phase in self._step_phases:
            phase(due, with_energy)

    # the phases of a host-driven step (each takes the reporters due this step and whether the
    # forces compute energies and virials)
    def _phase_begin_step(self, due, with_energy) -> None:
        if self.thermostat is not None:
            self.thermostat.begin_step(self)

    def _phase_initial_integrate(self, due, with_energy) -> None:
        self.integrator.initial_integrate(self.state)

    def _phase_neighbor_decision(self, due, with_energy) -> None:
        if self.neighbors.needs_rebuild(self.state):
            self.neighbors.build(self.state)

    def _phase_forces(self, due, with_energy) -> None:
        self.forces.compute(self.state, self.neighbors, with_energy)

    def _phase_post_force(self, due, with_energy) -> None:
        if self.thermostat is not None:
            self.thermostat.post_force(self)

    def _phase_final_integrate(self, due, with_energy) -> None:
        self.integrator.final_integrate(self.state)

    def _phase_end_step(self, due, with_energy) -> None:
        if self.thermostat is not None:
            self.thermostat.end_step(self)

    def _phase_report(self, due, with_energy) -> None:
        if with_energy:
            self.book.mark_energy_current()
        if due:
            self.book.check_finite()
            self._report(due)

    # -- reporting ---------------------------------------------------------------------------
    def _due(self, step: int) -> list:
        """The reporters that report at ``step``."""
        return [r for r in self.reporters if r.next_report(step, self._run_start, self._run_end) == step]

    def _next_report_step(self, step: int) -> int:
        """The first step >= ``step`` that some reporter reports (the run's last step at the latest)."""
        candidates = [self._run_end]
        for r in self.reporters:
            due = r.next_report(step, self._run_start, self._run_end)
            if due is not None:
                candidates.append(due)
        return min(candidates)

    def _report(self, due: list) -> None:
        """Hand every due reporter the same snapshot of this step."""
        if due:
            snapshot = Snapshot(self if self.decomposition is None else self.decomposition.report_view(self))
            for r in due:
                r.report(snapshot)

    # -- checkpoints -------------------------------------------------------------------------
    def start_checkpoint(self) -> None:
        """Make this step a point a checkpoint can restart from exactly.

        A serial run needs nothing: the checkpoint stores the neighbour list's schedule and the
        positions of its last build (:meth:`checkpoint_arrays`), and writing one changes nothing in
        the run.  Over MPI ranks (spatial domains) the lists are rebuilt with the owned atoms in id
        order and the forces computed again, the order and the list a restored run starts from: there
        a checkpoint is a rebuild off the list's schedule, in the run that writes it too.
        """
        if self.decomposition is None:
            return
        self.neighbors.schedule_reorder()
        self.neighbors.build_in_id_order(self.state)
        self.forces.compute(self.state, self.neighbors, False)

    @classmethod
    def from_checkpoint(cls, checkpoint, potential, integrator=None, *, neighbor: NeighborOptions | None = None,
                        engine: EngineOptions | None = None, reporters=(), **options) -> "Simulation":
        """A simulation continuing a checkpoint (a path or a read :class:`~pycumd.checkpoint_file.Checkpoint`).

        ``potential``, ``integrator``, ``neighbor``, ``engine`` and ``options`` (as for the
        constructor) must be those of the run that wrote it; device and precision ``"auto"`` become
        the checkpoint's. The next
        ``run(steps)`` must be the rest of the checkpoint's run: ``checkpoint.meta["run_end"] -
        checkpoint.step`` steps; it continues with the same bits.
        """
        from .checkpoint_file import read_checkpoint, system_from_checkpoint

        if not hasattr(checkpoint, "meta"):
            checkpoint = read_checkpoint(checkpoint)
        meta = checkpoint.meta
        neighbor, engine = resolve_options(neighbor, engine, **options)
        engine = replace(engine, device=meta["device"] if engine.device == "auto" else engine.device,
                         precision=meta["precision"] if engine.precision == "auto" else engine.precision)
        sim = cls(system_from_checkpoint(checkpoint), potential, integrator, neighbor=neighbor, engine=engine,
                  reporters=reporters)
        sim.restore_checkpoint(meta, checkpoint.arrays)
        return sim

    #: state arrays a serial checkpoint holds besides the particles' own (the forces of the step,
    #: which the next step's first half step uses, and the last build's positions)
    _STEP_ARRAYS = ("positions_at_build", "forces")

    def checkpoint_arrays(self) -> dict:
        """The arrays of a checkpoint, as they are (backend arrays, current order; composite low
        parts as ``lo.NAME``): the particles' arrays, the positions at the last neighbour build, the
        forces (with a Langevin thermostat's friction and noise), per-atom energies and virials when
        they belong to this step (a barostat reads them at the next one), and the neighbour list's
        own (``neighbors.NAME``, :meth:`~pycumd.neighbors.verlet.NeighborList.checkpoint_state`).

        Over MPI ranks (a collective call): every atom's positions and velocities (float64, which
        holds float32 values exactly), images, types and ids, gathered in id order on the host, and the
        molecular topology's arrays (every rank holds the whole topology)."""
        if self.decomposition is not None:
            gathered = self.decomposition.gather_arrays(self.state, self.backend)
            arrays = {name: gathered[name] for name in ("positions", "velocities", "types", "images", "ids", "charges")
                      if name in gathered}
            if self._topology is not None:
                from .molecular.topology import checkpoint_arrays

                arrays.update(checkpoint_arrays(self._topology))
            return arrays
        s = self.state
        names = ("positions", "velocities", "per_atom_mass", "types", "images", "ids") + self._STEP_ARRAYS
        if s.charges is not None:
            names += ("charges",)
        if self.book.energy_is_current():
            names += ("energy", "virial")
        arrays = {name: getattr(s, name) for name in names}
        for name in ("positions", "velocities", "per_atom_mass", "forces", "energy", "virial"):
            if s.lo is not None and name in arrays:
                arrays[f"lo.{name}"] = s.lo[name]
        for name, value in self.neighbors.checkpoint_state().items():
            if hasattr(value, "shape"):
                arrays[f"neighbors.{name}"] = value
        if self._topology is not None:
            from .molecular.topology import checkpoint_arrays

            arrays.update({k: self.backend.xp.asarray(v) for k, v in checkpoint_arrays(self._topology).items()})
        return arrays

    def checkpoint_scalars(self) -> dict:
        """Step, time, run bounds, box, and the state of the thermostat and the neighbour policy."""
        nl, th = self.neighbors, self.thermostat
        serial = self.decomposition is None
        if serial:
            neighbors = {k: v for k, v in nl.checkpoint_state().items() if not hasattr(v, "shape")}
        else:           # over MPI ranks the lists are rebuilt at the checkpoint's step (start_checkpoint)
            neighbors = {"capacity": getattr(nl, "capacity", None),
                         "recent_max_counts": [int(c) for c in getattr(nl, "recent_max_counts", [])]}
        return {"step": self.state.step, "time": self.time, "run_start": self._run_start, "run_end": self._run_end,
                "box_lengths": [float(x) for x in self.box.lengths], "box_origin": [float(x) for x in self.box.origin],
                "units": self.units.name, "masses": [float(m) for m in self._masses], "n_atoms": self.n_atoms, "device": self.backend.name,
                "ranks": self.comm.size,
                "precision": self.precision.name, "dt": self.integrator.dt,
                "thermostat": th.checkpoint_state() if th is not None else None,
                "neighbors": neighbors, "energy_current": serial and self.book.energy_is_current(),
                "topology": None if self._topology is None else checkpoint_record(self._topology)}

    def restore_checkpoint(self, scalars: dict, arrays: dict) -> None:
        """Put a checkpoint's state into this simulation (built with the same components, device and
        precision); the next :meth:`run` continues the checkpoint's run with the same bits.

        A serial run gets the arrays in their stored order, the neighbour list of the last build
        (:meth:`~pycumd.neighbors.verlet.NeighborList.restore_checkpoint_state`), then the stored
        forces (and energies and virials where stored): nothing is computed again.

        Over MPI ranks, and on another number of ranks than the checkpoint was written on (a
        continuation then builds its lists and forces again at the checkpoint's step, from the
        atoms in id order), the arrays are those of the System this simulation was made from
        (:meth:`from_checkpoint`).  On the writing run's rank count the continuation gives its bits;
        on another, the same trajectory up to the order of floating-point sums."""
        for key, mine in (("device", self.backend.name), ("precision", self.precision.name),
                          ("n_atoms", self.n_atoms)):
            if scalars.get(key, 1) != mine:
                raise ValueError(f"the checkpoint was written with {key} {scalars.get(key, 1)}, this run has {mine}: "
                                 f"an exact continuation needs the same")
        s, xp = self.state, self.backend.xp
        self._resume = (int(scalars["run_start"]), int(scalars["run_end"]), scalars["thermostat"])
        s.step = int(scalars["step"])
        # over MPI ranks the arrays are those of the System this simulation was made from
        # (from_checkpoint): each rank took its atoms, in id order, as the writing run had them
        self._rebuild_at_resume = self.decomposition is not None or int(scalars.get("ranks", 1)) > 1
        if self._rebuild_at_resume:
            if scalars["neighbors"]["capacity"] is not None:
                self.neighbors.capacity = int(scalars["neighbors"]["capacity"])
                self.neighbors.recent_max_counts = list(scalars["neighbors"]["recent_max_counts"])
            return

        def put(name, host):
            target = s.lo[name[3:]] if name.startswith("lo.") else getattr(s, name)
            if target.shape != host.shape or target.dtype != host.dtype:
                raise ValueError(f"checkpoint array {name} is {host.dtype}{host.shape}, the state's "
                                 f"{target.dtype}{target.shape}")
            target[...] = xp.asarray(host)

        scratch = self._STEP_ARRAYS[1:] + ("energy", "virial")      # the build's scratch: put back after it
        later = {}
        for name, host in arrays.items():
            if name.startswith("neighbors.") or name.startswith(TOPOLOGY_PREFIX):
                continue
            if name.split(".")[-1] in scratch:
                later[name] = host
            else:
                put(name, host)
        listed = {name[len("neighbors."):]: host for name, host in arrays.items() if name.startswith("neighbors.")}
        self.neighbors.restore_checkpoint_state({**scalars["neighbors"], **listed}, s)
        for name, host in later.items():
            put(name, host)
        if scalars.get("energy_current"):
            self.book.mark_energy_current()

    def _setup_from_checkpoint(self, thermostat_state) -> None:
        """Over MPI ranks, or from a checkpoint written over MPI ranks, the lists and the forces
        made again from the restored atoms in id order (:meth:`start_checkpoint`'s rebuild); then
        the finite check and the thermostat's restored state."""
        if self.decomposition is not None:
            self.start_checkpoint()
        elif self._rebuild_at_resume:           # one process continuing a checkpoint of several ranks
            self.neighbors.schedule_reorder()
            self.neighbors.build(self.state)
            self.forces.compute(self.state, self.neighbors, False)
        self.book.check_finite()
        if self.thermostat is not None:
            self.thermostat.bind(self)
            self.thermostat.restore_checkpoint_state(thermostat_state)

    def _stop_if_asked(self, wall_time: bool = True) -> None:
        """Raise :class:`RunStopped` if a stop was asked for (or, with ``wall_time``, the wall-time
        limit has passed) and the run has steps left."""
        if (wall_time and self.stop_request is None and self.wall_deadline is not None
                and time.monotonic() > self.wall_deadline):
            self.stop_request = "walltime"
        reason = self.stop_request
        # over MPI ranks the decision is collective: a signal or wall-time limit seen by one rank
        # stops every rank at the same step (the checkpoint that follows is collective too).  The
        # decision rests on the gathered requests only: a signal handled during the gather sets
        # this rank's request for the next step, and stops no rank alone.  The ranks decide at the
        # first step of each run() and then every STOP_CHECK_STEPS steps (one all-reduce each), so
        # that a host collective is not paid at every step.
        comm = self.comm
        if comm.size > 1:
            if self.state.step < self._next_stop_check or self.state.step >= self._run_end:
                return
            self._next_stop_check = self.state.step + STOP_CHECK_STEPS
        if not comm.any(reason is not None):      # the common case: one boolean all-reduce
            return
        reason = [r for r in comm.allgather(reason) if r is not None][0]
        self.stop_request = reason
        if reason is not None and self.state.step < self._run_end:
            raise RunStopped(self.state.step, reason)

    def close(self) -> None:
        """Close every reporter's files; drop the captured step graphs (a graph that captured NCCL
        work keeps the NCCL communicator from being destroyed)."""
        for r in self.reporters:
            r.close()
        self._step_graph = None

    def describe(self) -> str:
        return (f"{self.n_atoms} atoms, {self.n_types} type(s), box {' x '.join(f'{x:g}' for x in self.box.lengths)} "
                f"({self.units.name} units)\n"
                f"pair {self.potential.describe()}, skin {self.neighbors.skin}\n"
                f"{self.integrator.describe()}\n"
                f"device {self.backend.name} ({self.backend.device_name}"
                + (f", {self.cpu_threads}" if self.cpu_threads else "") + f"), precision {self.precision.name}"
                + (f"\n{self.decomposition.describe()}" if self.decomposition is not None else ""))


__all__ = ["RunStopped", "Simulation", "SimulationError"]
