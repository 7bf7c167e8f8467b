"""Molecular topology: molecule IDs and the bonds, angles, dihedrals and impropers of a system, their
styles and coefficients, and the special pairs (LAMMPS ``special_bonds``).

Every list is in atom IDs (LAMMPS tags), never in rows: the engine reorders the rows of its arrays at
neighbour builds, and the IDs move with the rows (``State.ids``), so a term's atoms are found by an
ID -> row map made again at each force evaluation (:mod:`pycumd.molecular.bonded`), and nothing here
follows a reorder.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .styles.base import ATOMS_PER_TERM, KINDS

#: LAMMPS ``special_bonds`` presets: (lj 1-2, 1-3, 1-4), (coul 1-2, 1-3, 1-4)
SPECIAL_PRESETS = {"lj/coul": None, "fene": ((0.0, 1.0, 1.0), (0.0, 1.0, 1.0)),
                   "charmm": ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0)),
                   "amber": ((0.0, 0.0, 0.5), (0.0, 0.0, 5.0 / 6.0))}


@dataclass
class SpecialBonds:
    """LAMMPS ``special_bonds``: the factors of the pair interactions of 1-2, 1-3 and 1-4 neighbours.

    lj, coul : (3,) floats, the factors of 1-2, 1-3, 1-4 pairs (default 0 0 0: excluded, as LAMMPS)
    angle : 1-3 pairs only where an angle holds them (LAMMPS ``angle yes``)
    dihedral : 1-4 pairs only where a dihedral holds them (``dihedral yes``)
    """

    lj: tuple = (0.0, 0.0, 0.0)
    coul: tuple = (0.0, 0.0, 0.0)
    angle: bool = False
    dihedral: bool = False

    def kinds(self) -> tuple:
        """For 1-2, 1-3, 1-4: "exclude" (both factors 0), "plain" (both 1) or "scale"."""
        out = []
        for lj, coul in zip(self.lj, self.coul):
            out.append("exclude" if lj == 0.0 and coul == 0.0 else "plain" if lj == 1.0 and coul == 1.0 else "scale")
        return tuple(out)

    @classmethod
    def from_lammps(cls, args, current: "SpecialBonds | None" = None) -> "SpecialBonds":
        """Parse ``special_bonds`` arguments (LAMMPS ``Force::set_special``): presets, ``lj/coul a b c``,
        ``lj a b c``, ``coul a b c``, ``angle yes|no``, ``dihedral yes|no``, applied in order to a default
        of all zeros (LAMMPS resets to the defaults at each command)."""
        lj, coul, angle, dihedral = [0.0] * 3, [0.0] * 3, False, False
        k = 0
        while k < len(args):
            word = args[k]
            if word in ("fene", "charmm", "amber"):
                (lj, coul), k = [list(x) for x in SPECIAL_PRESETS[word]], k + 1
            elif word in ("lj/coul", "lj", "coul"):
                if len(args) < k + 4:
                    raise ValueError(f"special_bonds {word} needs three factors (1-2 1-3 1-4)")
                values = [float(v) for v in args[k + 1:k + 4]]
                if any(not 0.0 <= v <= 1.0 for v in values):
                    raise ValueError(f"special_bonds {word} factors must be in 0..1, got {values}")
                if word in ("lj/coul", "lj"):
                    lj = list(values)
                if word in ("lj/coul", "coul"):
                    coul = list(values)
                k += 4
            elif word in ("angle", "dihedral"):
                if k + 1 >= len(args) or args[k + 1] not in ("yes", "no"):
                    raise ValueError(f"special_bonds {word} needs yes or no")
                if word == "angle":
                    angle = args[k + 1] == "yes"
                else:
                    dihedral = args[k + 1] == "yes"
                k += 2
            elif word in ("one/five",):
                raise NotImplementedError("special_bonds one/five is not supported")
            else:
                raise ValueError(f"special_bonds keyword {word} is not supported (fene, charmm, amber, lj/coul, lj, "
                                 f"coul, angle, dihedral)")
        return cls(tuple(lj), tuple(coul), angle, dihedral)


def _empty_terms(k: int):
    return np.empty((0, k), np.int64)


@dataclass
class Topology:
    """The molecular part of a :class:`~pycumd.system.System`.

    Attributes
    ----------
    molecule : dict-like ndarray, (max_id + 1,) int64
        Molecule ID of each atom ID (index = atom ID; 0 where an ID has none, as LAMMPS).
    terms : dict kind -> (n, k) int64
        Atom IDs of each bond (k = 2), angle (3), dihedral (4) and improper (4), in the data file's order.
    types : dict kind -> (n,) int32
        Type of each term, 0-based.
    n_types : dict kind -> int
        Types declared of each kind (the data file's ``bond types`` ...).
    styles : dict kind -> BondedStyle
        The style of each kind with its per-type coefficients (LAMMPS ``bond_style`` + ``bond_coeff``);
        a kind with terms needs one before a run.
    special : SpecialBonds
    """

    molecule: np.ndarray
    terms: dict = field(default_factory=lambda: {k: _empty_terms(ATOMS_PER_TERM[k]) for k in KINDS})
    types: dict = field(default_factory=lambda: {k: np.empty(0, np.int32) for k in KINDS})
    n_types: dict = field(default_factory=lambda: {k: 0 for k in KINDS})
    styles: dict = field(default_factory=dict)
    special: SpecialBonds = field(default_factory=SpecialBonds)

    def __post_init__(self):
        self.molecule = np.asarray(self.molecule, np.int64)
        for kind in KINDS:
            k = ATOMS_PER_TERM[kind]
            self.terms[kind] = np.asarray(self.terms.get(kind, _empty_terms(k)), np.int64).reshape(-1, k)
            self.types[kind] = np.asarray(self.types.get(kind, np.empty(0, np.int32)), np.int32).reshape(-1)
            self.n_types.setdefault(kind, 0)
            if len(self.types[kind]) != len(self.terms[kind]):
                raise ValueError(f"{len(self.terms[kind])} {kind}s but {len(self.types[kind])} {kind} types")

    def copy(self) -> "Topology":
        return replace(self, molecule=self.molecule.copy(), terms={k: v.copy() for k, v in self.terms.items()},
                       types={k: v.copy() for k, v in self.types.items()}, n_types=dict(self.n_types),
                       styles=dict(self.styles))

    def count(self, kind: str) -> int:
        return len(self.terms[kind])

    def without_terms(self, off: dict) -> "Topology":
        """A copy without the terms that ``off`` ({kind: bool mask over the kind's terms}) marks."""
        out = self.copy()
        for kind, mask in off.items():
            keep = ~np.asarray(mask, bool)
            out.terms[kind], out.types[kind] = out.terms[kind][keep], out.types[kind][keep]
        return out

    def molecules_of(self, ids) -> np.ndarray:
        """Molecule IDs of the atoms ``ids`` (any shape)."""
        ids = np.asarray(ids, np.int64)
        out = np.zeros(ids.shape, np.int64)
        inside = ids < len(self.molecule)
        out[inside] = self.molecule[ids[inside]]
        return out

    def check(self, ids) -> None:
        """Raise ValueError naming the first term whose atom is not among ``ids``, or whose type is out of range."""
        ids = np.asarray(ids, np.int64)
        present = np.zeros(int(ids.max(initial=0)) + 2, bool)
        present[ids] = True
        for kind in KINDS:
            atoms, types = self.terms[kind], self.types[kind]
            if not len(atoms):
                continue
            bad_type = (types < 0) | (types >= self.n_types[kind])
            if bad_type.any():
                t = int(np.argmax(bad_type))
                raise ValueError(f"{kind} {t + 1} (atoms {' '.join(map(str, atoms[t]))}) has type {types[t] + 1}, "
                                 f"outside 1..{self.n_types[kind]}")
            inside = (atoms >= 1) & (atoms < len(present))
            missing = ~inside.copy()
            missing[inside] = ~present[atoms[inside]]
            if missing.any():
                t, k = np.argwhere(missing)[0]
                raise ValueError(f"{kind} {t + 1} (atoms {' '.join(map(str, atoms[t]))}): atom {atoms[t, k]} does "
                                 f"not exist")
            for a in range(atoms.shape[1]):
                for b in range(a + 1, atoms.shape[1]):
                    same = atoms[:, a] == atoms[:, b]
                    if same.any():
                        t = int(np.argmax(same))
                        raise ValueError(f"{kind} {t + 1} (atoms {' '.join(map(str, atoms[t]))}) names atom "
                                         f"{atoms[t, a]} twice")

    def special_pairs(self) -> dict:
        """``{1: (a, b), 2: ..., 3: ...}``: the 1-2, 1-3 and 1-4 pairs of atom IDs (each pair both ways,
        (n, ) int64 arrays a and b), as LAMMPS' ``Special`` finds them: 1-2 from the bonds; 1-3 the
        partners of 1-2 partners (or, with ``angle yes``, the outer atoms of the angles), 1-4 the
        partners of 1-3 partners (or, with ``dihedral yes``, the end atoms of the dihedrals); an atom
        is never its own special partner and keeps only its closest relation."""
        n = len(self.molecule)
        bonds = self.terms["bond"]
        nbr = [set() for _ in range(n)]
        for a, b in bonds.tolist():
            nbr[a].add(b)
            nbr[b].add(a)
        one_two = nbr
        if self.special.angle:
            one_three = [set() for _ in range(n)]
            for a, _, c in self.terms["angle"].tolist():
                one_three[a].add(c)
                one_three[c].add(a)
        else:
            one_three = [set().union(*(nbr[j] for j in s)) if s else set() for s in one_two]
        if self.special.dihedral:
            one_four = [set() for _ in range(n)]
            for a, _, _, d in self.terms["dihedral"].tolist():
                one_four[a].add(d)
                one_four[d].add(a)
        else:
            one_four = [set().union(*(nbr[j] for j in s)) if s else set() for s in one_three]
        out = {1: ([], []), 2: ([], []), 3: ([], [])}
        for i in range(n):
            s12 = one_two[i] - {i}
            s13 = one_three[i] - s12 - {i}
            s14 = one_four[i] - s12 - s13 - {i}
            for which, s in ((1, s12), (2, s13), (3, s14)):
                for j in sorted(s):
                    out[which][0].append(i)
                    out[which][1].append(j)
        return {w: (np.asarray(a, np.int64), np.asarray(b, np.int64)) for w, (a, b) in out.items()}

    def excluded_pairs(self) -> tuple:
        """``(start, partners)``: for each atom ID ``a``, ``partners[start[a]:start[a + 1]]`` are the IDs whose
        pair interaction with ``a`` is taken out of the neighbour list, sorted: the special pairs whose
        factors are not both 1 (those of factor 0 are excluded; the scaled ones are computed with their
        factor as terms of their own, :meth:`scaled_pairs`)."""
        kinds = self.special.kinds()
        pairs = self.special_pairs() if any(k != "plain" for k in kinds) else {1: ([], []), 2: ([], []), 3: ([], [])}
        a = [np.asarray(pairs[w][0], np.int64) for w, k in zip((1, 2, 3), kinds) if k != "plain"]
        b = [np.asarray(pairs[w][1], np.int64) for w, k in zip((1, 2, 3), kinds) if k != "plain"]
        a = np.concatenate(a) if a else np.empty(0, np.int64)
        b = np.concatenate(b) if b else np.empty(0, np.int64)
        order = np.lexsort((b, a))
        a, b = a[order], b[order]
        start = np.zeros(len(self.molecule) + 1, np.int64)
        np.add.at(start, a + 1, 1)
        return np.cumsum(start), b

    def scaled_pairs(self, has_charges: bool = False) -> tuple:
        """``(atoms, factors)``: the special pairs whose factor lies strictly between 0 and 1, once each
        ((n, 2) atom IDs, lower first) and their factor (n,) (the lj factor; with charges, ``has_charges``,
        the lj and coul factors must agree: a NotImplementedError names them otherwise)."""
        kinds = self.special.kinds()
        if "scale" not in kinds:
            return np.empty((0, 2), np.int64), np.empty(0)
        pairs = self.special_pairs()
        atoms, factors = [], []
        for w, kind in zip((1, 2, 3), kinds):
            if kind != "scale":
                continue
            lj, coul = self.special.lj[w - 1], self.special.coul[w - 1]
            if has_charges and lj != coul:
                raise NotImplementedError(f"special_bonds with different lj and coul factors for the 1-{w + 1} pairs "
                                          f"({lj} and {coul}) and a pair style with charges is not implemented yet")
            a, b = pairs[w]
            once = a < b
            atoms.append(np.stack([a[once], b[once]], axis=1))
            factors.append(np.full(int(once.sum()), lj))
        return np.concatenate(atoms).astype(np.int64), np.concatenate(factors)

    def gather_lists(self, extra: dict | None = None) -> dict:
        """The fixed-order per-atom lists of the bonded force sums (:mod:`pycumd.molecular.bonded`).

        ``extra``: more kinds of terms ({name: (n, k) atom IDs}, after the four: the scaled special pairs).
        Slots: each term of each kind has one slot per atom, kinds in :data:`KINDS` order, terms in
        order, atoms in order (``slot_offset[kind] + t k + a``); term indices likewise
        (``term_offset[kind] + t``).  Returns ``start`` (max_id + 2,) int64: atom ID ``a``'s entries
        are ``start[a]:start[a + 1]``, in increasing slot order; ``slot`` and ``term`` (entries,) int32
        and ``share`` (entries,) float64 (1 / atoms of the term: an atom's part of the term's energy
        and virial); ``slot_offset``, ``term_offset`` dicts; ``n_slots``, ``n_terms``.
        """
        ids, slots, terms, shares = [], [], [], []
        slot_offset, term_offset, ns, nt = {}, {}, 0, 0
        terms_of = {**self.terms, **(extra or {})}
        for kind in [*KINDS, *(extra or {})]:
            atoms = terms_of[kind]
            n, k = atoms.shape
            slot_offset[kind], term_offset[kind] = ns, nt
            ids.append(atoms.reshape(-1))
            slots.append(ns + np.arange(n * k, dtype=np.int64))
            terms.append(nt + np.repeat(np.arange(n, dtype=np.int64), k))
            shares.append(np.full(n * k, 1.0 / k))
            ns += n * k
            nt += n
        ids, slots, terms, shares = (np.concatenate(x) for x in (ids, slots, terms, shares))
        order = np.argsort(ids, kind="stable")      # slots increase within each atom
        max_id = len(self.molecule) - 1
        start = np.zeros(max_id + 2, np.int64)
        np.add.at(start, ids + 1, 1)
        if ns > np.iinfo(np.int32).max:
            raise ValueError("more than 2^31 bonded slots")
        return {"start": np.cumsum(start), "slot": slots[order].astype(np.int32), "term": terms[order].astype(np.int32),
                "share": shares[order], "slot_offset": slot_offset, "term_offset": term_offset,
                "n_slots": ns, "n_terms": nt}

    def has_terms(self) -> bool:
        return any(self.count(k) for k in KINDS)

    def tables(self) -> dict:
        """kind -> (style, (n_types, width) table) for each kind with terms; a kind with terms and no
        style, or a type without coefficients, raises naming it."""
        out = {}
        for kind in KINDS:
            if not self.count(kind):
                continue
            style = self.styles.get(kind)
            if style is None:
                raise ValueError(f"the system has {self.count(kind)} {kind}s but no {kind}_style")
            out[kind] = (style, style.table(self.n_types[kind]))
        return out


def empty_topology(ids) -> Topology:
    """A topology with no terms and molecule 0 for atoms ``ids``."""
    return Topology(np.zeros(int(np.max(ids, initial=0)) + 1, np.int64))


#: prefix of a checkpoint's topology arrays
CHECKPOINT_PREFIX = "topology."


def checkpoint_arrays(topology: Topology) -> dict:
    """The topology's arrays for a checkpoint (host arrays): ``topology.molecule``, ``topology.KIND.atoms``,
    ``topology.KIND.types``."""
    out = {f"{CHECKPOINT_PREFIX}molecule": topology.molecule}
    for kind in KINDS:
        out[f"{CHECKPOINT_PREFIX}{kind}.atoms"] = topology.terms[kind]
        out[f"{CHECKPOINT_PREFIX}{kind}.types"] = topology.types[kind]
    return out


def checkpoint_record(topology: Topology) -> dict:
    """The topology's JSON part for a checkpoint: type counts, styles with their coefficients, special_bonds."""
    return {"n_types": dict(topology.n_types),
            "styles": {kind: {"style": s.lammps_style, "settings": list(s.style_args),
                              "coefficients": {str(t): list(v) for t, v in s.coefficients.items()}}
                       for kind, s in topology.styles.items()},
            "special": {"lj": list(topology.special.lj), "coul": list(topology.special.coul),
                        "angle": topology.special.angle, "dihedral": topology.special.dihedral}}


def from_checkpoint(record: dict | None, arrays: dict) -> Topology | None:
    """The topology of a checkpoint (None if it has none): the inverse of :func:`checkpoint_arrays` and
    :func:`checkpoint_record`."""
    if record is None:
        return None
    from .styles.registry import make_style

    styles = {}
    for kind, s in record["styles"].items():
        styles[kind] = make_style(kind, s["style"]).settings(s.get("settings", []))
        for t, values in s["coefficients"].items():
            styles[kind].coeff(int(t), values)
    sp = record["special"]
    return Topology(arrays[f"{CHECKPOINT_PREFIX}molecule"],
                    {k: arrays[f"{CHECKPOINT_PREFIX}{k}.atoms"] for k in KINDS},
                    {k: arrays[f"{CHECKPOINT_PREFIX}{k}.types"] for k in KINDS},
                    {k: int(v) for k, v in record["n_types"].items()}, styles,
                    SpecialBonds(tuple(sp["lj"]), tuple(sp["coul"]), bool(sp["angle"]), bool(sp["dihedral"])))
