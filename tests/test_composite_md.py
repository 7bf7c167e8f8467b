"""The composite (float-float) precision mode of the MD engine (GPU only).

What could fail: a low part lost on the way (wrap, reorder, integration, output), the image
shift of the separation, the compensated sums, the Nose-Hoover scaling, the unsupported cases.
"""

import numpy as np
import pytest

from pycumd.box import Box
from pycumd.integrators import Langevin, NoseHoover, VelocityVerlet
from pycumd.outputs.trajectory import trajectory_writer
from pycumd.potentials.yukawa import Yukawa
from pycumd.simulation import Simulation
from pycumd.system import System

from conftest import HAVE_CUDA
from helpers import lj, melt_system

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")]


def _drifting_lattice(velocity, cells=4, spacing=3.0):
    """A simple cubic lattice wider than the LJ list range (2.8), moving as one body: no pair
    ever interacts, so the exact trajectory is x0 + v t."""
    grid = np.stack(np.meshgrid(*[np.arange(cells)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    positions = (grid + 0.5) * spacing + 0.1234567
    system = System(Box([cells * spacing] * 3), positions, [1.0], "lj")
    system.velocities = np.tile(np.asarray(velocity, float), (len(positions), 1))
    return system


@pytest.mark.parametrize("precision", ["composite", "mixed", "single"])
def test_free_flight_keeps_composite_digits(precision):
    """10,000 steps of uniform motion through the periodic boundaries and many rebuilds and
    reorderings: composite (and mixed, float64 positions) follow x0 + v t to 1e-9, single
    does not (its positions round at every step)."""
    v = np.array([0.3712345678, -0.2187654321, 0.1313131313])
    system = _drifting_lattice(v)
    x0 = system.positions.copy()
    sim = Simulation(system, lj(), VelocityVerlet(0.005), device="cuda", precision=precision)
    steps = 10_000
    sim.run(steps)
    assert sim.neighbors.n_builds > 10
    out = sim.system()
    unwrapped = out.positions + out.images * out.box.L
    error = np.abs(unwrapped - (x0 + v * steps * 0.005)).max()
    assert np.abs(out.velocities - v).max() < (1e-12 if precision != "single" else 1e-6)
    if precision == "single":
        assert error > 1e-6
    else:
        assert error < 1e-9


def _forces_by_id(sim):
    """Forces (hi + lo in composite) on the host, float64, in particle id order."""
    return sim.state.host_values("forces", sim.backend)[np.argsort(sim.backend.to_host(sim.state.ids))]


def test_separation_across_the_boundary_is_exact():
    """Two atoms on either side of the periodic boundary of a box whose length is not a float32:
    the composite force equals the float64 force to float32 rounding of the separation only."""
    L = 10.0 + 1.0 / 3.0
    positions = np.array([[0.2, 5.0, 5.0], [L - 0.95, 5.0, 5.0], [5.0, 0.1, 9.9], [5.0, L - 1.0, 0.3]])
    system = System(Box([L] * 3), positions, [1.0], "lj")
    pot = lj("shift_force")
    ref = Simulation(system.copy(), pot, device="cpu", precision="double")
    ref.setup()
    sim = Simulation(system.copy(), pot, device="cuda", precision="composite")
    sim.state.forces[...] = np.nan
    sim.state.lo["forces"][...] = np.nan
    sim.setup()
    f_ref, f = _forces_by_id(ref), _forces_by_id(sim)
    assert np.abs(f - f_ref).max() < 1e-5 * np.abs(f_ref).max()
    assert sim.potential_energy() == pytest.approx(ref.potential_energy(), rel=1e-6)


def test_nose_hoover_composite_follows_double():
    """Nose-Hoover (velocity scaling in float-float) over 300 steps: thermo as the double run."""
    rows = {}
    for precision in ("double", "composite"):
        sim = Simulation(melt_system(6), lj("shift_force"), VelocityVerlet(0.005, NoseHoover(1.0, 0.25)),
                         device="cuda", precision=precision)
        sim.run(300)
        rows[precision] = sim.thermo_row()
    for key in ("Temp", "E_pair", "Press"):
        assert rows["composite"][key] == pytest.approx(rows["double"][key], rel=1e-4)


def test_trajectory_frames_carry_the_low_parts(tmp_path):
    """A frame written in composite precision has the float-float value, not the float32 part."""
    sim = Simulation(melt_system(6), lj(), device="cuda", precision="composite")
    path = tmp_path / "traj.xyz"
    writer = trajectory_writer(path, every=20)
    sim.reporters.append(writer)
    sim.run(20)
    sim.close()
    last = path.read_text().strip().splitlines()[-sim.state.n_atoms:]
    written = np.array([[float(x) for x in line.split()[1:4]] for line in last])
    expected = sim.system()
    assert np.allclose(written, expected.positions, rtol=0, atol=6e-9)    # %.10g of numbers < 100
    by_id = np.argsort(sim.backend.to_host(sim.state.ids))
    hi_only = sim.backend.to_host(sim.state.positions[:, :3]).astype(np.float64)[by_id]
    d = hi_only - expected.positions
    d -= expected.box.L * np.rint(d / expected.box.L)
    assert np.abs(d).max() > 5e-8                  # the float32 parts alone would fail the check above


def test_unsupported_combinations_say_so():
    with pytest.raises(NotImplementedError, match="Langevin"):
        Simulation(melt_system(6), lj(), VelocityVerlet(0.005, Langevin(1.0, 0.5, seed=1)),
                   device="cuda", precision="composite")
    system = System(Box([40.0] * 3), np.random.default_rng(3).random((50, 3)) * 40.0, [1.0], "lj")
    with pytest.raises(NotImplementedError, match="all-pairs"):
        Simulation(system, Yukawa(screening_length=5.0).charges([1.0]), device="cuda",
                   precision="composite", pair_method="all_pairs")



def test_atom_a_hair_below_the_box_edge_keeps_its_neighbours():
    """x = L - 5e-8 with L = 10 + 1e-7: the float32 high part rounds up to L (which the cell
    binning reads as 0); the wrap must keep hi below L, or the stencil skips the neighbour at
    x = 9.2 and the pair is lost (found by the 1,000,000-step drift study)."""
    L = 10.0 + 1e-7
    positions = np.array([[L - 5e-8, 5.0, 5.0], [9.2, 5.0, 5.0], [3.0, 2.0, 7.0]])
    system = System(Box([L] * 3), positions, [1.0], "lj")
    ref = Simulation(system.copy(), lj(), device="cpu", precision="double")
    ref.setup()
    sim = Simulation(system.copy(), lj(), device="cuda", precision="composite")
    sim.setup()
    assert np.all(sim.backend.to_host(sim.state.positions[:, :3]) < np.float32(L))
    f_ref, f = _forces_by_id(ref), _forces_by_id(sim)
    assert np.abs(f_ref[0]).max() > 0.1                         # the pair interacts
    assert np.abs(f - f_ref).max() < 1e-5 * np.abs(f_ref).max()
    assert np.allclose(sim.system().positions, ref.system().positions, rtol=0, atol=1e-12)
