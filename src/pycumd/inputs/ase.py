"""ASE interoperability: a pycumd :class:`Calculator`, ``Atoms`` <-> :class:`~pycumd.system.System`,
and :func:`run` (pycumd's own integrators for N steps on an ``Atoms``).

Units are ASE's: eV, Angstrom, amu, and ASE's time unit ``Angstrom sqrt(amu / eV)`` for velocities
and time steps (``ase.units.fs`` is one femtosecond in it); pycumd works in its ``metal`` units
(eV, Angstrom, amu, ps), so potentials handed to this module take eV and Angstrom.

Atom types: pycumd potentials have 0-based types; ``type_map`` maps chemical symbols (or atomic
numbers) to them, by default the distinct atomic numbers in increasing order (``{"Ar": 0}`` for
argon, ``{"Na": 0, "Cl": 1}`` for NaCl).

Cells must be orthorhombic and periodic in x, y and z (pycumd has no triclinic boxes).  A cell
shorter than twice the cutoff takes every periodic image in range, as ASE's own calculators do.

Examples
--------
>>> from ase.build import bulk
>>> from pycumd import LennardJones
>>> atoms = bulk("Ar", "fcc", a=5.26, cubic=True).repeat(4)
>>> atoms.calc = Calculator(LennardJones(8.0, cutoff="shift").pair_coeff(0, 0, epsilon=0.0104, sigma=3.4))
>>> e = atoms.get_potential_energy()                                # eV
"""

from __future__ import annotations

import numpy as np

from ..box import Box
from ..system import InputError, System

#: pycumd's virial order (xx, yy, zz, xy, xz, yz) -> ASE's Voigt order (xx, yy, zz, yz, xz, xy)
VOIGT_FROM_VIRIAL = [0, 1, 2, 5, 4, 3]
PS_IN_ASE_TIME = None      # set on first use: 1 ps in ASE time units (1000 * ase.units.fs)


def _ase():
    try:
        import ase
        import ase.units
    except ImportError:                                    # pragma: no cover
        raise ImportError("the ASE interface needs ASE: pip install ase") from None
    return ase


def _ps() -> float:
    """One picosecond in ASE's time unit."""
    return 1000.0 * _ase().units.fs


def _type_map(numbers, type_map) -> dict:
    """Atomic number -> 0-based type."""
    from ase.data import atomic_numbers
    if type_map is None:
        return {int(z): t for t, z in enumerate(sorted(set(int(z) for z in numbers)))}
    out = {}
    for key, t in type_map.items():
        z = atomic_numbers.get(key) if isinstance(key, str) else int(key)
        if z is None:
            raise InputError(f"ase: type_map key {key!r} is not a chemical symbol")
        out[z] = int(t)
    missing = sorted(set(int(z) for z in numbers) - set(out))
    if missing:
        from ase.data import chemical_symbols
        raise InputError(f"ase: type_map has no type for {', '.join(chemical_symbols[z] for z in missing)}")
    return out


def check_cell(atoms) -> np.ndarray:
    """The box lengths of ``atoms``' cell (Angstrom); InputError unless periodic and orthorhombic."""
    if not np.all(atoms.pbc):
        raise InputError(f"ase: pycumd needs a cell periodic in x, y and z, got pbc={list(map(bool, atoms.pbc))}")
    cell = np.asarray(atoms.cell[:], dtype=np.float64)
    lengths = np.diag(cell).copy()
    off = cell - np.diag(lengths)
    if np.abs(off).max() > 1e-10 * max(lengths.max(), 1.0):
        raise InputError("ase: triclinic (non-orthorhombic) cells are not supported by pycumd; "
                         f"cell = {cell.round(6).tolist()}")
    if not (lengths > 0).all():
        raise InputError(f"ase: the cell lengths must be positive, got {lengths.tolist()}")
    return lengths


def atoms_to_system(atoms, type_map=None) -> System:
    """An ``ase.Atoms`` as a pycumd :class:`System` in ``metal`` units (ids 1..N in ``atoms`` order);
    ASE's initial charges, where set, become the per-atom charges (e).

    Masses are per type (amu; all atoms of a type must have the same mass); velocities are
    converted from ASE's time unit to Angstrom/ps.
    """
    lengths = check_cell(atoms)
    zmap = _type_map(atoms.numbers, type_map)
    types = np.array([zmap[int(z)] for z in atoms.numbers], dtype=np.int32)
    masses_per_atom = atoms.get_masses()
    n_types = int(types.max()) + 1 if len(types) else 1
    masses = np.ones(n_types)
    for t in range(n_types):
        m = masses_per_atom[types == t]
        if len(m) and np.ptp(m) > 1e-12 * m.max():
            raise InputError(f"ase: atoms of type {t} carry different masses; pycumd takes masses per type")
        if len(m):
            masses[t] = m[0]
    velocities = atoms.get_velocities() * _ps()
    charges = None
    if atoms.has("initial_charges"):                 # ASE's per-atom charges (e), the */coul/long styles' q
        charges = np.asarray(atoms.get_initial_charges(), dtype=np.float64)
    return System(Box(lengths), np.asarray(atoms.positions, dtype=np.float64), masses, "metal",
                  types=types, velocities=velocities, charges=charges)


def system_to_atoms(system: System, numbers=None):
    """A pycumd :class:`System` (metal units) as an ``ase.Atoms`` (unwrapped positions, in id order).

    ``numbers``: the atomic number of each type (default 18, argon, for every type).
    """
    ase = _ase()
    if system.units.name != "metal":
        raise InputError(f"ase: the system must be in metal units (eV, Angstrom), got {system.units.name}")
    numbers = [18] * system.n_types if numbers is None else list(numbers)
    if len(numbers) < system.n_types:
        raise InputError(f"ase: {len(numbers)} atomic numbers for {system.n_types} types")
    order = np.argsort(system.ids, kind="stable")
    types = system.types[order]
    atoms = ase.Atoms(numbers=[numbers[t] for t in types], positions=system.unwrapped_positions()[order],
                      cell=np.diag(system.box.L), pbc=True, masses=system.masses[types])
    atoms.set_velocities(system.velocities[order] / _ps())
    if system.charges is not None:
        atoms.set_initial_charges(system.charges[order])
    return atoms


