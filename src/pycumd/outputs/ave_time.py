"""LAMMPS ``fix ID all ave/time Nevery Nrepeat Nfreq c_ID ... file FILE``: time averages to a file.

Every ``Nfreq`` steps the average of ``Nrepeat`` samples taken ``Nevery`` steps apart, the last at
that step, is written (``ave one``), as ``FixAveTime`` does: a window that would
start before the run's first step is skipped (LAMMPS' ``nextvalid``); samples are the quantities
of :mod:`pycumd.outputs.thermo_keywords` (computes temp/pe/ke/pressure/temp/region, not normalised by
N, equal-style variables ``v_name`` and thermo keywords). Its latest averages are ``f_ID`` (one value)
or ``f_ID[k]`` in thermo output and formulas (0 before the first average, as LAMMPS). File layout::

    # Time-averaged data for fix ID
    # TimeStep c_A c_B
    STEP VALUE VALUE          (values with %g)

``mode vector`` averages whole vectors instead: each value is a compute's global vector (``c_ID`` of
msd, temp, temp/region, pressure) or a column of its global array (``c_ID[k]`` of rdf), all of one
length R, and each average is written as LAMMPS does::

    # Time-averaged data for fix ID
    # TimeStep Number-of-rows
    # Row c_A[1] c_A[2]
    STEP R
    1 VALUE VALUE
    ...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .reporter import Needs, Reporter, Snapshot
from .thermo_keywords import KEYWORDS, Compute, Names, ThermoState, column_value, parse_column


@dataclass
class AveTimeOutput:
    """One ``fix ave/time`` (settings; :meth:`build` makes the reporter).

    id : fix ID; nevery, nrepeat, nfreq : its three intervals; values : ``c_ID`` / ``v_name`` / keywords
    (mode vector: ``c_ID`` / ``c_ID[k]``, see the module docstring); mode : ``scalar`` or ``vector``;
    computes : ``{ID: Compute.spec()}`` of the computes defined with it; path : the ``file`` keyword
    (None: no file); first_stage, end_stage : the plan stages in which the fix is defined (``unfix``
    ends it); stage_context : per stage index, ``{"norm": thermo_modify norm or None, "variables":
    VariableTable.snapshot()}`` as they are at that stage's ``run`` (variables are evaluated with them).
    Every field is a plain value: the settings are stored in checkpoints.
    """

    id: str
    nevery: int
    nrepeat: int
    nfreq: int
    values: list
    computes: dict = field(default_factory=dict)
    path: str | None = None
    first_stage: int = 0
    end_stage: int | None = None
    kind: str = "ave/time"
    stage_context: list = field(default_factory=list)
    where: str = ""          # FILE:LINE of the fix command, for errors met while running
    mode: str = "scalar"

    def __post_init__(self):
        if self.nevery <= 0 or self.nrepeat <= 0 or self.nfreq <= 0:
            raise ValueError("fix ave/time: Nevery, Nrepeat and Nfreq must be > 0")
        if self.nfreq % self.nevery or self.nrepeat * self.nevery > self.nfreq:
            raise ValueError("fix ave/time: Nfreq must be a multiple of Nevery and Nrepeat*Nevery <= Nfreq")
        if not self.values:
            raise ValueError("fix ave/time needs at least one value")
        if self.mode not in ("scalar", "vector"):
            raise ValueError(f"fix ave/time mode {self.mode} is not supported (scalar, vector)")
        names = self.names(None)
        for v in self.values:
            parse_column(v, names) if self.mode == "scalar" else parse_vector_item(v, names)

    def use_computes(self, computes: dict) -> None:
        """The planner's :class:`Compute` objects themselves (compute msd's reference is taken while the
        plan runs, and is not part of :attr:`computes`' plain values)."""
        self._live_computes = dict(computes)

    def names(self, stage_index: int | None) -> Names:
        """Computes and the variables of stage ``stage_index`` (None: no variables)."""
        context = self.context(stage_index)
        live = getattr(self, "_live_computes", {})
        return Names({k: live.get(k) or Compute.from_spec(k, v) for k, v in self.computes.items()},
                     context.get("variables") or {})

    def context(self, stage_index: int | None) -> dict:
        if stage_index is None or stage_index >= len(self.stage_context):
            return {}
        return self.stage_context[stage_index] or {}

    def build(self, resume_step: int | None = None) -> "AveTimeReporter":
        return AveTimeReporter(self, resume_step)


