"""Read LAMMPS input scripts into a list of commands, without running any physics.

:func:`read_script` turns the text of a LAMMPS input script into :class:`Command`
objects -- a name, its arguments, and where it came from -- after doing everything the
LAMMPS input layer does *before* a command executes: line continuation, comments, quotes,
``$`` substitution and the ``variable`` bookkeeping.  A pycumd front end can then map
``units``, ``lattice``, ``pair_style``, ``run`` ... onto its own objects.

The reading rules follow LAMMPS' ``Input::file()``, ``Input::parse()``,
``Input::substitute()`` and ``Input::nextword()`` (LAMMPS 22 Jul 2025):

* A line whose last non-blank character is ``&`` continues on the next line: the ``&``
  is dropped and the next line appended as it is (its leading blanks included).  An odd
  number of triple quotes ``\"\"\"`` also continues the line, keeping the newline.
* ``#`` starts a comment, except inside single, double or triple quotes.
* ``${name}``, ``$x`` (one-character name) and the immediate ``$(expr)`` /
  ``$(expr:%fmt)`` are replaced outside quotes, once, left to right; substituted text is
  not scanned again.  An equal-style variable is formatted with ``%.15g``, an immediate
  with ``%.20g`` unless a format is appended.
* Words are separated by blanks; a word that *starts* with a quote extends to the matching
  quote (which must be followed by a blank or the end of the line) and loses the quotes.
* ``print`` substitutes its text argument once more when it "executes", as LAMMPS does,
  so ``print "T = ${t}"`` comes back with the value filled in.

``variable`` commands are consumed.  Styles ``index``, ``loop``, ``world``, ``universe``,
``uloop`` (first value; they are skipped if the name already exists, which is how
command-line ``-var`` values win), ``string``, ``equal`` (evaluated lazily, whenever it
is referenced), ``internal``, ``getenv``, ``format`` and ``delete`` are understood;
``atom``, ``vector``, ``python``, ``file``, ``atomfile`` and ``timer`` variables are
recorded and raise an error only if a ``$`` reference needs their value.  References
``v_name`` in the *arguments* of other commands are left as they are (LAMMPS evaluates
them while running); :meth:`ScriptReader.evaluate` can evaluate them later if they are
equal-style.

Equal-style formulas support numbers, ``+ - * / % ^``, unary ``-`` and ``!``
(binding tighter than ``^``, as in LAMMPS: ``-2^2 == 4``), comparisons, ``&& || |^``,
parentheses, ``v_name`` references, the constants ``PI on off true false yes no`` and the
functions ``sqrt exp ln log abs sign sin cos tan asin acos atan atan2 floor ceil round
ternary``.  Thermo keywords (``step``, ``atoms``, ``temp``...), computes, fixes, group and
special functions need a running simulation and raise :class:`LammpsScriptError`.

``include FILE`` reads ``FILE`` relative to the directory of the including script
(``base_dir``, default the current directory, for text without a file).  Flow control is
done while reading, so a loop is unrolled into its commands: ``label ID``, ``jump SELF
[ID]`` (read the current file again from its start or from ``label ID``; a jump to another
file raises), ``next V ...`` (index, loop, world, universe and uloop variables; when one
runs out they are deleted and the next ``jump`` is skipped, as in LAMMPS) and ``if COND
then CMD ... [elif COND CMD ...] [else CMD ...]`` with a condition that can be evaluated
now (no thermo keywords).  ``quit`` ends reading (it is returned as the last command).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

__all__ = [
    "Command",
    "LammpsScriptError",
    "ScriptReader",
    "evaluate_expression",
    "read_script",
    "read_script_file",
]

_BLANKS = " \t\n\v\f\r"
_MAX_INCLUDE_DEPTH = 16  # LMP_MAXFILE
_MAX_LINES = 10_000_000  # lines read, loops included: a jump loop without a 'next' stops here


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


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
    a simulation runs, with a ``runtime`` lookup (see :meth:`ScriptReader.evaluate`)."""


class _MathError(_Error):
    """Divide by zero, the square root of a negative number ...: the formula is well formed."""


