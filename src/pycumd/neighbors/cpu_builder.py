"""The CPU builder of the Verlet list (NumPy + Numba), the policy's twin on the host.

:class:`CpuListBuilder` is what :class:`~pycumd.neighbors.verlet.NeighborList` runs on the CPU
backend, and its functions (:func:`wrap_positions_cpu`, :func:`build_list_cpu`) are public for the
structures that build lists of their own (spatial domains, the all-pairs wrap).  Storage:
``nbr[i, k]`` (row-major).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .counting_sort import cell_index, counting_sort, identity_into, identity_view, reorder_in_place
from .verlet import IMAGE_SHIFT_MIN_CELLS


@numba.njit(inline="always")
def wrap_atom(i, positions, images, L):
    """Row i wrapped into [0, L) with its image counters (the one place of the wrap's arithmetic:
    :func:`wrap_positions_cpu` and the batched engine, :mod:`pycumd.batch_engine`, call it).

    ``x -= k L`` with ``k = floor(x / L)``; for the usual ``k = -1`` or ``1`` that is the single
    ``x + L`` or ``x - L`` LAMMPS does.  Non-finite coordinates are left for the blow-up check.
    """
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


@numba.njit(cache=True)
def wrap_positions_cpu(positions, images, L):
    """Wrap into [0, L) and count images, exactly as the ``wrap_positions`` CUDA kernel does (:func:`wrap_atom`)."""
    for i in range(positions.shape[0]):
        wrap_atom(i, positions, images, L)


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




@numba.njit(inline="always")
def _row_cell(u, n, L):
    """Unwrapped cell ``u`` in [-n, 2n) of a cell row: its cell in the row (u mod n) and the image
    shift ``s`` of that copy of the row (0 or +-L): the separation is ``(x_i - x_j) - s``."""
    if u < 0:
        return u + n, -L
    if u >= n:
        return u - n, L
    return u, 0.0


@numba.njit(cache=True)
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
def build_list_cpu(positions, keys, cell_start, cell_order, n_cells, L, invL, r_list2, nbr, nbr_count,
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


@numba.njit(inline="always")
def displacement2_atom(i, positions, at_build, L, invL):
    """Row i's squared displacement since the last build (minimum image; the one place of the
    check's arithmetic, also the batched engine's)."""
    s = 0.0
    for d in range(3):
        x = positions[i, d] - at_build[i, d]
        x -= L[d] * np.rint(x * invL[d])
        s += x * x
    return s


@numba.njit(parallel=True, cache=True)
def _max_displacement2_cpu(positions, at_build, L, invL):
    n = positions.shape[0]
    d2 = np.zeros(n)
    for i in numba.prange(n):
        d2[i] = displacement2_atom(i, positions, at_build, L, invL)
    return d2.max() if n else 0.0


def sorted_identity(state, keys, sort, nl):
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


class CpuListBuilder:
    """NumPy/Numba implementation; storage ``nbr[i, k]`` (row-major)."""

    list_kernel = "auto"        # NeighborList.list_kernel: kept, not used (the CPU has one list builder)

    def displacement_exceeds(self, state, limit2) -> bool:
        L = np.asarray(state.box_lengths)
        return _max_displacement2_cpu(state.positions, state.positions_at_build, L, 1.0 / L) > limit2

    def wrap(self, state) -> None:
        wrap_positions_cpu(state.positions, state.images, np.asarray(state.box_lengths, dtype=np.float64))

    def build(self, state, n_cells, r_list, capacity, nl):
        L = np.asarray(state.box_lengths, dtype=np.float64)
        self.wrap(state)
        n = state.n_atoms
        keys = cell_index(state.positions, L, n_cells)
        sort = counting_sort(keys, int(np.prod(n_cells)))
        if nl.reorder:
            sort = sorted_identity(state, keys, sort, nl)
        if nl.nbr is None or nl.nbr.shape != (n, capacity):
            nl.nbr = np.empty((n, capacity), np.int32)
            nl.nbr_count = np.empty(n, np.int32)
        if not nl.half:
            nl.nbr_plain = None
            max_count, min_r2 = build_list_cpu(state.positions, keys, sort.bin_start, sort.order,
                                           n_cells, L, 1.0 / L, r_list * r_list, nl.nbr, nl.nbr_count)
        else:
            if nl.nbr_plain is None or nl.nbr_plain.shape != (n,):
                nl.nbr_plain = np.empty(n, np.int32)
            max_count, min_r2 = build_list_cpu(state.positions, keys, sort.bin_start, sort.order, n_cells, L,
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


__all__ = ["CpuListBuilder", "build_list_cpu", "displacement2_atom", "sorted_identity", "wrap_atom", "wrap_positions_cpu"]
