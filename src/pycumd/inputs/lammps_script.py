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
``uloop`` (first value, or with ``partition=(k, N)`` (LAMMPS ``-partition Nx1``) the k-th of
exactly N values; they are skipped if the name already exists, which is how
command-line ``-var`` values win), ``string``, ``equal`` (evaluated lazily, whenever it
is referenced), ``internal``, ``getenv``, ``format`` and ``delete`` are understood;
``atom``, ``vector``, ``python``, ``file``, ``atomfile`` and ``timer`` variables are
recorded and raise an error only if a ``$`` reference needs their value.  References
``v_name`` in the *arguments* of other commands are left as they are (LAMMPS evaluates
them while running); :meth:`ScriptReader.evaluate` can evaluate them later if they are
equal-style.

Variables and equal-style formulas are evaluated by
:class:`pycumd.outputs.lammps_variables.VariableTable` (its docstring lists what formulas support),
which this reader extends; thermo keywords (``step``, ``atoms``, ``temp``...), computes and fixes
need a running simulation: a ``print`` whose text names them is substituted when it executes
(:attr:`Command.deferred`), other ``$`` references to them raise :class:`LammpsScriptError`.

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

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from ..outputs.lammps_variables import (_IMMEDIATE_FORMAT, LammpsScriptError, VariableTable, _Error,
                                        _NeedsRun, _skip_quoted, _Variable, evaluate_expression)

#: what a script that needs several partitions (temper, world variables of several values) run without
#: ``-partition`` is told
MULTI_PARTITION = ("it needs LAMMPS partitions: run it with pycumd run SCRIPT -partition Nx1 (N replicas, one "
                   "process each, run as one batch on one device: docs/lammps-compatibility.md, temper)")

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


class ScriptReader(VariableTable):
    """Reads LAMMPS input scripts, keeping the variables between scripts (a
    :class:`~pycumd.outputs.lammps_variables.VariableTable`: ``evaluate``, ``value``, ``substitute``).

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

    def __init__(self, variables: Mapping[str, object] | None = None, partition: tuple[int, int] | None = None):
        super().__init__()
        #: (k, N): this script is partition k (0-based) of N (LAMMPS ``-partition Nx1``); None: one partition
        self.partition = partition
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
        self._quit = False
        self._jump_skip = False
        self._lines_read = 0

    # ------------------------------------------------------------------ variables

    def _partition_values(self, name: str, style: str, rest: list[str]) -> list[str]:
        """The value a ``world``, ``universe`` or ``uloop`` variable has in this partition (LAMMPS
        ``Variable::set``): world: the k-th of exactly N values; universe/uloop: with exactly N values
        the k-th (as world); without partitions: world needs one value, universe/uloop start at the
        first (the rest taken by ``next``)."""
        if style == "uloop":
            values = self._loop_values(rest[:1] + (["pad"] if "pad" in rest[1:] else []))
        else:
            values = list(rest)
        if self.partition is None:
            if style == "world" and len(values) != 1:
                raise _Error(f"variable {name} world has {len(values)} values, one per partition: {MULTI_PARTITION}")
            return values
        k, n = self.partition
        if len(values) == n:
            return [values[k]]
        if style == "world":
            raise _Error(f"variable {name} world has {len(values)} values, the run has {n} partitions "
                         f"(-partition {n}x1): give exactly one value per partition")
        if len(values) < n:
            raise _Error(f"variable {name} {style} has {len(values)} values, fewer than the {n} partitions "
                         f"(-partition {n}x1)")
        raise _Error(f"variable {name} {style} has {len(values)} values for {n} partitions: partitions taking "
                     f"the further values in turn (LAMMPS' universe loop) is not implemented; give exactly "
                     f"{n} values (one per partition)")

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
            if style in ("world", "universe", "uloop"):
                self.variables[name] = _Variable(style, self._partition_values(name, style, rest))
                return
            values = self._loop_values(rest) if style == "loop" else list(rest)
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
                base_dir: str | os.PathLike | None = None,
                partition: tuple[int, int] | None = None) -> list[Command]:
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
    return ScriptReader(variables, partition).read(text, filename, base_dir)


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


