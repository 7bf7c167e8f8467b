"""Nose-Hoover chain thermostat, as LAMMPS ``fix nvt temp T0 T1 Tdamp`` (defaults tchain 3, tloop 1).

The chain (Martyna, Tuckerman and Klein 1996) acts on the velocities at the start and the end
of each velocity Verlet step, in LAMMPS' order (``FixNH::nhc_temp_integrate``): half-update the
chain velocities from the outermost inwards, scale the particle velocities by
``exp(-dt/2 * eta_dot[0])``, update the chain positions, then half-update the chain velocities
from the innermost outwards.  Masses: ``Q_0 = dof k_B T / omega^2``, ``Q_k = k_B T / omega^2``
with ``omega = 1 / Tdamp``.  The chain state lives on the host (a few scalars); the kinetic
energy it needs is one reduction per half step.
"""

from __future__ import annotations

import math

import numpy as np

from ..contracts import StepHooksBase
from .langevin import _temperature_pair


class NoseHoover(StepHooksBase):
    """Nose-Hoover chain thermostat (see module docstring).

    Parameters
    ----------
    temperature : float or (float, float)
        Target temperature (temperature units), or (start, stop) ramped over a run.
    damping : float
        ``Tdamp`` (time units): the period of the thermostat's oscillation is about this; LAMMPS
        recommends about 100 time steps.
    chain : int
        Chain length (LAMMPS ``tchain``, default 3).
    """

    #: its chain sees the kinetic energy summed over the ranks (DistributedBookkeeping)
    runs_over_ranks = True
    #: replica exchange resets its target (reset_target)
    has_target_temperature = True

    def __init__(self, temperature, damping: float, chain: int = 3):
        self.t_start, self.t_stop = _temperature_pair(temperature)
        if not damping > 0:
            raise ValueError(f"nvt damping must be positive, got {damping}")
        if chain < 1:
            raise ValueError(f"nvt chain length must be >= 1, got {chain}")
        self.damping, self.chain = float(damping), int(chain)
        self.eta = np.zeros(chain)
        self.eta_dot = np.zeros(chain + 1)
        self.eta_dotdot = np.zeros(chain)

    def bind(self, sim) -> None:
        self._sim = sim
        # all ranks' atoms (the kinetic energy is summed over them), less the constrained ones (fix shake)
        self._dof = sim.degrees_of_freedom()
        self._t_current = self._temperature(sim)
        t_target = self.target(sim)
        self._set_masses(sim.units.boltz, t_target)
        kT = sim.units.boltz * t_target
        for k in range(1, self.chain):
            self.eta_dotdot[k] = (self.eta_mass[k - 1] * self.eta_dot[k - 1] ** 2 - kT) / self.eta_mass[k]

    def _set_masses(self, boltz, t_target):
        omega2 = (1.0 / self.damping) ** 2
        self.eta_mass = np.full(self.chain, boltz * t_target / omega2)
        self.eta_mass[0] = self._dof * boltz * t_target / omega2

    def _temperature(self, sim) -> float:
        return 2.0 * sim.kinetic_energy() / (self._dof * sim.units.boltz)

    def reset_target(self, temperature: float) -> None:
        """Hold ``temperature`` from now on, start and stop (LAMMPS ``reset_target``: replica exchange)."""
        self.t_start = self.t_stop = float(temperature)

    def target(self, sim) -> float:
        return self.t_start + (self.t_stop - self.t_start) * sim.run_fraction()

    def _chain_half_step(self, sim) -> None:
        boltz = sim.units.boltz
        dt = sim.integrator.dt
        dthalf, dt4, dt8 = 0.5 * dt, 0.25 * dt, 0.125 * dt
        t_target = self.target(sim)
        self._set_masses(boltz, t_target)
        ke_target = self._dof * boltz * t_target
        m, ed, edd = self.eta_mass, self.eta_dot, self.eta_dotdot
        edd[0] = (self._dof * boltz * self._t_current - ke_target) / m[0]
        for k in range(self.chain - 1, 0, -1):
            f = math.exp(-dt8 * ed[k + 1])
            ed[k] = (ed[k] * f + edd[k] * dt4) * f
        f = math.exp(-dt8 * ed[1]) if self.chain > 1 else 1.0
        ed[0] = (ed[0] * f + edd[0] * dt4) * f
        scale = math.exp(-dthalf * ed[0])
        sim.integrator.scale_velocities(sim.state, scale)
        self._t_current *= scale * scale
        edd[0] = (self._dof * boltz * self._t_current - ke_target) / m[0]
        self.eta += dthalf * ed[:self.chain]
        ed[0] = (ed[0] * f + edd[0] * dt4) * f
        for k in range(1, self.chain):
            f = math.exp(-dt8 * ed[k + 1])
            edd[k] = (m[k - 1] * ed[k - 1] ** 2 - boltz * t_target) / m[k]
            ed[k] = (ed[k] * f + edd[k] * dt4) * f

    def begin_step(self, sim) -> None:
        self._chain_half_step(sim)

    def post_force(self, sim) -> None:
        pass

    def end_step(self, sim) -> None:
        self._t_current = self._temperature(sim)
        self._chain_half_step(sim)

    def checkpoint_state(self) -> dict:
        """The chain's variables (what :meth:`restore_checkpoint_state` needs after :meth:`bind`)."""
        return {"eta": self.eta.tolist(), "eta_dot": self.eta_dot.tolist(), "eta_dotdot": self.eta_dotdot.tolist(),
                "eta_mass": self.eta_mass.tolist(), "t_current": self._t_current}

    def restore_checkpoint_state(self, state: dict) -> None:
        self.eta, self.eta_dot = np.array(state["eta"]), np.array(state["eta_dot"])
        self.eta_dotdot, self.eta_mass = np.array(state["eta_dotdot"]), np.array(state["eta_mass"])
        self._t_current = float(state["t_current"])

    def restart_state(self) -> dict:
        """What LAMMPS ``FixNH::pack_restart_data`` stores of the chain: its length, positions and
        velocities (masses and accelerations are set again when a run starts, :meth:`bind`)."""
        return {"chain": self.chain, "eta": self.eta.tolist(), "eta_dot": self.eta_dot[:self.chain].tolist()}

    def load_restart_state(self, state: dict) -> None:
        """Take a :meth:`restart_state` before the first run (LAMMPS ``FixNH::restart``): a chain of
        another length is left at zero, as LAMMPS does."""
        if int(state["chain"]) != self.chain:
            return
        self.eta = np.array(state["eta"], dtype=np.float64)
        self.eta_dot[:self.chain] = state["eta_dot"]

    def describe(self) -> str:
        return f"Nose-Hoover chain({self.chain}) T = {self.t_start}->{self.t_stop}, damp = {self.damping}"
