"""bond_style lepton (LAMMPS LEPTON package): ``bond_coeff N r0 "EXPRESSION"`` with ``E = f(r - r0) - offset``,
``f`` a Lepton expression of ``r``, the bond's deviation from r0 (length units; energy units out);
``bond_style lepton auto_offset`` (default): ``offset = f(0)``; ``no_offset``: 0.  The force is
``-f'(r - r0)`` along the bond.  CPU only for now (:mod:`pycumd.molecular.styles.lepton_terms`)."""

import math

import numba

from .base import BondedStyle
from .lepton_terms import LeptonTerms


def _wrap(raw):
    @numba.njit(inline="always")
    def bond_lepton(r2, row):
        r = math.sqrt(r2)
        e, dedr = raw(r - row[1], row)
        fbond = -dedr / r if r > 0.0 else 0.0
        return e - row[2], fbond, 0
    return bond_lepton


class BondLepton(LeptonTerms, BondedStyle):
    kind, lammps_style = "bond", "lepton"
    coefficient_names = ("r0", "expression")
    cuda_header = "molecular/styles/bond_lepton.cuh"
    variable, meaning, reference = "r", "the bond length minus r0", "r0"
    wrap = staticmethod(_wrap)

    def equilibrium(self, type0: int) -> float:
        return self.coefficients[type0][0]          # LAMMPS BondLepton::equilibrium_distance
