"""Synthetic precision suite of Saponaro (2010, ch. 6): float, double and composite.

``pycumd bench precision`` (or ``python -m pycumd.bench.precision``) runs two programs on the
CPU backend and, where a GPU is usable, on the CUDA backend:

Global summation (the thesis' Tables 2-5)
    1,000 float32 values, half of magnitude up to 1e6 and half of magnitude ~1e-6, in
    symmetric pairs (v, -v): the exact sum is 0.  They are summed in four shuffled orders,
    ascending and descending, by T = 1, 10, 100 and 1,000 threads, each thread summing a
    contiguous chunk (or a strided subset) in order, the partial sums then combined in thread
    order, in float, double and composite arithmetic.  The table entries are the computed sums,
    i.e. the errors.
Do/undo (the thesis' Figure 12 and Table 6)
    One thread repeats ``x <- (x * y) / y`` (or ``(x / y) * y``) 1,000,000 times with a fresh
    random operand ``y`` each iteration, for the thesis' three ranges of ``x`` and ``y``.  In
    exact arithmetic ``x`` never moves; the drift ``(x - x0) / x0`` is accumulated rounding
    error.  It writes drift plots and a timing table.

CPU and GPU execute the same roundings in the same order (the CPU twins below mirror the
kernels in ``composite/composite_suite.cu``), so their results must agree bit for bit; the
report says whether they did.

Outputs, in ``--out-dir`` (default ``bench-precision/`` in the working folder): ``precision_summation.md``,
``precision_doundo.md``, ``precision_doundo_<backend>.png`` and ``precision_results.json``.
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numba import njit

from pycumd import backend as _backend
from pycumd.bench import argument_parser, default_out_dir
from pycumd.composite.float_float import ff_add, ff_div, ff_mul, ff_to_double_array

PRECISIONS = ("float", "double", "composite")
THREAD_COUNTS = (1, 10, 100, 1000)
LAYOUTS = ("contiguous", "strided")
ORDERS = ("shuffled (1)", "shuffled (2)", "shuffled (3)", "shuffled (4)", "descending", "ascending")
DO_UNDO_ORDERS = ("mul-div", "div-mul")  # x*y/y and x/y*y
DO_UNDO_TRIALS = {
    # trial: (x range, y range), as in the thesis
    1: ((1.0, 100.0), (1.0, 100.0)),
    2: ((1e5, 1e6), (1e-6, 1e-5)),
    3: ((1e-6, 1e-5), (1e5, 1e6)),
}
_KERNELS = "composite/composite_suite.cu"
_SUM_KERNEL = {"float": "global_sum_float", "double": "global_sum_double", "composite": "global_sum_ff"}
_DO_UNDO_KERNEL = {"float": "do_undo_float", "double": "do_undo_double", "composite": "do_undo_ff"}


def _check_precision(precision: str) -> None:
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}: choose one of {', '.join(PRECISIONS)}")


# ------------------------------------------------------------------------------- input data


def summation_values(n: int = 1000, seed: int = 2010) -> np.ndarray:
    """The summation input: ``n`` float32 values in symmetric pairs, exact sum 0.

    Half of the pairs have magnitude uniform in (0, 1e6], half uniform in (0, 1e-5]
    (order 1e-6); each value ``v`` is followed by ``-v``.  The values are float32, so the
    double and composite sums add exactly the same numbers as the float sum.

    Parameters
    ----------
    n : int
        Number of values, even and >= 4.
    seed : int
        Seed of the generator.

    Returns
    -------
    numpy.ndarray, shape (n,), float32
    """
    if n < 4 or n % 2:
        raise ValueError(f"the summation needs an even number of values >= 4, got {n}")
    rng = np.random.default_rng(seed)
    pairs = n // 2
    large = rng.uniform(0.0, 1e6, pairs // 2)
    small = rng.uniform(0.0, 1e-5, pairs - pairs // 2)
    magnitudes = np.concatenate([large, small]).astype(np.float32)
    magnitudes = np.where(magnitudes == 0, np.float32(1.0), magnitudes)
    rng.shuffle(magnitudes)
    values = np.empty(n, dtype=np.float32)
    values[0::2] = magnitudes
    values[1::2] = -magnitudes
    return values


def ordered(values: np.ndarray, order: str, seed: int = 2010) -> np.ndarray:
    """``values`` rearranged in one of :data:`ORDERS` (ascending/descending by signed value)."""
    if order == "ascending":
        return np.sort(values)
    if order == "descending":
        return np.sort(values)[::-1].copy()
    if order.startswith("shuffled (") and order.endswith(")"):
        trial = int(order[len("shuffled ("):-1])
        return np.random.default_rng([seed, trial]).permutation(values)
    raise ValueError(f"unknown order {order!r}: choose one of {', '.join(ORDERS)}")


# ----------------------------------------------------------- CPU twins of the suite kernels


@njit(cache=True, error_model="numpy")
def _chunk(n, threads, t, layout):
    if layout == 0:
        c = (n + threads - 1) // threads
        return t * c, min(n, (t + 1) * c), 1
    return t, n, threads


@njit(cache=True, error_model="numpy")
def _sum_float(v, threads, layout):
    partial = np.zeros(threads, dtype=np.float32)
    for t in range(threads):
        start, stop, step = _chunk(v.size, threads, t, layout)
        s = np.float32(0.0)
        for i in range(start, stop, step):
            s = s + v[i]
        partial[t] = s
    total = np.float32(0.0)
    for t in range(threads):
        total = total + partial[t]
    return total


@njit(cache=True, error_model="numpy")
def _sum_double(v, threads, layout):
    partial = np.zeros(threads, dtype=np.float64)
    for t in range(threads):
        start, stop, step = _chunk(v.size, threads, t, layout)
        s = 0.0
        for i in range(start, stop, step):
            s = s + np.float64(v[i])
        partial[t] = s
    total = 0.0
    for t in range(threads):
        total = total + partial[t]
    return total


@njit(cache=True, error_model="numpy")
def _sum_ff(v, threads, layout):
    zero = np.float32(0.0)
    partial = np.zeros((threads, 2), dtype=np.float32)
    for t in range(threads):
        start, stop, step = _chunk(v.size, threads, t, layout)
        s = (zero, zero)
        for i in range(start, stop, step):
            s = ff_add(s, (v[i], zero))
        partial[t, 0] = s[0]
        partial[t, 1] = s[1]
    total = (zero, zero)
    for t in range(threads):
        total = ff_add(total, (partial[t, 0], partial[t, 1]))
    out = np.empty(2, dtype=np.float32)
    out[0] = total[0]
    out[1] = total[1]
    return out


@njit(cache=True, error_model="numpy")
def _next_operand(state, lo, width):
    """xorshift32 step and y = lo + width * U, as ``next_operand`` in the kernel."""
    state = state ^ ((state << 13) & 0xFFFFFFFF)
    state = state ^ (state >> 17)
    state = state ^ ((state << 5) & 0xFFFFFFFF)
    unit = np.float32(state >> 8) * np.float32(5.9604644775390625e-8)
    return state, lo + width * unit


@njit(cache=True, error_model="numpy")
def _do_undo_float(x0, lo, width, seed, n_iter, order, sample_every, samples):
    state = np.int64(seed)
    x = x0
    for i in range(1, n_iter + 1):
        state, y = _next_operand(state, lo, width)
        if order == 0:
            x = (x * y) / y
        else:
            x = (x / y) * y
        if i % sample_every == 0:
            samples[i // sample_every - 1] = x


@njit(cache=True, error_model="numpy")
def _do_undo_double(x0, lo, width, seed, n_iter, order, sample_every, samples):
    state = np.int64(seed)
    x = np.float64(x0)
    for i in range(1, n_iter + 1):
        state, y32 = _next_operand(state, lo, width)
        y = np.float64(y32)
        if order == 0:
            x = (x * y) / y
        else:
            x = (x / y) * y
        if i % sample_every == 0:
            samples[i // sample_every - 1] = x


@njit(cache=True, error_model="numpy")
def _do_undo_ff(x0, lo, width, seed, n_iter, order, sample_every, samples):
    state = np.int64(seed)
    zero = np.float32(0.0)
    x = (x0, zero)
    for i in range(1, n_iter + 1):
        state, y32 = _next_operand(state, lo, width)
        y = (y32, zero)
        if order == 0:
            x = ff_div(ff_mul(x, y), y)
        else:
            x = ff_mul(ff_div(x, y), y)
        if i % sample_every == 0:
            k = i // sample_every - 1
            samples[k, 0] = x[0]
            samples[k, 1] = x[1]


_CPU_DO_UNDO = {"float": _do_undo_float, "double": _do_undo_double, "composite": _do_undo_ff}


# ----------------------------------------------------------------------- the two programs


def global_sum(values, threads: int, precision: str, layout: str = "contiguous",
               backend="cpu") -> np.ndarray:
    """Sum ``values`` with ``threads`` threads in ``precision`` on ``backend``.

    Parameters
    ----------
    values : array_like, shape (n,), float32
        The numbers, summed in this order.
    threads : int
        Number of threads, 1 to 1024.
    precision : {"float", "double", "composite"}
    layout : {"contiguous", "strided"}
        Thread t sums a contiguous chunk of ceil(n/T) values, or values t, t+T, t+2T, ...
    backend : str or Backend
        ``cpu`` or ``cuda``.

    Returns
    -------
    numpy.ndarray
        The sum as computed: shape () float32 or float64, or shape (2,) float32 (hi, lo)
        for composite.  Bit-identical between backends.
    """
    _check_precision(precision)
    if layout not in LAYOUTS:
        raise ValueError(f"unknown layout {layout!r}: choose one of {', '.join(LAYOUTS)}")
    v = np.ascontiguousarray(values, dtype=np.float32)
    if v.ndim != 1 or v.size == 0:
        raise ValueError(f"values must be a non-empty 1-d array, got shape {v.shape}")
    if not 1 <= threads <= 1024:
        raise ValueError(f"threads must be in 1..1024 (one block), got {threads}")
    lay = LAYOUTS.index(layout)
    be = _backend.select(backend)
    if not be.is_gpu:
        if precision == "float":
            return np.asarray(_sum_float(v, threads, lay), dtype=np.float32)
        if precision == "double":
            return np.asarray(_sum_double(v, threads, lay), dtype=np.float64)
        return _sum_ff(v, threads, lay)
    xp = be.xp
    dtype, width = {"float": (np.float32, 1), "double": (np.float64, 1), "composite": (np.float32, 2)}[precision]
    partial = xp.zeros(threads * width, dtype=dtype)
    total = xp.full(width, np.nan, dtype=dtype)
    kernel = be.kernel_module(_KERNELS).get_function(_SUM_KERNEL[precision])
    kernel((1,), (threads,), (be.asarray(v), np.int32(v.size), np.int32(lay), partial, total))
    out = be.to_host(total)
    return out if precision == "composite" else out.reshape(())


def sum_as_float64(result: np.ndarray) -> float:
    """The value of a :func:`global_sum` result (composite: RN64(hi + lo))."""
    result = np.asarray(result)
    if result.shape == (2,):
        return float(ff_to_double_array(result))
    return float(result)


@dataclass
class DoUndoRun:
    """One do/undo run: the samples of x, their drift and the run time.

    Attributes
    ----------
    samples : numpy.ndarray
        x after every ``sample_every`` iterations: float32 / float64 shape (m,), or float32
        shape (m, 2) for composite.
    drift : numpy.ndarray, shape (m,), float64
        Relative drift ``(x - x0) / x0`` (composite: from ``hi + lo``).
    seconds : float
        Run time of the whole loop (kernel time from CUDA events on the GPU).
    """

    samples: np.ndarray
    drift: np.ndarray
    seconds: float


def do_undo(trial: int, order: str, precision: str, n_iter: int = 1_000_000,
            sample_every: int = 1000, seed: int = 2010, backend="cpu") -> DoUndoRun:
    """Run the do/undo program once.

    Parameters
    ----------
    trial : {1, 2, 3}
        The thesis' ranges of x and y (:data:`DO_UNDO_TRIALS`).
    order : {"mul-div", "div-mul"}
        ``x <- (x * y) / y`` or ``x <- (x / y) * y``.
    precision : {"float", "double", "composite"}
    n_iter : int
        Iterations (the thesis: 1,000,000).
    sample_every : int
        Record x every this many iterations; must divide ``n_iter``.
    seed : int
        Seeds x0 and the operand stream (xorshift32, identical on CPU and GPU).
    backend : str or Backend

    Returns
    -------
    DoUndoRun
    """
    _check_precision(precision)
    if trial not in DO_UNDO_TRIALS:
        raise ValueError(f"unknown trial {trial!r}: choose one of {sorted(DO_UNDO_TRIALS)}")
    if order not in DO_UNDO_ORDERS:
        raise ValueError(f"unknown order {order!r}: choose one of {', '.join(DO_UNDO_ORDERS)}")
    if n_iter < 1 or sample_every < 1 or n_iter % sample_every:
        raise ValueError(f"sample_every ({sample_every}) must be >= 1 and divide n_iter ({n_iter})")
    (x_lo, x_hi), (y_lo, y_hi) = DO_UNDO_TRIALS[trial]
    rng = np.random.default_rng([seed, trial])
    x0 = np.float32(rng.uniform(x_lo, x_hi))
    y_lo32 = np.float32(y_lo)
    y_width = np.float32(np.float32(y_hi) - y_lo32)
    stream_seed = int(rng.integers(1, 2**32))
    m = n_iter // sample_every
    shape = (m, 2) if precision == "composite" else (m,)
    dtype = np.float64 if precision == "double" else np.float32
    ord_ = DO_UNDO_ORDERS.index(order)
    be = _backend.select(backend)
    if not be.is_gpu:
        samples = np.full(shape, np.nan, dtype=dtype)
        fn = _CPU_DO_UNDO[precision]
        t0 = time.perf_counter()
        fn(x0, y_lo32, y_width, stream_seed, n_iter, ord_, sample_every, samples)
        seconds = time.perf_counter() - t0
    else:
        xp = be.xp
        out = xp.full(shape, np.nan, dtype=dtype)
        kernel = be.kernel_module(_KERNELS).get_function(_DO_UNDO_KERNEL[precision])
        start, stop = xp.cuda.Event(), xp.cuda.Event()
        start.record()
        kernel((1,), (1,), (x0, y_lo32, y_width, np.uint32(stream_seed), np.int32(n_iter),
                            np.int32(ord_), np.int32(sample_every), out))
        stop.record()
        stop.synchronize()
        seconds = xp.cuda.get_elapsed_time(start, stop) * 1e-3
        samples = be.to_host(out)
    values = ff_to_double_array(samples) if precision == "composite" else samples.astype(np.float64)
    drift = (values - np.float64(x0)) / np.float64(x0)
    return DoUndoRun(samples, drift, seconds)


# ------------------------------------------------------------------------------- reporting


def _versions(backends) -> dict:
    import numba

    info = {
        "date_utc": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "cpu": _cpu_name(),
        "devices": {b.name: (_cpu_name() if b.name == "cpu" else b.device_name) for b in backends},
    }
    if any(b.is_gpu for b in backends):
        import cupy

        info["cupy"] = cupy.__version__
        info["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        info["cuda_driver"] = cupy.cuda.runtime.driverGetVersion()
    return info


def _cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _device_label(be) -> str:
    return f"{be.name} ({_cpu_name() if be.name == 'cpu' else be.device_name})"


def run_summation(backends, n_values: int, seed: int) -> dict:
    """All summation cases on all backends: ``{backend: {layout: {T: {order: {prec: sum}}}}}``."""
    values = summation_values(n_values, seed)
    results, raw = {}, {}
    for be in backends:
        res = results.setdefault(be.name, {})
        for layout in LAYOUTS:
            for threads in THREAD_COUNTS:
                for order in ORDERS:
                    v = ordered(values, order, seed)
                    for prec in PRECISIONS:
                        s = global_sum(v, threads, prec, layout, be)
                        raw[(be.name, layout, threads, order, prec)] = s.tobytes()
                        res.setdefault(layout, {}).setdefault(str(threads), {}).setdefault(
                            order, {})[prec] = sum_as_float64(s)
    identical = None
    if len(backends) > 1:
        a, b = backends[0].name, backends[1].name
        identical = all(raw[(a,) + k[1:]] == raw[(b,) + k[1:]] for k in raw if k[0] == a)
    return {"values": {"n": n_values, "seed": seed}, "sums": results, "cpu_gpu_bit_identical": identical}


def run_do_undo(backends, n_iter: int, sample_every: int, repeats: int, seed: int):
    """All do/undo cases: timings, drifts, and the drift curves for the plots."""
    table, curves, identical = {}, {}, True
    for be in backends:
        for prec in PRECISIONS:  # compile / warm up outside the timings
            do_undo(1, "mul-div", prec, sample_every, sample_every, seed, be)
        for trial in DO_UNDO_TRIALS:
            for order in DO_UNDO_ORDERS:
                for prec in PRECISIONS:
                    runs = [do_undo(trial, order, prec, n_iter, sample_every, seed, be)
                            for _ in range(repeats)]
                    times = np.array([r.seconds for r in runs])
                    drift = runs[0].drift
                    table.setdefault(be.name, []).append({
                        "trial": trial, "order": order, "precision": prec,
                        "mean_s": float(times.mean()), "std_s": float(times.std(ddof=1)) if repeats > 1 else 0.0,
                        "final_drift": float(drift[-1]), "max_abs_drift": float(np.max(np.abs(drift))),
                    })
                    curves[(be.name, trial, order, prec)] = drift
                    key = (trial, order, prec)
                    if len(backends) > 1 and be is backends[1]:
                        other = curves[(backends[0].name,) + key]
                        identical &= bool(np.array_equal(other, drift, equal_nan=True))
    return table, curves, (identical if len(backends) > 1 else None)


def _fmt(x: float) -> str:
    return f"{x:.4e}"


def write_summation_md(path: Path, summation: dict, meta: dict) -> None:
    lines = ["# Global summation: float, double and composite (generated)", "",
             f"Generated by `pycumd bench precision` on {meta['date_utc']}; numpy {meta['numpy']}, "
             f"numba {meta['numba']}" + (f", CuPy {meta['cupy']}" if "cupy" in meta else "") + ".",
             f"{summation['values']['n']} float32 values in symmetric pairs (exact sum 0), seed "
             f"{summation['values']['seed']}. Each entry is the computed sum, i.e. its error.", ""]
    if summation["cpu_gpu_bit_identical"] is not None:
        lines += [f"CPU and GPU sums bit-identical in every case: **{'yes' if summation['cpu_gpu_bit_identical'] else 'NO'}**.", ""]
    for name, by_layout in summation["sums"].items():
        dev = meta["devices"].get(name, name)
        for layout, by_t in by_layout.items():
            for threads, by_order in by_t.items():
                lines += [f"## {name} ({dev}), {threads} thread{'s' if threads != '1' else ''}, {layout} chunks", "",
                          "| order | float | double | composite |", "| --- | --- | --- | --- |"]
                for order, row in by_order.items():
                    lines.append(f"| {order} | " + " | ".join(_fmt(row[p]) for p in PRECISIONS) + " |")
                lines.append("")
    path.write_text("\n".join(lines))


def write_do_undo_md(path: Path, table: dict, meta: dict, n_iter: int, repeats: int,
                     identical) -> None:
    lines = ["# Do/undo: drift and time (generated)", "",
             f"Generated by `pycumd bench precision` on {meta['date_utc']}; numpy {meta['numpy']}, "
             f"numba {meta['numba']}" + (f", CuPy {meta['cupy']}" if "cupy" in meta else "") + ".",
             f"One thread, {n_iter:,} iterations of x <- (x op y) op^-1 y; time: mean and standard "
             f"deviation of {repeats} runs (GPU: CUDA events around the kernel; CPU: Numba loop, "
             "wall clock). Drift: (x_N - x0)/x0 after the last iteration and the largest |drift| seen.", ""]
    if identical is not None:
        lines += [f"CPU and GPU drift curves bit-identical in every case: **{'yes' if identical else 'NO'}**.", ""]
    for name, rows in table.items():
        lines += [f"## {name} ({meta['devices'].get(name, name)})", "",
                  "| trial (x; y) | order | precision | mean (s) | std (s) | final drift | max abs drift |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in rows:
            (xl, xh), (yl, yh) = DO_UNDO_TRIALS[r["trial"]]
            lines.append(f"| {r['trial']} ({xl:g}..{xh:g}; {yl:g}..{yh:g}) | {r['order']} | {r['precision']} | "
                         f"{r['mean_s']:.4f} | {r['std_s']:.4f} | {r['final_drift']:.3e} | {r['max_abs_drift']:.3e} |")
        lines.append("")
    path.write_text("\n".join(lines))


def plot_do_undo(path: Path, curves: dict, backend_name: str, device: str, n_iter: int,
                 sample_every: int) -> None:
    """Figure-12-like grid: rows = trials, columns = orders, one line per precision."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(DO_UNDO_TRIALS), len(DO_UNDO_ORDERS), figsize=(11, 10),
                             sharex=True, constrained_layout=True)
    styles = {"float": ("tab:red", "-"), "double": ("tab:blue", "--"), "composite": ("tab:green", "-")}
    for i, trial in enumerate(DO_UNDO_TRIALS):
        (xl, xh), (yl, yh) = DO_UNDO_TRIALS[trial]
        for j, order in enumerate(DO_UNDO_ORDERS):
            ax = axes[i, j]
            for prec in PRECISIONS:
                drift = curves[(backend_name, trial, order, prec)]
                it = np.arange(1, drift.size + 1) * sample_every
                color, ls = styles[prec]
                ax.plot(it, drift, color=color, ls=ls, lw=1.2, label=prec)
            ax.set_yscale("symlog", linthresh=1e-15)
            ax.axhline(0.0, color="0.6", lw=0.6)
            op = "(x*y)/y" if order == "mul-div" else "(x/y)*y"
            ax.set_title(f"trial {trial}: x in ({xl:g}, {xh:g}), y in ({yl:g}, {yh:g}); {op}", fontsize=9)
            if j == 0:
                ax.set_ylabel("relative drift (x - x0)/x0")
            if i == len(DO_UNDO_TRIALS) - 1:
                ax.set_xlabel("iteration")
    axes[0, 0].legend(loc="best", fontsize=8)
    fig.suptitle(f"do/undo drift, {n_iter:,} iterations, {backend_name}: {device}", fontsize=11)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    """Command line: run the suite and write tables, plots and JSON into ``--out-dir``."""
    parser = argument_parser(
        "precision",
        "Saponaro (2010) synthetic suite: global summation and do/undo in float, "
                    "double and composite (float-float) precision.")
    parser.add_argument("--out-dir", type=Path, default=default_out_dir("precision"),
                        help="where the tables, plots and JSON go (default: ./bench-precision)")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                        help="cpu: CPU only; cuda: CPU and GPU (error without a GPU); "
                             "auto: CPU, plus the GPU when one is usable (default)")
    parser.add_argument("--values", type=int, default=1000, help="summation size (default 1000)")
    parser.add_argument("--iterations", type=int, default=1_000_000,
                        help="do/undo iterations (default 1,000,000)")
    parser.add_argument("--sample-every", type=int, default=1000,
                        help="record the do/undo x every this many iterations (default 1000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed do/undo runs per case (default 3)")
    parser.add_argument("--seed", type=int, default=2010)
    parser.add_argument("--no-plots", action="store_true", help="skip the matplotlib drift plots")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error(f"--repeats must be >= 1, got {args.repeats}")
    if args.iterations < 1 or args.sample_every < 1 or args.iterations % args.sample_every:
        parser.error(f"--sample-every ({args.sample_every}) must divide --iterations ({args.iterations})")
    if args.values < 4 or args.values % 2:
        parser.error(f"--values must be even and >= 4, got {args.values}")

    backends = [_backend.select("cpu")]
    if args.device == "cuda" or (args.device == "auto" and _backend.cuda_available()):
        try:
            backends.append(_backend.select("cuda"))
        except _backend.BackendUnavailableError as err:
            parser.exit(2, f"pycumd bench precision: {err}\n")
    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    meta = _versions(backends)
    print(f"precision suite on {', '.join(_device_label(b) for b in backends)}", flush=True)

    summation = run_summation(backends, args.values, args.seed)
    write_summation_md(out / "precision_summation.md", summation, meta)
    table, curves, identical = run_do_undo(backends, args.iterations, args.sample_every,
                                           args.repeats, args.seed)
    write_do_undo_md(out / "precision_doundo.md", table, meta, args.iterations, args.repeats, identical)
    if not args.no_plots:
        for be in backends:
            plot_do_undo(out / f"precision_doundo_{be.name}.png", curves, be.name, be.device_name,
                         args.iterations, args.sample_every)
    payload = {"meta": meta, "summation": summation, "do_undo": table,
               "do_undo_cpu_gpu_bit_identical": identical,
               "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()}}
    (out / "precision_results.json").write_text(json.dumps(payload, indent=1))

    for name, rows in table.items():
        print(f"\ndo/undo on {name}: mean seconds for {args.iterations:,} iterations (trial, order)")
        for prec in PRECISIONS:
            cells = [f"{r['mean_s']:.4f}" for r in rows if r["precision"] == prec]
            print(f"  {prec:9s} " + " ".join(cells))
    worst = {p: max(abs(summation["sums"][b.name][lay][str(t)][o][p]) for b in backends for lay in LAYOUTS
                    for t in THREAD_COUNTS for o in ORDERS) for p in PRECISIONS}
    print("\nlargest |sum| (exact 0): " + ", ".join(f"{p} {worst[p]:.3e}" for p in PRECISIONS))
    print(f"CPU/GPU bit-identical: summation {summation['cpu_gpu_bit_identical']}, do/undo {identical}")
    print(f"wrote {out}/precision_summation.md, precision_doundo.md, precision_results.json"
          + ("" if args.no_plots else ", precision_doundo_*.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
