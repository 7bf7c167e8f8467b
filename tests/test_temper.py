"""LAMMPS ``temper`` over ``pycumd run SCRIPT -partition Nx1``: the script read once per partition
(world/universe/uloop variables taking the partition's value), the partitions run as one batch
(:class:`pycumd.Ensemble`) with :class:`pycumd.tempering.ReplicaExchange`."""

from __future__ import annotations

import csv

import numpy as np
import pytest

from conftest import HAVE_CUDA
from pycumd.cli import main
from pycumd.integrators import NoseHoover
from pycumd.inputs.lammps_input import plan_from_lammps_script, plan_partitions
from pycumd.inputs.lammps_script import LammpsScriptError, read_script

LADDER = (1.0, 1.1, 1.2, 1.3)
DEVICES = ["cpu", pytest.param("cuda", marks=[pytest.mark.cuda, pytest.mark.skipif(
    not HAVE_CUDA, reason="no CUDA GPU / CuPy on this machine")])]

#: 256 LJ atoms (4^3 fcc cells), Langevin at the partition's temperature
SETUP = """units lj
lattice fcc 0.8442
region b block 0 4 0 4 0 4
create_box 1 b
create_atoms 1 box
mass 1 1.0
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0
{variable}
velocity all create $t 87287 loop geom
fix 1 all nve
fix 2 all langevin $t $t 0.5 48279
thermo 20
"""


def _script(tmp_path, run: str, variable: str = "variable t world " + " ".join(map(str, LADDER)),
            name: str = "in.temper"):
    path = tmp_path / name
    path.write_text(SETUP.format(variable=variable) + run + "\n")
    return path


def _rows(path):
    return list(csv.DictReader(path.read_text().splitlines()))


@pytest.mark.parametrize("device", DEVICES)
def test_each_partition_before_the_first_swap_is_the_plain_run_at_its_temperature(device, tmp_path, monkeypatch,
                                                                                     capsys):
    """``-partition 4x1``: partition k's thermo rows up to the first exchange attempt (step 100) are, to the
    last bit, those of ``run 100`` of the same script with ``variable t index T_k`` (its own run)."""
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, "temper 200 100 $t 2 0 58728")
    assert main(["run", str(script), "-partition", "4x1", "--device", device, "--log", "rx.csv"]) == 0
    rows = _rows(tmp_path / "rx.csv")
    assert sorted({int(r["system"]) for r in rows}) == [0, 1, 2, 3]
    for k, t in enumerate(LADDER):
        plain = _script(tmp_path, "run 100", variable=f"variable t index {t}", name=f"in.plain{k}")
        assert main(["run", str(plain), "--device", device, "--log", f"plain{k}.csv"]) == 0
        alone = _rows(tmp_path / f"plain{k}.csv")
        mine = [r for r in rows if int(r["system"]) == k and int(r["Step"]) <= 100]
        assert [int(r["Step"]) for r in alone] == list(range(0, 101, 20)) == [int(r["Step"]) for r in mine]
        for a, b in zip(alone, mine):
            for key in ("Temp", "E_pair", "TotEng", "Press"):
                assert float(a[key]) == float(b[key]), (k, a["Step"], key)
    assert abs(float(rows[0]["Temp"]) - LADDER[0]) < 1e-12      # partition 0 started at its own temperature
    capsys.readouterr()


