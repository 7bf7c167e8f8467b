"""The step order is written once (pycumd.step_order): the host-driven step runs its phases in that
order, and the CUDA-graph step's launch sequences follow it (the graphs themselves run in the GPU
tests: test_conditional_graph.py and test_gpu_parity.py compare them with the host path bit for bit)."""

import pytest

from pycumd import Simulation, VelocityVerlet, create_velocities, lattice_system
from pycumd.contracts import StepHooksBase
from pycumd.outputs.reporter import Needs, Reporter
from pycumd.potentials.lennard_jones import LennardJones
from pycumd.step_order import (FINAL_THEN_INITIAL, FINAL_THEN_INITIAL_CHECK, GRAPH_PHASES, NVE_GRAPH_PHASES,
                               STEP_ORDER, graph_launches)

INITIAL, DECISION, FORCES, FINAL = "initial_integrate", "neighbor_decision", "forces", "final_integrate"
POST = "post_force"


def test_graph_phases_are_the_ordinary_phases_in_order():
    """The graph step's phases: the NVE ones, and the step hooks' post_force after the forces (where the hooks
    are capturable: Langevin), in STEP_ORDER's order."""
    names = [phase.name for phase in STEP_ORDER]
    assert GRAPH_PHASES == (INITIAL, DECISION, FORCES, POST, FINAL)
    assert NVE_GRAPH_PHASES == (INITIAL, DECISION, FORCES, FINAL)
    assert [names.index(name) for name in GRAPH_PHASES] == sorted(names.index(name) for name in GRAPH_PHASES)
    # the fusion of a step's final half step with the next step's initial one needs them adjacent
    assert GRAPH_PHASES[0] == INITIAL and GRAPH_PHASES[-1] == FINAL


@pytest.mark.parametrize("fuse,fuse_check,expected", [
    (False, False, [(INITIAL, 1), (DECISION, 1), (FORCES, 1), (FINAL, 1), (INITIAL, 2), (DECISION, 2), (FORCES, 2),
                    (FINAL, 2), (INITIAL, 3), (DECISION, 3), (FORCES, 3), (FINAL, 3)]),
    (True, False, [(INITIAL, 1), (DECISION, 1), (FORCES, 1), (FINAL_THEN_INITIAL, 1), (DECISION, 2), (FORCES, 2),
                   (FINAL_THEN_INITIAL, 2), (DECISION, 3), (FORCES, 3), (FINAL, 3)]),
    (True, True, [(INITIAL, 1), (DECISION, 1), (FORCES, 1), (FINAL_THEN_INITIAL_CHECK, 1), (DECISION, 2),
                  (FORCES, 2), (FINAL_THEN_INITIAL_CHECK, 2), (DECISION, 3), (FORCES, 3), (FINAL, 3)]),
])
def test_block_launches(fuse, fuse_check, expected):
    """A captured block of 3 steps: the graph step's launches before step_order existed (the
    sequences step_graph spelled out)."""
    assert graph_launches(3, fuse=fuse, fuse_check=fuse_check) == expected


def test_block_launches_with_capturable_hooks():
    """With capturable step hooks each step's post_force follows its forces (the pair and bonded terms, as
    Simulation._one_step runs them) and precedes the (fused) final half step."""
    assert graph_launches(2, fuse=True, fuse_check=True, post_force=True) == [
        (INITIAL, 1), (DECISION, 1), (FORCES, 1), (POST, 1), (FINAL_THEN_INITIAL_CHECK, 1), (DECISION, 2),
        (FORCES, 2), (POST, 2), (FINAL, 2)]
    assert graph_launches(2, fuse=True, fuse_check=False, first=DECISION, last=INITIAL, post_force=True) == [
        (DECISION, 1), (FORCES, 1), (POST, 1), (FINAL_THEN_INITIAL, 1), (DECISION, 2), (FORCES, 2), (POST, 2),
        (FINAL_THEN_INITIAL, 2)]
    assert graph_launches(1, fuse=False, fuse_check=False, post_force=True) == [
        (INITIAL, 1), (DECISION, 1), (FORCES, 1), (POST, 1), (FINAL, 1)]


def test_device_loop_pass_launches():
    """A pass of the device loop starts at the decision (step 1's initial half step ran before it)
    and runs into the next pass's first step."""
    assert graph_launches(2, fuse=True, fuse_check=True, first=DECISION, last=INITIAL) == [
        (DECISION, 1), (FORCES, 1), (FINAL_THEN_INITIAL_CHECK, 1), (DECISION, 2), (FORCES, 2),
        (FINAL_THEN_INITIAL_CHECK, 2)]
    assert graph_launches(1, fuse=False, fuse_check=False, first=DECISION, last=INITIAL) == [
        (DECISION, 1), (FORCES, 1), (FINAL, 1), (INITIAL, 2)]
    assert graph_launches(1, fuse=True, fuse_check=False, first=DECISION) == [(DECISION, 1), (FORCES, 1), (FINAL, 1)]


def test_bad_graph_sequences_are_refused():
    with pytest.raises(ValueError, match="at least one step"):
        graph_launches(0, fuse=True, fuse_check=False)
    with pytest.raises(ValueError, match="fuse_check needs fuse"):
        graph_launches(2, fuse=False, fuse_check=True)
    with pytest.raises(ValueError, match="first must be"):
        graph_launches(2, fuse=False, fuse_check=False, first="post_force")


class _Log:
    """Records the phases as the parts run them."""

    def __init__(self):
        self.calls = []


class _Hooks(StepHooksBase):
    def __init__(self, log):
        self.log = log

    def begin_step(self, sim):
        self.log.calls.append("begin_step")

    def post_force(self, sim):
        self.log.calls.append("post_force")

    def end_step(self, sim):
        self.log.calls.append("end_step")


class _Every(Reporter):
    def __init__(self, log):
        self.log = log
        self.needs = Needs(energy=True)

    def next_report(self, step, run_start, run_end):
        return step

    def report(self, snapshot):
        self.log.calls.append("report")


def _wrap(log, obj, method, name):
    original = getattr(obj, method)

    def recorded(*args, **kwargs):
        log.calls.append(name)
        return original(*args, **kwargs)

    setattr(obj, method, recorded)


def test_host_step_runs_the_phases_in_step_order():
    log = _Log()
    system = lattice_system("fcc", 3, density=0.8442)
    create_velocities(system, 1.0, seed=3)
    sim = Simulation(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0),
                     VelocityVerlet(0.005, _Hooks(log)), device="cpu", reporters=[_Every(log)])
    sim.run(0)
    _wrap(log, sim.integrator, "initial_integrate", "initial_integrate")
    _wrap(log, sim.neighbors, "needs_rebuild", "neighbor_decision")
    _wrap(log, sim.forces, "compute", "forces")
    _wrap(log, sim.integrator, "final_integrate", "final_integrate")
    log.calls.clear()
    sim._one_step(sim.state.step + 1)
    assert log.calls == [phase.name for phase in STEP_ORDER]
