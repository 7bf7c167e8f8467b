"""The CPU half list (each pair once, Newton's third law in the force kernel) against brute force
and against the full list: pairs, forces, energies, virials, -grad E, bit-for-bit repeats."""


import numba
import numpy as np
import pytest

from pycumd import backend as _backend
from pycumd.forces import PairForces, half_list_chunks
from pycumd.neighbors.verlet import IMAGE_SHIFT_MIN_CELLS, NeighborList
from pycumd.precision import get_precision
from pycumd.simulation import Simulation
from pycumd.state import State
from pycumd.system import lattice_system

from helpers import brute_force_pairs, lj, melt_system, random_liquid, state_hash

CPU = _backend.select("cpu")
DOUBLE = get_precision("double", "cpu")
#: thread counts to compare: 1 and, where Numba has them, 2 (the chunks of the force sums change)
THREADS = [1, 2] if numba.config.NUMBA_NUM_THREADS >= 2 else [1]


@pytest.fixture
def threads():
    """Restore Numba's thread count after a test that changes it."""
    before = numba.get_num_threads()
    yield
    numba.set_num_threads(before)


def _state(system):
    return State.from_system(system, CPU, DOUBLE)


def _pairs(nl, n):
    """Every (i, j) entry of the list, as a list (duplicates kept)."""
    return [(i, int(j)) for i in range(n) for j in nl.neighbors_of(i)]


@pytest.mark.parametrize("reorder", [True, False])
@pytest.mark.parametrize("n,density,r_cut,skin", [(500, 0.8, 2.5, 0.3), (300, 0.05, 3.0, 0.5), (1200, 0.9, 1.2, 0.1)])
def test_half_list_holds_every_pair_once(rng, n, density, r_cut, skin, reorder):
    """Each pair closer than r_list exactly once, as (i, j) with j > i: the rows of a reordered
    system (scanned from i + 1) and of an unordered one (every candidate tested)."""
    system = random_liquid(rng, n=n, density=density, min_distance=0.3)
    state = _state(system)
    nl = NeighborList(CPU, r_cut, skin, overlap_distance=0.0, reorder=reorder, half=True)
    nl.build(state)
    listed = _pairs(nl, n)
    assert all(j > i for i, j in listed)
    assert len(listed) == len(set(listed))
    full = brute_force_pairs(state.positions, system.box.L, r_cut + skin)
    assert set(listed) == {(i, j) for i, j in full if j > i}
    _assert_plain_first(nl, state)


def _assert_plain_first(nl, state):
    """The first ``nbr_plain[i]`` neighbours of atom i are pairs without an image shift (the force
    kernel skips the minimum image for them); with image shifts tracked (at least
    IMAGE_SHIFT_MIN_CELLS cells per edge) the rest are exactly those across the box."""
    L = np.asarray(state.box_lengths)
    tracked = nl.cells_per_dimension(L).min() >= IMAGE_SHIFT_MIN_CELLS
    plain = 0
    for i in range(state.n_atoms):
        js = nl.neighbors_of(i)
        shifted = (np.rint((state.positions[i] - state.positions[js]) / L) != 0).any(axis=1)
        assert not shifted[:nl.nbr_plain[i]].any()
        assert shifted[nl.nbr_plain[i]:].all() or not tracked
        plain += nl.nbr_plain[i]
    assert (plain > 0) == tracked


@pytest.mark.parametrize("cells", [2, 3, 4])
def test_half_list_in_small_boxes(cells):
    """Boxes of 4 to 6 list cells per edge (per-pair minimum image, stencil offsets that reach a
    cell from both sides): still every pair once."""
    system = lattice_system("fcc", cells, density=0.8442)
    system.positions = system.positions + 0.01 * np.sin(np.arange(system.positions.size)).reshape(-1, 3)
    r_list = system.box.L[0] / 2 * 0.999
    state = _state(system)
    nl = NeighborList(CPU, r_list - 0.2, 0.2, half=True)
    nl.build(state)
    listed = _pairs(nl, system.n_atoms)
    full = brute_force_pairs(state.positions, system.box.L, r_list)
    assert len(listed) == len(set(listed)) == len(full) // 2
    assert set(listed) == {(i, j) for i, j in full if j > i}


def test_half_list_storage_grows_without_dropping_a_pair(rng):
    system = random_liquid(rng, n=600, density=0.8)
    state = _state(system)
    nl = NeighborList(CPU, 2.5, 0.3, capacity=3, half=True)
    nl.build(state)
    assert nl.capacity > 3 and nl.overflows == 1
    full = brute_force_pairs(state.positions, system.box.L, 2.8)
    assert set(_pairs(nl, 600)) == {(i, j) for i, j in full if j > i}


@pytest.mark.parametrize("half", [False, True])
def test_exactly_full_storage_keeps_the_last_neighbour(rng, half):
    """A list whose largest count equals the capacity (no overflow) keeps every pair: candidates
    tested after the storage filled up must not overwrite its last entry."""
    system = random_liquid(rng, n=400, density=0.8)
    state = _state(system)
    nl = NeighborList(CPU, 2.5, 0.3, reorder=False, half=half)
    nl.build(state)
    largest = int(nl.nbr_count.max())
    exact = NeighborList(CPU, 2.5, 0.3, reorder=False, half=half, capacity=largest)
    exact.build(state)
    assert exact.capacity == largest and exact.overflows == 0
    assert _pairs(exact, 400) == _pairs(nl, 400)


