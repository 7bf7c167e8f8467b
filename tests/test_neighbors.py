"""Verlet neighbour lists against brute force; storage growth; rebuild policy; box and overlap errors."""

import numpy as np
import pytest

from pycumd.backend import cuda_available, select
from pycumd.box import Box
from pycumd.neighbors.verlet import NeighborList, OverlapError
from pycumd.precision import get_precision
from pycumd.state import State
from pycumd.system import InputError, System, lattice_system

from helpers import brute_force_pairs, random_liquid


def _listed_pairs(nl, n):
    return {(i, int(j)) for i in range(n) for j in nl.neighbors_of(i)}


def _state(system, backend):
    return State.from_system(system, backend, get_precision("double", backend.name))


@pytest.mark.parametrize("n,density,r_cut,skin", [(500, 0.8, 2.5, 0.3), (300, 0.05, 3.0, 0.5), (2000, 0.9, 1.2, 0.1)])
def test_list_equals_brute_force_random(backend, rng, n, density, r_cut, skin):
    system = random_liquid(rng, n=n, density=density, min_distance=0.3)
    nl = NeighborList(backend, r_cut, skin, overlap_distance=0.0, reorder=False)
    state = _state(system, backend)
    nl.build(state)
    expected = brute_force_pairs(system.positions, system.box.L, r_cut + skin)
    assert _listed_pairs(nl, n) == expected


@pytest.mark.parametrize("cells", [2, 3, 5])
def test_list_equals_brute_force_lattice_and_small_boxes(backend, cells):
    """fcc lattices whose boxes hold only 1 or 2 cells per dimension (stencil deduplication)."""
    system = lattice_system("fcc", cells, density=0.8442)
    r_list = system.box.L[0] / 2 * 0.999
    nl = NeighborList(backend, r_list - 0.2, 0.2, reorder=False)
    nl.build(_state(system, backend))
    assert _listed_pairs(nl, system.n_atoms) == brute_force_pairs(system.positions, system.box.L, r_list)


def test_storage_grows_and_never_drops_a_pair(backend, rng):
    system = random_liquid(rng, n=600, density=0.8)
    nl = NeighborList(backend, 2.5, 0.3, capacity=3, reorder=False)
    nl.build(_state(system, backend))
    assert nl.capacity > 3
    assert _listed_pairs(nl, 600) == brute_force_pairs(system.positions, system.box.L, 2.8)


def test_rebuild_policy_displacement_and_every_delay(backend, rng):
    system = random_liquid(rng, n=200, density=0.5)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.4)
    nl.build(state)
    assert not nl.needs_rebuild(state)
    xp = backend.xp
    state.positions[7, 0] += 0.21                  # more than skin / 2
    assert nl.needs_rebuild(state)
    state.positions[7, 0] -= 0.21
    timed = NeighborList(backend, 2.5, 0.4, every=5, delay=10, check=False)
    timed.build(state)
    decisions = [timed.needs_rebuild(state) for _ in range(20)]
    assert [i + 1 for i, d in enumerate(decisions) if d] == [10, 15, 20]
    assert xp is backend.xp


def test_box_smaller_than_twice_cutoff_plus_skin(backend):
    system = lattice_system("fcc", 2, density=0.8442)     # L = 3.36 < 2 * (2.5 + 0.3)
    nl = NeighborList(backend, 2.5, 0.3)
    with pytest.raises(InputError, match=r"smaller than twice the cutoff plus skin"):
        nl.build(_state(system, backend))


def test_overlapping_atoms_are_reported(backend, rng):
    system = random_liquid(rng, n=100, density=0.5)
    pos = system.positions.copy()
    pos[42] = pos[17] + 1e-3
    bad = System(system.box, pos, system.masses, "lj")
    with pytest.raises(OverlapError, match=r"atoms with IDs (18 and 43|43 and 18)"):      # ids: index + 1
        NeighborList(backend, 2.5, 0.3, reorder=False).build(_state(bad, backend))


