"""LAMMPS thermo keywords: one table used by ``thermo_style custom``, ``compute`` and ``fix ave/time``.

Each keyword has LAMMPS' column name (``pe`` -> ``PotEng``), whether it is extensive (divided by the
number of atoms when thermo output is normalised: ``thermo_modify norm yes``, the default in ``lj``
units) and a function of a :class:`ThermoState` (the quantities of one step, each reduced at most
once). The definitions follow LAMMPS' ``Thermo::compute_*`` (22 Jul 2025):

* ``temp``: ``2 KE / (dof k_B)`` with ``dof = 3N - 3``; ``ke``: ``0.5 dof k_B temp`` (as LAMMPS
  computes it from the temperature);
* ``press``: ``(dof k_B T + W) / (3V) nktv2p``; ``pxx``...: ``(sum m v_a v_b mvv2e + W_ab) / V nktv2p``;
* ``etotal = pe + ke``; ``enthalpy = etotal + press vol / nktv2p`` (``vol / N`` when normalised);
* ``density = sum m mv2d / V``; ``fmax``: the largest force component; ``fnorm``: ``sqrt(sum f^2)``;
* ``cpu``: wall seconds since the run's set-up; ``elapsed``: steps since the run's start; ``elaplong``: since
  its ``run ... start S`` step, else the same.

Computes (``compute ID all temp|pe|ke|pressure``) are the same quantities under another name:
``c_ID`` (``c_ID[1..6]`` for the pressure tensor and the kinetic-energy tensor of a temp compute),
extensive for ``pe`` and ``ke``. ``compute ID all temp/region R`` is the temperature of the atoms inside
region R at that step, with ``3 n - 3`` degrees of freedom for the ``n`` atoms inside (LAMMPS'
``ComputeTempRegion::compute_scalar``: ``dimension * count - extra_dof``).

Equal-style variables (``v_name``) are LAMMPS formulas (:mod:`pycumd.outputs.lammps_variables`) whose
thermo keywords, ``c_ID``/``c_ID[k]`` and ``f_ID``/``f_ID[k]`` are looked up here, at the step they
are evaluated: thermo keywords normalised as thermo output is (LAMMPS' ``Thermo::evaluate_keyword``),
computes and fixes not. ``f_ID`` is the latest average of a ``fix ave/time`` (0 before its first).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .lammps_variables import LammpsScriptError, VariableTable

#: keyword -> (column name, extensive); the functions are in _VALUES
KEYWORDS = {
    "step": ("Step", False), "elapsed": ("Elapsed", False), "elaplong": ("Elaplong", False),
    "dt": ("Dt", False), "time": ("Time", False), "cpu": ("CPU", False), "tpcpu": ("T/CPU", False),
    "spcpu": ("S/CPU", False), "atoms": ("Atoms", False), "temp": ("Temp", False),
    "press": ("Press", False), "pe": ("PotEng", True), "ke": ("KinEng", True),
    "etotal": ("TotEng", True), "enthalpy": ("Enthalpy", True), "evdwl": ("E_vdwl", True),
    "ecoul": ("E_coul", True), "epair": ("E_pair", True), "ebond": ("E_bond", True),
    "eangle": ("E_angle", True), "edihed": ("E_dihed", True), "eimp": ("E_impro", True),
    "emol": ("E_mol", True), "elong": ("E_long", True), "etail": ("E_tail", True),
    "vol": ("Volume", False), "density": ("Density", False),
    "lx": ("Lx", False), "ly": ("Ly", False), "lz": ("Lz", False),
    "xlo": ("Xlo", False), "xhi": ("Xhi", False), "ylo": ("Ylo", False), "yhi": ("Yhi", False),
    "zlo": ("Zlo", False), "zhi": ("Zhi", False), "xy": ("Xy", False), "xz": ("Xz", False),
    "yz": ("Yz", False), "pxx": ("Pxx", False), "pyy": ("Pyy", False), "pzz": ("Pzz", False),
    "pxy": ("Pxy", False), "pxz": ("Pxz", False), "pyz": ("Pyz", False),
    "fmax": ("Fmax", False), "fnorm": ("Fnorm", False), "nbuild": ("Nbuild", False),
}

#: LAMMPS thermo_style one
ONE = ("step", "temp", "epair", "emol", "etotal", "press")

#: compute styles pycumd has, and the thermo keyword each one is (temp/region, msd, rdf: their own, below)
COMPUTE_STYLES = {"temp": "temp", "pe": "pe", "ke": "ke", "pressure": "press", "temp/region": None,
                  "msd": None, "rdf": None}

#: mass * mv2d / volume -> density (g/cm^3 from g/mol and Angstrom^3 in real and metal)
_MV2D = {"lj": 1.0, "real": 1.0 / 0.602214129, "metal": 1.0 / 0.602214129}

_TENSOR = {"pxx": (0, 0), "pyy": (1, 1), "pzz": (2, 2), "pxy": (0, 1), "pxz": (0, 2), "pyz": (1, 2)}
_VIRIAL_COLUMN = {(0, 0): 0, (1, 1): 1, (2, 2): 2, (0, 1): 3, (0, 2): 4, (1, 2): 5}


class ThermoState:
    """The quantities of one step of a simulation, each computed at most once.

    Parameters
    ----------
    simulation : Simulation
        At a step where per-atom energies and virials are current (a reporter that declares
        ``Needs(energy=True)``, or after ``simulation.thermo_row()``).
    run_start : int
        Step of the current run's start (``elapsed``).
    wall_start : float
        ``time.perf_counter()`` at the run's set-up (``cpu``).
    """

    def __init__(self, simulation, run_start: int = 0, wall_start: float | None = None,
                 norm: bool | None = None, names: "Names | None" = None):
        self.sim = simulation
        self.run_start = run_start
        self.wall_start = wall_start
        #: thermo_modify norm, for thermo keywords inside variables (None: the units' default)
        self.norm = simulation.units.normalize_thermo if norm is None else norm
        self.names = names or Names()
        #: evaluated after a run (print), not during one: LAMMPS then takes a fix's latest value as it is
        self.between_runs = False
        self._cache: dict = {}

    def _once(self, key, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def n_atoms(self) -> int:
        return int(self.sim.state.n_atoms)

    @property
    def dof(self) -> int:
        return max(self.sim.degrees_of_freedom(), 1)

    def temp(self) -> float:
        return self._once("temp", lambda: 2.0 * self.sim.kinetic_energy() / (self.dof * self.sim.units.boltz))

    def ke(self) -> float:
        return 0.5 * self.dof * self.sim.units.boltz * self.temp()

    def pe(self) -> float:
        return self._once("pe", self.sim.potential_energy)

    def virial(self) -> np.ndarray:
        """Sum over atoms of the per-atom virial: xx, yy, zz, xy, xz, yz (energy units)."""
        def total():
            s, b = self.sim.state, self.sim.backend
            w = np.asarray(s.values("virial", b).sum(axis=0).tolist(), dtype=np.float64)
            w = w + np.asarray(self.sim.forces.global_energy_virial()[1], dtype=np.float64)   # k-space's
            constraints = self.sim.constraint_virial()          # fix shake's forces
            return w if constraints is None else w + constraints
        return self._once("virial", total)

    def ke_tensor(self) -> np.ndarray:
        """``sum m v_a v_b mvv2e`` (xx, yy, zz, xy, xz, yz), as LAMMPS' compute temp vector."""
        def tensor():
            s, b = self.sim.state, self.sim.backend
            v, m = s.values("velocities", b), s.values("per_atom_mass", b)
            cols = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
            return np.array([float((m * v[:, a] * v[:, c]).sum()) for a, c in cols]) * self.sim.units.mvv2e
        return self._once("ke_tensor", tensor)

    def volume(self) -> float:
        return float(np.prod(self.sim.box.lengths))

    def press(self) -> float:
        u = self.sim.units
        w = self.virial()
        return (self.dof * u.boltz * self.temp() + w[0] + w[1] + w[2]) / 3.0 / self.volume() * u.nktv2p

    def press_tensor(self, a: int, c: int) -> float:
        if getattr(self.sim.forces, "scalar_pressure_only", False):     # kspace_style msm, pressure/scalar yes
            raise ValueError("Must use 'kspace_modify pressure/scalar no' for tensor components with kspace_style "
                             "msm (LAMMPS' error): its virial is only a scalar (E/3 on the diagonal)")
        col = _VIRIAL_COLUMN[(a, c)]
        return (self.ke_tensor()[col] + self.virial()[col]) / self.volume() * self.sim.units.nktv2p

    def in_region(self, region) -> tuple:
        """LAMMPS compute temp/region over ``region``: the number of atoms inside it now (positions as
        integrated, as LAMMPS' ``Region::match`` sees them) and their ``sum m v_a v_b mvv2e`` (xx, yy,
        zz, xy, xz, yz)."""
        def compute():
            s, b = self.sim.state, self.sim.backend
            x = s.values("positions", b)[:, :3] + np.asarray(self.sim.box.origin)
            inside = region_contains(region, np.asarray(x, dtype=np.float64))
            v = np.asarray(s.values("velocities", b), dtype=np.float64)[inside]
            m = np.asarray(s.values("per_atom_mass", b), dtype=np.float64)[inside]
            cols = [(0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)]
            tensor = np.array([float((m * v[:, a] * v[:, c]).sum()) for a, c in cols]) * self.sim.units.mvv2e
            return int(inside.sum()), tensor
        return self._once(("region", region), compute)

    def msd(self, compute: "Compute") -> np.ndarray:
        """LAMMPS compute msd now: ``[<dx^2>, <dy^2>, <dz^2>, <|d|^2>]`` from the compute's reference
        (:class:`MSDReference`), unwrapped positions from the image flags."""
        def value():
            from ..analysis import msd_from_reference

            reference = compute.reference
            if reference is None or reference.positions is None:
                raise ValueError(f"compute msd {compute.id}: its reference positions were not taken (a run "
                                 f"continued from a checkpoint does not carry them)")
            if getattr(self.sim, "decomposition", None) is not None:
                raise NotImplementedError("compute msd over MPI ranks is not supported")
            s, b = self.sim.state, self.sim.backend
            ids = np.asarray(b.to_host(s.ids))
            order = np.argsort(ids, kind="stable")
            at = np.searchsorted(ids[order], reference.ids)     # the group's atoms, in id order
            if len(ids) == 0 or at.max(initial=0) >= len(ids) or not np.array_equal(ids[order][at], reference.ids):
                raise ValueError(f"compute msd {compute.id}: atoms it was defined with are gone")
            order = order[at]
            x = s.host_positions(b) + np.asarray(b.to_host(s.images), dtype=np.float64) * np.asarray(self.sim.box.L)
            x = x[order]
            centre = None
            if reference.com:
                m = np.asarray(s.host_values("per_atom_mass", b), dtype=np.float64)[order]
                centre = (m[:, None] * x).sum(axis=0) / m.sum()
            return msd_from_reference(x, reference.positions, centre)
        return self._once(("msd", compute.id), value)

    def rdf(self, compute: "Compute") -> np.ndarray:
        """LAMMPS compute rdf now: (bins, 1 + 2 pairs) bin centre, then g(r) and coordination per type
        pair (:func:`pycumd.analysis.lammps_rdf`); the cutoff is the compute's or the largest pair cutoff."""
        def value():
            from ..analysis import lammps_rdf

            if getattr(self.sim, "decomposition", None) is not None:
                raise NotImplementedError("compute rdf over MPI ranks is not supported")
            bins, cutoff, pairs = compute.options
            if cutoff is None:
                cutoff = float(self.sim.potential.max_cutoff(self.sim.n_types))
            s, b = self.sim.state, self.sim.backend
            positions = s.values("positions", b)            # composite precision: on the host
            types = b.to_host(s.types) if isinstance(positions, np.ndarray) else s.types
            return lammps_rdf(positions, self.sim.box.L, cutoff, int(bins), types, pairs)
        return self._once(("rdf", compute.id), value)

    def compute_vector(self, compute: "Compute") -> np.ndarray:
        """The global vector of a compute (fix ave/time mode vector): msd (4), temp and temp/region
        (kinetic tensor, 6), pressure (6)."""
        if compute.style == "msd":
            return self.msd(compute)
        if compute.style == "temp":
            return self.ke_tensor()
        if compute.style == "temp/region":
            return self.in_region(compute.region)[1]
        if compute.style == "pressure":
            return np.array([self.press_tensor(*ac) for ac in _TENSOR.values()])
        raise ValueError(f"compute {compute.style} {compute.id} has no global vector")

    def temp_region(self, region) -> float:
        """``sum m v^2 mvv2e / (dof k_B)`` over the atoms inside, ``dof = 3 count - 3`` (0 if dof <= 0)."""
        count, tensor = self.in_region(region)
        dof = 3 * count - 3
        return float(tensor[:3].sum()) / (dof * self.sim.units.boltz) if dof > 0 else 0.0

    def variable(self, name: str) -> float:
        """The equal-style variable ``name`` evaluated now (its formula's thermo keywords, computes and
        fixes from this state)."""
        return self.names.evaluate(name, lambda word, index: formula_value(self, word, index))

    def forces(self) -> np.ndarray:
        return self._once("forces", lambda: self.sim.state.values("forces", self.sim.backend)[:, :3])

    def density(self) -> float:
        name = self.sim.units.name
        if name not in _MV2D:
            raise NotImplementedError(f"thermo keyword density in {name} units is not supported")
        s, b = self.sim.state, self.sim.backend
        mass = float(s.values("per_atom_mass", b).sum())
        return mass * _MV2D[name] / self.volume()

    def value(self, keyword: str, norm: bool):
        """The value of a thermo keyword, divided by N if it is extensive and ``norm``."""
        if keyword not in KEYWORDS:
            raise KeyError(f"thermo keyword {keyword!r} is not supported")
        raw = _VALUES[keyword](self)
        raw = raw if isinstance(raw, int) else float(raw)
        if KEYWORDS[keyword][1] and norm and self.n_atoms:
            return raw / self.n_atoms
        return raw


