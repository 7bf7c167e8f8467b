"""Multilevel summation (MSM) of a potential map (Skeel, Tezcan, Hardy 2002; Hardy, Stone, Schulten 2009).

The Coulomb kernel is split with the smoothing ``g_a(r) = gamma(r/a)/a``,
``gamma(p) = 15/8 - 5/4 p^2 + 3/8 p^4`` for ``p < 1`` and ``1/p`` beyond (C2):

    1/r = [1/r - g_a(r)] + [g_a - g_2a] + [g_2a - g_4a] + ... + g_{2^(L-1) a}(r)

* **short range** ``1/r - g_a`` (zero beyond ``a``): summed exactly at every map point by the cutoff
  kernel (:func:`pycumd.potential_maps.cutoff.cutoff_sum`, ``split="msm"``);
* **anterpolation**: charges onto the level-1 grid of spacing ``h`` with the C1 cubic
  (Catmull-Rom) basis ``Phi``, 4 x 4 x 4 points per atom (GPU kernel ``kspace/msm.cu``; Numba on the CPU);
* **restriction** to grids of spacing ``2h, 4h, ...`` (the transpose of cubic interpolation,
  stencil ``(-1, 0, 9, 16, 9, 0, -1)/16`` per dimension);
* **lattice cutoff** at level ``l``: ``e_l = K_l * q_l`` with ``K_l(r) = g_{a_l}(r) - g_{2 a_l}(r)``,
  zero beyond ``2 a_l`` (``a_l = 2^(l-1) a``), evaluated as an FFT convolution in float64 (the
  same discrete sum as the stencil loop, at ``O(M log M)``);
* **top level** ``L``: ``g_{a_L}`` over all grid pairs (non-periodic), or for a periodic box the
  Ewald sum of ``g_{a_L}`` over all images with a neutralising background (tin-foil), so the map
  equals the Ewald potential of the periodic system up to the MSM approximation;
* **prolongation** back down (the transpose of restriction), and **interpolation** of the level-1
  potential to the map points with ``Phi`` (separable: three small dense matrix products).

The splitting, the basis, the anterpolation kernel and the grid operators are the shared MSM hierarchy
of :mod:`pycumd.kspace.multilevel` at order 4 (also behind ``kspace_style msm``); this module adds
the map's grids, the top level and the interpolation to map points.  Grids and their operators are
NumPy or CuPy arrays alike; only the anterpolation and the short-range part have kernels of their own.  The error against direct summation falls with ``h/a`` as the
cubic basis allows (``O((h/a)^4)`` for the smoothed parts); measured figures are in
docs/potential-maps.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from pycumd.backend import select
from pycumd.kspace import multilevel as ml
from pycumd.potential_maps.cutoff import cutoff_sum
from pycumd.potential_maps.direct import PRECISIONS, atoms_relative
from pycumd.potential_maps.lattice import Lattice
from pycumd.system import InputError

__all__ = ["msm_sum", "gamma", "cubic_basis", "MSMGrids"]


#: the order of the map's hierarchy: the C2 softening and the cubic (Catmull-Rom) basis
ORDER = 4


def gamma(p):
    """The C2 smoothing of ``1/p``: ``15/8 - 5/4 p^2 + 3/8 p^4`` for ``p < 1``, ``1/p`` beyond (float64)."""
    return ml.gamma(p, ORDER)


def cubic_basis(t):
    """The C1 cubic interpolation basis ``Phi(t)`` (Catmull-Rom; ``Phi(0) = 1``, ``Phi(+-1) = Phi(+-2) = 0``)."""
    return ml.phi(t, ORDER)


def _basis_matrix(s, lo: int, size: int, periodic: bool) -> np.ndarray:
    """Dense (len(s), size) interpolation weights ``W[i, m] = Phi(s_i - (lo + m))`` (wrapped mod size)."""
    s = np.asarray(s, dtype=np.float64)
    w = np.zeros((len(s), size))
    base = np.floor(s).astype(np.int64) - 1
    for t in range(4):
        idx = base + t
        weight = cubic_basis(s - idx)
        col = (idx - lo) % size if periodic else idx - lo
        np.add.at(w, (np.arange(len(s)), col), weight)
    return w


@dataclass
class MSMGrids:
    """The grid hierarchy: per level the first absolute index ``lo`` (3,) and size ``shape`` (3,);
    level ``l`` (0-based here) has spacing ``h * 2^l``; grid point ``m`` sits at ``O + m h_l``."""

    h: np.ndarray
    lo: list
    shape: list
    periodic: bool

    @property
    def levels(self) -> int:
        return len(self.shape)


def plan_grids(atoms, lattice: Lattice, h: float, cutoff: float, periodic_box=None, levels=None) -> MSMGrids:
    """Choose the level-1 spacing per dimension and the grid of every level.

    Non-periodic: grids cover the atoms and the map points with the 2-point margin of the cubic
    basis; levels are added until the coarsest grid has at most 32 points per dimension.  Periodic:
    ``M_1`` points per dimension, a multiple of ``2^(L-1)``, spacing ``L_d / M_1`` close to ``h``,
    the coarsest grid of 8 to 16 points per dimension.
    """
    if periodic_box is not None:
        lengths = np.asarray(periodic_box, dtype=np.float64)
        m1 = np.ceil(lengths / h).astype(int)
        n_levels = levels or 1 + max(0, int(math.floor(math.log2(max(1, m1.min() / 8)))))
        step = 2 ** (n_levels - 1)
        m1 = np.maximum(step, -(-m1 // step) * step)
        return MSMGrids(lengths / m1, [np.zeros(3, int)] * n_levels,
                        [m1 // 2 ** l for l in range(n_levels)], True)
    hv = np.full(3, float(h))
    extent = (np.asarray(lattice.shape) - 1) * np.asarray(lattice.spacing)
    s_min = np.minimum(atoms[:, :3].min(axis=0), 0.0) / hv
    s_max = np.maximum(atoms[:, :3].max(axis=0), extent) / hv
    lo = np.floor(s_min).astype(int) - 1
    hi = np.floor(s_max).astype(int) + 2
    los, shapes = [lo], [hi - lo + 1]
    while (levels is None and shapes[-1].max() > 32) or (levels is not None and len(shapes) < levels):
        lo = -((3 - lo) // 2)                        # ceil((lo - 3) / 2)
        hi = (hi + 3) // 2
        los.append(lo)
        shapes.append(hi - lo + 1)
    return MSMGrids(hv, los, shapes, False)


def _smooth(r, a):
    return ml.smooth(r, a, ORDER)


_offsets = ml.offset_lengths


def ewald_kernel(shape, lengths, a: float) -> np.ndarray:
    """Periodic top-level kernel on a grid of ``shape`` points over a box of ``lengths``:
    ``K(r) = sum_images g_a(|r + nL|)`` in the Ewald sense (neutralising background), shape ``shape``."""
    lengths = np.asarray(lengths, dtype=np.float64)
    volume = float(np.prod(lengths))
    beta = 3.0 / lengths.min()
    grids = [np.arange(m) * (ld / m) for m, ld in zip(shape, lengths)]
    r = np.stack(np.meshgrid(*grids, indexing="ij"), axis=-1)
    from scipy.special import erfc
    k_out = np.zeros(shape)
    n_img = max(2, int(math.ceil(a / lengths.min())) + 1)
    rng = range(-n_img, n_img + 1)
    for nx in rng:
        for ny in rng:
            for nz in rng:
                d = np.linalg.norm(r + np.array([nx, ny, nz]) * lengths, axis=-1)
                zero = d == 0
                ds = np.where(zero, 1.0, d)
                term = np.where(d < 1e-300, 0.0, erfc(beta * ds) / ds)
                short = np.where(d < a, 1.0 / ds - _smooth(ds, a), 0.0)
                term = np.where(zero, -2.0 * beta / math.sqrt(math.pi) + _smooth(0.0, a), term - short)
                k_out += term
    m_max = 10
    recip = np.zeros(shape, dtype=complex)
    ms = np.arange(-m_max, m_max + 1)
    kv = [2 * np.pi * ms / ld for ld in lengths]
    phase = [np.exp(1j * np.outer(k, g)) for k, g in zip(kv, grids)]      # (2m+1, M_d)
    kx, ky, kz = np.meshgrid(*kv, indexing="ij")
    k2 = kx * kx + ky * ky + kz * kz
    k2[m_max, m_max, m_max] = 1.0
    coef = 4 * np.pi / volume * np.exp(-k2 / (4 * beta * beta)) / k2
    coef[m_max, m_max, m_max] = 0.0
    recip = np.einsum("abc,ax,by,cz->xyz", coef, phase[0], phase[1], phase[2]).real
    return k_out + recip - np.pi / (beta * beta * volume)


def _anterpolate(backend, atoms, grids: MSMGrids):
    """Level-1 grid charges, array (Mz, My, Mx) float64 on the backend (``atoms``: (N, 4) x y z q)."""
    x = backend.xp.ascontiguousarray(backend.xp.asarray(atoms))
    return ml.anterpolate(backend, x, None, grids.lo[0], grids.shape[0], grids.h, grids.periodic, ORDER)


def long_range(atoms, lattice: Lattice, grids: MSMGrids, cutoff: float, backend, periodic_box=None,
               out=None, z_chunk: int = 64):
    """The interpolated long-range part ``sum_l`` of MSM at the map points, added into ``out``
    (nz, ny, nx), an array of the backend (float32 or float64); returns ``out``."""
    xp = backend.xp
    n_levels = grids.levels
    charges = [_anterpolate(backend, atoms, grids)]
    for l in range(1, n_levels):
        mats = [ml.restriction_matrix(grids.lo[l - 1][d], grids.shape[l - 1][d], grids.lo[l][d],
                                      grids.shape[l][d], grids.periodic, ORDER) for d in range(3)]
        charges.append(ml.apply_axes(xp, mats, charges[-1]))
    radius = [int(math.ceil(2 * cutoff / hd)) for hd in grids.h]
    base_kernel = ml.level_kernel(radius, grids.h, cutoff, ORDER)
    potentials = []
    for l in range(n_levels):
        scale = 2.0 ** l
        grid_zyx = charges[l]
        if l < n_levels - 1:
            kernel = base_kernel / scale
        elif grids.periodic:
            kernel = None
        else:
            top_radius = [int(m) - 1 for m in grids.shape[l]]
            kernel = _smooth(_offsets(top_radius, grids.h * scale), cutoff * scale)
        q_xyz = grid_zyx.transpose(2, 1, 0)
        if kernel is None:
            k_top = ewald_kernel(tuple(int(m) for m in grids.shape[l]), periodic_box, cutoff * scale)
            e = xp.fft.irfftn(xp.fft.rfftn(q_xyz) * xp.fft.rfftn(xp.asarray(k_top)), s=q_xyz.shape, axes=(0, 1, 2))
        else:
            e = ml.convolve(xp, q_xyz, kernel, grids.periodic)
        potentials.append(xp.ascontiguousarray(e.transpose(2, 1, 0)))
    for l in range(n_levels - 2, -1, -1):
        mats = [ml.restriction_matrix(grids.lo[l][d], grids.shape[l][d], grids.lo[l + 1][d],
                                      grids.shape[l + 1][d], grids.periodic, ORDER).T for d in range(3)]
        potentials[l] = potentials[l] + ml.apply_axes(xp, mats, potentials[l + 1])
    e1 = potentials[0]
    nx, ny, nz = lattice.shape
    mats = [_basis_matrix(np.arange(n) * lattice.spacing[d] / grids.h[d], grids.lo[0][d], grids.shape[0][d],
                          grids.periodic) for d, n in enumerate((nx, ny, nz))]
    # z slabs of the map at a time, so the float64 intermediate stays small
    wx, wy = xp.asarray(mats[0]), xp.asarray(mats[1])
    partial = xp.tensordot(e1, wx, axes=([2], [1]))                        # (c, b, x)
    partial = xp.tensordot(partial, wy, axes=([1], [1]))                   # (c, x, y)
    for z0 in range(0, nz, z_chunk):
        wz = xp.asarray(mats[2][z0:z0 + z_chunk])
        slab = xp.tensordot(wz, partial, axes=([1], [0]))                  # (z, x, y)
        slab = slab.transpose(0, 2, 1)
        out[z0:z0 + z_chunk] += slab.astype(out.dtype)
    return out


def msm_sum(positions, charges, lattice: Lattice, cutoff: float = 12.0, grid_spacing: float = 2.5, *,
            backend="auto", precision: str = "single", periodic_box=None, levels=None, to_host: bool = True):
    """Multilevel summation of ``sum_a q_a / r`` on a lattice.

    Parameters
    ----------
    positions : array, shape (N, 3)
        Atom positions, Angstrom.
    charges : array, shape (N,)
        Charges, elementary charges.
    lattice : Lattice
        The map; for a periodic box it must start at the box origin and span the box
        (:func:`~pycumd.potential_maps.lattice.periodic_lattice`).
    cutoff : float
        ``a``, the short-range cutoff, Angstrom.
    grid_spacing : float
        ``h``, the level-1 grid spacing, Angstrom (periodic: adjusted per dimension to divide the box).
    backend : {"auto", "cpu", "cuda"} or Backend
    precision : {"single", "double"}
        Of the short-range part (the grid part is float64 throughout).
    periodic_box : sequence of 3 floats, optional
        Box lengths of a periodic system; the map is then the Ewald (tin-foil) potential.
    levels : int, optional
        Number of grid levels (default: automatic).
    to_host : bool
        False: return the backend's array (a CuPy array stays on the GPU).

    Returns
    -------
    numpy.ndarray, shape (nz, ny, nx), float32 (single) or float64 (double)
        e/Angstrom, x fastest.
    """
    if not cutoff > 0 or not grid_spacing > 0:
        raise InputError(f"MSM needs a positive cutoff and grid spacing, got {cutoff} and {grid_spacing}")
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    backend = select(backend)
    atoms = atoms_relative(positions, charges, lattice.origin)
    if periodic_box is not None:
        lengths = np.asarray(periodic_box, dtype=np.float64)
        span = np.asarray(lattice.shape) * np.asarray(lattice.spacing)
        if not np.allclose(span, lengths, rtol=1e-9):
            raise InputError(f"a periodic MSM map must span the box {tuple(lengths)}, not {tuple(span)}")
        atoms[:, :3] -= np.floor(atoms[:, :3] / lengths) * lengths
    out = cutoff_sum(None, None, lattice, cutoff, split="msm", backend=backend, precision=precision,
                     periodic_box=periodic_box, to_host=False, _atoms=atoms)
    if len(atoms):
        grids = plan_grids(atoms, lattice, grid_spacing, cutoff, periodic_box, levels)
        long_range(atoms, lattice, grids, cutoff, backend, periodic_box, out=out)
    return backend.to_host(out) if to_host else out
