"""The embedded-atom method (EAM): LAMMPS' ``pair_style eam``, ``eam/alloy`` and ``eam/fs``.

The energy of atom i is

    E_i = F_a(rho_i) + 1/2 sum_j phi_ab(r_ij),      rho_i = sum_j rho_ba(r_ij)

(a, b the elements of i and j; ``rho_ba`` the density that an atom of element b puts at an atom
of element a: one function per element for funcfl and setfl files, one per element pair for
Finnis-Sinclair files).  The functions are tabulated in the potential files and interpolated
exactly as LAMMPS' ``pair_eam.cpp`` does, so that energies and forces match LAMMPS to round-off:

* the files are read as LAMMPS reads them (``read_file``): funcfl (DYNAMO single element: a
  comment line, ``Z mass``, ``nrho drho nr dr cut``, then F(rho), Z(r), rho(r)), setfl (three
  comment lines, ``N El1 .. ElN``, ``nrho drho nr dr cut``, per element ``Z mass`` + F(rho) +
  rho(r), then r*phi(r) of each pair i >= j) and fs (as setfl with N density functions per element);
* several funcfl files are put on one grid (``file2array``): ``dr``, ``drho`` the largest of the
  files', ``nr = int(rmax/dr + 0.5)``, each table resampled by 4-point Lagrange interpolation, and
  ``r phi_ab(r) = 27.2 * 0.529 * Z_a(r) Z_b(r)`` (Z in sqrt(Hartree * Bohr));
* each table becomes LAMMPS' cubic spline with 7 coefficients per grid point (``interpolate``):
  columns 6, 5, 4, 3 the value and the cubic's coefficients, 2, 1, 0 those of its derivative;
* a value at x is read at ``p = x / delta + 1``, ``m = int(p)`` clamped (r: ``m <= nr - 1``; rho:
  ``1 <= m <= nrho - 1``), ``p -= m``, ``p = min(p, 1)``: ``((c3 p + c4) p + c5) p + c6`` and its
  derivative ``(c0 p + c1) p + c2``.  Beyond ``rhomax = (nrho - 1) drho`` the embedding energy
  grows linearly with slope F'(rhomax-table end) (LAMMPS' energy-conserving extension).

The tables are built once per run (:meth:`EAM.table`, an :class:`EAMTables`); the force
evaluator (:mod:`pycumd.eam_forces`, ``eam.cu``) reads them.  Energies are in eV and lengths in
Angstrom (LAMMPS ``units metal``), as in the files.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .base import ManyBodyPotential

#: LAMMPS' conversion of funcfl's effective charges to r * phi: Hartree in eV times Bohr in Angstrom
FUNCFL_ZZ = 27.2 * 0.529
#: the styles and the file kind each reads
STYLE_KINDS = {"eam": "funcfl", "eam/alloy": "setfl", "eam/fs": "fs"}
#: the fewest points of a table: LAMMPS' spline reads the two points either side
MIN_POINTS = 5


class EAMFileError(ValueError):
    """A potential file that cannot be read (the message names the file, the line and the problem)."""


# -- reading the files ------------------------------------------------------------------------------
class _Reader:
    """The lines of a potential file, read as LAMMPS' PotentialFileReader does: header lines by
    words, tables as runs of numbers spread over as many lines as they take."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.lines = self.path.read_text().splitlines()
        except OSError as exc:
            raise EAMFileError(f"{self.path}: cannot read the EAM potential file ({exc.strerror or exc})") from None
        except UnicodeDecodeError:
            raise EAMFileError(f"{self.path}: not a text file (an EAM potential file is text)") from None
        self.k = 0                      # the next line (0-based)

    def fail(self, line: int | None, problem: str) -> EAMFileError:
        return EAMFileError(f"{self.path}:{line}: {problem}" if line is not None else f"{self.path}: {problem}")

    def skip(self, count: int, what: str) -> None:
        if self.k + count > len(self.lines):
            raise self.fail(None, f"the file ends before {what} ({len(self.lines)} lines)")
        self.k += count

    def words(self, fewest: int, what: str) -> tuple[list, int]:
        """The words of the next line (at least ``fewest``) and its 1-based number."""
        if self.k >= len(self.lines):
            raise self.fail(None, f"the file ends before {what} (line {self.k + 1})")
        words = self.lines[self.k].split()
        self.k += 1
        if len(words) < fewest:
            raise self.fail(self.k, f"{what}: expected {fewest} values, found {len(words)}: {self.lines[self.k - 1]!r}")
        return words, self.k

    def number(self, word: str, line: int, what: str, integer: bool = False):
        try:
            return int(word) if integer else float(word)
        except ValueError:
            kind = "an integer" if integer else "a number"
            raise self.fail(line, f"{what}: expected {kind}, found {word!r}") from None

    def values(self, n: int, what: str) -> np.ndarray:
        """``n`` numbers from the next lines (several to a line; LAMMPS' ``next_dvector``: values after
        the n-th on its line are not read), 1-based: element 0 is unused."""
        out = np.zeros(n + 1)
        i = 0
        while i < n:
            if self.k >= len(self.lines):
                raise self.fail(None, f"the file ends inside {what}: {i} of {n} values read")
            line = self.k + 1
            for word in self.lines[self.k].split():
                if i == n:
                    break
                i += 1
                out[i] = self.number(word, line, f"{what}, value {i}")
            self.k += 1
        if not np.isfinite(out).all():
            raise self.fail(self.k, f"{what}: a value is not finite (inf or nan)")
        return out


