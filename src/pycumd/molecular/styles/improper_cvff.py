"""improper_style cvff: ``E = K [1 + d cos(n phi)]`` (K energy, d = +1 or -1, n an integer 0..6), phi the
dihedral angle of atoms 1-2-3-4."""

import math

import numba

from .base import BondedStyle, integer


@numba.njit(inline="always", cache=True)
def improper_cvff(phi, row):
    k, d, n = row[0], row[1], row[2]
    return k * (1.0 + d * math.cos(n * phi)), -k * d * n * math.sin(n * phi)


class ImproperCvff(BondedStyle):
    kind, lammps_style = "improper", "cvff"
    coefficient_names = ("K", "d", "n")
    cuda_header = "molecular/styles/improper_cvff.cuh"
    cpu_function = staticmethod(improper_cvff)

    def row(self, values):
        integer("d", values[1], "improper_style cvff", {-1, 1})
        integer("n", values[2], "improper_style cvff", set(range(7)))
        return list(values)
