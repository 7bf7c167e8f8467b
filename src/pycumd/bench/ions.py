"""All-pairs screened-Coulomb ions at the seed's Table II sizes (IUMD on a K20): ms per full MD step.

Carbon/oxygen white-dwarf liquid (Z = 6, 8; masses 12, 16 u; half and half) at an ion density of
5e-11 fm^-3 (about 1e6 g/cm^3), Coulomb coupling Gamma = <Z^2> e^2 / (a kT) = 20, screening length
2 a (a: ion-sphere radius), no cutoff: every pair with the minimum image, as the seed's kernels.
Positions: a jittered simple cubic lattice.  Velocity Verlet (NVE), dt = 0.05 / omega_p; each
timed step is a whole step (integrate + all-pairs forces; energies only at the ends).

    python -m pycumd.bench.ions                         # N = 1152 .. 27648, mixed precision
    python -m pycumd.bench.ions --sizes 27648 --precision mixed double --steps 200

The seed's Table II (one K20, whole `newton` step): 0.801 ms at 1152 ions ... 140.982 ms at 27648.
"""

from __future__ import annotations

import json
import math
import time

import numpy as np

from pycumd.backend import select as select_backend
from pycumd.bench import argument_parser
from pycumd.box import Box
from pycumd.integrators import VelocityVerlet
from pycumd.potentials.yukawa import Yukawa
from pycumd.simulation import Simulation
from pycumd.system import System, create_velocities
from pycumd.units import E2_MEV_FM, amu_to_mev

TABLE_II_SIZES = (1152, 1536, 1728, 3456, 6912, 13824, 27648)
TABLE_II_MS = {1152: 0.801, 1536: 1.091, 1728: 1.231, 3456: 3.152, 6912: 10.148, 13824: 41.389,
               27648: 140.982}


def white_dwarf_liquid(n: int, density: float = 5e-11, gamma: float = 20.0, seed: int = 2013):
    """C/O ions (types 0 = C, 1 = O) on a jittered cubic lattice; returns (system, potential, dt)."""
    rng = np.random.default_rng(seed)
    L = (n / density) ** (1 / 3)
    k = math.ceil(n ** (1 / 3))
    spacing = L / k
    grid = np.stack(np.meshgrid(*[np.arange(k)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    sites = grid[np.sort(rng.choice(len(grid), n, replace=False))]
    positions = (sites + 0.5 + 0.2 * (rng.random((n, 3)) - 0.5)) * spacing
    types = (np.arange(n) % 2).astype(np.int32)
    z = np.array([6.0, 8.0])
    masses = amu_to_mev(np.array([12.0, 16.0]))
    system = System(Box([L] * 3), positions, masses, "nuclear", types=types)
    a_ws = (3 / (4 * math.pi * density)) ** (1 / 3)
    z2 = float(np.mean(z[types] ** 2))
    create_velocities(system, z2 * E2_MEV_FM / (a_ws * gamma), seed, loop="local")
    omega_p = math.sqrt(4 * math.pi * density * z2 * E2_MEV_FM / float(np.mean(masses[types])))
    return system, Yukawa(screening_length=2 * a_ws).charges(z), 0.05 / omega_p


def measure(n: int, precision: str, steps: int, device: str) -> dict:
    system, pot, dt = white_dwarf_liquid(n)
    sim = Simulation(system, pot, VelocityVerlet(dt=dt), device=device, precision=precision,
                     pair_method="all_pairs")
    e0 = sim.thermo_row()["TotEng"]
    sim.run(max(steps // 10, 10))                  # warm-up: compile, auto-tune the block shape
    sim.backend.synchronize()
    t0 = time.perf_counter()
    sim.run(steps)
    sim.backend.synchronize()
    seconds = time.perf_counter() - t0
    e1 = sim.thermo_row()["TotEng"]
    block = getattr(sim.forces, "block", None)
    kernel_ms = getattr(sim.forces, "timings", {}).get(block) if block else None
    return {"N": n, "precision": precision, "device": sim.backend.device_name, "steps": steps,
            "ms_per_step": 1e3 * seconds / steps, "block": list(block) if block else None,
            "force_kernel_ms": kernel_ms, "pairs_per_s": n * (n - 1) * steps / seconds,
            "energy_drift_rel": abs(e1 - e0) / sim.kinetic_energy(),
            "seed_k20_ms": TABLE_II_MS.get(n)}


DESCRIPTION = """\
All-pairs screened-Coulomb ions at the IUMD paper's Table II sizes: ms per whole MD step.

Carbon/oxygen white-dwarf liquid (half and half), Coulomb coupling Gamma = 20, screening length
2 a, every pair with the minimum image; velocity Verlet (NVE), dt = 0.05 / omega_p.

    pycumd bench ions                        # N = 1152 .. 27648
    pycumd bench ions --sizes 27648 --precision mixed double --steps 200
"""


def main(argv=None):
    ap = argument_parser("ions", DESCRIPTION)
    ap.add_argument("--sizes", type=int, nargs="+", default=list(TABLE_II_SIZES), help="numbers of ions")
    ap.add_argument("--precision", nargs="+",
                    help="precisions to time (default: mixed on the GPU, double on the CPU)")
    ap.add_argument("--steps", type=int, default=100, help="timed steps (default 100)")
    ap.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    ap.add_argument("--json", help="append results as JSON lines to this file")
    args = ap.parse_args(argv)
    if args.precision is None:
        args.precision = ["mixed"] if select_backend(args.device).is_gpu else ["double"]
    print(f"{'N':>7} {'precision':>9} {'ms/step':>9} {'kernel ms':>9} {'block':>8} {'pairs/s':>10} "
          f"{'dE/KE':>9} {'K20 ms':>8}", flush=True)
    for n in args.sizes:
        for precision in args.precision:
            r = measure(n, precision, args.steps, args.device)
            kern = f"{r['force_kernel_ms']:.3f}" if r["force_kernel_ms"] is not None else "-"
            block = "x".join(map(str, r["block"])) if r["block"] else "-"
            seed = f"{r['seed_k20_ms']:.3f}" if r["seed_k20_ms"] else "-"
            print(f"{n:>7} {precision:>9} {r['ms_per_step']:>9.3f} {kern:>9} {block:>8} "
                  f"{r['pairs_per_s']:>10.3e} {r['energy_drift_rel']:>9.2e} {seed:>8}", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
