"""OpenMM (PME) on pycumd's charged benchmark (`pycumd bench charged`): molten NaCl, Tosi-Fumi
Born-Mayer-Huggins + long-range Coulomb, NVE, at the same measured RMS Coulomb force error.

    pycumd bench charged --ions 100000 --precision single mixed --state-dir /tmp/charged --json pycumd.jsonl
    python benchmarks/peers/openmm_pme.py --state /tmp/charged/nacl_97336.npz --match pycumd.jsonl \
        --precision single mixed --json openmm.jsonl

The state file (written by `pycumd bench charged --state-dir`) holds the positions, velocities, box,
types, charges and masses of the pycumd run's initial state, the potential's parameters, the ions whose
force error is measured and their reference Coulomb forces (a tight Ewald sum, see
src/pycumd/bench/charged.py).  The OpenMM system, in its units (nm, ps, amu, kJ/mol; 1 eV =
96.48533212 kJ/mol):

* CustomNonbondedForce ``A exp((sigma - r)/rho) - C/r^6 + D/r^8`` with A, sigma, C, D per type pair
  (Discrete2DFunction tables), CutoffPeriodic at the benchmark's cutoff, no switch, no long-range
  correction (LAMMPS' born: truncated, not shifted), force group 0;
* NonbondedForce PME at the same cutoff with the charges (sigma 1, epsilon 0: no LJ), no dispersion
  correction, force group 1;
* VerletIntegrator(dt), platform CUDA with Precision single / mixed (--platform CPU or Reference for a
  test without a GPU).

ewaldErrorTolerance: chosen so that OpenMM's measured error equals pycumd's.  The target is the
``force_error_rel`` of the pycumd record of the same N and precision in --match (or --target-error).
For each tolerance tried, a Context on the initial state gives the Coulomb forces (group 1) on the
state file's ions; their RMS |F - F_ref| (in eV/A after dividing out OpenMM's Coulomb constant
against LAMMPS' metal 14.399645 eV A, measured on a two-charge system, so that only the solver's
error counts) divided by 14.399645 eV/A is the error in pycumd's (LAMMPS') definition.  The search
starts at 10 x the target (or, when --json already holds an OpenMM record of the precision at another
size, at its tolerance scaled by the ratio of the targets), steps in log-log by the last two points (at most --max-trials contexts),
and keeps the largest tolerance whose error is within 10% above the target (else the most accurate
one tried); every trial is in the record's ``calibration``.  --tolerance T skips the search.

Timing as openmm_lj.py: a warm-up batch, then the timed batch of --steps, each ended by
getState(getEnergy=True).  One child process per (state, precision).  Exits with status 0 and a
message if OpenMM or (for --platform CUDA) a CUDA device is missing.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np

from common import gpu_name, openmm_with_platform, pycumd_value, run_child, write_record  # (same folder)

EV = 96.48533212331002          # kJ/mol per eV
NM = 0.1                         # nm per A
#: relative error above the target still taken as equal
SLACK = 1.10


def load_state(path) -> dict:
    """The arrays and parameters of a `pycumd bench charged --state-dir` file."""
    with np.load(path) as z:
        out = {k: z[k] for k in z.files if k != "params"}
        out["params"] = json.loads(str(z["params"]))
    return out


def coulomb_constant(platform_name: str = "Reference") -> float:
    """OpenMM's 1/(4 pi eps0) in kJ/mol nm / e^2: minus the energy of +1 and -1 e 1 nm apart."""
    import openmm

    system = openmm.System()
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.NoCutoff)
    for q in (1.0, -1.0):
        system.addParticle(1.0)
        nb.addParticle(q, 1.0, 0.0)
    system.addForce(nb)
    context = openmm.Context(system, openmm.VerletIntegrator(0.001), openmm.Platform.getPlatformByName(platform_name))
    context.setPositions([openmm.Vec3(0, 0, 0), openmm.Vec3(1.0, 0, 0)])
    energy = context.getState(getEnergy=True).getPotentialEnergy()._value
    return -energy