def test_positions_are_wrapped_with_image_counters(backend):
    box = Box([10.0, 10.0, 10.0])
    system = System(box, [[1.0, 1.0, 1.0], [5.0, 5.0, 5.0]], [1.0], "lj")
    state = _state(system, backend)
    state.positions[0, 0] = -0.5
    state.positions[1, 2] = 10.25
    NeighborList(backend, 2.5, 0.3, reorder=False).build(state)
    pos = backend.to_host(state.positions)[:, :3]
    img = backend.to_host(state.images)
    assert pos[0, 0] == pytest.approx(9.5) and img[0, 0] == -1
    assert pos[1, 2] == pytest.approx(0.25) and img[1, 2] == 1


def test_reordering_by_cell_keeps_every_pair_and_identity(backend, rng):
    """With reordering (the default) particles move in memory; mapped back through ids, the list
    still equals brute force, and the particles are in cell order afterwards."""
    system = random_liquid(rng, n=800, density=0.8)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.3)
    nl.build(state)
    ids = backend.to_host(state.ids) - 1                   # original index of each slot
    assert sorted(ids.tolist()) == list(range(800)) and (ids != np.arange(800)).any()
    pairs = {(int(ids[i]), int(ids[j])) for i in range(800) for j in nl.neighbors_of(i)}
    assert pairs == brute_force_pairs(system.positions, system.box.L, 2.8)
    pos = backend.to_host(state.positions)[:, :3]
    assert np.allclose(pos, system.positions[ids])         # positions moved with their ids
    from pycumd.neighbors.counting_sort import cell_index
    keys = backend.to_host(cell_index(state.positions, system.box.L, nl.cells_per_dimension(system.box.L)))
    assert (np.diff(keys) >= 0).all()                      # memory order is cell order


def _pairs_by_id(nl, state, backend, n):
    ids = backend.to_host(state.ids) - 1
    return {(int(ids[i]), int(ids[j])) for i in range(n) for j in nl.neighbors_of(i)}


def test_capacity_shrinks_then_grows_and_never_drops_a_pair(backend, rng):
    """A lattice (78 neighbours each within 2.8 at density 0.8442) shrinks the storage to
    capacity_for(78) after CAPACITY_WINDOW builds; a liquid of the same size then overflows it, the
    list is rebuilt larger, and both lists equal brute force."""
    from pycumd.neighbors.verlet import CAPACITY_WINDOW, capacity_for

    lattice = lattice_system("fcc", 5, density=0.8442)
    n, L = lattice.n_atoms, lattice.box.L
    state = _state(lattice, backend)
    nl = NeighborList(backend, 2.5, 0.3)
    for _ in range(CAPACITY_WINDOW + 1):
        nl.build(state)
    assert nl.capacity == capacity_for(78, n) < nl.initial_capacity(n, float(np.prod(L)))
    assert nl.resizes == 1 and nl.overflows == 0
    assert _pairs_by_id(nl, state, backend, n) == brute_force_pairs(lattice.positions, L, 2.8)

    liquid = random_liquid(rng, n=n, density=0.8442, min_distance=0.8)
    assert liquid.box.L[0] == pytest.approx(L[0])
    state = _state(liquid, backend)
    nl.build(state)
    largest = int(backend.to_host(nl.nbr_count).max())
    assert largest > 78 + 4 and nl.overflows == 1 and nl.capacity == capacity_for(largest, n)
    assert _pairs_by_id(nl, state, backend, n) == brute_force_pairs(liquid.positions, L, 2.8)


