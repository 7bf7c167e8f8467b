"""The reporter contract: what a reporter needs, when, and the one snapshot that serves them all.

A reporter says which step it reports next and what it needs there (:meth:`Reporter.next_report`),
as OpenMM's reporters do. The simulation runs uninterrupted (CUDA-graph blocks on the GPU) up to
the nearest such step, computes per-atom energies only if some reporter due there needs them, and
hands every reporter due at that step the same :class:`Snapshot`. A snapshot fetches each kind of
data at most once (the thermo row, the host frame), however many reporters ask for it.

Writing a new output means one :class:`Reporter` subclass here (and one field in
:class:`~pycumd.outputs.settings.OutputSettings` for the front-ends): the simulation needs no change.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import numpy as np


class OutputError(RuntimeError):
    """Writing an output file failed (a full disk, a file-size limit, a lost mount); the message
    names the file. What was written before stays readable."""


@dataclass(frozen=True)
class Needs:
    """What a reporter reads at its step.

    energy : per-atom energies and virials (thermo: potential energy, pressure)
    frame : positions, velocities, images, types and ids on the host in id order (trajectories)
    """

    energy: bool = False
    frame: bool = False


class Reporter:
    """Base class of everything a :class:`~pycumd.simulation.Simulation` reports to.

    Subclasses set :attr:`needs` and implement :meth:`report`; the default schedule is every
    :attr:`every` steps (``every = 0``: none but those :meth:`also_reports` adds).
    """

    needs = Needs()
    every = 0

    def next_report(self, step: int, run_start: int, run_end: int) -> int | None:
        """The first step ``>= step`` of the run ``[run_start, run_end]`` this reporter reports,
        or None if it reports none."""
        candidates = [s for s in self.also_reports(run_start, run_end) if s >= step]
        if self.every > 0:
            candidates.append(-(-step // self.every) * self.every)
        due = [s for s in candidates if s <= run_end]
        return min(due) if due else None

    def also_reports(self, run_start: int, run_end: int) -> tuple:
        """Steps reported besides the multiples of :attr:`every` (e.g. a run's first and last)."""
        return ()

    def begin_run(self, simulation) -> None:
        """Called at the start of every run (before its first report)."""

    def begin_stage(self, index: int) -> None:
        """Called by the driver before stage ``index`` of a run plan (e.g. a LAMMPS dump defined
        between runs reports only from its stage on)."""

    def report(self, snapshot: "Snapshot") -> None:
        raise NotImplementedError

    def fence(self):
        """For a reporter that writes its files later (in a background thread): an object whose
        ``wait()`` returns, True once everything reported so far is in its files, False if some of
        it could not be written. A checkpoint waits for it before it is put in place. None (the
        default): everything is written when :meth:`report` returns."""
        return None

    def close(self) -> None:
        """Flush and close whatever the reporter wrote."""


@dataclass
class Frame:
    """One frame on the host (particles in id order); positions wrapped, box origin added."""

    step: int
    time: float
    lengths: np.ndarray
    origin: np.ndarray
    positions: np.ndarray
    velocities: np.ndarray
    images: np.ndarray
    types: np.ndarray
    ids: np.ndarray
    type_names: list
    #: the molecular topology (pycumd.molecular.topology.Topology, in atom ids) or None
    topology: object = None
    #: per-atom charges (charge units), (N,) float64 in id order, or None for a system without them
    charges: np.ndarray | None = None

    def molecules(self) -> np.ndarray:
        """Molecule ID of each atom of the frame (0 without topology, as LAMMPS)."""
        return np.zeros(len(self.ids), np.int64) if self.topology is None else self.topology.molecules_of(self.ids)


class Snapshot:
    """The state of one simulation at one reporting step, fetched lazily and at most once.

    Attributes
    ----------
    step : int
    time : float (time units)
    simulation : Simulation (for reporters that need more than the snapshot offers)
    """

    def __init__(self, simulation):
        self.simulation = simulation
        self.step = simulation.step
        self.time = simulation.time
        self._thermo = None
        self._frame = None

    def thermo_row(self) -> dict:
        """``Step, Temp, E_pair, E_mol, TotEng, Press`` as LAMMPS normalises them (one reduction)."""
        if self._thermo is None:
            self._thermo = self.simulation.thermo_row()
        return self._thermo

    def frame(self) -> "PendingFrame":
        """The particle arrays in id order, copied off the device without stalling the GPU.

        On the GPU the copy is a device-to-device snapshot on the compute stream, then a copy to
        pinned host memory on a side stream; :meth:`PendingFrame.result` waits for it (a writer
        thread does, not the simulation).
        """
        if self._frame is None:
            self._frame = PendingFrame(self.simulation)
        return self._frame


class HostCopy:
    """Host copies of backend arrays, made without stalling the GPU: on the GPU a device-to-device
    snapshot on the compute stream, then copies to pinned host memory on a side stream;
    :meth:`wait` returns the host arrays once they are there (call it from a writer thread)."""

    _copy_streams: dict = {}

    def __init__(self, backend, arrays):
        self._done = self._device_snapshot = None
        if not backend.is_gpu:
            self._host = [np.array(a) for a in arrays]
            return
        cp = backend.xp
        import cupyx

        device = cp.cuda.Device().id
        stream = self._copy_streams.get(device)
        if stream is None:
            stream = self._copy_streams[device] = cp.cuda.Stream(non_blocking=True)
        self._device_snapshot = [cp.ascontiguousarray(a).copy() for a in arrays]
        ready = cp.cuda.Event()
        ready.record()
        stream.wait_event(ready)
        self._host = [cupyx.empty_pinned(a.shape, a.dtype) for a in self._device_snapshot]
        for h, d in zip(self._host, self._device_snapshot):
            d.get(stream=stream, out=h, blocking=False)
        self._done = cp.cuda.Event()
        self._done.record(stream)

    def wait(self) -> list:
        if self._done is not None:
            self._done.synchronize()
            self._done = self._device_snapshot = None
        return self._host


class PendingFrame:
    """A :class:`Frame` whose host copy may still be in flight; :meth:`result` waits and builds it."""

    def __init__(self, sim):
        s = sim.state
        arrays = (s.positions[:, :3], s.velocities, s.images, s.types, s.ids)
        charges = getattr(s, "charges", None)
        if charges is not None:                   # per-atom charges (they move with their atoms)
            arrays += (charges,)
        if s.lo is not None:                      # composite precision: the low parts too
            arrays += (s.lo["positions"][:, :3], s.lo["velocities"])
        self._meta = (s.step, sim.time, sim.box, sim.n_types, getattr(sim, "topology", None), charges is not None)
        self._lock = threading.Lock()
        self._frame = None
        self._copy = HostCopy(sim.backend, arrays)

    def result(self, type_names=None) -> Frame:
        """The frame (waits for the copy); ``type_names`` default ``"1", "2", ...`` as LAMMPS."""
        with self._lock:
            if self._frame is None:
                self._frame = _host_frame(self._meta, self._copy.wait())
        if type_names is None:
            return self._frame
        return Frame(**{**self._frame.__dict__, "type_names": list(type_names)})


def _host_frame(meta, host) -> Frame:
    step, time, box, n_types, topology, has_charges = meta
    positions, velocities, images, types, ids = host[:5]
    charges, rest = (host[5], host[6:]) if has_charges else (None, host[5:])
    positions, velocities = positions.astype(np.float64), velocities.astype(np.float64)
    if len(rest) == 2:                        # composite precision: value = hi + lo
        positions = positions + rest[0]
        velocities = velocities + rest[1]
    by_id = np.argsort(ids, kind="stable")
    origin = np.asarray(box.origin)
    images = images[by_id].astype(np.int32)
    wrapped = box.wrap(positions[by_id], images)   # as System does
    return Frame(step, time, box.L, origin, wrapped + origin, velocities[by_id],
                 images, types[by_id], ids[by_id], [str(t + 1) for t in range(n_types)], topology,
                 None if charges is None else np.asarray(charges, dtype=np.float64)[by_id])
