"""Pair potentials from a formula: ``Formula("4*epsilon*((sigma/r)**12 - (sigma/r)**6)", r_cut=2.5)``.

The energy ``V(r)`` is read by SymPy; everything else is derived from that one expression:

1. ``r`` is replaced by ``sqrt(r2)`` and ``F/r = -V'(r)/r = -2 dV/d(r2)`` taken symbolically, so a
   potential of even powers of ``r`` needs no square root (LJ reads ``r2^-6``, ``r2^-3``).
2. Sub-expressions of parameters alone (``4 epsilon sigma^12``) become columns of the parameter
   table, computed once per type pair on the host.
3. Common sub-expressions of energy and force are shared (``sympy.cse``); the result is printed
   once as a Numba function ``(r2, row) -> (energy, force_over_r)`` and once as the body of the
   CUDA ``pair_raw`` of ``formula.cuh`` (passed to the kernel compiler as the define
   ``FORMULA_BODY``; integer powers by multiplication, numbers in the pair precision ``T``).  A
   formula of inverse powers of ``r2`` alone is written in powers of ``r2inv = 1 / r2``: one
   division per pair, as the built-in Lennard-Jones.

The kernels, cutoff treatments and table machinery are those of every built-in potential.  LAMMPS
``pair_style lepton`` maps here (:func:`formula_from_lepton`).
"""

from __future__ import annotations

import functools
import inspect
import math

import numba
import numpy as np

from .base import PairPotential
from .lammps_args import number
from .mixing import no_mixing

PARAMETER_MIXING = ("geometric", "arithmetic")


class FormulaError(ValueError):
    """A formula pycumd cannot turn into a pair potential (the message says why)."""


def _sympy():
    try:
        import sympy
    except ImportError:                                    # pragma: no cover - sympy is a dependency of the extra
        raise ImportError("Formula potentials need SymPy: pip install sympy") from None
    return sympy


def _lepton_functions(sp):
    """Lepton's functions beyond SymPy's names (square, cube, recip, step)."""
    return {"square": lambda x: x**2, "cube": lambda x: x**3, "recip": lambda x: 1 / x,
            "step": lambda x: sp.Heaviside(x, 1)}


def parse_energy(energy, parameters=None, constants=None):
    """The SymPy expression of ``energy`` (a string or a Python function of r) and its parameter names.

    Raises :class:`FormulaError` for a formula without ``r``, an unknown symbol or function.
    """
    sp = _sympy()
    r = sp.Symbol("r", positive=True)
    constants = dict(constants or {})
    if callable(energy):
        names = list(inspect.signature(energy).parameters)
        if not names or names[0] != "r":
            raise FormulaError(f"formula: the function's first argument must be r, got {names}")
        if parameters is None:
            parameters = tuple(n for n in names[1:] if n not in constants)
        symbols = {n: sp.Symbol(n, real=True) for n in names[1:]}
        try:
            expr = sp.sympify(energy(r, *symbols.values()))
        except Exception as exc:
            raise FormulaError(f"formula: SymPy cannot read the function {energy.__name__}: {exc}") from None
        text = energy.__name__
    else:
        text = str(energy)
        local = {"r": r, **_lepton_functions(sp)}
        try:
            expr = sp.sympify(text, locals=local, convert_xor=True)
        except Exception as exc:
            raise FormulaError(f"formula {text!r}: SymPy cannot read it: {exc}") from None
    undefined = sorted(str(f.func) for f in expr.atoms(sp.Function) if isinstance(f.func, sp.core.function.UndefinedFunction))
    if undefined:
        raise FormulaError(f"formula {text!r}: unknown function(s) {', '.join(undefined)}")
    names = sorted((s for s in expr.free_symbols if s.name != "r"), key=lambda s: s.name)
    expr = expr.subs({s: sp.Symbol(s.name, real=True) for s in names}).subs(sp.Symbol("r"), r)
    if r not in expr.free_symbols:
        raise FormulaError(f"formula {text!r}: no r in the formula (the pair distance must be called r)")
    free = sorted(s.name for s in expr.free_symbols if s != r)
    if parameters is None:
        parameters = tuple(n for n in free if n not in constants)
    parameters = tuple(parameters)
    unknown = [n for n in free if n not in parameters and n not in constants]
    if unknown:
        raise FormulaError(f"formula {text!r}: unknown symbol(s) {', '.join(unknown)}; parameters are "
                           f"{', '.join(parameters) or 'none'}, constants {', '.join(constants) or 'none'}")
    expr = expr.subs({sp.Symbol(n, real=True): float(v) for n, v in constants.items()})
    return expr, r, parameters, text


