"""Many independent systems run together: parameter sweeps, seeds for error bars, replica exchange.

An :class:`Ensemble` holds one :class:`~pycumd.simulation.Simulation` per system (its *members*)
and advances them in lockstep: every member runs the same steps, the ensemble stopping them all at
each step where some member reports, an exchange is attempted (:mod:`pycumd.tempering`) or a
checkpoint is due.  A member's trajectory is the one it has alone, bit for bit, in every precision
and on every device: it runs its own components with the same arithmetic in the same order, and a
stop between two steps changes nothing in either (:meth:`Simulation.advance`).  The test
``tests/test_ensemble.py`` checks this against runs made alone.

The batched engine (:mod:`pycumd.batch_engine`, ``Ensemble(..., batch="batched")``: all systems in
shared arrays that the members' states view, one call per kernel per step for the whole batch, the
arithmetic per atom unchanged) sits behind this class: it changes the speed, never the answer.
This module is the driver both share: lockstep, per-system reporters, replica exchange, blow-ups
of one system, checkpoints of the whole batch, and waves of a batch that does not fit in memory.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import numpy as np

from .bookkeeping import SimulationError
from .outputs.ensemble_thermo import EnsembleThermoLog
from .outputs.reporter import Needs, Reporter
from .simulation import Simulation


class _EnergyTap(Reporter):
    """Makes a member's potential energy current at the exchange steps (multiples of ``every``)
    and keeps it: the Metropolis decision of :mod:`pycumd.tempering` reads it."""

    needs = Needs(energy=True)

    def __init__(self, every: int):
        self.every = every
        self.energy: dict = {}

    def report(self, snapshot) -> None:
        self.energy = {snapshot.step: snapshot.simulation.potential_energy()}


@dataclass
class SystemFailure:
    """A member that stopped: its index, the step the ensemble had reached, and why."""

    system: int
    step: int
    message: str


class Ensemble:
    """Independent systems (members) advanced together, step for step.

    Parameters
    ----------
    simulations : sequence of Simulation
        The members, each built as it would be alone (its own system, potential parameters,
        integrator, thermostat, seed, options and reporters).  Sizes, boxes, densities,
        temperatures and parameter values may differ.  All must be at the same step.
    exchange : ReplicaExchange, optional
        Replica exchange between the members (member ``i`` starts at ``exchange.temperatures[i]``).
    stop_all_on_error : bool
        False (default): a member that blows up (:class:`~pycumd.bookkeeping.SimulationError`) is
        reported by system and step and left behind, the others go on (:attr:`failures`); True: the
        error stops the ensemble.  With replica exchange a failure always stops it (the ladder needs
        every replica).
    checkpoint : str or path, optional
        Write a checkpoint of the whole batch here every ``checkpoint_every`` steps and at the end of
        each run (:meth:`write_checkpoint`; the previous one kept as ``PATH.1``).
    checkpoint_every : int
    exchange_log : str or path, optional
        With replica exchange: a CSV of the walk, one row per attempt, ``step, T0, T1, ...`` with each
        member's temperature index after the attempt (LAMMPS' tempering status lines, ``world2temp``).
    exchange_log_style : {"csv", "lammps"}
        ``"csv"`` (default) as above; ``"lammps"``: LAMMPS' universe log of ``temper``, a line
        ``Step T0 T1 ...`` then ``step i0 i1 ...`` (blank-separated) at the start and after each attempt.
    check_every : int
        Steps between two finiteness checks of every member (besides their report steps and the
        end of a run), so that a blow-up is found and reported near the step it happened (0: only
        at reports).
    verbose : bool or file
        Where the ensemble's own messages go (failures, waves, the exchange summary); True: stderr.
    batch : {"members", "batched", "auto"}
        Which engine advances the systems.  ``"members"`` (default): every member runs its own
        kernels.  ``"batched"``: the batched engine (:mod:`pycumd.batch_engine`: all systems' atoms
        in shared arrays, each kernel called once per step over all of them; the same bits as the
        members alone), or :class:`~pycumd.batch_engine.BatchUnsupported` saying what it does not
        run (this round: the CPU, double precision, ``deterministic=True``, neighbour lists, one
        pair style, NVE or Langevin).  ``"auto"``: the batched engine where it runs, else the members.
    batch_step : {"auto", "graph", "host"}
        With the batched engine on the GPU, how its steps are driven
        (:class:`~pycumd.batch_engine.BatchedEngine`'s ``step``): ``"graph"``, each stretch between
        two stops one CUDA graph launch with the rebuild decisions and builds on the device
        (:mod:`pycumd.batch_graph`); ``"host"``, one launch per kernel per step; ``"auto"``
        (default), the graph where it runs.  The same bits either way.

    Examples
    --------
    >>> members = []
    >>> for density, seed in [(0.70, 1), (0.75, 2), (0.80, 3)]:
    ...     s = lattice_system("fcc", 4, density=density)
    ...     create_velocities(s, 2.0, seed=seed)
    ...     members.append(Simulation(s, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)))
    >>> ens = Ensemble(members)
    >>> ens.run(1000)
    >>> ens.potential_energies()          # per system, energy units
    """

    def __init__(self, simulations, *, exchange=None, stop_all_on_error: bool = False, checkpoint=None,
                 checkpoint_every: int = 0, check_every: int = 100, verbose=True, exchange_log=None,
                 batch: str = "members", batch_step: str = "auto", exchange_log_style: str = "csv"):
        self.members: list[Simulation] = list(simulations)
        if not self.members:
            raise ValueError("an ensemble needs at least one system")
        steps = {m.step for m in self.members}
        if len(steps) > 1:
            raise ValueError(f"the systems of an ensemble must be at the same step, got steps {sorted(steps)}")
        self.exchange = exchange
        self._walk_log = None
        if exchange_log_style not in ("csv", "lammps"):
            raise ValueError(f"exchange_log_style must be 'csv' or 'lammps', got {exchange_log_style!r}")
        self._walk_style = exchange_log_style
        self._walk_start = self.members[0].step if self.members else 0    # the walk's first status line
        if exchange is not None:
            exchange.bind(self.members)
            if exchange_log is not None:
                self._walk_log = open(exchange_log, "w", newline="")
                self._write_walk_head()
        elif exchange_log is not None:
            raise ValueError("exchange_log needs replica exchange (exchange=ReplicaExchange(...))")
        self.stop_all_on_error = bool(stop_all_on_error)
        if checkpoint_every < 0:
            raise ValueError(f"checkpoint interval must be >= 0, got {checkpoint_every}")
        self.checkpoint_path, self.checkpoint_every = checkpoint, int(checkpoint_every)
        if check_every < 0:
            raise ValueError(f"finiteness check interval must be >= 0, got {check_every}")
        self.check_every = int(check_every)
        self._out = sys.stderr if verbose is True else (verbose or None)
        #: members that stopped (SystemFailure), in the order they did
        self.failures: list[SystemFailure] = []
        self._run_start = self._run_end = self.step
        self._resume_run = None
        self._logs: list = []
        #: what the batch came from (:class:`EnsemblePlan`'s source and options), stored in its checkpoints
        self.context: dict = {}
        #: the batched engine (:mod:`pycumd.batch_engine`) advancing the members, or None (each its own)
        self.engine = _choose_engine(self.members, batch, batch_step)

    # -- building ---------------------------------------------------------------------------
    @classmethod
    def from_systems(cls, systems, potentials, integrators=None, *, thermo_log=None, thermo_every: int = 100,
                     trajectory=None, trajectory_every: int = 100, exchange=None, stop_all_on_error: bool = False,
                     checkpoint=None, checkpoint_every: int = 0, check_every: int = 100, verbose=True,
                     resume_step: int | None = None, exchange_log=None, batch: str = "members",
                     exchange_log_style: str = "csv", **options) -> "Ensemble":
        """Build a member per system.

        ``potentials`` is one potential for all or one per system (the same style with other
        parameter values); ``integrators`` None (NVE at the units' time step), or one per system
        (each holds its own thermostat), or a callable ``i -> integrator``.  ``thermo_log``: one CSV
        with a ``system`` column (:class:`~pycumd.outputs.ensemble_thermo.EnsembleThermoLog`);
        ``trajectory``: a path pattern with ``{system}`` (``frames_{system}.gsd``), one file per
        system.  ``resume_step``: the step of the checkpoint the batch will continue (the thermo log
        is cut back to it and appended to).  ``batch``: the engine (:class:`Ensemble`'s ``batch``).  ``options`` go to every :class:`Simulation` (``neighbor=``, ``engine=``, ``skin=``,
        ``device=``, ``precision=``, ``deterministic=``, ...).
        """
        from .outputs.trajectory import trajectory_writer

        systems = list(systems)
        n = len(systems)
        potentials = list(potentials) if isinstance(potentials, (list, tuple)) else [potentials] * n
        if len(potentials) != n:
            raise ValueError(f"{len(potentials)} potentials for {n} systems: give one, or one per system")
        if integrators is None:
            integrators = [None] * n
        elif callable(integrators):
            integrators = [integrators(i) for i in range(n)]
        else:
            integrators = list(integrators)
        if len(integrators) != n:
            raise ValueError(f"{len(integrators)} integrators for {n} systems: give one per system (each holds "
                             f"its own thermostat state) or a callable i -> integrator")
        if trajectory is not None and "{system}" not in str(trajectory):
            raise ValueError(f"trajectory {trajectory!r}: give a pattern with {{system}} (one file per system)")
        log = EnsembleThermoLog(thermo_log, thermo_every, resume_step) if thermo_log is not None else None
        members = []
        for i, (system, pot, integ) in enumerate(zip(systems, potentials, integrators)):
            reporters = []
            if log is not None:
                reporters.append(log.reporter(i))
            if trajectory is not None:
                reporters.append(trajectory_writer(str(trajectory).format(system=i), trajectory_every))
            members.append(Simulation(system, pot, integ, reporters=reporters, **options))
        ens = cls(members, exchange=exchange, stop_all_on_error=stop_all_on_error, checkpoint=checkpoint,
                  checkpoint_every=checkpoint_every, check_every=check_every, verbose=verbose,
                  exchange_log=exchange_log, batch=batch, exchange_log_style=exchange_log_style)
        if log is not None:
            ens._logs.append(log)
        return ens

    # -- observables, per system --------------------------------------------------------------
    @property
    def n_systems(self) -> int:
        return len(self.members)

    @property
    def step(self) -> int:
        return self.members[0].step

    def active(self) -> list[int]:
        """The members still running (not in :attr:`failures`)."""
        failed = {f.system for f in self.failures}
        return [i for i in range(self.n_systems) if i not in failed]

    def potential_energies(self) -> np.ndarray:
        """Each system's total pair energy (energy units), shape (n_systems,); NaN for a failed one."""
        return self._per_system(lambda m: m.potential_energy())

    def temperatures(self) -> np.ndarray:
        """Each system's temperature (3N - 3 degrees of freedom), shape (n_systems,)."""
        return self._per_system(lambda m: m.temperature())

    def thermo_rows(self) -> list:
        """Each system's thermo row (``Step, Temp, E_pair, E_mol, TotEng, Press``); None for a failed one."""
        active = set(self.active())
        return [m.thermo_row() if i in active else None for i, m in enumerate(self.members)]

    def _per_system(self, value) -> np.ndarray:
        out = np.full(self.n_systems, np.nan)
        for i in self.active():
            out[i] = value(self.members[i])
        return out

    # -- running ------------------------------------------------------------------------------
    def run(self, steps: int) -> None:
        """Advance every member ``steps`` steps, in lockstep.

        Order: the exchange's temperatures put on the thermostats; each member's
        :meth:`~pycumd.simulation.Simulation.begin_run` (set-up, the reports of the first step);
        then, stretch by stretch, every member advanced to the next stop (the nearest step at which
        a member reports, an exchange is due (multiples of ``exchange.every``) or a checkpoint is
        due), and at that stop the exchange attempt (:class:`~pycumd.tempering.ReplicaExchange`:
        Metropolis on the members' potential energies, velocities scaled and targets reset) and the
        checkpoint.  A member that raises :class:`SimulationError` is recorded in :attr:`failures`
        and left behind (unless ``stop_all_on_error`` or replica exchange).
        """
        if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
            raise ValueError(f"run length must be a whole number of steps >= 0, got {steps!r}")
        if self._resume_run is not None:
            self._run_start, self._run_end = self._resume_run
            self._resume_run = None
            if self._run_end - self.step != steps:
                raise ValueError(f"the checkpoint's run has {self._run_end - self.step} steps left, not {steps}")
        else:
            self._run_start, self._run_end = self.step, self.step + int(steps)
        taps = []
        if self.exchange is not None:
            taps = [_EnergyTap(self.exchange.every) for _ in self.members]
            for m, tap in zip(self.members, taps):
                m.reporters.insert(0, tap)
        try:
            for i in self.active():
                self._guarded(i, lambda m: m.begin_run(steps))
            if self.engine is not None:
                self.engine.begin_run()
            while self.step_of_active() < self._run_end:
                stop = self._next_stop()
                if self.engine is not None:
                    self._advance_batched(stop)
                else:
                    for i in self.active():
                        self._guarded(i, lambda m: m.advance(stop))
                if self.check_every and stop % self.check_every == 0:
                    for i in self.active():
                        self._guarded(i, lambda m: m.book.check_finite())
                if self.exchange is not None and stop % self.exchange.every == 0:
                    self._exchange(taps, stop)
                if self.checkpoint_path is not None and (stop == self._run_end or (
                        self.checkpoint_every and stop % self.checkpoint_every == 0)):
                    self.write_checkpoint(self.checkpoint_path)
            for i in self.active():
                self._guarded(i, lambda m: m.book.check_finite())
        finally:
            for m, tap in zip(self.members, taps):
                m.reporters.remove(tap)
            for m in self.members:
                m.backend.synchronize()
        if self.exchange is not None and self._out:
            print(self.exchange.summary(), file=self._out, flush=True)

    def _advance_batched(self, stop: int) -> None:
        """The batched engine's steps to ``stop``, then each member's reports of that step."""
        due = {i: self.members[i].due_reporters(stop) for i in self.active()}
        self.engine.advance(stop, self.step_of_active())
        for i in self.active():
            self._guarded(i, lambda m: m.report_step(stop, due[i], True))

    def step_of_active(self) -> int:
        active = self.active()
        if not active:
            raise SimulationError("every system of the ensemble has failed: "
                                  + "; ".join(f"system {f.system} at step {f.step}" for f in self.failures))
        return self.members[active[0]].step

    def _next_stop(self) -> int:
        step = self.step_of_active() + 1
        candidates = [self.members[i].next_report_step(step) for i in self.active()]
        for every in ((self.exchange.every,) if self.exchange is not None else ()) + (
                (self.check_every,) if self.check_every else ()) + (
                (self.checkpoint_every,) if self.checkpoint_path is not None and self.checkpoint_every else ()):
            candidates.append(-(-step // every) * every)
        return min(min(candidates), self._run_end)

    def _guarded(self, i: int, action) -> None:
        """``action(member i)``; a SimulationError is recorded as a failure of system ``i`` (or
        raised, naming the system, when the ensemble cannot go on without it)."""
        m = self.members[i]
        try:
            action(m)
        except SimulationError as exc:
            failure = SystemFailure(i, m.step, str(exc))
            if self.stop_all_on_error or self.exchange is not None:
                raise SimulationError(f"system {i} of the ensemble at step {m.step}: {exc}") from None
            self.failures.append(failure)
            if self.engine is not None:
                self.engine.deactivate(i)
            if self._out:
                print(f"pycumd: system {i} stopped at step {m.step} ({exc}); the other "
                      f"{len(self.active())} go on", file=self._out, flush=True)

    def _exchange(self, taps, step: int) -> None:
        energies = []
        for m, tap in zip(self.members, taps):
            if step not in tap.energy:       # the tap reports at every multiple of `every` it reaches
                raise AssertionError(f"no potential energy of step {step} for the exchange")
            energies.append(tap.energy[step])
        boltz = self.members[0].units.boltz
        done = self.exchange.attempt(energies, boltz, step, backend=self.members[0].backend)
        self.exchange.apply(self.members, done)
        if self._walk_log is not None:
            self._write_walk_row(step, self.exchange.temperature_index)
            self._walk_log.flush()

    def _write_walk_head(self) -> None:
        """The walk log's header (and, LAMMPS style, the status line of the start)."""
        if self._walk_style == "lammps":
            self._walk_log.write(" ".join(["Step"] + [f"T{i}" for i in range(self.n_systems)]) + "\n")
            self._write_walk_row(self._walk_start, self.exchange.start_index)
        else:
            self._walk_log.write(",".join(["step"] + [f"T{i}" for i in range(self.n_systems)]) + "\n")

    def _write_walk_row(self, step: int, index) -> None:
        sep = " " if self._walk_style == "lammps" else ","
        self._walk_log.write(sep.join(str(int(v)) for v in [step, *index]) + "\n")

    # -- checkpoints --------------------------------------------------------------------------
    def write_checkpoint(self, path) -> None:
        """One file with every member's checkpoint (arrays prefixed ``system<i>/``, scalars under
        ``systems``), the ensemble's run bounds, failures and the exchange's state: a run continued
        from it (:meth:`restore_checkpoint`) gives the same bits as the run that wrote it."""
        from . import __version__
        from .checkpoint_file import FORMAT_VERSION, encode_checkpoint
        from .outputs.checkpoint import write_atomically

        arrays, scalars = {}, []
        for i, m in enumerate(self.members):
            if i not in self.active():
                scalars.append(None)
                continue
            m.start_checkpoint()
            for name, value in m.checkpoint_arrays().items():
                arrays[f"system{i}/{name}"] = m.backend.to_host(value)
            scalars.append(m.checkpoint_scalars())
        meta = {"pycumd_version": __version__, "format": FORMAT_VERSION, "ensemble": True, "step": self.step,
                "run_start": self._run_start, "run_end": self._run_end, "systems": scalars,
                "failures": [f.__dict__ for f in self.failures],
                "exchange": self.exchange.checkpoint_state() if self.exchange is not None else None,
                "context": dict(self.context)}
        write_atomically(path, encode_checkpoint(meta, arrays))

    def restore_checkpoint(self, path) -> None:
        """Put a :meth:`write_checkpoint` file into this ensemble, built as the one that wrote it
        (the same members, in the same order, with the same options); the next :meth:`run` must be
        the rest of the checkpoint's run."""
        from .checkpoint_file import read_checkpoint
        from .system import InputError

        checkpoint = read_checkpoint(path)
        meta = checkpoint.meta
        if not meta.get("ensemble"):
            raise InputError(f"checkpoint {path}: a single simulation's checkpoint, not an ensemble's "
                             f"(Simulation.from_checkpoint reads it)")
        if len(meta["systems"]) != self.n_systems:
            raise InputError(f"checkpoint {path}: {len(meta['systems'])} systems, this ensemble has {self.n_systems}")
        self.failures = [SystemFailure(**f) for f in meta["failures"]]
        for i in self.active():
            prefix = f"system{i}/"
            self.members[i].restore_checkpoint(meta["systems"][i], {
                name[len(prefix):]: a for name, a in checkpoint.arrays.items() if name.startswith(prefix)})
        if (meta["exchange"] is None) != (self.exchange is None):
            raise InputError(f"checkpoint {path}: written {'with' if meta['exchange'] else 'without'} replica "
                             f"exchange, this ensemble is not")
        if self.exchange is not None:
            self.exchange.restore_checkpoint_state(meta["exchange"], self.members)
            if self._walk_log is not None:          # the walk up to the checkpoint, as the run wrote it
                self._walk_start = int(meta["run_start"])
                self._walk_log.seek(0)
                self._walk_log.truncate()
                self._write_walk_head()
                for step, index in self.exchange.walk:
                    self._write_walk_row(step, index)
                self._walk_log.flush()
        self._resume_run = (int(meta["run_start"]), int(meta["run_end"]))

    def remaining_steps(self) -> int:
        """Steps left of the current run (after :meth:`restore_checkpoint`: of the checkpoint's run)."""
        end = self._resume_run[1] if self._resume_run is not None else self._run_end
        return end - self.step

    def close(self) -> None:
        """Close every member's reporters and the shared logs."""
        for m in self.members:
            m.close()
        for log in self._logs:
            log.close()
        if self._walk_log is not None:
            self._walk_log.close()


def _choose_engine(members, batch: str, step: str = "auto"):
    """The batched engine for ``batch`` ("members", "batched", "auto") stepped by ``step`` ("auto",
    "graph", "host"; see :class:`Ensemble`), or None."""
    if batch not in ("members", "batched", "auto"):
        raise ValueError(f"batch must be 'members', 'batched' or 'auto', got {batch!r}")
    from .batch_engine import STEP_MODES

    if step not in STEP_MODES:
        raise ValueError(f"batch_step must be one of {', '.join(map(repr, STEP_MODES))}, got {step!r}")
    if batch == "members":
        return None
    from .batch_engine import BatchedEngine, unsupported_reason

    if batch == "auto" and unsupported_reason(members) is not None:
        return None
    return BatchedEngine(members, step)


# -- batches larger than memory ---------------------------------------------------------------
def available_memory(backend) -> int:
    """Bytes free for new arrays: the GPU's free memory, or the host's available memory."""
    if backend.is_gpu:
        return int(backend.xp.cuda.Device().mem_info[0])
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return 2**34


def member_bytes(sim: Simulation) -> int:
    """Bytes a built member holds: its state's arrays and its neighbour list's."""
    total = sum(sim.state.memory_by_array().values())
    for name in ("nbr", "nbr_count"):
        array = getattr(sim.neighbors, name, None)
        total += int(getattr(array, "nbytes", 0) or 0)
    return total


def waves(n_atoms, bytes_per_atom: float, budget: int) -> list[range]:
    """Split systems of ``n_atoms`` (a sequence) into consecutive waves whose atoms'
    ``bytes_per_atom`` fit in ``budget`` bytes (at least one system per wave)."""
    out, start, used = [], 0, 0.0
    for i, n in enumerate(n_atoms):
        need = n * bytes_per_atom
        if i > start and used + need > budget:
            out.append(range(start, i))
            start, used = i, 0.0
        used += need
    out.append(range(start, len(n_atoms)))
    return out


def run_in_waves(make_member, n_atoms, steps: int, *, memory_budget: int | None = None, safety: float = 0.8,
                 out=True, **ensemble_options) -> list:
    """Run independent systems ``make_member(i) -> Simulation`` (``i`` in ``range(len(n_atoms))``,
    system ``i`` of ``n_atoms[i]`` atoms) for ``steps`` steps, as many at once as fit in memory.

    The first system is built alone to measure the bytes per atom (:func:`member_bytes`); the
    batch is split into waves (:func:`waves`) that fit ``safety`` times the free memory (or
    ``memory_budget`` bytes), with a message when it takes more than one.  Replica exchange needs
    every replica at once: it is not run in waves.  ``out``: where the message goes (True: stderr).
    Returns every wave's :class:`Ensemble`
    (closed), in order; their members' trajectories are those of a single batch.
    """
    if "exchange" in ensemble_options and ensemble_options["exchange"] is not None:
        raise ValueError("replica exchange needs every replica in one batch: it cannot be split into waves")
    out = sys.stderr if out is True else out
    n_atoms = list(n_atoms)
    first = make_member(0)
    per_atom = member_bytes(first) / max(first.n_atoms, 1)
    budget = memory_budget if memory_budget is not None else int(safety * available_memory(first.backend))
    plan = waves(n_atoms, per_atom, budget)
    if len(plan) > 1 and out:
        need = per_atom * sum(n_atoms)
        print(f"pycumd: the batch of {len(n_atoms)} systems needs about {need / 2**30:.3g} GiB, "
              f"{budget / 2**30:.3g} GiB fit: running it in {len(plan)} waves of up to "
              f"{max(len(w) for w in plan)} systems", file=out, flush=True)
    done = []
    for wave in plan:
        members = [first if i == 0 else make_member(i) for i in wave]
        ens = Ensemble(members, verbose=out, **ensemble_options)
        try:
            ens.run(steps)
        finally:
            ens.close()
        done.append(ens)
    return done


__all__ = ["Ensemble", "SystemFailure", "available_memory", "member_bytes", "run_in_waves", "waves"]


# -- a batch described by a front-end (TOML sweeps) ------------------------------------------------
@dataclass
class EnsemblePlan:
    """A batch of runs as a front-end describes it (:func:`pycumd.inputs.config.plan_from_config` with
    a ``sweep``): one system, potential and integrator per member, one length, shared options.

    labels : list of dict
        Each member's swept values (``{"density": 0.7, "seed": 2}``), printed and stored.
    exchange : dict or None
        ``temperatures, every, seed, random_pairs`` (and optionally ``initial_index``) of a
        replica-exchange run (:class:`ReplicaExchange`);
        exchange_log: the CSV of its walk (``Ensemble``'s ``exchange_log``), or None.
    thermo_log : path or None
        One CSV with a ``system`` column; trajectory : a path pattern with ``{system}``, or None.
    source : dict or None
        The input the plan came from (stored in the batch's checkpoints).
    """

    systems: list
    potentials: list
    integrators: list
    labels: list
    steps: int
    neighbor: object
    engine: object
    thermo_every: int = 100
    thermo_log: str | None = None
    trajectory: str | None = None
    trajectory_every: int = 100
    exchange: dict | None = None
    exchange_log: str | None = None
    checkpoint: str | None = None
    checkpoint_every: int = 0
    source: dict | None = None
    #: the engine (:class:`Ensemble`'s ``batch``: "members", "batched", "auto"; ``pycumd run --batch``)
    batch: str = "members"
    #: the walk log's format (:class:`Ensemble`'s ``exchange_log_style``: "csv", or "lammps" for temper's universe log)
    exchange_log_style: str = "csv"

    def build(self, verbose=True, resume_step: int | None = None) -> Ensemble:
        """The :class:`Ensemble` of this plan (members built, files opened; ``resume_step``: see
        :meth:`Ensemble.from_systems`)."""
        from .tempering import ReplicaExchange

        exchange = ReplicaExchange(**self.exchange) if self.exchange is not None else None
        ens = Ensemble.from_systems(self.systems, self.potentials, self.integrators, thermo_log=self.thermo_log,
                                     thermo_every=self.thermo_every, trajectory=self.trajectory,
                                     trajectory_every=self.trajectory_every, exchange=exchange,
                                     checkpoint=self.checkpoint, checkpoint_every=self.checkpoint_every,
                                     verbose=verbose, resume_step=resume_step, exchange_log=self.exchange_log,
                                     exchange_log_style=self.exchange_log_style,
                                     neighbor=self.neighbor,
                                     engine=self.engine, batch=self.batch)
        ens.context = {"source": self.source, "device": self.engine.device, "precision": self.engine.precision,
                       "deterministic": self.engine.deterministic, "thermo_log": self.thermo_log,
                       "trajectory": self.trajectory, "checkpoint": self.checkpoint,
                       "checkpoint_every": self.checkpoint_every}
        return ens


def execute_ensemble(plan: EnsemblePlan, resume=None, out=True) -> Ensemble:
    """Run an :class:`EnsemblePlan` (continuing the batch checkpoint ``resume``, a path, when given):
    build, run, print one line per system (its swept values and last thermo row) to ``out`` (True:
    standard output as it is when called; None: nowhere), close."""
    out = sys.stdout if out is True else out
    resume_step = None
    if resume is not None:
        from .checkpoint_file import read_checkpoint

        resume_step = read_checkpoint(resume).step
    ens = plan.build(resume_step=resume_step)
    steps = plan.steps
    try:
        if resume is not None:
            ens.restore_checkpoint(resume)
            steps = ens.remaining_steps()
        ens.run(steps)
        if out:
            rows = ens.thermo_rows()
            print(f"{'system':>6}  {'values':<32} {'Temp':>12} {'E_pair':>12} {'Press':>12}", file=out)
            for i, (label, row) in enumerate(zip(plan.labels, rows)):
                values = ", ".join(f"{k} {v}" for k, v in label.items())
                if row is None:
                    print(f"{i:>6}  {values:<32} failed", file=out)
                else:
                    print(f"{i:>6}  {values:<32} {row['Temp']:>12.6g} {row['E_pair']:>12.6g} "
                          f"{row['Press']:>12.6g}", file=out)
            out.flush()
    finally:
        ens.close()
    return ens


__all__ += ["EnsemblePlan", "execute_ensemble"]
