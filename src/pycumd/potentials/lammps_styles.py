"""LAMMPS ``pair_style`` / ``pair_coeff`` -> pycumd pair potentials, with LAMMPS' conventions.

:func:`potential_from_lammps` is the one place that knows which LAMMPS pair styles pycumd runs and
how their arguments map onto pycumd's potentials; the LAMMPS script front-end
(:mod:`pycumd.inputs.lammps_input`) hands it what the script said.  Arguments may come as strings
(as written in the script) or, for the numeric styles, as floats.

=====================  ==========================================  =====================================
style                  pair_style arguments                        pair_coeff values
=====================  ==========================================  =====================================
lj/cut                 rc                                          eps sigma [rc]
lj/smooth/linear       rc                                          eps sigma [rc]
lj96/cut               rc                                          eps sigma [rc]
lj/cut/coul/cut        rc_lj [rc_coul]                             eps sigma [rc_lj [rc_coul]]
lj/cut/coul/debye      kappa rc_lj [rc_coul]                       eps sigma [rc_lj [rc_coul]]
morse                  rc                                          D0 alpha r0 [rc]
soft                   rc                                          A [rc]
buck                   rc                                          A rho C [rc]
born                   rc                                          A rho sigma C D [rc]
gauss                  rc                                          A B [rc]
yukawa                 kappa rc                                    A [rc]
coul/debye             kappa rc                                    [rc]   (charges per type)
table                  linear|spline N                             FILE KEYWORD [rc]
lepton                 rc                                          "EXPRESSION[;name=value...]" [rc]
=====================  ==========================================  =====================================
"""

from __future__ import annotations

from pathlib import Path

from .buckingham import Buckingham
from .born import Born
from .gauss import Gauss
from .lennard_jones import LennardJones
from .lj96 import LennardJones96
from .lj_coulomb import LJCoulomb
from .morse import Morse
from .soft import Soft
from .yukawa import Yukawa

#: style -> (fewest, most) global ``pair_style`` arguments
PAIR_STYLES = {"lj/cut": (1, 1), "lj/smooth/linear": (1, 1), "lj96/cut": (1, 1), "lj/cut/coul/cut": (1, 2),
               "lj/cut/coul/debye": (2, 3), "morse": (1, 1), "soft": (1, 1), "buck": (1, 1), "born": (1, 1),
               "gauss": (1, 1), "yukawa": (2, 2), "coul/debye": (2, 2), "table": (2, 2), "lepton": (1, 1)}
#: the pair_coeff values (after the two types) of the styles with one potential class and plain numbers
_SIMPLE = {"lj/cut": (LennardJones, ("epsilon", "sigma", "r_cut")),
           "lj/smooth/linear": (LennardJones, ("epsilon", "sigma", "r_cut")),
           "lj96/cut": (LennardJones96, ("epsilon", "sigma", "r_cut")),
           "morse": (Morse, ("D0", "alpha", "r0", "r_cut")),
           "soft": (Soft, ("A", "r_cut")),
           "buck": (Buckingham, ("A", "rho", "C", "r_cut")),
           "born": (Born, ("A", "rho", "sigma", "C", "D", "r_cut")),
           "gauss": (Gauss, ("A", "B", "r_cut"))}
#: LAMMPS' Coulomb constant qqrd2e per unit system (energy x length / charge^2)
QQRD2E = {"lj": 1.0, "real": 332.06371, "metal": 14.399645}
TABLE_STYLES = ("linear", "spline")


def _number(value, what: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: expected a number, got {value!r}") from None


def _numbers(values, what: str) -> list:
    return [_number(v, what) for v in values]


def check_pair_style(style: str, global_args: list) -> None:
    """Raise ValueError unless ``pair_style STYLE ARGS`` is one pycumd runs."""
    if style not in PAIR_STYLES:
        raise ValueError(f"pair_style {style} is not supported ({', '.join(PAIR_STYLES)})")
    lo, hi = PAIR_STYLES[style]
    if not lo <= len(global_args) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"pair_style {style} takes {count} argument(s), got {len(global_args)}")
    if style == "table":
        kind = str(global_args[0])
        if kind == "bitmap" or kind == "lookup":
            raise ValueError(f"pair_style table {kind} is not supported (linear or spline)")
        if kind not in TABLE_STYLES:
            raise ValueError(f"pair_style table: unknown table style {kind!r} (linear or spline)")
        n = _number(global_args[1], "pair_style table N")
        if n != int(n) or n < 2:
            raise ValueError(f"pair_style table: N must be an integer >= 2, got {global_args[1]}")
    elif style == "lepton":
        _number(global_args[0], "pair_style lepton cutoff")
    else:
        _numbers(global_args, f"pair_style {style}")


