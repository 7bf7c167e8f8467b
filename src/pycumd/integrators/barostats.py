"""Barostats: the box follows the pressure (NPT and NPH).

Two barostats, both handed to :class:`~pycumd.integrators.VelocityVerlet` as ``barostat=`` together
with an optional thermostat, whose hooks the barostat then calls in its own order:

:class:`MTKBarostat`
    Martyna-Tobias-Klein equations with Nose-Hoover chains on the barostat, as LAMMPS ``fix npt``
    (with a :class:`~pycumd.integrators.NoseHoover` thermostat) and ``fix nph`` (without one):
    ``iso`` (one cell variable) or ``aniso`` (three), orthorhombic boxes.  The order of
    ``FixNH::initial_integrate`` / ``final_integrate`` is kept, so a run follows LAMMPS step for
    step in double precision.
:class:`CRescale`
    Stochastic cell rescaling (M. Bernetti and G. Bussi, J. Chem. Phys. 153, 114107 (2020)): a
    first-order stochastic equation for the log of the volume, with the isothermal compressibility
    as its only material parameter.  It has no oscillation to tune and relaxes the volume in about
    ``tau_p``; the robust default for equilibration.

What a box change does to the engine (:func:`set_box`): positions are scaled with the box (about its
centre, relative to its lower corner), ``state.box_lengths``, ``Simulation.box`` and the bookkeeping's
volume follow, and the neighbour list's displacement check shrinks by how far the box edges moved
since the last build (``NeighborList.needs_rebuild``), so the list is rebuilt, with the cells of the
new box, before any pair can be missed.  A barostat asks for the virial every step (``needs_virial``),
and a run with one takes the host-driven path on the GPU (no CUDA-graph blocks), as thermostats do.
The barostat's own state is a few host scalars; the per-atom work is array arithmetic that NumPy and
CuPy run alike (the velocity Verlet kick kernel, ``x += dt v``, scaling by per-axis factors).
"""

from __future__ import annotations

import math

import numpy as np

from ..bookkeeping import SimulationError
from ..box import Box
from ..contracts import StepHooksBase
from ..observables import degrees_of_freedom
from ..system import InputError
from .langevin import Langevin
from .nose_hoover import NoseHoover


def _pressure_pair(pressure):
    pair = (pressure, pressure) if np.isscalar(pressure) else tuple(pressure)
    if len(pair) != 2 or not all(np.isfinite(p) for p in pair):
        raise ValueError(f"barostat pressure must be a number or (start, stop), got {pressure}")
    return float(pair[0]), float(pair[1])


def _refuse_unsupported(sim, precision, name: str, over_ranks: bool = False) -> None:
    if precision is not None and precision.composite:
        raise NotImplementedError(f"{name}: composite precision is not implemented with a barostat; "
                                  f"use precision 'mixed' or 'double'")
    d = None if sim is None else sim.decomposition
    if d is not None and not (over_ranks and d.follows_box_changes):
        raise NotImplementedError(f"{name} is not decomposed over MPI ranks{' with ' + d.kind if over_ranks else ''} "
                                  f"yet; run on one process" + (" or over spatial domains" if over_ranks else ""))


def set_box(sim, lo: np.ndarray, hi: np.ndarray) -> None:
    """Make ``[lo, hi)`` the box of ``sim``: scale every position with it (relative to the lower
    corner, i.e. about the box's fixed point), and update ``state.box_lengths``, ``sim.box`` and
    the bookkeeping's volume.  Raises :class:`SimulationError` when the new box is too small for the
    cutoff plus skin of a neighbour list, or needs more periodic images than the all-pairs path takes
    (a collapsing box); the all-pairs path recomputes its image set from the new box by itself."""
    state, xp = sim.state, sim.backend.xp
    old = np.asarray(state.box_lengths, dtype=np.float64)
    new = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
    try:
        sim.neighbors.check_box(new)
    except InputError as error:
        raise SimulationError(f"the barostat shrank the box at step {state.step} to "
                              f"{' x '.join(f'{x:.6g}' for x in new)}: {error}; start from a larger or "
                              f"better-equilibrated box, or use a longer barostat time") from None
    positions = state.positions
    positions[:, :3] *= xp.asarray(new / old, dtype=positions.dtype)
    state.box_lengths = tuple(float(x) for x in new)
    sim.box = Box(new, lo)
    sim.book.volume = float(new[0] * new[1] * new[2])
    if sim.decomposition is not None:            # the domains keep their fractions of the box
        sim.decomposition.set_box(sim.box)


