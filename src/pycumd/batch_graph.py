"""The batched engine's steps on the device: one CUDA graph launch per stretch between two stops.

The host-stepped batch (:meth:`pycumd.batch_engine.BatchedEngine.advance` with ``step="host"``)
launches each kernel once per step for the whole batch, reads the per-system rebuild flags back every
step and, at a build, the systems' largest list counts: at 1,024 systems of 1,000 atoms those
synchronisations and launches, not the arithmetic, set the pace.  And a build is due at nearly every
step: each system rebuilds every ~9 steps (LAMMPS bench/in.lj, skin 0.3; measured on the CPU: 0.111
of a system's steps, 3.6 of 32 systems a step), so some of 1,024 systems rebuilds at every step
(1 - 0.889^1024 ~ 1).  So the build runs in the graph too, as kernels that skip the systems that do
not rebuild.

This is the single engine's device loop (:mod:`pycumd.step_graph`, ``step_control.cu``,
:mod:`pycumd.conditional_graph`) with the batched kernels; each step::

    initial half step (initial_integrate_batch)
    -> displacement check of every active system (displacement_exceeds_batch: per-system flags)
    -> batch_decide_rebuild (step_control.cu: LAMMPS Neighbor::decide per system, as the host path;
       per-system rebuild flags; the IF node's condition: some system rebuilds)
    -> IF: the build of the flagged systems (batch_bin_keys: wrap and bins; the counting sort over all
       systems' bins; the in-place reorder of the flagged systems' rows, batch_gather_rows and
       batch_copy_rows_back; the list kernel over their targets; batch_build_done: overflow check,
       per-system build records)
    -> pair forces (with energies at the stretch's last step) -> Langevin -> final half step

and the launch is::

    loop_start -> WHILE (a whole pass of U steps fits before the last step): U steps, loop_step_done
    -> the steps left over -> last_step_done

(``loop_start``, ``loop_step_done``, ``last_step_done``: the single device loop's kernels, the same
control array layout, control_layout.cuh).  The host writes the stretch's length and first step
before the launch and reads the control array once after it (one synchronisation per stretch):
steps completed, batched builds.  Per system the device keeps its steps since its last build, its
builds and the largest counts of its last ``CAPACITY_WINDOW`` builds; they go to the members'
neighbour lists at the stop (``NeighborList.record_builds``), as the host path's build log does.

A build whose rows overflow the storage freezes the launch (``control[0]``, reason 1; every later
kernel returns at once): the host then grows the storage as the host path does
(``BatchedEngine.lists_that_fit``: each overflowing member's capacity by ``capacity_for``), lists
the flagged systems again, records the build and finishes that step, and launches the rest of the
stretch (the graphs are captured again for the new storage).

The kernels, their operands and their order per atom are the host path's, so each system's bits are
the host path's and its own alone (the tests: ``tests/test_ensemble.py``, ``-m cuda``).  The Langevin
noise's step number comes from the device (the base the host writes, the loop's completed steps and
the step's place in its pass), so a stretch is one graph whatever its first step; a thermostat target
that ramps within a run changes the noise factors every step, which the graph does not: such runs stay
host-stepped.
"""

from __future__ import annotations

import numpy as np

from .conditional_graph import GraphChain
from .neighbors.counting_sort import CountingSortBuffers, enqueue_counting_sort
from .neighbors.scan import CapturableScan
from .neighbors.verlet import CAPACITY_WINDOW
from .step_graph import BUILDS, FROZEN, LOOP_DONE, LOOP_STEPS

#: threads of the one-block per-system kernels (batch_decide_rebuild, batch_build_done)
SYSTEM_THREADS = 256


def loop_plan(n_steps: int, unroll: int) -> tuple:
    """``(passes, left)``: a launch of ``n_steps`` (>= 1) runs ``passes`` passes of the WHILE node's
    ``unroll`` steps, then ``left + 1`` steps (the last with the energies), as loop_start and
    loop_step_done decide on the device (a pass runs while it ends before the last step)."""
    if n_steps < 1 or unroll < 1:
        raise ValueError(f"a launch runs >= 1 steps in passes of >= 1, got {n_steps} and {unroll}")
    left = (n_steps - 1) % unroll
    return (n_steps - 1) // unroll, left


