"""Counting sort into cells: stability, bin offsets, cell index, reorder, on both backends."""

import numpy as np
import pytest

from pycumd.neighbors.counting_sort import SPARE_ALIGN, cell_index, compact, counting_sort, reorder, reorder_in_place, spare_layout


def _check_sorted(keys, n_bins, result, backend):
    order = backend.to_host(result.order)
    bin_start = backend.to_host(result.bin_start)
    bin_count = backend.to_host(result.bin_count)
    n = keys.shape[0]
    assert order.dtype == np.int32 and bin_start.dtype == np.int32
    assert bin_count.dtype == np.int32
    assert order.shape == (n,) and bin_start.shape == (n_bins + 1,)
    assert bin_count.shape == (n_bins,)
    # stable sort by key == argsort(kind="stable")
    np.testing.assert_array_equal(order, np.argsort(keys, kind="stable").astype(np.int32))
    counts = np.bincount(keys, minlength=n_bins).astype(np.int32)
    np.testing.assert_array_equal(bin_count, counts)
    np.testing.assert_array_equal(bin_start[:-1], np.cumsum(counts) - counts)
    assert bin_start[n_bins] == n


@pytest.mark.parametrize("n,n_bins", [(0, 1), (1, 1), (1, 7), (31, 4), (513, 1000),
                                      (10007, 50), (100003, 50653), (1000003, 50653)])
def test_stable_sort_random_keys(backend, rng, n, n_bins):
    keys = rng.integers(0, n_bins, n).astype(np.int32)
    result = counting_sort(backend.asarray(keys), n_bins)
    _check_sorted(keys, n_bins, result, backend)


def test_stable_with_large_bins(backend, rng):
    """Bins of hundreds of members (several warp chunks) keep increasing index order."""
    keys = rng.integers(0, 7, 5000).astype(np.int32)
    _check_sorted(keys, 7, counting_sort(backend.asarray(keys), 7), backend)
    keys = np.zeros(3000, dtype=np.int32)           # one bin holds everything
    _check_sorted(keys, 3, counting_sort(backend.asarray(keys), 3), backend)
    # a few large bins among small ones in the same warp of bins (the GPU ranks bins of <= 32 by a
    # thread each and larger ones by the warp together)
    keys = np.concatenate([np.full(100, 5), np.full(40, 33), np.full(33, 62), rng.integers(0, 1000, 2000)])
    keys = rng.permutation(keys).astype(np.int32)
    _check_sorted(keys, 1000, counting_sort(backend.asarray(keys), 1000), backend)


@pytest.mark.parametrize("n,fraction", [(0, 0.5), (1, 1.0), (1, 0.0), (1000, 0.01), (200003, 0.5), (200003, 1.0)])
def test_compact_selects_in_increasing_order(backend, rng, n, fraction):
    """compact: the true entries' indices first, in increasing order, and their count (one large
    selection included: the use a two-bin counting sort would make O(k^2))."""
    mask = rng.random(n) < fraction
    indices, count = compact(backend.asarray(mask))
    count = int(backend.to_host(count))
    expected = np.flatnonzero(mask)
    assert count == len(expected)
    np.testing.assert_array_equal(backend.to_host(indices)[:count], expected)


def test_presorted_and_reversed_keys(backend):
    keys = np.repeat(np.arange(1000, dtype=np.int32), 20)
    _check_sorted(keys, 1000, counting_sort(backend.asarray(keys), 1000), backend)
    keys = keys[::-1].copy()
    _check_sorted(keys, 1000, counting_sort(backend.asarray(keys), 1000), backend)


def test_deterministic_repeats(backend, rng):
    keys = backend.asarray(rng.integers(0, 4000, 200000).astype(np.int32))
    first = backend.to_host(counting_sort(keys, 4000).order)
    for _ in range(3):
        np.testing.assert_array_equal(backend.to_host(counting_sort(keys, 4000).order), first)


def test_backend_argument_moves_keys(rng):
    keys = rng.integers(0, 10, 100).astype(np.int32)
    result = counting_sort(keys, 10, backend="cpu")
    assert isinstance(result.order, np.ndarray)


