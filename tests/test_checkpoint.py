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
             "other": b"ITEM: TIMESTEP\n0\n",
             "version": good.replace(f'"format": {FORMAT_VERSION}'.encode(), b'"format": 9', 1)}
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
    assert "Resume with: pycumd run --restart thermo.stop.ckpt" in err
    stopped_at = read_checkpoint(tmp_path / "thermo.stop.ckpt").step      # named after the run's log
    assert not (tmp_path / "pycumd-stop.ckpt").exists()
    rows = (tmp_path / "thermo.csv").read_text().splitlines()
    assert int(rows[-1].split(",")[0]) <= stopped_at
    # the continuation is asked to stop at once by a wall time of zero: it stops at its first block
    proc = _pycumd("run", "--restart", "thermo.stop.ckpt", "--walltime", "0:0:0", cwd=tmp_path)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 3, err
    assert read_checkpoint(tmp_path / "thermo.stop.ckpt").step > stopped_at


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
            assert len(line.split()) == 9          # species, position, velocity, id, LAMMPS type
        i += n + 2
    return steps


def _check_frames_read_back(directory: Path, reference: Path | None = None) -> None:
    """Every frame of the XYZ, LAMMPS dump and GSD files in ``directory`` reads back. With
    ``reference`` (the same run never killed), each text file of ``directory`` is also the start of
    its file there, byte for byte: a kill leaves whole rows and frames and at most one cut-off last
    row or frame (Linux may stop a write between two pages when SIGKILL comes), which a
    continuation cuts away."""
    import gsd.hoomd

    if reference is not None:
        for name in ("thermo.csv", "traj.xyz", "traj.lammpstrj"):
            if (directory / name).exists():
                assert (reference / name).read_bytes().startswith((directory / name).read_bytes()), name
    if (directory / "traj.xyz").exists():            # LAMMPS dump xyz: N, "Atoms. Timestep: K", N lines
        lines, i = (directory / "traj.xyz").read_text().split("\n"), 0
        while i < len(lines) - 1:
            n = int(lines[i])
            if reference is not None and i + n + 2 > len(lines) - 1:
                break                                # the cut-off last frame (checked above)
            assert lines[i + 1].strip().startswith("Atoms. Timestep:") and i + n + 2 <= len(lines) - 1
            assert all(len(line.split()) == 4 for line in lines[i + 2:i + 2 + n])
            i += n + 2
    if (directory / "traj.lammpstrj").exists():
        lines, i = (directory / "traj.lammpstrj").read_text().split("\n"), 0
        while i < len(lines) - 1:
            assert lines[i] == "ITEM: TIMESTEP"
            if reference is not None and i + 3 >= len(lines) - 1:
                break
            n = int(lines[i + 3])
            if reference is not None and i + 9 + n > len(lines) - 1:
                break
            assert i + 9 + n <= len(lines) - 1, "a cut-off dump frame"
            assert all(len(line.split()) == 5 for line in lines[i + 9:i + 9 + n])
            i += 9 + n
    if (directory / "traj.gsd").exists():
        with gsd.hoomd.open(str(directory / "traj.gsd")) as frames:
            for frame in frames:
                assert frame.particles.position.shape == (frame.particles.N, 3)


@pytest.mark.ci_only
def test_a_run_killed_at_20_random_moments_leaves_whole_files_and_continues_exactly(tmp_path):
    """SIGKILL at 20 random moments of a run that continues each time from its last checkpoint:
    after every kill the CSV and the text trajectories are the start of the files of the run never
    killed (whole rows and frames, and at most one cut-off last one: Linux may stop a write between
    two pages when SIGKILL comes), every GSD frame reads back, and the chain ends with the files of
    the run never killed."""
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
        if (killed / "thermo.csv").exists():         # whole rows, then at most one cut-off row
            lines = (killed / "thermo.csv").read_text().split("\n")
            assert all(len(line.split(",")) == 6 for line in lines[:-1])
        _check_frames_read_back(killed, reference)
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


