"""Nuclear pasta: the semi-classical nucleon-nucleon model of Horowitz et al. (seed, eq. 4).

Protons (type 0, ``"p"``, ``tau = +1``) and neutrons (type 1, ``"n"``, ``tau = -1``) interact by::

    V_ij(r) = a exp(-r^2 / Lambda) + [b + c tau_i tau_j] exp(-r^2 / (2 Lambda))
              + (protons only) e^2 exp(-r / lambda) / r

with a = 110 MeV, b = -26 MeV, c = 24 MeV, Lambda = 1.25 fm^2 (chosen by Horowitz,
Perez-Garcia and Piekarewicz, Phys. Rev. C 69, 045804 (2004), to reproduce the saturation of
symmetric nuclear matter and a few properties of pure neutron matter and nuclei) and an electron
screening length lambda = 10 fm.  So ``b + c = -2`` MeV between like nucleons (nn, pp: weak
attraction, pure neutron matter is unbound) and ``b - c = -50`` MeV between a proton and a neutron.

Table columns after the cutoff ones: ``[a, b + c tau_i tau_j, 1/Lambda, C, kappa]`` with
``C = e^2`` for a proton pair and 0 otherwise::

    V   = a g1 + B g2 + C exp(-kappa r) / r,        g1 = exp(-r^2/Lambda), g2 = exp(-r^2/(2 Lambda))
    F/r = (2 a g1 + B g2) / Lambda + C exp(-kappa r) / r (1/r + kappa) / r

Cutoff: default 20 fm, where the nuclear terms are below 1e-60 MeV and the screened Coulomb
term is e^2 exp(-2) / 20 = 0.0097 MeV.  ``r_cut=None`` takes all pairs with the minimum image,
the choice of the seed's all-pairs IUMD kernels.
"""

from __future__ import annotations

import math

import numba

from ..units import E2_MEV_FM
from .base import MissingParameterError, PairPotential

PROTON, NEUTRON = 0, 1
TAU = {PROTON: 1.0, NEUTRON: -1.0}


@numba.njit(inline="always", cache=True)
def pasta_raw(r2, row):
    """Raw pasta energy and force/r (row: [rc2, rc, e_c, f_c, a, B, 1/Lambda, C, kappa])."""
    r = math.sqrt(r2)
    g1 = math.exp(-r2 * row[6])
    g2 = math.exp(-0.5 * r2 * row[6])
    vc = row[7] * math.exp(-row[8] * r) / r
    energy = row[4] * g1 + row[5] * g2 + vc
    force_over_r = (2.0 * row[4] * g1 + row[5] * g2) * row[6] + vc * (1.0 / r + row[8]) / r
    return energy, force_over_r


class NuclearPasta(PairPotential):
    """Horowitz nuclear-pasta model for two types: 0 = proton, 1 = neutron (``nuclear`` units).

    Parameters
    ----------
    a, b, c : float
        Strengths (MeV); defaults 110, -26, 24.
    Lambda : float
        Range parameter of the nuclear terms (fm^2); default 1.25.
    screening_length : float
        lambda of the proton-proton screened Coulomb term (fm); default 10.
    r_cut : float or None
        Cutoff (fm); default 20.  ``None``/``inf``: all pairs (minimum image).
    cutoff : {"truncate", "shift", "shift_force"}
    e2 : float
        e^2 / (4 pi eps0) (MeV fm); default 1.43996.

    Examples
    --------
    >>> pot = NuclearPasta()
    >>> e, f = pot.energy_and_force([1.0], 0, 1, n_types=2)   # a proton-neutron pair at 1 fm
    """

    name = "pasta"
    parameter_names = ("a", "b", "c", "Lambda", "tau_product", "coulomb", "screening_length")
    cuda_header = "potentials/pasta.cuh"
    raw_pair_function = staticmethod(pasta_raw)

    def __init__(self, a: float = 110.0, b: float = -26.0, c: float = 24.0, Lambda: float = 1.25,
                 screening_length: float = 10.0, r_cut: float | None = 20.0, cutoff: str = "truncate",
                 e2: float = E2_MEV_FM):
        all_pairs = r_cut is None or math.isinf(r_cut)
        if all_pairs and cutoff != "truncate":
            raise ValueError(f"pasta: cutoff treatment {cutoff!r} needs a finite r_cut")
        super().__init__(1.0 if all_pairs else r_cut, cutoff=cutoff, mixing="geometric")
        if all_pairs:
            self.r_cut = math.inf
        self.e2 = float(e2)
        for ti, tj in ((PROTON, PROTON), (PROTON, NEUTRON), (NEUTRON, NEUTRON)):
            self.pair_coeff(ti, tj, a=a, b=b, c=c, Lambda=Lambda, tau_product=TAU[ti] * TAU[tj],
                            coulomb=self.e2 if ti == tj == PROTON else 0.0,
                            screening_length=screening_length)

    def _validate(self, p):
        if not p["Lambda"] > 0 or not p["screening_length"] > 0 or not math.isfinite(p["screening_length"]):
            raise ValueError(f"pasta: Lambda and screening_length must be positive and finite, got {p}")

    def _columns(self, p):
        return [p["a"], p["b"] + p["c"] * p["tau_product"], 1.0 / p["Lambda"], p["coulomb"],
                1.0 / p["screening_length"]]

    def _mix(self, a, b):
        raise MissingParameterError("pasta: defined for two types only, 0 = proton and 1 = neutron")

    def describe(self) -> str:
        p = self.coefficients(PROTON, NEUTRON)
        rc = "none (all pairs)" if math.isinf(self.r_cut) else f"{self.r_cut:g}"
        return (f"{self.name} (a {p['a']:g}, b {p['b']:g}, c {p['c']:g} MeV, Lambda {p['Lambda']:g} fm^2, "
                f"lambda {p['screening_length']:g} fm, cutoff {rc}, {self.cutoff})")
