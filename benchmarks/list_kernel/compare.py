"""The neighbour-list kernel alone: the v5a kernel (verlet_v5a.cu, a copy of the kernel before this
work), the package's current kernel (launched by ``_CudaBuild._launch_list_kernel``) and variants
(variants.cu, and the package's verlet.cu with other defines: the "v7_*" labels), compiled side by
side and run on the same built state.

For each system: one normal neighbour build (``NeighborList.build``), whose list-kernel inputs are
captured; then every kernel is launched on them with its own storage (pre-filled with a sentinel)
and its counts, every storage word (so also: nothing written past a count or past the capacity) and
statistics (largest count, smallest r^2) are compared with the v5a kernel's, at the build's capacity
and at capacity 10 (overflow path), on the correctness systems also at capacity 3.  On the timing systems each kernel is timed alone: CUDA events
around each of 20 launches, median (and mean).

    PYTHONPATH=src python3 benchmarks/list_kernel/compare.py [--quick] [--only NAME ... | --set v7]
    PYTHONPATH=src python3 benchmarks/list_kernel/compare.py --ncu lean pair   # one launch each, for ncu
    OUT=/tmp/prof bash benchmarks/list_kernel/profile.sh v7_r0                  # ncu on 1M (profile.sh)

On the GPU only (CuPy).  In.lj system: fcc at density 0.8442, r_cut 2.5, skin 0.3, positions
jittered (Gaussian, sigma 0.12 in each coordinate) to a liquid-like disorder.
"""

from __future__ import annotations

import argparse
import inspect
import math
import sys
import time
import traceback
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
SENTINEL = -7

# label: (source, kernel name, defines, warps per block, atoms per lane)
V = "variants.cu", "build_list_variant"
V7 = "../../src/pycumd/neighbors/verlet.cu", "build_neighbor_list"   # list kernel v7 is the package's
KERNELS = {
    "v5a": ("verlet_v5a.cu", "build_neighbor_list", {}, 4, 1),
    # first device call (2026-11-21): lean loop, unroll, register bounds, block sizes, two atoms per lane
    "v5a_mb8": ("verlet_v5a.cu", "build_neighbor_list", {"LIST_MIN_BLOCKS": 8}, 4, 1),
    "loop": (*V, {"LK_LEAN": 0}, 4, 1),
    "lean": (*V, {"LK_LEAN": 1}, 4, 1),
    "lean_u1": (*V, {"LK_LEAN": 1, "LK_UNROLL": 1}, 4, 1),
    "lean_u2": (*V, {"LK_LEAN": 1, "LK_UNROLL": 2}, 4, 1),
    "lean_mb6": (*V, {"LK_LEAN": 1, "LIST_MIN_BLOCKS": 6}, 4, 1),
    "lean_mb7": (*V, {"LK_LEAN": 1, "LIST_MIN_BLOCKS": 7}, 4, 1),
    "lean_mb8": (*V, {"LK_LEAN": 1, "LIST_MIN_BLOCKS": 8}, 4, 1),
    "lean_u1_mb8": (*V, {"LK_LEAN": 1, "LK_UNROLL": 1, "LIST_MIN_BLOCKS": 8}, 4, 1),
    "lean_w2": (*V, {"LK_LEAN": 1, "LIST_WARPS": 2}, 2, 1),
    "lean_w8": (*V, {"LK_LEAN": 1, "LIST_WARPS": 8}, 8, 1),
    "lean_s64": (*V, {"LK_LEAN": 1, "LIST_STAGE": 64}, 4, 1),
    "pair": (*V, {"LK_LEAN": 1, "LK_ATOMS": 2}, 4, 2),
    "pair_u1": (*V, {"LK_LEAN": 1, "LK_ATOMS": 2, "LK_UNROLL": 1}, 4, 2),
    "pair_mb6": (*V, {"LK_LEAN": 1, "LK_ATOMS": 2, "LIST_MIN_BLOCKS": 6}, 4, 2),
    "pair_loop": (*V, {"LK_LEAN": 0, "LK_ATOMS": 2}, 4, 2),
    # second device call: v7 (lean loop + one round of cell-bound loads + candidate loads in flight
    # + output ring), by ring rows, stage size, block size, register bound
    "v7_r0": (*V7, {"LIST_RING": 0, "LIST_STAGE": 64}, 4, 1),
    "v7_r0_s128": (*V7, {"LIST_RING": 0, "LIST_STAGE": 128}, 4, 1),
    "v7_r16": (*V7, {"LIST_RING": 16, "LIST_STAGE": 64}, 4, 1),
    "v7": (*V7, {"LIST_RING": 32, "LIST_STAGE": 64}, 4, 1),
    "v7_r64": (*V7, {"LIST_RING": 64, "LIST_STAGE": 64}, 4, 1),
    "v7_s128": (*V7, {"LIST_RING": 32, "LIST_STAGE": 128}, 4, 1),
    "v7_w2": (*V7, {"LIST_RING": 32, "LIST_STAGE": 64, "LIST_WARPS": 2}, 2, 1),
    "v7_mb6": (*V7, {"LIST_RING": 32, "LIST_STAGE": 64, "LIST_MIN_BLOCKS": 6}, 4, 1),
    # fifth session: register bounds for double positions (time with --timing-precision mixed)
    "v7_pkg": (*V7, {}, 4, 1),
    "v7_mb4": (*V7, {"LIST_MIN_BLOCKS": 4}, 4, 1),
    "v7_mb5": (*V7, {"LIST_MIN_BLOCKS": 5}, 4, 1),
    # single precision: the 64-row ring together with the register bound (fifth session; the package's
    # default since; a variant without the smallest-r^2 statistic was 3.5% faster at 1M, not kept)
    "v7_r64_mb6": (*V7, {"LIST_RING": 64, "LIST_MIN_BLOCKS": 6}, 4, 1),
    "v7_r32": (*V7, {"LIST_RING": 32}, 4, 1),       # the ring of v7 (package default from v8c: 64 rows)
}
#: the kernels of the second device call (--set v7)
SETS = {"double_bounds": ["v5a", "v7_pkg", "v7_mb4", "v7_mb5", "v7_mb6"],
        "ring64": ["v5a", "v7_r32", "v7_pkg"],
        "v7": ["v5a", "lean", "lean_s64", "lean_w2", "v7_r0", "v7_r0_s128", "v7_r16", "v7", "v7_r64", "v7_s128",
               "v7_w2", "v7_mb6"]}
