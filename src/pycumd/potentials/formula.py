"""Pair potentials from a formula: ``Formula("4*epsilon*((sigma/r)**12 - (sigma/r)**6)", r_cut=2.5)``.

The energy ``V(r)`` is parsed by :mod:`pycumd.potentials.formula_syntax` into a SymPy expression
(the text is never evaluated); everything else is derived from that one expression:

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
4. With a different formula per type pair, each distinct formula is a branch of the one generated
   function, chosen by the pair's branch number in table column 4.

The kernels, cutoff treatments and table machinery are those of every built-in potential.  LAMMPS
``pair_style lepton`` maps here (:func:`formula_from_lepton`).
"""

from __future__ import annotations

import functools
import inspect
import math
import re

import numba
import numpy as np

from .base import PairPotential
from .formula_syntax import FormulaError, FormulaSyntaxError, parse_formula, split_definitions
from .lammps_args import number
from .mixing import no_mixing

PARAMETER_MIXING = ("geometric", "arithmetic")
_BRANCH = "(branch)"     # a pair's formula in its coefficients: no parameter is named so
__all__ = ["Formula", "FormulaError", "FormulaSyntaxError", "compile_function_of", "formula_from_lepton",
           "lepton_expression", "lepton_pair", "parse_energy"]


def _sympy():
    try:
        import sympy
    except ImportError:                                    # pragma: no cover - sympy is a dependency of the extra
        raise ImportError("Formula potentials need SymPy: pip install sympy") from None
    return sympy


def parse_energy(energy, parameters=None, constants=None):
    """The SymPy expression of ``energy`` (a string or a Python function of r) and its parameter names.

    A string is read by :func:`pycumd.potentials.formula_syntax.parse_formula` (never evaluated).

    Raises :class:`FormulaError` for a formula without ``r``, an unknown symbol or function, or a
    character or construct the formula language does not have (:class:`FormulaSyntaxError`).
    """
    sp = _sympy()
    r = sp.Symbol("r", positive=True)
    constants = dict(constants or {})
    if isinstance(energy, sp.Basic):
        expr, text = energy, str(energy)
    elif callable(energy):
        names = list(inspect.signature(energy).parameters)
        if not names or names[0] != "r":
            raise FormulaError(f"formula: the function's first argument must be r, got {names}")
        if parameters is None:
            parameters = tuple(n for n in names[1:] if n not in constants)
        symbols = {n: sp.Symbol(n, real=True) for n in names[1:]}
        try:
            expr = sp.sympify(energy(r, *symbols.values()), strict=True)
        except Exception as exc:
            raise FormulaError(f"formula: SymPy cannot read the function {energy.__name__}: {exc}") from None
        text = energy.__name__
    else:
        text = str(energy)
        expr = parse_formula(text, r, lambda name: sp.Symbol(name, real=True))
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
def _compile(branches: tuple):
    """Generated code of one pair function: columns, Numba function, CUDA body.

    ``branches`` is a tuple of (energy expression, parameter names), one per distinct formula.  With
    one branch the table columns of the formula start at 4; with several, column 4 holds the
    pair's branch (0, 1, ...) and each branch's columns start at 5.
    """
    sp = _sympy()
    first = 4 if len(branches) == 1 else 5
    python_blocks, cuda_blocks, column_functions = [], [], []
    inverse_powers = True
    for k, (expr, parameters) in enumerate(branches):
        # each branch's own temporaries (x0, ... or b1x0, ...): one type per name for Numba
        columns, statements, inverse = _branch_statements(sp, expr, "x" if len(branches) == 1 else f"b{k}x")
        inverse_powers = inverse_powers and inverse
        index = {f"c{n}": first + n for n in range(len(columns))}
        # one line: the body travels as a -D define
        cuda_blocks.append(" ".join(("" if str(lhs) in ("energy", "force_over_r") else "T ")
                                    + f"{lhs} = {_one_line(_cuda(rhs, index))};" for lhs, rhs in statements))
        python_blocks.append([f"{lhs} = {_python(rhs, index)}" for lhs, rhs in statements])
        par = [sp.Symbol(p, real=True) for p in parameters]
        column_functions.append([sp.lambdify(par, c, modules="math") for c in columns])
    if len(branches) == 1:
        cuda = cuda_blocks[0]
        body = "\n".join(f"    {line}" for line in python_blocks[0])
    else:
        cuda = "const int branch = int(row[4]); " + " else ".join(
            (f"if (branch == {k}) " if k < len(branches) - 1 else "") + "{ " + block + " }"
            for k, block in enumerate(cuda_blocks))
        lines = ["    branch = int(row[4])"]
        for k, block in enumerate(python_blocks):
            lines.append(f"    {'if' if k == 0 else 'elif'} branch == {k}:" if k < len(branches) - 1 else "    else:")
            lines += [f"        {line}" for line in block]
        body = "\n".join(lines)
    source = f"def formula_raw(r2, row):\n{body}\n    return energy, force_over_r\n"
    namespace = {"math": math}
    # the source is printed from SymPy expressions whose names are identifiers (formula_syntax)
    exec(compile(source, "<pycumd formula>", "exec"), namespace)
    raw = numba.njit(inline="always", error_model="numpy")(namespace["formula_raw"])   # 1/0 -> inf, as on the GPU
    return column_functions, raw, cuda, source, inverse_powers, first


