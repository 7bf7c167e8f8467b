"""Integrators and thermostats.

:class:`VelocityVerlet` integrates the equations of motion (NVE, LAMMPS ``fix nve``); a
thermostat handed to it turns NVE into NVT: :class:`Langevin` (LAMMPS ``fix langevin``) adds
friction and noise forces, :class:`NoseHoover` (LAMMPS ``fix nvt``) scales velocities with a
Nose-Hoover chain.  A barostat handed to it as well (:class:`MTKBarostat`, LAMMPS ``fix npt/nph``;
:class:`CRescale`, stochastic cell rescaling) makes the box follow a target pressure.
"""

from .barostats import CRescale, MTKBarostat
from .langevin import Langevin
from .nose_hoover import NoseHoover
from .velocity_verlet import VelocityVerlet

__all__ = ["VelocityVerlet", "Langevin", "NoseHoover", "MTKBarostat", "CRescale"]
