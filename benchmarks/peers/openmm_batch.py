"""OpenMM running the replicas of ``pycumd bench batch`` one after another (issue 38's peer: ">= 50x OpenMM
running the replicas one context after another, and with several contexts in threads, if faster").

The replicas are the bench's own (``batch_replicas.py``: R systems of N atoms of the in.lj liquid, the same
positions, box and velocities as pycumd integrates), each an OpenMM System as ``openmm_lj.py`` builds it:
LJ sigma 1, epsilon 1, mass 1 (``NonbondedForce``, charges 0, ``CutoffPeriodic`` at 2.5, no switching
function, no dispersion correction: LAMMPS' truncated lj/cut), ``VerletIntegrator(0.005)`` (NVE), the
bench's orthorhombic box; OpenMM's units (nm, ps, amu, kJ/mol) read as the reduced LJ units.

All replicas share N, box and parameters, so one Context integrates any of them: ``--threads 1`` is one
Context that takes the replicas one after another (``setPositions``, ``setVelocities``, ``step(steps)``,
``getState(getEnergy=True)``, which waits for the GPU); ``--threads K`` is K Contexts on the same GPU, each
driven by its own Python thread and taking every K-th replica.  Building a Context (kernel compilation,
about a second) is done once per Context and not timed, as pycumd's set-up is not: the timed figure is the
best case of running the replicas one after another.  The clock runs from the first replica's
``setPositions`` to the last replica's ``getState``; each Context first runs ``--warmup`` untimed steps of
replica 0.  ``atom_steps_per_s`` is R N steps / that time.  ``--threads 1 4`` measures both.  With
``--max-seconds S`` a probe (20 steps of replica 0) decides how many of the R replicas fit in S seconds
one after another, and only those run (each for all its steps; the aggregate rate of replicas run one
after another does not depend on how many run); the record's ``systems`` is the count that ran,
``systems_requested`` the R asked for.

    python benchmarks/peers/openmm_batch.py --systems 1024 --atoms 1000 --threads 1 4 --replicas-file r.npz --json b.jsonl

Each (R, precision, threads) runs in a child process: a failure becomes a record with "error".  By default
the sizes are tried in the order given until one succeeds for each (precision, threads) (``--every-size``
runs them all).  Without OpenMM or its platform the script prints why, appends an "error" record to
``--json``, and exits 0.  Record: ``engine`` "openmm", ``case`` "independent", ``systems``, ``atoms``,
``threads``, ``steps``, ``steps_per_s`` (steps of every replica per second), ``atom_steps_per_s``,
``precision``, ``device``, ``version``; per atom and as means over the replicas, the potential energy at
step 0 (``PE_per_atom_0``, untimed: pycumd's step-0 energy, the check that the description is the bench's)
and the total energy at the end of each replica's run (OpenMM's leapfrog kinetic energy), as a sanity check.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time

import numpy as np

from common import gpu_name, openmm_with_platform, run_child, write_record  # noqa: E402 (same folder)

PROBE = 20         # steps of the rate probe for --max-seconds


def assignment(systems: int, threads: int) -> list:
    """The replicas thread k runs, in order: k, k + K, k + 2K, ... (every replica exactly once)."""
    if threads < 1:
        raise ValueError(f"--threads must be positive, got {threads}")
    return [list(range(k, systems, threads)) for k in range(min(threads, systems))]


def error_record(systems: int, atoms: int, threads: int, precision: str, steps: int, error: str,
                 device=None, version=None, platform=None) -> dict:
    return {"engine": "openmm", "case": "independent", "systems": systems, "atoms": atoms, "N": systems * atoms,
            "threads": threads, "precision": precision, "steps": steps, "steps_per_s": None,
            "atom_steps_per_s": None, "device": device, "version": version, "platform": platform,
            "error": error[-2000:]}


def build_system(openmm, rep):
    """One replica's OpenMM System (every replica's: they share N, box and parameters)."""
    system = openmm.System()
    bx, by, bz = (float(b) for b in rep.box)
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(bx, 0, 0), openmm.Vec3(0, by, 0), openmm.Vec3(0, 0, bz))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(rep.cutoff)
    nb.setUseSwitchingFunction(False)
    nb.setUseDispersionCorrection(False)
    nb.setReactionFieldDielectric(1.0)   # charges are 0, so reaction field has nothing to act on
    for m in rep.masses:
        system.addParticle(float(m))
        nb.addParticle(0.0, 1.0, 1.0)
    system.addForce(nb)
    return system


def measure(systems: int, atoms: int, replicas_file: str | None, threads: int, precision: str, steps: int,
            warmup: int, platform_name: str, max_seconds: float | None = None) -> dict:
    import openmm
    from openmm import unit

    import batch_replicas

    rep = batch_replicas.get(systems, atoms, replicas_file)
    system = build_system(openmm, rep)
    platform = openmm.Platform.getPlatformByName(platform_name)
    props = {"Precision": precision} if platform_name in ("CUDA", "OpenCL", "HIP") else {}
    kj = unit.kilojoule_per_mole

    def total(state):
        return (state.getPotentialEnergy().value_in_unit(kj) + state.getKineticEnergy().value_in_unit(kj)) / atoms

    t_setup = time.perf_counter()
    contexts = []
    for _ in range(min(threads, systems)):
        integrator = openmm.VerletIntegrator(rep.dt)
        context = openmm.Context(system, integrator, platform, props)
        context.setPositions(rep.positions[0])
        context.setVelocities(rep.velocities[0])
        integrator.step(warmup)
        context.getState(getEnergy=True)
        contexts.append((context, integrator))
    setup_s = time.perf_counter() - t_setup
    context = contexts[0][0]
    requested = systems
    if max_seconds:                      # fewer replicas (each still runs all its steps) to keep to the time
        t0 = time.perf_counter()
        contexts[0][1].step(PROBE)
        context.getState(getEnergy=True)
        per_replica = steps * (time.perf_counter() - t0) / PROBE
        systems = max(min(threads, systems), min(systems, int(max_seconds / per_replica)))
        if systems < requested:
            print(f"openmm_batch: {per_replica:.3f} s a replica (probe): {systems} of the {requested} replicas "
                  f"fit in --max-seconds {max_seconds:g}", flush=True)
    pe_zero = np.empty(systems)          # every replica's start, untimed: the check of the description
    for i in range(systems):
        context.setPositions(rep.positions[i])
        pe_zero[i] = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(kj) / atoms

    plan = assignment(systems, threads)
    e_end = np.full(systems, np.nan)
    failures = []

    def work(k):
        context, integrator = contexts[k]
        try:
            for i in plan[k]:
                context.setPositions(rep.positions[i])
                context.setVelocities(rep.velocities[i])
                integrator.step(steps)
                e_end[i] = total(context.getState(getEnergy=True))
        except Exception as e:            # reported by the parent thread, as a failed run
            failures.append(f"thread {k}: {type(e).__name__}: {e}")

    t0 = time.perf_counter()
    if len(plan) == 1:
        work(0)
    else:
        pool = [threading.Thread(target=work, args=(k,)) for k in range(len(plan))]
        for t in pool:
            t.start()
        for t in pool:
            t.join()
    seconds = time.perf_counter() - t0
    if failures:
        raise RuntimeError("; ".join(failures))
    if not np.isfinite(e_end).all():
        raise RuntimeError(f"energy not finite in {int((~np.isfinite(e_end)).sum())} replicas")

    names = platform.getPropertyNames()
    device = (platform.getPropertyValue(context, "DeviceName") if "DeviceName" in names else
              (gpu_name() or platform_name) if platform_name == "CUDA" else platform_name)
    prec = platform.getPropertyValue(context, "Precision") if "Precision" in names else precision
    return {"engine": "openmm", "case": "independent", "systems": systems, "atoms": atoms, "N": systems * atoms,
            "systems_requested": requested, "threads": len(plan), "precision": prec, "steps": steps, "warmup": warmup,
            "steps_per_s": steps / seconds, "atom_steps_per_s": systems * atoms * steps / seconds,
            "seconds": seconds, "device": device, "version": openmm.__version__, "platform": platform_name,
            "box": [float(b) for b in rep.box], "r_cutoff": rep.cutoff, "dt": rep.dt,
            "setup_s": round(setup_s, 2), "PE_per_atom_0": float(pe_zero.mean()),
            "E_per_atom_end_mean": float(e_end.mean())}


def child_main(args) -> int:
    r = measure(args.systems[0], args.atoms, args.replicas_file, args.threads[0], args.precision[0], args.steps,
                args.warmup, args.platform, args.max_seconds)
    write_record(args._result, r, "w")
    return 0


def run_one(systems: int, threads: int, precision: str, args) -> dict:
    child_args = ["--systems", str(systems), "--atoms", str(args.atoms), "--threads", str(threads),
                  "--precision", precision, "--steps", str(args.steps), "--warmup", str(args.warmup),
                  "--platform", args.platform]
    if args.replicas_file:
        child_args += ["--replicas-file", args.replicas_file]
    if args.max_seconds:
        child_args += ["--max-seconds", str(args.max_seconds)]
    rec, err, _ = run_child(__file__, child_args, args.timeout)
    return rec if rec is not None else error_record(systems, args.atoms, threads, precision, args.steps, err,
                                                     args._device, args._version, args.platform)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", type=int, nargs="+", default=[1024, 256, 64],
                    help="replica counts R, tried in this order (default 1024 256 64)")
    ap.add_argument("--atoms", type=int, default=1000, help="atoms per replica (default 1000)")
    ap.add_argument("--replicas-file", help="replicas written by batch_replicas.py (else built here from pycumd)")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 4],
                    help="Contexts stepped from as many threads (1: one Context, replicas one after another)")
    ap.add_argument("--precision", nargs="+", default=["single"], choices=["single", "mixed", "double"])
    ap.add_argument("--platform", default="CUDA", help="OpenMM platform: CUDA (default), OpenCL, CPU, Reference")
    ap.add_argument("--steps", type=int, default=500, help="timed steps of each replica (default 500, as the bench)")
    ap.add_argument("--warmup", type=int, default=100, help="untimed steps of each Context first (default 100)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="run only as many of the R replicas (each for all its steps) as a probe says fit in this "
                         "many seconds; the record keeps systems_requested")
    ap.add_argument("--every-size", action="store_true", help="run every R (default: stop at the first success)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed for each run")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return child_main(args)

    reasons = []
    openmm = openmm_with_platform("openmm_batch", args.platform, reasons)
    if openmm is None:
        for threads in args.threads:
            for precision in args.precision:
                write_record(args.json, error_record(args.systems[0], args.atoms, threads, precision, args.steps,
                                                     reasons[0], platform=args.platform))
        return 0
    args._version = openmm.__version__
    args._device = args.platform
    if args.platform == "CUDA":
        args._device = gpu_name()
        if args._device is None:
            text = "openmm_batch: no CUDA GPU found (nvidia-smi); nothing measured."
            print(text)
            for threads in args.threads:
                for precision in args.precision:
                    write_record(args.json, error_record(args.systems[0], args.atoms, threads, precision,
                                                         args.steps, text, None, args._version, args.platform))
            return 0

    print(f"OpenMM {openmm.__version__}, platform {args.platform}, device {args._device}", flush=True)
    print(f"{'replicas':>8} {'atoms':>6} {'threads':>7} {'precision':>9} {'steps/s':>9} {'atom-steps/s':>13}  note",
          flush=True)
    for precision in args.precision:
        for threads in args.threads:
            for systems in args.systems:
                r = run_one(systems, threads, precision, args)
                if "error" in r:
                    print(f"{systems:>8} {args.atoms:>6} {threads:>7} {precision:>9} {'-':>9} {'-':>13}  "
                          f"ERROR {r['error']}", flush=True)
                else:
                    print(f"{systems:>8} {args.atoms:>6} {r['threads']:>7} {r['precision']:>9} "
                          f"{r['steps_per_s']:>9.2f} {r['atom_steps_per_s']:>13.3e}  PE/N at step 0 "
                          f"{r['PE_per_atom_0']:.4f}, E/N at the end {r['E_per_atom_end_mean']:.4f} (means)"
                          f"  ({r['seconds']:.1f} s; set-up {r['setup_s']} s)", flush=True)
                write_record(args.json, r)
                if "error" not in r and not args.every_size:
                    break
    return 0


if __name__ == "__main__":
    sys.exit(main())
