"""Energy minimisation as LAMMPS ``min_style cg|fire`` + ``minimize etol ftol maxiter maxeval``.

:class:`Minimizer` moves the atoms of a :class:`~pycumd.simulation.Simulation` (its state, neighbour
list and force evaluator, on the CPU or the GPU: the vector operations are array expressions of the
backend's array module) and stops on LAMMPS' criteria, checked in LAMMPS' order:

* ``etol``: ``|E_k - E_{k-1}| < etol * 1/2 (|E_k| + |E_{k-1}| + 1e-8)`` (energy per atom in lj
  units, as LAMMPS normalises thermo output; total energy otherwise);
* ``ftol``: ``|F|_2 < ftol`` (two-norm of the 3N-vector of forces);
* ``maxiter`` iterations (each advances the step counter by one), ``maxeval`` force evaluations;
* and the line search's own exits (not downhill, alpha zero, zero forces, quadratic factors zero).

``cg``: Polak-Ribiere conjugate gradients (restart when the direction is not downhill) with
LAMMPS' default ``linestyle quadratic`` line search: backtracking from
``alpha_max = min(1, dmax / max|h|)`` by halves until the energy falls by ``0.4 alpha F.h``, or a
secant (quadratic) projection along the search direction when the energy is well modelled
(``min_linesearch.cpp``).  ``fire``: FIRE 2.0 (Guenole et al. 2020) with LAMMPS' defaults
(Euler semi-implicit integration, ``tmax 10 tmin 0.02 delaystep 20 dtgrow 1.1 dtshrink 0.5
alpha0 0.25 alphashrink 0.99 halfstepback yes``, time step the run's ``dt``).  No atom moves more
than ``dmax`` (``min_modify dmax``, default 0.1 length units) in one step.

When a move triggers a neighbour-list build the particle arrays are reordered by cell; the
minimiser's own per-atom vectors follow by the ids, and the line search's start is put on the same
periodic image as the wrapped atoms (LAMMPS' ``fix_minimize reset_coords``).

Over MPI ranks (a decomposed :class:`~pycumd.simulation.Simulation`) each rank moves the atoms it
owns; dot products and the energy are sums over the decomposition's owner ranks, largest
components maxima over all ranks, so every rank takes the same decisions.  A build that migrates
atoms between spatial domains hands the minimiser's vectors to the atoms' new ranks (by id).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["MinimizeSettings", "MinimizeResult", "Minimizer", "STOP_REASONS"]

#: LAMMPS' stopping-criterion texts (``Min::stopstrings``)
STOP_REASONS = {"maxiter": "max iterations", "maxeval": "max force evaluations", "etol": "energy tolerance",
                "ftol": "force tolerance", "downhill": "search direction is not downhill",
                "zeroalpha": "linesearch alpha is zero", "zeroforce": "forces are zero",
                "zeroquad": "quadratic factors are zero", "maxvdotf": "max number of P<0 for FIRE"}
MIN_STYLES = ("cg", "fire")
EPS_ENERGY = 1.0e-8
# min_linesearch.cpp (quadratic)
ALPHA_MAX, ALPHA_REDUCE, BACKTRACK_SLOPE, QUADRATIC_TOL, EMACH, EPS_QUAD = 1.0, 0.5, 0.4, 0.1, 1.0e-8, 1.0e-28


@dataclass
class MinimizeSettings:
    """LAMMPS ``minimize etol ftol maxiter maxeval`` with ``min_style`` and ``min_modify dmax``.

    etol : float
        Relative energy change that stops (dimensionless, >= 0; 0 disables).
    ftol : float
        Force two-norm that stops (force units, >= 0; 0 disables).
    maxiter, maxeval : int
        Most iterations and force evaluations (> 0).
    style : {"cg", "fire"}
    dmax : float
        Largest move of an atom in one step (length units).
    """

    etol: float
    ftol: float
    maxiter: int
    maxeval: int
    style: str = "cg"
    dmax: float = 0.1

    def __post_init__(self):
        if self.style not in MIN_STYLES:
            raise ValueError(f"min_style {self.style!r} is not supported (use {' or '.join(MIN_STYLES)})")
        if self.etol < 0 or self.ftol < 0:
            raise ValueError(f"minimize etol and ftol must be >= 0, got {self.etol}, {self.ftol}")
        if int(self.maxiter) <= 0 or int(self.maxeval) <= 0:
            raise ValueError(f"minimize maxiter and maxeval must be > 0, got {self.maxiter}, {self.maxeval}")
        if not self.dmax > 0:
            raise ValueError(f"min_modify dmax must be > 0, got {self.dmax}")


@dataclass
class MinimizeResult:
    """What a minimisation did (the numbers of LAMMPS' ``Minimization stats``).

    Energies are as LAMMPS prints them (per atom in lj units); force norms in force units;
    ``max_move`` is LAMMPS' "max atom move", ``alpha_final`` times the final largest force component.
    """

    stop: str
    energy_initial: float
    energy_next_to_last: float
    energy_final: float
    iterations: int
    evaluations: int
    fnorm2_initial: float
    fnorm2_final: float
    fnorminf_initial: float
    fnorminf_final: float
    alpha_final: float
    max_move: float

    @property
    def stopping_criterion(self) -> str:
        return STOP_REASONS[self.stop]

    def describe(self) -> str:
        """LAMMPS' ``Minimization stats`` block."""
        return ("Minimization stats:\n"
                f"  Stopping criterion = {self.stopping_criterion}\n"
                "  Energy initial, next-to-last, final = \n"
                f"    {self.energy_initial:18.15g} {self.energy_next_to_last:18.15g} {self.energy_final:18.15g}\n"
                f"  Force two-norm initial, final = {self.fnorm2_initial:.8g} {self.fnorm2_final:.8g}\n"
                f"  Force max component initial, final = {self.fnorminf_initial:.8g} {self.fnorminf_final:.8g}\n"
                f"  Final line search alpha, max atom move = {self.alpha_final:.8g} {self.max_move:.8g}\n"
                f"  Iterations, force evaluations = {self.iterations} {self.evaluations}")


class Minimizer:
    """Minimises the potential energy of a simulation's atoms in place (LAMMPS ``minimize``).

    Parameters
    ----------
    simulation : Simulation
        Its positions are moved; its step counter advances by the iterations; its reporters report
        at the first and last step (and at multiples of their intervals), as LAMMPS' thermo does.
    settings : MinimizeSettings

    Examples
    --------
    >>> result = Minimizer(sim, MinimizeSettings(1e-6, 1e-8, 1000, 10000, style="fire")).run()
    >>> print(result.describe())
    """

    def __init__(self, simulation, settings: MinimizeSettings):
        if simulation.state.lo is not None:
            raise NotImplementedError("minimisation is not implemented in composite precision: use "
                                      "precision 'double' or 'mixed'")
        self.sim = simulation
        self.settings = settings
        self.xp = simulation.backend.xp
        self.decomposition = d = simulation.decomposition
        #: the ranks whose atoms are disjoint and together all atoms (sums), and all ranks (maxima)
        self.owners = simulation.comm if d is None else d.owners
        self.comm = simulation.comm
        self.n = simulation.n_atoms          # over all ranks
        self.normalize = simulation.units.normalize_thermo
        self.neval = 0
        self._vectors: dict = {}       # per-atom vectors of the minimiser, reordered with the atoms

    # -- the state as 3N vectors ---------------------------------------------------------------------
    @property
    def x(self):
        return self.sim.state.positions[:, :3]

    @property
    def f(self):
        return self.sim.state.forces

    def _dot(self, a, b) -> float:
        """``a . b`` over all atoms (summed over the owner ranks of a decomposed run)."""
        return self.owners.sum(float((a * b).sum()))

    def _abs_max(self, a) -> float:
        """``max |a|`` over all atoms (0 for none; the largest over the ranks of a decomposed run)."""
        return float(self.comm.max(float(self.xp.abs(a).max()) if a.size else 0.0))

    def _follow_build(self, ids_before) -> None:
        """Put the minimiser's vectors in the rows of their atoms after a build that reordered the
        atoms (by cell) or, over spatial domains, moved them to other ranks (by id)."""
        xp, ids, d = self.xp, self.sim.state.ids, self.decomposition
        same = len(ids) == len(ids_before) and bool((ids == ids_before).all())
        if d is None:
            if not same:
                order = xp.argsort(ids_before)
                moved = order[xp.searchsorted(ids_before[order], ids)]   # new row k was row moved[k]
                for name, v in self._vectors.items():
                    self._vectors[name] = v[moved]
            return
        if not d.comm.any(not same) or not self._vectors:
            return
        b = self.sim.backend
        mine = (b.to_host(ids_before), {name: b.to_host(v) for name, v in self._vectors.items()}) if d.owns else None
        parts = [p for p in d.comm.allgather(mine) if p is not None]
        all_ids = np.concatenate([p[0] for p in parts])
        order = np.argsort(all_ids, kind="stable")
        rows = order[np.searchsorted(all_ids[order], b.to_host(ids))]
        for name in self._vectors:
            self._vectors[name] = xp.asarray(np.concatenate([p[1][name] for p in parts])[rows])

    def energy_force(self, reset: bool) -> float:
        """Neighbour decision, forces and energy (LAMMPS ``Min::energy_force``); the energy as LAMMPS
        normalises it.  After a build, the minimiser's vectors follow the reorder and (``reset``) the
        line search's start ``x0`` moves to the wrapped atoms' periodic image."""
        sim, state, xp = self.sim, self.sim.state, self.xp
        nl = sim.neighbors
        if nl.needs_rebuild(state):
            ids_before = state.ids.copy()
            nl.build(state)
            self._follow_build(ids_before)
            if reset and "x0" in self._vectors:
                L = xp.asarray(np.asarray(state.box_lengths))
                d = self._vectors["x0"] - self.x
                self._vectors["x0"] = self.x + (d - L * xp.rint(d / L))
        sim.forces.compute(state, nl, True)
        sim.book.mark_energy_current()
        self.neval += 1
        energy = sim.book.potential_energy()
        return energy / self.n if self.normalize else energy

    def fnorm_sqr(self) -> float:
        return self._dot(self.f, self.f)

    def fnorm_inf(self) -> float:
        return self._abs_max(self.f)

    # -- the run ----------------------------------------------------------------------------------
    def run(self, report=None) -> MinimizeResult:
        """Minimise; ``report(step, final)`` (default: the simulation's due reporters) is called at
        the first step, after each iteration and at the last step."""
        sim, s = self.sim, self.settings
        nl = sim.neighbors
        policy = nl.has_rebuild_policy
        saved = (nl.every, nl.delay, nl.check) if policy else None
        if policy:                            # LAMMPS: every 1 delay 0 check yes during minimisation
            nl.every, nl.delay, nl.check = 1, 0, True
        report = report or self._report_due
        try:
            self.step0 = sim.state.step
            self.last_step = self.step0 + int(s.maxiter)
            for r in sim.reporters:
                r.begin_run(sim)
            nl.build(sim.state)
            self.ecurrent = self.energy_force(False)
            self.neval = 0                     # LAMMPS counts the evaluations after setup
            e0, f2_0, finf_0 = self.ecurrent, math.sqrt(self.fnorm_sqr()), self.fnorm_inf()
            self.eprevious = self.ecurrent
            report(self.step0, False)
            self.alpha_final = 0.0
            self.niter = 0
            stop = self._iterate_cg(report) if s.style == "cg" else self._iterate_fire(report)
            finf = self.fnorm_inf()
            result = MinimizeResult(stop, e0, self.eprevious, self.ecurrent, self.niter, self.neval, f2_0,
                                    math.sqrt(self.fnorm_sqr()), finf_0, finf, self.alpha_final,
                                    self.alpha_final * finf)
            report(sim.state.step, True)
            sim.book.check_finite()
            return result
        finally:
            if policy:
                nl.every, nl.delay, nl.check = saved

    def _report_due(self, step: int, final: bool) -> None:
        """Hand the simulation's reporters due at ``step`` one snapshot (thermo at the first and
        last step, as LAMMPS prints them)."""
        from .outputs.reporter import Snapshot

        end = step if final else self.last_step
        due = [r for r in self.sim.reporters if r.next_report(step, self.step0, end) == step]
        if due:
            d = self.decomposition
            snapshot = Snapshot(self.sim if d is None else d.report_view(self.sim))
            for r in due:
                r.report(snapshot)

    def _energy_converged(self) -> bool:
        etol = self.settings.etol
        return abs(self.ecurrent - self.eprevious) < etol * 0.5 * (abs(self.ecurrent) + abs(self.eprevious) + EPS_ENERGY)

    # -- conjugate gradients (min_cg.cpp) --------------------------------------------------------------
    def _iterate_cg(self, report) -> str:
        s, state = self.settings, self.sim.state
        self._vectors["g"] = self.f.astype(np.float64, copy=True)
        self._vectors["h"] = self._vectors["g"].copy()
        gg = self.fnorm_sqr()
        nlimit = min(2**31 - 1, 3 * self.n)
        for _ in range(int(s.maxiter)):
            state.step += 1
            self.niter += 1
            self.eprevious = self.ecurrent
            fail = self._linemin_quadratic()
            if fail:
                return fail
            if self.neval >= s.maxeval:
                return "maxeval"
            if self._energy_converged():
                return "etol"
            g, h, f = self._vectors["g"], self._vectors["h"], self.f
            ff, fg = self._dot(f, f), self._dot(f, g)
            if ff < s.ftol * s.ftol:
                return "ftol"
            beta = max(0.0, (ff - fg) / gg)                  # Polak-Ribiere
            if (self.niter + 1) % nlimit == 0:
                beta = 0.0
            gg = ff
            g[...] = f
            h[...] = g + beta * h
            if self._dot(g, h) <= 0.0:                      # not downhill: restart along the force
                h[...] = g
            report(state.step, False)
        return "maxiter"

    def _alpha_step(self, alpha: float, reset: bool) -> float:
        """``x = x0 + alpha h``, then energy and forces."""
        x0, h = self._vectors["x0"], self._vectors["h"]
        self.sim.state.positions[:, :3] = x0 + alpha * h if alpha > 0.0 else x0
        return self.energy_force(reset)

    def _linemin_quadratic(self) -> str | None:
        """LAMMPS ``MinLineSearch::linemin_quadratic``; None on success, else the stop reason."""
        h = self._vectors["h"]
        norm = self.n if self.normalize else 1
        fdothall = self._dot(self.f, h) / norm
        if fdothall <= 0.0:
            return "downhill"
        hmax = self._abs_max(h)
        if hmax == 0.0:
            return "zeroforce"
        alphamax = min(ALPHA_MAX, self.settings.dmax / hmax)
        self._vectors["x0"] = self.x.astype(np.float64, copy=True)
        eoriginal = self.ecurrent
        alpha, alphaprev, engprev, fhprev = alphamax, 0.0, eoriginal, fdothall
        while True:
            self.alpha_final = alpha           # LAMMPS reports the last alpha tried (alpha0 not included)
            self.ecurrent = self._alpha_step(alpha, True)
            fh = self._dot(self.f, self._vectors["h"]) / norm
            delfh = fh - fhprev
            if abs(fh) < EPS_QUAD or abs(delfh) < EPS_QUAD:
                self.ecurrent = self._alpha_step(0.0, False)
                return "zeroquad"
            relerr = abs(1.0 - (0.5 * (alpha - alphaprev) * (fh + fhprev) + self.ecurrent) / engprev)
            alpha0 = alpha - (alpha - alphaprev) * fh / delfh
            if relerr <= QUADRATIC_TOL and 0.0 < alpha0 < alphamax:
                self.ecurrent = self._alpha_step(alpha0, True)
                if self.ecurrent - eoriginal < EMACH:
                    return None
            de_ideal = -BACKTRACK_SLOPE * alpha * fdothall
            if self.ecurrent - eoriginal <= de_ideal:
                return None
            fhprev, engprev, alphaprev = fh, self.ecurrent, alpha
            alpha *= ALPHA_REDUCE
            self.alpha_final = alpha
            if alpha <= 0.0 or de_ideal >= -EMACH:
                self.ecurrent = self._alpha_step(0.0, False)
                return "zeroalpha"

    # -- FIRE 2.0 (min_fire.cpp) ----------------------------------------------------------------------
    def _iterate_fire(self, report) -> str:
        s, sim, state = self.settings, self.sim, self.sim.state
        dt0 = sim.integrator.dt
        dt, dtmax, dtmin = dt0, 10.0 * dt0, 0.02 * dt0
        alpha0, alphashrink, dtgrow, dtshrink, delaystep, max_negative = 0.25, 0.99, 1.1, 0.5, 20, 2000
        alpha = alpha0
        ftm2v = sim.units.ftm2v
        mass = state.per_atom_mass[:, None]
        v = state.velocities
        v[...] = 0.0
        last_negative = step_start = state.step
        negative = 0
        flagv0 = True
        for _ in range(int(s.maxiter)):
            state.step += 1
            self.niter += 1
            vdotf = self._dot(v, self.f)
            if vdotf > 0.0:
                vdotv, fdotf = self._dot(v, v), self.fnorm_sqr()
                scale1 = 1.0 - alpha
                scale2 = 0.0 if fdotf <= 1e-20 else alpha * math.sqrt(vdotv / fdotf)
                if state.step - last_negative > delaystep:
                    dt = min(dt * dtgrow, dtmax)
                    alpha *= alphashrink
            else:
                last_negative = state.step
                if not (state.step - step_start < delaystep):      # delaystep_start_flag
                    alpha = alpha0
                    if dt * dtshrink >= dtmin:
                        dt *= dtshrink
                negative += 1
                if negative > max_negative:
                    return "maxvdotf"
                state.positions[:, :3] -= 0.5 * dt * v               # halfstepback
                v[...] = 0.0
                flagv0 = True
            if flagv0:                                               # velocities to bound the step
                self.ecurrent = self.energy_force(False)
                v, mass = state.velocities, state.per_atom_mass[:, None]     # a build may migrate atoms
                v[...] = dt * ftm2v * self.f / mass
            vmax = self._abs_max(v)
            dtv = dt if dt * vmax <= s.dmax else s.dmax / vmax
            if flagv0:
                v[...] = 0.0
            v += dtv * ftm2v * self.f / mass                         # Euler semi-implicit
            if vdotf > 0.0:
                v[...] = scale1 * v + scale2 * self.f
            state.positions[:, :3] += dtv * v
            self.eprevious = self.ecurrent
            self.ecurrent = self.energy_force(False)
            v, mass = state.velocities, state.per_atom_mass[:, None]
            flagv0 = False
            self.alpha_final = 0.0
            if self.neval >= s.maxeval:
                return "maxeval"
            if s.etol > 0.0 and state.step - last_negative > delaystep and self._energy_converged():
                return "etol"
            if s.ftol > 0.0 and self.fnorm_sqr() < s.ftol * s.ftol:
                return "ftol"
            report(state.step, False)
        return "maxiter"
