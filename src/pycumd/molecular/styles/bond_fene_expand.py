"""bond_style fene/expand: FENE of ``r - delta`` (LAMMPS ``BondFENEExpand``): with ``rs = r - delta``,
``E = -1/2 K R0^2 ln(1 - (rs/R0)^2) + 4 eps [(sigma/rs)^12 - (sigma/rs)^6] + eps`` (the LJ part below
``rs^2 < 2^(1/3) sigma^2``).  Coefficients K, R0, epsilon, sigma, delta; errors as bond_style fene."""

import math

import numba

from .base import BondedStyle, positive


@numba.njit(inline="always", cache=True)
def bond_fene_expand(r2, row):
    k, r0, eps, sigma, shift = row[0], row[1], row[2], row[3], row[4]
    r = math.sqrt(r2)
    rshift = r - shift
    rshiftsq = rshift * rshift
    r0sq = r0 * r0
    rlogarg = 1.0 - rshiftsq / r0sq
    err = 0
    if rlogarg < 0.1:
        err = 2 if rlogarg <= -3.0 else 1
        rlogarg = 0.1
    fbond = -k * rshift / rlogarg / r
    e = -0.5 * k * r0sq * math.log(rlogarg)
    if rshiftsq < 1.2599210498948732 * sigma * sigma:
        sr2 = sigma * sigma / rshiftsq
        sr6 = sr2 * sr2 * sr2
        fbond += 48.0 * eps * sr6 * (sr6 - 0.5) / rshift / r
        e += 4.0 * eps * sr6 * (sr6 - 1.0) + eps
    return e, fbond, err


class BondFENEExpand(BondedStyle):
    kind, lammps_style = "bond", "fene/expand"
    coefficient_names = ("K", "R0", "epsilon", "sigma", "delta")
    cuda_header = "molecular/styles/bond_fene_expand.cuh"
    cpu_function = staticmethod(bond_fene_expand)

    def row(self, values):
        positive("R0", values[1], "bond_style fene/expand")
        return list(values)

    def equilibrium(self, type0: int) -> float:
        return 0.97 * self.coefficients[type0][3] + self.coefficients[type0][4]