@pytest.mark.parametrize("device", DEVICES)
def test_swaps_happen_and_repeat_bit_for_bit(device, tmp_path, monkeypatch, capsys):
    """12 attempts every 25 steps: the universe log ``log.lammps`` (LAMMPS' ``Step T0 T1 T2 T3`` lines, the
    start and every attempt) shows permutations, some non-identity; the acceptance ratios are in [0, 1] with
    at least one exchange; each replica's thermostat ends at the temperature the walk gives it; a second
    run with the same seeds writes the same bytes; seed1 != 0 picks pairs at random (other walk)."""
    text = "temper 300 25 $t 2 0 4711"
    runs = []
    for name in ("one", "two"):
        d = tmp_path / name
        d.mkdir()
        monkeypatch.chdir(d)
        script = _script(d, text)
        assert main(["run", str(script), "-partition", "4x1", "--device", device, "--log", "rx.csv"]) == 0
        err = capsys.readouterr().err
        assert "replica exchange: 12 attempts every 25 steps" in err
        runs.append(((d / "log.lammps").read_text(), (d / "rx.csv").read_text()))
    assert runs[0] == runs[1]
    lines = runs[0][0].splitlines()
    assert lines[0] == "Step T0 T1 T2 T3" and lines[1] == "0 0 1 2 3" and len(lines) == 2 + 12
    walk = [list(map(int, line.split())) for line in lines[1:]]
    assert [w[0] for w in walk] == list(range(0, 301, 25))
    assert all(sorted(w[1:]) == [0, 1, 2, 3] for w in walk)
    assert any(w[1:] != [0, 1, 2, 3] for w in walk)

    plan = plan_partitions(_script(tmp_path, text), 4)
    plan.engine.device = device
    plan.exchange_log = str(tmp_path / "walk.log")
    from pycumd.ensemble import execute_ensemble

    ens = execute_ensemble(plan, out=None)
    ratios = ens.exchange.acceptance_ratios()
    assert np.all((ratios >= 0) & (ratios <= 1))
    assert 0 < ens.exchange.accepted.sum() < ens.exchange.attempts.sum() == 12 + 6
    assert ens.exchange.seed == 4711 and not ens.exchange.random_pairs
    assert (tmp_path / "walk.log").read_text() == runs[0][0]
    index = ens.exchange.temperature_index
    for i, m in enumerate(ens.members):
        assert m.thermostat.t_start == m.thermostat.t_stop == LADDER[index[i]]
    capsys.readouterr()

    random_pairs = plan_partitions(_script(tmp_path, "temper 300 25 $t 2 5 4711"), 4)
    assert random_pairs.exchange == {"temperatures": list(LADDER), "every": 25, "seed": 4711, "random_pairs": True}


def test_world_universe_and_uloop_values_per_partition():
    """Partition k of N sees a world variable's k-th value (exactly N values); universe and uloop with
    exactly N values as world; without partitions universe/uloop start at their first value."""
    text = ("variable a world 10 20 30\nvariable u universe x y z\nvariable n uloop 3 pad\n"
            "print \"$a $u $n\"\n")
    for k, want in enumerate(["10 x 1", "20 y 2", "30 z 3"]):
        assert read_script(text, partition=(k, 3))[0].args == [want]
    assert read_script(text.replace("world 10 20 30", "world 10"))[0].args == ["10 x 1"]


@pytest.mark.parametrize("variable, message", [
    ("variable t world 1.0 1.1 1.2", ":9: variable t world has 3 values, the run has 4 partitions"),
    ("variable t world 1.0 1.1 1.2 1.3 1.4", ":9: variable t world has 5 values, the run has 4 partitions"),
    ("variable t universe 1.0 1.1 1.2 1.3 1.4", ":9: variable t universe has 5 values for 4 partitions: "
                                                "partitions taking the further values in turn .* not implemented"),
    ("variable t universe 1.0 1.1", ":9: variable t universe has 2 values, fewer than the 4 partitions"),
])
def test_partition_variables_with_the_wrong_count_name_the_line(tmp_path, variable, message):
    with pytest.raises(LammpsScriptError, match=message):
        plan_partitions(_script(tmp_path, "temper 200 100 $t 2 0 58728", variable=variable), 4)


@pytest.mark.parametrize("run, message", [
    ("temper 200 100 $t 1 0 58728", ":14: temper: fix 1 is fix nve; temper needs a thermostat fix"),
    ("temper 200 100 $t 9 0 58728", ":14: temper: no fix with ID 9"),
    ("temper 200 30 $t 2 0 58728", ":14: temper: temper 200 30: N must be a multiple of M"),
    ("temper 200 100 $t 2 0 58728 4", ":14: temper: temper index 4 \\(partition 0\\): invalid temperature index "
                                     "value, expected 0..3 for 4 partitions"),
    ("temper 200 100 $t 2 0 58728 x", ":14: temper: temper index 'x': expected a whole number"),
    ("variable i world 0 0 1 2\ntemper 200 100 $t 2 0 58728 $i",
     "temper indices \\[0, 0, 1, 2\\] \\(by partition\\) are not a permutation of 0..3"),
    ("temper 200 100 $t 2 0 0", ":14: temper: temper seeds 0 0"),
    ("run 10\ntemper 200 100 $t 2 0 58728", "a run or minimize besides temper is not implemented"),
    ("fix 3 all momentum 10 linear 1 1 1\ntemper 200 100 $t 2 0 58728",
     ":15: temper: fix 3 \\(momentum\\) beside the thermostat fix 2: .* runs alone"),
    ("temper 200 100 $t 2 0 58728\nrun 10", "a run or minimize besides temper is not implemented"),
    ("dump 1 all atom 10 d.lammpstrj\ntemper 200 100 $t 2 0 58728", "dump and fix ave/time are not implemented"),
])
def test_temper_errors(tmp_path, run, message):
    with pytest.raises((LammpsScriptError, NotImplementedError, ValueError), match=message):
        plan_partitions(_script(tmp_path, run), 4)