def _box(index: int, side: str):
    def value(t: ThermoState) -> float:
        lo = float(t.sim.box.origin[index])
        return lo if side == "lo" else lo + float(t.sim.box.lengths[index])
    return value


def _cpu(t: ThermoState) -> float:
    return 0.0 if t.wall_start is None else time.perf_counter() - t.wall_start


def _no_molecular(t: ThermoState) -> float:
    return 0.0


def _bonded(t: ThermoState) -> dict:
    """Bond, angle, dihedral and improper energies (energy units; empty without molecular terms)."""
    t.pe()                               # per-atom energies current
    return t._once("bonded", lambda: dict(t.sim.book.bonded_energies()))


def _bonded_value(kind: str):
    return lambda t: _bonded(t).get(kind, 0.0)


def _emol(t: ThermoState) -> float:
    return float(sum(_bonded(t).values()))


def _epair(t: ThermoState) -> float:
    """The pair energy: the potential energy less the bonded terms' (LAMMPS' evdwl + ecoul + elong)."""
    return t.pe() - _emol(t)


def _coulomb(t: ThermoState) -> dict:
    """The real-space and k-space Coulomb energies of a long-range Coulomb evaluator (empty otherwise)."""
    t.pe()                               # per-atom energies current
    return t._once("coulomb", lambda: dict(t.sim.forces.coulomb_energies()))


