"""Throughput of the LJ liquid (LAMMPS bench/in.lj scaled up): steps/s and atom-steps/s.

fcc start at density 0.8442, T 1.44, cutoff 2.5 (truncated), skin 0.3, NVE, dt 0.005, neighbour
rebuild by displacement check.  Whole steps after a warm-up run; thermo only at the ends.

    pycumd bench lj --cells 20 50 --precision mixed single --steps 500
"""

from __future__ import annotations

import argparse
import json
import time

from pycumd.potentials import LennardJones
from pycumd.simulation import Simulation
from pycumd.system import create_velocities, lattice_system


def measure(cells: int, precision: str, steps: int, device: str) -> dict:
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, 87287)
    pot = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    sim = Simulation(system, pot, skin=0.3, device=device, precision=precision)
    sim.run(max(steps // 10, 20))                     # warm-up: compile, melt the lattice a bit
    builds0 = sim.neighbors.n_builds
    t0 = time.perf_counter()
    sim.run(steps)
    sim.backend.synchronize()
    seconds = time.perf_counter() - t0
    n = system.n_atoms
    return {"N": n, "precision": precision, "device": sim.backend.device_name, "steps": steps,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "rebuilds": sim.neighbors.n_builds - builds0, "TotEng": sim.thermo_row()["TotEng"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[20, 63])
    ap.add_argument("--precision", nargs="+", default=["mixed"])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    args = ap.parse_args(argv)
    print(f"{'N':>10} {'precision':>9} {'steps/s':>10} {'atom-steps/s':>13} {'rebuilds':>8}")
    for cells in args.cells:
        for precision in args.precision:
            r = measure(cells, precision, args.steps, args.device)
            print(f"{r['N']:>10} {r['precision']:>9} {r['steps_per_s']:>10.1f} {r['atom_steps_per_s']:>13.3e} "
                  f"{r['rebuilds']:>8}", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
