"""The command line as a new user meets it: help, version, benchmarks' files and exit statuses,
terminal output, clear errors for bad options and inputs, the run's outputs."""

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
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


# -- the CSV log holds the columns the run prints -----------------------------------------------------
CUSTOM = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
compute myT all temp
thermo_style custom step temp pe ke etotal press c_myT
thermo 5
run 10
thermo_style custom step pe
run 5
"""


def _csv_sections(path):
    """(header, rows) per header line of a CSV thermo log, values as Python numbers."""
    sections = []
    for line in Path(path).read_text().splitlines():
        fields = line.split(",")
        if fields[0].isidentifier():
            sections.append((fields, []))
        else:
            sections[-1][1].append([int(f) if f.lstrip("-").isdigit() else float(f) for f in fields])
    return sections


def test_the_csv_log_holds_the_thermo_style_custom_columns(tmp_path, monkeypatch):
    from pycumd.inputs.lammps_input import plan_from_lammps_script
    from pycumd.run_plan import execute

    from lammps_oracle import lammps_available, run_lammps

    monkeypatch.chdir(tmp_path)
    plan = plan_from_lammps_script(text=CUSTOM, screen=False, base_dir=str(tmp_path))
    plan.engine.device = "cpu"
    plan.outputs.thermo_log = str(tmp_path / "thermo.csv")
    result = execute(plan)
    (first, rows1), (second, rows2) = _csv_sections(tmp_path / "thermo.csv")
    assert first == ["Step", "Temp", "PotEng", "KinEng", "TotEng", "Press", "c_myT"]
    assert second == ["Step", "PotEng"]
    assert [r[0] for r in rows1] == [0, 5, 10] and [r[0] for r in rows2] == [15]
    by_step = {r["Step"]: r for r in result.thermo.rows}
    for header, rows in ((first, rows1), (second, rows2)):
        for row in rows:                                          # the digits of the run's own rows
            assert row == [by_step[row[0]][c] for c in header]
    if lammps_available():
        oracle = run_lammps(CUSTOM.replace("thermo_style custom step pe\n", "thermo_style custom step pe\n"
                                           "thermo_modify format float %20.15g\n")
                            .replace("thermo 5\n", "thermo 5\nthermo_modify format float %20.15g\n"))
        table = oracle.runs[0]
        for k, row in enumerate(rows1):
            for c, value in zip(first[1:], row[1:]):
                assert value == pytest.approx(table[c][k], rel=1e-7, abs=1e-9), (row[0], c)


# -- pycumd plot: units on the axes, no "drift" claim for a thermostatted run, multi-run logs ---------------
def test_plot_labels_carry_units_and_the_fit_is_not_called_drift(tmp_path):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from pycumd import plot

    log = tmp_path / "nvt.csv"
    log.write_text("Step,Temp,E_pair,E_mol,TotEng,Press\n" + "".join(
        f"{s},300.0,{-100.0 - s * 1e-3},0,{-90.0 - s * 1e-3},1.0\n" for s in range(0, 1000, 100)))
    labels = {units: [ax.get_ylabel() for ax in plot.figure(log, units=units).axes] for units in ("lj", "metal")}
    assert labels["metal"] == ["total energy (eV)", "energy (eV)", "temperature (K)", "pressure (bar)"]
    assert labels["lj"][0] == "total energy (epsilon per atom)" and labels["lj"][2] == "temperature (epsilon/kB)"
    fig = plot.figure(log, units="metal")
    legend = fig.axes[0].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts[1].startswith("least-squares line: -0.001 eV per step")
    assert "with a thermostat" in legend.get_title().get_text()
    assert fig.axes[-1].get_xlabel() == "step"


def test_plot_reads_a_log_whose_runs_print_other_columns(tmp_path):
    from pycumd import plot

    log = tmp_path / "two.csv"
    log.write_text("Step,Temp,PotEng\n0,1.0,-5.0\n5,1.1,-5.1\nStep,PotEng\n10,-5.2\n")
    columns = plot.read_csv(log)
    assert list(columns) == ["Step", "PotEng"]
    assert columns["Step"].tolist() == [0, 5, 10] and columns["PotEng"].tolist() == [-5.0, -5.1, -5.2]
    assert plot.kind_of(columns) == "thermo"



def test_plot_leaves_out_a_last_row_cut_off_by_a_kill(tmp_path):
    """A run killed inside the write of a row can leave it without its line end and its last value
    cut short ("0." of "0.5"): read_csv warns and leaves it out rather than read 0.0."""
    from pycumd import plot

    log = tmp_path / "cut.csv"
    log.write_text("Step,Temp,PotEng\n0,1.0,-5.0\n5,1.1,-5.1\n10,1.2,-5.")
    with pytest.warns(UserWarning, match=r"cut.csv:4: the last line has no line end"):
        columns = plot.read_csv(log)
    assert columns["Step"].tolist() == [0, 5] and columns["PotEng"].tolist() == [-5.0, -5.1]

# -- extended XYZ: species ASE reads ---------------------------------------------------------------
def _two_type_data(path, masses_comments=("", "")):
    """108 atoms of two types on an fcc lattice (3 x 3 x 3 cells, lj density 0.8442), as a data file."""
    a = (4 / 0.8442) ** (1 / 3)
    cells = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 1, 3)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    sites = ((cells + basis) * a).reshape(-1, 3)
    lines = [f"{k + 1} {k % 2 + 1} {x:.10f} {y:.10f} {z:.10f}" for k, (x, y, z) in enumerate(sites)]
    masses = [f"{t + 1} 1.0{' # ' + c if c else ''}" for t, c in enumerate(masses_comments)]
    path.write_text(f"two types\n\n{len(sites)} atoms\n2 atom types\n\n" + "".join(
        f"0 {3 * a:.10f} {d}lo {d}hi\n" for d in "xyz") + "\nMasses\n\n" + "\n".join(masses)
        + "\n\nAtoms # atomic\n\n" + "\n".join(lines) + "\n")


TWO_TYPES = """units lj
atom_style atomic
read_data two.data
velocity all create 1.0 4928 loop geom
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0 2.5
fix 1 all nve
thermo 10
run 20
"""


@pytest.mark.parametrize("comments,extra,species", [
    (("", ""), "", ("H", "He")),                              # unnamed types: placeholders type 1 H, type 2 He
    (("Ar", "Kr"), "", ("Ar", "Kr")),                         # Masses comments name the elements
    (("Ar", "big"), "", ("Ar", "He")),                        # a name that is no element: the placeholder
    (("", ""), "dump d all xyz 100 d.xyz\ndump_modify d element Ne Xe\n", ("Ne", "Xe")),
])
def test_the_extended_xyz_trajectory_is_read_by_ase(tmp_path, monkeypatch, comments, extra, species):
    ase_io = pytest.importorskip("ase.io")
    monkeypatch.chdir(tmp_path)                                  # the script's dump file goes there

    _two_type_data(tmp_path / "two.data", comments)
    script = tmp_path / "in.two"
    script.write_text(TWO_TYPES.replace("fix 1", extra + "fix 1"))
    traj = tmp_path / "t.xyz"
    dump = tmp_path / "t.lammpstrj"
    for path in (traj, dump):
        assert main(["run", str(script), "--device", "cpu", "--trajectory", str(path),
                     "--trajectory-every", "10"]) == 0
    frames = ase_io.read(traj, ":")
    assert len(frames) == 3                                      # steps 0, 10, 20
    last = frames[-1]
    types = last.arrays["type"]
    assert sorted(set(types.tolist())) == [1, 2]
    assert last.get_chemical_symbols() == [species[t - 1] for t in types]
    rows = np.loadtxt(dump.read_text().split("ITEM: ATOMS id type x y z ix iy iz vx vy vz\n")[-1].splitlines())
    assert np.array_equal(last.arrays["id"], rows[:, 0]) and np.array_equal(types, rows[:, 1])
    assert np.allclose(last.positions, rows[:, 2:5], rtol=0, atol=1e-8)
    assert np.allclose(np.diag(last.cell), 3 * (4 / 0.8442) ** (1 / 3), rtol=1e-9)


# -- pycumd run --steps N, and a script on standard input -------------------------------------------
SMALL = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 5 0 5 0 5
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


def _steps(log):
    return [int(line.split(",")[0]) for line in Path(log).read_text().splitlines()[1:]]


def test_steps_sets_the_length_of_the_last_run_of_a_script_and_of_a_toml_config(tmp_path):
    script = tmp_path / "in.two_runs"
    script.write_text(SMALL + "run 20\n")
    log = tmp_path / "t.csv"
    assert main(["run", str(script), "--device", "cpu", "--steps", "10", "--log", str(log)]) == 0
    assert _steps(log) == [0, 10, 20, 30]                   # the first run keeps its 20 steps
    config = tmp_path / "small.toml"
    config.write_text(MELT_TOML.replace("cells = 10", "cells = 4").replace("steps = 250", "steps = 250"))
    assert main(["run", str(config), "--device", "cpu", "--steps", "100", "--log", str(log)]) == 0
    assert _steps(log) == [0, 50, 100]


@pytest.mark.parametrize("value,message", [("-5", "--steps -5: the length of a run is a whole number of steps >= 0")])
def test_a_bad_steps_value_is_named(tmp_path, capsys, value, message):
    script = tmp_path / "in.small"
    script.write_text(SMALL)
    assert main(["run", str(script), "--device", "cpu", "--steps", value]) == 2
    assert capsys.readouterr().err == f"pycumd: error: {message}\n"


@pytest.mark.parametrize("how", ["redirect", "pipe"])
def test_a_script_on_standard_input_is_run(tmp_path, how):
    script = tmp_path / "in.small"
    script.write_text(SMALL.replace("run 20", "run 30"))
    assert main(["run", str(script), "--device", "cpu", "--log", str(tmp_path / "file.csv")]) == 0
    if how == "redirect":                                    # pycumd run < in.small
        with open(script) as stdin:
            piped = _pycumd("run", "--device", "cpu", "--log", "stdin.csv", cwd=tmp_path, stdin=stdin)
    else:                                                    # cat in.small | pycumd run
        piped = _pycumd("run", "--device", "cpu", "--log", "stdin.csv", cwd=tmp_path, input=script.read_text())
    assert piped.returncode == 0, piped.stderr
    assert "embedded default" not in piped.stdout
    assert (tmp_path / "stdin.csv").read_text() == (tmp_path / "file.csv").read_text()
    assert _steps(tmp_path / "stdin.csv") == [0, 10, 20, 30]


def test_errors_in_a_script_on_standard_input_name_it(tmp_path):
    proc = _pycumd("run", "--device", "cpu", cwd=tmp_path, input=SMALL.replace("run 20", "dielectric 2.0"))
    assert proc.returncode == 2
    assert "<stdin>:14: unsupported command 'dielectric'" in proc.stderr


def test_an_empty_script_or_one_without_a_run_is_an_error(tmp_path, capsys):
    for text in ("", SMALL.replace("run 20\n", "")):
        script = tmp_path / "in.norun"
        script.write_text(text)
        assert main(["run", str(script), "--device", "cpu"]) == 2
        assert capsys.readouterr().err == "pycumd: error: the input runs nothing: it has no run (or minimize) command\n"


# -- potential maps: refused up front, and an example input the project makes itself ------------------
def test_a_map_too_large_for_the_machine_is_refused_with_its_size_and_memory(tmp_path, capsys):
    from pycumd.potential_maps import Lattice, check_map_fits
    from pycumd.system import InputError

    with pytest.raises(InputError, match=r"a map of 1000 x 2000 x 3000 = 6e\+09 points at spacing 0.001 A needs at "
                                         r"least 22.4 GiB for its values \(single precision\); this machine has "
                                         r"16 GiB: use a larger --spacing"):
        check_map_fits(Lattice((0, 0, 0), 0.001, (1000, 2000, 3000)), "single", memory_bytes=16 * 2**30)
    check_map_fits(Lattice((0, 0, 0), 0.5, (100, 100, 100)), "double", memory_bytes=16 * 2**30)   # fits
    assert main(["potential-map", "--example", "nacl-cluster", "-o", str(tmp_path / "m.dx"),
                 "--spacing", "0.001", "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert "points at spacing 0.001 A needs at least" in captured.err and "TiB" in captured.err
    assert captured.out == "" and not (tmp_path / "m.dx").exists()


def test_place_ions_checks_its_output_before_computing_the_map(capsys):
    assert main(["place-ions", "--example", "nacl-cluster", "-o", "/nonexistent/ions.pqr", "--device", "cpu"]) == 2
    captured = capsys.readouterr()
    assert captured.err == "pycumd: error: -o /nonexistent/ions.pqr: folder /nonexistent does not exist\n"
    assert captured.out == ""                                  # no map was computed


def test_the_shipped_example_is_the_one_the_code_makes(tmp_path):
    from pycumd.potential_maps.examples import example_path, nacl_cluster, write_examples

    (written,) = write_examples(tmp_path)
    assert written.read_text() == example_path("nacl-cluster").read_text()
    positions, charges, radii, names, _ = nacl_cluster()
    assert len(charges) == 125 and charges.sum() == 1.0 and names.count("NA") == 63
    distances = np.linalg.norm(positions[:, None] - positions[None], axis=-1)[np.triu_indices(125, 1)]
    assert distances.min() == pytest.approx(2.82, rel=1e-12)


def test_potential_map_of_the_example_matches_coulombs_law(tmp_path, capsys):
    from pycumd.inputs.molecules import read_pqr
    from pycumd.potential_maps import unit_factor
    from pycumd.potential_maps.examples import example_path

    out = tmp_path / "cluster.npy"
    assert main(["potential-map", "--example", "nacl-cluster", "-o", str(out), "--spacing", "2.0",
                 "--precision", "double", "--device", "cpu"]) == 0
    assert "125 atoms (net charge +1.0000 e)" in capsys.readouterr().out
    values = np.load(out)
    meta = json.loads(out.with_suffix(".json").read_text())
    cluster = read_pqr(example_path("nacl-cluster"))
    assert np.isfinite(values).all()
    for index in [(0, 0, 0), (3, 7, 5), tuple(n // 2 for n in values.shape)]:
        point = np.asarray(meta["origin"]) + np.asarray(index) * np.asarray(meta["spacing"])   # a[i, j, k]
        r = np.linalg.norm(cluster.positions - point, axis=1)
        assert values[index] == pytest.approx(unit_factor("kT/e") * np.sum(cluster.charges / r), rel=1e-12)


def test_bench_potential_map_quick_runs_on_the_example_without_adk(monkeypatch, tmp_path):
    from pycumd.bench import potential_map as bench
    from pycumd.potential_maps.examples import example_path

    monkeypatch.setattr(bench, "ADK_CANDIDATES", [tmp_path / "absent.pqr"])
    assert bench.adk_path(quick=True) == example_path("nacl-cluster")
    with pytest.raises(FileNotFoundError, match="--quick runs without it"):
        bench.adk_path()


# -- errors at the line that set the bad value; atoms named by ID; the header's atom count ------------
@pytest.mark.parametrize("old,new,message", [
    ("fix 1 all nve", "timestep -0.005\nfix 1 all nve", "in.bad:12: timestep: time step must be positive and finite, got -0.005"),
    ("fix 1 all nve", "timestep nan\nfix 1 all nve", "in.bad:12: timestep: time step must be positive and finite, got nan"),
    ("mass 1 1.0", "mass 1 0", "in.bad:7: mass: mass must be positive and finite, got 0"),
    ("mass 1 1.0", "mass * inf", "in.bad:7: mass: mass must be positive and finite, got inf"),
])
def test_a_bad_value_is_reported_at_the_line_that_set_it(tmp_path, capsys, old, new, message):
    script = tmp_path / "in.bad"
    script.write_text(SMALL.replace(old, new))
    assert main(["run", str(script), "--device", "cpu"]) == 2
    assert capsys.readouterr().err == f"pycumd: error: {script.parent}/{message}\n"


def test_overlapping_atoms_are_named_by_their_ids(tmp_path, capsys):
    (tmp_path / "atoms.data").write_text(ATOMS.replace("1 1 1.0 1.0 1.0\n2 1 1.01 1.0 1.0\n3 1 5.0 5.0 5.0",
                                                       "7 1 5.0 5.0 5.0\n12 1 1.0 1.0 1.0\n30 1 1.01 1.0 1.0"))
    script = tmp_path / "in.overlap"
    script.write_text(OVERLAPPING)
    assert main(["run", str(script), "--device", "cpu"]) == 2
    assert "atoms with IDs 12 and 30 overlap: distance 0.01 is below" in capsys.readouterr().err


@pytest.mark.slow
def test_the_header_counts_every_atom_of_a_run_over_mpi_ranks(tmp_path):
    pytest.importorskip("mpi4py")
    import shutil

    mpiexec = shutil.which("mpiexec")
    if mpiexec is None:
        pytest.skip("no mpiexec")
    script = tmp_path / "in.small"
    script.write_text(SMALL.replace("region box block 0 5 0 5 0 5", "region box block 0 8 0 8 0 8")
                      .replace("run 20", "run 0"))
    env = {**__import__("os").environ, "PYTHONPATH": str(SRC), "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "pycumd.cli", "run", str(script),
                           "--device", "cpu"], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL,
                          timeout=900)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count("2048 atoms, 1 type(s)") == 1
    assert "for 0 steps of 2048 atoms" in proc.stdout


# -- the README's command lines --------------------------------------------------------------------
def _readme_commands() -> list:
    """The ``pycumd ...`` lines of the README's Running block, without comments, as argument lists
    (a ``< FILE`` redirection returned as ``("<", FILE)`` at the end)."""
    import shlex

    text = (SRC.parent / "README.md").read_text()
    block = text[text.index("## Running"):]
    block = block[block.index("```bash\n") + 8:block.index("```\n", block.index("```bash\n") + 8)]
    return [shlex.split(line.split("#")[0]) for line in block.splitlines() if line.startswith("pycumd ")]


def test_every_readme_command_line_parses_and_names_files_that_exist(capsys):
    import argparse
    import importlib

    from pycumd.cli import build_parser

    commands = _readme_commands()
    assert len(commands) >= 10
    root = SRC.parent
    for words in commands:
        args = words[1:]
        if "<" in args:                                            # pycumd run < FILE
            assert (root / args[args.index("<") + 1]).is_file(), words
            args = args[:args.index("<")]
        for word in args:
            if word.startswith("examples/"):
                assert (root / word).is_file(), words
        if args[0] == "bench" and len(args) > 1 and not args[1].startswith("-"):
            module = importlib.import_module(f"pycumd.bench.{args[1].replace('-', '_')}")
            parsers = []
            real = argparse.ArgumentParser.parse_args

            def capture(self, argv=None, namespace=None):
                parsers.append(real(self, argv, namespace))
                raise SystemExit(0)                               # parsed: the benchmark is not run
            try:
                argparse.ArgumentParser.parse_args = capture
                with pytest.raises(SystemExit) as stop:
                    module.main(args[2:])
            finally:
                argparse.ArgumentParser.parse_args = real
            assert stop.value.code == 0 and parsers, words
            continue
        try:
            parsed = build_parser(args[0]).parse_args(args)     # a subcommand's options: for that command
        except SystemExit as stop:                                # --help lines exit 0
            assert stop.code == 0, words
            continue
        if parsed.command in ("run", "potential-map", "place-ions"):
            given = getattr(parsed, "file", None) or getattr(parsed, "input", None)
            assert given is None or (root / given).is_file(), words   # the input the line names exists
    capsys.readouterr()