def build_system(st: dict, tolerance: float):
    """The OpenMM System of a state file (module docstring) with PME at ``tolerance``; (system, nonbonded)."""
    import openmm

    p = st["params"]
    n = len(st["charges"])
    box = np.asarray(st["box"]) * NM
    cutoff = p["cutoff"] * NM
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box[0], 0, 0), openmm.Vec3(0, box[1], 0),
                                        openmm.Vec3(0, 0, box[2]))
    masses, types = np.asarray(st["masses"]), np.asarray(st["types"])
    n_types = len(masses)
    for t in types:
        system.addParticle(float(masses[t]))
    tables = {name: np.zeros((n_types, n_types)) for name in "ASCD"}
    scale = {"A": EV, "S": NM, "C": EV * NM ** 6, "D": EV * NM ** 8}
    for i, j, a, sigma, c, d in p["tosi_fumi"]:
        for name, v in zip("ASCD", (a, sigma, c, d)):
            tables[name][i, j] = tables[name][j, i] = v * scale[name]
    born = openmm.CustomNonbondedForce("tA(t1,t2)*exp((tS(t1,t2)-r)/rho) - tC(t1,t2)/r^6 + tD(t1,t2)/r^8")
    born.addGlobalParameter("rho", p["rho"] * NM)
    for name in "ASCD":      # Discrete2DFunction: value (x, y) at x + n_types * y (symmetric here)
        born.addTabulatedFunction(f"t{name}", openmm.Discrete2DFunction(n_types, n_types,
                                                                          tables[name].T.ravel().tolist()))
    born.addPerParticleParameter("t")
    for t in types:
        born.addParticle([float(t)])
    born.setNonbondedMethod(openmm.CustomNonbondedForce.CutoffPeriodic)
    born.setCutoffDistance(cutoff)
    born.setUseSwitchingFunction(False)
    born.setUseLongRangeCorrection(False)
    born.setForceGroup(0)
    system.addForce(born)
    nb = openmm.NonbondedForce()
    nb.setNonbondedMethod(openmm.NonbondedForce.PME)
    nb.setCutoffDistance(cutoff)
    nb.setEwaldErrorTolerance(tolerance)
    nb.setUseDispersionCorrection(False)
    nb.setUseSwitchingFunction(False)
    for q in st["charges"]:
        nb.addParticle(float(q), 1.0, 0.0)
    nb.setForceGroup(1)
    system.addForce(nb)
    assert system.getNumParticles() == n
    return system, nb


def make_context(st: dict, tolerance: float, precision: str, platform_name: str):
    """(context, integrator, nonbonded) at ``tolerance`` on the state file's initial state."""
    import openmm

    system, nb = build_system(st, tolerance)
    integrator = openmm.VerletIntegrator(st["params"]["dt"])
    platform = openmm.Platform.getPlatformByName(platform_name)
    props = {"Precision": precision} if platform_name in ("CUDA", "OpenCL", "HIP") else {}
    context = openmm.Context(system, integrator, platform, props)
    context.setPositions(np.asarray(st["positions"]) * NM)
    context.setVelocities(np.asarray(st["velocities"]) * NM)
    return context, integrator, nb


def coulomb_error(context, st: dict, k_openmm: float) -> float:
    """RMS |F_coul - F_ref| over the state file's ions, relative to the two-charge force (module docstring)."""
    from openmm import unit

    f = context.getState(getForces=True, groups={1}).getForces(asNumpy=True)
    f = np.asarray(f.value_in_unit(unit.kilojoule_per_mole / unit.nanometer))[np.asarray(st["targets"])]
    qqrd2e = st["params"]["qqrd2e"]
    ratio = k_openmm / (qqrd2e * EV * NM)            # OpenMM's Coulomb constant / LAMMPS metal's
    f_ev = f / (EV / NM) / ratio
    diff = f_ev - np.asarray(st["reference_forces"])
    return float(np.sqrt((diff * diff).sum(axis=1).mean())) / qqrd2e