def _lepton_derivative(sp, expr, variable):
    """``d expr / d variable`` as Lepton differentiates: the derivatives of step, delta, floor and ceil
    are 0."""
    d = sp.diff(expr, variable).replace(lambda e: isinstance(e, sp.DiracDelta), lambda e: sp.S.Zero)
    d = d.replace(lambda e: isinstance(e, sp.Derivative) and isinstance(e.expr, (sp.floor, sp.ceiling)),
                  lambda e: sp.S.Zero)
    return d.replace(lambda e: isinstance(e, sp.Subs), lambda e: e.doit())


def _hoist_columns(sp, expressions, variable):
    """The sub-expressions of ``expressions`` free of ``variable`` (parameters and numbers alone) as
    table columns: the columns (SymPy expressions of the parameters) and the expressions written in
    the symbols ``c0, c1, ...`` of those columns."""
    columns: list = []

    def column(e):
        if e.is_Number:
            return e
        for k, c in enumerate(columns):
            if c == e:
                return sp.Symbol(f"c{k}")
        columns.append(e)
        return sp.Symbol(f"c{len(columns) - 1}")

    def hoist(e):
        if not isinstance(e, sp.Expr):          # conditions and pieces of select/delta
            return e.func(*[hoist(a) for a in e.args]) if e.args else e
        if variable not in e.free_symbols:
            return column(e)
        if e.is_Symbol:
            return e
        if e.is_Mul or e.is_Add:
            const = [a for a in e.args if variable not in a.free_symbols]
            rest = [hoist(a) for a in e.args if variable in a.free_symbols]
            if e.is_Mul:
                return (column(sp.Mul(*const)) if const else 1) * sp.Mul(*rest)
            return (column(sp.Add(*const)) if const else 0) + sp.Add(*rest)
        if e.is_Pow and e.exp.is_Number:
            return sp.Pow(hoist(e.base), e.exp)
        return e.func(*[hoist(a) for a in e.args])

    hoisted = [hoist(sp.expand(x, power_base=False, log=False)) for x in expressions]
    return columns, hoisted


def _branch_statements(sp, expr, prefix: str = "x"):
    """One formula's parameter-only columns, and the statements (CSE into ``prefix0, prefix1, ...``,
    r2inv prelude) that set ``energy`` and ``force_over_r`` from ``r2`` and the columns ``c0, c1,
    ...``; and whether it is written in inverse powers of r^2 alone."""
    r, s = sp.Symbol("r", positive=True), sp.Symbol("r2", positive=True)
    energy = expr.subs(r, sp.sqrt(s))
    force_over_r = -2 * _lepton_derivative(sp, energy, s)
    columns, hoisted = _hoist_columns(sp, (energy, force_over_r), s)
    # inverse powers of r2 only (LJ-like): in powers of r2inv = 1 / r2, one division in all
    w = sp.Symbol("r2inv", positive=True)
    inverse = [x.subs(s, 1 / w) for x in hoisted]
    prelude = []
    if all(not (node.is_Pow and w in node.free_symbols and not (node.base == w and node.exp.is_Integer
                                                                and node.exp > 0))
           for x in inverse for node in sp.preorder_traversal(x)):
        hoisted, prelude = inverse, [(w, 1 / s)]
    replacements, reduced = sp.cse(hoisted, symbols=sp.numbered_symbols(prefix), optimizations="basic")
    statements = (prelude + replacements + [(sp.Symbol("energy"), reduced[0]),
                                            (sp.Symbol("force_over_r"), reduced[1])])
    return columns, statements, bool(prelude)


