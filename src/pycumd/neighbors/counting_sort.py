"""Counting sort of particles into cells: bin index, histogram, exclusive scan, stable scatter.

The pieces a cell list needs, on the CPU (Numba) and the GPU (CUDA kernels in
``counting_sort.cu``):

>>> keys = cell_index(positions, box_lengths, cells_per_dim)      # (N,) int32
>>> result = counting_sort(keys, n_bins=int(np.prod(cells_per_dim)))
>>> positions_sorted, velocities_sorted = reorder(result.order, positions, velocities)

Particles of bin ``b`` are ``result.order[result.bin_start[b]:result.bin_start[b + 1]]``,
in increasing particle index (the sort is stable), so the result is deterministic.

GPU algorithm (five launches, no host synchronisation):

1. zero the histogram;
2. ``histogram_rank``: ``count[b] += 1`` with warp-aggregated atomics; the value an atomic
   returns is the particle's arrival slot ``rank_i`` in its bin (arbitrary order);
3. ``bin_start = prefix_sum(count, exclusive=True)`` over ``n_bins + 1`` entries, so that
   ``bin_start[n_bins] = N``;
4. ``scatter``: ``slots[bin_start[b_i] + rank_i] = i``, a permutation grouped by bin but in
   arrival order within each bin;
5. ``sort_bins``: each member's stable place is the number of members of its bin with a
   smaller index.  One thread per bin ranks a bin of ``k <= 8`` members (``SMALL_BIN``: a cell
   list's usual 2-3) in registers; the warp then ranks its larger bins together, ``O(k^2 / 32)``
   shuffle steps each; a pathological input with most particles in one bin is slow.
"""

from __future__ import annotations

from typing import NamedTuple

import numba
import numpy as np

from pycumd.backend import Backend, array_backend, select
from pycumd.neighbors.scan import _exclusive_scan_cpu, prefix_sum

__all__ = ["CountingSortResult", "batch_cell_index", "counting_sort", "compact", "cell_index", "reorder"]

THREADS = 256
#: blocks of a gated gather (enqueue_gather_rows with `enabled`): a grid-stride loop, so that a
#: launch with nothing to do (a build that defers the reorder) costs a few blocks, not a full grid
GATHER_BLOCKS_GATED = 2048


class CountingSortResult(NamedTuple):
    """Result of :func:`counting_sort`.

    Attributes
    ----------
    order : array, shape (N,), int32
        Particle indices sorted by bin; within a bin in increasing index (stable).
    bin_start : array, shape (n_bins + 1,), int32
        Exclusive prefix sum of ``bin_count``: bin ``b`` occupies
        ``order[bin_start[b]:bin_start[b + 1]]``; ``bin_start[n_bins] = N``.
    bin_count : array, shape (n_bins,), int32
        Number of particles in each bin.
    """

    order: object
    bin_start: object
    bin_count: object


# --------------------------------------------------------------------------- CPU


@numba.njit(cache=True)
def _counting_sort_cpu(keys, n_bins, order, bin_start, bin_count):
    for b in range(n_bins):
        bin_count[b] = 0
    for i in range(keys.shape[0]):
        bin_count[keys[i]] += 1
    _exclusive_scan_cpu(bin_count, bin_start[:n_bins], np.int32(0))   # the scan library's CPU scan
    bin_start[n_bins] = bin_start[n_bins - 1] + bin_count[n_bins - 1]
    cursor = bin_start[:n_bins].copy()
    for i in range(keys.shape[0]):           # increasing i: stable
        b = keys[i]
        order[cursor[b]] = i
        cursor[b] += 1


@numba.njit(cache=True)
def _cell_index_cpu(positions, lengths, cells, cells_real, keys):
    # same float operations, in the same precision, as cell_index_f32/f64 of the .cu file
    nx, ny = cells[0], cells[1]
    for i in range(positions.shape[0]):
        c0 = 0
        c1 = 0
        c2 = 0
        for d in range(3):
            s = positions[i, d] / lengths[d]
            s = s - np.floor(s)
            v = int(s * cells_real[d])
            if v < 0:
                v = 0
            elif v >= cells[d]:
                v = cells[d] - 1
            if d == 0:
                c0 = v
            elif d == 1:
                c1 = v
            else:
                c2 = v
        keys[i] = c0 + nx * (c1 + ny * c2)