def test_capacity_does_not_shrink_on_small_fluctuations(backend, rng):
    """Within the margin of the largest recent count the storage stays as it is (no reallocation)."""
    from pycumd.neighbors.verlet import CAPACITY_WINDOW, capacity_for, capacity_margin

    system = random_liquid(rng, n=500, density=0.8442, min_distance=0.8)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.3)
    nl.build(state)
    largest = int(backend.to_host(nl.nbr_count).max())
    nl.capacity = capacity_for(largest, 500) + capacity_margin(largest)      # just inside the band
    for _ in range(CAPACITY_WINDOW + 2):
        nl.build(state)
    assert nl.capacity == capacity_for(largest, 500) + capacity_margin(largest)
    assert nl.overflows == 0 and nl.resizes == 1


def test_memory_accounting_adds_up(backend, rng):
    """State and list report every array they hold; the bench's per-atom figures sum to them."""
    from pycumd.bench.lj import memory_accounting
    from pycumd.simulation import Simulation

    from helpers import lj
    system = random_liquid(rng, n=400, density=0.8)
    sim = Simulation(system, lj(), skin=0.3, device=backend.name, pair_method="neighbor",
                     precision="double" if not backend.is_gpu else "single")
    sim.run(5)
    state, nl = sim.state, sim.neighbors
    fields = [getattr(state, f) for f in state.__dataclass_fields__]
    arrays = [a for a in fields if hasattr(a, "nbytes")] + list((state.lo or {}).values())
    assert sum(state.memory_by_array().values()) == sum(a.nbytes for a in arrays)
    listed = nl.memory_by_array()
    assert listed["nbr"] == 400 * nl.capacity * 4 and listed["nbr_count"] == 400 * 4
    r = memory_accounting(sim)
    # the force evaluator's own arrays (CPU half list: per-thread sums) are counted too
    held = [getattr(sim.forces, name, None) for name in ("image", "chunk_sums", "chunk_virials")]
    total = (sum(state.memory_by_array().values()) + sum(listed.values())
             + sum(a.nbytes for a in held if a is not None))
    assert sum(r["bytes_per_atom_by_array"].values()) * 400 == pytest.approx(total)
    assert r["capacity"] == nl.capacity and r["max_count"] <= nl.capacity
    if backend.is_gpu:          # the pool holds at least the listed arrays (and what other tests left)
        assert r["gpu_other_bytes_per_atom"] >= 0


def test_energy_after_a_build_is_recomputed(backend, rng):
    """A build lends the per-atom energy and virial memory to the reorder: asked again at the same
    step, the simulation computes them anew (same total)."""
    from pycumd.simulation import Simulation

    from helpers import lj
    sim = Simulation(random_liquid(rng, n=400, density=0.8), lj(), skin=0.3, device=backend.name,
                     pair_method="neighbor")
    sim.run(10)
    pe, w = sim.potential_energy(), sim.virial_trace()
    sim.neighbors.build(sim.state)
    rel = 1e-5 if backend.is_gpu else 1e-12       # GPU: float32 pair arithmetic, a new summation order
    assert sim.potential_energy() == pytest.approx(pe, rel=rel)
    assert sim.virial_trace() == pytest.approx(w, rel=rel)


def _move_atoms(state, backend, rng, scale):
    """Displace every atom by up to ``scale`` per coordinate in place (some leave the box)."""
    pos = backend.to_host(state.positions).copy()
    pos[:, :3] += rng.uniform(-scale, scale, (len(pos), 3))
    state.positions[...] = backend.asarray(pos.astype(pos.dtype))


