"""One run description and one driver for every front-end.

The LAMMPS script reader, the TOML config, the command line and the Python API all describe a run
the same way, as a :class:`RunPlan`: the engine options, the outputs, and a sequence of
:class:`Stage` s (one per LAMMPS ``run`` command; a TOML file has one). :func:`execute` runs any plan.

Example
-------
>>> plan = RunPlan([Stage(steps=1000, system=system, potential=lj, integrator=VelocityVerlet(0.005),
...                       thermo_every=100)],
...                outputs=OutputSettings(thermo_log="thermo.csv"))
>>> result = execute(plan)
>>> result.thermo.rows[-1]["TotEng"]
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable


from .bookkeeping import RunStopped
from .components import EngineOptions, NeighborOptions
from .integrators import VelocityVerlet
from .minimize import Minimizer
from .outputs.checkpoint import CheckpointWriter
from .outputs.settings import OutputSettings, Reporters
from .parallel.outputs import rank_outputs
from .simulation import Simulation
from .system import System


@dataclass
class Stage:
    """One ``run N``: the components it runs with and its length.

    steps : int
        Time steps of this stage.
    potential : PairPotential
    integrator : VelocityVerlet (its thermostat, if any, inside)
    neighbor : NeighborOptions
    thermo_every : int
        Thermo interval (0: the stage's first and last step only).
    system : System or None
        The particles this stage starts from; None continues from the previous stage's final state.
    system_edits : list of callables ``edit(system) -> None``
        Applied, in order, to the starting system (e.g. LAMMPS ``velocity ... create`` between runs).
    rebuild : bool
        Build new components for this stage (settings changed); False continues the previous
        stage's simulation as it is (only ``steps`` and ``thermo_every`` may differ).
    minimize : MinimizeSettings or None
        LAMMPS ``minimize``: the stage minimises the energy (:mod:`pycumd.minimize`) instead of running steps.
    checkpoint_settings : callable or None
        ``checkpoint_settings() -> dict``: the front-end's settings that every checkpoint written in this
        stage records, taken when it is written (:attr:`pycumd.outputs.checkpoint.CheckpointWriter.settings`).
    """

    steps: int
    potential: object = None
    integrator: VelocityVerlet = None
    neighbor: NeighborOptions = field(default_factory=NeighborOptions)
    thermo_every: int = 100
    system: System | None = None
    system_edits: list = field(default_factory=list)
    rebuild: bool = True
    after_run: list = field(default_factory=list)
    minimize: object = None
    thermo_style: object = None     # LAMMPS thermo_style custom (outputs.thermo_keywords.ThermoStyle); None: one
    ramp: tuple | None = None       # LAMMPS run start/stop: the steps ramps span (Simulation.ramp); None: its own
    pre: bool = True                # LAMMPS run pre: False continues the fixes' state (Simulation.rebind_fixes)
    checkpoint_settings: Callable[[], dict] | None = None
    #: LAMMPS ``temper``: the stage is one partition's replica-exchange run
    #: (:class:`pycumd.inputs.lammps_input.TemperSettings`; run as a batch by ``pycumd run -partition Nx1``)
    temper: object = None


@dataclass
class RunPlan:
    """Everything a run needs: stages, engine options and outputs.

    first_step : int
        The step number of the first stage's start (LAMMPS ``reset_timestep``).
    source : dict or None
        The input the plan was read from (``kind``: "toml" | "lammps", ``text``, ``variables``,
        ``base_dir``), stored in checkpoints so that ``pycumd run --restart`` can read it again.
    """

    stages: list
    engine: EngineOptions = field(default_factory=EngineOptions)
    outputs: OutputSettings = field(default_factory=OutputSettings)
    first_step: int = 0
    source: dict | None = None

    def build_simulation(self, stage_index: int = 0, previous: Simulation | None = None,
                         reporters=()) -> Simulation:
        """The :class:`Simulation` of one stage (from its system, or ``previous``'s final state)."""
        stage = self.stages[stage_index]
        if stage.system is not None:
            system = stage.system.copy()
        elif previous is not None:
            system = previous.system()
        else:
            raise ValueError("the first stage of a run needs a system")
        for edit in stage.system_edits:
            edit(system)
        if stage.potential is None:
            raise ValueError("a stage needs a pair potential")
        sim = Simulation(system, stage.potential, stage.integrator or VelocityVerlet(), neighbor=stage.neighbor,
                         engine=self.engine, reporters=reporters)
        sim.state.step = previous.state.step if previous is not None else self.first_step
        return sim

    def simulation_from_checkpoint(self, checkpoint, reporters=()) -> Simulation:
        """The simulation of the checkpoint's stage with the checkpoint's state restored in it."""
        stage_index = int(checkpoint.context.get("stage", 0))
        if not 0 <= stage_index < len(self.stages):
            raise ValueError(f"checkpoint {checkpoint.path} is of stage {stage_index + 1}, the plan has "
                             f"{len(self.stages)}")
        stage = self.stages[stage_index]
        return Simulation.from_checkpoint(checkpoint, stage.potential, stage.integrator or VelocityVerlet(),
                                          neighbor=stage.neighbor, engine=self.engine, reporters=reporters)

    def checkpoint_context(self, stage_index: int) -> dict:
        """What a checkpoint written in stage ``stage_index`` records of the plan."""
        # the communicator is the launcher's, not the run's: a restart takes the one it is launched with
        engine = {**asdict(self.engine), "comm": None}
        return {"source": self.source, "engine": engine, "outputs": self.outputs.to_dict(), "stage": stage_index}

    def set_last_run_steps(self, steps: int, option: str = "steps") -> None:
        """Make the last run (the last stage that is no minimisation) ``steps`` long; recorded in
        :attr:`source` so that a run continued from a checkpoint has the same length."""
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
            raise ValueError(f"{option} {steps!r}: the length of a run is a whole number of steps >= 0")
        runs = [stage for stage in self.stages if stage.minimize is None]
        if not runs:
            raise ValueError(f"{option}: the input has no run whose length it could set")
        runs[-1].steps = steps
        if self.source is not None:
            self.source = {**self.source, "last_run_steps": steps}

    @property
    def total_steps(self) -> int:
        return sum(s.steps for s in self.stages)


@dataclass
class RunResult:
    """What :func:`execute` returns: the last simulation, the thermo reporter (its ``rows``), the
    steps run and the wall time (seconds, set-up and compilation included)."""

    simulation: Simulation | None
    thermo: object
    steps: int
    wall_seconds: float

    @property
    def sim(self) -> Simulation | None:
        return self.simulation


def execute(plan: RunPlan, on_simulation: Callable[[Simulation], None] | None = None,
            resume=None, stop_on_signals: bool = False) -> RunResult:
    """Run every stage of ``plan`` in order with one set of reporters; close them at the end (also
    after an error, so that what was written stays readable).

    Parameters
    ----------
    on_simulation : callable, optional
        Called with each simulation built (e.g. to add a reporter).
    resume : Checkpoint, optional
        Continue the run from this checkpoint (:func:`pycumd.inputs.checkpoint.read_checkpoint`):
        stages before its stage are skipped, its stage goes on from the checkpoint's step with the
        same bits as the run that wrote it, output files are cut back to that step and appended to.
    stop_on_signals : bool
        SIGINT and SIGTERM stop the run cleanly at the end of the current step block: a checkpoint
        is written (to :func:`stop_checkpoint_path`: the plan's checkpoint file, else one named after
        its thermo log or trajectory; none if the run writes no files, or if no step was run), every
        file flushed, and :class:`~pycumd.bookkeeping.RunStopped` raised. A second signal stops at once.

    A run stopped by ``sim.stop_request`` or its ``wall_deadline`` ends the same way.

    The first stage's simulation is built (its input checked) before any output file is opened, and
    a run that fails before its first thermo row (e.g. overlapping atoms found by the first neighbour
    list) removes the output files it created. A plan with no stage is a ValueError.
    """
    t0 = time.perf_counter()
    if resume is not None:
        _check_resumable(plan, resume)
    if resume is not None and plan.outputs.checkpoint is None:
        plan.outputs.checkpoint = str(resume.path)
    outputs = rank_outputs(plan.outputs, plan.engine.comm)       # MPI ranks other than 0 write nothing
    first_stage = int(resume.context.get("stage", 0)) if resume is not None else 0
    if not plan.stages:
        raise ValueError("the input runs nothing: it has no run (or minimize) command")
    # the first simulation is built, and its input checked, before any output file is opened
    if resume is not None:
        first = plan.simulation_from_checkpoint(resume)
    else:
        first = plan.build_simulation(first_stage)
    created = [path for path in outputs.paths() if not os.path.exists(path)]
    reporters: Reporters = outputs.build(resume_step=resume.step if resume is not None else None)
    first.reporters[:0] = reporters.all
    screen = outputs.screen
    sim, steps_run = None, 0
    signals = _StopOnSignals() if stop_on_signals else None
    failed_at_start = False
    try:
        for index, stage in enumerate(plan.stages):
            if index < first_stage:
                continue
            if index == first_stage:
                sim = first
                steps = int(resume.meta["run_end"]) - resume.step if resume is not None else stage.steps
                if on_simulation is not None:
                    on_simulation(sim)
            else:
                steps = stage.steps
                if sim is None or stage.rebuild:
                    sim = plan.build_simulation(index, sim, reporters.all)
                    if on_simulation is not None:
                        on_simulation(sim)
                else:                                   # the same simulation goes on
                    sim.rebind_fixes = stage.pre
            if reporters.checkpoint is not None:
                reporters.checkpoint.context = plan.checkpoint_context(index)
                reporters.checkpoint.settings = stage.checkpoint_settings
            if signals is not None:
                signals.simulation = sim
            reporters.thermo.every = stage.thermo_every
            reporters.thermo.style = stage.thermo_style
            for reporter in reporters.all:
                reporter.begin_stage(index)
            if screen:
                print(sim.describe(), flush=True)
            stage_start = sim.state.step
            try:
                if stage.minimize is not None:          # LAMMPS minimize (pycumd.minimize)
                    minimized = Minimizer(sim, stage.minimize).run()
                    if screen:
                        print(minimized.describe(), flush=True)
                else:
                    sim.ramp = stage.ramp
                    sim.run(steps, progress=outputs.progress)
            except RunStopped:
                if steps_run == 0 and sim.state.step == stage_start:
                    raise RunStopped(sim.state.step, sim.stop_request,
                                     note="no step was run, so no checkpoint was written") from None
                path = stop_checkpoint_path(plan.outputs)
                if path is None:
                    raise RunStopped(sim.state.step, sim.stop_request,
                                     note="the run writes no files, so no checkpoint was written "
                                          "(--checkpoint PATH or --log PATH keeps one)") from None
                writer = reporters.checkpoint or CheckpointWriter(path)
                writer.context = plan.checkpoint_context(index)
                writer.settings = stage.checkpoint_settings
                writer.write_now(sim, wait=True)
                writer.close()
                raise RunStopped(sim.state.step, sim.stop_request, writer.path) from None
            steps_run += steps
            for action in stage.after_run:
                action(sim, plan, index)
            if screen:
                print(f"Run of {steps} steps done; neighbour list builds: {sim.neighbors.n_builds}", flush=True)
    except RunStopped:
        raise
    except BaseException:
        # a run that failed its start-up checks (nothing reported) leaves no files it created
        failed_at_start = resume is None and not reporters.thermo.rows
        raise
    finally:
        if signals is not None:
            signals.restore()
        reporters.close()
        if failed_at_start:
            for path in created:
                if os.path.isfile(path):
                    os.remove(path)
    return RunResult(sim, reporters.thermo, steps_run, time.perf_counter() - t0)


def stop_checkpoint_path(outputs) -> str | None:
    """Where a clean stop writes its checkpoint: the run's own checkpoint file; else beside the
    thermo log, or else the first trajectory, named after it (``thermo.csv`` -> ``thermo.stop.ckpt``);
    None for a run that writes no files (nothing to continue into: no checkpoint)."""
    if outputs.checkpoint:
        return str(outputs.checkpoint)
    for path in (outputs.thermo_log, *(t.path for t in outputs.trajectories)):
        if path:
            return str(Path(path).with_suffix(".stop.ckpt"))
    return None


def _check_resumable(plan: RunPlan, checkpoint) -> None:
    """A checkpoint continues only the run it was written in, by the same pycumd."""
    from . import __version__

    written_by = checkpoint.meta.get("pycumd_version")
    if written_by != __version__:
        raise ValueError(f"checkpoint {checkpoint.path} was written by pycumd {written_by}, this is {__version__}: "
                         f"an exact continuation needs the same version")
    source = checkpoint.context.get("source")
    if plan.source is not None and source is not None and (
            plan.source.get("text") != source.get("text") or plan.source.get("variables") != source.get("variables")):
        raise ValueError(f"checkpoint {checkpoint.path} was written by another input (its text or variables "
                         f"differ from this run's); continue it with pycumd run --restart {checkpoint.path}")


class _StopOnSignals:
    """SIGINT/SIGTERM ask the running simulation to stop at its next block; a second one raises
    KeyboardInterrupt at once."""

    def __init__(self):
        self.simulation = None
        self._previous = {sig: signal.signal(sig, self._handle) for sig in (signal.SIGINT, signal.SIGTERM)}

    def _handle(self, signum, frame):
        sim = self.simulation
        if sim is None or sim.stop_request is not None:
            self.restore()
            raise KeyboardInterrupt(f"stopped at once by a second {signal.Signals(signum).name}")
        sim.stop_request = signal.Signals(signum).name

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


def write_checkpoint_action(path, settings: Callable[[], dict] | None = None):
    """An ``after_run`` action writing a checkpoint to ``path`` (LAMMPS ``write_restart``);
    ``settings()``: the front-end's settings it records (:attr:`CheckpointWriter.settings`)."""
    def action(sim, plan, stage_index):
        writer = CheckpointWriter(path, context=plan.checkpoint_context(stage_index))
        writer.settings = settings
        writer.write_now(sim, wait=True)
        writer.close()
    return action


__all__ = ["RunPlan", "RunResult", "Stage", "execute"]
