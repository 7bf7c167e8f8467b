"""All-pairs tiled forces: against the neighbour list, a float64 reference, the CPU, and NVE conservation."""

import math

import numpy as np
import pytest

from pycumd.integrators import VelocityVerlet
from pycumd.neighbors.allpairs import (BLOCK_CANDIDATES, LOG2_E, AllPairsForces,
                                       AllPairsNeighbors, choose_pair_method, yukawa_fast_params)
from pycumd.precision import get_precision
from pycumd.potentials.pasta import NuclearPasta
from pycumd.potentials.yukawa import Yukawa
from pycumd.simulation import Simulation
from pycumd.box import Box
from pycumd.system import InputError, System, create_velocities, lattice_system
from pycumd.units import E2_MEV_FM, amu_to_mev

from conftest import HAVE_CUDA
from helpers import brute_force_energy_forces, lj, random_liquid

cuda_only = [pytest.mark.cuda, pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")]


def _state_after_setup(system, pot, device, precision, method):
    sim = Simulation(system.copy(), pot, device=device, precision=precision, pair_method=method)
    sim.state.forces[...] = np.nan            # every entry must be written
    sim.setup()
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
    with pytest.raises(InputError, match="periodic images"):
        Simulation(lattice_system("fcc", 1, density=2000.0), lj(r_cut=2.5), device="cpu", pair_method="all_pairs")
    images = Simulation(system, lj(r_cut=2.6), device="cpu", pair_method="all_pairs")   # r_cut > L/2: images
    assert len(images.forces.image_set(system.box.L)[0]) == 7           # (0, 0, 0) and the six faces
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


def _gpu_forces(system, pot, precision, block, fast=True, exact_separation=True, with_energy=False,
                shift=None):
    """GPU all-pairs forces (float64, (N, 3)), energy and virial trace with one launch shape."""
    from pycumd import backend as _backend

    gpu = _backend.select("cuda")
    sim = Simulation(system.copy(), pot, device="cuda", precision=precision, pair_method="all_pairs")
    sim.forces = AllPairsForces(pot, system.n_types, gpu, get_precision(precision, "cuda"), block=block,
                                fast=fast, exact_separation=exact_separation)
    sim.setup()
    if shift is not None:                         # positions outside the box: the kernel must wrap them
        sim.state.positions[:, :3] += gpu.xp.asarray(shift, dtype=sim.state.positions.dtype)
    sim.state.forces[...] = np.nan                # every entry must be written
    sim.state.energy[...] = np.nan
    sim.forces.compute(sim.state, sim.neighbors, with_energy)
    f = gpu.to_host(sim.state.forces).astype(np.float64)
    e = float(gpu.to_host(sim.state.energy).astype(np.float64).sum()) if with_energy else None
    w = float(gpu.to_host(sim.state.virial)[:, :3].astype(np.float64).sum()) if with_energy else None
    return sim, f, e, w


@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
@pytest.mark.parametrize("pot_name", ["yukawa", "pasta", "yukawa_generic"])
def test_gpu_matches_cpu(rng, precision, pot_name):
    """Every launch shape of the kernel that the precision and potential select, against the CPU."""
    if not HAVE_CUDA:
        pytest.skip("no CUDA GPU")
    system = random_liquid(rng, n=1500, density=0.05, min_distance=0.9, n_types=2)
    pot = (NuclearPasta(r_cut=None) if pot_name == "pasta"
           else Yukawa(screening_length=3.0).charges([1.0, 2.0]))
    fast = pot_name == "yukawa"
    _, f_cpu = _state_after_setup(system, pot, "cpu", "double", "all_pairs")
    cpu = Simulation(system.copy(), pot, device="cpu", pair_method="all_pairs")
    e_cpu, w_cpu = cpu.potential_energy(), cpu.virial_trace()
    tol = {"double": 1e-11, "mixed": 1e-5, "single": 1e-4}[precision]
    sim, *_ = _gpu_forces(system, pot, precision, None, fast=fast)
    assert sim.forces.fast == (fast and precision != "double")
    for block in sim.forces.candidates:
        _, f_gpu, e_gpu, w_gpu = _gpu_forces(system, pot, precision, block, fast=fast, with_energy=True)
        err = np.abs(f_gpu - f_cpu).max() / np.abs(f_cpu).max()
        assert err < tol, (block, err)
        assert e_gpu == pytest.approx(e_cpu, rel=10 * tol), block
        assert w_gpu == pytest.approx(w_cpu, rel=10 * tol, abs=tol), block


test_gpu_matches_cpu = pytest.mark.cuda(test_gpu_matches_cpu)


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_gpu_yukawa_fast_path(rng):
    """Fast path, single and mixed, both separation modes, cubic and not: 2 or 4 targets per thread,
    source chunks (S > 1), Newton shapes (one super-group, several, padding), an N that fills no
    block evenly, positions far outside the box, bitwise repeatability."""
    cube = random_liquid(rng, n=1001, density=0.03, min_distance=0.8, n_types=3)
    stretch = np.array([1.0, 1.15, 0.9])
    box = System(Box(cube.box.L * stretch), cube.positions * stretch, cube.masses, "lj", types=cube.types)
    pot = Yukawa(screening_length=2.5).charges([1.0, 3.0, 0.0])        # a neutral species too
    refs = {id(system): brute_force_energy_forces(system, pot) for system in (cube, box)}
    for system, precision, exact in ((cube, "single", True), (cube, "mixed", True), (cube, "single", False),
                                     (box, "single", True), (box, "mixed", True), (box, "mixed", False)):
        e_ref, f_ref, w_ref = refs[id(system)]
        shift = np.round(rng.uniform(-3, 3, (1001, 3))) * system.box.L     # whole box lengths, up to 3
        tol = {"mixed": 1e-5, "single": 1e-4}[precision]
        for block in ((32, 1, 2, 1), (64, 2, 2, 5), (32, 4, 4, 0), (128, 2, 2, 0), (64, 1, 4, 32),
                      ("newton", 8, 4), ("newton", 4, 2), ("newton", 1, 2), ("newton", 2, 4)):
            case = (system is cube, precision, exact, block)
            sim, f, e, w = _gpu_forces(system, pot, precision, block, exact_separation=exact, with_energy=True,
                                       shift=shift)
            assert sim.forces.fast and sim.forces.exact_separation == exact
            err = np.abs(f - f_ref).max() / np.abs(f_ref).max()
            assert err < tol, (case, err)
            assert e == pytest.approx(e_ref, rel=10 * tol), case
            assert w == pytest.approx(w_ref, rel=10 * tol), case
            sim.forces.compute(sim.state, sim.neighbors, False)
            first = sim.backend.to_host(sim.state.forces).copy()
            # the force-only kernel sums in the same order (Newton shapes whose energy launch needs fewer
            # warps for its shared memory: another grouping, so rounding differences)
            same_order = block[0] != "newton" or (sim.forces._newton_shape(block, 1001, True)[0]
                                                  == sim.forces._newton_shape(block, 1001, False)[0])
            assert np.abs(first - f).max() <= (1e-6 if same_order else tol) * np.abs(f).max(), case
            for _ in range(2):                                              # tickets reset by the last block
                sim.forces.compute(sim.state, sim.neighbors, False)
                assert np.array_equal(first, sim.backend.to_host(sim.state.forces)), case


def _fast_path_emulation(system, pot, exact):
    """The fast path's arithmetic in float64 on the host (fixed-point minimum image, scaled units,
    p = a_j 2^-r', fr' = p rinv'^2 (rinv' + ln 2)), for a check without a GPU."""
    a, kappa = yukawa_fast_params(pot, pot.table(system.n_types), system.n_types, get_precision("single", "cuda"))
    alpha = kappa * LOG2_E
    L = system.box.L
    X = np.floor((system.positions / L) % 1.0 * 2.0**32 + 0.5).astype(np.int64) % 2**32
    d = (X[:, None, :] - X[None, :, :]) % 2**32
    d = np.where(d >= 2**31, d - 2**32, d)                              # as int32: the minimum image
    if not exact:
        d = np.floor((d + 256) / 512.0) * 512.0                          # the top 23 bits, rounded
    dx = d * (alpha * L / 2.0**32)
    r2 = (dx * dx).sum(axis=-1)
    np.fill_diagonal(r2, 1.0)
    ri = 1.0 / np.sqrt(r2)
    np.fill_diagonal(ri, 0.0)                                           # the self pair, masked
    t = system.types
    p = a[t][None, :] * 2.0 ** (-r2 * ri)
    fr = p * ri * ri * (ri + math.log(2.0))
    f = a[t][:, None] * alpha**2 * (fr[..., None] * dx).sum(axis=1)
    e = 0.5 * alpha * (a[t][:, None] * p * ri).sum()
    w = 0.5 * alpha * (a[t][:, None, None] * fr[..., None] * dx * dx).sum()
    return f, e, w


@pytest.mark.parametrize("exact", [False, True])
def test_yukawa_fast_path_arithmetic(rng, exact):
    """The fast path's formulas (emulated on the host) give the Yukawa forces, energy and virial."""
    system = random_liquid(rng, n=300, density=0.05, min_distance=0.9, n_types=2)
    system.positions[:] += np.round(rng.uniform(-2, 2, (300, 3))) * system.box.L     # outside the box
    pot = Yukawa(screening_length=3.0).charges([1.0, 2.0])
    e_ref, f_ref, w_ref = brute_force_energy_forces(system, pot)
    f, e, w = _fast_path_emulation(system, pot, exact)
    err = np.abs(f - f_ref).max() / np.abs(f_ref).max()
    assert err < (1e-8 if exact else 1e-5)
    assert e == pytest.approx(e_ref, rel=1e-8)
    assert w == pytest.approx(w_ref, rel=1e-7)


def test_yukawa_fast_path_applies():
    single, mixed, double = (get_precision(p, "cuda") for p in ("single", "mixed", "double"))
    pot = Yukawa(screening_length=3.0).charges([6.0, 8.0])
    a, kappa = yukawa_fast_params(pot, pot.table(2), 2, single)
    assert np.allclose(a**2, [36 * pot.e2, 64 * pot.e2]) and kappa == pytest.approx(1 / 3.0)
    assert yukawa_fast_params(pot, pot.table(2), 2, mixed) is not None
    assert yukawa_fast_params(pot, pot.table(2), 2, double) is None
    opposite = Yukawa(screening_length=3.0).charges([1.0, -1.0])          # A_01 < 0
    assert yukawa_fast_params(opposite, opposite.table(2), 2, single) is None
    not_rank_one = Yukawa(screening_length=3.0).pair_coeff(0, 0, prefactor=1.0).pair_coeff(
        1, 1, prefactor=4.0).pair_coeff(0, 1, prefactor=1.0)
    assert yukawa_fast_params(not_rank_one, not_rank_one.table(2), 2, single) is None
    cut = Yukawa(screening_length=3.0, r_cut=10.0).charges([1.0])
    assert yukawa_fast_params(cut, cut.table(1), 1, single) is None
    pasta = NuclearPasta(r_cut=None)
    assert yukawa_fast_params(pasta, pasta.table(2), 2, single) is None


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_gpu_autotune_and_repeatability(rng):
    system = random_liquid(rng, n=3000, density=0.05, min_distance=0.9, n_types=2)
    pot = NuclearPasta(r_cut=None)
    sim = Simulation(system, pot, device="cuda", precision="mixed")
    assert sim.pair_method == "all_pairs"
    sim.setup()
    assert not sim.forces.fast and sim.forces.candidates == BLOCK_CANDIDATES
    assert sim.forces.block in BLOCK_CANDIDATES
    assert set(sim.forces.timings) == set(BLOCK_CANDIDATES)
    first = sim.backend.to_host(sim.state.forces).copy()
    sim.forces.compute(sim.state, sim.neighbors, False)
    assert np.array_equal(first, sim.backend.to_host(sim.state.forces))     # fixed summation order
