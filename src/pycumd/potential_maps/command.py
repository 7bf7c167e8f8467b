"""``pycumd potential-map INPUT -o map.dx``: the electrostatic potential of a molecule on a lattice."""

from __future__ import annotations

import time


def add_map_arguments(parser, default_method: str = "direct") -> None:
    """The options shared by ``potential-map`` and ``place-ions``."""
    from pycumd.potential_maps import METHODS, UNITS

    from pycumd.potential_maps.examples import EXAMPLES

    parser.add_argument("input", nargs="?", help="a .pqr, .pdb (charges in columns 79-80), LAMMPS .data (atom "
                                                 "style charge) or .gsd file")
    parser.add_argument("--example", choices=sorted(EXAMPLES),
                        help="a built-in input instead of a file: nacl-cluster (125 ions of a rock-salt "
                             "nanocrystal, net charge +1 e)")
    parser.add_argument("-o", "--output", required=True, help="output: .dx or .npy (potential-map); "
                                                              ".pqr or .pdb (place-ions)")
    parser.add_argument("--spacing", type=float, default=0.5, help="lattice spacing, Angstrom (0.5)")
    parser.add_argument("--padding", type=float, default=10.0, help="margin around the atoms, Angstrom (10)")
    parser.add_argument("--method", choices=METHODS, default=default_method,
                        help=f"direct (all pairs), cutoff (shifted to zero at --cutoff), msm (multilevel; "
                             f"periodic for inputs with a box) (default {default_method})")
    parser.add_argument("--cutoff", type=float, default=12.0, help="cutoff / MSM short-range cutoff, Angstrom (12)")
    parser.add_argument("--msm-spacing", type=float, default=1.0, help="finest MSM grid spacing, Angstrom (1.0)")
    parser.add_argument("--units", choices=list(UNITS), default="kT/e", help="output units: kT/e at 300 K, V, e/A")
    parser.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--precision", default="single", choices=["single", "double"],
                        help="single: float32 with compensated sums (default); double: float64")
    parser.add_argument("--non-periodic", action="store_true", help="ignore the input's box")
    parser.add_argument("--charges-from", default="formal", choices=["formal", "occupancy", "bfactor"],
                        help="PDB inputs: where the charges are (default: formal charges, columns 79-80)")
    parser.add_argument("--frame", type=int, default=-1, help="GSD inputs: frame index (default: last)")


def add_arguments(parser) -> None:
    add_map_arguments(parser)


def compute_map(args):
    """Read the input and compute its map from parsed arguments; returns ``(molecule, PotentialMap)``."""
    from pathlib import Path

    from pycumd.inputs.molecules import read_molecule
    from pycumd.potential_maps import potential_map
    from pycumd.potential_maps.examples import example_path
    from pycumd.system import InputError

    if (args.input is None) == (args.example is None):
        raise InputError("give an input file or --example NAME (one of them)")
    if args.example is not None:
        args.input = str(example_path(args.example))
    suffix = Path(args.input).suffix.lower()
    options = {"charges_from": args.charges_from} if suffix in (".pdb", ".ent") else {}
    if suffix == ".gsd":
        options = {"frame": args.frame}
    molecule = read_molecule(args.input, **options)
    periodic = False if args.non_periodic else None
    t0 = time.perf_counter()
    pmap = potential_map(molecule, spacing=args.spacing, padding=args.padding, method=args.method,
                         cutoff=args.cutoff, msm_spacing=args.msm_spacing, device=args.device,
                         precision=args.precision, units=args.units, periodic=periodic)
    seconds = time.perf_counter() - t0
    nx, ny, nz = pmap.lattice.shape
    print(f"pycumd: {molecule.n_atoms} atoms (net charge {molecule.charges.sum():+.4f} e) from {molecule.source}; "
          f"{args.method} map of {nx} x {ny} x {nz} points at {pmap.spacing[0]:.4g} A"
          f"{' (periodic)' if pmap.periodic else ''} in {seconds:.3f} s; "
          f"range {pmap.values.min():.4g} .. {pmap.values.max():.4g} {pmap.units}", flush=True)
    return molecule, pmap


def main(args) -> int:
    from pycumd.outputs.settings import check_writable
    from pycumd.system import InputError

    if not args.output.endswith((".dx", ".npy")):
        raise InputError(f"{args.output}: potential-map writes .dx or .npy")
    check_writable(args.output, "-o")
    _, pmap = compute_map(args)
    pmap.write(args.output)
    print(f"pycumd: wrote {args.output}")
    return 0
