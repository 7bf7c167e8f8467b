"""Lennard-Jones 12-6 plus cut (or Debye-screened) Coulomb, each with its own cutoff.

LAMMPS ``pair_style lj/cut/coul/cut`` (``kappa = 0``) and ``lj/cut/coul/debye``::

    V = 4 eps [(sigma/r)^12 - (sigma/r)^6] - offset     (r < rc_lj;  offset only with shift_lj)
      + k q_i q_j exp(-kappa r) / r                     (r < rc_coul)

with ``k`` the Coulomb constant of the unit system (LAMMPS ``qqrd2e``) and per-type charges
``q``.  The pair's table cutoff is ``max(rc_lj, rc_coul)``; the two inner cutoffs are tested in
the pair function.  ``shift_lj`` is LAMMPS' ``pair_modify shift yes`` for these styles: the LJ
part alone is shifted to zero at ``rc_lj``, the Coulomb part is not.

Table columns after the cutoff ones:
``[lj1, lj2, lj3, lj4, rc_lj^2, offset, qq = k q_i q_j, rc_coul^2, kappa]`` (lj1..lj4 as in
:mod:`.lennard_jones`)::

    F/r = [r^-6 (lj1 r^-6 - lj2) + qq exp(-kappa r) (kappa + 1/r)] / r^2
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .base import MissingParameterError, PairPotential
from .lammps_args import check_count, numbers, qqrd2e, type_charges
from .mixing import mix_energy


@numba.njit(inline="always", cache=True)
def lj_coulomb_raw(r2, row):
    """Raw LJ + Coulomb energy and force/r (row: [rc2, rc, e_c, f_c, lj1..lj4, rc_lj2, offset, qq, rc_coul2, kappa])."""
    r2inv = 1.0 / r2
    energy = 0.0
    force = 0.0
    if r2 < row[8]:
        r6inv = r2inv * r2inv * r2inv
        force = r6inv * (row[4] * r6inv - row[5])
        energy = r6inv * (row[6] * r6inv - row[7]) - row[9]
    if r2 < row[11]:
        r = math.sqrt(r2)
        rinv = 1.0 / r
        screened = row[10] * math.exp(-row[12] * r)
        force += screened * (row[12] + rinv)
        energy += screened * rinv
    return energy, force * r2inv


class LJCoulomb(PairPotential):
    """Lennard-Jones plus cut or Debye-screened Coulomb between per-type charges.

    Parameters
    ----------
    r_cut : float
        Global LJ cutoff (length units).
    r_cut_coul : float, optional
        Global Coulomb cutoff; default ``r_cut``.
    kappa : float
        Inverse Debye length (1/length); 0 (default) is plain Coulomb (``lj/cut/coul/cut``).
    coulomb_constant : float
        ``k`` in ``k q_i q_j / r`` (energy x length / charge^2): 1 in lj units, 332.06371 real,
        14.399645 metal (LAMMPS' ``qqrd2e``).
    cutoff : {"truncate", "shift", "shift_force"}
        Treatment of the whole pair at ``max(rc_lj, rc_coul)`` (pycumd's; LAMMPS' ``pair_modify
        shift yes`` is ``shift_lj=True`` instead).
    mixing : str
        For epsilon, sigma and both cutoffs of unlike pairs not set explicitly (LAMMPS' rules).
    shift_lj : bool
        Shift the LJ part to zero at ``rc_lj`` (LAMMPS ``pair_modify shift yes``).

    Pair coefficients: ``epsilon``, ``sigma`` and optionally ``r_cut_lj`` and ``r_cut_coul``
    (LAMMPS' ``pair_coeff I J eps sigma [cut_lj [cut_coul]]``: a lone ``r_cut_lj`` sets both).
    Charges per type: :meth:`charges`.

    Example
    -------
    >>> pot = LJCoulomb(2.5, kappa=1.0).charges([1.0, -1.0])
    >>> pot = pot.pair_coeff(0, 0, epsilon=1.0, sigma=1.0).pair_coeff(1, 1, epsilon=1.0, sigma=1.0)
    """

    parameter_names = ("epsilon", "sigma", "r_cut_lj", "r_cut_coul")
    cuda_header = "potentials/lj_coulomb.cuh"
    lammps_styles = {"lj/cut/coul/cut": (1, 2), "lj/cut/coul/debye": (2, 3)}
    raw_pair_function = staticmethod(lj_coulomb_raw)

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context):
        """``lj/cut/coul/cut rc_lj [rc_coul]`` and ``lj/cut/coul/debye kappa rc_lj [rc_coul]`` with
        ``pair_coeff I J eps sigma [rc_lj [rc_coul]]`` and the per-type charges."""
        args = numbers(global_args, f"pair_style {style}")
        kappa, cuts = (0.0, args) if style == "lj/cut/coul/cut" else (args[0], args[1:])
        pot = cls(cuts[0], cuts[-1], kappa=kappa, coulomb_constant=qqrd2e(context.units), mixing=context.mixing,
                  shift_lj=context.cutoff_mode == "shift")
        pot.charges(type_charges(style, context.charges, context.n_types))
        for i, j, values in pair_coeffs:
            values = numbers(values, f"pair_coeff {i + 1} {j + 1} ({style})")
            check_count(style, values, 2, 4)
            pot.pair_coeff(i, j, **dict(zip(("epsilon", "sigma", "r_cut_lj", "r_cut_coul"), values)))
        return pot

    def __init__(self, r_cut: float, r_cut_coul: float | None = None, kappa: float = 0.0,
                 coulomb_constant: float = 1.0, cutoff: str = "truncate", mixing: str = "geometric",
                 shift_lj: bool = False):
        r_cut_coul = r_cut if r_cut_coul is None else r_cut_coul
        if not (r_cut_coul > 0 and math.isfinite(r_cut_coul)):
            raise ValueError(f"lj/coul: the Coulomb cutoff must be positive, got {r_cut_coul}")
        if not (kappa >= 0 and math.isfinite(kappa)):
            raise ValueError(f"lj/coul: kappa must be >= 0, got {kappa}")
        super().__init__(max(r_cut, r_cut_coul), cutoff=cutoff, mixing=mixing)
        self.name = "lj/cut/coul/debye" if kappa > 0 else "lj/cut/coul/cut"
        self.r_cut_lj = float(r_cut)
        self.r_cut_coul = float(r_cut_coul)
        self.kappa = float(kappa)
        self.coulomb_constant = float(coulomb_constant)
        self.shift_lj = bool(shift_lj)
        self.type_charges: dict[int, float] = {}

    def charges(self, charges) -> "LJCoulomb":
        """Set the charge of each type (charge units), ``charges[t]`` for type t = 0, 1, ...; returns ``self``."""
        self.type_charges = {t: float(q) for t, q in enumerate(np.atleast_1d(charges))}
        return self

    def pair_coeff(self, type_i: int, type_j: int, **params) -> "LJCoulomb":
        """Set ``epsilon``, ``sigma`` and optionally ``r_cut_lj``, ``r_cut_coul`` of a pair (0-based types)."""
        if "r_cut" in params:
            raise ValueError(f"{self.name}: give r_cut_lj and/or r_cut_coul, not r_cut")
        given_lj = params.get("r_cut_lj")
        params.setdefault("r_cut_lj", self.r_cut_lj)
        params.setdefault("r_cut_coul", self.r_cut_coul if given_lj is None else given_lj)
        params["r_cut"] = max(params["r_cut_lj"], params["r_cut_coul"])
        return super().pair_coeff(type_i, type_j, **params)

    def coefficients(self, type_i: int, type_j: int) -> dict:
        p = dict(super().coefficients(type_i, type_j))
        p["r_cut"] = max(p["r_cut_lj"], p["r_cut_coul"])
        missing = [t + 1 for t in (type_i, type_j) if t not in self.type_charges]
        if missing:
            raise MissingParameterError(f"{self.name}: no charge for type {missing[0]}; "
                                        "set them with charges([q1, q2, ...])")
        p["qq"] = self.coulomb_constant * self.type_charges[type_i] * self.type_charges[type_j]
        return p

    def _validate(self, p):
        if p["epsilon"] < 0 or not p["sigma"] > 0 or not p["r_cut_lj"] > 0 or not p["r_cut_coul"] > 0:
            raise ValueError(f"{self.name}: epsilon must be >= 0, sigma and the cutoffs > 0, got {p}")

    def _columns(self, p):
        eps, sig, rc_lj = p["epsilon"], p["sigma"], p["r_cut_lj"]
        offset = 0.0
        if self.shift_lj:
            ratio = sig / rc_lj
            offset = 4.0 * eps * (ratio**12.0 - ratio**6.0)
        return [48.0 * eps * sig**12, 24.0 * eps * sig**6, 4.0 * eps * sig**12, 4.0 * eps * sig**6,
                rc_lj * rc_lj, offset, p["qq"], p["r_cut_coul"] ** 2, self.kappa]

    def _mix(self, a, b):
        return {"epsilon": mix_energy(self.mixing, a["epsilon"], b["epsilon"], a["sigma"], b["sigma"]),
                "sigma": self._mix_distance(a["sigma"], b["sigma"]),
                "r_cut_lj": self._mix_distance(a["r_cut_lj"], b["r_cut_lj"]),
                "r_cut_coul": self._mix_distance(a["r_cut_coul"], b["r_cut_coul"])}

    def describe(self) -> str:
        return (f"{self.name} (lj cutoff {self.r_cut_lj:g}, coulomb cutoff {self.r_cut_coul:g}, kappa "
                f"{self.kappa:g}, k {self.coulomb_constant:g}, {self.cutoff}{', lj shifted' if self.shift_lj else ''})")
