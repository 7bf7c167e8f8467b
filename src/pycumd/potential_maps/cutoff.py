"""Cutoff summation: each lattice point gathers ``q S(r)`` from the atoms within the cutoff.

Atoms are hashed into cubic bins with the project's counting sort
(:func:`pycumd.neighbors.counting_sort.cell_index` and
:func:`~pycumd.neighbors.counting_sort.counting_sort`); the bins of one (y, z) row are then one
contiguous run of the sorted atoms.  A block of 8 x 8 x 16 lattice points (CPU: 8 x 8 x 8) (the GPU kernel
``cutoff.cu``; the CPU path loops over the same regions with Numba) gathers every row within reach,
so a crowded bin is a longer run and nothing is dropped or sent elsewhere.

Kernels ``S(r)`` (``r < c``, zero beyond):

``shifted``
    ``(1 - r^2/c^2)^2 / r``: Coulomb smoothly switched to zero at ``c`` (value and slope), the
    seed's smoothing; a stand-alone short-range map.
``msm``
    ``1/r - gamma(r/c)/c`` with ``gamma(p) = 15/8 - 5/4 p^2 + 3/8 p^4``: the short-range part of
    multilevel summation (:mod:`pycumd.potential_maps.msm`).
"""

from __future__ import annotations

import numba
import numpy as np

from pycumd.backend import select
from pycumd.neighbors.counting_sort import cell_index, counting_sort
from pycumd.potential_maps.direct import PRECISIONS, atoms_relative, split_hi_lo
from pycumd.potential_maps.lattice import Lattice
from pycumd.system import InputError

__all__ = ["cutoff_sum", "SPLITS", "periodic_images"]

SPLITS = {"shifted": 0, "msm": 1}
#: GPU: lattice points per thread along z (the block's region is 8 x 8 x 2 ZU points)
Z_PER_THREAD = 4


def periodic_images(atoms: np.ndarray, box_lengths, reach: float) -> np.ndarray:
    """Atoms (N, 4) rows (x, y, z, q) wrapped into ``[0, L)`` plus their periodic images that lie
    within ``reach`` of that box (the ghosts a cutoff sum over the box needs)."""
    lengths = np.asarray(box_lengths, dtype=np.float64)
    if np.any(reach > lengths):
        raise InputError(f"cutoff {reach} A exceeds the periodic box {tuple(lengths)}: use a smaller cutoff")
    wrapped = atoms.copy()
    wrapped[:, :3] -= np.floor(wrapped[:, :3] / lengths) * lengths
    parts = []
    for sx in (-1, 0, 1):
        for sy in (-1, 0, 1):
            for sz in (-1, 0, 1):
                shifted = wrapped.copy()
                shifted[:, :3] += np.array([sx, sy, sz]) * lengths
                inside = np.all((shifted[:, :3] >= -reach) & (shifted[:, :3] < lengths + reach), axis=1)
                parts.append(shifted[inside])
    return np.concatenate(parts)


def _bins(atoms, lattice: Lattice, cutoff: float, bin_size: float, backend):
    """Sort the atoms (rows relative to the map origin) into bins covering the map plus the cutoff.

    Returns ``(sorted atoms (M, 4) float64, bin_start, bin origin (3,), bins per dim)``, arrays on the
    backend (the GPU does the filtering, binning and gathering); atoms farther than the cutoff from
    the map's bounding box are left out (they add nothing).
    """
    xp = backend.xp
    extent = (np.asarray(lattice.shape) - 1) * np.asarray(lattice.spacing)
    origin = -np.full(3, cutoff) - 0.5 * bin_size
    n_bins = np.ceil((extent + 2 * cutoff + bin_size) / bin_size).astype(np.int64) + 1
    if int(np.prod(n_bins)) >= 2**31 - 1:
        raise InputError(f"{int(np.prod(n_bins))} bins: use a larger bin size for this map")
    atoms = backend.asarray(atoms)
    rel = atoms[:, :3] - xp.asarray(origin)
    inside = xp.all((rel >= 0) & (rel < xp.asarray(n_bins * bin_size)), axis=1)
    atoms, rel = atoms[inside], xp.ascontiguousarray(rel[inside])
    keys = cell_index(rel, n_bins * bin_size, n_bins)
    result = counting_sort(keys, int(np.prod(n_bins)), backend=backend)
    return xp.take(atoms, result.order, axis=0), result.bin_start, origin, n_bins


