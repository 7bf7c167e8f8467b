"""JAX-MD on the pycumd LJ benchmark: LAMMPS bench/in.lj scaled up.

The same fcc start as pycumd and the other peer scripts (reduced density 0.8442,
a = (4/0.8442)^(1/3), T 1.44 with zero momentum, the same velocities), with JAX-MD's own LJ
convenience: `energy.lennard_jones_neighbor_list` (sigma 1, epsilon 1) with its default smooth
cutoff (`multiplicative_isotropic_cutoff`, r_onset 2.0, r_cutoff 2.5), a cell-list-built neighbour
list with dr_threshold 0.3 and capacity_multiplier 1.25, `simulate.nve` (velocity Verlet, dt 0.005),
float32 (JAX's default, x64 off), periodic box through `space.periodic`.

Each step calls `nbrs.update(position)` (JAX-MD rebuilds inside it when a particle has moved more
than dr_threshold / 2) and then the NVE step, inside one jitted `lax.fori_loop` whose trip count
is a traced argument (one compilation for the warm-up and the timed batch).  The rate is whole
steps of the timed batch after a warm-up batch, each ended by `block_until_ready`.

A neighbour list that outgrew its capacity sets `did_buffer_overflow`; JAX-MD then computes with a
truncated list.  This script checks it after every batch: after an overflow it reallocates the list
from the positions at the start of the batch and runs the batch again (JAX-MD's documented loop),
at most --max-retries times, and records the count in "overflow_retries"; a timed batch that still
overflows becomes an "error" record.  The timed figure is always of a batch without overflow.

    python benchmarks/peers/jaxmd_lj.py --cells 20 40 --format dense sparse --steps 500 --json peers.jsonl

Each (cells, format) runs in a child process, so an out-of-memory (XLA RESOURCE_EXHAUSTED) at one
size becomes a JSON line with "error" and later sizes still run.  Exits with status 0 and a message
if jax_md or a GPU is missing (--allow-cpu runs on JAX's CPU backend, for a test without a GPU).
The energy per atom (smooth-cutoff LJ, so it differs a little from the truncated LJ of OpenMM and
pycumd) is reported at the start and end of the timed batch as a sanity check.
"""

from __future__ import annotations

import sys
import time

from common import (CUTOFF, DT, add_run_arguments, fcc_lattice, jax_device,  # noqa: E402 (same folder)
                    package_versions, random_velocities, run_child, write_record)

R_ONSET = 2.0
DR_THRESHOLD = 0.3
CAPACITY_MULTIPLIER = 1.25
FORMATS = ("dense", "sparse", "ordered_sparse")


def versions() -> dict:
    return package_versions("jax-md", "jax", "jaxlib", "numpy")


def measure(cells: int, fmt: str, steps: int, warmup: int, max_retries: int) -> dict:
    import warnings
    # JAX-MD asks for float64 sums, which JAX (x64 off) truncates to float32 with a warning each time
    warnings.filterwarnings("ignore", message="Explicitly requested dtype float64")
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax import lax
    from jax_md import energy, partition, simulate, space

    pos, box = fcc_lattice(cells)
    n = len(pos)
    vel = random_velocities(n)
    nl_format = {"dense": partition.Dense, "sparse": partition.Sparse,
                 "ordered_sparse": partition.OrderedSparse}[fmt]

    t_setup = time.perf_counter()
    displacement, shift = space.periodic(jnp.float32(box))
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(
        displacement, jnp.float32(box), sigma=1.0, epsilon=1.0, r_onset=R_ONSET, r_cutoff=CUTOFF,
        dr_threshold=DR_THRESHOLD, capacity_multiplier=CAPACITY_MULTIPLIER, format=nl_format)
    init_fn, apply_fn = simulate.nve(energy_fn, shift, DT)

    r0 = jnp.asarray(pos, dtype=jnp.float32)
    nbrs = neighbor_fn.allocate(r0)
    if bool(nbrs.did_buffer_overflow):
        raise RuntimeError("neighbour list overflowed at allocation")
    state = init_fn(jax.random.PRNGKey(0), r0, 1.44, mass=jnp.float32(1.0),
                    momenta=jnp.asarray(vel, dtype=jnp.float32), neighbor=nbrs)

    def body(i, carry):
        st, nb = carry
        nb = nb.update(st.position)
        st = apply_fn(st, neighbor=nb)
        return st, nb

    @jax.jit
    def run(st, nb, count):
        return lax.fori_loop(0, count, body, (st, nb))

    @jax.jit
    def total_energy(st, nb):
        u = energy_fn(st.position, neighbor=nb)
        k = 0.5 * jnp.sum(st.momentum ** 2 / st.mass)
        return u, k

    def e_per_atom(st, nb):
        u, k = jax.device_get(total_energy(st, nb))
        return (float(u) + float(k)) / n

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
            print(f"jaxmd_lj: neighbour list overflowed (max_occupancy {nb.max_occupancy}); reallocating "
                  f"and running the batch again", flush=True)
            nb = neighbor_fn.allocate(st.position)
            jax.block_until_ready(run(st, nb, jnp.int32(0)))     # compile for the new capacity, untimed
        raise AssertionError("unreachable")

    state, nbrs, _, bad = batch(state, nbrs, 1)          # compilation
    setup_s = time.perf_counter() - t_setup
    if bad:
        raise RuntimeError("neighbour list overflow in the first step, after reallocation")
    state, nbrs, _, bad = batch(state, nbrs, warmup)
    if bad:
        raise RuntimeError(f"neighbour list overflow in the warm-up, after {max_retries} reallocations")
    e_start = e_per_atom(state, nbrs)
    state, nbrs, seconds, bad = batch(state, nbrs, steps)
    if bad:
        raise RuntimeError(f"neighbour list overflow (did_buffer_overflow) in the timed batch, "
                           f"after {max_retries} reallocations")
    e_end = e_per_atom(state, nbrs)
    if not (np.isfinite(e_start) and np.isfinite(e_end)):
        raise RuntimeError(f"energy not finite: {e_start} -> {e_end}")

    dev = jax.devices()[0]
    v = versions()
    return {"engine": "jaxmd", "N": n, "cells": cells, "precision": "single", "format": fmt, "steps": steps,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "device": getattr(dev, "device_kind", str(dev)), "platform": dev.platform,
            "version": v.get("jax-md"), "jax": v.get("jax"), "jaxlib": v.get("jaxlib"),
            "r_onset": R_ONSET, "r_cutoff": CUTOFF, "dr_threshold": DR_THRESHOLD,
            "capacity_multiplier": CAPACITY_MULTIPLIER, "max_occupancy": int(nbrs.max_occupancy),
            "overflow_retries": retries, "warmup": warmup,
            "setup_s": round(setup_s, 2), "E_per_atom_start": e_start, "E_per_atom_end": e_end}


