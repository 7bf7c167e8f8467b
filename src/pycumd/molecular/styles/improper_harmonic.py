"""improper_style harmonic: ``E = K (chi - chi0)^2`` (K energy/radian^2, chi0 degrees), chi the angle between
the planes of atoms 1-2-3 and 2-3-4 in 0..180 degrees (LAMMPS ``ImproperHarmonic``: the unsigned dihedral
angle of the four atoms in the order given).  As LAMMPS, the force is ``2 K (chi - chi0) sin(chi) /
max(sin(chi), 0.001)`` along the gradient of chi (LAMMPS' SMALL clamp near planar atoms, kept so that the
trajectories agree)."""

import math

import numba

from .base import BondedStyle


@numba.njit(inline="always", cache=True)
def improper_harmonic(phi, row):
    chi = abs(phi)
    dchi = chi - row[1]
    sign = 1.0 if phi >= 0.0 else -1.0
    s = math.sin(chi)
    clamp = s / 0.001 if s < 0.001 else 1.0      # LAMMPS divides by max(sin chi, 0.001)
    return row[0] * dchi * dchi, 2.0 * row[0] * dchi * sign * clamp


class ImproperHarmonic(BondedStyle):
    kind, lammps_style = "improper", "harmonic"
    coefficient_names = ("K", "chi0")
    cuda_header = "molecular/styles/improper_harmonic.cuh"
    cpu_function = staticmethod(improper_harmonic)

    def row(self, values):
        return [values[0], math.radians(values[1])]
