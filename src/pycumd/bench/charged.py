"""Charged-melt throughput (issue 36, Targets > Speed): molten NaCl with Born-Mayer-Huggins (Tosi-Fumi)
short-range forces and PPPM long-range Coulomb, NVE; steps/s, atom-steps/s, the step's parts and the
measured RMS Coulomb force error, so that a peer (benchmarks/peers/openmm_pme.py) can be run at the
same measured error.

    pycumd bench charged --ions 100000 1000000 --precision single mixed --accuracy 1e-4
    pycumd bench charged --ions 100000 --state-dir /tmp/charged     # also the state file for OpenMM

The system: rock-salt cells (8 ions each; --ions is rounded to the nearest cells^3 * 8: 100,000 ->
97,336, 1,000,000 -> 1,000,000) at the melt's density 1.55 g/cm^3 (a = 6.30 A, as
examples/charged/nacl_melt.py), each ion displaced from its site by a Gaussian of --displacement A
per component (default 0.3, seed --seed) so that no state of the benchmark is a perfect lattice,
velocities of 1300 K (NumPy's generator, zero momentum, exactly 1300 K over 3N-3 degrees of freedom);
with --melt-steps M, that start run M untimed NVE steps (mixed on a GPU, double on the CPU) into a melt
(the stretched lattice disorders within a few hundred steps), whose positions and velocities are then
the benchmark's initial state.  Metal units, Tosi-Fumi born/coul/long with one cutoff --cutoff (default 9 A) for the Born and the
real-space Coulomb terms (truncated, no shift, no table: erfc exact), kspace_style pppm --accuracy
(order --order, default 5), neighbour skin --skin (default 1 A) checked every step, dt 2 fs, NVE
(velocity Verlet).  Each run does --warmup steps, then the timed --steps; set-up and compilation
are not timed.

The force error: on the initial state (before any step), the run's Coulomb force (real-space pass +
PPPM, in the run's precision) on --error-atoms ions chosen at random (all when fewer) against a
reference Ewald sum over the same state, computed once per size in float64 on --device:
g_ewald chosen so that the real-space erfc sum, cut at half the shortest box edge (minimum image,
every ion of the box within reach), has LAMMPS' estimated error --reference-accuracy (default 1e-9
relative), the k-space part LAMMPS' Ewald (pycumd.kspace.ewald) at that g and accuracy; the
real-space part is summed directly for the chosen ions only (their rows against all N ions).
Reported as force_error_abs = sqrt(mean over the chosen ions of |F - F_ref|^2) (eV/A) and
force_error_rel = that / the force between two unit charges 1 A apart (14.399645 eV/A), LAMMPS'
definition of the kspace accuracy, beside LAMMPS' own estimate estimated_error_rel.

The step split (seconds, each part timed alone on the final state, repeated; events on the GPU):
build_s one neighbour build, forces_s the whole force evaluation, pair_s the Born pass,
coul_real_s the real-space Coulomb pass, kspace_s PPPM, integrate_s both half steps;
kspace_fraction = kspace_s / the measured step time.

Output: --out-dir/charged.json (a list of records), and with --json FILE one JSON line per run
appended.  With --state-dir DIR: DIR/nacl_N.npz per size, the state and the reference that
benchmarks/peers/openmm_pme.py reads (positions, velocities, box, types, charges, masses, the
chosen ions and their reference forces, the potential's parameters).
"""

from __future__ import annotations

import json
import math
import os
import time

import numpy as np

from . import argument_parser, default_out_dir, timed_run, write_results

#: Na+ and Cl- types and masses (amu)
NA, CL = 0, 1
MASSES = (22.98977, 35.453)
#: Tosi-Fumi (LAMMPS pair_style born: E = A exp((sigma - r)/rho) - C/r^6 + D/r^8), eV and A:
#: (type i, type j) -> (A, sigma, C, D), rho the same for all pairs
TOSI_FUMI = {(NA, NA): (0.2637, 2.340, 1.0486, -0.4993), (NA, CL): (0.2110, 2.755, 6.9906, -8.6758),
             (CL, CL): (0.1582, 3.170, 72.402, -145.43)}
