"""Write LAMMPS data files (``write_data``): what :func:`pycumd.inputs.lammps_data.read_lammps_data` reads."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np


def write_lammps_data(path, system, atom_style: str = "atomic", charges: dict | None = None,
                      title: str = "written by pycumd", pair_coeffs: tuple | None = None,
                      bonded_coeffs: bool = True) -> None:
    """Write ``system`` (positions, images, velocities, types, masses, box; atoms in id order) as a
    LAMMPS data file of ``atom_style`` atomic or charge (the system's per-atom ``charges`` where it has
    them, else ``charges`` per type, else 0). ``pair_coeffs``:
    ``(section, rows)``, a ``Pair Coeffs # STYLE`` or ``PairIJ Coeffs # STYLE`` section and its lines
    (``"I COEFFS"`` or ``"I J COEFFS"``), written after Masses; None writes none. Values are written
    with 17 significant digits, so reading the file back gives the same float64 numbers. The file is
    written to ``PATH.tmp`` and renamed, so it is whole or absent.

    Molecular atom styles (bond, angle, molecular, full) add the molecule column and, from
    ``system.topology``, the header counts and types of the terms, their Bonds, Angles, Dihedrals and
    Impropers sections and (``bonded_coeffs``) the Coeffs sections of the styles that have coefficients."""
    molecular = ("bond", "angle", "molecular", "full")
    if atom_style not in ("atomic", "charge", *molecular):
        raise ValueError(f"write_data: atom style {atom_style} is not supported (atomic, charge, bond, angle, "
                         f"molecular or full)")
    topology = system.topology if atom_style in molecular else None
    sections = (("bond", "Bonds"), ("angle", "Angles"), ("dihedral", "Dihedrals"), ("improper", "Impropers"))
    path = Path(path)
    box = system.box
    lo = np.asarray(box.origin)
    hi = lo + box.L
    out = io.StringIO()
    out.write(f"LAMMPS data file: {title}\n\n{system.n_atoms} atoms\n")
    if topology is not None:
        out.write("".join(f"{topology.count(kind)} {title_.lower()}\n" for kind, title_ in sections))
    out.write(f"{system.n_types} atom types\n")
    if topology is not None:
        out.write("".join(f"{topology.n_types[kind]} {kind} types\n" for kind, _ in sections))
    out.write("\n")
    for d, name in enumerate("xyz"):
        out.write(f"{float(lo[d])!r} {float(hi[d])!r} {name}lo {name}hi\n")
    out.write("\nMasses\n\n")
    for t, m in enumerate(system.masses):
        out.write(f"{t + 1} {float(m)!r}\n")
    if pair_coeffs is not None:
        section, rows = pair_coeffs
        out.write(f"\n{section}\n\n" + "".join(f"{row}\n" for row in rows))
    if topology is not None and bonded_coeffs:
        for kind, _ in sections:
            style = topology.styles.get(kind)
            if style is None or not topology.n_types[kind] or not style.coefficients:
                continue
            rows = [" ".join([str(t + 1), *style.lammps_words(t)]) for t in sorted(style.coefficients)]
            out.write(f"\n{kind.capitalize()} Coeffs # {style.lammps_style}\n\n" + "".join(f"{r}\n" for r in rows))
    molecules = system.molecules
    order = np.argsort(system.ids, kind="stable")
    ids, types = system.ids[order], system.types[order]
    positions = system.positions[order] + lo
    images, velocities = system.images[order], system.velocities[order]
    out.write(f"\nAtoms # {atom_style}\n\n")
    atom_q = None if system.charges is None else system.charges[order]
    for k in range(system.n_atoms):
        q = ""
        if atom_style in ("charge", "full"):
            q = f" {float(atom_q[k] if atom_q is not None else (charges or {}).get(int(types[k]), 0.0))!r}"
        if atom_style in molecular:
            q = f" {int(molecules[order[k]])} {types[k] + 1}{q}"
        x, y, z = (float(v) for v in positions[k])
        ix, iy, iz = (int(v) for v in images[k])
        typed = q if atom_style in molecular else f" {types[k] + 1}{q}"
        out.write(f"{ids[k]}{typed} {x!r} {y!r} {z!r} {ix} {iy} {iz}\n")
    out.write("\nVelocities\n\n")
    for k in range(system.n_atoms):
        vx, vy, vz = (float(v) for v in velocities[k])
        out.write(f"{ids[k]} {vx!r} {vy!r} {vz!r}\n")
    if topology is not None:
        for kind, title_ in sections:
            atoms, kinds = topology.terms[kind], topology.types[kind]
            if not len(atoms):
                continue
            out.write(f"\n{title_}\n\n")
            for t_ in range(len(atoms)):
                out.write(f"{t_ + 1} {kinds[t_] + 1} {' '.join(str(int(a)) for a in atoms[t_])}\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(out.getvalue())
    os.replace(tmp, path)
