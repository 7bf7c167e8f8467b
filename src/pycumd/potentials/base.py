"""What every pair potential shares: named per-pair parameters, mixing, cutoff treatments, the table.

A potential is one scalar function of ``r^2`` and one row of the parameter table, returning
``(energy, force_over_r)`` where ``force_over_r = -(dV/dr) / r``.  Its CPU form is a Numba
``njit`` function (:attr:`PairPotential.raw_pair_function`); its CUDA form is a
``__device__`` function ``pair_raw(r2, row)`` in a ``.cuh`` file beside the module.

The cutoff treatment is applied around the raw function, identically on both backends,
from the four leading table columns ``[rc^2, rc, e_c, f_c]``::

    truncate     E = V(r)                          F/r = -V'(r)/r
    shift        E = V(r) - V(rc)                  F/r = -V'(r)/r
    shift_force  E = V(r) - V(rc) + (r - rc) f_c   F/r = -V'(r)/r - f_c/r,   f_c = -V'(rc)

so energy and force stay consistent (F = -dE/dr) in every mode, and ``shift_force`` makes
both vanish at ``rc``.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .lammps_args import check_count, numbers
from ..jit_cache import source_key

CUTOFF_MODES = ("truncate", "shift", "shift_force")
CUTOFF_COLUMNS = 4  #: rc^2, rc, e_c, f_c
MIXING_RULES = ("geometric", "arithmetic", "sixthpower")


class MissingParameterError(ValueError):
    """A pair of types has no coefficients and none can be mixed."""


def make_pair_function(raw_pair_function, shift_force: bool):
    """Wrap a raw pair function with the cutoff treatment (see module docstring).

    Returns an ``njit`` function ``(r2, row) -> (energy, force_over_r)``; the caller checks
    ``r2 < row[0]`` first.
    """
    if shift_force:
        @numba.njit(inline="always")
        def pair(r2, row):
            e, fr = raw_pair_function(r2, row)
            r = math.sqrt(r2)
            return e - row[2] + (r - row[1]) * row[3], fr - row[3] / r
    else:
        @numba.njit(inline="always")
        def pair(r2, row):
            e, fr = raw_pair_function(r2, row)
            return e - row[2], fr
    return pair


class PairPotential:
    """Base class: per-pair named parameters, mixing and the packed table.

    Subclasses set :attr:`parameter_names`, :attr:`cuda_header`, :attr:`raw_pair_function`
    and implement :meth:`_columns` (named parameters -> table columns) and :meth:`_mix`.  A class
    that sets :attr:`cuda_header` is a registered potential (:mod:`pycumd.potentials.registry`):
    the force kernels' header ids and the LAMMPS styles it declares in :attr:`lammps_styles` are
    derived from it.

    Parameters
    ----------
    r_cut : float
        Global cutoff (length units); a pair's own ``r_cut`` overrides it.
    cutoff : {"truncate", "shift", "shift_force"}
    mixing : {"geometric", "arithmetic", "sixthpower"}
        How coefficients of unlike pairs not given explicitly are made from like pairs.
    """

    name = "pair"
    #: a pair potential: the pair force evaluator (:class:`~pycumd.forces.PairForces`) runs it
    many_body = False
    parameter_names: tuple = ()
    #: the CUDA header beside the module that defines ``pair_raw`` (path from the package directory)
    cuda_header: str = ""
    raw_pair_function = None
    #: LAMMPS ``pair_style`` names this class runs -> (fewest, most) global arguments
    lammps_styles: dict = {}

    def __init__(self, r_cut: float, cutoff: str = "truncate", mixing: str = "geometric"):
        if not (r_cut > 0 and math.isfinite(r_cut)):
            raise ValueError(f"{self.name}: cutoff must be positive, got {r_cut}")
        if cutoff not in CUTOFF_MODES:
            raise ValueError(f"unknown cutoff treatment {cutoff!r}: choose one of {', '.join(CUTOFF_MODES)}")
        if mixing not in MIXING_RULES:
            raise ValueError(f"unknown mixing rule {mixing!r}: choose one of {', '.join(MIXING_RULES)}")
        self.r_cut = float(r_cut)
        self.cutoff = cutoff
        self.mixing = mixing
        self._coeffs: dict[tuple[int, int], dict] = {}

    # -- parameters -------------------------------------------------------------------------
    def pair_coeff(self, type_i: int, type_j: int, **params) -> "PairPotential":
        """Set the coefficients of the pair (type_i, type_j) (0-based types), e.g. ``epsilon=1, sigma=1``.

        ``r_cut`` is optional and defaults to the global cutoff.  Returns ``self``.
        """
        names = tuple(self._pair_parameter_names(type_i, type_j))
        missing = [p for p in names if p not in params]
        unknown = [p for p in params if p not in names + ("r_cut",)]
        if unknown:
            raise ValueError(f"{self.name}: unknown parameter(s) {', '.join(unknown)}; "
                             f"expected {', '.join(names)} and optionally r_cut")
        if missing:
            raise MissingParameterError(f"{self.name}: pair ({type_i + 1}, {type_j + 1}) is missing "
                                        f"{', '.join(missing)}")
        if type_i < 0 or type_j < 0:
            raise ValueError(f"types are 0-based non-negative integers, got ({type_i}, {type_j})")
        params = {k: float(v) for k, v in params.items()}
        params.setdefault("r_cut", self.r_cut)
        if not params["r_cut"] > 0:
            raise ValueError(f"{self.name}: r_cut must be positive, got {params['r_cut']}")
        self._validate(params)
        key = (min(type_i, type_j), max(type_i, type_j))
        self._coeffs[key] = params
        return self

    def coefficients(self, type_i: int, type_j: int) -> dict:
        """The named parameters of a pair, mixed from the like pairs where not set."""
        key = (min(type_i, type_j), max(type_i, type_j))
        if key in self._coeffs:
            return self._coeffs[key]
        missing_like = [t for t in key if (t, t) not in self._coeffs]
        if missing_like:
            t = missing_like[0]
            raise MissingParameterError(
                f"{self.name}: missing pair coefficients for types ({t + 1}, {t + 1})"
                + ("" if key[0] == key[1] else f", needed to mix the pair ({key[0] + 1}, {key[1] + 1})"))
        a, b = self._coeffs[(key[0], key[0])], self._coeffs[(key[1], key[1])]
        mixed = self._mix(a, b)
        mixed["r_cut"] = self._mix_distance(a["r_cut"], b["r_cut"])
        return mixed

    def max_cutoff(self, n_types: int) -> float:
        return max(self.coefficients(i, j)["r_cut"] for i in range(n_types) for j in range(n_types))

    # -- the table the kernels read ---------------------------------------------------------
    def table(self, n_types: int, pairs=None) -> np.ndarray:
        """Packed parameters, shape (n_types * n_types, CUTOFF_COLUMNS + k), float64.

        Row ``ti * n_types + tj`` holds ``[rc^2, rc, e_c, f_c, columns...]``.  ``pairs``: the 0-based
        type pairs ``(i, j)``, ``i <= j``, given rows (``pair_style hybrid``: the pairs of this
        sub-style, :mod:`pycumd.potentials.hybrid`); the others get :meth:`empty_row`.  None: every pair.
        """
        covered = None if pairs is None else {(min(i, j), max(i, j)) for i, j in pairs}
        rows = []
        for ti in range(n_types):
            for tj in range(n_types):
                if covered is not None and (min(ti, tj), max(ti, tj)) not in covered:
                    rows.append(None)
                    continue
                p = self.coefficients(ti, tj)
                rc = p["r_cut"]
                row = np.array([rc * rc, rc, 0.0, 0.0] + list(self._columns(p)))
                e_rc, fr_rc = self.raw_pair_function(rc * rc, row)
                if self.cutoff in ("shift", "shift_force"):
                    row[2] = e_rc
                if self.cutoff == "shift_force":
                    row[3] = fr_rc * rc
                rows.append(row)
        return self._with_empty_rows(rows)

    def _with_empty_rows(self, rows: list) -> np.ndarray:
        """The table of ``rows``, each None replaced by :meth:`empty_row` of the others' width."""
        widths = {len(row) for row in rows if row is not None}
        if len(widths) != 1:
            raise ValueError(f"{self.name}: no pair of types has coefficients" if not widths else
                             f"{self.name}: table rows of different widths {sorted(widths)}")
        width = widths.pop()
        return np.array([self.empty_row(width) if row is None else row for row in rows])

    def empty_row(self, width: int) -> np.ndarray:
        """The row of a pair this potential does not cover (``pair_style hybrid``'s pairs of other
        sub-styles): ``rc^2 = 0``, so no separation is inside its cutoff; every kernel (also the CPU's
        branch-free half-list kernel, which evaluates the function at ``min(r^2, rc^2)`` and then keeps
        zero) adds nothing for it."""
        return np.zeros(width)

    def pair_function(self):
        """The ``njit`` function ``(r2, row) -> (energy, force_over_r)`` with the cutoff applied."""
        return make_pair_function(self.raw_pair_function, self.cutoff == "shift_force")

    def kernel_cache_key(self):
        """A key that names :meth:`pair_function` across processes, for Numba's disk cache of the CPU
        kernels built around it (:mod:`pycumd.jit_cache`), or None (compiled in each process).

        The raw pair function's module, name and file contents, and the cutoff treatment; None where
        the raw function has no source file (a generated formula).  A subclass that overrides
        :meth:`pair_function` overrides this too.
        """
        if type(self).pair_function is not PairPotential.pair_function:
            return None
        source = source_key(self.raw_pair_function)
        return None if source is None else (*source, self.cutoff == "shift_force")

    def energy_and_force(self, r, type_i: int = 0, type_j: int = 0, n_types: int | None = None):
        """Evaluate the pair energy and the force magnitude ``-dE/dr`` at distances ``r`` (host, float64).

        Returns ``(energy, force)`` arrays shaped like ``r``; zero beyond the cutoff.
        """
        n_types = n_types or max(type_i, type_j) + 1
        row = self.table(n_types)[type_i * n_types + type_j]
        fn = self.pair_function()
        r = np.asarray(r, dtype=np.float64)
        e = np.zeros_like(r)
        f = np.zeros_like(r)
        for idx, ri in np.ndenumerate(r):
            if ri * ri < row[0]:
                ei, fri = fn(ri * ri, row)
                e[idx], f[idx] = ei, fri * ri
        return e, f

    # -- LAMMPS pair_style / pair_coeff ------------------------------------------------------
    @classmethod
    def check_lammps_args(cls, style: str, global_args: list) -> None:
        """A ValueError unless ``pair_style STYLE ARGS`` is valid (the count is checked before):
        by default every argument is a number."""
        numbers(global_args, f"pair_style {style}")

    @classmethod
    def from_lammps(cls, style: str, global_args: list, pair_coeffs: list, context) -> "PairPotential":
        """The potential of ``pair_style STYLE ARGS`` and its ``pair_coeff`` lines.

        By default: ``pair_style STYLE rc`` and ``pair_coeff I J`` followed by
        :attr:`parameter_names` and an optional cutoff, all numbers.

        Parameters
        ----------
        style : str
            One of :attr:`lammps_styles`.
        global_args : list of str or float
        pair_coeffs : list of (i, j, values)
            0-based type pairs (i <= j) with the ``pair_coeff`` values.
        context : LammpsPairContext
        """
        args = numbers(global_args, f"pair_style {style}")
        names = cls.parameter_names + ("r_cut",)
        pot = cls(args[0], cutoff=context.cutoff_mode, mixing=context.mixing)
        for i, j, values in pair_coeffs:
            values = numbers(values, f"pair_coeff {i + 1} {j + 1} ({style})")
            check_count(style, values, len(names) - 1, len(names))
            pot.pair_coeff(i, j, **dict(zip(names, values)))
        return pot

    def atomic_number_types(self) -> dict | None:
        """Atomic number -> 0-based type where the potential knows its elements (EAM files), for the
        ASE calculator's default ``type_map``; None for a pair potential."""
        return None

    @classmethod
    def lammps_pair_coeff(cls, style: str, types_i, types_j, values: list, both_all: bool, n_types: int,
                          directory=None, global_args=None) -> dict:
        """What a ``pair_coeff`` line sets besides the coefficients: the masses (0-based type ->
        mass) of styles whose files give them (EAM); none for a pair potential.  ``global_args``: the
        ``pair_style`` line's arguments (``pair_style hybrid``'s sub-styles, which its lines name)."""
        return {}

    # -- for subclasses ---------------------------------------------------------------------
    def _pair_parameter_names(self, type_i: int, type_j: int) -> tuple:
        """The parameter names of the pair (type_i, type_j): :attr:`parameter_names` unless a
        potential has different ones per pair."""
        return self.parameter_names

    def _validate(self, params: dict) -> None:
        pass

    def _columns(self, params: dict) -> list:
        raise NotImplementedError

    def _mix(self, a: dict, b: dict) -> dict:
        raise NotImplementedError

    def _mix_distance(self, x: float, y: float) -> float:
        if self.mixing == "geometric":
            return math.sqrt(x * y)
        if self.mixing == "arithmetic":
            return 0.5 * (x + y)
        return ((x**6 + y**6) / 2.0) ** (1.0 / 6.0)

    def describe(self) -> str:
        return f"{self.name} (cutoff {self.r_cut}, {self.cutoff}, mixing {self.mixing})"


