"""Windowing stage: a clip longer than ``window_seconds`` becomes consecutive windows ``key@0``, ``key@1``, ….

Windows tile the aligned sample's timeline ``[T0, T1)`` with no gap and no overlap::

    video time  T0            T0+W          T0+2W         T1
                |-------------|-------------|------|
    windows     [  key@0      )[  key@1     )[key@2)          (the last one may be shorter)
    a last window under a frame interval that holds no frame joins the window before it (below)
    frames      pts rule: frame k is in window i iff a_i <= pts[k] < b_i
    samples     [round((a_i - T0)·sr), round((b_i - T0)·sr))   (half-up; counts add up to the whole)
    spans       those overlapping [a_i, b_i), clipped to it; frame/sample/token ranges re-based on the window

Nothing is decoded or resampled again: frames and audio are sliced from the aligned sample (whose clock
values were estimated or given once for the whole clip), so a span's samples are exactly the samples it
had in the parent, re-based to the window's first sample. A window's audio starts at
``T0 + round((a_i - T0)·sr) / sr``, within half a sample of ``a_i``.

A clip with video whose last window would be shorter than a frame interval (the median) and hold no frame has that
rest merged into the window before it, which then holds a little more than ``window_seconds`` of audio (less than a
frame interval more) and no more frames: a 29.97 fps clip of 300 frames spans 10.01 s, and ``window_seconds=10``
would otherwise add a 10 ms window of 160 samples and no frame to every such clip (an item of length 0 in the batch's
video).
"""
from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Iterable, Iterator
from typing import Optional

import numpy as np

from aligner import AlignedSample, AlignedSpan
from avcore import AudioClip, VideoClip, clip_to_window, frame_range, span_sample_range

logger = logging.getLogger(__name__)

__all__ = ["split_windows", "windows"]

_TOLERANCE_SECONDS = 1e-9
"""A clip at most this much longer than ``window_seconds`` is not cut (float noise)."""


def windows(samples: Iterable[AlignedSample], *, window_seconds: Optional[float]) -> Iterator[AlignedSample]:
    """Cuts each sample longer than ``window_seconds`` into consecutive windows (a stage).

    Args:
        samples: Aligned samples (e.g. from :func:`aligner.align`).
        window_seconds: Window length in seconds (> 0); None passes samples through unchanged.

    Yields:
        Samples of at most ``window_seconds`` (the last of a clip with video may be longer by less than a frame
        interval: a rest that holds no frame is merged into it, see the module docstring); a cut sample yields
        ``key@0``, ``key@1``, … in time order, a sample that fits is yielded unchanged (same key).

    Raises:
        ValueError: ``window_seconds`` is not a positive finite number.

    Example:
        >>> parts = list(windows([sample_of_25_seconds], window_seconds=10.0))  # doctest: +SKIP
        >>> [p.key for p in parts]                                              # doctest: +SKIP
        ['clip@0', 'clip@1', 'clip@2']
    """
    for sample in samples:
        yield from split_windows(sample, window_seconds=window_seconds)


def split_windows(sample: AlignedSample, *, window_seconds: Optional[float],
                  merge_rest: bool = True) -> list[AlignedSample]:
    """The windows of one sample (see :func:`windows`). ``merge_rest=False`` keeps a frameless last rest as a window
    of its own (every window then at most ``window_seconds``: the pipeline's fallback when the merged window would be
    over a budget sized to ``window_seconds``)."""
    if window_seconds is None:
        return [sample]
    if not (isinstance(window_seconds, (int, float)) and math.isfinite(window_seconds) and window_seconds > 0):
        raise ValueError(f"window_seconds must be a positive number of seconds, got {window_seconds = !r}; try 10.0.")
    start, stop = float(sample.start_seconds), float(sample.stop_seconds)
    duration = stop - start
    if duration <= window_seconds + _TOLERANCE_SECONDS:
        return [sample]
    num_windows = int(math.ceil((duration - _TOLERANCE_SECONDS) / window_seconds))
    if merge_rest and sample.video is not None and num_windows > 1 and _frameless_rest(sample.video.pts_seconds.numpy(),
                                                                        start + (num_windows - 1) * window_seconds, stop):
        num_windows -= 1  # the window before it takes the rest (module docstring)
    if num_windows == 1:
        return [sample]
    out = []
    for index in range(num_windows):
        window_start_seconds = start + index * window_seconds
        window_stop_seconds = stop if index == num_windows - 1 else start + (index + 1) * window_seconds
        out.append(_cut(sample, window_start_seconds, window_stop_seconds, key=f"{sample.key}@{index}"))
    return out


