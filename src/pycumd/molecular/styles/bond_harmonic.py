"""bond_style harmonic: ``E = K (r - r0)^2`` (K energy/length^2, r0 length; LAMMPS' K holds the 1/2)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def bond_harmonic(r2, row):
    r = math.sqrt(r2)
    dr = r - row[1]
    rk = row[0] * dr
    fbond = -2.0 * rk / r if r > 0.0 else 0.0
    return rk * dr, fbond, 0


class BondHarmonic(BondedStyle):
    kind, lammps_style = "bond", "harmonic"
    coefficient_names = ("K", "r0")
    cuda_header = "molecular/styles/bond_harmonic.cuh"
    cpu_function = staticmethod(bond_harmonic)

    def equilibrium(self, type0: int) -> float:
        return self.coefficients[type0][1]
