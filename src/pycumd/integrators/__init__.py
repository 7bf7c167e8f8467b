"""Integrators and thermostats.

:class:`VelocityVerlet` integrates the equations of motion (NVE, LAMMPS ``fix nve``); a
thermostat handed to it turns NVE into NVT: :class:`Langevin` (LAMMPS ``fix langevin``) adds
friction and noise forces, :class:`NoseHoover` (LAMMPS ``fix nvt``) scales velocities with a
Nose-Hoover chain.
"""

from .langevin import Langevin
from .nose_hoover import NoseHoover
from .velocity_verlet import VelocityVerlet

__all__ = ["VelocityVerlet", "Langevin", "NoseHoover"]
