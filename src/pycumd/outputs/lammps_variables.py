"""LAMMPS variables and equal-style formulas: one evaluator for the script reader and for run time.

:class:`VariableTable` holds a script's variables and evaluates them as LAMMPS does
(``Variable::evaluate``, LAMMPS 22 Jul 2025): ``${name}``, ``$x`` and ``$(expr)`` substitution and
equal-style formulas with numbers, ``+ - * / % ^``, unary ``-`` and ``!`` (binding tighter than ``^``,
as in LAMMPS: ``-2^2 == 4``), comparisons, ``&& || |^``, parentheses, ``v_name`` references, the
constants ``PI on off true false yes no`` and the functions ``sqrt exp ln log abs sign sin cos tan
asin acos atan atan2 floor ceil round ternary``.

Thermo keywords (``temp``, ``step``, ``atoms`` ...), ``c_ID``/``c_ID[k]`` and ``f_ID``/``f_ID[k]`` need
a simulation: the caller passes a ``runtime(word, index) -> float`` lookup
(:func:`pycumd.outputs.thermo_keywords.formula_value` while a LAMMPS plan runs); without one they
raise :class:`LammpsScriptError`. Group and special functions (``count()``, ``slope()`` ...) are not
supported.

The reader of scripts (:class:`pycumd.inputs.lammps_script.ScriptReader`) is a VariableTable that also
reads lines and defines variables; thermo output, ``fix ave/time`` and ``print`` evaluate the
variables of a :meth:`VariableTable.snapshot` while a plan runs. The module sits with the outputs
(the bottom layer) so that both can use it; it imports nothing of pycumd.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Mapping

__all__ = ["LammpsScriptError", "VariableTable", "evaluate_expression"]


class LammpsScriptError(ValueError):
    """An error in a LAMMPS input script, located by file name and line.

    Parameters
    ----------
    message : str
        What is wrong.
    line : int, optional
        1-based line number (the first line of a continued command).
    filename : str, optional
        The script's name, ``"<input>"`` for text.

    Examples
    --------
    >>> str(LammpsScriptError("unknown variable 'foo'", 7, "in.lj"))
    "in.lj:7: unknown variable 'foo'"
    """

    def __init__(self, message: str, line: int | None = None, filename: str | None = None):
        self.message = message
        self.line = line
        self.filename = filename
        super().__init__(message)

    def __str__(self) -> str:
        where = self.filename or "<input>"
        if self.line is not None:
            where = f"{where}:{self.line}"
        return f"{where}: {self.message}"


class _Error(Exception):
    """Internal: an error without a location yet (the reader adds file and line)."""


class _NeedsRun(_Error):
    """A formula names a thermo keyword, compute or fix: it can be evaluated only while (or after)
    a simulation runs, with a ``runtime`` lookup (see :meth:`VariableTable.evaluate`)."""


class _MathError(_Error):
    """Divide by zero, the square root of a negative number ...: the formula is well formed."""


@dataclass
class _Variable:
    style: str
    values: list[str] = field(default_factory=list)  # index-like and string styles
    expr: str = ""  # equal-style formula; format style: name of the variable formatted


# ============================================================================ formulas

_CONSTANTS = {"PI": math.pi, "on": 1.0, "off": 0.0, "true": 1.0, "false": 0.0,
              "yes": 1.0, "no": 0.0}

_RUNTIME_FUNCTIONS = {
    # group functions
    "count", "mass", "charge", "xcm", "vcm", "fcm", "bound", "gyration", "ke", "angmom",
    "torque", "inertia", "omega",
    # special functions
    "sum", "min", "max", "ave", "trap", "slope", "gmask", "rmask", "grmask", "next",
    "is_active", "is_available", "is_defined", "is_file", "is_os", "is_typelabel",
    "extract_setting", "label2type", "sort", "rsort",
    # math functions that need the time step or a generator
    "random", "normal", "ramp", "stagger", "logfreq", "logfreq2", "logfreq3", "stride",
    "stride2", "vdisplace", "swiggle", "cwiggle",
}

_TOKEN = re.compile(
    r"\s*(?:"
    r"(?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"
    r"|(?P<word>[A-Za-z_][A-Za-z0-9_]*)"
    r"|(?P<op>\|\||\|\^|&&|==|!=|<=|>=|[-+*/%^()<>!,\[\]])"
    r")"
)


def _lmp_round(a: float) -> float:
    """LAMMPS' MYROUND: halves round up (towards +inf)."""
    return math.ceil(a) if (a - math.floor(a)) >= 0.5 else math.floor(a)


