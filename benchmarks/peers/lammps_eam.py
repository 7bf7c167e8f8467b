"""The LAMMPS executable on in.eam scaled up, one JSON line per size, for the EAM peer comparison.

A thin driver over ``pycumd.bench.eam.run_lammps`` (the same input as ``pycumd bench eam
--lammps-ranks``: in.eam at ``--cells`` cells per edge, ``neigh_modify every 1 delay 5 check yes``,
a warm-up run and then the timed run, whose ``Loop time`` is the figure), with its own step counts
per call so that the 16M-atom run stays short.  ``lmp`` and ``mpiexec`` are found on PATH
(benchmarks/eam_device.sh puts the unpacked lammps-min archive there; see pack_lammps.py).

    python benchmarks/peers/lammps_eam.py --cells 63 --ranks 16 --warmup 10 --steps 100 --json eam.jsonl

A failure (LAMMPS missing, an error, the time limit) becomes a record with "error".
"""

from __future__ import annotations

import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "src"))

from common import write_record  # noqa: E402 (same folder)


def lammps_version() -> str | None:
    """The first line LAMMPS prints (``LAMMPS (22 Jul 2025 - Update 4)``), or None."""
    try:
        out = subprocess.run(["lmp", "-h"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [s.strip() for s in out.splitlines() if s.strip().startswith("Large-scale")]
    return lines[0] if lines else None


def main(argv=None) -> int:
    import argparse

    from pycumd.bench.eam import run_lammps
    from pycumd.bench.lammps_peer import LammpsUnavailable
    from pycumd.potentials.eam import resolve_potential_file

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cells", type=int, nargs="+", default=[20])
    ap.add_argument("--ranks", type=int, default=16, help="MPI ranks (one OpenMP thread each)")
    ap.add_argument("--steps", type=int, default=100, help="timed steps")
    ap.add_argument("--warmup", type=int, default=10, help="steps of the warm-up run")
    ap.add_argument("--potential-file", default="Cu_u3.eam")
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds allowed for each size")
    ap.add_argument("--json", help="append results as JSON lines to this file")
    args = ap.parse_args(argv)
    try:
        path = str(resolve_potential_file(args.potential_file))
    except ValueError as e:
        print(f"lammps_eam: {e}; give its path with --potential-file")
        return 2
    version = lammps_version()
    for cells in args.cells:
        n = 4 * cells ** 3
        try:
            r = run_lammps(path, cells, args.ranks, args.steps, args.warmup, timeout=args.timeout)
            r.update({"engine": "lammps", "system": "in.eam", "cells": cells, "ranks": args.ranks,
                      "warmup": args.warmup, "version": version,
                      "E_per_atom_end": None if r["TotEng"] is None else r["TotEng"] / r["N"]})
            print(f"LAMMPS {args.ranks} ranks {r['N']:>10} atoms {r['steps']:>5} steps {r['steps_per_s']:9.2f} steps/s "
                  f"{r['atom_steps_per_s']:.3e} atom-steps/s (Loop time {r['seconds']:.2f} s)", flush=True)
        except (LammpsUnavailable, RuntimeError, subprocess.TimeoutExpired, OSError) as e:
            msg = f"{type(e).__name__}: {e}"
            r = {"engine": "lammps", "system": "in.eam", "code": f"LAMMPS ({args.ranks} MPI ranks)", "N": n,
                 "cells": cells, "ranks": args.ranks, "precision": "double", "steps": args.steps,
                 "steps_per_s": None, "atom_steps_per_s": None, "device": "cpu", "version": version,
                 "error": msg[-2000:]}
            print(f"LAMMPS {args.ranks} ranks {n:>10} atoms ERROR {msg[-300:]}", flush=True)
        write_record(args.json, r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