def ring_counts(ring_row, n_builds: int, size: int = CAPACITY_WINDOW) -> list:
    """The largest counts of the last ``min(n_builds, size)`` builds, oldest first, from a system's
    ring (build ``b``'s count at ``ring_row[b % size]``, batch_build_done)."""
    return [int(ring_row[b % size]) for b in range(max(0, n_builds - size), n_builds)]


class BatchStepGraph:
    """The device loop of a GPU :class:`~pycumd.batch_engine.BatchedEngine` (see the module docstring).

    Parameters
    ----------
    engine : BatchedEngine
        On the GPU.  Raises :class:`~pycumd.conditional_graph.ConditionalGraphUnavailable` on a
        driver without conditional graph nodes (before CUDA 12.4).
    unroll : int
        Steps per pass of the WHILE node (each pass ends with one counting kernel).

    Attributes
    ----------
    launches : int
        Graph launches (one per stretch, one more after each overflow).
    builds : int
        Batched builds (of one or more systems) run by this loop.
    overflows : int
        Builds whose storage overflowed (finished on the host).
    """

    def __init__(self, engine, unroll: int = 4):
        GraphChain.create().close()              # ConditionalGraphUnavailable on an old driver, before any work
        self.engine = e = engine
        self.cp = cp = engine.backend.xp
        self.unroll = int(unroll)
        S, N = engine.n_systems, engine.n_atoms
        self.stream = cp.cuda.Stream(non_blocking=False)
        module = engine.backend.kernel_module("step_control.cu", {"BATCH": 1})
        self.kernels = {name: module.get_function(name) for name in (
            "loop_start", "loop_step_done", "last_step_done", "batch_decide_rebuild", "batch_build_done")}
        # the per-system schedule (NeighborList's every, delay, check) and state on the device
        self.every = cp.asarray(e.every.astype(np.int32))
        self.delay = cp.asarray(e.delay.astype(np.int32))
        self.check = cp.asarray(e.check.astype(np.uint8))
        self.since = cp.zeros(S, np.int32)
        self.rebuild = cp.zeros(S, np.uint8)
        self.n_built = cp.zeros(S, np.int32)
        self.ring = cp.zeros(S * CAPACITY_WINDOW, np.uint32)
        self.step_base = cp.zeros(1, np.uint64)
        # the counting sort's buffers (kept: the captured launches name them; the bins are the engine's d_keys)
        n_bins = int(e.key_offset[-1])
        self.sort = CountingSortBuffers(*(cp.zeros(size, np.int32) for size in CountingSortBuffers.sizes(N, n_bins)))
        self.scan = CapturableScan(engine.backend, n_bins + 1, np.int32)
        self._loops: dict = {}                   # steps left over after the passes -> executable
        self._key = None                         # the list storage the loops were captured with
        self.launches = self.builds = self.overflows = 0
        with self.stream:                        # every module loaded (and the build's buffers used) before a capture
            self._enqueue_build()
        self.stream.synchronize()

    # -- the captured pieces ----------------------------------------------------------------------
    def _capture(self, enqueue):
        with self.stream:
            self.stream.begin_capture()
            enqueue()
            return self.stream.end_capture()

    def _enqueue_build(self) -> None:
        """The build of the systems flagged in ``self.rebuild`` (the host path's ``BatchedEngine.build``
        kernels, into kept buffers), then batch_build_done."""
        e = self.engine
        e.bin_keys(self.rebuild, e.d_keys)
        enqueue_counting_sort(e.backend, e.d_keys, self.sort, scan=self.scan)
        e.reorder_rebuilding(self.sort.order, self.rebuild)
        self.cp.cuda.runtime.memsetAsync(e.d_counts.data.ptr, 0, e.d_counts.nbytes, self.stream.ptr)
        e.list_kernel(e.d_keys, self.rebuild, self.sort.bin_start)
        self._build_done()

    def _build_done(self) -> None:
        e = self.engine
        self.kernels["batch_build_done"]((1,), (SYSTEM_THREADS,), (
            e.d_control, self.rebuild, e.d_counts, np.int32(e.stride()), self.since, self.n_built, self.ring,
            np.int32(CAPACITY_WINDOW), np.int32(e.n_systems)))

    def _add_step(self, chain, k: int, energy: bool, build) -> None:
        """Step ``k`` of a pass (or of the steps after the loop) in ``chain``: the half step, the
        check and the decision; the IF node of the build; forces, Langevin, final half step."""
        e = self.engine
        handle = chain.handle(default=0)

        def before():
            e.initial_half_step()
            e.moved_flags(e.d_active)
            self.kernels["batch_decide_rebuild"]((1,), (SYSTEM_THREADS,), (
                e.d_control, e.d_active, self.since, self.every, self.delay, self.check, e.d_flags, self.rebuild,
                np.int32(e.n_systems), np.uint64(handle)))

        def after():
            e.pair_forces(energy)
            if e.thermostat.any():
                e.langevin(k, steps_done=e.d_control[LOOP_DONE:LOOP_DONE + 1], step_base=self.step_base)
            e.final_half_step(k)

        chain.child(self._capture(before))
        chain.if_then(handle).child(build)
        chain.child(self._capture(after))

    def _loop(self, n_steps: int):
        """The executable for a stretch of ``n_steps`` (one per steps left over after the passes,
        made anew when the list storage changes; the length itself is read on the device)."""
        e = self.engine
        key = (e.nbr.data.ptr, e.stride())
        if key != self._key:
            self._loops.clear()
            self._key = key
        unroll = self.unroll
        _, left = loop_plan(n_steps, unroll)
        exe = self._loops.get(left)
        if exe is not None:
            return exe
        k, control, one = self.kernels, e.d_control, ((1,), (1,))
        build = self._capture(self._enqueue_build)
        root = GraphChain.create()
        again = root.handle()                    # set by loop_start and loop_step_done
        root.child(self._capture(lambda: k["loop_start"](*one, (control, np.uint64(again), np.int32(unroll)))))
        body = root.while_loop(again)
        for j in range(1, unroll + 1):
            self._add_step(body, j, False, build)
        body.child(self._capture(lambda: k["loop_step_done"](*one, (control, np.uint64(again), np.int32(unroll)))))
        for j in range(1, left + 2):
            self._add_step(root, j, j == left + 1, build)
        root.child(self._capture(lambda: k["last_step_done"](*one, (control, np.int32(left + 1)))))
        exe = self._loops[left] = root.instantiate()
        return exe

    # -- running ----------------------------------------------------------------------------------
    def advance(self, step: int, until: int) -> None:
        """Run the steps ``step + 1 .. until`` of every active system (energies at ``until``); the
        systems' steps since their builds go back to the engine (``since``) and their builds to the
        members' lists (:meth:`BatchedEngine.record_builds`)."""
        e = self.engine
        control = e.d_control
        builds = 0
        with self.stream:
            self.since.set(e.since.astype(np.int32))
            self.n_built.fill(0)
            e.d_flags.fill(0)
            while step < until:
                n = until - step
                exe = self._loop(n)
                control[LOOP_STEPS:LOOP_STEPS + 1].set(np.array([n], np.int32))
                self.step_base.set(np.array([step], np.uint64))
                exe.launch(self.stream)
                self.launches += 1
                c = control.get()
                step += int(c[LOOP_DONE])
                builds += int(c[BUILDS])          # the builds that fitted (an overflowing one is counted below)
                if c[FROZEN]:
                    step += 1
                    self._finish_overflowed_step(step, step == until)
                    builds += 1
            since, n_built = self.since.get(), self.n_built.get()
            ring = self.ring.get().reshape(e.n_systems, CAPACITY_WINDOW)
        active = e.active
        e.since[active] = since[active]
        for s in np.flatnonzero(n_built):
            e.record_builds(s, int(n_built[s]), ring_counts(ring[s], int(n_built[s])))
        self.builds += builds
        e.n_builds += builds

    def _finish_overflowed_step(self, t: int, last: bool) -> None:
        """Step ``t``'s build overflowed in the graph (its systems' rows counted, the launch frozen
        after it): the lists again with a larger storage (as the host path), the build recorded,
        then the step's forces, Langevin and final half step; the launch is unfrozen."""
        e = self.engine
        self.overflows += 1
        rebuild = self.rebuild.get() != 0
        e.d_control.fill(0)
        e.lists_that_fit(rebuild, e.d_keys, self.rebuild, self.sort.bin_start)
        self._build_done()
        e.pair_forces(last)
        if e.thermostat.any():
            e.langevin(t)
        e.final_half_step()


__all__ = ["BatchStepGraph", "loop_plan", "ring_counts"]
