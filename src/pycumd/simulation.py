"""The Simulation: owns the state and its components, and runs the time steps."""

from __future__ import annotations

import numpy as np

from . import backend as _backend
from .forces import PairForces
from .integrators import VelocityVerlet
from .outputs.progress import Progress
from .outputs.thermo import ThermoReporter
from .neighbors.allpairs import AllPairsForces, AllPairsNeighbors, choose_pair_method
from .neighbors.verlet import NeighborList
from .observables import kinetic_energy, pressure, temperature
from .precision import get_precision
from .state import State
from .step_graph import CudaStepGraph
from .system import System


class SimulationError(RuntimeError):
    """A run cannot continue (e.g. it blew up); the message names the step and the atom."""


class Simulation:
    """Molecular dynamics of one :class:`System` with one pair potential.

    Parameters
    ----------
    system : System
        Initial positions, velocities, types, masses, box and units (copied to the backend).
    potential : PairPotential
        E.g. ``LennardJones(2.5).pair_coeff(0, 0, epsilon=1, sigma=1)``.
    integrator : VelocityVerlet, optional
        Default: NVE with the unit system's time step.
    skin : float
        Neighbour-list skin (length units); default 0.3 sigma in lj units, 2.0 A otherwise
        (LAMMPS' defaults).
    neighbor_every, neighbor_delay, neighbor_check :
        LAMMPS ``neigh_modify every/delay/check``; default: check every step, rebuild when an atom
        has moved half the skin.
    device : {"auto", "cpu", "cuda"}
    precision : {"auto", "single", "mixed", "double", "composite"}
        ``auto``: double on the CPU, mixed on the GPU.
    pair_method : {"auto", "neighbor", "all_pairs"}
        ``all_pairs``: every pair with the minimum image, no neighbour list
        (:mod:`pycumd.neighbors.allpairs`); needs ``r_cut <= L/2`` when the cutoff is finite.
        ``auto``: all pairs when the potential has no cutoff or ``r_cut + skin > 0.35 L_min``,
        else the neighbour list.
    deterministic : bool
        Build the GPU kernels without fused multiply-add, so that a double-precision NVE run gives
        the same bits on the CPU and the GPU (runs repeat bit for bit in every mode; see
        :mod:`pycumd.precision`).
    use_graphs : bool
        On the GPU, run plain NVE steps between reports as CUDA-graph blocks (default True;
        :mod:`pycumd.step_graph`).  False forces the step-by-step path (same results).

    Examples
    --------
    >>> system = lattice_system("fcc", 5, density=0.8442)
    >>> create_velocities(system, 1.44, seed=87287)
    >>> sim = Simulation(system, LennardJones(2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0))
    >>> sim.reporters.append(ThermoReporter(every=50))
    >>> sim.run(100)
    """

    def __init__(self, system: System, potential, integrator=None, *, skin: float | None = None,
                 neighbor_every: int = 1, neighbor_delay: int = 0, neighbor_check: bool = True,
                 device="auto", precision="auto", pair_method: str = "auto", use_graphs: bool = True,
                 deterministic: bool = False):
        self.use_graphs = use_graphs
        self._step_graph = None
        self.backend = _backend.select(device)
        self.precision = get_precision(precision, self.backend.name, deterministic)
        self.units = system.units
        self.potential = potential
        self.n_types = system.n_types
        self.volume = system.box.volume
        self.box = system.box
        self.integrator = integrator or VelocityVerlet()
        self.integrator.bind(self.backend, self.precision, self.units)
        if skin is None:
            skin = 0.3 if self.units.name == "lj" else 2.0
        r_cut = potential.max_cutoff(system.n_types)
        self.pair_method = choose_pair_method(pair_method, r_cut, skin, system.box.L)
        if self.precision.composite:
            _check_composite_supported(self.pair_method, self.thermostat)
        if self.pair_method == "all_pairs":
            self.neighbors = AllPairsNeighbors(self.backend, r_cut)
            forces_class = AllPairsForces
        else:
            self.neighbors = NeighborList(self.backend, r_cut, skin, every=neighbor_every,
                                          delay=neighbor_delay, check=neighbor_check,
                                          cuda_options=self.precision.cuda_options,
                                          position_error=_storage_rounding(self.precision, system.box.L),
                                          list_dtype=self.precision.list_dtype)
            forces_class = PairForces
        self.neighbors.check_box(system.box.L)
        self.state = State.from_system(system, self.backend, self.precision)
        self.forces = forces_class(potential, system.n_types, self.backend, self.precision)
        self.reporters: list = []
        self._run_start = self._run_end = 0
        self._energy_step = None  # (step, neighbour builds) at which per-atom energy/virial were computed
        self._masses = system.masses.copy()

    # -- properties ------------------------------------------------------------------------
    @property
    def step(self) -> int:
        return self.state.step

    @property
    def time(self) -> float:
        """Simulated time since step 0 (time units)."""
        return self.state.step * self.integrator.dt

    @property
    def thermostat(self):
        return self.integrator.thermostat

    def run_fraction(self) -> float:
        """Fraction of the current run done (for temperature ramps), as LAMMPS computes it."""
        span = self._run_end - self._run_start
        return (self.state.step - self._run_start) / span if span else 0.0

    def system(self) -> System:
        """A host copy of the current state as a :class:`System`, particles in id order."""
        b, s = self.backend, self.state
        by_id = np.argsort(b.to_host(s.ids), kind="stable")
        return System(self.box, s.host_positions(b)[by_id], self._masses, self.units,
                      types=b.to_host(s.types)[by_id],
                      velocities=s.host_values("velocities", b)[by_id],
                      images=b.to_host(s.images)[by_id], ids=b.to_host(s.ids)[by_id])

    # -- observables -----------------------------------------------------------------------
    def kinetic_energy(self) -> float:
        s, b = self.state, self.backend
        return kinetic_energy(s.values("velocities", b), s.values("per_atom_mass", b), self.units)

    def temperature(self) -> float:
        return temperature(self.kinetic_energy(), self.state.n_atoms, self.units)

    def _ensure_energy(self) -> None:
        if self.neighbors.n_builds == 0:
            self._setup()
        if self._energy_step != self._energy_key():
            self.forces.compute(self.state, self.neighbors, True)
            self._energy_step = self._energy_key()

    def _energy_key(self) -> tuple:
        """The step and the number of neighbour builds so far: per-atom energy and virial computed
        at another key are stale (a build lends their memory to the reorder)."""
        return self.state.step, self.neighbors.n_builds

    def potential_energy(self) -> float:
        """Total pair energy (energy units) at the current step."""
        self._ensure_energy()
        return float(self.state.values("energy", self.backend).sum())

    def virial_trace(self) -> float:
        """Sum over pairs of r_ij . f_ij (energy units) at the current step."""
        self._ensure_energy()
        return float(self.state.values("virial", self.backend)[:, :3].sum())

    def thermo_row(self) -> dict:
        """Step, Temp, E_pair, E_mol, TotEng, Press, normalised as LAMMPS does."""
        n = self.state.n_atoms
        ke = self.kinetic_energy()
        t = temperature(ke, n, self.units)
        pe = self.potential_energy()
        p = pressure(t, self.virial_trace(), n, self.volume, self.units)
        norm = n if self.units.normalize_thermo else 1
        return {"Step": self.state.step, "Temp": t, "E_pair": pe / norm, "E_mol": 0.0,
                "TotEng": (ke + pe) / norm, "Press": p}

    # -- running ---------------------------------------------------------------------------
    def _setup(self) -> None:
        """As LAMMPS at the start of each run: rebuild the neighbour list, compute forces."""
        self.neighbors.build(self.state)
        self.forces.compute(self.state, self.neighbors, True)
        self._energy_step = self._energy_key()
        self._check_finite()
        if self.thermostat is not None:
            self.thermostat.bind(self)

    def run(self, steps: int, progress: bool | None = None) -> None:
        """Advance ``steps`` time steps.

        Each step, in this order (LAMMPS' ``Verlet::run`` order):

        1. thermostat ``begin_step`` (Nose-Hoover: chain half step, velocity scaling);
        2. ``v += dt/2 f/m``, ``x += dt v`` (initial integrate);
        3. neighbour decision; on a rebuild: wrap into the box, counting-sort into cells, new list;
        4. pair forces, with per-atom energy and virial only if a reporter reports this step;
        5. thermostat ``post_force`` (Langevin: friction and noise forces);
        6. ``v += dt/2 f/m`` (final integrate);
        7. thermostat ``end_step`` (Nose-Hoover: chain half step, velocity scaling);
        8. reporters due this step (thermo rows, trajectory frames).

        On the GPU, plain NVE steps between reports run in CUDA-graph blocks with the rebuild
        decision on the device (:mod:`pycumd.step_graph`): the same kernels in the same order,
        one host synchronisation per block instead of one per step.

        Positions and velocities are checked for finite values at every report and at the end.

        A run that produces non-finite positions, velocities or energies stops with
        :class:`SimulationError` naming the step and the atom; reporters keep what they wrote.
        """
        if steps < 0:
            raise ValueError(f"run length must be >= 0, got {steps}")
        self._run_start = self.state.step
        self._run_end = self.state.step + steps
        self._setup()
        for r in self.reporters:
            r.begin_run()
        self._report(self.state.step)
        bar = Progress(steps, enabled=progress)
        graph = None
        if self.use_graphs and CudaStepGraph.applicable(self):
            graph = self._step_graph = self._step_graph or CudaStepGraph(self)
        state = self.state
        try:
            while state.step < self._run_end:
                step = state.step + 1
                ordinary = self._next_report_step(step) - step     # steps before the next report
                if graph is not None and ordinary > 1:
                    graph.advance(ordinary)
                else:
                    self._one_step(step)
                bar.update(state.step - self._run_start)
            self._check_finite()
        finally:
            self.backend.synchronize()
            bar.close()

    def _one_step(self, step: int) -> None:
        """One step on the host-driven path (the order of :meth:`run`'s docstring)."""
        integ, th, nl, forces, state = self.integrator, self.thermostat, self.neighbors, self.forces, self.state
        due = [r for r in self.reporters if r.wants(step, self._run_start, self._run_end)]
        with_energy = any(r.needs_energy for r in due)
        state.step = step              # as LAMMPS, the step number advances first
        if th is not None:
            th.begin_step(self)
        integ.initial_integrate(state)
        if nl.needs_rebuild(state):
            nl.build(state)
        forces.compute(state, nl, with_energy)
        if th is not None:
            th.post_force(self)
        integ.final_integrate(state)
        if th is not None:
            th.end_step(self)
        if with_energy:
            self._energy_step = self._energy_key()
        if due:
            self._check_finite()
            for r in due:
                r.report(self)

    def _next_report_step(self, step: int) -> int:
        """The first step >= ``step`` that some reporter reports (the run's last step at the latest)."""
        candidates = [self._run_end]
        for r in self.reporters:
            every = getattr(r, "every", 0)
            if every > 0:
                candidates.append(-(-step // every) * every)
            if r.wants(step, self._run_start, self._run_end):
                candidates.append(step)
        return min(candidates)

    def _report(self, step: int) -> None:
        for r in self.reporters:
            if r.wants(step, self._run_start, self._run_end):
                r.report(self)

    def _check_finite(self) -> None:
        s, xp = self.state, self.backend.xp
        checks = [("position", s.positions[:, :3]), ("velocity", s.velocities)]
        if self._energy_step == self._energy_key():
            checks.append(("energy", s.energy))
        for name, arr in checks:
            bad = ~xp.isfinite(arr.reshape(len(arr), -1)).all(axis=1)
            if bool(bad.any()):
                i = int(xp.argmax(bad))
                atom_id = int(s.ids[i])
                raise SimulationError(
                    f"the simulation blew up at step {s.step}: {name} of atom {atom_id} (index {i}) "
                    f"is not finite; a smaller time step, a better-relaxed start or a check of the "
                    f"potential parameters may help")

    def close(self) -> None:
        """Close every reporter's files."""
        for r in self.reporters:
            r.close()

    def describe(self) -> str:
        s = self.state
        return (f"{s.n_atoms} atoms, {self.n_types} type(s), box {' x '.join(f'{x:g}' for x in self.box.lengths)} "
                f"({self.units.name} units)\n"
                f"pair {self.potential.describe()}, skin {self.neighbors.skin}\n"
                f"{self.integrator.describe()}\n"
                f"device {self.backend.name} ({self.backend.device_name}), precision {self.precision.name}")


def _check_composite_supported(pair_method: str, thermostat) -> None:
    """Composite precision covers NVE and Nose-Hoover over a neighbour list; say what it does not."""
    if pair_method == "all_pairs":
        raise NotImplementedError("composite precision is not implemented for the all-pairs force kernel; "
                                  "use pair_method='neighbor' (a cutoff shorter than half the box) or "
                                  "precision 'single', 'mixed' or 'double'")
    if thermostat is not None and type(thermostat).__name__ == "Langevin":
        raise NotImplementedError("composite precision is not implemented for the Langevin thermostat "
                                  "(its noise kernel works in float64); use NVE or Nose-Hoover, or "
                                  "precision 'mixed' or 'double'")


def _storage_rounding(precision, box_lengths) -> float:
    """How far the float32 positions the neighbour list is built from (single; composite's high
    parts; mixed's float32 copy) may be from the positions the forces use: ``4 * 2^-23 * L``
    (4 to 8 float32 ulps of L)."""
    if precision.list_dtype != np.float32:
        return 0.0
    return 4.0 * float(np.finfo(np.float32).eps) * float(np.max(box_lengths))


__all__ = ["Simulation", "SimulationError", "ThermoReporter"]
