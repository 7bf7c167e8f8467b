"""CHARMM's switched Lennard-Jones and Coulomb between per-atom charges: LAMMPS ``pair_style
lj/charmm/coul/charmm inner outer [inner_coul outer_coul]`` and ``lj/charmm/coul/charmm/implicit`` (the
Coulomb term ``1/r^2``, a distance-dependent dielectric), no k-space.

Both parts are switched to zero between their inner and outer cutoffs with CHARMM's ``S1`` and ``S2``
(:func:`pycumd.potentials.lj_charmm.charmm_switch`; ``S1 = 1``, ``S2 = 0`` inside the inner cutoff)::

    E_lj   = V_lj S1,                    r F_lj   = -r dV_lj/dr S1 + V_lj S2     (lj/charmm: LJCharmm)
    E_coul = qqrd2e q_i q_j / r S1,      r F_coul = qqrd2e q_i q_j / r S1
    implicit: E_coul = qqrd2e q_i q_j / r^2 S1,  r F_coul = 2 qqrd2e q_i q_j / r^2 (S1 + S2 / 2)

The Coulomb force of ``lj/charmm/coul/charmm`` between its inner and outer cutoffs is LAMMPS' (its current
``PairLJCharmmCoulCharmm::compute`` and ``single``), which is not ``-dE/dr`` there (that would add
``qqrd2e q_i q_j / r S2``): energy is not conserved exactly across the switching shell, in LAMMPS as here.
The implicit style's force is ``-dE/dr``.  The weighted 1-4 Coulomb of ``dihedral_style charmm`` with the
implicit style is ``w qqrd2e q_i q_j / r^2`` with LAMMPS' force ``w qqrd2e q_i q_j / r^2`` along ``r / r^2``
(half of ``-dE/dr``), also kept as LAMMPS has it.

with the special pairs' lj and coul factors (``special_bonds``) on each part, as LAMMPS'
``PairLJCharmmCoulCharmm::compute``.  ``pair_coeff I J eps sigma [eps14 sigma14]`` (unlike pairs mixed
arithmetically by default); ``eps14``, ``sigma14`` are the LJ of the weighted 1-4 pairs of
``dihedral_style charmm`` (``w (LJ14 + qqrd2e q_i q_j / r)``, ``/ r^2`` with ``implicit``; no switching, no
cutoff).

The LJ part runs in the ordinary pair kernels (:class:`~pycumd.potentials.lj_charmm.LJCharmm`); the Coulomb
part, the special pairs' coul factors and the weighted 1-4 pairs run in :mod:`pycumd.long_range`'s passes over
per-atom charges (``coulomb_kind``), as for ``lj/charmm/coul/long`` without the k-space solver.
"""

from __future__ import annotations

import math

from .coul_long import COULOMB_CHARMM, COULOMB_CHARMM_IMPLICIT


