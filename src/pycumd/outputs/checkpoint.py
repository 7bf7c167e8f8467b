"""Writing checkpoints: :class:`CheckpointWriter` (a reporter) and :func:`write_atomically`.

The format is :mod:`pycumd.checkpoint_file`'s. A file is written to ``PATH.tmp``, flushed, fsync'ed
and renamed over ``PATH``; the previous checkpoint is kept as ``PATH.1`` (the last two). The state is
copied off the GPU on a side stream and the file is written by a background thread, so a checkpoint
does not stall the run.

A checkpoint of step S is put in place only once the other reporters' files hold everything they
reported up to S (trajectory frames are written by their own threads: the checkpoint's thread waits
for them, :meth:`~pycumd.outputs.reporter.Reporter.fence`) and those files are fsync'ed. A continuation from S cuts the files
back to S and writes only later steps, so a checkpoint that landed before the frame of its own step
would leave that frame missing for good after a kill.
"""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path

from ..checkpoint_file import FORMAT_VERSION, encode_checkpoint
from .reporter import HostCopy, Needs, OutputError, Reporter


def write_atomically(path, data: bytes, keep_previous: bool = True) -> None:
    """Write ``data`` to ``path`` through ``path.tmp`` + fsync + rename; keep the old file as ``path.1``.

    At every moment ``path`` is a complete file (the old or the new one): the old one is linked to
    ``path.1`` before the new one is renamed over it.
    """
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if keep_previous and path.exists():
        previous = path.with_name(path.name + ".1")
        staging = path.with_name(path.name + ".1.tmp")
        if staging.exists():
            staging.unlink()
        try:
            os.link(path, staging)
        except OSError:                       # a file system without hard links
            staging.write_bytes(path.read_bytes())
        os.replace(staging, previous)
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def sync_file(path) -> None:
    """fsync a file that another descriptor wrote and flushed: its data reach the disk, not only the
    page cache (a checkpoint must not outlive, through a power loss, the frames and rows it covers).
    A path that is no file (a LAMMPS dump's per-step pattern ``dump.*.txt``) is skipped."""
    if not os.path.isfile(path):
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _reason(error: BaseException) -> str:
    return getattr(error, "strerror", None) or str(error)


def _host_backend():
    from ..backend import select

    return select("cpu")


class CheckpointWriter(Reporter):
    """Writes a checkpoint every ``every`` steps (and on request: :meth:`write_now`).

    Parameters
    ----------
    path : str or path
        The checkpoint file; the previous one is kept as ``PATH.1``.
    every : int
        Interval in steps, and the last step of each run (0: only on request, e.g. at a clean stop).
    context : dict
        What the run came from and how it ran (input, options, stage): stored in every checkpoint
        so that ``pycumd run --restart PATH`` can rebuild the run (set by the driver).

    Attributes
    ----------
    settings : callable or None
        ``settings() -> dict``: a front-end's settings of the running stage, merged into the context
        of each checkpoint when it is taken (LAMMPS scripts: what ``read_restart`` restores, fix
        states included); set by the driver per stage.
    """

    needs = Needs()

    def __init__(self, path, every: int = 0, context: dict | None = None):
        if every < 0:
            raise ValueError(f"checkpoint interval must be >= 0, got {every}")
        self.path = Path(path)
        self.every = int(every)
        self.context = dict(context or {})
        self.settings = None
        self.written: list[int] = []           # steps of the checkpoints written
        self._last_step = None
        self._queue: queue.Queue = queue.Queue(maxsize=2)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._drain, name=f"pycumd-{self.path.name}", daemon=True)
        self._thread.start()

    def also_reports(self, run_start: int, run_end: int) -> tuple:
        """With an interval, also the last step of each run (a run shorter than the interval, or
        not a multiple of it, ends with a checkpoint of its last step)."""
        return (run_end,) if self.every > 0 else ()

    def report(self, snapshot) -> None:
        self.write_now(snapshot.simulation)

    def write_now(self, sim, wait: bool = False) -> None:
        """Checkpoint ``sim`` at its current step (a serial run is left as it is; over MPI ranks see
        :meth:`~pycumd.simulation.Simulation.start_checkpoint`); ``wait`` for the file to be on disk."""
        self._raise_pending_error()
        if sim.state.step != self._last_step:
            self._last_step = sim.state.step
            sim.start_checkpoint()
            arrays = sim.checkpoint_arrays()          # over MPI ranks: gathered (collective), on the host
            from .. import __version__

            meta = {"pycumd_version": __version__, "format": FORMAT_VERSION, **sim.checkpoint_scalars(),
                    "context": {**self.context, **(self.settings() if self.settings is not None else {})},
                    "array_names": list(arrays)}
            d = sim.decomposition
            if d is None or d.comm.rank == 0:         # over MPI ranks: one file, written by rank 0
                # the other reporters' writes so far (this step's frames included: the checkpoint
                # writer reports last), which the file must not overtake
                fences = [f for f in (r.fence() for r in sim.reporters if r is not self) if f is not None]
                backend = sim.backend if d is None else _host_backend()
                self._queue.put((meta, list(arrays), HostCopy(backend, list(arrays.values())), fences))
        if wait:
            self._queue.join()
            self._raise_pending_error()

    def close(self) -> None:
        """Wait for the checkpoints in flight to be written."""
        if self._thread.is_alive():
            self._queue.put(None)
            self._thread.join()
        self._raise_pending_error()

    def _drain(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is None:
                    return
                if self._error is None:
                    meta, names, copy, fences = item
                    data = encode_checkpoint(meta, dict(zip(names, copy.wait())))
                    unwritten = [str(f.path) for f in fences if not f.wait()]
                    if unwritten:                 # a continuation from here would skip their lost frames
                        raise OSError(f"held back: frames of {', '.join(unwritten)} up to step {meta['step']} "
                                      f"were not written, and a continuation from it would not write them")
                    for fence in fences:          # on disk before the checkpoint that covers them
                        sync_file(fence.path)
                    write_atomically(self.path, data)
                    self.written.append(meta["step"])
            except BaseException as exc:          # reported in the simulation's thread
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise_pending_error(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise OutputError(f"writing checkpoint {self.path} failed: {_reason(error)} (the previous "
                              f"checkpoint, if any, is intact)") from error