@pytest.mark.parametrize("device", DEVICES)
def test_temper_index_starts_each_partition_at_its_ladder_index(device, tmp_path, monkeypatch, capsys):
    """``temper ... $i`` with ``variable i world 2 0 3 1`` (LAMMPS' continuation of a tempering run):
    partition k starts at temperature LADDER[i_k] (its thermostat's target reset, its velocities those
    its script made), so its rows up to the first attempt (step 100) are, to the last bit, those of
    ``run 100`` of a script whose fix langevin has LADDER[i_k] from the start; the universe log's first
    status line is the indices; the ladder still belongs to the partitions' ``temp`` values."""
    monkeypatch.chdir(tmp_path)
    index = (2, 0, 3, 1)
    variable = ("variable t world " + " ".join(map(str, LADDER)) + "\nvariable i world "
                + " ".join(map(str, index)))
    script = _script(tmp_path, "temper 200 100 $t 2 0 58728 $i", variable=variable)
    assert main(["run", str(script), "-partition", "4x1", "--device", device, "--log", "rx.csv"]) == 0
    log = (tmp_path / "log.lammps").read_text().splitlines()
    assert log[:2] == ["Step T0 T1 T2 T3", "0 2 0 3 1"] and len(log) == 2 + 2
    rows = _rows(tmp_path / "rx.csv")
    for k, i in enumerate(index):
        plain = _script(tmp_path, "run 100", variable=f"variable t index {LADDER[k]}", name=f"in.plain{k}")
        plain.write_text(plain.read_text().replace("fix 2 all langevin $t $t", f"fix 2 all langevin {LADDER[i]} "
                                                                               f"{LADDER[i]}"))
        assert main(["run", str(plain), "--device", device, "--log", f"plain{k}.csv"]) == 0
        alone = _rows(tmp_path / f"plain{k}.csv")
        mine = [r for r in rows if int(r["system"]) == k and int(r["Step"]) <= 100]
        assert [int(r["Step"]) for r in alone] == [int(r["Step"]) for r in mine] == list(range(0, 101, 20))
        for a, b in zip(alone, mine):
            for key in ("Temp", "E_pair", "TotEng", "Press"):
                assert float(a[key]) == float(b[key]), (k, a["Step"], key)
    plan = plan_partitions(script, 4)
    assert plan.exchange["initial_index"] == list(index)
    assert [label["temperature"] for label in plan.labels] == [LADDER[i] for i in index]
    capsys.readouterr()


def test_replica_exchange_initial_index():
    """``initial_index`` puts member i at ladder index initial_index[i] (replica_at its inverse); a
    list that is not a permutation is refused, naming it."""
    from pycumd.tempering import ReplicaExchange

    rx = ReplicaExchange(LADDER, every=10, seed=3, initial_index=[2, 0, 3, 1])
    assert rx.replica_at.tolist() == [1, 3, 0, 2]
    assert rx.temperature_index.tolist() == rx.start_index.tolist() == [2, 0, 3, 1]
    assert ReplicaExchange(LADDER, every=10, seed=3).start_index.tolist() == [0, 1, 2, 3]
    for bad in ([0, 0, 1, 2], [0, 1, 2], [0, 1, 2, 4]):
        with pytest.raises(ValueError, match="a permutation of 0..3"):
            ReplicaExchange(LADDER, every=10, seed=3, initial_index=bad)


