"""angle_style cosine/squared: ``E = K [cos(theta) - cos(theta0)]^2`` (K energy, theta0 degrees)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def angle_cosine_squared(c, r13sq, row):
    dcos = c - row[1]
    tk = row[0] * dcos
    return tk * dcos, 2.0 * tk, 0.0


class AngleCosineSquared(BondedStyle):
    kind, lammps_style = "angle", "cosine/squared"
    coefficient_names = ("K", "theta0")
    cuda_header = "molecular/styles/angle_cosine_squared.cuh"
    cpu_function = staticmethod(angle_cosine_squared)

    def row(self, values):
        return [values[0], math.cos(math.radians(values[1]))]

    def equilibrium(self, type0: int) -> float:
        return math.radians(self.coefficients[type0][1])