def test_a_checkpoint_lands_after_the_files_it_covers_are_fsynced(tmp_path, monkeypatch):
    """Before each checkpoint is renamed into place, the thermo log and every trajectory are fsync'ed
    (flushed frames survive a killed process; fsync'ed ones also a power loss or an OS crash)."""
    import pycumd.outputs.checkpoint as checkpoint_module

    events = []
    real_sync, real_write_atomically = checkpoint_module.sync_file, checkpoint_module.write_atomically

    def sync(path):
        events.append(("sync", Path(path).name))
        real_sync(path)

    def land(path, data, keep_previous=True):
        real_write_atomically(path, data, keep_previous)
        events.append(("land", read_checkpoint(path).step))

    monkeypatch.setattr(checkpoint_module, "sync_file", sync)
    monkeypatch.setattr(checkpoint_module, "write_atomically", land)
    monkeypatch.chdir(tmp_path)
    plan = _plan(tmp_path, second_run="")
    # a LAMMPS dump to one file per step (its fence names the pattern, no file: nothing to fsync)
    per_step = plan_from_lammps_script(text=SCRIPT.format(
        fix=FIXES["nve"] + "\ndump 1 all custom 10 frame.*.txt id type x y z", second_run=""), screen=False)
    plan.outputs.lammps_outputs = per_step.outputs.lammps_outputs
    execute(plan)
    assert sorted(p.name for p in tmp_path.glob("frame.*.txt")) == [f"frame.{s}.txt" for s in (0, 10, 20, 30)]
    landings = [i for i, event in enumerate(events) if event[0] == "land"]
    assert [events[i][1] for i in landings] == [0, 10, 20, 30]
    for start, end in zip([-1] + landings, landings):
        synced = {name for kind, name in events[start + 1:end] if kind == "sync"}
        assert synced == {"thermo.csv", "traj.xyz", "traj.lammpstrj", "traj.gsd", "frame.*.txt"}, (events[end], synced)


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
            # the data file holds Pair Coeffs: a pair style comes first, as LAMMPS needs
            text = f"units lj\natom_style atomic\npair_style lj/cut 2.5\n{reader}\npair_coeff 1 1 1.0 1.0 2.5\n" \
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
    assert read_checkpoint(tmp_path / "api.ckpt").step == 60            # the run's last step
    checkpoint = read_checkpoint(tmp_path / "api.ckpt.1")
    assert checkpoint.step == 50
    resumed = Simulation.from_checkpoint(tmp_path / "api.ckpt.1", lj, VelocityVerlet(0.005))
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


# -- checkpoints that change nothing ------------------------------------------------------------------
NEIGHBOR_POLICIES = {"check": "", "every-20-no-check": "neigh_modify every 20 check no"}


def _invisible_plan(directory: Path, fix: str, neighbor: str, checkpoint_every: int | None, engine=None) -> RunPlan:
    """The test system (30 + 20 steps) with the neighbour policy ``neighbor``, its thermo log and XYZ
    trajectory in ``directory``; checkpoints to ``run.ckpt`` every ``checkpoint_every`` steps (None:
    none)."""
    script = SCRIPT.format(fix=FIXES[fix], second_run="run 20").replace(
        "neighbor 0.3 bin", f"neighbor 0.3 bin\n{NEIGHBOR_POLICIES[neighbor]}")
    plan = plan_from_lammps_script(text=script, screen=False)
    plan.engine = engine or EngineOptions(device="cpu")
    plan.outputs.thermo_log = str(directory / "thermo.csv")
    plan.outputs.trajectories = [TrajectoryOutput(str(directory / "traj.xyz"), 5)]
    if checkpoint_every is not None:
        plan.outputs.checkpoint = str(directory / "run.ckpt")
        plan.outputs.checkpoint_every = checkpoint_every
    return plan


def _state_bytes(result) -> list:
    """The final positions, velocities and images, and the neighbour list's build count."""
    return [*(a.tobytes() for a in _final(result)), result.sim.neighbors.n_builds]


