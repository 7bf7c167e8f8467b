"""The lattice a potential map lives on, its units, and how a map's z range is split over devices.

A map is the electrostatic potential ``V(r) = sum_j q_j / |r - r_j|`` (charges in elementary
charges, lengths in Angstrom) sampled at the points ``origin + (i hx, j hy, k hz)`` of a
rectilinear lattice of ``shape = (nx, ny, nz)`` points.  Kernels produce ``sum_j q_j / r`` in
e/Angstrom; :func:`unit_factor` converts to volts or to kT/e at 300 K.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pycumd.system import InputError

__all__ = ["Lattice", "lattice_around", "periodic_lattice", "unit_factor", "UNITS", "z_slabs",
           "COULOMB_VOLT_ANGSTROM", "KT_OVER_E_300K"]

#: e / (4 pi eps0 * 1 Angstrom) in volts (CODATA 2018 e and eps0)
COULOMB_VOLT_ANGSTROM = 1.602176634e-19 / (4.0 * np.pi * 8.8541878128e-12 * 1e-10)
#: k_B * 300 K / e in volts
KT_OVER_E_300K = 1.380649e-23 * 300.0 / 1.602176634e-19
#: output units: name -> factor applied to sum q/r (e/Angstrom)
UNITS = {"kT/e": COULOMB_VOLT_ANGSTROM / KT_OVER_E_300K, "V": COULOMB_VOLT_ANGSTROM, "e/A": 1.0}


def unit_factor(units: str) -> float:
    """Factor from ``sum_j q_j / r_j`` (e/Angstrom) to ``units``: ``kT/e`` (at 300 K, ~557.0),
    ``V`` (volts, ~14.40) or ``e/A`` (1)."""
    try:
        return UNITS[units]
    except KeyError:
        raise InputError(f"unknown potential units {units!r}: choose one of {', '.join(UNITS)}") from None


@dataclass(frozen=True)
class Lattice:
    """A rectilinear lattice of map points.

    Attributes
    ----------
    origin : tuple of 3 floats
        Position of point (0, 0, 0), Angstrom.
    spacing : tuple of 3 floats
        Point spacing (hx, hy, hz) along x, y, z, Angstrom, > 0.
    shape : tuple of 3 ints
        Number of points (nx, ny, nz), each >= 1.
    """

    origin: tuple
    spacing: tuple
    shape: tuple

    def __post_init__(self):
        origin = tuple(float(v) for v in np.broadcast_to(np.asarray(self.origin, float), 3))
        spacing = tuple(float(v) for v in np.broadcast_to(np.asarray(self.spacing, float), 3))
        shape = tuple(int(v) for v in np.broadcast_to(np.asarray(self.shape), 3))
        if not all(np.isfinite(origin)):
            raise InputError(f"lattice origin must be finite, got {origin}")
        if not all(h > 0 and np.isfinite(h) for h in spacing):
            raise InputError(f"lattice spacing must be positive, got {spacing}")
        if min(shape) < 1:
            raise InputError(f"lattice needs at least one point per dimension, got shape {shape}")
        object.__setattr__(self, "origin", origin)
        object.__setattr__(self, "spacing", spacing)
        object.__setattr__(self, "shape", shape)

    @property
    def n_points(self) -> int:
        return int(np.prod(self.shape))

    def axis(self, d: int) -> np.ndarray:
        """Coordinates (Angstrom) of the points along dimension ``d`` (0, 1, 2), float64."""
        return self.origin[d] + self.spacing[d] * np.arange(self.shape[d])

    def points(self) -> np.ndarray:
        """All point coordinates, shape (nx, ny, nz, 3), float64 (for small lattices and tests)."""
        grids = np.meshgrid(self.axis(0), self.axis(1), self.axis(2), indexing="ij")
        return np.stack(grids, axis=-1)

    def slab(self, z_first: int, z_count: int) -> "Lattice":
        """The sub-lattice of the ``z_count`` slices starting at slice ``z_first``."""
        if not (0 <= z_first and z_count >= 1 and z_first + z_count <= self.shape[2]):
            raise ValueError(f"slices [{z_first}, {z_first + z_count}) outside [0, {self.shape[2]})")
        origin = (self.origin[0], self.origin[1], self.origin[2] + z_first * self.spacing[2])
        return Lattice(origin, self.spacing, (self.shape[0], self.shape[1], z_count))


def lattice_around(positions, spacing: float = 0.5, padding: float = 10.0) -> Lattice:
    """The lattice of spacing ``spacing`` covering the atoms' bounding box plus ``padding``.

    Parameters
    ----------
    positions : array, shape (N, 3)
        Atom positions, Angstrom (N >= 1).
    spacing : float
        Point spacing, Angstrom, > 0.
    padding : float
        Margin added on each side of the bounding box, Angstrom, >= 0.

    Returns
    -------
    Lattice
        Origin at ``min(positions) - padding``; ``n = ceil(extent / spacing) + 1`` points per
        dimension, so the last point lies at or beyond ``max(positions) + padding``.
    """
    positions = np.asarray(positions, dtype=np.float64).reshape(-1, 3)
    if len(positions) == 0:
        raise InputError("cannot place a lattice around zero atoms")
    if not spacing > 0:
        raise InputError(f"--spacing must be positive, got {spacing}")
    if not padding >= 0:
        raise InputError(f"--padding must be >= 0, got {padding}")
    lo = positions.min(axis=0) - padding
    hi = positions.max(axis=0) + padding
    shape = np.ceil((hi - lo) / spacing - 1e-9).astype(int) + 1
    return Lattice(tuple(lo), (spacing,) * 3, tuple(shape))


def periodic_lattice(box_lengths, spacing: float = 0.5, origin=(0.0, 0.0, 0.0)) -> Lattice:
    """The lattice of a periodic box: ``n_d = round(L_d / spacing)`` points per dimension at spacing
    ``L_d / n_d`` (within a few percent of ``spacing``), covering ``[origin, origin + L)``."""
    lengths = np.asarray(box_lengths, dtype=np.float64)
    if lengths.shape != (3,) or np.any(lengths <= 0):
        raise InputError(f"periodic box lengths must be 3 positive numbers, got {box_lengths}")
    if not spacing > 0:
        raise InputError(f"--spacing must be positive, got {spacing}")
    shape = np.maximum(1, np.rint(lengths / spacing).astype(int))
    return Lattice(tuple(origin), tuple(lengths / shape), tuple(shape))


def z_slabs(nz: int, n_parts: int) -> list:
    """Split slices ``0 .. nz-1`` into ``n_parts`` contiguous ranges of near-equal size.

    Returns a list of ``(z_first, z_count)``, in order, covering every slice once; parts that
    would be empty (``n_parts > nz``) are left out.
    """
    if n_parts < 1:
        raise ValueError(f"need at least one part, got {n_parts}")
    bounds = [(nz * p) // n_parts for p in range(n_parts + 1)]
    return [(a, b - a) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
