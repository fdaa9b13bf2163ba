"""Text spans mapped onto the video timeline and into frame, sample and token index ranges.

::

    video time   T0                 s                e                     T1
                 |------------------[================)---------------------|
    frames       pts rule:   frame_start = first k with pts[k] >= s,  frame_stop = first k with pts[k] >= e
    samples      half-up:    sample_start = round((s - T0)·sr),      sample_stop = round((e - T0)·sr)
    tokens       overlap of the word's characters with each token's character offsets

All ranges are half-open and index into the arrays of the same AlignedSample (frames of its video,
samples of its audio, tokens of its joined word text).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, Optional, Sequence, get_args

import numpy as np

from aligner._clock import ClockModel
from aligner._tokens import Tokenizer, word_token_ranges
from avcore import check_window, check_window_samples, clip_to_window, frame_range, span_sample_range

logger = logging.getLogger(__name__)

__all__ = ["AlignedSpan", "SpanLevel", "map_spans"]

SpanLevel = Literal["word", "segment"]
"""What a span is: one word (with token ranges) or one transcript segment (caption, cue)."""


@dataclass(frozen=True)
class AlignedSpan:
    """A word or segment on the video timeline with its index ranges (all half-open)."""

    text: str
    """The word or segment text."""
    level: SpanLevel
    """``word`` or ``segment``."""
    start_seconds: float
    """Start on the video timeline, after correction (clipped to the aligned window)."""
    stop_seconds: float
    """Stop on the video timeline (exclusive)."""
    frame_start: Optional[int]
    """First frame whose pts is >= start; None without video."""
    frame_stop: Optional[int]
    """First frame whose pts is >= stop; None without video."""
    sample_start: int
    """First audio sample of the span in the aligned audio."""
    sample_stop: int
    """One past its last sample."""
    token_start: Optional[int] = None
    """First token of the word in the joined word text (words only)."""
    token_stop: Optional[int] = None
    """One past its last token."""

    def __post_init__(self) -> None:
        if self.stop_seconds < self.start_seconds:
            raise ValueError(f"span {self.text!r}: stop < start ({self.start_seconds = }, {self.stop_seconds = })")

    def to_json(self) -> dict:
        """Every field as JSON, floats rounded to 6 decimals (µs)."""
        return {k: (round(v, 6) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


def _checked_pts(pts_seconds) -> np.ndarray:
    """``pts_seconds`` as float64 ``[T]``; ValueError unless 1-D, finite and non-decreasing (the frame rule's search
    needs presentation order: unsorted pts gave wrong frame ranges silently)."""
    pts = np.asarray(pts_seconds, dtype=np.float64)
    if pts.ndim != 1 or not np.isfinite(pts).all() or np.any(np.diff(pts) < 0):
        raise ValueError(f"pts_seconds must be 1-D, finite and non-decreasing (presentation order), got shape "
                         f"{pts.shape}, {np.count_nonzero(~np.isfinite(pts))} NaN/inf, "
                         f"{np.count_nonzero(np.diff(pts.reshape(-1)) < 0)} decreasing steps")
    return pts


def map_spans(
    items: Sequence,
    *,
    level: SpanLevel,
    clock: ClockModel,
    pts_seconds: Optional[np.ndarray],
    window_start_seconds: float,
    window_stop_seconds: float,
    sample_rate: int,
    tokenizer: Optional[Tokenizer] = None,
) -> tuple[list[AlignedSpan], int]:
    """Map transcript items (``Word`` or ``Span`` records, stamped on the transcript clock) onto the video
    timeline, clip them to the window and compute their index ranges.

    Returns:
        The spans that overlap the window (in order) and how many fell entirely outside it (all of them for an empty
        window).

    Raises:
        ValueError: ``level`` is not a :data:`SpanLevel`; a window bound that is not finite or ``stop < start``, or a
            window of more samples than an index can count (``avcore.MAX_SAMPLE_INDEX``);
            ``pts_seconds`` not 1-D, finite and non-decreasing.
    """
    if level not in get_args(SpanLevel):
        raise ValueError(f"level must be one of {get_args(SpanLevel)}, got {level!r}")
    names = ("window_start_seconds", "window_stop_seconds")
    check_window(window_start_seconds, window_stop_seconds, names=names)
    check_window_samples(window_start_seconds, window_stop_seconds, sample_rate, names=names)
    if pts_seconds is not None:
        pts_seconds = _checked_pts(pts_seconds)
    starts = clock.stamp_to_video([it.start_seconds for it in items]) if items else np.zeros(0)
    stops = clock.stamp_to_video([it.stop_seconds for it in items]) if items else np.zeros(0)
    kept, outside = [], 0
    for it, s, e in zip(items, starts, stops):
        clipped = clip_to_window(float(s), float(e), window_start_seconds, window_stop_seconds)
        if clipped is None:
            outside += 1
            continue
        kept.append((it.text, *clipped))
    tokens: list[tuple[Optional[int], Optional[int]]] = [(None, None)] * len(kept)
    if level == "word":
        tokens = list(word_token_ranges([t for t, _, _ in kept], tokenizer)[0])
    spans = []
    for (text, s, e), (t0, t1) in zip(kept, tokens):
        f0 = f1 = None
        if pts_seconds is not None:
            f0, f1 = frame_range(pts_seconds, s, e)
        # the aligned audio starts at the window start
        a0, a1 = span_sample_range(s, e, audio_start_seconds=window_start_seconds, sample_rate=sample_rate)
        spans.append(AlignedSpan(text, level, s, e, f0, f1, a0, a1, t0, t1))
    if outside:
        logger.info("%d %s span(s) fall outside the media window [%.3f, %.3f) s", outside, level, window_start_seconds, window_stop_seconds)
    return spans, outside
