"""Lennard-Jones 9-6: ``V(r) = 4 epsilon [(sigma/r)^9 - (sigma/r)^6]`` (LAMMPS ``pair_style lj96/cut``).

Table columns after the cutoff ones, as in LAMMPS: ``lj1 = 36 eps sigma^9``, ``lj2 = 24 eps sigma^6``,
``lj3 = 4 eps sigma^9``, ``lj4 = 4 eps sigma^6``::

    F/r = r^-8 (lj1 r^-3 - lj2)        V = r^-6 (lj3 r^-3 - lj4)
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential
from .mixing import mix_energy


@numba.njit(inline="always", cache=True)
def lj96_raw(r2, row):
    """Raw LJ 9-6 energy and force/r (row: [rc2, rc, e_c, f_c, lj1..lj4])."""
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    r3inv = math.sqrt(r6inv)
    return r6inv * (row[6] * r3inv - row[7]), r6inv * (row[4] * r3inv - row[5]) * r2inv


class LennardJones96(PairPotential):
    """Lennard-Jones 9-6 with per type-pair ``epsilon`` (energy), ``sigma`` (length), ``r_cut``.

    Unlike pairs mix as lj/cut's (``mixing`` rule for sigma and the cutoff; sqrt for epsilon).

    Example
    -------
    >>> pot = LennardJones96(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    """

    name = "lj96/cut"
    parameter_names = ("epsilon", "sigma")
    cuda_header = "potentials/lj96.cuh"
    lammps_styles = {"lj96/cut": (1, 1)}
    raw_pair_function = staticmethod(lj96_raw)

    def _validate(self, p):
        if p["epsilon"] < 0 or not p["sigma"] > 0:
            raise ValueError(f"lj96/cut: epsilon must be >= 0 and sigma > 0, got {p}")

    def _columns(self, p):
        eps, sig = p["epsilon"], p["sigma"]
        return [36.0 * eps * sig**9, 24.0 * eps * sig**6, 4.0 * eps * sig**9, 4.0 * eps * sig**6]

    def _mix(self, a, b):
        return {"epsilon": mix_energy(self.mixing, a["epsilon"], b["epsilon"], a["sigma"], b["sigma"]),
                "sigma": self._mix_distance(a["sigma"], b["sigma"])}
