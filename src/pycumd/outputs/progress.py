"""A one-line progress bar with steps/s and ETA, for long runs on a terminal.

The bar is the last line of the terminal while a run goes on. Whatever else the run prints meanwhile
(thermo rows) goes through :func:`print_above`, which clears the bar, prints the line and draws the
bar again below it, so that rows and bar never share a line.
"""

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
        self._line = ""
        self._widest = 0

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
        self._line = f"[{bar}] {done}/{self.total} steps  {rate:,.0f} steps/s  ETA {_hms(eta)} "
        self._draw()
        self._shown = True
        global _active
        _active = self

    def _draw(self) -> None:
        self.stream.write("\r" + self._line + self._erase_rest(len(self._line)))
        self.stream.flush()

    def _erase_rest(self, column: int) -> str:
        """What erases the line from ``column`` on: ANSI erase-to-end on a terminal, blanks over
        the longest bar drawn elsewhere."""
        if hasattr(self.stream, "isatty") and self.stream.isatty():
            return _CLEAR_TO_END
        self._widest = max(self._widest, len(self._line))
        return " " * max(self._widest - column, 0)

    def clear(self) -> None:
        """Erase the bar's line (the cursor back at its start); :meth:`redraw` shows it again."""
        if self._shown:
            self.stream.write("\r" + self._erase_rest(0) + "\r")
            self.stream.flush()

    def redraw(self) -> None:
        """Draw the bar as last shown."""
        if self._shown:
            self._draw()

    def close(self) -> None:
        global _active
        if _active is self:
            _active = None
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()


#: the bar on the terminal now (shown and not closed), if any
_active: Progress | None = None
#: ANSI "erase to the end of the line": what a shorter line leaves of a longer one goes
_CLEAR_TO_END = "\x1b[K"


def print_above(text: str, file) -> None:
    """Print ``text`` (one line) to ``file`` above the progress bar on the terminal, if one is shown:
    the bar's line is cleared first and the bar drawn again after."""
    bar = _active
    if bar is not None:
        bar.clear()
    print(text, file=file, flush=True)
    if bar is not None:
        bar.redraw()


def _hms(seconds: float) -> str:
    if seconds == float("inf"):
        return "--:--"
    m, s = divmod(int(seconds), 60)
    h, m = divmod(m, 60)
    return f"{h:d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"
