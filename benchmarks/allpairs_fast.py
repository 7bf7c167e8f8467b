"""All-pairs Yukawa kernels at one size: every launch shape of the fast path and the generic kernel.

    PYTHONPATH=src python benchmarks/allpairs_fast.py --n 27648 --repeats 20 --json out.jsonl

For each (precision, separation mode) it times every candidate launch shape of the fast path
(CUDA events, mean of ``repeats`` launches after a warm-up), the generic kernel for reference,
the energy-and-virial launch once, and checks the forces of 512 sampled targets against a
float64 NumPy reference (minimum image, every source).  Pairs per second count N (N - 1) pairs.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from pycumd.bench.ions import white_dwarf_liquid
from pycumd.neighbors.allpairs import BLOCK_CANDIDATES, NEWTON_CANDIDATES, YUKAWA_CANDIDATES, AllPairsForces
from pycumd.precision import get_precision
from pycumd.simulation import Simulation


def reference_forces(system, pot, idx):
    """Float64 forces on targets ``idx`` from every source (NumPy)."""
    pos, L = system.positions, system.box.L
    table = pot.table(system.n_types)
    kappa = table[0, 5]
    t = system.types
    out = np.empty((len(idx), 3))
    for k, i in enumerate(idx):
        d = pos[i] - pos
        d -= L * np.rint(d / L)
        r2 = (d * d).sum(axis=1)
        r2[i] = np.inf
        r = np.sqrt(r2)
        A = table[t[i] * system.n_types + t, 4]
        fr = A * np.exp(-kappa * r) / r * (1.0 / r + kappa) / r
        out[k] = (fr[:, None] * d).sum(axis=0)
    return out


def time_launches(forces, state, launch, block, repeats, with_energy=False):
    cp = forces.backend.xp
    launch(state, block, with_energy)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    for _ in range(repeats):
        launch(state, block, with_energy)
    stop.record()
    stop.synchronize()
    return cp.cuda.get_elapsed_time(start, stop) / repeats


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=27648)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--variants", nargs="+", default=["single:exact", "mixed:exact", "single:rounded",
                                                        "double:generic"])
    ap.add_argument("--shapes", nargs="*",
                    help="fast-path shapes m,l,R,S or newton,W,R (default: the candidates)")
    ap.add_argument("--newton-unroll", type=int, default=4, help="Newton shapes: unroll of the 32-step loop")
    ap.add_argument("--min-blocks", type=int, default=0,
                    help="fast path: __launch_bounds__(256, MIN_BLOCKS) register cap (0: none)")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    system, pot, dt = white_dwarf_liquid(args.n)
    n = args.n
    rng = np.random.default_rng(1)
    idx = np.sort(rng.choice(n, 512, replace=False))
    f_ref = reference_forces(system, pot, idx)
    shapes = ([tuple(x if x == "newton" else int(x) for x in s.split(",")) for s in args.shapes] if args.shapes
              else YUKAWA_CANDIDATES + NEWTON_CANDIDATES)
    print(f"{'variant':>16} {'shape':>12} {'ms':>8} {'pairs/s':>10} {'max err':>9}", flush=True)
    for variant in args.variants:
        precision, mode = variant.split(":")
        sim = Simulation(system.copy(), pot, device="cuda", precision=precision, pair_method="all_pairs")
        prec = get_precision(precision, "cuda")
        fast = mode != "generic"
        forces = AllPairsForces(pot, 2, sim.backend, prec, fast=fast, exact_separation=(mode == "exact"),
                                min_blocks_per_sm=args.min_blocks, newton_unroll=args.newton_unroll)
        sim.forces = forces
        state = sim.state
        sim.neighbors.build(state)
        launch = forces._launch_fast if forces.fast else forces._launch
        results = []
        for block in (shapes if forces.fast else BLOCK_CANDIDATES):
            ms = time_launches(forces, state, launch, block, args.repeats)
            f = sim.backend.to_host(state.forces).astype(np.float64)[idx]
            err = float(np.abs(f - f_ref).max() / np.abs(f_ref).max())
            results.append((ms, block, err))
            print(f"{variant:>16} {'x'.join(map(str, block)):>12} {ms:8.4f} {n * (n - 1) / ms * 1e3:10.3e} "
                  f"{err:9.2e}", flush=True)
        ms, block, err = min(results, key=lambda result: result[0])
        ms_e = time_launches(forces, state, launch, block, max(3, args.repeats // 4), with_energy=True)
        row = {"variant": variant, "min_blocks": args.min_blocks, "newton_unroll": args.newton_unroll, "n": n,
               "best_shape": list(block), "ms": ms, "ms_with_energy": ms_e,
               "pairs_per_s": n * (n - 1) / ms * 1e3, "max_rel_err": err,
               "all": {"x".join(map(str, b)): m for m, b, _ in results}, "device": sim.backend.device_name}
        print(f"{variant:>16} best {'x'.join(map(str, block))}: {ms:.4f} ms ({row['pairs_per_s']:.3e} pairs/s), "
              f"with energy {ms_e:.4f} ms, max err {err:.2e}", flush=True)
        if args.json:
            with open(args.json, "a") as fh:
                fh.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
