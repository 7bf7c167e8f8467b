"""Equation of state of the Lennard-Jones fluid at T* = 2.0: a density sweep run as one batch.

Every density is a system of its own (fcc start, Langevin thermostat at T*, its own seed) in one
:class:`pycumd.ensemble.Ensemble`; the pressure averaged over the production steps is compared with
the equation of state of Johnson, Zollweg and Gubbins (Mol. Phys. 78, 591 (1993), their eq. (7) with
the 32 coefficients of their table 10), which fits simulations of the full (untruncated) potential.

The simulated potential is LJ truncated at r_c (LAMMPS ``pair_style lj/cut``): its forces are those of
the truncated-and-shifted potential, so the dynamics samples that system and the force virial is its
pressure.  The full potential differs from it by ``U_full - U_ts = sum over pairs of u(r_c) inside r_c
and u(r) beyond``, a continuous function of the positions (the two parts' jumps at r_c cancel) whose
forces act only beyond r_c; with g(r) = 1 there, its pressure is the virial tail correction

    (16/3) pi rho^2 ((2/3) r_c^-9 - r_c^-3)

(which already holds the (2/3) pi rho^2 r_c^3 u(r_c) term that a Monte Carlo run of the truncated,
unshifted potential adds as an "impulsive" correction: adding it again here would count it twice).

Usage (the sizes of docs/user-guide.md's plot)::

    PYTHONPATH=src python3 examples/lj_eos/lj_eos_sweep.py --densities 0.1 0.2 0.3 0.4 0.5 0.6 0.7 0.8 0.9 \\
        --cells 5 --equilibrate 2000 --steps 6000 --out docs/lj_eos

The issue's full sweep is ``--n-densities 40`` (0.025 .. 1.0) on a GPU.
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import numpy as np

#: Johnson, Zollweg and Gubbins (1993), table 10: x_1 .. x_32
JZG_X = (0.8623085097507421, 2.976218765822098, -8.402230115796038, 0.1054136629203555, -0.8564583828174598,
         1.582759470107601, 0.7639421948305453, 1.753173414312048, 2.798291772190376e3, -4.8394220260857657e-2,
         0.9963265197721935, -3.698000291272493e1, 2.084012299434647e1, 8.305402124717285e1,
         -9.574799715203068e2, -1.477746229234994e2, 6.398607852471505e1, 1.603993673294834e1,
         6.805916615864377e1, -2.791293578795945e3, -6.245128304568454, -8.116836104958410e3,
         1.488735559561229e1, -1.059346754655084e4, -1.131607632802822e2, -8.867771540418822e3,
         -3.986982844450543e1, -4.689270299917261e3, 2.593535277438717e2, -2.694523589434903e3,
         -7.218487631550215e2, 1.721802063863269e2)
JZG_GAMMA = 3.0


def jzg_pressure(rho, t):
    """P* of the full LJ fluid at density ``rho`` (rho sigma^3) and temperature ``t`` (kT/epsilon):
    JZG's modified Benedict-Webb-Rubin form
    ``P = rho T + sum_{i=1..8} a_i rho^(i+1) + F sum_{i=1..6} b_i rho^(2i+1)``, ``F = exp(-gamma rho^2)``,
    with a_i, b_i of their table 5."""
    x = (None,) + JZG_X
    rho = np.asarray(rho, dtype=float)
    a = (x[1] * t + x[2] * math.sqrt(t) + x[3] + x[4] / t + x[5] / t**2,
         x[6] * t + x[7] + x[8] / t + x[9] / t**2,
         x[10] * t + x[11] + x[12] / t,
         x[13],
         x[14] / t + x[15] / t**2,
         x[16] / t,
         x[17] / t + x[18] / t**2,
         x[19] / t**2)
    b = (x[20] / t**2 + x[21] / t**3,
         x[22] / t**2 + x[23] / t**4,
         x[24] / t**2 + x[25] / t**3,
         x[26] / t**2 + x[27] / t**4,
         x[28] / t**2 + x[29] / t**3,
         x[30] / t**2 + x[31] / t**3 + x[32] / t**4)
    f = np.exp(-JZG_GAMMA * rho**2)
    p = rho * t
    for i, ai in enumerate(a, start=1):
        p = p + ai * rho ** (i + 1)
    for i, bi in enumerate(b, start=1):
        p = p + f * bi * rho ** (2 * i + 1)
    return p


def full_potential_correction(rho, r_cut):
    """Pressure from the MD of LJ truncated at ``r_cut`` (forces of the truncated-and-shifted potential)
    to the full potential: the virial tail correction, g(r) = 1 beyond r_cut (module docstring)."""
    return 16.0 / 3.0 * math.pi * rho**2 * (2.0 / 3.0 * r_cut**-9 - r_cut**-3)


def block_error(values, blocks: int = 10) -> float:
    """Standard error of the mean from ``blocks`` block averages."""
    values = np.asarray(values)
    n = len(values) // blocks * blocks
    if n < blocks:
        return float("nan")
    means = values[:n].reshape(blocks, -1).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(blocks))


def main(argv=None) -> int:
    from pycumd import LennardJones, VelocityVerlet, create_velocities, lattice_system
    from pycumd.ensemble import Ensemble
    from pycumd.integrators import Langevin

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--densities", type=float, nargs="+", help="reduced densities (default: --n-densities of them)")
    p.add_argument("--n-densities", type=int, default=40, help="0.025 .. 1.0 in this many steps")
    p.add_argument("--temperature", type=float, default=2.0)
    p.add_argument("--cells", type=int, default=5, help="fcc cells per edge (4 cells^3 atoms)")
    p.add_argument("--r-cut", type=float, default=4.0)
    p.add_argument("--equilibrate", type=int, default=2000)
    p.add_argument("--steps", type=int, default=6000, help="production steps")
    p.add_argument("--every", type=int, default=10, help="steps between pressure samples")
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="auto")
    p.add_argument("--out", default="lj_eos", help="output prefix: PREFIX.csv, PREFIX_thermo.csv, PREFIX.png")
    p.add_argument("--from-log", metavar="CSV", help="no run: the table and plot from a thermo log this script wrote "
                                                     "(give the same densities, --r-cut, --equilibrate)")
    args = p.parse_args(argv)
    densities = args.densities or list(np.linspace(1.0 / args.n_densities, 1.0, args.n_densities))
    t = args.temperature
    systems, integrators = [], []
    for i, rho in enumerate(densities):
        s = lattice_system("fcc", args.cells, density=rho)
        create_velocities(s, t, seed=1000 + i)
        systems.append(s)
        integrators.append(VelocityVerlet(0.005, Langevin(t, 1.0, seed=2000 + i)))
    pot = LennardJones(args.r_cut).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if args.from_log:
        with open(args.from_log, newline="") as f:
            log = [{"system": int(r["system"]), "Step": int(r["Step"]), "Press": float(r["Press"])}
                   for r in csv.DictReader(f)]
    else:
        thermo = f"{out}_thermo.csv"
        ens = Ensemble.from_systems(systems, pot, integrators, thermo_log=thermo, thermo_every=args.every,
                                    device=args.device, precision=args.precision)
        ens.run(args.equilibrate)
        ens.run(args.steps)
        ens.close()
        with open(thermo, newline="") as f:
            log = [{"system": int(r["system"]), "Step": int(r["Step"]), "Press": float(r["Press"])}
                   for r in csv.DictReader(f)]
    wall = time.perf_counter() - start
    rows = []
    for i, rho in enumerate(densities):
        press = [r["Press"] for r in log if r["system"] == i and r["Step"] > args.equilibrate]
        p_md = float(np.mean(press)) + full_potential_correction(rho, args.r_cut)
        err = block_error(press)
        p_jzg = float(jzg_pressure(rho, t))
        rows.append({"density": rho, "P_md": p_md, "P_md_error": err, "P_jzg": p_jzg, "difference": p_md - p_jzg})
    with open(f"{out}.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    n_atoms = sum(s.n_atoms for s in systems)
    if not args.from_log:
        print(f"{len(densities)} systems, {n_atoms} atoms, {args.equilibrate} + {args.steps} steps, "
              f"{wall:.1f} s ({n_atoms * (args.equilibrate + args.steps) / wall:.3g} atom-steps/s)")
    print(f"{'rho':>8} {'P (MD)':>10} {'+-':>8} {'P (JZG)':>10} {'MD - JZG':>10}")
    for r in rows:
        print(f"{r['density']:8.4f} {r['P_md']:10.4f} {r['P_md_error']:8.4f} {r['P_jzg']:10.4f} {r['difference']:10.4f}")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return 0
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6, 6), sharex=True, gridspec_kw={"height_ratios": [3, 1]})
    grid = np.linspace(0.0, max(densities) * 1.02, 200)
    top.plot(grid, jzg_pressure(grid, t), "-", color="0.3", label="Johnson, Zollweg, Gubbins (1993)")
    top.errorbar([r["density"] for r in rows], [r["P_md"] for r in rows], yerr=[r["P_md_error"] for r in rows],
                 fmt="o", color="C0", label=f"pycumd batch ({len(rows)} systems of {systems[0].n_atoms} atoms)")
    top.set_ylabel("P*")
    top.set_title(f"LJ fluid, T* = {t:g} (MD: r_c = {args.r_cut:g} + tail correction)")
    top.legend()
    bottom.axhline(0.0, color="0.3")
    bottom.errorbar([r["density"] for r in rows], [r["difference"] for r in rows],
                    yerr=[r["P_md_error"] for r in rows], fmt="o", color="C0")
    bottom.set_xlabel("density rho*")
    bottom.set_ylabel("MD - JZG")
    fig.tight_layout()
    fig.savefig(f"{out}.png", dpi=120)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
