"""LAMMPS' mixing of per-type coefficients (``Pair::mix_energy``, ``Pair::mix_distance``) in one place."""

from __future__ import annotations

import math

from .base import MissingParameterError


def mix_energy(rule: str, eps_i: float, eps_j: float, sigma_i: float, sigma_j: float) -> float:
    """An energy scale of an unlike pair (LAMMPS ``Pair::mix_energy``).

    ``geometric`` and ``arithmetic``: ``sqrt(eps_i eps_j)``; ``sixthpower``:
    ``2 sqrt(eps_i eps_j) sigma_i^3 sigma_j^3 / (sigma_i^6 + sigma_j^6)``.
    """
    if rule == "sixthpower":
        return 2.0 * math.sqrt(eps_i * eps_j) * sigma_i**3 * sigma_j**3 / (sigma_i**6 + sigma_j**6)
    return math.sqrt(eps_i * eps_j)


def no_mixing(name: str):
    """Raise the error of a LAMMPS style that does not mix (morse, buck, born, table, lepton)."""
    raise MissingParameterError(f"{name}: coefficients of unlike pairs are not mixed (as in LAMMPS); "
                                "set every pair of types explicitly")