def _scale_velocities(state, xp, factors) -> None:
    """``v_d *= factors[d]`` for d = x, y, z."""
    state.velocities *= xp.asarray(factors, dtype=state.velocities.dtype)


def _drift(state, dt: float) -> None:
    """``x += dt v`` (LAMMPS ``nve_x``)."""
    state.positions[:, :3] += dt * state.velocities


def _ensure_virial(sim, steps_back: int) -> None:
    """Recompute the forces with the per-atom virial unless the stored virial belongs to the current
    positions (it was computed ``steps_back`` steps ago in the step numbering, since the last build)."""
    if sim.book.energy_key != (sim.state.step - steps_back, sim.neighbors.n_builds):
        sim.forces.compute(sim.state, sim.neighbors, True)


class MTKBarostat(StepHooksBase):
    """Martyna-Tobias-Klein barostat with a Nose-Hoover chain on the cell (LAMMPS ``fix npt/nph``).

    Parameters
    ----------
    pressure : float or (float, float)
        Target pressure (pressure units), or (start, stop) ramped over a run.
    damping : float
        ``Pdamp`` (time units): about the period of the volume oscillation; LAMMPS recommends about
        1000 time steps.
    coupling : {"iso", "aniso"}
        ``iso``: one cell variable, the three edges scale together, driven by the scalar pressure;
        ``aniso``: each edge driven by its diagonal pressure component.
    dims : str
        ``aniso`` only: the edges that are driven (LAMMPS' per-axis keywords ``x``, ``y``, ``z``, each
        with the same target; e.g. ``"z"`` for ``fix npt ... z P0 P1 Pdamp``); the others keep their
        length.  Default ``"xyz"``.
    chain : int
        Length of the Nose-Hoover chain on the cell variables (LAMMPS ``pchain``, default 3; 0: none).
    mtk : bool
        The MTK correction terms (LAMMPS ``mtk yes``, the default).

    Notes
    -----
    With ``thermostat=NoseHoover(...)`` on the same integrator this is LAMMPS ``fix npt temp T0 T1
    Tdamp iso|aniso P0 P1 Pdamp`` (tchain = the thermostat's chain); without a thermostat it is
    ``fix nph``, whose cell masses use the temperature at the start of the first run.  A
    :class:`~pycumd.integrators.Langevin` thermostat may be combined with it as with ``fix nph`` +
    ``fix langevin``.  Cell masses ``W = (N + 1) k_B T / Pdamp^-2``; the box dilates about its
    centre at the first run.
    """

    needs_virial = True
    runs_over_ranks = True          # global sums through the bookkeeping; the domains follow the box

    def __init__(self, pressure, damping: float, coupling: str = "iso", chain: int = 3, mtk: bool = True,
                 dims: str = "xyz"):
        self.p_start, self.p_stop = _pressure_pair(pressure)
        if not damping > 0:
            raise ValueError(f"barostat damping must be positive, got {damping}")
        if coupling not in ("iso", "aniso"):
            raise ValueError(f"barostat coupling must be 'iso' or 'aniso', got {coupling!r}")
        if chain < 0:
            raise ValueError(f"barostat chain length must be >= 0, got {chain}")
        if not dims or any(d not in "xyz" for d in dims) or len(set(dims)) != len(dims):
            raise ValueError(f"barostat dims must be some of 'x', 'y', 'z' once each, got {dims!r}")
        if coupling == "iso" and sorted(dims) != ["x", "y", "z"]:
            raise ValueError("iso coupling drives all three edges (dims 'xyz')")
        #: the driven edges (LAMMPS' p_flag) and their count (pdim)
        self.flags = np.array([d in dims for d in "xyz"])
        self._pdim = int(self.flags.sum())
        self.damping, self.coupling, self.chain, self.mtk = float(damping), coupling, int(chain), bool(mtk)
        self.thermostat = None
        self.omega = np.zeros(3)
        self.omega_dot = np.zeros(3)
        self.etap = np.zeros(self.chain)
        self.etap_dot = np.zeros(self.chain + 1)     # one extra, always 0 (LAMMPS' dummy link)
        self.etap_dotdot = np.zeros(self.chain)
        self.t0 = 0.0                                # NPH: reference temperature of the masses
        self.fixed_point = None                      # centre of dilation (the box centre at the first run)
        self._mtk_term2 = 0.0

    # -- wiring ------------------------------------------------------------------------------
    def couple(self, thermostat):
        """Take the integrator's thermostat (None, NoseHoover or Langevin); return the object whose
        hooks the simulation calls (this barostat)."""
        if thermostat is not None and not isinstance(thermostat, (NoseHoover, Langevin)):
            raise TypeError(f"MTKBarostat works with a NoseHoover or Langevin thermostat or none, "
                            f"not {type(thermostat).__name__}")
        self.thermostat = thermostat
        return self

    def bind_integrator(self, integrator, precision) -> None:
        """Replace the integrator's initial half step by LAMMPS' ``nve_v; remap; nve_x; remap``."""
        _refuse_unsupported(None, precision, "MTKBarostat")
        kick = integrator.final_integrate

        def initial(state):
            kick(state)
            self._remap()
            _drift(state, integrator.dt)
            self._remap()
        integrator.initial_integrate = initial

    def bind(self, sim) -> None:
        """LAMMPS ``FixNH::setup``: temperatures, target pressure, the masses of the cell and chains."""
        _refuse_unsupported(sim, None, "MTKBarostat", over_ranks=True)
        self._sim = sim
        n = sim.book.n_atoms                     # the whole system's (over MPI ranks too)
        u = sim.units
        # LAMMPS' tdof: the temperature's degrees of freedom, less those constraints remove (fix shake)
        self._n, self._tdof = n, sim.book.degrees_of_freedom()
        self._boltz, self._nktv2p = u.boltz, u.nktv2p
        dt = sim.integrator.dt
        self._dthalf, self._dt4, self._dt8 = 0.5 * dt, 0.25 * dt, 0.125 * dt
        th = self.thermostat
        if th is not None:
            th.bind(sim)
        self._t_current = sim.temperature()
        if isinstance(th, NoseHoover):
            self._t_target = th.target(sim)
        else:
            if self.t0 == 0.0:
                self.t0 = self._t_current if self._t_current != 0.0 else (1.0 if u.name == "lj" else 300.0)
            self._t_target = self.t0
        p_freq = 1.0 / self.damping
        kt = self._boltz * self._t_target
        self.omega_mass = np.full(3, (n + 1) * kt / (p_freq * p_freq))
        if self.chain:
            self.etap_mass = np.full(self.chain, kt / (p_freq * p_freq))
            for k in range(1, self.chain):
                self.etap_dotdot[k] = ((self.etap_mass[k - 1] * self.etap_dot[k - 1] * self.etap_dot[k - 1] - kt)
                                       / self.etap_mass[k])
        self._lo = np.array(sim.box.origin, dtype=np.float64)
        self._hi = self._lo + np.asarray(sim.box.L)
        if self.fixed_point is None:
            self.fixed_point = 0.5 * (self._lo + self._hi)
        _ensure_virial(sim, 0)

    # -- the step (LAMMPS FixNH::initial_integrate / final_integrate) ------------------------
    def begin_step(self, sim) -> None:
        """Cell chain, thermostat chain, pressure, cell velocity, ``v *= exp(-dt/2 (omega_dot + mtk))``."""
        if self.chain:
            self._nhc_press_integrate()
        th = self.thermostat
        if isinstance(th, NoseHoover):
            self._t_target = th.target(sim)
            th._chain_half_step(sim)
            self._t_current = th._t_current
        elif th is not None:
            th.begin_step(sim)
        _ensure_virial(sim, 1)
        p_current = self._pressure()
        self._compute_press_target(sim)
        self._nh_omega_dot(p_current)
        self._nh_v_press()

    def post_force(self, sim) -> None:
        if self.thermostat is not None:
            self.thermostat.post_force(sim)

    def end_step(self, sim) -> None:
        """After the final kick: ``v`` scaling, new T and P, cell velocity, thermostat and cell chains."""
        self._nh_v_press()
        self._t_current = sim.temperature()
        p_current = self._pressure()
        self._nh_omega_dot(p_current)
        th = self.thermostat
        if isinstance(th, NoseHoover):
            th._t_current = self._t_current
            th._chain_half_step(sim)
        elif th is not None:
            th.end_step(sim)
        if self.chain:
            self._nhc_press_integrate()

    def _pressure(self) -> np.ndarray:
        """The coupled pressure per axis (LAMMPS ``compute pressure`` + ``couple()``); aniso also keeps
        the kinetic tensor for the MTK term."""
        sim = self._sim
        L = self._hi - self._lo
        inv_volume = 1.0 / (L[0] * L[1] * L[2])
        w = sim.book.virial_diagonal()
        if self.coupling == "iso":
            t = sim.temperature()
            p = (self._tdof * self._boltz * t + w[0] + w[1] + w[2]) / 3.0 * inv_volume * self._nktv2p
            return np.full(3, p)
        self._mvv = sim.book.kinetic_tensor()
        return (self._mvv + w) * inv_volume * self._nktv2p

    def _compute_press_target(self, sim) -> None:
        delta = sim.run_fraction()
        p_target = self.p_start + delta * (self.p_stop - self.p_start)
        p_hydro = 0.0
        for _ in range(self._pdim):
            p_hydro += p_target
        self._p_hydro = p_hydro / self._pdim

    def _nh_omega_dot(self, p_current) -> None:
        """``omega_dot += dt/2 [(P - P_target) V / (W nktv2p) + mtk_1 / W]``."""
        L = self._hi - self._lo
        volume = L[0] * L[1] * L[2]
        mtk_term1 = 0.0
        if self.mtk:
            if self.coupling == "iso":
                mtk_term1 = self._tdof * self._boltz * self._t_current
            else:
                for d in np.flatnonzero(self.flags):
                    mtk_term1 += self._mvv[d]
            mtk_term1 /= self._pdim * self._n
        w, od = self.omega_mass, self.omega_dot
        for d in np.flatnonzero(self.flags):
            f_omega = (p_current[d] - self._p_hydro) * volume / (w[d] * self._nktv2p) + mtk_term1 / w[d]
            od[d] += f_omega * self._dthalf
        self._mtk_term2 = 0.0
        if self.mtk:
            for d in np.flatnonzero(self.flags):
                self._mtk_term2 += od[d]
            self._mtk_term2 /= self._pdim * self._n

    def _nh_v_press(self) -> None:
        """``v_d *= exp(-dt/4 (omega_dot_d + mtk_2))`` twice."""
        factors = np.exp(-self._dt4 * (self.omega_dot + self._mtk_term2))
        xp = self._sim.backend.xp
        _scale_velocities(self._sim.state, xp, factors)
        _scale_velocities(self._sim.state, xp, factors)

    def _remap(self) -> None:
        """Half a step of box dilation about the fixed point: ``L_d *= exp(dt/2 omega_dot_d)``."""
        dto = self._dthalf
        flags = self.flags
        self.omega[flags] += dto * self.omega_dot[flags]
        expfac = np.exp(dto * self.omega_dot[flags])
        fp = self.fixed_point[flags]
        self._lo[flags] = (self._lo[flags] - fp) * expfac + fp
        self._hi[flags] = (self._hi[flags] - fp) * expfac + fp
        set_box(self._sim, self._lo, self._hi)

    def _nhc_press_integrate(self) -> None:
        """Half step of the Nose-Hoover chain on the cell variables (LAMMPS ``nhc_press_integrate``)."""
        kt = self._boltz * self._t_target
        m, ed, edd = self.etap_mass, self.etap_dot, self.etap_dotdot
        w, od = self.omega_mass, self.omega_dot
        dt4, dt8 = self._dt4, self._dt8
        lkt_press = kt if self.coupling == "iso" else self._pdim * kt
        driven = np.flatnonzero(self.flags)
        ke = 0.0
        for d in driven:
            ke += w[d] * od[d] * od[d]
        edd[0] = (ke - lkt_press) / m[0]
        for k in range(self.chain - 1, 0, -1):
            f = math.exp(-dt8 * ed[k + 1])
            ed[k] = (ed[k] * f + edd[k] * dt4) * f
        f = math.exp(-dt8 * ed[1])
        ed[0] = (ed[0] * f + edd[0] * dt4) * f
        for k in range(self.chain):
            self.etap[k] += self._dthalf * ed[k]
        factor = math.exp(-self._dthalf * ed[0])
        od *= factor
        ke = 0.0
        for d in driven:
            ke += w[d] * od[d] * od[d]
        edd[0] = (ke - lkt_press) / m[0]
        ed[0] = (ed[0] * f + edd[0] * dt4) * f
        for k in range(1, self.chain):
            f = math.exp(-dt8 * ed[k + 1])
            edd[k] = (m[k - 1] * ed[k - 1] * ed[k - 1] - kt) / m[k]
            ed[k] = (ed[k] * f + edd[k] * dt4) * f

    # -- checkpoints -------------------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        th = self.thermostat
        return {"omega": self.omega.tolist(), "omega_dot": self.omega_dot.tolist(), "etap": self.etap.tolist(),
                "etap_dot": self.etap_dot.tolist(), "etap_dotdot": self.etap_dotdot.tolist(), "t0": self.t0,
                "fixed_point": [float(x) for x in self.fixed_point], "t_current": self._t_current,
                "t_target": self._t_target, "mtk_term2": self._mtk_term2,
                "thermostat": th.checkpoint_state() if th is not None else None}

    def restore_checkpoint_state(self, state: dict) -> None:
        for name in ("omega", "omega_dot", "etap", "etap_dot", "etap_dotdot", "fixed_point"):
            setattr(self, name, np.array(state[name], dtype=np.float64))
        self.t0, self._t_current = float(state["t0"]), float(state["t_current"])
        self._t_target, self._mtk_term2 = float(state["t_target"]), float(state["mtk_term2"])
        if self.thermostat is not None:
            self.thermostat.restore_checkpoint_state(state["thermostat"])

    def restart_state(self) -> dict:
        """What LAMMPS ``FixNH::pack_restart_data`` stores: the cell variables, the NPH reference
        temperature, the cell chain and the thermostat's chain (:meth:`NoseHoover.restart_state`)."""
        th = self.thermostat
        return {"omega": self.omega.tolist(), "omega_dot": self.omega_dot.tolist(), "t0": self.t0,
                "chain": self.chain, "etap": self.etap.tolist(), "etap_dot": self.etap_dot[:self.chain].tolist(),
                "thermostat": th.restart_state() if isinstance(th, NoseHoover) else None}

    def load_restart_state(self, state: dict) -> None:
        """Take a :meth:`restart_state` before the first run (LAMMPS ``FixNH::restart``): the chains
        are taken only where their lengths match, as LAMMPS does. The thermostat's part goes to the
        thermostat's own ``load_restart_state`` (it is coupled to the barostat when the run is built)."""
        self.omega = np.array(state["omega"], dtype=np.float64)
        self.omega_dot = np.array(state["omega_dot"], dtype=np.float64)
        self.t0 = float(state["t0"])
        if int(state["chain"]) == self.chain:
            self.etap = np.array(state["etap"], dtype=np.float64)
            self.etap_dot[:self.chain] = state["etap_dot"]

    def describe(self) -> str:
        coupling = self.coupling if self._pdim == 3 else f"{self.coupling} {''.join(d for d, f in zip('xyz', self.flags) if f)}"
        text = (f"MTK barostat ({coupling}) P = {self.p_start}->{self.p_stop}, damp = {self.damping}, "
                f"pchain {self.chain}")
        return text + (f", {self.thermostat.describe()}" if self.thermostat is not None else " (NPH)")


