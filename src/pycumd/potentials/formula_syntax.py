"""The formula language of pair potentials, read without evaluating the text.

A formula from a file (a LAMMPS ``pair_style lepton`` expression, a TOML ``expression``) or from a
string in Python is parsed by :func:`parse_formula` into a SymPy expression.  The text is never
handed to ``eval``, ``exec`` or ``sympy.sympify``: Python's :mod:`ast` parses it (``^`` read as the
power, as in Lepton).  A character outside :data:`CHARACTERS` (quotes, brackets, ``:``, ``=``,
``;``, ``@``, ...) is an error naming it and its position; then only these nodes are accepted, every
other one is an error naming it and its position:

* numbers (integers and decimals, ``1e-3``; not complex, not ``True``/``False``);
* names (``r``, parameters, constants, names defined after ``;``): identifiers without ``__``;
  ``pi`` is the number pi;
* ``+ - * /``, ``^`` or ``**`` (power, right-associative, binding tighter than unary minus), unary
  ``-`` and ``+``, parentheses;
* calls of the functions of :data:`FUNCTIONS` by name with positional arguments.

Lepton's ``;``-separated definitions (``"4*eps*((sig/r)^12-(sig/r)^6); eps=1.0; sig=1.0"``) are split by
:func:`split_definitions`.
"""

from __future__ import annotations

import ast
import math
import string

#: function name -> number of arguments (Lepton's functions; the derivative of step, delta, floor
#: and ceil is 0, as Lepton differentiates them)
FUNCTIONS = {"sqrt": 1, "exp": 1, "log": 1, "sin": 1, "cos": 1, "tan": 1, "sec": 1, "csc": 1, "cot": 1,
             "asin": 1, "acos": 1, "atan": 1, "atan2": 2, "sinh": 1, "cosh": 1, "tanh": 1, "erf": 1, "erfc": 1,
             "step": 1, "delta": 1, "square": 1, "cube": 1, "recip": 1, "min": 2, "max": 2, "abs": 1,
             "floor": 1, "ceil": 1, "select": 3}
#: the characters a formula may contain (ASCII letters, digits, ``_ . , ( ) + - * / ^`` and blanks)
CHARACTERS = frozenset(string.ascii_letters + string.digits + "_.,()+-*/^ \t\r\n")
#: integer exponents beyond this magnitude are kept as floating-point numbers (no symbolic expansion)
LARGEST_INTEGER_EXPONENT = 64

_DESCRIPTIONS = {
    ast.Subscript: "subscripts", ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions", ast.SetComp: "comprehensions", ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions", ast.Starred: "starred arguments", ast.Compare: "comparisons",
    ast.BoolOp: "'and'/'or'", ast.IfExp: "'if' expressions", ast.List: "lists", ast.Tuple: "tuples",
    ast.Dict: "dicts", ast.Set: "sets", ast.JoinedStr: "strings", ast.NamedExpr: "assignments (:=)",
    ast.Await: "awaits", ast.Yield: "yields", ast.YieldFrom: "yields", ast.Slice: "slices",
}
_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "^"}


class FormulaError(ValueError):
    """A formula pycumd cannot turn into a pair potential (the message says why)."""


class FormulaSyntaxError(FormulaError):
    """A formula with a character or construct the formula language does not have.

    ``str()`` is one line: the formula, what is not allowed and its 1-based character position.
    """

    def __init__(self, text: str, what: str, column: int | None = None):
        self.text, self.what, self.column = text, what, column
        where = f" at character {column}" if column is not None else ""
        super().__init__(f"formula {text!r}: {what}{where}")


def split_definitions(text: str) -> tuple[str, list[tuple[str, str]]]:
    """Lepton's ``"EXPRESSION; name=value; ..."``: the expression and the (name, text) definitions.

    Raises :class:`FormulaSyntaxError` for a definition that is not ``name=value`` or whose name
    is not a plain identifier.
    """
    expression, *parts = [p.strip() for p in str(text).split(";")]
    definitions = []
    for part in parts:
        if not part:
            continue
        name, eq, value = (x.strip() for x in part.partition("="))
        if not eq or not name.isidentifier() or "__" in name:
            raise FormulaSyntaxError(text, f"definition {part!r} is not name=value")
        definitions.append((name, value))
    return expression, definitions