class ManyBodyPotential:
    """Base class of the potentials whose energy is not a sum over pairs (EAM): a many-body force
    evaluator runs them (:func:`pycumd.eam_forces.list_forces_class`), over the same neighbour
    list as the pair potentials.  A subclass in this package that declares :attr:`lammps_styles`
    is registered (:func:`pycumd.potentials.registry.lammps_pair_styles`).

    Members the engine uses: :meth:`max_cutoff`, :meth:`table` (what the kernels read; it raises
    for a type without coefficients), :meth:`describe`; the LAMMPS front-end's
    :meth:`check_lammps_args`, :meth:`from_lammps` and :meth:`lammps_pair_coeff`.
    """

    name = "many-body"
    many_body = True
    #: ``pair_style hybrid``/``hybrid/overlay``: an EAM sub-style and a pair sub-style summed
    #: (:mod:`pycumd.potentials.hybrid`, evaluated by :class:`pycumd.eam_forces.HybridForces`)
    hybrid = False
    cutoff = "truncate"
    #: LAMMPS ``pair_style`` names this class runs -> (fewest, most) global arguments
    lammps_styles: dict = {}

    @classmethod
    def check_lammps_args(cls, style: str, global_args: list) -> None:
        """The argument count is checked before; nothing else by default."""

    @classmethod
    def from_lammps(cls, style: str, global_args: list, pair_coeffs: list, context):
        raise NotImplementedError(f"{cls.__name__} does not implement from_lammps")

    @classmethod
    def lammps_pair_coeff(cls, style: str, types_i, types_j, values: list, both_all: bool, n_types: int,
                          directory=None, global_args=None) -> dict:
        return {}

    def max_cutoff(self, n_types: int) -> float:
        raise NotImplementedError(f"{type(self).__name__} does not implement max_cutoff")

    def table(self, n_types: int):
        raise NotImplementedError(f"{type(self).__name__} does not implement table")

    def kernel_cache_key(self):
        return None

    def atomic_number_types(self) -> dict | None:
        return None

    def describe(self) -> str:
        return self.name
