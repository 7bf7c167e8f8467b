"""Read trajectory files frame by frame: GSD (HOOMD schema), extended XYZ and LAMMPS text dumps.

The three formats pycumd writes (:mod:`pycumd.outputs.trajectory`), and the same formats as other
codes write them. Each frame comes as a :class:`TrajectoryFrame` in id order, positions relative to
the box's lower corner and wrapped into it, with image counters where the file has them (GSD
``particles/image``; dump ``ix iy iz``). Extended XYZ has no image counters: frames are unwrapped
by the minimum-image convention between consecutive frames (:func:`unwrap_by_continuity`), valid
when no atom moves half a box length between two frames.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["TrajectoryFrame", "read_trajectory", "unwrap_by_continuity", "TrajectoryError"]


class TrajectoryError(ValueError):
    """A trajectory file that cannot be read; the message names the file, the frame and the problem."""


@dataclass
class TrajectoryFrame:
    """One frame, particles in id order.

    step : int
    lengths : (3,) float64, box edges (length units)
    positions : (N, 3) float64, relative to the box's lower corner, wrapped into ``[0, L)``
    images : (N, 3) int32 or None (extended XYZ)
    velocities : (N, 3) float64 or None
    types : (N,) int32, 0-based
    ids : (N,) int64
    """

    step: int
    lengths: np.ndarray
    positions: np.ndarray
    images: np.ndarray | None
    velocities: np.ndarray | None
    types: np.ndarray
    ids: np.ndarray

    def unwrapped(self) -> np.ndarray:
        """Positions plus image counters times the box lengths, (N, 3) (length units)."""
        if self.images is None:
            raise TrajectoryError("this frame has no image counters (extended XYZ): use unwrap_by_continuity")
        return self.positions + self.images * self.lengths


def read_trajectory(path, start: int = 0, stop: int | None = None, stride: int = 1):
    """Yield the frames ``start:stop:stride`` of a trajectory file as :class:`TrajectoryFrame` s.

    The format comes from the extension: ``.gsd`` (needs the ``gsd`` package), ``.xyz`` /
    ``.extxyz``, ``.lammpstrj`` / ``.dump``.  Raises :class:`TrajectoryError` for an unknown
    extension, a missing file or a malformed frame (naming the file and the frame).
    """
    path = Path(path)
    suffix = path.suffix.lower()
    readers = {".gsd": _gsd_frames, ".xyz": _xyz_frames, ".extxyz": _xyz_frames,
               ".lammpstrj": _dump_frames, ".dump": _dump_frames}
    if suffix not in readers:
        raise TrajectoryError(f"{path}: unknown trajectory format {suffix!r} (use .gsd, .xyz, .extxyz, "
                              ".lammpstrj or .dump)")
    if not path.is_file():
        raise TrajectoryError(f"{path}: no such file")
    if start < 0 or stride < 1 or (stop is not None and stop < 0):
        raise TrajectoryError(f"{path}: frame selection needs start >= 0, stop >= 0 and stride >= 1, "
                              f"got {start}:{stop}:{stride}")
    for index, frame in enumerate(readers[suffix](path)):
        if stop is not None and index >= stop:
            return
        if index >= start and (index - start) % stride == 0:
            yield frame


def unwrap_by_continuity(frames):
    """Yield (frame, unwrapped positions) with images from consecutive minimum-image steps."""
    previous = unwrapped = None
    for frame in frames:
        if frame.images is not None:
            yield frame, frame.unwrapped()
            continue
        if previous is None:
            unwrapped = frame.positions.copy()
        else:
            step = frame.positions - previous
            unwrapped = unwrapped + step - frame.lengths * np.rint(step / frame.lengths)
        previous = frame.positions
        yield frame, unwrapped


def _by_id(step, lengths, positions, images, velocities, types, ids, where) -> TrajectoryFrame:
    order = np.argsort(ids, kind="stable")
    lengths = np.asarray(lengths, dtype=np.float64)
    if np.any(~np.isfinite(lengths)) or np.any(lengths <= 0):
        raise TrajectoryError(f"{where}: box lengths must be positive, got {lengths}")
    positions = np.asarray(positions, dtype=np.float64)[order]
    shift = np.floor(positions / lengths)
    positions = positions - shift * lengths
    if images is not None:
        images = (np.asarray(images, dtype=np.int64)[order] + shift).astype(np.int32)
    return TrajectoryFrame(int(step), lengths, positions, images,
                           None if velocities is None else np.asarray(velocities, np.float64)[order],
                           np.asarray(types, np.int32)[order], np.asarray(ids, np.int64)[order])


def _gsd_frames(path):
    try:
        import gsd.hoomd
    except ImportError:
        raise TrajectoryError("reading GSD files needs the gsd package: pip install 'pycumd[io]'") from None
    with gsd.hoomd.open(str(path), mode="r") as trajectory:
        for index, snap in enumerate(trajectory):
            where = f"{path} frame {index}"
            box = np.asarray(snap.configuration.box, dtype=np.float64)
            if np.any(box[3:] != 0):
                raise TrajectoryError(f"{where}: triclinic box (only orthorhombic boxes are supported)")
            n = int(snap.particles.N)
            lengths = box[:3]
            positions = np.asarray(snap.particles.position, np.float64) + 0.5 * lengths   # HOOMD centres the box
            velocities = snap.particles.velocity
            yield _by_id(snap.configuration.step, lengths, positions, snap.particles.image,
                         None if velocities is None else velocities, snap.particles.typeid,
                         np.arange(1, n + 1), where)


_KEYVALUE = re.compile(r'(\w+)=("[^"]*"|\S+)')


def _xyz_frames(path):
    with open(path) as f:
        index = 0
        while True:
            head = f.readline()
            if not head.strip():
                return
            where = f"{path} frame {index}"
            try:
                n = int(head)
            except ValueError:
                raise TrajectoryError(f"{where}: expected the atom count, got {head.strip()!r}") from None
            comment = dict((k, v.strip('"')) for k, v in _KEYVALUE.findall(f.readline()))
            if "Lattice" not in comment:
                raise TrajectoryError(f"{where}: no Lattice= in the comment line (not extended XYZ)")
            lattice = np.array(comment["Lattice"].split(), dtype=np.float64).reshape(3, 3)
            if np.any(lattice - np.diag(np.diag(lattice))):
                raise TrajectoryError(f"{where}: triclinic lattice (only orthorhombic boxes are supported)")
            origin = np.array(comment.get("Origin", "0 0 0").split(), dtype=np.float64)
            columns = _xyz_columns(comment.get("Properties", "species:S:1:pos:R:3"), where)
            rows = [f.readline().split() for _ in range(n)]
            if any(len(r) < columns["_width"] for r in rows):
                raise TrajectoryError(f"{where}: fewer than {columns['_width']} columns in an atom line "
                                      f"(or the file ends early)")
            table = np.array(rows, dtype=object)
            species = table[:, columns["species"]] if "species" in columns else np.zeros(n)
            if "type" in columns:                 # pycumd's files: the LAMMPS type, 1-based
                types = table[:, columns["type"]].astype(np.int64) - 1
            else:
                _, types = np.unique(species.astype(str), return_inverse=True)
            ids = table[:, columns["id"]].astype(np.int64) if "id" in columns else np.arange(1, n + 1)
            velocities = table[:, columns["velo"]].astype(np.float64) if "velo" in columns else None
            positions = table[:, columns["pos"]].astype(np.float64) - origin
            yield _by_id(int(comment.get("step", index)), np.diag(lattice), positions, None, velocities,
                         types, ids, where)
            index += 1


def _xyz_columns(properties: str, where: str) -> dict:
    """Column slices of the extended XYZ ``Properties=name:type:count:...`` string."""
    parts = properties.split(":")
    columns, at = {}, 0
    for name, _, count in zip(parts[0::3], parts[1::3], parts[2::3]):
        count = int(count)
        columns[name] = at if count == 1 else slice(at, at + count)
        at += count
    if "pos" not in columns:
        raise TrajectoryError(f"{where}: Properties has no pos column")
    columns["_width"] = at
    return columns


def _dump_frames(path):
    with open(path) as f:
        index = 0
        while True:
            line = f.readline()
            if not line:
                return
            where = f"{path} frame {index}"
            if not line.startswith("ITEM: TIMESTEP"):
                raise TrajectoryError(f"{where}: expected 'ITEM: TIMESTEP', got {line.strip()!r}")
            step = int(f.readline())
            if not f.readline().startswith("ITEM: NUMBER OF ATOMS"):
                raise TrajectoryError(f"{where}: expected 'ITEM: NUMBER OF ATOMS'")
            n = int(f.readline())
            bounds = f.readline()
            if not bounds.startswith("ITEM: BOX BOUNDS") or "xy" in bounds:
                raise TrajectoryError(f"{where}: expected an orthogonal 'ITEM: BOX BOUNDS', got {bounds.strip()!r}")
            box = np.array([f.readline().split()[:2] for _ in range(3)], dtype=np.float64)
            header = f.readline()
            if not header.startswith("ITEM: ATOMS"):
                raise TrajectoryError(f"{where}: expected 'ITEM: ATOMS ...', got {header.strip()!r}")
            names = shlex.split(header)[2:]
            col = {name: k for k, name in enumerate(names)}
            data = np.loadtxt(f, max_rows=n, ndmin=2) if n else np.empty((0, len(names)))
            if data.shape != (n, len(names)):
                raise TrajectoryError(f"{where}: expected {n} atom lines of {len(names)} columns")
            lengths = box[:, 1] - box[:, 0]
            if all(c in col for c in ("x", "y", "z")):
                positions = data[:, [col["x"], col["y"], col["z"]]] - box[:, 0]
            elif all(c in col for c in ("xs", "ys", "zs")):
                positions = data[:, [col["xs"], col["ys"], col["zs"]]] * lengths
            elif all(c in col for c in ("xu", "yu", "zu")):
                positions = data[:, [col["xu"], col["yu"], col["zu"]]] - box[:, 0]
            else:
                raise TrajectoryError(f"{where}: no x y z (or xs ys zs, xu yu zu) columns in {header.strip()!r}")
            images = (data[:, [col["ix"], col["iy"], col["iz"]]] if all(c in col for c in ("ix", "iy", "iz"))
                      else np.zeros((n, 3)) if "xu" in col else None)
            velocities = data[:, [col["vx"], col["vy"], col["vz"]]] if "vx" in col else None
            ids = data[:, col["id"]] if "id" in col else np.arange(1, n + 1)
            types = data[:, col["type"]] - 1 if "type" in col else np.zeros(n)
            yield _by_id(step, lengths, positions, images, velocities, types, ids, where)
            index += 1
