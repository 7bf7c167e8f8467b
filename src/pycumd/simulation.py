"""The Simulation: runs the time steps of one system's components and reports.

Where things are: the components are built in :mod:`pycumd.components`; energies, thermo rows and
blow-up checks are kept in :mod:`pycumd.bookkeeping`; what reporters need and when is the contract of
:mod:`pycumd.outputs.reporter`. This module is the step loop, and :meth:`Simulation.run`'s docstring
is the one place the order of a step is written.
"""

from __future__ import annotations

import time

import numpy as np

from .bookkeeping import Bookkeeping, RunStopped, SimulationError
from .components import EngineOptions, NeighborOptions, build_components
from .integrators import VelocityVerlet
from .outputs.progress import Progress
from .outputs.reporter import Snapshot
from .observables import temperature
from .step_graph import CudaStepGraph
from .system import System


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
        (:mod:`pycumd.neighbors.allpairs`); needs ``r_cut <= L/2`` when the cutoff is finite.
        ``auto``: all pairs when the potential has no cutoff or ``r_cut + skin > 0.35 L_min``,
        else the neighbour list.
    deterministic : bool
        Build the GPU kernels without fused multiply-add and keep the CPU's full neighbour list
        (not its faster half list), so that a double-precision NVE run gives the same bits on the
        CPU and the GPU, whatever the CPU's thread count (runs repeat bit for bit in every mode;
        see :mod:`pycumd.precision`).
    use_graphs : bool or {"loop", "blocks"}
        On the GPU, run plain NVE steps between reports in CUDA graphs (:mod:`pycumd.step_graph`):
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

    def __init__(self, system: System, potential, integrator=None, *, skin: float | None = None,
                 neighbor_every: int = 1, neighbor_delay: int = 0, neighbor_check: bool = True,
                 device="auto", precision="auto", pair_method: str = "auto", use_graphs: bool = True,
                 deterministic: bool = False, reporters=(), comm=None, processors=None, matrix_grid=None):
        neighbor = NeighborOptions(skin, neighbor_every, neighbor_delay, neighbor_check)
        engine = EngineOptions(device, precision, deterministic, pair_method, use_graphs, comm, processors, matrix_grid)
        self.units = system.units
        self.potential = potential
        self.n_types = system.n_types
        self.box = system.box
        self._masses = system.masses.copy()
        parts = build_components(system, potential, integrator or VelocityVerlet(), neighbor, engine)
        self.backend, self.precision, self.state = parts.backend, parts.precision, parts.state
        self.integrator, self.neighbors, self.forces = parts.integrator, parts.neighbors, parts.forces
        self.pair_method = parts.pair_method
        #: pycumd.parallel decomposition over MPI ranks (comm given), else None
        self.decomposition = d = parts.decomposition
        self.book = (d.bookkeeping if d else Bookkeeping)(parts, system.units, system.box.volume)
        if use_graphs not in (True, False, "loop", "blocks"):
            raise ValueError(f"use_graphs must be True, False, 'loop' or 'blocks', got {use_graphs!r}")
        self.use_graphs = use_graphs if d is None else False
        self._step_graph = None
        self.reporters: list = list(reporters)
        self._run_start = self._run_end = 0
        self._resume = None          # (run_start, run_end, thermostat state) of a restored checkpoint
        self.stop_request: str | None = None   # set (e.g. by a signal handler) to stop at the next block
        self.wall_deadline: float | None = None  # time.monotonic() at which to stop (--walltime)

    # -- properties ------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.state.step

    @property
    def time(self) -> float:
        """Simulated time since step 0 (time units)."""
        return self.state.step * self.integrator.dt

    @property
    def thermostat(self):
        return self.integrator.thermostat

    def run_fraction(self) -> float:
        """Fraction of the current run done (for temperature ramps), as LAMMPS computes it."""
        span = self._run_end - self._run_start
        return (self.state.step - self._run_start) / span if span else 0.0

    def system(self) -> System:
        """A host copy of the current state as a :class:`System`, particles in id order."""
        b, s = self.backend, self.state
        if self.decomposition is not None:          # every rank gets the whole system (collective)
            return self.decomposition.gather_system(s, b)
        by_id = np.argsort(b.to_host(s.ids), kind="stable")
        return System(self.box, s.host_positions(b)[by_id], self._masses, self.units,
                      types=b.to_host(s.types)[by_id],
                      velocities=s.host_values("velocities", b)[by_id],
                      images=b.to_host(s.images)[by_id], ids=b.to_host(s.ids)[by_id])

    # -- observables (kept by self.book) -----------------------------------------------------
    def kinetic_energy(self) -> float:
        return self.book.kinetic_energy()

    @property
    def n_atoms(self) -> int:
        """Atoms of the whole system (over all MPI ranks of a decomposed run)."""
        return self.state.n_atoms if self.decomposition is None else self.decomposition.n_atoms

    def temperature(self) -> float:
        return temperature(self.kinetic_energy(), self.n_atoms, self.units)

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
        per-atom energy and virial), check the state is finite, bind the thermostat."""
        getattr(self.neighbors, "schedule_reorder", lambda: None)()     # a run starts in cell order
        self.neighbors.build(self.state)
        self.forces.compute(self.state, self.neighbors, True)
        self.book.mark_energy_current()
        self.book.check_finite()
        if self.thermostat is not None:
            self.thermostat.bind(self)

    def run(self, steps: int, progress: bool | None = None) -> None:
        """Advance ``steps`` time steps.

        Each step, in this order (LAMMPS' ``Verlet::run`` order):

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
        NVE steps in between run in CUDA-graph blocks with the rebuild decision on the device
        (:mod:`pycumd.step_graph`): the same kernels in the same order, one host synchronisation
        per block instead of one per step.

        A run continued from a checkpoint (:meth:`restore_checkpoint`) starts with
        :meth:`_setup_from_checkpoint` instead of :meth:`setup` and reports nothing at its first step
        (the checkpointing run did). Between blocks the loop stops with :class:`RunStopped` if
        :attr:`stop_request` is set or :attr:`wall_deadline` has passed.

        Positions and velocities are checked for finite values at every report and at the end.
        A run that produces non-finite positions, velocities or energies stops with
        :class:`SimulationError` naming the step and the atom; reporters keep what they wrote.
        """
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
        bar = Progress(steps, enabled=progress)
        graph = None
        if self.use_graphs and CudaStepGraph.applicable(self):
            mode = "auto" if self.use_graphs is True else self.use_graphs
            graph = self._step_graph = self._step_graph or CudaStepGraph(self, mode=mode)
        state = self.state
        try:
            while state.step < self._run_end:
                step = state.step + 1
                ordinary = self._next_report_step(step) - step     # steps before the next report
                if graph is not None and ordinary > 1:
                    graph.advance(ordinary)
                else:
                    self._one_step(step)
                bar.update(state.step - self._run_start)
                self._stop_if_asked()
            self.book.check_finite()
        finally:
            self.backend.synchronize()
            bar.close()

    def _one_step(self, step: int) -> None:
        """One step on the host-driven path (the order of :meth:`run`'s docstring)."""
        integ, th, nl, forces, state = self.integrator, self.thermostat, self.neighbors, self.forces, self.state
        due = self._due(step)
        # a barostat reads the virial every step
        with_energy = any(r.needs.energy for r in due) or getattr(th, "needs_virial", False)
        state.step = step              # as LAMMPS, the step number advances first
        if th is not None:
            th.begin_step(self)
        integ.initial_integrate(state)
        if nl.needs_rebuild(state):
            nl.build(state)
        forces.compute(state, nl, with_energy)
        if th is not None:
            th.post_force(self)
        integ.final_integrate(state)
        if th is not None:
            th.end_step(self)
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
        """Make this step a point a checkpoint can restart from exactly: rebuild the neighbour
        list (wrap, reorder by cell, whatever the list's ``reorder_every``) and compute the forces
        again with the ordinary kernel.

        A restored checkpoint does the same on the same arrays (the wrap and the reorder then
        change nothing), so the run continues with the same bits. The rebuild is the one change a
        checkpoint makes to a run: a run that writes checkpoints rebuilds at those steps too.
        """
        # spatial domains: the owned atoms also put in id order, the order a restored run starts from
        getattr(self.neighbors, "schedule_reorder", lambda: None)()
        getattr(self.neighbors, "build_in_id_order", self.neighbors.build)(self.state)
        self.forces.compute(self.state, self.neighbors, False)

    @classmethod
    def from_checkpoint(cls, checkpoint, potential, integrator=None, **options) -> "Simulation":
        """A simulation continuing a checkpoint (a path or a read :class:`~pycumd.checkpoint_file.Checkpoint`).

        ``potential``, ``integrator`` and ``options`` (skin, neighbour policy, ...) must be those of
        the run that wrote it; device and precision default to the checkpoint's. The next
        ``run(steps)`` must be the rest of the checkpoint's run: ``checkpoint.meta["run_end"] -
        checkpoint.step`` steps; it continues with the same bits.
        """
        from .checkpoint_file import read_checkpoint, system_from_checkpoint

        if not hasattr(checkpoint, "meta"):
            checkpoint = read_checkpoint(checkpoint)
        meta = checkpoint.meta
        options.setdefault("device", meta["device"])
        options.setdefault("precision", meta["precision"])
        if options["device"] == "auto":
            options["device"] = meta["device"]
        if options["precision"] == "auto":
            options["precision"] = meta["precision"]
        sim = cls(system_from_checkpoint(checkpoint), potential, integrator, **options)
        sim.restore_checkpoint(meta, checkpoint.arrays)
        return sim

    def checkpoint_arrays(self) -> dict:
        """The state's per-atom arrays as they are (backend arrays, current order; composite low
        parts as ``lo.NAME``): what :meth:`restore_checkpoint` needs after :meth:`start_checkpoint`.

        Over MPI ranks (a collective call): every atom's positions and velocities (float64, which
        holds float32 values exactly), images, types and ids, gathered in id order on the host."""
        if self.decomposition is not None:
            gathered = self.decomposition.gather_arrays(self.state, self.backend)
            return {name: gathered[name] for name in ("positions", "velocities", "types", "images", "ids")}
        s = self.state
        arrays = {name: getattr(s, name) for name in ("positions", "velocities", "per_atom_mass", "types",
                                                      "images", "ids")}
        for name in ("positions", "velocities", "per_atom_mass"):
            if s.lo is not None:
                arrays[f"lo.{name}"] = s.lo[name]
        return arrays

    def checkpoint_scalars(self) -> dict:
        """Step, time, run bounds, box, and the state of the thermostat and the neighbour policy."""
        nl, th = self.neighbors, self.thermostat
        return {"step": self.state.step, "time": self.time, "run_start": self._run_start, "run_end": self._run_end,
                "box_lengths": [float(x) for x in self.box.lengths], "box_origin": [float(x) for x in self.box.origin],
                "units": self.units.name, "masses": [float(m) for m in self._masses], "n_atoms": self.n_atoms, "device": self.backend.name,
                "ranks": 1 if self.decomposition is None else self.decomposition.comm.size,
                "precision": self.precision.name, "dt": self.integrator.dt,
                "thermostat": th.checkpoint_state() if th is not None else None,
                "neighbors": {"capacity": getattr(nl, "capacity", None),
                              "recent_max_counts": [int(c) for c in getattr(nl, "recent_max_counts", [])]}}

    def restore_checkpoint(self, scalars: dict, arrays: dict) -> None:
        """Put a checkpoint's state into this simulation (built with the same components, device and
        precision); the next :meth:`run` continues the checkpoint's run with the same bits."""
        ranks = 1 if self.decomposition is None else self.decomposition.comm.size
        for key, mine in (("device", self.backend.name), ("precision", self.precision.name),
                          ("n_atoms", self.n_atoms), ("ranks", ranks)):
            if scalars.get(key, 1) != mine:
                raise ValueError(f"the checkpoint was written with {key} {scalars.get(key, 1)}, this run has {mine}: "
                                 f"an exact continuation needs the same")
        s, xp = self.state, self.backend.xp
        # over MPI ranks the arrays are those of the System this simulation was made from
        # (from_checkpoint): each rank took its atoms, in id order, as the writing run had them
        for name, host in (arrays.items() if self.decomposition is None else ()):
            target = s.lo[name[3:]] if name.startswith("lo.") else getattr(s, name)
            if target.shape != host.shape or target.dtype != host.dtype:
                raise ValueError(f"checkpoint array {name} is {host.dtype}{host.shape}, the state's "
                                 f"{target.dtype}{target.shape}")
            target[...] = xp.asarray(host)
        s.step = int(scalars["step"])
        nl = self.neighbors
        if scalars["neighbors"]["capacity"] is not None:
            nl.capacity = int(scalars["neighbors"]["capacity"])
            nl.recent_max_counts = list(scalars["neighbors"]["recent_max_counts"])
        self._resume = (int(scalars["run_start"]), int(scalars["run_end"]), scalars["thermostat"])

    def _setup_from_checkpoint(self, thermostat_state) -> None:
        """:meth:`start_checkpoint` on the restored arrays, then the thermostat's restored state."""
        self.start_checkpoint()
        self.book.check_finite()
        if self.thermostat is not None:
            self.thermostat.bind(self)
            self.thermostat.restore_checkpoint_state(thermostat_state)

    def _stop_if_asked(self) -> None:
        if self.stop_request is None and self.wall_deadline is not None and time.monotonic() > self.wall_deadline:
            self.stop_request = "walltime"
        reason = self.stop_request
        if self.decomposition is not None:
            # over MPI ranks the decision is collective: a signal or wall-time limit seen by one rank
            # stops every rank at the same step (the checkpoint that follows is collective too).  The
            # decision rests on the gathered requests only: a signal handled during the gather sets
            # this rank's request for the next step, and stops no rank alone.
            comm = self.decomposition.comm
            if not comm.any(reason is not None):      # the common case: one boolean all-reduce per step
                return
            reason = [r for r in comm.allgather(reason) if r is not None][0]
            self.stop_request = reason
        if reason is not None and self.state.step < self._run_end:
            raise RunStopped(self.state.step, reason)

    def close(self) -> None:
        """Close every reporter's files."""
        for r in self.reporters:
            r.close()

    def describe(self) -> str:
        return (f"{self.n_atoms} atoms, {self.n_types} type(s), box {' x '.join(f'{x:g}' for x in self.box.lengths)} "
                f"({self.units.name} units)\n"
                f"pair {self.potential.describe()}, skin {self.neighbors.skin}\n"
                f"{self.integrator.describe()}\n"
                f"device {self.backend.name} ({self.backend.device_name}), precision {self.precision.name}"
                + (f"\n{self.decomposition.describe()}" if self.decomposition is not None else ""))


__all__ = ["RunStopped", "Simulation", "SimulationError"]
