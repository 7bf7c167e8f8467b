"""LAMMPS ``dump`` files: styles atom, custom and xyz, written as LAMMPS writes them.

A :class:`DumpOutput` (one field of :class:`~pycumd.outputs.settings.OutputSettings`) describes one
``dump ID GROUP STYLE N FILE [columns]`` with its ``dump_modify`` settings; :meth:`DumpOutput.build`
makes the :class:`DumpWriter` reporter. The writer reports every ``N`` steps (multiples of ``N``, at
most once per step, as LAMMPS), only during the stages between its ``dump`` and its ``undump``.

Formats (LAMMPS 22 Jul 2025, one process):

* ``atom``: ``ITEM: ATOMS id type xs ys zs`` (``scale no``: ``x y z``; ``image yes``: ``ix iy iz``
  appended), ``%d`` for integers and ``%g`` for reals;
* ``custom``: the listed columns (``id type x y z xs ys zs xu yu zu ix iy iz vx vy vz fx fy fz``),
  ``%d`` / ``%g`` unless ``dump_modify format`` says otherwise;
* ``xyz``: ``N``, `` Atoms. Timestep: STEP``, then ``TYPE x y z`` (``dump_modify element``: names).

Box bounds are printed with ``%-1.16e`` as LAMMPS does. Atoms are written in id order (pycumd always
sorts; LAMMPS does with ``dump_modify sort id``), with positions as stored (wrapped into the box at
neighbour-list builds only, as LAMMPS). The frame is copied to the host synchronously at a dump step. A file name with ``*`` gives one file per step.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import numpy as np

from .reporter import Frame
from .trajectory import TrajectoryWriter, _truncate_text_frames

STYLES = ("atom", "custom", "xyz")
INT_COLUMNS = ("id", "mol", "type", "ix", "iy", "iz")
FLOAT_COLUMNS = ("x", "y", "z", "xs", "ys", "zs", "xu", "yu", "zu", "vx", "vy", "vz", "fx", "fy", "fz", "q")
COLUMNS = INT_COLUMNS + FLOAT_COLUMNS
MODIFY_KEYS = ("sort", "format", "scale", "image", "element", "flush", "first")


@dataclass
class DumpOutput:
    """One LAMMPS dump.

    id, style, every, path : the ``dump`` command's ID, style (atom | custom | xyz), N and FILE.
    columns : list of str
        ``custom`` columns (see module docstring); ignored for atom and xyz.
    group_ids : list of int or None
        Dump only these atom ids (a LAMMPS group resolved to ids); None: all atoms.
    group_types : list of int or None
        Dump only atoms of these (0-based) types; None: all.
    scale, image : bool
        ``dump_modify scale`` / ``image`` (atom style).
    format_line, format_int, format_float : str or None
        ``dump_modify format line|int|float``.
    element : list of str or None
        ``dump_modify element`` names per type (xyz).
    first_stage, end_stage : int, int or None
        The stages of the run plan in which the dump is active (``undump`` ends it).
    """

    id: str
    style: str
    every: int
    path: str
    columns: list = field(default_factory=list)
    group_ids: list | None = None
    group_types: list | None = None
    scale: bool = True
    image: bool = False
    format_line: str | None = None
    format_int: str | None = None
    format_float: str | None = None
    element: list | None = None
    first_stage: int = 0
    end_stage: int | None = None
    kind: str = "dump"

    def __post_init__(self):
        if self.style not in STYLES:
            raise ValueError(f"dump style {self.style} is not supported ({', '.join(STYLES)})")
        if int(self.every) <= 0:
            raise ValueError(f"dump interval must be > 0, got {self.every}")
        if self.style == "custom":
            if not self.columns:
                raise ValueError("dump custom needs at least one column")
            unknown = [c for c in self.columns if c not in COLUMNS]
            if unknown:
                raise ValueError(f"dump custom column(s) {' '.join(unknown)} not supported "
                                 f"({' '.join(COLUMNS)})")
        if str(self.path).endswith((".gz", ".zst")) or "%" in str(self.path):
            raise ValueError(f"dump file {self.path}: compressed and per-processor ('%') files are not supported")

    @property
    def header_columns(self) -> list:
        """The columns written, in order."""
        if self.style == "custom":
            return list(self.columns)
        if self.style == "xyz":
            return ["type", "x", "y", "z"]
        return ["id", "type"] + (["xs", "ys", "zs"] if self.scale else ["x", "y", "z"]) + \
            (["ix", "iy", "iz"] if self.image else [])

    def formats(self) -> list:
        """printf formats per column (``dump_modify format`` applied)."""
        cols = self.header_columns
        if self.format_line is not None:
            fmts = self.format_line.split()
            if len(fmts) != len(cols):
                raise ValueError(f"dump_modify format line has {len(fmts)} formats for {len(cols)} columns")
            return fmts
        return [(self.format_int or "%d") if c in INT_COLUMNS else (self.format_float or "%g") for c in cols]

    def build(self, resume_step: int | None = None) -> "DumpWriter":
        return DumpWriter(self, resume_step=resume_step)


class DumpWriter(TrajectoryWriter):
    """The reporter of a :class:`DumpOutput` (a background writer as the other trajectories)."""

    def __init__(self, output: DumpOutput, resume_step: int | None = None):
        self.output = output
        self._per_step = "*" in str(output.path)
        self._active = output.first_stage == 0
        self._formats = output.formats()
        self._needs_forces = any(c in ("fx", "fy", "fz") for c in output.header_columns)
        super().__init__(output.path, output.every, resume_step=resume_step)

    # -- schedule ---------------------------------------------------------------------------
    def begin_stage(self, index: int) -> None:
        """The driver enters stage ``index``: the dump writes only between its dump and undump."""
        o = self.output
        self._active = o.first_stage <= index and (o.end_stage is None or index < o.end_stage)

    def next_report(self, step: int, run_start: int, run_end: int):
        return super().next_report(step, run_start, run_end) if self._active else None

    def report(self, snapshot) -> None:
        if snapshot.step == self._last_step:
            return
        self._raise_pending_error()
        self._last_step = snapshot.step
        self._queue.put(_Ready(stored_frame(snapshot.simulation, self._needs_forces)))

    # -- files ------------------------------------------------------------------------------
    def _open(self, append: bool) -> None:
        self._file = None if self._per_step else open(self.path, "a" if append else "w")

    def _keep_frames_up_to(self, step: int) -> int | None:
        if self._per_step:
            return None
        if self.output.style == "xyz":
            def frame_at(lines, i):
                words = lines[i + 1].split()
                if words[:2] != ["Atoms.", "Timestep:"]:
                    raise ValueError("not an xyz frame")
                return int(words[2]), int(lines[i]) + 2
        else:
            def frame_at(lines, i):
                if lines[i] != "ITEM: TIMESTEP":
                    raise ValueError("expected ITEM: TIMESTEP")
                return int(lines[i + 1]), 9 + int(lines[i + 3])
        return _truncate_text_frames(self.path, step, frame_at)

    def _write(self, pending) -> None:
        frame, forces = pending
        text = format_frame(self.output, frame, forces, self._formats)
        if self._per_step:
            with open(str(self.path).replace("*", str(frame.step)), "w") as f:
                f.write(text)
        else:
            self._file.write(text)
            self._file.flush()

    def _close(self) -> None:
        if self._file is not None:
            self._file.close()


class _Ready:
    """A frame already on the host, in the queue's ``result()`` form."""

    def __init__(self, value):
        self.value = value

    def result(self, type_names=None):
        return self.value