def _check_invisible_checkpoints(tmp_path: Path, fix: str, neighbor: str, engine=None) -> None:
    """A run with checkpoints every 7 steps (off the neighbour schedule) gives the bits, files and
    neighbour builds of the run without; stopped at step 13 (a stop checkpoint between two periodic
    ones) and at step 37 (in the second run) and continued, it gives them too."""
    reference = tmp_path / "none"
    reference.mkdir()
    expected = _state_bytes(execute(_invisible_plan(reference, fix, neighbor, None, engine)))
    expected_files = {name: (reference / name).read_bytes() for name in ("thermo.csv", "traj.xyz")}
    with_checkpoints = tmp_path / "every_7"
    with_checkpoints.mkdir()
    assert _state_bytes(execute(_invisible_plan(with_checkpoints, fix, neighbor, 7, engine))) == expected
    assert {name: (with_checkpoints / name).read_bytes() for name in expected_files} == expected_files
    assert read_checkpoint(with_checkpoints / "run.ckpt").step == 50     # the last step of the last run
    for stop in (13, 37):
        work = tmp_path / f"stopped_at_{stop}"
        work.mkdir()
        with pytest.raises(RunStopped):
            execute(_invisible_plan(work, fix, neighbor, 7, engine),
                    on_simulation=lambda sim: sim.reporters.append(_StopAt(stop)))
        checkpoint = read_checkpoint(work / "run.ckpt")
        assert checkpoint.step == stop
        resumed = execute(_invisible_plan(work, fix, neighbor, 7, engine), resume=checkpoint)
        assert _state_bytes(resumed) == expected, stop
        assert {name: (work / name).read_bytes() for name in expected_files} == expected_files, stop


@pytest.mark.parametrize("neighbor", sorted(NEIGHBOR_POLICIES))
@pytest.mark.parametrize("fix", sorted(FIXES))
def test_checkpoints_change_nothing_and_stopped_runs_continue_as_the_run_without(tmp_path, fix, neighbor):
    """CPU, double precision: with ``neigh_modify every 20 check no`` a checkpoint that rebuilt the
    list would add builds off the schedule (and change Press in the 4th digit after 300 steps of in.lj)."""
    _check_invisible_checkpoints(tmp_path, fix, neighbor)


def test_a_restored_list_is_the_list_of_the_last_build(tmp_path):
    """The neighbour list restored from a checkpoint between two builds is the list of the last
    build, row for row, with the schedule's counters (mid-way through ``neigh_modify every 20``)."""
    plan = _invisible_plan(tmp_path, "nve", "every-20-no-check", None)
    plan.stages = plan.stages[:1]
    sims = []
    execute(plan, on_simulation=sims.append)
    sim = sims[0]
    nl = sim.neighbors
    assert sim.step == 30 and nl.steps_since_build == 10 and nl.n_builds == 2
    arrays = {name: sim.backend.to_host(a).copy() for name, a in sim.checkpoint_arrays().items()}
    meta = sim.checkpoint_scalars()
    restored = type(sim)(sim.system(), sim.potential, device="cpu")
    restored.restore_checkpoint(meta, arrays)
    other = restored.neighbors
    assert (other.n_builds, other.steps_since_build) == (nl.n_builds, nl.steps_since_build)
    assert np.array_equal(other.box_at_build, nl.box_at_build) and other.capacity == nl.capacity
    for i in range(sim.state.n_atoms):
        assert np.array_equal(other.neighbors_of(i), nl.neighbors_of(i)), i
    for name in ("positions", "positions_at_build", "forces", "ids"):
        assert np.array_equal(getattr(restored.state, name), getattr(sim.state, name)), name


def test_a_run_shorter_than_the_checkpoint_interval_ends_with_a_checkpoint(tmp_path):
    """Checkpoints every 1000 steps in runs of 30 and 20 steps: one at the end of each run."""
    execute(_invisible_plan(tmp_path, "nve", "check", 1000))
    assert read_checkpoint(tmp_path / "run.ckpt").step == 50
    assert read_checkpoint(tmp_path / "run.ckpt.1").step == 30


