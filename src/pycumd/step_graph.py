"""Blocks of ordinary NVE steps captured in a CUDA graph, with the rebuild decision on the device.

At a few tens of thousands of atoms a step is a few microseconds of GPU work per kernel, less
than the host needs to launch it, and a rebuild decision read back every step would add a full
host-device synchronisation.  So ordinary steps (no thermo, no thermostat) run as a captured
block of ``K`` steps, launched with one call::

    per step k = 1..K:  initial_integrate -> displacement check -> pair forces -> final_integrate

The displacement check sets ``control[0]`` ("frozen") when some atom has moved more than half
the skin; every later kernel of the block then returns at once, so the block stops exactly
after the initial integrate of the step that needs a rebuild, and ``control[1]`` tells which
step completed last.  The host reads the two flags once per block (the only synchronisation),
and if frozen, rebuilds the list and finishes that step the ordinary way -- the same kernels in
the same order as the step-by-step path, hence the same bits.

Blocks aim to end where the next rebuild is expected (a running mean of the interval between
rebuilds), since the launches left in a frozen block are wasted.  A graph bakes in its kernel arguments, so it is captured again when the neighbour storage is
reallocated (capacity growth); particles reordered at rebuilds keep their buffers.
"""

from __future__ import annotations


class CudaStepGraph:
    """Runs ordinary steps of a :class:`~pycumd.simulation.Simulation` in captured blocks.

    Parameters
    ----------
    sim : Simulation
    block_steps : int
        Steps per captured block (the host synchronises once per block).
    """

    def __init__(self, sim, block_steps: int = 25):
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

    @staticmethod
    def applicable(sim) -> bool:
        """Plain NVE over a neighbour list rebuilt by the displacement check, on the GPU."""
        nl = sim.neighbors
        return (sim.backend.is_gpu and sim.thermostat is None and hasattr(nl, "check")
                and nl.check and nl.every == 1 and nl.delay == 0 and nl.nbr is not None
                and type(sim.forces).__name__ == "PairForces")

    def _graph(self, k: int):
        nl = self.sim.neighbors
        key = (nl.nbr.data.ptr, nl.capacity)
        if key != self._key:
            self._graphs.clear()
            self._key = key
        graph = self._graphs.get(k)
        if graph is None:
            sim, state = self.sim, self.sim.state
            limit2 = nl.displacement_limit2
            with self.stream:
                self.stream.begin_capture()
                for step_in_block in range(1, k + 1):
                    sim.integrator.initial_integrate(state)
                    nl._impl.displacement_exceeds(state, limit2, flag=state.control)
                    sim.forces.compute(state, nl, False)
                    sim.integrator.final_integrate(state, step_in_block)
                graph = self.stream.end_capture()
            self._graphs[k] = graph
        return graph

    def advance(self, n_steps: int) -> int:
        """Run up to ``n_steps`` ordinary steps; return how many were completed (>= 1)."""
        sim, state, nl = self.sim, self.sim.state, self.sim.neighbors
        # a block that freezes early wastes its remaining (no-op) launches: aim at the expected rebuild
        expected = int(round(self._interval)) - self._since_build + 1
        k = min(n_steps, self.block_steps, max(expected, 2))
        graph = self._graph(k)
        state.control.fill(0)
        self.cp.cuda.get_current_stream().synchronize()
        graph.launch(self.stream)
        frozen, done = (int(x) for x in state.control.get(stream=self.stream))
        self.blocks += 1
        state.step += done
        if not frozen:
            self._since_build += done
            return done
        # The displacement check of step `done + 1` fired after its initial integrate: finish it here.
        self.frozen_blocks += 1
        state.control.fill(0)
        state.step += 1
        self._interval = 0.8 * self._interval + 0.2 * (self._since_build + done + 1)
        self._since_build = 0
        nl.build(state)
        sim.forces.compute(state, nl, False)
        sim.integrator.final_integrate(state)
        return done + 1
