"""Seconds ↔ sample / frame index conversion: the one rounding rule of avalign.

Every interval is half-open ``[start, stop)``.

Audio::

    seconds   0.0        s                         e
              |----------[=========================)--------->
    samples   0   ...  round_half_up(s*sr)   ...  round_half_up(e*sr)   (stop excluded)

Video (frames are points at their presentation timestamps ``pts``)::

    pts       p0    p1    p2    p3    p4    p5
              |     |     |     |     |     |
    span            [s=.............e)
    frames                ^p2   ^p3   ^p4          -> [frame_start=2, frame_stop=5)

Frame ``k`` belongs to ``[s, e)`` iff ``s <= pts[k] < e``. A frame's *played* interval is
``[pts[k], pts[k+1])``, so the frame shown at time ``t`` is the last ``k`` with ``pts[k] <= t``.

Rounding is half-up on purpose (as in lhotse ``compute_num_samples``), so that consecutive spans
``[a, b)`` and ``[b, c)`` get sample counts that add up exactly to the count of ``[a, c)``.
"""
from __future__ import annotations

import logging
import math
from typing import Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "clip_to_window",
    "frame_played_at",
    "seconds_to_ticks",
    "ticks_to_seconds",
    "frame_range",
    "sample_range",
    "samples_to_seconds",
    "seconds_to_samples",
]

# Products like 0.1 * 16000 are 1600.0000000000002 in binary floating point. Rounding the
# product to this many decimals first keeps exact halves exact before the half-up rule.
_PRODUCT_DECIMALS = 6


def seconds_to_samples(seconds: float | np.ndarray, sample_rate: float) -> int | np.ndarray:
    """Index of the sample at ``seconds`` on a clock with ``sample_rate`` ticks per second (half-up).

    Example:
        >>> seconds_to_samples(0.5, 16000)
        8000
        >>> seconds_to_samples(1.5 / 16000, 16000)   # exact halves round up
        2
    """
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    product = np.round(np.asarray(seconds, dtype=np.float64) * float(sample_rate), _PRODUCT_DECIMALS)
    index = np.floor(product + 0.5).astype(np.int64)
    if index.ndim == 0:
        return int(index)
    return index


def samples_to_seconds(index: int | np.ndarray, sample_rate: float) -> float | np.ndarray:
    """Time in seconds of sample ``index`` (the inverse of :func:`seconds_to_samples` within half a tick)."""
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    seconds = np.asarray(index, dtype=np.float64) / float(sample_rate)
    return float(seconds) if seconds.ndim == 0 else seconds


def sample_range(start_seconds: float, stop_seconds: float, sample_rate: float) -> tuple[int, int]:
    """``[sample_start, sample_stop)`` of the half-open span ``[start_seconds, stop_seconds)``."""
    if stop_seconds < start_seconds:
        raise ValueError(f"span must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    return seconds_to_samples(start_seconds, sample_rate), seconds_to_samples(stop_seconds, sample_rate)


def frame_range(
    pts_seconds: Sequence[float] | np.ndarray, start_seconds: float, stop_seconds: float
) -> tuple[int, int]:
    """``[frame_start, frame_stop)``: the frames whose pts lie in ``[start_seconds, stop_seconds)``.

    ``pts_seconds`` must be sorted (presentation order). An empty span gives ``frame_start == frame_stop``.
    """
    if stop_seconds < start_seconds:
        raise ValueError(f"span must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    pts = np.asarray(pts_seconds, dtype=np.float64)
    start = int(np.searchsorted(pts, start_seconds, side="left"))
    stop = int(np.searchsorted(pts, stop_seconds, side="left"))
    return start, stop


def frame_played_at(pts_seconds: Sequence[float] | np.ndarray, seconds: float | np.ndarray) -> np.ndarray:
    """Index of the frame on screen at each time: the last ``k`` with ``pts[k] <= t``.

    Raises:
        IndexError: a time before the first frame's pts (nothing is on screen yet).
    """
    pts = np.asarray(pts_seconds, dtype=np.float64)
    times = np.atleast_1d(np.asarray(seconds, dtype=np.float64))
    if pts.size == 0:
        raise IndexError("no frames: the clip is empty")
    if times.size and float(times.min()) < pts[0]:
        raise IndexError(
            f"time {float(times.min()):.6f} s is before the first frame (pts {pts[0]:.6f} s); "
            f"valid times are >= {pts[0]:.6f} s"
        )
    return np.searchsorted(pts, times, side="right") - 1


def clip_to_window(start: float, stop: float, window_start: float, window_stop: float) -> Optional[tuple[float, float]]:
    """``[start, stop)`` clipped to the window ``[window_start, window_stop)``; None when they do not overlap.

    An empty span (``start == stop``, e.g. a point event) belongs to the window iff ``window_start <= start < window_stop``.
    """
    if stop > window_start and start < window_stop:
        return max(start, window_start), min(stop, window_stop)
    if start == stop and window_start <= start < window_stop:
        return start, stop
    return None


def ticks_to_seconds(ticks, time_base) -> float | np.ndarray:
    """Container ticks → seconds, correctly rounded: ``ticks · num / den``.

    ``ticks * float(time_base)`` is not: with a 1/10 s time base, 4 ticks give 0.39999999999999997,
    and a frame at 0.4 s would fall into the window that ends at 0.4 s.
    """
    num, den = time_base.numerator, time_base.denominator
    if isinstance(ticks, (int, np.integer)):
        return int(ticks) * num / den
    return np.asarray(ticks, dtype=np.int64).astype(np.float64) * num / den


def seconds_to_ticks(seconds: float, time_base) -> int:
    """Seconds → the nearest container tick (the inverse of :func:`ticks_to_seconds` for tick-exact times)."""
    return int(round(seconds * time_base.denominator / time_base.numerator))


def is_close_seconds(a: float, b: float, *, tolerance_seconds: float = 1e-6) -> bool:
    """True when two times agree within ``tolerance_seconds`` (default one microsecond)."""
    return math.isclose(a, b, rel_tol=0.0, abs_tol=tolerance_seconds)
