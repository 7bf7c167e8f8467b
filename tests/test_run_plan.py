"""One run description, one driver: every front-end yields the same RunPlan, and the driver runs it;
reporters are served as they declare (their steps, one snapshot per step, energies only when
asked)."""

from __future__ import annotations

import re

from importlib import resources
from pathlib import Path

import numpy as np
import pytest

from pycumd import (EngineOptions, LennardJones, NeighborOptions, OutputSettings, Reporter, RunPlan, Stage,
                    ThermoReporter, TrajectoryOutput, VelocityVerlet, create_velocities, execute, lattice_system)
from pycumd.inputs.config import load_config, plan_from_config
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.outputs.reporter import Needs
from pycumd.simulation import Simulation

MELT_SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "melt" / "in.melt"


def _melt_python_plan(cells=10, steps=250) -> RunPlan:
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 3.0, seed=87287, loop="geom")
    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    stage = Stage(steps, lj, VelocityVerlet(0.005), NeighborOptions(0.3, every=20, delay=0, check=False),
                  thermo_every=50, system=system)
    return RunPlan([stage], EngineOptions(device="cpu"), OutputSettings(screen=False))


def _same_stage(a: Stage, b: Stage) -> None:
    assert a.steps == b.steps and a.thermo_every == b.thermo_every
    assert a.neighbor == b.neighbor
    assert a.integrator.dt == b.integrator.dt and (a.integrator.thermostat is None) == (b.integrator.thermostat is None)
    assert np.array_equal(a.potential.table(1), b.potential.table(1))
    assert np.array_equal(a.system.positions, b.system.positions)
    assert np.array_equal(a.system.velocities, b.system.velocities)


def test_toml_lammps_and_python_front_ends_yield_the_same_plan():
    """The embedded melt (TOML), LAMMPS' examples/melt script and the Python API describe the same run."""
    toml = plan_from_config(load_config(resources.files("pycumd.data").joinpath("melt.toml").read_text()))
    script = plan_from_lammps_script(path=MELT_SCRIPT)
    python = _melt_python_plan()
    assert len(toml.stages) == len(script.stages) == 1
    _same_stage(toml.stages[0], python.stages[0])
    _same_stage(script.stages[0], python.stages[0])


def test_the_driver_gives_every_front_end_the_same_run():
    rows = []
    for plan in (plan_from_lammps_script(path=MELT_SCRIPT, screen=False), _melt_python_plan()):
        plan.engine = EngineOptions(device="cpu")
        plan.stages[0].steps = 40
        plan.stages[0].thermo_every = 20
        rows.append(execute(plan).thermo.rows)
    assert [r["Step"] for r in rows[0]] == [0, 20, 40]
    assert rows[0] == rows[1]


def test_a_script_with_several_runs_is_one_plan_of_stages(tmp_path):
    """Two runs: the second continues the first's simulation (same components); a velocity command
    between runs is applied to the continuing state; the CSV log has one header and no repeated step."""
    text = re.sub(r"region\s+box block 0 10 0 10 0 10", "region box block 0 4 0 4 0 4", MELT_SCRIPT.read_text())
    text, runs = re.subn(r"\nrun\s+250", "\nrun 20\nthermo 10\nrun 20\nvelocity all create 1.0 4711\nrun 10", text)
    assert runs == 1 and "block 0 4 0 4 0 4" in text
    plan = plan_from_lammps_script(text=text, screen=False)
    assert [s.steps for s in plan.stages] == [20, 20, 10]
    assert [s.rebuild for s in plan.stages] == [True, False, True]
    assert plan.stages[2].system is None and len(plan.stages[2].system_edits) == 1
    plan.engine = EngineOptions(device="cpu")
    plan.outputs.thermo_log = str(tmp_path / "thermo.csv")
    built = []
    result = execute(plan, on_simulation=lambda sim: built.append((sim.state.step, sim.temperature())))
    assert [step for step, _ in built] == [0, 40]        # the second run goes on in the first's simulation
    assert built[1][1] == pytest.approx(1.0, rel=1e-12)  # velocities recreated at T = 1 before the third
    steps = [r["Step"] for r in result.thermo.rows]
    assert steps == [0, 20, 30, 40, 50]
    lines = (tmp_path / "thermo.csv").read_text().splitlines()
    assert lines[0].startswith("Step,") and [int(line.split(",")[0]) for line in lines[1:]] == steps
    assert result.sim.state.step == 50