class CoulombCharmm:
    """CHARMM-switched Coulomb between per-atom charges beside the switched LJ of ``short``.

    Parameters
    ----------
    short : pycumd.potentials.lj_charmm.LJCharmm
        The LJ part, with its inner and outer cutoffs (length units) and eps14/sigma14.
    r_inner_coul, r_cut_coul : float, optional
        The Coulomb switching starts at ``r_inner_coul`` and ends at ``r_cut_coul`` (length units); default
        the LJ ones (LAMMPS' two-argument form).
    coulomb_constant : float, optional
        ``qqrd2e`` (energy x length / charge^2); None: that of the system's unit system.
    implicit : bool
        ``lj/charmm/coul/charmm/implicit``: ``qqrd2e q_i q_j / r^2``.

    Example
    -------
    >>> lj = LJCharmm(8.0, 10.0).pair_coeff(0, 0, epsilon=0.1, sigma=3.2, epsilon14=0.05, sigma14=3.0)
    >>> Simulation(system_with_charges, CoulombCharmm(lj))
    """

    #: capability flags (:func:`pycumd.components.build_components`): per-atom charges and the real-space
    #: pass of pycumd.long_range, no k-space solver
    per_atom_coulomb = True
    long_range = False
    many_body = False
    kspace = None
    table_bits = 0

    def __init__(self, short, r_inner_coul: float | None = None, r_cut_coul: float | None = None,
                 coulomb_constant: float | None = None, implicit: bool = False):
        if not hasattr(short, "lj14_table") or not hasattr(short, "r_inner"):
            raise ValueError(f"lj/charmm/coul/charmm: the LJ part must be lj/charmm (LJCharmm), not "
                             f"{getattr(short, 'name', short)}")
        r_inner_coul = short.r_inner if r_inner_coul is None else float(r_inner_coul)
        r_cut_coul = short.r_cut if r_cut_coul is None else float(r_cut_coul)
        if not (0.0 < r_inner_coul < r_cut_coul and math.isfinite(r_cut_coul)):
            raise ValueError(f"lj/charmm/coul/charmm: the Coulomb inner cutoff must be positive and below the outer "
                             f"one, got {r_inner_coul} and {r_cut_coul} (LAMMPS: 'Pair inner cutoff >= Pair outer "
                             f"cutoff')")
        self.short = short
        self.r_inner_coul = r_inner_coul
        self.r_cut_coul = r_cut_coul
        self.coulomb_constant = None if coulomb_constant is None else float(coulomb_constant)
        self.implicit = bool(implicit)
        self.coulomb_kind = COULOMB_CHARMM_IMPLICIT if implicit else COULOMB_CHARMM
        self.name = "lj/charmm/coul/charmm/implicit" if implicit else "lj/charmm/coul/charmm"
        self.cutoff = short.cutoff

    def coulomb_parameters(self, g_ewald: float = 0.0) -> tuple:
        """``(rc2, pa, pb)`` of :func:`pycumd.long_range.coulomb_pair`: the squared outer and inner Coulomb
        cutoffs and ``(rc2 - inner2)^3`` (``g_ewald`` unused)."""
        rc2 = self.r_cut_coul * self.r_cut_coul
        inner2 = self.r_inner_coul * self.r_inner_coul
        return rc2, inner2, (rc2 - inner2) ** 3

    def max_cutoff(self, n_types: int) -> float:
        """The neighbour-list cutoff (length units): the larger of the LJ and Coulomb outer cutoffs."""
        return max(self.r_cut_coul, self.short.max_cutoff(n_types))

    def short_range(self, n_types: int):
        """The pair potential the pair kernels run: the switched LJ."""
        return self.short

    def table(self, n_types: int):
        return self.short.table(n_types)

    def kernel_cache_key(self):
        return self.short.kernel_cache_key()

    def atomic_number_types(self):
        return None

    def describe(self) -> str:
        return (f"{self.name} (coulomb switched {self.r_inner_coul:g} to {self.r_cut_coul:g}; "
                f"{self.short.describe()})")


def coul_charmm_from_lammps(style: str, args: list, pair_coeffs: list, *, mixing, units: str) -> CoulombCharmm:
    """The :class:`CoulombCharmm` of ``pair_style lj/charmm/coul/charmm[/implicit] inner outer [inner_coul
    outer_coul]`` (numbers) and its ``pair_coeff I J eps sigma [eps14 sigma14]`` lines."""
    from .coul_long import lj_charmm_from_lammps
    from .lammps_args import qqrd2e

    if len(args) not in (2, 4):
        raise ValueError(f"pair_style {style} takes 2 or 4 arguments (inner outer [inner_coul outer_coul]), "
                         f"got {len(args)}")
    short = lj_charmm_from_lammps(style, args[0], args[1], pair_coeffs, mixing)
    coul = args[2:] if len(args) == 4 else (args[0], args[1])
    return CoulombCharmm(short, coul[0], coul[1], coulomb_constant=qqrd2e(units), implicit=style.endswith("/implicit"))


__all__ = ["CoulombCharmm", "coul_charmm_from_lammps"]