def stored_frame(sim, with_forces: bool) -> tuple:
    """``(Frame, forces or None)`` of the simulation's current step, atoms in id order, positions as
    stored (LAMMPS dumps them so: wrapped into the box only at neighbour-list builds, so an atom may
    be slightly outside between builds). A synchronous host copy."""
    if getattr(sim, "decomposition", None) is not None:
        raise NotImplementedError("LAMMPS dump files in runs over several MPI ranks are not supported")
    s, b, box = sim.state, sim.backend, sim.box
    ids = b.to_host(s.ids)
    order = np.argsort(ids, kind="stable")
    origin = np.asarray(box.origin, dtype=np.float64)
    frame = Frame(s.step, sim.time, np.asarray(box.L, dtype=np.float64), origin,
                  s.host_positions(b)[order] + origin, s.host_values("velocities", b)[order],
                  b.to_host(s.images)[order].astype(np.int64), b.to_host(s.types)[order], ids[order],
                  [str(t + 1) for t in range(sim.n_types)], getattr(sim, "topology", None),
                  None if s.charges is None else b.to_host(s.charges)[order])
    forces = s.host_values("forces", b)[order, :3] if with_forces else None
    return frame, forces


def column_values(name: str, frame: Frame, forces) -> np.ndarray:
    """One dump column of a frame (atoms in id order)."""
    if name == "id":
        return frame.ids
    if name == "type":
        return frame.types + 1
    if name == "mol":
        return frame.molecules()
    if name == "q":                     # LAMMPS: the per-atom charge (an atom style without charges: an error)
        if frame.charges is None:
            raise ValueError("dump column q needs per-atom charges (atom_style charge or full)")
        return frame.charges
    d = "xyz".index(name[0]) if name[0] in "xyz" else "xyz".index(name[1])
    if name in ("x", "y", "z"):
        return frame.positions[:, d]
    if name in ("xs", "ys", "zs"):
        return (frame.positions[:, d] - frame.origin[d]) / frame.lengths[d]
    if name in ("xu", "yu", "zu"):
        return frame.positions[:, d] + frame.images[:, d] * frame.lengths[d]
    if name in ("ix", "iy", "iz"):
        return frame.images[:, d]
    if name in ("vx", "vy", "vz"):
        return frame.velocities[:, d]
    if name in ("fx", "fy", "fz"):
        return forces[:, d]
    raise ValueError(f"dump column {name} is not supported")