@numba.njit(cache=True)
def _cell_index_batched_cpu(positions, system, lengths, cells, cells_real, cell_offset, keys):
    # per particle: _cell_index_cpu's operations with its system's box and grid, plus the first cell
    for i in range(positions.shape[0]):
        s = system[i]
        key = 0
        scale = 1
        for d in range(3):
            u = positions[i, d] / lengths[s, d]
            u = u - np.floor(u)
            v = int(u * cells_real[s, d])
            if v < 0:
                v = 0
            elif v >= cells[s, d]:
                v = cells[s, d] - 1
            key += scale * v
            scale *= cells[s, d]
        keys[i] = cell_offset[s] + key


# --------------------------------------------------------------------------- API


def _module(backend: Backend):
    return backend.kernel_module("neighbors/counting_sort.cu")


def _grid(n: int) -> tuple:
    return (max(1, -(-n // THREADS)),)


def compact(mask, backend=None) -> tuple:
    """The indices of the true entries of ``mask`` in increasing order, without a host synchronisation.

    Parameters
    ----------
    mask : numpy.ndarray or cupy.ndarray, shape (N,), bool
    backend : Backend, optional (the array's)

    Returns
    -------
    (indices, count)
        ``indices`` (N,) int32, whose first ``count`` entries are the selected indices; ``count`` is a
        backend scalar (a 0-d array on the GPU, read it when a synchronisation comes anyway).  On the
        GPU: the exclusive prefix sum of the flags (:func:`~pycumd.neighbors.scan.prefix_sum`) and
        one scatter.  (Use this, not a counting sort into two bins: the counting sort ranks each bin's
        members by one warp, O(k^2 / 32) for a bin of k, which is for cells of a few atoms.)
    """
    backend = array_backend(mask) if backend is None else select(backend)
    if not backend.is_gpu:
        selected = np.flatnonzero(mask).astype(np.int32)
        indices = np.empty(len(mask), np.int32)
        indices[:len(selected)] = selected
        return indices, np.int64(len(selected))
    xp = backend.xp
    n = int(mask.shape[0])
    flags = xp.zeros(n + 1, np.int32)
    flags[:n] = mask
    offset = prefix_sum(flags, exclusive=True)
    indices = xp.empty(n, np.int32)
    if n > 0:
        _module(backend).get_function("compact_scatter")(_grid(n), (THREADS,), (flags, offset, np.int32(n), indices))
    return indices, offset[n]


def counting_sort(keys, n_bins: int, backend=None, validate: bool | None = None):
    """Stable counting sort of particle indices by bin (bins of a few members each, as cells: the GPU
    ranks a bin of k members in O(k^2 / 32) warp steps; for a few large bins use :func:`compact`).

    Parameters
    ----------
    keys : numpy.ndarray or cupy.ndarray, shape (N,), int32
        Bin index of each particle, in ``[0, n_bins)``.
    n_bins : int
        Number of bins (cells), >= 1.
    backend : {"cpu", "cuda"} or Backend, optional
        Defaults to the backend holding ``keys``; ``keys`` is moved there if needed.
    validate : bool, optional
        Check that every key lies in ``[0, n_bins)`` and raise ``ValueError`` otherwise.
        Default: True on the CPU (free); False on the GPU, where it costs a host
        synchronisation.  Unvalidated out-of-range keys on the GPU are clamped into range
        (no out-of-bounds writes, but a meaningless order).

    Returns
    -------
    CountingSortResult
        ``order`` (N,) int32, ``bin_start`` (n_bins + 1,) int32, ``bin_count`` (n_bins,)
        int32, on the same backend.

    Raises
    ------
    TypeError
        ``keys`` is not int32.
    ValueError
        ``keys`` not 1-D, ``n_bins < 1``, N or n_bins too large for int32, or (validated)
        a key out of range.
    """
    backend = array_backend(keys) if backend is None else select(backend)
    keys = backend.asarray(keys)
    if np.dtype(keys.dtype) != np.int32:
        raise TypeError(f"counting_sort expects int32 keys, got dtype {keys.dtype}")
    if keys.ndim != 1:
        raise ValueError(f"keys must be 1-D, got shape {keys.shape}")
    n_bins = int(n_bins)
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    n = keys.shape[0]
    if n >= 2**31 or n_bins >= 2**31 - 1:
        raise ValueError(f"N = {n} and n_bins = {n_bins} must fit in int32")
    if validate is None:
        validate = not backend.is_gpu
    if validate and n > 0:
        lo, hi = int(keys.min()), int(keys.max())
        if lo < 0 or hi >= n_bins:
            raise ValueError(f"keys must lie in [0, {n_bins}), found range [{lo}, {hi}]")
    xp = backend.xp
    keys = xp.ascontiguousarray(keys)

    if not backend.is_gpu:
        order = np.empty(n, dtype=np.int32)
        bin_start = np.empty(n_bins + 1, dtype=np.int32)
        bin_count = np.empty(n_bins, dtype=np.int32)
        _counting_sort_cpu(keys, n_bins, order, bin_start, bin_count)
        return CountingSortResult(order, bin_start, bin_count)

    buffers = CountingSortBuffers(*(xp.empty(size, dtype=np.int32)
                                    for size in CountingSortBuffers.sizes(n, n_bins)))
    enqueue_counting_sort(backend, keys, buffers)
    return CountingSortResult(buffers.order, buffers.bin_start, buffers.count[:n_bins])


class CountingSortBuffers(NamedTuple):
    """The int32 device arrays of one GPU counting sort of N keys into ``n_bins`` bins.

    ``count`` (n_bins + 1,), ``bin_start`` (n_bins + 1,), ``rank`` (N,), ``slots`` (N,),
    ``order`` (N,): see :func:`enqueue_counting_sort`.  Only ``bin_start`` and ``order`` hold
    results; ``count`` holds the bin counts, ``rank`` and ``slots`` are dead afterwards.
    """

    count: object
    bin_start: object
    rank: object
    slots: object
    order: object

    @staticmethod
    def sizes(n: int, n_bins: int) -> tuple:
        """Element counts of the five arrays, in field order."""
        return (n_bins + 1, n_bins + 1, n, n, n)


def enqueue_counting_sort(backend, keys, buffers: CountingSortBuffers, scan=None, counted=False,
                          sort_within_bins=True) -> None:
    """Launch the GPU counting sort of the int32 ``keys`` (N,) into ``buffers`` on the current stream.

    No allocation and no synchronisation: with ``scan`` a :class:`~pycumd.neighbors.scan.CapturableScan`
    of ``n_bins + 1`` int32 values, the launches may be captured in a CUDA graph and replayed;
    without it, the bin offsets use :func:`~pycumd.neighbors.scan.prefix_sum`.  Keys are not
    validated (out-of-range keys are clamped, see :func:`counting_sort`).

    ``counted``: steps 1-2 (the histogram into ``buffers.count`` and the ranks) were done by the
    caller's kernel (the neighbour build's ``wrap_and_bin``, binning.cuh's ``count_into_bin``);
    only the offsets, the scatter and the per-bin sort are launched.

    ``sort_within_bins`` False: the last step (``sort_bins``, the stable order within each bin) is
    left to the caller, who launches a kernel of its own on binning.cuh's ``rank_bins`` (the
    neighbour build's ``sort_bins_rows``, which also writes the rows its list kernel reads).
    """
    n = keys.shape[0]
    n_bins = buffers.bin_start.shape[0] - 1
    module = _module(backend)
    if not counted:
        buffers.count.fill(0)                              # count[n_bins] stays 0
        if n > 0:
            module.get_function("histogram_rank")(
                _grid(n), (THREADS,), (keys, np.int32(n), np.int32(n_bins), buffers.count, buffers.rank))
    if scan is None:
        prefix_sum(buffers.count, exclusive=True, out=buffers.bin_start)
    else:
        scan(buffers.count, buffers.bin_start, exclusive=True)
    if n > 0:
        module.get_function("scatter")(
            _grid(n), (THREADS,),
            (keys, buffers.rank, buffers.bin_start, np.int32(n), np.int32(n_bins), buffers.slots))
    if n > 0 and sort_within_bins:
        module.get_function("sort_bins")(
            _grid(n_bins), (THREADS,), (buffers.slots, buffers.bin_start, np.int32(n_bins), buffers.order))


def cell_index(positions, box_lengths, cells_per_dim, out=None):
    """Cell (bin) index of each particle in an orthorhombic periodic box.

    Coordinates are wrapped into the box, ``s = x / L - floor(x / L)``, and binned as
    ``c = min(floor(s * n), n - 1)`` per dimension; the bin is
    ``cx + nx * (cy + ny * cz)`` (x fastest).

    Parameters
    ----------
    positions : numpy.ndarray or cupy.ndarray, shape (N, 3) or (N, 4), float32 or float64
        Particle positions (length units of ``box_lengths``); with 4 columns the fourth
        (the ``w`` of a float4 layout) is ignored.
    box_lengths : sequence of 3 floats
        Box edge lengths (Lx, Ly, Lz), > 0; the box spans [0, L) in each dimension.
    cells_per_dim : sequence of 3 ints
        Number of cells (nx, ny, nz) along each dimension, >= 1.

    out : array, shape (N,), int32, optional
        Where to write the bin indices (on the backend of ``positions``).

    Returns
    -------
    array, shape (N,), int32
        Bin index in ``[0, nx * ny * nz)``, on the backend of ``positions`` (``out`` if given).

    Raises
    ------
    TypeError
        ``positions`` not float32/float64.
    ValueError
        Bad shape of ``positions``, ``box_lengths`` or ``cells_per_dim``; non-positive
        lengths or cell counts; more than 2^31 - 1 cells.
    """
    backend = array_backend(positions)
    dtype = np.dtype(positions.dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"cell_index expects float32 or float64 positions, got {dtype}")
    if positions.ndim != 2 or positions.shape[1] not in (3, 4):
        raise ValueError(f"positions must have shape (N, 3) or (N, 4), got {positions.shape}")
    lengths = np.asarray(box_lengths, dtype=np.float64)
    cells = np.asarray(cells_per_dim, dtype=np.int64)
    if lengths.shape != (3,) or cells.shape != (3,):
        raise ValueError("box_lengths and cells_per_dim must each have 3 entries")
    if np.any(lengths <= 0) or np.any(cells < 1):
        raise ValueError(f"need positive box_lengths and cells_per_dim, got {lengths}, {cells}")
    if int(np.prod(cells)) >= 2**31:
        raise ValueError(f"{int(np.prod(cells))} cells do not fit in int32 bin indices")
    xp = backend.xp
    positions = xp.ascontiguousarray(positions)
    n = positions.shape[0]
    keys = xp.empty(n, dtype=np.int32) if out is None else out
    if keys.shape != (n,) or np.dtype(keys.dtype) != np.int32:
        raise ValueError(f"out must be an int32 array of shape ({n},), got {keys.dtype} {keys.shape}")
    if n == 0:
        return keys
    if not backend.is_gpu:
        _cell_index_cpu(positions, lengths.astype(dtype), cells.astype(np.int32), cells.astype(dtype),
                        keys)
        return keys
    real = dtype.type
    name = "cell_index_f32" if dtype == np.float32 else "cell_index_f64"
    _module(backend).get_function(name)(
        _grid(n), (THREADS,),
        (positions, np.int32(n), np.int32(positions.shape[1]),
         real(lengths[0]), real(lengths[1]), real(lengths[2]),
         np.int32(cells[0]), np.int32(cells[1]), np.int32(cells[2]), keys))
    return keys


def batch_cell_index(positions, system, box_lengths, cells_per_dim, out=None):
    """Cell index of each particle of a batch of systems (docs/batch.md): the particle's cell in its
    own system's grid (:func:`cell_index`'s rule and operations) plus the system's first cell.

    Parameters
    ----------
    positions : array, shape (N, 3) or (N, 4), float32 or float64
    system : array, shape (N,), int32: each particle's system, in ``[0, S)``
    box_lengths : array-like, shape (S, 3): each system's box (length units), > 0
    cells_per_dim : array-like, shape (S, 3) of ints: each system's cells, >= 1
    out : array, shape (N,), int32, optional

    Returns
    -------
    keys : array, shape (N,), int32, on the backend of ``positions``
        ``cell_offset[s] + cx + nx (cy + ny cz)``, in ``[0, n_bins)``.
    cell_offset : ndarray, shape (S + 1,), int64 (host)
        System ``s``'s cells are bins ``cell_offset[s] .. cell_offset[s + 1] - 1``.

    A stable :func:`counting_sort` of these keys over ``cell_offset[-1]`` bins sorts every system at
    once: since every key of system ``s`` lies in its own range, a batch whose systems are stored in
    consecutive segments keeps each system in its segment, in the order the system's own sort of
    :func:`cell_index` keys gives (``tests/test_ensemble.py`` checks it).
    """
    backend = array_backend(positions)
    dtype = np.dtype(positions.dtype)
    if dtype not in (np.float32, np.float64):
        raise TypeError(f"batch_cell_index expects float32 or float64 positions, got {dtype}")
    if positions.ndim != 2 or positions.shape[1] not in (3, 4):
        raise ValueError(f"positions must have shape (N, 3) or (N, 4), got {positions.shape}")
    lengths = np.asarray(box_lengths, dtype=np.float64)
    cells = np.asarray(cells_per_dim, dtype=np.int64)
    if lengths.ndim != 2 or lengths.shape[1] != 3 or cells.shape != lengths.shape:
        raise ValueError(f"box_lengths and cells_per_dim must both have shape (S, 3), got {lengths.shape}, "
                         f"{cells.shape}")
    if np.any(lengths <= 0) or np.any(cells < 1):
        raise ValueError("need positive box_lengths and cells_per_dim for every system")
    cell_offset = np.concatenate([[0], np.cumsum(np.prod(cells, axis=1))]).astype(np.int64)
    if cell_offset[-1] >= 2**31:
        raise ValueError(f"{int(cell_offset[-1])} cells do not fit in int32 bin indices")
    xp = backend.xp
    n = positions.shape[0]
    if system.shape != (n,):
        raise ValueError(f"system must have shape ({n},), got {system.shape}")
    keys = xp.empty(n, dtype=np.int32) if out is None else out
    if n == 0:
        return keys, cell_offset
    system = xp.ascontiguousarray(system, dtype=np.int32)
    positions = xp.ascontiguousarray(positions)
    if not backend.is_gpu:
        _cell_index_batched_cpu(positions, system, lengths.astype(dtype), cells.astype(np.int32),
                                cells.astype(dtype), cell_offset.astype(np.int32), keys)
        return keys, cell_offset
    name = "cell_index_batched_f32" if dtype == np.float32 else "cell_index_batched_f64"
    _module(backend).get_function(name)(
        _grid(n), (THREADS,),
        (positions, np.int32(n), np.int32(positions.shape[1]), system, xp.asarray(lengths.astype(dtype).ravel()),
         xp.asarray(cells.astype(np.int32).ravel()), xp.asarray(cell_offset[:-1].astype(np.int32)), keys))
    return keys, cell_offset


def reorder(order, *arrays):
    """Gather per-particle arrays into sorted order: ``out[k] = a[order[k]]``.

    Parameters
    ----------
    order : array, shape (N,), integer
        A permutation, e.g. ``counting_sort(...).order``.
    *arrays : arrays with leading dimension N
        On the same backend as ``order``.

    Returns
    -------
    tuple of arrays
        One reordered copy per input, same dtype and shape.

    Raises
    ------
    ValueError
        An array whose leading dimension is not N.
    """
    backend = array_backend(order)
    xp = backend.xp
    n = order.shape[0]
    out = []
    for a in arrays:
        if a.ndim < 1 or a.shape[0] != n:
            raise ValueError(f"array of shape {a.shape} does not have leading dimension {n}")
        out.append(xp.take(a, order, axis=0))
    return tuple(out)


def reorder_in_place(order, *arrays, scratch: dict | None = None, spare=()) -> None:
    """Permute per-particle arrays in place, ``a[k] = a_old[order[k]]``.

    Unlike :func:`reorder` the arrays keep their memory (a gather into buffers, then a copy back),
    so kernels captured in a CUDA graph still point at the right data.

    Parameters
    ----------
    order : array, shape (N,), integer
        A permutation, on the backend of the arrays.
    *arrays : arrays with leading dimension N
    scratch : dict, optional
        Kept between calls by the caller: the GPU gather's tables of pointers.
    spare : sequence of C-contiguous arrays, optional
        Arrays whose values are dead (about to be recomputed), none of them in ``arrays``: their
        memory holds the gather buffers (placed by :func:`spare_layout`).  Their values are
        undefined afterwards.  An array that does not fit gets a temporary buffer of its own,
        returned to the memory pool at the end of the call.
    """
    backend = array_backend(order)
    xp = backend.xp
    scratch = {} if scratch is None else scratch
    n = order.shape[0]
    for a in arrays:
        if a.ndim < 1 or a.shape[0] != n:
            raise ValueError(f"array of shape {a.shape} does not have leading dimension {n}")
    spare = tuple(spare)
    if backend.is_gpu and n > 0 and all(a.nbytes % (4 * n) == 0 and a.flags.c_contiguous for a in arrays):
        _gather_rows_gpu(backend, order, arrays, scratch, spare)
        return
    layout = spare_layout([a.nbytes for a in arrays], [s.nbytes for s in spare])
    for a, place in zip(arrays, layout):
        if place is None:
            buf = xp.empty_like(a)
        else:
            s, offset = place
            buf = byte_view(spare[s], offset, a.nbytes, a.dtype).reshape(a.shape)
        xp.take(a, order, axis=0, out=buf)
        a[...] = buf


def byte_view(memory, offset: int, nbytes: int, dtype):
    """A 1-D ``dtype`` view of bytes ``[offset, offset + nbytes)`` of the C-contiguous array ``memory``."""
    return memory.reshape(-1).view(np.uint8)[offset:offset + nbytes].view(dtype)


def identity_view(memory, n: int):
    """An int32 view of the first ``4 n`` bytes of the C-contiguous array ``memory``."""
    if memory.nbytes < 4 * n or not memory.flags.c_contiguous:
        raise ValueError(f"a C-contiguous array of {memory.nbytes} bytes cannot hold {n} int32")
    return byte_view(memory, 0, 4 * n, np.int32)


def identity_into(out):
    """Write the identity permutation ``0, 1, ..., n - 1`` into the int32 array ``out`` (n,); return it."""
    backend = array_backend(out)
    n = out.shape[0]
    if backend.is_gpu:
        if n > 0:
            _module(backend).get_function("iota")(_grid(n), (THREADS,), (out, np.int32(n)))
    else:
        out[:] = np.arange(n, dtype=np.int32)
    return out


#: byte alignment of the gather buffers placed in spare memory
SPARE_ALIGN = 8


def spare_layout(sizes, spare_sizes) -> list:
    """Place buffers of ``sizes`` bytes into spare regions of ``spare_sizes`` bytes.

    First fit, largest buffer first, each buffer starting at a multiple of :data:`SPARE_ALIGN`
    bytes.  Returns, per buffer in the given order, ``(region index, byte offset)``, or ``None``
    where no region has room left (that buffer then needs memory of its own).
    """
    used = [0] * len(spare_sizes)
    layout: list = [None] * len(sizes)
    for i in sorted(range(len(sizes)), key=lambda i: -sizes[i]):
        for r, size in enumerate(spare_sizes):
            offset = -(-used[r] // SPARE_ALIGN) * SPARE_ALIGN
            if offset + sizes[i] <= size:
                layout[i] = (r, offset)
                used[r] = offset + sizes[i]
                break
    return layout


class GatherPlan(NamedTuple):
    """Where :func:`enqueue_gather_rows` gathers each array and copies it back from.

    ``src``/``dst`` are device tables (uint64) of the arrays' and buffers' addresses, ``words`` the
    4-byte words per row of each array, ``buffers`` the arrays allocated for buffers that found
    no place in spare memory (held here so that their addresses stay valid)."""

    arrays: tuple
    src: object
    dst: object
    words: object
    max_words: int
    buffers: tuple

    @property
    def own_bytes(self) -> int:
        """Bytes of the buffers allocated for this plan (not in spare memory)."""
        return sum(int(b.nbytes) for b in self.buffers)


def gather_plan(backend, n: int, arrays, spare=()) -> GatherPlan:
    """Plan the in-place GPU permutation of ``arrays`` (leading dimension ``n``, C-contiguous,
    rows a multiple of 4 bytes): buffers in ``spare`` where :func:`spare_layout` places them,
    else allocated; the tables of addresses copied to the device once."""
    cp = backend.xp
    layout = spare_layout([a.nbytes for a in arrays], [s.nbytes for s in spare])
    buffers = [cp.empty_like(a) if place is None else None for a, place in zip(arrays, layout)]
    dst_ptrs = tuple(b.data.ptr if place is None else spare[place[0]].data.ptr + place[1]
                     for b, place in zip(buffers, layout))
    words = [a.nbytes // (4 * n) for a in arrays]
    return GatherPlan(tuple(arrays), cp.asarray([a.data.ptr for a in arrays], dtype=np.uint64),
                      cp.asarray(dst_ptrs, dtype=np.uint64), cp.asarray(words, dtype=np.int32),
                      max(words), tuple(b for b in buffers if b is not None))


def enqueue_gather_rows(backend, plan: GatherPlan, order, enabled=None) -> None:
    """``a[k] = a_old[order[k]]`` for every array of ``plan`` on the current stream: one gather
    launch into the buffers, then one launch that copies every array back (capturable).

    ``enabled``: a device uint32 (one element); when given, both launches do nothing unless it is
    nonzero when they run (a captured build's reorder decided on the device)."""
    n = order.shape[0]
    total = n * plan.max_words
    module = _module(backend)
    flag = np.uint64(0) if enabled is None else enabled
    blocks = -(-total // THREADS)
    if enabled is not None:
        blocks = min(blocks, GATHER_BLOCKS_GATED)
    module.get_function("gather_rows")(
        (blocks,), (THREADS,),
        (plan.src, plan.dst, plan.words, np.int32(len(plan.arrays)), order, np.int32(n),
         np.int32(plan.max_words), flag))
    module.get_function("copy_rows_back")(
        (blocks,), (THREADS,),
        (plan.src, plan.dst, plan.words, np.int32(len(plan.arrays)), np.int32(n), np.int32(plan.max_words), flag))


def _gather_rows_gpu(backend, order, arrays, scratch, spare) -> None:
    """:func:`gather_plan` and :func:`enqueue_gather_rows`; the plan is kept in ``scratch`` while the
    addresses stay the same and every buffer lies in ``spare`` (else it is made at each call)."""
    n = order.shape[0]
    key = ("gather",) + tuple((a.data.ptr, a.nbytes) for a in arrays) + tuple((s.data.ptr, s.nbytes) for s in spare)
    cached = scratch.get("gather_plan")
    if cached is not None and cached[0] == key:
        plan = cached[1]
    else:
        plan = gather_plan(backend, n, arrays, spare)
        scratch["gather_plan"] = (key, plan) if not plan.buffers else None
    enqueue_gather_rows(backend, plan, order)
