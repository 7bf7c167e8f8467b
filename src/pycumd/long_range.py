"""Coulomb forces between per-atom charges: the real-space pass over the neighbour list, the special pairs'
corrections, and a k-space solver, around a pair force evaluator (LAMMPS ``*/coul/long`` pair styles
with a ``kspace_style``; also CHARMM's switched Coulomb of ``lj/charmm/coul/charmm[/implicit]``, the same
passes with :func:`coul_charmm_pair` for the ``erfc`` term and no solver: the potential's ``coulomb_kind``).

:class:`LongRangeForces` wraps the pair evaluator (a :class:`~pycumd.forces.PairForces`, or the
:class:`~pycumd.molecular.bonded.MolecularForces` around one), as MolecularForces wraps its pair
evaluator.  One evaluation:

1. the wrapped evaluator: the short-range pairs (Lennard-Jones, Buckingham, Born, or zero for
   ``coul/long`` alone) and, for a molecular system, the special pairs taken out of the list and the
   bonded terms;
2. the real-space Coulomb pass over the same (filtered) list, per-atom charges ``q``:
   ``E_ij = qqrd2e q_i q_j erfc(g r) / r``, ``F/r = qqrd2e q_i q_j (erfc(g r) / r + 2 g / sqrt(pi)
   exp(-g^2 r^2)) / r^2`` for ``r < r_cut_coul`` (CPU: Numba, the full or half list as the pair kernels
   have it; GPU: ``long_range.cu``, one thread per atom over the full list; a pass of its own, so the
   tuned pair kernels are unchanged for runs without it); with MSM's splitting (``*/coul/msm``, kspace_style
   msm) the same pass and kind evaluate ``qqrd2e q_i q_j [1/r - gamma(r/a)/a]`` instead (:func:`coul_long_pair`'s
   ``gcons``; on the GPU a module of its own compiled with ``COUL_MSM``);
3. the special pairs (``special_bonds`` coul factors ``f`` other than 1; they are not in the list): as
   LAMMPS' ``*/coul/long`` styles, the full ``erfc`` term less ``(1 - f) qqrd2e q_i q_j / r`` (so that
   an excluded pair, ``f = 0``, takes back the part of its interaction the k-space sum holds), within
   the Coulomb cutoff; one thread per atom over its special partners (no atomics);
4. the k-space solver (:class:`pycumd.kspace.base.KSpaceSolver`), which adds its forces; its energy and
   virial are global (not per atom): :meth:`LongRangeForces.global_energy_virial`.

Per-atom energies and virials (reporting steps) hold the pair, Coulomb real-space and bonded parts;
thermo adds the k-space energy and virial (:mod:`pycumd.bookkeeping`, :mod:`pycumd.outputs.thermo_keywords`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .contracts import ForceEvaluatorBase
from .forces import (ZERO_SUMS, add_own_sums, clear_chunk, full_pair, half_list_chunks,
                     min_image_separation, newton_pair, sum_chunks)
from .potentials.coul_long import COULOMB_CHARMM, COULOMB_CHARMM_IMPLICIT, COULOMB_LONG
from .potentials.lammps_args import QQRD2E
from .potentials.lj_charmm import charmm_switch
from .system import InputError

BLOCK = 128
#: 2 / sqrt(pi) (LAMMPS' EWALD_F)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


@numba.njit(inline="always")
def coul_long_pair(r2, qq, g, rc2, subtract, gcons):
    """``(E, F/r)`` of one pair at squared distance ``r2`` with ``qq = qqrd2e q_i q_j``, less
    ``subtract qq / r`` (``1 - factor_coul`` of a special pair, 0 otherwise); zero beyond the Coulomb
    cutoff ``rc2`` (squared).  ``gcons`` empty: the Ewald split ``erfc(g r)/r`` (``*/coul/long``, ``g``
    the Ewald parameter); otherwise MSM's split (``*/coul/msm``, LAMMPS' PairCoulMSM) with ``g = 1/a``
    (``a`` the cutoff) and ``gamma(rho) = sum_k gcons[k] rho^(2k)``: ``E = qq/r (1 - rho gamma(rho))``,
    ``F/r = qq/r (1 + rho^2 gamma'(rho)) / r^2``, ``rho = r/a``."""
    if not r2 < rc2:
        return 0.0, 0.0
    r = math.sqrt(r2)
    prefactor = qq / r
    if gcons.shape[0] == 0:
        gr = g * r
        erfc_gr = math.erfc(gr)
        e = prefactor * (erfc_gr - subtract)
        fr = prefactor * (erfc_gr + TWO_OVER_SQRT_PI * gr * math.exp(-gr * gr) - subtract) / r2
        return e, fr
    rho = r * g
    rho2 = rho * rho
    power = rho                       # rho^(2k+1)
    e_sum = 0.0                       # rho gamma(rho)
    f_sum = 0.0                       # rho^2 gamma'(rho)
    for k in range(gcons.shape[0]):
        e_sum += gcons[k] * power
        f_sum += 2.0 * k * gcons[k] * power
        power *= rho2
    e = prefactor * (1.0 - e_sum - subtract)
    fr = prefactor * (1.0 + f_sum - subtract) / r2
    return e, fr


@numba.njit(inline="always")
def coul_charmm_pair(r2, qq, factor, implicit, rc2, inner2, denom):
    """``(E, F/r)`` of one pair of LAMMPS' ``lj/charmm/coul/charmm`` Coulomb part at squared distance ``r2``
    (``qq = qqrd2e q_i q_j``, ``factor`` the special coul factor, 1 for a plain pair): ``E0 = qq / r``
    (``implicit``: ``qq / r^2``, ``lj/charmm/coul/charmm/implicit``), switched between the squared inner and
    outer cutoffs ``inner2`` and ``rc2`` with ``S1`` and ``S2`` of :func:`pycumd.potentials.lj_charmm.charmm_switch`
    (``denom = (rc2 - inner2)^3``): ``E = factor E0 S1``, ``r F = factor E0 S1`` (as LAMMPS' current
    ``PairLJCharmmCoulCharmm::compute``: not ``-r dE/dr``, which would add ``E0 S2``, between the cutoffs) and
    with ``implicit`` ``r F = factor 2 E0 (S1 + S2 / 2) = -r dE/dr``; zero at and beyond ``rc2``."""
    if not r2 < rc2:
        return 0.0, 0.0
    r2inv = 1.0 / r2
    if implicit:
        e = qq * r2inv
        force = 2.0 * e
    else:
        e = qq * math.sqrt(r2inv)
        force = e
    if r2 > inner2:
        switch1, switch2 = charmm_switch(r2, rc2, inner2, denom)
        if implicit:
            force *= switch1 + 0.5 * switch2
        else:
            force *= switch1
        e *= switch1
    return factor * e, factor * force * r2inv


@numba.njit(inline="always")
def coulomb_pair(r2, qq, factor, kind, rc2, a, b, gcons):
    """``(E, F/r)`` of one pair of the per-atom-charge Coulomb ``kind``
    (:data:`pycumd.potentials.coul_long.COULOMB_LONG`: :func:`coul_long_pair` with ``g = a`` and MSM's
    ``gcons`` (empty: erfc), a special pair's ``factor`` as LAMMPS' ``*/coul/long`` and ``*/coul/msm``;
    ``COULOMB_CHARMM`` / ``COULOMB_CHARMM_IMPLICIT``: :func:`coul_charmm_pair` with ``inner2 = a``,
    ``denom = b``)."""
    if kind == COULOMB_LONG:
        return coul_long_pair(r2, qq, a, rc2, 1.0 - factor, gcons)
    return coul_charmm_pair(r2, qq, factor, kind == COULOMB_CHARMM_IMPLICIT, rc2, a, b)


@numba.njit(inline="always")
def _store(i, sums, forces, energy, virial, coul_energy, with_energy):
    """Add atom i's sums of a full list (energy and virial halved) to the state's arrays and, with
    energies, its Coulomb energy to ``coul_energy[i]``."""
    forces[i, 0] += sums[0]
    forces[i, 1] += sums[1]
    forces[i, 2] += sums[2]
    if with_energy:
        e = 0.5 * sums[3]
        energy[i] += e
        coul_energy[i] += e
        for q in range(6):
            virial[i, q] += 0.5 * sums[4 + q]


@numba.njit(parallel=True, cache=True)
def coul_long_full(positions, charges, L, invL, nbr, nbr_count, qqrd2e, kind, rc2, pa, pb, gcons, forces, energy,
                   virial, coul_energy, with_energy):
    """The real-space pass over a full list (each pair from both atoms, in list order; the GPU's sums)."""
    for i in numba.prange(nbr_count.shape[0]):
        qi = qqrd2e * charges[i]
        sums = ZERO_SUMS
        for k in range(nbr_count[i]):
            j = nbr[i, k]
            dx, dy, dz, r2 = min_image_separation(positions, i, j, L, invL)
            e, fr = coulomb_pair(r2, qi * charges[j], 1.0, kind, rc2, pa, pb, gcons)
            sums = full_pair(dx, dy, dz, fr, e, with_energy, sums)
        _store(i, sums, forces, energy, virial, coul_energy, with_energy)


@numba.njit(parallel=True, cache=True)
def coul_long_half(positions, charges, L, invL, nbr, nbr_count, qqrd2e, kind, rc2, pa, pb, gcons, bounds, acc, vir,
                   with_energy):
    """The real-space pass over a half list (each pair once, Newton's third law), chunk t's sums in
    ``acc[t]`` (fx, fy, fz, e) and ``vir[t]`` (as :func:`pycumd.forces._make_cpu_half_kernel`; then
    :func:`pycumd.forces.sum_chunks`)."""
    n = nbr_count.shape[0]
    for t in numba.prange(bounds.shape[0] - 1):
        f = acc[t]
        w = vir[t]
        clear_chunk(f, w, bounds[t], n, with_energy)
        for i in range(bounds[t], bounds[t + 1]):
            qi = qqrd2e * charges[i]
            sums = ZERO_SUMS
            for k in range(nbr_count[i]):
                j = nbr[i, k]
                dx, dy, dz, r2 = min_image_separation(positions, i, j, L, invL)
                e, fr = coulomb_pair(r2, qi * charges[j], 1.0, kind, rc2, pa, pb, gcons)
                sums = newton_pair(dx, dy, dz, fr, e, j, f, w, with_energy, sums)
            add_own_sums(f, w, i, sums, with_energy)


@numba.njit(parallel=True, cache=True)
def coul_long_special(positions, charges, ids, row_of, start, partners, factors, L, invL, qqrd2e, kind, rc2, pa, pb,
                      gcons, forces, energy, virial, coul_energy, with_energy):
    """The special pairs (not in the list): for each atom row, its partners ``partners[start[id]:start[id + 1]]``
    (atom IDs) with their coul factors, the erfc term less ``(1 - factor) qq / r``.  ``positions`` and
    ``charges`` are the rows ``row_of`` names (one rank: the state's; spatial domains: the owned rows, then the
    ghosts); a partner without a row (-1: beyond a domain's ghost layer, so beyond the Coulomb cutoff, where
    the term is zero) is skipped."""
    for i in numba.prange(ids.shape[0]):
        a = ids[i]
        if start[a] == start[a + 1]:
            continue
        qi = qqrd2e * charges[i]
        sums = ZERO_SUMS
        for q in range(start[a], start[a + 1]):
            j = row_of[partners[q]]
            if j < 0:
                continue
            dx, dy, dz, r2 = min_image_separation(positions, i, j, L, invL)
            e, fr = coulomb_pair(r2, qi * charges[j], factors[q], kind, rc2, pa, pb, gcons)
            sums = full_pair(dx, dy, dz, fr, e, with_energy, sums)
        _store(i, sums, forces, energy, virial, coul_energy, with_energy)


def special_coulomb_pairs(topology) -> tuple:
    """``(start, partners, factors)``: for each atom ID ``a``, its special partners
    ``partners[start[a]:start[a + 1]]`` (IDs, sorted) whose pairs are not in the neighbour list (the
    special pairs whose lj and coul factors are not both 1: :meth:`~pycumd.molecular.topology.Topology.excluded_pairs`),
    and each pair's coul factor."""
    kinds = topology.special.kinds()
    n = len(topology.molecule)
    if all(k == "plain" for k in kinds):
        return np.zeros(n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0)
    pairs = topology.special_pairs()
    a, b, f = [], [], []
    for w, kind in zip((1, 2, 3), kinds):
        if kind != "plain":
            a.append(pairs[w][0])
            b.append(pairs[w][1])
            f.append(np.full(len(pairs[w][0]), float(topology.special.coul[w - 1])))
    a, b, f = (np.concatenate(x) for x in (a, b, f))
    order = np.lexsort((b, a))
    a, b, f = a[order], b[order], f[order]
    start = np.zeros(n + 1, np.int64)
    np.add.at(start, a + 1, 1)
    return np.cumsum(start), b, f


@numba.njit(parallel=True, cache=True)
def charmm_weighted_14(positions, charges, types, ids, row_of, start, partners, weights, lj14, n_types, L, invL, qqrd2e,
                       implicit, forces, energy, virial, coul_energy, with_energy):
    """The weighted 1-4 pairs of ``dihedral_style charmm`` (LAMMPS ``DihedralCharmm::compute``, one per
    dihedral of weight w > 0, no cutoff): ``w (LJ14 + qqrd2e q_i q_j / r)``, for each atom row over its
    entries ``partners[start[id]:start[id + 1]]`` (each pair from both atoms; energies halved).  ``implicit``
    (``lj/charmm/coul/charmm/implicit``): ``w qqrd2e q_i q_j / r^2`` with LAMMPS' force ``w qqrd2e q_i q_j / r^2``
    times ``r_ij / r^2`` (half of ``-dE/dr``: as LAMMPS' ``DihedralCharmm``, kept for agreement).  Their
    energies are pair energies, as LAMMPS tallies them: the Coulomb part also into ``coul_energy``."""
    for i in numba.prange(ids.shape[0]):
        a = ids[i]
        if start[a] == start[a + 1]:
            continue
        qi = qqrd2e * charges[i]
        sums = ZERO_SUMS
        ec = 0.0
        for q in range(start[a], start[a + 1]):
            j = row_of[partners[q]]
            dx, dy, dz, r2 = min_image_separation(positions, i, j, L, invL)
            r2inv = 1.0 / r2
            r6inv = r2inv * r2inv * r2inv
            row = lj14[types[i] * n_types + types[j]]
            w = weights[q]
            force_coul = qi * charges[j] * (r2inv if implicit else math.sqrt(r2inv))
            force_lj = r6inv * (row[0] * r6inv - row[1])
            fr = w * (force_lj + force_coul) * r2inv
            e_coul = w * force_coul
            e_lj = w * (r6inv * (row[2] * r6inv - row[3]))
            sums = full_pair(dx, dy, dz, fr, e_lj + e_coul, with_energy, sums)
            ec += e_coul
        forces[i, 0] += sums[0]
        forces[i, 1] += sums[1]
        forces[i, 2] += sums[2]
        if with_energy:
            energy[i] += 0.5 * sums[3]
            coul_energy[i] += 0.5 * ec
            for c in range(6):
                virial[i, c] += 0.5 * sums[4 + c]


def charmm_14_pairs(topology) -> tuple | None:
    """``(start, partners, weights)`` of the weighted 1-4 pairs of ``dihedral_style charmm``: for each atom ID
    ``a``, the end atoms of its dihedrals of weight w > 0 (one entry per dihedral, both ends), by ID; None
    where there are none."""
    style = topology.styles.get("dihedral")
    weights_of = getattr(style, "weights", None)
    if weights_of is None or not len(topology.terms["dihedral"]):
        return None
    weights = weights_of()
    w = np.array([weights.get(int(t), 0.0) for t in topology.types["dihedral"]])
    keep = w > 0.0
    if not keep.any():
        return None
    atoms = topology.terms["dihedral"][keep]
    a = np.concatenate([atoms[:, 0], atoms[:, 3]])
    b = np.concatenate([atoms[:, 3], atoms[:, 0]])
    w = np.concatenate([w[keep], w[keep]])
    order = np.argsort(a, kind="stable")
    a, b, w = a[order], b[order], w[order]
    start = np.zeros(len(topology.molecule) + 1, np.int64)
    np.add.at(start, a + 1, 1)
    return np.cumsum(start), b.astype(np.int64), w


class LongRangeForces(ForceEvaluatorBase):
    """A pair force evaluator with the Ewald-split Coulomb sum of per-atom charges (see the module
    docstring for the passes).

    Parameters
    ----------
    pair_forces : ForceEvaluator
        The short-range evaluator (PairForces, or MolecularForces around one) over the neighbour list.
    potential : pycumd.potentials.coul_long.CoulombLong
        The Coulomb cutoff, the Coulomb constant and the k-space solver.
    state : State
        The simulation state (its per-atom ``charges`` are read; None raises InputError).
    units : UnitSystem
    backend, precision : as chosen by :func:`pycumd.components.build_components`
    topology : Topology or None
        For the special pairs' corrections and the weighted 1-4 pairs of ``dihedral_style charmm``
        (molecular systems).
    n_types : int
        Atom types (the 1-4 LJ table's rows).
    decomposition : pycumd.parallel.domains.DomainDecomposition, optional
        Spatial domains over MPI ranks (CPU): ``pair_forces`` is then the domains' evaluator, the Coulomb pass
        runs over the owned atoms with the ghosts' positions and charges (``DomainNeighborList.forward``),
        the special pairs and the weighted 1-4 pairs of each owned atom over the extended rows
        (:meth:`_follow_domain`), and the solver sums its grid over the ranks
        (:meth:`pycumd.kspace.base.KSpaceSolver.set_communicator`).  The GPU over ranks raises
        NotImplementedError.
    """

    def __init__(self, pair_forces, potential, state, units, backend, precision, topology=None, n_types: int = 1,
                 decomposition=None):
        if potential.kspace is None and potential.long_range:
            raise InputError(f"pair_style {potential.name} needs a k-space solver (LAMMPS: 'Pair style requires a "
                             f"KSpace style'): add kspace_style ewald|pppm ACC, or CoulombLong(..., kspace=make_solver(...))")
        if state.charges is None:
            raise InputError(f"pair_style {potential.name} needs per-atom charges: read_data with atom_style charge "
                             f"or full, set ... charge Q, or System(..., charges=...)")
        if precision.composite:
            raise NotImplementedError(f"pair_style {potential.name} is not implemented in composite precision; use "
                                      f"'single', 'mixed' or 'double'")
        self.pair = pair_forces
        self.potential = potential
        self.backend = backend
        self.precision = precision
        self.solver = potential.kspace             # None: no k-space part (lj/charmm/coul/charmm)
        self.reads_fixed_image = pair_forces.reads_fixed_image
        self.kind = potential.coulomb_kind
        if potential.coulomb_constant is not None:
            self.qqrd2e = potential.coulomb_constant
        elif units.name in QQRD2E:
            self.qqrd2e = QQRD2E[units.name]
        else:
            raise InputError(f"pair_style {potential.name}: no Coulomb constant for units {units.name}")
        self.r_cut_coul = potential.r_cut_coul
        self.units_name = units.name
        self.decomposition = decomposition
        if decomposition is not None and backend.is_gpu:
            raise NotImplementedError(f"pair_style {potential.name} over MPI ranks runs on the CPU only; run the GPU "
                                      f"on one rank")
        self._ghost_charges = None
        #: MSM's splitting (*/coul/msm): kind 0's pass evaluates 1/r - gamma(r/a)/a instead of erfc(g r)/r
        self.msm = getattr(potential, "splitting", "ewald") == "msm"
        #: MSM's gamma coefficients (coul_long_pair's gcons); empty: erfc (and the kinds without a solver)
        self._gcons = np.zeros(0)
        self.g_ewald = 0.0
        if self.solver is not None:
            self._setup_solver(state)
            self.solver.control = pair_forces.control
        #: captured in CUDA graphs only where the wrapped evaluator and the (set-up) solver, if any, both may be
        self.capturable = bool(pair_forces.capturable and (self.solver is None or self.solver.capturable))
        #: (rc2, pa, pb) of coulomb_pair
        self.coulomb_parameters = tuple(float(x) for x in potential.coulomb_parameters(self.g_ewald))
        #: kspace_style msm with pressure/scalar yes (LAMMPS' default): the Coulomb pass's virial is its energy / 3
        #: on the diagonal (LAMMPS' PairCoulMSM), and the pressure tensor's components are refused (thermo)
        self.scalar_pressure_only = self.msm and bool(getattr(self.solver, "pressure_scalar", False))
        self._scratch_virial = None
        xp = backend.xp
        self.coul_energy = xp.zeros(state.n_atoms)
        self._elong, self._virial, self._ecoul = 0.0, np.zeros(6), 0.0
        self.special = self.weighted_14 = self.row_of = None
        if topology is not None:
            start, partners, factors = special_coulomb_pairs(topology)
            if len(partners):
                self.special = {"start": xp.asarray(start), "partners": xp.asarray(partners),
                                "factors": xp.asarray(factors)}
            self.weighted_14 = self._weighted_14(topology, potential, n_types, xp)
            if self.special is not None or self.weighted_14 is not None:
                self.row_of = xp.full(len(topology.molecule), -1, np.int32 if backend.is_gpu else np.int64)
        #: spatial domains: the list build whose extended rows ``row_of`` maps (:meth:`_follow_domain`)
        self._mapped_build = -1
        self._chunks = None
        if backend.is_gpu:
            defines = dict(precision.cuda_defines)
            if self.msm:                 # a module of its own: coul/long's kernels stay as they are
                defines.update({"COUL_MSM": 1, "MSM_SPLIT": len(self._gcons) - 1})
            module = backend.kernel_module("long_range.cu", defines, options=precision.cuda_options)
            name = {COULOMB_LONG: "coul_long_pairs", COULOMB_CHARMM: "coul_charmm_pairs",
                    COULOMB_CHARMM_IMPLICIT: "coul_charmm_implicit_pairs"}[self.kind]
            self._pairs = (module.get_function(name), module.get_function(f"{name}_energy"))
            self._special_kernel = module.get_function("coul_long_special")
            self._row_map = module.get_function("long_range_row_map")
            self._weighted_14_kernel = module.get_function("charmm_weighted_14")

    @staticmethod
    def _weighted_14(topology, potential, n_types, xp):
        """The weighted 1-4 pairs of dihedral_style charmm (w > 0) with the short-range part's 1-4 LJ table;
        None without them.  Only lj/charmm/coul/long and lj/charmm/coul/charmm[/implicit] have the 1-4
        coefficients (LAMMPS: 'Dihedral charmm is incompatible with Pair style' otherwise)."""
        pairs = charmm_14_pairs(topology)
        if pairs is None:
            return None
        lj14_table = getattr(potential.short, "lj14_table", None)
        if lj14_table is None:
            raise InputError(f"dihedral_style charmm with a 1-4 weight w > 0 needs pair_style lj/charmm/coul/long or "
                             f"lj/charmm/coul/charmm (their eps14 sigma14), not {potential.name} (LAMMPS: 'Dihedral "
                             f"charmm is incompatible with Pair style')")
        special = topology.special
        if float(special.lj[2]) != 0.0 or float(special.coul[2]) != 0.0:
            raise InputError(f"dihedral_style charmm with a 1-4 weight w > 0 and pair_style {potential.name} needs "
                             f"the 1-4 special factors 0 (special_bonds charmm; LAMMPS: 'Must use 'special_bonds "
                             f"charmm' with dihedral style charmm for use with CHARMM pair styles'), got lj "
                             f"{float(special.lj[2]):g} coul {float(special.coul[2]):g}")
        start, partners, weights = pairs
        return {"start": xp.asarray(start), "partners": xp.asarray(partners), "weights": xp.asarray(weights),
                "lj14": xp.asarray(lj14_table(n_types)), "n_types": n_types,
                "implicit": bool(getattr(potential, "implicit", False))}

    # -- the k-space solver -------------------------------------------------------------------
    def _setup_solver(self, state) -> None:
        """Set the solver up for the state's box and charges (once: a new box, a barostat's, is the solver's
        to follow inside its ``compute``, as LAMMPS' ``KSpace::setup`` keeps g_ewald and the grid); LAMMPS'
        table size of the real-space Coulomb (``pair_modify table``) for its error estimate."""
        box = tuple(float(x) for x in state.box_lengths)
        charges = np.asarray(self.backend.to_host(state.charges), dtype=np.float64)
        if self.decomposition is not None:       # the solver's parameters read every charge, in id order (as 1 rank)
            parts = self.decomposition.owners.allgather((np.asarray(self.backend.to_host(state.ids)), charges))
            ids = np.concatenate([p[0] for p in parts])
            charges = np.concatenate([p[1] for p in parts])[np.argsort(ids, kind="stable")]
            self.solver.set_communicator(self.decomposition.owners)
        if (getattr(self.solver, "splitting", "ewald") == "msm") != self.msm:
            raise InputError(f"pair_style {self.potential.name} and kspace_style {self.solver.name} do not go together: "
                             f"kspace_style msm needs a */coul/msm pair style and a */coul/msm style needs kspace_style "
                             f"msm (LAMMPS: 'KSpace style is incompatible with Pair style')")
        self.solver.setup(np.asarray(box), charges, self.r_cut_coul, self.qqrd2e, self.backend, self.precision,
                          self.units_name, table_bits=self.potential.table_bits)
        if self.msm:
            # the pair style takes the solver's cutoff (LAMMPS' MSM::init adjusts it) and its splitting
            # (CoulombLong.coulomb_parameters' rc2 is r_cut_pair's: the two must be one cutoff)
            self.r_cut_coul = float(self.solver.r_cut)
            if abs(self.r_cut_coul - self.potential.r_cut_pair) > 1e-12 * self.potential.r_cut_pair:
                raise InputError(f"pair_style {self.potential.name}: the solver's Coulomb cutoff {self.r_cut_coul:g} "
                                 f"is not the pair style's {self.potential.r_cut_pair:g} (CoulombLong.resolve_cutoff "
                                 f"must run before the list is made)")
            self.g_ewald = 1.0 / self.r_cut_coul
            self._gcons = np.asarray(self.solver.gamma_coefficients(), dtype=np.float64)
            return
        self._gcons = np.zeros(0)
        self.g_ewald = float(self.solver.g_ewald)
        if not self.g_ewald > 0:
            raise InputError(f"kspace_style {self.solver.name}: g_ewald is {self.g_ewald} after its set-up")

    # -- the contract ---------------------------------------------------------------------------
    @property
    def control(self):
        """The wrapped evaluator's step-control array (:attr:`pycumd.contracts.ForceEvaluator.control`)."""
        return self.pair.control

    @control.setter
    def control(self, array) -> None:
        self.pair.control = array
        if self.solver is not None:
            self.solver.control = array

    def compute(self, state, neighbors, with_energy: bool, **options) -> None:
        self.pair.compute(state, neighbors, with_energy, **options)
        self.compute_coulomb(state, neighbors, with_energy)

    def compute_real_space(self, state, neighbors, with_energy: bool) -> None:
        """Pass 2 and 3 of the module docstring alone: the real-space ``erfc`` pass over the list, the
        special pairs' corrections and the weighted 1-4 pairs, added into ``state.forces`` (and with ``with_energy`` the per-atom
        energies and virials).  :meth:`compute` runs it after the wrapped evaluator; a benchmark times it
        on its own (``pycumd bench charged``)."""
        if self.coul_energy.shape[0] != state.n_atoms:
            self.coul_energy = self.backend.xp.zeros(state.n_atoms)
        if with_energy:
            self.coul_energy.fill(0.0)
        if self.backend.is_gpu:
            self._compute_gpu(state, neighbors, with_energy)
        elif self.decomposition is not None:
            self._compute_cpu(state, neighbors, with_energy, *self._extended(state, neighbors))
        else:
            self._compute_cpu(state, neighbors, with_energy)

    def compute_coulomb(self, state, neighbors, with_energy: bool) -> None:
        """All of the Coulomb sum (:meth:`compute_real_space`, then the k-space solver if there is one),
        added into ``state.forces``; without the wrapped evaluator's short-range and bonded forces.  Into
        zeroed forces it gives the Coulomb force alone (force units), as ``pycumd bench charged`` measures
        its error."""
        self.compute_real_space(state, neighbors, with_energy)
        if self.solver is not None:
            self.solver.compute(state.positions, state.charges, state.box_lengths, state.forces, with_energy)
        if with_energy:
            if self.solver is not None:
                self._elong = float(self.solver.energy)
                self._virial = np.asarray(self.solver.virial, dtype=np.float64).copy()
            self._ecoul = float(self.coul_energy.sum())

    def _extended(self, state, neighbors) -> tuple:
        """Spatial domains: the positions and charges of the owned atoms and their ghosts (the list's sources),
        the ghosts' charges forwarded from their owners (LAMMPS' forward communication of q)."""
        if neighbors.half:
            raise NotImplementedError("the Coulomb pass over MPI domains needs the full neighbour list")
        positions = neighbors.extended
        n = state.n_atoms
        q = self._ghost_charges
        if q is None or q.shape[0] != positions.shape[0]:
            q = self._ghost_charges = np.empty(positions.shape[0])
        q[:n] = state.charges
        neighbors.forward(q)
        return positions, q

    def _compute_cpu(self, state, neighbors, with_energy: bool, positions=None, charges=None) -> None:
        """The real-space pass on the CPU over ``positions`` and ``charges`` (default the state's; spatial
        domains: the owned atoms' and their ghosts', :meth:`_extended`) for the state's atoms."""
        positions = state.positions if positions is None else positions
        charges = state.charges if charges is None else charges
        L = np.asarray(state.box_lengths, dtype=np.float64)
        invL = 1.0 / L
        rc2, pa, pb = self.coulomb_parameters
        kind = self.kind
        if neighbors.half:
            n = state.n_atoms
            n_chunks = max(1, min(numba.get_num_threads(), n))
            bounds = half_list_chunks(neighbors.nbr_count, n_chunks)
            if self._chunks is None or self._chunks[0].shape[:2] != (n_chunks, n):
                self._chunks = (np.empty((n_chunks, n, 4)), np.empty((n_chunks, n, 6)), np.empty((n, 3)),
                                np.empty(n), np.empty((n, 6)))
            acc, vir, f, e, w = self._chunks
            coul_long_half(positions, charges, L, invL, neighbors.nbr, neighbors.nbr_count, self.qqrd2e,
                           kind, rc2, pa, pb, self._gcons, bounds, acc, vir, with_energy)
            sum_chunks(bounds, acc, vir, f, e, w, with_energy)
            state.forces += f
            if with_energy:
                state.energy += e
                if not self.scalar_pressure_only:
                    state.virial += w
                self.coul_energy += e
        else:
            coul_long_full(positions, charges, L, invL, neighbors.nbr, neighbors.nbr_count, self.qqrd2e,
                           kind, rc2, pa, pb, self._gcons, state.forces, state.energy, self._coul_virial(state),
                           self.coul_energy, with_energy)
        types = state.types
        if self.row_of is not None and self.decomposition is None:
            self.row_of[state.ids] = np.arange(state.n_atoms)
        elif self.row_of is not None:        # spatial domains: the partners are owned or ghost rows
            types = neighbors.row_types
            if self._mapped_build != neighbors.n_builds:
                self._follow_domain(state, neighbors)
        if self.special is not None:
            sp = self.special
            coul_long_special(positions, charges, state.ids, self.row_of, sp["start"], sp["partners"],
                              sp["factors"], L, invL, self.qqrd2e, kind, rc2, pa, pb, self._gcons, state.forces,
                              state.energy, self._coul_virial(state), self.coul_energy, with_energy)
        if with_energy and self.scalar_pressure_only:
            self._scalar_coulomb_virial(state)
        if self.weighted_14 is not None:
            w14 = self.weighted_14
            charmm_weighted_14(positions, charges, types, state.ids, self.row_of, w14["start"],
                               w14["partners"], w14["weights"], w14["lj14"], w14["n_types"], L, invL, self.qqrd2e,
                               w14["implicit"], state.forces, state.energy, state.virial, self.coul_energy, with_energy)

    def _follow_domain(self, state, neighbors) -> None:
        """Spatial domains, after each list build: ``row_of`` maps each global id to an extended row (owned
        or ghost; an atom present in several rows, a periodic image of its own domain, maps to one of them:
        they hold the same coordinates and charge, and the kernels take the minimum image), -1 for the atoms
        beyond the ghost layer.  The special pairs and the weighted 1-4 pairs are computed for the owned rows
        only, each from both of its atoms (energies and virials halved), so that the sums over the ranks
        count each pair once and no force goes back to another rank.  A special pair beyond the ghost layer
        (``r_cut + skin``) is beyond the Coulomb cutoff, where its correction is zero (the kernel skips it);
        a weighted 1-4 pair (no cutoff) of an owned atom beyond it stops the run with an error naming it."""
        ids = neighbors.extended_ids
        row_of = self.row_of
        row_of.fill(-1)
        row_of[ids] = np.arange(len(ids), dtype=row_of.dtype)
        self._mapped_build = neighbors.n_builds
        w14 = self.weighted_14
        if w14 is None:
            return
        start, partners = np.asarray(w14["start"]), np.asarray(w14["partners"])
        owned = np.asarray(state.ids, dtype=np.int64)
        counts = start[owned + 1] - start[owned]
        entries = np.repeat(start[owned] - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        missing = row_of[partners[entries]] < 0
        if missing.any():
            k = int(np.argmax(missing))
            a, b = int(np.repeat(owned, counts)[k]), int(partners[entries[k]])
            raise InputError(f"the weighted 1-4 pair of atoms {a} and {b} (dihedral_style charmm) reaches "
                             f"beyond the ghost layer of a domain: every 1-4 pair of an owned atom must lie within the "
                             f"cutoff plus skin of it; use fewer MPI ranks, or a longer cutoff or skin")

    def _compute_gpu(self, state, neighbors, with_energy: bool) -> None:
        n = state.n_atoms
        grid = ((n + BLOCK - 1) // BLOCK,)
        L = [np.float64(x) for x in state.box_lengths]
        invL = [np.float64(1.0 / x) for x in state.box_lengths]
        common = (*L, *invL, np.float64(self.qqrd2e), *(np.float64(x) for x in self.coulomb_parameters), state.forces,
                  state.energy, self._coul_virial(state), self.coul_energy)
        self._pairs[bool(with_energy)](grid, (BLOCK,), (self.control, state.positions, state.charges, neighbors.nbr,
                                                        neighbors.nbr_count, np.int32(n), np.int32(n), *common))
        if self.row_of is not None:
            self._row_map(grid, (BLOCK,), (state.ids, self.row_of, np.int32(n)))
        if self.special is not None:
            sp = self.special
            self._special_kernel(grid, (BLOCK,), (self.control, state.positions, state.charges, state.ids, self.row_of,
                                                  sp["start"], sp["partners"], sp["factors"], np.int32(n), *common,
                                                  np.int32(self.kind), np.int32(with_energy)))
        if with_energy and self.scalar_pressure_only:
            self._scalar_coulomb_virial(state)
        if self.weighted_14 is not None:
            w14 = self.weighted_14
            self._weighted_14_kernel(grid, (BLOCK,), (
                self.control, state.positions, state.charges, state.types, state.ids, self.row_of, w14["start"],
                w14["partners"], w14["weights"], w14["lj14"], np.int32(w14["n_types"]), np.int32(n), *L, *invL,
                np.float64(self.qqrd2e), state.forces, state.energy, state.virial, self.coul_energy,
                np.int32(w14["implicit"]), np.int32(with_energy)))

    def _coul_virial(self, state):
        """Where the Coulomb pass adds its virial: the state's, or under MSM's scalar pressure a scratch array
        (its tensor is replaced by :meth:`_scalar_coulomb_virial`)."""
        if not self.scalar_pressure_only:
            return state.virial
        if self._scratch_virial is None or self._scratch_virial.shape != state.virial.shape:
            self._scratch_virial = self.backend.xp.zeros_like(state.virial)
        return self._scratch_virial

    def _scalar_coulomb_virial(self, state) -> None:
        """LAMMPS' PairCoulMSM under ``pressure/scalar yes``: the Coulomb pairs' virial is their energy / 3 on
        the diagonal, zero off it (per atom: its Coulomb energy / 3)."""
        state.virial[:, :3] += (self.coul_energy / 3.0).astype(state.virial.dtype)[:, None]

    def image_of(self, state):
        return self.pair.image_of(state)

    def write_image(self, state) -> None:
        self.pair.write_image(state)

    def check_pair_errors(self, state) -> None:
        check = getattr(self.pair, "check_pair_errors", None)
        if check is not None:
            check(state)

    def bonded_energies(self) -> dict:
        return self.pair.bonded_energies()

    def global_energy_virial(self) -> tuple:
        """The k-space energy (energy units) and virial (6,) of the last evaluation with energies (over MPI
        domains: rank 0 of the owners gives them, the others zero, so that the sums over the ranks count them
        once)."""
        if self.decomposition is not None and self.decomposition.owners.rank != 0:
            return 0.0, np.zeros(6)
        return self._elong, self._virial.copy()

    def coulomb_energies(self) -> dict:
        """``{"ecoul": real-space Coulomb energy (special-pair corrections included), "elong": k-space
        energy}`` (energy units, whole system) of the last evaluation with energies (LAMMPS' thermo
        keywords ecoul and elong)."""
        if self.decomposition is not None:       # collective: the real-space part summed over the domains
            return {"ecoul": self.decomposition.owners.sum(self._ecoul), "elong": self._elong}
        return {"ecoul": self._ecoul, "elong": self._elong}

    def describe_solver(self) -> list:
        """The solver's lines as LAMMPS prints them at its set-up (none without a solver)."""
        return [] if self.solver is None else list(self.solver.describe())

    def __getattr__(self, name):
        if name.startswith("_") or name == "pair":
            raise AttributeError(name)
        return getattr(self.pair, name)


__all__ = ["LongRangeForces", "coul_charmm_pair", "coul_long_pair", "coulomb_pair", "special_coulomb_pairs",
           "TWO_OVER_SQRT_PI"]