def test_bad_keys(backend):
    xp = backend.xp
    with pytest.raises(TypeError, match="int64"):
        counting_sort(xp.zeros(5, dtype=np.int64), 3)
    with pytest.raises(ValueError, match="1-D"):
        counting_sort(xp.zeros((5, 2), dtype=np.int32), 3)
    with pytest.raises(ValueError, match="n_bins"):
        counting_sort(xp.zeros(5, dtype=np.int32), 0)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        counting_sort(xp.asarray(np.array([0, 1, 3], dtype=np.int32)), 3, validate=True)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        counting_sort(xp.asarray(np.array([0, -1, 2], dtype=np.int32)), 3, validate=True)


def _cell_index_reference(pos, lengths, cells):
    pos = pos[:, :3].astype(np.float64)
    s = pos / lengths
    s = s - np.floor(s)
    c = np.minimum((s * cells).astype(np.int64), cells - 1)
    return (c[:, 0] + cells[0] * (c[:, 1] + cells[1] * c[:, 2])).astype(np.int32)


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("width", [3, 4])
def test_cell_index(backend, rng, dtype, width):
    lengths = np.array([10.0, 12.5, 7.25])
    cells = np.array([4, 5, 3])
    n = 20011
    pos = rng.uniform(-30.0, 30.0, (n, width)).astype(dtype)   # also outside the box
    keys = backend.to_host(cell_index(backend.asarray(pos), lengths, cells))
    ref = _cell_index_reference(pos, lengths, cells)
    assert keys.dtype == np.int32 and keys.shape == (n,)
    assert keys.min() >= 0 and keys.max() < cells.prod()
    # float32 rounding may move a particle sitting on a cell face by one cell
    agree = np.mean(keys == ref)
    assert agree > (0.999 if dtype == np.float32 else 0.99999)


def test_cell_index_cpu_gpu_parity(backend, rng):
    pos = rng.uniform(-5.0, 25.0, (50000, 3)).astype(np.float32)
    lengths, cells = (20.0, 20.0, 20.0), (7, 7, 7)
    ref = cell_index(pos, lengths, cells)
    keys = backend.to_host(cell_index(backend.asarray(pos), lengths, cells))
    np.testing.assert_array_equal(keys, ref)


