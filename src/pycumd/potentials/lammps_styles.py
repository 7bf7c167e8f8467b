"""LAMMPS ``pair_style`` / ``pair_coeff`` -> pycumd pair potentials, with LAMMPS' conventions.

:func:`potential_from_lammps` is the one place that knows which LAMMPS pair styles pycumd runs and
how their arguments map onto pycumd's potentials; the LAMMPS script front-end
(:mod:`pycumd.inputs.lammps_input`) hands it what the script said.
"""

from __future__ import annotations

from .lennard_jones import LennardJones
from .yukawa import Yukawa

#: style -> number of global ``pair_style`` arguments
PAIR_STYLES = {"lj/cut": 1, "yukawa": 2, "coul/debye": 2}
#: LAMMPS' Coulomb constant qqrd2e per unit system (energy x length / charge^2)
QQRD2E = {"lj": 1.0, "real": 332.06371, "metal": 14.399645}


def check_pair_style(style: str, global_args: list) -> None:
    """Raise ValueError unless ``pair_style STYLE ARGS`` is one pycumd runs."""
    if style not in PAIR_STYLES:
        raise ValueError(f"pair_style {style} is not supported ({', '.join(PAIR_STYLES)})")
    if len(global_args) != PAIR_STYLES[style]:
        raise ValueError(f"pair_style {style} takes {PAIR_STYLES[style]} argument(s)")


def potential_from_lammps(style: str, global_args: list, pair_coeffs: list, *, n_types: int,
                          cutoff_mode: str = "truncate", mixing: str = "geometric", charges: dict | None = None,
                          units: str = "lj"):
    """The pair potential of ``pair_style`` + ``pair_coeff`` lines.

    Parameters
    ----------
    style, global_args : the ``pair_style`` line (arguments as floats)
    pair_coeffs : list of (i, j, values)
        0-based type pairs (i <= j) with the ``pair_coeff`` values as floats.
    n_types : int
    cutoff_mode : "truncate" | "shift"  (``pair_modify shift``)
    mixing : ``pair_modify mix``
    charges : dict type -> charge, for the Coulomb styles (``read_data`` with ``atom_style charge``)
    units : LAMMPS unit system name (for the Coulomb constant)
    """
    check_pair_style(style, global_args)
    charges = charges or {}
    if style == "lj/cut":
        pot = LennardJones(global_args[0], cutoff=cutoff_mode, mixing=mixing)
        names = ("epsilon", "sigma", "r_cut")
    else:   # yukawa: A exp(-kappa r) / r;  coul/debye: qqrd2e q_i q_j exp(-kappa r) / r
        kappa, r_cut = global_args
        pot = Yukawa(1.0 / kappa, r_cut, cutoff=cutoff_mode, mixing=mixing)
        names = ("prefactor", "r_cut")
    if style == "coul/debye":
        missing = [t + 1 for t in range(n_types) if t not in charges]
        if missing:
            raise ValueError(f"coul/debye needs per-atom charges (read_data with atom_style charge); "
                             f"none for type(s) {missing}")
        qqrd2e = QQRD2E[units]
        for i, j, values in pair_coeffs:
            extra = {"r_cut": values[0]} if values else {}
            pot.pair_coeff(i, j, prefactor=qqrd2e * charges[i] * charges[j], **extra)
        for i in range(n_types):
            for j in range(i, n_types):
                if (i, j) not in pot._coeffs:
                    pot.pair_coeff(i, j, prefactor=qqrd2e * charges[i] * charges[j])
        return pot
    for i, j, values in pair_coeffs:
        if len(values) > len(names):
            raise ValueError(f"pair_coeff for {style} takes at most {len(names)} values")
        pot.pair_coeff(i, j, **dict(zip(names, values)))
    return pot
