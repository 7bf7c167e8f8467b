"""What a run writes, as plain settings that every front-end fills the same way.

:class:`OutputSettings` is the outputs part of a :class:`~pycumd.run_plan.RunPlan`; its
:meth:`~OutputSettings.build` makes the reporters. Adding an output means a reporter class in this
package and a field here.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .checkpoint import CheckpointWriter
from .thermo import ThermoReporter
from .analysis import MSDOutput, RDFOutput, StructureFactorOutput, VACFOutput
from .trajectory import FORMATS, trajectory_writer
from .ave_time import AveTimeOutput
from .dump import DumpOutput

LAMMPS_OUTPUTS = {"dump": DumpOutput, "ave/time": AveTimeOutput}


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
        CSV thermo rows, the columns printed (``Step,Temp,E_pair,E_mol,TotEng,Press`` or a stage's
        ``thermo_style custom``); a header line before the first row and where the columns change.
    screen : bool
        Thermo table and run descriptions on standard output.
    trajectories : list of TrajectoryOutput
    progress : bool or None
        Progress bar (None: on a terminal, for runs longer than a few seconds).
    rdf, msd, vacf, structure_factor : RDFOutput, MSDOutput, VACFOutput, StructureFactorOutput or None
        Analysis during the run, each to its own CSV file (:mod:`pycumd.outputs.analysis`).
    checkpoint : path or None
        Checkpoint file (the previous one kept as ``PATH.1``); also written at a clean stop.
    checkpoint_every : int
        Steps between checkpoints (0: only at a clean stop).
    type_names : list of str (None for an unnamed type) or None
        Element symbols (or other names) per type, from the input where it names them: the
        species of extended XYZ frames and the type names of GSD frames.

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
    lammps_outputs: list = field(default_factory=list)   # LAMMPS dump and fix ave/time files (LAMMPS_OUTPUTS)
    checkpoint: str | None = None
    checkpoint_every: int = 0
    type_names: list | None = None

    def __post_init__(self):
        self.check()

    def check(self) -> None:
        """Raise ValueError for settings that cannot work together (call again after changing them)."""
        if int(self.checkpoint_every) < 0:
            raise ValueError(f"checkpoint interval must be >= 0, got {self.checkpoint_every}")
        if self.checkpoint_every and not self.checkpoint:
            raise ValueError("a checkpoint interval needs a checkpoint file (--checkpoint PATH)")

    def build(self, resume_step: int | None = None) -> "Reporters":
        """Open the files and return the reporters (thermo first, the checkpoint writer last, so that
        a checkpoint follows every other report of its step). With ``resume_step`` (a run continued
        from a checkpoint at that step) existing files are cut back to that step and appended to."""
        reporters = Reporters(None, [], None)
        try:
            reporters.thermo = ThermoReporter(every=0, log=_writable(self.thermo_log, "thermo log"),
                                              screen=self.screen, resume_step=resume_step)
            for t in self.trajectories:
                reporters.others.append(trajectory_writer(_writable(t.path, "trajectory"), t.every,
                                                          type_names=self.type_names, resume_step=resume_step))
            reporters.others.extend(a.build(_writable(a.path, 'analysis output')) for a in (self.rdf, self.msd, self.vacf, self.structure_factor) if a is not None)
            reporters.others.extend(o.build(resume_step=resume_step) for o in self.lammps_outputs
                                    if o.path is None or _writable(o.path, o.kind))
            if self.checkpoint:
                reporters.checkpoint = CheckpointWriter(_writable(self.checkpoint, "checkpoint"),
                                                        self.checkpoint_every)
        except OSError as exc:             # a path the checks above let through (e.g. under /proc)
            reporters.close()
            raise ValueError(f"output file {exc.filename or ''}: cannot be written "
                             f"({exc.strerror or exc})") from None
        except BaseException:
            reporters.close()
            raise
        return reporters

    def paths(self) -> list:
        """Every file path these settings name (a LAMMPS dump's per-step pattern not included)."""
        named = [self.thermo_log, *(t.path for t in self.trajectories), self.checkpoint,
                 *(a.path for a in (self.rdf, self.msd, self.vacf, self.structure_factor) if a is not None),
                 *(o.path for o in self.lammps_outputs if o.path is not None and "*" not in str(o.path))]
        return [str(path) for path in named if path]

    def to_dict(self) -> dict:
        """Plain values (stored in checkpoints); :meth:`from_dict` reads them back."""
        return {**asdict(self), "trajectories": [asdict(t) for t in self.trajectories]}

    @classmethod
    def from_dict(cls, values: dict) -> "OutputSettings":
        values = dict(values)
        values["trajectories"] = [TrajectoryOutput(**t) for t in values.get("trajectories", [])]
        values["lammps_outputs"] = [LAMMPS_OUTPUTS[o["kind"]](**o) for o in values.get("lammps_outputs", [])]
        for name, output in (("rdf", RDFOutput), ("msd", MSDOutput), ("vacf", VACFOutput),
                             ("structure_factor", StructureFactorOutput)):
            if values.get(name) is not None:
                values[name] = output(**values[name])
        return cls(**values)


@dataclass
class Reporters:
    """The reporters :meth:`OutputSettings.build` made."""

    thermo: ThermoReporter | None
    others: list
    checkpoint: CheckpointWriter | None = None

    @property
    def all(self) -> list:
        return [r for r in (self.thermo, *self.others, self.checkpoint) if r is not None]

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


def check_writable(path, what: str) -> None:
    """A ValueError naming ``what`` (e.g. the command-line option) and ``path`` if a file cannot be
    written there: a folder, a missing or read-only folder, a file that is not writable, a place no
    file can be created (``/proc``). Checked by creating the file and removing it again: nothing is
    left behind."""
    target = Path(path)
    if target.is_dir():
        raise ValueError(f"{what} {path}: is a folder, not a file")
    folder = target.resolve().parent
    if not folder.is_dir():
        raise ValueError(f"{what} {path}: folder {folder} does not exist")
    if target.exists():
        if not os.access(target, os.W_OK):
            raise ValueError(f"{what} {path}: the file is not writable")
        return
    try:
        with open(target, "x"):
            pass
        os.remove(target)
    except OSError as exc:
        raise ValueError(f"{what} {path}: cannot be written ({exc.strerror or exc})") from None
