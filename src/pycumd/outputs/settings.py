"""What a run writes, as plain settings that every front-end fills the same way.

:class:`OutputSettings` is the outputs part of a :class:`~pycumd.run_plan.RunPlan`; its
:meth:`~OutputSettings.build` makes the reporters. Adding an output means a reporter class in this
package and a field here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from .thermo import ThermoReporter
from .analysis import MSDOutput, RDFOutput, StructureFactorOutput, VACFOutput
from .trajectory import FORMATS, trajectory_writer


@dataclass
class TrajectoryOutput:
    """A trajectory file: ``path`` (format from the extension: .xyz, .gsd, .lammpstrj) every
    ``every`` steps."""

    path: str
    every: int = 100

    def __post_init__(self):
        if Path(self.path).suffix.lower() not in FORMATS:
            raise ValueError(f"unknown trajectory format {Path(self.path).suffix!r} for {self.path}: "
                             f"use one of {', '.join(FORMATS)}")
        if int(self.every) <= 0:
            raise ValueError(f"trajectory interval must be > 0, got {self.every} (for {self.path})")


@dataclass
class OutputSettings:
    """The outputs of one run.

    thermo_log : path or None
        CSV thermo rows (``Step,Temp,E_pair,E_mol,TotEng,Press``), one header for all stages.
    screen : bool
        Thermo table and run descriptions on standard output.
    trajectories : list of TrajectoryOutput
    progress : bool or None
        Progress bar (None: on a terminal, for runs longer than a few seconds).
    rdf, msd, vacf, structure_factor : RDFOutput, MSDOutput, VACFOutput, StructureFactorOutput or None
        Analysis during the run, each to its own CSV file (:mod:`pycumd.outputs.analysis`).

    The thermo interval is a stage's (LAMMPS ``thermo N`` may change between runs).
    """

    thermo_log: str | None = None
    screen: bool = True
    trajectories: list = field(default_factory=list)
    progress: bool | None = None
    rdf: RDFOutput | None = None
    msd: MSDOutput | None = None
    vacf: VACFOutput | None = None
    structure_factor: StructureFactorOutput | None = None

    def build(self) -> "Reporters":
        """Open the files and return the reporters (thermo first)."""
        thermo = ThermoReporter(every=0, log=_writable(self.thermo_log, "thermo log"), screen=self.screen)
        writers = []
        try:
            for t in self.trajectories:
                writers.append(trajectory_writer(_writable(t.path, "trajectory"), t.every))
            writers.extend(a.build(_writable(a.path, 'analysis output')) for a in (self.rdf, self.msd, self.vacf, self.structure_factor) if a is not None)
        except BaseException:
            thermo.close()
            for w in writers:
                w.close()
            raise
        return Reporters(thermo, writers)


@dataclass
class Reporters:
    """The reporters :meth:`OutputSettings.build` made."""

    thermo: ThermoReporter
    others: list

    @property
    def all(self) -> list:
        return [self.thermo, *self.others]

    def close(self) -> None:
        """Close every file, even if one close fails (the first error is raised after)."""
        first = None
        for r in self.all:
            try:
                r.close()
            except BaseException as exc:
                first = first or exc
        if first is not None:
            raise first


def _writable(path, what: str):
    """``path`` unchanged if its directory exists and is writable; else a ValueError naming it."""
    if path is None:
        return None
    directory = Path(path).resolve().parent
    if not directory.is_dir():
        raise ValueError(f"{what} {path}: directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise ValueError(f"{what} {path}: directory {directory} is not writable")
    return path