@pytest.mark.parametrize("reorder", [True, False])
def test_repeated_builds_replay_correctly(backend, rng, reorder):
    """Builds after the first replay a captured CUDA graph on the GPU: after moves that take atoms
    out of the box, every rebuilt list equals brute force (by particle id), the images count the
    crossings, and the statistics read back are those of the new list."""
    n = 1500
    system = random_liquid(rng, n=n, density=0.8, min_distance=0.8)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.3, reorder=reorder)
    nl.build(state)
    L = system.box.L
    for build in range(3):
        _move_atoms(state, backend, rng, 0.6)
        unwrapped = np.empty((n, 3))                # by particle id
        unwrapped[backend.to_host(state.ids) - 1] = (backend.to_host(state.positions)[:, :3]
                                                     + backend.to_host(state.images) * L)
        nl.build(state)
        ids = backend.to_host(state.ids) - 1
        pos = backend.to_host(state.positions)[:, :3]
        assert ((pos >= 0) & (pos < L)).all()
        np.testing.assert_allclose(pos + backend.to_host(state.images) * L, unwrapped[ids], atol=1e-9)
        host_pos = np.empty_like(pos)
        host_pos[ids] = pos
        pairs = {(int(ids[i]), int(ids[j])) for i in range(n) for j in nl.neighbors_of(i)}
        assert pairs == brute_force_pairs(host_pos, L, 2.8), f"build {build + 2}"
        assert nl.recent_max_counts[-1] == int(backend.to_host(nl.nbr_count).max())
    if backend.is_gpu:
        assert nl.builder.plan.graph is not None and nl.builder.plan.builds == 4


def test_deferred_reorder_keeps_every_pair_and_reorders_on_schedule(backend, rng):
    """GPU, reorder_every = 3: builds 1, 4 and 7 put the atoms in cell order, the builds between
    leave them where they are (ids unchanged) and read a sorted copy; every list equals brute
    force by particle id, captured or not; schedule_reorder makes the next build reorder."""
    if not backend.is_gpu:
        pytest.skip("deferred reordering: GPU only (the CPU reorders at every build)")
    from pycumd.neighbors.counting_sort import cell_index
    n = 1500
    system = random_liquid(rng, n=n, density=0.8, min_distance=0.8)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.3, reorder_every=3)
    L = system.box.L
    cells = nl.cells_per_dimension(L)
    for build in range(1, 10):
        if build == 8:
            nl.schedule_reorder()                     # build 8 reorders too (7 did on schedule)
        if build > 1:
            _move_atoms(state, backend, rng, 0.4)
        ids_before = backend.to_host(state.ids).copy()
        nl.build(state)
        ids = backend.to_host(state.ids) - 1
        keys = backend.to_host(cell_index(state.positions, L, cells))
        if build in (1, 4, 7, 8):
            assert (np.diff(keys) >= 0).all(), f"build {build}: not in cell order"
        else:
            np.testing.assert_array_equal(backend.to_host(state.ids), ids_before, err_msg=f"build {build}")
        host_pos = np.empty((n, 3))
        host_pos[ids] = backend.to_host(state.positions)[:, :3]
        pairs = {(int(ids[i]), int(ids[j])) for i in range(n) for j in nl.neighbors_of(i)}
        assert pairs == brute_force_pairs(host_pos, L, 2.8), f"build {build}"
        assert nl.recent_max_counts[-1] == int(backend.to_host(nl.nbr_count).max())
    assert nl.builder.plan.graph is not None


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_reorder_every_must_be_a_whole_number_of_builds(backend, bad):
    nl = NeighborList(backend, 2.5, 0.3)
    with pytest.raises(InputError, match="reorder_every must be a whole number of builds >= 1"):
        nl.reorder_every = bad
    with pytest.raises(InputError, match="reorder_every"):
        NeighborList(backend, 2.5, 0.3, reorder_every=bad)


