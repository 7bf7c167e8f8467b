"""dihedral_style charmm: ``E = K [1 + cos(n phi - d)]`` (K energy, n integer >= 0, d integer degrees, w the
1-4 weight).  The weighted 1-4 pair (LAMMPS adds it to E_vdwl and E_coul) is computed by
:mod:`pycumd.long_range` with the lj/charmm pair styles (``lj/charmm/coul/long``, ``lj/charmm/coul/charmm``
and its implicit form); with other pair styles a weight other than 0 is refused when the forces are set up
(:mod:`pycumd.molecular.bonded`)."""

import math

import numba

from .base import BondedStyle, integer


@numba.njit(inline="always", cache=True)
def dihedral_charmm(phi, row):
    k, n, d = row[0], row[1], row[2]
    return k * (1.0 + math.cos(n * phi - d)), -k * n * math.sin(n * phi - d)


class DihedralCharmm(BondedStyle):
    kind, lammps_style = "dihedral", "charmm"
    coefficient_names = ("K", "n", "d", "w")
    cuda_header = "molecular/styles/dihedral_charmm.cuh"
    cpu_function = staticmethod(dihedral_charmm)

    def row(self, values):
        integer("n", values[1], "dihedral_style charmm")
        integer("d", values[2], "dihedral_style charmm")
        if not 0.0 <= values[3] <= 1.0:
            raise ValueError(f"dihedral_style charmm: weight w must be in 0..1, got {values[3]}")
        return [values[0], values[1], math.radians(values[2]), values[3]]

    def weights(self) -> dict:
        """type -> 1-4 weight w."""
        return {t: v[3] for t, v in self.coefficients.items()}
