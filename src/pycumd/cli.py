"""Command line: ``pycumd run``, ``pycumd bench NAME``, ``pycumd potential-map``, ``place-ions`` and ``plot``."""

from __future__ import annotations

import argparse
import importlib
import sys
from importlib import resources

from .bench import SUMMARIES as BENCHMARKS
from .precision import PRECISION_NAMES

DEFAULT_INPUT = "melt.toml"
EXAMPLES = {"melt": "melt.toml", "argon-sphere": "in.argon_sphere", "argon-sphere-toml": "argon_sphere.toml"}
#: further subcommands: name -> (module with ``add_arguments(parser)`` and ``main(args) -> int``, one-line
#: help); a module is imported only when its command is named, so that ``pycumd --help`` stays fast
COMMAND_MODULES: dict[str, tuple[str, str]] = {
    "potential-map": ("pycumd.potential_maps.command", "electrostatic potential map of a PQR/PDB/LAMMPS data/GSD "
                                                       "input (direct, cutoff or multilevel summation)"),
    "place-ions": ("pycumd.potential_maps.place_ions", "place ions at the lowest-energy points of the potential "
                                                       "map, one at a time (as VMD's cionize)"),
    "plot": ("pycumd.plot", "plot a thermo log (energies with a drift line, temperature, pressure) or an "
                            "rdf/msd/vacf/S(q) CSV"),
}


def _plan(args):
    """The RunPlan of the command line's input (TOML, LAMMPS script, or the embedded default)."""
    from .inputs.config import ConfigError, load_config, plan_from_config
    from .inputs.lammps_input import plan_from_lammps_script
    from .inputs.text import read_text_input
    from .system import InputError

    if args.example:
        if args.file is not None:
            raise ValueError("give either an input file or --example, not both")
        args.file = str(resources.files("pycumd.data").joinpath(EXAMPLES[args.example]))
        print(f"pycumd: running the built-in example {args.example} ({args.file})", flush=True)
    if args.file is None or args.file == "-":
        text = _standard_input_script(required=args.file == "-")
        if text is not None:
            return _plan_from_text(text, "<stdin>", args)
        print(f"pycumd: no input given, running the embedded default ({DEFAULT_INPUT}: "
              f"LAMMPS examples/melt, 4000 LJ atoms)", flush=True)
        return plan_from_config(load_config(resources.files("pycumd.data").joinpath(DEFAULT_INPUT).read_text()))
    if str(args.file).endswith(".toml"):
        text = read_text_input(args.file, "config")
        try:
            return plan_from_config(load_config(text))
        except (ConfigError, InputError) as exc:
            raise ConfigError(f"{args.file}: {exc}") from None
    return plan_from_lammps_script(path=args.file, variables=dict(args.var or []))


def _plan_from_text(text: str, name: str, args):
    """The plan of an input read from standard input: a TOML config if it parses as one with
    tables, else a LAMMPS script (relative paths from the working folder)."""
    import os

    from .inputs.config import ConfigError, load_config, plan_from_config, tomllib
    from .inputs.lammps_input import plan_from_lammps_script
    from .system import InputError

    try:
        is_toml = any(isinstance(v, dict) for v in tomllib.loads(text).values())
    except tomllib.TOMLDecodeError:
        is_toml = False
    if is_toml:
        try:
            return plan_from_config(load_config(text))
        except (ConfigError, InputError) as exc:
            raise ConfigError(f"{name}: {exc}") from None
    return plan_from_lammps_script(text=text, variables=dict(args.var or []), base_dir=os.getcwd(),
                                   source_name=name)


def _standard_input_script(required: bool) -> str | None:
    """The script piped or redirected into ``pycumd run`` (as ``lmp < in.lj``), or None when standard
    input is a terminal, /dev/null or absent. Under MPI rank 0 reads it and every rank gets it."""
    import os
    import select
    import stat

    from .parallel import launched_size, world

    def read() -> str | None:
        try:
            fd = sys.stdin.fileno()
            mode = os.fstat(fd).st_mode
        except (AttributeError, OSError, ValueError):
            return None
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)) or sys.stdin.isatty():
            return None
        if stat.S_ISFIFO(mode) and not select.select([fd], [], [], 1.0)[0]:
            print("pycumd: reading the input script from standard input (give a file or --example "
                  "to run without it)", file=sys.stderr, flush=True)
        return sys.stdin.read()

    comm = world() if launched_size() > 1 else None
    text = read() if comm is None or comm.Get_rank() == 0 else None
    if comm is not None:
        text = comm.bcast(text, root=0)
    if text is not None and not text.strip():
        text = None
    if text is None and required:
        raise ValueError("pycumd run -: standard input holds no script")
    return text


