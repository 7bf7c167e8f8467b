"""Bytes per atom and pair efficiency of neighbour structures for the LJ liquid (issue 20 study).

Properties of the data structure, not of a kernel, so computed here on the CPU from a melted in.lj
configuration (fcc 0.8442 melted at T 1.44 by pycumd's CPU path, r_cut 2.5, skin 0.3):

* full Verlet list (pycumd's GPU list): every neighbour within r_list of every atom, 4 B per entry,
  storage ``capacity`` slots per atom;
* half list: each pair once;
* 16-bit indices: the same entries at 2 B (if the index range allows; reported as the fraction of
  entries whose distance in the cell-sorted order fits in +-32767);
* cluster pairs (GROMACS/OpenMM style): atoms in z-columns of a cross-section holding ``M`` atoms
  per cluster height, sorted by z and cut into clusters of ``M``; a cluster pair is listed when the two clusters' bounding boxes lie
  within r_list; an entry is a 4 B cluster index plus an ``M x N`` bit interaction mask, and the
  force kernel evaluates all ``M x N`` pairs of a listed cluster pair (masked).  Reported: list
  bytes per atom, pairs evaluated per atom, and the fraction of them inside r_cut (useful work).

    python3 benchmarks/neighbor_structure_study.py --cells 20
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.spatial import cKDTree

from pycumd.potentials import LennardJones
from pycumd.simulation import Simulation
from pycumd.system import create_velocities, lattice_system

R_CUT, SKIN = 2.5, 0.3


def melted(cells: int, steps: int) -> tuple:
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, 87287)
    sim = Simulation(system, LennardJones(R_CUT).pair_coeff(0, 0, epsilon=1.0, sigma=1.0), skin=SKIN,
                     device="cpu", precision="double")
    sim.run(steps)
    s = sim.system()
    return np.mod(s.positions, s.box.L), np.asarray(s.box.L, dtype=np.float64)


def pair_counts(positions, L, radius) -> np.ndarray:
    """Neighbours within ``radius`` of each atom (minimum image), (N,) int."""
    tree = cKDTree(positions, boxsize=L)
    return np.array([len(x) - 1 for x in tree.query_ball_point(positions, radius)])


def clusters_of(positions, L, size: int):
    """Atoms grouped into clusters of at most ``size`` atoms as GROMACS does: columns along z of a
    square cross-section ``w x w`` with ``w = (size / density)^(1/3)``, each column's atoms sorted by
    z and cut into consecutive groups of ``size`` (only a column's last group is partial).
    Returns a list of index arrays."""
    n = len(positions)
    w = (size * L.prod() / n) ** (1 / 3)
    per_edge = np.maximum(1, np.floor(L[:2] / w)).astype(int)
    c = np.minimum((positions[:, :2] / L[:2] * per_edge).astype(int), per_edge - 1)
    column = c[:, 1] * per_edge[0] + c[:, 0]
    order = np.lexsort((positions[:, 2], column))
    bounds = np.flatnonzero(np.diff(column[order])) + 1
    groups = []
    for atoms in np.split(order, bounds):
        groups.extend(atoms[k:k + size] for k in range(0, len(atoms), size))
    return groups


def cluster_pair_study(positions, L, m: int, n: int) -> dict:
    """Cluster pairs of i-clusters of ``m`` and j-clusters of ``n`` atoms within r_list (bounding
    boxes), with the pairs they make evaluate and how many of those lie inside r_cut."""
    r_list = R_CUT + SKIN
    ic, jc = clusters_of(positions, L, m), clusters_of(positions, L, n)

    def boxes(groups):
        lo = np.array([positions[g].min(axis=0) for g in groups])
        hi = np.array([positions[g].max(axis=0) for g in groups])
        return lo, hi

    ilo, ihi = boxes(ic)
    jlo, jhi = boxes(jc)
    icen, jcen = 0.5 * (ilo + ihi), 0.5 * (jlo + jhi)
    ihalf, jhalf = 0.5 * (ihi - ilo), 0.5 * (jhi - jlo)
    reach = r_list + np.linalg.norm(ihalf, axis=1).max() + np.linalg.norm(jhalf, axis=1).max()
    tree = cKDTree(np.mod(jcen, L), boxsize=L)
    listed = evaluated = useful = 0
    for a, g in enumerate(ic):
        cand = np.array(tree.query_ball_point(np.mod(icen[a], L), reach), dtype=int)
        if len(cand) == 0:
            continue
        d = jcen[cand] - icen[a]
        d -= L * np.rint(d / L)
        gap = np.maximum(np.abs(d) - ihalf[a] - jhalf[cand], 0.0)
        keep = cand[(gap * gap).sum(axis=1) < r_list * r_list]
        listed += len(keep)
        for b in keep:
            h = jc[b]
            evaluated += m * n
            dd = positions[g][:, None, :] - positions[h][None, :, :]
            dd -= L * np.rint(dd / L)
            r2 = (dd * dd).sum(axis=2)
            same = g[:, None] == h[None, :]
            useful += int(((r2 < R_CUT * R_CUT) & ~same).sum())
    atoms = len(positions)
    mask_bytes = math.ceil(m * n / 8)
    return {"M": m, "N": n, "i_clusters": len(ic), "fill": atoms / (len(ic) * m),
            "cluster_pairs_per_i_cluster": listed / len(ic), "bytes_per_atom": listed * (4 + mask_bytes) / atoms,
            "pairs_evaluated_per_atom": evaluated / atoms, "useful_fraction": useful / evaluated}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, default=20, help="fcc cells per edge (N = 4 cells^3; 20: 32,000)")
    ap.add_argument("--melt-steps", type=int, default=300)
    args = ap.parse_args(argv)
    positions, L = melted(args.cells, args.melt_steps)
    n = len(positions)
    within_list = pair_counts(positions, L, R_CUT + SKIN)
    within_cut = pair_counts(positions, L, R_CUT)
    capacity = int(within_list.max())
    print(f"N = {n}, box {L[0]:.3f}, r_cut {R_CUT}, r_list {R_CUT + SKIN}")
    print(f"full list: {within_list.mean():.1f} entries per atom (largest {capacity}), "
          f"{4 * within_list.mean():.0f} B/atom of entries, {4 * capacity} B/atom of storage at that capacity; "
          f"{within_cut.mean() / within_list.mean():.3f} of entries inside r_cut")
    print(f"half list: {2 * within_list.mean():.0f} B/atom of entries (each pair once)")
    print(f"16-bit entries: {2 * within_list.mean():.0f} B/atom full, {within_list.mean():.0f} half "
          f"(needs indices within +-32767 of the atom in cell order)")
    print(f"{'M x N':>6} {'fill':>5} {'j-clusters per i':>16} {'list B/atom':>11} {'pairs/atom':>10} {'inside r_cut':>12}")
    for m, nn in ((4, 4), (8, 4), (8, 8), (4, 8)):
        r = cluster_pair_study(positions, L, m, nn)
        print(f"{m:>2} x {nn:<2} {r['fill']:>5.2f} {r['cluster_pairs_per_i_cluster']:>16.1f} "
              f"{r['bytes_per_atom']:>11.1f} {r['pairs_evaluated_per_atom']:>10.1f} {r['useful_fraction']:>12.3f}")
    print(f"full list for comparison: {within_list.mean():.1f} pairs/atom evaluated, "
          f"{within_cut.mean() / within_list.mean():.3f} inside r_cut")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
