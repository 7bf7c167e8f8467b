"""bond_style fene: ``E = -1/2 K R0^2 ln(1 - (r/R0)^2) + 4 eps [(sigma/r)^12 - (sigma/r)^6] + eps``, the
Lennard-Jones part only below ``2^(1/6) sigma`` (K energy/length^2, R0 length, eps energy, sigma length).

As LAMMPS (``BondFENE::compute``): where ``1 - (r/R0)^2 < 0.1`` the logarithm's argument is clamped to 0.1
(LAMMPS warns "FENE bond too long"; error code 1 here), and at ``<= -3`` the run stops ("Bad FENE bond",
code 2: :class:`~pycumd.molecular.bonded.BondedForces` raises naming the step and the atoms).
"""

import math

import numba

from .base import BondedStyle, positive

CUBEROOT2 = 2.0 ** (1.0 / 3.0)


@numba.njit(inline="always", cache=True)
def bond_fene(r2, row):
    k, r0, eps, sigma = row[0], row[1], row[2], row[3]
    r0sq = r0 * r0
    rlogarg = 1.0 - r2 / r0sq
    err = 0
    if rlogarg < 0.1:
        err = 2 if rlogarg <= -3.0 else 1
        rlogarg = 0.1
    fbond = -k / rlogarg
    e = -0.5 * k * r0sq * math.log(rlogarg)
    if r2 < 1.2599210498948732 * sigma * sigma:
        sr2 = sigma * sigma / r2
        sr6 = sr2 * sr2 * sr2
        fbond += 48.0 * eps * sr6 * (sr6 - 0.5) / r2
        e += 4.0 * eps * sr6 * (sr6 - 1.0) + eps
    return e, fbond, err


class BondFENE(BondedStyle):
    kind, lammps_style = "bond", "fene"
    coefficient_names = ("K", "R0", "epsilon", "sigma")
    cuda_header = "molecular/styles/bond_fene.cuh"
    cpu_function = staticmethod(bond_fene)

    def row(self, values):
        positive("R0", values[1], "bond_style fene")
        return list(values)

    def equilibrium(self, type0: int) -> float:
        return 0.97 * self.coefficients[type0][3]     # LAMMPS BondFENE::equilibrium_distance
