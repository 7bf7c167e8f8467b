"""Born-Mayer-Huggins: ``V(r) = A exp((sigma - r) / rho) - C / r^6 + D / r^8`` (LAMMPS ``pair_style born``).

Table columns after the cutoff ones, as LAMMPS computes them:
``[A, 1/rho, sigma, C, D, A/rho, 6 C, 8 D]``::

    F/r = (A/rho r exp((sigma - r)/rho) - 6 C r^-6 + 8 D r^-8) / r^2
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential
from .mixing import no_mixing


@numba.njit(inline="always", cache=True)
def born_raw(r2, row):
    """Raw Born energy and force/r (row: [rc2, rc, e_c, f_c, A, 1/rho, sigma, C, D, A/rho, 6 C, 8 D])."""
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    r = math.sqrt(r2)
    rexp = math.exp((row[6] - r) * row[5])
    energy = row[4] * rexp - row[7] * r6inv + row[8] * r6inv * r2inv
    force_over_r = (row[9] * r * rexp - row[10] * r6inv + row[11] * r2inv * r6inv) * r2inv
    return energy, force_over_r


class Born(PairPotential):
    """Born-Mayer-Huggins with per type-pair ``A`` (energy), ``rho``, ``sigma`` (length),
    ``C`` (energy x length^6), ``D`` (energy x length^8), ``r_cut``.

    Unlike pairs are not mixed (LAMMPS does not): set every pair.

    Example
    -------
    >>> pot = Born(r_cut=8.0).pair_coeff(0, 0, A=6.08, rho=0.317, sigma=2.34, C=24.18, D=11.51)
    """

    name = "born"
    parameter_names = ("A", "rho", "sigma", "C", "D")
    cuda_header = "potentials/born.cuh"
    lammps_styles = {"born": (1, 1)}
    raw_pair_function = staticmethod(born_raw)

    def _validate(self, p):
        if not p["rho"] > 0:
            raise ValueError(f"born: rho must be positive, got {p['rho']}")

    def _columns(self, p):
        return [p["A"], 1.0 / p["rho"], p["sigma"], p["C"], p["D"], p["A"] / p["rho"], 6.0 * p["C"],
                8.0 * p["D"]]

    def _mix(self, a, b):
        no_mixing(self.name)
