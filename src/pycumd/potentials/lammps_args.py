"""LAMMPS ``pair_style`` / ``pair_coeff`` arguments as a potential class reads them.

A potential class declares the LAMMPS styles it runs (:attr:`~pycumd.potentials.base.PairPotential.lammps_styles`)
and builds itself from a style's arguments (:meth:`~pycumd.potentials.base.PairPotential.from_lammps`);
the helpers and the context it receives are here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

#: LAMMPS' Coulomb constant qqrd2e per unit system (energy x length / charge^2)
QQRD2E = {"lj": 1.0, "real": 332.06371, "metal": 14.399645}


@dataclass
class LammpsPairContext:
    """What a ``pair_style`` line's potential needs besides its own arguments.

    n_types : int
    cutoff_mode : "truncate" | "shift"  (``pair_modify shift``)
    mixing : ``pair_modify mix``
    charges : dict type -> charge, for the Coulomb styles (``read_data`` with ``atom_style charge``)
    units : LAMMPS unit system name (for the Coulomb constant)
    directory : Path where relative table file names are looked up (``pair_style table``)
    """

    n_types: int
    cutoff_mode: str = "truncate"
    mixing: str = "geometric"
    charges: dict = field(default_factory=dict)
    units: str = "lj"
    directory: Path = Path(".")


def number(value, what: str) -> float:
    """``value`` as a float; a ValueError naming ``what`` otherwise."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a number, got {value!r}") from None


def numbers(values, what: str) -> list:
    return [number(v, what) for v in values]


def check_count(style: str, values: list, lo: int, hi: int) -> None:
    """A ValueError unless a ``pair_coeff`` line of ``style`` has ``lo`` to ``hi`` values."""
    if not lo <= len(values) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"pair_coeff for {style} takes {count} value(s) after the two types, got {len(values)}")


def qqrd2e(units: str) -> float:
    if units not in QQRD2E:
        raise ValueError(f"Coulomb pair styles: units {units} not supported ({', '.join(QQRD2E)})")
    return QQRD2E[units]


def type_charges(style: str, charges: dict, n_types: int) -> list:
    """The charge of every type (0-based), a ValueError naming the types without one."""
    missing = [t + 1 for t in range(n_types) if t not in charges]
    if missing:
        raise ValueError(f"{style} needs per-atom charges (read_data with atom_style charge, or set type T "
                         f"charge Q); none for type(s) {missing}")
    return [charges[t] for t in range(n_types)]
