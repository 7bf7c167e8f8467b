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
