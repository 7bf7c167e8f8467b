"""Checkpoints and restarts: a continued run gives the uninterrupted run's bits and files; damaged
checkpoints are refused; clean stops on signals and --walltime; a run killed at random moments
leaves readable files and continues exactly."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from pycumd import EngineOptions, InputError, Reporter, RunPlan, execute
from pycumd.backend import cuda_available
from pycumd.bookkeeping import RunStopped
from pycumd.checkpoint_file import FORMAT_VERSION, read_checkpoint
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.outputs.checkpoint import write_atomically
from pycumd.outputs.settings import TrajectoryOutput

SCRIPT = """
units lj
lattice fcc 0.8442
region box block 0 5 0 5 0 5
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
{fix}
thermo 5
run 30
{second_run}
"""
FIXES = {
    "nve": "fix 1 all nve",
    "nose-hoover": "fix 1 all nvt temp 1.44 1.2 0.5",
    "langevin": "fix 1 all nve\nfix 2 all langevin 1.44 1.44 0.5 48279",
}


def _plan(tmp_path: Path, fix="nve", second_run="run 20", **outputs) -> RunPlan:
    plan = plan_from_lammps_script(text=SCRIPT.format(fix=FIXES[fix], second_run=second_run), screen=False)
    plan.engine = EngineOptions(device="cpu")
    plan.outputs.thermo_log = str(tmp_path / "thermo.csv")
    plan.outputs.trajectories = [TrajectoryOutput(str(tmp_path / "traj.xyz"), 5),
                                 TrajectoryOutput(str(tmp_path / "traj.lammpstrj"), 10),
                                 TrajectoryOutput(str(tmp_path / "traj.gsd"), 10)]
    plan.outputs.checkpoint = str(tmp_path / "run.ckpt")
    plan.outputs.checkpoint_every = 10
    for key, value in outputs.items():
        setattr(plan.outputs, key, value)
    return plan


def test_the_test_system_uses_the_neighbour_list(tmp_path):
    """The restart tests exercise the neighbour-list path (its rebuild, reorder and CUDA graphs),
    not the all-pairs kernel a smaller box would get."""
    assert execute(_plan(tmp_path, second_run="")).sim.pair_method == "neighbor"


def _final(result):
    system = result.sim.system()
    return system.positions, system.velocities, system.images


def _files(tmp_path: Path) -> dict:
    import gsd.hoomd

    files = {name: (tmp_path / name).read_bytes() for name in ("thermo.csv", "traj.xyz", "traj.lammpstrj")}
    with gsd.hoomd.open(str(tmp_path / "traj.gsd")) as frames:
        files["traj.gsd"] = [(f.configuration.step, f.particles.position.tobytes(), f.particles.velocity.tobytes())
                             for f in frames]
    return files


@pytest.mark.parametrize("fix", sorted(FIXES))
def test_a_restart_continues_with_the_bits_and_files_of_the_uninterrupted_run(tmp_path, fix):
    """Two runs (30 + 20 steps), checkpoints every 10: continuing from the checkpoint of step 20 (in
    the first run) and of step 40 (in the second) gives the uninterrupted run's final state bit for
    bit and the same thermo log and trajectories, no row or frame repeated or missing."""
    reference = execute(_plan(tmp_path, fix))
    expected_files = _files(tmp_path)
    expected = _final(reference)
    assert read_checkpoint(tmp_path / "run.ckpt").step == 50 and read_checkpoint(tmp_path / "run.ckpt.1").step == 40
    for step in (20, 40):
        # a second, identical run, stopped after step `step` (as by a signal)
        work = tmp_path / f"from_{step}"
        work.mkdir()
        with pytest.raises(RunStopped):
            execute(_plan(work, fix), on_simulation=lambda sim: sim.reporters.append(_StopAt(step)))
        checkpoint = read_checkpoint(work / "run.ckpt")
        assert checkpoint.step == step
        resumed = execute(_plan(work, fix), resume=checkpoint)
        for a, b in zip(_final(resumed), expected):
            assert np.array_equal(a, b)
        assert _files(work) == expected_files


class _StopAt(Reporter):
    """Asks the simulation to stop after step ``step``."""

    def __init__(self, step):
        self.step = step

    def next_report(self, step, run_start, run_end):
        return self.step if step <= self.step <= run_end else None

    def report(self, snapshot):
        snapshot.simulation.stop_request = "test"


def test_the_checkpoint_holds_the_thermostat_and_run_bounds(tmp_path):
    execute(_plan(tmp_path, "nose-hoover", second_run=""))
    meta = read_checkpoint(tmp_path / "run.ckpt").meta
    assert meta["run_start"] == 0 and meta["run_end"] == 30 and meta["step"] == 30
    assert set(meta["thermostat"]) == {"eta", "eta_dot", "eta_dotdot", "eta_mass", "t_current"}
    assert meta["context"]["source"]["kind"] == "lammps" and meta["precision"] == "double"


def test_damaged_checkpoints_are_refused_with_the_reason(tmp_path):
    execute(_plan(tmp_path, second_run=""))
    good = (tmp_path / "run.ckpt").read_bytes()
    cases = {"truncated": good[:-100], "altered": good[:-50] + bytes([good[-50] ^ 1]) + good[-49:],
             "other": b"ITEM: TIMESTEP\n0\n", "version": good.replace(f'"format": {FORMAT_VERSION}'.encode(), b'"format": 9', 1)}
    messages = {"truncated": "truncated", "altered": "checksum mismatch", "other": "not a pycumd checkpoint",
                "version": "format version 9"}
    for name, data in cases.items():
        path = tmp_path / f"{name}.ckpt"
        path.write_bytes(data)
        with pytest.raises(InputError, match=messages[name]):
            read_checkpoint(path)
    with pytest.raises(InputError, match="No such file"):
        read_checkpoint(tmp_path / "missing.ckpt")


def test_atomic_writes_keep_a_complete_file_and_the_previous_one(tmp_path):
    path = tmp_path / "c.ckpt"
    write_atomically(path, b"first")
    write_atomically(path, b"second")
    write_atomically(path, b"third")
    assert path.read_bytes() == b"third" and (tmp_path / "c.ckpt.1").read_bytes() == b"second"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.ckpt", "c.ckpt.1"]


def _pycumd(*args, cwd, stdout=subprocess.PIPE) -> subprocess.Popen:
    """``pycumd ARGS`` in a subprocess (``stdout=DEVNULL`` for one that is waited for, not read)."""
    return subprocess.Popen([sys.executable, "-m", "pycumd.cli", *args], cwd=cwd, stdout=stdout,
                            stderr=subprocess.PIPE, text=True)


LONG_SCRIPT = SCRIPT.format(fix=FIXES["nve"], second_run="").replace("run 30", "run ${steps}")


def test_sigterm_stops_cleanly_with_a_checkpoint_and_the_run_resumes(tmp_path):
    (tmp_path / "in.lj").write_text(LONG_SCRIPT)
    proc = _pycumd("run", "in.lj", "--var", "steps", "200000", "--device", "cpu", "--log", "thermo.csv", cwd=tmp_path)
    deadline = time.time() + 60
    while not (tmp_path / "thermo.csv").exists() or len((tmp_path / "thermo.csv").read_text().splitlines()) < 3:
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "Resume with: pycumd run --restart pycumd-stop.ckpt" in err
    stopped_at = read_checkpoint(tmp_path / "pycumd-stop.ckpt").step
    rows = (tmp_path / "thermo.csv").read_text().splitlines()
    assert int(rows[-1].split(",")[0]) <= stopped_at
    # the continuation is asked to stop at once by a wall time of zero: it stops at its first block
    proc = _pycumd("run", "--restart", "pycumd-stop.ckpt", "--walltime", "0:0:0", cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert read_checkpoint(tmp_path / "pycumd-stop.ckpt").step > stopped_at


def test_restart_errors_name_the_problem(tmp_path):
    from pycumd.cli import main

    assert main(["run", "--restart", str(tmp_path / "none.ckpt")]) == 2
    (tmp_path / "bad.ckpt").write_bytes(b"\xff\xfe garbage")
    assert main(["run", "--restart", str(tmp_path / "bad.ckpt")]) == 2
    assert main(["run", "--walltime", "soon"]) == 2


def _parse_xyz_frames(text: str) -> list[int]:
    lines, steps, i = text.split("\n"), [], 0
    while i < len(lines) - 1:
        n = int(lines[i])
        assert i + n + 2 <= len(lines) - 1, "a cut-off frame"
        steps.append(int([w for w in lines[i + 1].split() if w.startswith("step=")][0][5:]))
        for line in lines[i + 2:i + 2 + n]:
            assert len(line.split()) == 8
        i += n + 2
    return steps


def _check_frames_read_back(directory: Path) -> None:
    """Every frame of the XYZ, LAMMPS dump and GSD files in ``directory`` reads back."""
    import gsd.hoomd

    if (directory / "traj.xyz").exists():            # LAMMPS dump xyz: N, "Atoms. Timestep: K", N lines
        lines, i = (directory / "traj.xyz").read_text().split("\n"), 0
        while i < len(lines) - 1:
            n = int(lines[i])
            assert lines[i + 1].strip().startswith("Atoms. Timestep:") and i + n + 2 <= len(lines) - 1
            assert all(len(line.split()) == 4 for line in lines[i + 2:i + 2 + n])
            i += n + 2
    if (directory / "traj.lammpstrj").exists():
        lines, i = (directory / "traj.lammpstrj").read_text().split("\n"), 0
        while i < len(lines) - 1:
            assert lines[i] == "ITEM: TIMESTEP"
            n = int(lines[i + 3])
            assert i + 9 + n <= len(lines) - 1, "a cut-off dump frame"
            assert all(len(line.split()) == 5 for line in lines[i + 9:i + 9 + n])
            i += 9 + n
    if (directory / "traj.gsd").exists():
        with gsd.hoomd.open(str(directory / "traj.gsd")) as frames:
            for frame in frames:
                assert frame.particles.position.shape == (frame.particles.N, 3)


def test_a_run_killed_at_20_random_moments_leaves_whole_files_and_continues_exactly(tmp_path):
    """SIGKILL at 20 random moments of a run that continues each time from its last checkpoint:
    after every kill the CSV has only whole rows and every frame of the XYZ, LAMMPS dump and GSD
    trajectories reads back; the chain ends with the files of the run never killed."""
    steps = 4000
    script = LONG_SCRIPT.replace("thermo 5", "thermo 5\ndump 1 all custom 100 traj.lammpstrj id type x y z\n"
                                 "dump 2 all xyz 100 traj.xyz")
    args = ["--var", "steps", str(steps), "--device", "cpu", "--log", "thermo.csv", "--trajectory", "traj.gsd",
            "--trajectory-every", "100", "--checkpoint", "run.ckpt", "--checkpoint-every", "200", "--no-progress"]
    files = ("thermo.csv", "traj.xyz", "traj.lammpstrj", "traj.gsd")
    reference = tmp_path / "reference"
    killed = tmp_path / "killed"
    for d in (reference, killed):
        d.mkdir()
        (d / "in.lj").write_text(script)
    proc = _pycumd("run", "in.lj", *args, cwd=reference, stdout=subprocess.DEVNULL)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    rng = random.Random(20261124)
    kills = restarts = 0
    while True:
        if (killed / "run.ckpt").exists():
            restarts += 1
            proc = _pycumd("run", "--restart", "run.ckpt", cwd=killed, stdout=subprocess.DEVNULL)
        else:
            proc = _pycumd("run", "in.lj", *args, cwd=killed, stdout=subprocess.DEVNULL)
        if kills == 20:
            break
        # kill at a random moment once the run is under way (its log has grown: start-up is over)
        log = killed / "thermo.csv"
        size = log.stat().st_size if log.exists() else 0
        deadline = time.time() + 60
        while proc.poll() is None and (log.stat().st_size if log.exists() else 0) <= size + 200:
            assert time.time() < deadline
            time.sleep(0.02)
        time.sleep(rng.uniform(0.0, 0.6))
        if proc.poll() is not None:          # finished before the kill: start the test's chain again
            assert proc.returncode == 0, proc.stderr.read()
            for name in ("run.ckpt", "run.ckpt.1", *files):
                (killed / name).unlink(missing_ok=True)
            continue
        proc.kill()
        proc.wait()
        kills += 1
        if (killed / "thermo.csv").exists():
            lines = (killed / "thermo.csv").read_text().split("\n")
            assert lines[-1] == "" and all(len(line.split(",")) == 6 for line in lines[:-1])
        _check_frames_read_back(killed)
    assert proc.wait(timeout=120) == 0, proc.stderr.read()
    assert restarts >= 10           # most kills came after a checkpoint: the chain really continued
    for name in ("thermo.csv", "traj.xyz", "traj.lammpstrj"):
        assert (killed / name).read_bytes() == (reference / name).read_bytes(), name
    assert _files(killed)["traj.gsd"] == _files(reference)["traj.gsd"]


def test_a_kill_just_after_a_checkpoint_lands_keeps_the_frames_of_its_step(tmp_path, monkeypatch):
    """A checkpoint must not land before the frames of its step: a continuation from step S cuts the
    files back to S and writes only later frames. A trajectory written slowly (its frame of step 20
    takes 0.5 s, a busy disk or CPU) and a snapshot of the directory taken the moment each checkpoint
    is in place (what a SIGKILL then leaves): every snapshot continues to the uninterrupted files.
    The one of step 30 (the end of the first run) also checks that the second run, continued, does
    not write the frames of its first step again.

    The snapshot is of one instant, as a kill leaves the files: no frame or row is written while it
    is copied (a frame or row is one write call; the writers hold ``files_lock`` around it). Without
    that, the writer thread may be inside the write of a later frame (step S + 5) while the copy
    reads the file, and the snapshot holds a cut-off frame no single instant of the run had."""
    import pycumd.outputs.checkpoint as checkpoint_module
    import pycumd.outputs.trajectory as trajectory_module
    from pycumd.outputs.thermo import ThermoReporter
    from pycumd.outputs.trajectory import ExtXYZWriter

    def plan_in(directory):
        plan = _plan(directory)
        plan.outputs.trajectories = plan.outputs.trajectories[:2]            # the text files: xyz, lammpstrj
        return plan

    files = ("thermo.csv", "traj.xyz", "traj.lammpstrj")
    reference = tmp_path / "reference"
    reference.mkdir()
    execute(plan_in(reference))
    expected = {name: (reference / name).read_bytes() for name in files}

    slow_write, real_write_atomically = ExtXYZWriter._write, checkpoint_module.write_atomically
    real_write_whole, real_thermo_report = trajectory_module._write_whole, ThermoReporter.report
    files_lock = threading.Lock()

    def slow_frame(self, frame):
        if frame.step == 20:
            time.sleep(0.5)
        slow_write(self, frame)

    def write_whole_locked(*args):
        with files_lock:
            real_write_whole(*args)

    def thermo_report_locked(self, snapshot):
        with files_lock:
            real_thermo_report(self, snapshot)

    def write_then_snapshot(path, data, keep_previous=True):
        real_write_atomically(path, data, keep_previous)
        step = read_checkpoint(path).step
        with files_lock:
            shutil.copytree(path.parent, tmp_path / f"killed_after_{step}")

    monkeypatch.setattr(ExtXYZWriter, "_write", slow_frame)
    monkeypatch.setattr(trajectory_module, "_write_whole", write_whole_locked)
    monkeypatch.setattr(ThermoReporter, "report", thermo_report_locked)
    monkeypatch.setattr(checkpoint_module, "write_atomically", write_then_snapshot)
    run = tmp_path / "run"
    run.mkdir()
    execute(plan_in(run))
    monkeypatch.undo()
    snapshots = sorted(tmp_path.glob("killed_after_*"), key=lambda d: int(d.name.split("_")[-1]))
    assert [d.name for d in snapshots] == [f"killed_after_{step}" for step in (0, 10, 20, 30, 40, 50)]
    for killed in snapshots:
        step = read_checkpoint(killed / "run.ckpt").step
        assert step in _parse_xyz_frames((killed / "traj.xyz").read_text()), killed.name
        execute(plan_in(killed), resume=read_checkpoint(killed / "run.ckpt"))
        for name in files:
            assert (killed / name).read_bytes() == expected[name], (killed.name, name)


def test_lammps_restart_commands_write_and_read_checkpoints_and_data_files(tmp_path):
    """``restart N FILE`` checkpoints every N steps; ``write_restart`` and ``write_data`` after a run;
    ``read_restart`` and ``read_data`` give back the atoms, velocities, images and step."""
    script = SCRIPT.format(fix=FIXES["nve"], second_run="write_restart end.ckpt\nwrite_data end.data")
    script = script.replace("thermo 5", "thermo 5\nrestart 10 every.ckpt")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        plan = plan_from_lammps_script(text=script, screen=False)
        assert plan.outputs.checkpoint == "every.ckpt" and plan.outputs.checkpoint_every == 10
        plan.engine = EngineOptions(device="cpu")
        final = execute(plan).sim.system()
        assert read_checkpoint("every.ckpt").step == 30 and read_checkpoint("every.ckpt.1").step == 20
        assert read_checkpoint("end.ckpt").step == 30
        for reader in ("read_restart end.ckpt", "read_data end.data"):
            text = f"units lj\natom_style atomic\n{reader}\npair_style lj/cut 2.5\npair_coeff 1 1 1.0 1.0 2.5\n" \
                   "fix 1 all nve\nthermo 10\nrun 0\n"
            again = plan_from_lammps_script(text=text, screen=False)
            system = again.stages[0].system
            assert np.array_equal(system.positions, final.positions)
            assert np.array_equal(system.velocities, final.velocities)
            assert np.array_equal(system.images, final.images) and np.array_equal(system.ids, final.ids)
            assert again.first_step == (30 if "restart" in reader else 0)
    finally:
        os.chdir(cwd)
    with pytest.raises(Exception, match="write_data before the first run"):
        plan_from_lammps_script(text="units lj\nwrite_data x.data\n", screen=False)


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["single", "mixed", "double", "composite"])
@pytest.mark.parametrize("graphs", [True, False])
@pytest.mark.parametrize("fix", sorted(FIXES))
def test_gpu_restarts_give_the_uninterrupted_bits(tmp_path, precision, graphs, fix):
    """On the GPU, in every precision, with CUDA graphs on and off: continuing from a checkpoint in
    the first and in the second run gives the uninterrupted run's final state and files."""
    if precision == "composite" and fix == "langevin":
        pytest.skip("composite precision has no Langevin thermostat (raises NotImplementedError)")
    engine = EngineOptions(device="cuda", precision=precision, use_graphs=graphs)

    def plan_in(directory):
        plan = _plan(directory, fix)
        plan.engine = engine
        return plan

    expected = _final(execute(plan_in(tmp_path)))
    expected_files = _files(tmp_path)
    for step in (20, 40):
        work = tmp_path / f"from_{step}"
        work.mkdir()
        with pytest.raises(RunStopped):
            execute(plan_in(work), on_simulation=lambda sim: sim.reporters.append(_StopAt(step)))
        resumed = execute(plan_in(work), resume=read_checkpoint(work / "run.ckpt"))
        for a, b in zip(_final(resumed), expected):
            assert np.array_equal(a, b)
        assert _files(work) == expected_files


