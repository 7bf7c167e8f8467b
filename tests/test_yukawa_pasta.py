"""Screened Coulomb (Yukawa) ions and the nuclear-pasta model; nuclear units."""

import math

import numpy as np
import pytest

from pycumd.box import Box
from pycumd.neighbors.allpairs import AllPairsNeighbors
from pycumd.potentials.base import MissingParameterError
from pycumd.potentials.pasta import NuclearPasta
from pycumd.potentials.yukawa import Yukawa
from pycumd.simulation import Simulation
from pycumd.system import InputError, System
from pycumd.units import AMU_MEV, E2_MEV_FM, amu_to_mev, get_units

from helpers import brute_force_energy_forces, random_positions

E2 = E2_MEV_FM


def test_nuclear_units():
    u = get_units("nuclear")
    assert (u.boltz, u.mvv2e, u.ftm2v, u.nktv2p) == (1.0, 1.0, 1.0, 1.0)
    assert (u.energy, u.length, u.time, u.mass) == ("MeV", "fm", "fm/c", "MeV/c^2")
    assert E2 == pytest.approx(1.44, abs=1e-3)
    assert amu_to_mev(12.0) == pytest.approx(11177.92922904, rel=1e-13)
    assert np.allclose(amu_to_mev(np.array([1.0, 16.0])), [AMU_MEV, 16 * AMU_MEV])


# -- reference values -----------------------------------------------------------------------
def test_yukawa_reference_values_and_mixing():
    lam = 25.0
    pot = Yukawa(screening_length=lam, r_cut=200.0).pair_coeff(0, 0, prefactor=36 * E2).pair_coeff(
        1, 1, prefactor=64 * E2)
    assert pot.coefficients(0, 1)["prefactor"] == pytest.approx(48 * E2, rel=1e-15)
    r = np.array([10.0, 30.0, 77.0])
    e, f = pot.energy_and_force(r, 0, 1)
    e_ref = 48 * E2 * np.exp(-r / lam) / r
    f_ref = 48 * E2 * np.exp(-r / lam) / r**2 * (1 + r / lam)       # seed eq. (3)
    assert np.allclose(e, e_ref, rtol=1e-14) and np.allclose(f, f_ref, rtol=1e-14)
    # charges() sets every pair, opposite charges included
    mixed = Yukawa(10.0).charges([2.0, -1.0])
    assert mixed.coefficients(0, 1)["prefactor"] == pytest.approx(-2 * E2)
    with pytest.raises(MissingParameterError, match="negative"):
        Yukawa(10.0).pair_coeff(0, 0, prefactor=-1.0).pair_coeff(1, 1, prefactor=1.0).coefficients(0, 1)


def test_yukawa_without_cutoff():
    pot = Yukawa(10.0).charges([1.0])
    assert math.isinf(pot.r_cut) and math.isinf(pot.max_cutoff(1))
    row = pot.table(1)[0]
    assert np.isinf(row[0]) and row[2] == 0.0 and row[3] == 0.0
    e, f = pot.energy_and_force([1e3], 0, 0)
    assert e[0] == pytest.approx(E2 * math.exp(-100.0) / 1e3, rel=1e-14)
    with pytest.raises(ValueError, match="finite r_cut"):
        Yukawa(10.0, r_cut=None, cutoff="shift")
    with pytest.raises(ValueError, match="screening_length"):
        Yukawa(0.0)


def test_pasta_reference_values():
    pot = NuclearPasta()
    r = 1.3
    g1, g2 = math.exp(-r * r / 1.25), math.exp(-r * r / 2.5)
    coulomb = E2 * math.exp(-r / 10.0) / r
    expected = {(0, 0): 110 * g1 - 2 * g2 + coulomb,      # pp: b + c = -2 MeV, plus Coulomb
                (1, 1): 110 * g1 - 2 * g2,                # nn
                (0, 1): 110 * g1 - 50 * g2}               # pn: b - c = -50 MeV
    for (ti, tj), v in expected.items():
        e, _ = pot.energy_and_force([r], ti, tj, n_types=2)
        assert e[0] == pytest.approx(v, rel=1e-14), (ti, tj)
    # the p-n well: attractive around 1.5-2 fm, repulsive core
    e, _ = pot.energy_and_force(np.array([0.3, 1.8]), 0, 1, n_types=2)
    assert e[0] > 0 > e[1]
    changed = NuclearPasta(a=100.0, c=20.0, screening_length=5.0)
    e, _ = changed.energy_and_force([r], 0, 0, n_types=2)
    assert e[0] == pytest.approx(100 * g1 - 6 * g2 + E2 * math.exp(-r / 5.0) / r, rel=1e-14)
    with pytest.raises(MissingParameterError, match="missing pair coefficients"):
        pot.table(3)


# -- force = -dE/dr -------------------------------------------------------------------------
POTENTIALS = {
    "yukawa": lambda cutoff: Yukawa(12.0, r_cut=40.0, cutoff=cutoff).charges([6.0, 8.0]),
    "pasta": lambda cutoff: NuclearPasta(r_cut=15.0, cutoff=cutoff),
}