def pme_parameters(context, nb) -> dict:
    alpha, nx, ny, nz = nb.getPMEParametersInContext(context)
    return {"pme_alpha_per_nm": alpha, "mesh": [nx, ny, nz]}


def calibrate(st, target: float, precision: str, platform_name: str, k_openmm: float, max_trials: int,
              start: float | None = None):
    """The tolerance to run at and every trial [(tolerance, error_rel, alpha 1/nm, mesh)] (module docstring);
    the first trial at ``start`` if given."""
    trials = []
    tol = min(max(start if start else 10.0 * target, 1e-8), 0.1)
    for _ in range(max_trials):
        context, integrator, nb = make_context(st, tol, precision, platform_name)
        err = coulomb_error(context, st, k_openmm)
        pme = pme_parameters(context, nb)
        del context, integrator
        trials.append({"tolerance": tol, "error_rel": err, **pme})
        if target / SLACK <= err <= target * SLACK:
            break
        if len(trials) >= 2 and trials[-1]["error_rel"] != trials[-2]["error_rel"] \
                and trials[-1]["tolerance"] != trials[-2]["tolerance"]:
            a, b = trials[-2], trials[-1]
            slope = math.log(b["error_rel"] / a["error_rel"]) / math.log(b["tolerance"] / a["tolerance"])
            slope = min(max(slope, 0.3), 3.0)
        else:
            slope = 1.0
        new = tol * (target / err) ** (1.0 / slope)
        new = min(max(new, 1e-8), 0.1)
        if any(abs(math.log(new / t["tolerance"])) < 1e-3 for t in trials):
            break
        tol = new
    ok = [t for t in trials if t["error_rel"] <= target * SLACK]
    best = max(ok, key=lambda t: t["tolerance"]) if ok else min(trials, key=lambda t: t["error_rel"])
    return best["tolerance"], trials


def measure(path: str, precision: str, steps: int, warmup: int, platform_name: str, target: float | None,
            tolerance: float | None, max_trials: int, start: float | None = None) -> dict:
    import openmm
    from openmm import unit

    st = load_state(path)
    n = len(st["charges"])
    k_openmm = coulomb_constant()
    trials = []
    if tolerance is None:
        if target is None:
            raise ValueError("give --tolerance, --target-error or a --match record for this N and precision")
        tolerance, trials = calibrate(st, target, precision, platform_name, k_openmm, max_trials, start)
    t_setup = time.perf_counter()
    context, integrator, nb = make_context(st, tolerance, precision, platform_name)
    error = coulomb_error(context, st, k_openmm)
    setup_s = time.perf_counter() - t_setup
    integrator.step(warmup)
    s1 = context.getState(getEnergy=True)
    t0 = time.perf_counter()
    integrator.step(steps)
    s2 = context.getState(getEnergy=True)
    seconds = time.perf_counter() - t0

    def tot(s):       # eV per ion
        return (s.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
                + s.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole)) / EV / n

    platform = context.getPlatform()
    names = platform.getPropertyNames()
    device = platform.getPropertyValue(context, "DeviceName") if "DeviceName" in names else platform_name
    prec = platform.getPropertyValue(context, "Precision") if "Precision" in names else "double"
    p = st["params"]
    qqrd2e = p["qqrd2e"]
    return {"engine": "openmm", "code": "openmm", "system": p["system"], "device": device, "precision": prec,
            "N": n, "cells": round((n / 8) ** (1 / 3)), "steps": steps, "warmup": warmup, "seconds": seconds,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "version": openmm.__version__, "platform": platform_name, "cutoff": p["cutoff"], "dt": p["dt"],
            "kspace": "pme", "ewald_error_tolerance": tolerance, **pme_parameters(context, nb),
            "force_error_abs": error * qqrd2e, "force_error_rel": error, "target_error_rel": target,
            "error_atoms": int(len(st["targets"])), "calibration": trials,
            "coulomb_constant_ratio": k_openmm / (qqrd2e * EV * NM), "setup_s": round(setup_s, 2),
            "TotEng_start": tot(s1), "TotEng_end": tot(s2)}


