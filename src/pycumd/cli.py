"""Command line: ``pycumd run [FILE]`` and ``pycumd bench {lj,scan,precision}``."""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from importlib import resources
from pathlib import Path

from .precision import PRECISION_NAMES

DEFAULT_INPUT = "melt.toml"
EXAMPLES = {"melt": "melt.toml", "argon-sphere": "in.argon_sphere", "argon-sphere-toml": "argon_sphere.toml"}
BENCHMARKS = ["lj", "scan", "precision", "ions", "drift"]
#: further subcommands, each a module with ``add_arguments(parser)``, ``HELP`` (one line) and ``main(args) -> int``
COMMAND_MODULES: dict[str, str] = {}


def _run(args) -> int:
    from .inputs.config import build_simulation, load_config
    from .inputs.lammps_input import run_lammps_script
    from .outputs.thermo import ThermoReporter
    from .outputs.trajectory import trajectory_writer

    device, precision = args.device, args.precision
    trajectory = (args.trajectory, args.trajectory_every) if args.trajectory else None
    t0 = time.perf_counter()
    if args.example:
        if args.file is not None:
            raise ValueError("give either an input file or --example, not both")
        args.file = str(resources.files("pycumd.data").joinpath(EXAMPLES[args.example]))
        print(f"pycumd: running the built-in example {args.example} ({args.file})", flush=True)
    if args.file is None or str(args.file).endswith(".toml"):
        if args.file is None:
            text = resources.files("pycumd.data").joinpath(DEFAULT_INPUT).read_text()
            print(f"pycumd: no input given, running the embedded default ({DEFAULT_INPUT}: "
                  f"LAMMPS examples/melt, 4000 LJ atoms)", flush=True)
        else:
            text = Path(args.file).read_text()
        config = load_config(text)
        sim, run = build_simulation(config, device=device if device != "auto" else None,
                                    precision=precision if precision != "auto" else None,
                                    deterministic=args.deterministic)
        sim.reporters.append(ThermoReporter(every=run["thermo"], log=args.log))
        path = args.trajectory or run["trajectory"]
        if path:
            sim.reporters.append(trajectory_writer(path, args.trajectory_every if args.trajectory else run["trajectory_every"]))
        print(sim.describe(), flush=True)
        try:
            sim.run(run["steps"], progress=args.progress)
        finally:
            sim.close()
        steps, n = run["steps"], sim.state.n_atoms
    else:
        variables = dict(args.var or [])
        runner = run_lammps_script(path=args.file, variables=variables, device=device, precision=precision,
                                   deterministic=args.deterministic,
                                   log=args.log, trajectory=trajectory, progress=args.progress)
        steps = runner.sim.state.step if runner.sim else 0
        n = runner.sim.state.n_atoms if runner.sim else 0
    seconds = time.perf_counter() - t0
    print(f"Total wall time {seconds:.2f} s for {steps} steps of {n} atoms "
          f"(including set-up and compilation)", flush=True)
    return 0


def _bench(args, rest) -> int:
    module = importlib.import_module(f"pycumd.bench.{args.what.replace('-', '_')}")
    module.main(rest)
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pycumd", description="Molecular dynamics on GPUs, in Python.")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a simulation (TOML config or LAMMPS input; default: embedded LJ melt)")
    r.add_argument("file", nargs="?", help="a .toml config or a LAMMPS input script")
    r.add_argument("--example", choices=sorted(EXAMPLES),
                   help="a built-in example: melt (the default run), argon-sphere (the seed's collapsing sphere, "
                        "LAMMPS input; --var scale 0.25 for a smaller one), argon-sphere-toml (the same as TOML)")
    r.add_argument("--log", help="write the thermo table as CSV (Step,Temp,E_pair,E_mol,TotEng,Press)")
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--precision", default="auto", choices=["auto", *PRECISION_NAMES],
                   help="auto: double on the CPU, mixed on the GPU")
    r.add_argument("--deterministic", action="store_true",
                   help="GPU kernels without FMA contraction: double-precision NVE gives the CPU's bits")
    r.add_argument("--trajectory", help="write frames to this file: .xyz (extended XYZ), .gsd, .lammpstrj (LAMMPS dump)")
    r.add_argument("--trajectory-every", type=int, default=100, help="steps between frames (default 100)")
    r.add_argument("--var", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set a LAMMPS index variable, as lmp -var NAME VALUE")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: on a terminal, for runs longer than a few seconds)")
    b = sub.add_parser("bench", help="benchmarks: lj (MD throughput), scan (prefix sums), precision "
                                     "(composite suite), ions (all-pairs screened Coulomb); "
                                     "pycumd bench NAME --help for each one's options")
    b.add_argument("what", choices=BENCHMARKS)
    for name, module_name in COMMAND_MODULES.items():
        module = importlib.import_module(module_name)
        module.add_arguments(sub.add_parser(name, help=module.HELP))
    return p


def main(argv=None) -> int:
    from .backend import BackendUnavailableError
    from .inputs.config import ConfigError
    from .inputs.lammps_script import LammpsScriptError
    from .simulation import SimulationError
    from .system import InputError

    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if len(argv) >= 2 and argv[0] == "bench" and argv[1] in BENCHMARKS:
        args, rest = parser.parse_args(argv[:2]), argv[2:]     # the benchmark parses (and documents) the rest
    else:
        args, rest = parser.parse_known_args(argv)
    if args.command != "bench" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if args.command in COMMAND_MODULES:
            return importlib.import_module(COMMAND_MODULES[args.command]).main(args)
        return _run(args) if args.command == "run" else _bench(args, rest)
    except (InputError, ConfigError, LammpsScriptError, BackendUnavailableError, FileNotFoundError,
            NotImplementedError) as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 2
    except SimulationError as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
