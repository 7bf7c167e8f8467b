"""Blocks of ordinary steps captured in CUDA graphs, with the rebuild decision on the device.

At a few tens of thousands of atoms a step is a few microseconds of GPU work per kernel, less
than the host needs to launch it, and a rebuild decision read back every step would add a full
host-device synchronisation.  So ordinary steps (no thermo; no step hooks, or capturable ones:
Langevin) run as a captured block of ``K`` steps, launched with one call::

    per step k = 1..K:  initial_integrate -> displacement check -> pair forces [-> post_force]
                        -> final_integrate

(the phases of :data:`pycumd.step_order.STEP_ORDER` that an ordinary step has, in that order:
:func:`pycumd.step_order.graph_launches` gives the launch sequence both graph forms capture)

**Step hooks in the graph.**  Hooks that say they are capturable (``StepHooks.capturable``: Langevin;
Nose-Hoover, Berendsen, the barostats and the other fixes are not, and their runs take host-driven
steps) run their post_force phase after the forces (``capture_post_force``).  A graph bakes its
kernel arguments, so what changes from step to step comes from device memory: the step number is
``control[STEP]`` (64 bits, the step before the launch, written by the one-thread ``set_step`` kernel
before each block, rebuild step or loop launch, so without a host copy) plus the step's number in
its block (in the device loop: plus ``control[LOOP_DONE]``, the steps of the earlier passes), and
what changes between runs (Langevin: the temperature ramp, its factors) is written by the hooks'
``prepare_capture`` at each stretch.  Langevin's noise is a counter-based stream of (seed, step,
atom id), and the captured kernel computes the ramp's gamma2 with the host's roundings, so the bits
are the host-driven step's, and a checkpoint written between stretches continues the same stream.

(with final_integrate of step k and initial_integrate of step k + 1 as one kernel,
``final_then_initial_integrate``, where the integrator has it: the same operations in one pass)

The displacement check sets ``control[0]`` ("frozen") when some atom has moved more than half
the skin; every later kernel of the block then returns at once, so the block stops exactly
after the initial integrate of the step that needs a rebuild, and ``control[1]`` tells which
step completed last.  The host reads the control array once per block (the only
synchronisation), and if frozen, launches the *rebuild step*, a second captured graph::

    control reset -> the neighbour build's launches -> statistics to control[3:5] -> pair forces
    [-> post_force] -> final_integrate

followed at once by the next block, without waiting: the build's statistics are read with that
block's control flags.  If the build overflowed the list storage, its last kernel freezes the
step (``control[0]``, ``control[2]``), so neither the forces nor the next block run; the host
then repeats the build with a larger storage and finishes the step the ordinary way.  The same
kernels run in the same order as on the step-by-step path, hence the same bits.

Blocks aim to end where the next rebuild is expected (a running mean of the interval between
rebuilds), since the launches left in a frozen block are wasted.  A graph bakes in its kernel
arguments, so the block graphs are captured again when the neighbour storage is reallocated
(capacity change) and the rebuild step with each new build plan; particles reordered at rebuilds
keep their buffers.

**The device loop** (the default where the driver has conditional graph nodes, CUDA 12.4+).  The
whole stretch between two reports is one graph launch, with no host decision inside it
(:mod:`pycumd.conditional_graph` builds it, :file:`step_control.cu` steers it)::

    loop_start (n read from the control array) -> initial_integrate
    WHILE (a whole pass of U steps fits before the last step):
        U times: displacement check -> decide_rebuild -> IF (some atom moved half the skin): the
        build's launches -> pair forces [-> post_force] -> final_then_initial_integrate
        loop_step_done
    the steps left over, as in the body; then the last step, with final_integrate; last_step_done

The fused half steps (``final_then_initial_integrate_check``; not in composite precision) also do
the displacement check from the positions in registers (flag ``control[6]``; in blocks a one-thread
``freeze_if_moved`` turns it into the freeze) and in mixed precision write the force kernel's
fixed-point image of the new positions, so the separate check and image kernels, which would read
the positions again, run only after a build and at the first step of a launch or block (mixed, 1M
atoms: 1.85e9 -> 1.91-1.96e9 atom-steps/s; 32,000: 22,100 -> 25,200 steps/s).

The host reads the control array once, after the launch: steps completed, builds, their largest
count.  An overflowing build freezes the launch as in a block, and the host repeats that step as
after a frozen rebuild step.  The kernels and their order are those of the step-by-step path, so
the bits are the same as in the two other paths.
"""