def _run(args) -> int:
    """``pycumd run``: the input's plan (or a checkpoint's), with the command line's options applied,
    run by the driver. Exit status: 0 done; 1 the run failed; 2 bad input; 128 + signal number
    after a clean stop on SIGINT/SIGTERM (the checkpoint to resume from is printed); 3 after
    ``--walltime``."""
    from .bookkeeping import RunStopped
    from .outputs.settings import TrajectoryOutput
    from .run_plan import execute

    if args.partition:
        return _run_partitions(args)
    resume = None
    if args.restart:
        from .inputs.checkpoint import plan_from_checkpoint, read_checkpoint

        if args.file or args.example:
            raise ValueError("--restart continues the checkpoint's own input: give no input file")
        resume = read_checkpoint(args.restart)
        if resume.meta.get("ensemble"):             # a batch's checkpoint (pycumd.ensemble)
            return _run_ensemble(_ensemble_plan_of_checkpoint(resume), args, resume=args.restart)
        plan = plan_from_checkpoint(resume)
        print(f"pycumd: continuing from {args.restart} at step {resume.step}", flush=True)
    else:
        plan = _plan(args)
    from .ensemble import EnsemblePlan

    if isinstance(plan, EnsemblePlan):              # a TOML sweep: a batch of runs
        return _run_ensemble(plan, args)
    if args.batch is not None:
        raise ValueError(f"--batch {args.batch} chooses the engine of a batch of runs (a TOML sweep); this "
                         f"input is one run")
    if args.steps is not None:
        if args.restart:
            raise ValueError("--steps sets the length of a new run: a run continued with --restart keeps "
                             "its own length")
        plan.set_last_run_steps(args.steps, option="--steps")
    if args.device != "auto":
        plan.engine.device = args.device
    if args.precision != "auto":
        plan.engine.precision = args.precision
    plan.engine.deterministic = plan.engine.deterministic or args.deterministic
    if args.threads is not None:
        plan.engine.threads = args.threads
    from .outputs.settings import check_writable
    for option, path in (("--log", args.log), ("--trajectory", args.trajectory), ("--checkpoint", args.checkpoint)):
        if path is not None:
            check_writable(path, option)
    if args.log is not None:
        plan.outputs.thermo_log = args.log
    if args.progress is not None:
        plan.outputs.progress = args.progress
    if args.trajectory:
        plan.outputs.trajectories = [TrajectoryOutput(args.trajectory, args.trajectory_every)]
    if args.checkpoint:
        plan.outputs.checkpoint = args.checkpoint
    if args.checkpoint_every is not None:
        if args.checkpoint_every < 1:
            raise ValueError(f"--checkpoint-every {args.checkpoint_every}: give a whole number of steps >= 1 "
                             f"(leave it out to checkpoint only at a clean stop)")
        plan.outputs.checkpoint_every = args.checkpoint_every
    plan.outputs.check()
    deadline = _walltime_deadline(args.walltime)
    from .parallel import abort_on_error, launched_size, rank_of, world
    if launched_size() > 1:           # mpirun/srun -n P: one run decomposed over the P ranks (pycumd.parallel)
        plan.engine.comm = world()
    try:
        with abort_on_error(plan.engine.comm):    # an error on one rank stops all of them
            result = execute(plan, resume=resume, stop_on_signals=True,
                             on_simulation=lambda sim: setattr(sim, "wall_deadline", deadline))
    except RunStopped as stop:
        if rank_of(plan.engine.comm) == 0:
            resume_hint = f" Resume with: pycumd run --restart {stop.checkpoint}" if stop.checkpoint else ""
            print(f"pycumd: {stop}; every output is flushed.{resume_hint}", file=sys.stderr, flush=True)
        return 3 if stop.reason.startswith("walltime") else 128 + (15 if stop.reason.startswith("SIGTERM") else 2)
    n = result.sim.state.n_atoms if result.sim else 0
    if result.sim is not None and result.sim.decomposition is not None:
        n = result.sim.decomposition.n_atoms
        if rank_of(plan.engine.comm) != 0:
            return 0
    print(f"Total wall time {result.wall_seconds:.2f} s for {result.steps} steps of {n} atoms "
          f"(including set-up and compilation)", flush=True)
    print(_where_the_files_are(plan.outputs), flush=True)
    return 0


