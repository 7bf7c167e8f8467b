"""Reading checkpoints back (the format is :mod:`pycumd.outputs.checkpoint`'s) and the run they continue."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..outputs.checkpoint import FORMAT_VERSION, MAGIC
from ..system import InputError


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


def plan_from_checkpoint(checkpoint: Checkpoint):
    """The :class:`~pycumd.run_plan.RunPlan` a checkpoint was written in: its input read again (the
    text stored in the checkpoint), with the options it ran with."""
    from ..components import EngineOptions
    from ..outputs.settings import OutputSettings
    from .config import load_config, plan_from_config
    from .lammps_input import plan_from_lammps_script

    context = checkpoint.context
    source = context.get("source")
    if not source:
        raise InputError(f"checkpoint {checkpoint.path}: written by a run built in Python (no input text "
                         f"stored); continue it with run_plan.execute(plan, resume=read_checkpoint(path))")
    if source["kind"] == "toml":
        plan = plan_from_config(load_config(source["text"]))
    elif source["kind"] == "lammps":
        plan = plan_from_lammps_script(text=source["text"], variables=source.get("variables") or {},
                                       base_dir=source.get("base_dir"))
    else:
        raise InputError(f"checkpoint {checkpoint.path}: unknown input kind {source['kind']!r}")
    plan.source = source
    plan.engine = EngineOptions(**context["engine"])
    plan.outputs = OutputSettings.from_dict(context["outputs"])
    return plan
