"""prefix_sum against numpy.cumsum: every dtype, awkward sizes, in place, both backends."""

import numpy as np
import pytest

from pycumd.neighbors.scan import (GPU_METHODS, LOOKBACK_CONFIG, SCAN_DTYPES, lookback_tile_size,
                                   prefix_sum)

DTYPES = [np.uint32, np.int32, np.int64, np.float32, np.float64]
SIZES = [0, 1, 2, 31, 511, 512, 513, 1023, 1024, 1025, 4095, 4096, 4097, 65537, 1000003]
METHODS = ["auto", "hillis_steele", "blelloch", "decoupled_lookback"]


def _random(rng, n, dtype):
    """Full-range integers (so sums wrap) or floats of both signs."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    return rng.uniform(-1.0, 1.0, n).astype(dtype)


def _small_ints(rng, n, dtype):
    """Integer-valued entries whose sums stay exact in every dtype (float32 up to 2^24)."""
    return rng.integers(0, 16, n).astype(dtype)


def _poison(backend, n, dtype):
    xp = backend.xp
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return xp.full(n, np.nan, dtype=dtype)
    return xp.full(n, 0x5A5A5A5A, dtype=dtype)


def _reference(x, exclusive):
    ref = np.cumsum(x, dtype=x.dtype)
    if exclusive:
        ref = np.concatenate([np.zeros(1, dtype=x.dtype), ref[:-1]])[: x.shape[0]]
    return ref


def _float_tolerance_ok(x, y, exclusive):
    """|y - exact| <= (4 sqrt(n) + 64) eps sum|x| (docstring of prefix_sum)."""
    x64 = x.astype(np.float64)
    exact = np.cumsum(x64)
    scale = np.cumsum(np.abs(x64))
    if exclusive:
        exact = np.concatenate([[0.0], exact[:-1]])
        scale = np.concatenate([[0.0], scale[:-1]])
    eps = np.finfo(x.dtype).eps
    tol = (4 * np.sqrt(x.shape[0]) + 64) * eps * scale
    err = np.abs(y.astype(np.float64) - exact)
    assert np.all(np.isfinite(y))
    return np.all(err <= tol), float(np.max(err - tol)) if x.shape[0] else 0.0


def _methods(backend):
    return METHODS if backend.is_gpu else ["auto"]


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
@pytest.mark.parametrize("n", SIZES)
def test_matches_numpy(backend, rng, dtype, exclusive, n):
    for method in _methods(backend):
        x = _random(rng, n, dtype)
        out = _poison(backend, n, dtype)
        res = prefix_sum(backend.asarray(x), exclusive=exclusive, out=out, method=method)
        assert res is out
        y = backend.to_host(res)
        ref = _reference(x, exclusive)
        if np.dtype(dtype).kind in "iu":
            np.testing.assert_array_equal(y, ref, err_msg=f"{method} n={n}")
        elif backend.is_gpu:
            ok, excess = _float_tolerance_ok(x, y, exclusive)
            assert ok, f"{method} n={n}: error exceeds tolerance by {excess}"
        else:
            np.testing.assert_array_equal(y, ref)   # CPU floats are NumPy's own order


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
def test_exact_integer_valued(backend, rng, dtype, exclusive):
    """Integer-valued entries: every dtype, floats included, must match exactly."""
    for method in _methods(backend):
        for n in (513, 4097, 77777, 1000003):
            x = _small_ints(rng, n, dtype)
            res = backend.to_host(prefix_sum(backend.asarray(x), exclusive=exclusive,
                                             method=method))
            np.testing.assert_array_equal(res, _reference(x, exclusive),
                                          err_msg=f"{method} n={n}")


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("exclusive", [False, True], ids=["inclusive", "exclusive"])
def test_in_place(backend, rng, dtype, exclusive):
    for method in _methods(backend):
        for n in (1, 1000, 1000003):
            x = _small_ints(rng, n, dtype)
            a = backend.asarray(x.copy())    # on the CPU asarray(x) would be x itself
            res = prefix_sum(a, exclusive=exclusive, out=a, method=method)
            assert res is a
            np.testing.assert_array_equal(backend.to_host(a), _reference(x, exclusive),
                                          err_msg=f"{method} n={n}")


def test_returns_new_array_and_keeps_input(backend, rng):
    x = _random(rng, 4099, np.int32)
    a = backend.asarray(x)
    y = prefix_sum(a)
    assert y is not a
    np.testing.assert_array_equal(backend.to_host(a), x)
    np.testing.assert_array_equal(backend.to_host(y), np.cumsum(x, dtype=np.int32))


def test_integer_wrap_matches_numpy(backend):
    x = np.full(3000, 2**31 - 7, dtype=np.int32)
    np.testing.assert_array_equal(backend.to_host(prefix_sum(backend.asarray(x))),
                                  np.cumsum(x, dtype=np.int32))
    u = np.full(3000, 2**32 - 3, dtype=np.uint32)
    np.testing.assert_array_equal(backend.to_host(prefix_sum(backend.asarray(u))),
                                  np.cumsum(u, dtype=np.uint32))


def test_non_contiguous_input(backend, rng):
    x = _random(rng, 20001, np.int64)
    a = backend.asarray(x)[::3]
    np.testing.assert_array_equal(backend.to_host(prefix_sum(a)),
                                  np.cumsum(x[::3], dtype=np.int64))


def test_unaligned_view(backend, rng):
    """A view starting 4 bytes into an allocation takes the scalar-load path on the GPU."""
    x = _random(rng, 50001, np.uint32)
    a = backend.asarray(x)[1:]
    for method in _methods(backend):
        np.testing.assert_array_equal(backend.to_host(prefix_sum(a, method=method)),
                                      np.cumsum(x[1:], dtype=np.uint32))


def test_repeated_calls_reuse_workspace(backend, rng):
    """Decoupled look-back status flags from an earlier call must never be read as fresh."""
    for n in (10**6, 3 * 10**5, 10**6 + 17, 5000):
        x = _random(rng, n, np.uint32)
        y = backend.to_host(prefix_sum(backend.asarray(x), method="decoupled_lookback"
                                       if backend.is_gpu else "auto"))
        np.testing.assert_array_equal(y, np.cumsum(x, dtype=np.uint32))


@pytest.mark.parametrize("waits", [{}, {"uniform_poll": 0, "poll_sleep_ns": 0, "pre_sleep_ns": 0},
                                   {"uniform_poll": 1, "poll_sleep_ns": 0, "pre_sleep_ns": 0, "sleep_min_tiles": 1}],
                         ids=["default-sleeps", "lanes-spin", "uniform-no-sleep"])
@pytest.mark.parametrize("dtype", [np.uint32, np.int64, np.float64])
def test_lookback_waits_give_the_same_sums(backend, rng, monkeypatch, dtype, waits):
    """GPU: the look-back's ways of waiting (CUB-like sleeps before and between polls, a warp
    polling together, or each lane spinning on its own predecessor) on grids past the sleep
    threshold (sleep_min_tiles tiles), inclusive and exclusive, against numpy."""
    if not backend.is_gpu:
        pytest.skip("GPU kernel")
    from pycumd.neighbors import scan
    monkeypatch.setattr(scan, "LOOKBACK_CONFIG", {**scan.LOOKBACK_CONFIG, **waits})
    n = scan.LOOKBACK_CONFIG["sleep_min_tiles"] * lookback_tile_size(dtype) + 12345
    x = _random(rng, n, dtype)
    for exclusive in (False, True):
        y = backend.to_host(prefix_sum(backend.asarray(x), exclusive=exclusive, method="decoupled_lookback"))
        if np.dtype(dtype).kind == "f":
            assert _float_tolerance_ok(x, y, exclusive)[0]
        else:
            ref = np.cumsum(x, dtype=dtype)
            np.testing.assert_array_equal(y, np.concatenate([[0], ref[:-1]]).astype(dtype) if exclusive else ref)


def test_float_tolerance_rejects_a_missing_element(rng):
    """The float tolerance used above is tight enough to see one dropped element."""
    x = rng.uniform(-1.0, 1.0, 2000).astype(np.float32)
    x[999] = 1.0
    y = np.cumsum(x, dtype=np.float32)
    assert _float_tolerance_ok(x, y, False)[0]
    y[999:] -= x[999]
    assert not _float_tolerance_ok(x, y, False)[0]


def test_dtype_table_covers_the_issue():
    assert set(SCAN_DTYPES) == {np.dtype(d) for d in DTYPES}
    assert set(GPU_METHODS) == set(METHODS)
    per_thread = 16 * LOOKBACK_CONFIG["rounds"]           # bytes per thread per tile
    assert lookback_tile_size(np.uint32) == LOOKBACK_CONFIG["threads"] * per_thread // 4
    assert lookback_tile_size(np.float64) == LOOKBACK_CONFIG["threads"] * per_thread // 8


@pytest.mark.parametrize("dtype", [np.int8, np.uint64, np.float16, np.complex64, np.bool_])
def test_unsupported_dtype_is_named(backend, dtype):
    a = backend.asarray(np.ones(10, dtype=dtype))
    with pytest.raises(TypeError, match=np.dtype(dtype).name):
        prefix_sum(a)


def test_bad_shapes_and_outputs(backend):
    xp = backend.xp
    with pytest.raises(ValueError, match="1-D"):
        prefix_sum(xp.ones((4, 4), dtype=np.int32))
    with pytest.raises(ValueError, match="shape"):
        prefix_sum(xp.ones(4, dtype=np.int32), out=xp.empty(5, dtype=np.int32))
    with pytest.raises(TypeError, match="dtype"):
        prefix_sum(xp.ones(4, dtype=np.int32), out=xp.empty(4, dtype=np.int64))
    with pytest.raises(ValueError, match="method"):
        prefix_sum(xp.ones(4, dtype=np.int32), method="magic")


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("n", [1000, 300_001])              # one tile; many (the look-back)
def test_capturable_scan_replayed_from_a_graph(backend, rng, dtype, n):
    """GPU: a CapturableScan captured once and replayed on new values, five times: every replay's
    sums are the exact prefix sums (the epoch lives on the device and alternates between 1 and 2,
    so a replay never reads the previous replay's tile flags as published; no memset per call)."""
    if not backend.is_gpu:
        pytest.skip("CUDA graphs: GPU only")
    from pycumd.neighbors.scan import CapturableScan
    cp = backend.xp
    scan = CapturableScan(backend, n, dtype)
    values = cp.empty(n, dtype)
    out = cp.empty(n, dtype)
    stream = cp.cuda.Stream(non_blocking=False)
    with stream:
        stream.begin_capture()
        scan(values, out, exclusive=True)
        graph = stream.end_capture()
    epochs = []
    for replay in range(5):
        host = rng.integers(-1000, 1000, n).astype(dtype)    # integer-valued: exact in float64 too
        values[...] = cp.asarray(host)
        out.fill(-7)                                          # poison
        graph.launch(stream)
        stream.synchronize()
        expected = np.concatenate([[0], np.cumsum(host)[:-1]]).astype(dtype)
        np.testing.assert_array_equal(out.get(), expected)
        epochs.append(int(scan.epoch_cell[0].get()))
        assert int(scan.epoch_cell[1].get()) == 0             # the block count is reset
    assert epochs == [2, 1, 2, 1, 2]
