"""dihedral_style lepton (LAMMPS LEPTON package): ``dihedral_coeff N "EXPRESSION"`` with ``E = f(phi)``, ``f`` a
Lepton expression of ``phi``, the dihedral angle in radians in LAMMPS' range for this style,
``0 <= phi < 2 pi`` (the angle of :mod:`pycumd.molecular.styles.base`, in (-pi, pi], plus 2 pi where it is
negative: trans = pi, as every dihedral style); energy units out, no offset (LAMMPS has no offset
keyword for dihedrals).  CPU only for now (:mod:`pycumd.molecular.styles.lepton_terms`)."""

import math

import numba

from .base import BondedStyle
from .lepton_terms import LeptonTerms

TWO_PI = 2.0 * math.pi


def _wrap(raw):
    @numba.njit(inline="always")
    def dihedral_lepton(phi, row):
        if phi < 0.0:
            phi += TWO_PI
        return raw(phi, row)
    return dihedral_lepton


class DihedralLepton(LeptonTerms, BondedStyle):
    kind, lammps_style = "dihedral", "lepton"
    coefficient_names = ("expression",)
    cuda_header = "molecular/styles/dihedral_lepton.cuh"
    variable, meaning, reference = "phi", "the dihedral angle in radians, 0 to 2 pi", None
    offset_keywords = False
    wrap = staticmethod(_wrap)
