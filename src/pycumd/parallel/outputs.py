"""Outputs of a run over MPI ranks: single files, written by rank 0.

Every rank runs the same reporters' schedule (thermo rows and frames are collective: sums over the
ranks, gathers in id order), but only rank 0 opens files and prints.  :func:`rank_outputs` gives
the other ranks stand-ins: a thermo reporter that computes and keeps its rows without printing,
for each trajectory a :class:`FrameParticipant` that takes part in the frame gathers, and a
checkpoint writer that takes part in each checkpoint and writes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..outputs.checkpoint import CheckpointWriter
from ..outputs.reporter import Needs, Reporter
from ..outputs.settings import OutputSettings, Reporters
from ..outputs.thermo import ThermoReporter
from .comm import rank_of


class FrameParticipant(Reporter):
    """A trajectory writer's schedule without its file: joins the collective gather of each frame."""

    needs = Needs(frame=True)

    def __init__(self, every: int):
        self.every = int(every)

    def report(self, snapshot) -> None:
        snapshot.frame()


@dataclass
class FollowerOutputs:
    """The outputs of a rank other than 0: the same schedule, nothing written."""

    settings: OutputSettings

    screen = False
    progress = False

    def paths(self) -> list:
        """The files this rank writes: none."""
        return []

    def build(self, resume_step: int | None = None) -> Reporters:
        # a checkpoint is collective (the rebuild in id order, the gather): every rank has a writer,
        # and only rank 0's writes the file (CheckpointWriter.write_now)
        checkpoint = (CheckpointWriter(self.settings.checkpoint, self.settings.checkpoint_every)
                      if self.settings.checkpoint else None)
        return Reporters(ThermoReporter(every=0, log=None, screen=False),
                         [FrameParticipant(t.every) for t in self.settings.trajectories], checkpoint)


def rank_outputs(settings: OutputSettings, comm):
    """``settings`` on rank 0 of ``comm`` (an mpi4py communicator, a communicator or None), else
    :class:`FollowerOutputs`."""
    return settings if rank_of(comm) == 0 else FollowerOutputs(settings)
