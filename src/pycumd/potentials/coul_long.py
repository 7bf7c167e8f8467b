"""Ewald-split Coulomb between per-atom charges, with a short-range pair potential beside it: LAMMPS'
``coul/long``, ``lj/cut/coul/long``, ``buck/coul/long``, ``born/coul/long`` and ``lj/charmm/coul/long``; and
the MSM-split ``coul/msm``, ``lj/cut/coul/msm`` and ``lj/charmm/coul/msm`` (``splitting="msm"``: the
real-space term ``qqrd2e q_i q_j [1/r - gamma(r/a)/a]`` of MSM's splitting within the cutoff ``a``, with
``kspace_style msm``; docs/kspace.md).

The Coulomb energy of a periodic system is split with the Ewald parameter ``g`` (1/length):

``E = sum_pairs qqrd2e q_i q_j erfc(g r) / r``  (real space, within the Coulomb cutoff ``r_cut_coul``)
``  + E_long``                                   (reciprocal space: a k-space solver, ``kspace_style``)

The real-space term is evaluated over the neighbour list by :mod:`pycumd.long_range` (its own pass:
per-atom charges do not fit the per-type pair tables), with ``erfc`` of the C library (LAMMPS uses a
table, ``pair_modify table 12``, by default, or with ``table 0`` a polynomial approximation; see
docs/charged-systems.md for how far those differ), ``g`` the solver's ``g_ewald``, and per pair

``E = qqrd2e q_i q_j erfc(g r) / r``,  ``F/r = qqrd2e q_i q_j (erfc(g r) / r + 2 g / sqrt(pi) exp(-g^2 r^2)) / r^2``.

The short-range part (Lennard-Jones, Buckingham, Born) is the ordinary pair potential with its own
cutoffs (``pair_coeff``'s optional cutoff is that part's, as in LAMMPS).

This module only describes the model; :class:`CoulombLong` is what a ``Simulation`` takes as its
potential, and :func:`pycumd.components.build_components` builds the evaluator from it.
"""

from __future__ import annotations

import math

#: the per-atom-charge Coulomb kinds of the real-space pass (:mod:`pycumd.long_range`, ``long_range.cu``'s KIND):
#: the Ewald-split erfc term (this module), CHARMM's switched 1/r and 1/r^2 (:mod:`.coul_charmm`)
COULOMB_LONG, COULOMB_CHARMM, COULOMB_CHARMM_IMPLICIT = 0, 1, 2

#: LAMMPS pair style with per-atom charges through :mod:`pycumd.long_range` -> (its short-range pair style or
#: None, (fewest, most) pair_style arguments): the long-range ``*/coul/long`` and ``*/coul/msm`` styles and CHARMM's
#: switched ``lj/charmm/coul/charmm[/implicit]`` (no k-space: :mod:`.coul_charmm`)
LONG_RANGE_STYLES = {"coul/long": (None, (1, 1)), "lj/cut/coul/long": ("lj/cut", (1, 2)),
                     "buck/coul/long": ("buck", (1, 2)), "born/coul/long": ("born", (1, 2)),
                     "lj/charmm/coul/long": ("lj/charmm", (2, 3)),
                     "lj/charmm/coul/charmm": ("lj/charmm", (2, 4)),
                     "lj/charmm/coul/charmm/implicit": ("lj/charmm", (2, 4)),
                     "coul/msm": (None, (1, 1)), "lj/cut/coul/msm": ("lj/cut", (1, 2)),
                     "lj/charmm/coul/msm": ("lj/charmm", (2, 3))}
#: the styles whose real-space Coulomb is MSM's split ``1/r - gamma(r/a)/a`` (kspace_style msm), not erfc
MSM_STYLES = ("coul/msm", "lj/cut/coul/msm", "lj/charmm/coul/msm")
#: long-range styles LAMMPS has that pycumd does not implement yet
NOT_IMPLEMENTED_STYLES = ("lj/long/coul/long", "lj/cut/tip4p/long", "coul/long/soft", "lj/cut/coul/long/soft",
                          "born/coul/wolf", "lj/charmmfsw/coul/long", "lj/class2/coul/long", "buck/long/coul/long")


