"""LAMMPS ``pair_style`` / ``pair_coeff`` -> pycumd pair potentials, with LAMMPS' conventions.

Each potential class declares the styles it runs (``lammps_styles``) and builds itself from their
arguments (``from_lammps``); :func:`potential_from_lammps` finds the class through the registry
(:mod:`pycumd.potentials.registry`), and the LAMMPS script front-end
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
coul/long              rc                                          (none)  (per-atom charges, kspace_style)
lj/cut/coul/long       rc_lj [rc_coul]                             eps sigma [rc_lj]
buck/coul/long         rc_buck [rc_coul]                           A rho C [rc_buck]
born/coul/long         rc_born [rc_coul]                           A rho sigma C D [rc_born]
lj/charmm/coul/long    inner outer [rc_coul]                       eps sigma [eps14 sigma14]  (mix arithmetic)
table                  linear|spline N                             FILE KEYWORD [rc]
lepton                 rc                                          "EXPRESSION[;name=value...]" [rc]
=====================  ==========================================  =====================================
"""

from __future__ import annotations

from pathlib import Path

from .coul_long import LONG_RANGE_STYLES, check_long_range_style, coul_long_from_lammps, is_long_range_style
from .lammps_args import QQRD2E, LammpsPairContext, check_count, number, numbers, qqrd2e, type_charges
from .registry import lammps_pair_styles

#: style -> (fewest, most) global ``pair_style`` arguments (declared by the potential classes)
PAIR_STYLES = {style: counts for style, (_, counts) in lammps_pair_styles().items()}


def check_pair_style(style: str, global_args: list) -> None:
    """Raise ValueError unless ``pair_style STYLE ARGS`` is one pycumd runs (NotImplementedError for a
    long-range Coulomb style it does not have yet)."""
    if is_long_range_style(style):
        check_long_range_style(style, global_args)
        return
    if style not in PAIR_STYLES:
        raise ValueError(f"pair_style {style} is not supported ({', '.join([*PAIR_STYLES, *LONG_RANGE_STYLES])})")
    lo, hi = PAIR_STYLES[style]
    if not lo <= len(global_args) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"pair_style {style} takes {count} argument(s), got {len(global_args)}")
    lammps_pair_styles()[style][0].check_lammps_args(style, global_args)


def pair_style_class(style: str):
    """The class whose ``lammps_pair_coeff`` reads a ``pair_coeff`` line of ``style`` (a long-range style's:
    its short-range part's, Lennard-Jones for ``coul/long``)."""
    if style in LONG_RANGE_STYLES:
        style = LONG_RANGE_STYLES[style][0]
        if style not in lammps_pair_styles():        # coul/long, lj/charmm: no files, no masses
            style = "lj/cut"
    return lammps_pair_styles()[style][0]


def potential_from_lammps(style: str, global_args: list, pair_coeffs: list, *, n_types: int,
                          cutoff_mode: str = "truncate", mixing: str = "geometric", charges: dict | None = None,
                          units: str = "lj", directory=None):
    """The pair potential of ``pair_style`` + ``pair_coeff`` lines (built by the class that declares
    the style, :meth:`~pycumd.potentials.base.PairPotential.from_lammps`).

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
    if style in LONG_RANGE_STYLES:           # per-atom charges and a k-space solver: potentials.coul_long
        return coul_long_from_lammps(style, global_args, pair_coeffs, n_types=n_types, cutoff_mode=cutoff_mode,
                                     mixing=mixing, units=units, directory=directory)
    context = LammpsPairContext(n_types, cutoff_mode, mixing, dict(charges or {}), units, Path(directory or "."))
    return lammps_pair_styles()[style][0].from_lammps(style, global_args, pair_coeffs, context)


__all__ = ["PAIR_STYLES", "pair_style_class", "QQRD2E", "check_pair_style", "potential_from_lammps", "LammpsPairContext",
           "check_count", "number", "numbers", "qqrd2e", "type_charges"]
