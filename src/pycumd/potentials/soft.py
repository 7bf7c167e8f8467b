"""Soft cosine repulsion: ``V(r) = A [1 + cos(pi r / r_c)]`` for ``r < r_c`` (LAMMPS ``pair_style soft``).

Table columns after the cutoff ones: ``[A, pi / r_c, A pi / r_c]`` (``r_c`` the pair's own cutoff)::

    V = A (1 + cos(pi r / r_c)),   F/r = A pi / r_c sin(pi r / r_c) / r   (0 at r = 0)

Energy and force both vanish at ``r_c`` by construction.
"""

from __future__ import annotations

import math

import numba

from .base import PairPotential


@numba.njit(inline="always", cache=True)
def soft_raw(r2, row):
    """Raw soft energy and force/r (row: [rc2, rc, e_c, f_c, A, pi/rc, A pi/rc])."""
    r = math.sqrt(r2)
    arg = row[5] * r
    force_over_r = row[6] * math.sin(arg) / r if r > 0.0 else 0.0
    return row[4] * (1.0 + math.cos(arg)), force_over_r


class Soft(PairPotential):
    """Soft cosine repulsion with per type-pair ``A`` (energy) and ``r_cut`` (length, part of the formula).

    Unlike pairs mix as in LAMMPS: ``A_ij = sqrt(A_i A_j)``, the cutoff by the mixing rule.

    Example
    -------
    >>> pot = Soft(r_cut=1.12246).pair_coeff(0, 0, A=10.0)
    """

    name = "soft"
    parameter_names = ("A",)
    cuda_header = "potentials/soft.cuh"
    lammps_styles = {"soft": (1, 1)}
    raw_pair_function = staticmethod(soft_raw)

    def _columns(self, p):
        k = math.pi / p["r_cut"]
        return [p["A"], k, p["A"] * k]

    def _mix(self, a, b):
        if a["A"] < 0 or b["A"] < 0:
            raise ValueError("soft: cannot mix a negative prefactor A; set the unlike pair explicitly")
        return {"A": math.sqrt(a["A"] * b["A"])}