def _calculator_base():
    from ase.calculators.calculator import Calculator as AseCalculator, all_changes
    return AseCalculator, all_changes


class _Lazy(type):
    """Build the ASE subclass on first use, so that importing pycumd does not import ASE."""

    _cls = None

    def __call__(cls, *args, **kwargs):
        return _make_calculator_class()(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, _make_calculator_class())


def _make_calculator_class():
    if _Lazy._cls is not None:
        return _Lazy._cls
    AseCalculator, all_changes = _calculator_base()

    class PycumdCalculator(AseCalculator):
        __doc__ = Calculator.__doc__
        implemented_properties = ["energy", "energies", "free_energy", "forces", "stress"]

        def __init__(self, potential, type_map=None, device: str = "cpu", precision: str = "double",
                     skin: float | None = None, pair_method: str = "auto", **kwargs):
            super().__init__(**kwargs)
            self.potential = potential
            self.type_map = type_map if type_map is not None else potential.atomic_number_types()
            self.options = dict(device=device, precision=precision, skin=skin, pair_method=pair_method)

        def calculate(self, atoms=None, properties=("energy",), system_changes=all_changes):
            super().calculate(atoms, properties, system_changes)
            from ..simulation import Simulation
            system = atoms_to_system(self.atoms, self.type_map)
            sim = Simulation(system, self.potential, **self.options)
            energy = sim.potential_energy()                                # builds the list, computes all
            b, s = sim.backend, sim.state
            order = np.argsort(b.to_host(s.ids), kind="stable")            # back to atoms order
            energies = np.asarray(b.to_host(s.values("energy", b)), dtype=np.float64)[order]
            forces = np.asarray(b.to_host(s.values("forces", b)), dtype=np.float64)[order]
            virial = np.asarray(b.to_host(s.values("virial", b)), dtype=np.float64).sum(axis=0)
            self.results = {"energy": energy, "free_energy": energy, "energies": energies, "forces": forces,
                            "stress": -virial[VOIGT_FROM_VIRIAL] / system.box.volume}
            sim.close()

    _Lazy._cls = PycumdCalculator
    return PycumdCalculator


class Calculator(metaclass=_Lazy):
    """An ASE calculator of a pycumd pair potential (eV, Angstrom).

    Parameters
    ----------
    potential : PairPotential
        Parameters in eV and Angstrom (metal units), types as in ``type_map``.
    type_map : dict, optional
        Chemical symbol or atomic number -> 0-based type; default the potential's own where it
        knows its elements (EAM: the atomic numbers its files give each type), else the distinct
        atomic numbers in increasing order.
    device : {"cpu", "cuda", "auto"}
    precision : str
        Default ``double``.
    skin : float, optional
        Neighbour-list skin (Angstrom), default 2.
    pair_method : {"auto", "neighbor", "all_pairs"}

    Notes
    -----
    ``implemented_properties``: ``energy`` and ``free_energy`` (eV; equal: no electronic
    entropy), ``energies`` (eV per atom, half of each pair to each atom), ``forces`` (eV/A),
    ``stress`` (eV/A^3, the potential part ``-W / V`` in ASE's sign and Voigt order xx, yy, zz,
    yz, xz, xy).  Results are cached by ASE's calculator machinery until the positions, cell,
    numbers or pbc change.
    """


def run(atoms, potential, steps: int, timestep: float, *, thermostat=None, type_map=None, device: str = "auto",
        precision: str = "auto", skin: float | None = None):
    """Run pycumd's velocity Verlet (optionally thermostatted) for ``steps`` steps on ``atoms``; return it.

    ``atoms`` is updated in place (unwrapped positions, velocities) and also returned; a pycumd
    :class:`Calculator` is attached with the final energy, forces and stress.

    Parameters
    ----------
    atoms : ase.Atoms
        Orthorhombic periodic cell; velocities as ASE stores them.
    potential : PairPotential or EAM
        eV and Angstrom.
    type_map : dict, optional
        As :class:`Calculator`'s.
    steps : int
    timestep : float
        In ASE time units (``2 * ase.units.fs``), as ``ase.md.VelocityVerlet`` takes it.
    thermostat : pycumd thermostat, optional
        E.g. ``NoseHoover(300.0, damping=0.1)`` (K, ps).
    """
    from ..integrators import VelocityVerlet
    from ..simulation import Simulation
    if steps < 0 or int(steps) != steps:
        raise InputError(f"ase.run: steps must be a non-negative integer, got {steps}")
    if not timestep > 0:
        raise InputError(f"ase.run: timestep must be positive, got {timestep}")
    type_map = type_map if type_map is not None else potential.atomic_number_types()
    system = atoms_to_system(atoms, type_map)
    sim = Simulation(system, potential, VelocityVerlet(dt=timestep / _ps(), thermostat=thermostat),
                     device=device, precision=precision, skin=skin)
    sim.run(int(steps), progress=False)
    final = sim.system()
    sim.close()
    atoms.positions = final.unwrapped_positions()
    atoms.set_velocities(final.velocities / _ps())
    atoms.calc = Calculator(potential, type_map=type_map, device=device,
                            precision="double" if precision == "auto" else precision, skin=skin)
    return atoms


__all__ = ["Calculator", "atoms_to_system", "check_cell", "run", "system_to_atoms"]
