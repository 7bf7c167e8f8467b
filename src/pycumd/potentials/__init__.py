"""Pair potentials: one scalar function of r^2 per potential, with CPU and CUDA forms side by side."""

from .base import CUTOFF_MODES, PairPotential
from .born import Born
from .buckingham import Buckingham
from .formula import Formula
from .gauss import Gauss
from .lennard_jones import LennardJones
from .lj96 import LennardJones96
from .lj_coulomb import LJCoulomb
from .morse import Morse
from .soft import Soft
from .table import Table

__all__ = ["CUTOFF_MODES", "PairPotential", "LennardJones", "LennardJones96", "LJCoulomb", "Morse", "Soft",
           "Buckingham", "Born", "Gauss", "Formula", "Table"]
