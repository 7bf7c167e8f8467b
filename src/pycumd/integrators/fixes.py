"""Per-step LAMMPS fixes beside the integrator: ``temp/rescale``, ``momentum``, ``recenter``.

Each is a thermostat-like object (``bind``, ``begin_step``, ``post_force``, ``end_step``,
``checkpoint_state``, ``restore_checkpoint_state``, ``describe``) and :class:`FixChain` hands the
simulation's hooks to several of them in the order they were defined, so that a thermostat
(Nose-Hoover, Langevin) and these fixes run together: ``VelocityVerlet(dt, FixChain([...]))``.
They act on all atoms (LAMMPS group ``all``) with array operations of the backend (CPU or GPU); a
simulation with fixes takes the host-driven step path (no CUDA-graph blocks), unless every member of the
chain is capturable (``StepHooks.capturable``: a chain holding only Langevin).

* :class:`TempRescale` (``fix temp/rescale N Tstart Tstop window fraction``, ``FixTempRescale::
  end_of_step``): every N steps, if ``|T - Ttarget| > window``, scale the velocities by
  ``sqrt(T'/T)`` with ``T' = T - fraction (T - Ttarget)``; ``Ttarget`` ramps over the run.
* :class:`Momentum` (``fix momentum N linear xflag yflag zflag [rescale]``, ``FixMomentum::
  end_of_step``): every N steps remove the centre-of-mass velocity in the flagged directions;
  ``rescale`` keeps the kinetic energy.
* :class:`Recenter` (``fix recenter x y z``, ``FixRecenter::initial_integrate``): shift every atom so
  that the centre of mass (unwrapped positions) is at the target, in the directions given (None:
  not that direction; ``"INIT"``: the centre at the start of the run). LAMMPS shifts after the
  position update of the step; pycumd shifts at the end of the step: forces do not change under a
  uniform shift, so the positions at the end of each step are the same.
"""

from __future__ import annotations

import math

import numpy as np

from ..contracts import StepHooksBase

def _check_plain_precision(sim, name: str) -> None:
    if sim.state.lo is not None:
        raise NotImplementedError(f"fix {name} is not implemented in composite precision")


def _masses_velocities(sim):
    s = sim.state
    return s.per_atom_mass, s.velocities


def _temperature(sim) -> float:
    """The temperature of compute temp (its dof less the constrained ones)."""
    return sim.temperature()


class TempRescale(StepHooksBase):
    """LAMMPS ``fix temp/rescale`` (see module docstring).

    Parameters
    ----------
    every : int
        N, steps between rescalings.
    t_start, t_stop : float
        Target temperature at the start and the end of a run (ramped linearly).
    window : float
        Rescale only if the temperature is farther than this from the target.
    fraction : float
        Fraction of the difference removed (1: to the target).
    """

    def __init__(self, every: int, t_start: float, t_stop: float, window: float, fraction: float):
        if every <= 0:
            raise ValueError(f"fix temp/rescale: N must be > 0, got {every}")
        if t_start <= 0 or t_stop <= 0:
            raise ValueError("fix temp/rescale: temperatures must be > 0")
        self.every, self.t_start, self.t_stop = int(every), float(t_start), float(t_stop)
        self.window, self.fraction = float(window), float(fraction)

    def bind(self, sim) -> None:
        _check_plain_precision(sim, "temp/rescale")

    def end_step(self, sim) -> None:
        if sim.step % self.every:
            return
        t_current = _temperature(sim)
        if sim.state.n_atoms < 2 or t_current == 0.0:
            return
        t_target = self.t_start + sim.run_fraction() * (self.t_stop - self.t_start)
        if abs(t_current - t_target) > self.window:
            t_target = t_current - self.fraction * (t_current - t_target)
            sim.state.velocities *= math.sqrt(t_target / t_current)

    def describe(self) -> str:
        return (f"temp/rescale every {self.every}: T = {self.t_start}->{self.t_stop}, window {self.window}, "
                f"fraction {self.fraction}")


class Momentum(StepHooksBase):
    """LAMMPS ``fix momentum N linear xflag yflag zflag [rescale]`` (see module docstring)."""

    def __init__(self, every: int, flags=(True, True, True), rescale: bool = False):
        if every <= 0:
            raise ValueError(f"fix momentum: N must be > 0, got {every}")
        self.every, self.flags, self.rescale = int(every), tuple(bool(f) for f in flags), bool(rescale)

    def bind(self, sim) -> None:
        _check_plain_precision(sim, "momentum")

    def end_step(self, sim) -> None:
        if sim.step % self.every:
            return
        zero_momentum(sim, self.flags, self.rescale)

    def describe(self) -> str:
        axes = "".join(a for a, f in zip("xyz", self.flags) if f)
        return f"momentum every {self.every} ({axes}{', rescale' if self.rescale else ''})"


