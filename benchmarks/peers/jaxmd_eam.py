"""JAX-MD on pycumd's EAM benchmark: LAMMPS bench/in.eam (fcc Cu, Cu_u3.eam, 1600 K) scaled up.

The system is in.eam's at ``--cells C`` fcc cells per edge (N = 4 C^3: 20 -> 32,000, 63 -> 1,000,188,
159 -> 16,078,716): lattice constant 3.615 A, the velocities of ``velocity all create 1600.0 376847
loop geom`` (built by pycumd's ``lattice_system`` and ``create_velocities``, so the start is LAMMPS'
and pycumd's to round-off), dt 5 fs, NVE, metal units (JAX-MD is unitless: the mass is given as
63.55 g/mol x 1.0364269e-4 eV ps^2 / (A^2 g/mol), LAMMPS' mvv2e, so that forces in eV/A and
velocities in A/ps integrate as in LAMMPS).

The potential is JAX-MD's own EAM: ``energy.eam_neighbor_list`` with the splines of
``energy.load_lammps_eam_parameters``.  That reader takes a one-element setfl file, so the funcfl
file (read by pycumd's ``read_funcfl``) is handed to it as setfl text, r phi(r) = 27.2 x 0.529 x
Z(r)^2 as LAMMPS' ``file2array`` forms it.  JAX-MD interpolates with scipy's cubic B-spline (``splrep``)
through the file's points; LAMMPS and pycumd use LAMMPS' own cubic (``PairEAM::interpolate``), so the
energies differ in the last digits (see benchmarks/peers/README.md); JAX-MD also counts pairs out to
the end of the table (5.0 A) rather than the file's cutoff (4.95 A).  Forces are JAX's gradient of
the energy (``simulate.nve``).

The neighbour list is JAX-MD's cell list (``partition.neighbor_list``) with cutoff 4.95 A and
dr_threshold 1.0 A (in.eam's ``neighbor 1.0``), capacity_multiplier 1.25, ``--format dense`` (default;
``sparse`` accepted).  Each step calls ``nbrs.update(position)`` (JAX-MD rebuilds inside it when an
atom has moved more than dr_threshold / 2) and then the NVE step, inside one jitted ``lax.fori_loop``
whose trip count is a traced argument (one compilation for every batch).  Timing and overflow
handling are those of jaxmd_lj.py: a warm-up batch, then the timed batch, each ended by
``block_until_ready``; an overflowed list is reallocated from the batch's starting positions and the
batch run again (at most --max-retries times; the count is recorded); a timed batch that still
overflows is an "error" record.  ``--max-seconds S`` shortens the warm-up and the timed batch to about
S seconds each at the rate of a 5-step probe (then of the warm-up); the record's "steps" is what ran.

    python benchmarks/peers/jaxmd_eam.py --cells 20 63 --steps 500 --json peers.jsonl

Each cells value runs in a child process, so an out-of-memory (XLA RESOURCE_EXHAUSTED) becomes a
JSON line with "error" and later sizes still run.  Exits with status 0 and a message if jax_md or a
GPU is missing (--allow-cpu runs on JAX's CPU backend, for a test without a GPU).  The record holds
the potential and total energy per atom at step 0 (comparable with LAMMPS' and pycumd's thermo at
step 0) and the total energy per atom at the start and end of the timed batch.
"""

from __future__ import annotations

import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))      # pycumd (in.eam's start, the funcfl reader)

from common import add_run_arguments, jax_device, package_versions, run_child, write_record  # noqa: E402 (same folder)

LATTICE = 3.615          # A, in.eam's `lattice fcc 3.615`
TEMPERATURE = 1600.0     # K
SEED = 376847
DT = 0.005               # ps
DR_THRESHOLD = 1.0       # A, in.eam's `neighbor 1.0 bin`
CAPACITY_MULTIPLIER = 1.25
MVV2E = 1.0364269e-4     # LAMMPS metal units: eV per (g/mol) (A/ps)^2
PROBE = 5                # steps of the rate probe for --max-seconds
FORMATS = ("dense", "sparse")


def versions() -> dict:
    return package_versions("jax-md", "jax", "jaxlib", "numpy")