def test_cell_index_errors(backend):
    xp = backend.xp
    with pytest.raises(TypeError, match="int32"):
        cell_index(xp.zeros((4, 3), dtype=np.int32), (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="shape"):
        cell_index(xp.zeros((4, 2), dtype=np.float32), (1, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="positive"):
        cell_index(xp.zeros((4, 3), dtype=np.float32), (1, 0, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="3 entries"):
        cell_index(xp.zeros((4, 3), dtype=np.float32), (1, 1), (1, 1, 1))


def test_sort_positions_into_cells(backend, rng):
    """cell_index -> counting_sort -> reorder puts each cell's particles together."""
    n, lengths, cells = 30000, np.array([8.0, 8.0, 8.0]), np.array([4, 4, 4])
    pos = rng.uniform(0.0, 8.0, (n, 4)).astype(np.float32)
    vel = rng.standard_normal((n, 3))
    ids = np.arange(n, dtype=np.int64)
    d_pos = backend.asarray(pos)
    keys = cell_index(d_pos, lengths, cells)
    result = counting_sort(keys, int(cells.prod()))
    p_sorted, v_sorted, id_sorted = reorder(result.order, d_pos, backend.asarray(vel),
                                            backend.asarray(ids))
    order = backend.to_host(result.order)
    np.testing.assert_array_equal(backend.to_host(p_sorted), pos[order])
    np.testing.assert_array_equal(backend.to_host(v_sorted), vel[order])
    np.testing.assert_array_equal(backend.to_host(id_sorted), order)
    sorted_keys = backend.to_host(cell_index(p_sorted, lengths, cells))
    assert np.all(np.diff(sorted_keys) >= 0)
    with pytest.raises(ValueError, match="leading dimension"):
        reorder(result.order, backend.asarray(pos[:10]))


def test_spare_layout_places_without_overlap():
    """Largest first, first fit, aligned; what does not fit is None."""
    sizes = [16 * 1000, 12 * 1000, 4 * 1000, 4 * 1000, 4 * 1000, 12 * 1000, 8 * 1000]
    spare = [16 * 1000, 12 * 1000, 4 * 1000, 24 * 1000]
    layout = spare_layout(sizes, spare)
    taken = {}
    for size, place in zip(sizes, layout):
        if place is None:
            continue
        region, offset = place
        assert offset % SPARE_ALIGN == 0 and offset + size <= spare[region]
        for lo, hi in taken.get(region, []):
            assert offset + size <= lo or offset >= hi         # no two buffers overlap
        taken.setdefault(region, []).append((offset, offset + size))
    assert layout[0] == (0, 0)                                 # the largest goes to the first region
    assert sum(p is None for p in layout) == 1                 # 60 B of buffers per atom, 56 B of spare
    assert spare_layout([10], []) == [None]


def test_reorder_in_place_with_spare_memory(backend, rng):
    """Gathering through spare arrays gives the same bits as a plain gather, for the arrays placed in
    the spare memory and for the one that does not fit; the arrays keep their memory."""
    n = 3001
    pos = rng.standard_normal((n, 4)).astype(np.float32)
    vel = rng.standard_normal((n, 3)).astype(np.float32)
    ids = rng.permutation(n).astype(np.int64)
    keys = rng.integers(0, 50, n).astype(np.int32)
    order = rng.permutation(n).astype(np.int32)
    arrays = [backend.asarray(a.copy()) for a in (pos, vel, ids, keys)]
    pointers = [a.ctypes.data if not backend.is_gpu else a.data.ptr for a in arrays]
    spare = [backend.xp.full((n, 4), np.nan, np.float32), backend.xp.zeros((n, 2), np.float32)]
    layout = spare_layout([a.nbytes for a in arrays], [s.nbytes for s in spare])
    assert layout == [(0, 0), None, (1, 0), None]          # velocities and keys do not fit
    reorder_in_place(backend.asarray(order), *arrays, scratch={}, spare=spare)
    for a, ref, ptr in zip(arrays, (pos, vel, ids, keys), pointers):
        np.testing.assert_array_equal(backend.to_host(a), ref[order])
        assert ptr == (a.ctypes.data if not backend.is_gpu else a.data.ptr)


def test_counting_sort_captured_in_a_graph_and_replayed(backend, rng):
    """GPU: the counting sort's launches with a CapturableScan, captured once and replayed on new
    keys written into the same array, give the stable order every time (a replayed scan must not
    read the status flags of the previous replay)."""
    if not backend.is_gpu:
        pytest.skip("CUDA graphs: GPU only")
    from pycumd.neighbors.counting_sort import CountingSortBuffers, enqueue_counting_sort
    from pycumd.neighbors.scan import CapturableScan
    cp = backend.xp
    n, n_bins = 300_000, 40_000                     # several scan tiles
    keys = cp.asarray(rng.integers(0, n_bins, n).astype(np.int32))
    buffers = CountingSortBuffers(*(cp.empty(size, np.int32) for size in CountingSortBuffers.sizes(n, n_bins)))
    scan = CapturableScan(backend, n_bins + 1, np.int32)
    stream = cp.cuda.Stream(non_blocking=False)
    with stream:
        stream.begin_capture()
        enqueue_counting_sort(backend, keys, buffers, scan=scan)
        graph = stream.end_capture()
    for replay in range(4):
        host_keys = rng.integers(0, n_bins, n).astype(np.int32)
        keys[...] = cp.asarray(host_keys)
        buffers.order.fill(-1)                      # poison
        buffers.bin_start.fill(-1)
        graph.launch(stream)
        stream.synchronize()
        np.testing.assert_array_equal(buffers.order.get(), np.argsort(host_keys, kind="stable"))
        expected_start = np.concatenate([[0], np.cumsum(np.bincount(host_keys, minlength=n_bins))])
        np.testing.assert_array_equal(buffers.bin_start.get(), expected_start)