def parse_formula(text: str, r, symbol):
    """The SymPy expression of the formula ``text``, built from its syntax tree (never evaluated).

    Parameters
    ----------
    text : str
        The formula, e.g. ``"4*eps*((sig/r)^12 - (sig/r)^6)"``.
    r : sympy.Symbol
        The symbol for the name ``r``.
    symbol : callable
        ``symbol(name) -> sympy.Symbol`` for every other name.

    Raises
    ------
    FormulaSyntaxError
        Naming the first character or construct that is not allowed and its position.
    """
    import sympy as sp

    source, columns = _python_source(text)
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        column = _original_column(columns, (exc.offset or 1) - 1)
        near = text[column - 1:column] if column <= len(text) else ""
        raise FormulaSyntaxError(text, f"cannot read it ({exc.msg}{f', near {near!r}' if near.strip() else ''})",
                                 column) from None
    except (RecursionError, MemoryError):
        raise FormulaSyntaxError(text, "nested too deeply") from None
    functions = _sympy_functions(sp)

    def fail(node, what):
        raise FormulaSyntaxError(text, what, _original_column(columns, getattr(node, "col_offset", 0)))

    def build(node):
        if isinstance(node, ast.Expression):
            return build(node.body)
        if isinstance(node, ast.Constant):
            v = node.value
            if isinstance(v, (str, bytes)):
                fail(node, f"strings ({source_slice(node)}) are not allowed")
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                fail(node, f"the constant {source_slice(node)!r} is not allowed (real numbers only)")
            if isinstance(v, float) and not math.isfinite(v):
                fail(node, f"number {source_slice(node)!r} is not finite")
            return sp.Integer(v) if isinstance(v, int) else sp.Float(repr(v))
        if isinstance(node, ast.Name):
            if "__" in node.id:
                fail(node, f"name {node.id!r} is not allowed (names with '__')")
            if node.id == "pi":
                return sp.pi
            return r if node.id == "r" else symbol(node.id)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            value = build(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            a, b = build(node.left), build(node.right)
            if isinstance(node.op, ast.Add):
                return a + b
            if isinstance(node.op, ast.Sub):
                return a - b
            if isinstance(node.op, ast.Mult):
                return a * b
            if isinstance(node.op, ast.Div):
                return a / b
            return _power(sp, a, b)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                build(node.func)                # refuses what it is (attribute access, a lambda, ...)
                fail(node.func, "only functions are called (by name)")
            name = node.func.id
            if "__" in name:
                fail(node.func, f"name {name!r} is not allowed (names with '__')")
            if name not in FUNCTIONS:
                fail(node.func, f"unknown function {name!r} (functions: {', '.join(FUNCTIONS)})")
            if node.keywords:
                fail(node.keywords[0].value, f"keyword arguments of {name}() are not allowed")
            for arg in node.args:
                if isinstance(arg, ast.Starred):
                    fail(arg, f"starred arguments of {name}() are not allowed")
            if len(node.args) != FUNCTIONS[name]:
                fail(node, f"{name}() takes {FUNCTIONS[name]} argument(s), got {len(node.args)}")
            return functions[name](*[build(a) for a in node.args])
        if isinstance(node, ast.Attribute):
            dot = ast.Attribute(col_offset=node.end_col_offset - len(node.attr) - 1)
            fail(dot, f"attribute access '.{node.attr}' is not allowed")
        if isinstance(node, ast.BinOp):
            between = source[:node.right.col_offset].rstrip(" (")
            at = ast.BinOp(col_offset=len(between) - len(_operator_text(node.op).strip("'")))
            fail(at, f"operator {_operator_text(node.op)} is not allowed (+ - * / ^)")
        if isinstance(node, ast.UnaryOp):
            fail(node, f"unary operator {_operator_text(node.op)} is not allowed (-)")
        fail(node, f"{_DESCRIPTIONS.get(type(node), type(node).__name__)} are not allowed")

    def source_slice(node):
        return ast.get_source_segment(source, node) or ""

    try:
        return build(tree)
    except RecursionError:
        raise FormulaSyntaxError(text, "nested too deeply") from None


def _python_source(text: str) -> tuple[str, list[int]]:
    """``text`` with ``^`` written ``**``, and for each character of the result its 0-based column
    in ``text``; :class:`FormulaSyntaxError` at the first character outside :data:`CHARACTERS`."""
    out, columns = [], []
    for k, ch in enumerate(str(text)):
        if ch not in CHARACTERS:
            raise FormulaSyntaxError(text, f"the character {ch!r} is not allowed", k + 1)
        if ch == "^":
            out.append("**")
            columns += [k, k]
        elif ch in "\n\r":
            out.append(" ")           # one line: a formula is one expression
            columns.append(k)
        else:
            out.append(ch)
            columns.append(k)
    return "".join(out), columns


def _original_column(columns: list[int], offset: int) -> int:
    """1-based character position in the original text of the 0-based ``offset`` in the source."""
    if not columns:
        return 1
    return columns[min(max(offset, 0), len(columns) - 1)] + 1


def _operator_text(op) -> str:
    return {ast.FloorDiv: "'//'", ast.Mod: "'%'", ast.MatMult: "'@'", ast.BitOr: "'|'", ast.BitAnd: "'&'",
            ast.LShift: "'<<'", ast.RShift: "'>>'", ast.BitXor: "'^'", ast.Invert: "'~'",
            ast.Not: "'not'"}.get(type(op), type(op).__name__)


def _power(sp, base, exponent):
    """``base ** exponent``; numbers raised to large powers are computed in floating point and large
    integer exponents kept as floating-point numbers, so that no formula expands symbolically
    without bound."""
    big = exponent.is_Number and abs(float(exponent)) > LARGEST_INTEGER_EXPONENT
    if big and base.is_Number:
        try:
            return sp.Float(math.pow(float(base), float(exponent)))
        except (OverflowError, ValueError):
            return sp.Float(math.inf) if float(base) > 0 else sp.nan
    if big:
        return sp.Pow(base, sp.Float(float(exponent)))
    return base**exponent


def _sympy_functions(sp) -> dict:
    """Lepton's functions as SymPy expressions (step(x): x >= 0; delta(x): x == 0; select(x, y, z):
    y where x != 0, else z)."""
    return {
        "sqrt": sp.sqrt, "exp": sp.exp, "log": sp.log, "sin": sp.sin, "cos": sp.cos, "tan": sp.tan,
        "sec": sp.sec, "csc": sp.csc, "cot": sp.cot, "asin": sp.asin, "acos": sp.acos, "atan": sp.atan,
        "atan2": sp.atan2, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh, "erf": sp.erf, "erfc": sp.erfc,
        "step": lambda x: sp.Heaviside(x, 1), "delta": lambda x: sp.Piecewise((1, sp.Eq(x, 0)), (0, True)),
        "square": lambda x: x**2, "cube": lambda x: x**3, "recip": lambda x: 1 / x,
        "min": sp.Min, "max": sp.Max, "abs": sp.Abs, "floor": sp.floor, "ceil": sp.ceiling,
        "select": lambda x, y, z: sp.Piecewise((y, sp.Ne(x, 0)), (z, True)),
    }