def funcfl_as_setfl(path) -> str:
    """The funcfl file ``path`` as the one-element setfl text that ``load_lammps_eam_parameters``
    reads: three comment lines (the first names setfl), ``1 El``, the grid line, ``Z mass a lattice``,
    then F(rho), rho(r) and r phi(r) = 27.2 x 0.529 x Z(r)^2, one value a line."""
    from pycumd.potentials.eam import FUNCFL_ZZ, read_funcfl

    f = read_funcfl(path)
    g = f.grid
    lines = [f"setfl made from the funcfl file {os.path.basename(str(path))} by jaxmd_eam.py", "", "",
             "1 X", f"{g.nrho} {g.drho!r} {g.nr} {g.dr!r} {g.cut!r}", f"{f.number} {f.mass!r} {LATTICE} fcc"]
    lines += [repr(float(v)) for v in f.frho[1:]]
    lines += [repr(float(v)) for v in f.rhor[1:]]
    lines += [repr(float(v)) for v in FUNCFL_ZZ * f.zr[1:] ** 2]
    return "\n".join(lines) + "\n"


def horner_spline(y, dx, degree: int = 3):
    """JAX-MD's ``interpolate.spline(y, dx, degree)`` with the same coefficients (scipy ``splrep`` with
    s=0 through points 0, dx, 2 dx, ..., as ``PPoly``) and the same indexing, evaluated in Horner form.

    JAX-MD evaluates ``sum_i c_i dX ** i``; JAX's derivative of ``dX ** 0`` is ``0 * dX ** -1``, NaN
    when ``dX`` is exactly 0, that is whenever a distance or a density falls exactly on a grid point in
    float32 (JAX-MD 0.2.29 on JAX 0.11.2: about one evaluation in 10^5, so every step of a large system
    has some).  The Horner form has the same value (to float32 round-off) and a finite derivative."""
    import jax.numpy as jnp
    import numpy as onp
    from scipy.interpolate import PPoly, splrep

    num_points = len(y)
    dx = onp.float32(dx)
    x = onp.arange(num_points, dtype=onp.float32) * dx
    coeffs = jnp.asarray(onp.asarray(PPoly.from_spline(splrep(x, onp.asarray(y), s=0, k=degree)).c),
                         dtype=jnp.float32)

    def spline_fn(r):
        ind = jnp.asarray(r / dx, dtype=jnp.int32)
        t = jnp.clip(ind, 0, num_points - 1) + 2
        d = r - ind.astype(r.dtype) * dx
        out = coeffs[0, t].astype(r.dtype)
        for i in range(1, degree + 1):
            out = out * d + coeffs[i, t].astype(r.dtype)
        return jnp.where(ind < num_points, out, jnp.zeros((), r.dtype))

    return spline_fn


def eam_functions(path, spline: str = "horner"):
    """(charge_fn, embedding_fn, pairwise_fn, cutoff) for ``energy.eam_neighbor_list`` from the funcfl
    file ``path``.  ``spline="jaxmd"``: JAX-MD's own ``load_lammps_eam_parameters`` (its reader and its
    splines); ``"horner"``: the same reading (the file's values as float32, phi = r phi / r with r = 0
    taken as 0.001, as that reader does) and the same spline coefficients, through
    :func:`horner_spline`, whose derivative is finite on the grid points."""
    import io

    import numpy as onp
    from jax_md import energy

    text = funcfl_as_setfl(path)
    if spline == "jaxmd":
        return energy.load_lammps_eam_parameters(io.StringIO(text))
    lines = text.split("\n")
    nrho, drho, nr, dr, cutoff = lines[4].split()
    nrho, nr, drho, dr, cutoff = int(nrho), int(nr), float(drho), float(dr), float(cutoff)
    data = onp.array([float(v) for v in lines[6:6 + nrho + 2 * nr]], dtype=onp.float32)
    distances = onp.arange(nr, dtype=onp.float32) * onp.float32(dr)
    distances = onp.where(distances == 0, onp.float32(0.001), distances)
    return (horner_spline(data[nrho:nrho + nr], dr), horner_spline(data[:nrho], drho),
            horner_spline(data[nrho + nr:] / distances, dr), cutoff)


def in_eam_start(cells: int, mass: float):
    """in.eam's start at ``cells`` cells per edge: (positions (N, 3) A, velocities (N, 3) A/ps, box A)."""
    from pycumd.system import create_velocities, lattice_system

    system = lattice_system("fcc", cells, units="metal", constant=LATTICE, mass=mass)
    create_velocities(system, TEMPERATURE, SEED)
    return system.positions, system.velocities, float(system.box.lengths[0])


