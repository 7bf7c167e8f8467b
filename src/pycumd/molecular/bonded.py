"""Bonded forces (bonds, angles, dihedrals, impropers) in a fixed summation order, on the CPU (Numba) and
the GPU (``bonded.cu``), and the exclusion of special pairs from the neighbour list.

Two passes, the same on both backends, so that the forces have the same bits in deterministic double
precision (where the style's functions are sqrt and arithmetic; ``acos``, ``atan2``, ``log``, ``exp``,
``cos`` and ``sin`` of CUDA's library and of the host's may differ in the last bit):

1. *terms*: one thread (prange iteration) per term: its atoms' rows through the ID -> row map
   (``row_of[id]``, written again at each evaluation: the rows move at neighbour builds, the IDs do
   not), the minimum-image vectors along the term, the style function, and the term's force on each
   of its atoms written to the term's own slots (``contrib``, (slots, 3) float64), its energy and
   virial to its own row (no two threads write the same place: no atomics);
2. *gather*: one thread per atom row: the sum of the slots of the atom's terms, in the fixed order of
   :meth:`~pycumd.molecular.topology.Topology.gather_lists` (kinds, then terms, in order), added to
   the pair force already in ``state.forces``; with energies, each term's energy and virial shared
   equally among its atoms (as LAMMPS' per-atom tallies).

Geometry: bond ``d = x0 - x1``; angle ``d1 = x0 - x1, d2 = x2 - x1``, ``c = d1.d2 / (r1 r2)`` clamped to
[-1, 1], ``f0 = a11 d1 + a12 d2 - d13 F_UB``, ``f2 = a22 d2 + a12 d1 + d13 F_UB`` with ``a = dE/dc``,
``a11 = a c / r1^2``, ``a12 = -a / (r1 r2)``, ``a22 = a c / r2^2``, ``d13 = d2 - d1`` (LAMMPS'
``AngleCharmm``); dihedral and improper ``b1 = x1 - x0, b2 = x2 - x1, b3 = x3 - x2``, ``m = b1 x b2``,
``n = b2 x b3``, ``phi = atan2(|b2| b1.n, m.n)`` and the forces ``-dE/dphi dphi/dx`` of Blondel and Karplus
(J. Comput. Chem. 17, 1132, 1996).  Virial of a term: ``sum_k (x_k - x_0) (x) f_k``.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np

from ..bookkeeping import SimulationError
from ..system import InputError
from ..contracts import ForceEvaluatorBase
from ..forces import min_image
from ..jit_cache import cache_kernel, source_key
from .styles.base import KINDS

BLOCK = 128
_CPU_TERM_KERNELS: dict = {}
_SMALL2 = 1e-300


@numba.njit(inline="always")
def _delta(positions, i, j, L, invL):
    """Minimum image of positions[i] - positions[j]."""
    return (min_image(positions[i, 0] - positions[j, 0], L[0], invL[0]),
            min_image(positions[i, 1] - positions[j, 1], L[1], invL[1]),
            min_image(positions[i, 2] - positions[j, 2], L[2], invL[2]))


@numba.njit(inline="always")
def _store_two_body(contrib, s, energy, virial, term, dx, dy, dz, fr, e, with_energy):
    """A two-body term's contributions (a bond, a scaled special pair): ``fr r_ij`` to slot s (atom i) and
    its opposite to slot s + 1 (atom j), and with ``with_energy`` its energy and virial in row ``term``."""
    contrib[s, 0], contrib[s, 1], contrib[s, 2] = dx * fr, dy * fr, dz * fr
    contrib[s + 1, 0], contrib[s + 1, 1], contrib[s + 1, 2] = -(dx * fr), -(dy * fr), -(dz * fr)
    if with_energy:
        energy[term] = e
        w = virial[term]
        w[0], w[1], w[2] = dx * dx * fr, dy * dy * fr, dz * dz * fr
        w[3], w[4], w[5] = dx * dy * fr, dx * dz * fr, dy * dz * fr


def _make_bond_kernel(fn):
    @numba.njit(parallel=True)
    def kernel(positions, row_of, atoms, which, types, table, L, invL, slot0, term0, contrib, energy, virial, errors,
               with_energy):
        for u in numba.prange(which.shape[0]):
            t = which[u]
            i, j = row_of[atoms[t, 0]], row_of[atoms[t, 1]]
            dx, dy, dz = _delta(positions, i, j, L, invL)
            e, fbond, err = fn(dx * dx + dy * dy + dz * dz, table[types[t]])
            errors[term0 + t] = err
            _store_two_body(contrib, slot0 + 2 * t, energy, virial, term0 + t, dx, dy, dz, fbond, e, with_energy)
    return kernel


def _make_angle_kernel(fn):
    @numba.njit(parallel=True)
    def kernel(positions, row_of, atoms, which, types, table, L, invL, slot0, term0, contrib, energy, virial, errors,
               with_energy):
        for u in numba.prange(which.shape[0]):
            t = which[u]
            i0, i1, i2 = row_of[atoms[t, 0]], row_of[atoms[t, 1]], row_of[atoms[t, 2]]
            d1x, d1y, d1z = _delta(positions, i0, i1, L, invL)
            d2x, d2y, d2z = _delta(positions, i2, i1, L, invL)
            rsq1 = d1x * d1x + d1y * d1y + d1z * d1z
            rsq2 = d2x * d2x + d2y * d2y + d2z * d2z
            r1, r2 = math.sqrt(rsq1), math.sqrt(rsq2)
            c = (d1x * d2x + d1y * d2y + d1z * d2z) / (r1 * r2)
            c = min(max(c, -1.0), 1.0)
            ux, uy, uz = d2x - d1x, d2y - d1y, d2z - d1z
            e, a, fub = fn(c, ux * ux + uy * uy + uz * uz, table[types[t]])
            errors[term0 + t] = 0
            a11, a12, a22 = a * c / rsq1, -a / (r1 * r2), a * c / rsq2
            f1x = a11 * d1x + a12 * d2x - ux * fub
            f1y = a11 * d1y + a12 * d2y - uy * fub
            f1z = a11 * d1z + a12 * d2z - uz * fub
            f3x = a22 * d2x + a12 * d1x + ux * fub
            f3y = a22 * d2y + a12 * d1y + uy * fub
            f3z = a22 * d2z + a12 * d1z + uz * fub
            s = slot0 + 3 * t
            contrib[s, 0], contrib[s, 1], contrib[s, 2] = f1x, f1y, f1z
            contrib[s + 1, 0], contrib[s + 1, 1], contrib[s + 1, 2] = -f1x - f3x, -f1y - f3y, -f1z - f3z
            contrib[s + 2, 0], contrib[s + 2, 1], contrib[s + 2, 2] = f3x, f3y, f3z
            if with_energy:
                energy[term0 + t] = e
                w = virial[term0 + t]
                w[0] = d1x * f1x + d2x * f3x
                w[1] = d1y * f1y + d2y * f3y
                w[2] = d1z * f1z + d2z * f3z
                w[3] = d1x * f1y + d2x * f3y
                w[4] = d1x * f1z + d2x * f3z
                w[5] = d1y * f1z + d2y * f3z
    return kernel


def _make_dihedral_kernel(fn):
    @numba.njit(parallel=True)
    def kernel(positions, row_of, atoms, which, types, table, L, invL, slot0, term0, contrib, energy, virial, errors,
               with_energy):
        for u in numba.prange(which.shape[0]):
            t = which[u]
            i0, i1 = row_of[atoms[t, 0]], row_of[atoms[t, 1]]
            i2, i3 = row_of[atoms[t, 2]], row_of[atoms[t, 3]]
            b1x, b1y, b1z = _delta(positions, i1, i0, L, invL)
            b2x, b2y, b2z = _delta(positions, i2, i1, L, invL)
            b3x, b3y, b3z = _delta(positions, i3, i2, L, invL)
            mx, my, mz = b1y * b2z - b1z * b2y, b1z * b2x - b1x * b2z, b1x * b2y - b1y * b2x
            nx, ny, nz = b2y * b3z - b2z * b3y, b2z * b3x - b2x * b3z, b2x * b3y - b2y * b3x
            m2 = mx * mx + my * my + mz * mz
            n2 = nx * nx + ny * ny + nz * nz
            b2sq = b2x * b2x + b2y * b2y + b2z * b2z
            b2len = math.sqrt(b2sq)
            phi = math.atan2(b2len * (b1x * nx + b1y * ny + b1z * nz), mx * nx + my * ny + mz * nz)
            e, dedphi = fn(phi, table[types[t]])
            errors[term0 + t] = 0
            if m2 < 1e-300 or n2 < 1e-300 or b2sq < 1e-300:     # collinear: no direction to push along
                dedphi = 0.0
                m2 = n2 = b2sq = 1.0
            g1 = dedphi * b2len / m2                 # f0 = -dE/dphi dphi/dx0 = dE/dphi |b2| / m^2 m
            g4 = -dedphi * b2len / n2                # f3 = -dE/dphi |b2| / n^2 n
            f1x, f1y, f1z = g1 * mx, g1 * my, g1 * mz
            f4x, f4y, f4z = g4 * nx, g4 * ny, g4 * nz
            p = (b1x * b2x + b1y * b2y + b1z * b2z) / b2sq
            q = (b3x * b2x + b3y * b2y + b3z * b2z) / b2sq
            # f1 = -f0 - p f0 + q f3 (dphi/dx1 = -dphi/dx0 + p dphi/dx0 ... with the signs of F_k = -E' dphi/dx_k)
            f2x, f2y, f2z = -f1x - p * f1x + q * f4x, -f1y - p * f1y + q * f4y, -f1z - p * f1z + q * f4z
            f3x, f3y, f3z = -f1x - f2x - f4x, -f1y - f2y - f4y, -f1z - f2z - f4z
            s = slot0 + 4 * t
            contrib[s, 0], contrib[s, 1], contrib[s, 2] = f1x, f1y, f1z
            contrib[s + 1, 0], contrib[s + 1, 1], contrib[s + 1, 2] = f2x, f2y, f2z
            contrib[s + 2, 0], contrib[s + 2, 1], contrib[s + 2, 2] = f3x, f3y, f3z
            contrib[s + 3, 0], contrib[s + 3, 1], contrib[s + 3, 2] = f4x, f4y, f4z
            if with_energy:
                energy[term0 + t] = e
                r2x, r2y, r2z = b1x + b2x, b1y + b2y, b1z + b2z
                r3x, r3y, r3z = r2x + b3x, r2y + b3y, r2z + b3z
                w = virial[term0 + t]
                w[0] = b1x * f2x + r2x * f3x + r3x * f4x
                w[1] = b1y * f2y + r2y * f3y + r3y * f4y
                w[2] = b1z * f2z + r2z * f3z + r3z * f4z
                w[3] = b1x * f2y + r2x * f3y + r3x * f4y
                w[4] = b1x * f2z + r2x * f3z + r3x * f4z
                w[5] = b1y * f2z + r2y * f3z + r3y * f4z
    return kernel


def _make_special_kernel(pair_function):
    """The scaled special pairs (special_bonds factors strictly between 0 and 1): each pair once, its
    factor times the pair potential (with its cutoff treatment, zero beyond the cutoff), as a bond of
    ``F/r = factor (F/r)(r^2)``."""
    @numba.njit(parallel=True)
    def kernel(positions, row_of, atoms, which, factors, types, table, n_types, L, invL, slot0, term0, contrib, energy,
               virial, with_energy):
        for u in numba.prange(which.shape[0]):
            t = which[u]
            i, j = row_of[atoms[t, 0]], row_of[atoms[t, 1]]
            dx, dy, dz = _delta(positions, i, j, L, invL)
            r2 = dx * dx + dy * dy + dz * dz
            row = table[types[i] * n_types + types[j]]
            e = fr = 0.0
            if r2 < row[0]:
                e, fr = pair_function(r2, row)
                e *= factors[t]
                fr *= factors[t]
            _store_two_body(contrib, slot0 + 2 * t, energy, virial, term0 + t, dx, dy, dz, fr, e, with_energy)
    return kernel


_KERNEL_MAKERS = {"bond": _make_bond_kernel, "angle": _make_angle_kernel, "dihedral": _make_dihedral_kernel,
                  "improper": _make_dihedral_kernel}


def cpu_term_kernel(style):
    """The Numba term kernel of ``style`` (cached per :meth:`~pycumd.molecular.styles.base.BondedStyle.kernel_key`)."""
    key = style.kernel_key()
    if key not in _CPU_TERM_KERNELS:
        maker = _KERNEL_MAKERS[style.kind]
        source = source_key(style.cpu_function)          # Numba's disk cache across processes (jit_cache)
        disk_key = None if source is None else (maker.__qualname__, *source)
        _CPU_TERM_KERNELS[key] = cache_kernel(maker(style.cpu_function), disk_key)
    return _CPU_TERM_KERNELS[key]


@numba.njit(parallel=True, cache=True)
def _gather(ids, start, slot, term, share, contrib, term_energy, term_virial, forces, energy, virial, with_energy):
    for i in numba.prange(ids.shape[0]):
        a = ids[i]
        fx = fy = fz = 0.0
        e = w0 = w1 = w2 = w3 = w4 = w5 = 0.0
        for q in range(start[a], start[a + 1]):
            s = slot[q]
            fx += contrib[s, 0]
            fy += contrib[s, 1]
            fz += contrib[s, 2]
            if with_energy:
                t, h = term[q], share[q]
                e += term_energy[t] * h
                w0 += term_virial[t, 0] * h
                w1 += term_virial[t, 1] * h
                w2 += term_virial[t, 2] * h
                w3 += term_virial[t, 3] * h
                w4 += term_virial[t, 4] * h
                w5 += term_virial[t, 5] * h
        forces[i, 0] += fx
        forces[i, 1] += fy
        forces[i, 2] += fz
        if with_energy:
            energy[i] += e
            virial[i, 0] += w0
            virial[i, 1] += w1
            virial[i, 2] += w2
            virial[i, 3] += w3
            virial[i, 4] += w4
            virial[i, 5] += w5


@numba.njit(parallel=True, cache=True)
def _exclude_cpu(nbr, nbr_count, nbr_plain, has_plain, ids, start, partners, types, type_excluded, molecule,
                 molecule_rule, rules):
    """Remove from each atom's list the neighbours whose IDs are among its special partners, and (``rules``)
    those of an excluded type pair (``type_excluded[ti, tj]``) or of the same molecule (``molecule_rule``
    1) or another (2) (in place, keeping the order of the others; the half list's count of entries
    without image shift follows)."""
    for i in numba.prange(nbr_count.shape[0]):
        a = ids[i]
        lo, hi = start[a], start[a + 1]
        if lo == hi and not rules:
            continue
        keep = 0
        plain = nbr_plain[i] if has_plain else 0
        new_plain = plain
        ti = types[i]
        for k in range(nbr_count[i]):
            j = nbr[i, k]
            b = ids[j]
            excluded = False
            for q in range(lo, hi):
                if partners[q] == b:
                    excluded = True
                    break
            if rules and not excluded:
                excluded = (type_excluded[ti, types[j]] != 0
                            or (molecule_rule == 1 and molecule[a] == molecule[b])
                            or (molecule_rule == 2 and molecule[a] != molecule[b]))
            if excluded:
                if k < plain:
                    new_plain -= 1
                continue
            nbr[i, keep] = j
            keep += 1
        nbr_count[i] = keep
        if has_plain:
            nbr_plain[i] = new_plain


class BondedForces:
    """The bonded terms of a :class:`~pycumd.molecular.topology.Topology` on one backend.

    ``compute(state, with_energy)`` adds the bonded forces (and, with energies, per-atom energies and
    virials) to the state's arrays, which must hold the pair terms already.  :meth:`energies` gives the
    total of each kind (energy units) of the last evaluation with energies.

    ``off``: ``{kind: bool mask}`` of terms not computed (those fix shake constrains).
    ``pair``: ``(potential, n_types)`` of the run's pair potential, for the scaled special pairs
    (:meth:`~pycumd.molecular.topology.Topology.scaled_pairs`: a fifth kind of terms, "special", whose
    energy is pair energy, not bonded); None: no special pairs are computed here.
    """

    def __init__(self, topology, backend, precision, pair=None, off=None):
        self.backend = backend
        full = topology         # the special pairs are those of every bond, constrained or not
        if off:                 # terms constrained by fix shake: off the force field (LAMMPS: negative types)
            topology = topology.without_terms(off)
        self.topology = topology
        xp = backend.xp
        tables = topology.tables()
        self.kinds = [k for k in KINDS if k in tables]
        extra, self.special = {}, None
        if pair is not None:
            potential, n_types = pair
            atoms, factors = full.scaled_pairs(getattr(potential, "type_charges", None) is not None)
            if len(atoms):
                extra["special"] = atoms
                self.special = {"atoms": xp.asarray(atoms), "factors": xp.asarray(factors), "n_types": n_types,
                                "count": len(atoms), "potential": potential}
        lists = topology.gather_lists(extra)
        self.slot_offset, self.term_offset = lists["slot_offset"], lists["term_offset"]
        self.n_terms = lists["n_terms"]
        self.start = xp.asarray(lists["start"])
        self.slot, self.term, self.share = (xp.asarray(lists[k]) for k in ("slot", "term", "share"))
        self.contrib = xp.zeros((max(lists["n_slots"], 1), 3))
        self.term_energy = xp.zeros(max(self.n_terms, 1))
        self.term_virial = xp.zeros((max(self.n_terms, 1), 6))
        self.errors = xp.zeros(max(self.n_terms, 1), np.int32)
        self.row_of = xp.full(len(topology.molecule), -1, np.int32 if backend.is_gpu else np.int64)
        self.atoms = {k: xp.asarray(topology.terms[k]) for k in self.kinds}
        if self.special is not None:
            self.atoms["special"] = self.special["atoms"]
        #: the terms computed, by kind ("special": the scaled pairs): all of them on one rank; over spatial
        #: domains those with an owned atom (:meth:`follow_domain`)
        self.which = {k: xp.arange(len(a), dtype=np.int64) for k, a in self.atoms.items()}
        #: spatial domains: the terms whose energy this rank counts (those whose first atom it owns); None on one rank
        self.energy_terms = None
        self.types = {k: xp.asarray(topology.types[k]) for k in self.kinds}
        self.tables = {k: xp.asarray(tables[k][1]) for k in self.kinds}
        self.styles = {k: tables[k][0] for k in self.kinds}
        self._warned = False
        if backend.is_gpu:
            for k in self.kinds:
                if not self.styles[k].runs_on_gpu:
                    raise NotImplementedError(f"{self.styles[k].describe()} runs on the CPU only for now "
                                              f"(device='cpu')")
            if precision.composite:
                raise NotImplementedError("molecular topology is not implemented in composite precision; use "
                                          "'single', 'mixed' or 'double'")
            defines = {**precision.cuda_defines}
            self._modules = {k: backend.kernel_module("molecular/bonded.cu", {
                **defines, **self.styles[k].cuda_defines, "TERM_KIND": KINDS.index(k),
                "STYLE_HEADER": f'"{self.styles[k].cuda_header}"'},
                options=precision.cuda_options) for k in self.kinds}
            common = backend.kernel_module("molecular/bonded.cu", defines, options=precision.cuda_options)
            self._row_map = common.get_function("bonded_row_map")
            self._gather = common.get_function("bonded_gather")
            self._real = precision.state_dtype
            if self.special is not None:
                from ..forces import potential_defines

                sp = self.special
                sp["table"] = xp.asarray(sp["potential"].table(sp["n_types"]), dtype=precision.pair_dtype)
                sp["kernel"] = backend.kernel_module("molecular/bonded.cu", {
                    **defines, **potential_defines(sp["potential"]), "TERM_KIND": 4},
                    options=precision.cuda_options).get_function("special_pair_terms")
        else:
            self._kernels = {k: cpu_term_kernel(self.styles[k]) for k in self.kinds}
            if self.special is not None:
                sp = self.special
                sp["table"] = sp["potential"].table(sp["n_types"])
                key = sp["potential"].kernel_cache_key()
                sp["kernel"] = cache_kernel(_make_special_kernel(sp["potential"].pair_function()),
                                            None if key is None else ("_make_special_kernel", *key))

    def follow_domain(self, row_ids, n_owned: int) -> None:
        """Spatial domains (:mod:`pycumd.parallel.domains`), after each build: the terms read the
        extended rows (the owned atoms, rows ``0..n_owned-1``, then the ghosts) whose global ids are
        ``row_ids``; this rank computes the terms with an owned atom (every owned atom gathers all of
        its terms, so no force goes back to another rank) and counts the energy of those whose first
        atom it owns.  A term with an owned atom and an atom beyond the ghost layer stops the run with
        an error naming it (one host read per build)."""
        xp = self.backend.xp
        self.row_of.fill(-1)
        self.row_of[row_ids] = xp.arange(len(row_ids), dtype=self.row_of.dtype)
        self.which, self.energy_terms = {}, {}
        for k, atoms in self.atoms.items():
            rows = self.row_of[atoms]
            present = rows >= 0
            owned = present & (rows < n_owned)
            touches = owned.any(axis=1)
            incomplete = touches & ~present.all(axis=1)
            if bool(incomplete.any()):
                t = int(xp.argmax(incomplete))
                ids = " ".join(str(int(a)) for a in self.backend.to_host(atoms[t]))
                what = "scaled special pair" if k == "special" else k
                raise InputError(f"{what} {t + 1} (atoms {ids}) reaches beyond the ghost layer of a domain: every "
                                 f"bonded term of an owned atom must lie within the cutoff plus skin of it (LAMMPS: "
                                 f"'Bond atoms missing'); use fewer MPI ranks, or a longer cutoff or skin")
            self.which[k] = xp.nonzero(touches)[0].astype(np.int64)
            self.energy_terms[k] = xp.nonzero(owned[:, 0])[0]

    def compute(self, state, with_energy: bool, rows=None) -> None:
        """Add the bonded forces to the owned atoms (``state``'s rows); ``rows``: ``(positions, types)`` of
        the rows the terms read, where they are not the state's (spatial domains: the extended rows that
        :meth:`follow_domain` mapped)."""
        if not self.kinds and self.special is None:
            return
        positions, types = (state.positions, state.types) if rows is None else rows
        if self.backend.is_gpu:
            self._compute_gpu(state, positions, types, with_energy, mapped=rows is not None)
            return
        if rows is None:
            self.row_of[state.ids] = np.arange(len(state.ids))
        L = np.asarray(state.box_lengths, dtype=np.float64)
        for k in self.kinds:
            self._kernels[k](positions, self.row_of, self.atoms[k], self.which[k], self.types[k], self.tables[k], L,
                             1.0 / L, self.slot_offset[k], self.term_offset[k], self.contrib, self.term_energy,
                             self.term_virial, self.errors, with_energy)
        if self.special is not None:
            sp = self.special
            sp["kernel"](positions, self.row_of, sp["atoms"], self.which["special"], sp["factors"], types, sp["table"],
                         sp["n_types"], L, 1.0 / L, self.slot_offset["special"], self.term_offset["special"],
                         self.contrib, self.term_energy, self.term_virial, with_energy)
        _gather(state.ids, self.start, self.slot, self.term, self.share, self.contrib, self.term_energy,
                self.term_virial, state.forces, state.energy, state.virial, with_energy)
        self.check_errors(state)

    def _compute_gpu(self, state, positions, types, with_energy: bool, mapped: bool) -> None:
        n = state.n_atoms
        grid = lambda count: ((max(count, 1) + BLOCK - 1) // BLOCK,)        # noqa: E731
        if not mapped:
            self._row_map(grid(n), (BLOCK,), (state.ids, self.row_of, np.int32(n)))
        L = [np.float64(x) for x in state.box_lengths]
        for k in self.kinds:
            count = len(self.which[k])
            self._modules[k].get_function("bonded_terms")(
                grid(count), (BLOCK,),
                (positions, self.row_of, self.atoms[k], self.which[k], self.types[k], self.tables[k],
                 np.int32(self.tables[k].shape[1]), np.int32(count), *L,
                 np.int64(self.slot_offset[k]), np.int64(self.term_offset[k]), self.contrib, self.term_energy,
                 self.term_virial, self.errors, np.int32(with_energy)))
        if self.special is not None:
            sp = self.special
            count = len(self.which["special"])
            sp["kernel"](grid(count), (BLOCK,),
                         (positions, self.row_of, sp["atoms"], self.which["special"], sp["factors"], types, sp["table"],
                          np.int32(sp["n_types"]), np.int32(count), *L, np.int64(self.slot_offset["special"]),
                          np.int64(self.term_offset["special"]), self.contrib, self.term_energy, self.term_virial,
                          np.int32(with_energy)))
        self._gather(grid(n), (BLOCK,),
                     (state.ids, self.start, self.slot, self.term, self.share, self.contrib, self.term_energy,
                      self.term_virial, state.forces, state.energy, state.virial, np.int32(n), np.int32(with_energy)))

    def check_errors(self, state) -> None:
        """Raise :class:`~pycumd.bookkeeping.SimulationError` for a term LAMMPS stops at ("Bad FENE bond",
        naming the step, the bond and its atoms); warn (once) for one it warns about ("FENE bond too long")."""
        if "bond" not in self.kinds:
            return
        n_bonds = len(self.topology.terms["bond"])
        errors = self.backend.to_host(self.errors[self.term_offset["bond"]:self.term_offset["bond"] + n_bonds])
        computed = None                                # one rank: every bond was computed
        if self.energy_terms is not None:              # domains: the rows of the bonds not computed are stale
            computed = np.asarray(self.backend.to_host(self.which["bond"]), dtype=np.int64)
            errors = errors[computed]
        worst = int(errors.max(initial=0))
        if worst == 0:
            return
        t = int(np.argmax(errors == worst))
        if computed is not None:
            t = int(computed[t])
        a, b = (int(x) for x in self.topology.terms["bond"][t])
        style = self.styles["bond"].lammps_style
        if worst == 2:
            raise SimulationError(f"Bad FENE bond at step {state.step}: bond {t + 1} between atoms {a} and {b} "
                                  f"({style}) is stretched beyond twice R0 (1 - (r/R0)^2 <= -3); LAMMPS stops "
                                  f"here too (a smaller time step or a relaxed start may help)")
        if not self._warned:
            warnings.warn(f"FENE bond too long at step {state.step}: bond {t + 1} between atoms {a} and {b} "
                          f"({style}; its force is clamped at 1 - (r/R0)^2 = 0.1, as LAMMPS does)", stacklevel=2)
            self._warned = True

    def energies(self) -> dict:
        """``{kind: total energy}`` (energy units) of each kind, from the last evaluation with energies
        (0 for kinds without terms)."""
        host = self.backend.to_host(self.term_energy)
        out = {}
        for k in KINDS:                               # not "special": the scaled pairs' energy is pair energy
            n = len(self.topology.terms[k]) if k in self.kinds else 0
            values = host[self.term_offset[k]:self.term_offset[k] + n]
            if n and self.energy_terms is not None:    # spatial domains: the terms this rank counts
                values = values[np.asarray(self.backend.to_host(self.energy_terms[k]), dtype=np.int64)]
            out[k] = float(values.sum()) if n else 0.0
        return out


class SpecialExclusions:
    """Removes the special pairs (LAMMPS ``special_bonds``) whose factors are not 1 from a neighbour list: those
    of factor 0 are excluded, the scaled ones are computed with their factor by :class:`BondedForces`
    (the pair kernels stay as they are).

    Run before every pair evaluation (also inside CUDA graphs, which replay it): a list that has been
    filtered since its build is left as it is (the excluded pairs are gone), so the pass is idempotent.
    Only simulations with excluded pairs run it; the list builders and the pair kernels are untouched.
    """

    def __init__(self, topology, backend, cuda_options=(), exclude=(), n_types: int = 1):
        start, partners = topology.excluded_pairs()
        self.backend = backend
        self.rules = bool(exclude)
        self.active = len(partners) > 0 or self.rules
        xp = backend.xp
        self.start, self.partners = xp.asarray(start), xp.asarray(partners if len(partners) else np.zeros(1, np.int64))
        type_excluded = np.zeros((n_types, n_types), np.int32)
        molecule_rule = 0
        for rule in exclude:                     # LAMMPS neigh_modify exclude
            if rule[0] == "type":
                type_excluded[rule[1], rule[2]] = type_excluded[rule[2], rule[1]] = 1
            elif rule[0] in ("molecule/intra", "molecule/inter"):
                new = 1 if rule[0] == "molecule/intra" else 2
                if molecule_rule not in (0, new):     # both: every pair excluded
                    raise NotImplementedError("neigh_modify exclude molecule/intra and molecule/inter together "
                                              "exclude every pair")
                molecule_rule = new
            else:
                raise ValueError(f"unknown neighbour exclusion {rule}")
        self.type_excluded, self.molecule_rule = xp.asarray(type_excluded), molecule_rule
        self.molecule = xp.asarray(topology.molecule)
        self.n_types = n_types
        if backend.is_gpu and self.active:
            self._kernel = backend.kernel_module("molecular/bonded.cu", {"real_t": "double", "accum_t": "double"},
                                                 options=cuda_options).get_function("exclude_special_pairs")

    def apply(self, state, neighbors, rows=None) -> None:
        """Filter ``neighbors``' lists of the state's atoms; ``rows``: ``(ids, types)`` of the rows the lists
        name where they are not the state's (spatial domains: the owned atoms, then the ghosts)."""
        if not self.active:
            return
        if neighbors.nbr is None:
            return
        ids, types = (state.ids, state.types) if rows is None else rows
        if self.backend.is_gpu:
            n = state.n_atoms
            self._kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                         (neighbors.nbr, neighbors.nbr_count, ids, self.start, self.partners, types,
                          self.type_excluded, np.int32(self.n_types), self.molecule, np.int32(self.molecule_rule),
                          np.int32(self.rules), np.int32(n)))
            return
        plain = getattr(neighbors, "nbr_plain", None)
        has_plain = bool(getattr(neighbors, "half", False) and plain is not None)
        _exclude_cpu(neighbors.nbr, neighbors.nbr_count, plain if has_plain else neighbors.nbr_count, has_plain,
                     ids, self.start, self.partners, types, self.type_excluded, self.molecule,
                     self.molecule_rule, self.rules)


