"""Builders for the compact-star systems of the IUMD paper: ion mixtures and nuclear pasta.

Both return ``(system, potential, dt)`` in ``nuclear`` units (MeV, fm, fm/c, MeV/c^2), ready for
:class:`~pycumd.simulation.Simulation`.  Starting positions are a jittered simple cubic lattice
(no close contacts), species assigned at random; velocities at the requested temperature.
"""

from __future__ import annotations

import math

import numpy as np

from .box import Box
from .potentials.pasta import NuclearPasta
from .potentials.yukawa import Yukawa
from .system import InputError, System, create_velocities
from .units import E2_MEV_FM, amu_to_mev

PROTON_MASS_MEV = 938.272
NEUTRON_MASS_MEV = 939.565


def _jittered_lattice(n: int, box_length: float, rng) -> np.ndarray:
    """n of the m^3 >= n sites of a simple cubic lattice filling the box, each moved by up to 10%
    of the spacing."""
    m = math.ceil(n ** (1 / 3) - 1e-9)
    spacing = box_length / m
    g = np.arange(m) + 0.5
    sites = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
    chosen = sites[rng.choice(len(sites), n, replace=False)]
    return (chosen + rng.uniform(-0.1, 0.1, chosen.shape)) * spacing


def _counts(fractions, n: int) -> np.ndarray:
    fractions = np.asarray(fractions, float)
    if (fractions < 0).any() or not math.isclose(fractions.sum(), 1.0, rel_tol=1e-6):
        raise InputError(f"species fractions must be >= 0 and add up to 1, got {fractions.tolist()}")
    counts = np.floor(fractions * n).astype(int)
    counts[np.argmax(fractions)] += n - counts.sum()
    return counts


def ion_mixture(charges, mass_numbers, fractions, n_ions: int, number_density: float, *,
                gamma: float | None = None, temperature: float | None = None,
                screening_length: float | None = None, screening_in_a: float = 2.0,
                r_cut: float | None = None, seed: int = 1):
    """A screened-Coulomb ion mixture, e.g. carbon-oxygen white-dwarf matter.

    Parameters
    ----------
    charges, mass_numbers, fractions : sequences, one entry per species (type)
        Charge number Z, mass in atomic mass units, number fraction (adding up to 1).
    n_ions : int
    number_density : float
        Ions per fm^3.
    gamma, temperature : float
        Exactly one: the coupling ``Gamma = <Z^2> e^2 / (a k T)`` with the ion-sphere radius
        ``a = (3 / (4 pi n))^(1/3)``, or ``k T`` in MeV.
    screening_length : float, optional
        lambda in fm; default ``screening_in_a * a``.
    r_cut : float, optional
        Cutoff in fm; None: all pairs.
    seed : int

    Returns
    -------
    (System, Yukawa, dt)
        ``dt = 0.05 / omega_p`` (fm/c), with the plasma frequency
        ``omega_p^2 = 4 pi n <Z^2> e^2 / <M>``.
    """
    z = np.asarray(charges, float)
    counts = _counts(fractions, n_ions)
    if not number_density > 0:
        raise InputError(f"number_density must be positive (ions per fm^3), got {number_density}")
    if (gamma is None) == (temperature is None):
        raise InputError("give exactly one of gamma or temperature")
    rng = np.random.default_rng(seed)
    box_length = (n_ions / number_density) ** (1 / 3)
    types = rng.permutation(np.repeat(np.arange(len(z)), counts)).astype(np.int32)
    masses = amu_to_mev(np.asarray(mass_numbers, float))
    system = System(Box([box_length] * 3), _jittered_lattice(n_ions, box_length, rng), masses, "nuclear",
                    types=types)
    a = (3 / (4 * math.pi * number_density)) ** (1 / 3)
    z2 = float(np.mean(z[types] ** 2))
    kT = temperature if temperature is not None else z2 * E2_MEV_FM / (a * gamma)
    create_velocities(system, kT, seed, loop="local")
    potential = Yukawa(screening_length or screening_in_a * a, r_cut).charges(z)
    omega_p = math.sqrt(4 * math.pi * number_density * z2 * E2_MEV_FM / float(np.mean(masses[types])))
    return system, potential, 0.05 / omega_p


def pasta(n_nucleons: int, proton_fraction: float, number_density: float, temperature: float, *,
          seed: int = 1, **potential_parameters):
    """Nucleons for the nuclear pasta potential (types: 0 proton, 1 neutron).

    ``potential_parameters`` go to :class:`~pycumd.potentials.pasta.NuclearPasta` (a, b, c, Lambda,
    screening_length, r_cut).  Returns ``(System, NuclearPasta, dt = 2 fm/c)``.
    """
    if not 0 <= proton_fraction <= 1:
        raise InputError(f"proton_fraction must lie in [0, 1], got {proton_fraction}")
    if not number_density > 0:
        raise InputError(f"number_density must be positive (nucleons per fm^3), got {number_density}")
    rng = np.random.default_rng(seed)
    box_length = (n_nucleons / number_density) ** (1 / 3)
    counts = _counts([proton_fraction, 1 - proton_fraction], n_nucleons)
    types = rng.permutation(np.repeat([0, 1], counts)).astype(np.int32)
    system = System(Box([box_length] * 3), _jittered_lattice(n_nucleons, box_length, rng),
                    [PROTON_MASS_MEV, NEUTRON_MASS_MEV], "nuclear", types=types)
    create_velocities(system, temperature, seed, loop="local")
    return system, NuclearPasta(**potential_parameters), 2.0
