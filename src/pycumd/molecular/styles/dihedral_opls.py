"""dihedral_style opls: ``E = K1/2 (1 + cos phi) + K2/2 (1 - cos 2phi) + K3/2 (1 + cos 3phi) + K4/2 (1 - cos 4phi)``
(K1..K4 energy)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def dihedral_opls(phi, row):
    e = 0.5 * (row[0] * (1.0 + math.cos(phi)) + row[1] * (1.0 - math.cos(2.0 * phi))
               + row[2] * (1.0 + math.cos(3.0 * phi)) + row[3] * (1.0 - math.cos(4.0 * phi)))
    dedphi = 0.5 * (-row[0] * math.sin(phi) + 2.0 * row[1] * math.sin(2.0 * phi)
                    - 3.0 * row[2] * math.sin(3.0 * phi) + 4.0 * row[3] * math.sin(4.0 * phi))
    return e, dedphi


class DihedralOPLS(BondedStyle):
    kind, lammps_style = "dihedral", "opls"
    coefficient_names = ("K1", "K2", "K3", "K4")
    cuda_header = "molecular/styles/dihedral_opls.cuh"
    cpu_function = staticmethod(dihedral_opls)
