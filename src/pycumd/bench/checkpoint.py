"""Cost of checkpoints: the time one checkpoint takes, and the slowdown of a run that checkpoints.

The in.lj liquid (fcc at density 0.8442, T 1.44, r_cut 2.5, skin 0.3, NVE) at ``--cells`` per edge:

* one checkpoint, waited for (the side-stream copy of the state, encoding, the atomic
  write with fsync): median of ``--repeats``, and the file size;
* the time the simulation itself loses per checkpoint (the call returns once the copy is queued;
  encoding and writing go on in the writer thread);
* ``--steps`` steps with a checkpoint every ``--every`` steps against the same steps without.

    pycumd bench checkpoint --cells 63 --precision single --steps 20000 --every 10000
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from pycumd.bench import argument_parser
from pycumd.outputs.checkpoint import CheckpointWriter
from pycumd.potentials import LennardJones
from pycumd.simulation import Simulation
from pycumd.system import create_velocities, lattice_system


def _simulation(cells, precision, device):
    system = lattice_system("fcc", cells, density=0.8442)
    create_velocities(system, 1.44, 87287)
    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    return Simulation(system, lj, skin=0.3, device=device, precision=precision)


def measure(cells: int, precision: str, device: str, steps: int, every: int, repeats: int, directory: Path) -> dict:
    sim = _simulation(cells, precision, device)
    sim.run(300)                                          # compile, melt, settle the list
    writer = CheckpointWriter(directory / "bench.ckpt")
    waited, returned = [], []
    for _ in range(repeats):
        sim.run(10)
        sim.backend.synchronize()
        t0 = time.perf_counter()
        writer.write_now(sim)
        sim.backend.synchronize()
        t1 = time.perf_counter()
        writer.write_now(sim, wait=True)                  # same step: only waits for the file
        t2 = time.perf_counter()
        returned.append(t1 - t0)
        waited.append(t2 - t0)
    writer.close()
    size = os.path.getsize(directory / "bench.ckpt")
    timings = {}
    for label, interval in (("without", 0), ("with", every)):
        sim = _simulation(cells, precision, device)
        sim.run(300)
        if interval:
            sim.reporters.append(CheckpointWriter(directory / "run.ckpt", interval))
        sim.backend.synchronize()
        t0 = time.perf_counter()
        sim.run(steps)
        sim.close()
        sim.backend.synchronize()
        timings[label] = time.perf_counter() - t0
    return {"N": sim.state.n_atoms, "precision": precision, "device": sim.backend.device_name,
            "checkpoint_s": statistics.median(waited), "run_loses_s": statistics.median(returned),
            "bytes": size, "bytes_per_atom": size / sim.state.n_atoms, "steps": steps, "every": every,
            "run_without_s": timings["without"], "run_with_s": timings["with"],
            "slowdown": timings["with"] / timings["without"] - 1.0}


DESCRIPTION = """\
Cost of checkpoints on the in.lj liquid: the time one checkpoint takes (and the file size), the
time the run itself loses per checkpoint, and --steps steps with a checkpoint every --every
steps against the same steps without.

    pycumd bench checkpoint --cells 63 --precision single --steps 20000 --every 10000
"""


def main(argv=None):
    ap = argument_parser("checkpoint", DESCRIPTION)
    ap.add_argument("--cells", type=int, nargs="+", default=[63])
    ap.add_argument("--precision", nargs="+", default=["auto"])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--every", type=int, default=10000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--dir", help="where the checkpoint files go (default: a temporary directory)")
    args = ap.parse_args(argv)
    print(f"{'N':>10} {'precision':>9} {'checkpoint s':>12} {'run loses s':>11} {'MB':>8} {'B/atom':>7} "
          f"{'run s':>8} {'with ckpt s':>11} {'slowdown':>8}")
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for cells in args.cells:
            for precision in args.precision:
                r = measure(cells, precision, args.device, args.steps, args.every, args.repeats, Path(tmp))
                print(f"{r['N']:>10} {r['precision']:>9} {r['checkpoint_s']:>12.3f} {r['run_loses_s']:>11.4f} "
                      f"{r['bytes'] / 1e6:>8.1f} {r['bytes_per_atom']:>7.1f} {r['run_without_s']:>8.2f} "
                      f"{r['run_with_s']:>11.2f} {100 * r['slowdown']:>7.2f}%", flush=True)


if __name__ == "__main__":
    main()