class _Counting(Reporter):
    """Records the steps it is served and the snapshot objects (to check they are shared)."""

    def __init__(self, every, needs):
        self.every, self.needs = every, needs
        self.steps, self.snapshots = [], []

    def report(self, snapshot):
        self.steps.append(snapshot.step)
        self.snapshots.append(snapshot)
        if self.needs.energy:
            snapshot.thermo_row()
        if self.needs.frame:
            snapshot.frame().result()


def test_reporters_get_their_steps_one_shared_snapshot_and_energies_only_when_asked(monkeypatch):
    system = lattice_system("fcc", 4, density=0.8442)
    create_velocities(system, 1.0, seed=5)
    sim = Simulation(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0), device="cpu")
    energy_every_5 = _Counting(5, Needs(energy=True))
    frame_every_3 = _Counting(3, Needs(frame=True))
    frame_every_5 = _Counting(5, Needs(frame=True))
    sim.reporters += [energy_every_5, frame_every_3, frame_every_5]
    energy_steps, thermo_calls, frame_copies = [], [], []
    compute = sim.forces.compute
    monkeypatch.setattr(sim.forces, "compute", lambda state, nl, with_energy: (
        energy_steps.append(state.step) if with_energy else None, compute(state, nl, with_energy))[1])
    thermo_row = sim.thermo_row
    monkeypatch.setattr(sim, "thermo_row", lambda: (thermo_calls.append(sim.step), thermo_row())[1])
    import pycumd.outputs.reporter as reporter_module
    pending = reporter_module.PendingFrame
    monkeypatch.setattr(reporter_module, "PendingFrame",
                        lambda s: (frame_copies.append(s.step), pending(s))[1])
    sim.run(16)
    assert energy_every_5.steps == [0, 5, 10, 15]
    assert frame_every_3.steps == [0, 3, 6, 9, 12, 15]
    assert frame_every_5.steps == [0, 5, 10, 15]
    # at steps 0 and 15 three reporters share one snapshot; one frame copy per step
    shared = {s.step: s for s in frame_every_3.snapshots}
    assert all(shared[s.step] is s for s in frame_every_5.snapshots if s.step in shared)
    assert sorted(frame_copies) == [0, 3, 5, 6, 9, 10, 12, 15]
    assert thermo_calls == [0, 5, 10, 15]
    # per-atom energies: at set-up (step 0) and at the energy reporter's steps only
    assert energy_steps == [0, 5, 10, 15]


def test_bad_output_paths_name_the_option(tmp_path):
    plan = _melt_python_plan(cells=3, steps=1)
    plan.outputs.thermo_log = str(tmp_path / "missing" / "thermo.csv")
    with pytest.raises(ValueError, match=r"thermo log .*missing.* does not exist"):
        execute(plan)
    with pytest.raises(ValueError, match="unknown trajectory format"):
        TrajectoryOutput(str(tmp_path / "traj.pdf"), 10)


def test_thermo_reporter_declares_the_first_and_last_step_of_a_run():
    thermo = ThermoReporter(every=0, screen=False)
    assert thermo.next_report(0, 0, 7) == 0 and thermo.next_report(1, 0, 7) == 7
    thermo.every = 3
    assert thermo.next_report(4, 0, 7) == 6 and thermo.next_report(7, 0, 7) == 7
    assert thermo.next_report(8, 0, 7) is None


def test_a_simulation_leaves_the_system_it_was_built_from_unchanged():
    """The state is reordered in place at every neighbour build: it must hold copies, so that a
    second simulation built from the same System starts from the same atoms."""
    system = lattice_system("fcc", 5, density=0.8442)
    create_velocities(system, 1.44, seed=3)
    before = {name: getattr(system, name).copy() for name in ("positions", "velocities", "types", "images", "ids")}
    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    Simulation(system, lj, device="cpu").run(30)
    for name, value in before.items():
        assert np.array_equal(getattr(system, name), value), name