@functools.lru_cache(maxsize=None)
def _compile(expr_text: str, parameters: tuple):
    """Generated code of one energy expression (srepr text): columns, Numba function, CUDA body."""
    sp = _sympy()
    expr = sp.sympify(expr_text, locals={"Symbol": sp.Symbol})
    r, s = sp.Symbol("r", positive=True), sp.Symbol("r2", positive=True)
    par = {p: sp.Symbol(p, real=True) for p in parameters}
    energy = expr.subs(r, sp.sqrt(s))
    force_over_r = -2 * sp.diff(energy, s)
    columns: list = []               # parameter-only sub-expressions, table columns 4, 5, ...

    def column(e):
        if e.is_Number:
            return e
        for k, c in enumerate(columns):
            if c == e:
                return sp.Symbol(f"c{k}")
        columns.append(e)
        return sp.Symbol(f"c{len(columns) - 1}")

    def hoist(e):
        if s not in e.free_symbols:
            return column(e)
        if e.is_Symbol:
            return e
        if e.is_Mul or e.is_Add:
            const = [a for a in e.args if s not in a.free_symbols]
            rest = [hoist(a) for a in e.args if s in a.free_symbols]
            if e.is_Mul:
                return (column(sp.Mul(*const)) if const else 1) * sp.Mul(*rest)
            return (column(sp.Add(*const)) if const else 0) + sp.Add(*rest)
        if e.is_Pow and e.exp.is_Number:
            return sp.Pow(hoist(e.base), e.exp)
        return e.func(*[hoist(a) for a in e.args])

    hoisted = [hoist(sp.expand(x, power_base=False, log=False)) for x in (energy, force_over_r)]
    # inverse powers of r2 only (LJ-like): in powers of r2inv = 1 / r2, one division in all
    w = sp.Symbol("r2inv", positive=True)
    inverse = [x.subs(s, 1 / w) for x in hoisted]
    prelude = []
    if all(not (node.is_Pow and w in node.free_symbols and not (node.base == w and node.exp.is_Integer
                                                                and node.exp > 0))
           for x in inverse for node in sp.preorder_traversal(x)):
        hoisted, prelude = inverse, [(w, 1 / s)]
    replacements, reduced = sp.cse(hoisted, symbols=sp.numbered_symbols("x"), optimizations="basic")
    statements = (prelude + replacements + [(sp.Symbol("energy"), reduced[0]),
                                            (sp.Symbol("force_over_r"), reduced[1])])
    index = {f"c{k}": 4 + k for k in range(len(columns))}
    cuda = " ".join(("" if str(lhs) in ("energy", "force_over_r") else "T ") + f"{lhs} = {_cuda(rhs, index)};"
                    for lhs, rhs in statements)
    body = "\n".join(f"    {lhs} = {_python(rhs, index)}" for lhs, rhs in statements)
    source = f"def formula_raw(r2, row):\n{body}\n    return energy, force_over_r\n"
    namespace = {"math": math}
    exec(compile(source, "<pycumd formula>", "exec"), namespace)
    raw = numba.njit(inline="always", error_model="numpy")(namespace["formula_raw"])   # 1/0 -> inf, as on the GPU
    column_functions = [sp.lambdify([par[p] for p in parameters], c, modules="math") for c in columns]
    return column_functions, raw, cuda, source, bool(prelude)


def _printers():
    sp = _sympy()
    from sympy.printing.c import C99CodePrinter
    from sympy.printing.pycode import PythonCodePrinter

    class CudaPrinter(C99CodePrinter):
        """Numbers in the pair precision T, integer powers by multiplication, table columns as row[k]."""

        def __init__(self, index):
            super().__init__({"math_macros": {}})
            self.index = index

        def _print_Symbol(self, e):
            return f"row[{self.index[e.name]}]" if e.name in self.index else e.name

        def _print_Integer(self, e):
            return f"T({int(e)})"

        def _print_Rational(self, e):
            return f"(T({e.p}) / T({e.q}))"

        def _print_Float(self, e):
            return f"T({float(e)!r})"

        def _print_Pow(self, e):
            b = self.parenthesize(e.base, 100)
            if e.exp.is_Integer and 0 < abs(int(e.exp)) <= 32:
                n = int(e.exp)
                return f"ipow<{n}>({self._print(e.base)})" if n > 0 else f"(T(1) / ipow<{-n}>({self._print(e.base)}))"
            if e.exp.is_Rational and e.exp.q == 2 and abs(e.exp.p) <= 31:
                root = f"sqrt({self._print(e.base)})"
                n = int(e.exp.p)
                return f"ipow<{n}>({root})" if n > 0 else f"(T(1) / ipow<{-n}>({root}))"
            if e.exp == sp.Rational(1, 2):
                return f"sqrt({self._print(e.base)})"
            if e.exp == -sp.Rational(1, 2):
                return f"rsqrt({self._print(e.base)})"
            return f"pow({b}, {self._print(e.exp)})"

        def _print_Heaviside(self, e):
            return f"({self._print(e.args[0])} >= T(0) ? T(1) : T(0))"

    class NumbaPrinter(PythonCodePrinter):
        def __init__(self, index):
            super().__init__({"fully_qualified_modules": True})
            self.index = index

        def _print_Symbol(self, e):
            return f"row[{self.index[e.name]}]" if e.name in self.index else e.name

        def _print_Rational(self, e):
            return repr(float(e))

        def _print_Integer(self, e):
            return f"{int(e)}.0"

        def _print_Pow(self, e, rational=False):
            if e.exp.is_Integer:
                return f"{self.parenthesize(e.base, 100)}**{int(e.exp)}"
            return super()._print_Pow(e, rational)

        def _print_Heaviside(self, e):
            return f"(1.0 if {self._print(e.args[0])} >= 0.0 else 0.0)"

    return CudaPrinter, NumbaPrinter


