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

import time
from dataclasses import dataclass, field
from typing import Callable

from .components import EngineOptions, NeighborOptions
from .integrators import VelocityVerlet
from .outputs.settings import OutputSettings, Reporters
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
    """

    steps: int
    potential: object = None
    integrator: VelocityVerlet = None
    neighbor: NeighborOptions = field(default_factory=NeighborOptions)
    thermo_every: int = 100
    system: System | None = None
    system_edits: list = field(default_factory=list)
    rebuild: bool = True


@dataclass
class RunPlan:
    """Everything a run needs: stages, engine options and outputs.

    first_step : int
        The step number of the first stage's start (LAMMPS ``reset_timestep``; a restart).
    """

    stages: list
    engine: EngineOptions = field(default_factory=EngineOptions)
    outputs: OutputSettings = field(default_factory=OutputSettings)
    first_step: int = 0

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
        e, n = self.engine, stage.neighbor
        sim = Simulation(system, stage.potential, stage.integrator or VelocityVerlet(), skin=n.skin,
                         neighbor_every=n.every, neighbor_delay=n.delay, neighbor_check=n.check,
                         device=e.device, precision=e.precision, deterministic=e.deterministic,
                         pair_method=e.pair_method, use_graphs=e.use_graphs, reporters=reporters)
        sim.state.step = previous.state.step if previous is not None else self.first_step
        return sim

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


def execute(plan: RunPlan, on_simulation: Callable[[Simulation], None] | None = None) -> RunResult:
    """Run every stage of ``plan`` in order with one set of reporters; close them at the end (also
    after an error, so that what was written stays readable).

    ``on_simulation(sim)`` is called for each simulation built (e.g. to add a reporter).
    """
    t0 = time.perf_counter()
    reporters: Reporters = plan.outputs.build()
    screen = plan.outputs.screen
    sim, steps_run = None, 0
    try:
        for index, stage in enumerate(plan.stages):
            if sim is None or stage.rebuild:
                sim = plan.build_simulation(index, sim, reporters.all)
                if on_simulation is not None:
                    on_simulation(sim)
            reporters.thermo.every = stage.thermo_every
            if screen:
                print(sim.describe(), flush=True)
            sim.run(stage.steps, progress=plan.outputs.progress)
            steps_run += stage.steps
            if screen:
                print(f"Run of {stage.steps} steps done; neighbour list builds: {sim.neighbors.n_builds}",
                      flush=True)
    finally:
        reporters.close()
    return RunResult(sim, reporters.thermo, steps_run, time.perf_counter() - t0)


__all__ = ["RunPlan", "RunResult", "Stage", "execute"]
