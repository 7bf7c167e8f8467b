"""Buckingham: ``V(r) = A exp(-r / rho) - C / r^6`` (LAMMPS ``pair_style buck``).

Table columns after the cutoff ones, as LAMMPS computes them: ``[A, 1/rho, C, A/rho, 6 C]``::

    F/r = (A/rho r exp(-r/rho) - 6 C r^-6) / r^2
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential
from .mixing import no_mixing


@numba.njit(inline="always", cache=True)
def buckingham_raw(r2, row):
    """Raw Buckingham energy and force/r (row: [rc2, rc, e_c, f_c, A, 1/rho, C, A/rho, 6 C])."""
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    r = math.sqrt(r2)
    rexp = math.exp(-r * row[5])
    return row[4] * rexp - row[6] * r6inv, (row[7] * r * rexp - row[8] * r6inv) * r2inv


class Buckingham(PairPotential):
    """Buckingham with per type-pair ``A`` (energy), ``rho`` (length), ``C`` (energy x length^6), ``r_cut``.

    Unlike pairs are not mixed (LAMMPS does not): set every pair.

    Example
    -------
    >>> pot = Buckingham(r_cut=10.0).pair_coeff(0, 0, A=1388.77, rho=0.3623, C=175.0)
    """

    name = "buck"
    parameter_names = ("A", "rho", "C")
    cuda_header = "potentials/buckingham.cuh"
    lammps_styles = {"buck": (1, 1)}
    raw_pair_function = staticmethod(buckingham_raw)

    def _validate(self, p):
        if not p["rho"] > 0:
            raise ValueError(f"buck: rho must be positive, got {p['rho']}")

    def _columns(self, p):
        return [p["A"], 1.0 / p["rho"], p["C"], p["A"] / p["rho"], 6.0 * p["C"]]

    def _mix(self, a, b):
        no_mixing(self.name)