def _run_ensemble(plan, args, resume=None) -> int:
    """``pycumd run`` of a batch (a TOML ``sweep``): the command line's options that apply to one
    (--device, --precision, --deterministic, --threads, --batch, --steps, --log: one CSV with a system column,
    --trajectory: a pattern with {system} or a path numbered per system, --checkpoint[-every]); the
    others are refused."""
    from .ensemble import execute_ensemble
    from .outputs.settings import check_writable

    from .parallel import launched_size

    if launched_size() > 1:
        raise NotImplementedError("a batch of runs (a TOML sweep) runs in one process: start it without "
                                  "mpirun/srun")
    for option, value in (("--walltime", args.walltime), ("--progress", args.progress)):
        if value is not None:
            raise ValueError(f"{option} is not implemented for a batch of runs (a TOML sweep)")
    if args.steps is not None:
        if resume is not None:
            raise ValueError("--steps sets the length of a new run: a run continued with --restart keeps its own length")
        plan.steps = args.steps
    if args.device != "auto":
        plan.engine.device = args.device
    if args.precision != "auto":
        plan.engine.precision = args.precision
    plan.engine.deterministic = plan.engine.deterministic or args.deterministic
    if args.threads is not None:
        plan.engine.threads = args.threads
    if args.batch is not None:
        plan.batch = args.batch
    for option, path in (("--log", args.log), ("--checkpoint", args.checkpoint)):
        if path is not None:
            check_writable(path, option)
    if args.log is not None:
        plan.thermo_log = args.log
    if args.trajectory:
        path = args.trajectory
        if "{system}" not in path:
            stem, dot, suffix = path.rpartition(".")
            path = f"{stem}.{{system}}.{suffix}" if dot else path + ".{system}"
        plan.trajectory, plan.trajectory_every = path, args.trajectory_every
    if args.checkpoint:
        plan.checkpoint = args.checkpoint
    if args.checkpoint_every is not None:
        if args.checkpoint_every < 1:
            raise ValueError(f"--checkpoint-every {args.checkpoint_every}: give a whole number of steps >= 1")
        plan.checkpoint_every = args.checkpoint_every
    import time

    start = time.perf_counter()
    ens = execute_ensemble(plan, resume=resume)
    atoms = sum(s.n_atoms for s in plan.systems)
    print(f"Total wall time {time.perf_counter() - start:.2f} s for {ens.step} steps of {len(plan.systems)} "
          f"systems ({atoms} atoms; including set-up and compilation)", flush=True)
    files = [p for p in (plan.thermo_log, plan.trajectory, plan.checkpoint, plan.exchange_log) if p]
    print(f"pycumd: files written: {', '.join(files)}" if files else
          "pycumd: no files written; add --log thermo.csv for one thermo CSV with a system column", flush=True)
    return 1 if ens.failures else 0


def _run_partitions(args) -> int:
    """``pycumd run SCRIPT -partition Nx1``: a LAMMPS script with ``temper`` read once per partition
    (:func:`~pycumd.inputs.lammps_input.plan_partitions`) and run as one batch with replica exchange
    by the batch driver (:func:`_run_ensemble`); the universe log (``Step T0 T1 ...``) goes to
    ``log.lammps`` in the working folder."""
    from .inputs.lammps_input import parse_partition, plan_partitions

    n = parse_partition(args.partition)
    if args.file is None or args.file == "-" or args.example or args.restart:
        raise ValueError(f"-partition {args.partition} runs a LAMMPS script file with temper: give its path "
                         f"(not standard input, --example or --restart)")
    if str(args.file).endswith(".toml"):
        raise ValueError(f"-partition {args.partition} is for LAMMPS scripts; a TOML sweep is a batch already")
    plan = plan_partitions(args.file, n, variables=dict(args.var or []))
    every = plan.exchange["every"]
    if args.steps is not None and (args.steps < 0 or args.steps % every):
        raise ValueError(f"--steps {args.steps}: temper's N must be a multiple of its M ({every}) and >= 0")
    print(f"pycumd: {n} partitions of {args.file} run as one batch with replica exchange (temper); "
          f"universe log: {plan.exchange_log}", flush=True)
    return _run_ensemble(plan, args)


