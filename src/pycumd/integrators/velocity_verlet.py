"""Velocity Verlet: ``v += dt/2 f/m; x += dt v; (forces); v += dt/2 f/m``."""

from __future__ import annotations

import numba
import numpy as np

from ..composite import ff_parts
from ..contracts import IntegratorBase
from ..precision import c_type_name

BLOCK = 128


@numba.njit(inline="always")
def initial_integrate_atom(i, positions, velocities, forces, mass, dtf, dtv):
    """Atom i's initial half step ``v += dtf/m f; x += dtv v`` (the one place of the CPU's arithmetic:
    the single-system kernel and the batched one, :mod:`pycumd.batch_engine`, call it)."""
    dtfm = dtf / mass[i]
    for d in range(3):
        v = velocities[i, d] + dtfm * forces[i, d]
        velocities[i, d] = v
        positions[i, d] += dtv * v


@numba.njit(inline="always")
def final_integrate_atom(i, velocities, forces, mass, dtf):
    """Atom i's final half step ``v += dtf/m f``."""
    dtfm = dtf / mass[i]
    for d in range(3):
        velocities[i, d] += dtfm * forces[i, d]


@numba.njit(parallel=True, cache=True)
def _initial_integrate_cpu(positions, velocities, forces, mass, dtf, dtv):
    for i in numba.prange(positions.shape[0]):
        initial_integrate_atom(i, positions, velocities, forces, mass, dtf, dtv)


@numba.njit(parallel=True, cache=True)
def _final_integrate_cpu(velocities, forces, mass, dtf):
    for i in numba.prange(velocities.shape[0]):
        final_integrate_atom(i, velocities, forces, mass, dtf)


