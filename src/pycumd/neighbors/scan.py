"""Prefix sums (scans) on the CPU and the GPU.

``prefix_sum(values)`` is ``numpy.cumsum(values, dtype=values.dtype)`` for NumPy and CuPy
arrays, inclusive or exclusive, optionally in place.  The CPU path is NumPy (inclusive) and
a Numba loop (exclusive); the GPU path has three CUDA kernels in ``scan.cu``:

``hillis_steele``
    double-buffered block scan (O(n log n) additions per block), block totals scanned
    recursively and added back: 2 reads and 2 writes per element, plus log levels.
``blelloch``
    work-efficient balanced-tree block scan with padded shared memory (bank-conflict
    free), same multi-level structure.
``decoupled_lookback``
    single pass (Merrill & Garland 2016): one read and one write per element, one launch
    for any length.
``auto``
    the fastest per size as measured by ``pycumd bench scan`` (see docs/scan.md).

Integer sums wrap modulo 2^32 / 2^64 exactly like NumPy.  Floating-point sums on the GPU
add in a different order from NumPy's left-to-right loop; see :func:`prefix_sum` for the
tolerance.
"""

from __future__ import annotations

import numba
import numpy as np

from pycumd.backend import array_backend

__all__ = ["prefix_sum", "CapturableScan", "SCAN_DTYPES", "GPU_METHODS"]

# dtype -> SCAN_DTYPE code of scan.cu
SCAN_DTYPES = {
    np.dtype(np.uint32): 0,
    np.dtype(np.int32): 1,
    np.dtype(np.int64): 2,
    np.dtype(np.float32): 3,
    np.dtype(np.float64): 4,
}
GPU_METHODS = ("auto", "hillis_steele", "blelloch", "decoupled_lookback")

HS_THREADS = 512           # elements per Hillis-Steele block
BL_THREADS = 512           # Blelloch block: 2 * 512 elements
ADD_THREADS = 256
# Decoupled look-back: tile = threads x rounds x 16 bytes; min_blocks is the occupancy
# asked of the compiler (__launch_bounds__); uniform_poll, poll_sleep_ns, pre_sleep_ns and
# sleep_min_tiles: how the look-back waits (scan.cu, LB_UNIFORM_POLL ...).  Chosen by the sweeps of
# docs/notes-scan.md (entry 10: small tiles, 8 blocks a SM, and sleeps as CUB's delay constructors).
LOOKBACK_CONFIG = {"threads": 128, "rounds": 8, "min_blocks": 8, "uniform_poll": 1, "poll_sleep_ns": 648,
                   "pre_sleep_ns": 2500, "sleep_min_tiles": 1024}

# Measured choice of ``method="auto"``: list of (largest n, method), first match wins.
# The decoupled look-back kernel is one launch at every size and was the fastest
# at every measured size (docs/scan.md).
AUTO_TABLE = ((None, "decoupled_lookback"),)


def _check(values, exclusive, out, method):
    dtype = np.dtype(values.dtype)
    if dtype not in SCAN_DTYPES:
        raise TypeError(
            f"prefix_sum does not support dtype {dtype}; use one of "
            + ", ".join(str(d) for d in SCAN_DTYPES)
        )
    if values.ndim != 1:
        raise ValueError(f"prefix_sum expects a 1-D array, got shape {values.shape}")
    if method not in GPU_METHODS:
        raise ValueError(f"unknown method {method!r}: choose one of {', '.join(GPU_METHODS)}")
    if out is not None:
        if type(out) is not type(values):
            raise TypeError(
                f"out is a {type(out).__name__} but values is a {type(values).__name__}"
            )
        if np.dtype(out.dtype) != dtype:
            raise TypeError(f"out has dtype {out.dtype}, expected {dtype} like values")
        if out.shape != values.shape:
            raise ValueError(f"out has shape {out.shape}, expected {values.shape}")
        if not out.flags.c_contiguous:
            raise ValueError("out must be C-contiguous")


# --------------------------------------------------------------------------- CPU


@numba.njit(cache=True)
def _exclusive_scan_cpu(values, out, zero):
    """y_i = x_0 + ... + x_{i-1} in one pass, left to right (safe when out is values)."""
    acc = zero
    for i in range(values.shape[0]):
        x = values[i]
        out[i] = acc
        acc = acc + x
    return out


def _prefix_sum_cpu(values, exclusive, out):
    if out is None:
        out = np.empty_like(values)
    if values.shape[0] == 0:
        return out
    if exclusive:
        return _exclusive_scan_cpu(values, out, values.dtype.type(0))
    return np.cumsum(values, dtype=values.dtype, out=out)


# --------------------------------------------------------------------------- GPU