RHO = 0.317
LATTICE = 6.30            # A: 1.55 g/cm^3 (examples/charged/nacl_melt.py)
TEMPERATURE = 1300.0
DT = 0.002                # ps
CUTOFF = 9.0
SKIN = 1.0
DISPLACEMENT = 0.3        # A, per component
SEED = 2718
ERROR_ATOMS = 1000
REFERENCE_ACCURACY = 1e-9
#: LAMMPS' metal qqrd2e (eV A / e^2)
QQRD2E = 14.399645
FCC = np.array([[0.0, 0.0, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5], [0.5, 0.5, 0.0]])


def cells_for(ions: int) -> int:
    """Rock-salt cells per edge whose 8 cells^3 ions are nearest ``ions`` (at least 1)."""
    if ions < 1:
        raise ValueError(f"--ions must be >= 1, got {ions}")
    return max(1, round((ions / 8.0) ** (1.0 / 3.0)))


def build_state(cells: int, *, displacement: float = DISPLACEMENT, seed: int = SEED) -> dict:
    """The benchmark's initial state at ``cells`` rock-salt cells per edge (N = 8 cells^3).

    Returns a dict of host arrays: ``positions`` (N, 3) A in [0, L), ``velocities`` (N, 3) A/ps,
    ``box`` (3,) A, ``types`` (N,) int32 (0 Na, 1 Cl), ``charges`` (N,) e, ``masses`` (2,) amu.
    Na+ on the fcc sites, Cl- on them shifted by a/2 along x, each displaced by a Gaussian of
    ``displacement`` A per component; velocities by :func:`pycumd.system.create_velocities`
    (NumPy's generator, zero momentum, exactly 1300 K).
    """
    from ..box import Box
    from ..system import System, create_velocities

    if cells < 1:
        raise ValueError(f"cells must be >= 1, got {cells}")
    g = np.arange(cells, dtype=np.float64)
    ijk = np.stack(np.meshgrid(g, g, g, indexing="ij"), axis=-1).reshape(-1, 1, 3)
    sites = ((ijk + FCC[None]) * LATTICE).reshape(-1, 3)
    n = len(sites)
    length = cells * LATTICE
    rng = np.random.default_rng(seed)
    positions = np.concatenate([sites, sites + [0.5 * LATTICE, 0.0, 0.0]])
    positions = (positions + rng.normal(0.0, displacement, positions.shape)) % length
    positions[positions >= length] = 0.0          # a -0.0 rounded up to L
    types = np.repeat([NA, CL], n).astype(np.int32)
    charges = np.repeat([1.0, -1.0], n)
    system = System(Box([length] * 3), positions, np.array(MASSES), "metal", types=types, charges=charges)
    create_velocities(system, TEMPERATURE, seed, loop="local")
    return {"positions": positions, "velocities": np.array(system.velocities, dtype=np.float64),
            "box": np.full(3, length), "types": types, "charges": charges, "masses": np.array(MASSES)}


def make_system(state: dict):
    """The :class:`pycumd.system.System` of a :func:`build_state` dict."""
    from ..box import Box
    from ..system import System

    system = System(Box(list(state["box"])), state["positions"], state["masses"], "metal", types=state["types"],
                    charges=state["charges"])
    system.velocities[:] = state["velocities"]
    return system


def make_potential(accuracy: float, cutoff: float = CUTOFF, order: int = 5, style: str = "pppm"):
    """Tosi-Fumi born/coul/long with one cutoff (A) and ``kspace_style STYLE accuracy`` (PPPM of ``order``)."""
    from ..kspace import make_solver
    from ..potentials.born import Born
    from ..potentials.coul_long import CoulombLong

    born = Born(r_cut=cutoff)
    for (i, j), (a, sigma, c, d) in TOSI_FUMI.items():
        born = born.pair_coeff(i, j, A=a, rho=RHO, sigma=sigma, C=c, D=d)
    potential = CoulombLong(cutoff, short=born, kspace=make_solver(style, accuracy, **({"order": order} if style == "pppm" else {})))
    potential.table_bits = 0          # pycumd's erfc is exact: LAMMPS' estimate without the table's error
    return potential


