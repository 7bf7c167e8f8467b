"""Time correlations with multiple time origins over a sliding window: MSD and VACF.

Both keep the last ``window`` frames (in the memory of the backend the frames come from: device
arrays on the GPU) and, at each new frame ``t``, add for every lag ``k < window`` with ``t - k >= 0``

* MSD:  ``sum_i |r_i(t) - r_i(t - k)|^2`` (unwrapped positions, from the image counters);
* VACF: ``sum_i v_i(t) . v_i(t - k)``;

so every frame is a time origin and the result at lag ``k`` is the average over all
``T - k`` origins of the ``T`` frames seen (with ``window >= T`` this is freud's ``MSD(mode="window")``).
One frame costs O(window N): one fused array expression over the ring buffer.  Frames are assumed
equally spaced; ``dt`` (time between frames) only labels the lags.
"""

from __future__ import annotations

import numpy as np

from ..backend import array_backend, select

__all__ = ["MSD", "VACF", "msd", "msd_from_reference", "vacf"]


class _WindowedCorrelation:
    """Ring buffer of the last ``window`` frames and the sums per lag (see the module docstring)."""

    value_name = ""

    def __init__(self, window: int, dt: float = 1.0):
        if int(window) < 1:
            raise ValueError(f"{self.value_name} window must be >= 1 frame, got {window}")
        if not dt > 0:
            raise ValueError(f"{self.value_name} dt (time between frames) must be > 0, got {dt}")
        self.window, self.dt = int(window), float(dt)
        self._buffer = None
        self._sums = np.zeros(self.window)
        self._counts = np.zeros(self.window, np.int64)
        self.n_frames = 0

    def _pair_sums(self, past, current):
        raise NotImplementedError

    def compute(self, values) -> "_WindowedCorrelation":
        """Add one frame: ``values`` (N, 3) in id order, NumPy or CuPy (the buffer lives there)."""
        xp = array_backend(values).xp
        values = xp.asarray(values, dtype=np.float64)[:, :3]
        if self._buffer is None:
            self._buffer = xp.zeros((self.window,) + values.shape, np.float64)
            self._n_atoms = values.shape[0]
        if values.shape[0] != self._n_atoms:
            raise ValueError(f"{self.value_name}: frame has {values.shape[0]} atoms, the first had {self._n_atoms}")
        t = self.n_frames
        self._buffer[t % self.window] = values
        lags = min(t + 1, self.window)
        slots = xp.asarray((t - np.arange(lags)) % self.window)   # lag k -> slot of frame t - k
        sums = self._pair_sums(self._buffer[slots], values)
        self._sums[:lags] += np.asarray(sums.get() if hasattr(sums, "get") else sums)
        self._counts[:lags] += self._n_atoms
        self.n_frames += 1
        return self

    @property
    def lags(self) -> np.ndarray:
        """Lags measured so far, in frames."""
        return np.arange(int(np.count_nonzero(self._counts)))

    @property
    def times(self) -> np.ndarray:
        """Lag times (time units), ``lags * dt``."""
        return self.lags * self.dt

    @property
    def values(self) -> np.ndarray:
        if self.n_frames == 0:
            raise ValueError(f"{self.value_name} not computed yet: call compute() on at least one frame")
        k = len(self.lags)
        return self._sums[:k] / self._counts[:k]


def msd_from_reference(unwrapped: np.ndarray, reference: np.ndarray, centre=None) -> np.ndarray:
    """Mean squared displacement from one fixed reference, LAMMPS ``compute msd`` (``ComputeMSD::
    compute_vector``): ``[<dx^2>, <dy^2>, <dz^2>, <dx^2 + dy^2 + dz^2>]`` (length^2) with
    ``d = (x_unwrapped - centre) - reference`` per atom (``centre``: the centre of mass now, for
    ``com yes``, whose reference then has its own centre subtracted; None: 0).

    unwrapped, reference : (N, 3) in the same atom order (host arrays)
    """
    d = np.asarray(unwrapped, dtype=np.float64)
    if centre is not None:
        d = d - np.asarray(centre, dtype=np.float64)
    d = d - np.asarray(reference, dtype=np.float64)
    n = d.shape[0]
    if n == 0:
        return np.zeros(4)
    sq = d * d
    per_axis = sq.sum(axis=0) / n
    return np.array([per_axis[0], per_axis[1], per_axis[2], float((sq[:, 0] + sq[:, 1] + sq[:, 2]).sum()) / n])