def measure(cells: int, fmt: str, steps: int, warmup: int, max_retries: int, potential: str,
            max_seconds: float | None, spline: str = "horner") -> dict:
    import warnings
    # JAX-MD asks for float64 sums and int64 indices, which JAX (x64 off) truncates with a warning each time
    warnings.filterwarnings("ignore", message="Explicitly requested dtype")
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax_md import energy, partition, simulate, space
    from pycumd.potentials.eam import read_funcfl

    t_setup = time.perf_counter()
    mass_gmol = read_funcfl(potential).mass
    pos, vel, box = in_eam_start(cells, mass_gmol)
    n = len(pos)
    nl_format = {"dense": partition.Dense, "sparse": partition.Sparse}[fmt]
    charge_fn, embedding_fn, pairwise_fn, cutoff = eam_functions(potential, spline)
    displacement, shift = space.periodic(jnp.float32(box))
    neighbor_fn, energy_fn = energy.eam_neighbor_list(
        displacement, jnp.float32(box), charge_fn, embedding_fn, pairwise_fn, cutoff,
        dr_threshold=DR_THRESHOLD, format=nl_format, capacity_multiplier=CAPACITY_MULTIPLIER)
    init_fn, apply_fn = simulate.nve(energy_fn, shift, DT)
    mass = jnp.float32(mass_gmol * MVV2E)

    r0 = jnp.asarray(pos, dtype=jnp.float32)
    nbrs = neighbor_fn.allocate(r0)
    if bool(nbrs.did_buffer_overflow):
        raise RuntimeError("neighbour list overflowed at allocation")
    state = init_fn(jax.random.PRNGKey(0), r0, 0.0, mass=mass,
                    momenta=mass * jnp.asarray(vel, dtype=jnp.float32), neighbor=nbrs)

    def body(i, carry):
        st, nb = carry
        nb = nb.update(st.position)
        st = apply_fn(st, neighbor=nb)
        return st, nb

    @jax.jit
    def run(st, nb, count):
        return lax.fori_loop(0, count, body, (st, nb))

    @jax.jit
    def energies(st, nb):
        u = energy_fn(st.position, neighbor=nb)
        k = 0.5 * jnp.sum(st.momentum ** 2 / st.mass)
        return u, k

    def per_atom(st, nb):
        u, k = jax.device_get(energies(st, nb))
        return float(u) / n, (float(u) + float(k)) / n

    retries = 0

    def batch(st, nb, count):
        """Run count steps; on overflow reallocate from st's positions and run again.  Returns
        (state, nbrs, seconds, overflowed)."""
        nonlocal retries
        for attempt in range(max_retries + 1):
            t0 = time.perf_counter()
            st2, nb2 = run(st, nb, jnp.int32(count))
            jax.block_until_ready((st2, nb2))
            sec = time.perf_counter() - t0
            if not bool(nb2.did_buffer_overflow):
                return st2, nb2, sec, False
            if attempt == max_retries:
                return st2, nb2, sec, True
            retries += 1
            print(f"jaxmd_eam: neighbour list overflowed (max_occupancy {nb.max_occupancy}); reallocating "
                  f"and running the batch again", flush=True)
            nb = neighbor_fn.allocate(st.position)
            jax.block_until_ready(run(st, nb, jnp.int32(0)))     # compile for the new capacity, untimed
        raise AssertionError("unreachable")

    pe0, e0 = per_atom(state, nbrs)
    state, nbrs, _, bad = batch(state, nbrs, 1)          # compilation
    setup_s = time.perf_counter() - t_setup
    if bad:
        raise RuntimeError("neighbour list overflow in the first step, after reallocation")
    done = 1

    def capped(count, rate):
        return count if max_seconds is None else max(10, min(count, int(rate * max_seconds)))

    if max_seconds is not None:
        state, nbrs, sec, bad = batch(state, nbrs, PROBE)
        done += PROBE
        warmup = capped(warmup, PROBE / sec)
    if warmup > 0:
        state, nbrs, sec, bad = batch(state, nbrs, warmup)
        if bad:
            raise RuntimeError(f"neighbour list overflow in the warm-up, after {max_retries} reallocations")
        done += warmup
        if max_seconds is not None:
            steps = capped(steps, warmup / sec)
    _, e_start = per_atom(state, nbrs)
    state, nbrs, seconds, bad = batch(state, nbrs, steps)
    if bad:
        raise RuntimeError(f"neighbour list overflow (did_buffer_overflow) in the timed batch, "
                           f"after {max_retries} reallocations")
    _, e_end = per_atom(state, nbrs)
    if not (np.isfinite(e_start) and np.isfinite(e_end)):
        raise RuntimeError(f"energy not finite: {e_start} -> {e_end}")

    dev = jax.devices()[0]
    v = versions()
    return {"engine": "jaxmd", "system": "in.eam", "N": n, "cells": cells, "precision": "single", "format": fmt,
            "steps": steps, "seconds": seconds, "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "device": getattr(dev, "device_kind", str(dev)), "platform": dev.platform,
            "version": v.get("jax-md"), "jax": v.get("jax"), "jaxlib": v.get("jaxlib"),
            "potential": os.path.basename(potential), "spline": spline, "r_cutoff": float(cutoff),
            "dr_threshold": DR_THRESHOLD,
            "capacity_multiplier": CAPACITY_MULTIPLIER, "max_occupancy": int(nbrs.max_occupancy),
            "overflow_retries": retries, "warmup": warmup, "steps_before_timing": done,
            "setup_s": round(setup_s, 2), "PE_per_atom_step0": pe0, "E_per_atom_step0": e0,
            "E_per_atom_start": e_start, "E_per_atom_end": e_end}