def melt(state: dict, steps: int, *, accuracy: float, cutoff: float = CUTOFF, skin: float = SKIN, order: int = 5,
         device: str = "auto") -> dict:
    """``state`` after ``steps`` untimed NVE steps of the benchmark's model (in the device's default
    precision: mixed on a GPU, double on the CPU): the displaced rock-salt start, stretched to the melt's
    density, disorders within a few hundred steps (512 ions on the CPU: the RMS distance from the sites is
    1.2 A after 100 steps, 1.9 A after 500, 3.0 A after 1,000, nearest neighbours 3.15 A apart).  The same
    dict with new positions (in [0, L)) and velocities, atoms in their original order; ``state`` itself
    for ``steps`` <= 0."""
    from ..integrators import VelocityVerlet
    from ..simulation import Simulation

    if steps <= 0:
        return state
    sim = Simulation(make_system(state), make_potential(accuracy, cutoff, order), VelocityVerlet(DT), device=device,
                     skin=skin)
    sim.run(steps, progress=False)
    system = sim.system()
    sim.close()
    length = np.asarray(state["box"])
    positions = np.array(system.positions, dtype=np.float64) % length
    positions[positions >= length] = 0.0
    return {**state, "positions": positions, "velocities": np.array(system.velocities, dtype=np.float64)}


def choose_targets(n: int, count: int, seed: int = SEED) -> np.ndarray:
    """``count`` distinct atom indices of ``0..n-1`` (sorted; all of them when ``count >= n``)."""
    if count >= n:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed + 1).choice(n, size=count, replace=False))