@functools.lru_cache(maxsize=None)
def compile_function_of(branches: tuple, variable: str, first: int):
    """A generated Numba function ``f(x, row) -> (E(x), dE/dx)`` of one variable (the bonded styles'
    formulas: :mod:`pycumd.molecular.styles.lepton_terms`), from the same parsing, Lepton derivative,
    parameter columns and common sub-expressions as the pair formulas.

    ``branches``: a tuple of ``(expression, parameter names)``, one per distinct formula, each a SymPy
    expression of the real symbol ``variable`` and its parameters; the function switches on the
    branch number in ``row[0]``, and a branch's parameter-only sub-expressions are its table columns
    from ``row[first]`` on.  Returns ``(raw, column_functions, source, cuda)``: the function (Numba,
    ``error_model="numpy"``: 1/0 gives inf), per branch the Python functions of the parameters (in
    the branch's order) that give its columns, the generated Python source, and the same statements
    in CUDA on one line (the define ``LEPTON_BODY`` of ``molecular/lepton_raw.cuh``: numbers in its
    type ``T``, commas as ``FORMULA_COMMA``).
    """
    sp = _sympy()
    x = sp.Symbol(variable, real=True)
    blocks, cuda_blocks, column_functions = [], [], []
    for k, (expr, parameters) in enumerate(branches):
        columns, hoisted = _hoist_columns(sp, (expr, _lepton_derivative(sp, expr, x)), x)
        replacements, reduced = sp.cse(hoisted, symbols=sp.numbered_symbols(f"b{k}x"), optimizations="basic")
        statements = replacements + [(sp.Symbol("energy"), reduced[0]), (sp.Symbol("derivative"), reduced[1])]
        index = {f"c{n}": first + n for n in range(len(columns))}
        blocks.append([f"{lhs} = {_python(rhs, index)}" for lhs, rhs in statements])
        cuda_blocks.append(" ".join(("" if str(lhs) in ("energy", "derivative") else "T ")
                                    + f"{lhs} = {_one_line(_cuda(rhs, index))};" for lhs, rhs in statements))
        par = [sp.Symbol(p, real=True) for p in parameters]
        column_functions.append([sp.lambdify(par, c, modules="math") for c in columns])
    lines = ["    branch = int(row[0])"] if len(blocks) > 1 else []
    for k, block in enumerate(blocks):
        if len(blocks) == 1:
            lines += [f"    {line}" for line in block]
            continue
        lines.append(f"    {'if' if k == 0 else 'elif'} branch == {k}:" if k < len(blocks) - 1 else "    else:")
        lines += [f"        {line}" for line in block]
    source = f"def formula_of_{variable}({variable}, row):\n" + "\n".join(lines) + "\n    return energy, derivative\n"
    namespace = {"math": math}
    # the source is printed from SymPy expressions whose names are identifiers (formula_syntax)
    exec(compile(source, "<pycumd formula>", "exec"), namespace)
    raw = numba.njit(inline="always", error_model="numpy")(namespace[f"formula_of_{variable}"])
    cuda = cuda_blocks[0] if len(cuda_blocks) == 1 else "const int branch = int(row[0]); " + " else ".join(
        (f"if (branch == {k}) " if k < len(cuda_blocks) - 1 else "") + "{ " + block + " }"
        for k, block in enumerate(cuda_blocks))
    return raw, column_functions, source, cuda


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


def _one_line(code: str) -> str:
    """Generated CUDA as the value of a ``-D`` define: one line, commas as ``FORMULA_COMMA``
    (formula.cuh), since nvcc splits a define's value at commas."""
    return re.sub(r"\s*\n\s*", " ", code).replace(",", " FORMULA_COMMA ")


