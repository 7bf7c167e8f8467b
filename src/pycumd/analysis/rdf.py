"""Radial distribution function g(r) over the cell list of the engine's counting sort.

Atoms are binned into cells of edge >= ``r_max`` with :func:`~pycumd.neighbors.counting_sort.cell_index`
and :func:`~pycumd.neighbors.counting_sort.counting_sort` (the one binning mechanism of pycumd); each
atom then visits the 27 (fewer in small boxes) surrounding cells and histograms its distances below
``r_max`` (CPU: Numba, :func:`_histogram_cpu`; GPU: ``rdf.cu``).  The cost is O(N) per frame.

``g(r_k) = V / (N (N - 1)) * n_k / (4/3 pi (r_{k+1}^3 - r_k^3))``, averaged over frames, where
``n_k`` counts ordered pairs (i != j) in bin k: g tends to 1 at large r for any N (freud's
``normalization_mode="finite_size"``).
"""

from __future__ import annotations

import numba
import numpy as np

from ..backend import array_backend, select
from ..neighbors.counting_sort import cell_index, counting_sort
from ..precision import c_type_name

__all__ = ["RDF", "lammps_rdf", "rdf"]

BLOCK = 128
#: most bins of the GPU kernel's block histogram (4 bytes each in shared memory)
GPU_MAX_BINS = 8192


@numba.njit(inline="always")
def _stencil(n):
    return -min(1, (n - 1) // 2), min(1, n // 2)


@numba.njit(parallel=True, cache=True)
def _histogram_cpu(positions, keys, cell_start, cell_order, cells, L, r_max2, inv_dr, bins, n_chunks):
    """CPU twin of the ``rdf_histogram`` kernel: counts per bin (int64), chunks summed at the end."""
    n = positions.shape[0]
    nx, ny, nz = cells[0], cells[1], cells[2]
    partial = np.zeros((n_chunks, bins), np.int64)
    lox, hix = _stencil(nx)
    loy, hiy = _stencil(ny)
    loz, hiz = _stencil(nz)
    for chunk in numba.prange(n_chunks):
        for i in range(chunk, n, n_chunks):
            xi, yi, zi = positions[i, 0], positions[i, 1], positions[i, 2]
            c = keys[i]
            cx, cy, cz = c % nx, (c // nx) % ny, c // (nx * ny)
            for dz in range(loz, hiz + 1):
                z = (cz + dz) % nz
                for dy in range(loy, hiy + 1):
                    y = (cy + dy) % ny
                    for dx in range(lox, hix + 1):
                        cell = (z * ny + y) * nx + (cx + dx) % nx
                        for s in range(cell_start[cell], cell_start[cell + 1]):
                            j = cell_order[s]
                            if j == i:
                                continue
                            ddx = xi - positions[j, 0]
                            ddy = yi - positions[j, 1]
                            ddz = zi - positions[j, 2]
                            ddx -= L[0] * np.rint(ddx / L[0])
                            ddy -= L[1] * np.rint(ddy / L[1])
                            ddz -= L[2] * np.rint(ddz / L[2])
                            r2 = ddx * ddx + ddy * ddy + ddz * ddz
                            if r2 < r_max2:
                                partial[chunk, min(int(np.sqrt(r2) * inv_dr), bins - 1)] += 1
    return partial.sum(axis=0)


def pair_distance_histogram(positions, box_lengths, r_max: float, bins: int):
    """Counts of ordered pairs (i != j) per distance bin ``[k dr, (k+1) dr)``, ``dr = r_max / bins``.

    Parameters
    ----------
    positions : numpy or cupy array, (N, 3) or (N, 4) float32/float64
        Positions (length units); any periodic image (they are wrapped for binning, and distances
        use the minimum image).  The backend is the array's.
    box_lengths : (3,) floats, each >= 2 ``r_max``
    r_max : float
    bins : int

    Returns
    -------
    numpy.ndarray (bins,) int64
    """
    backend = array_backend(positions)
    L = np.asarray(box_lengths, dtype=np.float64)
    if r_max <= 0 or bins < 1:
        raise ValueError(f"rdf needs r_max > 0 and bins >= 1, got r_max={r_max}, bins={bins}")
    if np.any(L < 2.0 * r_max):
        raise ValueError(f"rdf r_max = {r_max:g} is more than half the box ({' x '.join(f'{x:g}' for x in L)}): "
                         f"use r_max <= {0.5 * L.min():g}")
    cells = np.clip(np.floor(L / r_max).astype(np.int64), 1, 1024)
    keys = cell_index(positions, L, cells)
    sort = counting_sort(keys, int(np.prod(cells)), backend)
    n = positions.shape[0]
    inv_dr = 1.0 / (r_max / bins)        # LAMMPS' delrinv = 1/delr: the same bin for every distance
    if not backend.is_gpu:
        pos = np.ascontiguousarray(positions[:, :3], dtype=np.float64)
        chunks = max(1, min(n, 4 * numba.get_num_threads()))
        return _histogram_cpu(pos, keys, sort.bin_start, sort.order, cells.astype(np.int64), L,
                              r_max * r_max, inv_dr, bins, chunks)
    if bins > GPU_MAX_BINS:
        raise ValueError(f"rdf on the GPU takes at most {GPU_MAX_BINS} bins (a block histogram in shared "
                         f"memory), got {bins}")
    cp = backend.xp
    positions = cp.ascontiguousarray(positions)
    real = positions.dtype.type
    kernel = backend.kernel_module("analysis/rdf.cu", {"real_t": c_type_name(real)}).get_function("rdf_histogram")
    hist = cp.zeros(bins, np.uint64)
    kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,),
           (positions, np.int32(positions.shape[1]), np.int32(n), keys, sort.bin_start, sort.order,
            *[np.int32(c) for c in cells], *[real(x) for x in L], real(r_max * r_max), real(inv_dr),
            np.int32(bins), hist), shared_mem=4 * bins)
    return hist.get().astype(np.int64)