def _ecoul(t: ThermoState) -> float:
    parts = _coulomb(t)
    if parts:
        return float(parts["ecoul"])
    return _epair(t) - _evdwl(t)


def _evdwl(t: ThermoState) -> float:
    parts = _coulomb(t)
    if parts:                            # LAMMPS: epair = evdwl + ecoul + elong
        return _epair(t) - float(parts["ecoul"]) - float(parts["elong"])
    if getattr(t.sim.forces, "has_coulomb", False):
        raise NotImplementedError("thermo keywords evdwl and ecoul need the pair energy split into van der "
                                  "Waals and Coulomb parts, which pycumd does not keep: use pe or epair")
    return _epair(t)


def _fmax(t: ThermoState) -> float:
    f = t.forces()
    return float(abs(f).max()) if len(f) else 0.0


_VALUES = {
    "step": lambda t: int(t.sim.step),
    "elapsed": lambda t: int(t.sim.step) - t.run_start,
    "elaplong": lambda t: int(t.sim.step) - (t.sim.ramp[0] if getattr(t.sim, "ramp", None) else t.run_start),
    "dt": lambda t: float(t.sim.integrator.dt),
    "time": lambda t: float(t.sim.time),
    "cpu": _cpu,
    "tpcpu": lambda t: math.nan,
    "spcpu": lambda t: math.nan,
    "atoms": lambda t: t.n_atoms,
    "temp": ThermoState.temp,
    "press": ThermoState.press,
    "pe": ThermoState.pe,
    "ke": ThermoState.ke,
    "etotal": lambda t: t.pe() + t.ke(),
    "enthalpy": None,                 # set below: it needs the normalisation flag
    "evdwl": _evdwl,
    "ecoul": _ecoul,
    "epair": _epair,
    "ebond": _bonded_value("bond"), "eangle": _bonded_value("angle"), "edihed": _bonded_value("dihedral"),
    "eimp": _bonded_value("improper"), "emol": _emol, "elong": lambda t: float(_coulomb(t).get("elong", 0.0)),
    "etail": _no_molecular,
    "vol": ThermoState.volume,
    "density": ThermoState.density,
    "lx": lambda t: float(t.sim.box.lengths[0]),
    "ly": lambda t: float(t.sim.box.lengths[1]),
    "lz": lambda t: float(t.sim.box.lengths[2]),
    "xlo": _box(0, "lo"), "xhi": _box(0, "hi"), "ylo": _box(1, "lo"), "yhi": _box(1, "hi"),
    "zlo": _box(2, "lo"), "zhi": _box(2, "hi"),
    "xy": _no_molecular, "xz": _no_molecular, "yz": _no_molecular,
    **{k: (lambda t, ac=ac: t.press_tensor(*ac)) for k, ac in _TENSOR.items()},
    "fmax": _fmax,
    "fnorm": lambda t: float(np.sqrt((t.forces() ** 2).sum())),
    "nbuild": lambda t: int(t.sim.neighbors.n_builds),
}
# enthalpy = etotal + press * vol / nktv2p: extensive as a whole (etotal and vol both divided by N)
_VALUES["enthalpy"] = lambda t: t.pe() + t.ke() + t.press() * t.volume() / t.sim.units.nktv2p