def _cuda(e, index):
    return _printers()[0](index).doprint(e)


def _python(e, index):
    return _printers()[1](index).doprint(e)


@functools.lru_cache(maxsize=None)
def _formula_class(branches: tuple):
    """One subclass per generated pair function, so that kernels cached per class are per formula."""
    column_functions, raw, cuda, source, inverse_powers, first = _compile(branches)
    return type("Formula", (Formula,), {"raw_pair_function": staticmethod(raw), "_column_functions": column_functions,
                                        "_cuda_body": cuda, "generated_source": source,
                                        "_inverse_powers_of_r2": inverse_powers, "_first_column": first})


class Formula(PairPotential):
    """A pair potential from a formula of ``r`` with per type-pair parameters, or a formula per type pair.

    Parameters
    ----------
    energy : str, callable or dict
        ``V(r)`` (energy units) in the formula language of :mod:`pycumd.potentials.formula_syntax`
        (``^`` or ``**`` for powers; ``exp``, ``log``, ``sqrt``, ``erfc``, ``step``, ``min``, ...; the
        text is parsed, never evaluated), e.g. ``"4*epsilon*((sigma/r)^12 - (sigma/r)^6)"``; or a
        Python function ``f(r, a, b, ...)`` that SymPy can evaluate on symbols; or a dict
        ``{(type_i, type_j): formula}`` (0-based types) with a formula for each type pair: the
        generated pair function switches on the pair's formula, each pair's parameters are the
        symbols of its own formula, and unlike pairs are not mixed.
    r_cut : float
        Global cutoff (length units); a pair's own ``r_cut`` overrides it.
    parameters : sequence of str, optional
        The per-pair parameter names (one formula only); default every symbol of the formula but
        ``r`` and the constants.  With an explicit list, any other symbol is an error.
    constants : dict, optional
        Symbols replaced by numbers before the code is generated (the same for every pair).
    cutoff : {"truncate", "shift", "shift_force"}
    mixing : dict, optional
        ``{parameter: "geometric" | "arithmetic"}`` to mix unlike pairs (one formula only; cutoffs
        mix geometrically); default: no mixing, every pair must be set.

    Raises
    ------
    FormulaError
        No ``r`` in the formula, an unknown symbol or function; a formula that is not finite at a
        pair's cutoff (when the table is built).
    FormulaSyntaxError
        A character or construct the formula language does not have (the message names it and
        its position).

    Examples
    --------
    >>> lj = Formula("4*epsilon*((sigma/r)^12 - (sigma/r)^6)", r_cut=2.5)
    >>> lj = lj.pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
    >>> e, f = lj.energy_and_force([1.0])
    >>> two = Formula({(0, 0): "A*exp(-r)", (0, 1): "B/r^6", (1, 1): "A*exp(-2*r)"}, r_cut=2.5)
    >>> two = two.pair_coeff(0, 0, A=1.0).pair_coeff(0, 1, B=0.5).pair_coeff(1, 1, A=2.0)
    """

    name = "formula"
    cuda_header = "potentials/formula.cuh"
    lammps_styles = {"lepton": (1, 1)}
    _column_functions: list = [[]]
    _cuda_body = ""
    _inverse_powers_of_r2 = False
    _first_column = 4
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
        self.parameter_mixing = dict(mixing or {})
        if isinstance(energy, dict):
            if parameters is not None or self.parameter_mixing:
                raise FormulaError("formula per type pair: each pair's parameters are its formula's symbols "
                                   "(no parameters=...), and pairs are not mixed (no mixing=...)")
            if not energy:
                raise FormulaError("formula per type pair: no pairs given")
            self._pair_branch, self.energy_text, self.expression = {}, {}, {}
            branches = []
            for (i, j), formula in energy.items():
                if not (int(i) == i >= 0 and int(j) == j >= 0):
                    raise FormulaError(f"formula per type pair: types are 0-based integers, got ({i}, {j})")
                key = (min(int(i), int(j)), max(int(i), int(j)))
                if key in self._pair_branch:
                    raise FormulaError(f"formula per type pair: pair ({key[0] + 1}, {key[1] + 1}) given twice")
                expr, _, names, text = parse_energy(formula, None, constants)
                branch = (expr, names)
                if branch not in branches:
                    branches.append(branch)
                self._pair_branch[key] = branches.index(branch)
                self.energy_text[key], self.expression[key] = text, expr
            self.branch_parameters = [names for _, names in branches]
            self.parameter_names = tuple(sorted({n for names in self.branch_parameters for n in names}))
        else:
            expr, _, parameters, text = parse_energy(energy, parameters, constants)
            self._pair_branch = None
            self.energy_text, self.expression = text, expr
            self.parameter_names = parameters
            branches = [(expr, parameters)]
            bad = {k: v for k, v in self.parameter_mixing.items() if k not in parameters or v not in PARAMETER_MIXING}
            if bad:
                raise FormulaError(f"formula: bad mixing {bad}: parameters {', '.join(parameters)}, "
                                   f"rules {', '.join(PARAMETER_MIXING)}")
            self.branch_parameters = [parameters]
        self.__class__ = _formula_class(tuple(branches))

    @property
    def cuda_defines(self) -> dict:
        """The generated ``pair_raw`` body and the table width, for ``formula.cuh``; for a formula in
        inverse powers of r^2 only (LJ-like arithmetic, no function calls) the mixed-precision
        force kernel's launch bounds of the built-in LJ (forces.cu ``FIXED_MIN_BLOCKS``)."""
        width = self._first_column + max(len(f) for f in self._column_functions)
        defines = {"FORMULA_COLUMNS": width, "FORMULA_BODY": self._cuda_body}
        if self._inverse_powers_of_r2:
            defines.update(FIXED_MIN_BLOCKS=12, FIXED_MIN_BLOCKS_ENERGY=8)
        return defines

    def _pair_parameter_names(self, type_i: int, type_j: int) -> tuple:
        if self._pair_branch is None:
            return self.parameter_names
        key = (min(type_i, type_j), max(type_i, type_j))
        if key not in self._pair_branch:
            raise FormulaError(f"formula per type pair: pair ({key[0] + 1}, {key[1] + 1}) has no formula")
        return self.branch_parameters[self._pair_branch[key]]

    def pair_coeff(self, type_i: int, type_j: int, **params) -> "Formula":
        """Set a pair's parameters (those of its own formula with a formula per pair); see
        :meth:`PairPotential.pair_coeff`."""
        super().pair_coeff(type_i, type_j, **params)
        if self._pair_branch is not None:
            key = (min(type_i, type_j), max(type_i, type_j))
            self._coeffs[key][_BRANCH] = self._pair_branch[key]
        return self

    def _columns(self, p):
        branch = int(p.get(_BRANCH, 0))
        args = [p[name] for name in self.branch_parameters[branch]]
        columns = [float(f(*args)) for f in self._column_functions[branch]]
        if self._first_column == 4:             # one formula: no branch column
            return columns
        width = max(len(f) for f in self._column_functions)
        return [float(branch)] + columns + [0.0] * (width - len(columns))

    def table(self, n_types: int, pairs=None) -> np.ndarray:
        """As :meth:`PairPotential.table`, checking that the formula is finite at each pair's cutoff
        (the rows of pairs outside ``pairs`` are empty: nothing to check)."""
        rows = super().table(n_types, pairs)
        for k, row in enumerate(rows):
            if pairs is not None and row[0] == 0.0:
                continue
            values = self.raw_pair_function(row[0], row)
            if not all(math.isfinite(v) for v in values) or not np.isfinite(row[4:]).all():
                i, j = divmod(k, n_types)
                text = self.energy_text if self._pair_branch is None else self.energy_text[(min(i, j), max(i, j))]
                raise FormulaError(f"formula {text!r}: not finite at the cutoff r = {row[1]:g} of pair "
                                   f"({i + 1}, {j + 1}) (energy, F/r = {values[0]}, {values[1]})")
        return rows

    def _mix(self, a, b):
        if self._pair_branch is not None or set(self.parameter_mixing) != set(self.parameter_names):
            no_mixing(self.name)
        return {name: math.sqrt(a[name] * b[name]) if rule == "geometric" else 0.5 * (a[name] + b[name])
                for name, rule in self.parameter_mixing.items()}

    def describe(self) -> str:
        if self._pair_branch is None:
            return f"formula {self.energy_text!r} (cutoff {self.r_cut:g}, {self.cutoff})"
        pairs = ", ".join(f"({i + 1},{j + 1}) {t!r}" for (i, j), t in sorted(self.energy_text.items()))
        return f"formula per type pair: {pairs} (cutoff {self.r_cut:g}, {self.cutoff})"