def lammps_rdf(positions, box_lengths, cutoff: float, bins: int, types=None, pairs=None) -> np.ndarray:
    """LAMMPS ``compute rdf`` of one frame (``ComputeRDF::compute_array``): its global array, shape
    (bins, 1 + 2 P), columns bin centre ``(k + 1/2) dr`` with ``dr = cutoff / bins``, then per type
    pair g(r) and the coordination number (the running sum of ``g vfrac normfac``).

    For the atoms of types I (``icount``) around those of types J (``jcount``, ``duplicates`` of them
    in both): ``g_k = n_k / (vfrac_k normfac icount)``, ``normfac = jcount - duplicates / icount``,
    ``vfrac_k = 4 pi / (3 V) ((k+1)^3 - k^3) dr^3``, ``n_k`` the ordered pairs (i in I, j in J,
    i != j) in bin k (:func:`pair_distance_histogram`: the same bins as LAMMPS).

    positions : (N, 3 or 4) on either backend; types : (N,) 0-based, on the same backend (with
    ``pairs``); pairs : sequence of ``((ilo, ihi), (jlo, jhi))`` 0-based inclusive type ranges
    (None: all atoms with all atoms).
    """
    L = np.asarray(box_lengths, dtype=np.float64)
    n = positions.shape[0]

    def histogram(mask):
        if mask is None:
            return pair_distance_histogram(positions, L, cutoff, bins) if n >= 2 else np.zeros(bins, np.int64)
        if int(mask.sum()) < 2:
            return np.zeros(bins, np.int64)
        return pair_distance_histogram(positions[mask], L, cutoff, bins)

    if pairs is None:
        columns = [(histogram(None), n, n, n)]
    else:
        columns = []
        for (ilo, ihi), (jlo, jhi) in pairs:
            a = (types >= ilo) & (types <= ihi)
            b = (types >= jlo) & (types <= jhi)
            columns.append((_ordered_pair_counts(histogram, a, b), int(a.sum()), int(b.sum()), int((a & b).sum())))
    dr = cutoff / bins
    constant = 4.0 * np.pi / (3.0 * L[0] * L[1] * L[2])
    table = np.zeros((bins, 1 + 2 * len(columns)))
    table[:, 0] = (np.arange(bins) + 0.5) * dr
    for m, (counts, icount, jcount, duplicates) in enumerate(columns):
        normfac = jcount - duplicates / icount if icount > 0 else 0.0
        ncoord = 0.0
        for k in range(bins):
            lower, upper = k * dr, (k + 1) * dr
            vfrac = constant * (upper * upper * upper - lower * lower * lower)
            g = counts[k] / (vfrac * normfac * icount) if vfrac * normfac != 0.0 else 0.0
            if icount:
                ncoord += g * vfrac * normfac
            table[k, 1 + 2 * m], table[k, 2 + 2 * m] = g, ncoord
    return table