def test_a_checkpoint_of_another_input_or_version_is_refused(tmp_path):
    execute(_plan(tmp_path, second_run=""))
    checkpoint = read_checkpoint(tmp_path / "run.ckpt")
    (tmp_path / "other").mkdir()
    other = _plan(tmp_path / "other", "nose-hoover", second_run="")
    with pytest.raises(ValueError, match="written by another input"):
        execute(other, resume=checkpoint)
    checkpoint.meta["pycumd_version"] = "0.0.1"
    with pytest.raises(ValueError, match="written by pycumd 0.0.1"):
        execute(_plan(tmp_path, second_run=""), resume=checkpoint)


def _limit_file_size():
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (60_000, 60_000))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)      # a write past the limit fails with EFBIG


def test_a_full_disk_gives_a_clear_error_and_loses_nothing_written(tmp_path):
    """With a 60 kB file-size limit (a full disk, as a process sees it), the run stops with one line
    naming the trajectory; the thermo CSV keeps whole rows and the trajectory its whole frames."""
    (tmp_path / "in.lj").write_text(LONG_SCRIPT)
    proc = subprocess.Popen([sys.executable, "-m", "pycumd.cli", "run", "in.lj", "--var", "steps", "200",
                             "--device", "cpu", "--log", "thermo.csv", "--trajectory", "traj.xyz",
                             "--trajectory-every", "10", "--no-progress"], cwd=tmp_path, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, preexec_fn=_limit_file_size)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    last = err.strip().split("\n")[-1]
    assert last.startswith("pycumd: error: writing trajectory traj.xyz failed: File too large"), err
    frames = _parse_xyz_frames((tmp_path / "traj.xyz").read_text())
    assert frames and frames == list(range(0, 10 * len(frames), 10))
    lines = (tmp_path / "thermo.csv").read_text().split("\n")
    assert lines[-1] == "" and all(len(line.split(",")) == 6 for line in lines[:-1]) and len(lines) > 2