def formula_from_lepton(r_cut: float, pair_coeffs: list, *, n_types: int, cutoff_mode: str = "truncate") -> Formula:
    """LAMMPS ``pair_style lepton``: ``pair_coeff I J "EXPR;name=value;..." [rc]`` for every pair.

    Numeric definitions after ``;`` become per-pair parameters, others (expressions, which may use
    ``r`` and each other) are substituted into the expression.  Pairs whose expressions are then
    the same share one branch of the generated pair function; each different expression is a
    branch of its own (as LAMMPS, an expression for each type pair).  A later ``pair_coeff`` of a
    pair replaces an earlier one; every pair needs one (lepton does not mix).

    Raises
    ------
    FormulaSyntaxError
        An expression or definition with a character or construct the formula language does not
        have.
    ValueError
        A ``pair_coeff`` with too many values, a definition that is not ``name=value``, a name
        without a value.
    """
    pairs = {}
    for i, j, values in pair_coeffs:
        key = (min(i, j), max(i, j))
        pairs[key] = lepton_pair(i, j, values)
    if not pairs:
        raise ValueError("pair_style lepton: no pair_coeff")
    pot = Formula({key: expr for key, (expr, _, _) in pairs.items()}, r_cut, cutoff=cutoff_mode)
    for (i, j), (_, numbers, extra) in pairs.items():
        names = pot._pair_parameter_names(i, j)
        missing = [n for n in names if n not in numbers]
        if missing:
            raise ValueError(f"pair_coeff {i + 1} {j + 1} (lepton): no value for {', '.join(missing)}")
        pot.pair_coeff(i, j, **{n: numbers[n] for n in names}, **extra)
    return pot


