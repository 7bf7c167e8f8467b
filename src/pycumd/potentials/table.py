"""Tabulated pair potentials: LAMMPS ``pair_style table linear|spline N`` with LAMMPS table files.

A table file section (``KEYWORD``, then ``N n [R|RSQ rlo rhi] [FPRIME fplo fphi]``, a blank line
and ``n`` lines ``index r e f``) is read as LAMMPS reads it, splined over the file's points and
resampled at ``N`` points evenly spaced in ``r^2`` from the inner distance to the cutoff, exactly
as LAMMPS' ``PairTable::compute_table`` (so energies and forces agree with LAMMPS to rounding):

``linear``  ``fraction = (r^2 - rsq_k) / delta``,  ``E = e_k + fraction de_k``, ``F/r = f_k + fraction df_k``
``spline``  cubic spline in ``r^2`` of ``e`` and of ``f/r``, with LAMMPS' end conditions.

Each type pair's table row holds ``[rc^2, rc, e_c, f_c, inner^2, 1/delta, delta^2/6, spline, N]``
followed by five arrays of ``N`` values: ``r^2, e, f/r`` and ``de, df/r`` (linear) or the spline's
second derivatives ``e2, f2`` (spline), and one last value the kernels write: the smallest ``r^2``
below ``inner^2`` they met (``inf``: none; see below).  The kernels read a pair's row from memory (the
single-type register copy of the row is off: ``FORCE_ONE_TYPE_PATH=0``).  CPU and GPU run the same
arithmetic (``table_raw`` and ``table.cuh``); on the GPU in double precision energies, forces and the
virial agree with the CPU to 1e-12 (tests/test_table.py).

A test comparing devices builds a fresh ``System`` for each Simulation: building a CPU state does
not copy ``system.types`` (``State.from_system`` takes the int32 array itself), so a CPU run's reorder
by cell would permute the types of a system that another Simulation then reads.

A pair closer than its table's inner distance stops the run, as LAMMPS' "Pair distance < table
inner cutoff": the kernels (CPU and GPU) record the smallest such ``r^2`` in the row's last value
(the GPU with an atomic minimum on its bits, one comparison per pair otherwise), and
:meth:`Table.pair_error` names the atoms and the distance. The CPU checks after every force
evaluation, so the error names the step and the pair that LAMMPS names; the GPU's value is read at
each report and at the end of a run (``Bookkeeping.check_finite``), and the error names the
closest pair below the inner distance at that step, or, if the pair has moved apart again, the
distance recorded and the steps between which it came. ``BITMAP`` and ``lookup`` tables are not
supported.
"""

from __future__ import annotations

import math
from pathlib import Path

import numba
import numpy as np

from .base import MissingParameterError, PairPotential
from .lammps_args import number

TABLE_HEADER = 9          #: rc2, rc, e_c, f_c, inner^2, 1/delta, delta^2/6, spline flag, N
#: columns of an N-point row: the header, five arrays, the smallest r^2 below inner^2 met
def table_columns(n: int) -> int:
    return TABLE_HEADER + 5 * n + 1
TABLE_STYLES = ("linear", "spline")


class TableFileError(ValueError):
    """A table file that cannot be read (the message names the file, the line and the problem)."""


@numba.njit(inline="always", cache=True)
def table_raw(r2, row):
    """Energy and force/r from a pair's table row (see the module docstring); a pair below the inner
    distance is recorded in the row's last value."""
    n = int(row[8])
    if r2 < row[4] and r2 < row[TABLE_HEADER + 5 * n]:
        row[TABLE_HEADER + 5 * n] = r2
    k = int((r2 - row[4]) * row[5])
    k = min(max(k, 0), n - 2)
    rsq, e, f, a2, b2 = TABLE_HEADER, TABLE_HEADER + n, TABLE_HEADER + 2 * n, TABLE_HEADER + 3 * n, TABLE_HEADER + 4 * n
    b = (r2 - row[rsq + k]) * row[5]
    if row[7] == 0.0:
        return row[e + k] + b * row[a2 + k], row[f + k] + b * row[b2 + k]
    a = 1.0 - b
    ca, cb = a * a * a - a, b * b * b - b
    energy = a * row[e + k] + b * row[e + k + 1] + (ca * row[a2 + k] + cb * row[a2 + k + 1]) * row[6]
    force = a * row[f + k] + b * row[f + k + 1] + (ca * row[b2 + k] + cb * row[b2 + k + 1]) * row[6]
    return energy, force