def reference_coulomb_forces(positions, charges, box, targets, backend, *, qqrd2e: float = QQRD2E,
                             accuracy: float = REFERENCE_ACCURACY, units: str = "metal"):
    """The Coulomb force on the atoms ``targets`` of a periodic neutral system by a tight Ewald sum.

    Parameters
    ----------
    positions : array_like, shape (N, 3)
        Positions (length units) in an orthogonal box.
    charges : array_like, shape (N,)
    box : array_like, shape (3,)
        Box edge lengths (length units).
    targets : array_like of int, shape (M,)
        The atoms whose forces are wanted.
    backend : pycumd.backend.Backend
        Where the sums run (float64 either way).
    qqrd2e, accuracy, units :
        The Coulomb constant, the reference's relative accuracy (LAMMPS' definition) and the unit style.

    Returns
    -------
    forces : numpy.ndarray, shape (M, 3)
        Force units.
    info : dict
        ``g_ewald`` (1/length), ``r_cut`` (length), ``kcount`` (k-vectors), ``estimated_error_rel``.

    The real-space sum ``q_i q_j erfc(g r)/r`` runs over every other atom within half the shortest
    edge (minimum image), g chosen so that LAMMPS' real-space error estimate at that cutoff is
    ``accuracy``; the k-space part is :class:`pycumd.kspace.ewald.Ewald` at that g and accuracy.
    Cost: the real space M x N pairs, the k-space 2 N x kcount (kcount about 4,000 at 1M ions of
    molten NaCl, independent of N at a fixed density).
    """
    from ..kspace import make_solver
    from ..kspace.accuracy import initial_g_ewald, two_charge_force
    from ..precision import get_precision

    xp = backend.xp
    box = np.asarray(box, dtype=np.float64).reshape(3)
    q = np.asarray(charges, dtype=np.float64)
    n = len(q)
    targets = np.asarray(targets, dtype=np.int64)
    r_cut = 0.5 * float(box.min())
    q2 = qqrd2e * float(q @ q)
    g = initial_g_ewald(accuracy * two_charge_force(units, qqrd2e), n, r_cut, box, q2)
    ewald = make_solver("ewald", accuracy, gewald=g)
    ewald.setup(box, q, r_cut, qqrd2e, backend, get_precision("double", backend.name), units, table_bits=0)
    x = xp.asarray(np.asarray(positions, dtype=np.float64)[:, :3])
    qd = xp.asarray(q)
    kforces = xp.zeros((n, 3))
    ewald.compute(x, qd, box, kforces, False)
    t = xp.asarray(targets)
    out = kforces[t]
    if backend.is_gpu:
        from cupyx.scipy.special import erfc
    else:
        from scipy.special import erfc
    length = xp.asarray(box)
    rc2 = r_cut * r_cut
    chunk = max(1, (1 << 22) // max(n, 1))
    two_over_sqrt_pi = 2.0 / math.sqrt(math.pi)
    for start in range(0, len(targets), chunk):
        ti = t[start:start + chunk]
        d = x[ti][:, None, :] - x[None, :, :]                # (c, N, 3): r_i - r_j
        d -= length * xp.rint(d / length)
        r2 = (d * d).sum(axis=-1)
        r2[xp.arange(len(ti)), ti] = xp.inf                  # not itself
        r2 = xp.where(r2 < rc2, r2, xp.inf)
        r = xp.sqrt(r2)
        fr = qd[None, :] * (erfc(g * r) / r + two_over_sqrt_pi * g * xp.exp(-g * g * r2)) / r2
        out[start:start + chunk] += (qqrd2e * qd[ti])[:, None] * (fr[:, :, None] * d).sum(axis=1)
    info = {"g_ewald": g, "r_cut": r_cut, "kcount": int(ewald.kcount),
            "estimated_error_rel": ewald.estimated_accuracy() / ewald.two_charge_force}
    return np.asarray(backend.to_host(out), dtype=np.float64), info


def rms_error(forces, reference) -> float:
    """sqrt(mean over atoms of |F - F_ref|^2) (force units) of two (M, 3) arrays."""
    diff = np.asarray(forces, dtype=np.float64) - np.asarray(reference, dtype=np.float64)
    return float(np.sqrt((diff * diff).sum(axis=1).mean()))


def coulomb_forces(sim, targets) -> np.ndarray:
    """The run's Coulomb force (real space + k-space, in its precision; force units) on the atoms
    ``targets`` (0-based indices of the system the simulation was built from), shape (M, 3), on the
    simulation's current positions.  Leaves the state's forces holding the Coulomb part only."""
    state, nl = sim.state, sim.neighbors
    nl.build(state)
    state.forces.fill(0)
    sim.forces.compute_coulomb(state, nl, False)
    forces = np.asarray(sim.backend.to_host(state.forces), dtype=np.float64)
    ids = np.asarray(sim.backend.to_host(state.ids), dtype=np.int64)
    row_of = np.empty(len(ids), dtype=np.int64)
    row_of[ids - 1] = np.arange(len(ids))
    return forces[row_of[np.asarray(targets)]]


def step_split(sim, step_s: float) -> dict:
    """Seconds of the step's parts, each timed alone on the final state (events on the GPU): see the
    module docstring.  The timed calls move the run on, so they come after its figures."""
    from .lj import _timer

    state, nl, forces = sim.state, sim.neighbors, sim.forces
    timer = _timer(sim.backend)
    out = {"build_s": timer(lambda: nl.build(state), 3),
           "forces_s": timer(lambda: forces.compute(state, nl, False), 10),
           "pair_s": timer(lambda: forces.pair.compute(state, nl, False), 10),
           "coul_real_s": timer(lambda: forces.compute_real_space(state, nl, False), 10),
           "kspace_s": timer(lambda: forces.solver.compute(state.positions, state.charges, state.box_lengths,
                                                           state.forces, False), 10),
           "integrate_s": timer(lambda: (sim.integrator.initial_integrate(state),
                                         sim.integrator.final_integrate(state)), 10),
           "step_s": step_s}
    out["kspace_fraction"] = out["kspace_s"] / step_s
    return out


def run_pycumd(state: dict, targets, reference, *, accuracy: float, precision: str, device: str, steps: int,
               warmup: int, cutoff: float = CUTOFF, skin: float = SKIN, order: int = 5, split: bool = True) -> dict:
    """One run: the force error on the initial state, the warm-up, the timed steps, the split."""
    from ..integrators import VelocityVerlet
    from ..simulation import Simulation

    system = make_system(state)
    potential = make_potential(accuracy, cutoff, order)
    sim = Simulation(system, potential, VelocityVerlet(DT), device=device, precision=precision, skin=skin)
    solver = potential.kspace
    f = coulomb_forces(sim, targets)
    error = rms_error(f, reference)
    sim.run(warmup, progress=False)
    e_start = sim.thermo_row()["TotEng"]
    seconds, rebuilds = timed_run(sim, 0, steps)
    e_end = sim.thermo_row()["TotEng"]
    n = system.n_atoms
    record = {"engine": "pycumd", "code": "pycumd", "system": "nacl", "device": sim.backend.device_name,
              "precision": sim.precision.name, "N": n, "cells": round((n / 8) ** (1 / 3)), "steps": steps,
              "warmup": warmup, "seconds": seconds, "steps_per_s": steps / seconds,
              "atom_steps_per_s": n * steps / seconds, "rebuilds": rebuilds,
              "accuracy": accuracy, "cutoff": cutoff, "skin": skin, "dt": DT,
              "kspace": "pppm", "order": solver.order, "mesh": list(solver.mesh), "g_ewald": solver.g_ewald,
              "estimated_error_rel": solver.estimated_accuracy / solver.two_charge_force,
              "force_error_abs": error, "force_error_rel": error / solver.two_charge_force,
              "error_atoms": int(len(targets)),
              "TotEng_start": e_start / n, "TotEng_end": e_end / n}
    if split:
        record.update(step_split(sim, seconds / steps))
    sim.close()
    return record


def write_state_file(path, state: dict, targets, reference, info: dict, *, accuracy_reference: float,
                     cutoff: float, melt_steps: int = 0) -> None:
    """The state and the reference of one size for a peer (benchmarks/peers/openmm_pme.py): an .npz
    (module docstring; lengths A, velocities A/ps, forces eV/A, energies eV)."""
    params = {"system": "nacl", "units": "metal", "qqrd2e": QQRD2E, "cutoff": cutoff, "dt": DT,
              "temperature": TEMPERATURE, "rho": RHO, "melt_steps": melt_steps,
              "tosi_fumi": [[i, j, *v] for (i, j), v in TOSI_FUMI.items()],
              "reference": {**info, "accuracy": accuracy_reference}}
    np.savez(path, positions=state["positions"], velocities=state["velocities"], box=state["box"],
             types=state["types"], charges=state["charges"], masses=state["masses"],
             targets=np.asarray(targets, dtype=np.int64), reference_forces=reference,
             params=np.array(json.dumps(params)))


def print_row(r: dict) -> None:
    print(f"{r['engine']:<8} {r['device'][:26]:<26} {r['precision']:>9} {r['N']:>10,} {r['steps']:>6} "
          f"{r['steps_per_s']:>9.1f} {r['atom_steps_per_s'] / 1e6:>11.2f} {r['force_error_rel']:>10.2e} "
          f"{r.get('kspace_fraction', float('nan')):>7.2f}", flush=True)


DESCRIPTION = __doc__.split("\n\n", 1)[1] if __doc__ else ""


def main(argv=None) -> int:
    ap = argument_parser("charged", DESCRIPTION)
    ap.add_argument("--ions", type=int, nargs="+", default=[100_000], help="ion counts (rounded to 8 cells^3)")
    ap.add_argument("--accuracy", type=float, default=1e-4, help="kspace_style pppm accuracy (relative)")
    ap.add_argument("--order", type=int, default=5, help="PPPM order (kspace_modify order)")
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", nargs="+", default=["auto"], choices=["auto", "single", "mixed", "double"],
                    help="precision policies (composite has no long-range Coulomb); auto: mixed on a GPU, double on the CPU")
    ap.add_argument("--cutoff", type=float, default=CUTOFF, help="Born and real-space Coulomb cutoff (A)")
    ap.add_argument("--skin", type=float, default=SKIN, help="neighbour skin (A)")
    ap.add_argument("--displacement", type=float, default=DISPLACEMENT, help="Gaussian displacement (A)")
    ap.add_argument("--seed", type=int, default=SEED)
    ap.add_argument("--melt-steps", type=int, default=0,
                    help="untimed NVE steps from the lattice before the benchmark's initial state (0: none)")
    ap.add_argument("--error-atoms", type=int, default=ERROR_ATOMS, help="ions whose force error is measured")
    ap.add_argument("--reference-accuracy", type=float, default=REFERENCE_ACCURACY)
    ap.add_argument("--no-split", action="store_true", help="leave out the step split")
    ap.add_argument("--state-dir", default=None, help="write the state and reference file nacl_N.npz here")
    ap.add_argument("--json", default=None, help="append one JSON line per run to this file")
    ap.add_argument("--out-dir", default=str(default_out_dir("charged")), help="where charged.json goes")
    args = ap.parse_args(argv)
    for name in ("accuracy", "reference_accuracy", "cutoff", "skin"):
        if not getattr(args, name) > 0:
            print(f"pycumd bench charged: --{name.replace('_', '-')} must be > 0, got {getattr(args, name)}")
            return 2
    if args.error_atoms < 1 or args.steps < 1 or args.warmup < 0 or args.melt_steps < 0:
        print("pycumd bench charged: --error-atoms and --steps must be >= 1, --warmup and --melt-steps >= 0")
        return 2
    try:
        cells = [cells_for(i) for i in args.ions]
    except ValueError as exc:
        print(f"pycumd bench charged: {exc}")
        return 2
    for c in cells:
        if args.cutoff + args.skin > 0.5 * c * LATTICE:
            print(f"pycumd bench charged: {8 * c ** 3} ions make a box of {c * LATTICE:g} A, less than twice the "
                  f"cutoff + skin {args.cutoff + args.skin:g} A; ask for more ions or a shorter --cutoff")
            return 2
    from ..backend import select

    try:
        backend = select(args.device)
    except (ValueError, RuntimeError, ImportError) as exc:
        print(f"pycumd bench charged: --device {args.device}: {exc}")
        return 2
    print(f"{'engine':<8} {'device':<26} {'precision':>9} {'ions':>10} {'steps':>6} {'steps/s':>9} "
          f"{'Matom-st/s':>11} {'F err rel':>10} {'kspace':>7}", flush=True)
    results = []
    for c in cells:
        state = build_state(c, displacement=args.displacement, seed=args.seed)
        n = len(state["charges"])
        if args.melt_steps > 0:
            t0 = time.perf_counter()
            state = melt(state, args.melt_steps, accuracy=args.accuracy, cutoff=args.cutoff, skin=args.skin,
                         order=args.order, device=backend.name)
            print(f"# {n:,} ions: melted for {args.melt_steps} steps in {time.perf_counter() - t0:.1f} s", flush=True)
        targets = choose_targets(n, args.error_atoms, args.seed)
        t0 = time.perf_counter()
        reference, info = reference_coulomb_forces(state["positions"], state["charges"], state["box"], targets,
                                                   backend, accuracy=args.reference_accuracy)
        print(f"# {n:,} ions: reference Ewald (g {info['g_ewald']:.5g}/A, real space to {info['r_cut']:.4g} A, "
              f"{info['kcount']} k-vectors, estimated error {info['estimated_error_rel']:.1e}) on "
              f"{len(targets)} ions in {time.perf_counter() - t0:.1f} s", flush=True)
        if backend.is_gpu:
            backend.xp.get_default_memory_pool().free_all_blocks()
        if args.state_dir:
            os.makedirs(args.state_dir, exist_ok=True)
            write_state_file(os.path.join(args.state_dir, f"nacl_{n}.npz"), state, targets, reference, info,
                             accuracy_reference=args.reference_accuracy, cutoff=args.cutoff,
                             melt_steps=args.melt_steps)
        for precision in args.precision:
            r = run_pycumd(state, targets, reference, accuracy=args.accuracy, precision=precision,
                           device=backend.name, steps=args.steps, warmup=args.warmup, cutoff=args.cutoff,
                           skin=args.skin, order=args.order, split=not args.no_split)
            r["reference"] = info
            r["melt_steps"] = args.melt_steps
            results.append(r)
            print_row(r)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
            if backend.is_gpu:
                backend.xp.get_default_memory_pool().free_all_blocks()
    write_results(args.out_dir, "charged", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
