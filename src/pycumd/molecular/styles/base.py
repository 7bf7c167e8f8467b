"""The base class of bonded styles (LAMMPS ``bond_style``, ``angle_style``, ``dihedral_style``,
``improper_style``): per-type coefficients, their table, and the style's scalar function.

A style is one small module in this package: a :class:`BondedStyle` subclass naming its ``kind``, its
LAMMPS name, its coefficients, a Numba function (``cpu_function``) and its CUDA twin (``cuda_header``,
a ``.cuh`` beside the module defining the kind's device function).  The functions of one kind share
one signature (the kernels of :mod:`pycumd.molecular.bonded` supply the geometry):

========  ===============================================  =============================================
kind      Numba: ``f(..., row) ->``                        CUDA: ``__device__ void KIND_style(...)``
========  ===============================================  =============================================
bond      ``(r2, row) -> (E, F/r, error)``                  ``bond_style(r2, row, E&, fr&, err&)``
angle     ``(c, r13sq, row) -> (E, dE/dc, F_UB/r13)``       ``angle_style(c, r13sq, row, E&, dedc&, fub&)``
dihedral  ``(phi, row) -> (E, dE/dphi)``                     ``dihedral_style(phi, row, E&, dedphi&)``
improper  ``(phi, row) -> (E, dE/dphi)``                     ``improper_style(phi, row, E&, dedphi&)``
========  ===============================================  =============================================

``r2``: squared bond length; ``c``: cosine of the angle at the middle atom; ``r13sq``: squared distance
of the angle's outer atoms (Urey-Bradley); ``phi``: the dihedral angle of atoms 1-2-3-4 in radians,
``atan2(|b2| b1 . (b2 x b3), (b1 x b2) . (b2 x b3))`` with ``b1 = x2 - x1`` ... (IUPAC: trans = pi, as
LAMMPS); ``error``: 0, 1 (FENE: stretched, clamped as LAMMPS does with its warning), 2 (FENE: LAMMPS'
"Bad FENE bond").  All in double precision.
"""

from __future__ import annotations

import numpy as np

KINDS = ("bond", "angle", "dihedral", "improper")
#: atoms per term of each kind
ATOMS_PER_TERM = {"bond": 2, "angle": 3, "dihedral": 4, "improper": 4}


class BondedStyle:
    """Per-type coefficients of one bonded style.

    Class attributes of a style: ``kind`` (one of :data:`KINDS`), ``lammps_style`` (its LAMMPS
    name), ``coefficient_names`` (the LAMMPS coefficients in order, units in the subclass docstring),
    ``cuda_header`` (path of the ``.cuh`` relative to the package), ``cpu_function`` (the Numba
    function, staticmethod).  :meth:`row` turns the coefficients into the table row the functions read.
    """

    kind: str = ""
    lammps_style: str = ""
    coefficient_names: tuple = ()
    cuda_header: str = ""
    cpu_function = None
    #: capability: the style has a CUDA device function (``cuda_header``) that has run on a GPU; a style
    #: without one runs on the CPU only (:class:`~pycumd.molecular.bonded.BondedForces` refuses the GPU)
    runs_on_gpu: bool = True

    def __init__(self):
        #: type (0-based) -> the coefficients as given (floats), in ``coefficient_names`` order
        self.coefficients: dict = {}
        #: the global arguments of ``KIND_style NAME ARGS`` (:meth:`settings`)
        self.style_args: tuple = ()

    def settings(self, args) -> "BondedStyle":
        """The global arguments of ``KIND_style NAME ARGS`` (LAMMPS ``settings``); by default none is
        taken (a ValueError names them)."""
        if args:
            raise ValueError(f"{self.kind}_style {self.lammps_style} takes no global arguments (got {' '.join(args)})")
        self.style_args = tuple(args)
        return self

    def renewed(self) -> "BondedStyle":
        """A new style object of this style with the same global arguments and no coefficients (read_data
        with new type counts)."""
        return type(self)().settings(list(self.style_args))

    @property
    def cuda_defines(self) -> dict:
        """Defines the style's ``cuda_header`` needs beside ``STYLE_HEADER`` (generated code); none by default."""
        return {}

    def kernel_key(self):
        """What the compiled CPU term kernel of this style depends on (its cache key): the class, whose
        ``cpu_function`` it is; a style with generated functions adds what they were generated from."""
        return type(self)

    def coeff(self, type0: int, values) -> "BondedStyle":
        """Set the coefficients of type ``type0`` (0-based); ``values`` in ``coefficient_names`` order."""
        values = [float(v) for v in values]
        if len(values) != len(self.coefficient_names):
            raise ValueError(f"{self.kind}_coeff for {self.kind}_style {self.lammps_style} takes "
                             f"{len(self.coefficient_names)} coefficient(s) ({' '.join(self.coefficient_names)}), "
                             f"got {len(values)}")
        self.row(values)                  # validated now (ValueError naming the coefficient)
        self.coefficients[int(type0)] = values
        return self

    def row(self, values) -> list:
        """The table row of one type's coefficients (default: the coefficients themselves)."""
        return list(values)

    def type_row(self, type0: int) -> list:
        """The table row of type ``type0`` (0-based): :meth:`row` of its coefficients."""
        return self.row(self.coefficients[type0])

    def table(self, n_types: int) -> np.ndarray:
        """(n_types, width) float64 rows; a type without coefficients raises naming it."""
        missing = [t + 1 for t in range(n_types) if t not in self.coefficients]
        if missing:
            raise ValueError(f"{self.kind} type(s) {missing} have no coefficients ({self.kind}_coeff or the data "
                             f"file's {self.kind.capitalize()} Coeffs section) for {self.kind}_style {self.lammps_style}")
        rows = [self.type_row(t) for t in range(n_types)]
        width = max(1, max((len(r) for r in rows), default=1))
        table = np.zeros((max(n_types, 1), width))
        for t, r in enumerate(rows):
            table[t, :len(r)] = r
        return table

    def lammps_words(self, type0: int) -> list:
        """The coefficients of a type as LAMMPS' ``*_coeff`` takes them (for ``write_data``)."""
        return [repr(v) if not float(v).is_integer() else str(int(v)) if abs(v) < 1e15 else repr(v)
                for v in self.coefficients[type0]]

    def equilibrium(self, type0: int) -> float:
        """A bond style's equilibrium length (length units) or an angle style's equilibrium angle (radians)
        of type ``type0`` (LAMMPS ``Bond::equilibrium_distance``, ``Angle::equilibrium_angle``; the
        constraint lengths of fix shake and rattle)."""
        raise NotImplementedError(f"{self.describe()} has no equilibrium value for fix shake/rattle here")

    def describe(self) -> str:
        return f"{self.kind}_style {self.lammps_style}"


def positive(name: str, value: float, style: str) -> float:
    """``value`` if > 0, else a ValueError naming the coefficient."""
    if not value > 0:
        raise ValueError(f"{style}: {name} must be positive, got {value}")
    return value


def integer(name: str, value: float, style: str, allowed=None) -> int:
    """``value`` as an int if it is one (and in ``allowed``), else a ValueError naming it."""
    if not float(value).is_integer() or (allowed is not None and int(value) not in allowed):
        raise ValueError(f"{style}: {name} must be an integer{' in ' + str(sorted(allowed)) if allowed else ''}, "
                         f"got {value}")
    return int(value)
