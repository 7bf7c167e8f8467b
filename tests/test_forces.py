"""Pair forces against a float64 all-pairs reference and against the gradient of the total energy."""

import numpy as np
import pytest

from pycumd.simulation import Simulation
from pycumd.system import System

from helpers import brute_force_energy_forces, lj, random_liquid


@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_forces_energy_virial_match_all_pairs(backend, rng, cutoff):
    system = random_liquid(rng, n=300, n_types=2)
    pot = lj(cutoff).pair_coeff(1, 1, epsilon=0.7, sigma=1.05)
    e_ref, f_ref, w_ref = brute_force_energy_forces(system, pot)
    sim = Simulation(system, pot, device=backend.name, precision="double")
    sim.state.forces[...] = np.nan
    sim.setup()
    f = backend.to_host(sim.state.forces)
    assert np.abs(f - f_ref).max() < 1e-10 * np.abs(f_ref).max()
    assert sim.potential_energy() == pytest.approx(e_ref, rel=1e-12)
    assert sim.virial_trace() == pytest.approx(w_ref, rel=1e-12)
    assert np.abs(f.sum(axis=0)).max() < 1e-9          # Newton's third law


@pytest.mark.parametrize("cutoff", ["truncate", "shift_force"])
def test_force_is_minus_gradient_of_total_energy(backend, rng, cutoff):
    system = random_liquid(rng, n=120, density=0.6, n_types=2)
    pot = lj(cutoff).pair_coeff(1, 1, epsilon=0.7, sigma=1.05)

    def energy(pos):
        s = System(system.box, pos, system.masses, "lj", types=system.types)
        return Simulation(s, pot, device=backend.name, precision="double").potential_energy()

    sim = Simulation(system.copy(), pot, device=backend.name, precision="double")
    sim.setup()
    f = backend.to_host(sim.state.forces)
    h = 1e-6
    for i in rng.choice(len(system.positions), 5, replace=False):
        for d in range(3):
            plus, minus = system.positions.copy(), system.positions.copy()
            plus[i, d] += h
            minus[i, d] -= h
            numeric = -(energy(plus) - energy(minus)) / (2 * h)
            assert f[i, d] == pytest.approx(numeric, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("lanes", [2, 4, 8])
def test_lanes_change_only_the_summation_order(backend, rng, lanes):
    """Forces, energy and virial with several threads per atom equal the one-lane sums to rounding."""
    from pycumd.forces import default_lanes

    system = random_liquid(rng, n=600, density=0.8, min_distance=0.85)
    sims = {}
    for k in (1, lanes):
        sim = Simulation(system.copy(), lj(), device=backend.name, precision="double")
        sim.forces.lanes = k
        sim.setup()
        sim.forces.compute(sim.state, sim.neighbors, True)
        sims[k] = [backend.to_host(a).copy() for a in (sim.state.forces, sim.state.energy, sim.state.virial)]
    for a, b in zip(sims[1], sims[lanes]):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-12 * np.abs(a).max())
    assert default_lanes(32_000) == 4 and default_lanes(256_000) == 2 and default_lanes(10**6) == 1
