"""The order of one time step, written once.

:data:`STEP_ORDER` is the sequence of phases of a step (LAMMPS' ``Verlet::run`` order).  Both ways of
running steps read it:

* the host-driven step, :meth:`pycumd.simulation.Simulation._one_step`, runs every phase in this
  order (a phase whose part is absent, such as a thermostat hook in NVE, does nothing);
* the CUDA-graph step, :mod:`pycumd.step_graph`, captures the phases marked ``in_graph`` (an
  ordinary step: no report; ``post_force`` only where the step hooks are capturable,
  ``StepHooks.capturable``: Langevin) in the same order, through :func:`graph_launches`, which also
  applies the integrator's fusions of adjacent phases.

A new phase goes here first; a test (``tests/test_step_order.py``) checks that the host step runs
the phases in this order and that the graph's launch sequences follow it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Phase:
    """One phase of a step.

    Attributes
    ----------
    name : str
        The phase's name (the key both step paths dispatch on).
    runs : str
        What runs it (the part and its member).
    lammps : str
        The corresponding stage of LAMMPS' ``Verlet::run``.
    in_graph : bool
        Captured in the CUDA-graph step of ordinary steps (``post_force`` where the step hooks are
        capturable: :func:`graph_launches`' ``post_force``).
    """

    name: str
    runs: str
    lammps: str
    in_graph: bool


STEP_ORDER = (
    Phase("begin_step", "thermostat.begin_step (Nose-Hoover: chain half step, velocity scaling; a barostat's "
          "hooks in its place)", "fix initial_integrate (nvt/npt: the chain half step first)", False),
    Phase("initial_integrate", "integrator.initial_integrate: v += dt/2 f/m, x += dt v (a barostat also "
          "changes the box)", "fix initial_integrate", True),
    Phase("neighbor_decision", "neighbors.needs_rebuild; on a rebuild neighbors.build (wrap, counting sort "
          "into cells, list; spatial domains: migration and ghosts)", "neighbor->decide(), then "
          "comm->exchange/borders and neighbor->build", True),
    Phase("forces", "forces.compute (per-atom energy and virial only when a due reporter or the "
          "thermostat needs them)", "force->pair->compute", True),
    Phase("post_force", "thermostat.post_force (Langevin: friction and noise forces; fix shake: constraint "
          "forces; fix rattle: velocity constraints); in a graph step thermostat.capture_post_force",
          "fix post_force", True),
    Phase("final_integrate", "integrator.final_integrate: v += dt/2 f/m", "fix final_integrate", True),
    Phase("end_step", "thermostat.end_step (Nose-Hoover: chain half step; then fix rattle's position "
          "constraint, LAMMPS' FixRattle::final_integrate, before every end-of-step fix)",
          "fix final_integrate of nvt and rattle, then fix end_of_step", False),
    Phase("report", "the reporters due this step, all served by one Snapshot", "output->write", False),
)

#: the phases a CUDA-graph step captures, in order (``post_force`` only with capturable step hooks)
GRAPH_PHASES = tuple(phase.name for phase in STEP_ORDER if phase.in_graph)
#: the phases of a graph step without step hooks (plain NVE)
NVE_GRAPH_PHASES = tuple(name for name in GRAPH_PHASES if name != "post_force")

#: launch kinds of :func:`graph_launches` besides the phase names: the final half step of step s
#: and the initial one of step s + 1 as one kernel (``Integrator.final_then_initial_integrate``),
#: and the same with step s + 1's displacement check (``final_then_initial_integrate_check``)
FINAL_THEN_INITIAL = "final_then_initial_integrate"
FINAL_THEN_INITIAL_CHECK = "final_then_initial_integrate_check"


def graph_launches(steps: int, *, fuse: bool, fuse_check: bool, first: str = "initial_integrate",
                   last: str = "final_integrate", post_force: bool = False) -> list:
    """The launches of ``steps`` ordinary steps of a CUDA graph: ``[(kind, step), ...]``, the steps
    numbered from 1.

    Each step runs :data:`GRAPH_PHASES` in order, ``post_force`` (the step hooks' forces, after the
    pair and bonded forces) only with ``post_force`` (capturable hooks; else
    :data:`NVE_GRAPH_PHASES`).  Where the integrator can (``fuse``), the final
    half step of step s and the initial half step of step s + 1 are one launch
    (:data:`FINAL_THEN_INITIAL`, step s); with ``fuse_check`` that launch also does step s + 1's
    displacement check (:data:`FINAL_THEN_INITIAL_CHECK`), whose ``neighbor_decision`` then only
    turns the flag into the decision.

    ``first`` is the phase the sequence starts with (``"neighbor_decision"``: step 1's initial half
    step ran before, as in the device loop's passes); ``last`` is ``"final_integrate"`` (the last
    step ends) or ``"initial_integrate"`` (the sequence goes on into step ``steps + 1``'s initial
    half step, fused where it can be: a pass of the device loop).
    """
    if steps < 1:
        raise ValueError(f"a graph holds at least one step, got {steps}")
    names = GRAPH_PHASES if post_force else NVE_GRAPH_PHASES
    if first not in names or last not in ("final_integrate", "initial_integrate"):
        raise ValueError(f"first must be one of {names}, last final_integrate or initial_integrate")
    if fuse_check and not fuse:
        raise ValueError("the fused check is a fused half step: fuse_check needs fuse")
    phases = [(name, step) for step in range(1, steps + 1) for name in names]
    phases = phases[names.index(first):]
    if last == "initial_integrate":
        phases.append(("initial_integrate", steps + 1))
    launches: list = []
    k = 0
    while k < len(phases):
        name, step = phases[k]
        if name == "final_integrate" and fuse and k + 1 < len(phases):
            # the next is step + 1's initial_integrate (GRAPH_PHASES ends with final, begins with initial)
            launches.append((FINAL_THEN_INITIAL_CHECK if fuse_check else FINAL_THEN_INITIAL, step))
            k += 2
            continue
        launches.append((name, step))
        k += 1
    return launches


__all__ = ["Phase", "STEP_ORDER", "GRAPH_PHASES", "NVE_GRAPH_PHASES", "FINAL_THEN_INITIAL",
           "FINAL_THEN_INITIAL_CHECK", "graph_launches"]
