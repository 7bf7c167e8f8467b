"""angle_style cosine: ``E = K [1 + cos(theta)]`` (K energy)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def angle_cosine(c, r13sq, row):
    return row[0] * (1.0 + c), row[0], 0.0


class AngleCosine(BondedStyle):
    kind, lammps_style = "angle", "cosine"
    coefficient_names = ("K",)
    cuda_header = "molecular/styles/angle_cosine.cuh"
    cpu_function = staticmethod(angle_cosine)

    def equilibrium(self, type0: int) -> float:
        return math.pi
