"""Read LAMMPS data files (``read_data``) of atom style ``atomic``, ``charge``, ``bond``, ``angle``,
``molecular`` or ``full``, orthorhombic boxes; with a molecular style, the Bonds, Angles, Dihedrals and
Impropers sections and their Coeffs sections."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..box import Box

HEADER_KEYS = {"atoms": "n_atoms", "atom types": "n_types", "bonds": "n_bond", "angles": "n_angle",
               "dihedrals": "n_dihedral", "impropers": "n_improper", "bond types": "n_bond_types",
               "angle types": "n_angle_types", "dihedral types": "n_dihedral_types",
               "improper types": "n_improper_types"}
#: the topology sections: section title -> (kind, atoms per term)
TERM_SECTIONS = {"Bonds": ("bond", 2), "Angles": ("angle", 3), "Dihedrals": ("dihedral", 4),
                 "Impropers": ("improper", 4)}
#: the first word of the ``... Coeffs`` sections
COEFF_SECTIONS = {"Pair", "PairIJ", "Bond", "Angle", "Dihedral", "Improper"}
SECTIONS = {"Masses", "Atoms", "Velocities", *TERM_SECTIONS, *COEFF_SECTIONS}
MOLECULAR = ("id", "mol", "type", "x", "y", "z")
COLUMNS = {"atomic": ("id", "type", "x", "y", "z"), "charge": ("id", "type", "q", "x", "y", "z"),
           "bond": MOLECULAR, "angle": MOLECULAR, "molecular": MOLECULAR,
           "full": ("id", "mol", "type", "q", "x", "y", "z")}
#: the kinds of terms each molecular atom style holds (LAMMPS' atom styles)
STYLE_KINDS = {"bond": ("bond",), "angle": ("bond", "angle"), "molecular": ("bond", "angle", "dihedral", "improper"),
               "full": ("bond", "angle", "dihedral", "improper")}


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


def read_lammps_data(path, atom_style: str = "atomic", per_type_charges: bool = True) -> dict:
    """Parse a LAMMPS data file.

    Returns a dict with ``box`` (Box), ``n_types``, ``masses`` {type0: mass}, ``ids`` (N,),
    ``types`` (N,) 0-based, ``positions`` (N, 3), ``images`` (N, 3), ``velocities`` (N, 3) (zero
    without a Velocities section), ``charges`` {type0: q} (atom style charge; every atom of a
    type must carry the same charge, as pycumd's Coulomb potentials take charges per type) and
    ``pair_coeffs``: ``(type0_i, type0_j, words, line)`` of the ``Pair Coeffs`` (i = j) and
    ``PairIJ Coeffs`` sections, in file order.  Molecular atom styles (bond, angle, molecular, full)
    add ``molecules`` (N,) int64, ``terms`` {kind: (n, k) atom IDs}, ``term_types`` {kind: (n,) 0-based},
    ``n_term_types`` {kind: count} and ``term_coeffs`` {kind: [(type0, words, line)]} (the Coeffs
    sections).  ``per_type_charges=False`` skips the per-type charge check (``charges`` then holds the
    types whose atoms all carry one charge) and, for atom styles charge and full, adds ``atom_charges``
    (N,) float64 in the Atoms section's order.

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
        if name not in SECTIONS or (name in COEFF_SECTIONS and title.split()[1:2] != ["Coeffs"]):
            raise DataFileError(f"{path}:{k + 1}: section '{title}' is not supported")
        k += 1
        while k < len(lines) and not lines[k]:
            k += 1
        rows = []
        while k < len(lines) and lines[k]:
            rows.append((k + 1, lines[k].split()))
            k += 1
        if name in sections:
            raise DataFileError(f"{path}:{k + 1}: section '{title}' appears twice")
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
    molecules = np.zeros(n, np.int64)
    pos = np.empty((n, 3))
    img = np.zeros((n, 3), np.int32)
    for a, (line_no, words) in enumerate(atoms):
        if len(words) not in (len(cols), len(cols) + 3):
            raise DataFileError(f"{path}:{line_no}: atom style {atom_style} expects {len(cols)} (+3 image) "
                                f"columns: {' '.join(cols)}")
        values = dict(zip(cols, words))
        ids[a], types[a] = int(values["id"]), int(values["type"]) - 1
        if "mol" in values:
            molecules[a] = int(values["mol"])
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
    if atom_style in ("charge", "full"):
        for t in range(n_types):
            qt = np.unique(q[types == t])
            if len(qt) > 1 and not per_type_charges:
                continue
            if len(qt) > 1:
                raise DataFileError(f"{path}: atoms of type {t + 1} carry different charges {qt[:4].tolist()}; "
                                    "pycumd takes charges per type")
            if len(qt):
                charges[t] = float(qt[0])
    out = {"box": Box(hi - lo, lo), "n_types": n_types, "masses": masses, "ids": ids, "types": types,
           "positions": pos, "images": img, "velocities": vel, "charges": charges, "pair_coeffs": pair_coeffs}
    if not per_type_charges and atom_style in ("charge", "full"):
        out["atom_charges"] = q
    if atom_style in STYLE_KINDS:
        out.update(_topology_sections(path, header, sections, atom_style, molecules))
    else:
        for title in (*TERM_SECTIONS, *(c for c in COEFF_SECTIONS if c not in ("Pair", "PairIJ"))):
            if title in sections:
                raise DataFileError(f"{path}: section {title}{' Coeffs' if title in COEFF_SECTIONS else ''} needs a "
                                    f"molecular atom style (bond, angle, molecular or full), not {atom_style}")
    return out


def _topology_sections(path, header, sections, atom_style, molecules) -> dict:
    """The molecule IDs, terms, their types and Coeffs sections of a molecular data file."""
    terms, types, n_types, coeffs = {}, {}, {}, {}
    allowed = STYLE_KINDS[atom_style]
    for title, (kind, k) in TERM_SECTIONS.items():
        count = header.get(f"n_{kind}", 0)
        n_types[kind] = header.get(f"n_{kind}_types", 0)
        rows = sections.get(title, [])
        if (count or rows) and kind not in allowed:
            raise DataFileError(f"{path}: atom style {atom_style} has no {kind}s (the header declares {count}); "
                                f"use atom style {'angle' if kind == 'angle' else 'molecular or full'}")
        if len(rows) != count:
            raise DataFileError(f"{path}: the header declares {count} {title.lower()} but the {title} section has "
                                f"{len(rows)} lines")
        atoms = np.empty((count, k), np.int64)
        kinds = np.empty(count, np.int32)
        for t, (line_no, words) in enumerate(rows):
            if len(words) != k + 2:
                raise DataFileError(f"{path}:{line_no}: a {title} line needs an index, a type and {k} atom IDs")
            try:
                kinds[t] = int(words[1]) - 1
                atoms[t] = [int(w) for w in words[2:]]
            except ValueError:
                raise DataFileError(f"{path}:{line_no}: {title}: the type and atom IDs must be integers") from None
            if not 0 <= kinds[t] < n_types[kind]:
                raise DataFileError(f"{path}:{line_no}: {kind} type {kinds[t] + 1} out of range 1..{n_types[kind]}")
        terms[kind], types[kind] = atoms, kinds
        coeffs[kind] = []
        for line_no, words in sections.get(kind.capitalize(), []):
            t = int(words[0]) - 1
            if not 0 <= t < n_types[kind]:
                raise DataFileError(f"{path}:{line_no}: {kind.capitalize()} Coeffs: type {t + 1} out of range "
                                    f"1..{n_types[kind]}")
            coeffs[kind].append((t, words[1:], line_no))
    return {"molecules": molecules, "terms": terms, "term_types": types, "n_term_types": n_types,
            "term_coeffs": coeffs}


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
