"""LAMMPS ``fix ID all ave/time Nevery Nrepeat Nfreq c_ID ... file FILE``: time averages to a file.

Every ``Nfreq`` steps the average of ``Nrepeat`` samples taken ``Nevery`` steps apart, the last at
that step, is written (``ave one``, ``mode scalar``), as ``FixAveTime`` does: a window that would
start before the run's first step is skipped (LAMMPS' ``nextvalid``); samples are the quantities
of :mod:`pycumd.outputs.thermo_keywords` (computes temp/pe/ke/pressure, not normalised by N, and
thermo keywords). File layout::

    # Time-averaged data for fix ID
    # TimeStep c_A c_B
    STEP VALUE VALUE          (values with %g)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .reporter import Needs, Reporter
from .thermo_keywords import Compute, ThermoState, column_value, parse_column


@dataclass
class AveTimeOutput:
    """One ``fix ave/time`` (settings; :meth:`build` makes the reporter).

    id : fix ID; nevery, nrepeat, nfreq : its three intervals; values : ``c_ID`` / keywords;
    computes : ``{ID: style}`` of the computes referenced; path : the ``file`` keyword (None: no file);
    first_stage, end_stage : the plan stages in which the fix is defined (``unfix`` ends it).
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

    def __post_init__(self):
        if self.nevery <= 0 or self.nrepeat <= 0 or self.nfreq <= 0:
            raise ValueError("fix ave/time: Nevery, Nrepeat and Nfreq must be > 0")
        if self.nfreq % self.nevery or self.nrepeat * self.nevery > self.nfreq:
            raise ValueError("fix ave/time: Nfreq must be a multiple of Nevery and Nrepeat*Nevery <= Nfreq")
        if not self.values:
            raise ValueError("fix ave/time needs at least one value")
        computes = {k: Compute(k, v) for k, v in self.computes.items()}
        for v in self.values:
            parse_column(v, computes)

    def build(self, resume_step: int | None = None) -> "AveTimeReporter":
        return AveTimeReporter(self, resume_step)


class AveTimeReporter(Reporter):
    """Samples at the steps of each window, writes the averages at multiples of ``nfreq``."""

    needs = Needs(energy=True)

    def __init__(self, output: AveTimeOutput, resume_step: int | None = None):
        self.output = output
        computes = {k: Compute(k, v) for k, v in output.computes.items()}
        self._items = [parse_column(v, computes) for v in output.values]
        self._active = output.first_stage == 0
        self._sums, self._count, self._last = None, 0, None
        self._next_valid = None
        self.rows: list = []
        self._file = None
        if output.path is not None:
            if resume_step is not None:
                raise NotImplementedError("continuing a fix ave/time file from a checkpoint is not supported")
            self._file = open(output.path, "w")
            self._file.write(f"# Time-averaged data for fix {output.id}\n# TimeStep {' '.join(output.values)}\n")
            self._file.flush()

    def begin_stage(self, index: int) -> None:
        o = self.output
        self._active = o.first_stage <= index and (o.end_stage is None or index < o.end_stage)

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
        state = ThermoState(snapshot.simulation, 0, None)
        values = [float(column_value(item, state, False)) for item in self._items]
        self._sums = values if self._sums is None else [a + b for a, b in zip(self._sums, values)]
        self._count += 1
        if step == self._next_valid:
            averages = [v / self._count for v in self._sums]
            self.rows.append((step, averages))
            if self._file is not None:
                self._file.write(f"{step} " + " ".join("%g" % v for v in averages) + "\n")
                self._file.flush()
            self._sums, self._count = None, 0
            self._next_valid += self.output.nfreq

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


__all__ = ["AveTimeOutput", "AveTimeReporter"]
