"""Lennard-Jones 12-6 with CHARMM's energy switching between an inner and an outer cutoff: the
short-range part of LAMMPS ``pair_style lj/charmm/coul/long inner outer [cut_coul]``.

Table columns after the cutoff ones (``rc`` is the outer cutoff): ``lj1..lj4`` as ``lj/cut``, then
``r_in^2`` and ``(rc^2 - r_in^2)^3``.  For ``r^2 > r_in^2`` (LAMMPS ``PairLJCharmmCoulLong::compute``)::

    S1 = (rc^2 - r^2)^2 (rc^2 + 2 r^2 - 3 r_in^2) / (rc^2 - r_in^2)^3
    S2 = 12 r^2 (rc^2 - r^2) (r^2 - r_in^2) / (rc^2 - r_in^2)^3
    r F = r^-6 (lj1 r^-6 - lj2) S1 + V S2,   V_switched = V S1,   V = r^-6 (lj3 r^-6 - lj4)

``epsilon14`` and ``sigma14`` give the 1-4 table (:meth:`LJCharmm.lj14_table`) of the weighted 1-4 pairs of
``dihedral_style charmm`` (computed by :mod:`pycumd.long_range`).  Unlike pairs mix arithmetically by default,
as LAMMPS' CHARMM styles.  Also the LJ part of ``lj/charmm/coul/charmm`` (:mod:`.coul_charmm`).
"""

from __future__ import annotations

import numba

from .lennard_jones import LennardJones


@numba.njit(inline="always", cache=True)
def charmm_switch(r2, rc2, inner2, denom):
    """CHARMM's switching functions at squared distance ``r2`` between the squared inner and outer cutoffs
    ``inner2`` < ``r2`` < ``rc2`` (``denom = (rc2 - inner2)^3``): ``(S1, S2)`` with
    ``S1 = (rc2 - r2)^2 (rc2 + 2 r2 - 3 inner2) / denom`` (the factor on the energy) and
    ``S2 = 12 r2 (rc2 - r2) (r2 - inner2) / denom = -r dS1/dr``.  The one place for both the LJ switch
    here and the Coulomb switch of ``lj/charmm/coul/charmm`` (:func:`pycumd.long_range.coul_charmm_pair`);
    CUDA twin: ``potentials/charmm_switch.cuh``."""
    d = rc2 - r2
    switch1 = d * d * (rc2 + 2.0 * r2 - 3.0 * inner2) / denom
    switch2 = 12.0 * r2 * d * (r2 - inner2) / denom
    return switch1, switch2


@numba.njit(inline="always", cache=True)
def lj_charmm_raw(r2, row):
    """Switched LJ energy and force/r at squared distance ``r2``
    (row: [rc2, rc, e_c, f_c, lj1, lj2, lj3, lj4, r_in^2, (rc^2 - r_in^2)^3])."""
    r2inv = 1.0 / r2
    r6inv = r2inv * r2inv * r2inv
    force_lj = r6inv * (row[4] * r6inv - row[5])
    energy = r6inv * (row[6] * r6inv - row[7])
    if r2 > row[8]:
        switch1, switch2 = charmm_switch(r2, row[0], row[8], row[9])
        force_lj = force_lj * switch1 + energy * switch2
        energy = energy * switch1
    return energy, force_lj * r2inv


class LJCharmm(LennardJones):
    """Lennard-Jones with CHARMM switching from ``r_inner`` to ``r_cut`` (length units), per type pair
    ``epsilon`` (energy), ``sigma`` (length) and optionally ``epsilon14``, ``sigma14`` (default: the same).

    Example
    -------
    >>> lj = LJCharmm(8.0, 10.0).pair_coeff(0, 0, epsilon=0.1, sigma=3.2)
    """

    name = "lj/charmm"
    parameter_names = ("epsilon", "sigma", "epsilon14", "sigma14")
    cuda_header = "potentials/lj_charmm.cuh"
    lammps_styles: dict = {}          # LAMMPS' lj/charmm/coul/long: potentials.coul_long builds it
    raw_pair_function = staticmethod(lj_charmm_raw)

    def __init__(self, r_inner: float, r_cut: float, mixing: str = "arithmetic"):
        if not 0.0 < float(r_inner) < float(r_cut):
            raise ValueError(f"lj/charmm: the inner cutoff must be positive and below the outer one, got "
                             f"{r_inner} and {r_cut} (LAMMPS: 'Pair inner cutoff >= Pair outer cutoff')")
        super().__init__(r_cut, cutoff="truncate", mixing=mixing)
        self.r_inner = float(r_inner)

    def pair_coeff(self, type_i: int, type_j: int, **params) -> "LJCharmm":
        """``epsilon``, ``sigma`` and optionally ``epsilon14``, ``sigma14`` of a pair (0-based types); no
        per-pair cutoff (LAMMPS' CHARMM styles have global ones)."""
        if "r_cut" in params:
            raise ValueError(f"{self.name}: the cutoffs are global (no per-pair r_cut)")
        params.setdefault("epsilon14", params.get("epsilon"))
        params.setdefault("sigma14", params.get("sigma"))
        return super().pair_coeff(type_i, type_j, **params)

    def _columns(self, p):
        inner2, rc2 = self.r_inner * self.r_inner, p["r_cut"] * p["r_cut"]
        return super()._columns(p) + [inner2, (rc2 - inner2) ** 3]

    def _mix(self, a, b):
        plain = super()._mix(a, b)
        one_four = super()._mix({"epsilon": a["epsilon14"], "sigma": a["sigma14"]},
                                {"epsilon": b["epsilon14"], "sigma": b["sigma14"]})
        return {**plain, "epsilon14": one_four["epsilon"], "sigma14": one_four["sigma"]}

    def lj14_table(self, n_types: int):
        """(n_types * n_types, 4) float64: ``48 eps14 sigma14^12, 24 eps14 sigma14^6, 4 eps14 sigma14^12,
        4 eps14 sigma14^6`` of each type pair (mixed as the other coefficients): the weighted 1-4 pairs of
        ``dihedral_style charmm`` (LAMMPS' ``lj14_1..4``)."""
        import numpy as np

        rows = []
        for ti in range(n_types):
            for tj in range(n_types):
                p = self.coefficients(ti, tj)
                rows.append(LennardJones._columns(self, {"epsilon": p["epsilon14"], "sigma": p["sigma14"]}))
        return np.array(rows, dtype=np.float64)

    def describe(self) -> str:
        return f"{self.name} (switched {self.r_inner:g} to {self.r_cut:g}, mixing {self.mixing})"
