"""The command line as a new user meets it: help, version, benchmarks' files and exit statuses,
terminal output, clear errors for bad options and inputs, the run's outputs."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pycumd import backend as _backend
from pycumd.bench import SUMMARIES
from pycumd.cli import main

SRC = Path(__file__).resolve().parent.parent / "src"


def _pycumd(*args, cwd=None, stdin=None, input=None):
    """``pycumd ARGS`` in a fresh interpreter (the source tree first on the path)."""
    env = {**__import__("os").environ, "PYTHONPATH": str(SRC)}
    return subprocess.run([sys.executable, "-m", "pycumd.cli", *args], capture_output=True, text=True,
                          cwd=cwd, env=env, stdin=stdin, input=input)


# -- help and version ------------------------------------------------------------------------------
def test_version_is_the_package_version(capsys):
    from pycumd import __version__

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"pycumd {__version__}"


def test_bench_help_lists_every_benchmark_with_one_line(capsys):
    with pytest.raises(SystemExit):
        main(["bench", "--help"])
    out = capsys.readouterr().out
    listed = dict(re.findall(r"^  (\S+) +(.+)$", out, flags=re.M))
    modules = {p.stem.replace("_", "-") for p in (SRC / "pycumd" / "bench").glob("*.py")} - {"--init--", "lammps-peer"}
    assert set(SUMMARIES) == modules
    for name, line in SUMMARIES.items():
        assert listed.get(name) == line


@pytest.mark.parametrize("name", sorted(SUMMARIES))
def test_each_benchmark_help_names_itself_in_plain_text(name, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["bench", name, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pycumd bench {name} ")
    for markup in (":class:", ":mod:", ":data:", ":func:", "``"):
        assert markup not in out, f"{markup} in the help of bench {name}"


@pytest.mark.parametrize("command", ["run", "potential-map", "place-ions", "plot"])
def test_subcommand_help_names_itself(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pycumd {command} ")
    assert "``" not in out and ":class:" not in out


# -- benchmarks: where they write, and when they cannot run -------------------------------------------
def test_bench_precision_writes_into_its_own_folder_not_docs(tmp_path):
    (tmp_path / "docs").mkdir()
    proc = _pycumd("bench", "precision", "--device", "cpu", "--values", "4", "--iterations", "10",
                   "--sample-every", "10", "--repeats", "1", "--no-plots", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "docs").iterdir()) == []
    written = sorted(p.name for p in (tmp_path / "bench-precision").iterdir())
    assert written == ["precision_doundo.md", "precision_results.json", "precision_summation.md"]
    out = tmp_path / "chosen"
    proc = _pycumd("bench", "precision", "--device", "cpu", "--values", "4", "--iterations", "10",
                   "--sample-every", "10", "--repeats", "1", "--no-plots", "--out-dir", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert (out / "precision_results.json").is_file()


def test_bench_drift_writes_into_its_own_folder_not_docs(tmp_path):
    record = {"precision": "double", "deterministic": False, "N": 4, "device": "cpu", "steps": 200,
              "time": [float(k) for k in range(20)], "energy": [1e-6 * k + 1e-8 * (-1) ** k for k in range(20)],
              "kT": 1.0, "us_per_step": 1.0}
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps([record]))
    (tmp_path / "docs").mkdir()
    proc = _pycumd("bench", "drift", "--merge", str(earlier), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert list((tmp_path / "docs").iterdir()) == []
    merged = json.loads((tmp_path / "bench-drift" / "drift_lj.json").read_text())
    assert merged[0]["N"] == 4


@pytest.mark.skipif(_backend.cuda_available(), reason="a GPU is usable here: the scan benchmark runs")
def test_bench_scan_without_a_gpu_exits_non_zero_and_says_why(tmp_path):
    proc = _pycumd("bench", "scan", cwd=tmp_path)
    assert proc.returncode == 2
    assert "pycumd bench scan: cannot run here: it needs CuPy and a CUDA GPU" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "bench-scan").exists()


@pytest.mark.skipif(_backend.cuda_available(), reason="checks the CPU's default precision")
def test_bench_ions_on_the_cpu_runs_in_double_by_default(tmp_path):
    proc = _pycumd("bench", "ions", "--sizes", "64", "--steps", "10", "--device", "cpu",
                   "--json", str(tmp_path / "ions.json"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    record = json.loads((tmp_path / "ions.json").read_text())
    assert record["precision"] == "double" and record["N"] == 64 and record["ms_per_step"] > 0


# -- the terminal: thermo rows and the progress bar ---------------------------------------------------
def _screen_lines(raw: str) -> list:
    """What a terminal shows for ``raw``: carriage returns go back to the line's start, ESC[K erases
    to its end, newlines start a new line (other escape sequences are not expected)."""
    lines, line, col = [], [], 0
    k = 0
    while k < len(raw):
        if raw.startswith("\x1b[K", k):
            del line[col:]
            k += 3
            continue
        ch = raw[k]
        k += 1
        if ch == "\r":
            col = 0
        elif ch == "\n":
            lines.append("".join(line))
            line, col = [], 0
        else:
            assert ch != "\x1b", f"unexpected escape sequence at {raw[k - 1:k + 5]!r}"
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
    return lines + ["".join(line)]


def test_thermo_rows_stay_whole_under_the_progress_bar_on_a_terminal(monkeypatch):
    import functools
    import os
    import pty
    import threading

    from pycumd import LennardJones, Simulation, ThermoReporter, VelocityVerlet
    from pycumd import create_velocities, lattice_system
    import pycumd.simulation

    controller, terminal_fd = pty.openpty()
    terminal = os.fdopen(terminal_fd, "w", buffering=1)
    assert terminal.isatty()
    received = []

    def read_all():
        try:
            while True:
                chunk = os.read(controller, 65536)
                if not chunk:
                    break
                received.append(chunk)
        except OSError:                  # the terminal side closed
            pass
    reader = threading.Thread(target=read_all, daemon=True)
    reader.start()
    # the bar on the same terminal, drawn after every block of steps (no minimum interval)
    monkeypatch.setattr(pycumd.simulation, "Progress",
                        functools.partial(pycumd.simulation.Progress, stream=terminal, interval=0.0))
    system = lattice_system("fcc", 3, density=0.8442)
    create_velocities(system, temperature=1.44, seed=87287)
    lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    thermo = ThermoReporter(every=5, screen=terminal)
    sim = Simulation(system, lj, VelocityVerlet(dt=0.005), device="cpu", reporters=[thermo])
    sim.run(20, progress=True)
    terminal.close()
    reader.join(timeout=10)
    shown = _screen_lines(b"".join(received).decode())
    table = [line for line in shown if line.strip()]
    rows = [line for line in table if not line.startswith("[")]
    assert len(rows) == 1 + 5                                      # header, steps 0, 5, 10, 15, 20
    assert rows[0].split() == ["Step", "Temp", "E_pair", "E_mol", "TotEng", "Press"]
    for line, row in zip(rows[1:], thermo.rows):
        assert "[" not in line and "steps/s" not in line         # no bar left on a row's line
        assert int(line.split()[0]) == row["Step"] and len(line.split()) == 6
    bars = [line for line in table if line.startswith("[")]
    assert len(bars) == 1 and bars[0].startswith("[" + "#" * 30 + "] 20/20 steps")   # the bar: last line
    assert table[-1] == bars[0]


# -- clear errors for bad values and options ----------------------------------------------------------
MELT_TOML = (SRC / "pycumd" / "data" / "melt.toml").read_text()


@pytest.mark.parametrize("old,new,message", [
    ("cells = 10", 'cells = "five"', 'system.cells = "five": expected a whole number >= 1 or a list of three'),
    ("cells = 10", "cells = [5, 5]", "system.cells = [5, 5]: expected a whole number >= 1 or a list of three"),
    ('units = "lj"', 'units = "si"', "units = \"si\": expected one of 'lj', 'metal', 'real', 'nuclear'"),
    ("temperature = 3.0", 'temperature = "hot"', 'velocity.temperature = "hot": expected a number >= 0'),
    ("seed = 87287", "seed = 1.5", "velocity.seed = 1.5: expected a whole number >= 1"),
    ("check = false", 'check = "no"', 'neighbor.check = "no": expected true or false'),
    ("epsilon = 1.0", 'epsilon = "one"', 'pair.coeff[0].epsilon = "one": expected a number >= 0'),
    ("types = [1, 1]", "types = [1]", "pair.coeff[0].types = [1]: expected two atom types [i, j] (from 1)"),
])
def test_a_toml_value_of_the_wrong_type_names_file_key_and_type(tmp_path, capsys, old, new, message):
    assert old in MELT_TOML
    config = tmp_path / "config.toml"
    config.write_text(MELT_TOML.replace(old, new))
    assert main(["run", str(config), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err == f"pycumd: error: {config}: {message}\n"


def test_a_toml_value_the_system_refuses_names_the_file(tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text(MELT_TOML.replace("density = 0.8442", "density = 0.8442\nconstant = 1.6"))
    assert main(["run", str(config), "--device", "cpu"]) == 2
    assert capsys.readouterr().err.startswith(f"pycumd: error: {config}: ")


@pytest.mark.parametrize("option,path,message", [
    ("--log", "/proc/t.csv", "--log /proc/t.csv: cannot be written (No such file or directory)"),
    ("--trajectory", "/nonexistent/t.xyz", "--trajectory /nonexistent/t.xyz: folder /nonexistent does not exist"),
    ("--checkpoint", ".", "--checkpoint .: is a folder, not a file"),
])
def test_an_output_option_that_cannot_be_written_is_named(tmp_path, capsys, option, path, message):
    config = tmp_path / "config.toml"
    config.write_text(MELT_TOML)
    assert main(["run", str(config), "--device", "cpu", option, path]) == 2
    assert capsys.readouterr().err == f"pycumd: error: {message}\n"


# -- outputs of a run that fails its start-up checks --------------------------------------------------
OVERLAPPING = """units lj
atom_style atomic
read_data atoms.data
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
fix 1 all nve
run 10
"""
ATOMS = """three atoms, the first two 0.01 apart

