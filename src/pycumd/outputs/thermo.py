"""Thermo output: the columns a run prints, to the screen and to CSV.

Default columns (LAMMPS ``thermo_style one``): ``Step, Temp, E_pair, E_mol, TotEng, Press``.  As in
LAMMPS, energies are per atom in ``lj`` units and totals otherwise; Temp uses ``3N - 3`` degrees of
freedom; Press includes the kinetic and virial terms.  With ``thermo_style custom`` the screen and the
CSV log hold its columns instead.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from .progress import print_above
from .reporter import Needs, OutputError, Reporter

COLUMNS = ("Step", "Temp", "E_pair", "E_mol", "TotEng", "Press")


class ThermoReporter(Reporter):
    """Writes a thermo row every ``every`` steps (and at the first and last step of each run).

    Parameters
    ----------
    every : int
        Interval in steps; 0 means only the first and last step of each run (LAMMPS ``thermo 0``).
    log : str or path, optional
        CSV file: a header of the column names, then one row per report, flushed as written so
        that a run that stops early keeps everything reported so far (a SIGKILL inside the write
        of a row may leave that last row cut off, without its line end: a continuation with
        ``resume_step`` cuts it away, as :func:`pycumd.plot.read_csv` leaves it out).  The columns are those shown
        on the screen; where a later run of the same input shows other columns (another
        ``thermo_style``), a new header line precedes its rows.
    screen : bool or file
        Print a LAMMPS-like table (``True``: standard output).
    """

    needs = Needs(energy=True)

    def __init__(self, every: int = 100, log=None, screen=True, resume_step: int | None = None):
        if every < 0:
            raise ValueError(f"thermo interval must be >= 0, got {every}")
        self.every = int(every)
        self.rows: list[dict] = []
        self._screen = sys.stdout if screen is True else (screen or None)
        self._log = None
        self._log_columns = None          # the columns of the log's last header line
        if log is not None and resume_step is not None and Path(log).exists():
            self.rows, self._log_columns = _keep_rows_up_to(Path(log), resume_step)
            self._log = open(log, "a", newline="")
        elif log is not None:
            self._log = open(log, "w", newline="")
        self._header_due = True
        #: thermo_style custom columns (:class:`~pycumd.outputs.thermo_keywords.ThermoStyle`); None:
        #: thermo_style one. Rows hold the one columns and these; the screen and the CSV log show these.
        self.style = None
        self._run_start, self._wall_start = 0, None

    def also_reports(self, run_start: int, run_end: int) -> tuple:
        return (run_start, run_end)

    def report(self, snapshot) -> None:
        row = snapshot.thermo_row()
        if self.rows and self.rows[-1]["Step"] == row["Step"]:
            return
        shown = {c: row[c] for c in COLUMNS}
        if self.style is not None:              # thermo_style custom: its columns on the screen and in rows
            shown = self.style.row(snapshot.simulation, self._run_start, self._wall_start)
        self.rows.append({**row, **shown})
        if self._screen:
            if self._header_due:
                print_above("   " + " ".join(f"{c:>14}" for c in shown), self._screen)
                self._header_due = False
            print_above("   " + " ".join(_fmt(v) for v in shown.values()), self._screen)
        if self._log:
            line = ",".join(_csv_value(v) for v in shown.values()) + "\n"
            if list(shown) != self._log_columns:
                line = ",".join(shown) + "\n" + line
                self._log_columns = list(shown)
            start = self._log.tell()
            try:
                self._log.write(line)
                self._log.flush()
            except OSError as exc:
                try:                          # a full disk: no half row left behind
                    self._log.truncate(start)
                except OSError:
                    pass
                raise OutputError(f"writing thermo log {self._log.name} failed: {exc.strerror or exc} "
                                  f"(the rows before step {row['Step']} are whole)") from None

    def fence(self):
        """The log's rows are in the file when :meth:`report` returns: an open fence naming the log
        (the checkpoint writer fsyncs it before a checkpoint lands), or None without a log."""
        if self._log is None:
            return None
        from .trajectory import WriteFence

        return WriteFence(self._log.name, written=True)

    def begin_run(self, simulation) -> None:
        self._header_due = True
        self._run_start, self._wall_start = simulation.step, time.perf_counter()

    def close(self) -> None:
        if self._log:
            self._log.close()
            self._log = None


def _keep_rows_up_to(path: Path, step: int) -> tuple:
    """Cut a CSV log back to its whole rows of steps <= ``step`` (a run continued from a checkpoint
    at ``step`` writes the later ones again); returns those rows and the columns of the last header
    kept."""
    lines = path.read_text().split("\n")
    kept, rows, columns = [], [], None
    for line in lines[:-1]:                   # the last element follows the last newline
        values = line.split(",")
        if not _numeric(values):              # a header line
            if "Step" not in values:
                raise ValueError(f"thermo log {path}: not a pycumd thermo log with a Step column (header "
                                 f"{line[:60]!r}); cannot continue it")
            columns = values
            kept.append(line)
            continue
        if columns is None or len(values) != len(columns) or int(values[columns.index("Step")]) > step:
            break
        kept.append(line)
        rows.append({c: (int(v) if c == "Step" else float(v)) for c, v in zip(columns, values)})
    if columns is None:
        raise ValueError(f"thermo log {path}: no header line; cannot continue it")
    while kept and not _numeric(kept[-1].split(",")):   # a header with no row below it
        kept.pop()
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in kept))
    os.replace(tmp, path)
    return rows, _last_header(kept)


def _numeric(values: list) -> bool:
    try:
        [float(v) for v in values]
    except ValueError:
        return False
    return True


def _last_header(lines: list):
    """The columns of the last header line among ``lines`` (None if none)."""
    for line in reversed(lines):
        if not _numeric(line.split(",")):
            return line.split(",")
    return None


def _csv_value(value) -> str:
    """A thermo value in the CSV log: whole numbers as such, floats with every digit (repr)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return repr(float(value))


def _fmt(value) -> str:
    if isinstance(value, int):
        return f"{value:>14d}"
    return f"{value:>14.8g}"