def _cuda(e, index):
    return _printers()[0](index).doprint(e)


def _python(e, index):
    return _printers()[1](index).doprint(e)


@functools.lru_cache(maxsize=None)
def _formula_class(expr_text: str, parameters: tuple):
    """One subclass per generated pair function, so that kernels cached per class are per formula."""
    column_functions, raw, cuda, source, inverse_powers = _compile(expr_text, parameters)
    return type("Formula", (Formula,), {"raw_pair_function": staticmethod(raw), "_column_functions": column_functions,
                                        "_cuda_body": cuda, "generated_source": source,
                                        "_inverse_powers_of_r2": inverse_powers})


class Formula(PairPotential):
    """A pair potential from a formula of ``r`` with per type-pair parameters.

    Parameters
    ----------
    energy : str or callable
        ``V(r)`` (energy units) as SymPy reads it (``**`` or ``^`` for powers; ``exp``, ``log``,
        ``sqrt``, ``sin``, ``erfc``, ... ), e.g. ``"4*epsilon*((sigma/r)**12 - (sigma/r)**6)"``;
        or a Python function ``f(r, a, b, ...)`` that SymPy can evaluate on symbols.
    r_cut : float
        Global cutoff (length units); a pair's own ``r_cut`` overrides it.
    parameters : sequence of str, optional
        The per-pair parameter names; default every symbol of the formula but ``r`` and the
        constants.  With an explicit list, any other symbol is an error.
    constants : dict, optional
        Symbols replaced by numbers before the code is generated (the same for every pair).
    cutoff : {"truncate", "shift", "shift_force"}
    mixing : dict, optional
        ``{parameter: "geometric" | "arithmetic"}`` to mix unlike pairs (cutoffs mix
        geometrically); default: no mixing, every pair must be set.

    Raises
    ------
    FormulaError
        No ``r`` in the formula, an unknown symbol or function; a formula that is not finite at a
        pair's cutoff (when the table is built).

    Examples
    --------
    >>> lj = Formula("4*epsilon*((sigma/r)**12 - (sigma/r)**6)", r_cut=2.5)
    >>> lj = lj.pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    >>> e, f = lj.energy_and_force([1.0])
    """

    name = "formula"
    cuda_header = "potentials/formula.cuh"
    lammps_styles = {"lepton": (1, 1)}
    _column_functions: list = []
    _cuda_body = ""
    _inverse_powers_of_r2 = False
    generated_source = ""

    @classmethod
    def check_lammps_args(cls, style, global_args):
        number(global_args[0], "pair_style lepton cutoff")

    @classmethod
    def from_lammps(cls, style, global_args, pair_coeffs, context):
        """``pair_style lepton rc`` with ``pair_coeff I J "EXPRESSION[;name=value...]" [rc]``."""
        return formula_from_lepton(number(global_args[0], "pair_style lepton cutoff"), pair_coeffs,
                                   n_types=context.n_types, cutoff_mode=context.cutoff_mode)

    def __init__(self, energy, r_cut: float, parameters=None, constants=None, cutoff: str = "truncate",
                 mixing: dict | None = None):
        super().__init__(r_cut, cutoff=cutoff, mixing="geometric")
        expr, _, parameters, text = parse_energy(energy, parameters, constants)
        self.energy_text = text
        self.expression = expr
        self.parameter_names = parameters
        self.parameter_mixing = dict(mixing or {})
        bad = {k: v for k, v in self.parameter_mixing.items() if k not in parameters or v not in PARAMETER_MIXING}
        if bad:
            raise FormulaError(f"formula: bad mixing {bad}: parameters {', '.join(parameters)}, "
                               f"rules {', '.join(PARAMETER_MIXING)}")
        self.__class__ = _formula_class(_sympy().srepr(expr), parameters)

    @property
    def cuda_defines(self) -> dict:
        """The generated ``pair_raw`` body and the table width, for ``formula.cuh``; for a formula in
        inverse powers of r^2 only (LJ-like arithmetic, no function calls) the mixed-precision
        force kernel's launch bounds of the built-in LJ (forces.cu ``FIXED_MIN_BLOCKS``)."""
        defines = {"FORMULA_COLUMNS": 4 + len(self._column_functions), "FORMULA_BODY": self._cuda_body}
        if self._inverse_powers_of_r2:
            defines.update(FIXED_MIN_BLOCKS=12, FIXED_MIN_BLOCKS_ENERGY=8)
        return defines

    def _columns(self, p):
        args = [p[name] for name in self.parameter_names]
        return [float(f(*args)) for f in self._column_functions]

    def table(self, n_types: int) -> np.ndarray:
        """As :meth:`PairPotential.table`, checking that the formula is finite at each pair's cutoff."""
        rows = super().table(n_types)
        for k, row in enumerate(rows):
            values = self.raw_pair_function(row[0], row)
            if not all(math.isfinite(v) for v in values) or not np.isfinite(row[4:]).all():
                i, j = divmod(k, n_types)
                raise FormulaError(f"formula {self.energy_text!r}: not finite at the cutoff r = {row[1]:g} of pair "
                                   f"({i + 1}, {j + 1}) (energy, F/r = {values[0]}, {values[1]})")
        return rows

    def _mix(self, a, b):
        if set(self.parameter_mixing) != set(self.parameter_names):
            no_mixing(self.name)
        return {name: math.sqrt(a[name] * b[name]) if rule == "geometric" else 0.5 * (a[name] + b[name])
                for name, rule in self.parameter_mixing.items()}

    def describe(self) -> str:
        return f"formula {self.energy_text!r} (cutoff {self.r_cut:g}, {self.cutoff})"


