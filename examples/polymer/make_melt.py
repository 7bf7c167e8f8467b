"""Write a bead-spring polymer melt as a LAMMPS data file (atom style bond): chains laid along a
serpentine path through a cubic lattice (consecutive sites one lattice spacing apart, no overlaps),
cut into chains of equal length.  Kremer-Grest density 0.85 by default.

    python make_melt.py [--cells 16] [--length 32] [--density 0.85] [--out melt.data]

The melt is then equilibrated by in.polymer (FENE bonds, WCA pairs, Langevin).
"""

import argparse

import numpy as np


def serpentine(n: int) -> np.ndarray:
    """The n^3 sites of a cubic lattice in an order where consecutive sites are neighbours: (n^3, 3) ints."""
    sites = []
    for z in range(n):
        ys = range(n) if z % 2 == 0 else range(n - 1, -1, -1)
        for j, y in enumerate(ys):
            forward = (z * n + j) % 2 == 0
            xs = range(n) if forward else range(n - 1, -1, -1)
            sites.extend((x, y, z) for x in xs)
    return np.array(sites)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=16, help="lattice sites per edge (atoms = cells^3)")
    parser.add_argument("--length", type=int, default=32, help="beads per chain (must divide cells^3)")
    parser.add_argument("--density", type=float, default=0.85, help="beads per sigma^3")
    parser.add_argument("--out", default="melt.data")
    args = parser.parse_args(argv)
    n_atoms = args.cells ** 3
    if n_atoms % args.length:
        raise SystemExit(f"--length {args.length} does not divide {n_atoms} atoms")
    spacing = args.density ** (-1.0 / 3.0)
    positions = (serpentine(args.cells) + 0.5) * spacing
    box = args.cells * spacing
    ids = np.arange(1, n_atoms + 1)
    molecule = (ids - 1) // args.length + 1
    bonds = [(i, i + 1) for i in ids[:-1] if molecule[i - 1] == molecule[i]]
    lines = [f"bead-spring melt: {n_atoms // args.length} chains of {args.length} (make_melt.py)", "",
             f"{n_atoms} atoms", f"{len(bonds)} bonds", "1 atom types", "1 bond types", "",
             f"0 {box!r} xlo xhi", f"0 {box!r} ylo yhi", f"0 {box!r} zlo zhi", "", "Masses", "", "1 1.0", "",
             "Atoms # bond", ""]
    lines += [f"{i} {m} 1 {x!r} {y!r} {z!r}" for i, m, (x, y, z) in zip(ids, molecule, positions.tolist())]
    lines += ["", "Bonds", ""] + [f"{k + 1} 1 {a} {b}" for k, (a, b) in enumerate(bonds)]
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}: {n_atoms} atoms, {len(bonds)} bonds, box {box:.4f}")


if __name__ == "__main__":
    main()