class CoulombLong:
    """The real-space part of an Ewald-split Coulomb sum between per-atom charges, a short-range pair
    potential beside it, and the k-space solver that supplies the rest.

    Parameters
    ----------
    r_cut_coul : float
        Real-space Coulomb cutoff (length units).
    short : PairPotential, optional
        The non-Coulomb part (e.g. ``LennardJones(10.0).pair_coeff(...)``); None: Coulomb only
        (LAMMPS ``coul/long``).
    kspace : pycumd.kspace.base.KSpaceSolver, optional
        The reciprocal-space solver (``pycumd.kspace.make_solver("pppm", 1e-4)``), which also gives
        ``g_ewald``.  Required to run (LAMMPS: "Pair style requires a KSpace style").
    coulomb_constant : float, optional
        ``qqrd2e`` (energy x length / charge^2); None: that of the system's unit system (LAMMPS' values:
        1 in lj, 332.06371 in real, 14.399645 in metal).
    name : str, optional
        The LAMMPS style name (for descriptions); default from ``short``.
    splitting : str, optional
        ``"ewald"`` (erfc, the ``*/coul/long`` styles) or ``"msm"`` (MSM's gamma, the ``*/coul/msm`` styles,
        with ``kspace_style msm``); None: ``"msm"`` for a ``*/coul/msm`` name, ``"ewald"`` otherwise.

    Examples
    --------
    >>> from pycumd.kspace import make_solver
    >>> lj = LennardJones(10.0).pair_coeff(0, 0, epsilon=0.1, sigma=3.0)
    >>> potential = CoulombLong(10.0, short=lj, kspace=make_solver("ewald", 1e-5))
    >>> Simulation(system_with_charges, potential)
    """

    #: capability flags read by :func:`pycumd.components.build_components`: per-atom charges and a
    #: real-space Coulomb pass (per_atom_coulomb), and a k-space solver (long_range)
    per_atom_coulomb = True
    long_range = True
    many_body = False
    #: the real-space pair function (:func:`pycumd.long_range.coulomb_pair`)
    coulomb_kind = COULOMB_LONG

    def __init__(self, r_cut_coul: float, short=None, kspace=None, coulomb_constant: float | None = None,
                 name: str | None = None, splitting: str | None = None):
        r_cut_coul = float(r_cut_coul)
        if not (r_cut_coul > 0 and math.isfinite(r_cut_coul)):
            raise ValueError(f"coul/long: the Coulomb cutoff must be positive and finite, got {r_cut_coul}")
        if short is not None and (getattr(short, "many_body", False) or getattr(short, "long_range", False)):
            raise ValueError(f"coul/long: the short-range part must be a pair potential, not {short.name}")
        self.r_cut_coul = r_cut_coul
        self.short = short
        self.kspace = kspace
        self.coulomb_constant = None if coulomb_constant is None else float(coulomb_constant)
        if splitting is None:
            splitting = "msm" if name in MSM_STYLES else "ewald"
        if splitting not in ("ewald", "msm"):
            raise ValueError(f"coul/long: splitting must be 'ewald' (erfc) or 'msm' (MSM's gamma), got {splitting!r}")
        #: ``"ewald"``: the real-space term ``erfc(g r)/r`` (``*/coul/long``); ``"msm"``: ``1/r - gamma(r/a)/a``
        #: of MSM's splitting (``*/coul/msm``, with ``kspace_style msm``)
        self.splitting = splitting
        suffix = "coul/msm" if splitting == "msm" else "coul/long"
        self.name = name or (suffix if short is None else f"{short.name}/{suffix}")
        #: the real-space Coulomb cutoff the pairs use: ``r_cut_coul``, or the cutoff the solver set
        #: (:meth:`resolve_cutoff`: MSM's ``cutoff/adjust``)
        self.r_cut_pair = r_cut_coul
        self.cutoff = "truncate" if short is None else short.cutoff
        #: LAMMPS' ``pair_modify table N`` (its real-space Coulomb table of 2^N points; 0: none): pycumd's
        #: erfc is exact either way, the solver's error estimate and its printed lines take it as LAMMPS does
        self.table_bits = 12
        self._zero = {}

    def max_cutoff(self, n_types: int) -> float:
        """The neighbour-list cutoff (length units): the larger of the Coulomb (:attr:`r_cut_pair`) and the
        short-range cutoffs."""
        short = 0.0 if self.short is None else self.short.max_cutoff(n_types)
        return max(self.r_cut_pair, short)

    def resolve_cutoff(self, system) -> float:
        """The real-space Coulomb cutoff (length units) for this system, set as :attr:`r_cut_pair` before the
        neighbour list is made: ``r_cut_coul``, unless the solver changes it (MSM with ``kspace_modify
        cutoff/adjust yes``, LAMMPS' default: from the accuracy, the box and the charges; the capability
        ``KSpaceSolver.adjusts_cutoff``).  Also checks that the splitting and the solver belong together."""
        solver = self.kspace
        if solver is not None:
            msm_solver = getattr(solver, "splitting", "ewald") == "msm"
            if msm_solver != (self.splitting == "msm"):
                raise ValueError(f"pair_style {self.name} and kspace_style {solver.name} do not go together: "
                                 f"kspace_style msm needs a */coul/msm pair style and a */coul/msm style needs kspace_style "
                                 f"msm (LAMMPS: 'KSpace style is incompatible with Pair style')")
        self.r_cut_pair = self.r_cut_coul
        if solver is not None and getattr(solver, "adjusts_cutoff", False) and system.charges is not None:
            from .lammps_args import QQRD2E

            qqrd2e = self.coulomb_constant if self.coulomb_constant is not None else QQRD2E.get(system.units.name)
            if qqrd2e is not None:
                self.r_cut_pair = float(solver.coulomb_cutoff(system.box.L, system.charges, self.r_cut_coul, qqrd2e,
                                                              system.units.name, table_bits=self.table_bits))
        return self.r_cut_pair

    def short_range(self, n_types: int):
        """The pair potential the pair evaluator runs: ``short``, or for ``coul/long`` alone a
        Lennard-Jones of zero strength (the pair pass then writes zeros, which the Coulomb pass adds to)."""
        if self.short is not None:
            return self.short
        if n_types not in self._zero:
            from .lennard_jones import LennardJones

            zero = LennardJones(self.r_cut_coul)
            for t in range(n_types):
                zero.pair_coeff(t, t, epsilon=0.0, sigma=1.0)
            self._zero[n_types] = zero
        return self._zero[n_types]

    def coulomb_parameters(self, g_ewald: float) -> tuple:
        """``(rc2, pa, pb)`` of :func:`pycumd.long_range.coulomb_pair`: the squared Coulomb cutoff the pairs use
        (:attr:`r_cut_pair`) and ``g_ewald`` (1/length): the Ewald parameter, or with MSM's splitting ``1/a``
        (``a`` the solver's cutoff, which :meth:`resolve_cutoff` made :attr:`r_cut_pair`)."""
        return self.r_cut_pair * self.r_cut_pair, float(g_ewald), 0.0

    def table(self, n_types: int):
        """The short-range part's parameter table (raises naming a type pair without coefficients)."""
        return self.short_range(n_types).table(n_types)

    def kernel_cache_key(self):
        return None if self.short is None else self.short.kernel_cache_key()

    def atomic_number_types(self):
        return None

    def describe(self) -> str:
        """One line for the style, then (once a simulation has set the solver up) the solver's lines as
        LAMMPS prints them at its init (G vector, grid or k-vectors, order, accuracy)."""
        short = "" if self.short is None else f"; short range {self.short.describe()}"
        solver = "no kspace_style" if self.kspace is None else f"kspace {self.kspace.name} {self.kspace.accuracy_relative:g}"
        text = f"{self.name} (coulomb cutoff {self.r_cut_coul:g}, {solver}{short})"
        if self.kspace is not None and getattr(self.kspace, "g_ewald", 0.0) > 0.0:
            try:
                text += "".join(f"\n{line}" for line in self.kspace.describe())
            except NotImplementedError:
                pass
        return text