class CRescale(StepHooksBase):
    """Stochastic cell rescaling barostat (Bernetti and Bussi 2020), isotropic.

    Each step, with ``eps = ln V``::

        d eps = (beta_T / tau_p) (P_int - P_0 + k_B T / V) dt + sqrt(2 k_B T beta_T dt / (V tau_p)) R

    (``R`` a standard normal number, ``P_int = (2 K + W) / 3V`` the instantaneous pressure of the
    thermo output, ``T`` the thermostat's target); after the drift ``x += dt v`` positions and box
    edges are scaled by ``mu = exp(d eps / 3)`` and velocities by ``1 / mu``.  The volume then samples
    the isothermal-isobaric distribution: ``<V>`` at pressure ``P_0`` and ``<dV^2> = k_B T V beta_T``
    when ``beta_T`` is the true compressibility; a wrong ``beta_T`` only changes how fast the volume
    relaxes (``tau_p`` scaled by ``beta_T / beta_true``), not the distribution.

    Parameters
    ----------
    pressure : float or (float, float)
        Target pressure (pressure units), or (start, stop) ramped over a run.
    tau_p : float
        Relaxation time of the volume (time units); 100-1000 time steps.
    compressibility : float
        Estimate of the isothermal compressibility ``beta_T`` (1 / pressure units).
    seed : int
        Seed of the noise (a stream indexed by (seed, step): restarts repeat it).

    A thermostat on the same integrator is required (its target is ``T``).
    """

    needs_virial = True

    def __init__(self, pressure, tau_p: float, compressibility: float, seed: int):
        self.p_start, self.p_stop = _pressure_pair(pressure)
        if not tau_p > 0:
            raise ValueError(f"c-rescale tau_p must be positive, got {tau_p}")
        if not compressibility > 0:
            raise ValueError(f"c-rescale compressibility must be positive, got {compressibility}")
        if seed < 0:
            raise ValueError(f"c-rescale seed must be >= 0, got {seed}")
        self.tau_p, self.compressibility, self.seed = float(tau_p), float(compressibility), int(seed)
        self.thermostat = None
        self._mu = 1.0

    def couple(self, thermostat):
        if thermostat is None or not hasattr(thermostat, "target"):
            raise ValueError("CRescale needs a thermostat on the same integrator (its noise is at the "
                             "thermostat's temperature): VelocityVerlet(dt, thermostat=Langevin(...), "
                             "barostat=CRescale(...))")
        self.thermostat = thermostat
        return self

    def bind_integrator(self, integrator, precision) -> None:
        """After the drift of each step, rescale box, positions and velocities."""
        _refuse_unsupported(None, precision, "CRescale")
        drift = integrator.initial_integrate

        def initial(state):
            drift(state)
            self._rescale()
        integrator.initial_integrate = initial

    def bind(self, sim) -> None:
        _refuse_unsupported(sim, None, "CRescale")
        self._sim = sim
        self.thermostat.bind(sim)
        _ensure_virial(sim, 0)

    def target_pressure(self, sim) -> float:
        return self.p_start + (self.p_stop - self.p_start) * sim.run_fraction()

    def begin_step(self, sim) -> None:
        """Draw this step's volume change from the pressure of the current positions and velocities."""
        _ensure_virial(sim, 1)
        u = sim.units
        volume = sim.book.volume
        p_int = (2.0 * sim.kinetic_energy() + float(sim.book.virial_diagonal().sum())) / (3.0 * volume) * u.nktv2p
        kt_over_v = u.boltz * self.thermostat.target(sim) / volume * u.nktv2p     # pressure units
        rate = self.compressibility / self.tau_p
        dt = sim.integrator.dt
        noise = np.random.default_rng([self.seed, sim.state.step]).standard_normal()
        d_eps = rate * (p_int - self.target_pressure(sim) + kt_over_v) * dt + math.sqrt(2.0 * kt_over_v * rate * dt) * noise
        self._mu = math.exp(d_eps / 3.0)
        self.thermostat.begin_step(sim)

    def _rescale(self) -> None:
        sim, mu = self._sim, self._mu
        lo, L = np.asarray(sim.box.origin), np.asarray(sim.box.L)
        centre = lo + 0.5 * L
        set_box(sim, centre - 0.5 * mu * L, centre + 0.5 * mu * L)
        _scale_velocities(sim.state, sim.backend.xp, np.full(3, 1.0 / mu))

    def post_force(self, sim) -> None:
        self.thermostat.post_force(sim)

    def end_step(self, sim) -> None:
        self.thermostat.end_step(sim)

    def checkpoint_state(self) -> dict:
        """The thermostat's state; the noise is indexed by (seed, step)."""
        return {"thermostat": self.thermostat.checkpoint_state()}

    def restore_checkpoint_state(self, state: dict) -> None:
        self.thermostat.restore_checkpoint_state(state["thermostat"])

    def describe(self) -> str:
        return (f"c-rescale barostat P = {self.p_start}->{self.p_stop}, tau_p = {self.tau_p}, "
                f"beta_T = {self.compressibility}, seed = {self.seed}, {self.thermostat.describe()}")




