"""The example inputs of ``pycumd potential-map --example NAME`` (and ``place-ions``), made here.

``nacl-cluster``: a rock-salt NaCl nanocrystal of 5 x 5 x 5 ions (63 Na+, 62 Cl-: net charge +1 e),
nearest-neighbour distance 2.82 A, turned by fixed angles so that no atom sits on a map's lattice
point, centred at the origin. Radii are those of ``place-ions`` (Na+ 1.87 A, Cl- 2.27 A). The file
shipped in ``pycumd/data`` is what :func:`write_examples` writes (a test checks it):

    python -m pycumd.potential_maps.examples src/pycumd/data
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

import numpy as np

#: example name -> file in pycumd/data
EXAMPLES = {"nacl-cluster": "nacl_cluster.pqr"}

NACL_DISTANCE = 2.82          #: Na-Cl nearest-neighbour distance of rock salt, Angstrom
ROTATION_DEGREES = (17.0, 29.0, 41.0)   #: turns about x, y and z, degrees


def nacl_cluster(ions_per_edge: int = 5):
    """Positions (N, 3) in Angstrom, charges (N,) in e, radii (N,), names and residues of a cubic
    rock-salt nanocrystal with ``ions_per_edge`` ions along each edge (Na+ at the corners)."""
    k = np.arange(ions_per_edge)
    sites = np.stack(np.meshgrid(k, k, k, indexing="ij"), axis=-1).reshape(-1, 3)
    sodium = sites.sum(axis=1) % 2 == 0
    positions = (sites - (ions_per_edge - 1) / 2) * NACL_DISTANCE
    ax, ay, az = np.radians(ROTATION_DEGREES)
    rx = np.array([[1, 0, 0], [0, np.cos(ax), -np.sin(ax)], [0, np.sin(ax), np.cos(ax)]])
    ry = np.array([[np.cos(ay), 0, np.sin(ay)], [0, 1, 0], [-np.sin(ay), 0, np.cos(ay)]])
    rz = np.array([[np.cos(az), -np.sin(az), 0], [np.sin(az), np.cos(az), 0], [0, 0, 1]])
    positions = positions @ (rz @ ry @ rx).T
    charges = np.where(sodium, 1.0, -1.0)
    radii = np.where(sodium, 1.87, 2.27)
    names = ["NA" if s else "CL" for s in sodium]
    return positions, charges, radii, names, list(names)


def example_path(name: str) -> Path:
    """The shipped file of example ``name`` (a key of :data:`EXAMPLES`)."""
    return Path(str(resources.files("pycumd.data").joinpath(EXAMPLES[name])))


def write_examples(folder) -> list:
    """Write every example file into ``folder``; returns the paths."""
    from pycumd.inputs.molecules import write_pqr

    path = Path(folder) / EXAMPLES["nacl-cluster"]
    write_pqr(path, *nacl_cluster())
    return [path]


if __name__ == "__main__":
    for written in write_examples(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(f"wrote {written}")
