"""Throughput of batches of small systems (issue 38): aggregate atom-steps/s.

Two cases, each against its baselines in the same process (same device, precision and steps):

independent: S systems of N atoms of LAMMPS' bench/in.lj (fcc at density 0.8442, T 1.44, cutoff
2.5, skin 0.3, NVE, dt 0.005), each with its own velocity seed, run as one pycumd.Ensemble;
against one system of S x N atoms (the rate a batch should approach) and against the S systems run
one after another (each its own Simulation.run).

tempering: M replicas of N atoms (Langevin, temperatures 1.2 .. 2.0 geometric) with replica
exchange every K steps (pycumd.tempering), against the replicas run one after another.

    pycumd bench batch                                   # 1,024 x 1,000 and 64 x 4,000 (the issue's sizes)
    pycumd bench batch --case independent --systems 64 --atoms 1000 --steps 200
    pycumd bench batch --engine both                     # the batched engine beside the member engine

--engine: members (default: each member runs its own kernels, one set of launches per system
per step), batched (pycumd.batch_engine: all systems in shared arrays, one launch per kernel per
step for the whole batch; it runs in deterministic mode, so its members are built with
deterministic=True), or both (the two in the same process, both deterministic, so that they
integrate the same trajectories; the ratio batched_over_members is printed).  --deterministic
builds the member engine's systems in deterministic mode too when it runs alone.  The batched engine
on the GPU runs double and single precision.

--batch-step: how the batched engine's GPU steps are driven: graph (pycumd.batch_graph: each
stretch between two stops one CUDA graph launch, the rebuild decisions and builds on the device),
host (one launch per kernel per step, the rebuild flags read every step), auto (default: the graph
where it runs, so on the GPU; host on the CPU), or both (graph, then host, in the same process: an
A/B of the two, recorded as batched_engine_atom_steps_per_s and batched_host_engine_atom_steps_per_s,
and graph_over_host).  The record's batched_step says which path the batched run took.  Each engine's
timed run includes the run's start (every member's set-up, as LAMMPS' setup: its own list build,
forces and finiteness check, one member after another); <name>_engine_run_start_s is the time of a
run of no step, <name>_engine_seconds the timed run's.

--batch-lists: the batched engine's GPU list kernel: by-id (every atom of the target's system in id
order: no sort), stencil (the cells of the stencil, then each row sorted by id), or auto (default: by
id up to 2,048 atoms a system, pycumd.batch_engine.lists_by_id); the same rows.  The record's
<name>_engine_lists_by_id counts the systems listed by id.

    pycumd bench batch --case independent --engine batched --batch-step both
"""

from __future__ import annotations

import json
import time

import numpy as np

from pycumd.bench import argument_parser, default_out_dir

#: atoms -> fcc cells (4 atoms per cell) of the sizes the issue names
CELLS = {1000: (5, 5, 10), 4000: (10, 10, 10), 32000: (20, 20, 20), 256000: (40, 40, 40),
         1_024_000: (80, 80, 40), 500: (5, 5, 5), 108: (3, 3, 3)}


def _cells(n_atoms: int):
    if n_atoms in CELLS:
        return CELLS[n_atoms]
    side = round((n_atoms / 4) ** (1 / 3))
    if 4 * side**3 != n_atoms:
        raise ValueError(f"--atoms {n_atoms}: give 4 k^3 atoms or one of {sorted(CELLS)}")
    return (side, side, side)


#: the in.lj liquid of every system (lj units): fcc density, velocity temperature, LJ cutoff (truncated,
#: epsilon 1, sigma 1, mass 1), neighbour skin, time step (VelocityVerlet's lj default), and the velocity
#: seed of system 0 (system i has SEED0 + i).  benchmarks/peers/batch_replicas.py reads these.
DENSITY, TEMPERATURE, CUTOFF, SKIN, DT, SEED0 = 0.8442, 1.44, 2.5, 0.3, 0.005, 1000


