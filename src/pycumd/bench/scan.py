"""``pycumd bench scan``: prefix-sum throughput against peers, and the counting sort.

Times every GPU method of :func:`pycumd.prefix_sum` and the peers (numpy.cumsum on the host,
cupy.cumsum, CUB's in-place DeviceScan through CuPy, cuda.compute's inclusive_scan,
torch.cumsum) over sizes 2^9 .. 2^27 plus non-powers of two, measures the device-to-device
copy bandwidth in the same run, and writes into ``--out-dir``:

- ``scan_bench_<dtype>.md``   table: time per call (us), Me/s, fraction of copy bandwidth
- ``scan_bench_<dtype>.png``  Me/s against size, log-log (like the seed's Figure 1)
- ``scan_bench_<dtype>.json`` every number, with device and versions

GPU times are CUDA events around one call after warm-up, median of ``--repeat`` calls; the
device is idle at each start event, so small sizes include the host's launch cost (what a
caller waits for).  Inputs rotate over several buffers (at least 128 MB together, at most 64
buffers) so that repeated calls do not run out of the 50 MB L2 cache.  Run with
``python -m pycumd.bench.scan``.
"""

from __future__ import annotations

import datetime
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from pycumd.bench import argument_parser, default_out_dir

DEFAULT_SIZES = [2**k for k in range(9, 28)] + [1000, 100003, 1000003, 10000019, 100000007]
OURS = ("auto", "hillis_steele", "blelloch", "decoupled_lookback")
ROTATE_BYTES = 128 * 2**20


def _parse_sizes(text: str) -> list[int]:
    sizes = []
    for part in text.split(","):
        part = part.strip()
        sizes.append(2 ** int(part[2:]) if part.startswith("2^") else int(part))
    return sizes


def _gpu_median_us(cp, fn, args_list, repeat):
    """Median over ``repeat`` calls of event-timed ``fn(args)``, args rotating."""
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for a in args_list[:3]:
        fn(a)                                   # warm-up: compile, allocate, load module
    cp.cuda.Device().synchronize()
    times = []
    for r in range(repeat):
        a = args_list[r % len(args_list)]
        start.record()
        fn(a)
        stop.record()
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) * 1e3)
    return statistics.median(times)


def _host_median_us(fn, x, repeat, budget_s=2.0):
    fn(x)
    times = []
    t_end = time.perf_counter() + budget_s
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(x)
        times.append((time.perf_counter() - t0) * 1e6)
        if time.perf_counter() > t_end and len(times) >= 3:
            break
    return statistics.median(times)


def _copy_bandwidth(cp, repeat):
    """Device-to-device copy of 512 MiB: GB/s counting bytes read plus written."""
    nbytes = 2**29
    src = cp.ones(nbytes // 4, dtype=np.uint32)
    dst = cp.empty_like(src)

    def copy(_):
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                    cp.cuda.runtime.memcpyDeviceToDevice,
                                    cp.cuda.get_current_stream().ptr)

    us = _gpu_median_us(cp, copy, [None], max(repeat, 10))
    return 2 * nbytes / (us * 1e-6) / 1e9, us


def _peers(cp, dtype, want):
    """Name -> callable(x) for each importable peer; messages for skipped ones."""
    peers, skipped = {}, []
    if not want:
        return peers, ["peers skipped (--no-peers)"]
    peers["cupy.cumsum"] = lambda x: cp.cumsum(x)
    try:
        from cupy.cuda import cub

        cub.device_scan(cp.ones(8, dtype=dtype), cub.CUPY_CUB_CUMSUM)
        peers["CUB in place (CuPy)"] = lambda x: cub.device_scan(x, cub.CUPY_CUB_CUMSUM)
    except Exception as exc:  # noqa: BLE001 - report any failure as a skip
        skipped.append(f"CUB through CuPy skipped: {exc!r}")
    try:
        import cuda.compute as cc  # noqa: F401

        def cc_scan(x, cc=cc):
            cc.inclusive_scan(x, x, cc.OpKind.PLUS, np.zeros(1, dtype=dtype)[0], x.size)

        probe = cp.arange(8, dtype=dtype)
        cc_scan(probe)
        if not bool((probe == cp.cumsum(cp.arange(8, dtype=dtype))).all()):
            raise RuntimeError("wrong result")
        peers["cuda.compute in place"] = cc_scan
    except Exception as exc:  # noqa: BLE001
        skipped.append(f"cuda.compute skipped: {exc!r}")
    try:
        import torch

        tdtype = {np.dtype(np.uint32): torch.int32, np.dtype(np.int32): torch.int32,
                  np.dtype(np.int64): torch.int64, np.dtype(np.float32): torch.float32,
                  np.dtype(np.float64): torch.float64}[np.dtype(dtype)]
        view = np.int32 if np.dtype(dtype) == np.uint32 else dtype

        def torch_scan(x, torch=torch, tdtype=tdtype, view=view):
            return torch.cumsum(torch.from_dlpack(x.view(view)), 0, dtype=tdtype)

        torch_scan(cp.ones(8, dtype=dtype))
        peers["torch.cumsum"] = torch_scan
    except Exception as exc:  # noqa: BLE001
        skipped.append(f"torch skipped: {exc!r}")
    return peers, skipped