3 atoms
1 atom types

0 10 xlo xhi
0 10 ylo yhi
0 10 zlo zhi

Masses

1 1.0

Atoms # atomic

1 1 1.0 1.0 1.0
2 1 1.01 1.0 1.0
3 1 5.0 5.0 5.0
"""


@pytest.mark.parametrize("fault,message", [
    (None, "overlap"),                                                      # found by the first neighbour list
    ("region box block 0 10 0 10 0 10\ncreate_box 1 box\nmass 1 1.0", "no atoms"),   # when the simulation is built
])
def test_a_run_that_fails_its_start_up_checks_leaves_no_output_files(tmp_path, capsys, fault, message):
    script = tmp_path / "in.bad"
    script.write_text(OVERLAPPING.replace("read_data atoms.data", fault) if fault else OVERLAPPING)
    (tmp_path / "atoms.data").write_text(ATOMS)
    outputs = ["--log", str(tmp_path / "t.csv"), "--trajectory", str(tmp_path / "t.xyz")]
    assert main(["run", str(script), "--device", "cpu", *outputs]) == 2
    assert message in capsys.readouterr().err.lower()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["atoms.data", "in.bad"]


def test_a_run_that_fails_when_its_simulation_is_built_leaves_an_earlier_log_as_it_was(tmp_path, capsys):
    script = tmp_path / "in.bad"
    script.write_text(OVERLAPPING.replace("read_data atoms.data", "region box block 0 10 0 10 0 10\n"
                                                                  "create_box 1 box\nmass 1 1.0"))
    earlier = tmp_path / "t.csv"
    earlier.write_text("the log of an earlier run\n")
    assert main(["run", str(script), "--device", "cpu", "--log", str(earlier)]) == 2
    assert "no atoms" in capsys.readouterr().err
    assert earlier.read_text() == "the log of an earlier run\n"
