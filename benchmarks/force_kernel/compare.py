"""The pair-force kernel alone: variants of the package's forces.cu (compile-time defines) side by
side on one built state, each compared word for word with the kernel as it was ("before") and
timed alone.

For each system (jittered fcc, in.lj density 0.8442, r_cut 2.5, skin 0.3, reordered by cell) and
precision: one normal neighbour build; then every variant computes forces (and, in a second check,
energies and virials) into outputs poisoned with NaN before each launch, and every output word is
compared with the reference variant's.  Every variant adds the same pairs in the same order, so
with ``--deterministic`` (``--fmad=false``) the words must be identical; without it the compiler
contracts products and sums into fused multiply-adds differently in another loop shape, and the
largest force difference over the rms force is printed (rounding level: ~1e-6 single).  Timing: CUDA events around each of 20 launches without
energies (the ordinary step's launch), median.

    PYTHONPATH=src python3 benchmarks/force_kernel/compare.py [--cells 20 63] [--precision single mixed]
    PYTHONPATH=src python3 benchmarks/force_kernel/compare.py --ncu --cells 63 [--only LABEL ...]   # for ncu

On the GPU only (CuPy).
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

# label: defines (FORCE_ONE_TYPE_PATH, FORCE_BATCH, FORCE_PREFETCH, FORCE_MIN_BLOCKS: forces.cu)
def _v(one_type, batch, prefetch, min_blocks=None):
    d = {"FORCE_ONE_TYPE_PATH": one_type, "FORCE_BATCH": batch, "FORCE_PREFETCH": prefetch}
    if min_blocks is not None:                # otherwise the package's default bound
        d["FORCE_MIN_BLOCKS"] = min_blocks
    return d


VARIANTS = {
    "before": _v(0, 1, 0, 1),          # the kernel before this work: one neighbour at a time, table rows
    "package": {},                     # the package's defaults
    "list_ldg": {"FORCE_LIST_LOAD": 0},    # package, list entries by __ldg (the default before)
    "list_cs": {"FORCE_LIST_LOAD": 1},     # package, list entries by __ldcs
    "list_na": {"FORCE_LIST_LOAD": 2},     # package, list entries not kept in L1 (default: double, composite)
    "list_ef": {"FORCE_LIST_LOAD": 3},     # package, ... and first out of L2 (default: single)
    "ot_b1": _v(1, 1, 0, 1),
    "ot_b1_mb16": _v(1, 1, 0, 16),     # 32 registers
    "t_b2": _v(0, 2, 0, 1),
    "t_b4": _v(0, 4, 0, 1),
    "t_b4p": _v(0, 4, 1, 1),
    "ot_b2": _v(1, 2, 0, 1),
    "ot_b2p": _v(1, 2, 1, 1),
    "t_b2p": _v(0, 2, 1, 1),
    "ot_b2p_mb8": _v(1, 2, 1, 8),      # 64 registers
    "ot_b2p_mb10": _v(1, 2, 1, 10),    # 51 registers
    "ot_b4": _v(1, 4, 0, 1),
    "ot_b4p": _v(1, 4, 1, 1),
    "ot_b4p_mb8": _v(1, 4, 1, 8),      # 64 registers
    "ot_b4p_mb12": _v(1, 4, 1, 12),    # 40 registers
    "ot_b8": _v(1, 8, 0, 1),
    "ot_b8p": _v(1, 8, 1, 1),
    "ot_b8_mb8": _v(1, 8, 0, 8),
}
REFERENCE = "before"
#: mixed precision's fixed-point kernel (pair_forces_fixed): defines per label; compared with the
#: reference (float64 separations) by the largest force difference, not by bits
FIXED_VARIANTS = {
    "fixed": {},                           # the package's defaults (Lennard-Jones: 12 blocks, 40 registers)
    "fixed_mb1": {"FIXED_MIN_BLOCKS": 1},  # no register bound
    "fixed_mb8": {"FIXED_MIN_BLOCKS": 8},  # 64 registers (first v9 setting)
    "fixed_mb10": {"FIXED_MIN_BLOCKS": 10},   # 48 registers
    "fixed_mb12": {"FIXED_MIN_BLOCKS": 12},   # 40 registers
    "fixed_ef": {"FORCE_LIST_LOAD": 3},    # list entries not kept in L1 and first out of L2 (default: 2)
}


def jittered_fcc(cells, sigma=0.12, seed=5):
    from pycumd.system import System, lattice_system
    s = lattice_system("fcc", cells, density=0.8442)
    rng = np.random.default_rng(seed)
    return System(s.box, s.positions + rng.normal(0.0, sigma, s.positions.shape), s.masses, "lj")


def run(cells_list, precisions, ncu=False, repeats=20, deterministic=False):
    import cupy as cp
    from pycumd import backend as backends
    from pycumd.forces import BLOCK, default_lanes, potential_defines
    from pycumd.neighbors.verlet import NeighborList
    from pycumd.potentials.lennard_jones import LennardJones
    from pycumd.precision import get_precision
    from pycumd.state import State

    be = backends.select("cuda")
    lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    rows = []
    for cells in cells_list:
        system = jittered_fcc(cells)
        for pname in precisions:
            prec = get_precision(pname, "cuda", deterministic=deterministic)
            state = State.from_system(system, be, prec)
            nl = NeighborList(be, 2.5, 0.3, overlap_distance=0.0)
            nl.build(state)
            n = state.n_atoms
            lanes = default_lanes(n)
            table = cp.asarray(lj.table(1), dtype=prec.pair_dtype)
            L = np.asarray(state.box_lengths, dtype=np.float64)
            real = prec.state_dtype
            results = {}
            for label, defines in VARIANTS.items():
                mod = be.kernel_module("forces.cu", {**prec.cuda_defines, **potential_defines(lj), **defines},
                                       options=prec.cuda_options)
                fns = (mod.get_function("pair_forces"), mod.get_function("pair_forces_energy"))
                fn = fns[0]
                outs = {k: cp.empty_like(getattr(state, k)) for k in ("forces", "energy", "virial")}

                def launch(with_energy):
                    fns[with_energy](((n * lanes + BLOCK - 1) // BLOCK,), (BLOCK,),
                       (state.control, state.positions, nl.nbr, nl.nbr_count, np.int32(n), np.int32(n), table,
                        np.int32(1), *[real(x) for x in L], *[real(x) for x in 1.0 / L], outs["forces"],
                        outs["energy"], outs["virial"], np.int32(lanes)))

                if ncu:
                    launch(0)
                    cp.cuda.runtime.deviceSynchronize()
                    continue
                words = {}
                for with_energy in (0, 1):
                    for a in outs.values():
                        a.fill(np.nan)
                    launch(with_energy)
                    keys = ("forces", "energy", "virial") if with_energy else ("forces",)
                    words[with_energy] = {k: outs[k].view(cp.uint8).get() for k in keys}
                results[label] = words
                forces = outs["forces"].get()
                times = []
                for _ in range(repeats):
                    a, b = cp.cuda.Event(), cp.cuda.Event()
                    a.record()
                    launch(0)
                    b.record()
                    b.synchronize()
                    times.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
                same = all(np.array_equal(results[label][w][k], results[REFERENCE][w][k])
                           for w in (0, 1) for k in results[label][w])
                if label == REFERENCE:
                    reference_forces = forces
                # without --fmad=false the compiler may contract other products and sums into
                # fused multiply-adds in another loop shape: the size of such rounding differences
                deviation = float(np.max(np.abs(forces - reference_forces)) / np.sqrt(np.mean(reference_forces ** 2)))
                row = dict(n=n, precision=pname, variant=label, lanes=lanes, median_us=float(np.median(times)),
                           mean_us=float(np.mean(times)), regs=getattr(fn, "num_regs", None),
                           bits="identical" if same else "DIFFERENT", max_deviation_over_rms=deviation)
                rows.append(row)
                print(f"{n:>10,d} {pname:7s} {label:14s} lanes {lanes}  {row['median_us']:9.1f} us  "
                      f"regs {row['regs']}  {row['bits']}  max|df|/rms(f) {deviation:.1e}", flush=True)
            if prec.fixed_point_forces:
                rows += _time_fixed(be, prec, lj, state, nl, lanes, table,
                                    None if ncu else reference_forces, repeats)
            del state, nl
            cp.get_default_memory_pool().free_all_blocks()
    return rows


def _time_fixed(be, prec, lj, state, nl, lanes, table, reference_forces, repeats):
    """Mixed precision's pair_forces_fixed (with its fixed-point image): time and deviation.
    Without ``reference_forces`` (--ncu): one launch of each variant, nothing timed."""
    import cupy as cp
    from pycumd.forces import BLOCK, potential_defines

    n = state.n_atoms
    L = np.asarray(state.box_lengths, dtype=np.float64)
    image = cp.empty((n, 4), np.uint32)
    rows = []
    for label, defines in FIXED_VARIANTS.items():
        mod = be.kernel_module("forces.cu", {**prec.cuda_defines, **potential_defines(lj), **defines},
                               options=prec.cuda_options)
        make, fn = mod.get_function("fixed_point_image"), mod.get_function("pair_forces_fixed")
        forces = cp.full_like(state.forces, np.nan)

        def image_launch():
            make(((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                 (state.control, state.positions, image, np.int32(n), *[np.float64(2.0**32 / x) for x in L]))

        def launch():
            fn(((n * lanes + BLOCK - 1) // BLOCK,), (BLOCK,),
               (state.control, image, nl.nbr, nl.nbr_count, np.int32(n), np.int32(n), table, np.int32(1),
                *[np.float32(x / 2.0**32) for x in L], forces, state.energy, state.virial, np.int32(lanes)))

        if reference_forces is None:
            image_launch()
            launch()
            cp.cuda.runtime.deviceSynchronize()
            continue
        times = {"image": [], "force": []}
        for _ in range(repeats):
            for part, f in (("image", image_launch), ("force", launch)):
                a, b = cp.cuda.Event(), cp.cuda.Event()
                a.record()
                f()
                b.record()
                b.synchronize()
                times[part].append(cp.cuda.get_elapsed_time(a, b) * 1e3)
        got = forces.get()
        deviation = float(np.max(np.abs(got - reference_forces)) / np.sqrt(np.mean(reference_forces ** 2)))
        row = dict(n=n, precision=prec.name, variant=label, lanes=lanes, median_us=float(np.median(times["force"])),
                   image_us=float(np.median(times["image"])), regs=getattr(fn, "num_regs", None),
                   bits="not compared", max_deviation_over_rms=deviation, finite=bool(np.isfinite(got).all()))
        rows.append(row)
        print(f"{n:>10,d} {prec.name:7s} {label:14s} lanes {lanes}  {row['median_us']:9.1f} us "
              f"(+ image {row['image_us']:.1f} us)  regs {row['regs']}  max|df|/rms(f) {deviation:.1e}  "
              f"finite {row['finite']}", flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cells", type=int, nargs="+", default=[20, 63])
    ap.add_argument("--precision", nargs="+", default=["single", "mixed"])
    ap.add_argument("--ncu", action="store_true", help="one launch per variant (for Nsight Compute)")
    ap.add_argument("--only", nargs="+", help="these variants (labels) only")
    ap.add_argument("--deterministic", action="store_true",
                    help="kernels built with --fmad=false (no contraction): the variants must give the same bits")
    args = ap.parse_args(argv)
    if args.only:
        unknown = set(args.only) - set(VARIANTS)
        if unknown:
            ap.error(f"unknown variants {sorted(unknown)}: choose from {', '.join(VARIANTS)}")
        for label in list(VARIANTS):
            if label not in args.only and label != REFERENCE:
                del VARIANTS[label]
    rows = run(args.cells, args.precision, ncu=args.ncu, deterministic=args.deterministic)
    if any(r["bits"] == "DIFFERENT" for r in rows) or not all(r.get("finite", True) for r in rows):
        print("SOME VARIANT DIFFERS FROM THE REFERENCE")
        return 1
    if rows:
        print("ALL IDENTICAL")
    return 0


if __name__ == "__main__":
    sys.exit(main())