def coul_long_from_lammps(style: str, global_args: list, pair_coeffs: list, *, n_types: int, cutoff_mode: str,
                          mixing: str, units: str, directory=None) -> CoulombLong:
    """The :class:`CoulombLong` of ``pair_style STYLE ARGS`` and its ``pair_coeff`` lines (the ``*/coul/msm``
    styles as their ``*/coul/long`` twins, with MSM's splitting; LAMMPS' forms:
    ``coul/long rc`` with ``pair_coeff * *``; ``lj/cut/coul/long rc_lj [rc_coul]`` with ``eps sigma [rc_lj]``;
    ``buck/coul/long rc_buck [rc_coul]`` with ``A rho C [rc_buck]``; ``born/coul/long rc_born [rc_coul]`` with
    ``A rho sigma C D [rc_born]``; ``lj/charmm/coul/long inner outer [rc_coul]`` with ``eps sigma [eps14 sigma14]``,
    mixed arithmetically unless ``mixing`` says otherwise, ``mixing=None``: the style's default).  The k-space
    solver is attached by the caller (``kspace_style``)."""
    from .lammps_args import numbers, qqrd2e
    from .lammps_styles import potential_from_lammps

    check_long_range_style(style, global_args)
    args = numbers(global_args, f"pair_style {style}")
    base = LONG_RANGE_STYLES[style][0]
    if base is None:
        for i, j, values in pair_coeffs:
            if len(values):
                raise ValueError(f"pair_coeff {i + 1} {j + 1} ({style}) takes no coefficients, got "
                                 f"{' '.join(map(str, values))}")
        return CoulombLong(args[0], None, coulomb_constant=qqrd2e(units), name=style)
    if style.startswith("lj/charmm/coul/charmm"):
        from .coul_charmm import coul_charmm_from_lammps

        return coul_charmm_from_lammps(style, args, pair_coeffs, mixing=mixing, units=units)
    if base == "lj/charmm":
        short = lj_charmm_from_lammps(style, args[0], args[1], pair_coeffs, mixing)
        return CoulombLong(args[2] if len(args) == 3 else args[1], short, coulomb_constant=qqrd2e(units), name=style)
    short = potential_from_lammps(base, [args[0]], pair_coeffs, n_types=n_types, cutoff_mode=cutoff_mode,
                                  mixing=mixing or "geometric", units=units, directory=directory)
    return CoulombLong(args[-1], short, coulomb_constant=qqrd2e(units), name=style)


