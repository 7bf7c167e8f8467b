"""Energy drift of NVE per precision: an LJ liquid with a shifted-force cutoff.

The shifted-force cutoff makes energy and force continuous at r_c, so what drifts is numerics,
not the cutoff.  For each precision (and each also in deterministic mode) the liquid is
equilibrated, then run for ``--steps`` steps with the total energy recorded every ``--every``
steps; the drift is the slope of a linear fit, in k_B T per atom per 1,000 tau, with the cost
of a step beside it.

    pycumd bench drift --cells 20 --steps 100000 --precision single mixed double composite
    pycumd bench drift --system ions --steps 20000      # C/O ions, all pairs, Gamma = 20
    pycumd bench drift --merge a/drift_lj.json b/drift_lj.json   # table + plot of separate runs

With ``--system ions`` the liquid is the carbon-oxygen white-dwarf mixture of pycumd.ions (3,456
ions, Gamma = 20, screening length 2 a, all pairs, dt = 0.05 / omega_p), and the drift is per
1,000 / omega_p instead of per 1,000 tau.  With ``--system eam`` it is LAMMPS' in.eam: fcc Cu
(``--cells`` per edge, 20: 32,000 atoms) with the embedded-atom method (``--potential-file``, default
Cu_u3.eam found as LAMMPS finds it: the working directory, then ``$LAMMPS_POTENTIALS``), velocities
of 1600 K (about 800 K once shared with the lattice), dt = 5 fs; the drift is per 1,000 ps (a ns).
With ``--system charged`` it is ``pycumd bench charged``'s molten NaCl (Tosi-Fumi born/coul/long with PPPM
at ``--accuracy``, default 1e-5; 8 ``--cells``^3 ions after 1,000 NVE steps into the melt, 1300 K, dt =
2 fs, skin 1 A); the drift is per 1,000 ps, in k_B T of 1300 K per ion.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..backend import select as select_backend
from ..integrators import Langevin, VelocityVerlet
from ..outputs.thermo import ThermoReporter
from ..potentials import LennardJones
from ..simulation import Simulation
from ..system import create_velocities, lattice_system
from . import argument_parser, default_out_dir

TEMPERATURE = 0.85
DT = 0.005


def equilibrated_liquid(cells: int, device: str):
    """An LJ liquid at density 0.8442, T 0.85, after 2,000 Langevin steps (double precision)."""
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, 87287)
    pot = LennardJones(2.5, cutoff="shift_force").pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    sim = Simulation(system, pot, VelocityVerlet(DT, Langevin(TEMPERATURE, 0.5, seed=2024)),
                     device=device, precision="double")
    sim.run(2000)
    return sim.system(), pot


def ion_liquid(n_ions: int = 3456):
    """The C/O white-dwarf liquid (Gamma = 20): (system, potential, dt, kT, time unit = 1/omega_p)."""
    import math

    from ..ions import ion_mixture
    from ..units import E2_MEV_FM

    density = 4.3e-11
    system, pot, dt = ion_mixture([6, 8], [12.0, 16.0], [0.5, 0.5], n_ions, density, gamma=20.0, seed=3)
    a = (3 / (4 * math.pi * density)) ** (1 / 3)
    kT = 50.0 * E2_MEV_FM / (a * 20.0)
    return system, pot, dt, kT, dt / 0.05


EAM_TEMPERATURE = 1600.0
EAM_DT = 0.005


def eam_crystal(cells: int, potential_file: str, device: str):
    """LAMMPS' in.eam: (system, potential, dt, kT, time unit): fcc Cu, a = 3.615 A, ``cells`` per
    edge, velocities of 1600 K (loop geom, seed 376847 as in.eam), after 1,000 NVE steps in double
    precision (the first steps shift the integrator's shadow energy by about 7e-4 eV per atom, in
    LAMMPS' log too: not drift); kT of the 800 K it settles at."""
    from ..potentials.eam import EAM, resolve_potential_file
    from ..units import get_units

    pot = EAM.funcfl(resolve_potential_file(potential_file))
    system = lattice_system("fcc", cells, units="metal", constant=3.615, mass=pot.masses(1)[0])
    create_velocities(system, EAM_TEMPERATURE, 376847)
    sim = Simulation(system, pot, VelocityVerlet(EAM_DT), device=device, precision="double", skin=1.0)
    sim.run(1000)
    return sim.system(), pot, EAM_DT, get_units("metal").boltz * EAM_TEMPERATURE / 2, 1.0


def charged_melt(cells: int, accuracy: float, device: str, melt_steps: int = 1000):
    """Molten NaCl of ``pycumd bench charged`` (Tosi-Fumi born/coul/long, PPPM at ``accuracy``, metal
    units), 8 cells^3 ions after ``melt_steps`` NVE steps into the melt: (system, potential, dt, kT, time
    unit = 1 ps, skin)."""
    from ..units import get_units
    from . import charged

    state = charged.melt(charged.build_state(cells), melt_steps, accuracy=accuracy, device=device)
    return (charged.make_system(state), charged.make_potential(accuracy), charged.DT,
            get_units("metal").boltz * charged.TEMPERATURE, 1.0, charged.SKIN)


def drift(system, pot, precision: str, deterministic: bool, steps: int, every: int, device: str,
          dt: float = DT, kT: float = TEMPERATURE, time_unit: float = 1.0,
          max_seconds: float | None = None, allpairs_shape: tuple | None = None, skin: float | None = None) -> dict:
    """One NVE run; returns the drift fit, the energy series and the cost per step.

    With ``max_seconds`` the run stops early (at a multiple of ``50 * every`` steps) once that
    much wall time has passed; ``steps`` in the result is the number actually run.
    ``allpairs_shape`` fixes the all-pairs kernel's launch shape (e.g. ``("newton", 2, 4)``)
    where the all-pairs fast path runs; otherwise it is tuned.
    """
    sim = Simulation(system.copy(), pot, VelocityVerlet(dt), device=device, precision=precision,
                     deterministic=deterministic, **({} if skin is None else {"skin": skin}))
    if allpairs_shape is not None and getattr(sim.forces, "fast", False):
        sim.forces.block = tuple(allpairs_shape)
    thermo = ThermoReporter(every=every, screen=False)
    sim.reporters.append(thermo)
    sim.run(10)                                              # compile, warm up
    thermo.rows.clear()
    chunk = steps if max_seconds is None else min(steps, 50 * every)
    t0 = time.perf_counter()
    done = 0
    while done < steps:
        sim.run(min(chunk, steps - done))
        done = sim.step - 10
        if max_seconds is not None and time.perf_counter() - t0 > max_seconds:
            break
    sim.backend.synchronize()
    seconds = time.perf_counter() - t0
    by_step = {r["Step"]: r["TotEng"] for r in thermo.rows}   # a row repeats where a chunk starts
    step = np.array(sorted(by_step), float)
    n_norm = 1 if sim.units.normalize_thermo else system.n_atoms
    e = np.array([by_step[k] for k in sorted(by_step)]) / n_norm   # per atom
    t = (step - step[0]) * dt / time_unit
    result = {"precision": precision, "deterministic": deterministic, "N": system.n_atoms, "steps": done,
              "allpairs_shape": list(sim.forces.block) if getattr(sim.forces, "fast", False) else None,
              "us_per_step": seconds / done * 1e6, "device": sim.backend.device_name,
              "time": t.tolist(), "energy": e.tolist(), "kT": kT, "time_unit": time_unit}
    return {**result, **fit_drift(result)}


def fit_drift(result: dict) -> dict:
    """Linear fit of E(t) per atom: slope in k_B T per atom per 1,000 time units, its standard
    error (residuals taken as independent: at 1,000-step sampling their lag-1 correlation is
    below 0.05 for double, mixed and composite; about 0.5 for single, whose error is then
    underestimated by about 1.7x) and the fluctuation about the fit."""
    t, e = np.asarray(result["time"]), np.asarray(result["energy"]) / result["kT"]
    fit = np.polyfit(t, e, 1)
    residual = e - np.polyval(fit, t)
    se = residual.std(ddof=2) / np.sqrt(((t - t.mean()) ** 2).sum())
    return {"drift_kT_per_atom_per_1000tau": fit[0] * 1000.0, "drift_standard_error": se * 1000.0,
            "drift_block_error": block_error(t, e) * 1000.0,
            "residual_lag1_correlation": float(np.corrcoef(residual[:-1], residual[1:])[0, 1]),
            "fluctuation_kT_per_atom": float(residual.std())}


def block_error(t, e, blocks: int = 10) -> float:
    """Standard error of the drift from ``blocks`` block means: the least-squares error of a line
    fitted to the means of equal consecutive parts of the series.  Unlike the error from the raw
    samples it holds when the residuals are correlated over times shorter than a block (as the
    all-pairs ions' are: lag-1 correlation 0.7-0.9 at 1,000-step sampling); for uncorrelated
    residuals the two agree.  Same units as the slope."""
    parts = np.array_split(np.arange(len(t)), blocks)
    tb = np.array([t[k].mean() for k in parts])
    eb = np.array([e[k].mean() for k in parts])
    residual = eb - np.polyval(np.polyfit(tb, eb, 1), tb)
    return float(residual.std(ddof=2) / np.sqrt(((tb - tb.mean()) ** 2).sum()))


def print_table(results) -> None:
    print(f"{'precision':>9} {'determ.':>7} {'steps':>9} {'drift kT/atom/1000tau':>22} {'+-':>9} "
          f"{'+-blocks':>9} {'fluct. kT/atom':>15} {'us/step':>8}")
    for r in results:
        print(f"{r['precision']:>9} {str(r['deterministic']):>7} {r['steps']:>9} "
              f"{r['drift_kT_per_atom_per_1000tau']:>22.3e} {r['drift_standard_error']:>9.1e} "
              f"{r['drift_block_error']:>9.1e} {r['fluctuation_kT_per_atom']:>15.3e} {r['us_per_step']:>8.1f}",
              flush=True)


def plot(results, path: Path, title: str) -> None:
    """E(t) - E(0) in k_B T per atom, one line per precision (deterministic dashed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plot")
        return
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    colors = {}
    for r in results:
        e = np.array(r["energy"])
        color = colors.setdefault(r["precision"], f"C{len(colors)}")
        ax.plot(r["time"], (e - e[0]) / r.get("kT", TEMPERATURE), color=color, lw=0.8,
                ls="--" if r["deterministic"] else "-",
                label=r["precision"] + (" (deterministic)" if r["deterministic"] else ""))
    ax.set_xlabel("time (tau)" if results[0].get("time_unit", 1.0) == 1.0 else "time (1/omega_p)")
    ax.set_ylabel("E(t) - E(0)  (k_B T per atom)")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


DESCRIPTION = """\
Energy drift of NVE per precision: an LJ liquid with a shifted-force cutoff, or ions.

Each precision (and each also in deterministic mode) is run for --steps steps with the total
energy recorded every --every steps; the drift is the slope of a linear fit, in k_B T per atom
per 1,000 tau (ions: per 1,000 / omega_p), with the cost of a step beside it.

    pycumd bench drift --cells 20 --steps 100000 --precision single mixed double composite
    pycumd bench drift --system ions --steps 20000
    pycumd bench drift --system eam --cells 20 --steps 100000 --potential-file Cu_u3.eam
    pycumd bench drift --system charged --cells 4 --steps 100000     # 512 ions of molten NaCl, PPPM 1e-5
    pycumd bench drift --merge a/drift_lj.json b/drift_lj.json   # one table and plot of earlier runs
"""


def main(argv=None):
    ap = argument_parser("drift", DESCRIPTION)
    ap.add_argument("--system", choices=["lj", "ions", "eam", "charged"], default="lj")
    ap.add_argument("--accuracy", type=float, default=1e-5,
                    help="--system charged: the PPPM accuracy (relative, LAMMPS' kspace_style pppm ACC; default 1e-5)")
    ap.add_argument("--melt-steps", type=int, default=1000,
                    help="--system charged: NVE steps from the displaced lattice into the melt (default 1000)")
    ap.add_argument("--potential-file", default="Cu_u3.eam",
                    help="--system eam: the funcfl file (default Cu_u3.eam, in the working directory or "
                         "$LAMMPS_POTENTIALS)")
    ap.add_argument("--cells", type=int, default=20, help="fcc cells per edge (20: 32,000 atoms)")
    ap.add_argument("--steps", type=int, default=100_000)
    ap.add_argument("--every", type=int, default=1000, help="steps between energy samples")
    ap.add_argument("--precision", nargs="+",
                    help="default: single mixed double composite on the GPU, double on the CPU")
    ap.add_argument("--deterministic", choices=["both", "off", "on"], default="both",
                    help="run each precision without and/or with deterministic=True")
    ap.add_argument("--max-seconds", type=float, help="stop each run early after this much wall time")
    ap.add_argument("--merge", nargs="+", metavar="JSON",
                    help="no runs: combine the result files of earlier runs into one table and plot")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--allpairs-shape", help="--system ions: fix the all-pairs fast path's launch shape, "
                                              "e.g. newton,2,4 or 64,4,2,0 (default: tuned)")
    ap.add_argument("--out-dir", default=str(default_out_dir("drift")),
                    help="where drift_<system>.json and .png go (default: ./bench-drift)")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.merge:
        results = [{**r, **fit_drift(r)} for f in args.merge for r in json.loads(Path(f).read_text())]
        print_table(results)
        (out / f"drift_{args.system}.json").write_text(json.dumps(results))
        plot(results, out / f"drift_{args.system}.png",
             f"NVE energy drift ({args.system}), N = {results[0]['N']}, {results[0]['device']}")
        return
    skin = None
    if args.system == "ions":
        system, pot, dt, kT, unit = ion_liquid()
    elif args.system == "charged":
        system, pot, dt, kT, unit, skin = charged_melt(args.cells, args.accuracy, args.device, args.melt_steps)
    elif args.system == "eam":
        system, pot, dt, kT, unit = eam_crystal(args.cells, args.potential_file, args.device)
    else:
        (system, pot), dt, kT, unit = equilibrated_liquid(args.cells, args.device), DT, TEMPERATURE, 1.0
    modes = {"both": (False, True), "off": (False,), "on": (True,)}[args.deterministic]
    shape = (tuple(x if x == "newton" else int(x) for x in args.allpairs_shape.split(","))
             if args.allpairs_shape else None)
    results = []
    if args.precision is None:
        on_gpu = select_backend(args.device).is_gpu
        args.precision = ["single", "mixed", "double"] + (["composite"] if args.system != "eam" else []) \
            if on_gpu else ["double"]
    for precision in args.precision:
        for deterministic in modes:
            results.append(drift(system, pot, precision, deterministic, args.steps, args.every, args.device,
                                 dt, kT, unit, args.max_seconds, shape, skin))
            print_table(results[-1:])
            (out / f"drift_{args.system}.json").write_text(json.dumps(results))   # kept if a later run dies
    plot(results, out / f"drift_{args.system}.png", f"NVE energy drift ({args.system}), N = {system.n_atoms}")


if __name__ == "__main__":
    main()