def zero_momentum(sim, flags=(True, True, True), rescale: bool = False) -> None:
    """Remove the centre-of-mass velocity (mass-weighted) in the flagged directions, in place."""
    m, v = _masses_velocities(sim)
    ke_before = sim.kinetic_energy() if rescale else 0.0
    total = float(m.sum())
    if total <= 0:
        return
    vcm = (m[:, None] * v).sum(axis=0) / total
    mask = sim.backend.xp.asarray(np.array(flags, dtype=np.float64), dtype=v.dtype)
    v -= vcm * mask
    if rescale:
        ke_after = sim.kinetic_energy()
        if ke_after > 0:
            v *= math.sqrt(ke_before / ke_after)


class Recenter(StepHooksBase):
    """LAMMPS ``fix recenter x y z`` (see module docstring).

    Parameters
    ----------
    target : 3 values, each a float (box units), ``"INIT"`` or None (``NULL``)
    """

    def __init__(self, target):
        if len(target) != 3:
            raise ValueError("fix recenter needs 3 values")
        for t in target:
            if not (t is None or t == "INIT" or isinstance(t, (int, float))):
                raise ValueError(f"fix recenter: bad value {t!r}")
        self.target = list(target)

    def _centre(self, sim) -> np.ndarray:
        s = sim.state
        xp = sim.backend.xp
        lengths = xp.asarray(np.asarray(sim.box.lengths, dtype=np.float64))
        unwrapped = s.positions[:, :3].astype(xp.float64) + s.images.astype(xp.float64) * lengths
        m = s.per_atom_mass.astype(xp.float64)
        centre = (m[:, None] * unwrapped).sum(axis=0) / m.sum()
        return np.asarray(centre.tolist()) + np.asarray(sim.box.origin, dtype=np.float64)

    def bind(self, sim) -> None:
        _check_plain_precision(sim, "recenter")
        self._init = self._centre(sim)

    def end_step(self, sim) -> None:
        centre = self._centre(sim)
        shift = np.zeros(3)
        for d, t in enumerate(self.target):
            if t is not None:
                shift[d] = (self._init[d] if t == "INIT" else t) - centre[d]
        s = sim.state
        s.positions[:, :3] += sim.backend.xp.asarray(shift, dtype=s.positions.dtype)

    def checkpoint_state(self) -> dict:
        return {"init": [float(x) for x in self._init]}

    def restore_checkpoint_state(self, state: dict) -> None:
        self._init = np.asarray(state["init"])

    def describe(self) -> str:
        return "recenter " + " ".join("NULL" if t is None else str(t) for t in self.target)


class FixChain(StepHooksBase):
    """Several thermostat-like objects run as one, in order (see module docstring)."""

    def __init__(self, members):
        self.members = list(members)
        if not self.members:
            raise ValueError("FixChain needs at least one member")

    def bind(self, sim) -> None:
        if sim.state.lo is not None and not self.runs_in_composite:
            names = ", ".join(m.describe() for m in self.members if not m.runs_in_composite)
            raise NotImplementedError(f"composite precision is not implemented for {names}")
        for m in self.members:
            m.bind(sim)

    @property
    def needs_virial(self) -> bool:
        return any(m.needs_virial for m in self.members)

    @property
    def runs_over_ranks(self) -> bool:
        return all(m.runs_over_ranks for m in self.members)

    @property
    def runs_in_composite(self) -> bool:
        return all(m.runs_in_composite for m in self.members)

    @property
    def capturable(self) -> bool:
        return all(m.capturable for m in self.members)

    def _require_capturable(self) -> None:
        if not self.capturable:
            names = ", ".join(m.describe() for m in self.members if not m.capturable)
            raise NotImplementedError(f"{names} does not run inside CUDA-graph steps")

    def prepare_capture(self, sim) -> None:
        self._require_capturable()
        for m in self.members:
            m.prepare_capture(sim)

    def capture_post_force(self, sim, step_in_pass: int, in_loop: bool) -> None:
        self._require_capturable()
        for m in self.members:
            m.capture_post_force(sim, step_in_pass, in_loop)

    def off_terms(self, system) -> dict:
        out: dict = {}
        for m in self.members:
            for kind, mask in m.off_terms(system).items():
                out[kind] = mask if kind not in out else (out[kind] | mask)
        return out

    @property
    def constrained_dof(self) -> int:
        return sum(m.constrained_dof for m in self.members)

    def constraint_virial(self):
        parts = [w for w in (m.constraint_virial() for m in self.members) if w is not None]
        return sum(parts[1:], parts[0]) if parts else None

    def setup(self, sim) -> None:
        for m in self.members:
            m.setup(sim)

    def begin_step(self, sim) -> None:
        for m in self.members:
            m.begin_step(sim)

    def post_force(self, sim) -> None:
        for m in self.members:
            m.post_force(sim)

    def end_step(self, sim) -> None:
        for m in self.members:
            m.end_step(sim)

    def checkpoint_state(self) -> dict:
        return {"members": [m.checkpoint_state() for m in self.members]}

    def restore_checkpoint_state(self, state: dict) -> None:
        for m, s in zip(self.members, state["members"]):
            m.restore_checkpoint_state(s)

    def describe(self) -> str:
        return ", ".join(m.describe() for m in self.members)


__all__ = ["FixChain", "Momentum", "Recenter", "TempRescale", "zero_momentum"]