def child_main(args) -> int:
    r = measure(args.cells[0], args.format[0], args.steps, args.warmup, args.max_retries)
    write_record(args._result, r, "w")
    return 0


def run_one(cells: int, fmt: str, args) -> dict:
    """Run one size and format in a child process; a failure becomes a record with 'error'."""
    child_args = ["--cells", str(cells), "--format", fmt, "--steps", str(args.steps), "--warmup", str(args.warmup),
                  "--max-retries", str(args.max_retries)] + (["--allow-cpu"] if args.allow_cpu else [])
    rec, err, _ = run_child(__file__, child_args, args.timeout)
    if rec is None:
        rec = {"engine": "jaxmd", "N": 4 * cells ** 3, "cells": cells, "precision": "single", "format": fmt,
               "steps": args.steps, "steps_per_s": None, "atom_steps_per_s": None, "device": args._device,
               "version": args._version, "error": err[-2000:]}
    return rec


def main(argv=None) -> int:
    import argparse
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_run_arguments(ap)
    ap.add_argument("--format", nargs="+", default=["dense", "sparse"], choices=FORMATS,
                    help="JAX-MD neighbour-list formats (partition.Dense / Sparse / OrderedSparse)")
    ap.add_argument("--precision", nargs="+", default=["single"], choices=["single"],
                    help="float32 only (accepted for symmetry with the other scripts)")
    ap.add_argument("--max-retries", type=int, default=3,
                    help="reallocations of an overflowed neighbour list per batch before the run is an error")
    ap.add_argument("--allow-cpu", action="store_true", help="run on JAX's CPU backend when there is no GPU")
    args = ap.parse_args(argv)
    if args._child:
        return child_main(args)

    found = jax_device("jaxmd_lj", args.allow_cpu)
    if found is None:
        return 0
    args._device, fallback_version = found
    args._version = versions().get("jax-md", fallback_version)
    print(f"JAX-MD {args._version} ({versions()}), device {args._device}", flush=True)
    print(f"{'N':>10} {'format':>14} {'steps/s':>10} {'atom-steps/s':>13}  note", flush=True)
    for cells in args.cells:
        for fmt in args.format:
            r = run_one(cells, fmt, args)
            if "error" in r:
                print(f"{r['N']:>10} {fmt:>14} {'-':>10} {'-':>13}  ERROR {r['error']}", flush=True)
            else:
                drift = r["E_per_atom_end"] - r["E_per_atom_start"]
                print(f"{r['N']:>10} {fmt:>14} {r['steps_per_s']:>10.1f} {r['atom_steps_per_s']:>13.3e}"
                      f"  E/N {r['E_per_atom_start']:.4f} -> {r['E_per_atom_end']:.4f} (drift {drift:+.2e})"
                      f"  capacity {r['max_occupancy']}  overflow retries {r['overflow_retries']}", flush=True)
            write_record(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
