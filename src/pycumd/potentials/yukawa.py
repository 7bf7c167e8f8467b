"""Screened Coulomb (Yukawa) ions: ``V(r) = A_ij exp(-r / lambda) / r`` with ``A_ij = Z_i Z_j e^2``.

This is the interaction of the seed (IUMD) between fully ionised nuclei in white dwarfs and
neutron-star crusts, eq. (1): the degenerate electrons are not simulated, they only screen the
ion charges over the length ``lambda``.  A species is a particle *type* with a charge number
``Z`` (and a mass), so the pair parameter is the prefactor ``A_ij = Z_i Z_j e^2``
(energy x length; LAMMPS ``pair_style yukawa kappa`` with ``kappa = 1 / lambda`` and
``pair_coeff i j A``).

Table columns after the cutoff ones: ``[A, kappa]``::

    V = A exp(-kappa r) / r            F/r = V (1/r + kappa) / r

No cutoff (``r_cut=None`` or ``inf``) means *all pairs* with the minimum image: each particle
interacts with the nearest image of every other one.  This needs the all-pairs force path
(:class:`pycumd.neighbors.allpairs.AllPairsForces`), which ``Simulation(pair_method="auto")``
chooses by itself.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..units import E2_MEV_FM
from .base import MissingParameterError, PairPotential
from .lammps_args import check_count, numbers, qqrd2e, type_charges


@numba.njit(inline="always", cache=True)
def yukawa_raw(r2, row):
    """Raw Yukawa energy and force/r at squared distance ``r2`` (row: [rc2, rc, e_c, f_c, A, kappa]).

    Finite (zero) at ``r2 = inf``, so an infinite cutoff gives a zero shift.
    """
    r = math.sqrt(r2)
    energy = row[4] * math.exp(-row[5] * r) / r
    force_over_r = energy * (1.0 / r + row[5]) / r
    return energy, force_over_r


def _no_cutoff(r_cut) -> bool:
    return r_cut is None or math.isinf(r_cut)


class Yukawa(PairPotential):
    """Screened Coulomb with per type-pair ``prefactor`` A (energy x length) and global screening length.

    Parameters
    ----------
    screening_length : float
        lambda (length units), > 0; ``kappa = 1 / lambda``.
    r_cut : float or None
        Cutoff (length units).  ``None`` or ``inf``: all pairs with the minimum image.
    cutoff : {"truncate", "shift", "shift_force"}
        Cutoff treatment; only ``truncate`` without a cutoff.
    mixing : str
        Unlike pairs not set explicitly get the geometric mean of the like prefactors,
        ``sqrt(Z_i^2 e^2 Z_j^2 e^2) = Z_i Z_j e^2`` for positive charges (exact, whatever the
        rule); the rule applies to per-pair cutoffs only.
    e2 : float
        e^2 / (4 pi eps0) in energy x length; default 1.43996 MeV fm (``nuclear`` units).

    Examples
    --------
    Carbon and oxygen ions, screening length 100 fm, all pairs:

    >>> pot = Yukawa(screening_length=100.0).charges([6, 8])
    >>> round(pot.coefficients(0, 1)["prefactor"], 4)     # 6 * 8 * 1.43996
    69.1183
    """

    name = "yukawa"
    parameter_names = ("prefactor",)
    cuda_header = "potentials/yukawa.cuh"
    lammps_styles = {"yukawa": (2, 2), "coul/debye": (2, 2)}
    raw_pair_function = staticmethod(yukawa_raw)

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context):
        """``yukawa kappa rc`` (``pair_coeff I J A [rc]``: A exp(-kappa r) / r) and ``coul/debye kappa rc``
        (``pair_coeff I J [rc]``: qqrd2e q_i q_j exp(-kappa r) / r with the per-type charges)."""
        kappa, r_cut = numbers(global_args, f"pair_style {style}")
        pot = cls(1.0 / kappa, r_cut, cutoff=context.cutoff_mode, mixing=context.mixing)
        coeffs = [(i, j, numbers(values, f"pair_coeff {i + 1} {j + 1} ({style})")) for i, j, values in pair_coeffs]
        if style == "coul/debye":
            q = type_charges(style, context.charges, context.n_types)
            k = qqrd2e(context.units)
            for i, j, values in coeffs:
                check_count(style, values, 0, 1)
                extra = {"r_cut": values[0]} if values else {}
                pot.pair_coeff(i, j, prefactor=k * q[i] * q[j], **extra)
            for i in range(context.n_types):
                for j in range(i, context.n_types):
                    if (i, j) not in pot._coeffs:
                        pot.pair_coeff(i, j, prefactor=k * q[i] * q[j])
            return pot
        for i, j, values in coeffs:
            check_count(style, values, 1, 2)
            pot.pair_coeff(i, j, **dict(zip(("prefactor", "r_cut"), values)))
        return pot

    def __init__(self, screening_length: float, r_cut: float | None = None, cutoff: str = "truncate",
                 mixing: str = "geometric", e2: float = E2_MEV_FM):
        if not (screening_length > 0 and math.isfinite(screening_length)):
            raise ValueError(f"yukawa: screening_length must be positive and finite, got {screening_length}")
        all_pairs = _no_cutoff(r_cut)
        if all_pairs and cutoff != "truncate":
            raise ValueError(f"yukawa: cutoff treatment {cutoff!r} needs a finite r_cut; without a cutoff "
                             "(all pairs) only 'truncate' applies")
        super().__init__(1.0 if all_pairs else r_cut, cutoff=cutoff, mixing=mixing)
        if all_pairs:
            self.r_cut = math.inf
        self.screening_length = float(screening_length)
        self.e2 = float(e2)

    @property
    def kappa(self) -> float:
        """Inverse screening length (1 / length)."""
        return 1.0 / self.screening_length

    def charges(self, charge_numbers) -> "Yukawa":
        """Set every pair's prefactor from per-type charge numbers: ``A_ij = Z_i Z_j e^2``.

        Parameters
        ----------
        charge_numbers : sequence of float, length n_types
            ``Z`` of type 0, 1, ... (e.g. ``[6, 8]`` for carbon and oxygen).

        Returns ``self``.
        """
        z = [float(x) for x in np.atleast_1d(charge_numbers)]
        for i in range(len(z)):
            for j in range(i, len(z)):
                self.pair_coeff(i, j, prefactor=z[i] * z[j] * self.e2)
        return self

    def _columns(self, p):
        return [p["prefactor"], self.kappa]

    def _mix(self, a, b):
        pa, pb = a["prefactor"], b["prefactor"]
        if pa < 0 or pb < 0:
            raise MissingParameterError(
                "yukawa: cannot mix a negative like-pair prefactor; set the unlike pair explicitly "
                "(or use charges([...]), which sets every pair)")
        return {"prefactor": math.sqrt(pa * pb)}

    def describe(self) -> str:
        rc = "none (all pairs)" if math.isinf(self.r_cut) else f"{self.r_cut:g}"
        return f"{self.name} (screening length {self.screening_length:g}, cutoff {rc}, {self.cutoff})"
