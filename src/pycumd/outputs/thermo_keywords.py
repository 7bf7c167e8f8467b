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
* ``cpu``: wall seconds since the run's set-up; ``elapsed``/``elaplong``: steps since the run's start.

Computes (``compute ID all temp|pe|ke|pressure``) are the same quantities under another name:
``c_ID`` (``c_ID[1..6]`` for the pressure tensor), extensive for ``pe`` and ``ke``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

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

#: compute styles pycumd has, and the thermo keyword each one is
COMPUTE_STYLES = {"temp": "temp", "pe": "pe", "ke": "ke", "pressure": "press"}

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

    def __init__(self, simulation, run_start: int = 0, wall_start: float | None = None):
        self.sim = simulation
        self.run_start = run_start
        self.wall_start = wall_start
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
        return max(3 * self.n_atoms - 3, 1)

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
            return np.asarray(s.values("virial", b).sum(axis=0).tolist(), dtype=np.float64)
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
        col = _VIRIAL_COLUMN[(a, c)]
        return (self.ke_tensor()[col] + self.virial()[col]) / self.volume() * self.sim.units.nktv2p

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


def _evdwl(t: ThermoState) -> float:
    if getattr(t.sim.forces, "has_coulomb", False):
        raise NotImplementedError("thermo keywords evdwl and ecoul need the pair energy split into van der "
                                  "Waals and Coulomb parts, which pycumd does not keep: use pe or epair")
    return t.pe()


def _fmax(t: ThermoState) -> float:
    f = t.forces()
    return float(abs(f).max()) if len(f) else 0.0


_VALUES = {
    "step": lambda t: int(t.sim.step),
    "elapsed": lambda t: int(t.sim.step) - t.run_start,
    "elaplong": lambda t: int(t.sim.step) - t.run_start,
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
    "ecoul": lambda t: t.pe() - _evdwl(t),
    "epair": ThermoState.pe,
    "ebond": _no_molecular, "eangle": _no_molecular, "edihed": _no_molecular, "eimp": _no_molecular,
    "emol": _no_molecular, "elong": _no_molecular, "etail": _no_molecular,
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


@dataclass(frozen=True)
class Compute:
    """A LAMMPS ``compute ID all STYLE`` of a thermo quantity (``style`` one of COMPUTE_STYLES)."""

    id: str
    style: str

    def __post_init__(self):
        if self.style not in COMPUTE_STYLES:
            raise ValueError(f"compute style {self.style} is not supported "
                             f"({', '.join(COMPUTE_STYLES)})")

    @property
    def extensive(self) -> bool:
        return self.style in ("pe", "ke")


def parse_column(word: str, computes: dict) -> tuple:
    """A thermo_style custom / fix ave/time item as ``(kind, name, index)``: ``("keyword", kw, None)``
    or ``("compute", ID, None | 1..6)``; raises ValueError naming what is not supported."""
    if word in KEYWORDS:
        return ("keyword", word, None)
    if word.startswith("c_"):
        name, index = word[2:], None
        if "[" in name:
            if not name.endswith("]"):
                raise ValueError(f"bad compute reference {word}")
            name, index = name[:-1].split("[", 1)
            index = int(index)
        if name not in computes:
            raise ValueError(f"compute ID {name!r} in {word} is not defined")
        compute = computes[name]
        if index is not None and not (compute.style == "pressure" and 1 <= index <= 6):
            raise ValueError(f"{word}: only the pressure compute has a vector (c_ID[1..6])")
        return ("compute", compute, index)
    if word.startswith(("v_", "f_")):
        raise ValueError(f"{word}: variables and fixes in thermo output are not supported "
                         f"(keywords and c_ID of temp/pe/ke/pressure computes are)")
    raise ValueError(f"thermo keyword {word!r} is not supported")


def column_name(word: str) -> str:
    """The header LAMMPS prints for a thermo item (``pe`` -> ``PotEng``; ``c_ID`` stays)."""
    return KEYWORDS[word][0] if word in KEYWORDS else word


def column_value(item: tuple, state: ThermoState, norm: bool):
    """The value of a parsed item (:func:`parse_column`), normalised as thermo output is."""
    kind, what, index = item
    if kind == "keyword":
        return state.value(what, norm)
    keyword = COMPUTE_STYLES[what.style]
    if index is not None:
        return float(state.press_tensor(*list(_TENSOR.values())[index - 1]))
    return state.value(keyword, norm and what.extensive)


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

    def __init__(self, words, computes: dict, norm: bool | None = None):
        if not words:
            raise ValueError("thermo_style custom needs at least one keyword")
        self.words = list(words)
        self.items = [parse_column(w, computes) for w in self.words]
        self.names = [column_name(w) for w in self.words]
        self.norm = norm

    def with_norm(self, norm: bool) -> "ThermoStyle":
        style = ThermoStyle.__new__(ThermoStyle)
        style.words, style.items, style.names, style.norm = self.words, self.items, self.names, norm
        return style

    def row(self, simulation, run_start: int = 0, wall_start: float | None = None) -> dict:
        """Column name -> value at the simulation's current step (energies must be current)."""
        state = ThermoState(simulation, run_start, wall_start)
        norm = simulation.units.normalize_thermo if self.norm is None else self.norm
        return {name: column_value(item, state, norm) for name, item in zip(self.names, self.items)}


#: thermo_style one as a ThermoStyle (the default columns)
def one_style(norm: bool | None = None) -> ThermoStyle:
    return ThermoStyle(list(ONE), {}, norm)


__all__ = ["Compute", "COMPUTE_STYLES", "KEYWORDS", "ONE", "ThermoState", "column_name", "column_value",
           "ThermoStyle", "one_style", "parse_column"]
