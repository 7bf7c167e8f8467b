"""Verlet neighbour lists with a skin, built from a counting-sorted cell list.

The list holds, for each atom, every other atom closer than ``r_list = r_cut + skin`` (a
*full* list: each pair appears twice, once per atom, so the force kernel gathers without
atomics).  On the CPU it may instead be a *half* list (``NeighborList(half=True)``, the CPU
default of a simulation): each pair once, as ``(i, j)`` with ``j > i``, for a force kernel that
applies Newton's third law (half the pairs to find and to evaluate, as in LAMMPS and
HOOMD-blue on the CPU).  It stays valid until some atom has moved ``skin / 2``; :class:`NeighborList`
decides when to rebuild, either by that displacement check or by LAMMPS' schedule
(``neigh_modify every E delay D check yes|no``).

Build, on both backends (``verlet.cu`` beside this file for the GPU):

1. wrap positions into the box (updating image counters);
2. bin atoms into cells of edge >= ``r_list / 2`` (:func:`~pycumd.neighbors.counting_sort.cell_index`) and counting-sort them (histogram, exclusive
   prefix sum, stable scatter: :mod:`pycumd.neighbors.counting_sort`);
3. reorder the particle arrays by cell (neighbours then sit close in memory, so the force
   kernel's gathers hit the cache; ``State.ids`` keeps each particle's identity).  On the GPU
   only every ``reorder_every``-th build does (default :data:`DEFAULT_REORDER_EVERY`): between
   two, the atoms move less than a cell, so they stay close to cell order, and the other builds
   read a copy of the positions in cell order instead (written by the counting sort's last pass,
   ``sort_bins_rows``: 16 or 32 bytes per atom instead of the reorder's gather and copy back of
   every per-atom array);
4. for each atom, scan the cells within two cells in each direction (fewer when a dimension has
   fewer than five cells), skipping those whose nearest face is farther than ``r_list``, in a
   fixed order, and record neighbours (the CPU finds the cells once per cell, not per atom,
   and skips only those whose nearest cell is farther: the same neighbours in the same order);
5. if any atom has more neighbours than the storage holds, grow it and rebuild: no pair is
   ever dropped.

Memory.  The list is stored with a fixed number of slots per atom, the *capacity*; it dominates
the memory of a simulation (4 bytes per slot per atom).  The capacity follows the largest count
measured, :func:`capacity_for` (largest count plus a small margin): it grows on an overflow and
shrinks when the largest count of the last :data:`CAPACITY_WINDOW` builds is well below it, so an
overflow (which costs one more build) stays rare.  The build needs no memory of its own: the
counting sort's scratch and the reorder's gather buffers lie in the list storage (dead until the
list kernel rewrites it); the cell keys and bin offsets (and on the CPU the identity order) in
the arrays ``State.spare_at_build`` names (dead until the end of the build or the next force computation).

On the GPU a build is about 15 launches of little work each at 10^4-10^5 atoms, so their host
cost dominated it (445 us of host time for 147 us of GPU work at 32,000 atoms on an H100).  The
launches are therefore captured once in a CUDA graph (:class:`_BuildPlan`, at the second build with
the same addresses and sizes) and replayed: one launch and one synchronisation (to read the
largest count and the closest distance) per build.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..composite import ff_parts
from ..precision import c_type_name
from ..system import InputError
from .counting_sort import (SPARE_ALIGN, CountingSortBuffers, byte_view, cell_index, counting_sort, enqueue_counting_sort,
                            enqueue_gather_rows, gather_plan, identity_into, identity_view, reorder_in_place,
                            spare_layout)
from .scan import CapturableScan

BLOCK = 128
LIST_WARPS = 4          # warps per block of build_neighbor_list (LIST_WARPS in verlet.cu)
#: the list kernel's row_mode (verlet.cu's ROWS_*): rows through the sorted order (no reorder),
#: rows in slot order (reordered atoms), rows in slot order carrying their atom's index (deferred reorder)
ROWS_VIA_ORDER, ROWS_IN_SLOT_ORDER, ROWS_INDEX_IN_W = 0, 1, 2
#: GPU builds between two reorders of the particle arrays by cell (NeighborList's reorder_every).
#: H100, LJ liquid, bench-style runs (docs/notes-lj-performance.md): a build that defers costs 98 us
#: less at 1M atoms single (185 us mixed); over whole runs K = 2 gained 1.0% (single) and 2.8%
#: (mixed) at 1M against K = 1, K = 4 lost 0.9% in single (the atoms drift from cell order).
DEFAULT_REORDER_EVERY = 2
#: builds whose largest neighbour counts decide whether the storage shrinks
CAPACITY_WINDOW = 20
#: GPU list kernels (NeighborList.list_kernel): one warp per 32 targets ("warp"), or a block of three
#: warps per 32 targets, each taking consecutive stencil planes ("planes": float32 rows and >= 7
#: cells along every edge only); "auto" takes "planes" up to PLANE_SPLIT_ATOMS targets.  The lists
#: are the same.
LIST_KERNELS = ("auto", "warp", "planes")
PLANE_WARPS = 3         # warps per block of build_neighbor_list_planes (PLANE_WARPS in verlet.cu)
#: launches of at most this many rows take build_neighbor_list_planes16 (ring entries of 16 bits)
PLANE_RING16_ROWS = 1 << 16
#: H100, LJ liquid (r_list 2.8), whole build replayed, warp -> planes kernel: 32,000 atoms 64.1 ->
#: 56.4 us, 62,500 83.8 -> 77.8, 131,072 140 -> 140, 256,000 240 -> 247 (docs/notes-lj-performance.md)
PLANE_SPLIT_ATOMS = 100_000


def capacity_margin(max_count: int) -> int:
    """Free slots per atom kept above the largest count: ``max(4, ceil(0.04 * max_count))``."""
    return max(4, math.ceil(0.04 * max_count))


def capacity_for(max_count: int, n_atoms: int) -> int:
    """Neighbour slots per atom for a largest count: ``max_count + capacity_margin(max_count)``,
    at most ``n_atoms - 1`` (and at least ``max_count`` and 1)."""
    return max(min(max_count + capacity_margin(max_count), n_atoms - 1), max_count, 1)


class OverlapError(InputError):
    """Two atoms sit (almost) on top of each other."""


@numba.njit(cache=True)
def _wrap_cpu(positions, images, L):
    """Wrap into [0, L) and count images, exactly as the ``wrap_positions`` CUDA kernel does.

    ``x -= k L`` with ``k = floor(x / L)``; for the usual ``k = -1`` or ``1`` that is the single
    ``x + L`` or ``x - L`` LAMMPS does.  Non-finite coordinates are left for the blow-up check.
    """
    for i in range(positions.shape[0]):
        for d in range(3):
            x = positions[i, d]
            if (x < 0.0 or x >= L[d]) and math.isfinite(x):
                k = math.floor(x / L[d])
                x -= k * L[d]
                if x >= L[d]:
                    x -= L[d]
                    k += 1
                if x < 0.0:
                    x += L[d]
                    k -= 1
                images[i, d] += k
                positions[i, d] = x


@numba.njit(inline="always")
def _stencil(n):
    """Cell offsets [lo, hi] visiting each of n cells at most once (at most -2..2)."""
    return -min(2, (n - 1) // 2), min(2, n // 2)


@numba.njit(inline="always")
def _cell_gap(d, w, n):
    """Smallest distance along one axis between a point of a cell and a point of the cell d cells
    away (cells of width w): ``(|d| - 1) w``, 0 for neighbouring cells and when n < 5 (offsets may
    then reach a cell from either side)."""
    if n < 5 or -1 <= d <= 1:
        return 0.0
    return (abs(d) - 1) * w


#: fewest cells along every box edge for image shifts instead of rint (as ``IMAGE_SHIFT`` in verlet.cu)
IMAGE_SHIFT_MIN_CELLS = 7


@numba.njit(inline="always")
def _row_cell(u, n, L):
    """Unwrapped cell ``u`` in [-n, 2n) of a cell row: its cell in the row (u mod n) and the image
    shift ``s`` of that copy of the row (0 or +-L): the separation is ``(x_i - x_j) - s``."""
    if u < 0:
        return u + n, -L
    if u >= n:
        return u - n, L
    return u, 0.0


@numba.njit(inline="always")
def _scan_cells(positions, cell_order, identity, s0, s1, i, xi, yi, zi, sx, sy, sz, L, invL, rint_image, half,
                r_list2, nbr, capacity, slot0, step, used, m):
    """Record the candidates ``cell_order[s0:s1]`` closer than ``r_list``; return (found, min r^2).

    The separation is ``r_i - r_j`` minus the cell row's image shift ``(sx, sy, sz)``, or, with
    ``rint_image``, the minimum image ``d - L rint(d / L)`` (the same bits when the shift is the
    minimum image: ``L * rint(...)`` is exactly 0 or +-L).  ``half``: only ``j > i``.  ``identity``:
    ``cell_order[s] == s`` (particles reordered by cell; the load is skipped).  The k-th neighbour
    found goes to slot ``slot0 + step * k`` of the atom's row (``step`` 1: the row's front, -1: its
    back), while the row has a free slot (``used`` slots taken before).  Without a branch on the
    distance (accepted about one time in four: unpredictable): every candidate is stored in the next
    slot while there is one free, and counted only if accepted; a full storage is never written (its
    last entry may be a neighbour), the count tells the caller to grow it.
    """
    found = 0
    for s in range(s0, s1):
        j = s if identity else cell_order[s]
        ddx = xi - positions[j, 0]
        ddy = yi - positions[j, 1]
        ddz = zi - positions[j, 2]
        if rint_image:
            ddx -= L[0] * np.rint(ddx * invL[0])
            ddy -= L[1] * np.rint(ddy * invL[1])
            ddz -= L[2] * np.rint(ddz * invL[2])
        else:
            ddx -= sx
            ddy -= sy
            ddz -= sz
        r2 = ddx * ddx + ddy * ddy + ddz * ddz
        accept = (r2 < r_list2) & (j != i)
        if half:
            accept &= j > i
        if used + found < capacity:
            nbr[i, slot0 + step * found] = j
        found += accept
        m = min(m, r2 if accept else r_list2)
    return found, m


@numba.njit(parallel=True, cache=True)
def _build_cpu(positions, keys, cell_start, cell_order, n_cells, L, invL, r_list2, nbr, nbr_count,
               half=False, plain_count=None):
    """CPU twin of the ``build_neighbor_list`` kernel (row-major storage ``nbr[i, k]``).

    Targets are the first ``len(nbr_count)`` atoms (n_local), sources all ``len(positions)``
    (n_local + n_ghost: spatial domains, :mod:`pycumd.parallel.domains`).

    Cell by cell (in parallel): the stencil rows (dz, dy) whose nearest cell is within ``r_list``
    of the cell, in that order; in each row the cells dx = a..b that pass the same test are
    consecutive in the counting sort, so the row is at most three ranges of ``cell_order`` (the
    row's copy below the box, inside it, above it), each with its image shift.  The ranges are
    found once per cell, and each target of the cell scans them (this replaced a per-atom search
    that cost more than the distance tests: docs/notes-lj-performance.md).  Full list
    (``half=False``): the neighbours in the GPU kernel's order.  Half list (``half=True``, needs
    n_local = len(positions)): only ``j > i``, each pair once; with the particles reordered by cell
    (``cell_order`` the identity) a range starts at ``i + 1`` at the earliest, so the rows before
    the atom's own cost nothing.

    ``plain_count`` (n_local,) int32, optional: the neighbours whose minimum image is the pair
    itself (image shift 0) first, ``plain_count[i]`` of them, then the others; the force kernel
    then skips the minimum image for the first (0 in boxes of fewer than
    :data:`IMAGE_SHIFT_MIN_CELLS` cells per edge, where shifts are not tracked).  ``keys`` is
    unused (the cells come from ``cell_start``); it stays for the GPU kernel's signature.
    Returns (max_count, min_r2 over all recorded pairs).
    """
    n = nbr_count.shape[0]
    capacity = nbr.shape[1]
    nx, ny, nz = n_cells[0], n_cells[1], n_cells[2]
    wx, wy, wz = L[0] / nx, L[1] / ny, L[2] / nz
    skip2 = r_list2 * 1.001          # margin: rounding in the gaps never drops a pair
    rint_image = min(nx, min(ny, nz)) < IMAGE_SHIFT_MIN_CELLS
    split = False                    # shifted pairs to the back of the row, then behind the plain ones
    if plain_count is not None:
        split = not rint_image
    identity = True
    for s in range(cell_order.shape[0]):
        if cell_order[s] != s:
            identity = False
            break
    skip_below = half and identity
    lo_z, hi_z = _stencil(nz)
    lo_y, hi_y = _stencil(ny)
    lo_x, hi_x = _stencil(nx)
    min_r2_per_atom = np.full(n, r_list2)
    for c in numba.prange(nx * ny * nz):
        p0, p1 = cell_start[c], cell_start[c + 1]
        for p in range(p0, p1):
            i = cell_order[p]
            if i < n:
                nbr_count[i] = 0
                if plain_count is not None:
                    plain_count[i] = 0           # the back count until the end of the cell
        cx = c % nx
        cy = (c // nx) % ny
        cz = c // (nx * ny)
        for dz in range(lo_z, hi_z + 1):
            gz = _cell_gap(dz, wz, nz)
            gz2 = gz * gz
            if p0 == p1 or gz2 >= skip2:
                continue
            z, sz = _row_cell(cz + dz, nz, L[2])
            for dy in range(lo_y, hi_y + 1):
                gy = _cell_gap(dy, wy, ny)
                gyz2 = gz2 + gy * gy
                if gyz2 >= skip2:
                    continue
                y, sy = _row_cell(cy + dy, ny, L[1])
                a = lo_x                      # the cells of the row within reach: dx = a..b
                while a < 0 and gyz2 + _cell_gap(a, wx, nx) ** 2 >= skip2:
                    a += 1
                b = hi_x
                while b > 0 and gyz2 + _cell_gap(b, wx, nx) ** 2 >= skip2:
                    b -= 1
                row = (z * ny + y) * nx
                ua, ub = cx + a, cx + b
                # the row's copy below the box (cells ua + nx .. nx - 1), inside, above (0 .. ub - nx)
                below0, below1 = (cell_start[row + ua + nx], cell_start[row + nx]) if ua < 0 else (0, 0)
                in0, in1 = cell_start[row + max(ua, 0)], cell_start[row + min(ub, nx - 1) + 1]
                above0, above1 = (cell_start[row], cell_start[row + ub - nx + 1]) if ub >= nx else (0, 0)
                if skip_below and max(in1, max(below1, above1)) <= p0 + 1:
                    continue                  # the whole row lies before the cell's atoms
                shifted_row = split and (sy != 0.0 or sz != 0.0)
                for p in range(p0, p1):
                    i = cell_order[p]
                    if i >= n:
                        continue
                    xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
                    first = i + 1 if skip_below else 0
                    front, back, m = nbr_count[i], 0, min_r2_per_atom[i]
                    if plain_count is not None:
                        back = plain_count[i]
                    # the row's three pieces (below, inside, above the box); with split, the shifted
                    # ones go to the back of the atom's row (written out per case: a loop over the
                    # pieces with the slot chosen at run time cost 15% of the build)
                    if split:
                        k, m = _scan_cells(positions, cell_order, identity, max(below0, first), below1, i, xi,
                                           yi, zi, -L[0], sy, sz, L, invL, rint_image, half, r_list2, nbr,
                                           capacity, capacity - 1 - back, -1, front + back, m)
                        back += k
                    else:
                        k, m = _scan_cells(positions, cell_order, identity, max(below0, first), below1, i, xi,
                                           yi, zi, -L[0], sy, sz, L, invL, rint_image, half, r_list2, nbr,
                                           capacity, front, 1, front + back, m)
                        front += k
                    if shifted_row:
                        k, m = _scan_cells(positions, cell_order, identity, max(in0, first), in1, i, xi, yi, zi,
                                           0.0, sy, sz, L, invL, rint_image, half, r_list2, nbr, capacity,
                                           capacity - 1 - back, -1, front + back, m)
                        back += k
                    else:
                        k, m = _scan_cells(positions, cell_order, identity, max(in0, first), in1, i, xi, yi, zi,
                                           0.0, sy, sz, L, invL, rint_image, half, r_list2, nbr, capacity,
                                           front, 1, front + back, m)
                        front += k
                    if split:
                        k, m = _scan_cells(positions, cell_order, identity, max(above0, first), above1, i, xi,
                                           yi, zi, L[0], sy, sz, L, invL, rint_image, half, r_list2, nbr,
                                           capacity, capacity - 1 - back, -1, front + back, m)
                        back += k
                    else:
                        k, m = _scan_cells(positions, cell_order, identity, max(above0, first), above1, i, xi,
                                           yi, zi, L[0], sy, sz, L, invL, rint_image, half, r_list2, nbr,
                                           capacity, front, 1, front + back, m)
                        front += k
                    nbr_count[i] = front
                    min_r2_per_atom[i] = m
                    if plain_count is not None:
                        plain_count[i] = back
        if plain_count is not None:           # the shifted neighbours behind the plain ones
            for p in range(p0, p1):
                i = cell_order[p]
                if i >= n:
                    continue
                front, back = nbr_count[i], plain_count[i]
                if front + back <= capacity:
                    for q in range(back):
                        nbr[i, front + q] = nbr[i, capacity - back + q]
                nbr_count[i] = front + back
                plain_count[i] = front if split else 0
    max_count = 0
    for i in range(n):
        max_count = max(max_count, nbr_count[i])
    return max_count, min_r2_per_atom.min() if n else r_list2


@numba.njit(parallel=True, cache=True)
def _sort_rows_by_id(nbr, nbr_count, ids, n_targets):
    """Canonical neighbour order (deterministic mode): each target's entries (``nbr[i, :count]``)
    sorted by the global id of the neighbour, as ``sort_neighbours_by_id`` in verlet.cu does."""
    capacity = nbr.shape[1]
    for i in numba.prange(n_targets):
        count = min(nbr_count[i], capacity)
        for a in range(1, count):
            j = nbr[i, a]
            key = ids[j]
            b = a - 1
            while b >= 0 and ids[nbr[i, b]] > key:
                nbr[i, b + 1] = nbr[i, b]
                b -= 1
            nbr[i, b + 1] = j


@numba.njit(parallel=True, cache=True)
def _max_displacement2_cpu(positions, at_build, L, invL):
    n = positions.shape[0]
    d2 = np.zeros(n)
    for i in numba.prange(n):
        s = 0.0
        for d in range(3):
            x = positions[i, d] - at_build[i, d]
            x -= L[d] * np.rint(x * invL[d])
            s += x * x
        d2[i] = s
    return d2.max() if n else 0.0


class NeighborList:
    """A Verlet list with skin over a cell list, rebuilt on demand; storage grows, never drops a pair.

    Parameters
    ----------
    backend : pycumd.backend.Backend
    r_cut : float
        Largest interaction cutoff (length units).
    skin : float
        Extra distance (length units); ``r_list = r_cut + skin``.
    every, delay : int
        Consider a rebuild only every ``every`` steps, and not before ``delay`` steps since the
        last one (LAMMPS ``neigh_modify every/delay``).
    check : bool
        With ``check``, rebuild (when allowed) only if some atom moved more than ``skin / 2``;
        without, rebuild whenever allowed.
    overlap_distance : float
        At the first build, two atoms closer than this raise :class:`OverlapError`.
    capacity : int, optional
        Initial neighbour slots per atom (default: from the density, :meth:`_initial_capacity`);
        afterwards the capacity follows the counts measured (see the module docstring).
    reorder : bool
        Reorder the particle arrays by cell at builds (default).
    reorder_every : int, optional
        GPU: reorder at every ``reorder_every``-th build only (default
        :data:`DEFAULT_REORDER_EVERY`; 1: every build); the builds between read a copy of the
        positions in cell order.  Always 1 with ``canonical_order`` and on the CPU.  A run's first
        build and a checkpoint's always reorder (:meth:`schedule_reorder`).
    half : bool
        CPU only: a *half* list, each pair once (``j > i``) for a force kernel that applies
        Newton's third law (:meth:`pycumd.forces.PairForces._compute_cpu_half`), as LAMMPS and
        HOOMD-blue do on the CPU: half the pairs to evaluate and to find.  Default False: the full
        list, as on the GPU (the force sums of each atom in the GPU's order).
    cuda_options : tuple of str
        Extra NVRTC options for the kernels (the precision policy's).
    position_error : float
        Bound on how far the positions the list is built from may be from the positions the
        forces use (length units): float32 storage rounding; the displacement check triggers
        that much earlier, so that no pair is lost (0 for float64 positions).
    list_dtype : numpy float type, optional
        GPU: the type of the positions the list kernel reads.  ``numpy.float32`` with float64
        positions (mixed precision): the kernel reads a float32 copy made after the reorder
        (16-byte rows instead of 32, in the memory of ``positions_at_build``); give a
        ``position_error`` for its rounding.  Default: the positions' own type.
    """

    def __init__(self, backend, r_cut: float, skin: float, *, every: int = 1, delay: int = 0,
                 check: bool = True, overlap_distance: float | None = None, capacity: int | None = None,
                 reorder: bool = True, cuda_options: tuple = (), position_error: float = 0.0,
                 list_dtype=None, half: bool = False, canonical_order: bool = False,
                 reorder_every: int | None = None):
        if skin < 0:
            raise InputError(f"neighbor skin must be >= 0, got {skin}")
        if every < 1 or delay < 0:
            raise InputError(f"neigh_modify every must be >= 1 and delay >= 0, got {every}, {delay}")
        self.backend = backend
        self.r_cut = float(r_cut)
        self.skin = float(skin)
        self.r_list = self.r_cut + self.skin
        self.every, self.delay, self.check = int(every), int(delay), bool(check)
        self.overlap_distance = 0.05 * self.r_cut if overlap_distance is None else overlap_distance
        self.capacity = capacity
        self.n_builds = 0
        self.steps_since_build = 0
        self.box_at_build = None     # box lengths at the last build (a barostat changes them)
        self.nbr = None
        self.nbr_count = None
        self.reorder = reorder
        self.reorder_every = reorder_every
        self._reorder_due = True      # schedule_reorder: the next build reorders whatever the schedule
        self._repeat_build = False    # the next build repeats one that overflowed
        #: GPU: this build reorders, builds since the last reorder (device uint32 x 2, made at the
        #: first build; verlet.cu's decide_reorder); the list's own, so that a new build plan (a
        #: capacity change) does not restart the count
        self.reorder_state = None
        if half and backend.is_gpu:
            raise NotImplementedError("half neighbour lists are a CPU option; the GPU uses full lists")
        self.half = bool(half)
        #: half lists: per atom, how many of its neighbours (the first ones) need no minimum image
        self.nbr_plain = None
        self.position_error = float(position_error)
        self.scratch: dict = {}
        self.identity_view = None   # (key, int32 view of the forces' memory): the reordered order
        #: largest neighbour count of each of the last CAPACITY_WINDOW builds
        self.recent_max_counts: list = []
        self.overflows = 0          # builds repeated because the storage was too small
        self.resizes = 0            # storage reallocations after the first
        #: deterministic mode: each atom's neighbours sorted by global id after every build, so that
        #: the force sums' order is the same on any cell grid and over any number of MPI ranks
        self.canonical_order = bool(canonical_order)
        self._impl = _CudaBuild(backend, cuda_options, list_dtype) if backend.is_gpu else _CpuBuild()

    @property
    def list_kernel(self) -> str:
        """GPU list kernel: ``"auto"`` (default), ``"warp"`` or ``"planes"`` (see :data:`LIST_KERNELS`;
        the lists are the same, only the time differs; the CPU ignores it); settable."""
        return self._impl.list_kernel

    @list_kernel.setter
    def list_kernel(self, value) -> None:
        if value not in LIST_KERNELS:
            raise InputError(f"list_kernel must be one of {', '.join(LIST_KERNELS)}, got {value!r}")
        self._impl.list_kernel = value

    @property
    def reorder_every(self) -> int | None:
        """GPU builds from one reorder to the next (None: :data:`DEFAULT_REORDER_EVERY`); settable."""
        return self._reorder_every

    @reorder_every.setter
    def reorder_every(self, value) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1):
            raise InputError(f"reorder_every must be a whole number of builds >= 1, got {value!r}")
        self._reorder_every = None if value is None else int(value)

    def reorder_interval(self, state) -> int:
        """Builds from one reorder of the particle arrays to the next (1: every build reorders;
        0: none does, ``reorder=False``)."""
        if not self.reorder:
            return 0
        if self.canonical_order or not self.backend.is_gpu:
            return 1
        return int(self.reorder_every) if self.reorder_every is not None else DEFAULT_REORDER_EVERY

    def schedule_reorder(self) -> None:
        """Make the next build reorder the particle arrays by cell whatever ``reorder_every`` says,
        and count the builds to the next reorder from it (Simulation.setup and start_checkpoint:
        so that a run continued from a checkpoint reorders at the same builds as the run that
        wrote it)."""
        self._reorder_due = True

    def cells_per_dimension(self, L: np.ndarray) -> np.ndarray:
        """Cells per box edge: ``floor(2 L / r_list)`` (cell edge >= r_list / 2), in [1, 1024]."""
        return np.clip(np.floor(2.0 * L / self.r_list).astype(np.int64), 1, 1024)

    def check_box(self, L: np.ndarray) -> None:
        """Raise :class:`InputError` if a box edge is shorter than ``2 * (r_cut + skin)``."""
        if (L < 2.0 * self.r_list).any():
            d = int(np.argmin(L))
            raise InputError(
                f"box length {'xyz'[d]} = {L[d]:.6g} is smaller than twice the cutoff plus skin "
                f"2 * ({self.r_cut:g} + {self.skin:g}) = {2 * self.r_list:.6g}: use a larger box "
                f"(replicate the system) or a shorter cutoff")

    def _initial_capacity(self, n_atoms: int, volume: float) -> int:
        density = n_atoms / volume
        expected = density * 4.0 / 3.0 * math.pi * self.r_list**3
        return int(min(max(8, math.ceil(1.25 * expected) + 8), max(n_atoms - 1, 1)))

    def needs_rebuild(self, state) -> bool:
        """Advance the step counter and say whether this step rebuilds (LAMMPS ``Neighbor::decide``)."""
        self.steps_since_build += 1
        if self.steps_since_build < self.delay or self.steps_since_build % self.every:
            return False
        if not self.check:
            return True
        return self._impl.displacement_exceeds(state, self.displacement_limit2_in_box(state))

    @property
    def displacement_limit2(self) -> float:
        """Squared displacement that triggers a rebuild: ``(skin/2 - position_error)^2``."""
        return max(0.5 * self.skin - self.position_error, 0.0) ** 2

    def displacement_limit2_in_box(self, state) -> float:
        """:attr:`displacement_limit2`, or, when the box changed since the build (a barostat),
        ``(skin/2 - |L - L_build|/2 - position_error)^2``: positions are scaled with the box about its
        lower corner, so a periodic image of an atom moves by its displacement plus up to
        ``|L - L_build|``, and a pair's separation changes by at most ``2 d + |L - L_build|``."""
        L_build = self.box_at_build
        if L_build is None:
            return self.displacement_limit2
        change = float(np.linalg.norm(np.asarray(state.box_lengths, dtype=np.float64) - L_build))
        if change == 0.0:
            return self.displacement_limit2
        return max(0.5 * (self.skin - change) - self.position_error, 0.0) ** 2

    def build(self, state) -> None:
        """Wrap positions, counting-sort atoms into cells and rebuild the list (growing storage as needed)."""
        n_cells = self.prepare_build(state)
        while True:
            max_count, min_r2 = self._impl.build(state, n_cells, self.r_list, self.capacity, self)
            if self.finish_build(state, max_count, min_r2):
                return

    def prepare_build(self, state) -> np.ndarray:
        """Host-side start of a build: check the box, choose the capacity (initial, or shrunk, see
        the module docstring), drop storage of the wrong size; return the cells per dimension."""
        L = np.asarray(state.box_lengths)
        self.check_box(L)
        n = state.n_atoms
        if self.capacity is None:
            self.capacity = self._initial_capacity(n, float(np.prod(L)))
        self._shrink_if_oversized(n)
        self._free_if_resized(n)
        return self.cells_per_dimension(L)

    def finish_build(self, state, max_count: int, min_r2: float) -> bool:
        """Host-side end of a build from its statistics (largest count, smallest squared distance).

        Returns False when the storage overflowed: the capacity is raised to hold ``max_count``
        (its old storage dropped) and the build must be repeated.  Otherwise records the count,
        checks for overlapping atoms at the first build (:class:`OverlapError`) and returns True.
        """
        n = state.n_atoms
        if max_count > self.capacity:
            self.overflows += 1
            self._repeat_build = True     # the repeat makes the overflowed build's reorder decision
            self.capacity = capacity_for(max_count, n)
            self.recent_max_counts.clear()
            self._free_if_resized(n)
            return False
        self.recent_max_counts = (self.recent_max_counts + [max_count])[-CAPACITY_WINDOW:]
        if self.n_builds == 0 and n > 1 and min_r2 < self.overlap_distance**2:
            i, j, r = self._impl.closest_pair(state, self)
            ids = self.backend.to_host(state.ids)
            first, second = sorted((int(ids[i]), int(ids[j])))
            raise OverlapError(
                f"atoms with IDs {first} and {second} overlap: distance {r:.4g} is below "
                f"{self.overlap_distance:.4g} (length units); check the input coordinates")
        self.n_builds += 1
        self.steps_since_build = 0
        self.box_at_build = np.asarray(state.box_lengths, dtype=np.float64).copy()
        return True

    def record_builds(self, state, builds: int, max_counts) -> None:
        """Host-side record of ``builds`` (>= 1) complete builds made on the device without the host
        (the device loop, :mod:`pycumd.step_graph`); ``max_counts``: the largest count of each of the
        last of them, in order (at most ``CAPACITY_WINDOW``).  The overlap check belongs to the
        first build, which is never one of them."""
        self.recent_max_counts = (self.recent_max_counts + [int(c) for c in max_counts])[-CAPACITY_WINDOW:]
        self.n_builds += builds
        self.steps_since_build = 0
        self.box_at_build = np.asarray(state.box_lengths, dtype=np.float64).copy()

    def neighbors_of(self, i: int) -> np.ndarray:
        """Host copy of atom ``i``'s neighbour indices, in list order."""
        return self._impl.neighbors_of(self, i)

    def _shrink_if_oversized(self, n: int) -> None:
        """Lower the capacity to :func:`capacity_for` the largest count of the last
        :data:`CAPACITY_WINDOW` builds, when a full window has been measured since the last change
        and the capacity exceeds that by more than a margin (so that it does not oscillate)."""
        if len(self.recent_max_counts) < CAPACITY_WINDOW:
            return
        recent = max(self.recent_max_counts)
        target = capacity_for(recent, n)
        if self.capacity > target + capacity_margin(recent):
            self.capacity = target
            self.recent_max_counts.clear()

    def _free_if_resized(self, n: int) -> None:
        """Drop storage of the wrong size before the build allocates the new one, so that the
        two never coexist (at 10^8 atoms each is tens of GB)."""
        if self.nbr is not None and self.nbr.size != n * self.capacity:
            self.nbr = None
            self.nbr_count = None
            self.resizes += 1

    def memory_by_array(self) -> dict:
        """Bytes of device (or host) memory the list holds between builds, by array.

        ``nbr`` (capacity x N int32), ``nbr_count`` (N int32) and the scratch kept between builds:
        on the GPU the build plan's own arrays (``build_plan``: the statistics, the scan's tile
        status and the gather's pointer tables, a few bytes, plus any buffer that found no room in
        dead memory), on the CPU the gather's tables.
        """
        out = {}
        if self.nbr is not None:
            out["nbr"] = int(self.nbr.nbytes)
            out["nbr_count"] = int(self.nbr_count.nbytes)
        if self.nbr_plain is not None:
            out["nbr_plain"] = int(self.nbr_plain.nbytes)
        plan = getattr(self._impl, "plan", None)
        if plan is not None:
            out["build_plan"] = plan.own_bytes
        for key, value in self.scratch.items():
            arrays = value if isinstance(value, tuple) else (value,)
            size = sum(int(a.nbytes) for a in arrays if hasattr(a, "nbytes"))
            if size:
                out[f"scratch.{key if isinstance(key, str) else key[0]}"] = size
        return out


class _CpuBuild:
    """NumPy/Numba implementation; storage ``nbr[i, k]`` (row-major)."""

    list_kernel = "auto"        # NeighborList.list_kernel: kept, not used (the CPU has one list builder)

    def displacement_exceeds(self, state, limit2) -> bool:
        L = np.asarray(state.box_lengths)
        return _max_displacement2_cpu(state.positions, state.positions_at_build, L, 1.0 / L) > limit2

    def wrap(self, state) -> None:
        _wrap_cpu(state.positions, state.images, np.asarray(state.box_lengths, dtype=np.float64))

    def build(self, state, n_cells, r_list, capacity, nl):
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self.wrap(state)
        n = state.n_atoms
        keys = cell_index(state.positions, L, n_cells)
        sort = counting_sort(keys, int(np.prod(n_cells)))
        if nl.reorder:
            sort = _sorted_identity(state, keys, sort, nl)
        if nl.nbr is None or nl.nbr.shape != (n, capacity):
            nl.nbr = np.empty((n, capacity), np.int32)
            nl.nbr_count = np.empty(n, np.int32)
        if not nl.half:
            nl.nbr_plain = None
            max_count, min_r2 = _build_cpu(state.positions, keys, sort.bin_start, sort.order,
                                           n_cells, L, 1.0 / L, r_list * r_list, nl.nbr, nl.nbr_count)
        else:
            if nl.nbr_plain is None or nl.nbr_plain.shape != (n,):
                nl.nbr_plain = np.empty(n, np.int32)
            max_count, min_r2 = _build_cpu(state.positions, keys, sort.bin_start, sort.order, n_cells, L,
                                           1.0 / L, r_list * r_list, nl.nbr, nl.nbr_count, True, nl.nbr_plain)
        if nl.canonical_order:
            self.sort_by_id(nl.nbr, nl.nbr_count, state.ids, n, capacity)
        state.positions_at_build[...] = state.positions
        return int(max_count), float(min_r2)

    def sort_by_id(self, nbr, nbr_count, ids, n_targets, capacity) -> None:
        """Each target's neighbours in global-id order (``_sort_rows_by_id``)."""
        _sort_rows_by_id(nbr, nbr_count, ids, n_targets)

    def closest_pair(self, state, nl):
        best = (np.inf, -1, -1)
        L = np.asarray(state.box_lengths)
        for i in range(state.n_atoms):
            js = nl.nbr[i, :nl.nbr_count[i]]
            if len(js) == 0:
                continue
            d = state.positions[i] - state.positions[js]
            d -= L * np.rint(d / L)
            r = np.sqrt((d * d).sum(axis=1))
            k = int(np.argmin(r))
            if r[k] < best[0]:
                best = (float(r[k]), i, int(js[k]))
        return best[1], best[2], best[0]

    def neighbors_of(self, nl, i):
        return nl.nbr[i, :nl.nbr_count[i]].copy()


class _CudaBuild:
    """CUDA implementation (``verlet.cu``); storage ``nbr[k * N + i]`` (column-major, coalesced)."""

    def __init__(self, backend, cuda_options=(), list_dtype=None):
        self.backend = backend
        self.cuda_options = tuple(cuda_options)
        self.list_dtype = None if list_dtype is None else np.dtype(list_dtype)
        self.cp = backend.xp
        self._kernels = {}
        self._flag = self.cp.zeros(1, np.int32)
        self.plan: _BuildPlan | None = None
        self.list_kernel = "auto"            # NeighborList.list_kernel
        #: set to a list to record (phase, CUDA event) pairs during builds (pycumd bench lj --build-split)
        self.phase_events: list | None = None

    def _mark(self, phase: str) -> None:
        if self.phase_events is not None:
            event = self.cp.cuda.Event()
            event.record()
            self.phase_events.append((phase, event))

    def float_list(self, state) -> bool:
        """Whether the list kernel reads a float32 copy of float64 positions (mixed precision)."""
        return state.positions.dtype == np.float64 and self.list_dtype == np.float32

    def _kernel(self, state, name, real=None):
        """Kernel ``name`` of verlet.cu for positions of ``real`` (default: the state's) type, and
        positions at build of the state's type (the positions' without a state)."""
        real = np.dtype(state.positions.dtype if real is None else real)
        at_build = np.dtype(state.positions_at_build.dtype) if state is not None else real
        key = (real.name, at_build.name, name)
        if key not in self._kernels:
            defines = {"real_t": c_type_name(real), "COMPOSITE": int(name.endswith("_composite"))}
            if at_build != real:
                defines["at_build_t"] = c_type_name(at_build)
            module = self.backend.kernel_module("neighbors/verlet.cu", defines, options=self.cuda_options)
            self._kernels[key] = module.get_function(name)
        return self._kernels[key]

    def _box_args(self, state, real=None):
        real = np.dtype(state.positions.dtype if real is None else real).type
        L = np.asarray(state.box_lengths, dtype=np.float64)
        return [real(x) for x in L] + [real(x) for x in 1.0 / L]

    def displacement_exceeds(self, state, limit2, flag=None) -> bool | None:
        """Launch the check; with ``flag`` given (a device int) only launch, without waiting."""
        n = state.n_atoms
        wait = flag is None
        if wait:
            flag = self._flag
            flag.fill(0)
        self._kernel(state, "displacement_exceeds")(
            ((n + BLOCK - 1) // BLOCK,), (BLOCK,),
            (state.positions, state.positions_at_build, np.int32(n), *self._box_args(state),
             state.positions.dtype.type(limit2), flag))
        return bool(flag.get()[0]) if wait else None

    def wrap(self, state) -> None:
        """Launch the wrap of the positions into the box (image counters updated; ``_wrap_cpu``'s rule)."""
        n = state.n_atoms
        real = state.positions.dtype.type
        L = np.asarray(state.box_lengths, dtype=np.float64)
        grid = ((n + BLOCK - 1) // BLOCK,)
        if state.lo is None:
            self._kernel(state, "wrap_positions")(
                grid, (BLOCK,), (state.positions, state.images, np.int32(n), *[real(x) for x in L]))
        else:
            L_hi, L_lo = zip(*(ff_parts(x) for x in L))
            self._kernel(state, "wrap_positions_composite")(
                grid, (BLOCK,), (state.positions, state.lo["positions"], state.images, np.int32(n), *L_hi, *L_lo))

    def build(self, state, n_cells, r_list, capacity, nl):
        """One build: the launches of :meth:`enqueue`, replayed from a captured CUDA graph once
        the plan (buffers and addresses) has been used before; one synchronisation, to read the
        statistics.  With :attr:`phase_events` set, the launches run uncaptured between events."""
        cp = self.cp
        n = state.n_atoms
        plan = self.prepare(state, n_cells, r_list, capacity, nl)
        if n == 0:
            return 0, r_list * r_list
        if nl._repeat_build:
            # the overflowed build advanced the count: step it back, so that the repeat decides as
            # that build did and a run with overflows reorders at the builds a run without does
            every = plan.reorder_every
            if every > 1:
                nl.reorder_state[1:2] = (nl.reorder_state[1:2] + np.uint32(every - 1)) % np.uint32(every)
            nl._repeat_build = False
        if nl._reorder_due:
            nl.reorder_state[1:2].fill(0)         # builds since the last reorder: 0, so this one does
            nl._reorder_due = False
        if self.phase_events is not None or plan.builds == 0:
            # the first use compiles the kernels and runs the launches once, uncaptured
            self.enqueue(state, plan, nl)
        else:
            if plan.graph is None:
                stream = cp.cuda.Stream(non_blocking=False)
                with stream:
                    stream.begin_capture()
                    self.enqueue(state, plan, nl)
                    plan.graph = stream.end_capture()
            plan.graph.launch(cp.cuda.get_current_stream())
        plan.builds += 1
        host = plan.stats.get()
        self._mark("snapshot + stats")
        return int(host[0]), float(host[1:2].view(np.float32)[0])

    def prepare(self, state, n_cells, r_list, capacity, nl) -> "_BuildPlan":
        """Host-side set-up of a build: the list storage of ``capacity`` slots per atom and the
        plan, made anew when an address, a size or a parameter changed (allocations and host to
        device copies: not capturable; :meth:`enqueue` is)."""
        n = state.n_atoms
        if nl.reorder_state is None:
            nl.reorder_state = self.cp.zeros(2, np.uint32)
        if nl.nbr is None or nl.nbr.size != n * capacity:
            self.plan = None          # it holds views of the old storage: free that first
            nl.nbr = nl.nbr_count = None
            nl.nbr = self.cp.empty(n * capacity, np.int32)
            nl.nbr_count = self.cp.empty(n, np.int32)
        arrays = state.per_atom_arrays() + state.spare_at_build() + (nl.nbr, nl.nbr_count)
        key = (tuple((a.data.ptr, a.nbytes) for a in arrays), tuple(int(c) for c in n_cells),
               float(r_list), int(capacity), bool(nl.reorder), nl.reorder_interval(state), tuple(state.box_lengths),
               self.list_kernel)
        if self.plan is None or self.plan.key != key:
            self.plan = None                  # release the old buffers first
            self.plan = _BuildPlan(self.backend, key, state, n_cells, nl, self.float_list(state))
        return self.plan

    def enqueue(self, state, plan, nl, control=None, accumulate=False) -> None:
        """Launch a whole build on the current stream: no allocation, no synchronisation.

        wrap, cell index and bin count (one kernel, which also resets the statistics and decides
        whether this build reorders) -> the scan of the bin counts and the scatter -> the stable
        order within the bins (``sort_bins_rows``, which also writes the rows the list kernel reads
        when it does not read the positions -- mixed precision's float32 copy, or the copy in cell
        order of a build that defers the reorder -- and zeroes the bin counts for the next build)
        -> reorder (gather + copy back; with ``reorder_every`` > 1 they do nothing at builds that
        do not reorder) -> list kernel -> positions at build (and, with ``control``, the statistics
        published): eight graph nodes.  With
        ``control`` (the state's step-control array, :mod:`pycumd.step_graph`), the last kernel copies the statistics to
        ``control[3:5]`` and, if the storage overflowed, freezes the step (``control[0]`` and
        ``control[2]`` set): the kernels after it do nothing until the host repeats the build.
        With ``accumulate`` (the device loop, several builds per launch) it keeps the largest count
        and the smallest r^2 of the builds there, counts them in ``control[5]`` and records the
        largest count of each of the last ``CAPACITY_WINDOW`` in ``control[9:]``.
        """
        n = state.n_atoms
        self._mark("start")
        self.wrap_and_bin(state, plan, nl.reorder_state)
        self._mark("wrap + bin")
        enqueue_counting_sort(self.backend, plan.keys, plan.sort, scan=plan.scan, counted=True, sort_within_bins=False)
        self.sort_bins_rows(state, plan, nl.reorder_state)
        self._mark("counting sort")
        order = plan.sort.order
        if nl.reorder:
            # the particles now lie in cell order: the list kernel takes slot s as particle s
            # (ROWS_IN_SLOT_ORDER) and never reads `order`
            enqueue_gather_rows(self.backend, plan.gather, order,
                                enabled=nl.reorder_state[0:1] if plan.reorder_every > 1 else None)
        self._mark("reorder")
        positions, row_mode = state.positions, ROWS_IN_SLOT_ORDER if nl.reorder else ROWS_VIA_ORDER
        if plan.list_rows is not None:
            # rows in cell order with their atom's index, whether or not this build reordered
            # (written by sort_bins_rows)
            positions, row_mode = plan.list_rows, ROWS_INDEX_IN_W
        self.launch_list_kernel(positions, n, plan.keys, plan.sort.bin_start, order, row_mode,
                                plan.n_cells, state.box_lengths, nl.r_list, nl.capacity, nl.nbr, nl.nbr_count,
                                plan.stats)
        if nl.canonical_order:
            self.sort_by_id(nl.nbr, nl.nbr_count, state.ids, n, nl.capacity)
        self._mark("list kernel")
        values = state.positions.size
        self._kernel(state, "snapshot_and_publish")(
            ((values + BLOCK - 1) // BLOCK,), (BLOCK,),
            (state.positions, state.positions_at_build, np.int32(values), plan.stats, np.int32(nl.capacity),
             plan.stats if control is None else control, np.int32(CAPACITY_WINDOW if accumulate else 0),
             np.int32(control is not None)))

    def compile_build_kernels(self, state) -> None:
        """Compile the build's own kernels for ``state`` (a capture must not compile)."""
        self._kernel(state, "wrap_and_bin" if state.lo is None else "wrap_and_bin_composite")
        self._kernel(state, "snapshot_and_publish")
        self._kernel(state, "sort_bins_rows")
        self._kernel(state, "sort_bins_rows_float")

    def sort_bins_rows(self, state, plan, reorder_state) -> None:
        """Launch ``sort_bins_rows``: the counting sort's stable order within the bins
        (``plan.sort.order``), the rows the list kernel reads when the plan has them
        (``plan.list_rows``, with their atom's index), and ``plan.sort.count`` zeroed for the next
        build."""
        n_bins = plan.sort.bin_start.shape[0] - 1
        rows = plan.list_rows
        name = "sort_bins_rows_float" if rows is not None and rows.dtype != state.positions.dtype else "sort_bins_rows"
        self._kernel(state, name)(
            ((n_bins + BLOCK - 1) // BLOCK,), (BLOCK,),
            (plan.sort.slots, plan.sort.bin_start, np.int32(n_bins), plan.sort.order, plan.sort.count,
             state.positions, reorder_state, rows if rows is not None else np.uint64(0)))

    def wrap_and_bin(self, state, plan, reorder_state) -> None:
        """Launch ``wrap_and_bin``: the wrap (:meth:`wrap`'s rule), each wrapped position's cell
        (``plan.keys``, as :func:`~pycumd.neighbors.counting_sort.cell_index`), its count into the
        zeroed ``plan.sort.count`` with its arrival rank (the counting sort's first pass), and
        ``plan.stats`` reset for the list kernel, and the reorder decision made (``reorder_state``)."""
        n = state.n_atoms
        nx, ny, nz = (np.int32(c) for c in plan.n_cells)
        L = np.asarray(state.box_lengths, dtype=np.float64)
        grid = ((n + BLOCK - 1) // BLOCK,)
        tail = (nx, ny, nz, plan.keys, plan.sort.count, plan.sort.rank, plan.stats, reorder_state,
                np.int32(plan.reorder_every))
        if state.lo is None:
            real = state.positions.dtype.type
            self._kernel(state, "wrap_and_bin")(
                grid, (BLOCK,), (state.positions, state.images, np.int32(n), *[real(x) for x in L], *tail))
        else:
            L_hi, L_lo = zip(*(ff_parts(x) for x in L))
            self._kernel(state, "wrap_and_bin_composite")(
                grid, (BLOCK,), (state.positions, state.lo["positions"], state.images, np.int32(n), *L_hi, *L_lo,
                                 *tail))

    def launch_list_kernel(self, positions, n_targets, keys, bin_start, order, row_mode, n_cells,
                           box_lengths, r_list, capacity, nbr, nbr_count, stats):
        """Launch ``build_neighbor_list`` on ``positions`` ((M, 4) rows ``x, y, z, w`` in
        ``[0, box_lengths)``, counting-sorted into ``n_cells`` by ``keys``/``bin_start``/``order``):
        one warp per 32 consecutive atoms of one cell row.  ``row_mode`` (ROWS_*): the atom of
        sorted slot s is row ``order[s]``; or row s (atoms in cell order); or row s, whose ``w``
        bits hold the atom's index (``sort_bins_rows``).  ``keys`` and the lists are by atom index.

        Targets are the rows ``i < n_targets`` (all M in a serial run; a spatial domain's owned atoms,
        its ghost rows being sources only): their lists go to ``nbr`` (``capacity`` x ``n_targets``
        int32, column-major) and ``nbr_count`` (``n_targets``); ``stats[0]`` gets the largest count
        (atomic max), ``stats[1]`` the smallest r^2 as float bits (atomic min).

        The grid holds ``chunks_per_row`` warps per cell row (y, z), enough for a row of the mean
        occupancy plus four standard deviations; a fuller row is finished by its warps in strides.
        Boxes with fewer than 7 cells along some edge use the kernel's rint variant (see verlet.cu).
        Small launches of float32 rows take a block of three warps per task instead, each scanning its
        own stencil planes (``build_neighbor_list_planes``, :meth:`uses_plane_kernel`): the same lists;
        with at most :data:`PLANE_RING16_ROWS` rows its rings hold 16-bit entries (``..._planes16``).
        """
        m = int(positions.shape[0])
        nx, ny, nz = (int(c) for c in n_cells)
        n_rows = ny * nz
        mean = m / n_rows
        chunks_per_row = max(1, math.ceil((mean + 4.0 * math.sqrt(mean) + 1.0) / 32.0))
        tasks = n_rows * chunks_per_row
        real = positions.dtype
        image_shift = min(nx, ny, nz) >= 7
        if self.uses_plane_kernel(real, image_shift, n_targets):
            # rings of 16-bit entries when every row index fits (half the shared memory: more blocks an SM)
            name = "build_neighbor_list_planes16" if m <= PLANE_RING16_ROWS else "build_neighbor_list_planes"
            grid, block = (tasks,), (32 * PLANE_WARPS,)
        else:
            name = "build_neighbor_list" if image_shift else "build_neighbor_list_rint"
            grid, block = ((tasks + LIST_WARPS - 1) // LIST_WARPS,), (32 * LIST_WARPS,)
        L = np.asarray(box_lengths, dtype=np.float64)
        self._kernel(None, name, real)(
            grid, block,
            (positions, keys, bin_start, order, np.int32(row_mode),
             np.int32(nx), np.int32(ny), np.int32(nz), np.int32(chunks_per_row),
             *[real.type(x) for x in L], *[real.type(x) for x in 1.0 / L], real.type(r_list * r_list),
             nbr, nbr_count, np.int32(capacity), np.int32(n_targets), np.int32(n_targets),
             stats[0:1].view(np.int32), stats[1:2]))

    def uses_plane_kernel(self, real, image_shift: bool, n_targets: int) -> bool:
        """Whether a list launch takes ``build_neighbor_list_planes``: float32 rows, >= 7 cells along
        every edge (its planes are the image-shift kernel's five), and ``list_kernel`` "planes", or
        "auto" with at most :data:`PLANE_SPLIT_ATOMS` targets."""
        if self.list_kernel == "warp" or np.dtype(real) != np.float32 or not image_shift:
            return False
        return self.list_kernel == "planes" or n_targets <= PLANE_SPLIT_ATOMS

    def sort_by_id(self, nbr, nbr_count, ids, n_targets, capacity) -> None:
        """Launch ``sort_neighbours_by_id``: each target's neighbours in global-id order."""
        if n_targets:
            self._kernel(None, "sort_neighbours_by_id", np.float64)(
                ((n_targets + BLOCK - 1) // BLOCK,), (BLOCK,),
                (nbr, nbr_count, ids, np.int32(n_targets), np.int32(n_targets), np.int32(capacity)))

    def build_targets(self, positions, n_targets, box_lengths, n_cells, r_list, capacity, nbr, nbr_count):
        """An uncaptured list build over ``positions`` ((M, 4) rows in ``[0, box_lengths)``) for the
        first ``n_targets`` rows (a spatial domain's owned atoms; all M rows are sources): cell index,
        counting sort (no reorder) and the list kernel; returns ``(largest count, smallest r^2)``
        (one synchronisation).  The storage ``nbr`` must hold ``capacity * n_targets`` entries."""
        cp = self.cp
        keys = cell_index(positions, np.asarray(box_lengths, dtype=np.float64), n_cells)
        sort = counting_sort(keys, int(np.prod(n_cells)), self.backend)
        stats = cp.asarray([0, 0x7F7FFFFF], dtype=np.uint32)
        if n_targets > 0:
            self.launch_list_kernel(positions, n_targets, keys, sort.bin_start, sort.order, ROWS_VIA_ORDER, n_cells,
                                    box_lengths, r_list, capacity, nbr, nbr_count, stats)
        host = stats.get()
        return int(host[0]), float(host[1:2].view(np.float32)[0])

    def closest_pair(self, state, nl):
        host = _host_copy_for_overlap(state, nl, self.cp)
        return _CpuBuild().closest_pair(*host)

    def neighbors_of(self, nl, i):
        n = len(nl.nbr_count)
        count = int(nl.nbr_count[i].get())
        return nl.nbr[i:i + n * count:n].get() if count else np.empty(0, np.int32)


class _BuildPlan:
    """The device buffers of GPU builds at fixed addresses, sizes and parameters, and the captured
    graph of the build's launches (made at the second build with this plan).

    No build memory of its own where the state allows: the counting sort's arrays and the reorder's
    gather buffers lie in the list storage (dead until the list kernel rewrites it); the cell keys
    and the bin offsets, which the list kernel reads, lie in the arrays
    ``State.spare_at_build`` names (dead until the end of the build or the next force computation).
    Whatever does not fit (a list of very few slots, more cells than atoms) gets an array of its own,
    counted in :attr:`own_bytes`.  Only the two statistics and the scan's tile status are always
    separate (a few bytes per 12,288 cells).
    """

    def __init__(self, backend, key, state, n_cells, nl, float_list=False):
        cp = backend.xp
        n = state.n_atoms
        self.key = key
        self.n_cells = tuple(int(c) for c in n_cells)
        #: builds from one reorder to the next (NeighborList.reorder_interval)
        self.reorder_every = nl.reorder_interval(state)
        n_bins = int(np.prod(self.n_cells))
        self.graph = None
        self.builds = 0
        self.own: list = []
        # long-lived (read by the list kernel): keys, bin offsets (and without reordering the sorted order)
        sizes = CountingSortBuffers.sizes(n, n_bins)
        long_lived = {"keys": n, "bin_start": sizes[1]}
        if not nl.reorder:
            long_lived["order"] = n
        spare_long = state.spare_at_build()
        #: the (N, 4) rows the list kernel reads when not the positions themselves, else None: mixed
        #: precision's float32 copy, or with reorder_every > 1 the copy in cell order (float32 in
        #: mixed precision, else the positions' type); in positions_at_build's memory (taken again
        #: after the list kernel; float32 rows in mixed precision, as the list rows)
        self.list_rows = None
        if float_list:
            self.list_rows = byte_view(spare_long[0], 0, 16 * n, np.float32).reshape(n, 4)
            spare_long = spare_long[1:]
        elif self.reorder_every > 1:
            self.list_rows = spare_long[0].reshape(n, 4)
            spare_long = spare_long[1:]
        views = self._place(cp, long_lived, spare_long)
        short_lived = {"rank": n, "slots": n}
        if nl.reorder:
            short_lived["order"] = n
        moved = state.per_atom_arrays() + (views["keys"],)
        # the counting sort's scratch first, then the gather buffers behind it, in the list storage
        nbr_bytes = nl.nbr.reshape(-1).view(np.uint8)
        head = sum(-(-4 * size // SPARE_ALIGN) * SPARE_ALIGN for size in short_lived.values())
        views.update(self._place(cp, short_lived, (nbr_bytes[:head],) if head <= nbr_bytes.size else ()))
        self.keys = views["keys"]
        # the bin counts in memory of their own, zeroed once: each build's sort_bins_rows zeroes them
        # for the next (no memset node); (n_bins + 1) * 4 bytes, ~1.7 bytes per atom in an LJ liquid
        count = cp.zeros(sizes[0], np.int32)
        self.own.append(count)
        self.sort = CountingSortBuffers(count, views["bin_start"], views["rank"], views["slots"],
                                        views["order"])
        self.gather = (gather_plan(backend, n, moved, (nbr_bytes[head:],) if head < nbr_bytes.size else ())
                       if nl.reorder and n > 0 else None)
        self.scan = CapturableScan(backend, n_bins + 1, np.int32)
        self.stats = cp.empty(2, np.uint32)                    # max count, min r^2 as float bits

    def _place(self, cp, sizes: dict, regions) -> dict:
        """int32 views of ``sizes[name]`` elements each in ``regions`` (first fit), or own arrays."""
        names = list(sizes)
        layout = spare_layout([4 * sizes[k] for k in names], [r.nbytes for r in regions])
        views = {}
        for name, place in zip(names, layout):
            if place is None:
                views[name] = cp.empty(sizes[name], np.int32)
                self.own.append(views[name])
            else:
                r, offset = place
                views[name] = byte_view(regions[r], offset, 4 * sizes[name], np.int32)
        return views

    @property
    def own_bytes(self) -> int:
        """Bytes this plan holds outside the state and the list storage."""
        extra = (self.gather.own_bytes + int(self.gather.src.nbytes + self.gather.dst.nbytes)
                 if self.gather is not None else 0)
        return (sum(int(a.nbytes) for a in self.own) + extra + self.scan.nbytes
                + int(self.stats.nbytes))


def _sorted_identity(state, keys, sort, nl):
    """Reorder the particles by cell; return the counting sort of the reordered particles.

    After the permutation particle ``k`` is the ``k``-th in cell order, so the order is the
    identity and the cell boundaries are unchanged.  The gather buffers lie in the list storage
    (``nl.nbr``, rewritten after the reorder) or, before it exists, in the state's
    ``spare_at_build`` arrays; the identity lies in the forces' memory: the reorder holds no memory
    of its own between builds.
    """
    # the list storage is dead until the list kernel writes it: the gather buffers go there first
    spare = ((nl.nbr,) if nl.nbr is not None else ()) + state.spare_at_build()
    reorder_in_place(sort.order, *state.per_atom_arrays(), keys, scratch=nl.scratch, spare=spare)
    # the identity order, read by the list kernel, in the forces' memory (dead until the next force
    # computation; the view is made once, the values written at every build)
    n = keys.shape[0]
    key = (id(state.forces), n)          # the view keeps that array alive, so its id stays unique
    if nl.identity_view is None or nl.identity_view[0] != key:
        nl.identity_view = (key, identity_view(state.forces, n))
    return sort._replace(order=identity_into(nl.identity_view[1]))


def _host_copy_for_overlap(state, nl, cp):
    """Host-side state and list for the (rare, error-path) closest-pair search."""
    from types import SimpleNamespace

    n = state.n_atoms
    cap = nl.nbr.size // max(n, 1)
    host_state = SimpleNamespace(n_atoms=n, box_lengths=state.box_lengths,
                                 positions=state.positions[:, :3].get().astype(np.float64))
    host_nl = SimpleNamespace(nbr=nl.nbr.get().reshape(cap, n).T, nbr_count=nl.nbr_count.get())
    return host_state, host_nl