class _LookbackWorkspace:
    """Tile-status arrays of the decoupled look-back scan, one per (device, stream, dtype).

    Flags carry an epoch, incremented per call, so that the status of an earlier call reads
    as "not yet published": the arrays are zeroed only when allocated or when the 30-bit
    epoch wraps.
    """

    __slots__ = ("status", "agg", "incl", "epoch", "n_tiles")

    def __init__(self, cp, n_tiles, dtype):
        # 32-bit types pack value and flag into status; 64-bit types use agg/incl too
        n_values = n_tiles if np.dtype(dtype).itemsize == 8 else 1
        self.status = cp.zeros(n_tiles, dtype=np.uint64)
        self.agg = cp.empty(n_values, dtype=dtype)
        self.incl = cp.empty(n_values, dtype=dtype)
        self.epoch = 0
        self.n_tiles = n_tiles

    def next_epoch(self):
        self.epoch += 1
        if self.epoch >= 1 << 30:
            self.status.fill(0)
            self.epoch = 1
        return self.epoch


_WORKSPACES: dict = {}


def _workspace(cp, dtype, n_tiles):
    key = (cp.cuda.runtime.getDevice(), cp.cuda.get_current_stream().ptr, dtype)
    ws = _WORKSPACES.get(key)
    if ws is None or ws.n_tiles < n_tiles:
        ws = _LookbackWorkspace(cp, max(n_tiles, 64), dtype)
        _WORKSPACES[key] = ws
    return ws


_FUNCTIONS: dict = {}


def _function(backend, dtype, name):
    """Kernel ``name`` of scan.cu compiled for ``dtype`` and the current LOOKBACK_CONFIG."""
    cfg = LOOKBACK_CONFIG
    key = (backend.xp.cuda.runtime.getDevice(), dtype, name, *sorted(cfg.items()))
    fn = _FUNCTIONS.get(key)
    if fn is None:
        module = backend.kernel_module(
            "neighbors/scan.cu",
            defines={
                "SCAN_DTYPE": SCAN_DTYPES[dtype],
                "HS_THREADS": HS_THREADS,
                "BL_THREADS": BL_THREADS,
                "LB_THREADS": cfg["threads"],
                "LB_ROUNDS": cfg["rounds"],
                "LB_MIN_BLOCKS": cfg["min_blocks"],
                "LB_UNIFORM_POLL": cfg["uniform_poll"],
                "LB_POLL_SLEEP_NS": cfg["poll_sleep_ns"],
                "LB_PRE_SLEEP_NS": cfg["pre_sleep_ns"],
                "LB_SLEEP_MIN_TILES": cfg["sleep_min_tiles"],
            },
        )
        fn = _FUNCTIONS[key] = module.get_function(name)
    return fn


