"""Direct Coulomb summation (DCS): every atom's ``q / r`` at every lattice point.

``V(r_ijk) = sum_a q_a / |r_ijk - r_a|`` (e/Angstrom), ``O(N_atoms * N_points)``.  The GPU kernel
(``direct.cu``) is the seed's version 4 taken further: lattice coordinates computed on the fly,
``UNROLL`` points per thread along x spaced one block width apart (coalesced stores), atoms staged
through shared memory in tiles of 128 (any atom count), one ``rsqrtf`` per evaluation, float partial
sums over 32 atoms added into a compensated (TwoSum) float pair.  Atom and lattice coordinates are
float hi + lo pairs (each lattice point's own, split in float64), so each distance component is
``(x_hi - a_hi) + (x_lo - a_lo)``: as exact as its float rounding.  Where every lattice x coordinate
``i * hx`` is itself a float (``hx`` = 0.5, 0.25, 1, ...) the kernel is built with ``EXACT_X=1`` and
skips the zero ``x_lo`` (one add fewer per evaluation, the same result).  The CPU path
(Numba) runs the same summation: float32 terms, per-tile partials, TwoSum; ``precision="double"``
sums in float64 on either backend (the reference).

A map's z slices can be split over several GPUs (the seed's multi-GPU DCS): ``devices=[0, 1, ...]``
gives each device a contiguous range of slices (:func:`~pycumd.potential_maps.lattice.z_slabs`),
launched on all devices before any result is collected.
"""

from __future__ import annotations

import numba
import numpy as np

from pycumd.backend import select
from pycumd.potential_maps.lattice import Lattice, z_slabs

__all__ = ["direct_sum", "PRECISIONS", "atoms_relative", "split_hi_lo"]

PRECISIONS = ("single", "double")
TILE = 128          # atoms per shared-memory tile (BX * BY of direct.cu)
SUBTILE = 32        # atoms per float partial sum before its TwoSum into the compensated total
BLOCK_X, BLOCK_Y = 16, 8


def atoms_relative(positions, charges, origin) -> np.ndarray:
    """Atoms as rows (x, y, z, q), coordinates relative to ``origin``, float64, shape (N, 4);
    atoms of zero charge are left out (they add nothing)."""
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    charges = np.asarray(charges, dtype=np.float64).reshape(-1)
    keep = charges != 0.0
    atoms = np.empty((int(keep.sum()), 4))
    atoms[:, :3] = positions[keep] - np.asarray(origin, dtype=np.float64)
    atoms[:, 3] = charges[keep]
    return atoms


def split_hi_lo(atoms):
    """Float pairs of (N, 4) float64 atom rows (NumPy or CuPy): ``hi = float32(x)``, ``lo = float32(x - hi)``
    for the coordinates; the charge rides in ``hi[:, 3]`` (``lo[:, 3] = 0``).  Both (N, 4) float32."""
    hi = atoms.astype(np.float32)
    lo = hi * 0
    lo[:, :3] = (atoms[:, :3] - hi[:, :3].astype(np.float64)).astype(np.float32)
    return hi, lo


# --------------------------------------------------------------------------- CPU


@numba.njit(cache=True, inline="always")
def _two_sum_add(s, c, i, t):
    total = s[i] + t
    bp = total - s[i]
    c[i] += (s[i] - (total - bp)) + (t - bp)
    s[i] = total


@numba.njit(parallel=True, cache=True)
def _dcs_single_cpu(hi, lo, nx, ny, z_first, nz, hx, hy, hz, out):
    n = hi.shape[0]
    x_hi = np.empty(nx, np.float32)
    x_lo = np.empty(nx, np.float32)
    for i in range(nx):
        xd = i * hx
        x_hi[i] = np.float32(xd)
        x_lo[i] = np.float32(xd - np.float64(x_hi[i]))
    for row in numba.prange(nz * ny):
        kz = row // ny
        j = row - kz * ny
        yd = j * hy
        zd = (z_first + kz) * hz
        y_hi = np.float32(yd)
        y_lo = np.float32(yd - np.float64(y_hi))
        z_hi = np.float32(zd)
        z_lo = np.float32(zd - np.float64(z_hi))
        acc = np.zeros(nx, np.float32)
        s = np.zeros(nx, np.float32)
        c = np.zeros(nx, np.float32)
        for base in range(0, n, SUBTILE):
            for a in range(base, min(base + SUBTILE, n)):
                dy = (y_hi - hi[a, 1]) + (y_lo - lo[a, 1])
                dz = (z_hi - hi[a, 2]) + (z_lo - lo[a, 2])
                dyz2 = dy * dy + dz * dz
                q = hi[a, 3]
                for i in range(nx):
                    dx = (x_hi[i] - hi[a, 0]) + (x_lo[i] - lo[a, 0])
                    acc[i] += q / np.sqrt(dx * dx + dyz2)
            for i in range(nx):
                _two_sum_add(s, c, i, acc[i])
                acc[i] = np.float32(0.0)
        for i in range(nx):
            out[kz, j, i] = s[i] + c[i]


