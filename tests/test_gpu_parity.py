"""CPU against GPU on the same input: double to 1e-10 relative, mixed and single within their precision."""

import numpy as np
import pytest

from pycumd import ThermoReporter
from pycumd.integrators import Langevin, VelocityVerlet
from pycumd.outputs.reporter import Reporter
from pycumd.simulation import Simulation

from conftest import HAVE_CUDA
from helpers import lj, melt_system, random_liquid

pytestmark = [pytest.mark.cuda, pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")]

TOLERANCE = {"double": 1e-10, "mixed": 2e-5, "single": 2e-4, "composite": 2e-5}


def _forces_energy(system, potential, device, precision):
    sim = Simulation(system.copy(), potential, device=device, precision=precision)
    sim.state.forces[...] = np.nan          # poison: every entry must be written
    if sim.state.lo is not None:
        sim.state.lo["forces"][...] = np.nan
    sim.setup()
    f = sim.state.host_values("forces", sim.backend)
    return f, sim.potential_energy(), sim.virial_trace()


@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
@pytest.mark.parametrize("cutoff", ["truncate", "shift", "shift_force"])
def test_forces_match_cpu(precision, cutoff, rng):
    system = random_liquid(rng, n=3000, n_types=2)
    pot = lj(cutoff).pair_coeff(1, 1, epsilon=0.8, sigma=1.1)
    f_cpu, e_cpu, w_cpu = _forces_energy(system, pot, "cpu", "double")
    f_gpu, e_gpu, w_gpu = _forces_energy(system, pot, "cuda", precision)
    tol = TOLERANCE[precision]
    assert np.isfinite(f_gpu).all()
    assert np.linalg.norm(f_gpu - f_cpu) / np.linalg.norm(f_cpu) < tol
    assert abs(e_gpu - e_cpu) / abs(e_cpu) < tol
    assert abs(w_gpu - w_cpu) / abs(w_cpu) < tol


@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
def test_trajectory_matches_cpu(precision):
    """200 NVE steps of the melt (rebuilds by displacement check) stay together."""
    rows = {}
    for device, prec in (("cpu", "double"), ("cuda", precision)):
        sim = Simulation(melt_system(8), lj(), device=device, precision=prec)
        sim.run(200)
        rows[device] = sim.thermo_row()
        rows[device + "_builds"] = sim.neighbors.n_builds
    tol = {"double": 1e-9, "mixed": 1e-4, "single": 1e-3, "composite": 1e-4}[precision]
    for key in ("Temp", "E_pair", "TotEng", "Press"):
        assert rows["cuda"][key] == pytest.approx(rows["cpu"][key], rel=tol, abs=tol)
    if precision == "double":
        assert rows["cuda_builds"] == rows["cpu_builds"]


def test_langevin_noise_identical_on_both_backends():
    """The counter-based noise makes CPU and GPU Langevin runs agree in double precision."""
    out = {}
    for device in ("cpu", "cuda"):
        sim = Simulation(melt_system(5), lj("shift_force"),
                         VelocityVerlet(0.005, Langevin(1.0, 0.5, seed=12345)), device=device,
                         precision="double")
        sim.run(50)
        out[device] = sim.system().velocities
    assert np.allclose(out["cuda"], out["cpu"], rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("mode", ["blocks", "loop"])
@pytest.mark.parametrize("precision", ["double", "mixed", "single", "composite"])
def test_graphs_give_the_same_bits_as_step_by_step(precision, mode):
    """Captured blocks (rebuild decision on the device; the final and next initial half steps fused
    into one kernel), the device loop (one launch per stretch between reports, rebuilds inside it)
    and the host-driven loop: identical states."""
    out = {}
    for graphs in (False, mode):
        sim = Simulation(melt_system(8), lj(), device="cuda", precision=precision, use_graphs=graphs)
        sim.reporters.append(ThermoReporter(every=100, screen=False))
        sim.run(300)
        out[graphs] = (sim.system(), sim.neighbors.n_builds, sim._step_graph)
    a, b = out[False][0], out[mode][0]
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
    assert np.array_equal(a.images, b.images)
    assert out[False][1] == out[mode][1] > 5                # same rebuilds, several of them
    graph = out[mode][2]
    assert graph is not None and graph.mode == mode
    if mode == "blocks":
        assert graph.frozen_blocks > 0 and graph.blocks > graph.frozen_blocks
    else:
        # one launch per 100 steps between reports, but for a stretch where the list's storage
        # shrinks (after 20 builds): that one runs in blocks
        assert graph.launches + graph.loop_fallbacks == 3 and graph.launches >= 2
    fused = graph.sim.integrator.final_then_initial_integrate
    assert fused is not None


@pytest.mark.parametrize("precision", ["single", "mixed"])
def test_fused_half_steps_take_masses_by_type_with_the_same_bits(precision):
    """Two types of masses 1.7 and 0.6 (types alternating over the atoms): the fused half steps of
    the device loop read each atom's mass from the state's per-type table by the type in its
    position row, the step-by-step kernels from per_atom_mass; the runs agree bit for bit."""
    from pycumd.potentials import LennardJones
    out = {}
    for graphs in (False, "loop"):
        system = melt_system(8)
        system.types = (np.arange(system.n_atoms) % 2).astype(np.int32)
        system.masses = np.array([1.7, 0.6])
        pot = (LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0).pair_coeff(0, 1, epsilon=1.0, sigma=1.0)
               .pair_coeff(1, 1, epsilon=1.0, sigma=1.0))
        sim = Simulation(system, pot, device="cuda", precision=precision, use_graphs=graphs)
        assert np.array_equal(sim.state.mass_of_type.get(), system.masses.astype(sim.state.per_atom_mass.dtype))
        sim.run(200)
        out[graphs] = sim.system()
        if graphs:
            assert sim._step_graph is not None and sim._step_graph.launches > 0
    a, b = out[False], out["loop"]
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)