def test_checkpoint_every_zero_is_refused_with_the_option_named(tmp_path, capsys):
    from pycumd.cli import main

    (tmp_path / "in.lj").write_text(LONG_SCRIPT)
    assert main(["run", str(tmp_path / "in.lj"), "--var", "steps", "10", "--device", "cpu",
                 "--checkpoint", str(tmp_path / "run.ckpt"), "--checkpoint-every", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("pycumd: error: --checkpoint-every 0: give a whole number of steps >= 1"), err
    assert not (tmp_path / "run.ckpt").exists()


def test_a_stop_before_the_first_step_quits_without_a_checkpoint(tmp_path, monkeypatch):
    """A stop asked for during set-up (as a Ctrl-C then does) stops before the first step and writes
    no checkpoint, in the working folder or elsewhere."""
    monkeypatch.chdir(tmp_path)
    plan = _invisible_plan(tmp_path, "nve", "check", None)

    def ask_to_stop(sim):
        sim.stop_request = "SIGINT"

    with pytest.raises(RunStopped, match="stopped at step 0 .*no step was run, so no checkpoint was written") as stop:
        execute(plan, on_simulation=ask_to_stop)
    assert stop.value.checkpoint is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ["thermo.csv", "traj.xyz"]


def test_stop_checkpoints_are_named_after_the_run_s_own_files():
    from pycumd.outputs.settings import OutputSettings
    from pycumd.run_plan import stop_checkpoint_path

    assert stop_checkpoint_path(OutputSettings(checkpoint="out/run.ckpt", thermo_log="t.csv")) == "out/run.ckpt"
    assert stop_checkpoint_path(OutputSettings(thermo_log="out/thermo.csv")) == "out/thermo.stop.ckpt"
    assert stop_checkpoint_path(OutputSettings(trajectories=[TrajectoryOutput("t/traj.gsd", 10)])) == "t/traj.stop.ckpt"
    assert stop_checkpoint_path(OutputSettings()) is None


SIGTERM_AT_STEP_135 = """
import os, signal, sys
from pycumd.cli import main
from pycumd.simulation import Simulation

report = Simulation._report

def report_then_sigterm(self, due):
    report(self, due)
    if self.state.step == 135:                 # a thermo step: SIGTERM from outside at that moment
        os.kill(os.getpid(), signal.SIGTERM)

Simulation._report = report_then_sigterm
sys.exit(main(sys.argv[1:]))
"""


def test_the_command_line_stops_and_continues_as_the_run_without_checkpoints(tmp_path):
    """``pycumd run`` with ``--checkpoint-every 130``: SIGTERM at step 135 (sent by the process to
    itself, so that the test does not race the run), continued with ``--restart`` under a
    ``--walltime`` that stops it after its first step, then continued to its end: the thermo log and
    trajectory are those of the same run without checkpoints, byte for byte
    (``neigh_modify every 20 check no``: a checkpoint that rebuilt the list would change them)."""
    script = LONG_SCRIPT.replace("neighbor 0.3 bin", "neighbor 0.3 bin\nneigh_modify every 20 check no")
    args = ["run", "in.lj", "--var", "steps", "600", "--device", "cpu", "--log", "thermo.csv", "--trajectory",
            "traj.xyz", "--trajectory-every", "50", "--no-progress"]
    reference, work = tmp_path / "reference", tmp_path / "work"
    for d in (reference, work):
        d.mkdir()
        (d / "in.lj").write_text(script)
    proc = _pycumd(*args, cwd=reference, stdout=subprocess.DEVNULL)
    assert proc.wait(timeout=600) == 0, proc.stderr.read()
    proc = subprocess.run([sys.executable, "-c", SIGTERM_AT_STEP_135, *args, "--checkpoint", "run.ckpt",
                           "--checkpoint-every", "130"], cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, timeout=600)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "stopped at step 135 (SIGTERM)" in proc.stderr
    assert "Resume with: pycumd run --restart run.ckpt" in proc.stderr
    assert read_checkpoint(work / "run.ckpt").step == 135 and read_checkpoint(work / "run.ckpt.1").step == 130
    proc = _pycumd("run", "--restart", "run.ckpt", "--walltime", "0:0:0", cwd=work, stdout=subprocess.DEVNULL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 3, err
    assert read_checkpoint(work / "run.ckpt").step == 136
    proc = _pycumd("run", "--restart", "run.ckpt", cwd=work, stdout=subprocess.DEVNULL)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert read_checkpoint(work / "run.ckpt").step == 600
    for name in ("thermo.csv", "traj.xyz"):
        assert (work / name).read_bytes() == (reference / name).read_bytes(), name


def test_the_python_api_checkpoints_change_nothing_and_continue_exactly(tmp_path):
    """Simulation + CheckpointWriter (every 25 steps, ``neighbor_every=20, neighbor_check=False``) gives
    the bits of the simulation without; Simulation.from_checkpoint continues to them too."""
    from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
    from pycumd.outputs.checkpoint import CheckpointWriter

    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    options = dict(neighbor_every=20, neighbor_check=False, device="cpu")

    def simulation():
        system = lattice_system("fcc", 5, density=0.8442)
        create_velocities(system, 1.44, seed=4711)
        return Simulation(system, lj, VelocityVerlet(0.005), **options)

    plain = simulation()
    plain.run(90)
    writing = simulation()
    writing.reporters.append(CheckpointWriter(tmp_path / "api.ckpt", every=25))
    writing.run(90)
    writing.close()
    assert writing.neighbors.n_builds == plain.neighbors.n_builds == 5
    checkpoint = read_checkpoint(tmp_path / "api.ckpt.1")
    assert checkpoint.step == 75
    resumed = Simulation.from_checkpoint(checkpoint, lj, VelocityVerlet(0.005), **options)
    resumed.run(checkpoint.meta["run_end"] - checkpoint.step)
    for sim in (writing, resumed):
        a, b = plain.system(), sim.system()
        assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
        assert np.array_equal(a.images, b.images)


def test_all_pairs_runs_checkpoint_their_wrap_schedule(tmp_path):
    """A box too small for a neighbour list (all pairs, wrapped every 100 steps by default): a
    checkpoint at step 130 continues the wrap schedule, so the continued run wraps at step 200 as
    the run without checkpoints does (same positions, images and velocities)."""
    from pycumd import LennardJones, Simulation, VelocityVerlet, create_velocities, lattice_system
    from pycumd.outputs.checkpoint import CheckpointWriter

    lj = LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)

    def simulation():
        system = lattice_system("fcc", 3, density=0.8442)
        create_velocities(system, 1.44, seed=4711)
        return Simulation(system, lj, VelocityVerlet(0.005), device="cpu")

    plain = simulation()
    assert plain.pair_method == "all_pairs"
    plain.run(250)
    writing = simulation()
    writing.reporters.append(CheckpointWriter(tmp_path / "small.ckpt", every=130))
    writing.run(250)
    writing.close()
    checkpoint = read_checkpoint(tmp_path / "small.ckpt.1")
    assert checkpoint.step == 130 and checkpoint.meta["neighbors"]["steps_since_build"] == 30
    resumed = Simulation.from_checkpoint(checkpoint, lj, VelocityVerlet(0.005))
    resumed.run(120)
    for sim in (writing, resumed):
        a, b = plain.system(), sim.system()
        assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
        assert np.array_equal(a.images, b.images)


GPU_CASES = ([(fix, neighbor, True) for fix in sorted(FIXES) for neighbor in sorted(NEIGHBOR_POLICIES)]
             # CUDA graphs run NVE and Langevin (capturable hooks) under the displacement check only: the other
             # modes there
             + [(fix, "check", graphs) for fix in ("nve", "langevin") for graphs in (False, "blocks")])


@pytest.mark.cuda
@pytest.mark.skipif(not cuda_available(), reason="no CUDA GPU / CuPy on this machine")
@pytest.mark.parametrize("precision", ["single", "mixed", "double", "composite"])
@pytest.mark.parametrize("fix, neighbor, graphs", GPU_CASES)
def test_gpu_checkpoints_change_nothing_and_stopped_runs_continue_as_the_run_without(tmp_path, precision, graphs,
                                                                                      neighbor, fix):
    """On the GPU, in every precision, every graph mode (the device loop where the driver has
    conditional nodes, captured blocks, step by step), both neighbour policies and every thermostat:
    as on the CPU (reorders deferred to every second build included: the restored build makes the
    decision of the one it repeats; in mixed precision the list itself is restored)."""
    if precision == "composite" and fix == "langevin":
        pytest.skip("composite precision has no Langevin thermostat (raises NotImplementedError)")
    _check_invisible_checkpoints(tmp_path, fix, neighbor,
                                 EngineOptions(device="cuda", precision=precision, use_graphs=graphs))