def region_contains(region, x: np.ndarray) -> np.ndarray:
    """Mask of the points ``x`` (box coordinates) inside a region, as LAMMPS' ``Region::match``:
    ``("block", (xlo, xhi, ylo, yhi, zlo, zhi))`` closed, ``("sphere", (cx, cy, cz, r))`` with
    ``sqrt(dx^2 + dy^2 + dz^2) <= r``."""
    style, p = region
    if style == "sphere":
        d = x - np.asarray(p[:3])
        return np.sqrt(d[:, 0] * d[:, 0] + d[:, 1] * d[:, 1] + d[:, 2] * d[:, 2]) <= p[3]
    lo_hi = np.asarray(p, dtype=np.float64).reshape(3, 2)
    return ((x >= lo_hi[:, 0]) & (x <= lo_hi[:, 1])).all(axis=1)


class MSDReference:
    """The positions a ``compute msd`` measures displacements from (LAMMPS keeps them in a per-atom
    fix STORE): those of the compute's group, unwrapped (``x + image L``, relative to the box origin),
    in id order, taken where the compute is defined; with ``com``, minus the group's centre of mass
    (LAMMPS' ``Group::xcm``)."""

    def __init__(self, com: bool):
        self.com = bool(com)
        self.ids: np.ndarray | None = None
        self.positions: np.ndarray | None = None

    def capture(self, system, members: np.ndarray | None = None) -> None:
        """Take the reference from a :class:`~pycumd.system.System`; ``members``: mask of the group's
        atoms (None: all)."""
        keep = np.ones(system.n_atoms, bool) if members is None else np.asarray(members, bool)
        ids = np.asarray(system.ids)[keep]
        order = np.argsort(ids, kind="stable")
        x = (system.positions + system.images * np.asarray(system.box.L))[keep][order]
        if self.com and len(x):
            m = np.asarray(system.per_atom_mass, dtype=np.float64)[keep][order]
            x = x - (m[:, None] * x).sum(axis=0) / m.sum()
        self.ids, self.positions = ids[order], x


