"""Benchmarks run by ``pycumd bench NAME``; each module has ``main(argv) -> int``.

A benchmark that writes files writes them where ``--out-dir`` says, by default into
``bench-NAME/`` in the working folder (:func:`default_out_dir`), never into the project's docs.
A benchmark that cannot run here (no GPU for a GPU-only one) prints why and returns non-zero.
"""

import argparse
from pathlib import Path

#: every benchmark, with the one line ``pycumd bench --help`` shows for it
SUMMARIES = {
    "lj": "LJ liquid throughput (LAMMPS bench/in.lj scaled up): steps/s and atom-steps/s",
    "scan": "prefix-sum and counting-sort throughput against CuPy, CUB and others (GPU only)",
    "precision": "float, double and composite arithmetic on a summation and a do/undo test",
    "ions": "all-pairs screened-Coulomb ions at the IUMD paper's sizes: ms per step",
    "drift": "NVE energy drift per precision (LJ liquid, ions or EAM copper)",
    "eam": "EAM throughput (LAMMPS bench/in.eam scaled up), beside the LAMMPS executable: steps/s",
    "checkpoint": "time of one checkpoint and the slowdown of a run that writes them",
    "potential-map": "electrostatic potential maps: direct, cutoff and multilevel summation",
    "scaling": "throughput over MPI ranks (spatial domains; all pairs over replicated atoms or the force matrix)",
    "batch": "many small systems at once (1,024 x 1,000 LJ; 64 x 4,000 tempering): aggregate atom-steps/s",
    "charged": "molten NaCl with PPPM: steps/s, the step split and the measured Coulomb force error (vs OpenMM)",
    "chain": "bead-spring polymers (LAMMPS bench/in.chain.scaled, FENE + WCA, Langevin): steps/s and the step split",
}


def default_out_dir(name: str) -> Path:
    """``./bench-NAME``: where benchmark ``name`` writes its tables, plots and JSON by default."""
    return Path(f"bench-{name}")


def timed_run(sim, warmup: int, steps: int) -> tuple:
    """``warmup`` untimed steps of ``sim``, then ``steps`` timed ones between device synchronisations:
    ``(seconds, neighbour rebuilds during the timed steps)``."""
    import time

    if warmup:
        sim.run(warmup, progress=False)
    builds = sim.neighbors.n_builds
    sim.backend.synchronize()
    t0 = time.perf_counter()
    sim.run(steps, progress=False)
    sim.backend.synchronize()
    return time.perf_counter() - t0, sim.neighbors.n_builds - builds


def write_results(out_dir, name: str, results: list) -> None:
    """A bench's records, a list of dicts, as ``out_dir/NAME.json`` (the folder made if needed)."""
    import json

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(results, indent=1))


def argument_parser(name: str, description: str) -> argparse.ArgumentParser:
    """The parser of ``pycumd bench NAME``: its own name in the usage line and a plain-text
    description (kept as written: examples on their own lines)."""
    return argparse.ArgumentParser(prog=f"pycumd bench {name}", description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
