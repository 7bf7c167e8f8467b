"""dihedral_style harmonic: ``E = K [1 + d cos(n phi)]`` (K energy, d = +1 or -1, n an integer >= 0)."""

import math

import numba

from .base import BondedStyle, integer


@numba.njit(inline="always", cache=True)
def dihedral_harmonic(phi, row):
    k, d, n = row[0], row[1], row[2]
    return k * (1.0 + d * math.cos(n * phi)), -k * d * n * math.sin(n * phi)


class DihedralHarmonic(BondedStyle):
    kind, lammps_style = "dihedral", "harmonic"
    coefficient_names = ("K", "d", "n")
    cuda_header = "molecular/styles/dihedral_harmonic.cuh"
    cpu_function = staticmethod(dihedral_harmonic)

    def row(self, values):
        integer("d", values[1], "dihedral_style harmonic", {-1, 1})
        if integer("n", values[2], "dihedral_style harmonic") < 0:
            raise ValueError(f"dihedral_style harmonic: n must be >= 0, got {values[2]}")
        return list(values)