def potential_from_lammps(style: str, global_args: list, pair_coeffs: list, *, n_types: int,
                          cutoff_mode: str = "truncate", mixing: str = "geometric", charges: dict | None = None,
                          units: str = "lj", directory=None):
    """The pair potential of ``pair_style`` + ``pair_coeff`` lines.

    Parameters
    ----------
    style, global_args : the ``pair_style`` line (arguments as strings or floats)
    pair_coeffs : list of (i, j, values)
        0-based type pairs (i <= j) with the ``pair_coeff`` values (strings or floats).
    n_types : int
    cutoff_mode : "truncate" | "shift"  (``pair_modify shift``)
    mixing : ``pair_modify mix``
    charges : dict type -> charge, for the Coulomb styles (``read_data`` with ``atom_style charge``)
    units : LAMMPS unit system name (for the Coulomb constant)
    directory : path, optional
        Where relative table file names are looked up (``pair_style table``); default the
        current directory.
    """
    check_pair_style(style, global_args)
    charges = charges or {}
    if style == "table":
        from .table import table_from_lammps
        return table_from_lammps(str(global_args[0]), int(_number(global_args[1], "N")), pair_coeffs,
                                 n_types=n_types, cutoff_mode=cutoff_mode, directory=Path(directory or "."))
    if style == "lepton":
        from .formula import formula_from_lepton
        return formula_from_lepton(_number(global_args[0], "pair_style lepton cutoff"), pair_coeffs,
                                   n_types=n_types, cutoff_mode=cutoff_mode)
    args = _numbers(global_args, f"pair_style {style}")
    coeffs = [(i, j, _numbers(values, f"pair_coeff {i + 1} {j + 1} ({style})")) for i, j, values in pair_coeffs]
    if style in _SIMPLE:
        cls, names = _SIMPLE[style]
        # lj/smooth/linear is LJ with the shifted-force treatment (E and F zero at rc)
        mode = "shift_force" if style == "lj/smooth/linear" else cutoff_mode
        pot = cls(args[0], cutoff=mode, mixing=mixing)
        for i, j, values in coeffs:
            _check_count(style, values, len(names) - 1, len(names))
            pot.pair_coeff(i, j, **dict(zip(names, values)))
        return pot
    if style in ("lj/cut/coul/cut", "lj/cut/coul/debye"):
        kappa, cuts = (0.0, args) if style == "lj/cut/coul/cut" else (args[0], args[1:])
        pot = LJCoulomb(cuts[0], cuts[-1], kappa=kappa, coulomb_constant=_qqrd2e(units), mixing=mixing,
                        shift_lj=cutoff_mode == "shift")
        pot.charges(_type_charges(style, charges, n_types))
        for i, j, values in coeffs:
            _check_count(style, values, 2, 4)
            pot.pair_coeff(i, j, **dict(zip(("epsilon", "sigma", "r_cut_lj", "r_cut_coul"), values)))
        return pot
    # yukawa: A exp(-kappa r) / r;  coul/debye: qqrd2e q_i q_j exp(-kappa r) / r
    kappa, r_cut = args
    pot = Yukawa(1.0 / kappa, r_cut, cutoff=cutoff_mode, mixing=mixing)
    if style == "coul/debye":
        q = _type_charges(style, charges, n_types)
        qqrd2e = _qqrd2e(units)
        for i, j, values in coeffs:
            _check_count(style, values, 0, 1)
            extra = {"r_cut": values[0]} if values else {}
            pot.pair_coeff(i, j, prefactor=qqrd2e * q[i] * q[j], **extra)
        for i in range(n_types):
            for j in range(i, n_types):
                if (i, j) not in pot._coeffs:
                    pot.pair_coeff(i, j, prefactor=qqrd2e * q[i] * q[j])
        return pot
    for i, j, values in coeffs:
        _check_count(style, values, 1, 2)
        pot.pair_coeff(i, j, **dict(zip(("prefactor", "r_cut"), values)))
    return pot


def _check_count(style: str, values: list, lo: int, hi: int) -> None:
    if not lo <= len(values) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"pair_coeff for {style} takes {count} value(s) after the two types, got {len(values)}")


def _qqrd2e(units: str) -> float:
    if units not in QQRD2E:
        raise ValueError(f"Coulomb pair styles: units {units} not supported ({', '.join(QQRD2E)})")
    return QQRD2E[units]


def _type_charges(style: str, charges: dict, n_types: int) -> list:
    missing = [t + 1 for t in range(n_types) if t not in charges]
    if missing:
        raise ValueError(f"{style} needs per-atom charges (read_data with atom_style charge, or set type T "
                         f"charge Q); none for type(s) {missing}")
    return [charges[t] for t in range(n_types)]