@numba.njit(parallel=True, cache=True)
def _dcs_double_cpu(atoms, nx, ny, z_first, nz, hx, hy, hz, out):
    n = atoms.shape[0]
    for row in numba.prange(nz * ny):
        kz = row // ny
        j = row - kz * ny
        y = j * hy
        z = (z_first + kz) * hz
        acc = np.zeros(nx)
        for a in range(n):
            dy = y - atoms[a, 1]
            dz = z - atoms[a, 2]
            dyz2 = dy * dy + dz * dz
            q = atoms[a, 3]
            for i in range(nx):
                dx = i * hx - atoms[a, 0]
                acc[i] += q / np.sqrt(dx * dx + dyz2)
        for i in range(nx):
            out[kz, j, i] = acc[i]


# --------------------------------------------------------------------------- GPU


def _unroll_for(nx: int) -> int:
    """Points per thread along x: 8, or 4 where 8 would pad the row with more idle points."""
    waste = {u: -(-nx // (BLOCK_X * u)) * BLOCK_X * u - nx for u in (8, 4)}
    return 8 if waste[8] <= waste[4] else 4


#: GPU single precision: refine rsqrtf with one Newton step (see direct.cu)
RSQRT_NEWTON = 0


def exact_x(nx: int, hx: float) -> bool:
    """True when every lattice x coordinate ``i * hx`` (relative to the origin, i < nx, float64 as the
    kernel forms it) is a float32, so its lo part is zero (direct.cu's ``EXACT_X``)."""
    xs = np.arange(nx) * np.float64(hx)
    return bool(np.array_equal(xs.astype(np.float32).astype(np.float64), xs))


def _launch_gpu(backend, atoms_dev, n_atoms, out_dev, lattice, z_first, z_count, precision, newton=None,
                exact=None):
    nx, ny = lattice.shape[0], lattice.shape[1]
    unroll = _unroll_for(nx)
    newton = RSQRT_NEWTON if newton is None else int(newton)
    exact = exact_x(nx, lattice.spacing[0]) if exact is None else bool(exact)
    module = backend.kernel_module("potential_maps/direct.cu", defines={
        "UNROLL": unroll, "RSQRT_NEWTON": newton, "EXACT_X": int(exact and precision == "single")})
    grid = (-(-nx // (BLOCK_X * unroll)), -(-ny // BLOCK_Y), z_count)
    hx, hy, hz = (np.float64(h) for h in lattice.spacing)
    if precision == "single":
        hi, lo = atoms_dev
        module.get_function("dcs_single")(grid, (BLOCK_X, BLOCK_Y), (
            hi, lo, np.int32(n_atoms), out_dev, np.int32(nx), np.int32(ny), np.int32(z_first), hx, hy, hz))
    else:
        module.get_function("dcs_double")(grid, (BLOCK_X, BLOCK_Y), (
            atoms_dev, np.int32(n_atoms), out_dev, np.int32(nx), np.int32(ny), np.int32(z_first), hx, hy, hz))


def direct_sum(positions, charges, lattice: Lattice, *, backend="auto", precision: str = "single",
               devices=None) -> np.ndarray:
    """Direct Coulomb summation of ``sum_a q_a / r`` on a lattice.

    Parameters
    ----------
    positions : array, shape (N, 3)
        Atom positions, Angstrom.
    charges : array, shape (N,)
        Charges, elementary charges.
    lattice : Lattice
        Where to evaluate.
    backend : {"auto", "cpu", "cuda"} or Backend
    precision : {"single", "double"}
        ``single``: float32 evaluations with compensated accumulation; ``double``: float64 throughout.
    devices : sequence of int, optional
        GPU ids to split the z slices over (cuda backend only); default: the current device.  A
        device may be listed more than once (its slices then run as separate launches).

    Returns
    -------
    numpy.ndarray, shape (nz, ny, nx), float32 (single) or float64 (double)
        ``sum_a q_a / r`` in e/Angstrom, x fastest (``out[k, j, i]`` is point (i, j, k)).
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")
    backend = select(backend)
    atoms = atoms_relative(positions, charges, lattice.origin)
    nx, ny, nz = lattice.shape
    dtype = np.float32 if precision == "single" else np.float64
    out = np.zeros((nz, ny, nx), dtype=dtype)
    if len(atoms) == 0:
        return out
    hx, hy, hz = lattice.spacing
    if not backend.is_gpu:
        if precision == "single":
            hi, lo = split_hi_lo(atoms)
            _dcs_single_cpu(hi, lo, nx, ny, 0, nz, hx, hy, hz, out)
        else:
            _dcs_double_cpu(atoms, nx, ny, 0, nz, hx, hy, hz, out)
        return out
    cp = backend.xp
    devices = [cp.cuda.Device().id] if devices is None else list(devices)
    parts = []
    for device, (z_first, z_count) in zip(devices, z_slabs(nz, len(devices))):
        with cp.cuda.Device(device):
            host_rows = split_hi_lo(atoms) if precision == "single" else atoms
            atoms_dev = (tuple(cp.asarray(a) for a in host_rows) if precision == "single"
                         else cp.asarray(host_rows))
            slab = cp.empty((z_count, ny, nx), dtype=dtype)
            _launch_gpu(backend, atoms_dev, len(atoms), slab, lattice, z_first, z_count, precision)
            parts.append((device, z_first, z_count, slab))
    for device, z_first, z_count, slab in parts:
        with cp.cuda.Device(device):
            out[z_first:z_first + z_count] = slab.get()
    return out