def member_system(n_atoms: int, seed: int):
    """The start of one system of the batch: ``n_atoms`` atoms of fcc (``CELLS``) at DENSITY, velocities
    at TEMPERATURE from ``seed`` (LAMMPS ``loop geom``); a :class:`pycumd.System`."""
    from pycumd import create_velocities, lattice_system

    system = lattice_system("fcc", _cells(n_atoms), density=DENSITY)
    create_velocities(system, TEMPERATURE, seed)
    return system


def _member(n_atoms: int, seed: int, device: str, precision: str, integrator=None, deterministic: bool = False):
    from pycumd import LennardJones, Simulation

    pot = LennardJones(CUTOFF).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    return Simulation(member_system(n_atoms, seed), pot, integrator, skin=SKIN, device=device, precision=precision,
                      deterministic=deterministic)


#: the engines of --engine, in the order they run, and the words the table prints
ENGINES = {"members": ("members",), "batched": ("batched",), "both": ("batched", "members")}
ENGINE_WORDS = {"members": "members (one set of launches per system)",
                "batched": "batched (one launch per kernel for the whole batch)"}
#: --batch-step: the batched engine's step drivers timed, in order (the first is recorded as "batched")
BATCH_STEPS = {"auto": ("auto",), "graph": ("graph",), "host": ("host",), "both": ("graph", "host")}


def _timed_engines(engines, batch_step: str) -> list:
    """``(record name, Ensemble batch, batch_step)`` of each timed run: the members, and the batched
    engine with each step driver of ``batch_step`` (the first named "batched", the others
    "batched_<driver>")."""
    runs = []
    for engine in engines:
        if engine != "batched":
            runs.append((engine, engine, "auto"))
            continue
        drivers = BATCH_STEPS[batch_step]
        runs += [("batched" if k == 0 else f"batched_{d}", "batched", d) for k, d in enumerate(drivers)]
    return runs


#: --batch-lists: which list kernel the batched engine's GPU builds use (None: its own choice, lists_by_id)
BATCH_LISTS = {"auto": None, "by-id": True, "stencil": False}


def _engine_rates(out: dict, engines, make_members, steps: int, warmup: int, atoms_total: int,
                  batch_step: str = "auto", batch_lists: str = "auto", **ensemble) -> list:
    """Time an Ensemble of ``make_members()`` with each engine (and the batched engine with each
    step driver of ``batch_step``); record ``<name>_engine_atom_steps_per_s`` (and
    ``batch_atom_steps_per_s``, the first run's) in ``out``, and ``batched_step``, the driver the
    batched run took; return the last members built."""
    from pycumd.ensemble import Ensemble

    members = None
    for name, engine, driver in _timed_engines(engines, batch_step):
        members = make_members()
        sync = members[0].backend.synchronize
        extra = {key: (value() if callable(value) else value) for key, value in ensemble.items()}
        ens = Ensemble(members, verbose=False, check_every=0, batch=engine, batch_step=driver, **extra)
        if ens.engine is not None and ens.engine.gpu and BATCH_LISTS[batch_lists] is not None:
            ens.engine.use_lists_by_id(BATCH_LISTS[batch_lists])
        if ens.engine is not None and ens.engine.gpu:
            out[f"{name}_engine_lists_by_id"] = int(ens.engine.by_id.sum())
        seconds = _timed(ens.run, steps, warmup, sync)
        out[f"{name}_engine_atom_steps_per_s"] = atoms_total * steps / seconds
        # what of those seconds is the run's start (each member's set-up: its own list build, forces and
        # finiteness check, as LAMMPS' setup; and the reports): a run of no step
        out[f"{name}_engine_run_start_s"] = _timed(ens.run, 0, 0, sync)
        out[f"{name}_engine_seconds"] = seconds
        out.setdefault("batch_atom_steps_per_s", out[f"{name}_engine_atom_steps_per_s"])
        if name == "batched":
            out["batched_step"] = ens.engine.stepped
        if "exchange" in extra:
            out[f"{name}_engine_acceptance"] = [float(a) for a in extra["exchange"].acceptance_ratios()]
        ens = None
    if "members" in engines and "batched" in engines:
        out["batched_over_members"] = (out["batched_engine_atom_steps_per_s"]
                                       / out["members_engine_atom_steps_per_s"])
    if "batched_host_engine_atom_steps_per_s" in out:
        out["graph_over_host"] = out["batched_engine_atom_steps_per_s"] / out["batched_host_engine_atom_steps_per_s"]
    return members


