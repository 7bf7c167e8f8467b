"""bond_style morse: ``E = D0 [1 - exp(-alpha (r - r0))]^2`` (D0 energy, alpha 1/length, r0 length)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def bond_morse(r2, row):
    d0, alpha, r0 = row[0], row[1], row[2]
    r = math.sqrt(r2)
    ralpha = math.exp(-alpha * (r - r0))
    fbond = -2.0 * d0 * alpha * (1.0 - ralpha) * ralpha / r if r > 0.0 else 0.0
    return d0 * (1.0 - ralpha) * (1.0 - ralpha), fbond, 0


class BondMorse(BondedStyle):
    kind, lammps_style = "bond", "morse"
    coefficient_names = ("D0", "alpha", "r0")
    cuda_header = "molecular/styles/bond_morse.cuh"
    cpu_function = staticmethod(bond_morse)

    def equilibrium(self, type0: int) -> float:
        return self.coefficients[type0][2]
