"""Thermodynamic observables with LAMMPS' definitions.

All functions work on NumPy or CuPy arrays (the array module is taken from the input) and
return Python floats.  Degrees of freedom follow LAMMPS' ``compute temp``: ``3 N - 3``
(the centre-of-mass motion removed).
"""

from __future__ import annotations

import numpy as np

from .units import UnitSystem


def degrees_of_freedom(n_atoms: int) -> int:
    """``3 N - 3``, as LAMMPS' default temperature compute counts them."""
    return max(3 * n_atoms - 3, 1)


def kinetic_energy(velocities, per_atom_mass, units: UnitSystem) -> float:
    """``0.5 * mvv2e * sum_i m_i |v_i|^2`` (energy units)."""
    return 0.5 * units.mvv2e * float((per_atom_mass[:, None] * velocities * velocities).sum())


def temperature(kinetic: float, n_atoms: int, units: UnitSystem, dof: int | None = None) -> float:
    """``2 KE / (dof * k_B)`` (temperature units); ``dof`` default :func:`degrees_of_freedom` (fewer with
    constraints)."""
    dof = degrees_of_freedom(n_atoms) if dof is None else max(dof, 1)
    return 2.0 * kinetic / (dof * units.boltz)


def pressure(temp: float, virial_trace: float, n_atoms: int, volume: float,
             units: UnitSystem, dof: int | None = None) -> float:
    """``(dof k_B T + W) / (3 V) * nktv2p``, with ``W = sum over pairs of r_ij . f_ij``."""
    dof = degrees_of_freedom(n_atoms) if dof is None else max(dof, 1)
    return (dof * units.boltz * temp + virial_trace) / (3.0 * volume) * units.nktv2p


def momentum(velocities, per_atom_mass) -> np.ndarray:
    """Total momentum, shape (3,) (mass * velocity units)."""
    return np.asarray((per_atom_mass[:, None] * velocities).sum(axis=0).tolist())