def lj_charmm_from_lammps(style: str, r_inner: float, r_cut: float, pair_coeffs: list, mixing):
    """The switched LJ part (:class:`.lj_charmm.LJCharmm`) of a ``lj/charmm/coul/*`` style: LJ cutoffs ``r_inner``
    and ``r_cut``, ``pair_coeff I J eps sigma [eps14 sigma14]`` lines, mixed arithmetically unless ``mixing``
    says otherwise."""
    from .lammps_args import check_count, numbers
    from .lj_charmm import LJCharmm

    short = LJCharmm(r_inner, r_cut, mixing=mixing or "arithmetic")
    for i, j, values in pair_coeffs:
        values = numbers(values, f"pair_coeff {i + 1} {j + 1} ({style})")
        check_count(style, values, 2, 4)
        if len(values) == 3:
            raise ValueError(f"pair_coeff {i + 1} {j + 1} ({style}): give eps sigma or eps sigma eps14 sigma14")
        short.pair_coeff(i, j, **dict(zip(("epsilon", "sigma", "epsilon14", "sigma14"), values)))
    return short


def check_long_range_style(style: str, global_args: list) -> None:
    """A ValueError unless ``pair_style STYLE ARGS`` is a long-range style with its argument count;
    NotImplementedError for the long-range styles pycumd does not have."""
    if style in NOT_IMPLEMENTED_STYLES:
        raise NotImplementedError(f"pair_style {style} is not implemented (long-range styles: "
                                  f"{', '.join(LONG_RANGE_STYLES)})")
    lo, hi = LONG_RANGE_STYLES[style][1]
    if not lo <= len(global_args) <= hi:
        count = str(lo) if lo == hi else f"{lo} to {hi}"
        raise ValueError(f"pair_style {style} takes {count} argument(s), got {len(global_args)}")
    from .lammps_args import numbers

    numbers(global_args, f"pair_style {style}")


def is_long_range_style(style: str) -> bool:
    """Whether ``style`` is a LAMMPS pair style with a long-range Coulomb part (implemented or not)."""
    return style in LONG_RANGE_STYLES or style in NOT_IMPLEMENTED_STYLES


__all__ = ["COULOMB_CHARMM", "COULOMB_CHARMM_IMPLICIT", "COULOMB_LONG", "CoulombLong", "LONG_RANGE_STYLES", "MSM_STYLES",
           "NOT_IMPLEMENTED_STYLES", "check_long_range_style", "coul_long_from_lammps", "is_long_range_style",
           "lj_charmm_from_lammps"]