@dataclass(frozen=True)
class Compute:
    """A LAMMPS ``compute ID all STYLE`` (``style`` one of COMPUTE_STYLES).

    ``region``: for temp/region, the region as :func:`region_contains` takes it (box units);
    ``options``: msd ``(com,)``, rdf ``(bins, cutoff or None, type pairs or None)``; ``reference``: msd's
    :class:`MSDReference` (not part of the settings: it is taken while the plan runs)."""

    id: str
    style: str
    region: tuple | None = None
    options: tuple = ()
    reference: object = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.style not in COMPUTE_STYLES:
            raise ValueError(f"compute style {self.style} is not supported "
                             f"({', '.join(COMPUTE_STYLES)})")
        if (self.style == "temp/region") != (self.region is not None):
            raise ValueError("compute temp/region needs a region (and only it does)")

    @property
    def extensive(self) -> bool:
        return self.style in ("pe", "ke")

    @property
    def vector_size(self) -> int:
        """Length of the global vector ``c_ID[1..n]`` (pressure tensor; temp: kinetic tensor; msd: 4), 0: none."""
        return {"pressure": 6, "temp": 6, "temp/region": 6, "msd": 4}.get(self.style, 0)

    @property
    def array_columns(self) -> int:
        """Columns of the global array (rdf: bin centre, then g and coordination per type pair), 0: none."""
        if self.style != "rdf":
            return 0
        pairs = self.options[2]
        return 1 + 2 * (len(pairs) if pairs is not None else 1)

    def spec(self):
        """Plain values (stored in checkpoints with fix ave/time); :meth:`from_spec` reads them back."""
        if self.options:
            return {"style": self.style, "options": list(self.options)}
        return self.style if self.region is None else [self.style, self.region[0], list(self.region[1])]

    @classmethod
    def from_spec(cls, cid: str, spec) -> "Compute":
        if isinstance(spec, str):
            return cls(cid, spec)
        if isinstance(spec, dict):
            return cls(cid, spec["style"], options=tuple(spec["options"]))
        return cls(cid, spec[0], (spec[1], tuple(float(v) for v in spec[2])))