def read_table_file(path, keyword: str) -> dict:
    """One section of a LAMMPS pair table file.

    Returns ``r``, ``e``, ``f`` (arrays of the file's ``n`` points; ``r`` recomputed from ``R``/``RSQ``
    as LAMMPS does), ``rflag`` (None, "R" or "RSQ"), ``rlo``, ``rhi`` and ``fplo``, ``fphi``
    (None without ``FPRIME``).
    """
    path = Path(path)
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise TableFileError(f"{path}: cannot read the table file ({exc.strerror})") from None
    start = next((k for k, line in enumerate(lines) if line.split()[:1] == [keyword]), None)
    if start is None:
        raise TableFileError(f"{path}: no section {keyword!r} in the table file")
    if start + 1 >= len(lines):
        raise TableFileError(f"{path}:{start + 1}: section {keyword} ends before its parameter line")
    where = f"{path}:{start + 2}"
    words = lines[start + 1].split()
    info = {"n": 0, "rflag": None, "rlo": None, "rhi": None, "fplo": None, "fphi": None}
    k = 0
    try:
        while k < len(words):
            w = words[k]
            if w == "N":
                info["n"], k = int(words[k + 1]), k + 2
            elif w in ("R", "RSQ"):
                info["rflag"], info["rlo"], info["rhi"], k = w, float(words[k + 1]), float(words[k + 2]), k + 3
            elif w == "FPRIME":
                info["fplo"], info["fphi"], k = float(words[k + 1]), float(words[k + 2]), k + 3
            elif w == "BITMAP":
                raise TableFileError(f"{where}: BITMAP tables are not supported (use R, RSQ or explicit r values)")
            else:
                raise TableFileError(f"{where}: unknown keyword {w!r} in the table parameters (N, R, RSQ, FPRIME)")
    except (IndexError, ValueError) as exc:
        raise TableFileError(f"{where}: cannot read the table parameters {lines[start + 1].strip()!r} ({exc})") from None
    n = info["n"]
    if n < 2:
        raise TableFileError(f"{where}: the table parameters must set N >= 2")
    data = [(k, line) for k, line in enumerate(lines[start + 2:], start + 3) if line.strip() and not line.startswith("#")]
    if len(data) < n:
        raise TableFileError(f"{path}: section {keyword} has {len(data)} of its {n} lines")
    r, e, f = np.empty(n), np.empty(n), np.empty(n)
    for i, (lineno, line) in enumerate(data[:n]):
        try:
            _, r[i], e[i], f[i] = int(line.split()[0]), *map(float, line.split()[1:4])
        except (ValueError, IndexError, TypeError):
            raise TableFileError(f"{path}:{lineno}: expected 'index r e f', got {line.strip()!r}") from None
        if info["rflag"] == "R":
            r[i] = info["rlo"] + (info["rhi"] - info["rlo"]) * i / (n - 1)
        elif info["rflag"] == "RSQ":
            r[i] = math.sqrt(info["rlo"] * info["rlo"] + (info["rhi"] * info["rhi"] - info["rlo"] * info["rlo"]) * i / (n - 1))
    info.update(r=r, e=e, f=f)
    return info


def _spline(x, y, yp1, ypn):
    """Second derivatives of the cubic spline through (x, y) with end slopes yp1, ypn (LAMMPS' spline())."""
    n = len(x)
    y2, u = np.zeros(n), np.zeros(n)
    y2[0] = -0.5
    u[0] = (3.0 / (x[1] - x[0])) * ((y[1] - y[0]) / (x[1] - x[0]) - yp1)
    for i in range(1, n - 1):
        sig = (x[i] - x[i - 1]) / (x[i + 1] - x[i - 1])
        p = sig * y2[i - 1] + 2.0
        y2[i] = (sig - 1.0) / p
        u[i] = (y[i + 1] - y[i]) / (x[i + 1] - x[i]) - (y[i] - y[i - 1]) / (x[i] - x[i - 1])
        u[i] = (6.0 * u[i] / (x[i + 1] - x[i - 1]) - sig * u[i - 1]) / p
    qn = 0.5
    un = (3.0 / (x[n - 1] - x[n - 2])) * (ypn - (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]))
    y2[n - 1] = (un - qn * u[n - 2]) / (qn * y2[n - 2] + 1.0)
    for k in range(n - 2, -1, -1):
        y2[k] = y2[k] * y2[k + 1] + u[k]
    return y2