def _ordered_pair_counts(histogram, a, b) -> np.ndarray:
    """Ordered pairs (i in A, j in B, i != j) per bin from histograms of pairs within one set:
    with X = A - B, Y = B - A, C = A & B, the pairs are X->Y, X->C, C->Y and within C, and between two
    disjoint sets P, Q there are ``(h(P | Q) - h(P) - h(Q)) / 2``."""
    c, x, y = a & b, a & ~b, b & ~a

    def between(p, q):
        if not bool(p.any()) or not bool(q.any()):
            return 0
        return (histogram(p | q) - histogram(p) - histogram(q)) // 2

    return between(x, y) + between(x, c) + between(c, y) + histogram(c)


class RDF:
    """g(r) accumulated over frames (freud-like: :meth:`compute` returns ``self``).

    Parameters
    ----------
    r_max : float
        Largest distance (length units), at most half the shortest box edge.
    bins : int
        Number of bins of width ``r_max / bins``.

    Attributes
    ----------
    r : (bins,) bin centres (length units)
    bin_edges : (bins + 1,)
    rdf : (bins,) g(r), averaged over the frames computed (raises before the first)
    n_frames : int
    """

    def __init__(self, r_max: float, bins: int = 200):
        if r_max <= 0 or int(bins) < 1:
            raise ValueError(f"rdf needs r_max > 0 and bins >= 1, got r_max={r_max}, bins={bins}")
        self.r_max, self.bins = float(r_max), int(bins)
        self.bin_edges = np.linspace(0.0, self.r_max, self.bins + 1)
        self.r = 0.5 * (self.bin_edges[1:] + self.bin_edges[:-1])
        self._shell = 4.0 / 3.0 * np.pi * np.diff(self.bin_edges**3)
        self._sum = np.zeros(self.bins)
        self.n_frames = 0

    def compute(self, positions, box_lengths) -> "RDF":
        """Add one frame: ``positions`` (N, 3 or 4) on either backend, ``box_lengths`` (3,)."""
        n = positions.shape[0]
        if n < 2:
            raise ValueError(f"rdf needs at least 2 atoms, got {n}")
        counts = pair_distance_histogram(positions, box_lengths, self.r_max, self.bins)
        volume = float(np.prod(box_lengths))
        self._sum += counts * volume / (n * (n - 1.0) * self._shell)
        self.n_frames += 1
        return self

    @property
    def rdf(self) -> np.ndarray:
        if self.n_frames == 0:
            raise ValueError("g(r) not computed yet: call compute() on at least one frame")
        return self._sum / self.n_frames

    def table(self) -> dict:
        """Columns for CSV output: ``r``, ``g``."""
        return {"r": self.r, "g": self.rdf}


def rdf(path, r_max: float, bins: int = 200, start: int = 0, stop: int | None = None, stride: int = 1,
        device: str = "cpu") -> RDF:
    """g(r) averaged over the frames ``start:stop:stride`` of a trajectory file (GSD, XYZ, dump).

    ``device``: ``"cpu"``, ``"cuda"`` or ``"auto"`` (where the histograms are computed).
    """
    from .trajectory import read_trajectory

    backend = select(device)
    result = RDF(r_max, bins)
    for frame in read_trajectory(path, start, stop, stride):
        result.compute(backend.asarray(frame.positions), frame.lengths)
    if result.n_frames == 0:
        raise ValueError(f"{path}: no frames in the selection {start}:{stop}:{stride}")
    return result