def format_frame(output: DumpOutput, frame: Frame, forces=None, formats=None) -> str:
    """The text of one frame of ``output`` (LAMMPS' layout, see module docstring)."""
    formats = formats or output.formats()
    keep = np.ones(len(frame.ids), bool)
    if output.group_ids is not None:
        keep &= np.isin(frame.ids, np.asarray(output.group_ids))
    if output.group_types is not None:
        keep &= np.isin(frame.types, np.asarray(output.group_types))
    text = io.StringIO()
    n = int(keep.sum())
    if output.style == "xyz":
        text.write(f"{n}\n Atoms. Timestep: {frame.step}\n")
        names = output.element or [str(t + 1) for t in range(max(int(frame.types.max(initial=0)) + 1, 1))]
        for t, x, y, z in zip(frame.types[keep], *(frame.positions[keep].T)):
            text.write(f"{names[t]} {formats[1] % x} {formats[2] % y} {formats[3] % z}\n")
        return text.getvalue()
    lo, hi = frame.origin, frame.origin + frame.lengths
    text.write(f"ITEM: TIMESTEP\n{frame.step}\nITEM: NUMBER OF ATOMS\n{n}\nITEM: BOX BOUNDS pp pp pp\n")
    for d in range(3):
        text.write("%-1.16e %-1.16e\n" % (lo[d], hi[d]))
    cols = output.header_columns
    text.write("ITEM: ATOMS " + " ".join(cols) + "\n")
    if n:
        data = [column_values(c, frame, forces)[keep] for c in cols]
        line = " ".join(formats)
        for row in zip(*data):
            text.write(line % row + "\n")
    return text.getvalue()


__all__ = ["COLUMNS", "DumpOutput", "DumpWriter", "format_frame"]
