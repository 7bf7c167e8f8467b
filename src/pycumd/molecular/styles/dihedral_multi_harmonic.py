"""dihedral_style multi/harmonic: ``E = sum_{n=1..5} A_n cos(phi)^(n-1)`` (A1..A5 energy)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def dihedral_multi_harmonic(phi, row):
    c = math.cos(phi)
    e = row[0] + c * (row[1] + c * (row[2] + c * (row[3] + c * row[4])))
    dedc = row[1] + c * (2.0 * row[2] + c * (3.0 * row[3] + c * 4.0 * row[4]))
    return e, -dedc * math.sin(phi)


class DihedralMultiHarmonic(BondedStyle):
    kind, lammps_style = "dihedral", "multi/harmonic"
    coefficient_names = ("A1", "A2", "A3", "A4", "A5")
    cuda_header = "molecular/styles/dihedral_multi_harmonic.cuh"
    cpu_function = staticmethod(dihedral_multi_harmonic)
