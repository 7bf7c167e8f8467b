"""A simulation's bookkeeping: which per-atom energies are current, the thermo observables, and the
checks that a run has not blown up."""

from __future__ import annotations

from .observables import kinetic_energy, pressure, temperature


class SimulationError(RuntimeError):
    """A run cannot continue (e.g. it blew up); the message names the step and the atom."""


class RunStopped(Exception):
    """A run stopped between steps on request (a signal, ``--walltime``); the state is whole."""

    def __init__(self, step: int, reason: str, checkpoint=None):
        super().__init__(f"stopped at step {step} ({reason})"
                         + (f", checkpoint {checkpoint} written" if checkpoint is not None else ""))
        self.step, self.reason, self.checkpoint = step, reason, checkpoint


class Bookkeeping:
    """Energies, thermo rows and finiteness checks of one simulation's components.

    Per-atom energy and virial are computed only on reporting steps; :attr:`energy_key` records
    the (step, neighbour builds) at which they were, so that they are recomputed when stale (a
    neighbour build lends their memory to the reorder).
    """

    def __init__(self, components, units, volume: float):
        self.c = components
        self.units = units
        self.volume = volume
        self.energy_key = None

    def current_key(self) -> tuple:
        return self.c.state.step, self.c.neighbors.n_builds

    def mark_energy_current(self) -> None:
        self.energy_key = self.current_key()

    def energy_is_current(self) -> bool:
        return self.energy_key == self.current_key()

    def ensure_energy(self, setup) -> None:
        """Compute per-atom energy and virial unless current (``setup`` builds the list first if
        there is none yet)."""
        if self.c.neighbors.n_builds == 0:
            setup()
        if not self.energy_is_current():
            self.c.forces.compute(self.c.state, self.c.neighbors, True)
            self.mark_energy_current()

    # -- observables -------------------------------------------------------------------------
    def kinetic_energy(self) -> float:
        s, b = self.c.state, self.c.backend
        return kinetic_energy(s.values("velocities", b), s.values("per_atom_mass", b), self.units)

    def potential_energy(self) -> float:
        """Total pair energy (energy units); per-atom energies must be current."""
        return float(self.c.state.values("energy", self.c.backend).sum())

    def virial_trace(self) -> float:
        """Sum over pairs of r_ij . f_ij (energy units); per-atom virials must be current."""
        return float(self.c.state.values("virial", self.c.backend)[:, :3].sum())

    @property
    def n_atoms(self) -> int:
        """Atoms of the whole system (a decomposed run's bookkeeping counts every rank's)."""
        return self.c.state.n_atoms

    def thermo_row(self) -> dict:
        """Step, Temp, E_pair, E_mol, TotEng, Press, normalised as LAMMPS does."""
        n = self.n_atoms
        ke = self.kinetic_energy()
        t = temperature(ke, n, self.units)
        pe = self.potential_energy()
        p = pressure(t, self.virial_trace(), n, self.volume, self.units)
        norm = n if self.units.normalize_thermo else 1
        return {"Step": self.c.state.step, "Temp": t, "E_pair": pe / norm, "E_mol": 0.0,
                "TotEng": (ke + pe) / norm, "Press": p}

    # -- checks ------------------------------------------------------------------------------
    def check_finite(self) -> None:
        """Raise :class:`SimulationError` naming the step and the atom if a position, a velocity
        or (where current) an energy is not finite."""
        s, xp = self.c.state, self.c.backend.xp
        checks = [("position", s.positions[:, :3]), ("velocity", s.velocities)]
        if self.energy_is_current():
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
