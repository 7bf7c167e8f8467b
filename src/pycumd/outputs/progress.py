"""A one-line progress bar with steps/s and ETA, for long runs on a terminal."""

from __future__ import annotations

import sys
import time


class Progress:
    """Progress of a run, redrawn at most every ``interval`` seconds on ``stream`` (stderr).

    Shown only when ``enabled`` is True, or, with ``enabled=None``, when the stream is a
    terminal and the run is expected to take longer than ``min_seconds``.
    """

    def __init__(self, total_steps: int, stream=None, enabled=None, interval: float = 0.5,
                 min_seconds: float = 3.0):
        self.total = total_steps
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.interval = interval
        self.min_seconds = min_seconds
        self.start = time.perf_counter()
        self._last = self.start
        self._shown = False

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self._last < self.interval or self.total <= 0:
            return
        self._last = now
        rate = done / max(now - self.start, 1e-12)
        eta = (self.total - done) / rate if rate > 0 else float("inf")
        if self.enabled is None:
            if not (hasattr(self.stream, "isatty") and self.stream.isatty()):
                return
            if now - self.start + eta < self.min_seconds:
                return
        elif not self.enabled:
            return
        width = 30
        filled = int(width * done / self.total)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\r[{bar}] {done}/{self.total} steps  {rate:,.0f} steps/s  ETA {_hms(eta)} ")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


def _hms(seconds: float) -> str:
    if seconds == float("inf"):
        return "--:--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