class VelocityVerlet(IntegratorBase):
    """NVE velocity Verlet integrator, optionally with a thermostat.

    Parameters
    ----------
    dt : float, optional
        Time step (time units); defaults to the unit system's (LJ 0.005 tau, metal 0.001 ps).
    thermostat : Langevin or NoseHoover, optional
    barostat : MTKBarostat or CRescale, optional
        Constant pressure (:mod:`pycumd.integrators.barostats`); it runs the thermostat's hooks in
        its own order and becomes :attr:`thermostat` (the object whose hooks the simulation calls).
    """

    #: GPU: ``final_then_initial_integrate(state, step_in_block)``, the final half
    #: step of one step and the initial half step of the next in one kernel (the captured step
    #: blocks use it; the same bits as the two calls); None where there is none
    final_then_initial_integrate = None
    #: GPU, not composite: ``final_then_initial_integrate_check(state, step_in_block, limit2, image=None,
    #: rebuild=None)``, the same two half steps doing also the displacement check (``limit2``; its
    #: flag to the step-control array's [6]) and, with ``image`` (mixed precision), writing the forces'
    #: fixed-point image of the new positions (integrate.cu); with ``rebuild`` (a conditional handle
    #: of the device loop, :mod:`pycumd.step_graph`) the kernel's last block sets that IF node's
    #: condition from the check, as ``decide_rebuild`` would; else None
    final_then_initial_integrate_check = None

    def __init__(self, dt: float | None = None, thermostat=None, barostat=None):
        if dt is not None and not dt > 0:
            raise ValueError(f"time step must be positive, got {dt}")
        self.dt = dt
        self.barostat = barostat
        self.thermostat = thermostat if barostat is None else barostat.couple(thermostat)

    def bind(self, backend, precision, units) -> None:
        """Fix the time step and pick the kernels for a backend (called by Simulation)."""
        if self.dt is None:
            self.dt = units.dt
        self.backend = backend
        self.dtf = 0.5 * self.dt * units.ftm2v
        self.final_then_initial_integrate = None
        real = precision.state_dtype
        if precision.composite:
            self._bind_composite(backend, precision)
            self._bind_barostat(precision)
            return
        if backend.is_gpu:
            c = precision.cuda_defines
            mod = backend.kernel_module("integrators/integrate.cu",
                                        {"real_t": c["real_t"], "accum_t": c["accum_t"],
                                         "at_build_t": c_type_name(precision.at_build_dtype(True))},
                                        options=precision.cuda_options)
            k1, k2 = mod.get_function("initial_integrate"), mod.get_function("final_integrate")
            k12 = mod.get_function("final_then_initial_integrate")

            def initial(state):
                n = state.n_atoms
                k1(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (self.control, state.positions, state.velocities, state.forces,
                   state.per_atom_mass, np.int32(n), real(self.dtf), real(self.dt)))

            def final(state, step_in_block=0):
                n = state.n_atoms
                k2(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (self.control, np.int32(step_in_block), state.velocities, state.forces,
                   state.per_atom_mass, np.int32(n), real(self.dtf)))

            def final_then_initial(state, step_in_block):
                n = state.n_atoms
                k12(((n + BLOCK - 1) // BLOCK,), (BLOCK,), (self.control, np.int32(step_in_block), state.positions,
                    state.velocities, state.forces, state.per_atom_mass, np.int32(n), real(self.dtf), real(self.dt)))
            self.final_then_initial_integrate = final_then_initial
            # [image][decide]: the kernels with mixed's image, and with the next step's rebuild decision
            k12c = [[mod.get_function(f"final_then_initial_integrate_{kind}{decide}")
                     if kind == "check" or real is np.float64 else None for decide in ("", "_decide")]
                    for kind in ("check", "image")]

            def final_then_initial_check(state, step_in_block, limit2, image=None, rebuild=None):
                n = state.n_atoms
                L = np.asarray(state.box_lengths, dtype=np.float64)
                args = (self.control, np.int32(step_in_block), state.positions, state.velocities, state.forces,
                        state.per_atom_mass,
                        state.mass_of_type if state.mass_of_type is not None else np.uint64(0),
                        np.int32(n), real(self.dtf), real(self.dt), state.positions_at_build,
                        *[real(x) for x in L], *[real(x) for x in 1.0 / L], real(limit2))
                if image is not None:
                    args += (image, *[np.float64(2.0**32 / x) for x in L])
                if rebuild is not None:
                    args += (np.uint64(rebuild),)
                kernel = k12c[image is not None][rebuild is not None]
                kernel(((n + BLOCK - 1) // BLOCK,), (BLOCK,), args)
            self.final_then_initial_integrate_check = final_then_initial_check
        else:
            def initial(state):
                _initial_integrate_cpu(state.positions, state.velocities, state.forces,
                                       state.per_atom_mass, self.dtf, self.dt)

            def final(state, step_in_block=0):
                _final_integrate_cpu(state.velocities, state.forces, state.per_atom_mass, self.dtf)
        self.initial_integrate = initial
        self.final_integrate = final

        def scale(state, factor):
            state.velocities *= state.velocities.dtype.type(factor)
        self.scale_velocities = scale
        self._bind_barostat(precision)

    def _bind_barostat(self, precision) -> None:
        """A barostat replaces the initial half step by its own (box scaling inside it)."""
        if self.barostat is not None:
            self.barostat.bind_integrator(self, precision)

    def _bind_composite(self, backend, precision) -> None:
        """The float-float kernels (``integrate.cu`` with COMPOSITE): dtf and dt as composite numbers."""
        c = precision.cuda_defines
        mod = backend.kernel_module("integrators/integrate.cu",
                                    {"real_t": c["real_t"], "accum_t": c["accum_t"], "COMPOSITE": 1},
                                    options=precision.cuda_options)
        k1, k2, k3, k12 = (mod.get_function(f"{name}_composite") for name in
                           ("initial_integrate", "final_integrate", "scale_velocities", "final_then_initial_integrate"))
        dtf, dtv = ff_parts(self.dtf), ff_parts(self.dt)

        def grid(n):
            return ((n + BLOCK - 1) // BLOCK,)

        def initial(state):
            n, lo = state.n_atoms, state.lo
            k1(grid(n), (BLOCK,), (self.control, state.positions, lo["positions"], state.velocities,
                                   lo["velocities"], state.forces, lo["forces"], state.per_atom_mass,
                                   lo["per_atom_mass"], np.int32(n), *dtf, *dtv))

        def final(state, step_in_block=0):
            n, lo = state.n_atoms, state.lo
            k2(grid(n), (BLOCK,), (self.control, np.int32(step_in_block), state.velocities, lo["velocities"],
                                   state.forces, lo["forces"], state.per_atom_mass, lo["per_atom_mass"],
                                   np.int32(n), *dtf))

        def final_then_initial(state, step_in_block):
            n, lo = state.n_atoms, state.lo
            k12(grid(n), (BLOCK,), (self.control, np.int32(step_in_block), state.positions, lo["positions"],
                                    state.velocities, lo["velocities"], state.forces, lo["forces"],
                                    state.per_atom_mass, lo["per_atom_mass"], np.int32(n), *dtf, *dtv))
        self.final_then_initial_integrate = final_then_initial

        def scale(state, factor):
            n = state.n_atoms
            k3(grid(3 * n), (BLOCK,), (state.velocities, state.lo["velocities"], np.int32(n), *ff_parts(factor)))

        self.initial_integrate, self.final_integrate, self.scale_velocities = initial, final, scale

    def describe(self) -> str:
        text = f"velocity Verlet, dt = {self.dt}"
        return text + (f", {self.thermostat.describe()}" if self.thermostat else " (NVE)")
