"""Write LAMMPS data files (``write_data``): what :func:`pycumd.inputs.lammps_data.read_lammps_data` reads."""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np


def write_lammps_data(path, system, atom_style: str = "atomic", charges: dict | None = None,
                      title: str = "written by pycumd", pair_coeffs: tuple | None = None) -> None:
    """Write ``system`` (positions, images, velocities, types, masses, box; atoms in id order) as a
    LAMMPS data file of ``atom_style`` atomic or charge (``charges``: per type). ``pair_coeffs``:
    ``(section, rows)``, a ``Pair Coeffs # STYLE`` or ``PairIJ Coeffs # STYLE`` section and its lines
    (``"I COEFFS"`` or ``"I J COEFFS"``), written after Masses; None writes none. Values are written
    with 17 significant digits, so reading the file back gives the same float64 numbers. The file is
    written to ``PATH.tmp`` and renamed, so it is whole or absent."""
    if atom_style not in ("atomic", "charge"):
        raise ValueError(f"write_data: atom style {atom_style} is not supported (atomic or charge)")
    path = Path(path)
    box = system.box
    lo = np.asarray(box.origin)
    hi = lo + box.L
    out = io.StringIO()
    out.write(f"LAMMPS data file: {title}\n\n{system.n_atoms} atoms\n{system.n_types} atom types\n\n")
    for d, name in enumerate("xyz"):
        out.write(f"{float(lo[d])!r} {float(hi[d])!r} {name}lo {name}hi\n")
    out.write("\nMasses\n\n")
    for t, m in enumerate(system.masses):
        out.write(f"{t + 1} {float(m)!r}\n")
    if pair_coeffs is not None:
        section, rows = pair_coeffs
        out.write(f"\n{section}\n\n" + "".join(f"{row}\n" for row in rows))
    order = np.argsort(system.ids, kind="stable")
    ids, types = system.ids[order], system.types[order]
    positions = system.positions[order] + lo
    images, velocities = system.images[order], system.velocities[order]
    out.write(f"\nAtoms # {atom_style}\n\n")
    for k in range(system.n_atoms):
        q = f" {float((charges or {}).get(int(types[k]), 0.0))!r}" if atom_style == "charge" else ""
        x, y, z = (float(v) for v in positions[k])
        ix, iy, iz = (int(v) for v in images[k])
        out.write(f"{ids[k]} {types[k] + 1}{q} {x!r} {y!r} {z!r} {ix} {iy} {iz}\n")
    out.write("\nVelocities\n\n")
    for k in range(system.n_atoms):
        vx, vy, vz = (float(v) for v in velocities[k])
        out.write(f"{ids[k]} {vx!r} {vy!r} {vz!r}\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(out.getvalue())
    os.replace(tmp, path)
