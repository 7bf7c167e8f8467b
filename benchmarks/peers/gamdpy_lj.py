"""gamdpy on the pycumd LJ benchmark: LAMMPS bench/in.lj scaled up.

The same fcc start as pycumd and the OpenMM script (reduced density 0.8442, a = (4/0.8442)^(1/3),
T 1.44 with zero momentum), with gamdpy's own LJ benchmark settings: LJ_12_6 (sigma 1, epsilon 1)
with a shifted-force cutoff at 2.5, neighbour-list skin 0.5, NVE with dt 0.005, its default compute
plan (pb, tp, UtilizeNIII, linked-list neighbour list above 8,000 particles), gamdpy's float32.

The rate is whole steps of one Simulation.integrate_self(steps) call after a warm-up call, each
ended by cuda.synchronize().  gamdpy is single precision only.

    python benchmarks/peers/gamdpy_lj.py --cells 20 63 --steps 500 --json peers.jsonl

--gridsync auto (the default) first runs gamdpy's default plan; if that fails (on CUDA 13 with
numba-cuda its grid-sync plan at N = 32,768 was seen to end in CUDA_ERROR_ILLEGAL_ADDRESS), it writes
that failure as a JSON line with "error" and runs the size again with gridsync=False.  Each run is
a child process, so a broken CUDA context or an out-of-memory leaves later sizes unharmed.

numpy >= 2.5 removed np.row_stack, which some numba-cuda versions still call; this script puts
np.row_stack = np.vstack back before importing numba (a compatibility shim, nothing else changed).
Exits with status 0 and a message if gamdpy, numba-cuda or a CUDA GPU is missing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time

import numpy as np

if not hasattr(np, "row_stack"):          # numpy 2.5 removed it; numba-cuda may still use it
    np.row_stack = np.vstack
os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")

from common import (CUTOFF, DT, add_run_arguments, fcc_lattice, package_versions, random_velocities,  # noqa: E402
                    run_child, write_record)  # (same folder)


def auto_max_nbs(n: int) -> int:
    """gamdpy's benchmark allocates 1000 neighbours a particle (an int32 N x 1001 list, on host and
    device); above ~5M particles that is > 20 GB, so use 256 there (about 95 neighbours lie within
    rc + skin = 3.0 at this density; overflow is checked after the run)."""
    return 1000 if n * 1001 * 4 < 20e9 else 256


def device_name(cuda) -> str:
    if os.getenv("NUMBA_ENABLE_CUDASIM") == "1":
        return "numba CUDA simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def versions() -> dict:
    return package_versions("gamdpy", "numba", "numba-cuda", "numpy")


def measure(cells: int, steps: int, warmup: int, gridsync: str, skin: float, max_nbs: int | None) -> dict:
    import gamdpy as gp
    from numba import cuda

    pos, box = fcc_lattice(cells)
    n = len(pos)
    conf = gp.Configuration(D=3)
    conf["r"] = (pos - box / 2).astype(np.float32)       # gamdpy boxes run from -L/2 to L/2
    conf.simbox = gp.Orthorhombic(3, [box, box, box])
    conf["m"] = 1.0
    conf["v"] = random_velocities(n).astype(np.float32)

    pair_func = gp.apply_shifted_force_cutoff(gp.LJ_12_6_sigma_epsilon)
    nbs = max_nbs or auto_max_nbs(n)
    pair_pot = gp.PairPotential(pair_func, params=[1.0, 1.0, CUTOFF], max_num_nbs=nbs)
    integrator = gp.integrators.NVE(dt=DT)

    plan = gp.get_default_compute_plan(conf)
    plan["skin"] = np.float32(skin)
    if gridsync == "off":
        plan["gridsync"] = False
    elif gridsync == "on":
        plan["gridsync"] = True
    plan_asked = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in plan.items()}
    print("PLAN " + json.dumps(plan_asked), flush=True)     # the parent reads this if the run fails

    t_setup = time.perf_counter()
    sim = gp.Simulation(conf, pair_pot, integrator, [], num_timeblocks=1, steps_per_timeblock=max(steps, 1),
                        storage="memory", compute_plan=plan, timing=False)
    setup_s = time.perf_counter() - t_setup

    def energy():
        s = sim.configuration.d_scalars.copy_to_host()
        sid = sim.configuration.sid
        return float((s[:, sid["U"]].astype(np.float64).sum() + s[:, sid["K"]].astype(np.float64).sum()) / n)

    sim.integrate_self(0.0, warmup)
    cuda.synchronize()
    e_start = energy()
    t0 = time.perf_counter()
    sim.integrate_self(warmup * DT, steps)
    cuda.synchronize()
    seconds = time.perf_counter() - t0
    e_end = energy()
    for inter in sim.interactions:
        inter.check_datastructure_validity()        # raises on neighbour-list overflow

    name = device_name(cuda)
    v = versions()
    plan_used = {k: (x.item() if isinstance(x, np.generic) else x) for k, x in sim.compute_plan.items()}
    return {"engine": "gamdpy", "N": n, "cells": cells, "precision": "single", "steps": steps,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "device": name, "version": v.get("gamdpy", gp.__version__),
            "numba_cuda": v.get("numba-cuda"), "numpy": v.get("numpy"),
            "gridsync_option": gridsync, "compute_plan": plan_used, "compute_plan_asked": plan_asked,
            "max_num_nbs": nbs, "warmup": warmup, "setup_s": round(setup_s, 2),
            "E_per_atom_start": e_start, "E_per_atom_end": e_end}


def child_main(args) -> int:
    r = measure(args.cells[0], args.steps, args.warmup, args.gridsync, args.skin, args.max_nbs)
    write_record(args._result, r, "w")
    return 0


def run_one(cells: int, gridsync: str, args) -> dict:
    """Run one size in a child process; a failure becomes a record with 'error'."""
    child_args = ["--cells", str(cells), "--steps", str(args.steps), "--warmup", str(args.warmup),
                  "--gridsync", gridsync, "--skin", str(args.skin)]
    if args.max_nbs:
        child_args += ["--max-nbs", str(args.max_nbs)]
    rec, err, out = run_child(__file__, child_args, args.timeout)
    if rec is None:
        rec = {"engine": "gamdpy", "N": 4 * cells ** 3, "cells": cells, "precision": "single",
               "steps": args.steps, "steps_per_s": None, "atom_steps_per_s": None, "device": args._device,
               "version": args._version, "gridsync_option": gridsync, "error": err[-2000:]}
        plans = re.findall(r"^PLAN (\{.*\})$", out, flags=re.M)
        if plans:
            rec["compute_plan_asked"] = json.loads(plans[-1])
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap)
    ap.add_argument("--precision", nargs="+", default=["single"], choices=["single"],
                    help="gamdpy runs in single precision only (accepted for symmetry with the other scripts)")
    ap.add_argument("--gridsync", default="auto", choices=["auto", "default", "on", "off"],
                    help="auto: default plan, on failure again with gridsync off; default: gamdpy's plan as is")
    ap.add_argument("--skin", type=float, default=0.5)
    ap.add_argument("--max-nbs", type=int, default=None, help="max_num_nbs (default 1000, 256 above ~5M atoms)")
    args = ap.parse_args(argv)
    if args._child:
        return child_main(args)

    try:
        import gamdpy
        from numba import cuda
    except Exception as e:                 # ImportError, or numba-cuda failing to load
        print(f"gamdpy_lj: gamdpy / numba-cuda cannot be imported ({type(e).__name__}: {e}); nothing measured.")
        return 0
    try:
        ok = cuda.is_available()
        name = device_name(cuda) if ok else None
    except Exception as e:
        ok, name = False, None
        print(f"gamdpy_lj: numba-cuda cannot open a device ({type(e).__name__}: {e})")
    if not ok:
        print("gamdpy_lj: no CUDA GPU usable through numba-cuda; nothing measured.")
        return 0
    args._device = name
    args._version = gamdpy.__version__
    try:
        cuda.close()                       # the children open their own contexts
    except Exception:
        pass
    print(f"gamdpy {gamdpy.__version__} ({versions()}), device {args._device}", flush=True)
    print(f"{'N':>10} {'gridsync':>8} {'steps/s':>10} {'atom-steps/s':>13}  note", flush=True)
    for cells in args.cells:
        first = "default" if args.gridsync == "auto" else args.gridsync
        tries = [first] + (["off"] if args.gridsync == "auto" else [])
        for gs in tries:
            r = run_one(cells, gs, args)
            if "error" in r:
                print(f"{r['N']:>10} {gs:>8} {'-':>10} {'-':>13}  ERROR {r['error']}", flush=True)
            else:
                plan = r["compute_plan"]
                print(f"{r['N']:>10} {str(plan['gridsync']):>8} {r['steps_per_s']:>10.1f} "
                      f"{r['atom_steps_per_s']:>13.3e}  plan {plan}  E/N {r['E_per_atom_start']:.4f} -> "
                      f"{r['E_per_atom_end']:.4f}", flush=True)
            write_record(args.json, r)
            if "error" not in r:
                break
            if not r.get("compute_plan_asked", {}).get("gridsync", True):
                break                      # the plan had no grid sync: nothing different to retry
    return 0


if __name__ == "__main__":
    sys.exit(main())