def _lmp_pow(a: float, b: float) -> float:
    if b == 0.0:
        return 1.0
    if a == 0.0 and b < 0.0:
        raise _MathError("invalid power expression in variable formula (0 to a negative power)")
    try:
        return math.pow(a, b)
    except ValueError:  # negative base, fractional exponent: C's pow gives nan
        return math.nan
    except OverflowError:
        return math.copysign(math.inf, a) if float(b).is_integer() and int(b) % 2 else math.inf


def _sqrt(x: float) -> float:
    if x < 0.0:
        raise _MathError("sqrt of negative value in variable formula")
    return math.sqrt(x)


def _ln(x: float) -> float:
    if x <= 0.0:
        raise _MathError("log of zero/negative value in variable formula")
    return math.log(x)


def _log10(x: float) -> float:
    if x <= 0.0:
        raise _MathError("log of zero/negative value in variable formula")
    return math.log10(x)


def _asin(x: float) -> float:
    if x < -1.0 or x > 1.0:
        raise _MathError("arcsin of invalid value in variable formula")
    return math.asin(x)


def _acos(x: float) -> float:
    if x < -1.0 or x > 1.0:
        raise _MathError("arccos of invalid value in variable formula")
    return math.acos(x)


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


_FUNCTIONS = {
    "sqrt": (1, _sqrt),
    "exp": (1, _exp),
    "ln": (1, _ln),
    "log": (1, _log10),
    "abs": (1, abs),
    "sign": (1, lambda x: 1.0 if x >= 0.0 else -1.0),
    "sin": (1, math.sin),
    "cos": (1, math.cos),
    "tan": (1, math.tan),
    "asin": (1, _asin),
    "acos": (1, _acos),
    "atan": (1, math.atan),
    "atan2": (2, math.atan2),
    "floor": (1, lambda x: float(math.floor(x)) if math.isfinite(x) else x),
    "ceil": (1, lambda x: float(math.ceil(x)) if math.isfinite(x) else x),
    "round": (1, lambda x: float(_lmp_round(x)) if math.isfinite(x) else x),
    "ternary": (3, lambda c, a, b: a if c != 0.0 else b),
}