def _random(cp, n, dtype, seed):
    r = cp.random.RandomState(seed).random_sample(n)       # float64 in [0, 1)
    if np.dtype(dtype).kind == "f":
        return r.astype(dtype)
    return (r * (2**31 - 1)).astype(dtype)


def _sweep(cp, dtype, repeat, copy_gbps):
    """Time the look-back kernel per (threads, rounds, min_blocks), with the configured waits; keep
    the best at 2^27."""
    from pycumd.neighbors import scan

    configs = [(t, r, b) for t in (128, 256) for r in (4, 8, 12, 16) for b in (1,)]
    configs += [(128, 8, 4), (128, 8, 8), (128, 6, 8), (256, 8, 2), (128, 12, 3), (128, 16, 2)]
    waits = {k: v for k, v in scan.LOOKBACK_CONFIG.items() if k not in ("threads", "rounds", "min_blocks")}
    sizes = (2**16, 2**20, 2**24, 2**27)
    table = []
    for n in sizes:
        nbytes = n * dtype.itemsize
        bufs = [_random(cp, n, dtype, s) for s in range(int(min(64, max(1, -(-ROTATE_BYTES // nbytes)))))]
        for t, r, b in configs:
            scan.LOOKBACK_CONFIG = {"threads": t, "rounds": r, "min_blocks": b, **waits}
            ref = cp.cumsum(bufs[0], dtype=dtype)
            ok = bool(cp.array_equal(scan.prefix_sum(bufs[0], method="decoupled_lookback"), ref))
            us = _gpu_median_us(
                cp, lambda x: scan.prefix_sum(x, out=x, method="decoupled_lookback"), bufs, repeat)
            frac = 2 * nbytes / (us * 1e-6) / 1e9 / copy_gbps
            table.append({"n": n, "threads": t, "rounds": r, "min_blocks": b, "us": us,
                          "frac": frac, "ok": ok})
            print(f"sweep n={n:>10} threads={t:4d} rounds={r} min_blocks={b}: {us:8.1f} us "
                  f"({frac:.3f} of copy) ok={ok}", flush=True)
        del bufs
        cp.get_default_memory_pool().free_all_blocks()
    big = [row for row in table if row["n"] == sizes[-1] and row["ok"]]
    best = min(big, key=lambda row: row["us"])
    scan.LOOKBACK_CONFIG = {"threads": best["threads"], "rounds": best["rounds"],
                            "min_blocks": best["min_blocks"], **waits}
    print(f"sweep: running with {scan.LOOKBACK_CONFIG}")
    return {"table": table, "chosen": scan.LOOKBACK_CONFIG}


def bench_counting_sort(cp, repeat, n=1_000_000, density=0.8442, r_cell=2.8):
    """Time cell_index, counting_sort and a float4 reorder for n particles of an LJ liquid."""
    from pycumd.neighbors.counting_sort import cell_index, counting_sort, reorder

    box = (n / density) ** (1.0 / 3.0)
    ncell = int(box // r_cell)
    cells = (ncell, ncell, ncell)
    n_bins = ncell**3
    rng = np.random.default_rng(7)
    pos = cp.asarray(rng.uniform(0.0, box, (n, 4)).astype(np.float32))
    keys = cell_index(pos, (box, box, box), cells)
    res = counting_sort(keys, n_bins)
    (pos_sorted,) = reorder(res.order, pos)
    keys_sorted = cell_index(pos_sorted, (box, box, box), cells)
    out = {"n": n, "n_bins": n_bins, "cells_per_dim": ncell, "box": box}
    out["cell_index_us"] = _gpu_median_us(
        cp, lambda _: cell_index(pos, (box, box, box), cells), [None], repeat)
    out["counting_sort_random_us"] = _gpu_median_us(
        cp, lambda k: counting_sort(k, n_bins), [keys], repeat)
    out["counting_sort_presorted_us"] = _gpu_median_us(
        cp, lambda k: counting_sort(k, n_bins), [keys_sorted], repeat)
    out["reorder_float4_us"] = _gpu_median_us(
        cp, lambda _: reorder(res.order, pos), [None], repeat)
    # check: stable order
    ref = np.argsort(cp.asnumpy(keys), kind="stable")
    out["stable_ok"] = bool(np.array_equal(cp.asnumpy(res.order), ref))
    return out


def _versions(cp):
    v = {"python": platform.python_version(), "numpy": np.__version__, "cupy": cp.__version__,
         "cuda_runtime": cp.cuda.runtime.runtimeGetVersion(),
         "cuda_driver": cp.cuda.runtime.driverGetVersion()}
    try:
        import torch

        v["torch"] = torch.__version__
    except Exception:  # noqa: BLE001
        pass
    return v


def _write_outputs(results, out_dir: Path, dtype_name: str):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"scan_bench_{dtype_name}.json").write_text(json.dumps(results, indent=1))
    names = results["methods"]
    bw = results["copy_GBps"]
    lines = [
        f"Device: {results['device']}; copy bandwidth {bw:.0f} GB/s (read + write); "
        f"dtype {dtype_name}; {results['date']}; versions {results['versions']}",
        "",
        "Time per call in us (Me/s; fraction of copy bandwidth for GPU methods).",
        "",
        "| n | " + " | ".join(names) + " |",
        "| --- | " + " | ".join("---" for _ in names) + " |",
    ]
    for row in results["rows"]:
        cells = []
        for name in names:
            us = row["us"].get(name)
            if us is None:
                cells.append("-")
                continue
            mes = row["n"] / us
            frac = row["frac"].get(name)
            cells.append(f"{us:.1f} ({mes:.0f}" + (f"; {frac:.2f})" if frac is not None else ")"))
        lines.append(f"| {row['n']} | " + " | ".join(cells) + " |")
    if results.get("skipped"):
        lines += ["", "Skipped: " + "; ".join(results["skipped"])]
    if results.get("counting_sort"):
        lines += ["", "Counting sort: " + json.dumps(results["counting_sort"])]
    (out_dir / f"scan_bench_{dtype_name}.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:  # noqa: BLE001
        print(f"plot skipped: {exc!r}")
        return
    fig, ax = plt.subplots(figsize=(7.5, 5))
    rows = sorted(results["rows"], key=lambda r: r["n"])
    for name in names:
        pts = [(r["n"], r["n"] / r["us"][name]) for r in rows if r["us"].get(name)]
        if pts:
            xs, ys = zip(*pts)
            ax.loglog(xs, ys, marker="o", ms=3, label=name)
    itemsize = np.dtype(dtype_name).itemsize
    xs = [r["n"] for r in rows]
    ax.loglog(xs, [bw * 1e9 / (2 * itemsize) / 1e6] * len(xs), "k--", lw=0.8,
              label="copy bandwidth bound")
    ax.set_xlabel("array size (elements)")
    ax.set_ylabel("Me/s (million elements per second)")
    ax.set_title(f"Inclusive prefix sum, {dtype_name}, {results['device']}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / f"scan_bench_{dtype_name}.png", dpi=120)


def main(argv=None) -> int:
    """Run the scan benchmark; see the module docstring."""
    parser = argument_parser("scan", "Prefix-sum throughput against peers (NumPy, CuPy, CUB), and the counting sort. "
                             "Needs a CUDA GPU and CuPy.")
    parser.add_argument("--sizes", default=None,
                        help="comma-separated sizes, 2^k allowed (default 2^9..2^27 + npot)")
    parser.add_argument("--dtype", default="uint32",
                        choices=["uint32", "int32", "int64", "float32", "float64"])
    parser.add_argument("--repeat", type=int, default=30, help="timed calls per point")
    parser.add_argument("--out-dir", default=str(default_out_dir("scan")),
                        help="where the table, plot and JSON go (default: ./bench-scan)")
    parser.add_argument("--no-peers", action="store_true", help="time pycumd only")
    parser.add_argument("--no-sort", action="store_true", help="skip the counting-sort timing")
    parser.add_argument("--sweep", action="store_true",
                        help="first time look-back tile configurations and run with the best")
    args = parser.parse_args(argv)

    try:
        import cupy as cp

        cp.cuda.runtime.getDeviceCount()
    except Exception as exc:  # noqa: BLE001
        print(f"pycumd bench scan: cannot run here: it needs CuPy and a CUDA GPU ({type(exc).__name__}: {exc})",
              file=sys.stderr)
        return 2
    from pycumd.neighbors.scan import auto_method, prefix_sum

    dtype = np.dtype(args.dtype)
    sizes = sorted(_parse_sizes(args.sizes) if args.sizes else DEFAULT_SIZES)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    device = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    copy_gbps, copy_us = _copy_bandwidth(cp, args.repeat)
    print(f"device {device}; copy {copy_gbps:.0f} GB/s ({copy_us:.1f} us for 512 MiB)")
    sweep = _sweep(cp, dtype, args.repeat, copy_gbps) if args.sweep else None
    peers, skipped = _peers(cp, dtype, not args.no_peers)
    for s in skipped:
        print(s)
    methods = ["numpy.cumsum (host)"] + [f"pycumd {m}" for m in OURS] + list(peers)
    rows = []
    for n in sizes:
        nbytes = n * dtype.itemsize
        n_buf = int(min(64, max(1, -(-ROTATE_BYTES // nbytes))))
        bufs = [_random(cp, n, dtype, seed) for seed in range(n_buf)]
        us, frac, ok = {}, {}, {}
        host = cp.asnumpy(bufs[0])
        reference = cp.cumsum(bufs[0], dtype=dtype)
        us["numpy.cumsum (host)"] = _host_median_us(
            lambda h: np.cumsum(h, dtype=dtype), host, min(args.repeat, 10))
        for m in OURS:                          # check every method before any timing
            got = prefix_sum(bufs[0], method=m)
            if dtype.kind == "f":
                ok[m] = bool(cp.allclose(got, reference, rtol=1e-3, atol=1e-3))
            else:
                ok[m] = bool(cp.array_equal(got, reference))
        for m in OURS:
            us[f"pycumd {m}"] = _gpu_median_us(
                cp, lambda x, m=m: prefix_sum(x, out=x, method=m), bufs, args.repeat)
        for name, fn in peers.items():
            us[name] = _gpu_median_us(cp, fn, bufs, args.repeat)
        for name, t in us.items():
            if name != "numpy.cumsum (host)":
                frac[name] = (2 * nbytes / (t * 1e-6) / 1e9) / copy_gbps
        rows.append({"n": n, "us": us, "frac": frac, "correct": ok, "auto": auto_method(n)})
        best = min(us[f"pycumd {m}"] for m in OURS[1:])
        print(f"n={n:>10} " + " ".join(f"{k.split()[-1][:10]}={v:9.1f}" for k, v in us.items())
              + f"  best-ours={best:.1f}us ok={all(ok.values())}", flush=True)
        del bufs, reference
        cp.get_default_memory_pool().free_all_blocks()

    results = {
        "device": device, "dtype": dtype.name, "copy_GBps": copy_gbps,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": _versions(cp), "methods": methods, "rows": rows, "skipped": skipped,
        "repeat": args.repeat, "sweep": sweep,
    }
    if not args.no_sort:
        results["counting_sort"] = bench_counting_sort(cp, args.repeat)
        print("counting sort:", json.dumps(results["counting_sort"]))
    _write_outputs(results, Path(args.out_dir), dtype.name)
    print(f"wrote {args.out_dir}/scan_bench_{dtype.name}.md/.png/.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