@dataclass
class FileGrid:
    """The grids of a file: ``nrho`` points spaced ``drho`` (density), ``nr`` spaced ``dr`` (Angstrom)
    and the cutoff ``cut`` (Angstrom)."""

    nrho: int
    drho: float
    nr: int
    dr: float
    cut: float


def _read_grid(reader: _Reader) -> FileGrid:
    words, line = reader.words(5, "the grid line 'nrho drho nr dr cutoff'")
    nrho = reader.number(words[0], line, "nrho", integer=True)
    drho = reader.number(words[1], line, "drho")
    nr = reader.number(words[2], line, "nr", integer=True)
    dr = reader.number(words[3], line, "dr")
    cut = reader.number(words[4], line, "cutoff")
    for name, value in (("nrho", nrho), ("nr", nr)):
        if value < MIN_POINTS:
            raise reader.fail(line, f"{name} = {value}: a table needs at least {MIN_POINTS} points")
    for name, value in (("drho", drho), ("dr", dr), ("cutoff", cut)):
        if not (math.isfinite(value) and value > 0):
            raise reader.fail(line, f"{name} = {value}: must be positive")
    return FileGrid(nrho, drho, nr, dr, cut)


@dataclass
class Funcfl:
    """A DYNAMO funcfl file (one element): ``frho`` (nrho + 1,), ``zr``, ``rhor`` (nr + 1,), 1-based."""

    path: str
    number: int
    mass: float
    grid: FileGrid
    frho: np.ndarray
    zr: np.ndarray
    rhor: np.ndarray


def read_funcfl(path) -> Funcfl:
    """Read a funcfl file (``pair_style eam``) as LAMMPS' ``PairEAM::read_file`` does."""
    reader = _Reader(path)
    reader.skip(1, "the line 'Z mass'")
    words, line = reader.words(2, "the line 'atomic-number mass'")
    number = reader.number(words[0], line, "atomic number", integer=True)
    mass = reader.number(words[1], line, "mass")
    if not (math.isfinite(mass) and mass > 0):
        raise reader.fail(line, f"mass = {mass}: must be positive")
    grid = _read_grid(reader)
    frho = reader.values(grid.nrho, "F(rho)")
    zr = reader.values(grid.nr, "Z(r)")
    rhor = reader.values(grid.nr, "rho(r)")
    return Funcfl(str(path), number, mass, grid, frho, zr, rhor)


@dataclass
class Setfl:
    """A setfl (``eam/alloy``) or Finnis-Sinclair (``eam/fs``) file, tables 1-based.

    ``frho`` (N, nrho + 1); ``rhor`` (N, nr + 1) for setfl, (N, N, nr + 1) for fs (``rhor[i, j]``:
    the j-th density block of element i); ``z2r`` (N, N, nr + 1): r * phi, filled for i >= j.
    """

    path: str
    elements: list
    numbers: list
    masses: list
    grid: FileGrid
    frho: np.ndarray
    rhor: np.ndarray
    z2r: np.ndarray
    fs: bool = False


