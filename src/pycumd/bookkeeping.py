"""A simulation's bookkeeping: which per-atom energies are current, the thermo observables, and the
checks that a run has not blown up."""

from __future__ import annotations

import numpy as np

from .observables import degrees_of_freedom, kinetic_energy, pressure, temperature

#: C types of the arrays the finiteness check reads (finite_check.cu's real_t)
_C_TYPES = {"float32": "float", "float64": "double"}


class SimulationError(RuntimeError):
    """A run cannot continue (e.g. it blew up); the message names the step and the atom."""


class RunStopped(Exception):
    """A run stopped between steps on request (a signal, ``--walltime``); the state is whole."""

    def __init__(self, step: int, reason: str, checkpoint=None, note: str | None = None):
        super().__init__(f"stopped at step {step} ({reason})"
                         + (f", checkpoint {checkpoint} written" if checkpoint is not None else "")
                         + (f"; {note}" if note else ""))
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
        self._nonfinite_flag = None       # GPU: the finiteness check's device flag (made at its first use)

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
        """Total potential energy (energy units): the per-atom energies' sum and the energy that belongs to
        no atom (a k-space solver's, :meth:`~pycumd.contracts.ForceEvaluator.global_energy_virial`);
        per-atom energies must be current."""
        return float(self.c.state.values("energy", self.c.backend).sum()) + float(self.c.forces.global_energy_virial()[0])

    def virial_trace(self) -> float:
        """Sum over pairs of r_ij . f_ij (energy units), with a k-space solver's virial and the
        constraint forces' (fix shake); per-atom virials must be current."""
        w = self.constraint_virial()
        pairs = float(self.c.state.values("virial", self.c.backend)[:, :3].sum())
        return (pairs + float(np.sum(self.c.forces.global_energy_virial()[1][:3]))
                + (0.0 if w is None else float(w[:3].sum())))

    def constraint_virial(self):
        """The virial of the step hooks' constraint forces ((6,), energy units) or None."""
        hooks = self.c.integrator.thermostat
        return None if hooks is None else hooks.constraint_virial()

    def degrees_of_freedom(self) -> int:
        """``3 N - 3`` less those the step hooks' constraints remove (LAMMPS compute temp: extra and fix dof)."""
        hooks = self.c.integrator.thermostat
        return degrees_of_freedom(self.n_atoms) - (0 if hooks is None else hooks.constrained_dof)

    def virial_diagonal(self) -> np.ndarray:
        """``sum_i W_i`` xx, yy, zz with a k-space solver's and the constraint forces' (energy units;
        per-atom virials must be current), (3,) float64."""
        b = self.c.backend
        w = self.c.state.values("virial", b)[:, :3].sum(axis=0)
        constraint = self.constraint_virial()
        return (np.asarray(b.to_host(w), dtype=np.float64)
                + np.asarray(self.c.forces.global_energy_virial()[1][:3], dtype=np.float64)
                + (0.0 if constraint is None else np.asarray(constraint[:3], dtype=np.float64)))

    def kinetic_tensor(self) -> np.ndarray:
        """``mvv2e sum_i m_i v_id^2`` for d = x, y, z (LAMMPS ``compute temp``'s vector, no 1/2),
        (3,) float64 energy units."""
        s, b = self.c.state, self.c.backend
        v, m = s.values("velocities", b), s.values("per_atom_mass", b)
        return self.units.mvv2e * np.asarray(b.to_host((m[:, None] * v * v).sum(axis=0)), dtype=np.float64)

    def bonded_energies(self) -> dict:
        """Bond, angle, dihedral and improper energies (energy units; per-atom energies must be current;
        empty without molecular terms)."""
        return self.c.forces.bonded_energies()

    @property
    def n_atoms(self) -> int:
        """Atoms of the whole system (a decomposed run's bookkeeping counts every rank's)."""
        return self.c.state.n_atoms

    def thermo_row(self) -> dict:
        """Step, Temp, E_pair, E_mol, TotEng, Press, normalised as LAMMPS does."""
        n = self.n_atoms
        ke = self.kinetic_energy()
        dof = self.degrees_of_freedom()
        t = temperature(ke, n, self.units, dof)
        pe = self.potential_energy()
        p = pressure(t, self.virial_trace(), n, self.volume, self.units, dof)
        norm = n if self.units.normalize_thermo else 1
        emol = sum(self.bonded_energies().values())
        return {"Step": self.c.state.step, "Temp": t, "E_pair": (pe - emol) / norm, "E_mol": emol / norm,
                "TotEng": (ke + pe) / norm, "Press": p}

    # -- checks ------------------------------------------------------------------------------
    def _gpu_flags_nonfinite(self, backend, checks) -> bool:
        """Whether some value of the ``(name, rows, columns)`` of :meth:`check_finite` is not finite:
        one launch per array, one read."""
        if self._nonfinite_flag is None:
            self._nonfinite_flag = backend.xp.zeros(1, dtype=np.int32)
        flag = self._nonfinite_flag
        flag.fill(0)
        threads = 256
        for _, rows, columns in checks:
            if rows.size == 0:
                continue
            per_row = rows.size // rows.shape[0]
            kernel = backend.kernel_module("finite_check.cu", {"real_t": _C_TYPES[rows.dtype.name]})
            kernel.get_function("flag_nonfinite")(
                (min(-(-rows.size // threads), 65536),), (threads,),
                (rows, np.int64(rows.size), np.int32(per_row), np.int32(columns or per_row), flag))
        return bool(flag.get()[0])

    def check_finite(self) -> None:
        """Raise :class:`SimulationError` naming the step and the atom if a position, a velocity
        or (where current) an energy is not finite; on the GPU also if the force kernels met a pair
        the potential cannot evaluate (``check_pair_errors``: pair_style table's inner distance)."""
        s, backend = self.c.state, self.c.backend
        xp = backend.xp
        if backend.is_gpu:      # pairs the potential cannot evaluate (the CPU checks at every evaluation)
            getattr(self.c.forces, "check_pair_errors", lambda state: None)(s)
        # (what, array, columns checked of each row: None for all; positions' fourth is the type)
        checks = [("position", s.positions, 3), ("velocity", s.velocities, None)]
        if self.energy_is_current():
            checks.append(("energy", s.energy, None))
        # On the GPU, one kernel per array and one read of their common flag for the common case;
        # the search for the atom below runs only when the flag is set (it is many launches and reads)
        if backend.is_gpu and not self._gpu_flags_nonfinite(backend, checks):
            return
        for name, arr, columns in checks:
            rows = arr.reshape(len(arr), -1)[:, :columns]
            bad = ~xp.isfinite(rows).all(axis=1)
            if bool(bad.any()):
                i = int(xp.argmax(bad))
                atom_id = int(s.ids[i])
                raise SimulationError(
                    f"the simulation blew up at step {s.step}: {name} of atom {atom_id} (index {i}) "
                    f"is not finite; a smaller time step, a better-relaxed start or a check of the "
                    f"potential parameters may help")
