"""Charged molecules for potential maps: PQR, PDB (charges where present), LAMMPS data, GSD, pycumd systems.

Every reader returns a :class:`Molecule`: positions (Angstrom), charges (elementary charges), radii
(Angstrom, 0 where the format has none), atom names and residue names (for writing ions back), and
the periodic box where the input has one.  Bad input raises :class:`pycumd.system.InputError`
naming the file, the line and the problem.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pycumd.system import InputError

__all__ = ["Molecule", "read_molecule", "read_pqr", "read_pdb", "read_gsd", "read_lammps_charges",
           "molecule_from_system", "write_pqr", "write_pdb"]


@dataclass
class Molecule:
    """Atoms with charges.

    Attributes
    ----------
    positions : ndarray, shape (N, 3), float64
        Angstrom.
    charges : ndarray, shape (N,), float64
        Elementary charges.
    radii : ndarray, shape (N,), float64
        Angstrom (0 where unknown).
    names, residues : list of str
        Atom and residue names (PDB columns), for output.
    box : ndarray, shape (3,), or None
        Periodic box lengths (Angstrom) with its origin in ``box_origin``, or None (non-periodic).
    source : str
        Where the atoms came from (file name), for messages.
    """

    positions: np.ndarray
    charges: np.ndarray
    radii: np.ndarray | None = None
    names: list = field(default_factory=list)
    residues: list = field(default_factory=list)
    box: np.ndarray | None = None
    box_origin: np.ndarray | None = None
    source: str = "<memory>"

    def __post_init__(self):
        self.positions = np.asarray(self.positions, dtype=np.float64).reshape(-1, 3)
        n = len(self.positions)
        self.charges = np.asarray(self.charges, dtype=np.float64).reshape(-1)
        if len(self.charges) != n:
            raise InputError(f"{self.source}: {n} positions but {len(self.charges)} charges")
        self.radii = np.zeros(n) if self.radii is None else np.asarray(self.radii, dtype=np.float64)
        self.names = list(self.names) or ["X"] * n
        self.residues = list(self.residues) or ["MOL"] * n
        if n == 0:
            raise InputError(f"{self.source}: no atoms")
        bad = np.flatnonzero(~np.all(np.isfinite(self.positions), axis=1) | ~np.isfinite(self.charges))
        if len(bad):
            raise InputError(f"{self.source}: atom {bad[0] + 1} has a non-finite position or charge")
        if self.box is not None:
            self.box = np.asarray(self.box, dtype=np.float64)
            self.box_origin = np.zeros(3) if self.box_origin is None else np.asarray(self.box_origin, float)

    @property
    def n_atoms(self) -> int:
        return len(self.positions)


def _float(text: str, path, line_no: int, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{path}:{line_no}: {what} {text.strip()!r} is not a number") from None
    if not np.isfinite(value):
        raise InputError(f"{path}:{line_no}: {what} is {text.strip()} (not finite)")
    return value


def read_pqr(path) -> Molecule:
    """Read a PQR file (PDB2PQR): ``ATOM``/``HETATM`` records whose last five whitespace-separated
    fields are x, y, z (Angstrom), charge (e) and radius (Angstrom)."""
    path = Path(path)
    pos, q, rad, names, res = [], [], [], [], []
    for line_no, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.startswith(("ATOM", "HETATM")):
            continue
        words = line.split()
        if len(words) < 10:
            raise InputError(f"{path}:{line_no}: PQR atom record needs name, residue, x, y, z, charge and "
                             f"radius; found {len(words)} fields")
        x, y, z = (_float(w, path, line_no, f"coordinate {d}") for w, d in zip(words[-5:-2], "xyz"))
        pos.append((x, y, z))
        q.append(_float(words[-2], path, line_no, "charge"))
        rad.append(_float(words[-1], path, line_no, "radius"))
        names.append(words[2])
        res.append(words[3])
    if not pos:
        raise InputError(f"{path}: no ATOM or HETATM records (empty PQR file?)")
    return Molecule(np.array(pos), np.array(q), np.array(rad), names, res, source=str(path))


def _pdb_charge(field_text: str, path, line_no: int):
    """PDB formal charge of columns 79-80 ('2+', '1-'), None when blank."""
    text = field_text.strip()
    if not text:
        return None
    if len(text) == 2 and text[0].isdigit() and text[1] in "+-":
        return float(text[0]) * (1 if text[1] == "+" else -1)
    raise InputError(f"{path}:{line_no}: charge field (columns 79-80) {text!r} is not like '1+' or '2-'")


def read_pdb(path, charges_from: str = "formal") -> Molecule:
    """Read a PDB file's ``ATOM``/``HETATM`` records (coordinates in columns 31-54).

    ``charges_from``: ``formal`` (columns 79-80, e.g. ``1-``; every atom must carry one, blank means
    0 only where some other atom has one), ``occupancy`` (columns 55-60) or ``bfactor`` (61-66), for
    files that keep partial charges there.
    """
    path = Path(path)
    if charges_from not in ("formal", "occupancy", "bfactor"):
        raise InputError(f"charges_from must be formal, occupancy or bfactor, got {charges_from!r}")
    pos, q, names, res, box = [], [], [], [], None
    any_charge = False
    for line_no, line in enumerate(path.read_text().splitlines(), start=1):
        if line.startswith("CRYST1"):
            try:
                box = np.array([float(line[6:15]), float(line[15:24]), float(line[24:33])])
            except ValueError:
                raise InputError(f"{path}:{line_no}: CRYST1 record without three cell lengths") from None
        if not line.startswith(("ATOM", "HETATM")):
            continue
        if len(line) < 54:
            raise InputError(f"{path}:{line_no}: ATOM record shorter than 54 columns (no coordinates)")
        pos.append(tuple(_float(line[c:c + 8], path, line_no, f"coordinate {d}")
                         for c, d in zip((30, 38, 46), "xyz")))
        if charges_from == "formal":
            charge = _pdb_charge(line[78:80], path, line_no)
            any_charge |= charge is not None
            q.append(0.0 if charge is None else charge)
        else:
            cols = (54, 60) if charges_from == "occupancy" else (60, 66)
            if len(line) < cols[1] or not line[cols[0]:cols[1]].strip():
                raise InputError(f"{path}:{line_no}: no {charges_from} column (columns {cols[0] + 1}-{cols[1]}) "
                                 f"to take the charge from")
            q.append(_float(line[cols[0]:cols[1]], path, line_no, "charge"))
            any_charge = True
        names.append(line[12:16].strip())
        res.append(line[17:20].strip())
    if not pos:
        raise InputError(f"{path}: no ATOM or HETATM records (empty PDB file?)")
    if not any_charge:
        raise InputError(f"{path}: no atom has a charge (columns 79-80 are blank): use a PQR file, or "
                         f"--charges-from occupancy|bfactor if the charges are kept there")
    return Molecule(np.array(pos), np.array(q), None, names, res, source=str(path))


def read_lammps_charges(path) -> Molecule:
    """Read a LAMMPS data file of atom style ``charge`` (through pycumd's data-file reader); the box
    becomes the map's periodic box.  Lengths are taken as Angstrom (LAMMPS ``real``/``metal`` units)."""
    from pycumd.inputs.lammps_data import read_lammps_data

    try:
        data = read_lammps_data(path, atom_style="charge")
    except ValueError as exc:
        raise InputError(str(exc)) from None
    charges = np.array([data["charges"][int(t)] for t in data["types"]])
    box = data["box"]
    lengths = np.asarray(box.lengths, dtype=np.float64)
    origin = np.asarray(getattr(box, "origin", np.zeros(3)), dtype=np.float64)
    positions = data["positions"] + data["images"] * lengths
    return Molecule(positions, charges, None, box=lengths, box_origin=origin, source=str(path))


def read_gsd(path, frame: int = -1) -> Molecule:
    """Read frame ``frame`` of a GSD (HOOMD) file: positions, ``particles/charge`` (required) and the
    box (periodic, centred on the origin as HOOMD keeps it)."""
    try:
        import gsd.hoomd
    except ImportError:
        raise InputError("reading GSD files needs the gsd package: pip install 'pycumd[io]'") from None
    with gsd.hoomd.open(str(path), mode="r") as trajectory:
        n_frames = len(trajectory)
        if n_frames == 0:
            raise InputError(f"{path}: no frames")
        if not -n_frames <= frame < n_frames:
            raise InputError(f"{path}: frame {frame} out of range ({n_frames} frames)")
        snapshot = trajectory[frame]
        charges = np.asarray(snapshot.particles.charge, dtype=np.float64)
        if snapshot.particles.N == 0:
            raise InputError(f"{path}: frame {frame} has no particles")
        if not np.any(charges != 0):
            raise InputError(f"{path}: frame {frame} has no particles/charge (all zero)")
        lengths = np.asarray(snapshot.configuration.box[:3], dtype=np.float64)
        if np.any(np.asarray(snapshot.configuration.box[3:]) != 0):
            raise InputError(f"{path}: frame {frame} has a triclinic box (not supported)")
        return Molecule(np.asarray(snapshot.particles.position, dtype=np.float64), charges, None,
                        box=lengths, box_origin=-0.5 * lengths, source=f"{path}[{frame}]")


def molecule_from_system(system, charges_per_type) -> Molecule:
    """A :class:`Molecule` from a pycumd :class:`~pycumd.system.System` (e.g. from :mod:`pycumd.ions`)
    and the charge of each type (``charges_per_type[t]``, e); periodic in the system's box.  Lengths
    are taken in the system's length unit as Angstrom (fm for nuclear units: scale as needed)."""
    q = np.asarray(charges_per_type, dtype=np.float64)[system.types]
    box = system.box
    return Molecule(system.positions + np.asarray(box.origin), q, None, box=np.asarray(box.lengths, float),
                    box_origin=np.asarray(box.origin, float), source="pycumd system")


READERS = {".pqr": read_pqr, ".pdb": read_pdb, ".ent": read_pdb, ".data": read_lammps_charges,
           ".lmp": read_lammps_charges, ".gsd": read_gsd}


def read_molecule(path, **options) -> Molecule:
    """Read any supported input by its suffix: .pqr, .pdb/.ent, .data/.lmp (LAMMPS data), .gsd."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise InputError(f"{path}: unknown input format {path.suffix!r} (use .pqr, .pdb, .data or .gsd)")
    if path.stat().st_size == 0:
        raise InputError(f"{path}: empty file")
    return reader(path, **options)


def _pdb_line(record, serial, name, residue, res_seq, xyz, charge, radius, pqr: bool) -> str:
    name = f" {name:<3s}" if len(name) < 4 else name[:4]
    head = f"{record:<6s}{serial % 100000:5d} {name:4s} {residue:>3s}  {res_seq % 10000:4d}    "
    coords = f"{xyz[0]:8.3f}{xyz[1]:8.3f}{xyz[2]:8.3f}"
    if pqr:
        return f"{head}{coords} {charge:7.4f} {radius:6.4f}"
    formal = f"{abs(int(round(charge)))}{'+' if charge > 0 else '-'}" if round(charge) != 0 else "  "
    element = name.strip()[:2]
    return f"{head}{coords}  1.00  0.00          {element:>2s}{formal}"


def write_pqr(path, positions, charges, radii, names, residues, pqr: bool = True) -> None:
    """Write atoms as PQR (``pqr=True``) or PDB (formal charges in columns 79-80)."""
    with open(path, "w") as f:
        for i, (xyz, q, r, name, res) in enumerate(zip(positions, charges, radii, names, residues), start=1):
            f.write(_pdb_line("HETATM", i, name, res, i, xyz, q, r, pqr) + "\n")
        f.write("END\n")


def write_pdb(path, positions, charges, names, residues) -> None:
    """Write atoms as PDB, formal charges in columns 79-80."""
    write_pqr(path, positions, charges, np.zeros(len(positions)), names, residues, pqr=False)