def test_device_loop_graph_serves_every_run_length_with_the_same_remainder():
    """The run length is read on the device: runs of 99 and 299 steps (98 and 298 fused steps, both
    2 more than a multiple of the 4-step pass) launch one executable; the states equal the
    step-by-step run's."""
    runs = {}
    for graphs in (False, "loop"):
        sim = Simulation(melt_system(6), lj(), device="cuda", precision="double", use_graphs=graphs)
        sim.run(100)       # 99 steps in the launch, the last on the host (the run's final report)
        sim.neighbors.recent_max_counts.clear()    # no storage shrink due at the next launch
        sim.run(300)
        runs[graphs] = sim
    graph = runs["loop"]._step_graph
    assert graph.launches == 2 and len(graph._loops) == 1
    a, b = runs[False].system(), runs["loop"].system()
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)


def test_device_loop_counts_builds_and_their_largest_count():
    """The host learns the builds made inside a device-loop launch: their number (the step-by-step
    run's) and the largest count of each, which feeds the capacity's shrink policy."""
    runs = {}
    for graphs in (False, "loop"):
        sim = Simulation(melt_system(8), lj(), device="cuda", precision="double", use_graphs=graphs)
        sim.run(100)                      # one launch after the first build (made by the host)
        runs[graphs] = sim.neighbors
    by_host, in_loop = runs[False], runs["loop"]
    assert in_loop.n_builds == by_host.n_builds > 3
    assert len(by_host.recent_max_counts) == by_host.n_builds       # the window holds them all
    assert in_loop.recent_max_counts == by_host.recent_max_counts    # build by build


def test_graph_recaptured_when_neighbor_storage_grows():
    sim = Simulation(melt_system(6), lj(), device="cuda", precision="double")
    sim.run(10)
    sim.neighbors.capacity = int(sim.neighbors.nbr_count.max()) - 1   # too small: the next build grows it
    sim.neighbors.nbr = sim.backend.xp.empty(sim.state.n_atoms * sim.neighbors.capacity, np.int32)
    ref = Simulation(melt_system(6), lj(), device="cuda", precision="double", use_graphs=False)
    ref.run(10)
    sim.run(200)
    ref.run(200)
    assert sim.neighbors.capacity > int(ref.neighbors.nbr_count.max()) - 1
    assert np.allclose(sim.system().positions, ref.system().positions, rtol=0, atol=1e-9)


