"""Inputs: LAMMPS scripts (run unchanged, errors with line numbers), TOML configs, the command line."""

import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pycumd.cli import main
from pycumd.inputs.config import ConfigError, load_config, plan_from_config
from pycumd.inputs.lammps_input import UnsupportedCommandError, run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.system import InputError

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
MELT_REF = {0: (3.0, -6.7733681, 0.0, -2.2744931, -3.7033504),
            100: (1.6712577, -4.7875609, 0.0, -2.281301, 5.6613913),
            250: (1.6645597, -4.7774327, 0.0, -2.2812174, 5.7526089)}

SMALL = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
thermo 10
run 20
"""


def _rows(path):
    return list(csv.DictReader(open(path)))


def test_melt_example_matches_lammps_log(tmp_path):
    log = tmp_path / "melt.csv"
    assert main(["run", str(EXAMPLES / "melt" / "in.melt"), "--log", str(log), "--device", "cpu"]) == 0
    rows = {int(r["Step"]): r for r in _rows(log)}
    assert sorted(rows) == [0, 50, 100, 150, 200, 250]
    for step, ref in MELT_REF.items():
        for key, value in zip(["Temp", "E_pair", "E_mol", "TotEng", "Press"], ref):
            assert float(rows[step][key]) == pytest.approx(value, rel=1e-6, abs=1e-6)


def test_default_run_is_the_embedded_melt(tmp_path, capsys):
    log = tmp_path / "default.csv"
    assert main(["run", "--log", str(log), "--device", "cpu"]) == 0
    rows = _rows(log)
    assert float(rows[-1]["TotEng"]) == pytest.approx(MELT_REF[250][3], rel=1e-6)
    assert "embedded default" in capsys.readouterr().out


def test_lammps_variables_and_nvt_langevin_commands():
    text = SMALL.replace("fix 1 all nve", "variable t equal 1.5*2/3\nfix 1 all nvt temp ${t} ${t} 0.5")
    runner = run_lammps_script(text=text, screen=False, device="cpu")
    assert runner.sim.thermostat.t_start == 1.0
    text = SMALL.replace("fix 1 all nve", "fix 1 all nve\nfix 2 all langevin 1.0 1.0 0.5 48279")
    runner = run_lammps_script(text=text, screen=False, device="cpu")
    assert runner.sim.state.step == 20 and runner.sim.thermostat.seed == 48279


@pytest.mark.parametrize("bad,message", [
    ("pair_style lj/cut 2.5", "pair_style lj/charmm/coul/long"),
    ("fix 1 all nve", "fix 1 all rigid single"),
    ("thermo 10", "compute 1 all rdf 50 1"),
])
def test_unsupported_command_names_it_and_its_line(bad, message):
    text = SMALL.replace(bad, message)
    line = text.splitlines().index(message) + 1
    with pytest.raises(LammpsScriptError) as err:
        run_lammps_script(text=text, screen=False, device="cpu")
    assert f":{line}:" in str(err.value)
    assert message.split()[0] in str(err.value)


def test_lammps_input_errors():
    with pytest.raises(LammpsScriptError, match="unknown unit system 'si'"):
        run_lammps_script(text=SMALL.replace("units lj", "units si"), screen=False, device="cpu")
    with pytest.raises(LammpsScriptError, match="mass not set for atom type"):
        run_lammps_script(text=SMALL.replace("mass 1 1.0", ""), screen=False, device="cpu")
    with pytest.raises(LammpsScriptError, match=r"missing pair coefficients for types \(1, 1\)"):
        run_lammps_script(text=SMALL.replace("pair_coeff 1 1 1.0 1.0 2.5", ""), screen=False, device="cpu")
    with pytest.raises(LammpsScriptError, match=r"<input>:7: mass: mass must be positive and finite, got -1.0"):
        run_lammps_script(text=SMALL.replace("mass 1 1.0", "mass 1 -1.0"), screen=False, device="cpu")
    # a small box runs on the all-pairs image sum (tests/test_small_box.py); the neighbour list refuses it
    with pytest.raises((InputError, LammpsScriptError), match="twice the cutoff plus skin"):
        run_lammps_script(text=SMALL.replace("block 0 6 0 6 0 6", "block 0 2 0 2 0 2"), screen=False,
                          device="cpu", pair_method="neighbor")
    assert issubclass(UnsupportedCommandError, LammpsScriptError)


TOML = """
units = "lj"
[system]
lattice = "fcc"
density = 0.8442
cells = 6
[velocity]
temperature = 1.44
seed = 87287
[pair]
r_cut = 2.5
cutoff = "shift_force"
[[pair.coeff]]
types = [1, 1]
epsilon = 1.0
sigma = 1.0
[integrator]
thermostat = "nose-hoover"
temperature = 1.0
damping = 0.5
[run]
steps = 10
thermo = 5
"""


def test_toml_config_builds_the_described_simulation():
    plan = plan_from_config(load_config(TOML), device="cpu")
    sim = plan.build_simulation()
    assert sim.state.n_atoms == 864 and plan.stages[0].steps == 10
    assert sim.potential.cutoff == "shift_force"
    assert sim.thermostat.t_start == 1.0 and sim.neighbors.skin == 0.3


@pytest.mark.parametrize("edit,message", [
    (lambda t: t.replace("cells = 6", "cells = 6\ncolour = 3"), r"unknown key\(s\) system.colour"),
    (lambda t: t.replace("seed = 87287", ""), "missing required key velocity.seed"),
    (lambda t: t.replace("r_cut = 2.5\n", ""), "missing required key pair.r_cut"),
    (lambda t: t.replace("[run]\nsteps = 10", "[run]"), "missing required key run.steps"),
    (lambda t: t.replace("damping = 0.5", ""), "integrator.damping"),
    (lambda t: t + "\n[extra]\n", r"unknown key\(s\) extra"),
])
def test_toml_errors_name_the_key(edit, message):
    with pytest.raises(ConfigError, match=message):
        plan_from_config(load_config(edit(TOML)), device="cpu").build_simulation()


def test_cli_reports_errors_and_keeps_output(tmp_path):
    bad = tmp_path / "in.bad"
    bad.write_text(SMALL.replace("thermo 10", "thermo 10\ndielectric 2.0"))
    proc = subprocess.run([sys.executable, "-m", "pycumd.cli", "run", str(bad), "--device", "cpu"],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert "in.bad:14: unsupported command 'dielectric'" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "pycumd.cli", "run", "--device", "cuda"],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        assert "no CUDA GPU is usable" in proc.stderr or "device 'cuda'" in proc.stderr


def test_nan_position_in_input_is_an_error():
    from pycumd.box import Box
    from pycumd.system import System
    with pytest.raises(InputError, match=r"position of atom 2 \(index 1\) is not finite"):
        System(Box([5, 5, 5]), [[0, 0, 0], [np.nan, 1, 1]], [1.0], "lj")


def test_trajectory_written_as_extended_xyz(tmp_path):
    traj = tmp_path / "t.xyz"
    assert main(["run", "--device", "cpu", "--trajectory", str(traj), "--trajectory-every", "125"]) == 0
    lines = traj.read_text().splitlines()
    assert lines[0] == "4000" and "Lattice=" in lines[1] and "step=0" in lines[1]
    assert sum(1 for line in lines if line.startswith("Lattice=")) == 3     # steps 0, 125, 250


def test_progress_bar_shows_rate_and_eta():
    import io

    from pycumd.outputs.progress import Progress

    stream = io.StringIO()
    bar = Progress(1000, stream=stream, enabled=True, interval=0.0)
    bar.update(250)
    bar.close()
    text = stream.getvalue()
    assert "250/1000 steps" in text and "steps/s" in text and "ETA" in text
    quiet = io.StringIO()
    Progress(1000, stream=quiet, enabled=None, interval=0.0).update(10)   # not a terminal: silent
    assert quiet.getvalue() == ""
