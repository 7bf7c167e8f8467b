"""``pycumd place-ions``: ions at the lowest-energy lattice points, one at a time (as VMD's cionize).

1. the potential map of the solute (any method);
2. points closer than ``min_distance`` to a solute atom are excluded;
3. for the next ion of charge ``z``: the allowed point of lowest ``z V`` takes it; its own potential
   ``z / r`` is added to the map (exactly, at every point) and points within ``ion_distance`` of it are
   excluded; repeat.  Cations and anions alternate, starting with the counter-ion of the solute's
   net charge, until both counts are placed.

Output: the ions (optionally after the solute) as PQR or PDB.
"""

from __future__ import annotations

import numba
import numpy as np

from pycumd.system import InputError


#: name, residue, charge, radius (Angstrom) per ion kind
IONS = {"sodium": ("NA", "NA", 1.0, 1.87), "potassium": ("K", "K", 1.0, 2.14),
        "chloride": ("CL", "CL", -1.0, 2.27), "magnesium": ("MG", "MG", 2.0, 1.18)}


@numba.njit(parallel=True, cache=True)
def _add_point_charge(values, origin, h, position, strength, exclude_radius, allowed):
    # values[k, j, i] += strength / r; points within exclude_radius become disallowed
    nz, ny, nx = values.shape
    r_ex2 = exclude_radius * exclude_radius
    for k in numba.prange(nz):
        dz = origin[2] + k * h[2] - position[2]
        for j in range(ny):
            dy = origin[1] + j * h[1] - position[1]
            for i in range(nx):
                dx = origin[0] + i * h[0] - position[0]
                r2 = dx * dx + dy * dy + dz * dz
                if r2 < r_ex2:
                    allowed[k, j, i] = False
                if r2 > 0:
                    values[k, j, i] += strength / np.sqrt(r2)


@numba.njit(cache=True)
def _exclude_near(allowed, origin, h, positions, radius):
    nz, ny, nx = allowed.shape
    r2max = radius * radius
    for a in range(positions.shape[0]):
        lo = np.empty(3, np.int64)
        hi = np.empty(3, np.int64)
        n = (nx, ny, nz)
        for d in range(3):
            lo[d] = max(0, int(np.floor((positions[a, d] - radius - origin[d]) / h[d])))
            hi[d] = min(n[d] - 1, int(np.ceil((positions[a, d] + radius - origin[d]) / h[d])))
        for k in range(lo[2], hi[2] + 1):
            dz = origin[2] + k * h[2] - positions[a, 2]
            for j in range(lo[1], hi[1] + 1):
                dy = origin[1] + j * h[1] - positions[a, 1]
                for i in range(lo[0], hi[0] + 1):
                    dx = origin[0] + i * h[0] - positions[a, 0]
                    if dx * dx + dy * dy + dz * dz < r2max:
                        allowed[k, j, i] = False