class AveTimeReporter(Reporter):
    """Samples at the steps of each window, writes the averages at multiples of ``nfreq``."""

    needs = Needs(energy=True)

    def __init__(self, output: AveTimeOutput, resume_step: int | None = None):
        self.output = output
        self._names = output.names(0)
        self._norm = output.context(0).get("norm")
        self._items = self._parse(self._names)
        self._active = output.first_stage == 0
        self._sums, self._count, self._last = None, 0, None
        self._next_valid = None
        self.rows: list = []
        self._file = None
        if output.path is not None:
            if resume_step is not None:
                raise NotImplementedError("continuing a fix ave/time file from a checkpoint is not supported")
            self._file = open(output.path, "w")
            header = (f"# TimeStep {' '.join(output.values)}\n" if output.mode == "scalar" else
                      f"# TimeStep Number-of-rows\n# Row {' '.join(output.values)}\n")
            self._file.write(f"# Time-averaged data for fix {output.id}\n{header}")
            self._file.flush()

    def _parse(self, names: Names) -> list:
        if self.output.mode == "vector":
            return [parse_vector_item(v, names) for v in self.output.values]
        return [parse_column(v, names) for v in self.output.values]

    def begin_stage(self, index: int) -> None:
        o = self.output
        self._active = o.first_stage <= index and (o.end_stage is None or index < o.end_stage)
        self._names, self._norm = o.names(index), o.context(index).get("norm")
        self._items = self._parse(self._names)

    @property
    def fix_id(self) -> str:
        return self.output.id

    @property
    def active(self) -> bool:
        return self._active

    def value(self, index: int | None, simulation) -> tuple:
        """``(f_ID or f_ID[index], extensive)``: the latest average (0 before the first), taking this
        step's sample first if it is due and not taken yet (LAMMPS ends a step's fixes before thermo)."""
        if simulation.step != self._last and self._next_valid is not None \
                and simulation.step in self._sample_steps(self._next_valid):
            self.report(Snapshot(simulation))
        k = 0 if index is None else index - 1
        kind, what, vector_index = self._items[k]
        if kind == "keyword":
            extensive = KEYWORDS[what][1]
        else:
            extensive = kind == "compute" and (what.extensive or vector_index is not None
                                               and what.style not in ("pressure", "msd"))
        return (self.rows[-1][1][k] if self.rows else 0.0), extensive

    def begin_run(self, simulation) -> None:
        o, step = self.output, simulation.step
        nvalid = -(-step // o.nfreq) * o.nfreq               # LAMMPS FixAveTime::nextvalid
        while nvalid - (o.nrepeat - 1) * o.nevery < step:
            nvalid += o.nfreq
        self._next_valid = nvalid
        self._sums, self._count = None, 0

    def _sample_steps(self, nvalid: int) -> list:
        o = self.output
        return [nvalid - (o.nrepeat - 1 - k) * o.nevery for k in range(o.nrepeat)]

    def next_report(self, step: int, run_start: int, run_end: int):
        if not self._active or self._next_valid is None:
            return None
        nvalid = self._next_valid
        while True:
            due = [s for s in self._sample_steps(nvalid) if s >= step and s != self._last]
            if due:
                return due[0] if due[0] <= run_end else None
            nvalid += self.output.nfreq

    def report(self, snapshot) -> None:
        step = snapshot.step
        if step == self._last or step not in self._sample_steps(self._next_valid):
            return
        self._last = step
        state = ThermoState(snapshot.simulation, 0, None, self._norm, self._names)
        try:
            if self.output.mode == "vector":
                values = vector_sample(self._items, self.output.values, state)
            else:
                values = [float(column_value(item, state, False)) for item in self._items]
        except ValueError as exc:
            where = self.output.where
            raise ValueError(f"{where + ': ' if where else ''}fix ave/time {self.output.id} at step {step}: "
                             f"{exc}") from None
        if self.output.mode == "vector":
            self._sums = values if self._sums is None else self._sums + values
        else:
            self._sums = values if self._sums is None else [a + b for a, b in zip(self._sums, values)]
        self._count += 1
        if step == self._next_valid:
            if self.output.mode == "vector":
                averages = self._sums / self._count
                text = f"{step} {len(averages)}\n" + "".join(
                    f"{row + 1} " + " ".join("%g" % v for v in averages[row]) + "\n" for row in range(len(averages)))
            else:
                averages = [v / self._count for v in self._sums]
                text = f"{step} " + " ".join("%g" % v for v in averages) + "\n"
            self.rows.append((step, averages))
            if self._file is not None:
                self._file.write(text)
                self._file.flush()
            self._sums, self._count = None, 0
            self._next_valid += self.output.nfreq

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def parse_vector_item(word: str, names: Names) -> tuple:
    """A fix ave/time mode vector value as ``(Compute, column or None)``: ``c_ID`` of a compute with a
    global vector, or ``c_ID[k]``, column k of a compute with a global array."""
    if not word.startswith("c_"):
        raise ValueError(f"fix ave/time mode vector: {word}: only computes' global vectors and array columns "
                         f"are supported (c_ID, c_ID[k])")
    name, column = word[2:], None
    if "[" in name:
        if not name.endswith("]") or not name[:-1].split("[", 1)[1].isdigit():
            raise ValueError(f"bad reference {word}")
        name, column = name[:-1].split("[", 1)
        column = int(column)
    compute = names.computes.get(name)
    if compute is None:
        raise ValueError(f"compute ID {name!r} in {word} is not defined")
    if compute.array_columns:
        if column is None or not 1 <= column <= compute.array_columns:
            raise ValueError(f"fix ave/time mode vector: {word}: compute {compute.style} is a global array: use "
                             f"c_{name}[1..{compute.array_columns}] or c_{name}[*]")
    elif column is not None or not compute.vector_size:
        raise ValueError(f"fix ave/time mode vector: {word}: compute {compute.style} "
                         + (f"has a global vector: use c_{name}" if compute.vector_size else "has no global vector"))
    return compute, column


def vector_sample(items: list, words: list, state: ThermoState) -> np.ndarray:
    """One sample of fix ave/time mode vector: (rows, values), one column per item."""
    columns = []
    for compute, column in items:
        if column is None:
            columns.append(np.asarray(state.compute_vector(compute), dtype=np.float64))
        else:
            columns.append(state.rdf(compute)[:, column - 1])
    lengths = {len(c) for c in columns}
    if len(lengths) > 1:
        raise ValueError(f"the values {' '.join(words)} have different lengths {[len(c) for c in columns]}")
    return np.column_stack(columns)


__all__ = ["AveTimeOutput", "AveTimeReporter", "parse_vector_item", "vector_sample"]
