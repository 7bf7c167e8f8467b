"""All-pairs tiled forces: against the neighbour list, a float64 reference, the CPU, and NVE conservation."""

import math

import numpy as np
import pytest

from pycumd.integrators import VelocityVerlet
from pycumd.neighbors.allpairs import (BLOCK_CANDIDATES, AllPairsForces, AllPairsNeighbors,
                                       choose_pair_method)
from pycumd.potentials.pasta import NuclearPasta
from pycumd.potentials.yukawa import Yukawa
from pycumd.simulation import Simulation
from pycumd.system import InputError, create_velocities, lattice_system
from pycumd.units import E2_MEV_FM, amu_to_mev

from conftest import HAVE_CUDA
from helpers import brute_force_energy_forces, lj, random_liquid

cuda_only = [pytest.mark.cuda, pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")]


def _state_after_setup(system, pot, device, precision, method):
    sim = Simulation(system.copy(), pot, device=device, precision=precision, pair_method=method)
    sim.state.forces[...] = np.nan            # every entry must be written
    sim._setup()
    f = sim.backend.to_host(sim.state.forces).astype(np.float64)
    order = np.argsort(sim.backend.to_host(sim.state.ids))   # a neighbour build may reorder particles
    return sim, f[order]


@pytest.mark.parametrize("cutoff", ["truncate", "shift_force"])
def test_all_pairs_equals_neighbor_list(backend, rng, cutoff):
    system = random_liquid(rng, n=500, density=0.8, n_types=2)       # L = 8.5 > 2 (2.5 + 0.3)
    pot = lj(cutoff).pair_coeff(1, 1, epsilon=0.7, sigma=1.05)
    nl, f_nl = _state_after_setup(system, pot, backend.name, "double", "neighbor")
    ap, f_ap = _state_after_setup(system, pot, backend.name, "double", "all_pairs")
    assert isinstance(ap.neighbors, AllPairsNeighbors) and ap.neighbors.nbr is None
    assert np.abs(f_ap - f_nl).max() < 1e-11 * np.abs(f_nl).max()
    assert ap.potential_energy() == pytest.approx(nl.potential_energy(), rel=1e-12)
    assert ap.virial_trace() == pytest.approx(nl.virial_trace(), rel=1e-12)
    e_ref, f_ref, w_ref = brute_force_energy_forces(system, pot)
    assert np.abs(f_ap - f_ref).max() < 1e-10 * np.abs(f_ref).max()
    assert ap.potential_energy() == pytest.approx(e_ref, rel=1e-12)
    w = backend.to_host(ap.state.virial)
    assert w.shape == (500, 6) and np.abs(w[:, 3:]).max() > 0         # off-diagonal terms written


def test_pair_method_choice_and_box_checks():
    L = np.array([20.0, 20.0, 20.0])
    assert choose_pair_method("auto", math.inf, 2.0, L) == "all_pairs"
    assert choose_pair_method("auto", 2.5, 0.3, L) == "neighbor"
    assert choose_pair_method("auto", 6.0, 2.0, L) == "all_pairs"     # 8 > 0.35 * 20
    assert choose_pair_method("all_pairs", 2.5, 0.3, L) == "all_pairs"
    system = lattice_system("fcc", 3, density=0.8442)                  # L = 5.04
    with pytest.raises(InputError, match="r_cut <= L/2"):
        Simulation(system, lj(r_cut=2.6), device="cpu", pair_method="all_pairs")
    sim = Simulation(system, lj(r_cut=2.5), device="cpu", pair_method="all_pairs")   # too small for a list
    assert sim.pair_method == "all_pairs"
    sim.run(5)
    assert np.isfinite(sim.potential_energy())


def test_all_pairs_step_builds_no_list_and_wraps(backend, rng):
    system = random_liquid(rng, n=200, density=0.6)
    pot = Yukawa(screening_length=1.0, r_cut=None).charges([1.0])
    system = system.__class__(system.box, system.positions, system.masses, "lj",
                              velocities=5 * system.velocities)
    sim = Simulation(system, pot, VelocityVerlet(dt=0.005), device=backend.name, precision="double")
    sim.neighbors.wrap_every = 10
    sim.run(40)
    assert sim.neighbors.nbr is None and sim.neighbors.n_builds == 1 + 4      # setup + 4 wraps
    pos = sim.state.host_positions(backend)
    L = system.box.L
    assert ((pos >= -0.5 * L) & (pos < 1.5 * L)).all()
    assert np.abs(sim.backend.to_host(sim.state.images)).sum() > 0


def white_dwarf_ions(cells=4, gamma=20.0, seed=4928459):
    """bcc carbon ions at 5e-11 fm^-3 (about 1e6 g/cm^3), velocities for Coulomb coupling gamma."""
    n_ion = 5e-11
    a_ws = (3 / (4 * math.pi * n_ion)) ** (1 / 3)
    z, mass = 6.0, amu_to_mev(12.0)
    kT = z * z * E2_MEV_FM / (a_ws * gamma)
    system = lattice_system("bcc", cells, units="nuclear", constant=(2 / n_ion) ** (1 / 3), mass=mass)
    create_velocities(system, kT, seed)
    omega_p = math.sqrt(4 * math.pi * n_ion * z * z * E2_MEV_FM / mass)
    return system, a_ws, 1.0 / omega_p


@pytest.mark.parametrize("r_cut", ["half_box", None])
def test_nve_energy_conservation_ions(backend, r_cut):
    system, a_ws, t_p = white_dwarf_ions()
    L = system.box.L[0]
    if r_cut == "half_box":      # shift_force: smooth at the cutoff, so the drift is the integrator's
        pot = Yukawa(screening_length=a_ws, r_cut=0.5 * L, cutoff="shift_force").charges([6.0])
        bound = 2e-4
    else:                        # all pairs: the nearest image jumps at L/2 (|V(L/2)| is small)
        pot = Yukawa(screening_length=a_ws).charges([6.0])
        bound = 2e-3
    sim = Simulation(system, pot, VelocityVerlet(dt=0.05 * t_p), device=backend.name, precision="double",
                     pair_method="all_pairs")
    energies = []
    for _ in range(8):
        sim.run(40)
        energies.append(sim.thermo_row()["TotEng"])
    spread = (max(energies) - min(energies)) / sim.kinetic_energy()
    assert spread < bound
    assert sim.neighbors.n_builds <= 8 * 1 + 8        # one setup per run plus wraps, never a list


@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
@pytest.mark.parametrize("pot_name", ["yukawa", "pasta"])
@pytest.mark.parametrize("block", BLOCK_CANDIDATES)
def test_gpu_matches_cpu(rng, precision, pot_name, block):
    if not HAVE_CUDA:
        pytest.skip("no CUDA GPU")
    from pycumd import backend as _backend
    from pycumd.precision import get_precision

    system = random_liquid(rng, n=1500, density=0.05, min_distance=0.9, n_types=2)
    pot = (Yukawa(screening_length=3.0).charges([1.0, 2.0]) if pot_name == "yukawa"
           else NuclearPasta(r_cut=None))
    _, f_cpu = _state_after_setup(system, pot, "cpu", "double", "all_pairs")
    gpu = _backend.select("cuda")
    sim = Simulation(system.copy(), pot, device="cuda", precision=precision, pair_method="all_pairs")
    sim.forces = AllPairsForces(pot, 2, gpu, get_precision(precision, "cuda"), block=block)
    sim.state.forces[...] = np.nan
    sim._setup()
    f_gpu = gpu.to_host(sim.state.forces).astype(np.float64)
    tol = {"double": 1e-11, "mixed": 1e-5, "single": 1e-4}[precision]
    assert np.abs(f_gpu - f_cpu).max() < tol * np.abs(f_cpu).max()
    cpu = Simulation(system.copy(), pot, device="cpu", pair_method="all_pairs")
    assert sim.potential_energy() == pytest.approx(cpu.potential_energy(), rel=10 * tol)
    assert sim.virial_trace() == pytest.approx(cpu.virial_trace(), rel=10 * tol, abs=tol)


test_gpu_matches_cpu = pytest.mark.cuda(test_gpu_matches_cpu)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_gpu_autotune_and_repeatability(rng):
    system = random_liquid(rng, n=3000, density=0.05, min_distance=0.9, n_types=2)
    pot = NuclearPasta(r_cut=None)
    sim = Simulation(system, pot, device="cuda", precision="mixed")
    assert sim.pair_method == "all_pairs"
    sim._setup()
    assert sim.forces.block in BLOCK_CANDIDATES
    assert set(sim.forces.timings) == set(BLOCK_CANDIDATES)
    first = sim.backend.to_host(sim.state.forces).copy()
    sim.forces.compute(sim.state, sim.neighbors, False)
    assert np.array_equal(first, sim.backend.to_host(sim.state.forces))     # fixed summation order