def place_ions(pmap, solute_positions, solute_charge: float, n_cations: int, n_anions: int, *,
               cation: str = "sodium", anion: str = "chloride", min_distance: float = 5.0,
               ion_distance: float = 5.0):
    """Place ions on a potential map (which is updated in place).

    Parameters
    ----------
    pmap : PotentialMap
        The solute's map (any units; the update uses the same units).
    solute_positions : array, shape (N, 3)
        Solute atoms, Angstrom (for the exclusion zone).
    solute_charge : float
        Net solute charge (decides which ion goes first).
    n_cations, n_anions : int
    cation, anion : str
        Keys of :data:`IONS`.
    min_distance, ion_distance : float
        Closest approach of an ion to a solute atom and to another ion, Angstrom.

    Returns
    -------
    list of (kind, position (3,), energy in units of the map times e)
    """
    from pycumd.potential_maps.lattice import unit_factor

    for kind in (cation, anion):
        if kind not in IONS:
            raise InputError(f"unknown ion {kind!r}: choose one of {', '.join(IONS)}")
    if n_cations < 0 or n_anions < 0:
        raise InputError("ion counts must be >= 0")
    values = np.ascontiguousarray(pmap.values_zyx, dtype=np.float64)
    origin = np.asarray(pmap.lattice.origin)
    h = np.asarray(pmap.lattice.spacing)
    allowed = np.ones(values.shape, dtype=np.bool_)
    _exclude_near(allowed, origin, h, np.asarray(solute_positions, dtype=np.float64), float(min_distance))
    factor = unit_factor(pmap.units)
    order = []
    remaining = {cation: n_cations, anion: n_anions}
    turn = cation if solute_charge <= 0 else anion
    while remaining[cation] + remaining[anion] > 0:
        if remaining[turn] == 0:
            turn = anion if turn == cation else cation
        order.append(turn)
        remaining[turn] -= 1
        turn = anion if turn == cation else cation
    placed = []
    for kind in order:
        z = IONS[kind][2]
        energy = np.where(allowed, z * values, np.inf)
        flat = int(np.argmin(energy))
        if not np.isfinite(energy.flat[flat]):
            raise InputError(f"no lattice point left for ion {len(placed) + 1} ({kind}): enlarge the map "
                             f"(--padding) or reduce --min-distance/--ion-distance")
        k, j, i = np.unravel_index(flat, values.shape)
        position = origin + np.array([i, j, k]) * h
        placed.append((kind, position, float(energy.flat[flat])))
        _add_point_charge(values, origin, h, position, z * factor, float(ion_distance), allowed)
    pmap.values_zyx[...] = values
    return placed


def add_arguments(parser) -> None:
    from pycumd.potential_maps.command import add_map_arguments

    add_map_arguments(parser, default_method="msm")
    parser.add_argument("--cations", type=int, default=0, help="number of cations to place")
    parser.add_argument("--anions", type=int, default=0, help="number of anions to place")
    parser.add_argument("--cation", default="sodium", choices=[k for k, v in IONS.items() if v[2] > 0])
    parser.add_argument("--anion", default="chloride", choices=[k for k, v in IONS.items() if v[2] < 0])
    parser.add_argument("--min-distance", type=float, default=5.0, help="closest ion-solute distance, A (5)")
    parser.add_argument("--ion-distance", type=float, default=5.0, help="closest ion-ion distance, A (5)")
    parser.add_argument("--include-solute", action="store_true", help="write the solute atoms before the ions")


def main(args) -> int:
    from pathlib import Path

    from pycumd.inputs.molecules import write_pqr
    from pycumd.outputs.settings import check_writable
    from pycumd.potential_maps.command import compute_map

    if not args.output.endswith((".pqr", ".pdb")):
        raise InputError(f"{args.output}: place-ions writes .pqr or .pdb")
    check_writable(args.output, "-o")
    molecule, pmap = compute_map(args)
    placed = place_ions(pmap, molecule.positions, float(molecule.charges.sum()), args.cations, args.anions,
                        cation=args.cation, anion=args.anion, min_distance=args.min_distance,
                        ion_distance=args.ion_distance)
    positions = [p for _, p, _ in placed]
    charges = [IONS[k][2] for k, _, _ in placed]
    radii = [IONS[k][3] for k, _, _ in placed]
    names = [IONS[k][0] for k, _, _ in placed]
    residues = [IONS[k][1] for k, _, _ in placed]
    if args.include_solute:
        positions = list(molecule.positions) + positions
        charges = list(molecule.charges) + charges
        radii = list(molecule.radii) + radii
        names = molecule.names + names
        residues = molecule.residues + residues
    write_pqr(args.output, positions, charges, radii, names, residues, pqr=Path(args.output).suffix == ".pqr")
    for n, (kind, position, energy) in enumerate(placed, start=1):
        print(f"ion {n:4d} {kind:9s} at {position[0]:9.3f} {position[1]:9.3f} {position[2]:9.3f} A, "
              f"energy {energy:10.3f} ({pmap.units} x e)")
    print(f"pycumd: wrote {len(placed)} ions to {args.output}")
    return 0
