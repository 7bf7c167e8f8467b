"""Lennard-Jones 12-6: ``V(r) = 4 epsilon [(sigma/r)^12 - (sigma/r)^6]``.

Table columns after the cutoff ones, as in LAMMPS ``pair lj/cut`` so that sums round alike:
``lj1 = 48 eps sigma^12``, ``lj2 = 24 eps sigma^6``, ``lj3 = 4 eps sigma^12``, ``lj4 = 4 eps sigma^6``::

    F/r = r^-8 (lj1 r^-6 - lj2)        V = r^-6 (lj3 r^-6 - lj4)
"""

from __future__ import annotations

import math
from dataclasses import replace

import numba

from .base import PairPotential


@numba.njit(inline="always", cache=True)
def lennard_jones_raw(r2, row):
    """Raw LJ energy and force/r at squared distance ``r2`` (row: [rc2, rc, e_c, f_c, lj1..lj4])."""
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    force_over_r = r6inv * (row[4] * r6inv - row[5]) * r2inv
    energy = r6inv * (row[6] * r6inv - row[7])
    return energy, force_over_r


class LennardJones(PairPotential):
    """Lennard-Jones 12-6 with per type-pair ``epsilon`` (energy), ``sigma`` (length), ``r_cut`` (length).

    Example
    -------
    >>> lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    """

    name = "lj/cut"
    parameter_names = ("epsilon", "sigma")
    cuda_header = "potentials/lennard_jones.cuh"
    lammps_styles = {"lj/cut": (1, 1), "lj/smooth/linear": (1, 1)}
    raw_pair_function = staticmethod(lennard_jones_raw)

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context):
        """``lj/cut``; ``lj/smooth/linear`` is LJ with the shifted-force treatment (E and F zero at rc)."""
        if style == "lj/smooth/linear":
            context = replace(context, cutoff_mode="shift_force")
        return super().from_lammps(style, global_args, pair_coeffs, context)

    def _validate(self, p):
        if p["epsilon"] < 0 or not p["sigma"] > 0:
            raise ValueError(f"lj: epsilon must be >= 0 and sigma > 0, got {p}")

    def _columns(self, p):
        eps, sig = p["epsilon"], p["sigma"]
        return [48.0 * eps * sig**12, 24.0 * eps * sig**6, 4.0 * eps * sig**12, 4.0 * eps * sig**6]

    def _mix(self, a, b):
        ea, eb, sa, sb = a["epsilon"], b["epsilon"], a["sigma"], b["sigma"]
        if self.mixing == "sixthpower":
            eps = 2.0 * math.sqrt(ea * eb) * sa**3 * sb**3 / (sa**6 + sb**6)
        else:
            eps = math.sqrt(ea * eb)
        return {"epsilon": eps, "sigma": self._mix_distance(sa, sb)}