def _forces(system, potential, half, threads=None):
    """Forces, per-atom energies and virials over a full or half list (same particle order)."""
    if threads is not None:
        numba.set_num_threads(threads)
    state = _state(system)
    nl = NeighborList(CPU, potential.max_cutoff(system.n_types), 0.3, reorder=False, half=half)
    nl.build(state)
    pf = PairForces(potential, system.n_types, CPU, DOUBLE)
    state.forces[...] = np.nan                 # every entry must be written
    state.energy[...] = np.nan
    state.virial[...] = np.nan
    pf.compute(state, nl, True)
    return state.forces.copy(), state.energy.copy(), state.virial.copy()


@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_half_list_forces_energy_virial_equal_the_full_list(rng, cutoff, threads):
    """Two types with their own cutoffs; 1 and 2 threads (1 and 2 chunks of force sums): per-atom
    forces, energies and virials equal the full list's to 1e-12 relative."""
    system = random_liquid(rng, n=1500, density=0.85, n_types=2)
    pot = (lj(cutoff).pair_coeff(0, 1, epsilon=0.8, sigma=1.1, r_cut=2.2)
           .pair_coeff(1, 1, epsilon=0.6, sigma=0.9, r_cut=2.0))
    f_full, e_full, w_full = _forces(system, pot, half=False)
    for t in THREADS:
        f, e, w = _forces(system, pot, half=True, threads=t)
        assert np.abs(f - f_full).max() < 1e-12 * np.abs(f_full).max()
        assert np.abs(e - e_full).max() < 1e-12 * np.abs(e_full).max()
        assert np.abs(w - w_full).max() < 1e-12 * np.abs(w_full).max()
        assert abs(e.sum() - e_full.sum()) < 1e-12 * abs(e_full.sum())
        assert np.abs(w.sum(axis=0) - w_full.sum(axis=0)).max() < 1e-12 * np.abs(w_full.sum(axis=0)).max()
        assert np.abs(f.sum(axis=0)).max() < 1e-10 * np.abs(f).max()     # Newton: no net force


def test_half_list_force_is_minus_gradient_of_the_energy(rng):
    """Central differences of the total energy (half list) against the half-list forces."""
    system = random_liquid(rng, n=200, density=0.8)
    pot = lj("shift_force")
    f, _, _ = _forces(system, pot, half=True)
    h = 1e-6
    for atom, d in [(0, 0), (17, 1), (123, 2), (199, 0)]:
        energies = []
        for sign in (1, -1):
            moved = system.copy()
            moved.positions[atom, d] += sign * h
            energies.append(_forces(moved, pot, half=True)[1].sum())
        assert f[atom, d] == pytest.approx(-(energies[0] - energies[1]) / (2 * h), rel=1e-6, abs=1e-6)


def test_chunks_split_the_pairs_evenly():
    counts = np.array([5, 0, 7, 3, 3, 9, 1, 0, 4, 8], np.int32)
    for k in (1, 2, 3, 4):
        bounds = half_list_chunks(counts, k)
        assert bounds[0] == 0 and bounds[-1] == len(counts) and (np.diff(bounds) >= 0).all()
        pairs = [counts[a:b].sum() for a, b in zip(bounds[:-1], bounds[1:])]
        assert sum(pairs) == counts.sum() and max(pairs) <= counts.sum() / k + counts.max()


@pytest.mark.parametrize("n_threads", THREADS)
def test_half_list_runs_repeat_bit_for_bit(n_threads, threads):
    """Same thread count, same bits: two runs through many rebuilds and reorders."""
    numba.set_num_threads(n_threads)
    hashes = []
    for _ in range(2):
        sim = Simulation(melt_system(6), lj(), device="cpu")
        sim.run(400)
        assert sim.neighbors.half and sim.neighbors.n_builds > 10
        hashes.append(state_hash(sim))
    assert hashes[0] == hashes[1]


def test_deterministic_runs_keep_the_full_list_and_agree_with_the_half_list():
    """deterministic=True keeps the full list (the GPU's summation order, hence its bits); the
    default CPU run (half list) follows the same trajectory to rounding."""
    rows = {}
    for deterministic in (False, True):
        sim = Simulation(melt_system(6), lj(), device="cpu", deterministic=deterministic)
        assert sim.neighbors.half is not deterministic
        sim.run(200)
        rows[deterministic] = (sim.thermo_row(), sim.neighbors.n_builds)
    for key in ("Temp", "E_pair", "TotEng", "Press"):
        assert rows[False][0][key] == pytest.approx(rows[True][0][key], rel=1e-9, abs=1e-9)
    assert rows[False][1] == rows[True][1]


def test_half_list_is_refused_on_the_gpu():
    class FakeGpu:
        is_gpu = True
    with pytest.raises(NotImplementedError):
        NeighborList(FakeGpu(), 2.5, 0.3, half=True)