def _timed(run, steps: int, warmup: int, sync) -> float:
    """Seconds of ``run(steps)`` after ``run(warmup)`` (compilation, first captures)."""
    if warmup:
        run(warmup)
    sync()
    t0 = time.perf_counter()
    run(steps)
    sync()
    return time.perf_counter() - t0


def independent(systems: int, atoms: int, steps: int, warmup: int, device: str, precision: str,
                baselines=("one_big", "one_at_a_time"), engine: str = "members", deterministic: bool = False,
                batch_step: str = "auto", batch_lists: str = "auto") -> dict:
    engines = ENGINES[engine]
    deterministic = deterministic or "batched" in engines

    def make_members():
        return [_member(atoms, SEED0 + i, device, precision, deterministic=deterministic) for i in range(systems)]
    out = {"case": "independent", "systems": systems, "atoms": atoms, "steps": steps,
           "engine": " and ".join(ENGINE_WORDS[e] for e in engines), "deterministic": deterministic}
    members = _engine_rates(out, engines, make_members, steps, warmup, systems * atoms, batch_step, batch_lists)
    out.update(device=members[0].backend.device_name, precision=members[0].precision.name)
    sync = members[0].backend.synchronize
    if "one_at_a_time" in baselines:
        members = make_members()

        def one_by_one(n):
            for m in members:
                m.run(n)
        seconds = _timed(one_by_one, steps, 0, sync)
        out["one_at_a_time_atom_steps_per_s"] = systems * atoms * steps / seconds
    members = None                        # freed before the big baseline is made
    if "one_big" in baselines:
        try:
            big = _member(systems * atoms, 87287, device, precision, deterministic=deterministic)
        except ValueError:                    # S x N atoms not a block of fcc cells: no such baseline
            big = None
        if big is not None:
            seconds = _timed(big.run, steps, warmup, sync)
            out["one_big_atom_steps_per_s"] = systems * atoms * steps / seconds
            out["batch_over_one_big"] = out["batch_atom_steps_per_s"] / out["one_big_atom_steps_per_s"]
    return out


def tempering(replicas: int, atoms: int, steps: int, warmup: int, every: int, device: str, precision: str,
              engine: str = "members", deterministic: bool = False, batch_step: str = "auto",
              batch_lists: str = "auto") -> dict:
    from pycumd import VelocityVerlet
    from pycumd.integrators import Langevin
    from pycumd.tempering import ReplicaExchange

    temperatures = list(np.geomspace(1.2, 2.0, replicas))
    engines = ENGINES[engine]
    deterministic = deterministic or "batched" in engines

    def build():
        return [_member(atoms, SEED0 + i, device, precision, VelocityVerlet(DT, Langevin(t, 0.5, 77 + i)),
                        deterministic=deterministic)
                for i, t in enumerate(temperatures)]
    out = {"case": "tempering", "replicas": replicas, "atoms": atoms, "steps": steps, "every": every,
           "engine": " and ".join(ENGINE_WORDS[e] for e in engines), "deterministic": deterministic}
    members = _engine_rates(out, engines, build, steps, warmup, replicas * atoms, batch_step, batch_lists,
                            exchange=lambda: ReplicaExchange(temperatures, every=every, seed=5))
    out.update(device=members[0].backend.device_name, precision=members[0].precision.name)
    out["acceptance"] = out[f"{engines[0]}_engine_acceptance"]
    sync = members[0].backend.synchronize
    alone = build()

    def one_by_one(n):
        for m in alone:
            m.run(n)
    seconds = _timed(one_by_one, steps, warmup, sync)
    out["one_at_a_time_atom_steps_per_s"] = replicas * atoms * steps / seconds
    out["batch_over_one_at_a_time"] = out["batch_atom_steps_per_s"] / out["one_at_a_time_atom_steps_per_s"]
    return out


