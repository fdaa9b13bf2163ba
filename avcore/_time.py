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
from typing import Literal, Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = [
    "MAX_SAMPLE_INDEX",
    "check_window",
    "check_window_overlaps",
    "check_window_samples",
    "clip_to_window",
    "frame_played_at",
    "seconds_to_ticks",
    "ticks_to_seconds",
    "frame_range",
    "sample_range",
    "samples_to_seconds",
    "span_sample_range",
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


def check_window(start_seconds: float, stop_seconds: float, *,
                 names: tuple[str, str] = ("start_seconds", "stop_seconds")) -> None:
    """Raise ValueError unless ``[start_seconds, stop_seconds)`` is a window anything can lie in: both bounds finite,
    ``stop >= start``. The message names the bounds as the caller calls them (``names``).

    Example:
        >>> check_window(0.0, float("nan"))
        Traceback (most recent call last):
        ...
        ValueError: window must be finite with stop >= start, got start_seconds = 0.0, stop_seconds = nan
    """
    if not (math.isfinite(start_seconds) and math.isfinite(stop_seconds) and stop_seconds >= start_seconds):
        raise ValueError(f"window must be finite with stop >= start, got {names[0]} = {start_seconds!r}, "
                         f"{names[1]} = {stop_seconds!r}")


MAX_SAMPLE_INDEX = 2**62
"""The largest sample count a window may hold (:func:`check_window_samples`): well inside int64, whose overflow made
:func:`seconds_to_samples` return -2**63 with only a numpy warning."""


def check_window_samples(start_seconds: float, stop_seconds: float, sample_rate: float, *,
                         names: tuple[str, str] = ("start_seconds", "stop_seconds")) -> None:
    """Raise ValueError when the window ``[start_seconds, stop_seconds)`` holds more than :data:`MAX_SAMPLE_INDEX`
    samples at ``sample_rate``: its sample indices would overflow int64. The message names the bounds (``names``).

    Example:
        >>> check_window_samples(-1e30, 1.0, 16000)
        Traceback (most recent call last):
        ...
        ValueError: window start_seconds = -1e+30, stop_seconds = 1.0 holds 1.6e+34 samples at 16000 Hz, more than a sample index can count (2**62)
    """
    count = (float(stop_seconds) - float(start_seconds)) * float(sample_rate)
    if not count <= MAX_SAMPLE_INDEX:
        raise ValueError(f"window {names[0]} = {start_seconds!r}, {names[1]} = {stop_seconds!r} holds {count:.3g} "
                         f"samples at {sample_rate:g} Hz, more than a sample index can count (2**62)")


def sample_range(start_seconds: float, stop_seconds: float, sample_rate: float) -> tuple[int, int]:
    """``[sample_start, sample_stop)`` of the half-open span ``[start_seconds, stop_seconds)``."""
    if stop_seconds < start_seconds:
        raise ValueError(f"span must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    return seconds_to_samples(start_seconds, sample_rate), seconds_to_samples(stop_seconds, sample_rate)


def span_sample_range(
    start_seconds: float,
    stop_seconds: float,
    *,
    audio_start_seconds: float,
    sample_rate: float,
    num_samples: Optional[int] = None,
) -> tuple[int, int]:
    """``[sample_start, sample_stop)`` of the span ``[start_seconds, stop_seconds)`` in audio whose sample 0 plays at
    ``audio_start_seconds``: the one span → sample rule of ``aligner.align`` and the windowing stage.

    Indices are counted from the audio's own first sample, half-up (:func:`sample_range` of the times relative to
    it). With ``num_samples``, both are clamped to ``[0, num_samples]`` and ``sample_stop >= sample_start``.

    Relative to the audio's first sample, not to a window's nominal start: a window cut at ``a`` starts its audio
    at the parent's sample ``round(a·sr)``, which plays up to half a sample away from ``a``; its spans keep the
    parent's samples only when counted from there::

        parent samples   0    ...   16000 (plays at 1.0 s)  ...  32001 (2.0000375 s)
        window at a = 1 s + 0.4 sample: audio starts at 16000 (1.0 s)
        span at s = 2 s + 0.6 sample    -> 16001 in the window (= 32001 - 16000), not round((s - a)·sr) = 16000

    Example:
        >>> span_sample_range(0.5, 1.5, audio_start_seconds=0.25, sample_rate=16000)
        (4000, 20000)
    """
    start, stop = sample_range(start_seconds - audio_start_seconds, stop_seconds - audio_start_seconds, sample_rate)
    if num_samples is not None:
        start = min(max(start, 0), num_samples)
        stop = min(max(stop, start), num_samples)
    return start, stop


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


def frame_played_at(
    pts_seconds: Sequence[float] | np.ndarray,
    seconds: float | np.ndarray,
    *,
    before_first: Literal["raise", "none", "first"] = "raise",
) -> np.ndarray:
    """Index of the frame on screen at each time: the last ``k`` with ``pts[k] <= t`` (a frame plays over
    ``[pts[k], pts[k+1])``). The one "frame played at t" rule of the decoder, the report and the benchmarks.

    Args:
        pts_seconds: presentation times, sorted.
        seconds: one time or an array of times.
        before_first: a time before the first frame (nothing on screen yet): ``"raise"`` an ``IndexError``,
            ``"none"``: index -1 (callers drop those), ``"first"``: index 0 (show the first frame).

    Raises:
        IndexError: with ``before_first="raise"``, a time before the first frame or no frames at all.

    Example:
        >>> frame_played_at([0.5, 0.6, 0.8], [0.5, 0.79, 9.0]).tolist()
        [0, 1, 2]
        >>> frame_played_at([0.5, 0.6], [0.1, 0.6], before_first="none").tolist()
        [-1, 1]
    """
    if before_first not in ("raise", "none", "first"):
        raise ValueError(f"before_first must be 'raise', 'none' or 'first', got {before_first!r}")
    pts = np.asarray(pts_seconds, dtype=np.float64)
    times = np.atleast_1d(np.asarray(seconds, dtype=np.float64))
    if before_first == "raise":
        if pts.size == 0:
            raise IndexError("no frames: the clip is empty")
        if times.size and float(times.min()) < pts[0]:
            raise IndexError(
                f"time {float(times.min()):.6f} s is before the first frame (pts {pts[0]:.6f} s); "
                f"valid times are >= {pts[0]:.6f} s"
            )
    played = np.searchsorted(pts, times, side="right") - 1
    return np.maximum(played, 0) if before_first == "first" else played


def clip_to_window(
    start_seconds: float, stop_seconds: float, window_start_seconds: float, window_stop_seconds: float
) -> Optional[tuple[float, float]]:
    """``[start_seconds, stop_seconds)`` clipped to the window ``[window_start_seconds, window_stop_seconds)``;
    None when they do not overlap.

    An empty span (``start_seconds == stop_seconds``, e.g. a point event) belongs to the window iff
    ``window_start_seconds <= start_seconds < window_stop_seconds``. An empty window holds nothing: every span is
    outside it (a span across it was kept as a zero-length span).

    Example:
        >>> clip_to_window(0.5, 2.0, 1.0, 3.0)
        (1.0, 2.0)
        >>> clip_to_window(0.5, 2.0, 1.0, 1.0) is None
        True
    """
    if window_stop_seconds <= window_start_seconds:
        return None
    if stop_seconds > window_start_seconds and start_seconds < window_stop_seconds:
        return max(start_seconds, window_start_seconds), min(stop_seconds, window_stop_seconds)
    if start_seconds == stop_seconds and window_start_seconds <= start_seconds < window_stop_seconds:
        return start_seconds, stop_seconds
    return None


def check_window_overlaps(
    start_seconds: float, stop_seconds: float, media_start_seconds: float, media_stop_seconds: float, *, label: str,
    what: str,
) -> None:
    """Raise ``IndexError`` when a non-empty window ``[start_seconds, stop_seconds)`` lies entirely outside the
    media's ``[media_start_seconds, media_stop_seconds)``: the one "window outside the media" rule of the readers.

    An empty window (``stop <= start``) is never refused (it reads as nothing); a window that overlaps the media
    by any amount is accepted (the reader returns the overlap).

    Args:
        label: the media's name, for the message; what: ``"video"`` or ``"audio"``.

    Example:
        >>> check_window_overlaps(5.0, 6.0, 0.0, 4.0, label="clip.mp4", what="audio")
        Traceback (most recent call last):
        IndexError: clip.mp4: window [5.000000, 6.000000) s is outside the audio, which covers [0.000000, 4.000000) s
    """
    if stop_seconds > start_seconds and (start_seconds >= media_stop_seconds or stop_seconds <= media_start_seconds):
        raise IndexError(
            f"{label}: window [{start_seconds:.6f}, {stop_seconds:.6f}) s is outside the {what}, which covers "
            f"[{media_start_seconds:.6f}, {media_stop_seconds:.6f}) s"
        )


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