def _splint(xa, ya, y2a, x):
    """The spline's value at x (LAMMPS' splint())."""
    klo, khi = 0, len(xa) - 1
    while khi - klo > 1:
        k = (khi + klo) >> 1
        if xa[k] > x:
            khi = k
        else:
            klo = k
    h = xa[khi] - xa[klo]
    a = (xa[khi] - x) / h
    b = (x - xa[klo]) / h
    return a * ya[klo] + b * ya[khi] + ((a * a * a - a) * y2a[klo] + (b * b * b - b) * y2a[khi]) * (h * h) / 6.0


def table_row(style: str, n: int, data: dict, cut: float) -> np.ndarray:
    """The row of one pair: ``n`` points in r^2 from the file's inner distance to ``cut`` (LAMMPS' compute_table)."""
    r, e, f = data["r"], data["e"], data["f"]
    rlo = data["rlo"] if data["rflag"] else r[0]
    rhi = data["rhi"] if data["rflag"] else r[-1]
    if not rlo < cut <= rhi:
        raise ValueError(f"pair table cutoff {cut:g} is outside the table ({rlo:g}, {rhi:g}]")
    if rlo <= 0:
        raise ValueError(f"pair table: inner distance {rlo:g} must be positive")
    match = style == "linear" and len(r) == n and data["rflag"] == "RSQ" and data["rhi"] == cut
    if not match:
        e2f = _spline(r, e, -f[0], -f[-1])
        if data["fplo"] is None:
            fplo, fphi = (f[1] - f[0]) / (r[1] - r[0]), (f[-1] - f[-2]) / (r[-1] - r[-2])
        else:
            fplo, fphi = data["fplo"], data["fphi"]
        f2f = _spline(r, f, fplo, fphi)
    innersq = rlo * rlo
    delta = (cut * cut - innersq) / (n - 1)
    rsq = np.array([innersq + i * delta for i in range(n)])
    rr = np.sqrt(rsq)
    if match:
        ee, ff = e.copy(), f / rr
    else:
        ee = np.array([_splint(r, e, e2f, x) for x in rr])
        ff = np.array([_splint(r, f, f2f, x) for x in rr])
        if style == "linear":
            ff = ff / rr
    if style == "linear":
        a2, b2 = np.append(np.diff(ee), 0.0), np.append(np.diff(ff), 0.0)
    else:
        ep0, epn = -ff[0] / (2.0 * math.sqrt(innersq)), -ff[-1] / (2.0 * cut)
        a2 = _spline(rsq, ee, ep0, epn)
        sf = 0.1
        if data["fplo"] is not None:
            fp0 = (data["fplo"] / math.sqrt(innersq) - ff[0] / innersq) / (2.0 * math.sqrt(innersq))
        else:
            rsq2 = innersq + sf * delta
            fp0 = (_splint(r, f, f2f, math.sqrt(rsq2)) / math.sqrt(rsq2) - ff[0] / math.sqrt(innersq)) / (sf * delta)
        if data["fplo"] is not None and cut == r[-1]:
            fpn = (data["fphi"] / cut - ff[-1] / (cut * cut)) / (2.0 * cut)
        else:
            rsq1 = cut * cut - sf * delta
            fpn = (ff[-1] / cut - _splint(r, f, f2f, math.sqrt(rsq1)) / math.sqrt(rsq1)) / (sf * delta)
        ff = ff / np.sqrt(rsq)
        b2 = _spline(rsq, ff, fp0, fpn)
    header = [cut * cut, cut, 0.0, 0.0, innersq, 1.0 / delta, delta * delta / 6.0, float(style == "spline"), float(n)]
    return np.concatenate([header, rsq, ee, ff, a2, b2, [np.inf]])


def table_cuda_defines(n: int) -> dict:
    """The defines of table.cuh for N-point tables: the row width, rows read per pair."""
    # every pair loads its row from the table in global memory, where pair_raw records a pair below
    # the inner distance (no register copy of a row: FORCE_ONE_TYPE_PATH 0)
    return {"TABLE_COLUMNS": table_columns(n), "FORCE_ONE_TYPE_PATH": 0}