class MolecularForces(ForceEvaluatorBase):
    """A pair force evaluator with the molecular terms: special pairs removed from the list before the
    pairs (:class:`SpecialExclusions`), then the pairs, then the bonded terms and the scaled special pairs
    (:class:`BondedForces`) added.  Capturable where the pair evaluator is: every launch has fixed
    addresses and sizes."""

    def __init__(self, pair_forces, topology, backend, precision, n_types: int, exclude=(), weighted_14: bool = False,
                 off=None, domains: bool = False):
        self.pair = pair_forces
        self.potential = pair_forces.potential
        #: spatial domains (pycumd.parallel.domains): the lists name the extended rows, and the bonded terms
        #: follow them after each build (a host read: so not captured between builds)
        self.domains = bool(domains)
        self._mapped_build = -1
        self.capturable = pair_forces.capturable and not self.domains
        self.reads_fixed_image = pair_forces.reads_fixed_image
        self.topology = topology
        # weighted_14: the weighted 1-4 pairs of dihedral_style charmm are computed by the evaluator around
        # this one (pycumd.long_range: lj/charmm/coul/long)
        for kind, style in (() if weighted_14 else topology.styles.items()):
            weights = getattr(style, "weights", None)
            if kind in topology.tables() and weights is not None and any(w != 0.0 for w in weights().values()):
                raise NotImplementedError(f"{style.describe()} with a 1-4 weight w other than 0 (the weighted 1-4 "
                                          f"pairs of lj/charmm pair styles) is not implemented yet")
        self.exclusions = SpecialExclusions(topology, backend, precision.cuda_options, exclude, n_types)
        self.bonded = BondedForces(topology, backend, precision, pair=(pair_forces.potential, n_types), off=off)

    @property
    def control(self):
        """The pair evaluator's step-control array (:attr:`pycumd.contracts.ForceEvaluator.control`)."""
        return self.pair.control

    @control.setter
    def control(self, array) -> None:
        self.pair.control = array

    def compute(self, state, neighbors, with_energy: bool, **options) -> None:
        if not self.domains:
            self.exclusions.apply(state, neighbors)
            self.pair.compute(state, neighbors, with_energy, **options)
            self.bonded.compute(state, with_energy)
            return
        # spatial domains: the rows the lists and the terms name are the extended ones (owned, then ghosts),
        # whose positions the pair evaluator's ghost refresh brings up to date
        ids, types = neighbors.extended_ids, neighbors.row_types
        if self._mapped_build != neighbors.n_builds:
            self.bonded.follow_domain(ids, state.n_atoms)
            self._mapped_build = neighbors.n_builds
        self.exclusions.apply(state, neighbors, (ids, types))
        self.pair.compute(state, neighbors, with_energy, **options)
        self.bonded.compute(state, with_energy, rows=(neighbors.extended, types))

    def image_of(self, state):
        return self.pair.image_of(state)

    def write_image(self, state) -> None:
        self.pair.write_image(state)

    def check_pair_errors(self, state) -> None:
        """The pair evaluator's check (if it has one), then the bonded terms' (:meth:`BondedForces.check_errors`)."""
        check = getattr(self.pair, "check_pair_errors", None)
        if check is not None:
            check(state)
        self.bonded.check_errors(state)

    def bonded_energies(self) -> dict:
        return self.bonded.energies()

    def __getattr__(self, name):
        if name.startswith("_") or name == "pair":
            raise AttributeError(name)
        return getattr(self.pair, name)