def test_graph_recaptured_when_the_count_array_moves():
    """Cached step blocks must not read a list-count array that was replaced (a storage reallocated
    at its old nbr address, its counts elsewhere): here the counts move, the old array is zeroed."""
    sim = Simulation(melt_system(6), lj(), device="cuda", precision="double")
    ref = Simulation(melt_system(6), lj(), device="cuda", precision="double", use_graphs=False)
    sim.run(50)
    ref.run(50)
    nl = sim.neighbors
    stale = nl.nbr_count
    nl.nbr_count = stale.copy()         # the same counts at another address
    stale.fill(0)                       # what a block still reading the old address would see
    sim.run(100)
    ref.run(100)
    assert sim._step_graph is not None and sim._step_graph.blocks + sim._step_graph.launches > 0
    assert np.array_equal(sim.system().positions, ref.system().positions)


class _ShrinkListStorage(Reporter):
    """A reporter that, at its steps, lowers the list capacity to one slot fewer than the largest
    count: the next build (inside the step graph) drops the storage, makes a smaller one and
    overflows."""

    def __init__(self, every):
        self.every = every

    def report(self, snapshot):
        nl = snapshot.simulation.neighbors
        nl.capacity = int(nl.nbr_count.max()) - 1
        nl.recent_max_counts.clear()


class _TightenListStorage(Reporter):
    """A reporter that, at its steps, cuts the list storage to the present largest count (the list
    stays complete: the first rows of the column-major storage are kept), so that a later build,
    inside a graph, is likely to overflow."""

    def __init__(self, every):
        self.every = every

    def report(self, snapshot):
        nl, n = snapshot.simulation.neighbors, snapshot.simulation.state.n_atoms
        nl.capacity = int(nl.nbr_count.max())
        nl.nbr = nl.nbr[:nl.capacity * n].copy()
        nl.recent_max_counts.clear()


@pytest.mark.parametrize("mode,reporter", [("blocks", _ShrinkListStorage), ("blocks", _TightenListStorage),
                                           ("loop", _TightenListStorage), ("loop", _ShrinkListStorage)])
def test_overflow_inside_a_graph_is_repaired_with_the_same_bits(mode, reporter):
    """A build replayed in a graph (the blocks' rebuild step, or inside the device loop) that
    overflows the storage freezes the step; the host repeats it with a larger storage: positions
    and velocities equal, bit for bit, those of the step-by-step loop without overflows.  (A
    storage to be reallocated before the next build, _ShrinkListStorage, sends the device loop's
    call to blocks, whose rebuild step reallocates.)"""
    out = {}
    for graphs in (False, mode):
        sim = Simulation(melt_system(6), lj(), device="cuda", precision="double", use_graphs=graphs)
        if graphs:
            sim.reporters.append(reporter(every=60))
        sim.run(300)
        out[graphs] = (sim.system(), sim.neighbors.n_builds, sim._step_graph)
    a, b = out[False][0], out[mode][0]
    assert np.array_equal(a.positions, b.positions) and np.array_equal(a.velocities, b.velocities)
    assert out[False][1] == out[mode][1]
    graph = out[mode][2]
    assert graph.overflows >= 2
    if mode == "loop" and reporter is _TightenListStorage:
        assert graph.launches >= 4 and graph.blocks == 0


def test_list_storage_is_freed_when_the_capacity_changes_in_the_step_graph():
    """After capacity changes inside graph runs, the memory in use is what the state and the list
    account for: no captured graph or old build plan keeps an old list storage alive (at 10^8
    atoms a second storage would not fit)."""
    import gc

    from pycumd.bench.lj import memory_accounting
    pool = __import__("cupy").get_default_memory_pool()
    gc.collect()
    used_before = pool.used_bytes()
    sim = Simulation(melt_system(10), lj(), device="cuda", precision="single")
    sim.reporters.append(_ShrinkListStorage(every=50))
    sim.run(260)
    assert sim._step_graph.overflows >= 2
    gc.collect()
    accounted = memory_accounting(sim)["accounted_bytes_per_atom"] * sim.state.n_atoms
    storage = sim.neighbors.nbr.nbytes
    assert pool.used_bytes() - used_before <= accounted + storage // 4
