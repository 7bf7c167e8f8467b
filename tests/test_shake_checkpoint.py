"""Checkpoints of runs with fix shake and fix rattle (issue 35): a run stopped at a checkpoint and continued gives
the uninterrupted run's bits (positions, velocities, images, forces) and thermo log, with NVE and with NPT along z
(whose barostat reads the constraint virial the checkpoint carries)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parent))

from pycumd import EngineOptions, execute  # noqa: E402
from pycumd.backend import cuda_available  # noqa: E402
from pycumd.bookkeeping import RunStopped  # noqa: E402
from pycumd.checkpoint_file import read_checkpoint  # noqa: E402
from pycumd.inputs.lammps_input import plan_from_lammps_script  # noqa: E402

from test_checkpoint import _StopAt  # noqa: E402 (asks the simulation to stop after a step)
from test_shake import SCRIPT, molecules_data  # noqa: E402

INTEGRATORS = {
    "nve": "fix 1 all nve",
    "npt-z": "fix 1 all npt temp 300.0 300.0 100.0 z 1.0 1.0 1000.0 mtk no pchain 0 tchain 1",
}




def _plan(directory: Path, data: Path, style: str, integrator: str, engine: EngineOptions):
    script = SCRIPT.format(data=data, style=style, steps=30, every=5, dt=2.0).replace("fix 1 all nve",
                                                                                      INTEGRATORS[integrator])
    plan = plan_from_lammps_script(text=script, screen=False)
    plan.engine = engine
    plan.outputs.thermo_log = str(directory / "thermo.csv")
    plan.outputs.checkpoint = str(directory / "run.ckpt")
    plan.outputs.checkpoint_every = 10
    return plan


def _final(result):
    sim = result.sim
    order = np.argsort(sim.backend.to_host(sim.state.ids))
    system = sim.system()
    forces = np.asarray(sim.backend.to_host(sim.state.forces))[order]
    return system.positions, system.velocities, system.images, forces


def _continues_exactly(tmp_path, style, integrator, engine, stops=(10, 20)):
    data = tmp_path / "molecules.data"
    molecules_data(data)
    expected = _final(execute(_plan(tmp_path, data, style, integrator, engine)))
    expected_log = (tmp_path / "thermo.csv").read_bytes()
    for step in stops:
        work = tmp_path / f"from_{step}"
        work.mkdir()
        with pytest.raises(RunStopped):
            execute(_plan(work, data, style, integrator, engine),
                    on_simulation=lambda sim: sim.reporters.append(_StopAt(step)))
        checkpoint = read_checkpoint(work / "run.ckpt")
        assert checkpoint.step == step
        resumed = execute(_plan(work, data, style, integrator, engine), resume=checkpoint)
        for a, b in zip(_final(resumed), expected):
            assert np.array_equal(a, b), (style, integrator, step)
        assert (work / "thermo.csv").read_bytes() == expected_log


@pytest.mark.parametrize("integrator", sorted(INTEGRATORS))
@pytest.mark.parametrize("style", ["shake", "rattle"])
def test_shake_runs_continue_from_a_checkpoint_bit_for_bit(tmp_path, style, integrator):
    """64 small molecules (water with its angle, ethane, dimers, bent X-H2: shake2, shake3, shake4 and
    shake3angle clusters), 30 steps of 2 fs, checkpoints every 10: continuing from steps 10 and 20 gives the
    uninterrupted run's final positions, velocities, images and forces bit for bit and its thermo log."""
    _continues_exactly(tmp_path, style, integrator, EngineOptions(device="cpu"))


def test_a_checkpoint_of_other_clusters_is_refused(tmp_path):
    from pycumd.integrators.shake import Shake, ShakeSelection

    data = tmp_path / "molecules.data"
    molecules_data(data)
    plan = _plan(tmp_path, data, "shake", "nve", EngineOptions(device="cpu"))
    sim = execute(plan).sim
    shake = [m for m in sim.thermostat.members if isinstance(m, Shake)][0]
    state = shake.checkpoint_state()
    assert set(state["virial"]) == {"shake2", "shake3", "shake4", "shake3angle"}
    assert len(state["virial"]["shake3angle"]) == shake.clusters.count("shake3angle") > 0
    state["virial"]["shake2"] = state["virial"]["shake2"][:-1]
    with pytest.raises(ValueError, match="the checkpoint's shake2 clusters"):
        shake.restore_checkpoint_state(state)
    assert ShakeSelection is not None


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("graphs", [True, False])
@pytest.mark.parametrize("integrator", sorted(INTEGRATORS))
@pytest.mark.parametrize("style", ["shake", "rattle"])
def test_gpu_shake_runs_continue_from_a_checkpoint_bit_for_bit(tmp_path, style, integrator, graphs):
    """The same on the GPU in double precision, CUDA graphs on and off."""
    _continues_exactly(tmp_path, style, integrator, EngineOptions(device="cuda", precision="double",
                                                                  use_graphs=graphs))
