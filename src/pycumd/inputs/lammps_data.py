"""Read LAMMPS data files (``read_data``) of atom style ``atomic`` or ``charge``, orthorhombic boxes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..box import Box

HEADER_KEYS = {"atoms": "n_atoms", "atom types": "n_types"}
SECTIONS = {"Masses", "Atoms", "Velocities", "Pair", "PairIJ"}
COLUMNS = {"atomic": ("id", "type", "x", "y", "z"), "charge": ("id", "type", "q", "x", "y", "z")}


class DataFileError(ValueError):
    """A data file that cannot be read; the message names the file and the line."""


def type_names_of_masses(path) -> dict:
    """``{type0: name}`` from the comments of a data file's Masses lines (``1 39.948 # Ar``), as
    LAMMPS' ``write_data``, ASE and moltemplate write them; the first word of each comment."""
    names, in_masses = {}, False
    for line in Path(path).read_text().splitlines():
        data, _, comment = line.partition("#")
        words = data.split()
        if not words:
            continue
        if words[0] in SECTIONS:
            in_masses = words[0] == "Masses"
        elif in_masses and len(words) >= 2 and comment.split() and words[0].isdigit():
            names[int(words[0]) - 1] = comment.split()[0]
    return names


def read_lammps_data(path, atom_style: str = "atomic") -> dict:
    """Parse a LAMMPS data file.

    Returns a dict with ``box`` (Box), ``n_types``, ``masses`` {type0: mass}, ``ids`` (N,),
    ``types`` (N,) 0-based, ``positions`` (N, 3), ``images`` (N, 3), ``velocities`` (N, 3) (zero
    without a Velocities section), ``charges`` {type0: q} (atom style charge; every atom of a
    type must carry the same charge, as pycumd's Coulomb potentials take charges per type) and
    ``pair_coeffs``: ``(type0_i, type0_j, words, line)`` of the ``Pair Coeffs`` (i = j) and
    ``PairIJ Coeffs`` sections, in file order.

    Atoms given outside the periodic box are put back into it with their image flags counted, as
    LAMMPS' ``read_data`` does (``Domain::remap``): positions in ``[lo, hi)``.
    """
    path = Path(path)
    if atom_style not in COLUMNS:
        raise DataFileError(f"{path}: atom style {atom_style} is not supported (atomic or charge)")
    lines = [line.split("#")[0].strip() for line in path.read_text().splitlines()]
    header, bounds, k = {}, {}, 1
    while k < len(lines) and (not lines[k] or lines[k].split()[0] not in SECTIONS):
        line = lines[k]
        for key, name in HEADER_KEYS.items():
            if line.endswith(key):
                header[name] = int(line.split()[0])
        for d in "xyz":
            if line.endswith(f"{d}lo {d}hi"):
                bounds[d] = tuple(float(v) for v in line.split()[:2])
        if line.endswith("xy xz yz"):
            raise DataFileError(f"{path}:{k + 1}: triclinic boxes are not supported")
        k += 1
    for name in ("n_atoms", "n_types"):
        if name not in header:
            raise DataFileError(f"{path}: header has no '{name.replace('n_', '').replace('types', 'atom types')}' line")
    if set(bounds) != set("xyz"):
        raise DataFileError(f"{path}: header needs xlo xhi, ylo yhi and zlo zhi")
    lo = np.array([bounds[d][0] for d in "xyz"])
    hi = np.array([bounds[d][1] for d in "xyz"])
    sections = {}
    while k < len(lines):
        title = lines[k]
        if not title:
            k += 1
            continue
        name = title.split()[0]
        if name not in SECTIONS or (name in ("Pair", "PairIJ") and title.split()[1:2] != ["Coeffs"]):
            raise DataFileError(f"{path}:{k + 1}: section '{title}' is not supported")
        k += 1
        while k < len(lines) and not lines[k]:
            k += 1
        rows = []
        while k < len(lines) and lines[k]:
            rows.append((k + 1, lines[k].split()))
            k += 1
        sections[name] = rows
    n, n_types = header["n_atoms"], header["n_types"]
    masses = {}
    for line_no, words in sections.get("Masses", []):
        masses[int(words[0]) - 1] = float(words[1])
    atoms = sections.get("Atoms")
    if atoms is None or len(atoms) != n:
        raise DataFileError(f"{path}: expected an Atoms section with {n} lines, found {len(atoms or [])}")
    cols = COLUMNS[atom_style]
    ids = np.empty(n, np.int64)
    types = np.empty(n, np.int32)
    q = np.zeros(n)
    pos = np.empty((n, 3))
    img = np.zeros((n, 3), np.int32)
    for a, (line_no, words) in enumerate(atoms):
        if len(words) not in (len(cols), len(cols) + 3):
            raise DataFileError(f"{path}:{line_no}: atom style {atom_style} expects {len(cols)} (+3 image) "
                                f"columns: {' '.join(cols)}")
        values = dict(zip(cols, words))
        ids[a], types[a] = int(values["id"]), int(values["type"]) - 1
        pos[a] = [float(values[c]) for c in "xyz"]
        q[a] = float(values.get("q", 0.0))
        if len(words) == len(cols) + 3:
            img[a] = [int(w) for w in words[-3:]]
        if not 0 <= types[a] < n_types:
            raise DataFileError(f"{path}:{line_no}: atom type {types[a] + 1} out of range 1..{n_types}")
    pos, img = _remap_into_box(pos, img, lo, hi)
    pair_coeffs = []
    for name, n_indices in (("Pair", 1), ("PairIJ", 2)):
        for line_no, words in sections.get(name, []):
            try:
                i, j = int(words[0]) - 1, int(words[n_indices - 1]) - 1
            except (ValueError, IndexError):
                raise DataFileError(f"{path}:{line_no}: {name} Coeffs line needs {n_indices} atom type(s) "
                                    f"and the coefficients") from None
            if not (0 <= i < n_types and 0 <= j < n_types):
                raise DataFileError(f"{path}:{line_no}: {name} Coeffs: atom type out of range 1..{n_types}")
            pair_coeffs.append((min(i, j), max(i, j), words[n_indices:], line_no))
    vel = np.zeros((n, 3))
    if "Velocities" in sections:
        index = {int(i): k for k, i in enumerate(ids)}
        for line_no, words in sections["Velocities"]:
            vel[index[int(words[0])]] = [float(w) for w in words[1:4]]
    charges = {}
    if atom_style == "charge":
        for t in range(n_types):
            qt = np.unique(q[types == t])
            if len(qt) > 1:
                raise DataFileError(f"{path}: atoms of type {t + 1} carry different charges {qt[:4].tolist()}; "
                                    "pycumd takes charges per type")
            if len(qt):
                charges[t] = float(qt[0])
    return {"box": Box(hi - lo, lo), "n_types": n_types, "masses": masses, "ids": ids, "types": types,
            "positions": pos, "images": img, "velocities": vel, "charges": charges, "pair_coeffs": pair_coeffs}


def _remap_into_box(positions, images, lo, hi):
    """LAMMPS ``Domain::remap`` of each coordinate: add or subtract the box length until it lies in
    ``[lo, hi)``, counting the image flag down or up (one subtraction of k lengths here, the same for
    an atom within one box length)."""
    L = hi - lo
    shift = np.floor((positions - lo) / L)
    x = positions - shift * L
    above, below = x >= hi, x < lo                    # rounding at the edges
    x = np.where(above, x - L, np.where(below, x + L, x))
    shift = shift + above - below
    return np.maximum(x, lo), images + shift.astype(images.dtype)
