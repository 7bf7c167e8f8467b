"""The host-side description of a particle system, and builders for it.

A :class:`System` holds NumPy arrays on the host.  A :class:`~pycumd.simulation.Simulation`
copies it to the chosen backend; :meth:`Simulation.system` copies it back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .box import Box
from .units import UnitSystem, get_units

LATTICE_BASES = {
    "sc": np.array([[0.0, 0.0, 0.0]]),
    "bcc": np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]]),
    "fcc": np.array([[0.0, 0.0, 0.0], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]),
}


class InputError(ValueError):
    """Invalid physical input (the message names the atom, type or parameter at fault)."""


@dataclass
class System:
    """Particles in a periodic box.

    Attributes
    ----------
    box : Box
    positions : ndarray, shape (N, 3), float64
        Positions relative to ``box.origin``, wrapped into ``[0, L)`` (length units).
    velocities : ndarray, shape (N, 3), float64
        Velocities (length / time units).
    types : ndarray, shape (N,), int32
        Type index of each particle, 0-based (LAMMPS type ``t`` is ``t - 1`` here).
    masses : ndarray, shape (n_types,), float64
        Mass of each type (mass units).
    units : UnitSystem
    images : ndarray, shape (N, 3), int32
        Periodic image counters: unwrapped = positions + images * L.
    ids : ndarray, shape (N,), int64
        Particle ids, 1-based as in LAMMPS, kept with each particle.
    topology : Topology or None
        Molecules, bonds, angles, dihedrals, impropers, their styles and the special pairs
        (:class:`pycumd.molecular.topology.Topology`, in atom ids); None for atoms without topology.
    charges : ndarray, shape (N,), float64, or None
        Per-atom charges (charge units: e in real and metal, reduced in lj), LAMMPS' ``q`` of atom
        styles charge and full, kept with each particle; None for a system without charges.  The
        long-range Coulomb pair styles (``*/coul/long``) read them; the cut-off Coulomb styles
        (``lj/cut/coul/cut``, ``coul/debye``, ...) take charges per type instead.
    """

    box: Box
    positions: np.ndarray
    masses: np.ndarray
    units: UnitSystem = field(default_factory=lambda: get_units("lj"))
    types: np.ndarray | None = None
    velocities: np.ndarray | None = None
    images: np.ndarray | None = None
    ids: np.ndarray | None = None
    topology: object = None
    charges: np.ndarray | None = None

    def __post_init__(self):
        self.units = get_units(self.units)
        self.positions = np.array(self.positions, dtype=np.float64, copy=True).reshape(-1, 3)
        n = len(self.positions)
        self.masses = np.atleast_1d(np.asarray(self.masses, dtype=np.float64)).copy()
        self.types = (np.zeros(n, np.int32) if self.types is None
                      else np.asarray(self.types, dtype=np.int32).copy())
        self.velocities = (np.zeros((n, 3)) if self.velocities is None
                           else np.array(self.velocities, dtype=np.float64).reshape(-1, 3))
        self.images = (np.zeros((n, 3), np.int32) if self.images is None
                       else np.asarray(self.images, dtype=np.int32).copy())
        self.ids = (np.arange(1, n + 1, dtype=np.int64) if self.ids is None
                    else np.asarray(self.ids, dtype=np.int64).copy())
        if self.charges is not None:
            self.charges = np.array(self.charges, dtype=np.float64).reshape(-1)
        self.validate()
        self.positions = self.box.wrap(self.positions, self.images)

    @property
    def n_atoms(self) -> int:
        return len(self.positions)

    @property
    def n_types(self) -> int:
        return len(self.masses)

    @property
    def per_atom_mass(self) -> np.ndarray:
        """Mass of each particle, shape (N,)."""
        return self.masses[self.types]

    def validate(self) -> None:
        """Raise :class:`InputError` naming the first bad atom or type, if any."""
        n = self.n_atoms
        for name in ("velocities", "images"):
            arr = getattr(self, name)
            if arr.shape != (n, 3):
                raise InputError(f"{name} has shape {arr.shape}, expected ({n}, 3)")
        if self.types.shape != (n,) or self.ids.shape != (n,):
            raise InputError(f"types and ids must have shape ({n},)")
        if self.charges is not None:
            if self.charges.shape != (n,):
                raise InputError(f"charges has shape {self.charges.shape}, expected ({n},)")
            bad = ~np.isfinite(self.charges)
            if bad.any():
                i = int(np.argmax(bad))
                raise InputError(f"charge of atom {self.ids[i]} (index {i}) is not finite: {self.charges[i]}")
        for name in ("positions", "velocities"):
            arr = getattr(self, name)
            bad = ~np.isfinite(arr).all(axis=1)
            if bad.any():
                i = int(np.argmax(bad))
                raise InputError(
                    f"{name[:-1]} of atom {self.ids[i]} (index {i}) is not finite: {arr[i].tolist()}")
        if n and (self.types.min() < 0 or self.types.max() >= self.n_types):
            i = int(np.argmax((self.types < 0) | (self.types >= self.n_types)))
            raise InputError(
                f"atom {self.ids[i]} has type {self.types[i] + 1}, but only {self.n_types} "
                f"type(s) have a mass")
        for t, m in enumerate(self.masses):
            if not np.isfinite(m) or m <= 0:
                raise InputError(f"mass of type {t + 1} must be positive and finite, got {m}")
        if self.topology is not None:
            try:
                self.topology.check(self.ids)
            except ValueError as exc:
                raise InputError(str(exc)) from None

    def copy(self) -> "System":
        return System(self.box, self.positions, self.masses, self.units, self.types,
                      self.velocities, self.images, self.ids,
                      None if self.topology is None else self.topology.copy(),
                      None if self.charges is None else self.charges.copy())

    @property
    def molecules(self) -> np.ndarray:
        """Molecule ID of each particle, shape (N,) int64 (0 without topology, as LAMMPS)."""
        if self.topology is None:
            return np.zeros(self.n_atoms, np.int64)
        return self.topology.molecules_of(self.ids)

    def select(self, centre, radius: float) -> "System":
        """The particles within ``radius`` of ``centre`` (LAMMPS ``region sphere``: sqrt(d.d) <= radius)."""
        d = self.positions - np.asarray(centre, dtype=float)
        keep = np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= radius
        if self.topology is not None and self.topology.has_terms():
            raise InputError("selecting a sphere of a system with bonds is not supported (the bonds would be cut)")
        return System(self.box, self.positions[keep], self.masses, self.units, self.types[keep],
                      self.velocities[keep], self.images[keep], np.arange(1, keep.sum() + 1),
                      charges=None if self.charges is None else self.charges[keep])

    def unwrapped_positions(self) -> np.ndarray:
        return self.positions + self.images * self.box.L


def lattice_spacing(style: str, units: str | UnitSystem, *, density: float | None = None,
                    constant: float | None = None) -> float:
    """Cubic lattice constant ``a`` (length units).

    In ``lj`` units LAMMPS' ``lattice fcc 0.8442`` gives the reduced number density:
    ``a = (n_basis / density)^(1/3)``.  In other units the argument is ``a`` itself.
    """
    if style not in LATTICE_BASES:
        raise InputError(f"unknown lattice style {style!r}: choose one of {', '.join(LATTICE_BASES)}")
    if (density is None) == (constant is None):
        raise InputError("give exactly one of density (reduced, lj units) or constant (lattice constant)")
    if density is not None:
        if density <= 0:
            raise InputError(f"lattice density must be positive, got {density}")
        return (len(LATTICE_BASES[style]) / density) ** (1.0 / 3.0)
    if constant <= 0:
        raise InputError(f"lattice constant must be positive, got {constant}")
    return float(constant)


#: the most atoms a system may hold (neighbour lists index atoms with int32)
MAX_ATOMS = 2**31 - 1


def lattice_positions(style: str, spacing: float, cells, first_cell=(0, 0, 0)) -> np.ndarray:
    """Sites of an ``nx x ny x nz`` block of a cubic lattice, in LAMMPS ``create_atoms`` order.

    Sites are ``(i + b) * spacing`` for cell indices ``i = first_cell + (0 .. cells - 1)`` and
    basis vectors ``b`` (fractional), looping z slowest, then y, x, basis fastest: the same
    floating-point operations as LAMMPS, so the same bits.  Returns shape (N, 3) float64.
    """
    basis = LATTICE_BASES[style]
    nx, ny, nz = (int(c) for c in np.broadcast_to(cells, (3,)))
    n_sites = float(nx) * ny * nz * len(basis)
    if min(nx, ny, nz) < 1 or n_sites > MAX_ATOMS:
        raise InputError(f"a lattice block of {nx} x {ny} x {nz} cells ({n_sites:.4g} sites) is outside "
                         f"1 .. {MAX_ATOMS:.4g} atoms (pycumd indexes atoms with 32-bit integers)")
    x0, y0, z0 = (int(c) for c in first_cell)
    k, j, i = np.meshgrid(np.arange(z0, z0 + nz), np.arange(y0, y0 + ny), np.arange(x0, x0 + nx),
                          indexing="ij")
    cell = np.stack([i.ravel(), j.ravel(), k.ravel()], axis=1).astype(np.float64)
    sites = cell[:, None, :] + basis[None, :, :]
    return (sites * spacing).reshape(-1, 3)


def lattice_system(style: str, cells, *, units="lj", density=None, constant=None,
                   mass: float = 1.0) -> System:
    """A box of ``cells`` lattice cells filled with one atom type.

    Parameters
    ----------
    style : {"sc", "bcc", "fcc"}
    cells : int or (3,) ints
    units : str or UnitSystem
    density : float, optional
        Reduced number density (lj units), as in LAMMPS ``lattice fcc 0.8442``.
    constant : float, optional
        Lattice constant (length units), e.g. 5.256 for the seed's argon sc lattice.
    mass : float
        Mass of the single atom type (mass units).
    """
    a = lattice_spacing(style, units, density=density, constant=constant)
    n_cells = np.broadcast_to(np.asarray(cells, dtype=int), (3,))
    if (n_cells < 1).any():
        raise InputError(f"cells must be positive, got {n_cells.tolist()}")
    return System(Box(n_cells * a), lattice_positions(style, a, n_cells), [mass], units)


def create_velocities(system: System, temperature: float, seed: int, *,
                      distribution: str = "uniform", loop: str = "geom",
                      zero_momentum: bool = True, zero_rotation: bool = False) -> None:
    """Give ``system`` random velocities at ``temperature`` (in place), as LAMMPS ``velocity create``.

    Steps, in LAMMPS' order: draw a raw velocity per atom; scale it by ``1/sqrt(m_i)``;
    remove the centre-of-mass momentum (when ``zero_momentum``); remove the rotation about the
    centre of mass (when ``zero_rotation``, LAMMPS ``rot yes``); rescale all velocities so that the
    temperature (dof = 3N - 3) is exactly ``temperature``.

    Parameters
    ----------
    temperature : float
        Target temperature (temperature units), > 0.
    seed : int
        Random seed, > 0.
    distribution : {"uniform", "gaussian"}
    loop : {"geom", "all", "local"}
        ``geom`` reproduces LAMMPS ``loop geom``: each atom's velocity is a function of its
        position and the seed only (LAMMPS' Park-Miller generator reseeded per atom), so the
        result is independent of atom order and of the number of processes.  ``all`` reproduces
        LAMMPS ``loop all`` (its default): one generator drawn in atom-id order.  ``local`` draws
        from NumPy's PCG64 generator in atom order (not a LAMMPS mode).
    """
    if temperature <= 0:
        raise InputError(f"velocity temperature must be positive, got {temperature}")
    if seed <= 0:
        raise InputError(f"velocity seed must be a positive integer, got {seed}")
    if distribution not in ("uniform", "gaussian"):
        raise InputError(f"unknown velocity distribution {distribution!r}: uniform or gaussian")
    n = system.n_atoms
    if loop == "geom":
        from .lammps_random import loop_geom_velocities

        raw = loop_geom_velocities(system.positions + np.asarray(system.box.origin), seed,
                                   distribution=distribution)
    elif loop == "all":
        from .lammps_random import RanPark

        rng = RanPark(seed)
        draw = rng.uniform if distribution == "uniform" else rng.gaussian
        offset = 0.5 if distribution == "uniform" else 0.0
        raw = np.empty((n, 3))
        for i in np.argsort(system.ids, kind="stable"):
            raw[i] = [draw() - offset, draw() - offset, draw() - offset]
    elif loop == "local":
        rng = np.random.default_rng(seed)
        raw = rng.random((n, 3)) - 0.5 if distribution == "uniform" else rng.standard_normal((n, 3))
    else:
        raise InputError(f"unknown velocity loop {loop!r}: geom, all or local")
    from .lammps_random import finish_velocity_create

    unwrapped = system.unwrapped_positions() + np.asarray(system.box.origin) if zero_rotation else None
    system.velocities = finish_velocity_create(raw, system.per_atom_mass, temperature, zero_momentum,
                                               mvv2e=system.units.mvv2e, boltz=system.units.boltz,
                                               unwrapped=unwrapped)
