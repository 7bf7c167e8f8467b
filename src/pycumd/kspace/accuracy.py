"""LAMMPS' error estimates for an Ewald-split Coulomb sum: the pieces shared by its k-space styles.

The relative accuracy ACC of ``kspace_style STYLE ACC`` becomes an absolute RMS force error
``ACC * two_charge_force`` (force units), where ``two_charge_force`` is the force between two unit
charges one Angstrom apart in the unit system (LAMMPS' ``KSpace::two_charge``).  With
``q2 = qqrd2e * sum q_i^2``, N atoms, the real-space cutoff ``r_c`` and the box volume V:

* real-space RMS force error (Kolafa and Perram):
  ``2 q2 exp(-g^2 r_c^2) / sqrt(N r_c V)``;
* the first guess of ``g_ewald``, from setting that error to the target:
  ``g = sqrt(-ln(ACC sqrt(N r_c V) / (2 q2))) / r_c`` (``(1.35 - 0.15 ln ACC) / r_c`` where the
  logarithm's argument is >= 1);
* the error of the Coulomb table of the pair style, ``pair_modify table B`` (LAMMPS' empirical
  figures per bit count; none for ``table 0``).
"""

from __future__ import annotations

import math

import numpy as np

#: per unit style: (qelectron, angstrom) of LAMMPS' update.cpp; the two-charge force is
#: qqr2e qelectron^2 / angstrom^2 (pycumd's ``nuclear`` units: e and fm, as ``lj``)
UNIT_CHARGE_AND_ANGSTROM = {
    "lj": (1.0, 1.0),
    "real": (1.0, 1.0),
    "metal": (1.0, 1.0),
    "si": (1.6021765e-19, 1.0e-10),
    "cgs": (4.8032044e-10, 1.0e-8),
    "electron": (1.0, 1.88972612),
    "micro": (1.6021765e-7, 1.0e-4),
    "nano": (1.0, 1.0e-1),
    "nuclear": (1.0, 1.0),
}

#: LAMMPS' empirical relative accuracy of a B-bit Coulomb table (``pair_modify table B``), B = 6..16
_TABLE_PRECISION = {6: 6.99e-03, 7: 1.78e-03, 8: 4.72e-04, 9: 1.17e-04, 10: 2.95e-05, 11: 7.41e-06,
                    12: 1.76e-06, 13: 9.28e-07, 14: 7.46e-07, 15: 7.32e-07, 16: 7.30e-07}


def two_charge_force(units_name: str, qqr2e: float) -> float:
    """The force between two unit charges 1 Angstrom apart (force units): LAMMPS' ``two_charge_force``.

    Parameters
    ----------
    units_name : str
        LAMMPS' unit style.
    qqr2e : float
        The Coulomb constant without the dielectric (``qqrd2e * dielectric``).
    """
    if units_name not in UNIT_CHARGE_AND_ANGSTROM:
        raise ValueError(f"kspace: unknown unit style {units_name!r} (known: "
                         f"{', '.join(UNIT_CHARGE_AND_ANGSTROM)})")
    qelectron, angstrom = UNIT_CHARGE_AND_ANGSTROM[units_name]
    return qqr2e * qelectron * qelectron / (angstrom * angstrom)


def charge_sums(charges) -> tuple[float, float]:
    """``(sum q, sum q^2)`` of a host charge array (charge units)."""
    q = np.asarray(charges, dtype=np.float64)
    return float(q.sum()), float(np.dot(q, q))


def initial_g_ewald(accuracy: float, natoms: int, r_cut: float, box_lengths, q2: float) -> float:
    """LAMMPS' first estimate of ``g_ewald`` (1/length) from the absolute accuracy (force units)."""
    if accuracy <= 0.0:
        raise ValueError("kspace: the accuracy must be > 0")
    if q2 == 0.0:
        raise ValueError("kspace: the system has no charges: use 'kspace_modify gewald' for an "
                         "uncharged system")
    volume = float(np.prod(box_lengths))
    g = accuracy * math.sqrt(natoms * r_cut * volume) / (2.0 * q2)
    if g >= 1.0:
        return (1.35 - 0.15 * math.log(accuracy)) / r_cut
    return math.sqrt(-math.log(g)) / r_cut


def real_space_error(g_ewald: float, natoms: int, r_cut: float, box_lengths, q2: float) -> float:
    """RMS real-space force error of the erfc pair term cut at ``r_cut`` (force units)."""
    q2_over_sqrt = q2 / math.sqrt(natoms * r_cut * float(np.prod(box_lengths)))
    return 2.0 * q2_over_sqrt * math.exp(-g_ewald * g_ewald * r_cut * r_cut)


def table_error(natoms: int, r_cut: float, box_lengths, q2: float, table_bits: int) -> float:
    """LAMMPS' estimate of the Coulomb table's force error (force units); 0 for ``table 0``."""
    if not table_bits:
        return 0.0
    bits = min(max(int(table_bits), 6), 16)
    return _TABLE_PRECISION[bits] * q2 / math.sqrt(natoms * r_cut * float(np.prod(box_lengths)))


def table_line(table_bits: int) -> str:
    """The line LAMMPS prints about the pair style's long-range Coulomb evaluation."""
    if table_bits:
        return f"  using {int(table_bits)}-bit tables for long-range coulomb"
    return "  using polynomial approximation for long-range coulomb"


def format_g(value: float) -> str:
    """A number as LAMMPS' kspace summaries print it (``%.8g``)."""
    return f"{value:.8g}"