def lookback_tile_size(dtype) -> int:
    """Elements per tile of the decoupled look-back kernel for ``dtype``."""
    cfg = LOOKBACK_CONFIG
    return cfg["threads"] * cfg["rounds"] * (16 // np.dtype(dtype).itemsize)


def _scan_lookback(backend, values, out, exclusive, ws=None, epoch=None, epoch_cell=None):
    """One launch of the look-back kernel; by default on the stream's cached workspace with the
    next epoch, else on ``ws`` with ``epoch``, or with the epoch kept on the device in
    ``epoch_cell`` (uint32 (2,): epoch, blocks done; see :class:`CapturableScan`)."""
    cp = backend.xp
    dtype = values.dtype
    n = values.shape[0]
    n_tiles = -(-n // lookback_tile_size(dtype))
    if ws is None:
        ws = _workspace(cp, dtype, n_tiles)
        epoch = ws.next_epoch()
    aligned = int(values.data.ptr % 16 == 0 and out.data.ptr % 16 == 0)
    _function(backend, dtype, "scan_lookback")(
        (n_tiles,), (LOOKBACK_CONFIG["threads"],),
        (values, out, np.uint64(n), ws.status, ws.agg, ws.incl,
         np.uint32(epoch), np.int32(exclusive), np.int32(aligned),
         epoch_cell if epoch_cell is not None else np.uint64(0)),
    )
    return out


class CapturableScan:
    """Exclusive or inclusive GPU scan of ``n`` values that may be captured in a CUDA graph.

    The look-back kernel tells this call's tile status from an earlier call's by an epoch; a graph
    replays its arguments unchanged, so the epoch cannot be an argument here.  This scan owns its
    workspace and an epoch on the device (``epoch_cell``), which each call's last block switches
    between 1 and 2 for the next call: one launch per scan, no memset of the status (a graph node
    fewer per neighbour build).  Not thread-safe: one stream at a time.

    Parameters
    ----------
    backend : pycumd.backend.Backend
        A GPU backend.
    n : int
        Number of values of every scan (>= 1).
    dtype : numpy dtype
        One of :data:`SCAN_DTYPES`.
    """

    def __init__(self, backend, n: int, dtype):
        self.backend = backend
        self.n = int(n)
        self.dtype = np.dtype(dtype)
        self.workspace = _LookbackWorkspace(backend.xp, -(-self.n // lookback_tile_size(self.dtype)),
                                            self.dtype)
        #: the epoch of the next call and the count of this call's blocks done (scan.cu)
        self.epoch_cell = backend.xp.asarray(np.array([1, 0], np.uint32))

    @property
    def nbytes(self) -> int:
        ws = self.workspace
        return int(ws.status.nbytes + ws.agg.nbytes + ws.incl.nbytes + self.epoch_cell.nbytes)

    def __call__(self, values, out, exclusive: bool) -> None:
        """Scan ``values`` (n,) into ``out`` (n,), both of this scan's dtype, on the current stream."""
        if values.shape != (self.n,) or out.shape != (self.n,) or values.dtype != self.dtype:
            raise ValueError(f"CapturableScan of {self.n} {self.dtype} got {values.shape} {values.dtype}")
        _scan_lookback(self.backend, values, out, bool(exclusive), ws=self.workspace, epoch=0,
                       epoch_cell=self.epoch_cell)


def _scan_multilevel(backend, values, out, exclusive, name, elems_per_block, threads):
    """Block scans, then the block totals scanned (recursively, exclusive), then added back."""
    cp = backend.xp
    n = values.shape[0]
    dtype = values.dtype
    n_blocks = -(-n // elems_per_block)
    block_sums = cp.empty(n_blocks, dtype=values.dtype)
    _function(backend, dtype, name)(
        (n_blocks,), (threads,),
        (values, out, np.uint64(n), block_sums, np.int32(exclusive)),
    )
    if n_blocks > 1:
        _scan_multilevel(backend, block_sums, block_sums, True, name, elems_per_block, threads)
        rest = n - elems_per_block
        _function(backend, dtype, "scan_add_offsets")(
            (-(-rest // ADD_THREADS),), (ADD_THREADS,),
            (out, np.uint64(n), block_sums, np.uint32(elems_per_block)),
        )
    return out


def _prefix_sum_gpu(backend, values, exclusive, out, method):
    cp = backend.xp
    if not values.flags.c_contiguous:
        values = cp.ascontiguousarray(values)
    if out is None:
        out = cp.empty_like(values)
    n = values.shape[0]
    if n == 0:
        return out
    if method == "auto":
        method = auto_method(n)
    if method == "decoupled_lookback":
        return _scan_lookback(backend, values, out, exclusive)
    if method == "hillis_steele":
        return _scan_multilevel(backend, values, out, exclusive, "scan_hillis_steele",
                                HS_THREADS, HS_THREADS)
    return _scan_multilevel(backend, values, out, exclusive, "scan_blelloch",
                            2 * BL_THREADS, BL_THREADS)


def auto_method(n: int) -> str:
    """The GPU method ``method="auto"`` uses for ``n`` elements."""
    for limit, method in AUTO_TABLE:
        if limit is None or n <= limit:
            return method
    return "decoupled_lookback"


# --------------------------------------------------------------------------- API


def prefix_sum(values, exclusive: bool = False, out=None, method: str = "auto"):
    """Prefix sum of a 1-D array, inclusive or exclusive.

    Inclusive: ``y[i] = x[0] + ... + x[i]`` (``numpy.cumsum(x, dtype=x.dtype)``).
    Exclusive: ``y[i] = x[0] + ... + x[i-1]``, ``y[0] = 0``.

    Parameters
    ----------
    values : numpy.ndarray or cupy.ndarray, shape (n,)
        dtype uint32, int32, int64, float32 or float64; any n >= 0.  CuPy arrays run on
        the GPU, NumPy arrays on the CPU.
    exclusive : bool
        Exclusive instead of inclusive scan.
    out : array, shape (n,), same dtype and array type as ``values``, optional
        Where to write the result; ``out is values`` scans in place.
    method : {"auto", "hillis_steele", "blelloch", "decoupled_lookback"}
        GPU algorithm (ignored on the CPU).  ``auto`` takes the fastest measured one.

    Returns
    -------
    array, shape (n,), dtype of ``values``
        ``out`` if given, else a new array.

    Notes
    -----
    The result has the dtype of the input, so integer sums wrap modulo 2^32 or 2^64
    exactly as ``numpy.cumsum(x, dtype=x.dtype)`` does (NumPy's default would promote
    int32/uint32 to 64 bits).  On the CPU floating-point results equal NumPy's bit for bit.
    On the GPU the additions are grouped differently (per thread, per warp, per tile and
    across tiles), so float results differ from NumPy's in rounding: both are within
    ``k * eps * sum_{j<=i} |x_j|`` of the exact sum, with ``k = i`` for NumPy's sequential
    loop and ``k`` about ``log2(n) + n / tile`` on the GPU.  The tests accept
    ``|y_i - exact_i| <= (4 sqrt(n) + 64) * eps * sum_{j<=i} |x_j|``.

    Raises
    ------
    TypeError
        Unsupported dtype (named in the message), or ``out`` of another dtype/array type.
    ValueError
        ``values`` not 1-D, ``out`` of another shape, or an unknown ``method``.
    """
    _check(values, exclusive, out, method)
    backend = array_backend(values)
    if backend.is_gpu:
        return _prefix_sum_gpu(backend, values, bool(exclusive), out, method)
    return _prefix_sum_cpu(np.ascontiguousarray(values), bool(exclusive), out)