@dataclass
class Names:
    """What ``c_ID``, ``f_ID`` and ``v_name`` refer to in thermo output, fix ave/time and print.

    computes : compute ID -> :class:`Compute`
    variables : the script's variables (:meth:`pycumd.outputs.lammps_variables.VariableTable.snapshot`)
    fixes : fix ave/time ID -> its number of values (``f_ID`` for one, ``f_ID[k]`` for several)
    """

    computes: dict = field(default_factory=dict)
    variables: dict = field(default_factory=dict)
    fixes: dict = field(default_factory=dict)
    _reader_of_variables: object = field(default=None, init=False, repr=False, compare=False)

    def _reader(self):
        """A script reader holding ``variables`` (made once): the one evaluator of LAMMPS formulas."""
        if self._reader_of_variables is None:
            self._reader_of_variables = VariableTable.from_snapshot(self.variables)
        return self._reader_of_variables

    def evaluate(self, name: str, runtime) -> float:
        """Equal-style variable ``name`` with ``runtime(word, index)`` giving the simulation's values."""
        try:
            return self._reader().evaluate(f"v_{name}", runtime)
        except LammpsScriptError as exc:
            raise ValueError(f"v_{name}: {exc.message}") from None

    def check_variable(self, name: str) -> None:
        """Raise ValueError if ``v_name`` cannot be evaluated in a run: an unknown variable, one that is
        not equal-style, or a formula naming an unknown thermo keyword, compute or fix."""
        style = self.variables.get(name, [None])[0]
        if style is None:
            raise ValueError(f"v_{name}: variable {name!r} is not defined")
        if style not in ("equal", "internal", "format"):
            raise ValueError(f"v_{name}: {style}-style variables are not supported in thermo output, "
                             f"fix ave/time or print (equal-style are)")
        try:
            self._reader().check_names(f"v_{name}", self.placeholder)
        except LammpsScriptError as exc:
            raise ValueError(f"v_{name}: {exc.message}") from None

    def check_text(self, text: str) -> None:
        """Raise ValueError if the ``$`` references of a print text name something unknown."""
        try:
            self._reader().check_names(text, self.placeholder, text=True)
        except LammpsScriptError as exc:
            raise ValueError(exc.message) from None

    def substitute(self, text: str, runtime) -> str:
        """The ``$`` references of a print text replaced with the values ``runtime`` gives."""
        try:
            return self._reader().substitute_at_run(text, runtime)
        except LammpsScriptError as exc:
            raise ValueError(exc.message) from None

    def placeholder(self, word: str, index: int | None) -> float:
        """A stand-in value of a name in a formula, or ValueError naming what is not known."""
        if index is None and word in KEYWORDS:
            return 1.2345678
        if word.startswith(("c_", "f_")):
            parse_column(word if index is None else f"{word}[{index}]", self)
            return 1.2345678
        raise ValueError(f"thermo keyword {word!r} is not supported")