@dataclass(frozen=True)
class Command:
    """One LAMMPS command after substitution.

    Attributes
    ----------
    name : str
        The command word, e.g. ``"pair_style"``.
    args : list of str
        Its arguments, quotes removed, variables substituted.
    line : int
        1-based line number of the command's first line in ``source``.
    source : str
        The file the command was read from (``"<input>"`` for text).
    """

    name: str
    args: list[str] = field(default_factory=list)
    line: int = 0
    source: str = "<input>"
    #: the script's variables when the command was read (:meth:`ScriptReader.snapshot`), for what is
    #: evaluated later, while or after a simulation runs (``v_name`` in thermo output, ``print``)
    variables: dict | None = field(default=None, repr=False, compare=False)
    #: ``print`` only: the text names thermo keywords, computes or fixes, so its ``$`` references are
    #: substituted when the print executes (:meth:`ScriptReader.substitute_at_run`), not when read
    deferred: bool = field(default=False, repr=False, compare=False)


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


# ============================================================================ lines


def _numtriple(line: str) -> int:
    return line.count('"""')


def _logical_lines(text: str):
    """Yield (first_line_number, line) after ``&`` and triple-quote continuation."""
    physical = text.splitlines()
    buf = ""
    start = None
    ntriple = 0
    for lineno, raw in enumerate(physical, start=1):
        if start is None:
            start = lineno
            ntriple = 0
        ntriple += _numtriple(raw)
        buf += raw
        trimmed = buf.rstrip(_BLANKS)
        if trimmed.endswith("&"):
            buf = trimmed[:-1]
            continue
        if ntriple % 2:
            buf = trimmed + "\n"
            continue
        yield start, trimmed
        buf = ""
        start = None
    if start is not None:
        yield start, buf.rstrip(_BLANKS)


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


def _strip_comment(s: str) -> str:
    i = 0
    while i < len(s):
        c = s[i]
        if c == "#":
            return s[:i]
        if c in "'\"":
            i = _skip_quoted(s, i)
        else:
            i += 1
    return s


_IMMEDIATE_FORMAT = re.compile(r"%[0-9 ]*\.[0-9]+[efgEFG]")


def _c_format(fmt: str, value: float) -> str:
    """printf-style formatting of one number (formats checked by _IMMEDIATE_FORMAT)."""
    try:
        return fmt % value
    except (TypeError, ValueError) as exc:
        raise _Error(f"incorrect conversion in format string {fmt!r}: {exc}") from None


def _split_words(s: str) -> list[str]:
    words = []
    i, n = 0, len(s)
    while True:
        while i < n and s[i] in _BLANKS:
            i += 1
        if i >= n:
            return words
        if s.startswith('"""', i):
            j = s.find('"""', i + 3)
            if j < 0:
                raise _Error("unbalanced quotes in input line")
            words.append(s[i + 3:j])
            i = j + 3
        elif s[i] in "'\"":
            j = s.find(s[i], i + 1)
            if j < 0:
                raise _Error("unbalanced quotes in input line")
            words.append(s[i + 1:j])
            i = j + 1
        else:
            j = i
            while j < n and s[j] not in _BLANKS:
                j += 1
            words.append(s[i:j])
            i = j
            continue
        if i < n and s[i] not in _BLANKS:
            raise _Error("input line quote not followed by white-space")


_NAME_OK = re.compile(r"^[A-Za-z0-9_]+$")


# ============================================================================ reader


