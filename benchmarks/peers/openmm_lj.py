"""OpenMM on the pycumd LJ benchmark: LAMMPS bench/in.lj scaled up.

fcc start at reduced density 0.8442 (a = (4/0.8442)^(1/3)), T 1.44 (random velocities, zero total
momentum, 3N-3 degrees of freedom), LJ sigma 1, epsilon 1, mass 1, cutoff 2.5 (truncated, no switch,
no dispersion correction), VerletIntegrator(0.005), NVE.  In OpenMM units (nm, ps, amu, kJ/mol) these
numbers are the reduced LJ units directly (tau = 1 ps).

The rate is whole steps between two step() batches, each ended by getState(getEnergy=True) (which
waits for the GPU); the timed batch follows a warm-up batch.

    python benchmarks/peers/openmm_lj.py --cells 20 63 --precision single mixed --steps 500 --json peers.jsonl

Each (cells, precision) runs in its own child process, so that an out-of-memory or a broken CUDA
context at one size is written as a JSON line with "error" and later sizes still run.
Exits with status 0 and a message if OpenMM or (for --platform CUDA) a CUDA device is missing.
"""

from __future__ import annotations

import argparse
import sys
import time


from common import (CUTOFF, DT, add_run_arguments, fcc_lattice, gpu_name, openmm_with_platform,  # noqa: E402
                    random_velocities, run_child, write_record)  # (same folder)


def measure(cells: int, precision: str, steps: int, warmup: int, platform_name: str,
            device_index: str | None = None) -> dict:
    import openmm
    from openmm import unit

    pos, box = fcc_lattice(cells)
    n = len(pos)
    vel = random_velocities(n)

    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box, 0, 0), openmm.Vec3(0, box, 0), openmm.Vec3(0, 0, box))
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.CutoffPeriodic)
    nb.setCutoffDistance(CUTOFF)
    nb.setUseSwitchingFunction(False)
    nb.setUseDispersionCorrection(False)
    nb.setReactionFieldDielectric(1.0)   # charges are 0, so reaction field has nothing to act on
    for _ in range(n):
        system.addParticle(1.0)
        nb.addParticle(0.0, 1.0, 1.0)
    system.addForce(nb)

    integrator = openmm.VerletIntegrator(DT)
    platform = openmm.Platform.getPlatformByName(platform_name)
    props = {}
    if platform_name in ("CUDA", "OpenCL", "HIP"):
        props["Precision"] = precision
        if device_index:
            props["DeviceIndex"] = device_index      # "0,1": one context over two GPUs
    t_setup = time.perf_counter()
    context = openmm.Context(system, integrator, platform, props)
    context.setPositions(pos)
    context.setVelocities(vel)
    e0 = context.getState(getEnergy=True)
    setup_s = time.perf_counter() - t_setup

    integrator.step(warmup)
    s1 = context.getState(getEnergy=True)
    t0 = time.perf_counter()
    integrator.step(steps)
    s2 = context.getState(getEnergy=True)
    seconds = time.perf_counter() - t0

    def tot(s):
        return (s.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
                + s.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole)) / n

    if platform_name == "CUDA":
        device = platform.getPropertyValue(context, "DeviceName") if "DeviceName" in platform.getPropertyNames() \
            else (gpu_name() or "CUDA")
    else:
        device = platform_name
    prec = platform.getPropertyValue(context, "Precision") if "Precision" in platform.getPropertyNames() else precision
    return {"engine": "openmm", "N": n, "cells": cells, "precision": prec, "steps": steps,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "device": device, "version": openmm.__version__, "platform": platform_name,
            "warmup": warmup, "setup_s": round(setup_s, 2), "device_index": device_index,
            "TotEng0": tot(e0), "TotEng_start": tot(s1), "TotEng_end": tot(s2)}


def child_main(args) -> int:
    r = measure(args.cells[0], args.precision[0], args.steps, args.warmup, args.platform, args.device_index)
    write_record(args._result, r, "w")
    return 0


def run_one(cells: int, precision: str, args) -> dict:
    """Run one size in a child process; a failure becomes a record with 'error'."""
    rec, err, _ = run_child(__file__, ["--cells", str(cells), "--precision", precision, "--steps", str(args.steps),
                                       "--warmup", str(args.warmup), "--platform", args.platform,
                                       *(["--device-index", args.device_index] if args.device_index else [])],
                              args.timeout)
    if rec is None:
        n = 4 * cells ** 3
        rec = {"engine": "openmm", "N": n, "cells": cells, "precision": precision, "steps": args.steps,
               "steps_per_s": None, "atom_steps_per_s": None, "device": args._device,
               "version": args._version, "platform": args.platform, "error": err[-2000:]}
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap)
    ap.add_argument("--precision", nargs="+", default=["single", "mixed"], choices=["single", "mixed", "double"])
    ap.add_argument("--platform", default="CUDA", help="OpenMM platform: CUDA (default), OpenCL, CPU, Reference")
    ap.add_argument("--device-index", default=None,
                    help="CUDA/OpenCL DeviceIndex property, e.g. '0,1' to run one context on two GPUs")
    args = ap.parse_args(argv)
    if args._child:
        return child_main(args)

    openmm = openmm_with_platform("openmm_lj", args.platform)
    if openmm is None:
        return 0
    args._version = openmm.__version__
    args._device = args.platform
    if args.platform == "CUDA":
        name = gpu_name()
        if name is None:
            print("openmm_lj: no CUDA GPU found (nvidia-smi); nothing measured.")
            return 0
        args._device = name

    print(f"OpenMM {openmm.__version__}, platform {args.platform}, device {args._device}", flush=True)
    print(f"{'N':>10} {'precision':>9} {'steps/s':>10} {'atom-steps/s':>13}  note", flush=True)
    for cells in args.cells:
        for precision in args.precision:
            r = run_one(cells, precision, args)
            if "error" in r:
                print(f"{r['N']:>10} {precision:>9} {'-':>10} {'-':>13}  ERROR {r['error']}", flush=True)
            else:
                drift = r["TotEng_end"] - r["TotEng_start"]
                print(f"{r['N']:>10} {r['precision']:>9} {r['steps_per_s']:>10.1f} {r['atom_steps_per_s']:>13.3e}"
                      f"  E/N {r['TotEng_start']:.4f} -> {r['TotEng_end']:.4f} (drift {drift:+.2e})", flush=True)
            write_record(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
