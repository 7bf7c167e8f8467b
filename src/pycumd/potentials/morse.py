"""Morse: ``V(r) = D0 [exp(-2 alpha (r - r0)) - 2 exp(-alpha (r - r0))]`` (LAMMPS ``pair_style morse``).

Table columns after the cutoff ones: ``[D0, alpha, r0, 2 D0 alpha]``::

    d = exp(-alpha (r - r0)),   V = D0 (d^2 - 2 d),   F/r = 2 D0 alpha (d^2 - d) / r
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential
from .mixing import no_mixing


@numba.njit(inline="always", cache=True)
def morse_raw(r2, row):
    """Raw Morse energy and force/r (row: [rc2, rc, e_c, f_c, D0, alpha, r0, 2 D0 alpha])."""
    r = math.sqrt(r2)
    d = math.exp(-row[5] * (r - row[6]))
    return row[4] * (d * d - 2.0 * d), row[7] * (d * d - d) / r


class Morse(PairPotential):
    """Morse with per type-pair ``D0`` (energy), ``alpha`` (1/length), ``r0`` (length), ``r_cut``.

    Unlike pairs are not mixed (LAMMPS does not): set every pair.

    Example
    -------
    >>> pot = Morse(r_cut=2.5).pair_coeff(0, 0, D0=1.0, alpha=2.0, r0=1.1)
    """

    name = "morse"
    parameter_names = ("D0", "alpha", "r0")
    cuda_header = "potentials/morse.cuh"
    lammps_styles = {"morse": (1, 1)}
    raw_pair_function = staticmethod(morse_raw)

    def _columns(self, p):
        return [p["D0"], p["alpha"], p["r0"], 2.0 * p["D0"] * p["alpha"]]

    def _mix(self, a, b):
        no_mixing(self.name)
