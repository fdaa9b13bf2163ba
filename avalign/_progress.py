"""Progress for long CLI commands: a bar with total and ETA on a terminal, plain periodic lines otherwise.

::

    terminal   preprocess:  40%|████      | 40/100 [00:12<00:18, 3.3clip/s, done=38, skipped=2]
    pipe/log   preprocess: 40/100 clip (40%), 3.3 clip/s, ETA 18 s, done=38, skipped=2

While a bar is drawn, log records go through ``tqdm.write`` (they print above the bar, never onto its
line); plain lines are written only every ``interval_seconds`` and once at the end (unless the last periodic line
already showed the final count), so a log file gets a few lines, not one per clip.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from typing import Callable, Optional, TextIO

logger = logging.getLogger(__name__)

__all__ = ["Progress", "format_eta"]


def format_eta(seconds: Optional[float]) -> str:
    """``"18 s"``, ``"4 min 05 s"``, ``"2 h 03 min"``, or ``"?"`` when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


class Progress:
    """Counts work done against ``total`` and shows it on ``stream``; a context manager.

    Args:
        total: units of work expected (None: unknown, no percentage or ETA).
        desc: what is being done (``"preprocess"``).
        unit: the unit's name (``"clip"``).
        stream: where to write (default ``sys.stderr``).
        bar: draw a tqdm bar; None decides by ``stream.isatty()``.
        interval_seconds: plain mode: at most one line per this many seconds (and one at the end).
        clock: monotonic seconds (for tests).
        initial: units already done before this run (resumed work): shown, not counted in the rate.
    """

    def __init__(self, *, total: Optional[int], desc: str, unit: str = "clip", stream: Optional[TextIO] = None,
                 bar: Optional[bool] = None, interval_seconds: float = 10.0, clock: Callable[[], float] = time.monotonic,
                 initial: int = 0) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.stream = stream if stream is not None else sys.stderr
        self.interval_seconds = interval_seconds
        self.clock = clock
        self.initial = initial
        self.n = initial
        self.postfix: dict = {}
        self._start = clock()
        self._last_line = self._start
        self._printed: Optional[tuple] = None  # (n, postfix) of the last plain line written
        self._redirect = contextlib.ExitStack()
        self._closed = False
        if bar is None:
            bar = bool(getattr(self.stream, "isatty", lambda: False)())
        self._bar = None
        if bar:
            from tqdm import tqdm
            from tqdm.contrib.logging import logging_redirect_tqdm

            self._bar = tqdm(total=total, initial=initial, desc=desc, unit=unit, file=self.stream, dynamic_ncols=True)
            self._redirect.enter_context(logging_redirect_tqdm())

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def rate_per_second(self) -> Optional[float]:
        """Units done in this run per second (resumed units excluded); None before any."""
        elapsed = self.clock() - self._start
        done = self.n - self.initial
        return done / elapsed if done > 0 and elapsed > 0 else None

    def eta_seconds(self) -> Optional[float]:
        """Seconds left at the current rate (0 once the total is reached, resumed work included); None when the
        total or the rate is unknown."""
        if self.total is not None and self.n >= self.total:
            return 0.0
        rate = self.rate_per_second()
        if self.total is None or rate is None:
            return None
        return max(self.total - self.n, 0) / rate

    def line(self) -> str:
        """The plain progress line (what a non-terminal gets)."""
        parts = [f"{self.desc}: {self.n}" + (f"/{self.total}" if self.total is not None else "") + f" {self.unit}"]
        if self.total:
            parts[0] += f" ({100.0 * self.n / self.total:.0f}%)"
        rate = self.rate_per_second()
        parts.append(f"{rate:.2f} {self.unit}/s" if rate is not None else f"? {self.unit}/s")
        if self.total is not None:
            parts.append(f"ETA {format_eta(self.eta_seconds())}")
        parts += [f"{k}={v}" for k, v in self.postfix.items()]
        return ", ".join(parts)

    def update(self, n: int = 1, **postfix) -> None:
        """``n`` more units done; ``postfix`` counters (``done=3, skipped=1``) replace the shown ones."""
        self.n += n
        if self.total is not None and self.n > self.total:  # an estimate fell short: never "9/8 (112%)"
            self.total = self.n
            if self._bar is not None:
                self._bar.total = self.n
        self.postfix.update(postfix)
        if self._bar is not None:
            if postfix:
                self._bar.set_postfix(self.postfix, refresh=False)
            self._bar.update(n)
            return
        now = self.clock()
        if now - self._last_line >= self.interval_seconds:
            self._last_line = now
            self._print_line()

    def _print_line(self) -> None:
        self._printed = (self.n, tuple(self.postfix.items()))
        print(self.line(), file=self.stream, flush=True)

    def close(self) -> None:
        """Finish: close the bar (and the log redirection), or write the final plain line."""
        if self._closed:
            return
        self._closed = True
        if self._bar is not None:
            self._bar.close()
            self._redirect.close()
        elif self._printed != (self.n, tuple(self.postfix.items())):  # not the line just written, again
            self._print_line()