def read_setfl(path, fs: bool = False) -> Setfl:
    """Read a setfl file (``fs=False``, ``pair_style eam/alloy``) or a Finnis-Sinclair file
    (``fs=True``, ``pair_style eam/fs``) as LAMMPS' ``PairEAMAlloy::read_file`` and
    ``PairEAMFS::read_file`` do."""
    reader = _Reader(path)
    reader.skip(3, "the element line (three comment lines come first)")
    words, line = reader.words(1, "the element line 'N El1 El2 ...'")
    n = reader.number(words[0], line, "number of elements", integer=True)
    if n < 1 or len(words) != n + 1:
        raise reader.fail(line, f"the element line says {words[0]} element(s) and names {len(words) - 1}")
    elements = words[1:]
    if len(set(elements)) != n:
        raise reader.fail(line, f"an element is named twice: {' '.join(elements)}")
    grid = _read_grid(reader)
    frho = np.zeros((n, grid.nrho + 1))
    rhor = np.zeros((n, n, grid.nr + 1) if fs else (n, grid.nr + 1))
    masses, numbers = [], []
    for i, element in enumerate(elements):
        words, line = reader.words(2, f"the line 'Z mass ...' of element {element}")
        numbers.append(reader.number(words[0], line, f"atomic number of {element}", integer=True))
        mass = reader.number(words[1], line, f"mass of {element}")
        if not (math.isfinite(mass) and mass > 0):
            raise reader.fail(line, f"mass of {element} = {mass}: must be positive")
        masses.append(mass)
        frho[i] = reader.values(grid.nrho, f"F(rho) of {element}")
        if fs:
            for j, other in enumerate(elements):
                rhor[i, j] = reader.values(grid.nr, f"rho(r) of {element} block {other}")
        else:
            rhor[i] = reader.values(grid.nr, f"rho(r) of {element}")
    z2r = np.zeros((n, n, grid.nr + 1))
    for i in range(n):
        for j in range(i + 1):
            z2r[i, j] = reader.values(grid.nr, f"r*phi(r) of {elements[i]}-{elements[j]}")
    return Setfl(str(path), elements, numbers, masses, grid, frho, rhor, z2r, fs)


# -- LAMMPS' grids and splines ------------------------------------------------------------------------
def resample(values: np.ndarray, file_delta: float, file_n: int, delta: float, n: int) -> np.ndarray:
    """A funcfl table on the common grid (LAMMPS' ``file2array``): the point ``m`` (1-based) at
    ``x = (m - 1) delta``, by 4-point Lagrange interpolation of the file's 1-based ``values``.
    Returns (n + 1,), element 0 unused; the same operations as LAMMPS, in the same order."""
    sixth = 1.0 / 6.0
    m = np.arange(1, n + 1)
    x = (m - 1) * delta
    p = x / file_delta + 1.0
    k = p.astype(np.int64)
    k = np.minimum(k, file_n - 2)
    k = np.maximum(k, 2)
    p = p - k
    p = np.minimum(p, 2.0)
    cof1 = -sixth * p * (p - 1.0) * (p - 2.0)
    cof2 = 0.5 * (p * p - 1.0) * (p - 2.0)
    cof3 = -0.5 * p * (p + 1.0) * (p - 2.0)
    cof4 = sixth * p * (p * p - 1.0)
    out = np.zeros(n + 1)
    out[1:] = cof1 * values[k - 1] + cof2 * values[k] + cof3 * values[k + 1] + cof4 * values[k + 2]
    return out


def spline(f: np.ndarray, delta: float) -> np.ndarray:
    """LAMMPS' ``PairEAM::interpolate``: the 7 coefficients of each grid point of the 1-based table
    ``f`` (n + 1,) spaced ``delta``.  Returns (n + 1, 7), row 0 unused."""
    n = len(f) - 1
    s = np.zeros((n + 1, 7))
    s[1:, 6] = f[1:]
    v = s[:, 6]
    s[1, 5] = v[2] - v[1]
    s[2, 5] = 0.5 * (v[3] - v[1])
    s[n - 1, 5] = 0.5 * (v[n] - v[n - 2])
    s[n, 5] = v[n] - v[n - 1]
    m = np.arange(3, n - 1)
    s[m, 5] = ((v[m - 2] - v[m + 2]) + 8.0 * (v[m + 1] - v[m - 1])) / 12.0
    m = np.arange(1, n)
    s[m, 4] = 3.0 * (v[m + 1] - v[m]) - 2.0 * s[m, 5] - s[m + 1, 5]
    s[m, 3] = s[m, 5] + s[m + 1, 5] - 2.0 * (v[m + 1] - v[m])
    s[n, 4] = 0.0
    s[n, 3] = 0.0
    s[1:, 2] = s[1:, 5] / delta
    s[1:, 1] = 2.0 * s[1:, 4] / delta
    s[1:, 0] = 3.0 * s[1:, 3] / delta
    return s


