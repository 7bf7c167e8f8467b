"""Trajectory writers: what is read back equals the simulation's state, in every format."""

import numpy as np
import pytest

from pycumd.outputs.trajectory import trajectory_writer
from pycumd.simulation import Simulation

from helpers import lj, melt_system


def _run_with(path, backend, every=20, steps=40):
    sim = Simulation(melt_system(4), lj(), device=backend.name, precision="double")
    writer = trajectory_writer(path, every)
    sim.reporters.append(writer)
    sim.run(steps)
    sim.close()
    return sim.system()


def test_gsd_frames_read_back(tmp_path, backend):
    gsd_hoomd = pytest.importorskip("gsd.hoomd")
    final = _run_with(tmp_path / "t.gsd", backend)
    with gsd_hoomd.open(str(tmp_path / "t.gsd"), "r") as traj:
        assert [f.configuration.step for f in traj] == [0, 20, 40]
        last = traj[-1]
        L = final.box.L
        assert np.allclose(last.configuration.box[:3], L)
        assert np.allclose(last.particles.position + L / 2, final.positions, atol=1e-5)
        assert np.array_equal(last.particles.image, final.images)
        assert np.allclose(last.particles.velocity, final.velocities, atol=1e-6)


def test_lammps_dump_frames_read_back(tmp_path, backend):
    """On the GPU this goes through the asynchronous snapshot and pinned-memory copy."""
    final = _run_with(tmp_path / "t.lammpstrj", backend)
    text = (tmp_path / "t.lammpstrj").read_text().split("ITEM: TIMESTEP\n")[1:]
    assert [int(block.split("\n")[0]) for block in text] == [0, 20, 40]
    rows = np.loadtxt(text[-1].split("ITEM: ATOMS id type x y z ix iy iz vx vy vz\n")[1].splitlines())
    assert np.array_equal(rows[:, 0], final.ids)
    assert np.allclose(rows[:, 2:5], final.positions, atol=1e-8)
    assert np.allclose(rows[:, 2:5] + rows[:, 5:8] * final.box.L, final.unwrapped_positions(), atol=1e-8)


def test_extxyz_and_unknown_format(tmp_path, backend):
    final = _run_with(tmp_path / "t.xyz", backend)
    lines = (tmp_path / "t.xyz").read_text().splitlines()
    n = final.n_atoms
    assert lines[0] == str(n) and "step=40" in lines[2 * (n + 2) + 1]
    last = np.array([line.split()[1:4] for line in lines[-n:]], float)
    assert np.allclose(last, final.positions, atol=1e-8)
    with pytest.raises(ValueError, match="unknown trajectory format"):
        trajectory_writer(tmp_path / "t.pdb", 10)


def test_writer_errors_surface(tmp_path):
    writer = trajectory_writer(tmp_path / "t.xyz", 10)
    writer._file.close()                          # the background write will fail
    sim = Simulation(melt_system(4), lj(), device="cpu")
    sim.reporters.append(writer)
    with pytest.raises(RuntimeError, match="writing .*t.xyz failed"):
        sim.run(30)
        writer.close()
