"""Langevin thermostat in LAMMPS ``fix langevin`` form (friction and noise added to the forces).

``f_i += -(m_i / damp) v_i / ftm2v + sqrt(24 k_B T m_i / (damp dt mvv2e)) / ftm2v * (u - 1/2)``

with ``u`` uniform in [0, 1).  The noise comes from a counter-based generator keyed by
``(seed, step, atom id, component)``: the same numbers on the CPU and the GPU, whatever the
order of the atoms.  Combined with :class:`VelocityVerlet` it samples the canonical ensemble
at temperature ``T``; ``damp`` (time units) is the relaxation time of the velocities.
"""

from __future__ import annotations

import numba
import numpy as np

from ..contracts import StepHooksBase
BLOCK = 128
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@numba.njit(inline="always")
def _mix64(z):
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


@numba.njit(cache=True)
def counter_uniform(seed, step, atom_id, component):
    """Uniform [0, 1) from (seed, step, id, component): CPU twin of ``counter_rng.cuh``."""
    h = _mix64(np.uint64(seed) + _GOLDEN)
    h = _mix64(h ^ (np.uint64(step) + _GOLDEN))
    h = _mix64(h ^ (np.uint64(atom_id) * np.uint64(4) + np.uint64(component)))
    return float(h >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@numba.njit(inline="always")
def langevin_atom(i, velocities, forces, mass, ids, gamma1, gamma2, seed, step):
    """Atom i's friction and noise added to its force (the one place of the CPU's arithmetic: the
    single-system kernel and the batched one, :mod:`pycumd.batch_engine`, call it)."""
    g1 = gamma1 * mass[i]
    g2 = gamma2 * np.sqrt(mass[i])
    for d in range(3):
        u = counter_uniform(seed, step, ids[i], d)
        forces[i, d] += g1 * velocities[i, d] + g2 * (u - 0.5)


@numba.njit(parallel=True, cache=True)
def _langevin_forces_cpu(velocities, forces, mass, ids, gamma1, gamma2, seed, step):
    for i in numba.prange(velocities.shape[0]):
        langevin_atom(i, velocities, forces, mass, ids, gamma1, gamma2, seed, step)


class Langevin(StepHooksBase):
    """Langevin thermostat (see module docstring).

    Parameters
    ----------
    temperature : float or (float, float)
        Target temperature (temperature units), or (start, stop) ramped linearly over a run.
    damping : float
        Relaxation time ``damp`` (time units).
    seed : int
        Positive seed of the noise.
    """

    #: its noise is keyed by atom id and step, so each rank draws its own atoms' numbers
    runs_over_ranks = True
    #: replica exchange resets its target (reset_target)
    has_target_temperature = True
    #: its noise kernel works in float64
    runs_in_composite = False
    #: its post_force runs inside the CUDA-graph step (:mod:`pycumd.step_graph`): the captured kernel reads
    #: the step from the step-control array and the factors of the temperature ramp from device memory
    #: (:meth:`prepare_capture`), and computes the same bits as the host-driven step's kernel
    capturable = True

    def __init__(self, temperature, damping: float, seed: int):
        self.t_start, self.t_stop = _temperature_pair(temperature)
        if not damping > 0:
            raise ValueError(f"langevin damping must be positive, got {damping}")
        if seed <= 0:
            raise ValueError(f"langevin seed must be a positive integer, got {seed}")
        self.damping, self.seed = float(damping), int(seed)
        self._params = None              # GPU: the captured kernel's parameters (prepare_capture)
        self._params_host = None
        self._captured = None

    def bind(self, sim) -> None:
        u = sim.units
        self._gamma1 = -1.0 / self.damping / u.ftm2v
        self._gamma2_per_sqrt_t = np.sqrt(24.0 * u.boltz / self.damping / sim.integrator.dt / u.mvv2e) / u.ftm2v
        if sim.backend.is_gpu:
            c = sim.precision.cuda_defines
            k = sim.backend.kernel_module("integrators/integrate.cu",
                                          {"real_t": c["real_t"], "accum_t": c["accum_t"]},
                                          options=sim.precision.cuda_options).get_function("langevin_forces")

            def apply(state, g1, g2):
                n = state.n_atoms
                k(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (state.velocities, state.forces, state.per_atom_mass,
                  state.ids, np.int32(n), np.float64(g1), np.float64(g2), np.uint64(self.seed),
                  np.uint64(state.step)))
        else:
            def apply(state, g1, g2):
                _langevin_forces_cpu(state.velocities, state.forces, state.per_atom_mass, state.ids,
                                     g1, g2, self.seed, state.step)
        self._apply = apply

    def prepare_capture(self, sim) -> None:
        """Before graph steps are captured or launched (:mod:`pycumd.step_graph`, outside a capture): compile
        the captured kernel (once) and write what it reads besides the step number to its parameter array,
        8 words (integrate.cu's langevin_forces_captured): the seed, the ramp's start step and length
        (:meth:`Simulation.ramp_bounds`: the run's, or ``run ... start/stop``), gamma1, gamma2 / sqrt(T)
        and the ramp's start and stop temperatures, as the host path computes them in
        :meth:`noise_factors`.  Copied to the device only when they changed (a new run, a new target)."""
        start, stop = sim.ramp_bounds()
        words = np.zeros(8, np.uint64)
        words[0] = self.seed
        words[1:3] = np.asarray([start, stop - start], np.int64).view(np.uint64)
        words[3:7] = np.asarray([self._gamma1, self._gamma2_per_sqrt_t, self.t_start, self.t_stop],
                                np.float64).view(np.uint64)
        c = sim.precision.cuda_defines
        defines = {"real_t": c["real_t"], "accum_t": c["accum_t"], "LANGEVIN_CAPTURED": 1}
        if self._captured is None or self._captured[0] != (defines, sim.precision.cuda_options):
            module = sim.backend.kernel_module("integrators/integrate.cu", defines, options=sim.precision.cuda_options)
            self._captured = ((defines, sim.precision.cuda_options), module.get_function("langevin_forces_captured"))
            self._params, self._params_host = sim.backend.xp.zeros(8, np.uint64), None
        if self._params_host is None or not np.array_equal(words, self._params_host):
            self._params.set(words)
            sim.backend.synchronize()    # written before any launch that reads it
            self._params_host = words

    def capture_post_force(self, sim, step_in_pass: int, in_loop: bool) -> None:
        """Enqueue :meth:`post_force` of the ``step_in_pass``-th step (from 1) of a captured block (or of a
        device-loop pass, ``in_loop``: after the loop's earlier passes) for capture: the kernel reads the
        step number and the ramp from device memory (:meth:`prepare_capture`)."""
        if self._captured is None:
            raise RuntimeError("Langevin.capture_post_force before prepare_capture (the kernel and its parameters)")
        state = sim.state
        n = state.n_atoms
        self._captured[1](((n + BLOCK - 1) // BLOCK,), (BLOCK,),
                          (sim.control, np.int32(step_in_pass), np.int32(bool(in_loop)), state.velocities,
                           state.forces, state.per_atom_mass, state.ids, np.int32(n), self._params))

    def reset_target(self, temperature: float) -> None:
        """Hold ``temperature`` from now on, start and stop (LAMMPS ``reset_target``: replica exchange)."""
        self.t_start = self.t_stop = float(temperature)

    def target(self, sim) -> float:
        return self.t_start + (self.t_stop - self.t_start) * sim.run_fraction()

    def post_force(self, sim) -> None:
        self._apply(sim.state, *self.noise_factors(sim))

    #: the batched engine (:mod:`pycumd.batch_engine`) runs it: its per-system row is
    #: :meth:`noise_factors` and the seed
    in_batch = True

    def noise_factors(self, sim) -> tuple:
        """``(gamma1, gamma2)`` of this step: friction per mass (1/time, over ftm2v) and the noise
        amplitude per sqrt(mass) at the current target temperature, as the kernels take them."""
        return self._gamma1, self._gamma2_per_sqrt_t * np.sqrt(self.target(sim))

    # begin_step, end_step and the checkpoint state are the base class's (nothing to do, nothing to
    # store beyond the seed: the noise is a counter-based stream of (seed, step, atom id))

    def describe(self) -> str:
        return f"Langevin T = {self.t_start}->{self.t_stop}, damp = {self.damping}, seed = {self.seed}"


def _temperature_pair(temperature):
    pair = (temperature, temperature) if np.isscalar(temperature) else tuple(temperature)
    if len(pair) != 2 or not all(t > 0 for t in pair):
        raise ValueError(f"thermostat temperature must be positive (or a positive (start, stop)), got {temperature}")
    return float(pair[0]), float(pair[1])