def lepton_pair(i: int, j: int, values: list):
    """One ``pair_coeff I J "EXPR;name=value;..." [rc]`` of ``pair_style lepton`` (0-based types):
    the SymPy expression with the non-numeric definitions substituted, the numeric definitions
    ``{name: value}`` and ``{"r_cut": rc}`` if given.  Raises as :func:`formula_from_lepton`; used
    while a script is read, so that an error names the ``pair_coeff`` line."""
    if not 1 <= len(values) <= 2:
        raise ValueError(f"pair_coeff {i + 1} {j + 1} (lepton): expected an expression and an optional cutoff")
    expr, numbers = lepton_expression(values[0], _sympy().Symbol("r", positive=True))
    extra = {"r_cut": float(values[1])} if len(values) == 2 else {}
    return expr, numbers, extra


def lepton_expression(text: str, variable):
    """Lepton's ``"EXPR;name=value;..."``: the SymPy expression of EXPR with the non-numeric
    definitions (expressions, which may use ``variable`` and each other) substituted, and the numeric
    ones ``{name: value}``.  ``variable``: the SymPy symbol of the name ``r`` (pair styles: positive),
    or of the bonded styles' ``r``, ``theta``, ``phi`` (real: a deviation may be negative); every other
    name is a real symbol.  Raises :class:`FormulaSyntaxError` as :func:`formula_from_lepton`."""
    sp = _sympy()
    text, definitions = split_definitions(text)

    def symbol(name):
        return variable if name == variable.name else sp.Symbol(name, real=True)

    r = symbol("r")
    numbers, substitutions = {}, {}
    for name, value in definitions:
        try:
            numbers[name] = float(value)
        except ValueError:
            substitutions[symbol(name)] = parse_formula(value, r, symbol)
    expr = parse_formula(text, r, symbol)
    for _ in range(len(substitutions) + 1):             # definitions may use later ones
        expr = expr.subs(substitutions)
    return expr, numbers
