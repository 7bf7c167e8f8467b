"""Trajectory frames in the formats OVITO, ASE and freud read: extended XYZ, GSD and LAMMPS dump.

A writer is a reporter: every ``every`` steps it takes the step's shared frame
(:meth:`pycumd.outputs.reporter.Snapshot.frame`: one copy for all writers of that step) and hands it
to a background thread that formats and writes it, so the simulation goes on while the file is
written.  On the GPU the frame is a device-to-device copy on the simulation's stream (a few
microseconds), and the copy to pinned host memory runs on a side stream: the simulation does not
wait for the transfer either.  At most ``max_pending`` frames wait in memory; beyond that the
simulation waits for the writer.  Errors in the writer thread are raised at the next frame or
at ``close()``: no frame is lost silently.  A checkpoint waits for the frames handed over before it
(:meth:`TrajectoryWriter.fence`): a run killed at any moment has every frame up to its last
checkpoint's step in its files.

``trajectory_writer(path, every)`` picks the format from the file name: ``.xyz`` / ``.extxyz``,
``.gsd`` (needs the ``gsd`` package: ``pip install pycumd[io]``), ``.lammpstrj`` / ``.dump``.
"""

from __future__ import annotations

import io
import os
import queue
import threading
from pathlib import Path

import numpy as np

from .reporter import Frame, Needs, OutputError, Reporter


class TrajectoryWriter(Reporter):
    """Base class: the reporter side (which steps, the shared frame) and the background writing thread.

    Parameters
    ----------
    path : str or path
    every : int
        Interval in steps (> 0).
    type_names : list of str (or None per unnamed type), optional
        Names per type, e.g. element symbols (default ``"1", "2", ...`` as LAMMPS numbers types).
        Extended XYZ writes a name that is no chemical symbol as a placeholder element
        (:func:`species_names`).
    max_pending : int
        Frames that may wait for the writer thread before the simulation waits.
    """

    needs = Needs(frame=True)

    def __init__(self, path, every: int, type_names=None, max_pending: int = 4, resume_step: int | None = None):
        if every <= 0:
            raise ValueError(f"trajectory interval must be > 0, got {every}")
        self.path = Path(path)
        self.every = int(every)
        self.type_names = (None if type_names is None
                           else [str(name) if name else str(t + 1) for t, name in enumerate(type_names)])
        self._last_step = None
        self._failed = False                   # a frame was not written (sticky: for fences)
        self._closing = False
        if resume_step is not None and self.path.exists():
            if self._keep_frames_up_to(resume_step) == resume_step:
                # the checkpointing run wrote this step's frame: a stage starting at that step (its
                # first report) does not write it again
                self._last_step = resume_step
            self._open(append=True)
        else:
            self._open(append=False)
        self._queue: queue.Queue = queue.Queue(maxsize=max_pending)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name=f"pycumd-{self.path.name}", daemon=True)
        self._thread.start()

    def report(self, snapshot) -> None:
        if snapshot.step == self._last_step:
            return
        self._raise_pending_error()
        self._last_step = snapshot.step
        self._queue.put(snapshot.frame())

    def fence(self) -> "WriteFence":
        """A :class:`WriteFence` that opens once every frame handed over so far is in the file
        (written and flushed: a process killed after that keeps it). The checkpoint writer waits
        for it before it puts a checkpoint in place, so that a checkpoint never covers a step whose
        frame is not yet written (a continuation does not write that frame again)."""
        if self._closing or not self._thread.is_alive():
            return WriteFence(self.path, written=not self._failed)
        fence = WriteFence(self.path)
        self._queue.put(fence)
        return fence

    def close(self) -> None:
        """Wait for every queued frame to be written, then close the file."""
        self._closing = True
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._close()
        self._raise_pending_error()

    def _drain(self) -> None:
        while True:
            pending = self._queue.get()
            if pending is None:
                return
            if isinstance(pending, WriteFence):
                pending.open(written=not self._failed)
                continue
            if self._error is None:
                try:
                    self._write(pending.result(self.type_names))
                except BaseException as exc:      # reported in the simulation's thread
                    self._error = exc
                    self._failed = True
            else:
                self._failed = True               # frames after an error are not written

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            reason = getattr(error, "strerror", None) or str(error)
            raise OutputError(f"writing trajectory {self.path} failed: {reason} (its earlier frames are "
                              f"whole)") from error

    # -- per format ----------------------------------------------------------------------------
    def _open(self, append: bool) -> None:
        raise NotImplementedError

    def _keep_frames_up_to(self, step: int) -> int | None:
        """Cut the file back to its whole frames of steps <= ``step`` (a run continued from a
        checkpoint at ``step`` writes the later ones again); return the step of the last frame kept
        (None: none, or not known)."""
        raise NotImplementedError

    def _write(self, frame: Frame) -> None:
        raise NotImplementedError

    def _close(self) -> None:
        raise NotImplementedError


