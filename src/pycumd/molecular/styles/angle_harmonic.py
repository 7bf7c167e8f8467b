"""angle_style harmonic: ``E = K (theta - theta0)^2`` (K energy/radian^2, theta0 given in degrees)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def angle_harmonic(c, r13sq, row):
    s = math.sqrt(1.0 - c * c)
    if s < 0.001:
        s = 0.001
    dtheta = math.acos(c) - row[1]
    tk = row[0] * dtheta
    return tk * dtheta, -2.0 * tk / s, 0.0


class AngleHarmonic(BondedStyle):
    kind, lammps_style = "angle", "harmonic"
    coefficient_names = ("K", "theta0")
    cuda_header = "molecular/styles/angle_harmonic.cuh"
    cpu_function = staticmethod(angle_harmonic)

    def row(self, values):
        return [values[0], math.radians(values[1])]

    def equilibrium(self, type0: int) -> float:
        return math.radians(self.coefficients[type0][1])