def _frameless_rest(pts: np.ndarray, rest_start_seconds: float, stop_seconds: float) -> bool:
    """Whether ``[rest_start_seconds, stop_seconds)`` holds no frame and is shorter than the clip's typical frame
    interval (its median): the rounding of a clip's span, not a stretch of video without frames (a held still of a
    variable-rate clip, whose windows stay as they are)."""
    first, last = frame_range(pts, rest_start_seconds, stop_seconds)
    if first != last or pts.size < 2:
        return False
    return stop_seconds - rest_start_seconds < float(np.median(np.diff(pts)))


def _cut(sample: AlignedSample, window_start_seconds: float, window_stop_seconds: float, *, key: str) -> AlignedSample:
    """The part of ``sample`` over ``[window_start_seconds, window_stop_seconds)`` with re-based index ranges."""
    sample_rate = sample.audio.sample_rate
    origin = float(sample.start_seconds)
    sample_start, sample_stop = span_sample_range(window_start_seconds, window_stop_seconds, audio_start_seconds=origin,
                                                  sample_rate=sample_rate, num_samples=sample.audio.num_samples)
    audio = dataclasses.replace(
        sample.audio,
        samples=sample.audio.samples[:, sample_start:sample_stop].contiguous(),
        start_seconds=origin + sample_start / sample_rate,
    )
    video: Optional[VideoClip] = None
    frame_start = 0
    if sample.video is not None:
        pts = sample.video.pts_seconds.numpy()
        frame_start, frame_stop = frame_range(pts, window_start_seconds, window_stop_seconds)
        video = dataclasses.replace(
            sample.video,
            # Views, not copies: a window's frames are a contiguous run of the clip's (the clip's storage is
            # shared by its windows, and by the worker->main transfer, instead of being copied per window).
            frames=sample.video.frames[frame_start:frame_stop],
            pts_seconds=sample.video.pts_seconds[frame_start:frame_stop],
        )
    rebase = dict(
        window_start_seconds=window_start_seconds,
        window_stop_seconds=window_stop_seconds,
        audio=audio,
        pts=None if video is None else video.pts_seconds.numpy(),
    )
    words = _clip_spans(sample.words, **rebase)
    segments = _clip_spans(sample.segments, **rebase)
    return dataclasses.replace(
        sample,
        video=video,
        audio=audio,
        words=words,
        segments=segments,
        start_seconds=window_start_seconds,
        stop_seconds=window_stop_seconds,
        key=key,
    )


def _clip_spans(
    spans: tuple[AlignedSpan, ...],
    *,
    window_start_seconds: float,
    window_stop_seconds: float,
    audio: AudioClip,
    pts: Optional[np.ndarray],
) -> tuple[AlignedSpan, ...]:
    """Spans overlapping the window, clipped to it, with frame/sample/token ranges relative to the window."""
    kept = []
    for span in spans:
        clipped = clip_to_window(span.start_seconds, span.stop_seconds, window_start_seconds, window_stop_seconds)
        if clipped is not None:
            kept.append((span, *clipped))
    token_base = min((span.token_start for span, _, _ in kept if span.token_start is not None), default=0)
    out = []
    for span, s, e in kept:
        frame_start = frame_stop = None
        if pts is not None:
            frame_start, frame_stop = frame_range(pts, s, e)
        # Counted from the window audio's first sample (the parent's sample round((a - T0)·sr)): a span keeps its samples.
        sample_start, sample_stop = span_sample_range(s, e, audio_start_seconds=audio.start_seconds,
                                                      sample_rate=audio.sample_rate, num_samples=audio.num_samples)
        token_start = None if span.token_start is None else span.token_start - token_base
        token_stop = None if span.token_stop is None else span.token_stop - token_base
        out.append(
            dataclasses.replace(
                span,
                start_seconds=s,
                stop_seconds=e,
                frame_start=frame_start,
                frame_stop=frame_stop,
                sample_start=sample_start,
                sample_stop=sample_stop,
                token_start=token_start,
                token_stop=token_stop,
            )
        )
    return tuple(out)