class WriteFence:
    """Queued behind a writer's frames; :meth:`wait` returns once they are all written (True) or
    once one of them failed (False)."""

    def __init__(self, path, written: bool | None = None):
        self.path = Path(path)
        self.written = written
        self._event = threading.Event()
        if written is not None:
            self._event.set()

    def open(self, written: bool) -> None:
        self.written = written
        self._event.set()

    def wait(self) -> bool:
        self._event.wait()
        return self.written


#: chemical symbols by atomic number; 0 is ``X``, the dummy element of ASE and OVITO
CHEMICAL_SYMBOLS = (
    "X H He Li Be B C N O F Ne Na Mg Al Si P S Cl Ar K Ca Sc Ti V Cr Mn Fe Co Ni Cu Zn Ga Ge As Se Br Kr "
    "Rb Sr Y Zr Nb Mo Tc Ru Rh Pd Ag Cd In Sn Sb Te I Xe Cs Ba La Ce Pr Nd Pm Sm Eu Gd Tb Dy Ho Er Tm Yb "
    "Lu Hf Ta W Re Os Ir Pt Au Hg Tl Pb Bi Po At Rn Fr Ra Ac Th Pa U Np Pu Am Cm Bk Cf Es Fm Md No Lr Rf "
    "Db Sg Bh Hs Mt Ds Rg Cn Nh Fl Mc Lv Ts Og").split()


def species_names(type_names) -> list:
    """The extended XYZ species of each type: its name where that is a chemical symbol (``Ar``),
    else a placeholder element, the one whose atomic number is the type's LAMMPS number (type 1:
    ``H``, type 2: ``He``, ...; ``X`` beyond 118), so that every reader (ASE, OVITO) takes the file
    and types stay apart.  The LAMMPS type itself is the file's ``type`` column."""
    known = set(CHEMICAL_SYMBOLS[1:])
    return [name if name in known else (CHEMICAL_SYMBOLS[t + 1] if t + 1 < len(CHEMICAL_SYMBOLS) else "X")
            for t, name in enumerate(type_names)]


class ExtXYZWriter(TrajectoryWriter):
    """Extended XYZ: species, positions, velocities, ids and LAMMPS types (1-based); the box as
    ``Lattice``, step and time.  Species are element symbols (:func:`species_names`)."""

    def _open(self, append: bool):
        self._file = open(self.path, "a" if append else "w")

    def _write(self, f: Frame):
        lattice = " ".join(f"{x:.10g}" for x in np.diag(f.lengths).ravel())
        header = (f'{len(f.ids)}\nLattice="{lattice}" Origin="{" ".join(f"{x:.10g}" for x in f.origin)}" '
                  f'Properties=species:S:1:pos:R:3:velo:R:3:id:I:1:type:I:1 pbc="T T T" step={f.step} '
                  f'time={f.time:.10g}\n')
        names = np.asarray(species_names(f.type_names), dtype=object)[f.types]
        body = np.column_stack([names, f.positions, f.velocities, f.ids, f.types + 1])
        _write_whole(self._file, header, body, ["%s"] + ["%.10g"] * 6 + ["%d", "%d"])

    def _keep_frames_up_to(self, step: int) -> int | None:
        def frame_at(lines, i):          # (frame step, lines in the frame) or None if not a whole frame
            n = int(lines[i])
            step_field = [w for w in lines[i + 1].split() if w.startswith("step=")]
            return int(step_field[0][5:]), n + 2
        return _truncate_text_frames(self.path, step, frame_at)

    def _close(self):
        self._file.close()


class LammpsDumpWriter(TrajectoryWriter):
    """LAMMPS text dump (``dump custom ... id type x y z ix iy iz vx vy vz``), sorted by id."""

    def _open(self, append: bool):
        self._file = open(self.path, "a" if append else "w")

    def _write(self, f: Frame):
        lo, hi = f.origin, f.origin + f.lengths
        header = (f"ITEM: TIMESTEP\n{f.step}\nITEM: NUMBER OF ATOMS\n{len(f.ids)}\n"
                  "ITEM: BOX BOUNDS pp pp pp\n"
                  + "".join(f"{lo[d]:.10g} {hi[d]:.10g}\n" for d in range(3))
                  + "ITEM: ATOMS id type x y z ix iy iz vx vy vz\n")
        body = np.column_stack([f.ids, f.types + 1, f.positions, f.images, f.velocities])
        _write_whole(self._file, header, body, ["%d", "%d"] + ["%.10g"] * 3 + ["%d"] * 3 + ["%.10g"] * 3)

    def _keep_frames_up_to(self, step: int) -> int | None:
        def frame_at(lines, i):
            if lines[i] != "ITEM: TIMESTEP":
                raise ValueError("expected ITEM: TIMESTEP")
            return int(lines[i + 1]), 9 + int(lines[i + 3])
        return _truncate_text_frames(self.path, step, frame_at)

    def _close(self):
        self._file.close()