from __future__ import annotations

import time
import weakref

import numpy as np

from .conditional_graph import ConditionalGraphUnavailable, GraphChain
from .neighbors.verlet import CAPACITY_WINDOW
from .step_order import FINAL_THEN_INITIAL, FINAL_THEN_INITIAL_CHECK, graph_launches

#: Indices into the state's control array: control_layout.cuh's CONTROL_* (tests/test_conditional_graph.py
#: checks that the two agree).
FROZEN, BLOCK_DONE, REASON, MAX_COUNT, MIN_R2, BUILDS, MOVED, LOOP_DONE, LOOP_STEPS = range(9)
BUILD_COUNTS = 9              # control[9 + (b mod CAPACITY_WINDOW)]: largest count of build b of a launch
ARRIVALS = 29                 # blocks of a fused half-step kernel done with their check (device only)
STEP = 30                     # control[30:32]: one 64-bit word, the step before a launch (set_step)


class CudaStepGraph:
    """Runs ordinary steps of a :class:`~pycumd.simulation.Simulation` in captured blocks.

    Parameters
    ----------
    sim : Simulation
    block_steps : int
        Steps per captured block (the host synchronises once per block).
    mode : {"auto", "loop", "blocks"}
        ``"loop"``: each call of :meth:`advance` is one launch of a graph with conditional nodes
        (the device loop; raises :class:`~pycumd.conditional_graph.ConditionalGraphUnavailable` on
        a driver without them); ``"blocks"``: captured blocks of up to ``block_steps`` steps;
        ``"auto"`` (default): the loop where the driver has conditional nodes, else blocks (the
        two run at the same pace, the loop with the narrower spread: docs/performance.md).
    """

    def __init__(self, sim, block_steps: int = 25, mode: str = "auto"):
        if mode not in ("auto", "loop", "blocks"):
            raise ValueError(f"step graph mode must be 'auto', 'loop' or 'blocks', got {mode!r}")
        self.mode = mode
        self._loops: dict = {}                # (unroll, steps left after the passes) -> executable
        self._loop_key = None
        self._loop_plan = None                # weak reference to the build plan the loops were made with
        self.launches = 0                     # device-loop launches
        #: steps per pass of the device loop's WHILE body (each pass ends with one counting kernel)
        self.loop_unroll = 4
        self.loop_fallbacks = 0               # device-loop calls run in blocks (a capacity change due)
        self.sim = sim
        self.block_steps = int(block_steps)
        self.cp = sim.backend.xp
        self.stream = self.cp.cuda.Stream(non_blocking=False)
        self._graphs: dict = {}
        self._key = None
        self.blocks = 0
        self.frozen_blocks = 0
        self._interval = float(block_steps)   # running mean of the steps between rebuilds
        self._since_build = 0
        self._rebuild = None                  # (weak reference to the build plan, rebuild-step graph, hooks)
        self.overflows = 0                    # rebuild steps repeated on the host

    @staticmethod
    def applicable(sim) -> bool:
        """NVE, or step hooks that are capturable (Langevin), over a neighbour list rebuilt by the
        displacement check, on the GPU.  ``delay`` 1 with ``every`` 1 (in.chain's ``neigh_modify every 1
        delay 1``) decides as ``delay`` 0: the first decision after a build comes one step after it
        (``steps_since_build`` 1, LAMMPS' ``ago >= delay``)."""
        nl, hooks = sim.neighbors, sim.thermostat
        return (sim.backend.is_gpu and (hooks is None or hooks.capturable) and nl.capturable
                and nl.has_rebuild_policy and nl.check and nl.every == 1 and nl.delay <= 1 and nl.nbr is not None
                and sim.forces.capturable)

    def _set_step(self, step: int) -> None:
        """Before a launch whose captured hooks read the step number: ``control[STEP] = step`` (the step
        before the launch's first), by a one-thread kernel on the graph's stream.  Nothing without hooks."""
        if self.sim.thermostat is None:
            return
        with self.stream:
            self._kernels()["set_step"]((1,), (1,), (self.sim.control, np.uint64(step)))

    def _graph(self, k: int):
        nl = self.sim.neighbors
        # the list arrays the captured force launches read: both addresses (a storage reallocated
        # with the same size may come back at the same nbr address but another nbr_count address)
        # mixed: the fused half steps write the force kernel's image (allocated by _fused_check,
        # so before the key: else the first graph would be captured twice)
        fused_check, image = self._fused_check()
        hooks = self.sim.thermostat           # None, or capturable (applicable)
        key = (nl.nbr.data.ptr, nl.nbr_count.data.ptr, nl.capacity, None if image is None else image.data.ptr, hooks)
        if key != self._key:
            self._graphs.clear()
            self._key = key
        graph = self._graphs.get(k)
        if graph is None:
            sim, state = self.sim, self.sim.state
            limit2 = nl.displacement_limit2
            kernels = self._kernels()
            integrator = sim.integrator
            fused = integrator.final_then_initial_integrate
            launches = graph_launches(k, fuse=fused is not None, fuse_check=fused_check is not None,
                                      post_force=hooks is not None)
            with self.stream:
                self.stream.begin_capture()
                # control[1] = 0: a block frozen at its first step completed none
                self.cp.cuda.runtime.memsetAsync(sim.control.data.ptr + 4, 0, 4, self.stream.ptr)
                checked = False          # the last half steps did the displacement check (and mixed: the image)
                for kind, step in launches:
                    if kind == "initial_integrate":
                        integrator.initial_integrate(state)
                    elif kind == "neighbor_decision":
                        if checked:      # the fused half steps' flag, turned into the freeze
                            kernels["freeze_if_moved"]((1,), (1,), (sim.control,))
                        else:
                            nl.builder.displacement_exceeds(state, limit2, flag=sim.control)
                    elif kind == "forces":
                        if checked:
                            self._forces_after_fused_check(image)
                        else:
                            sim.forces.compute(state, nl, False)
                    elif kind == "post_force":
                        hooks.capture_post_force(sim, step, False)
                    elif kind == "final_integrate":
                        integrator.final_integrate(state, step)
                    elif kind == FINAL_THEN_INITIAL:
                        fused(state, step)
                    elif kind == FINAL_THEN_INITIAL_CHECK:
                        fused_check(state, step, limit2, image)
                    checked = kind == FINAL_THEN_INITIAL_CHECK or (checked and kind == "neighbor_decision")
                graph = self.stream.end_capture()
            self._graphs[k] = graph
        return graph

    def _rebuild_step(self):
        """Prepare the neighbour build on the host and return the rebuild-step graph (captured
        anew for a new build plan)."""
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        n_cells = nl.prepare_build(state)
        impl = nl.builder
        plan = impl.prepare(state, n_cells, nl.r_list, nl.capacity, nl)
        hooks = sim.thermostat
        if self._rebuild is None or self._rebuild[0]() is not plan or self._rebuild[2] is not hooks:
            impl.compile_build_kernels(state)     # compiled before, not during, the capture
            cp = self.cp
            with self.stream:
                self.stream.begin_capture()
                cp.cuda.runtime.memsetAsync(sim.control.data.ptr, 0, 3 * 4, self.stream.ptr)
                impl.enqueue(state, plan, nl, control=sim.control)
                sim.forces.compute(state, nl, False)
                if hooks is not None:             # the step after control[STEP] (_advance_in_blocks sets it)
                    hooks.capture_post_force(sim, 1, False)
                sim.integrator.final_integrate(state, 0)
                # a weak reference: the plan holds views of the list storage, which a capacity
                # change must free before it allocates the new one (10^8 atoms: 2 x 40 GB)
                self._rebuild = (weakref.ref(plan), self.stream.end_capture(), hooks)
        plan.builds += 1
        return self._rebuild[1]

    def _finish_rebuild(self, control) -> bool:
        """Read the launched rebuild step's statistics; on an overflow repeat the build with a
        larger storage and finish the step on the host.  Returns False after an overflow (the
        block launched behind the rebuild step did nothing)."""
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        max_count = int(control[3])
        min_r2 = float(np.asarray(control[4:5], dtype=np.int32).view(np.float32)[0])
        state.step += 1
        if nl.finish_build(state, max_count, min_r2):
            return True
        self.overflows += 1
        sim.control.fill(0)
        nl.build(state)
        self._finish_step_on_host()
        return False

    def _finish_step_on_host(self) -> None:
        """The rest of a step whose build overflowed, after the repeated build, as the host-driven step
        does it: forces, the hooks' post_force (the step number: ``state.step``), the final half step."""
        sim, state = self.sim, self.sim.state
        sim.forces.compute(state, sim.neighbors, False)
        if sim.thermostat is not None:
            sim.thermostat.post_force(sim)
        sim.integrator.final_integrate(state)

    def advance(self, n_steps: int) -> int:
        """Run up to ``n_steps`` ordinary steps; return how many were completed (>= 1)."""
        if self.sim.thermostat is not None:
            self.sim.thermostat.prepare_capture(self.sim)       # the device memory its captured launches read
        if self.mode != "blocks" and n_steps >= 2:
            try:
                return self._advance_on_device(n_steps)
            except ConditionalGraphUnavailable:
                if self.mode == "loop":
                    raise
                self.mode = "blocks"
        return self._advance_in_blocks(n_steps)

    # -- the device loop -------------------------------------------------------------------------
    def _capture(self, enqueue):
        """A ``cupy.cuda.graph.Graph`` of the launches ``enqueue()`` makes on this stream."""
        with self.stream:
            self.stream.begin_capture()
            enqueue()
            return self.stream.end_capture()

    def _fused_check(self):
        """``(half steps, image)``: the integrator's fused half steps that also do the displacement
        check (``final_then_initial_integrate_check``), with mixed precision's fixed-point image
        array for them to write (else None); ``(None, None)`` where there are none (composite)."""
        fused_check = self.sim.integrator.final_then_initial_integrate_check
        forces = self.sim.forces
        image = forces.image_of(self.sim.state) if fused_check and forces.reads_fixed_image else None
        return fused_check, image

    def _forces_after_fused_check(self, image) -> None:
        """The force computation after the fused half steps: from the image they wrote (mixed)."""
        if image is not None:
            self.sim.forces.compute(self.sim.state, self.sim.neighbors, False, image_current=True)
        else:
            self.sim.forces.compute(self.sim.state, self.sim.neighbors, False)

    def _kernels(self):
        if not hasattr(self, "_control_kernels"):
            module = self.sim.backend.kernel_module("step_control.cu")
            self._control_kernels = {name: module.get_function(name) for name in
                                     ("loop_start", "decide_rebuild", "loop_step_done", "last_step_done",
                                      "freeze_if_moved", "set_step")}
        return self._control_kernels

    def _loop_graph(self, n_steps: int, plan):
        """The device-loop executable for ``n_steps`` steps (the host writes ``n_steps`` to the
        control array before each launch; one executable per ``(n_steps - 1) % loop_unroll``,
        cached, made anew when the list storage or the build plan changes, as the block graphs)."""
        nl, state, sim = self.sim.neighbors, self.sim.state, self.sim
        # the plan by weak reference (as the rebuild step's): an id could be reused by a new plan
        # whose buffers lie elsewhere
        fused_check, image = self._fused_check()     # allocates mixed's image: before the key
        hooks = sim.thermostat                       # None, or capturable (applicable)
        key = (nl.nbr.data.ptr, nl.nbr_count.data.ptr, nl.capacity, None if image is None else image.data.ptr, hooks)
        if key != self._loop_key or self._loop_plan is None or self._loop_plan() is not plan:
            self._loops.clear()
            self._loop_key, self._loop_plan = key, weakref.ref(plan)
        # one graph for every run length with the same steps left over after the loop's passes
        # (the length itself is read from control[8] on the device)
        unroll = self.loop_unroll
        left = (n_steps - 1) % unroll
        exe = self._loops.get((unroll, left))
        if exe is not None:
            return exe
        kernels = self._kernels()
        nl.builder.compile_build_kernels(state)        # compiled before, not during, a capture
        control = sim.control
        limit2 = nl.displacement_limit2
        integrator = sim.integrator
        one = ((1,), (1,))
        fused = integrator.final_then_initial_integrate

        def head():             # step 1's initial half step (the passes of graph_launches start at the decision)
            kernels["loop_start"](*one, (control, np.uint64(again), np.int32(unroll)))
            integrator.initial_integrate(state)
            if fused_check is not None:     # the first step's check (and image); later ones: fused_check's
                nl.builder.displacement_exceeds(state, limit2, flag=control[MOVED:])
                if image is not None:
                    sim.forces.write_image(state)

        def check(handle):
            def enqueue():
                if fused_check is None:
                    nl.builder.displacement_exceeds(state, limit2, flag=control[MOVED:])
                kernels["decide_rebuild"](*one, (control, np.uint64(handle)))
            return enqueue

        def rebuild():
            nl.builder.enqueue(state, plan, nl, control=control, accumulate=True)
            if image is not None:           # the reordered positions' image
                sim.forces.write_image(state)

        def forces():
            if fused_check is not None:
                self._forces_after_fused_check(image)
            else:
                sim.forces.compute(state, nl, False)

        def launch(group, handles):
            """The launches of ``group`` (graph_launches' (kind, step) between two decisions), with
            the fused check setting the condition of the next step's IF node in the same chain."""
            def enqueue():
                for kind, step in group:
                    if kind == "forces":
                        forces()
                    elif kind == "post_force":      # the step: control[STEP] + control[LOOP_DONE] + step
                        hooks.capture_post_force(sim, step, True)
                    elif kind == FINAL_THEN_INITIAL_CHECK:
                        fused_check(state, step, limit2, image, rebuild=handles[step] if step < len(handles) else None)
                    elif kind == FINAL_THEN_INITIAL:
                        fused(state, step)
                    elif kind == "final_integrate":
                        integrator.final_integrate(state, step)
                    else:                    # initial_integrate (not fused): into the next step
                        integrator.initial_integrate(state)
            return enqueue

        # steps 1 .. n-1 end with the fused half steps: whole passes of `unroll` steps in the
        # WHILE node, the `left` steps left over after it, then step n with the final half step
        rebuild_graph = self._capture(rebuild)

        def add_steps(chain, count, last_is_final=False):
            """``count`` steps in ``chain``, numbered 1.. in it, in graph_launches' order from each
            step's rebuild decision: the decision (a check node), the IF node of the build, then the
            launches up to the next decision (the forces and the half steps into the next step; the
            last, with ``last_is_final``: the final half step) as one child graph.  With the fused
            check the decision of each step after the chain's first is made by the half-step kernel
            before it (its last block sets the next IF node's condition): one graph node fewer per step."""
            handles = [chain.handle(default=0) for _ in range(count)]
            launches = graph_launches(count, fuse=fused is not None, fuse_check=fused_check is not None,
                                      first="neighbor_decision",
                                      last="final_integrate" if last_is_final else "initial_integrate",
                                      post_force=hooks is not None)
            group: list = []
            for kind, step in launches:
                if kind != "neighbor_decision":
                    group.append((kind, step))
                    continue
                if group:
                    chain.child(self._capture(launch(group, handles)))
                    group = []
                if step == 1 or fused_check is None:
                    chain.child(self._capture(check(handles[step - 1])))
                chain.if_then(handles[step - 1]).child(rebuild_graph)
            if group:
                chain.child(self._capture(launch(group, handles)))

        root = GraphChain.create()
        again = root.handle()                        # set by loop_start
        root.child(self._capture(head))
        body = root.while_loop(again)
        add_steps(body, unroll)
        body.child(self._capture(
            lambda: kernels["loop_step_done"](*one, (control, np.uint64(again), np.int32(unroll)))))
        add_steps(root, left + 1, last_is_final=True)
        root.child(self._capture(lambda: kernels["last_step_done"](*one, (control, np.int32(left + 1)))))
        exe = self._loops[unroll, left] = root.instantiate()
        return exe

    def _advance_on_device(self, n_steps: int) -> int:
        """Run ``n_steps`` (>= 2) ordinary steps in one launch of the device loop; return how
        many were completed (fewer only when a build overflowed: that step is then finished on
        the host, so at least one).

        A capacity change that is due (the list's shrink policy, or one asked for) takes effect at
        a build that reallocates the storage, which the loop's captured build cannot do, while the
        steps before that build still read the present list: such a call runs in blocks.
        """
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        n = state.n_atoms
        L = np.asarray(state.box_lengths)
        nl.check_box(L)
        nl.shrink_if_oversized(n)
        if nl.nbr.size != n * nl.capacity:
            self.loop_fallbacks += 1
            return self._advance_in_blocks(n_steps)
        plan = nl.builder.prepare(state, nl.cells_per_dimension(L), nl.r_list, nl.capacity, nl)
        executable = self._loop_graph(n_steps, plan)
        sim.control[LOOP_STEPS:LOOP_STEPS + 1].set(np.asarray([n_steps], np.int32), stream=self.stream)
        self._set_step(state.step)
        executable.launch(self.stream)
        self.launches += 1
        control = sim.control.get(stream=self.stream)
        completed, builds = int(control[LOOP_DONE]), int(control[BUILDS])
        state.step += completed
        overflowed = bool(control[FROZEN])
        good_builds = builds - overflowed
        plan.builds += builds
        if good_builds:
            ring = CAPACITY_WINDOW
            counts = [control[BUILD_COUNTS + b % ring] for b in range(max(0, good_builds - ring), good_builds)]
            nl.record_builds(state, good_builds, counts)
        else:
            nl.steps_since_build += completed
        if not overflowed:
            return completed
        # the build of step `completed + 1` overflowed: repeat it with a larger storage, finish the step
        self.overflows += 1
        state.step += 1
        ok = nl.finish_build(state, int(control[MAX_COUNT]), float("inf"))
        assert not ok, "the device loop froze without an overflowing build"
        sim.control.fill(0)
        nl.build(state)
        self._finish_step_on_host()
        return completed + 1

    # -- captured blocks -----------------------------------------------------------------------
    def _advance_in_blocks(self, n_steps: int) -> int:
        """Run up to ``n_steps`` ordinary steps in captured blocks; return how many were completed.

        Blocks and rebuild steps follow one another with one synchronisation per block; the call
        returns with no rebuild step left unread.
        """
        sim, state = self.sim, self.sim.state
        completed = 0
        pending = False           # a rebuild step launched, its statistics not yet read
        while True:
            remaining = n_steps - completed - pending
            if remaining > 0:
                # a block that freezes early wastes its remaining (no-op) launches: aim at the expected rebuild
                expected = int(round(self._interval)) - self._since_build + 1
                k = min(remaining, self.block_steps, max(expected, 2))
                graph = self._graph(k)
                self._set_step(state.step + pending)    # a pending rebuild step is the step before the block
                graph.launch(self.stream)
                self.blocks += 1
            control = sim.control.get(stream=self.stream)
            if pending:
                pending = False
                completed += 1
                if not self._finish_rebuild(control):
                    continue                    # the block behind it did nothing
            if remaining <= 0:
                return completed
            frozen, done = int(control[0]), int(control[1])
            completed += done
            state.step += done
            if not frozen:
                self._since_build += done
                if completed >= n_steps:
                    return completed
                continue
            # The displacement check of the next step fired after its initial integrate: rebuild
            # and finish that step in the rebuild step's graph; the next block follows it at once.
            self.frozen_blocks += 1
            self._interval = 0.8 * self._interval + 0.2 * (self._since_build + done + 1)
            self._since_build = 0
            rebuild = self._rebuild_step()
            self._set_step(state.step)
            rebuild.launch(self.stream)
            pending = True


