"""Unit systems, with LAMMPS' constants so that thermo output matches LAMMPS digit for digit.

Each unit system fixes the units of mass, length, time and energy and the conversion
factors the equations of motion need:

``boltz``   Boltzmann constant in energy / temperature
``mvv2e``   mass * velocity^2 -> energy
``ftm2v``   force * time / mass -> velocity
``nktv2p``  (energy / volume) -> pressure

Supported: ``lj`` (reduced), ``metal`` (eV, Angstrom, ps, g/mol, K, bar) and ``real``
(kcal/mol, Angstrom, fs, g/mol, K, atm).  Values are those of LAMMPS' ``update.cpp``.

``nuclear`` (for ions of compact stars and nucleons; not a LAMMPS style) measures energy in MeV,
length in fm, time in fm/c and mass in MeV/c^2.  With c = 1 a velocity is a fraction of c, so
``mvv2e = ftm2v = 1``; temperature is given as k_B T in MeV (``boltz = 1``) and pressure in
MeV/fm^3 (``nktv2p = 1``).  Masses in atomic mass units convert with :func:`amu_to_mev`
(1 u = 931.49410242 MeV/c^2); the Coulomb constant is :data:`E2_MEV_FM` =
e^2 / (4 pi eps0) = alpha hbar c = 1.43996 MeV fm.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class UnitSystem:
    """Constants of one unit system (see module docstring)."""

    name: str
    boltz: float
    mvv2e: float
    ftm2v: float
    nktv2p: float
    dt: float  #: default time step, in this system's time unit
    energy: str
    length: str
    time: str
    mass: str
    temperature: str
    pressure: str
    normalize_thermo: bool  #: LAMMPS divides extensive thermo by N in lj units only


UNIT_SYSTEMS = {
    "lj": UnitSystem("lj", 1.0, 1.0, 1.0, 1.0, 0.005, "epsilon", "sigma", "tau", "m",
                     "epsilon/kB", "epsilon/sigma^3", True),
    "metal": UnitSystem("metal", 8.617343e-5, 1.0364269e-4, 1.0 / 1.0364269e-4, 1.6021765e6, 0.001,
                        "eV", "Angstrom", "ps", "g/mol", "K", "bar", False),
    "real": UnitSystem("real", 0.0019872067, 48.88821291 * 48.88821291,
                       1.0 / 48.88821291 / 48.88821291, 68568.415, 1.0,
                       "kcal/mol", "Angstrom", "fs", "g/mol", "K", "atm", False),
    "nuclear": UnitSystem("nuclear", 1.0, 1.0, 1.0, 1.0, 1.0,
                          "MeV", "fm", "fm/c", "MeV/c^2", "MeV", "MeV/fm^3", False),
}

AMU_MEV = 931.49410242  #: one atomic mass unit in MeV/c^2 (CODATA 2018)
HBAR_C_MEV_FM = 197.3269804  #: hbar c in MeV fm (CODATA 2018)
FINE_STRUCTURE = 7.2973525693e-3  #: alpha (CODATA 2018)
E2_MEV_FM = FINE_STRUCTURE * HBAR_C_MEV_FM  #: e^2 / (4 pi eps0) = 1.43996 MeV fm


def amu_to_mev(mass_amu):
    """Convert a mass (scalar or array) from atomic mass units to MeV/c^2 (``nuclear`` units).

    >>> round(amu_to_mev(12.0), 3)
    11177.929
    """
    return mass_amu * AMU_MEV


def get_units(name: str | UnitSystem) -> UnitSystem:
    """Look up a unit system by name; raises ``ValueError`` naming the known ones."""
    if isinstance(name, UnitSystem):
        return name
    try:
        return UNIT_SYSTEMS[name]
    except KeyError:
        raise ValueError(
            f"unknown unit system {name!r}: choose one of {', '.join(sorted(UNIT_SYSTEMS))}"
        ) from None
