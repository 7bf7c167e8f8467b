"""Runs that repeat bit for bit, and double-precision NVE identical on the CPU and the GPU."""


import numpy as np
import pytest

from pycumd.simulation import Simulation

from conftest import HAVE_CUDA
from helpers import lj, melt_system, state_hash


@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
def test_repeated_runs_are_bit_identical(backend, precision):
    """Two runs through many rebuilds and reorderings: identical hashes of positions and velocities."""
    if backend.name == "cpu" and precision != "double":
        pytest.skip("the CPU runs double only")
    steps = 10_000 if backend.is_gpu else 1_000
    hashes = []
    for _ in range(2):
        sim = Simulation(melt_system(6), lj(), device=backend.name, precision=precision, deterministic=True)
        sim.run(steps)
        assert sim.neighbors.n_builds > 10
        hashes.append(state_hash(sim))
    assert hashes[0] == hashes[1]


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("lanes", [1, 2, 4, 8])
def test_cpu_and_gpu_double_nve_are_bit_identical(lanes):
    """With deterministic=True (no FMA contraction on the GPU) the same double-precision NVE run
    gives the same bits on both backends: same cell order, neighbour order, summation order (for
    every number of lanes per atom of the force kernel) and correctly rounded operations."""
    out = {}
    for device in ("cpu", "cuda"):
        sim = Simulation(melt_system(6), lj("shift_force"), device=device, precision="double", deterministic=True)
        sim.forces.lanes = lanes
        sim.run(500)
        out[device] = sim.system()
    assert np.array_equal(out["cpu"].positions, out["cuda"].positions)
    assert np.array_equal(out["cpu"].velocities, out["cuda"].velocities)