class _Formula:
    """Recursive-descent evaluator of LAMMPS equal-style formulas.

    Precedence, lowest first (all binary operators left-associative, as in LAMMPS):
    ``|| |^``; ``&&``; ``== !=``; ``< <= > >=``; ``+ -``; ``* / %``; ``^``;
    unary ``- !``; numbers, names, calls and parentheses.
    """

    def __init__(self, text: str, lookup, runtime=None):
        self.text = text
        self.lookup = lookup  # name -> float, for v_name references
        # (word, index) -> float for thermo keywords, c_ID, c_ID[k], f_ID, f_ID[k] (index None or
        # the integer k); None before a simulation runs: such names raise _NeedsRun
        self.runtime = runtime
        self.tokens: list[tuple[str, str]] = []
        pos = 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if m is None or m.end() == pos:
                raise _Error(f"invalid syntax in variable formula {text!r} at {stripped[pos:]!r}")
            kind = m.lastgroup
            tok = m.group(kind)
            if kind == "num" and m.end() < len(stripped) and (
                    stripped[m.end()].isalnum() or stripped[m.end()] in "._"):
                raise _Error(f"invalid number in variable formula {text!r} at {stripped[m.start(kind):]!r}")
            self.tokens.append((kind, tok))
            pos = m.end()
        self.i = 0

    # -- token helpers
    def _peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else (None, None)

    def _take(self):
        tok = self._peek()
        self.i += 1
        return tok

    def _expect(self, op: str):
        kind, tok = self._take()
        if kind != "op" or tok != op:
            got = "end of formula" if kind is None else repr(tok)
            raise _Error(f"invalid syntax in variable formula {self.text!r}: expected {op!r}, got {got}")

    def evaluate(self) -> float:
        if not self.tokens:
            raise _Error("empty variable formula")
        value = self._or()
        if self.i != len(self.tokens):
            raise _Error(f"invalid syntax in variable formula {self.text!r} "
                         f"near {self.tokens[self.i][1]!r}")
        return value

    def _binary(self, ops, sub, apply):
        value = sub()
        while True:
            kind, tok = self._peek()
            if kind != "op" or tok not in ops:
                return value
            self.i += 1
            value = apply(tok, value, sub())

    def _or(self):
        def apply(op, a, b):
            if op == "||":
                return 1.0 if (a != 0.0 or b != 0.0) else 0.0
            return 1.0 if ((a == 0.0) != (b == 0.0)) else 0.0
        return self._binary(("||", "|^"), self._and, apply)

    def _and(self):
        return self._binary(("&&",), self._equality,
                            lambda op, a, b: 1.0 if (a != 0.0 and b != 0.0) else 0.0)

    def _equality(self):
        return self._binary(("==", "!="), self._relational,
                            lambda op, a, b: 1.0 if ((a == b) == (op == "==")) else 0.0)

    def _relational(self):
        def apply(op, a, b):
            res = {"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
            return 1.0 if res else 0.0
        return self._binary(("<", "<=", ">", ">="), self._additive, apply)

    def _additive(self):
        return self._binary(("+", "-"), self._multiplicative,
                            lambda op, a, b: a + b if op == "+" else a - b)

    def _multiplicative(self):
        def apply(op, a, b):
            if op == "*":
                return a * b
            if b == 0.0:
                raise _MathError("divide by 0 in variable formula" if op == "/"
                             else "modulo 0 in variable formula")
            if op == "/":
                return a / b
            try:
                return math.fmod(a, b)
            except ValueError:  # fmod(inf, b): nan in C
                return math.nan
        return self._binary(("*", "/", "%"), self._power, apply)

    def _power(self):
        return self._binary(("^",), self._unary, lambda op, a, b: _lmp_pow(a, b))

    def _unary(self):
        kind, tok = self._peek()
        if kind == "op" and tok == "-":
            self.i += 1
            return -self._unary()
        if kind == "op" and tok == "!":
            self.i += 1
            return 1.0 if self._unary() == 0.0 else 0.0
        if kind == "op" and tok == "+":
            raise _Error(f"invalid syntax in variable formula {self.text!r}: unary '+'")
        return self._primary()

    def _primary(self):
        kind, tok = self._take()
        if kind is None:
            raise _Error(f"invalid syntax in variable formula {self.text!r}: unexpected end")
        if kind == "num":
            return float(tok)
        if kind == "op":
            if tok == "(":
                value = self._or()
                self._expect(")")
                return value
            raise _Error(f"invalid syntax in variable formula {self.text!r} near {tok!r}")
        # a word
        nkind, ntok = self._peek()
        if nkind == "op" and ntok == "(":
            return self._call(tok)
        index = None
        if nkind == "op" and ntok == "[":
            if not tok.startswith(("c_", "f_")):
                raise _Error(f"indexed reference '{tok}[...]' in variable formula {self.text!r} is not "
                             "supported (only c_ID[k] and f_ID[k])")
            self.i += 1
            kind, number = self._take()
            if kind != "num" or not number.isdigit():
                raise _Error(f"invalid index of '{tok}' in variable formula {self.text!r}")
            self._expect("]")
            index = int(number)
        elif tok.startswith("v_"):
            return self.lookup(tok[2:])
        elif tok in _CONSTANTS:
            return _CONSTANTS[tok]
        if tok.startswith(("i_", "d_", "i2_", "d2_")):
            raise _Error(f"reference '{tok}' in variable formula {self.text!r}: per-atom properties are "
                         "not supported")
        if self.runtime is None:
            what = "compute or fix" if tok.startswith(("c_", "f_")) else "thermo keyword"
            raise _NeedsRun(f"'{tok}' in variable formula {self.text!r} is a {what} (or an unknown name): "
                            "it needs a running LAMMPS simulation (pycumd evaluates it in thermo_style "
                            "custom, fix ave/time and print after a run)")
        return float(self.runtime(tok, index))

    def _call(self, name):
        if name in _RUNTIME_FUNCTIONS:
            raise _Error(f"function {name}() needs a running LAMMPS simulation (not supported)")
        if name not in _FUNCTIONS:
            raise _Error(f"unknown function {name}() in variable formula {self.text!r}")
        self._expect("(")
        args = []
        kind, tok = self._peek()
        if not (kind == "op" and tok == ")"):
            while True:
                args.append(self._or())
                kind, tok = self._take()
                if kind == "op" and tok == ",":
                    continue
                if kind == "op" and tok == ")":
                    break
                raise _Error(f"invalid syntax in arguments of {name}() in {self.text!r}")
        else:
            self.i += 1
        nargs, fn = _FUNCTIONS[name]
        if len(args) != nargs:
            raise _Error(f"function {name}() takes {nargs} argument(s), got {len(args)}")
        try:
            return float(fn(*args))
        except ValueError:  # C math returns nan where Python raises (sin(inf), ...)
            return math.nan
        except OverflowError:
            return math.inf


def _skip_quoted(s: str, i: int) -> int:
    """Index just past the quoted region starting at s[i] (a quote character)."""
    if s.startswith('"""', i):
        j = s.find('"""', i + 3)
        if j < 0:
            raise _Error("unmatched triple quote in command")
        return j + 3
    q = s[i]
    j = s.find(q, i + 1)
    if j < 0:
        raise _Error("unmatched single quote in command" if q == "'"
                     else "unmatched double quote in command")
    return j + 1


_IMMEDIATE_FORMAT = re.compile(r"%[0-9 ]*\.[0-9]+[efgEFG]")


def _c_format(fmt: str, value: float) -> str:
    """printf-style formatting of one number (formats checked by _IMMEDIATE_FORMAT)."""
    try:
        return fmt % value
    except (TypeError, ValueError) as exc:
        raise _Error(f"incorrect conversion in format string {fmt!r}: {exc}") from None


class VariableTable:
    """A script's variables (name -> style, values, formula) and their evaluation.

    Examples
    --------
    >>> table = VariableTable.from_snapshot({"a": ["equal", [], "2*3"]})
    >>> table.evaluate("v_a + 1")
    7.0
    >>> table.evaluate("temp/2", runtime=lambda word, index: 3.0)
    1.5
    """

    def __init__(self):
        self.variables: dict[str, _Variable] = {}
        self._evaluating: list[str] = []
        self._runtime = None          # (word, index) -> float while a simulation's values are at hand
        self._snapshot = None         # snapshot() of the variables as they are now (None: changed since)

    def value(self, name: str) -> str:
        """The text that ``${name}`` would substitute.

        Raises
        ------
        LammpsScriptError
            For an unknown variable or one that needs a running simulation.
        """
        try:
            return self._retrieve(name)
        except _Error as exc:
            raise LammpsScriptError(str(exc)) from None

    def evaluate(self, expr: str, runtime=None) -> float:
        """Evaluate an equal-style formula with the current variables.

        Parameters
        ----------
        expr : str
            The formula.
        runtime : callable ``(word, index) -> float``, optional
            The values of a running simulation: thermo keywords (``temp``; index None), computes
            (``c_ID``, ``c_ID[k]``) and fixes (``f_ID``, ``f_ID[k]``). It raises ``ValueError`` or
            ``KeyError`` naming a word it does not know. Without it such words raise.

        Raises
        ------
        LammpsScriptError
            For syntax errors, unknown names, or math errors (divide by 0, ...).
        """
        return self._with_runtime(runtime, self._evaluate, expr)

    def substitute_at_run(self, text: str, runtime) -> str:
        """``$`` substitution of ``text`` with a running simulation's values (``runtime`` as in
        :meth:`evaluate`): ``print "T = $(temp)"`` when the print executes."""
        return self._with_runtime(runtime, self.substitute, text)

    def check_names(self, expr: str, runtime, text: bool = False) -> None:
        """Evaluate the formula ``expr`` (``text``: substitute the text ``expr``) with ``runtime``
        giving placeholder values, to find names that cannot be evaluated before a run starts; math
        errors (divide by 0 ...) of the placeholders are ignored."""
        try:
            self._with_runtime(runtime, self.substitute if text else self._evaluate, expr)
        except LammpsScriptError as exc:
            if not isinstance(exc.__cause__, _MathError):
                raise

    def _with_runtime(self, runtime, function, argument):
        previous, self._runtime = self._runtime, runtime
        try:
            return function(argument)
        except _Error as exc:
            raise LammpsScriptError(str(exc)) from exc
        except (ValueError, KeyError) as exc:      # the runtime lookup names what it does not know
            raise LammpsScriptError(str(exc.args[0]) if exc.args else str(exc)) from None
        finally:
            self._runtime = previous

    def snapshot(self) -> dict:
        """The variables as they are now, as plain values (JSON-able): ``{name: [style, values,
        expr]}``; :meth:`from_snapshot` makes a reader of them. One dict is shared until a
        ``variable`` or ``next`` command changes the variables."""
        if self._snapshot is None:
            self._snapshot = {name: [v.style, list(v.values), v.expr] for name, v in self.variables.items()}
        return self._snapshot

    @classmethod
    def from_snapshot(cls, snapshot: Mapping[str, list]) -> "VariableTable":
        """A table holding the variables of a :meth:`snapshot` (to evaluate them at run time)."""
        reader = cls()
        reader.variables = {name: _Variable(style, list(values), expr)
                            for name, (style, values, expr) in snapshot.items()}
        return reader

    def _evaluate(self, expr: str) -> float:
        return _Formula(expr, self._numeric, self._runtime).evaluate()

    def _numeric(self, name: str) -> float:
        var = self.variables.get(name)
        if var is None:
            raise _Error(f"invalid variable reference v_{name} in variable formula (unknown variable '{name}')")
        if var.style in ("equal", "format"):
            return self._equal_value(name)
        text = self._retrieve(name)
        try:
            return float(text)
        except ValueError:
            raise _Error(f"variable '{name}' has the non-numeric value {text!r}") from None

    def _equal_value(self, name: str) -> float:
        var = self.variables[name]
        if name in self._evaluating:
            chain = " -> ".join(self._evaluating + [name])
            raise _Error(f"circular variable reference: {chain}")
        self._evaluating.append(name)
        try:
            if var.style == "format":
                target = self.variables.get(var.expr)
                if target is None or target.style not in ("equal", "internal"):
                    raise _Error(f"format variable '{name}' refers to '{var.expr}', which is "
                                 "not an equal-style variable")
                return self._numeric(var.expr)
            return self._evaluate(var.expr)
        finally:
            self._evaluating.pop()

    def _retrieve(self, name: str) -> str:
        var = self.variables.get(name)
        if var is None:
            raise _Error(f"unknown variable '{name}'")
        style = var.style
        if style in ("index", "loop", "world", "universe", "uloop", "string", "getenv"):
            return var.values[0]
        if style == "internal":
            return "%.15g" % float(var.values[0])
        if style == "equal":
            return "%.15g" % self._equal_value(name)
        if style == "format":
            return _c_format(var.values[0], self._equal_value(name))
        raise _Error(f"{style}-style variable '{name}' needs a running LAMMPS simulation and "
                     "cannot be substituted by the script reader")

    def substitute(self, s: str) -> str:
        """Replace ``$`` references outside quotes, once, left to right (LAMMPS rules)."""
        out = []
        i, n = 0, len(s)
        while i < n:
            c = s[i]
            if c == "$":
                nxt = s[i + 1] if i + 1 < n else ""
                if nxt == "{":
                    j = s.find("}", i + 2)
                    if j < 0:
                        raise _Error(f"invalid variable name: no closing '}}' in {s[i:]!r}")
                    out.append(self._retrieve(s[i + 2:j]))
                    i = j + 1
                elif nxt == "(":
                    depth, j = 0, i + 2
                    while j < n and (s[j] != ")" or depth != 0):
                        if s[j] == "(":
                            depth += 1
                        elif s[j] == ")":
                            depth -= 1
                        j += 1
                    if j >= n:
                        raise _Error(f"invalid immediate variable: no closing ')' in {s[i:]!r}")
                    out.append(self._immediate(s[i + 2:j]))
                    i = j + 1
                elif nxt == "":
                    raise _Error("substitution for illegal variable: '$' at the end of the line")
                else:
                    out.append(self._retrieve(nxt))
                    i += 2
            elif c in "'\"":
                j = _skip_quoted(s, i)
                out.append(s[i:j])
                i = j
            else:
                out.append(c)
                i += 1
        return "".join(out)

    def _immediate(self, body: str) -> str:
        fmt = "%.20g"
        k = body.rfind(":")
        if k >= 0 and body[k + 1:k + 2] == "%":
            fmt = body[k + 1:]
            body = body[:k]
        if not _IMMEDIATE_FORMAT.match(fmt):
            raise _Error(f"incorrect conversion in format string {fmt!r}")
        return _c_format(fmt, self._evaluate(body))


def evaluate_expression(expr: str, variables: Mapping[str, object] | None = None) -> float:
    """Evaluate one LAMMPS equal-style formula.

    Parameters
    ----------
    expr : str
        The formula, e.g. ``"2*v_a + sqrt(2)"``.
    variables : mapping, optional
        Values for ``v_name`` references (numbers or numeric strings).

    Returns
    -------
    float

    Examples
    --------
    >>> evaluate_expression("-2^2 + v_a", {"a": 1})
    5.0
    """
    reader = VariableTable()
    for name, value in (variables or {}).items():
        reader.variables[str(name)] = _Variable("string", [str(value)])
    return reader.evaluate(expr)