class HostBuildStepGraph:
    """Ordinary steps of a run whose neighbour build runs on the host (spatial domains joined by
    NCCL), each step between two builds one launch of a captured graph.

    The decomposed build (migration, cell order, ghost selection, list) has host-side counts and
    allocations, so it cannot be captured; what an ordinary step does between two builds can (the
    ghost refresh is a gather into kept buffers and one NCCL group per decomposed direction, the
    rebuild decision one NCCL all-reduce).  So after each build one step is captured::

        pair forces of step k (ghost refresh, list forces) -> final half step of k and initial half
        step of k + 1 with the displacement check (one kernel) -> the check's flag all-reduced
        over the ranks (NeighborStructure.reduce_rebuild_flag)

    and launched once per step; the host reads the flag after each launch (one synchronisation a
    step, against the ten or so Python launches and the synchronisation of the host-driven step) and
    builds on the host when it is set, after which the graph is captured again (the build changes
    the rows, so the arrays the graph's launches name).  The kernels and their order are those of
    the host-driven step (the fused half steps do the same operations as the two separate ones), so
    the bits are the same.

    Parameters
    ----------
    sim : Simulation
    """

    def __init__(self, sim):
        self.sim = sim
        self.cp = sim.backend.xp
        self.stream = self.cp.cuda.Stream(non_blocking=False)
        self._graph = None
        self._graph_build = -1            # the neighbour build the graph was captured after
        self.captures = 0
        self.launches = 0
        #: wall seconds spent capturing (and instantiating) step graphs, and in the host builds
        self.capture_seconds = 0.0
        self.build_seconds = 0.0
        sim.comm.on_release_graphs(self.release)    # NCCL's destroy waits for graphs holding its work

    def release(self) -> None:
        """Drop the captured graph (before the NCCL communicator is destroyed; recaptured if used again)."""
        self._graph = None
        self._graph_build = -1

    @staticmethod
    def applicable(sim) -> bool:
        """Plain NVE on the GPU over a neighbour structure rebuilt on the host by the displacement
        check, whose ordinary steps can be captured, with the fused half steps that check."""
        nl = sim.neighbors
        return (sim.backend.is_gpu and sim.thermostat is None and nl.capturable_between_builds
                and nl.has_rebuild_policy and nl.check and nl.every == 1 and nl.delay == 0
                and nl.nbr is not None and sim.forces.capturable and not sim.forces.reads_fixed_image
                and sim.integrator.final_then_initial_integrate_check is not None)

    def _step_graph(self):
        """The captured step (forces, fused half steps with the check, the flag's all-reduce),
        captured anew after each build."""
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        if self._graph is not None and self._graph_build == nl.n_builds:
            return self._graph
        self._graph = None                 # the old graph's nodes name arrays the build replaced
        start = time.perf_counter()
        flag = sim.control[MOVED:MOVED + 1]
        limit2 = nl.displacement_limit2
        fused_check = sim.integrator.final_then_initial_integrate_check
        with self.stream:
            self.stream.begin_capture()
            sim.forces.compute(state, nl, False)
            self.cp.cuda.runtime.memsetAsync(flag.data.ptr, 0, 4, self.stream.ptr)
            fused_check(state, 0, limit2)
            nl.reduce_rebuild_flag(flag)
            self._graph = self.stream.end_capture()
        self._graph_build = nl.n_builds
        self.captures += 1
        self.capture_seconds += time.perf_counter() - start
        return self._graph

    def advance(self, n_steps: int) -> int:
        """Run ``n_steps`` ordinary steps (all of them; returns ``n_steps``)."""
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        flag = sim.control[MOVED:MOVED + 1]
        # step 1 up to its decision as on the host-driven path
        state.step += 1
        sim.integrator.initial_integrate(state)
        if nl.needs_rebuild(state):
            nl.build(state)
        with self.stream:
            for _ in range(n_steps - 1):
                self._step_graph().launch(self.stream)
                self.launches += 1
                moved = int(flag.get(stream=self.stream)[0])
                state.step += 1
                nl.steps_since_build += 1
                if moved:
                    start = time.perf_counter()
                    nl.build(state)
                    self.build_seconds += time.perf_counter() - start
            sim.forces.compute(state, nl, False)      # the last step's forces and final half step
            sim.integrator.final_integrate(state)
        self.stream.synchronize()
        return n_steps
