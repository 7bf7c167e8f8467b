"""angle_style charmm: harmonic in the angle plus a Urey-Bradley bond between the outer atoms,
``E = K (theta - theta0)^2 + K_ub (r13 - r_ub)^2`` (K energy/radian^2, theta0 degrees, K_ub
energy/length^2, r_ub length)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def angle_charmm(c, r13sq, row):
    rub = math.sqrt(r13sq)
    dr = rub - row[3]
    rk = row[2] * dr
    fub = -2.0 * rk / rub if rub > 0.0 else 0.0
    s = math.sqrt(1.0 - c * c)
    if s < 0.001:
        s = 0.001
    dtheta = math.acos(c) - row[1]
    tk = row[0] * dtheta
    return rk * dr + tk * dtheta, -2.0 * tk / s, fub


class AngleCharmm(BondedStyle):
    kind, lammps_style = "angle", "charmm"
    coefficient_names = ("K", "theta0", "K_ub", "r_ub")
    cuda_header = "molecular/styles/angle_charmm.cuh"
    cpu_function = staticmethod(angle_charmm)

    def row(self, values):
        return [values[0], math.radians(values[1]), values[2], values[3]]

    def equilibrium(self, type0: int) -> float:
        return math.radians(self.coefficients[type0][1])
