"""Reciprocal-space Coulomb solvers (LAMMPS ``kspace_style``): Ewald and PPPM.

See :mod:`pycumd.kspace.base` for the contract and ``docs/kspace.md`` for the methods.
"""

from pycumd.kspace.base import KSPACE_STYLES, KSpaceSolver, make_solver

__all__ = ["KSPACE_STYLES", "KSpaceSolver", "make_solver"]