PACKAGE = "package"          # the package's kernel through _CudaBuild._launch_list_kernel
#: kernels whose lists are checked on every correctness system (a register bound changes no arithmetic)
CHECKED = ("loop", "lean", "lean_w8", "lean_s64", "pair", "pair_loop", "v7_r0", "v7_r0_s128", "v7_r16", "v7", "v7_r64",
           "v7_s128", "v7_w2", "v7_r64_mb6")


def jittered_fcc(cells, sigma=0.12, seed=5):
    from pycumd.system import System, lattice_system
    s = lattice_system("fcc", cells, density=0.8442)
    rng = np.random.default_rng(seed)
    pos = s.positions + rng.normal(0.0, sigma, s.positions.shape)
    return System(s.box, pos, s.masses, "lj")


def uniform_gas(n, L, seed=7, squeeze_x=1.0):
    """n uniform random points in a box L (3,), x limited to [0, squeeze_x * Lx): dense rows."""
    from pycumd.box import Box
    from pycumd.system import System
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 3)) * np.asarray(L, float)
    pos[:, 0] *= squeeze_x
    return System(Box(L), pos, [1.0], "lj")


class Built:
    """One normal build of a system; the list kernel's inputs captured from _launch_list_kernel."""

    def __init__(self, backend, system, precision, reorder, r_cut=2.5, skin=0.3, cuda_options=()):
        from pycumd.neighbors.verlet import NeighborList
        from pycumd.precision import get_precision
        from pycumd.state import State
        self.backend = backend
        self.state = State.from_system(system, backend, get_precision(precision, "cuda"))
        self.nl = NeighborList(backend, r_cut, skin, overlap_distance=0.0, reorder=reorder,
                               cuda_options=cuda_options)
        impl = self.nl._impl
        original = impl._launch_list_kernel
        captured = {}

        def capture(*a):
            # (state, keys, n_cells, r_list, capacity, nl, stats[, bin_start, order]): the inputs are
            # copied (stream-ordered, before the kernel runs), since a build may keep them in memory
            # that it reuses afterwards
            sort = getattr(impl, "sort", None)
            bin_start, order = (a[7], a[8]) if len(a) > 8 else (sort.bin_start, sort.order)
            captured.update(keys=a[1].copy(), bin_start=bin_start.copy(), order=order.copy(),
                            n_cells=tuple(int(c) for c in a[2]), r_list=float(a[3]), capacity=int(a[4]))
            return original(*a)

        impl._launch_list_kernel = capture
        self.nl.build(self.state)
        del impl._launch_list_kernel
        self.c = captured
        self.n = self.state.n_atoms
        self.n_cells = captured["n_cells"]
        self.capacity = self.nl.capacity
        self.reorder = reorder

    def args(self, nbr, count, stats, capacity, chunks_per_row):
        cp = self.backend.xp
        s, real = self.state, self.state.positions.dtype.type
        nx, ny, nz = self.n_cells
        L = np.asarray(s.box_lengths, dtype=np.float64)
        box = [real(x) for x in L] + [real(x) for x in 1.0 / L]
        return (s.positions, self.c["keys"], self.c["bin_start"], self.c["order"],
                np.int32(bool(self.reorder)), np.int32(nx), np.int32(ny), np.int32(nz),
                np.int32(chunks_per_row), *box, real(self.c["r_list"] * self.c["r_list"]),
                nbr, count, np.int32(capacity), np.int32(self.n), stats[0:1].view(cp.int32), stats[1:2])

    def buffers(self, capacity):
        cp = self.backend.xp
        return (cp.full(capacity * self.n, SENTINEL, cp.int32), cp.full(self.n, SENTINEL, cp.int32),
                cp.array([0, 0x7F7FFFFF], dtype=cp.uint32))