def test_captured_build_equals_launches_uncaptured(backend, rng):
    """GPU: the graph replay writes the same bits as the same launches run one by one."""
    if not backend.is_gpu:
        pytest.skip("CUDA graphs: GPU only")
    system = random_liquid(rng, n=2000, density=0.85, min_distance=0.8)
    states = [_state(system, backend) for _ in range(2)]
    lists = [NeighborList(backend, 2.5, 0.3) for _ in range(2)]
    lists[1].builder.phase_events = []              # uncaptured launches, timed between events
    moves = np.random.default_rng(7)
    for build in range(4):
        step = moves.uniform(-0.3, 0.3, (2000, 3))
        for state, nl in zip(states, lists):
            pos = backend.to_host(state.positions).copy()
            pos[:, :3] += step[backend.to_host(state.ids) - 1]
            state.positions[...] = backend.asarray(pos)
            nl.build(state)
        a, b = lists
        n = 2000
        assert a.capacity == b.capacity
        for name in ("positions", "velocities", "ids", "images", "positions_at_build"):
            np.testing.assert_array_equal(backend.to_host(getattr(states[0], name)),
                                          backend.to_host(getattr(states[1], name)))
        np.testing.assert_array_equal(backend.to_host(a.nbr_count), backend.to_host(b.nbr_count))
        counts = backend.to_host(a.nbr_count)
        for i in range(0, n, 97):
            np.testing.assert_array_equal(a.neighbors_of(i), b.neighbors_of(i))
        assert counts.max() <= a.capacity
    assert lists[0].builder.plan.graph is not None and lists[1].builder.plan.graph is None


def test_overflow_on_a_replayed_build_grows_and_keeps_every_pair(backend, rng):
    """A build replayed from a graph that finds more neighbours than the storage holds is repeated
    with a larger storage (a new plan): no pair is lost."""
    n = 1000
    system = random_liquid(rng, n=n, density=0.6, min_distance=0.8)
    state = _state(system, backend)
    nl = NeighborList(backend, 2.5, 0.3, reorder=True)
    nl.build(state)
    nl.build(state)                                   # replayed on the GPU
    capacity = nl.capacity
    # compress the box content towards one corner: far more neighbours than the capacity
    pos = backend.to_host(state.positions).copy()
    pos[:, :3] *= 0.7
    state.positions[...] = backend.asarray(pos)
    nl.build(state)
    assert nl.capacity > capacity and nl.overflows >= 1
    ids = backend.to_host(state.ids) - 1
    host_pos = np.empty((n, 3))
    host_pos[ids] = backend.to_host(state.positions)[:, :3]
    pairs = {(int(ids[i]), int(ids[j])) for i in range(n) for j in nl.neighbors_of(i)}
    assert pairs == brute_force_pairs(host_pos, system.box.L, 2.8)


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("extent", [16.0, 8.4])          # 11 cells per edge (image shifts), 5 (rint)
@pytest.mark.parametrize("list_kernel", ["warp", "planes", "planes32"])
def test_gpu_list_of_targets_before_source_rows(rng, monkeypatch, extent, list_kernel):
    """A spatial domain's build (build_targets): the owned atoms first, then ghost rows that are
    sources only, in the extended box.  Whole cell rows hold ghosts only, so whole warps (blocks of
    the plane kernel) have no target; the targets' lists must equal brute force and the ghosts get
    none.  The plane kernel reads float32 rows (and needs >= 7 cells: 16.0 only); the brute force
    takes the same float32 positions, in float64, so a pair within float32 rounding of r_list could
    differ: none does at this seed.  "planes32": the plane kernel with int ring entries (as above
    PLANE_RING16_ROWS rows), "planes" with 16-bit ones."""
    import cupy as cp
    import pycumd.neighbors.verlet as verlet

    gpu = select("cuda")
    r_list = 2.8
    system = random_liquid(rng, n=int(0.8 * extent**3), density=0.8, min_distance=0.8)
    inside = ((system.positions >= r_list) & (system.positions < extent - r_list)).all(axis=1)
    order = np.concatenate([np.flatnonzero(inside), np.flatnonzero(~inside)])
    positions = system.positions[order]
    n_targets = int(inside.sum())
    rows = np.zeros((len(positions), 4), np.float32 if list_kernel != "warp" else np.float64)
    rows[:, :3] = positions
    positions = rows[:, :3].astype(np.float64)
    nl = NeighborList(gpu, r_list - 0.3, 0.3)
    nl.list_kernel = list_kernel[:6]
    if list_kernel == "planes32":
        monkeypatch.setattr(verlet, "PLANE_RING16_ROWS", 0)
    box = np.full(3, extent)
    n_cells = nl.cells_per_dimension(box)
    capacity = 160
    nbr = cp.full(capacity * n_targets, -1, np.int32)
    nbr_count = cp.full(n_targets, -1, np.int32)
    largest, _ = nl.builder.build_targets(cp.asarray(rows), n_targets, box, n_cells, r_list, capacity, nbr, nbr_count)
    counts = nbr_count.get()
    lists = nbr.get().reshape(capacity, n_targets)
    listed = {(i, int(j)) for i in range(n_targets) for j in lists[:counts[i], i]}
    expected = {(i, j) for i, j in brute_force_pairs(positions, box, r_list) if i < n_targets}
    assert listed == expected and largest == counts.max() <= capacity


