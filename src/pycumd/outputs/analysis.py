"""Analysis during a run: g(r), MSD, VACF and S(q) reporters, each with its own CSV file.

Each reporter declares ``Needs(frame=True)`` every ``every`` steps.  On the GPU it reads the
simulation's device arrays directly (no host copy: the analysis kernels of :mod:`pycumd.analysis`
run on the device, and only the histograms or per-lag sums come back); on the CPU, or in composite
precision, it reads the snapshot's host frame.  The CSV file is rewritten at every report (a run
that stops early keeps the average so far) and at :meth:`close`.

The settings classes (:class:`RDFOutput`, :class:`MSDOutput`, :class:`VACFOutput`,
:class:`StructureFactorOutput`) are what :class:`~pycumd.outputs.settings.OutputSettings` holds.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..analysis import MSD, RDF, VACF, StructureFactor
from .reporter import Needs, Reporter

__all__ = ["RDFReporter", "MSDReporter", "VACFReporter", "StructureFactorReporter", "RDFOutput",
           "MSDOutput", "VACFOutput", "StructureFactorOutput", "write_csv"]


def write_csv(path, columns: dict) -> None:
    """Write ``columns`` (name -> 1-D array, equal lengths) as CSV with a header line of the names,
    atomically (a temporary file renamed over ``path``)."""
    path = Path(path)
    names = list(columns)
    table = np.column_stack([np.asarray(columns[c], dtype=np.float64) for c in names])
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w") as f:
        f.write(",".join(names) + "\n")
        for row in table:
            f.write(",".join(repr(float(x)) for x in row) + "\n")
    os.replace(tmp, path)


def _device_view(snapshot):
    """``(cupy, state)`` of a GPU simulation, or None when the host frame must be used (the CPU;
    composite precision, whose values are split in two parts)."""
    sim = snapshot.simulation
    if not sim.backend.is_gpu or sim.state.lo is not None:
        return None
    return sim.backend.xp, sim.state


class _AnalysisReporter(Reporter):
    needs = Needs(frame=True)
    description = ""

    def __init__(self, path, every: int):
        if int(every) <= 0:
            raise ValueError(f"{type(self).__name__}: interval must be > 0 steps, got {every}")
        self.path = Path(path)
        self.every = int(every)
        self._last_step = None

    def report(self, snapshot) -> None:
        if snapshot.step == self._last_step:
            return
        self._last_step = snapshot.step
        self._add(snapshot)
        self._write()

    def _write(self) -> None:
        if self.result.n_frames:
            write_csv(self.path, self.result.table())

    def close(self) -> None:
        self._write()


def _positions_and_box(snapshot):
    """Positions (device array on the GPU, host otherwise; any periodic image) and box lengths."""
    device = _device_view(snapshot)
    if device is not None:
        _, state = device
        return state.positions, np.asarray(state.box_lengths)
    frame = snapshot.frame().result()
    return frame.positions - frame.origin, np.asarray(frame.lengths)


def _by_id(snapshot, what: str):
    """Unwrapped positions or velocities (N, 3) in id order, on the device where possible."""
    device = _device_view(snapshot)
    if device is not None:
        xp, s = device
        order = xp.argsort(s.ids)
        if what == "velocities":
            return s.velocities[order]
        L = xp.asarray(np.asarray(s.box_lengths))
        return s.positions[order, :3].astype(np.float64) + s.images[order].astype(np.float64) * L
    frame = snapshot.frame().result()
    if what == "velocities":
        return frame.velocities
    return frame.positions - frame.origin + frame.images * frame.lengths


class RDFReporter(_AnalysisReporter):
    """g(r) averaged over the frames of a run, written to ``path`` (CSV ``r,g``).

    Parameters
    ----------
    path : str or path
    every : int
        Steps between frames.
    r_max : float
        Largest distance (length units, at most half the box).
    bins : int
    """

    def __init__(self, path, every: int, r_max: float, bins: int = 200):
        super().__init__(path, every)
        self.result = RDF(r_max, bins)
        self.description = f"radial distribution function g(r), r_max {r_max:g}, {bins} bins"

    def _add(self, snapshot):
        self.result.compute(*_positions_and_box(snapshot))


class StructureFactorReporter(_AnalysisReporter):
    """S(q) averaged over frames, written to ``path`` (CSV ``q,S,n_vectors``)."""

    def __init__(self, path, every: int, q_max: float, bins: int = 100, q_min: float = 0.0):
        super().__init__(path, every)
        self.result = StructureFactor(q_max, bins, q_min)
        self.description = f"static structure factor S(q), q in [{q_min:g}, {q_max:g}), {bins} bins"

    def _add(self, snapshot):
        self.result.compute(*_positions_and_box(snapshot))


class MSDReporter(_AnalysisReporter):
    """Mean squared displacement from the image counters, every frame a time origin, lags up to
    ``window - 1`` frames; CSV ``lag,time,msd`` (time units, length^2)."""

    def __init__(self, path, every: int, window: int = 100):
        super().__init__(path, every)
        self.window = int(window)
        self.result = None
        self.description = f"mean squared displacement, {window}-frame window, frames every {every} steps"

    def begin_run(self, simulation) -> None:
        if self.result is None:
            self.result = MSD(self.window, self.every * simulation.integrator.dt)

    def _add(self, snapshot):
        self.result.compute(_by_id(snapshot, "positions"))

    def _write(self):
        if self.result is not None:
            super()._write()


class VACFReporter(MSDReporter):
    """Velocity autocorrelation, every frame a time origin; CSV ``lag,time,vacf,normalized``."""

    def __init__(self, path, every: int, window: int = 100):
        super().__init__(path, every, window)
        self.description = f"velocity autocorrelation, {window}-frame window, frames every {every} steps"

    def begin_run(self, simulation) -> None:
        if self.result is None:
            self.result = VACF(self.window, self.every * simulation.integrator.dt)

    def _add(self, snapshot):
        self.result.compute(_by_id(snapshot, "velocities"))


@dataclass
class RDFOutput:
    """g(r) to ``path`` every ``every`` steps up to ``r_max`` (length units) in ``bins`` bins."""

    path: str
    every: int = 100
    r_max: float = 5.0
    bins: int = 200

    def build(self, path=None) -> RDFReporter:
        """The reporter, writing to ``path`` (default :attr:`path`)."""
        return RDFReporter(self.path if path is None else path, self.every, self.r_max, self.bins)


@dataclass
class MSDOutput:
    """MSD to ``path``: frames every ``every`` steps, lags up to ``window - 1`` frames."""

    path: str
    every: int = 10
    window: int = 100

    def build(self, path=None) -> MSDReporter:
        """The reporter, writing to ``path`` (default :attr:`path`)."""
        return MSDReporter(self.path if path is None else path, self.every, self.window)


@dataclass
class VACFOutput:
    """VACF to ``path``: frames every ``every`` steps, lags up to ``window - 1`` frames."""

    path: str
    every: int = 1
    window: int = 100

    def build(self, path=None) -> VACFReporter:
        """The reporter, writing to ``path`` (default :attr:`path`)."""
        return VACFReporter(self.path if path is None else path, self.every, self.window)


@dataclass
class StructureFactorOutput:
    """S(q) to ``path`` every ``every`` steps, ``q_min <= |q| < q_max`` (1/length) in ``bins`` bins."""

    path: str
    every: int = 100
    q_max: float = 10.0
    bins: int = 100
    q_min: float = 0.0

    def build(self, path=None) -> StructureFactorReporter:
        """The reporter, writing to ``path`` (default :attr:`path`)."""
        return StructureFactorReporter(self.path if path is None else path, self.every, self.q_max, self.bins, self.q_min)