class ScriptReader:
    """Reads LAMMPS input scripts, keeping the variables between scripts.

    Parameters
    ----------
    variables : mapping, optional
        Command-line variables, as ``lmp -var NAME value ...`` gives them: each becomes
        an index-style variable (a sequence value gives several values; the first one
        is current), so the script's own ``variable NAME index ...`` is skipped.

    Examples
    --------
    >>> r = ScriptReader({"n": 3})
    >>> cmds = r.read("variable n index 20\\nvariable L equal 2*${n}\\nregion b block 0 $n 0 ${L} 0 1")
    >>> cmds[0].args
    ['b', 'block', '0', '3', '0', '6', '0', '1']
    >>> r.evaluate("v_L + 1")
    7.0
    """

    def __init__(self, variables: Mapping[str, object] | None = None):
        self.variables: dict[str, _Variable] = {}
        for name, value in (variables or {}).items():
            name = str(name)
            if not _NAME_OK.match(name):
                raise LammpsScriptError(f"invalid variable name {name!r} in command-line variables")
            if isinstance(value, (list, tuple)):
                values = [str(v) for v in value]
            else:
                values = [str(value)]
            if not values:
                raise LammpsScriptError(f"command-line variable {name!r} has no value")
            self.variables[name] = _Variable("index", values)
        self._evaluating: list[str] = []
        self._runtime = None          # (word, index) -> float while a simulation's values are at hand
        self._snapshot = None         # snapshot() of the variables as they are now (None: changed since)
        self._quit = False
        self._jump_skip = False
        self._lines_read = 0

    # ------------------------------------------------------------------ variables

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
    def from_snapshot(cls, snapshot: Mapping[str, list]) -> "ScriptReader":
        """A reader holding the variables of a :meth:`snapshot` (to evaluate them at run time)."""
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

    def _define(self, args: list[str]) -> None:
        """The ``variable`` command."""
        self._snapshot = None
        if len(args) < 2:
            raise _Error("illegal variable command: needs a name and a style")
        name, style, rest = args[0], args[1], args[2:]
        if not _NAME_OK.match(name):
            raise _Error(f"variable name {name!r} must be alphanumeric or underscore characters")
        existing = self.variables.get(name)
        if style == "delete":
            if rest:
                raise _Error("illegal variable delete command: too many arguments")
            self.variables.pop(name, None)
            return
        if style in ("index", "world", "universe", "uloop", "loop"):
            if not rest:
                raise _Error(f"illegal variable {style} command: no values")
            if existing is not None:
                return  # LAMMPS keeps the first definition (e.g. from -var)
            if style == "loop":
                values = self._loop_values(rest)
            elif style == "uloop":
                values = self._loop_values(rest[:1] + (["pad"] if "pad" in rest[1:] else []))
            else:
                values = list(rest)
            self.variables[name] = _Variable(style, values)
            return
        if style in ("string", "equal", "internal", "getenv", "format"):
            nwant = 2 if style == "format" else 1
            if len(rest) != nwant:
                hint = " (quote a formula that contains blanks)" if style == "equal" else ""
                raise _Error(f"illegal variable {style} command: expected {nwant} argument(s) "
                             f"after the style, got {len(rest)}{hint}")
            if existing is not None and existing.style != style:
                raise _Error(f"cannot redefine variable '{name}' as a different style "
                             f"({existing.style} -> {style})")
            if style == "string":
                self.variables[name] = _Variable("string", [rest[0]])
            elif style == "equal":
                self.variables[name] = _Variable("equal", expr=rest[0])
            elif style == "internal":
                try:
                    float(rest[0])
                except ValueError:
                    raise _Error(f"internal-style variable '{name}' needs a number, got {rest[0]!r}") from None
                self.variables[name] = _Variable("internal", [rest[0]])
            elif style == "getenv":
                self.variables[name] = _Variable("getenv", [os.environ.get(rest[0], "")])
            else:
                self.variables[name] = _Variable("format", [rest[1]], expr=rest[0])
                if not _IMMEDIATE_FORMAT.match(rest[1]):
                    raise _Error(f"incorrect conversion in format string {rest[1]!r}")
            return
        if style in ("atom", "vector", "python", "file", "atomfile", "timer"):
            if existing is not None and existing.style != style:
                raise _Error(f"cannot redefine variable '{name}' as a different style "
                             f"({existing.style} -> {style})")
            self.variables[name] = _Variable(style, list(rest))
            return
        raise _Error(f"unknown variable style '{style}'")

    @staticmethod
    def _loop_values(rest: list[str]) -> list[str]:
        pad = False
        if rest and rest[-1] == "pad":
            pad, rest = True, rest[:-1]
        try:
            nums = [int(r) for r in rest]
        except ValueError:
            raise _Error(f"illegal variable loop command: {' '.join(rest)!r} are not integers") from None
        if len(nums) == 1:
            lo, hi = 1, nums[0]
        elif len(nums) == 2:
            lo, hi = nums
        else:
            raise _Error("illegal variable loop command: expected N or N1 N2")
        if lo < 0 or hi < lo:
            raise _Error(f"illegal variable loop command: bad range {lo} {hi}")
        width = len(str(hi)) if pad else 0
        return [str(k).zfill(width) for k in range(lo, hi + 1)]

    # ------------------------------------------------------------------ substitution

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

    # ------------------------------------------------------------------ reading

    def read(self, text: str, filename: str = "<input>",
             base_dir: str | os.PathLike | None = None) -> list[Command]:
        """Read a script's text and return its commands.

        Parameters
        ----------
        text : str
            The script.
        filename : str
            Name used in error messages and :attr:`Command.source`.
        base_dir : path, optional
            Directory for relative ``include`` files; default: the directory of
            ``filename`` if it names an existing file, else the current directory.

        Returns
        -------
        list of Command
        """
        if base_dir is None:
            p = Path(filename)
            base_dir = p.parent if p.is_file() else Path.cwd()
        self._quit = False
        commands: list[Command] = []
        try:
            self._read(text, filename, Path(base_dir), commands, depth=0)
        except LammpsScriptError as exc:
            # the commands read before the error: a front end that executes them may find an earlier
            # command it cannot run, which is then the first problem of the script
            exc.commands_before = commands
            raise
        return commands

    def _read(self, text, filename, base_dir, commands, depth):
        """Read one file's lines into ``commands``; ``label``/``jump``/``next``/``if`` are done here
        (a loop is unrolled: its commands are returned once per pass)."""
        lines = list(_logical_lines(text))
        pending: list[tuple[int, str]] = []     # commands of an 'if', run before the next line
        i = 0
        seeking, jump_line = None, 0             # the label a 'jump' looks for, and the jump's line
        while pending or i < len(lines):
            if self._quit:
                return
            if pending:
                lineno, line = pending.pop(0)
            else:
                lineno, line = lines[i]
                i += 1
            self._lines_read += 1
            if self._lines_read > _MAX_LINES:
                raise LammpsScriptError(f"more than {_MAX_LINES} commands read: a jump loop that never ends?",
                                        lineno, filename)
            if seeking is not None:              # LAMMPS skips every line up to 'label ID'
                words = line.split()
                if len(words) >= 2 and words[0] == "label" and words[1] == seeking:
                    seeking = None
                continue
            deferred = False
            try:
                try:
                    words = _split_words(self.substitute(_strip_comment(line)))
                except _NeedsRun:             # print T=$(temp) (unquoted): substituted when it executes
                    words = _split_words(_strip_comment(line))
                    if words[:1] != ["print"]:
                        raise
                    deferred = True
                if not words:
                    continue
                name, args = words[0], words[1:]
                if name == "variable":
                    self._define(args)
                    continue
                if name == "label":
                    if len(args) != 1:
                        raise _Error("illegal label command: expected one label")
                    continue
                if name == "next":
                    self._next(args)
                    continue
                if name == "jump":
                    if not 1 <= len(args) <= 2:
                        raise _Error("illegal jump command: expected FILE [LABEL]")
                    if self._jump_skip:          # a 'next' ran out of values: this jump is skipped
                        self._jump_skip = False
                        continue
                    if args[0] != "SELF" and Path(base_dir, args[0]).resolve() != Path(filename).resolve():
                        raise _Error(f"jump to another file ({args[0]}) is not supported (only jump SELF)")
                    pending, i = [], 0
                    seeking, jump_line = (args[1] if len(args) == 2 else None), lineno
                    continue
                if name == "if":
                    pending = [(lineno, c) for c in self._if(args)] + pending
                    continue
                if name == "include":
                    if len(args) != 1:
                        raise _Error("illegal include command: expected one file name")
                    self._include(args[0], base_dir, commands, depth)
                    continue
                if name == "print" and args and not deferred:
                    try:
                        args = [self.substitute(args[0])] + args[1:]
                    except _NeedsRun:         # print "T = $(temp)": substituted when it executes
                        deferred = True
            except _Error as exc:
                raise LammpsScriptError(str(exc), lineno, filename) from None
            commands.append(Command(name, args, lineno, filename, self.snapshot(), deferred))
            if name == "quit":
                self._quit = True
                return
        if seeking is not None:
            raise LammpsScriptError(f"label {seeking!r} of the jump was not found in {filename}", jump_line, filename)

    def _next(self, names: list[str]) -> None:
        """LAMMPS ``next V1 V2 ...``: the next value of each; when one runs out, all are deleted
        and the next ``jump`` is skipped (``Variable::next``)."""
        self._snapshot = None
        if not names:
            raise _Error("illegal next command: no variables")
        for name in names:
            var = self.variables.get(name)
            if var is None:
                raise _Error(f"invalid variable '{name}' in next command")
            if var.style not in ("index", "loop", "world", "universe", "uloop"):
                raise _Error(f"next of a {var.style}-style variable '{name}' is not supported "
                             "(index, loop, world, universe, uloop)")
        exhausted = False
        for name in names:
            var = self.variables[name]
            var.values.pop(0)
            exhausted = exhausted or not var.values
        if exhausted:
            for name in names:
                self.variables.pop(name, None)
            self._jump_skip = True

    def _if(self, args: list[str]) -> list[str]:
        """LAMMPS ``if COND then C1 C2 ... [elif COND C ...] [else C ...]``: the commands of the
        first true branch (conditions are equal-style formulas evaluated now; string comparisons
        as in ``Variable::evaluate_boolean`` are supported for ``==`` and ``!=``)."""
        if len(args) < 3 or args[1] != "then":
            raise _Error("illegal if command: expected 'if COND then CMD ...'")
        branches = [[args[0], []]]
        current = branches[0][1]
        k = 2
        while k < len(args):
            word = args[k]
            if word == "elif":
                if k + 1 >= len(args):
                    raise _Error("illegal if command: elif without a condition")
                branches.append([args[k + 1], []])
                current = branches[-1][1]
                k += 2
                continue
            if word == "else":
                branches.append([None, []])
                current = branches[-1][1]
                k += 1
                continue
            current.append(word)
            k += 1
        for condition, cmds in branches:
            if condition is None or self._condition(condition):
                return cmds
        return []

    def _condition(self, text: str) -> bool:
        text = self.substitute(text)             # as LAMMPS' If::command: the quoted condition too
        m = re.fullmatch(r"\s*(\S+)\s*(==|!=)\s*(\S+)\s*", text)
        if m and not all(_is_number(x) for x in (m.group(1), m.group(3))):
            try:
                return (self._evaluate(text) != 0.0)
            except _Error:
                return (m.group(1) == m.group(3)) == (m.group(2) == "==")
        return self._evaluate(text) != 0.0

    def _include(self, target, base_dir, commands, depth):
        if depth + 1 >= _MAX_INCLUDE_DEPTH:
            raise _Error(f"too many nested levels of input scripts ({_MAX_INCLUDE_DEPTH})")
        path = Path(target)
        if not path.is_absolute():
            path = base_dir / path
        try:
            text = path.read_text()
        except OSError as exc:
            raise _Error(f"cannot open include file {str(path)!r}: {exc.strerror or exc}") from None
        self._read(text, str(path), path.parent, commands, depth + 1)