class GSDWriter(TrajectoryWriter):
    """GSD (HOOMD schema, the ``gsd`` package): positions centred in the box as HOOMD expects,
    images, velocities, type ids and names; the step as ``configuration/step``."""

    def _open(self, append: bool):
        self._gsd = _gsd_hoomd()
        self._file = self._gsd.open(str(self.path), mode="a" if append else "w")

    def _keep_frames_up_to(self, step: int) -> int | None:
        hoomd = _gsd_hoomd()
        try:
            with hoomd.open(str(self.path), mode="r") as old:
                kept = [frame for frame in old if frame.configuration.step <= step]
        except Exception as exc:
            raise ValueError(f"trajectory {self.path}: cannot read it back to continue it ({exc})") from None
        tmp = self.path.with_name(self.path.name + ".tmp")
        with hoomd.open(str(tmp), mode="w") as new:
            for frame in kept:
                new.append(frame)
        os.replace(tmp, self.path)
        return int(kept[-1].configuration.step) if kept else None

    def _write(self, f: Frame):
        frame = self._gsd.Frame()
        frame.configuration.step = int(f.step)
        frame.configuration.box = [*f.lengths, 0.0, 0.0, 0.0]
        frame.particles.N = len(f.ids)
        frame.particles.types = list(f.type_names)
        frame.particles.typeid = f.types.astype(np.uint32)
        frame.particles.position = (f.positions - f.origin - 0.5 * f.lengths).astype(np.float32)
        frame.particles.velocity = f.velocities.astype(np.float32)
        frame.particles.image = f.images.astype(np.int32)
        if f.charges is not None:
            frame.particles.charge = f.charges.astype(np.float32)
        if f.topology is not None:
            _gsd_topology(frame, f)
        self._file.append(frame)
        self._file.flush()

    def _close(self):
        self._file.close()


def _gsd_topology(frame, f: Frame) -> None:
    """The bond, angle, dihedral and improper groups of a GSD frame (HOOMD schema: ``N``, ``types``
    named "1", "2", ... as LAMMPS' types, ``typeid``, ``group`` of particle indices in the frame's order,
    the atoms in id order); the schema has no molecule IDs."""
    t = f.topology
    index = {"bond": frame.bonds, "angle": frame.angles, "dihedral": frame.dihedrals, "improper": frame.impropers}
    for kind, group in index.items():
        atoms = t.terms[kind]
        group.N = len(atoms)
        group.types = [str(k + 1) for k in range(t.n_types.get(kind, 0))]
        if len(atoms):
            group.typeid = t.types[kind].astype(np.uint32)
            group.group = np.searchsorted(f.ids, atoms).astype(np.uint32)


def _gsd_hoomd():
    try:
        import gsd.hoomd
    except ImportError:
        raise ImportError("GSD output needs the gsd package: pip install 'pycumd[io]'") from None
    return gsd.hoomd


def _write_whole(file, header: str, body: np.ndarray, fmt: list) -> None:
    """Format a frame completely, then write it with one call and flush: a run killed while writing
    leaves whole frames (and at most one cut-off last frame, which a continuation removes)."""
    text = io.StringIO()
    text.write(header)
    np.savetxt(text, body, fmt=fmt)
    start = file.tell()
    try:
        file.write(text.getvalue())
        file.flush()
    except OSError:
        try:                                  # a full disk: take the partial frame back out
            file.truncate(start)
        except OSError:
            pass
        raise


def _truncate_text_frames(path: Path, step: int, frame_at) -> int | None:
    """Cut a text trajectory after its last whole frame of step <= ``step``; ``frame_at(lines, i)``
    returns (step, number of lines) of the frame starting at line ``i``. Returns the step of the
    last frame kept (None if none)."""
    lines = path.read_text().split("\n")
    i = kept_lines = 0
    last_step = None
    while i < len(lines) - 1:
        try:
            frame_step, n_lines = frame_at(lines, i)
        except (ValueError, IndexError):
            break
        if frame_step > step or i + n_lines > len(lines) - 1:
            break
        i += n_lines
        kept_lines, last_step = i, frame_step
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(line + "\n" for line in lines[:kept_lines]))
    os.replace(tmp, path)
    return last_step


FORMATS = {".xyz": ExtXYZWriter, ".extxyz": ExtXYZWriter, ".gsd": GSDWriter,
           ".lammpstrj": LammpsDumpWriter, ".dump": LammpsDumpWriter}


def trajectory_writer(path, every: int, **kwargs) -> TrajectoryWriter:
    """A writer for ``path``, chosen by its extension (see module docstring)."""
    suffix = Path(path).suffix.lower()
    if suffix not in FORMATS:
        raise ValueError(f"unknown trajectory format {suffix!r} for {path}: use one of {', '.join(FORMATS)}")
    return FORMATS[suffix](path, every, **kwargs)
