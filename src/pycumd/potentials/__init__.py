"""Pair potentials: one scalar function of r^2 per potential, with CPU and CUDA forms side by side."""

from .base import CUTOFF_MODES, PairPotential
from .lennard_jones import LennardJones

__all__ = ["CUTOFF_MODES", "PairPotential", "LennardJones"]