@dataclass
class EAMTables:
    """What the force kernels read: LAMMPS' splines and type maps for ``n_types`` atom types.

    Attributes
    ----------
    nrho, nr : int
        Points of the density and distance grids.
    rdrho, rdr : float
        1 / drho (1 / density units), 1 / dr (1 / Angstrom).
    rhomax : float
        ``(nrho - 1) drho``: beyond it the embedding energy is extended linearly.
    cutsq : float
        Squared cutoff (Angstrom^2): pairs with ``r^2 < cutsq`` interact.
    frho : (nfrho, nrho + 1, 7) float64
        Splines of F(rho) per table (the last: zeros, LAMMPS' table of types without one).
    rhor : (nrhor, nr + 1, 7) float64
        Splines of rho(r).
    z2r : (nz2r, nr + 1, 7) float64
        Splines of r * phi(r) (eV Angstrom).
    type2frho : (n_types,) int32
    type2rhor, type2z2r : (n_types * n_types,) int32
        Row ``ti * n_types + tj`` (0-based types): the table of the pair, as LAMMPS' arrays.
    masses : dict
        0-based type -> mass (g/mol) from the file, as ``pair_coeff`` sets it in LAMMPS.
    """

    nrho: int
    nr: int
    rdrho: float
    rdr: float
    rhomax: float
    cutsq: float
    frho: np.ndarray
    rhor: np.ndarray
    z2r: np.ndarray
    type2frho: np.ndarray
    type2rhor: np.ndarray
    type2z2r: np.ndarray
    masses: dict = field(default_factory=dict)


def _lower_index(a: int, b: int) -> int:
    """LAMMPS' index of the element pair (a, b) among the tables of pairs a >= b."""
    row, col = max(a, b), min(a, b)
    return row * (row + 1) // 2 + col