def test_simulation_from_checkpoint_continues_with_the_same_bits(tmp_path):
    """The Python API: Simulation.from_checkpoint + run(the rest) equals the run that wrote it."""
    from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
    from pycumd.outputs.checkpoint import CheckpointWriter

    def simulation():
        system = lattice_system("fcc", 5, density=0.8442)
        create_velocities(system, 1.44, seed=4711)
        lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
        return Simulation(system, lj, VelocityVerlet(0.005), device="cpu"), lj

    reference, lj = simulation()
    reference.reporters.append(CheckpointWriter(tmp_path / "api.ckpt", every=25))
    reference.run(60)
    reference.close()
    checkpoint = read_checkpoint(tmp_path / "api.ckpt")
    assert checkpoint.step == 50
    resumed = Simulation.from_checkpoint(tmp_path / "api.ckpt", lj, VelocityVerlet(0.005))
    resumed.run(checkpoint.meta["run_end"] - checkpoint.step)
    a, b = reference.system(), resumed.system()
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)


def test_two_ctrl_c_stop_at_once_with_readable_files(tmp_path):
    (tmp_path / "in.lj").write_text(LONG_SCRIPT)
    proc = _pycumd("run", "in.lj", "--var", "steps", "200000", "--device", "cpu", "--log", "thermo.csv",
                   cwd=tmp_path, stdout=subprocess.DEVNULL)
    deadline = time.time() + 60
    while not (tmp_path / "thermo.csv").exists() or len((tmp_path / "thermo.csv").read_text().splitlines()) < 3:
        assert time.time() < deadline and proc.poll() is None
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and err.strip().split("\n")[-1].startswith("pycumd:"), err
    lines = (tmp_path / "thermo.csv").read_text().split("\n")
    assert lines[-1] == "" and all(len(line.split(",")) == 6 for line in lines[:-1])
