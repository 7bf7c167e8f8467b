"""Throughput over MPI ranks: the LJ liquid on spatial domains, or all-pairs ions on the P x Q force matrix.

Run under a launcher, one rank per GPU (or oversubscribed on one GPU / CPU cores, for correctness):

    mpirun -n 2 python3 -m pycumd.bench.scaling lj --cells 159 --steps 200          # 16M atoms over 2 ranks
    mpirun -n 2 python3 -m pycumd.bench.scaling lj --cells 159 --weak --steps 200   # 16M atoms per rank
    mpirun -n 4 python3 -m pycumd.bench.scaling ions --n 110592 --grid 2x2 --steps 20

(``pycumd bench scaling ...`` under mpirun is the same.)  The systems are those of ``pycumd bench lj``
(LAMMPS bench/in.lj scaled up: fcc 0.8442, T 1.44, rc 2.5, skin 0.3, dt 0.005, NVE) and
``pycumd bench ions`` (C/O white-dwarf liquid, Gamma 20, all pairs).  ``--weak`` replicates the
lattice along x so that every rank holds ``4 cells^3`` atoms.  Rank 0 prints one line per run and
appends a JSON record to ``--json``: atom-steps/s over the whole system; the phases of a step timed
alone on the final state (a force computation, a neighbour build, and for domains the ghost refresh;
the slowest rank's time); for domains the ghost rows, the bytes sent to other ranks per step (over
NVLink between GPUs) and the bytes copied locally; and with ``--probe`` the bandwidth of a 256 MB
send/receive between ranks 0 and 1 through the run's transport (NCCL between GPUs, else MPI),
measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from pycumd.bench import argument_parser


def _parser() -> argparse.ArgumentParser:
    p = argument_parser("scaling", __doc__.split("\n\n")[0])
    add_arguments(p)
    return p


def add_arguments(p) -> None:
    p.add_argument("case", choices=["lj", "ions"])
    p.add_argument("--cells", type=int, default=40, help="lj: fcc cells per edge (N = 4 cells^3; default 40)")
    p.add_argument("--weak", action="store_true", help="lj: cells^3 fcc cells per rank (box stretched along x)")
    p.add_argument("--n", type=int, default=27648, help="ions: number of ions (default 27648)")
    p.add_argument("--grid", default=None,
                   help="ions: P x Q force-matrix grid, e.g. 2x1 (default: replicated atoms, the pairs split)")
    p.add_argument("--processors", default=None, help="lj: LAMMPS processors Px Py Pz, e.g. '2 1 1'")
    p.add_argument("--precision", default="single", help="single, mixed or double (default single)")
    p.add_argument("--device", default="auto")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--no-graphs", action="store_true",
                   help="host-driven steps (default: the steps between builds as CUDA graphs where they apply)")
    p.add_argument("--host-build", action="store_true",
                   help="lj on GPUs over ranks: the host build of the domains instead of the device build (A/B)")
    p.add_argument("--eager-build", action="store_true",
                   help="lj on GPUs over ranks: the device build launch by launch, not as a captured graph (A/B)")
    p.add_argument("--overlap", choices=["auto", "on", "off"], default="auto",
                   help="lj on GPUs over ranks: the interior atoms' forces while the ghosts travel (on), or the "
                        "ghosts' exchange, then all forces (off); auto: on from 2M owned atoms a rank (A/B)")
    p.add_argument("--probe", action="store_true", help="measure rank 0 <-> 1 bandwidth of the transport")
    p.add_argument("--json", default=None, help="append one JSON record per run to this file (rank 0)")
    p.add_argument("--profile", default=None,
                   help="write rank 0's Python profile of the timed steps (cProfile, by own time) to this file")


def _lj_system(cells: int, replicas: int):
    from pycumd.system import System, create_velocities, lattice_system

    base = lattice_system("fcc", cells, density=0.8442)
    if replicas > 1:
        L = np.asarray(base.box.L)
        shifts = np.arange(replicas)[:, None, None] * np.array([L[0], 0.0, 0.0])
        positions = (base.positions[None] + shifts).reshape(-1, 3)
        from pycumd.box import Box
        base = System(Box([L[0] * replicas, L[1], L[2]]), positions, base.masses, base.units)
    create_velocities(base, 1.44, 87287)
    return base


def _probe(comm, backend, nbytes: int = 1 << 28) -> float | None:
    """GB/s of one ``nbytes`` send/receive between ranks 0 and 1 (each way), or None with one rank."""
    if comm.size < 2:
        return None
    xp = backend.xp
    buffer = xp.ones(nbytes // 4, dtype=np.float32)
    peer = 1 - comm.rank if comm.rank < 2 else comm.rank
    best = None
    for _ in range(3):
        comm.barrier()
        backend.synchronize()
        t0 = time.perf_counter()
        if comm.rank < 2:
            comm.sendrecv(buffer, peer, peer, buffer.shape[0])
        backend.synchronize()
        seconds = comm.comm.allreduce(time.perf_counter() - t0, op=_mpi_max())
        best = seconds if best is None else min(best, seconds)
    return nbytes / best / 1e9


def _timed(sim, world, reps: int, call) -> float:
    """Seconds per call of ``call()`` (every rank together; the slowest rank), after one untimed call."""
    call()
    sim.backend.synchronize()
    world.Barrier()
    t0 = time.perf_counter()
    for _ in range(reps):
        call()
    sim.backend.synchronize()
    return world.allreduce(time.perf_counter() - t0, op=_mpi_max()) / reps


def _phases(sim, world) -> dict:
    """The step's phases timed alone on the run's final state (seconds; each the slowest rank):
    ``build_s`` (a whole neighbour build: wrap, migration, ordering, ghost selection and exchange,
    cell and Verlet lists), ``forces_s`` (the force computation, with the ghost refresh in a
    decomposed run), ``halo_s`` (the ghost refresh alone: the send buffers gathered, the grouped
    exchange), ``decide_s`` (the rebuild decision: displacement check, all-reduce, one
    synchronisation) and ``step_no_decision_s`` (a whole step with the decision skipped); for spatial
    domains also ``build_phases_s`` (a build's phases, each ended by a synchronisation).  The
    timed steps advance the run (a few tens of steps)."""
    state, nl, forces = sim.state, sim.neighbors, sim.forces
    out = {"forces_s": _timed(sim, world, 20, lambda: forces.compute(state, nl, False))}
    if hasattr(nl, "refresh_ghosts"):
        out["halo_s"] = _timed(sim, world, 20, lambda: nl.refresh_ghosts(state))
        # the rebuild decision alone (displacement check, all-reduce, one synchronisation), and a
        # whole step without it (host-driven: integrate, halo, forces, integrate)
        steps = nl.steps_since_build
        out["decide_s"] = _timed(sim, world, 20, lambda: nl.needs_rebuild(state))
        every = nl.every
        nl.every = 1 << 30
        out["step_no_decision_s"] = _timed(sim, world, 20, lambda: sim._one_step(state.step + 1))
        nl.every, nl.steps_since_build = every, steps
    if getattr(nl, "nbr", None) is not None:
        out["build_s"] = _timed(sim, world, 3, lambda: nl.build(state))
        if hasattr(nl, "phase_seconds"):          # a domain build by phases (synchronised at each end)
            nl.phase_seconds = {}
            reps = 3
            for _ in range(reps):
                nl.build(state)
            phases, nl.phase_seconds = nl.phase_seconds, None
            out["build_phases_s"] = {name: world.allreduce(t / reps, op=_mpi_max()) for name, t in phases.items()}
            if sim.backend.is_gpu:               # unsynchronised: the host's and the GPU's time per phase
                host, gpu = {}, {}
                for _ in range(reps):
                    nl.phase_marks = []
                    nl.build(state)
                    sim.backend.synchronize()
                    marks, nl.phase_marks = nl.phase_marks, None
                    for (_, t0, e0), (name, t1, e1) in zip(marks, marks[1:]):
                        host[name] = host.get(name, 0.0) + (t1 - t0) / reps
                        gpu[name] = gpu.get(name, 0.0) + sim.backend.xp.cuda.get_elapsed_time(e0, e1) / 1e3 / reps
                out["build_phases_host_s"] = {k: world.allreduce(v, op=_mpi_max()) for k, v in host.items()}
                out["build_phases_gpu_s"] = {k: world.allreduce(v, op=_mpi_max()) for k, v in gpu.items()}
        forces.compute(state, nl, False)          # the forces of the rebuilt list (the run may go on)
    return out


def _mpi_max():
    from mpi4py import MPI

    return MPI.MAX


def measure(args, world) -> dict:
    from pycumd.integrators import VelocityVerlet
    from pycumd.parallel import as_communicator
    from pycumd.potentials import LennardJones
    from pycumd.simulation import Simulation

    if args.case == "lj":
        system = _lj_system(args.cells, world.size if args.weak else 1)
        potential = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
        options = dict(skin=0.3, processors=args.processors)
        dt = 0.005
    else:
        from pycumd.bench.ions import white_dwarf_liquid

        system, potential, dt = white_dwarf_liquid(args.n)
        grid = tuple(int(x) for x in args.grid.lower().split("x")) if args.grid else None
        options = dict(pair_method="all_pairs", matrix_grid=grid)
    comm_arg = world if world.size > 1 else None
    sim = Simulation(system, potential, VelocityVerlet(dt=dt), device=args.device, precision=args.precision,
                     comm=comm_arg, use_graphs=not args.no_graphs, **options)
    if args.host_build and getattr(sim.neighbors, "device_build", None) is not None:
        sim.neighbors.device_build = None
    if args.eager_build and getattr(sim.neighbors, "device_build", None) is not None:
        sim.neighbors.device_build.use_graphs = False
    if args.overlap != "auto" and hasattr(sim.forces, "overlap_halo"):
        sim.forces.overlap_halo = args.overlap == "on"
    sim.run(args.warmup)
    sim.backend.synchronize()
    world.Barrier()
    profiler = None
    if args.profile and world.rank == 0:
        import cProfile

        profiler = cProfile.Profile()
        profiler.enable()
    t0 = time.perf_counter()
    sim.run(args.steps)
    sim.backend.synchronize()
    world.Barrier()
    seconds = time.perf_counter() - t0
    if profiler is not None:
        profiler.disable()
        import io
        import pstats

        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(45)
        stats.sort_stats("cumulative").print_stats(45)
        with open(args.profile, "w") as f:
            f.write(text.getvalue())
    n = system.n_atoms
    record = {"case": args.case, "ranks": world.size, "N": n, "precision": args.precision,
              "device": sim.backend.device_name, "steps": args.steps, "seconds": seconds,
              "steps_per_s": args.steps / seconds, "atom_steps_per_s": n * args.steps / seconds,
              "decomposition": sim.decomposition.describe() if sim.decomposition is not None else "one rank",
              "TotEng": sim.thermo_row()["TotEng"], "weak": bool(args.weak)}
    nl = sim.neighbors
    record["builds"] = int(nl.n_builds)
    if hasattr(nl, "device_build"):
        record["domain_build"] = "host" if nl.device_build is None else "device"
        if nl.device_build is not None:
            record["device_build_repeats"] = int(nl.device_build.repeats)
            record["device_build_captures"] = int(nl.device_build.captures)
            if nl.device_build.captures == 0:
                record["domain_build"] = "device, eager"
    graph = sim.step_graph
    record["step_graph"] = type(graph).__name__ if graph is not None else "none (host-driven steps)"
    for name in ("captures", "capture_seconds", "build_seconds", "launches"):    # HostBuildStepGraph's counters
        if hasattr(graph, name):
            record[f"graph_{name}"] = getattr(graph, name)
    record.update(_phases(sim, world))
    if sim.decomposition is not None and hasattr(nl, "refresh_ghosts"):
        comm = sim.decomposition.comm
        halo = nl.halo_bytes()
        record["ghost_rows"] = int(comm.comm.allreduce(nl.n_ghost))
        record["ghost_bytes_per_step"] = int(comm.comm.allreduce(halo["sent"]))
        record["local_copy_bytes_per_step"] = int(comm.comm.allreduce(halo["local"]))
        record["transport"] = comm.transport
        record["overlap_halo"] = bool(getattr(sim.forces, "overlap_halo", False))
        if args.probe:
            record["probe_GBps"] = _probe(comm, sim.backend)
    elif args.probe and sim.decomposition is not None:
        record["probe_GBps"] = _probe(as_communicator(world, sim.backend), sim.backend)
    return record


def main(argv=None) -> int:
    args = _parser().parse_args(argv)
    from pycumd.parallel import abort_on_error, world as mpi_world

    world = mpi_world()
    with abort_on_error(world):
        record = measure(args, world)
    if world.rank == 0:
        extra = f", forces {record['forces_s'] * 1e6:.0f} us"
        if "build_s" in record:
            extra += f", build {record['build_s'] * 1e6:.0f} us ({record['builds']} builds)"
        if "build_phases_s" in record:
            extra += " [" + ", ".join(f"{name} {t * 1e6:.0f}" for name, t in record["build_phases_s"].items()) + " us]"
        if "decide_s" in record:
            extra += (f", decision {record['decide_s'] * 1e6:.0f} us, step without it "
                      f"{record['step_no_decision_s'] * 1e6:.0f} us")
        if "ghost_bytes_per_step" in record:
            extra += (f", ghosts {record['ghost_rows']} rows, {record['ghost_bytes_per_step'] / 1e6:.2f} MB sent "
                      f"+ {record['local_copy_bytes_per_step'] / 1e6:.2f} MB local per step, halo "
                      f"{record['halo_s'] * 1e6:.0f} us ({record['transport']}"
                      f"{', overlapped' if record.get('overlap_halo') else ''})")
        if record.get("probe_GBps"):
            extra += f", probe {record['probe_GBps']:.0f} GB/s"
        if record.get("graph_captures"):
            extra += (f", steps: {record['step_graph']} ({record['graph_captures']} captures, "
                      f"{record['graph_capture_seconds'] / record['graph_captures'] * 1e6:.0f} us each)")
        elif record["ranks"] > 1:
            extra += f", steps: {record['step_graph']}"
        if "domain_build" in record:
            extra += f", {record['domain_build']} build"
        print(f"{record['case']} N={record['N']} ranks={record['ranks']} {record['precision']}: "
              f"{record['atom_steps_per_s']:.3e} atom-steps/s ({record['steps_per_s']:.1f} steps/s; "
              f"{record['decomposition']}){extra}", flush=True)
        if args.json:
            with open(args.json, "a") as f:
                f.write(json.dumps(record) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
