"""Pair potentials: reference values, force = -dE/dr, cutoff treatments, mixing, parameter errors."""

import numpy as np
import pytest

from pycumd.potentials import LennardJones
from pycumd.potentials.base import MissingParameterError


def test_lj_reference_values():
    lj = LennardJones(3.0).pair_coeff(0, 0, epsilon=2.0, sigma=1.5)
    rmin = 2 ** (1 / 6) * 1.5
    e, f = lj.energy_and_force(np.array([1.5, rmin, 2.0]))
    assert e[0] == pytest.approx(0.0, abs=1e-14)          # V(sigma) = 0
    assert e[1] == pytest.approx(-2.0, rel=1e-14)          # V(rmin) = -epsilon
    assert f[1] == pytest.approx(0.0, abs=1e-12)           # force vanishes at the minimum
    x = 1.5 / 2.0
    assert e[2] == pytest.approx(4 * 2.0 * (x**12 - x**6), rel=1e-14)
    assert f[2] == pytest.approx(4 * 2.0 * (12 * x**12 - 6 * x**6) / 2.0, rel=1e-14)


@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_force_is_minus_energy_gradient(cutoff):
    lj = LennardJones(2.5, cutoff=cutoff).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    r = np.linspace(0.9, 2.49, 200)
    h = 1e-6
    e_plus, _ = lj.energy_and_force(r + h)
    e_minus, _ = lj.energy_and_force(r - h)
    _, f = lj.energy_and_force(r)
    numeric = -(e_plus - e_minus) / (2 * h)
    assert np.allclose(f, numeric, rtol=1e-6, atol=1e-7)


def test_cutoff_treatments_at_the_cutoff():
    rc = 2.5
    v_rc = 4 * (rc**-12 - rc**-6)
    f_rc = 4 * (12 * rc**-13 - 6 * rc**-7)
    inside = np.array([rc * (1 - 1e-12)])
    e_t, f_t = LennardJones(rc, "truncate").pair_coeff(0, 0, epsilon=1, sigma=1).energy_and_force(inside)
    e_s, f_s = LennardJones(rc, "shift").pair_coeff(0, 0, epsilon=1, sigma=1).energy_and_force(inside)
    e_sf, f_sf = LennardJones(rc, "shift_force").pair_coeff(0, 0, epsilon=1, sigma=1).energy_and_force(inside)
    assert e_t[0] == pytest.approx(v_rc, rel=1e-9) and f_t[0] == pytest.approx(f_rc, rel=1e-9)
    assert abs(e_s[0]) < 1e-12 and f_s[0] == pytest.approx(f_rc, rel=1e-9)
    assert abs(e_sf[0]) < 1e-12 and abs(f_sf[0]) < 1e-10
    # beyond the cutoff everything is zero
    e, f = LennardJones(rc, "shift").pair_coeff(0, 0, epsilon=1, sigma=1).energy_and_force(np.array([rc, 3.0]))
    assert (e == 0).all() and (f == 0).all()


def test_shifted_force_energy_is_consistent_with_force_away_from_cutoff():
    """The gamdpy pitfall: a shifted-force energy whose derivative is not the force. Integrate F."""
    lj = LennardJones(2.5, "shift_force").pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    r = np.linspace(1.2, 2.5 - 1e-9, 20001)
    e, f = lj.energy_and_force(r)
    integral = np.trapezoid(f, r)                     # E(1.2) - E(2.5) = int F dr
    assert e[0] - 0.0 == pytest.approx(integral, rel=1e-6)


@pytest.mark.parametrize("mixing,eps,sig", [
    ("geometric", np.sqrt(1.0 * 0.5), np.sqrt(1.0 * 2.0)),
    ("arithmetic", np.sqrt(1.0 * 0.5), 1.5),
    ("sixthpower", 2 * np.sqrt(0.5) * 1.0 * 8.0 / (1 + 64), ((1 + 64) / 2) ** (1 / 6)),
])
def test_mixing_rules(mixing, eps, sig):
    lj = LennardJones(5.0, mixing=mixing).pair_coeff(0, 0, epsilon=1.0, sigma=1.0).pair_coeff(1, 1, epsilon=0.5, sigma=2.0)
    c = lj.coefficients(0, 1)
    assert c["epsilon"] == pytest.approx(eps, rel=1e-14)
    assert c["sigma"] == pytest.approx(sig, rel=1e-14)
    assert lj.coefficients(1, 0) == c


def test_explicit_unlike_pair_wins_over_mixing_and_table_layout():
    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=1).pair_coeff(1, 1, epsilon=1, sigma=1)
    lj.pair_coeff(1, 0, epsilon=0.1, sigma=0.9, r_cut=2.0)
    t = lj.table(2)
    assert t.shape == (4, 8)
    assert t[1, 0] == t[2, 0] == pytest.approx(4.0)       # rc^2 of the (0,1) pair, both orders
    assert t[1, 7] == pytest.approx(4 * 0.1 * 0.9**6)


def test_missing_and_bad_parameters():
    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=1)
    with pytest.raises(MissingParameterError, match=r"types \(2, 2\)"):
        lj.table(2)
    with pytest.raises(MissingParameterError, match="sigma"):
        LennardJones(2.5).pair_coeff(0, 0, epsilon=1)
    with pytest.raises(ValueError, match="unknown parameter"):
        LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=1, gamma=2)
    with pytest.raises(ValueError, match="cutoff treatment"):
        LennardJones(2.5, cutoff="smooth")
    with pytest.raises(ValueError, match="sigma > 0"):
        LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=-1)
