"""JAX-MD's ``vmap`` over the replicas of ``pycumd bench batch`` (issue 38's peer: ">= 20x JAX-MD's vmap").

The replicas are the bench's own (``batch_replicas.py``: R systems of N atoms of the in.lj liquid, fcc
at density 0.8442, system i's velocities from seed 1000 + i, the same positions, box and velocities as
pycumd integrates), in float32 (JAX's default, x64 off).  Each replica is one JAX-MD system, as
``jaxmd_lj.py`` builds it: ``energy.lennard_jones_neighbor_list`` (sigma 1, epsilon 1, r_cutoff 2.5, JAX-MD's
default smooth cutoff ``multiplicative_isotropic_cutoff`` from r_onset 2.0: the cost of truncated LJ, an
energy a little different), ``partition.neighbor_list`` through it (Dense format, dr_threshold = the bench's
skin 0.3, capacity_multiplier 1.25), ``simulate.nve`` (velocity Verlet, dt 0.005), ``space.periodic`` on the
bench's orthorhombic box (8.40 x 8.40 x 16.80 at 1,000 atoms: JAX-MD uses a cell list only where every
edge exceeds 3 (r_cutoff + dr_threshold), so at 1,000 atoms it builds its lists from all N^2 pairs).
The R replicas are one ``jax.vmap`` of the step inside one jitted ``lax.fori_loop`` (trip count traced:
one compilation for warm-up, probe and timed batch).

Two ways to update the vmapped neighbour lists (``--update``, both measured by default):

* ``vmap``: ``vmap(lambda r, nb: nb.update(r))``, JAX-MD's own update under vmap.  Its rebuild decision
  is a ``lax.cond`` on a per-replica predicate, which vmap turns into a select: every replica's list is
  rebuilt at every step (JAX's semantics of a batched cond, not a choice of this script).
* ``any``: one unbatched ``lax.cond``: when any replica has an atom that moved more than dr_threshold / 2
  since its last build (JAX-MD's own criterion), every replica's list is rebuilt; else none is.
  ``rebuilds`` in the record counts the steps of the timed batch that rebuilt.

A rebuild of every replica at once is ``neighbor_fn.update`` under vmap with each list's reference
positions moved by half the box (``forced_reference``), so that JAX-MD's displacement check always
fires; that is also how the lists are first made: one ``allocate`` from replica 0 (all replicas start on
the same lattice, so its capacity is every replica's), broadcast to R replicas, rebuilt from each
replica's positions.  JAX-MD's capacity handling: after every batch the script reads
``did_buffer_overflow`` of all replicas; after an overflow it allocates again from the first
overflowing replica's positions at the batch's start (capacity x 1.25, and at least 25 % more than
before), rebuilds every replica's list, and runs the batch again (recompilation untimed), at most
``--max-retries`` times (``overflow_retries`` in the record); a timed batch that still overflows is an
"error" record.  The timed figure is always of a batch without overflow.

    python benchmarks/peers/jaxmd_batch.py --systems 1024 256 64 --atoms 1000 --replicas-file r.npz --json b.jsonl

Each (R, update) runs in a child process: an out-of-memory (XLA RESOURCE_EXHAUSTED, frequent for vmap
over many replicas) becomes a record with "error" (and "oom": true) instead of a traceback.  By default
the sizes of one update mode are tried in the order given until one succeeds (``--every-size`` runs
them all).  Without jax / jax_md or a GPU the script prints why, appends an "error" record to
``--json``, and exits 0 (``--allow-cpu`` runs on JAX's CPU backend).  Record: ``engine`` "jaxmd",
``case`` "independent", ``systems``, ``atoms``, ``steps``, ``steps_per_s`` (steps of every replica per
second), ``atom_steps_per_s`` (R N steps / s), ``update``, ``device``, ``version``; energy per atom
(mean over replicas) at step 0 (``PE_per_atom_0`` potential, ``E_per_atom_0`` total) and at the start
and end of the timed batch as a sanity check (``--r-onset 2.4999`` makes the potential truncated LJ for
the lattice start, whose pairs sit at 2.375 and 2.656: then ``PE_per_atom_0`` is pycumd's step-0 energy).
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from common import jax_device, package_versions, run_child, write_record  # noqa: E402 (same folder)

R_ONSET = 2.0
CAPACITY_MULTIPLIER = 1.25
UPDATES = ("vmap", "any")
PROBE = 5          # steps of the rate probe for --max-seconds


def versions() -> dict:
    return package_versions("jax-md", "jax", "jaxlib", "numpy")


def forced_reference(positions, box, xp=np):
    """Reference positions that make JAX-MD's rebuild check fire for every atom: ``positions`` moved by
    half the box in every direction and wrapped, so the minimum-image displacement from them is L/2 per
    component (> dr_threshold / 2 whenever the list is valid at all).  positions (..., N, 3), box (3,)."""
    return xp.mod(positions + 0.5 * box, box)


def error_record(systems: int, atoms: int, update: str, steps: int, error: str, device=None, version=None) -> dict:
    """The record of a run that measured nothing (``oom`` true for an out-of-memory)."""
    oom = any(s in error for s in ("RESOURCE_EXHAUSTED", "out of memory", "Out of memory", "OOM"))
    return {"engine": "jaxmd", "case": "independent", "systems": systems, "atoms": atoms, "N": systems * atoms,
            "precision": "single", "update": update, "steps": steps, "steps_per_s": None,
            "atom_steps_per_s": None, "device": device, "version": version, "oom": oom, "error": error[-2000:]}


def measure(systems: int, atoms: int, replicas_file: str | None, update: str, steps: int, warmup: int,
            max_retries: int, max_seconds: float | None, r_onset: float = R_ONSET) -> dict:
    import warnings
    # JAX-MD asks for float64 sums, which JAX (x64 off) truncates to float32 with a warning each time
    warnings.filterwarnings("ignore", message="Explicitly requested dtype")
    import jax
    import jax.numpy as jnp
    from jax import lax, vmap
    from jax_md import energy, partition, simulate, space

    import batch_replicas

    t_setup = time.perf_counter()
    rep = batch_replicas.get(systems, atoms, replicas_file)
    box = jnp.asarray(rep.box, dtype=jnp.float32)
    displacement, shift = space.periodic(box)
    neighbor_fn, energy_fn = energy.lennard_jones_neighbor_list(
        displacement, box, sigma=1.0, epsilon=1.0, r_onset=r_onset, r_cutoff=rep.cutoff,
        dr_threshold=rep.skin, capacity_multiplier=CAPACITY_MULTIPLIER, format=partition.Dense)
    init_fn, apply_fn = simulate.nve(energy_fn, shift, rep.dt)
    threshold_sq = jnp.float32((rep.skin / 2) ** 2)
    mass = jnp.float32(rep.masses[0])
    if not np.all(rep.masses == rep.masses[0]):
        raise ValueError("the replicas' atoms have different masses; this driver gives JAX-MD one mass")

    r_all = jnp.asarray(rep.positions, dtype=jnp.float32)
    p_all = jnp.asarray(rep.velocities * rep.masses[None, :, None], dtype=jnp.float32)

    def rebuild_every(positions, nbs):
        """Every replica's list rebuilt from its own positions (capacity of ``nbs``)."""
        nbs = nbs.set(reference_position=forced_reference(positions, box, jnp))
        return vmap(lambda r, nb: nb.update(r))(positions, nbs)

    @jax.jit
    def lists_from(template, positions):
        nbs = jax.tree_util.tree_map(lambda x: jnp.broadcast_to(x, (systems,) + x.shape), template)
        return rebuild_every(positions, nbs)

    def moved(positions, nbs):
        """Whether any atom of any replica moved more than dr_threshold / 2 since its list was built."""
        def one(r, ref):
            d = vmap(displacement)(r, ref)
            return jnp.any(jnp.sum(d * d, axis=-1) > threshold_sq)
        return jnp.any(vmap(one)(positions, nbs.reference_position))

    def body(i, carry):
        st, nbs, rebuilds = carry
        if update == "vmap":
            nbs = vmap(lambda r, nb: nb.update(r))(st.position, nbs)
        else:
            need = moved(st.position, nbs)
            nbs = lax.cond(need, rebuild_every, lambda r, nb: nb, st.position, nbs)
            rebuilds = rebuilds + need.astype(jnp.int32)
        st = vmap(lambda s, nb: apply_fn(s, neighbor=nb))(st, nbs)
        return st, nbs, rebuilds

    @jax.jit
    def run(st, nbs, count):
        return lax.fori_loop(0, count, body, (st, nbs, jnp.int32(0)))

    @jax.jit
    def energies(st, nbs):
        u = vmap(lambda r, nb: energy_fn(r, neighbor=nb))(st.position, nbs)
        k = 0.5 * jnp.sum(st.momentum ** 2, axis=(1, 2)) / mass
        return u / atoms, (u + k) / atoms

    template = neighbor_fn.allocate(r_all[0])
    nbrs = lists_from(template, r_all)
    if bool(jnp.any(nbrs.did_buffer_overflow)):
        raise RuntimeError("neighbour list overflowed at allocation")
    state = vmap(lambda r, p, nb: init_fn(jax.random.PRNGKey(0), r, rep.temperature, mass=mass, momenta=p,
                                          neighbor=nb))(r_all, p_all, nbrs)
    pe_zero, e_zero = (np.asarray(e, dtype=np.float64) for e in energies(state, nbrs))   # the start, no step yet
    retries = 0

    def batch(st, nbs, count):
        """Run count steps; after an overflow allocate again, rebuild, run again.  Returns
        (state, lists, seconds, rebuilds, overflowed)."""
        nonlocal retries
        for attempt in range(max_retries + 1):
            t0 = time.perf_counter()
            st2, nbs2, rebuilds = run(st, nbs, jnp.int32(count))
            jax.block_until_ready((st2, nbs2))
            sec = time.perf_counter() - t0
            over = np.asarray(nbs2.did_buffer_overflow) != 0
            if not over.any():
                return st2, nbs2, sec, int(rebuilds), False
            if attempt == max_retries:
                return st2, nbs2, sec, int(rebuilds), True
            retries += 1
            k = int(np.argmax(over))
            old = nbs.max_occupancy
            tmpl = neighbor_fn.allocate(st.position[k])
            if tmpl.max_occupancy < old + max(1, old // 4):
                tmpl = neighbor_fn.allocate(st.position[k], extra_capacity=old + max(1, old // 4) - tmpl.max_occupancy)
            print(f"jaxmd_batch: neighbour lists overflowed in {int(over.sum())} of {systems} replicas "
                  f"(capacity {old}); capacity {tmpl.max_occupancy}, lists rebuilt, batch run again", flush=True)
            nbs = lists_from(tmpl, st.position)
            jax.block_until_ready(run(st, nbs, jnp.int32(0)))     # compile for the new capacity, untimed
        raise AssertionError("unreachable")

    state, nbrs, _, _, bad = batch(state, nbrs, 1)              # compilation
    setup_s = time.perf_counter() - t_setup
    if bad:
        raise RuntimeError("neighbour list overflow in the first step, after reallocation")
    if max_seconds:
        state, nbrs, probe_s, _, bad = batch(state, nbrs, PROBE)
        rate = PROBE / probe_s
        warmup = min(warmup, max(PROBE, int(rate * max_seconds)))
        steps = min(steps, max(PROBE, int(rate * max_seconds)))
    state, nbrs, _, _, bad = batch(state, nbrs, warmup)
    if bad:
        raise RuntimeError(f"neighbour list overflow in the warm-up, after {max_retries} reallocations")
    e_start = np.asarray(energies(state, nbrs)[1], dtype=np.float64)
    state, nbrs, seconds, rebuilds, bad = batch(state, nbrs, steps)
    if bad:
        raise RuntimeError(f"neighbour list overflow (did_buffer_overflow) in the timed batch, "
                           f"after {max_retries} reallocations")
    e_end = np.asarray(energies(state, nbrs)[1], dtype=np.float64)
    if not (np.isfinite(e_start).all() and np.isfinite(e_end).all()):
        raise RuntimeError(f"energy not finite in {int((~np.isfinite(e_end)).sum())} replicas")

    dev = jax.devices()[0]
    v = versions()
    return {"engine": "jaxmd", "case": "independent", "systems": systems, "atoms": atoms, "N": systems * atoms,
            "precision": "single", "update": update, "format": "dense", "steps": steps, "warmup": warmup,
            "steps_per_s": steps / seconds, "atom_steps_per_s": systems * atoms * steps / seconds,
            "rebuilds": rebuilds if update == "any" else steps,
            "device": getattr(dev, "device_kind", str(dev)), "platform": dev.platform,
            "version": v.get("jax-md"), "jax": v.get("jax"), "jaxlib": v.get("jaxlib"),
            "r_onset": r_onset, "r_cutoff": rep.cutoff, "dr_threshold": rep.skin, "dt": rep.dt,
            "box": [float(b) for b in rep.box], "cell_list": nbrs.cell_list_fn is not None,
            "capacity_multiplier": CAPACITY_MULTIPLIER, "max_occupancy": int(nbrs.max_occupancy),
            "overflow_retries": retries, "setup_s": round(setup_s, 2),
            "PE_per_atom_0": float(pe_zero.mean()), "E_per_atom_0": float(e_zero.mean()), "E_per_atom_start": float(e_start.mean()),
            "E_per_atom_end": float(e_end.mean()),
            "drift_max_abs": float(np.abs(e_end - e_start).max())}


def child_main(args) -> int:
    r = measure(args.systems[0], args.atoms, args.replicas_file, args.update[0], args.steps, args.warmup,
                args.max_retries, args.max_seconds, args.r_onset)
    write_record(args._result, r, "w")
    return 0


def run_one(systems: int, update: str, args) -> dict:
    """One (R, update) in a child process; a failure becomes a record with 'error'."""
    child_args = ["--systems", str(systems), "--atoms", str(args.atoms), "--update", update,
                  "--steps", str(args.steps), "--warmup", str(args.warmup), "--max-retries", str(args.max_retries),
                  "--r-onset", repr(args.r_onset)]
    if args.replicas_file:
        child_args += ["--replicas-file", args.replicas_file]
    if args.max_seconds:
        child_args += ["--max-seconds", str(args.max_seconds)]
    if args.allow_cpu:
        child_args.append("--allow-cpu")
    rec, err, _ = run_child(__file__, child_args, args.timeout)
    return rec if rec is not None else error_record(systems, args.atoms, update, args.steps, err,
                                                     args._device, args._version)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--systems", type=int, nargs="+", default=[1024, 256, 64],
                    help="replica counts R, tried in this order (default 1024 256 64)")
    ap.add_argument("--atoms", type=int, default=1000, help="atoms per replica (default 1000)")
    ap.add_argument("--replicas-file", help="replicas written by batch_replicas.py (else built here from pycumd)")
    ap.add_argument("--update", nargs="+", choices=UPDATES, default=list(UPDATES))
    ap.add_argument("--steps", type=int, default=500, help="timed steps (default 500, as pycumd bench batch)")
    ap.add_argument("--warmup", type=int, default=100, help="warm-up steps (default 100, as pycumd bench batch)")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="cut the warm-up and the timed batch to about this many seconds each (a 5-step probe)")
    ap.add_argument("--max-retries", type=int, default=3)
    ap.add_argument("--r-onset", type=float, default=R_ONSET,
                    help=f"start of JAX-MD's smooth cutoff (default {R_ONSET}, JAX-MD's; just below 2.5: truncated LJ)")
    ap.add_argument("--every-size", action="store_true", help="run every R (default: stop at the first success)")
    ap.add_argument("--timeout", type=float, default=None, help="seconds allowed for each (R, update) run")
    ap.add_argument("--allow-cpu", action="store_true", help="run on JAX's CPU backend when there is no GPU")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--_child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--_result", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args._child:
        return child_main(args)

    reasons = []
    found = jax_device("jaxmd_batch", args.allow_cpu, reasons)
    if found is None:
        for update in args.update:
            write_record(args.json, error_record(args.systems[0], args.atoms, update, args.steps, reasons[0]))
        return 0
    args._device, fallback_version = found
    args._version = versions().get("jax-md", fallback_version)
    print(f"JAX-MD {args._version} ({versions()}), device {args._device}", flush=True)
    print(f"{'replicas':>8} {'atoms':>6} {'update':>6} {'steps/s':>9} {'atom-steps/s':>13}  note", flush=True)
    for update in args.update:
        for systems in args.systems:
            r = run_one(systems, update, args)
            if "error" in r:
                print(f"{systems:>8} {args.atoms:>6} {update:>6} {'-':>9} {'-':>13}  ERROR {r['error']}", flush=True)
            else:
                print(f"{systems:>8} {args.atoms:>6} {update:>6} {r['steps_per_s']:>9.1f} "
                      f"{r['atom_steps_per_s']:>13.3e}  E/N {r['E_per_atom_start']:.4f} -> {r['E_per_atom_end']:.4f}"
                      f" (largest |drift| {r['drift_max_abs']:.1e})  capacity {r['max_occupancy']}  rebuilds "
                      f"{r['rebuilds']}/{r['steps']}  overflow retries {r['overflow_retries']}", flush=True)
            write_record(args.json, r)
            if "error" not in r and not args.every_size:
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
