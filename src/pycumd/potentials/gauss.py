"""Gaussian well: ``V(r) = -A exp(-B r^2)`` (LAMMPS ``pair_style gauss``).

Table columns after the cutoff ones: ``[A, B]``::

    V = -A exp(-B r^2),   F/r = -2 A B exp(-B r^2)
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential
from .mixing import mix_energy


@numba.njit(inline="always", cache=True)
def gauss_raw(r2, row):
    """Raw Gaussian energy and force/r (row: [rc2, rc, e_c, f_c, A, B])."""
    g = row[4] * math.exp(-row[5] * r2)
    return -g, -2.0 * row[5] * g


class Gauss(PairPotential):
    """Gaussian well with per type-pair ``A`` (energy; negative: repulsive), ``B`` (1/length^2), ``r_cut``.

    Unlike pairs mix as in LAMMPS: with ``s = sqrt(1 / (2 |B|))`` per type, ``s_ij`` by the mixing
    rule, ``B_ij = 1 / (2 s_ij^2)`` (negative if either B is), ``A_ij = mix_energy(|A_i|, |A_j|,
    s_i, s_j)`` (negative if either A is).

    Example
    -------
    >>> pot = Gauss(r_cut=2.5).pair_coeff(0, 0, A=1.0, B=1.0)
    """

    name = "gauss"
    parameter_names = ("A", "B")
    cuda_header = "potentials/gauss.cuh"
    lammps_styles = {"gauss": (1, 1)}
    raw_pair_function = staticmethod(gauss_raw)

    def _validate(self, p):
        if p["B"] == 0:
            raise ValueError("gauss: B must not be zero")

    def _columns(self, p):
        return [p["A"], p["B"]]

    def _mix(self, a, b):
        si, sj = math.sqrt(0.5 / abs(a["B"])), math.sqrt(0.5 / abs(b["B"]))
        sij = self._mix_distance(si, sj)
        B = 0.5 / (sij * sij) * max(math.copysign(1.0, a["B"]), math.copysign(1.0, b["B"]))
        sign_a = min(1.0 if a["A"] >= 0 else -1.0, 1.0 if b["A"] >= 0 else -1.0)
        return {"A": sign_a * mix_energy(self.mixing, abs(a["A"]), abs(b["A"]), si, sj), "B": B}