def _ensemble_plan_of_checkpoint(checkpoint):
    """The batch a batch checkpoint was written by: its TOML read again, with the options it ran with."""
    from .inputs.config import load_config, plan_from_config
    from .system import InputError

    context = checkpoint.meta.get("context") or {}
    source = context.get("source")
    if source and source.get("kind") == "lammps-partitions":      # pycumd run SCRIPT -partition Nx1 (temper)
        from .components import EngineOptions
        from .inputs.lammps_input import plan_partitions

        plan = plan_partitions(source["path"], source["partitions"], source["variables"],
                               EngineOptions(device=context["device"], precision=context["precision"],
                                             deterministic=context["deterministic"]),
                               text=source["text"], base_dir=source["base_dir"])
        plan.thermo_log, plan.trajectory = context.get("thermo_log"), context.get("trajectory")
        plan.checkpoint, plan.checkpoint_every = context.get("checkpoint"), context.get("checkpoint_every", 0)
        return plan
    if not source or source.get("kind") != "toml":
        raise InputError(f"checkpoint {checkpoint.path}: a batch built in Python (no TOML stored); continue it "
                         f"with Ensemble.restore_checkpoint")
    plan = plan_from_config(load_config(source["text"]), device=context["device"], precision=context["precision"],
                            deterministic=context["deterministic"])
    plan.thermo_log, plan.trajectory = context.get("thermo_log"), context.get("trajectory")
    plan.checkpoint, plan.checkpoint_every = context.get("checkpoint"), context.get("checkpoint_every", 0)
    return plan


def _where_the_files_are(outputs) -> str:
    """The closing line of a run: the files it wrote and how to look at them."""
    files = [p for p in (outputs.thermo_log, *(t.path for t in outputs.trajectories), outputs.checkpoint) if p]
    if not files:
        return ("pycumd: no files written; add --log thermo.csv (and --trajectory traj.gsd) to keep the run, "
                "then: pycumd plot thermo.csv")
    hint = f"; plot with: pycumd plot {outputs.thermo_log}" if outputs.thermo_log else ""
    return f"pycumd: files written: {', '.join(files)}{hint}"


def _walltime_deadline(text):
    """``HH:MM:SS`` (or ``MM:SS``, or seconds) from now as a ``time.monotonic()`` deadline, or None."""
    if text is None:
        return None
    import time

    try:
        parts = [float(p) for p in text.split(":")]
        if len(parts) > 3 or any(p < 0 for p in parts):
            raise ValueError
    except ValueError:
        raise ValueError(f"--walltime {text!r}: expected HH:MM:SS") from None
    seconds = sum(p * 60 ** k for k, p in enumerate(reversed(parts)))
    return time.monotonic() + seconds