def child_main(args) -> int:
    r = measure(args.cells[0], args.format[0], args.steps, args.warmup, args.max_retries, args._potential,
                args.max_seconds, args.spline)
    write_record(args._result, r, "w")
    return 0


def run_one(cells: int, fmt: str, args) -> dict:
    """Run one size and format in a child process; a failure becomes a record with 'error'."""
    child_args = ["--cells", str(cells), "--format", fmt, "--steps", str(args.steps), "--warmup", str(args.warmup),
                  "--max-retries", str(args.max_retries), "--potential-file", args._potential,
                  "--spline", args.spline] \
        + (["--max-seconds", str(args.max_seconds)] if args.max_seconds is not None else []) \
        + (["--allow-cpu"] if args.allow_cpu else [])
    rec, err, _ = run_child(__file__, child_args, args.timeout)
    if rec is None:
        rec = {"engine": "jaxmd", "system": "in.eam", "N": 4 * cells ** 3, "cells": cells, "precision": "single",
               "format": fmt, "steps": args.steps, "steps_per_s": None, "atom_steps_per_s": None,
               "device": args._device, "version": args._version, "error": err[-2000:]}
    return rec


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap)
    ap.set_defaults(cells=[20, 63])
    ap.add_argument("--format", nargs="+", default=["dense"], choices=FORMATS,
                    help="JAX-MD neighbour-list formats (partition.Dense / Sparse; EAM refuses OrderedSparse)")
    ap.add_argument("--precision", nargs="+", default=["single"], choices=["single"],
                    help="float32 only (accepted for symmetry with the other scripts)")
    ap.add_argument("--max-retries", type=int, default=3,
                    help="reallocations of an overflowed neighbour list per batch before the run is an error")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="shorten the warm-up and the timed batch to about this many seconds each")
    ap.add_argument("--potential-file", default="Cu_u3.eam",
                    help="the funcfl file (found as LAMMPS finds it: as given, else in $LAMMPS_POTENTIALS)")
    ap.add_argument("--spline", choices=["horner", "jaxmd"], default="horner",
                    help="horner (default): JAX-MD's spline coefficients evaluated in Horner form (finite forces "
                         "on grid points); jaxmd: JAX-MD's own load_lammps_eam_parameters splines")
    ap.add_argument("--allow-cpu", action="store_true", help="run on JAX's CPU backend when there is no GPU")
    args = ap.parse_args(argv)
    from pycumd.potentials.eam import resolve_potential_file
    try:
        args._potential = str(resolve_potential_file(args.potential_file))
    except ValueError as e:
        print(f"jaxmd_eam: {e}; give its path with --potential-file")
        return 2
    if args._child:
        return child_main(args)

    found = jax_device("jaxmd_eam", args.allow_cpu)
    if found is None:
        return 0
    args._device, fallback_version = found
    args._version = versions().get("jax-md", fallback_version)
    print(f"JAX-MD {args._version} ({versions()}), device {args._device}, EAM {args._potential}", flush=True)
    print(f"{'N':>10} {'format':>7} {'steps':>6} {'steps/s':>10} {'atom-steps/s':>13}  note", flush=True)
    for cells in args.cells:
        for fmt in args.format:
            r = run_one(cells, fmt, args)
            if "error" in r:
                print(f"{r['N']:>10} {fmt:>7} {'-':>6} {'-':>10} {'-':>13}  ERROR {r['error']}", flush=True)
            else:
                drift = r["E_per_atom_end"] - r["E_per_atom_start"]
                print(f"{r['N']:>10} {fmt:>7} {r['steps']:>6} {r['steps_per_s']:>10.2f} "
                      f"{r['atom_steps_per_s']:>13.3e}  step 0 PE/N {r['PE_per_atom_step0']:.6f} "
                      f"E/N {r['E_per_atom_step0']:.6f}; timed E/N {r['E_per_atom_start']:.5f} -> "
                      f"{r['E_per_atom_end']:.5f} (drift {drift:+.2e}); capacity {r['max_occupancy']}, "
                      f"overflow retries {r['overflow_retries']}, set-up {r['setup_s']} s", flush=True)
            write_record(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
