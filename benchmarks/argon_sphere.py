"""The seed's showcase, side by side with LAMMPS: the collapsing argon sphere (Hedman 2016).

One script, three parts (LAMMPS runs on the development machine's CPU, pycumd on the GPU):

    python benchmarks/argon_sphere.py lammps  --out runs/   # LAMMPS (mpirun -np 2 lmp): scaled sphere,
                                                           # and a short run of the full one for its speed
    python benchmarks/argon_sphere.py pycumd  --out runs/   # pycumd: the scaled sphere in each precision,
                                                           # the full 1,047,293-atom sphere with snapshots
    python benchmarks/argon_sphere.py figures --out runs/ --docs docs/

The input is examples/argon_sphere/in.argon_sphere (also built in: pycumd run --example argon-sphere);
`--scale` scales lattice, box and sphere together (0.25: 16,375 atoms).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
INPUT = HERE.parent / "examples" / "argon_sphere" / "in.argon_sphere"
FS_PER_STEP = 2.0


def parse_log(text: str) -> dict:
    """Thermo columns of a LAMMPS log (all runs concatenated)."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from lammps_oracle import parse_thermo

    tables = parse_thermo(text)
    return {k: np.concatenate([t[k] for t in tables]).tolist() for k in tables[0]}


def run_lammps(out: Path, scale: float, steps: int, every: int, ranks: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name, sc, n_steps, n_every in (("scaled", scale, steps, every), ("full_speed", 1.0, 40, 20)):
        log = out / f"lammps_{name}.log"
        cmd = ["mpirun", "-np", str(ranks), "lmp", "-in", str(INPUT), "-var", "scale", str(sc), "-var", "steps",
               str(n_steps), "-var", "thermo_every", str(n_every), "-log", str(log), "-screen", "none"]
        t0 = time.perf_counter()
        if not (log.exists() and "Loop time of" in log.read_text()):    # a finished log is reused
            subprocess.run(cmd, check=True, cwd=out)
        wall = time.perf_counter() - t0
        text = log.read_text()
        loop = [line for line in text.splitlines() if line.startswith("Loop time of")]
        n_atoms = int(loop[-1].split(" atoms")[0].split()[-1])
        loop_seconds = float(loop[-1].split()[3])
        results[name] = {"thermo": parse_log(text), "atoms": n_atoms, "steps": n_steps, "ranks": ranks,
                         "loop_seconds": loop_seconds, "wall_seconds": wall,
                         "Mps": n_atoms * n_steps / loop_seconds / 1e6, "cpu": _cpu_name()}
        print(f"LAMMPS {name}: {n_atoms} atoms, {n_steps} steps, {loop_seconds:.1f} s loop, "
              f"{results[name]['Mps']:.2f} M particle-steps/s on {ranks} rank(s)", flush=True)
    (out / "lammps.json").write_text(json.dumps(results))


def _cpu_name() -> str:
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def run_pycumd(out: Path, scale: float, steps: int, every: int, full_steps: int, frames: int) -> None:
    from pycumd.inputs.lammps_input import run_lammps_script
    from pycumd.outputs.trajectory import GSDWriter

    out.mkdir(parents=True, exist_ok=True)
    text = INPUT.read_text()
    results = {}
    for precision in ("single", "mixed", "double"):
        t0 = time.perf_counter()
        runner = run_lammps_script(text=text, variables={"scale": scale, "steps": steps, "thermo_every": every},
                                   precision=precision, screen=False)
        wall = time.perf_counter() - t0
        rows = runner.thermo.rows
        results[f"scaled_{precision}"] = {
            "thermo": {k: [r[k] for r in rows] for k in rows[0]}, "atoms": runner.sim.state.n_atoms,
            "steps": steps, "wall_seconds": wall, "Mps": runner.sim.state.n_atoms * steps / wall / 1e6,
            "device": runner.sim.backend.device_name}
        print(f"pycumd scaled {precision}: {wall:.1f} s, {results[f'scaled_{precision}']['Mps']:.1f} Mp/s", flush=True)
    gsd_path = Path(os.environ.get("TMPDIR", "/tmp")) / "argon_sphere_full.gsd"
    writer_every = max(full_steps // frames, 1)
    from pycumd.components import EngineOptions
    from pycumd.inputs.lammps_input import plan_from_lammps_script

    plan = plan_from_lammps_script(text=text, variables={"scale": 1.0, "steps": full_steps, "thermo_every": every},
                                   screen=False)
    plan.engine = EngineOptions(precision="mixed")
    reporters = plan.outputs.build()
    reporters.thermo.every = plan.stages[0].thermo_every
    writer = GSDWriter(gsd_path, writer_every)
    sim = plan.build_simulation(reporters=[*reporters.all, writer])
    sim.run(20)                                        # warm-up: compile, first rebuilds
    t0 = time.perf_counter()
    sim.run(full_steps - 20)
    sim.backend.synchronize()
    wall = time.perf_counter() - t0
    writer.close()
    reporters.close()
    rows = reporters.thermo.rows
    results["full_mixed"] = {"thermo": {k: [r[k] for r in rows] for k in rows[0]}, "atoms": sim.state.n_atoms,
                             "steps": full_steps, "wall_seconds": wall,
                             "Mps": sim.state.n_atoms * (full_steps - 20) / wall / 1e6,
                             "device": sim.backend.device_name, "rebuilds": sim.neighbors.n_builds}
    print(f"pycumd full sphere: {sim.state.n_atoms} atoms, {full_steps} steps, "
          f"{results['full_mixed']['Mps']:.0f} Mp/s", flush=True)
    (out / "pycumd.json").write_text(json.dumps(results))
    render_snapshots(gsd_path, out / "argon_sphere_snapshots.png")


def render_snapshots(gsd_path: Path, png: Path, slab: float = 20.0) -> None:
    """Atoms in a slab through the box centre (|z| < slab/2 A), at six times, as the seed's Figure 2."""
    import gsd.hoomd
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with gsd.hoomd.open(str(gsd_path), "r") as traj:
        picks = np.linspace(0, len(traj) - 1, 6).round().astype(int)
        fig, axes = plt.subplots(2, 3, figsize=(12, 8))
        for ax, k in zip(axes.ravel(), picks):
            frame = traj[int(k)]
            p = frame.particles.position
            half = frame.configuration.box[0] / 2
            sel = np.abs(p[:, 2]) < slab / 2
            ax.scatter(p[sel, 0] / 10, p[sel, 1] / 10, s=0.05, c="k", linewidths=0)
            ax.set_xlim(-half / 10, half / 10)
            ax.set_ylim(-half / 10, half / 10)
            ax.set_aspect("equal")
            ax.set_title(f"t = {frame.configuration.step * FS_PER_STEP / 1000:.0f} ps")
            ax.set_xlabel("x (nm)")
            ax.set_ylabel("y (nm)")
    fig.suptitle(f"pycumd: argon sphere, {len(p):,} atoms, slab |z| < {slab / 20:.0f} nm")
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def figures(out: Path, docs: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lmp = json.loads((out / "lammps.json").read_text())
    ours = json.loads((out / "pycumd.json").read_text())
    docs.mkdir(parents=True, exist_ok=True)
    ref = lmp["scaled"]["thermo"]
    t_ref = np.array(ref["Step"]) * FS_PER_STEP / 1000
    ke_ref = np.array(ref["TotEng"]) - np.array(ref["E_pair"])
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(t_ref, ke_ref, "r-", label="LAMMPS (CPU)")
    ax[1].plot(t_ref, ref["E_pair"], "r-", label="LAMMPS (CPU)")
    run = ours["scaled_mixed"]["thermo"]
    t = np.array(run["Step"]) * FS_PER_STEP / 1000
    ax[0].plot(t, np.array(run["TotEng"]) - np.array(run["E_pair"]), "b--", label="pycumd (GPU, mixed)")
    ax[1].plot(t, run["E_pair"], "b--", label="pycumd (GPU, mixed)")
    ax[0].set_ylabel("kinetic energy (eV)")
    ax[1].set_ylabel("potential energy (eV)")
    for a in ax:
        a.set_xlabel("time (ps)")
        a.legend()
    fig.suptitle(f"argon sphere, {lmp['scaled']['atoms']:,} atoms (scaled), NVE")
    fig.tight_layout()
    fig.savefig(docs / "argon_sphere_energy.png", dpi=110)

    fig, ax = plt.subplots(figsize=(7, 4))
    e0 = ref["TotEng"][0]
    ax.plot(t_ref, (np.array(ref["TotEng"]) - e0) / abs(e0), "r-", label="LAMMPS (double)")
    for precision, style in (("single", ":"), ("mixed", "--"), ("double", "-.")):
        run = ours[f"scaled_{precision}"]["thermo"]
        t = np.array(run["Step"]) * FS_PER_STEP / 1000
        ax.plot(t, (np.array(run["TotEng"]) - run["TotEng"][0]) / abs(run["TotEng"][0]), style,
                label=f"pycumd {precision}")
    ax.set_xlabel("time (ps)")
    ax.set_ylabel("(E(t) - E(0)) / |E(0)|")
    ax.legend()
    ax.set_title("total energy drift, scaled argon sphere")
    fig.tight_layout()
    fig.savefig(docs / "argon_sphere_drift.png", dpi=110)

    lines = ["| run | atoms | hardware | M particle-steps/s |", "| --- | --- | --- | --- |"]
    for name, r in lmp.items():
        lines.append(f"| LAMMPS {name} | {r['atoms']:,} | {r['ranks']} MPI ranks, {r['cpu']} | {r['Mps']:.2f} |")
    for name, r in ours.items():
        lines.append(f"| pycumd {name} | {r['atoms']:,} | {r['device']} | {r['Mps']:.1f} |")
    print("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("part", choices=["lammps", "pycumd", "figures"])
    ap.add_argument("--out", default="runs/argon_sphere")
    ap.add_argument("--docs", default="docs")
    ap.add_argument("--scale", type=float, default=0.25)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--every", type=int, default=250)
    ap.add_argument("--full-steps", type=int, default=20000)
    ap.add_argument("--frames", type=int, default=10)
    ap.add_argument("--ranks", type=int, default=2)
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.part == "lammps":
        run_lammps(out, args.scale, args.steps, args.every, args.ranks)
    elif args.part == "pycumd":
        run_pycumd(out, args.scale, args.steps, args.every, args.full_steps, args.frames)
    else:
        figures(out, Path(args.docs))


if __name__ == "__main__":
    main()
