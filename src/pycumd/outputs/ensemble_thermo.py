"""One thermo CSV for the systems of an ensemble, with a ``system`` column.

:class:`EnsembleThermoLog` owns the file; :meth:`EnsembleThermoLog.reporter` gives each member
simulation its :class:`~pycumd.outputs.reporter.Reporter`, which writes that member's rows
(``system, Step, Temp, E_pair, E_mol, TotEng, Press``, normalised as LAMMPS' ``thermo_style one``).
The ensemble advances its members in lockstep and stops at every member's report step, so the rows
come in step order and, within a step, in system order.
"""

from __future__ import annotations

from pathlib import Path

from .reporter import Needs, OutputError, Reporter
from .thermo import COLUMNS, _csv_value


class EnsembleThermoLog:
    """The shared CSV file (``path``), written as rows arrive and flushed after each.

    Parameters
    ----------
    path : str or path
    every : int
        Interval in steps (and each run's first and last step), as :class:`~pycumd.outputs.thermo.ThermoReporter`.
    """

    def __init__(self, path, every: int = 100, resume_step: int | None = None):
        if every < 0:
            raise ValueError(f"thermo interval must be >= 0, got {every}")
        self.every = int(every)
        self.path = str(path)
        self.rows: list[dict] = []
        if resume_step is not None and Path(path).exists():
            _keep_rows_up_to(Path(path), resume_step)
            self._file = open(path, "a", newline="")
        else:
            self._file = open(path, "w", newline="")
            self._file.write(",".join(("system",) + COLUMNS) + "\n")
            self._file.flush()

    def reporter(self, system: int) -> "SystemThermo":
        """The reporter of member ``system`` (0-based)."""
        return SystemThermo(self, system)

    def write(self, system: int, row: dict) -> None:
        values = {"system": system, **{c: row[c] for c in COLUMNS}}
        self.rows.append(values)
        try:
            self._file.write(",".join(_csv_value(v) for v in values.values()) + "\n")
            self._file.flush()
        except OSError as exc:
            raise OutputError(f"writing ensemble thermo log {self.path} failed: {exc.strerror or exc}") from None

    def close(self) -> None:
        if not self._file.closed:
            self._file.close()


class SystemThermo(Reporter):
    """One member's rows of an :class:`EnsembleThermoLog`."""

    needs = Needs(energy=True)

    def __init__(self, log: EnsembleThermoLog, system: int):
        self.log, self.system = log, int(system)
        self.every = log.every
        self._last_step = None

    def also_reports(self, run_start: int, run_end: int) -> tuple:
        return (run_start, run_end)

    def report(self, snapshot) -> None:
        row = snapshot.thermo_row()
        if row["Step"] != self._last_step:
            self._last_step = row["Step"]
            self.log.write(self.system, row)


def _keep_rows_up_to(path: Path, step: int) -> None:
    """Cut the log of a batch continued from a checkpoint of ``step`` back to its whole rows of steps
    <= ``step`` (the continuation writes the later ones again)."""
    lines = path.read_text().split("\n")
    if lines[0].split(",") != ["system", *COLUMNS]:
        raise ValueError(f"ensemble thermo log {path}: not a pycumd ensemble log (header {lines[0][:60]!r}); "
                         f"cannot continue it")
    kept = [line for line in lines[1:] if len(line.split(",")) == len(COLUMNS) + 1 and int(line.split(",")[1]) <= step]
    path.write_text("\n".join([lines[0], *kept]) + "\n")