class MSD(_WindowedCorrelation):
    """Mean squared displacement ``<|r(t0 + k dt) - r(t0)|^2>`` over atoms and origins (length^2).

    Parameters
    ----------
    window : int
        Longest lag + 1 (frames kept).
    dt : float
        Time between frames (time units).

    Feed unwrapped positions (``positions + images * L``) with :meth:`compute`; :attr:`msd` is (lags,).
    """

    value_name = "msd"

    def _pair_sums(self, past, current):
        d = past - current[None]
        return (d * d).sum(axis=(1, 2))

    @property
    def msd(self) -> np.ndarray:
        return self.values

    def table(self) -> dict:
        return {"lag": self.lags, "time": self.times, "msd": self.msd}


class VACF(_WindowedCorrelation):
    """Velocity autocorrelation ``<v(t0) . v(t0 + k dt)>`` over atoms and origins (velocity^2).

    :attr:`vacf` is (lags,); :attr:`normalized` divides by its value at lag 0;
    :meth:`diffusion_coefficient` integrates it (Green-Kubo, trapezoid rule, ``D = 1/3 int C dt``).
    """

    value_name = "vacf"

    def _pair_sums(self, past, current):
        return (past * current[None]).sum(axis=(1, 2))

    @property
    def vacf(self) -> np.ndarray:
        return self.values

    @property
    def normalized(self) -> np.ndarray:
        return self.vacf / self.vacf[0]

    def diffusion_coefficient(self) -> float:
        """Green-Kubo estimate ``D = 1/3 integral_0^tmax C(t) dt`` (length^2/time)."""
        c = self.vacf
        return float(np.sum(0.5 * (c[1:] + c[:-1])) * self.dt / 3.0) if len(c) > 1 else 0.0

    def table(self) -> dict:
        return {"lag": self.lags, "time": self.times, "vacf": self.vacf, "normalized": self.normalized}


def msd(path, window: int | None = None, dt: float = 1.0, start: int = 0, stop: int | None = None,
        stride: int = 1, device: str = "cpu") -> MSD:
    """MSD of a trajectory file (GSD, dump: image counters; XYZ: unwrapped by continuity).

    ``window`` default: every lag (the number of frames; reads the file twice).
    """
    from .trajectory import read_trajectory, unwrap_by_continuity

    if window is None:
        window = sum(1 for _ in read_trajectory(path, start, stop, stride))
    backend = select(device)
    result = MSD(max(window, 1), dt)
    for _, unwrapped in unwrap_by_continuity(read_trajectory(path, start, stop, stride)):
        result.compute(backend.asarray(unwrapped))
    if result.n_frames == 0:
        raise ValueError(f"{path}: no frames in the selection {start}:{stop}:{stride}")
    return result


def vacf(path, window: int | None = None, dt: float = 1.0, start: int = 0, stop: int | None = None,
         stride: int = 1, device: str = "cpu") -> VACF:
    """VACF of a trajectory file with velocities (GSD, dump with vx vy vz, XYZ with velo)."""
    from .trajectory import read_trajectory

    if window is None:
        window = sum(1 for _ in read_trajectory(path, start, stop, stride))
    backend = select(device)
    result = VACF(max(window, 1), dt)
    for frame in read_trajectory(path, start, stop, stride):
        if frame.velocities is None:
            raise ValueError(f"{path}: frame at step {frame.step} has no velocities")
        result.compute(backend.asarray(frame.velocities))
    if result.n_frames == 0:
        raise ValueError(f"{path}: no frames in the selection {start}:{stop}:{stride}")
    return result
