"""The checkpoint file format: one place that writes (:func:`encode_checkpoint`) and reads
(:func:`read_checkpoint`) it.

File format (pycumd's own; version :data:`FORMAT_VERSION`)::

    PYCUMD-CHECKPOINT\n
    {"format": 1, "sha256": "<hex of the payload>", "bytes": <payload length>}\n
    <payload: a NumPy .npz archive>

The payload holds ``meta.json`` (step, time, run bounds, box, units, masses, device and precision,
the thermostat's and the neighbour policy's state, the pycumd version, the input the run came from
and the options it ran with) and the per-atom arrays exactly as the run held them (current order,
the run's dtypes, composite low parts as ``lo.NAME``). Reading checks the header, the length and the
checksum, so a truncated or altered file is an error, never a wrong run. Writing files:
:mod:`pycumd.outputs.checkpoint`; continuing runs: :meth:`pycumd.simulation.Simulation.from_checkpoint`,
:func:`pycumd.run_plan.execute` (``resume=``) and :mod:`pycumd.inputs.checkpoint`.
"""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .box import Box
from .molecular.topology import from_checkpoint as topology_from_checkpoint
from .system import InputError, System
from .units import get_units

MAGIC = b"PYCUMD-CHECKPOINT\n"
FORMAT_VERSION = 2


def encode_checkpoint(meta: dict, arrays: dict) -> bytes:
    """The bytes of a checkpoint file (header and payload) for ``meta`` and host ``arrays``."""
    buffer = io.BytesIO()
    np.savez(buffer, **{"meta.json": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)},
             **{name: np.asarray(a) for name, a in arrays.items()})
    payload = buffer.getvalue()
    header = {"format": FORMAT_VERSION, "sha256": hashlib.sha256(payload).hexdigest(), "bytes": len(payload)}
    return MAGIC + json.dumps(header).encode() + b"\n" + payload



@dataclass
class Checkpoint:
    """A checkpoint read back: ``meta`` (scalars, context) and ``arrays`` (host, as the run held them)."""

    path: Path
    meta: dict
    arrays: dict

    @property
    def step(self) -> int:
        return int(self.meta["step"])

    @property
    def context(self) -> dict:
        return self.meta.get("context", {})


def read_checkpoint(path) -> Checkpoint:
    """Read and verify a checkpoint file; :class:`InputError` naming the file and the problem if it is
    not one, is truncated, fails its checksum, or is of another format version."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"checkpoint {path}: {exc.strerror or exc}") from None
    if not data.startswith(MAGIC):
        raise InputError(f"checkpoint {path}: not a pycumd checkpoint (no {MAGIC.strip().decode()} header)")
    end = data.find(b"\n", len(MAGIC))
    try:
        header = json.loads(data[len(MAGIC):end])
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"checkpoint {path}: corrupt header") from None
    if header.get("format") != FORMAT_VERSION:
        raise InputError(f"checkpoint {path}: format version {header.get('format')}, this pycumd reads "
                         f"version {FORMAT_VERSION}")
    payload = data[end + 1:]
    if len(payload) != header.get("bytes"):
        raise InputError(f"checkpoint {path}: truncated ({len(payload)} of {header.get('bytes')} bytes)")
    if hashlib.sha256(payload).hexdigest() != header.get("sha256"):
        raise InputError(f"checkpoint {path}: checksum mismatch (the file was altered or damaged)")
    with np.load(io.BytesIO(payload), allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(arrays.pop("meta.json").tobytes().decode())
    return Checkpoint(path, meta, arrays)



def system_from_checkpoint(checkpoint: Checkpoint) -> System:
    """The particles of a checkpoint as a :class:`System`, in id order (values ``hi + lo`` in
    composite precision)."""
    meta, arrays = checkpoint.meta, checkpoint.arrays
    by_id = np.argsort(arrays["ids"], kind="stable")
    positions = arrays["positions"][:, :3].astype(np.float64)
    velocities = arrays["velocities"].astype(np.float64)
    if "lo.positions" in arrays:
        positions = positions + arrays["lo.positions"][:, :3]
        velocities = velocities + arrays["lo.velocities"]
    box = Box(np.asarray(meta["box_lengths"]), np.asarray(meta["box_origin"]))
    return System(box, positions[by_id], meta["masses"], get_units(meta["units"]), types=arrays["types"][by_id],
                  velocities=velocities[by_id], images=arrays["images"][by_id], ids=arrays["ids"][by_id],
                  topology=topology_from_checkpoint(meta.get("topology"), arrays),
                  charges=arrays["charges"][by_id] if "charges" in arrays else None)