_modules = {}


def compile_kernel(backend, label, dtype, extra_options=()):
    source, name, defines, warps, atoms = KERNELS[label]
    real_t = "float" if dtype == np.float32 else "double"
    defs = {"real_t": real_t, **defines}
    key = (source, tuple(sorted(defs.items())), tuple(extra_options))
    if key not in _modules:
        pkg = Path(__import__("pycumd").__file__).resolve().parent
        opts = ("--std=c++17", f"-I{pkg}", f"-I{pkg / 'neighbors'}") + tuple(f"-D{k}={v}" for k, v in defs.items())
        _modules[key] = backend.xp.RawModule(code=(HERE / source).read_text(), options=opts + tuple(extra_options))
    return _modules[key], name, warps, atoms


def chunks_per_row(n, n_cells, atoms_per_lane):
    nx, ny, nz = n_cells
    mean = n / (ny * nz)
    return max(1, math.ceil((mean + 4.0 * math.sqrt(mean) + 1.0) / (32.0 * atoms_per_lane)))


def launcher(built, label, capacity, extra_options=()):
    """A callable launching kernel ``label`` on ``built``, and its (nbr, count, stats) buffers."""
    nbr, count, stats = built.buffers(capacity)
    if label == PACKAGE:
        from types import SimpleNamespace
        impl = built.nl._impl
        shim = SimpleNamespace(reorder=built.reorder, nbr=nbr, nbr_count=count, r_list=built.c["r_list"],
                               capacity=capacity)
        c = built.c
        n_params = len(inspect.signature(impl._launch_list_kernel).parameters)

        def run():
            if n_params > 7:
                impl._launch_list_kernel(built.state, c["keys"], c["n_cells"], c["r_list"], capacity, shim, stats,
                                         c["bin_start"], c["order"])
            else:
                impl.sort = SimpleNamespace(bin_start=c["bin_start"], order=c["order"])
                impl._launch_list_kernel(built.state, c["keys"], np.asarray(c["n_cells"]), c["r_list"], capacity,
                                         shim, stats)
        return run, (nbr, count, stats), {}
    module, name, warps, atoms = compile_kernel(built.backend, label, built.state.positions.dtype, extra_options)
    nx, ny, nz = built.n_cells
    if min(nx, ny, nz) < 7:
        name = name + "_rint"
    fn = module.get_function(name)
    cpr = chunks_per_row(built.n, built.n_cells, atoms)
    grid = ((ny * nz * cpr + warps - 1) // warps,)
    args = built.args(nbr, count, stats, capacity, cpr)

    def run():
        fn(grid, (32 * warps,), args)
    info = {k: getattr(fn, a, None) for k, a in (("regs", "num_regs"), ("local", "local_size_bytes"),
                                                  ("smem", "shared_size_bytes"))}
    return run, (nbr, count, stats), info


def same(a, b):
    """(identical?, text) for two (nbr, count, stats) results."""
    cp = __import__("cupy")
    problems = []
    if not bool(cp.array_equal(a[1], b[1])):
        problems.append(f"counts differ at {int((a[1] != b[1]).sum())} atoms")
    if not bool(cp.array_equal(a[0], b[0])):
        problems.append(f"storage differs at {int((a[0] != b[0]).sum())} words")
    if not bool(cp.array_equal(a[2], b[2])):
        problems.append(f"stats {a[2].get().tolist()} vs {b[2].get().tolist()}")
    return not problems, "; ".join(problems) or "identical"


def time_kernel(backend, run, reps=20, warm=3):
    cp = backend.xp
    for _ in range(warm):
        run()
    events = [(cp.cuda.Event(), cp.cuda.Event()) for _ in range(reps)]
    for a, b in events:
        a.record()
        run()
        b.record()
    events[-1][1].synchronize()
    t = np.array([cp.cuda.get_elapsed_time(a, b) * 1e3 for a, b in events])
    return float(np.median(t)), float(t.mean()), float(t.min())


def check_system(backend, title, built, labels, capacities, out):
    nx, ny, nz = built.n_cells
    counts = built.nl.nbr_count
    print(f"{title:<34} N={built.n:>8} cells={built.n_cells} cap={built.capacity} "
          f"mean count={float(counts.mean()):.1f} max={int(counts.max())}", file=out, flush=True)
    bad = 0
    for cap in capacities:
        run, ref, _ = launcher(built, "v5a", cap)
        run()
        for label in labels:
            if label == "v5a":
                continue
            try:
                r, res, _ = launcher(built, label, cap)
                r()
                ok, text = same(ref, res)
            except Exception as e:
                ok, text, res = False, f"{type(e).__name__}: {str(e)[:300]}", None
            bad += not ok
            print(f"   capacity {cap:>4} {label:<10} {text}", file=out, flush=True)
            del res
        del ref
    return bad


def timing_system(backend, cells, all_labels, check, out, precision="single"):
    """Time every kernel alone on the jittered fcc system (reordered); then check its lists."""
    built = Built(backend, jittered_fcc(cells), precision, True)
    print(f"\n## timing fcc{cells} jitter {precision} reorder: N={built.n} cells={built.n_cells} cap={built.capacity}",
          flush=True)
    runs = {}
    for label in ["v5a"] + [x for x in all_labels if x != "v5a"]:
        try:
            run, res, info = launcher(built, label, built.capacity)
        except Exception as e:                    # e.g. a variant that does not compile
            print(f"{label}: {type(e).__name__}: {str(e)[:2000]}", flush=True)
            continue
        runs[label] = (run, info)
        del res
    times = {label: [] for label in runs}
    for _ in range(2):                    # two interleaved rounds; the better median of the two is kept
        for label, (run, _) in runs.items():
            times[label].append(time_kernel(backend, run))
    base = min(t[0] for t in times["v5a"])
    for label, (run, info) in runs.items():
        med = min(t[0] for t in times[label])
        mean = min(t[1] for t in times[label])
        spread = "/".join(f"{t[0]:.1f}" for t in times[label])
        print(f"{built.n:>8} {label:<12} median {med:8.1f} us  mean {mean:8.1f} us  vs v5a {med / base:5.3f}  "
              f"(rounds {spread}) {info}", flush=True)
    del runs
    __import__("cupy").get_default_memory_pool().free_all_blocks()
    if not check:
        return 0
    return check_system(backend, f"fcc{cells} jitter {precision} reorder", built, all_labels, (built.capacity, 10), out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", nargs="+", help="kernels to compare (default: all, plus the package's)")
    ap.add_argument("--set", choices=sorted(SETS), help="a named set of kernels instead of --only")
    ap.add_argument("--quick", action="store_true", help="fewer correctness systems")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--timing-precision", nargs="+", default=["single"], choices=["single", "mixed", "double"],
                    help="precisions of the timing systems (default single)")
    ap.add_argument("--ncu", nargs="*", help="one 1M build (the package's kernel) then one launch of each named kernel")
    args = ap.parse_args(argv)
    from pycumd.backend import select
    backend = select("cuda")
    import cupy as cp
    out = sys.stdout
    print(f"# device {backend.device_name}, CuPy {cp.__version__}, CUDA runtime {cp.cuda.runtime.runtimeGetVersion()}, "
          f"driver {cp.cuda.runtime.driverGetVersion()}", flush=True)

    if args.ncu is not None:
        built = Built(backend, jittered_fcc(63), "single", True, cuda_options=("-lineinfo",))
        for label in args.ncu:
            run, _, info = launcher(built, label, built.capacity, ("-lineinfo",))
            run()
            backend.synchronize()
            print(f"ncu launch {label} {info}", flush=True)
        return 0

    labels = SETS[args.set] if args.set else (args.only or list(KERNELS))
    all_labels = labels + [PACKAGE]
    t0 = time.perf_counter()
    bad = 0
    # timing systems first (single precision, reordered: the bench's set-up)
    for cells, precision in [(c, p) for p in args.timing_precision for c in (20, 63)]:
        try:
            bad += timing_system(backend, cells, all_labels, not args.no_check, out, precision)
        except Exception:
            traceback.print_exc()
            bad += 1
        cp.get_default_memory_pool().free_all_blocks()
    if not args.no_check:
        print("\n## correctness", flush=True)
        systems = [
            ("fcc20 jitter double reorder", lambda: Built(backend, jittered_fcc(20), "double", True)),
            ("fcc20 jitter single noreorder", lambda: Built(backend, jittered_fcc(20), "single", False)),
            ("fcc63 jitter single noreorder", lambda: Built(backend, jittered_fcc(63, seed=9), "single", False)),
            ("fcc6 (7 cells) single", lambda: Built(backend, jittered_fcc(6), "single", True)),
            ("fcc6 (7 cells) double noreorder", lambda: Built(backend, jittered_fcc(6), "double", False)),
            ("fcc5 rint single", lambda: Built(backend, jittered_fcc(5), "single", True)),
            ("fcc4 rint (4 cells) single", lambda: Built(backend, jittered_fcc(4), "single", True)),
            ("fcc5 rint double noreorder", lambda: Built(backend, jittered_fcc(5), "double", False)),
            ("gas 32k, x squeezed 0.5 (dense rows)",
             lambda: Built(backend, uniform_gas(32000, [33.6] * 3, squeeze_x=0.5), "single", True)),
            ("gas long box 280x9.8x9.8 double", lambda: Built(backend, uniform_gas(2000, [280.0, 9.8, 9.8]), "double", False)),
        ]
        if args.quick:
            systems = systems[:1] + systems[3:6]
        for title, make in systems:
            try:
                built = make()
                checked = [x for x in all_labels if x in CHECKED or x in ("v5a", PACKAGE)]
                bad += check_system(backend, title, built, checked, (built.capacity, 10, 3), out)
                del built
            except Exception:
                traceback.print_exc()
                bad += 1
            cp.get_default_memory_pool().free_all_blocks()
    print(f"\n{'ALL IDENTICAL' if not bad else f'{bad} DIFFERENCES'} ({time.perf_counter() - t0:.0f} s)", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