def test_command_line_errors(tmp_path, capsys):
    """-partition 2x2, temper without -partition, -partition of a script without temper, a ladder that
    does not increase: exit status 2 and one line saying what."""
    script = _script(tmp_path, "temper 200 100 $t 2 0 58728")
    cases = [
        (["-partition", "2x2"], "-partition 2x2: partitions of 2 processes are not implemented"),
        (["-partition", "4"], "-partition 4: expected NxM"),
        (["-partition", "4x1", "--steps", "130"], "--steps 130: temper's N must be a multiple of its M (100)"),
        ([], ":9: variable t world has 4 values, one per partition: it needs LAMMPS partitions"),
    ]
    for extra, message in cases:
        assert main(["run", str(script), "--device", "cpu", *extra]) == 2
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err, err
    no_world = _script(tmp_path, "temper 200 100 $t 2 0 58728", variable="variable t index 1.0", name="in.one")
    assert main(["run", str(no_world), "--device", "cpu"]) == 2
    assert ":14: temper: it needs LAMMPS partitions: run it with pycumd run SCRIPT -partition Nx1" in capsys.readouterr().err
    plain = _script(tmp_path, "run 10", name="in.run")
    assert main(["run", str(plain), "-partition", "4x1", "--device", "cpu"]) == 2
    assert "this script has none" in capsys.readouterr().err
    down = _script(tmp_path, "temper 200 100 $t 2 0 58728", variable="variable t world 1.3 1.2 1.1 1.0",
                   name="in.down")
    assert main(["run", str(down), "-partition", "4x1", "--device", "cpu"]) == 2
    assert "needs them increasing with the partition index" in capsys.readouterr().err
    with pytest.raises(LammpsScriptError, match=":9: variable t world has 4 values, one per partition"):
        plan_from_lammps_script(path=script)


def test_restart_of_a_partitions_checkpoint_continues_bit_for_bit(tmp_path, monkeypatch, capsys):
    """``--checkpoint rx.ckpt --checkpoint-every 100`` of a 200-step temper run, then ``pycumd run --restart
    rx.ckpt.1`` (step 100; the script's text is stored in it): the thermo CSV and the universe log of the
    continued run are those of the uninterrupted one, byte for byte."""
    monkeypatch.chdir(tmp_path)
    script = _script(tmp_path, "temper 200 25 $t 2 0 4711")
    assert main(["run", str(script), "-partition", "4x1", "--device", "cpu", "--log", "rx.csv",
                 "--checkpoint", "rx.ckpt", "--checkpoint-every", "100"]) == 0
    full = (tmp_path / "rx.csv").read_text(), (tmp_path / "log.lammps").read_text()
    script.write_text("edited after the run: the restart reads the stored text\n")
    assert main(["run", "--restart", "rx.ckpt.1"]) == 0
    assert ((tmp_path / "rx.csv").read_text(), (tmp_path / "log.lammps").read_text()) == full
    capsys.readouterr()


def test_temper_exchanges_the_targets_of_fix_nvt(tmp_path):
    """``temper ... fix-ID`` of a ``fix nvt`` whose own target (2.0) is none of the ladder's: each
    Nose-Hoover chain is reset to its partition's ``temp`` and ends at the one the walk gives its replica."""
    path = tmp_path / "in.nvt"
    path.write_text(SETUP.format(variable="variable t world " + " ".join(map(str, LADDER)))
                    .replace("fix 1 all nve\n", "fix 1 all nvt temp 2.0 2.0 0.5\n")
                    .replace("fix 2 all langevin $t $t 0.5 48279\n", "")
                    + "temper 200 25 $t 1 0 4711\n")
    plan = plan_partitions(path, 4)
    plan.engine.device = "cpu"
    plan.exchange_log = None
    from pycumd.ensemble import execute_ensemble

    ens = execute_ensemble(plan, out=None)
    assert ens.exchange.attempts.sum() == 4 * 2 + 4 and ens.exchange.accepted.sum() > 0
    index = ens.exchange.temperature_index
    for i, m in enumerate(ens.members):
        assert isinstance(m.thermostat, NoseHoover)
        assert m.thermostat.t_start == m.thermostat.t_stop == LADDER[index[i]]
