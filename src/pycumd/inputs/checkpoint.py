"""The run a checkpoint continues: its input read again, with the options it ran with."""

from __future__ import annotations

from ..checkpoint_file import Checkpoint, read_checkpoint
from ..system import InputError

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
    if source.get("last_run_steps") is not None:             # pycumd run --steps N
        plan.set_last_run_steps(int(source["last_run_steps"]))
    plan.source = source
    plan.engine = EngineOptions(**context["engine"])
    plan.outputs = OutputSettings.from_dict(context["outputs"])
    return plan


__all__ = ["Checkpoint", "plan_from_checkpoint", "read_checkpoint"]