def _gpu_lists(nl, backend):
    """Per atom (in storage order): the listed neighbours, as tuples (the entries past each count
    are scratch and not compared)."""
    counts = backend.to_host(nl.nbr_count)
    n = len(counts)
    table = backend.to_host(nl.nbr)[:nl.capacity * n].reshape(nl.capacity, n)
    return counts, [tuple(table[:min(c, nl.capacity), i]) for i, c in enumerate(counts)]


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("r_cut", [2.5, 3.3, 4.2])
@pytest.mark.parametrize("reorder,reorder_every", [(False, None), (True, 1), (True, 3)])
def test_gpu_plane_kernel_gives_the_warp_kernels_lists(rng, monkeypatch, r_cut, reorder, reorder_every):
    """build_neighbor_list_planes (three warps per 32 targets, each taking consecutive stencil planes,
    their entries merged in plane order; its rings of int entries, and of 16-bit ones in
    build_neighbor_list_planes16) and build_neighbor_list (a warp per 32 targets) give the
    same lists entry for entry, the same counts and statistics, through three builds (the 2nd and 3rd
    replayed from captured graphs; with reorder_every 3 they defer the reorder) and with the three
    ways of reading rows.  The cutoffs make a warp's entries per atom (about a third of 77, 165 and
    350) fit its 64-row ring, pass it for some targets, and pass it for nearly all (the block then
    lists the task by warp)."""
    import pycumd.neighbors.verlet as verlet

    gpu = select("cuda")
    system = random_liquid(rng, n=4000, density=0.84, min_distance=0.8)
    moves = rng.uniform(-0.2, 0.2, (2, system.n_atoms, 3)).astype(np.float32)
    results = {}
    for kernel in ("warp", "planes", "planes32"):
        monkeypatch.setattr(verlet, "PLANE_RING16_ROWS", 0 if kernel == "planes32" else 1 << 16)
        state = State.from_system(system, gpu, get_precision("single", "cuda"))
        nl = NeighborList(gpu, r_cut, 0.3, reorder=reorder, reorder_every=reorder_every)
        nl.list_kernel = kernel[:6]
        assert nl.builder.uses_plane_kernel(np.float32, True, system.n_atoms) == (kernel != "warp")
        for build in range(3):
            if build:
                state.positions[:, :3] += gpu.asarray(moves[build - 1])
            nl.build(state)
        results[kernel] = (_gpu_lists(nl, gpu), gpu.to_host(state.ids), list(nl.recent_max_counts))
        assert nl.builder.plan.graph is not None
    (counts_w, lists_w), ids_w, most_w = results["warp"]
    for kernel in ("planes", "planes32"):
        (counts_p, lists_p), ids_p, most_p = results[kernel]
        np.testing.assert_array_equal(ids_w, ids_p)
        np.testing.assert_array_equal(counts_w, counts_p)
        assert lists_w == lists_p and most_w == most_p, kernel


def test_list_kernel_choice_is_validated(backend):
    nl = NeighborList(backend, 2.5, 0.3)
    assert nl.list_kernel == "auto"
    with pytest.raises(InputError, match="list_kernel must be one of auto, warp, planes, got 'fast'"):
        nl.list_kernel = "fast"