@numba.njit(parallel=True, cache=True)
def _cutoff_cpu(atoms, lo, bin_start, nb, bin_origin, bin_size, nx, ny, nz, h, cutoff, split, out, consts):
    # the regions and row gathers of cutoff.cu; terms in the dtype of ``atoms`` (consts: c^2, 1/c^2,
    # 1/c, 1, 15/8, -5/4, 3/8 in that dtype)
    rx, ry, rz = 8, 8, 8
    gx, gy, gz = -(-nx // rx), -(-ny // ry), -(-nz // rz)
    c2, inv_c2, inv_c, one = consts[0], consts[1], consts[2], consts[3]
    g0, g2, g4 = consts[4], consts[5], consts[6]
    for region in numba.prange(gx * gy * gz):
        i0 = (region % gx) * rx
        j0 = ((region // gx) % gy) * ry
        k0 = (region // (gx * gy)) * rz
        offsets = np.empty((3, 8), atoms.dtype)     # point coordinates relative to the region corner
        corner_hi = np.empty(3, atoms.dtype)
        corner_lo = np.empty(3, atoms.dtype)
        lo_b = np.empty(3, np.int64)
        hi_b = np.empty(3, np.int64)
        ext = np.empty(3)
        corner = np.empty(3)
        corner[0], corner[1], corner[2] = i0 * h[0], j0 * h[1], k0 * h[2]
        for d in range(3):
            for t in range(8):
                offsets[d, t] = t * h[d]
            corner_hi[d] = corner[d]
            corner_lo[d] = corner[d] - np.float64(corner_hi[d])
            ext[d] = 7 * h[d]
            lo_b[d] = max(0, int(np.floor((corner[d] - cutoff - bin_origin[d]) / bin_size)))
            hi_b[d] = min(nb[d] - 1, int(np.floor((corner[d] + ext[d] + cutoff - bin_origin[d]) / bin_size)))
        s = np.zeros((rz, ry, rx), atoms.dtype)
        c = np.zeros((rz, ry, rx), atoms.dtype)
        acc = np.zeros((rz, ry, rx), atoms.dtype)
        for bz in range(lo_b[2], hi_b[2] + 1):
            zlo = bin_origin[2] + bz * bin_size - corner[2]
            dzg = max(0.0, max(zlo - ext[2], -(zlo + bin_size)))
            for by in range(lo_b[1], hi_b[1] + 1):
                ylo = bin_origin[1] + by * bin_size - corner[1]
                dyg = max(0.0, max(ylo - ext[1], -(ylo + bin_size)))
                if dyg * dyg + dzg * dzg >= cutoff * cutoff:
                    continue
                row = nb[0] * (by + nb[1] * bz)
                for a in range(bin_start[row + lo_b[0]], bin_start[row + hi_b[0] + 1]):
                    ax = (atoms[a, 0] - corner_hi[0]) + (lo[a, 0] - corner_lo[0])
                    ay = (atoms[a, 1] - corner_hi[1]) + (lo[a, 1] - corner_lo[1])
                    az = (atoms[a, 2] - corner_hi[2]) + (lo[a, 2] - corner_lo[2])
                    q = atoms[a, 3]
                    for kk in range(rz):
                        dz = offsets[2, kk] - az
                        for jj in range(ry):
                            dy = offsets[1, jj] - ay
                            dyz2 = dy * dy + dz * dz
                            if dyz2 >= c2:
                                continue
                            for ii in range(rx):
                                dx = offsets[0, ii] - ax
                                r2 = dx * dx + dyz2
                                if r2 < c2:
                                    p2 = r2 * inv_c2
                                    if split == 0:
                                        t = one - p2
                                        acc[kk, jj, ii] += q * (t * t / np.sqrt(r2))
                                    else:
                                        acc[kk, jj, ii] += q * (one / np.sqrt(r2) - inv_c * (g0 + p2 * (g2 + p2 * g4)))
                for kk in range(rz):
                    for jj in range(ry):
                        for ii in range(rx):
                            t = acc[kk, jj, ii]
                            total = s[kk, jj, ii] + t
                            bp = total - s[kk, jj, ii]
                            c[kk, jj, ii] += (s[kk, jj, ii] - (total - bp)) + (t - bp)
                            s[kk, jj, ii] = total
                            acc[kk, jj, ii] = 0
        for kk in range(rz):
            for jj in range(ry):
                for ii in range(rx):
                    i, j, k = i0 + ii, j0 + jj, k0 + kk
                    if i < nx and j < ny and k < nz:
                        out[k, j, i] = s[kk, jj, ii] + c[kk, jj, ii]


def cutoff_sum(positions, charges, lattice: Lattice, cutoff: float = 12.0, *, split: str = "shifted",
               backend="auto", precision: str = "single", bin_size: float | None = None,
               periodic_box=None, to_host: bool = True, _atoms=None):
    """Cutoff summation of ``sum_{r_a < c} q_a S(r_a)`` on a lattice.

    Parameters
    ----------
    positions : array, shape (N, 3)
        Atom positions, Angstrom.
    charges : array, shape (N,)
        Charges, elementary charges.
    lattice : Lattice
    cutoff : float
        ``c``, Angstrom, > 0.
    split : {"shifted", "msm"}
        The kernel ``S`` (module docstring).
    backend : {"auto", "cpu", "cuda"} or Backend
    precision : {"single", "double"}
        ``single``: float32 terms, per-row float partials added with TwoSum; ``double``: float64.
    bin_size : float, optional
        Bin edge, Angstrom; default ``max(cutoff / 3, 2)``.
    periodic_box : sequence of 3 floats, optional
        Box lengths of a periodic system whose box starts at the map origin: atoms are wrapped
        into it and their images within the cutoff of it are added.
    to_host : bool
        False: return the backend's array (a CuPy array stays on the GPU).

    Returns
    -------
    numpy.ndarray, shape (nz, ny, nx), float32 (single) or float64 (double)
        e/Angstrom, x fastest.
    """
    if not cutoff > 0:
        raise InputError(f"--cutoff must be positive, got {cutoff}")
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: choose one of {', '.join(SPLITS)}")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    backend = select(backend)
    bin_size = float(bin_size or max(cutoff / 3.0, 2.0))
    atoms = atoms_relative(positions, charges, lattice.origin) if _atoms is None else _atoms
    if periodic_box is not None:
        atoms = periodic_images(atoms, periodic_box, cutoff)
    nx, ny, nz = lattice.shape
    dtype = np.float32 if precision == "single" else np.float64
    out = np.zeros((nz, ny, nx), dtype=dtype)
    atoms, bin_start, bin_origin, n_bins = _bins(atoms, lattice, cutoff, bin_size, backend)
    if len(atoms) == 0:
        return out if to_host else backend.asarray(out)
    h = np.asarray(lattice.spacing, dtype=np.float64)
    if not backend.is_gpu:
        if precision == "single":
            hi, lo = split_hi_lo(atoms)
        else:
            hi, lo = atoms, np.zeros_like(atoms)
        consts = np.array([cutoff * cutoff, 1.0 / cutoff**2, 1.0 / cutoff, 1.0, 1.875, -1.25, 0.375], dtype=dtype)
        _cutoff_cpu(hi, lo, np.asarray(bin_start), n_bins, bin_origin, bin_size, nx, ny, nz, h, float(cutoff),
                    SPLITS[split], out, consts)
        return out
    cp = backend.xp
    module = backend.kernel_module("potential_maps/cutoff.cu", defines={"SPLIT": SPLITS[split], "ZU": Z_PER_THREAD})
    out_dev = cp.empty((nz, ny, nx), dtype=dtype)
    grid = tuple(-(-n // r) for n, r in zip(lattice.shape, (8, 8, 2 * Z_PER_THREAD)))
    geometry = (bin_start, np.int32(n_bins[0]), np.int32(n_bins[1]), np.int32(n_bins[2]),
                *(np.float64(v) for v in bin_origin), np.float64(bin_size), out_dev,
                np.int32(nx), np.int32(ny), np.int32(nz), *(np.float64(v) for v in h), np.float64(cutoff))
    if precision == "single":
        hi, lo = split_hi_lo(atoms)
        module.get_function("cutoff_single")(grid, (8, 8, 2), (hi, lo, *geometry))
    else:
        module.get_function("cutoff_double")(grid, (8, 8, 2), (cp.ascontiguousarray(atoms), *geometry))
    return out_dev.get() if to_host else out_dev
