"""The ASE door: Calculator against ASE's own LennardJones (energy, energies, forces, stress),
conversions both ways, errors, ase.md.VelocityVerlet with the pycumd calculator, and the fast path."""

import numpy as np
import pytest

pytest.importorskip("ase")

from ase import Atoms, units
from ase.build import bulk
from ase.calculators.lj import LennardJones as AseLJ
from ase.md.velocitydistribution import MaxwellBoltzmannDistribution as thermalize
from ase.md.verlet import VelocityVerlet as AseVerlet

from pycumd.ase import Calculator, atoms_to_system, run, system_to_atoms
from pycumd.potentials import LennardJones
from pycumd.system import InputError

EPS, SIGMA, RC = 0.0104, 3.4, 8.0


def test_the_public_path_is_pycumd_ase():
    import pycumd.ase
    import pycumd.inputs.ase

    assert set(pycumd.ase.__all__) == {"Calculator", "atoms_to_system", "check_cell", "run", "system_to_atoms"}
    assert all(getattr(pycumd.ase, name) is getattr(pycumd.inputs.ase, name) for name in pycumd.ase.__all__)


def argon(seed=1, cells=4):
    atoms = bulk("Ar", "fcc", a=5.26, cubic=True).repeat(cells)
    atoms.rattle(0.08, seed=seed)
    return atoms


def pycumd_lj():
    # ASE's LennardJones shifts the energy to zero at rc: pycumd's "shift"
    return LennardJones(RC, cutoff="shift").pair_coeff(0, 0, epsilon=EPS, sigma=SIGMA)


def test_calculator_matches_ase_lennard_jones(backend):
    atoms = argon()
    ref = atoms.copy()
    ref.calc = AseLJ(epsilon=EPS, sigma=SIGMA, rc=RC, smooth=False)
    atoms.calc = Calculator(pycumd_lj(), device=backend.name)
    assert set(Calculator(pycumd_lj()).implemented_properties) == {"energy", "energies", "free_energy", "forces",
                                                                  "stress"}
    assert atoms.get_potential_energy() == pytest.approx(ref.get_potential_energy(), rel=1e-12)
    assert atoms.get_potential_energy(force_consistent=True) == pytest.approx(ref.get_potential_energy(), rel=1e-12)
    assert np.abs(atoms.get_potential_energies() - ref.get_potential_energies()).max() < 1e-12
    f, f_ref = atoms.get_forces(), ref.get_forces()
    assert np.abs(f - f_ref).max() < 1e-11 * np.abs(f_ref).max()
    s, s_ref = atoms.get_stress(), ref.get_stress()
    assert np.abs(s - s_ref).max() < 1e-11 * np.abs(s_ref).max()
    assert abs(s[3]) > 1e-7                          # off-diagonal (Voigt yz) really compared
    calls = []
    calc = atoms.calc
    original = calc.calculate
    calc.calculate = lambda *a, **k: (calls.append(1), original(*a, **k))
    atoms.get_forces()
    assert calls == []                               # cached while nothing changed
    atoms.positions[0, 0] += 0.01
    atoms.get_forces()
    assert calls == [1]


def test_conversions_both_ways():
    atoms = bulk("NaCl", "rocksalt", a=5.64, cubic=True).repeat(2)
    thermalize(atoms, temperature_K=300, rng=np.random.default_rng(3))
    atoms.positions += 20.0                              # outside the cell: wrapped with images
    system = atoms_to_system(atoms)
    assert system.units.name == "metal" and system.n_types == 2
    assert list(system.masses) == pytest.approx([atoms[atoms.numbers == 11][0].mass, atoms[atoms.numbers == 17][0].mass])
    assert np.allclose(system.velocities, atoms.get_velocities() / (1 / (1000 * units.fs)) * 1.0)
    back = system_to_atoms(system, numbers=[11, 17])
    assert (back.numbers == atoms.numbers).all()
    assert np.allclose(back.positions, atoms.positions, atol=1e-12)
    assert np.allclose(back.get_velocities(), atoms.get_velocities(), rtol=1e-14)
    assert system_to_atoms(atoms_to_system(atoms, type_map={"Cl": 0, "Na": 1}), numbers=[17, 11]).get_chemical_formula() \
        == atoms.get_chemical_formula()


def test_errors():
    tri = bulk("Ar", "fcc", a=5.26)                       # primitive cell: triclinic
    with pytest.raises(InputError, match="triclinic .* not supported"):
        atoms_to_system(tri)
    with pytest.raises(InputError, match="periodic in x, y and z"):
        atoms_to_system(Atoms("Ar2", positions=[[0, 0, 0], [3, 0, 0]], cell=[10, 10, 10], pbc=[True, True, False]))
    with pytest.raises(InputError, match="type_map has no type for Cl"):
        atoms_to_system(bulk("NaCl", "rocksalt", a=5.64, cubic=True), type_map={"Na": 0})
    with pytest.raises(InputError, match="timestep must be positive"):
        run(argon(), pycumd_lj(), 10, 0.0)


def test_ase_velocity_verlet_with_pycumd_calculator():
    """ase.md.VelocityVerlet driving the pycumd calculator follows ASE's own LJ trajectory."""
    atoms = argon(seed=2, cells=3 + 1)
    thermalize(atoms, temperature_K=60, rng=np.random.default_rng(5))
    ref = atoms.copy()
    atoms.calc = Calculator(pycumd_lj())
    ref.calc = AseLJ(epsilon=EPS, sigma=SIGMA, rc=RC, smooth=False)
    for a in (atoms, ref):
        AseVerlet(a, timestep=5 * units.fs).run(10)
    assert np.abs(atoms.positions - ref.positions).max() < 1e-9
    assert atoms.get_total_energy() == pytest.approx(ref.get_total_energy(), rel=1e-10)


def test_fast_path_matches_ase_velocity_verlet():
    atoms = argon(seed=4)
    thermalize(atoms, temperature_K=60, rng=np.random.default_rng(6))
    ref = atoms.copy()
    ref.calc = AseLJ(epsilon=EPS, sigma=SIGMA, rc=RC, smooth=False)
    AseVerlet(ref, timestep=5 * units.fs).run(20)
    out = run(atoms, pycumd_lj(), 20, 5 * units.fs, device="cpu", precision="double")
    assert out is atoms
    # pycumd's metal units take LAMMPS' force-to-acceleration constant (1/1.0364269e-4, 8 digits); ASE's
    # is exact: after 20 steps the positions differ by 6.6e-9 A (measured)
    assert np.abs(atoms.positions - ref.positions).max() < 1e-7
    assert np.abs(atoms.get_velocities() - ref.get_velocities()).max() < 1e-6 * np.abs(ref.get_velocities()).max()
    assert atoms.get_potential_energy() == pytest.approx(ref.get_potential_energy(), rel=1e-8)
    assert np.abs(atoms.positions - argon(seed=4).positions).max() > 1e-3       # it did move