def formula_from_lepton(r_cut: float, pair_coeffs: list, *, n_types: int, cutoff_mode: str = "truncate") -> Formula:
    """LAMMPS ``pair_style lepton``: ``pair_coeff I J "EXPR;name=value;..." [rc]`` for every pair.

    Numeric definitions after ``;`` become per-pair parameters, others are substituted into the
    expression; every pair must then share one expression (pycumd generates one pair function).
    """
    sp = _sympy()
    shared = None
    per_pair = []
    for i, j, values in pair_coeffs:
        if not 1 <= len(values) <= 2:
            raise ValueError(f"pair_coeff {i + 1} {j + 1} (lepton): expected an expression and an optional cutoff")
        text, *definitions = [part.strip() for part in str(values[0]).split(";") if part.strip()]
        numbers, substitutions = {}, {}
        for d in definitions:
            if "=" not in d:
                raise ValueError(f"pair_coeff {i + 1} {j + 1} (lepton): definition {d!r} is not name=value")
            name, value = (x.strip() for x in d.split("=", 1))
            try:
                numbers[name] = float(value)
            except ValueError:
                substitutions[name] = value
        expr, _, params, _ = parse_energy(text, parameters=None)
        for _ in range(len(substitutions) + 1):             # definitions may use later ones
            for name, value in substitutions.items():
                expr = expr.subs(sp.Symbol(name, real=True), parse_energy(f"({value}) + 0*r")[0])
        key = sp.srepr(expr)
        if shared is None:
            shared = (key, text)
        elif key != shared[0]:
            raise ValueError(f"pair_style lepton: pair ({i + 1}, {j + 1}) has the expression {text!r}, another pair "
                             f"{shared[1]!r}; pycumd runs one expression for all pairs (put the differences in "
                             "name=value definitions)")
        extra = {"r_cut": float(values[1])} if len(values) == 2 else {}
        per_pair.append((i, j, numbers, extra, expr))
    if shared is None:
        raise ValueError("pair_style lepton: no pair_coeff")
    pot = Formula(per_pair[0][4], r_cut, parameters=None, cutoff=cutoff_mode)
    for i, j, numbers, extra, _ in per_pair:
        missing = [n for n in pot.parameter_names if n not in numbers]
        if missing:
            raise ValueError(f"pair_coeff {i + 1} {j + 1} (lepton): no value for {', '.join(missing)}")
        pot.pair_coeff(i, j, **{n: numbers[n] for n in pot.parameter_names}, **extra)
    return pot