# -- the potential ------------------------------------------------------------------------------------
class EAM(ManyBodyPotential):
    """An EAM potential from LAMMPS potential files.

    Build it with :meth:`funcfl`, :meth:`alloy` or :meth:`fs` (or from a LAMMPS script's
    ``pair_style eam|eam/alloy|eam/fs`` and ``pair_coeff``).  Energies in eV, lengths in Angstrom
    (metal units).

    Parameters
    ----------
    style : {"eam", "eam/alloy", "eam/fs"}
    files : list of str
        ``eam``: the funcfl files in the order LAMMPS met them; otherwise the one setfl/fs file.
    type_map : list
        Per atom type (0-based): the index of its funcfl file in ``files`` (``eam``) or of its
        element in the setfl/fs file; None for a type without one (LAMMPS' ``NULL``).

    Examples
    --------
    >>> cu = EAM.funcfl("Cu_u3.eam")                          # doctest: +SKIP
    >>> alcu = EAM.alloy("AlCu.eam.alloy", "Al", "Cu")        # doctest: +SKIP
    """

    name = "eam"
    lammps_styles = {"eam": (0, 0), "eam/alloy": (0, 0), "eam/fs": (0, 0)}

    def __init__(self, style: str, files: list, type_map: list):
        if style not in STYLE_KINDS:
            raise ValueError(f"EAM style must be one of {', '.join(STYLE_KINDS)}, got {style!r}")
        self.style = style
        self.name = style
        kind = STYLE_KINDS[style]
        if kind == "funcfl":
            self.files = [read_funcfl(f) for f in files]
        else:
            if len(files) != 1:
                raise ValueError(f"pair_style {style} reads one file, got {len(files)}")
            self.files = [read_setfl(files[0], fs=kind == "fs")]
        self.type_map = list(type_map)
        count = len(self.files) if kind == "funcfl" else len(self.files[0].elements)
        for t, k in enumerate(self.type_map):
            if k is not None and not 0 <= k < count:
                raise ValueError(f"{style}: type {t + 1} maps to entry {k} of {count}")

    # -- constructors ---------------------------------------------------------------------------
    @classmethod
    def funcfl(cls, *paths) -> "EAM":
        """``pair_style eam``: one funcfl file per atom type (type 1 the first path, ...)."""
        files = list(dict.fromkeys(str(p) for p in paths))
        return cls("eam", files, [files.index(str(p)) for p in paths])

    @classmethod
    def alloy(cls, path, *elements) -> "EAM":
        """``pair_style eam/alloy``: a setfl file and the element of each atom type (None: no element)."""
        return cls._from_setfl("eam/alloy", path, elements)

    @classmethod
    def fs(cls, path, *elements) -> "EAM":
        """``pair_style eam/fs``: a Finnis-Sinclair file and the element of each atom type."""
        return cls._from_setfl("eam/fs", path, elements)

    @classmethod
    def _from_setfl(cls, style, path, elements) -> "EAM":
        pot = cls(style, [str(path)], [None] * len(elements))
        names = pot.files[0].elements
        for t, element in enumerate(elements):
            if element is None or element == "NULL":
                continue
            if element not in names:
                raise ValueError(f"{path}: element {element} (type {t + 1}) is not in the file ({' '.join(names)})")
            pot.type_map[t] = names.index(element)
        return pot

    # -- LAMMPS ---------------------------------------------------------------------------------
    @classmethod
    def lammps_pair_coeff(cls, style: str, types_i, types_j, values: list, both_all: bool, n_types: int,
                          directory=None, global_args=None) -> dict:
        """Check one ``pair_coeff`` line and read its file, as LAMMPS' ``coeff`` does; return the
        masses it sets (0-based type -> mass).

        ``types_i``, ``types_j``: the 0-based type ranges; ``both_all``: the types were written ``* *``.
        ``eam``: ``pair_coeff I J FILE`` maps the types I = J of the ranges to the file;
        ``eam/alloy``, ``eam/fs``: ``pair_coeff * * FILE El1 .. ElN`` (N = the number of atom types,
        NULL for a type without an element)."""
        if STYLE_KINDS[style] == "funcfl":
            if len(values) != 1:
                raise ValueError(f"pair_coeff ({style}): expected I J FILE, got {len(values)} value(s) after the types")
            diagonal = [t for t in types_i if t in types_j]
            if not diagonal:
                raise ValueError(f"pair_coeff ({style}): the type ranges share no type I = J (LAMMPS sets funcfl "
                                 f"files for I I pairs only)")
            mass = read_funcfl(resolve_potential_file(values[0], directory)).mass
            return {t: mass for t in diagonal}
        if not both_all:
            raise ValueError(f"pair_coeff ({style}): the types must be * * (one line maps every type to an element)")
        if len(values) != n_types + 1:
            raise ValueError(f"pair_coeff * * ({style}): expected FILE and {n_types} element name(s) (one per atom "
                             f"type, NULL for none), got {len(values)} value(s)")
        path = resolve_potential_file(values[0], directory)
        pot = cls._from_setfl(style, path, [None if e == "NULL" else e for e in values[1:]])
        return pot.masses(n_types)

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context) -> "EAM":
        """``pair_style eam|eam/alloy|eam/fs`` (no arguments) and its ``pair_coeff`` lines
        (0-based, i <= j; a ``* *`` line expanded to every pair)."""
        if context.units != "metal":
            raise NotImplementedError(f"pair_style {style} with units {context.units}: pycumd reads EAM files in "
                                      f"their own units, metal (use units metal)")
        if STYLE_KINDS[style] == "funcfl":
            files: list = []
            type_map: list = [None] * context.n_types
            for i, j, values in pair_coeffs:
                if len(values) != 1:
                    raise ValueError(f"pair_coeff {i + 1} {j + 1} ({style}): expected one funcfl file, got {values}")
                path = str(resolve_potential_file(values[0], context.directory))
                if path not in files:
                    files.append(path)
                if i == j:
                    type_map[i] = files.index(path)
            return cls(style, files, type_map)
        if not pair_coeffs:
            raise ValueError(f"pair_style {style}: no pair_coeff line (pair_coeff * * FILE El1 .. ElN)")
        values = pair_coeffs[-1][2]
        path = resolve_potential_file(values[0], context.directory)
        return cls._from_setfl(style, path, [None if e == "NULL" else e for e in values[1:]])

    # -- the engine's side ----------------------------------------------------------------------
    def max_cutoff(self, n_types: int) -> float:
        """The cutoff (Angstrom): the largest of the funcfl files' (all read, as LAMMPS), or the
        setfl/fs file's."""
        if not self.files:
            raise ValueError(f"pair_style {self.style}: no pair_coeff line read a potential file")
        return max(f.grid.cut for f in self.files)

    def element_names(self) -> list:
        """The element (setfl, fs) or file (funcfl) of each type, None where there is none."""
        if STYLE_KINDS[self.style] == "funcfl":
            return [None if k is None else self.files[k].path for k in self.type_map]
        return [None if k is None else self.files[0].elements[k] for k in self.type_map]

    def atomic_number_types(self) -> dict | None:
        """Atomic number (as the files give it) -> 0-based type, for the ASE calculator's default
        ``type_map``; None where two types share an atomic number or a type has none."""
        funcfl = STYLE_KINDS[self.style] == "funcfl"
        numbers = [None if k is None else (self.files[k].number if funcfl else self.files[0].numbers[k])
                   for k in self.type_map]
        if None in numbers or len(set(numbers)) != len(numbers):
            return None
        return {int(z): t for t, z in enumerate(numbers)}

    def masses(self, n_types: int) -> dict:
        """0-based type -> the mass its file gives (the types with a file or element)."""
        out = {}
        for t, k in enumerate(self.type_map[:n_types]):
            if k is not None:
                out[t] = self.files[k].mass if STYLE_KINDS[self.style] == "funcfl" else self.files[0].masses[k]
        return out

    def table(self, n_types: int, pairs=None) -> EAMTables:
        """LAMMPS' splines and type maps for ``n_types`` atom types (``file2array`` and
        ``array2spline``); a ValueError names a type without a file or element.

        ``pairs``: the 0-based type pairs ``(i, j)``, ``i <= j``, that this potential covers (``pair_style
        hybrid``/``hybrid/overlay``: the pairs mapped to the EAM sub-style, :mod:`pycumd.potentials.hybrid`);
        None: every pair.  A pair it does not cover reads all-zero rho and r*phi tables (no density, no
        pair energy: what LAMMPS' skip list gives the sub-style), and a type none of whose pairs it
        covers the all-zero F table (no embedding energy: LAMMPS skips its atoms); only those types may
        have no file or element (``NULL``)."""
        self.max_cutoff(n_types)
        type_map = (self.type_map + [None] * n_types)[:n_types]
        everything = {(i, j) for i in range(n_types) for j in range(i, n_types)}
        covered = everything if pairs is None else {(min(i, j), max(i, j)) for i, j in pairs}
        used = {t for pair in covered for t in pair}
        missing = [t + 1 for t in sorted(used) if type_map[t] is None]
        if missing:
            raise ValueError(f"pair_style {self.style}: no potential for atom type(s) "
                             f"{', '.join(map(str, missing))} (every type needs a pair_coeff; a NULL type needs "
                             f"pair_style hybrid/overlay with another sub-style for its pairs)")
        if not used:
            raise ValueError(f"pair_style {self.style}: the potential covers no pair of types")
        if STYLE_KINDS[self.style] == "funcfl":
            arrays = self._funcfl_arrays(type_map)
        else:
            arrays = self._setfl_arrays(type_map)
        nrho, drho, nr, dr, rhomax, frho, rhor, z2r, t2f, t2rho, t2z = arrays
        if covered != everything:           # hybrid: the pairs of other sub-styles read zero tables
            rhor, z2r = rhor + [np.zeros(nr + 1)], z2r + [np.zeros(nr + 1)]
            for i in range(n_types):
                if i not in used:
                    t2f[i] = len(frho) - 1          # LAMMPS' zero F table (the arrays' last)
                for j in range(n_types):
                    if (min(i, j), max(i, j)) not in covered:
                        t2rho[i][j] = len(rhor) - 1
                        t2z[i][j] = len(z2r) - 1
        cut = self.max_cutoff(n_types)
        return EAMTables(nrho=nrho, nr=nr, rdrho=1.0 / drho, rdr=1.0 / dr, rhomax=rhomax, cutsq=cut * cut,
                         frho=np.array([spline(f, drho) for f in frho]),
                         rhor=np.array([spline(f, dr) for f in rhor]),
                         z2r=np.array([spline(f, dr) for f in z2r]),
                         type2frho=np.asarray(t2f, np.int32), type2rhor=np.asarray(t2rho, np.int32).ravel(),
                         type2z2r=np.asarray(t2z, np.int32).ravel(), masses=self.masses(n_types))

    def _funcfl_arrays(self, type_map):
        """LAMMPS' ``PairEAM::file2array``: the active files on one grid, Z_a Z_b as r * phi."""
        active = [self.files[k] for k in sorted({k for k in type_map if k is not None})]
        dr = max(f.grid.dr for f in active)
        drho = max(f.grid.drho for f in active)
        rmax = max((f.grid.nr - 1) * f.grid.dr for f in active)
        rhomax = max((f.grid.nrho - 1) * f.grid.drho for f in active)
        nr = int(rmax / dr + 0.5)
        nrho = int(rhomax / drho + 0.5)
        frho = [resample(f.frho, f.grid.drho, f.grid.nrho, drho, nrho) for f in self.files]
        frho.append(np.zeros(nrho + 1))
        rhor = [resample(f.rhor, f.grid.dr, f.grid.nr, dr, nr) for f in self.files]
        zr = [resample(f.zr, f.grid.dr, f.grid.nr, dr, nr) for f in self.files]
        z2r = [FUNCFL_ZZ * zr[i] * zr[j] for i in range(len(self.files)) for j in range(i + 1)]
        n, zero = len(type_map), len(self.files)       # zero: the F table of a type without a file
        t2f = [zero if k is None else k for k in type_map]
        type_map = [0 if k is None else k for k in type_map]      # a NULL type's pairs: masked by table()
        t2rho = [[type_map[i]] * n for i in range(n)]
        t2z = [[_lower_index(type_map[i], type_map[j]) for j in range(n)] for i in range(n)]
        return nrho, drho, nr, dr, rhomax, frho, rhor, z2r, t2f, t2rho, t2z

    def _setfl_arrays(self, type_map):
        """LAMMPS' ``PairEAMAlloy::file2array`` / ``PairEAMFS::file2array``: the file's own grid."""
        f = self.files[0]
        g, ne = f.grid, len(f.elements)
        frho = list(f.frho) + [np.zeros(g.nrho + 1)]
        rhor = list(f.rhor.reshape(-1, g.nr + 1))
        z2r = [f.z2r[i, j] for i in range(ne) for j in range(i + 1)]
        n = len(type_map)
        t2f = [ne if k is None else k for k in type_map]         # ne: the zero F table
        type_map = [0 if k is None else k for k in type_map]      # a NULL type's pairs: masked by table()
        if f.fs:
            t2rho = [[type_map[i] * ne + type_map[j] for j in range(n)] for i in range(n)]
        else:
            t2rho = [[type_map[i]] * n for i in range(n)]
        t2z = [[_lower_index(type_map[i], type_map[j]) for j in range(n)] for i in range(n)]
        return g.nrho, g.drho, g.nr, g.dr, (g.nrho - 1) * g.drho, frho, rhor, z2r, t2f, t2rho, t2z

    def describe(self) -> str:
        names = ", ".join(str(Path(x).name) if x and STYLE_KINDS[self.style] == "funcfl" else str(x)
                          for x in self.element_names())
        files = ", ".join(Path(f.path).name for f in self.files)
        return f"{self.style} ({files}; types: {names}; cutoff {self.max_cutoff(len(self.type_map)):g} A)"


def resolve_potential_file(name, directory=None) -> Path:
    """A potential file named in a script, as LAMMPS' ``open_potential`` finds it: the name as
    given (relative to the script's ``directory``), else in ``$LAMMPS_POTENTIALS``.  A ValueError
    says where it was looked for."""
    path = Path(str(name))
    tried = [path if path.is_absolute() or directory is None else Path(directory) / path]
    if tried[0].is_file():
        return tried[0]
    library = os.environ.get("LAMMPS_POTENTIALS")
    if library and not path.is_absolute():
        tried.append(Path(library) / path.name)
        if tried[-1].is_file():
            return tried[-1]
    raise ValueError(f"cannot open EAM potential file {name} (looked for {', '.join(map(str, tried))})")