class Table(PairPotential):
    """A tabulated pair potential, one table per type pair (LAMMPS ``pair_style table``).

    Parameters
    ----------
    style : {"linear", "spline"}
        Interpolation in ``r^2`` (LAMMPS' ``linear`` and ``spline``).
    n : int
        Points of the resampled tables (LAMMPS' ``N``), >= 2.

    Tables come from files (:meth:`pair_table`) or arrays (:meth:`pair_values`).  No mixing: every
    pair must be set.  No cutoff treatment (LAMMPS' ``pair_modify shift`` does not apply).

    Example
    -------
    >>> pot = Table("spline", 1000).pair_table(0, 0, "lj.table", "LJ")      # doctest: +SKIP
    """

    name = "table"
    cuda_header = "potentials/table.cuh"
    lammps_styles = {"table": (2, 2)}
    raw_pair_function = staticmethod(table_raw)

    @classmethod
    def check_lammps_args(cls, style, global_args):
        """``pair_style table linear|spline N``."""
        kind = str(global_args[0])
        if kind == "bitmap" or kind == "lookup":
            raise ValueError(f"pair_style table {kind} is not supported (linear or spline)")
        if kind not in TABLE_STYLES:
            raise ValueError(f"pair_style table: unknown table style {kind!r} (linear or spline)")
        n = number(global_args[1], "pair_style table N")
        if n != int(n) or n < 2:
            raise ValueError(f"pair_style table: N must be an integer >= 2, got {global_args[1]}")

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context):
        """``pair_style table STYLE N`` with ``pair_coeff I J FILE KEYWORD [CUTOFF]`` lines."""
        return table_from_lammps(str(global_args[0]), int(number(global_args[1], "N")), pair_coeffs,
                                 n_types=context.n_types, cutoff_mode=context.cutoff_mode,
                                 directory=Path(context.directory or "."))

    def __init__(self, style: str, n: int):
        if style not in TABLE_STYLES:
            raise ValueError(f"table: style must be linear or spline, got {style!r}")
        if int(n) != n or n < 2:
            raise ValueError(f"table: n must be an integer >= 2, got {n}")
        super().__init__(1.0)
        self.style, self.n = style, int(n)
        self._rows: dict = {}

    @property
    def cuda_defines(self) -> dict:
        """The row width and the per-pair row loads of the force kernels (no register copy of a row)."""
        return table_cuda_defines(self.n)

    def pair_table(self, type_i: int, type_j: int, path, keyword: str, r_cut: float | None = None) -> "Table":
        """The table of a pair (0-based types) from section ``keyword`` of the LAMMPS table file ``path``."""
        data = read_table_file(path, keyword)
        return self._set(type_i, type_j, data, r_cut, f"{path} {keyword}")

    def pair_values(self, type_i: int, type_j: int, r, energy, force, r_cut: float | None = None,
                    fprime=None) -> "Table":
        """The table of a pair from arrays: distances ``r`` (ascending), ``energy`` and force ``-dE/dr``."""
        r, energy, force = (np.asarray(x, dtype=np.float64) for x in (r, energy, force))
        if not (r.ndim == 1 and r.shape == energy.shape == force.shape and len(r) >= 2 and (np.diff(r) > 0).all()):
            raise ValueError("table: r, energy and force must be 1-d arrays of the same length >= 2, r ascending")
        data = {"r": r, "e": energy, "f": force, "rflag": None, "rlo": None, "rhi": None,
                "fplo": None if fprime is None else fprime[0], "fphi": None if fprime is None else fprime[1]}
        return self._set(type_i, type_j, data, r_cut, "arrays")

    def _set(self, type_i, type_j, data, r_cut, source):
        cut = r_cut if r_cut is not None else (data["rhi"] if data["rflag"] else data["r"][-1])
        try:
            row = table_row(self.style, self.n, data, float(cut))
        except ValueError as exc:
            raise ValueError(f"{source}: {exc}") from None
        self._rows[(min(type_i, type_j), max(type_i, type_j))] = row
        return self

    def coefficients(self, type_i: int, type_j: int) -> dict:
        key = (min(type_i, type_j), max(type_i, type_j))
        if key not in self._rows:
            raise MissingParameterError(f"table: no table for the pair ({key[0] + 1}, {key[1] + 1}); "
                                        "tables are not mixed, set every pair")
        return {"r_cut": self._rows[key][1]}

    def table(self, n_types: int, pairs=None) -> np.ndarray:
        """Rows ``ti * n_types + tj`` of the pairs' tables (module docstring); ``pairs``: as
        :meth:`PairPotential.table` (the others :meth:`empty_row`)."""
        covered = None if pairs is None else {(min(i, j), max(i, j)) for i, j in pairs}
        keys = [(min(i, j), max(i, j)) for i in range(n_types) for j in range(n_types)]
        for key in keys:
            if covered is None or key in covered:
                self.coefficients(*key)
        return self._with_empty_rows([self._rows[key] if covered is None or key in covered else None
                                      for key in keys])

    def empty_row(self, width: int) -> np.ndarray:
        """As :meth:`PairPotential.empty_row` (``rc^2 = 0``, zero tables), with no pair below the inner
        distance recorded (the last value infinite: :meth:`pair_error` reads it)."""
        row = np.zeros(width)
        row[-1] = np.inf
        return row

    def pair_error(self, table, n_types: int, state, backend) -> str | None:
        """The error of a pair closer than its table's inner distance met by the kernels since the
        table was made (the rows' last values, see the module docstring), or None: names the atoms
        (ids), their distance and the step. ``table``: the kernels' table (backend array)."""
        hits = backend.to_host(table.reshape(n_types * n_types, -1)[:, -1]).astype(np.float64)
        if not (hits < np.inf).any():
            return None
        k = int(np.argmin(hits))
        ti, tj = divmod(k, n_types)
        inner = math.sqrt(float(self._rows[(min(ti, tj), max(ti, tj))][4]))
        pair = _closest_pair_of_types(state, backend, ti, tj, inner)
        where = "LAMMPS' pair_style table stops there too: extend the table to shorter distances"
        if pair is not None:
            id_i, id_j, r = pair
            return (f"pair_style table: pair distance {r:.10g} < table inner cutoff {inner:.10g} (atoms {id_i} "
                    f"and {id_j}, types {ti + 1} {tj + 1}) at step {state.step}; {where}")
        return (f"pair_style table: pair distance {math.sqrt(hits[k]):.10g} < table inner cutoff {inner:.10g} "
                f"(types {ti + 1} {tj + 1}) at or before step {state.step}, the atoms apart again since; {where}")

    def describe(self) -> str:
        return f"table ({self.style}, {self.n} points, {len(self._rows)} pair table(s))"