def parse_column(word: str, names: "Names | dict") -> tuple:
    """A thermo_style custom / fix ave/time item as ``(kind, what, index)``: ``("keyword", kw, None)``,
    ``("compute", Compute, None | k)``, ``("fix", ID, None | k)`` or ``("variable", name, None)``;
    ``names``: a :class:`Names` (or a dict of computes). Raises ValueError naming what is not supported
    or not defined (variables are checked by :meth:`Names.check_variable`)."""
    if isinstance(names, dict):
        names = Names(computes=names)
    if word in KEYWORDS:
        return ("keyword", word, None)
    if word.startswith(("c_", "f_", "v_")):
        name, index = word[2:], None
        if "[" in name:
            if not name.endswith("]") or word.startswith("v_"):
                raise ValueError(f"bad reference {word}")
            name, index = name[:-1].split("[", 1)
            if not index.isdigit() or int(index) < 1:
                raise ValueError(f"bad index in {word}")
            index = int(index)
        if word.startswith("v_"):
            return ("variable", name, None)
        if word.startswith("f_"):
            if name not in names.fixes:
                raise ValueError(f"fix ID {name!r} in {word} is not a fix ave/time defined so far "
                                 f"(f_ID of other fix styles is not supported)")
            n_values = names.fixes[name]
            if index is None and n_values != 1:
                raise ValueError(f"{word}: fix ave/time {name} has {n_values} values: use f_{name}[1..{n_values}]")
            if index is not None and (n_values == 1 or index > n_values):
                raise ValueError(f"{word}: fix ave/time {name} has no value {index} "
                                 f"({'one value: use f_' + name if n_values == 1 else f'values 1..{n_values}'})")
            return ("fix", name, index)
        if name not in names.computes:
            raise ValueError(f"compute ID {name!r} in {word} is not defined")
        compute = names.computes[name]
        if compute.array_columns:
            raise ValueError(f"{word}: compute {compute.style} {name} is a global array: use its columns in "
                             f"fix ave/time ... mode vector (c_{name}[*] or c_{name}[1..{compute.array_columns}])")
        if compute.style == "msd" and index is None:
            raise ValueError(f"{word}: compute msd {name} is a global vector: use c_{name}[1..4]")
        if index is not None and not 1 <= index <= compute.vector_size:
            raise ValueError(f"{word}: compute {compute.style} has no vector element {index} "
                             f"(pressure, temp and temp/region have c_ID[1..6], msd c_ID[1..4])")
        return ("compute", compute, index)
    raise ValueError(f"thermo keyword {word!r} is not supported")


def column_name(word: str) -> str:
    """The header LAMMPS prints for a thermo item (``pe`` -> ``PotEng``; ``c_ID``, ``v_name`` stay)."""
    return KEYWORDS[word][0] if word in KEYWORDS else word


def column_value(item: tuple, state: ThermoState, norm: bool):
    """The value of a parsed item (:func:`parse_column`), divided by N if ``norm`` and it is extensive
    (keywords, computes pe/ke, vectors of temp computes, fixes averaging those; never variables)."""
    kind, what, index = item
    if kind == "keyword":
        return state.value(what, norm)
    if kind == "variable":
        return state.variable(what)
    if kind == "fix":
        value, extensive = _fix_value(state, what, index)
        return value / state.n_atoms if norm and extensive and state.n_atoms else value
    if what.style == "msd":
        return float(state.msd(what)[index - 1])
    if what.style == "temp/region":
        if index is None:
            return state.temp_region(what.region)
        value, extensive = float(state.in_region(what.region)[1][index - 1]), True
    elif index is not None and what.style == "temp":
        value, extensive = float(state.ke_tensor()[index - 1]), True
    elif index is not None:
        return float(state.press_tensor(*list(_TENSOR.values())[index - 1]))
    else:
        return state.value(COMPUTE_STYLES[what.style], norm and what.extensive)
    return value / state.n_atoms if norm and extensive and state.n_atoms else value