def first_guess(path, precision: str, target: float):
    """The tolerance to try first: that of the last OpenMM record of ``precision`` in a JSON-lines file (another
    size), scaled by the ratio of the targets to its measured error; None without one."""
    if not path:
        return None
    guess = None
    try:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("engine") == "openmm" and r.get("precision") == precision and r.get("force_error_rel"):
                    guess = r["ewald_error_tolerance"] * target / r["force_error_rel"]
    except OSError:
        return None
    return guess


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--state", nargs="+", required=True, help="state files of pycumd bench charged --state-dir")
    ap.add_argument("--precision", nargs="+", default=["single", "mixed"], choices=["single", "mixed", "double"])
    ap.add_argument("--platform", default="CUDA", help="OpenMM platform: CUDA (default), OpenCL, CPU, Reference")
    ap.add_argument("--steps", type=int, default=500, help="timed steps")
    ap.add_argument("--warmup", type=int, default=100, help="warm-up steps")
    ap.add_argument("--match", default=None, help="pycumd's JSON lines: the target error per N and precision")
    ap.add_argument("--target-error", type=float, default=None, help="target relative error (without --match)")
    ap.add_argument("--tolerance", type=float, default=None, help="ewaldErrorTolerance (no calibration)")
    ap.add_argument("--max-trials", type=int, default=6, help="contexts tried in the calibration")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed for each run")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    ap.add_argument("--_start", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        r = measure(args.state[0], args.precision[0], args.steps, args.warmup, args.platform, args.target_error,
                    args.tolerance, args.max_trials, args._start)
        write_record(args._result, r, "w")
        return 0

    openmm = openmm_with_platform("openmm_pme", args.platform)
    if openmm is None:
        return 0
    device = args.platform
    if args.platform == "CUDA":
        device = gpu_name()
        if device is None:
            print("openmm_pme: no CUDA GPU found (nvidia-smi); nothing measured.")
            return 0
    print(f"OpenMM {openmm.__version__}, platform {args.platform}, device {device}", flush=True)
    print(f"{'N':>10} {'precision':>9} {'tolerance':>10} {'F err rel':>10} {'target':>10} {'steps/s':>9} "
          f"{'atom-steps/s':>13}", flush=True)
    for path in args.state:
        with np.load(path) as z:
            n = int(z["charges"].shape[0])
        for precision in args.precision:
            target = args.target_error if args.target_error is not None else pycumd_value(args.match, n, precision, "force_error_rel")
            child = ["--state", path, "--precision", precision, "--steps", str(args.steps), "--warmup",
                     str(args.warmup), "--platform", args.platform, "--max-trials", str(args.max_trials)]
            if target is not None:
                child += ["--target-error", repr(target)]
                guess = first_guess(args.json, precision, target)
                if guess:
                    child += ["--_start", repr(guess)]
            if args.tolerance is not None:
                child += ["--tolerance", repr(args.tolerance)]
            if target is None and args.tolerance is None:
                rec, err = None, f"no target error: no pycumd record of N={n} {precision} in --match"
            else:
                rec, err, _ = run_child(__file__, child, args.timeout)
            if rec is None:
                rec = {"engine": "openmm", "system": "nacl", "N": n, "cells": round((n / 8) ** (1 / 3)),
                       "precision": precision, "steps": args.steps, "steps_per_s": None, "atom_steps_per_s": None,
                       "device": device, "version": openmm.__version__, "platform": args.platform,
                       "target_error_rel": target, "error": (err or "")[-2000:]}
                print(f"{n:>10} {precision:>9} {'-':>10} {'-':>10} {'-':>10} {'-':>9} {'-':>13}  ERROR {rec['error']}",
                      flush=True)
            else:
                tgt = f"{target:.2e}" if target is not None else "-"
                print(f"{n:>10} {rec['precision']:>9} {rec['ewald_error_tolerance']:>10.3g} "
                      f"{rec['force_error_rel']:>10.2e} {tgt:>10} {rec['steps_per_s']:>9.1f} "
                      f"{rec['atom_steps_per_s']:>13.3e}", flush=True)
            write_record(args.json, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