@pytest.mark.parametrize("name", POTENTIALS)
@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_force_is_minus_derivative(name, cutoff):
    pot = POTENTIALS[name](cutoff)
    rc = pot.r_cut
    r = np.linspace(0.4, rc - 0.1, 57)
    h = 1e-6
    for ti, tj in ((0, 0), (0, 1), (1, 1)):
        e, f = pot.energy_and_force(r, ti, tj, n_types=2)
        ep, _ = pot.energy_and_force(r + h, ti, tj, n_types=2)
        em, _ = pot.energy_and_force(r - h, ti, tj, n_types=2)
        numeric = -(ep - em) / (2 * h)
        scale = np.abs(f).max()
        assert np.abs(f - numeric).max() < 1e-7 * scale + 1e-9, (ti, tj)
        if cutoff != "truncate":       # energy vanishes at the cutoff
            e_rc, f_rc = pot.energy_and_force([rc * (1 - 1e-12)], ti, tj, n_types=2)
            assert abs(e_rc[0]) < 1e-9 * np.abs(e).max()
            if cutoff == "shift_force":
                assert abs(f_rc[0]) < 1e-9 * scale


# -- whole systems: energies against a float64 numpy direct sum ------------------------------
def ion_mixture(rng, n=160, density=2e-6, z_fraction=0.5):
    """C/O ions (types 0, 1: Z = 6, 8, masses 12, 16 u) at random positions, no close contacts."""
    L = (n / density) ** (1 / 3)
    a_ws = (3 / (4 * math.pi * density)) ** (1 / 3)
    pos = random_positions(rng, n, L, 0.8 * a_ws)
    types = (rng.random(n) < z_fraction).astype(np.int32)
    return System(Box([L] * 3), pos, amu_to_mev(np.array([12.0, 16.0])), "nuclear", types=types)


def numpy_direct_sum(system, pair_energy):
    """Float64 direct sum over i < j of pair_energy(r, ti, tj) with the minimum image (vectorised)."""
    pos, L, t = system.positions, system.box.L, system.types
    i, j = np.triu_indices(len(pos), 1)
    d = pos[i] - pos[j]
    d -= L * np.rint(d / L)
    r = np.sqrt((d * d).sum(axis=1))
    return float(np.sum(pair_energy(r, t[i], t[j])))


def test_yukawa_ions_energy_matches_numpy(backend, rng):
    system = ion_mixture(rng)
    lam = 0.6 * system.box.L[0]
    pot = Yukawa(lam).charges([6.0, 8.0])
    z = np.array([6.0, 8.0])
    e_ref = numpy_direct_sum(system, lambda r, ti, tj: z[ti] * z[tj] * E2 * np.exp(-r / lam) / r)
    sim = Simulation(system, pot, device=backend.name, precision="double")
    assert sim.pair_method == "all_pairs" and isinstance(sim.neighbors, AllPairsNeighbors)
    assert sim.potential_energy() == pytest.approx(e_ref, rel=1e-12)
    _, f_ref, w_ref = brute_force_energy_forces(system, pot)
    f = backend.to_host(sim.state.forces)
    assert np.abs(f - f_ref).max() < 1e-10 * np.abs(f_ref).max()
    assert sim.virial_trace() == pytest.approx(w_ref, rel=1e-11)
    assert sim.neighbors.nbr is None


def pasta_system(rng, n=600, density=0.05, proton_fraction=0.35, min_distance=0.9):
    L = (n / density) ** (1 / 3)
    pos = random_positions(rng, n, L, min_distance)
    types = np.where(np.arange(n) < round(proton_fraction * n), 0, 1).astype(np.int32)
    return System(Box([L] * 3), pos, [938.272, 939.565], "nuclear", types=types)


@pytest.mark.parametrize("method", ["neighbor", "all_pairs"])
def test_pasta_energy_matches_numpy(backend, rng, method):
    system = pasta_system(rng)
    rc = 8.0
    pot = NuclearPasta(r_cut=rc)

    def v(r, ti, tj):
        tau = np.where(ti == 0, 1.0, -1.0) * np.where(tj == 0, 1.0, -1.0)
        coul = np.where((ti == 0) & (tj == 0), E2 * np.exp(-r / 10.0) / r, 0.0)
        return np.where(r < rc, 110 * np.exp(-r**2 / 1.25) + (-26 + 24 * tau) * np.exp(-r**2 / 2.5) + coul, 0.0)

    e_ref = numpy_direct_sum(system, v)
    sim = Simulation(system, pot, device=backend.name, precision="double", pair_method=method)
    assert sim.pair_method == method
    assert sim.potential_energy() == pytest.approx(e_ref, rel=1e-11)


def test_neighbor_method_needs_a_cutoff():
    system = pasta_system(np.random.default_rng(1), n=50)
    with pytest.raises(InputError, match="needs a finite cutoff"):
        Simulation(system, NuclearPasta(r_cut=None), device="cpu", pair_method="neighbor")
    with pytest.raises(InputError, match="unknown pair_method"):
        Simulation(system, NuclearPasta(), device="cpu", pair_method="tree")