def _bench(args, rest) -> int:
    """``pycumd bench NAME ...``: the benchmark's own ``main`` parses the rest; its status is the exit
    status (None: 0)."""
    module = importlib.import_module(f"pycumd.bench.{args.what.replace('-', '_')}")
    return int(module.main(rest) or 0)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; the options of a ``COMMAND_MODULES`` subcommand are added only for
    ``command`` (the one named on the command line), whose module is then imported."""
    p = argparse.ArgumentParser(prog="pycumd", description="Molecular dynamics on GPUs, in Python.")
    from . import __version__
    p.add_argument("--version", action="version", version=f"pycumd {__version__}")
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a simulation (TOML config or LAMMPS input; default: embedded LJ melt)",
                       description="Run a simulation: a LAMMPS input script, a TOML config, a script on standard "
                                   "input, or (no input) the built-in LJ melt.")
    r.add_argument("file", nargs="?", help="a .toml config or a LAMMPS input script; - or a script piped "
                                          "or redirected into standard input (pycumd run < in.lj) reads it "
                                          "from there")
    r.add_argument("--steps", type=int, metavar="N",
                   help="length of the last (or only) run of the input, in steps")
    r.add_argument("--example", choices=sorted(EXAMPLES),
                   help="a built-in example: melt (the default run), argon-sphere (a collapsing sphere of argon, "
                        "LAMMPS input; --var scale 0.25 for a smaller one), argon-sphere-toml (the same as TOML)")
    r.add_argument("--log", metavar="PATH", help="write the thermo rows the run prints as CSV (default columns Step,Temp,E_pair,E_mol,"
                        "TotEng,Press; a script's thermo_style custom columns)")
    r.add_argument("--device", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--precision", default="auto", choices=["auto", *PRECISION_NAMES],
                   help="auto: double on the CPU, mixed on the GPU")
    r.add_argument("--deterministic", action="store_true",
                   help="GPU kernels without FMA contraction and the CPU's full neighbour list: "
                        "double-precision NVE gives the same bits on CPU and GPU")
    r.add_argument("--batch", choices=["members", "batched", "auto"], default=None,
                   help="a batch of runs (a TOML sweep): members (default: each system its own kernels), "
                        "batched (all systems in one launch per kernel; needs --deterministic), or auto "
                        "(batched where it runs)")
    r.add_argument("--threads", type=int, metavar="N",
                   help="CPU threads of each process (default: NUMBA_NUM_THREADS if set, else over MPI ranks "
                        "the cores divided by the ranks on the node, else every core)")
    r.add_argument("--trajectory", metavar="PATH", help="write frames to this file: .xyz (extended XYZ), .gsd, .lammpstrj (LAMMPS dump)")
    r.add_argument("--trajectory-every", type=int, default=100, metavar="N", help="steps between frames (default 100)")
    r.add_argument("--var", nargs=2, action="append", metavar=("NAME", "VALUE"),
                   help="set a LAMMPS index variable, as lmp -var NAME VALUE")
    r.add_argument("--checkpoint", metavar="PATH",
                   help="checkpoint file (previous one kept as PATH.1); also written at a clean stop")
    r.add_argument("--checkpoint-every", type=int, metavar="N",
                   help="steps between checkpoints (>= 1; the last step of each run is checkpointed too)")
    r.add_argument("--restart", metavar="CHECKPOINT",
                   help="continue the run a checkpoint was written in, bit for bit, appending to its outputs")
    r.add_argument("--walltime", metavar="HH:MM:SS",
                   help="stop cleanly (checkpoint, flushed outputs) before this much wall time has passed")
    r.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar (default: on a terminal, for runs longer than a few seconds)")
    r.add_argument("-partition", "--partition", metavar="NxM",
                   help="LAMMPS' multi-partition run of a script with temper: N partitions (M = 1) read with "
                        "each world variable's k-th value, run as one batch with replica exchange")
    listing = "\n".join(f"  {name:<14} {line}" for name, line in BENCHMARKS.items())
    b = sub.add_parser("bench", help="benchmarks (pycumd bench --help lists them)",
                       description=f"benchmarks:\n{listing}\n\npycumd bench NAME --help: one benchmark's options",
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    b.add_argument("what", choices=list(BENCHMARKS), metavar="NAME", help="the benchmark (listed above)")
    for name, (module_name, help_line) in COMMAND_MODULES.items():
        command_parser = sub.add_parser(name, help=help_line, description=help_line)
        if name == command:
            importlib.import_module(module_name).add_arguments(command_parser)
    return p


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    if len(argv) >= 2 and argv[0] == "bench" and argv[1] in BENCHMARKS:
        args, rest = parser.parse_args(argv[:2]), argv[2:]     # the benchmark parses (and documents) the rest
    else:
        args, rest = parser.parse_known_args(argv)
    if args.command != "bench" and rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    # the engine is imported only once a command runs: --help and argument errors stay fast
    from .backend import BackendUnavailableError
    from .inputs.config import ConfigError
    from .inputs.lammps_script import LammpsScriptError
    from .outputs.reporter import OutputError
    from .simulation import SimulationError
    from .system import InputError

    try:
        if args.command in COMMAND_MODULES:
            return importlib.import_module(COMMAND_MODULES[args.command][0]).main(args)
        return _run(args) if args.command == "run" else _bench(args, rest)
    except (InputError, ConfigError, LammpsScriptError, BackendUnavailableError, FileNotFoundError,
            NotImplementedError) as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 2
    except (SimulationError, OutputError, OSError) as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"pycumd: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"pycumd: {exc or 'interrupted'}; the files written so far are flushed and readable",
              file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