def read_script(text: str, filename: str = "<input>",
                variables: Mapping[str, object] | None = None, *,
                base_dir: str | os.PathLike | None = None) -> list[Command]:
    """Read a LAMMPS input script into commands (no physics is run).

    Parameters
    ----------
    text : str
        The script's text.
    filename : str
        Shown in errors and stored in :attr:`Command.source`.
    variables : mapping, optional
        Command-line ``-var`` values, ``{"NAME": value}`` or ``{"NAME": [v1, v2]}``; they
        take precedence over the script's ``variable NAME index ...`` lines.
    base_dir : path, optional
        Directory that relative ``include`` files are read from (see
        :meth:`ScriptReader.read`).

    Returns
    -------
    list of Command
        Every command except ``variable``, with comments stripped, quotes removed and
        all ``$`` substitutions done.

    Raises
    ------
    LammpsScriptError
        With file name and line, e.g. ``in.lj:7: unknown variable 'foo'``.

    Examples
    --------
    >>> cmds = read_script("variable x index 4\\nregion box block 0 $x 0 $x 0 $x  # comment")
    >>> cmds[0]
    Command(name='region', args=['box', 'block', '0', '4', '0', '4', '0', '4'], line=2, source='<input>')
    """
    return ScriptReader(variables).read(text, filename, base_dir)


def read_script_file(path: str | os.PathLike,
                     variables: Mapping[str, object] | None = None) -> list[Command]:
    """Read a LAMMPS input script from a file (``include`` relative to its directory).

    See :func:`read_script`.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise LammpsScriptError(f"cannot open input script: {exc.strerror or exc}", None, str(path)) from None
    return ScriptReader(variables).read(text, str(path), path.parent)


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
    reader = ScriptReader()
    for name, value in (variables or {}).items():
        reader.variables[str(name)] = _Variable("string", [str(value)])
    return reader.evaluate(expr)