def _closest_pair_of_types(state, backend, ti: int, tj: int, distance: float):
    """(id_i, id_j, r) of the closest pair of atoms of types ti and tj closer than ``distance``
    (minimum image), or None."""
    from scipy.spatial import cKDTree

    n = state.n_atoms
    L = np.asarray(state.box_lengths, dtype=np.float64)
    x = np.mod(state.host_positions(backend)[:n], L)
    x[x >= L] -= np.broadcast_to(L, x.shape)[x >= L]
    types = backend.to_host(state.types)[:n]
    ids = backend.to_host(state.ids)[:n]
    best = None
    for i, j in cKDTree(x, boxsize=L).query_pairs(distance):
        if {int(types[i]), int(types[j])} != {ti, tj}:
            continue
        d = x[i] - x[j]
        d -= L * np.rint(d / L)
        r = float(np.sqrt(d @ d))
        if best is None or r < best[2]:
            best = (int(min(ids[i], ids[j])), int(max(ids[i], ids[j])), r)
    return best


def table_from_lammps(style: str, n: int, pair_coeffs: list, *, n_types: int, cutoff_mode: str = "truncate",
                      directory: Path = Path(".")) -> Table:
    """``pair_style table STYLE N`` with ``pair_coeff I J FILE KEYWORD [CUTOFF]`` lines."""
    pot = Table(style, n)
    for i, j, values in pair_coeffs:
        if len(values) not in (2, 3):
            raise ValueError(f"pair_coeff {i + 1} {j + 1} (table): expected FILE KEYWORD [CUTOFF], got {values}")
        path = Path(str(values[0]))
        path = path if path.is_absolute() else Path(directory) / path
        pot.pair_table(i, j, path, str(values[1]), float(values[2]) if len(values) == 3 else None)
    return pot