def main(argv=None) -> int:
    p = argument_parser("batch", __doc__)
    p.add_argument("--case", choices=("independent", "tempering", "both"), default="both")
    p.add_argument("--systems", type=int, default=1024, help="independent: systems (default 1024)")
    p.add_argument("--atoms", type=int, default=1000, help="independent: atoms per system (default 1000)")
    p.add_argument("--replicas", type=int, default=64, help="tempering: replicas (default 64)")
    p.add_argument("--replica-atoms", type=int, default=4000, help="tempering: atoms per replica (default 4000)")
    p.add_argument("--every", type=int, default=100, help="tempering: steps between exchange attempts")
    p.add_argument("--steps", type=int, default=500)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--device", default="auto")
    p.add_argument("--precision", default="single")
    p.add_argument("--no-big", action="store_true", help="independent: skip the one-big-system baseline")
    p.add_argument("--no-alone", action="store_true",
                   help="independent: skip the systems-one-after-another baseline (its time grows with --steps "
                        "times --systems)")
    p.add_argument("--engine", choices=tuple(ENGINES), default="members",
                   help="members (each system its own kernels), batched (one launch per kernel for the whole "
                        "batch; deterministic mode), or both in the same process (default members)")
    p.add_argument("--batch-step", choices=tuple(BATCH_STEPS), default="auto",
                   help="the batched engine's GPU steps: graph (one CUDA graph launch per stretch), host (one launch "
                        "per kernel per step), auto (default: graph on the GPU), or both (graph then host: an A/B)")
    p.add_argument("--batch-lists", choices=tuple(BATCH_LISTS), default="auto",
                   help="the batched engine's GPU list kernel: by-id (every atom of the system in id order), "
                        "stencil (the cells' stencil, rows sorted by id), auto (default: by id up to 2,048 atoms)")
    p.add_argument("--deterministic", action="store_true",
                   help="build the systems in deterministic mode (always so with the batched engine)")
    p.add_argument("--out-dir", default=None)
    args = p.parse_args(argv)
    results = []
    if args.case in ("independent", "both"):
        baselines = tuple(b for b, skip in (("one_big", args.no_big), ("one_at_a_time", args.no_alone)) if not skip)
        results.append(independent(args.systems, args.atoms, args.steps, args.warmup, args.device, args.precision,
                                   baselines, args.engine, args.deterministic, args.batch_step, args.batch_lists))
    if args.case in ("tempering", "both"):
        results.append(tempering(args.replicas, args.replica_atoms, args.steps, args.warmup, args.every,
                                 args.device, args.precision, args.engine, args.deterministic, args.batch_step,
                                 args.batch_lists))
    for r in results:
        stepped = f" ({r['batched_step']}-stepped)" if "batched_step" in r else ""
        print(f"{r['case']}: {r.get('systems', r.get('replicas'))} x {r['atoms']} atoms, {r['steps']} steps, "
              f"{r['device']}, {r['precision']}, engine: {r['engine']}{stepped}")
        for key, value in r.items():
            if key.endswith("_per_s"):
                print(f"  {key:<34} {value:.4g}")
            elif key.endswith("_engine_run_start_s") or key.endswith("_engine_seconds"):
                print(f"  {key:<34} {value:.4g}")
            elif key.startswith("batch_over") or key in ("batched_over_members", "graph_over_host"):
                print(f"  {key:<34} {value:.3f}")
        if "acceptance" in r:
            print(f"  acceptance per pair: {' '.join(f'{a:.2f}' for a in r['acceptance'])}")
    out_dir = default_out_dir("batch") if args.out_dir is None else args.out_dir
    from pathlib import Path

    Path(out_dir).mkdir(parents=True, exist_ok=True)
    (Path(out_dir) / "batch.json").write_text(json.dumps(results, indent=1))
    print(f"results: {Path(out_dir) / 'batch.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
