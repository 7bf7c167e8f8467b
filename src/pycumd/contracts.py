"""The written contracts between the engine's parts.

A :class:`~pycumd.simulation.Simulation` runs three parts each step (an integrator with its step
hooks, a neighbour structure and a force evaluator), built by :mod:`pycumd.components`; a
decomposition over MPI ranks (:mod:`pycumd.parallel`) swaps the neighbour structure and the force
evaluator for ones that communicate inside their calls.  Code that combines the parts (the step
loop, the CUDA-graph capture, the minimiser, checkpoints, decompositions) uses the members below
and nothing else: every implementation derives from the base class of its protocol, so each member
exists, and what differs between implementations is a capability flag, never a class name.

This module is a leaf: it imports nothing of the package.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

#: int32 entries of the step-control array of the GPU kernels (control_layout.cuh's layout: the freeze
#: flag, the steps a captured block completed, the build statistics, the device loop's counters)
STEP_CONTROL_SIZE = 32


# -- the neighbour structure --------------------------------------------------------------------
@runtime_checkable
class NeighborStructure(Protocol):
    """Who interacts with whom: a Verlet list (serial or one spatial domain's) or the all-pairs
    stand-in.

    Attributes
    ----------
    skin : float
        Length units (0 for all pairs).
    n_builds : int
        Builds so far.
    nbr, nbr_count :
        The list (backend arrays) after a build; None where there is none (all pairs).
    half : bool
        Each pair once (Newton's third law in the forces) rather than once per atom.
    has_rebuild_policy : bool
        ``every``, ``delay`` and ``check`` (LAMMPS ``neigh_modify``) exist and may be set.
    capturable : bool
        Its build and displacement check run inside a CUDA graph (:mod:`pycumd.step_graph`).
    capturable_between_builds : bool
        Its build runs on the host, but what an ordinary step asks of it (the displacement check's
        collective :meth:`reduce_rebuild_flag`, the forces' ghost refresh) can be captured: the
        steps between builds run as CUDA graphs (:class:`pycumd.step_graph.HostBuildStepGraph`).
    capacity : int or None
        Neighbour slots per atom; None where there is no list.
    recent_max_counts : sequence of int
        The largest neighbour counts of the last builds (the storage policy's memory).
    """

    skin: float
    n_builds: int
    nbr: Any
    nbr_count: Any
    half: bool
    has_rebuild_policy: bool
    capturable: bool
    capturable_between_builds: bool
    capacity: Any
    recent_max_counts: Any

    def check_box(self, L) -> None:
        """Raise InputError if the box (edge lengths, length units) cannot hold the structure."""

    def needs_rebuild(self, state) -> bool:
        """The rebuild decision of this step (collective over the ranks of a decomposition)."""

    def build(self, state) -> None:
        """Wrap the positions into the box and build (may reorder or migrate the state's rows)."""

    def reduce_rebuild_flag(self, flag) -> None:
        """Make a device flag (int32 backend array of one entry, 1 where this rank's displacement
        check fired) the decision of all ranks, in place and on the device: the largest over the
        ranks of a decomposition (no host synchronisation); nothing on one rank."""

    def build_in_id_order(self, state) -> None:
        """:meth:`build`, leaving the rows in the order a run restored from a checkpoint starts in."""

    def schedule_reorder(self) -> None:
        """Make the next build put the particles in cell order, whatever its schedule."""

    def forward(self, values) -> None:
        """Fill the ghost rows of a per-atom array (the targets' rows first, then the ghosts', as the
        positions the forces read) with their owners' values: LAMMPS' forward communication (the
        EAM's F'(rho) between its passes).  Nothing where there are no ghosts."""

    def checkpoint_state(self) -> dict:
        """What a checkpoint writes of the structure: plain numbers and lists, and backend arrays
        where the list itself must travel."""

    def restore_checkpoint_state(self, d: dict, state) -> None:
        """Take back what :meth:`checkpoint_state` returned (arrays on the host), on ``state``: the
        simulation state holding the checkpoint's arrays in their stored order."""


class NeighborStructureBase:
    """Every member of :class:`NeighborStructure`, with the defaults of a structure that has no
    list policy, no reorder and is not captured in graphs."""

    skin = 0.0
    n_builds = 0
    nbr = None
    nbr_count = None
    half = False
    has_rebuild_policy = False
    capturable = False
    capturable_between_builds = False
    capacity = None
    recent_max_counts: tuple = ()

    def check_box(self, L) -> None:
        pass

    def needs_rebuild(self, state) -> bool:
        raise NotImplementedError(f"{type(self).__name__} does not implement needs_rebuild")

    def build(self, state) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement build")

    def build_in_id_order(self, state) -> None:
        self.build(state)

    def reduce_rebuild_flag(self, flag) -> None:
        pass

    def schedule_reorder(self) -> None:
        pass

    def forward(self, values) -> None:
        pass

    def checkpoint_state(self) -> dict:
        raise NotImplementedError(f"{type(self).__name__} does not implement checkpoint_state")

    def restore_checkpoint_state(self, d: dict, state=None) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement restore_checkpoint_state")


# -- the force evaluator ------------------------------------------------------------------------
@runtime_checkable
class ForceEvaluator(Protocol):
    """Pair forces (and on request per-atom energies and virials) of a state.

    Attributes
    ----------
    potential : PairPotential
    capturable : bool
        Its launches may be captured in a CUDA graph (:mod:`pycumd.step_graph`).
    reads_fixed_image : bool
        It reads a fixed-point image of the positions (mixed precision) that the fused half steps
        may write (:meth:`image_of`, ``compute(..., image_current=True)``).
    control : array or None
        GPU: the step-control array (:data:`STEP_CONTROL_SIZE` int32, layout control_layout.cuh) whose
        freeze flag its kernels read, shared with the integrator and steered by the CUDA-graph step;
        given by :func:`pycumd.components.build_components`.  None on the CPU.
    """

    potential: Any
    capturable: bool
    reads_fixed_image: bool
    control: Any

    def compute(self, state, neighbors, with_energy: bool) -> None:
        """Forces into ``state.forces``; with ``with_energy`` also ``state.energy`` and ``state.virial``."""

    def image_of(self, state):
        """The fixed-point image array of ``state`` (only where :attr:`reads_fixed_image`)."""

    def bonded_energies(self) -> dict:
        """``{"bond", "angle", "dihedral", "improper": energy}`` of the last evaluation with energies
        (energy units, whole system); empty without molecular terms."""

    def global_energy_virial(self) -> tuple:
        """``(energy, virial)`` of the last evaluation with energies that belong to no atom (a k-space
        solver's: energy units, and the (6,) float64 virial xx, yy, zz, xy, xz, yz); ``(0.0, zeros(6))``
        where there is none.  Thermo adds them to the per-atom sums (potential energy, pressure)."""

    def coulomb_energies(self) -> dict:
        """``{"ecoul": real-space Coulomb energy, "elong": k-space energy}`` (energy units, whole system)
        of the last evaluation with energies, for evaluators that keep the Coulomb parts apart (LAMMPS'
        thermo keywords ecoul and elong); empty otherwise."""


class ForceEvaluatorBase:
    """Every member of :class:`ForceEvaluator`; not capturable, no fixed-point image."""

    potential = None
    capturable = False
    reads_fixed_image = False
    control = None

    def compute(self, state, neighbors, with_energy: bool) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement compute")

    def image_of(self, state):
        raise NotImplementedError(f"{type(self).__name__} reads no fixed-point image")

    def bonded_energies(self) -> dict:
        return {}

    def global_energy_virial(self) -> tuple:
        return 0.0, np.zeros(6)

    def coulomb_energies(self) -> dict:
        return {}


# -- the step hooks (thermostats, barostats, fixes) --------------------------------------------
@runtime_checkable
class StepHooks(Protocol):
    """What runs around the integrator's half steps (LAMMPS fix hooks), in the order of
    :data:`pycumd.step_order.STEP_ORDER`.

    Attributes
    ----------
    needs_virial : bool
        The per-atom virial is computed every step (barostats).
    runs_over_ranks : bool
        Correct over MPI ranks (its reductions summed over the decomposition).
    runs_in_composite : bool
        Implemented in composite precision.
    has_target_temperature : bool
        ``reset_target(T)`` changes the temperature it holds (replica exchange,
        :mod:`pycumd.tempering`).
    capturable : bool
        Its hooks run inside the CUDA-graph step (:mod:`pycumd.step_graph`): ``begin_step`` and
        ``end_step`` do nothing, and ``post_force``'s launches can be captured
        (:meth:`capture_post_force`), reading the step number from the step-control array and what
        changes between runs from device memory that :meth:`prepare_capture` writes; the same bits
        as the host-driven step.
    """

    needs_virial: bool
    runs_over_ranks: bool
    runs_in_composite: bool
    has_target_temperature: bool
    capturable: bool

    def bind(self, sim) -> None: ...

    def off_terms(self, system) -> dict: ...

    constrained_dof: int

    def constraint_virial(self): ...

    def setup(self, sim) -> None: ...

    def begin_step(self, sim) -> None: ...

    def post_force(self, sim) -> None: ...

    def end_step(self, sim) -> None: ...

    def prepare_capture(self, sim) -> None: ...

    def capture_post_force(self, sim, step_in_pass: int, in_loop: bool) -> None: ...

    def checkpoint_state(self) -> dict: ...

    def reset_target(self, temperature: float) -> None: ...

    def restore_checkpoint_state(self, state: dict) -> None: ...

    def describe(self) -> str: ...


class StepHooksBase:
    """Every member of :class:`StepHooks`: hooks that do nothing, no state to checkpoint, serial
    only, any precision."""

    needs_virial = False
    runs_over_ranks = False
    runs_in_composite = True
    #: a thermostat whose target temperature :meth:`reset_target` changes (replica exchange)
    has_target_temperature = False
    #: the batched engine of an Ensemble (:mod:`pycumd.batch_engine`) runs these hooks over all
    #: systems in one launch (Langevin); False: an ensemble with them keeps the member engine
    in_batch = False
    #: the hooks run inside the CUDA-graph step (:meth:`prepare_capture`, :meth:`capture_post_force`;
    #: Langevin); False: a run with them takes host-driven steps on the GPU
    capturable = False

    #: degrees of freedom the hooks' constraints remove from the temperature (LAMMPS ``Fix::dof``), known
    #: once :meth:`off_terms` has run
    constrained_dof = 0

    def bind(self, sim) -> None:
        pass

    def off_terms(self, system) -> dict:
        """Called by :func:`pycumd.components.build_components` before the force evaluator is built:
        ``{bonded kind: bool mask of the topology's terms}`` that the hooks take off the force field
        (the bonds and angles that fix shake constrains); empty: none."""
        return {}

    def constraint_virial(self):
        """The virial of the constraint forces of the last step, (6,) float64 xx, yy, zz, xy, xz, yz
        (energy units; LAMMPS' fix virial), or None without constraints."""
        return None

    def setup(self, sim) -> None:
        """At each run's set-up after the forces, also when the hooks are not bound again (LAMMPS
        ``Fix::setup``)."""
        pass

    def reset_target(self, temperature: float) -> None:
        """Hold ``temperature`` (temperature units) from now on (LAMMPS ``Fix::reset_target``)."""
        raise NotImplementedError(f"{self.describe()} has no target temperature to reset")

    def begin_step(self, sim) -> None:
        pass

    def post_force(self, sim) -> None:
        pass

    def end_step(self, sim) -> None:
        pass

    def prepare_capture(self, sim) -> None:
        """Outside a capture, before graph steps are captured or launched (where :attr:`capturable`): compile
        the captured kernels, write the device memory they read (what changed since the last call)."""
        raise NotImplementedError(f"{self.describe()} does not run inside CUDA-graph steps")

    def capture_post_force(self, sim, step_in_pass: int, in_loop: bool) -> None:
        """Enqueue :meth:`post_force` of the ``step_in_pass``-th step (from 1) of a captured block, or with
        ``in_loop`` of a pass of the device loop (:mod:`pycumd.step_graph`), on the current stream, for
        capture: the step number comes from the step-control array (control_layout.cuh's CONTROL_STEP, and
        CONTROL_LOOP_DONE in the loop), never from the host (where :attr:`capturable`)."""
        raise NotImplementedError(f"{self.describe()} does not run inside CUDA-graph steps")

    def checkpoint_state(self) -> dict:
        return {}

    def restore_checkpoint_state(self, state: dict) -> None:
        pass

    def describe(self) -> str:
        return type(self).__name__


# -- the integrator -----------------------------------------------------------------------------
@runtime_checkable
class Integrator(Protocol):
    """The equations of motion: two half steps around the forces.

    Attributes
    ----------
    dt : float
        Time step (time units).
    thermostat : StepHooks or None
        The hooks of the step (a thermostat, a barostat, a chain of fixes).
    final_then_initial_integrate : callable or None
        ``(state, step_in_block)``: one step's final half step fused with the next step's initial
        one (one kernel), for graph-captured steps; None where the phases are not fusable.
    final_then_initial_integrate_check : callable or None
        The same, also doing the displacement check; None where not available.
    control : array or None
        GPU: the step-control array its kernels read (as :attr:`ForceEvaluator.control`).
    """

    dt: float
    thermostat: Any
    final_then_initial_integrate: Any
    final_then_initial_integrate_check: Any
    control: Any

    def bind(self, backend, precision, units) -> None: ...

    def initial_integrate(self, state) -> None: ...

    def final_integrate(self, state) -> None: ...

    def describe(self) -> str: ...


class IntegratorBase:
    """Every member of :class:`Integrator`; no fused phases."""

    dt = 0.0
    thermostat = None
    final_then_initial_integrate = None
    final_then_initial_integrate_check = None
    control = None

    def bind(self, backend, precision, units) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement bind")

    def initial_integrate(self, state) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement initial_integrate")

    def final_integrate(self, state) -> None:
        raise NotImplementedError(f"{type(self).__name__} does not implement final_integrate")

    def describe(self) -> str:
        return type(self).__name__


# -- the decomposition over MPI ranks -----------------------------------------------------------
@runtime_checkable
class Communicator(Protocol):
    """The ranks of a run and the collectives the engine uses (one rank when serial)."""

    rank: int
    size: int

    def sum(self, value: float) -> float: ...

    def any(self, flag: bool) -> bool: ...

    def max(self, value): ...

    def allgather(self, obj) -> list: ...


__all__ = ["NeighborStructure", "NeighborStructureBase", "ForceEvaluator", "ForceEvaluatorBase", "StepHooks",
           "StepHooksBase", "Integrator", "IntegratorBase", "Communicator"]