def lammps_fix_nh(style: str, args: list) -> tuple:
    """(thermostat, barostat) of LAMMPS ``fix ID all npt|nph ARGS`` (ARGS after the style).

    Supported: ``temp T0 T1 Tdamp`` (npt), one of ``iso|aniso P0 P1 Pdamp`` or per-axis ``x``, ``y``,
    ``z P0 P1 Pdamp`` (the axes given driven, the same numbers for each), and the keywords ``tchain N``,
    ``pchain N``, ``mtk yes|no``, ``tloop 1``, ``ploop 1``, ``drag 0``, ``couple none`` (with
    aniso or the axes).  Everything else raises NotImplementedError (triclinic, axes with different
    targets (LAMMPS' deviatoric term), other ``couple`` values, ``dilate partial``, several loops,
    drag).
    """
    args = list(args)
    temp = pressure = None
    axes: dict = {}                     # per-axis keywords: axis -> (P0, P1, Pdamp)
    keywords = {"tchain": "3", "pchain": "3", "mtk": "yes", "tloop": "1", "ploop": "1", "drag": "0",
                "couple": "none"}
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("temp", "iso", "aniso", "x", "y", "z"):
            if i + 4 > len(args):
                raise ValueError(f"fix {style}: '{word}' needs three numbers (start, stop, damping)")
            values = tuple(float(x) for x in args[i + 1:i + 4])
            if word == "temp":
                temp = values
            elif word in "xyz":
                axes[word] = values
            else:
                if pressure is not None:
                    raise ValueError(f"fix {style}: give one of iso or aniso")
                pressure = (word, values)
            i += 4
        elif word in keywords:
            if i + 2 > len(args):
                raise ValueError(f"fix {style}: keyword {word} needs a value")
            keywords[word] = args[i + 1]
            i += 2
        else:
            raise NotImplementedError(f"fix {style} keyword {word!r} is not supported (supported: temp, iso, "
                                      f"aniso, x, y, z, tchain, pchain, mtk, tloop 1, ploop 1, drag 0, "
                                      f"couple none)")
    dims = "xyz"
    if axes:
        if pressure is not None:
            raise NotImplementedError(f"fix {style}: iso or aniso together with per-axis x/y/z is not supported")
        if len(set(axes.values())) > 1:
            raise NotImplementedError(f"fix {style}: per-axis targets that differ ({axes}) need LAMMPS' deviatoric "
                                      f"term, which is not implemented: give the same P0 P1 Pdamp to each axis")
        dims = "".join(d for d in "xyz" if d in axes)
        pressure = ("aniso", next(iter(axes.values())))
    if pressure is None:
        raise ValueError(f"fix {style} needs 'iso P0 P1 PDAMP', 'aniso P0 P1 PDAMP' or per-axis 'x|y|z P0 P1 PDAMP'")
    if keywords["couple"] != "none" and not (pressure[0] == "iso" and keywords["couple"] == "xyz"):
        raise NotImplementedError(f"fix {style}: couple {keywords['couple']} is not supported (iso couples xyz; "
                                  f"aniso and per-axis keywords take couple none)")
    if (style == "npt") != (temp is not None):
        raise ValueError("fix npt needs 'temp T0 T1 TDAMP'" if style == "npt" else "fix nph takes no 'temp'")
    if keywords["tloop"] != "1" or keywords["ploop"] != "1" or float(keywords["drag"]) != 0.0:
        raise NotImplementedError(f"fix {style}: only tloop 1, ploop 1 and drag 0 are supported")
    if keywords["mtk"] not in ("yes", "no"):
        raise ValueError(f"fix {style}: mtk must be yes or no")
    coupling, (p0, p1, pdamp) = pressure
    barostat = MTKBarostat((p0, p1), pdamp, coupling, chain=int(keywords["pchain"]), mtk=keywords["mtk"] == "yes",
                           dims=dims)
    thermostat = NoseHoover(temp[:2], temp[2], int(keywords["tchain"])) if temp is not None else None
    return thermostat, barostat


__all__ = ["CRescale", "MTKBarostat", "lammps_fix_nh", "set_box"]