def formula_value(state: ThermoState, word: str, index: int | None) -> float:
    """A name inside a variable's formula: a thermo keyword (normalised as thermo output,
    ``state.norm``), ``c_ID``/``c_ID[k]`` or ``f_ID``/``f_ID[k]`` (not normalised)."""
    if index is None and word in KEYWORDS:
        return float(state.value(word, state.norm))
    if word.startswith(("c_", "f_")):
        item = parse_column(word if index is None else f"{word}[{index}]", state.names)
        if item[0] == "fix" and not state.between_runs:      # LAMMPS' Variable::evaluate during a run
            nfreq = _fix_reporter(state, item[1]).output.nfreq
            if state.sim.step % nfreq:
                raise ValueError(f"{word}: fix ave/time {item[1]} is not computed at step {state.sim.step} "
                                 f"(every {nfreq} steps); LAMMPS stops here too")
        return float(column_value(item, state, False))
    raise ValueError(f"thermo keyword {word!r} is not supported")


def _fix_reporter(state: ThermoState, fix_id: str):
    """The reporter of fix ave/time ``fix_id`` in this run."""
    for reporter in state.sim.reporters:
        if getattr(reporter, "fix_id", None) == fix_id and reporter.active:
            return reporter
    raise ValueError(f"f_{fix_id}: fix ave/time {fix_id} is not defined in this run")


def _fix_value(state: ThermoState, fix_id: str, index: int | None) -> tuple:
    """(value, extensive) of fix ave/time ``fix_id``: its latest average, from its reporter."""
    return _fix_reporter(state, fix_id).value(index, state.sim)


class ThermoStyle:
    """LAMMPS ``thermo_style custom ...`` with ``thermo_modify norm``: the columns of the thermo output.

    Parameters
    ----------
    words : list of str
        Keywords and ``c_ID`` references, as in the command.
    computes : dict
        ``compute`` ID -> :class:`Compute` defined so far.
    norm : bool or None
        Divide extensive values by N; None: the unit system's default (yes in lj units only).
    """

    def __init__(self, words, names: "Names | dict", norm: bool | None = None):
        if not words:
            raise ValueError("thermo_style custom needs at least one keyword")
        self.words = list(words)
        self.lookup = Names(computes=names) if isinstance(names, dict) else names
        self.items = [parse_column(w, self.lookup) for w in self.words]
        self.names = [column_name(w) for w in self.words]
        self.norm = norm
        self.where = ""          # FILE:LINE of the thermo_style command (bind), for errors while running

    def fix_items(self) -> list:
        """The ``f_ID`` / ``f_ID[k]`` columns: ``(word, fix ID)``."""
        return [(w, what) for w, (kind, what, _) in zip(self.words, self.items) if kind == "fix"]

    def bind(self, names: "Names", norm: bool | None, where: str = "") -> "ThermoStyle":
        """This style for a run: ``names`` as they are at the ``run`` command (variables, computes and
        fixes, checked now), ``norm`` the thermo_modify norm then (None: the units' default); ``where``
        (``FILE:LINE`` of the thermo_style command) prefixes errors met while running (divide by 0 ...)."""
        style = ThermoStyle(self.words, names, norm)
        style.where = where
        for kind, what, _ in style.items:
            if kind == "variable":
                names.check_variable(what)
        return style

    def row(self, simulation, run_start: int = 0, wall_start: float | None = None) -> dict:
        """Column name -> value at the simulation's current step (energies must be current)."""
        norm = simulation.units.normalize_thermo if self.norm is None else self.norm
        state = ThermoState(simulation, run_start, wall_start, norm, self.lookup)
        try:
            return {name: column_value(item, state, norm) for name, item in zip(self.names, self.items)}
        except ValueError as exc:
            where = f"{self.where}: " if self.where else ""
            raise ValueError(f"{where}thermo_style custom at step {simulation.step}: {exc}") from None


#: thermo_style one as a ThermoStyle (the default columns)
def one_style(norm: bool | None = None) -> ThermoStyle:
    return ThermoStyle(list(ONE), {}, norm)


#: LAMMPS ``thermo_style multi``'s keywords (printed as columns, not in LAMMPS' multi-line layout)
MULTI = ("step", "etotal", "ke", "temp", "pe", "ebond", "eangle", "edihed", "eimp", "evdwl", "ecoul", "elong", "press")


__all__ = ["Compute", "COMPUTE_STYLES", "KEYWORDS", "MSDReference", "MULTI", "Names", "ONE", "ThermoState", "column_name",
           "column_value", "formula_value", "region_contains", "ThermoStyle", "one_style", "parse_column"]
