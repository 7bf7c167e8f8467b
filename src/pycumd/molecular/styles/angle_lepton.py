"""angle_style lepton (LAMMPS LEPTON package): ``angle_coeff N theta0 "EXPRESSION"`` with
``E = f(theta - theta0) - offset``, ``f`` a Lepton expression of ``theta``, the angle's deviation from
theta0 in radians (theta0 given in degrees; energy units out); ``angle_style lepton auto_offset``
(default): ``offset = f(0)``; ``no_offset``: 0.  ``dE/dcos(theta) = -f' / sin(theta)``, the sine
clamped at 0.001 as LAMMPS does.  CPU only for now (:mod:`pycumd.molecular.styles.lepton_terms`)."""

import math

import numba

from .base import BondedStyle
from .lepton_terms import LeptonTerms


def _wrap(raw):
    @numba.njit(inline="always")
    def angle_lepton(c, r13sq, row):
        s = math.sqrt(1.0 - c * c)
        if s < 0.001:
            s = 0.001
        e, dedtheta = raw(math.acos(c) - row[1], row)
        return e - row[2], -dedtheta * (1.0 / s), 0.0
    return angle_lepton


class AngleLepton(LeptonTerms, BondedStyle):
    kind, lammps_style = "angle", "lepton"
    coefficient_names = ("theta0", "expression")
    cuda_header = "molecular/styles/angle_lepton.cuh"
    variable, meaning, reference = "theta", "the angle minus theta0, in radians", "theta0"
    wrap = staticmethod(_wrap)

    def reference_value(self, type0: int) -> float:
        return math.radians(self.coefficients[type0][0])

    def equilibrium(self, type0: int) -> float:
        return math.radians(self.coefficients[type0][0])     # LAMMPS AngleLepton::equilibrium_angle
