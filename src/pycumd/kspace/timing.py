"""Time a k-space solver on random neutral charges (a quick check, not a benchmark suite).

    PYTHONPATH=src python3 -m pycumd.kspace.timing --device cuda --atoms 100000 --accuracy 1e-4

Prints the chosen parameters, the setup time and the mean time of a compute call without and with
energy (the GPU synchronised around the timed loop).  Density 0.1 charges per cubic length unit
(about molten salt's ion density in Angstrom), real-space cutoff 10, ``lj`` units.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None) -> None:
    from pycumd.backend import select
    from pycumd.kspace import make_solver
    from pycumd.precision import get_precision

    parser = argparse.ArgumentParser(prog="python -m pycumd.kspace.timing", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="auto", help="cpu, cuda or auto")
    parser.add_argument("--precision", default="double", help="double, mixed or single (GPU)")
    parser.add_argument("--style", default="pppm", help="pppm or ewald")
    parser.add_argument("--atoms", type=int, default=100_000)
    parser.add_argument("--accuracy", type=float, default=1e-4)
    parser.add_argument("--order", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args(argv)

    backend = select(args.device)
    precision = get_precision(args.precision, backend.name)
    rng = np.random.default_rng(1)
    length = (args.atoms / 0.1) ** (1.0 / 3.0)
    box = np.array([length, length, length])
    x = rng.random((args.atoms, 3)) * box
    q = np.where(np.arange(args.atoms) % 2 == 0, 1.0, -1.0)
    solver = make_solver(args.style, args.accuracy, **({"order": args.order} if args.order else {}))
    t0 = time.perf_counter()
    solver.setup(box, q, 10.0, 1.0, backend, precision, "lj", table_bits=0)
    t_setup = time.perf_counter() - t0
    xp = backend.xp
    dtype = precision.state_dtype if backend.is_gpu else np.float64
    rows = np.zeros((args.atoms, 4), dtype=dtype)
    rows[:, :3] = x
    positions, charges = xp.asarray(rows), xp.asarray(q)
    forces = xp.zeros((args.atoms, 3), dtype=precision.accum_dtype if backend.is_gpu else np.float64)
    print(f"{args.style} on {backend.name} ({backend.device_name}), {precision.name}: N = {args.atoms}, box {length:.4g}")
    print("\n".join(solver.describe()))
    print(f"setup {t_setup * 1e3:.1f} ms")
    for with_energy in (False, True):
        solver.compute(positions, charges, box, forces, with_energy)      # first call: kernels, plans
        backend.synchronize()
        t0 = time.perf_counter()
        for _ in range(args.repeats):
            solver.compute(positions, charges, box, forces, with_energy)
        backend.synchronize()
        dt = (time.perf_counter() - t0) / args.repeats
        print(f"compute (energy {'yes' if with_energy else 'no'}): {dt * 1e3:.3f} ms per call")


if __name__ == "__main__":
    main()
