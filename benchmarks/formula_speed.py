"""The LJ formula potential against the built-in LJ on one GPU: steps/s of in.lj-like NVE runs.

Usage: python benchmarks/formula_speed.py [cells ...]  (fcc cells per edge; default 20 40 63)
Each size runs built-in, formula, built-in, formula (1,000 steps each after a 100-step warm-up)
and prints steps/s and the formula/built-in ratio of the best of each.
"""

import sys
import time

from pycumd import LennardJones, Simulation, VelocityVerlet
from pycumd.potentials import Formula
from pycumd.system import create_velocities, lattice_system


def steps_per_second(potential, cells, precision, steps=1000):
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, seed=87287)
    sim = Simulation(system, potential, VelocityVerlet(dt=0.005), device="cuda", precision=precision)
    sim.run(100, progress=False)
    sim.backend.synchronize()
    t0 = time.perf_counter()
    sim.run(steps, progress=False)
    sim.backend.synchronize()
    return steps / (time.perf_counter() - t0)


def main():
    sizes = [int(x) for x in sys.argv[1:]] or [20, 40, 63]
    for precision in ("mixed", "single"):
        for cells in sizes:
            pots = {"builtin": lambda: LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0),
                    "formula": lambda: Formula("4*epsilon*((sigma/r)**12 - (sigma/r)**6)", r_cut=2.5)
                    .pair_coeff(0, 0, epsilon=1.0, sigma=1.0)}
            best = {k: 0.0 for k in pots}
            for _ in range(2):
                for name, make in pots.items():
                    rate = steps_per_second(make(), cells, precision)
                    best[name] = max(best[name], rate)
                    print(f"{precision} N={4 * cells**3} {name}: {rate:.1f} steps/s", flush=True)
            print(f"{precision} N={4 * cells**3} formula/builtin (best of 2): {best['formula'] / best['builtin']:.3f}",
                  flush=True)


if __name__ == "__main__":
    main()
