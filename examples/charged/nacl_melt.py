"""Molten NaCl at 1,300 K: Born-Mayer-Huggins (Tosi-Fumi) with PPPM long-range Coulomb, and the
partial radial distribution functions g_NaCl(r), g_NaNa(r), g_ClCl(r).

    python examples/charged/nacl_melt.py [--device cpu|cuda] [--cells 4] [--steps 3000] [--plot gr.png]

512 ions (4 x 4 x 4 rock-salt cells) at the melt's density (1.55 g/cm^3: the lattice stretched from
a = 5.64 A to 6.30 A), metal units (eV, A, ps, e), Nose-Hoover at 1,300 K, dt 2 fs; the first half of the
steps equilibrates, the second half samples a frame every 20 steps.  g(r) of each species comes from the
engine's own histogram kernel (pycumd.analysis.RDF) on that species' ions, and the unlike pair's from the
total: N (N - 1) g = N_a (N_a - 1) g_aa + N_b (N_b - 1) g_bb + 2 N_a N_b g_ab.

Tosi-Fumi parameters (LAMMPS pair_style born form, E = A exp((sigma - r)/rho) - C/r^6 + D/r^8, eV and A):
Na-Na A 0.2637 sigma 2.340 C 1.0486 D -0.4993; Na-Cl A 0.2110 sigma 2.755 C 6.9906 D -8.6758; Cl-Cl A 0.1582
sigma 3.170 C 72.402 D -145.43; rho 0.317 for all.
"""

from __future__ import annotations

import argparse

import numpy as np

from pycumd import Simulation, System, VelocityVerlet, create_velocities
from pycumd.analysis import RDF
from pycumd.box import Box
from pycumd.integrators import NoseHoover
from pycumd.kspace import make_solver
from pycumd.potentials.born import Born
from pycumd.potentials.coul_long import CoulombLong

NA, CL = 0, 1
TOSI_FUMI = {(NA, NA): (0.2637, 2.340, 1.0486, -0.4993), (NA, CL): (0.2110, 2.755, 6.9906, -8.6758),
             (CL, CL): (0.1582, 3.170, 72.402, -145.43)}


def rock_salt(cells: int, a: float) -> System:
    """Na+ on the fcc sites, Cl- on the fcc sites shifted by a/2, charges +1 and -1 e."""
    fcc = np.array([[0, 0, 0], [0, 0.5, 0.5], [0.5, 0, 0.5], [0.5, 0.5, 0]])
    grid = np.array([[i, j, k] for i in range(cells) for j in range(cells) for k in range(cells)], float)
    sites = (grid[:, None, :] + fcc[None, :, :]).reshape(-1, 3) * a
    positions = np.concatenate([sites, sites + [0.5 * a, 0.0, 0.0]]) % (cells * a)
    n = len(sites)
    types = np.repeat([NA, CL], n).astype(np.int32)
    charges = np.repeat([1.0, -1.0], n)
    return System(Box([cells * a] * 3), positions, np.array([22.98977, 35.453]), "metal", types=types,
                  charges=charges)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="auto")
    p.add_argument("--cells", type=int, default=4)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--accuracy", type=float, default=1e-5, help="PPPM's relative force accuracy")
    p.add_argument("--csv", default="nacl_gr.csv", help="where g(r) goes (columns r, g_NaCl, g_NaNa, g_ClCl)")
    p.add_argument("--plot", default=None, help="also draw g(r) into this image (matplotlib)")
    args = p.parse_args()

    system = rock_salt(args.cells, 6.30)
    create_velocities(system, 1300.0, seed=2718)
    born = Born(r_cut=9.0)
    for (i, j), (A, sigma, C, D) in TOSI_FUMI.items():
        born = born.pair_coeff(i, j, A=A, rho=0.317, sigma=sigma, C=C, D=D)
    potential = CoulombLong(9.0, short=born, kspace=make_solver("pppm", args.accuracy))
    sim = Simulation(system, potential, VelocityVerlet(0.002, thermostat=NoseHoover(1300.0, 0.1)),
                     device=args.device, skin=2.0)
    print(sim.describe(), flush=True)
    half = args.steps // 2
    sim.run(half)
    r_max = min(sim.box.lengths) / 2
    curves = {name: RDF(r_max, 150) for name in ("all", "Na", "Cl")}
    for _ in range(half // 20):
        sim.run(20)
        frame = sim.system()
        L = np.asarray(frame.box.L)
        curves["all"].compute(frame.positions, L)
        curves["Na"].compute(frame.positions[frame.types == NA], L)
        curves["Cl"].compute(frame.positions[frame.types == CL], L)
    n_na, n_cl = int((system.types == NA).sum()), int((system.types == CL).sum())
    n = n_na + n_cl
    g = {k: c.rdf for k, c in curves.items()}
    g_nacl = (n * (n - 1) * g["all"] - n_na * (n_na - 1) * g["Na"] - n_cl * (n_cl - 1) * g["Cl"]) / (2 * n_na * n_cl)
    r = curves["all"].r
    np.savetxt(args.csv, np.column_stack([r, g_nacl, g["Na"], g["Cl"]]), delimiter=",",
               header="r_A,g_NaCl,g_NaNa,g_ClCl", comments="")
    row = sim.thermo_row()
    print(f"T = {row['Temp']:.1f} K, pressure {row['Press']:.0f} bar, potential energy "
          f"{sim.potential_energy() / n:.4f} eV per ion; first peaks: Na-Cl {r[np.argmax(g_nacl)]:.2f} A, "
          f"Na-Na {r[np.argmax(g['Na'])]:.2f} A, Cl-Cl {r[np.argmax(g['Cl'])]:.2f} A; g(r) in {args.csv}")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for values, label in ((g_nacl, "Na-Cl"), (g["Na"], "Na-Na"), (g["Cl"], "Cl-Cl")):
            ax.plot(r, values, label=label)
        ax.axhline(1.0, color="0.6", lw=0.8)
        ax.set_xlabel("r (A)")
        ax.set_ylabel("g(r)")
        ax.set_title(f"molten NaCl, {n} ions, 1300 K (Tosi-Fumi + PPPM)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
        print(f"plot in {args.plot}")


if __name__ == "__main__":
    main()
