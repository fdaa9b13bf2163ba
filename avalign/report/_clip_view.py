"""What a per-clip page shows, gathered from one clip: audio, words before/after correction, frames, lag curve.

Everything is placed on the **video timeline** (seconds), the reference clock of DESIGN.md::

    audio sample at audio time a      →  t = (a − av_offset_ms/1000) / (1 + drift_ppm·1e-6)   (null → 0 applied)
    word stamped s (transcript clock)  →  before: s as stamped;  after: the record's ``words`` (corrected), or
                                          for caption-only transcripts  t(s − text_offset_ms/1000)
    frame k                            →  pts_seconds[k]

so that after correction the word boxes sit on the speech in the waveform and the frames at the events
line up with the sounds. The lag curve is the A/V estimator's correlation score per lag with its
null threshold: from the record (``lag_curve_ms``, ``lag_curve_score``, ``null_threshold``, as
``align.json`` may carry them) or from the estimator's result, else absent (the page says so).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from avalign.report._inputs import ClipInput
from avcore import frame_played_at

logger = logging.getLogger(__name__)

__all__ = ["ClipView", "WordBox", "gather_clip_view", "lag_curve_of"]

_ENVELOPE_COLUMNS = 1200
"""Waveform points kept (min/max per column): enough for a 1200 px wide plot."""
_MAX_EVENT_FRAMES = 6
_MAX_WORD_FRAMES = 6
_THUMB_WIDTH = 160
"""Thumbnails are this wide: the page decodes its frames at this width (``measure`` decodes narrower)."""


@dataclass(frozen=True)
class WordBox:
    """A word (or span, when the transcript has no word times) as a box ``[start_seconds, stop_seconds)``."""

    text: str
    """The word."""
    start_seconds: float
    """Start on the video timeline."""
    stop_seconds: float
    """Stop (exclusive) on the video timeline."""


@dataclass(frozen=True)
class ClipView:
    """The data of one clip page (all times on the video timeline, seconds)."""

    key: str
    """The clip's key."""
    envelope_seconds: np.ndarray
    """float64 ``[K]``: column times of the waveform envelope."""
    envelope_min: np.ndarray
    """float32 ``[K]``: smallest sample per column (mono)."""
    envelope_max: np.ndarray
    """float32 ``[K]``: largest sample per column (mono)."""
    audio_shift_ms: float
    """The A/V correction applied to the audio to place it on the video timeline (the measured offset, 0 if null)."""
    words_before: tuple[WordBox, ...] = ()
    """Words as the transcript stamps them."""
    words_after: tuple[WordBox, ...] = ()
    """Words after correction (the record's ``words``)."""
    event_frames: tuple[tuple[float, np.ndarray], ...] = ()
    """``(pts_seconds, RGB uint8 [H, W, 3])`` at the strongest visual events."""
    word_frames: tuple[tuple[float, str, np.ndarray], ...] = ()
    """``(pts_seconds, word, RGB uint8 [H, W, 3])`` at corrected word starts."""
    lag_curve_ms: Optional[np.ndarray] = None
    """float64 ``[L]``: lags (ms, > 0 audio late) of the estimator's correlation; None when not available."""
    lag_curve_score: Optional[np.ndarray] = None
    """float64 ``[L]``: score per lag."""
    null_threshold: Optional[float] = None
    """Score a peak must beat to be answered (same scale as the scores); None when unknown."""
    lag_curve_source: str = ""
    """``"align.json"``, ``"estimator"``, or "" when there is no curve."""
    notes: tuple[str, ...] = field(default=())
    """Why a part is missing (no video, no transcript, no lag curve…)."""


def lag_curve_of(source) -> Optional[tuple[np.ndarray, np.ndarray, Optional[float]]]:
    """``(lags_ms, scores, null_threshold)`` from a record (dict) or an estimate (attributes), when it carries
    ``lag_curve_ms`` and ``lag_curve_score`` of equal non-zero length; else None."""
    get = source.get if isinstance(source, dict) else (lambda name: getattr(source, name, None))
    lags, scores = get("lag_curve_ms"), get("lag_curve_score")
    if lags is None or scores is None:
        return None
    lags = np.asarray(lags, dtype=np.float64).reshape(-1)
    scores = np.asarray(scores, dtype=np.float64).reshape(-1)
    if lags.size == 0 or lags.size != scores.size or not np.all(np.isfinite(lags)):
        return None
    threshold = get("null_threshold")
    return lags, scores, (float(threshold) if threshold is not None and np.isfinite(threshold) else None)


def _to_video_seconds(audio_seconds: np.ndarray, av_offset_ms: Optional[float], drift_ppm: Optional[float]) -> np.ndarray:
    offset = (av_offset_ms or 0.0) / 1000.0
    return (audio_seconds - offset) / (1.0 + (drift_ppm or 0.0) * 1e-6)


def _envelope(samples: np.ndarray, start_seconds: float, sample_rate: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Min/max per column of mono ``samples``; column times on the audio clock."""
    n = samples.size
    columns = max(1, min(_ENVELOPE_COLUMNS, n))
    per = max(1, n // columns)
    used = (n // per) * per
    blocks = samples[:used].reshape(-1, per)
    times = start_seconds + (np.arange(blocks.shape[0]) + 0.5) * per / sample_rate
    return times, blocks.min(axis=1).astype(np.float32), blocks.max(axis=1).astype(np.float32)


def _thumbnail(frame: np.ndarray) -> np.ndarray:
    step = max(1, frame.shape[1] // _THUMB_WIDTH)
    return np.ascontiguousarray(frame[::step, ::step, :3])


def _frame_at(pts: np.ndarray, seconds: float) -> int:
    """Index of the frame on screen at ``seconds`` (the last with pts <= seconds; the first before it)."""
    return int(frame_played_at(pts, seconds, before_first="first")[0])


def _event_indices(video) -> list[int]:
    """Frames of the strongest visual changes (flashes, cuts), at most ``_MAX_EVENT_FRAMES``, in time order."""
    from aligner.estimators import visual_change_events

    strength = visual_change_events(video.frames, feature="luma_rise")
    if not strength.size or not strength.max() > 0:
        strength = visual_change_events(video.frames, feature="frame_difference")
    if not strength.size or not strength.max() > 0:
        return []
    candidates = np.flatnonzero(strength >= 0.3 * strength.max())
    strongest = candidates[np.argsort(-strength[candidates], kind="stable")][:_MAX_EVENT_FRAMES]
    return sorted(int(i) for i in strongest)


def _boxes(items) -> tuple[WordBox, ...]:
    out = []
    for w in items:
        start, stop = w.get("start_seconds"), w.get("stop_seconds")
        if start is None or stop is None:
            continue
        out.append(WordBox(str(w.get("text", "")), float(start), float(stop)))
    return tuple(out)


def gather_clip_view(clip: ClipInput, record: dict) -> ClipView:
    """Decode ``clip`` again and collect what its page shows; ``record`` is its ``measure`` record (or align.json).

    Raises:
        DecodeError, TranscriptError, ValueError: the media or transcript cannot be read (the caller notes it).
    """
    import loaders
    from avalign._measure import decode_for_measure

    notes: list[str] = []
    av_offset_ms, drift_ppm = record.get("av_offset_ms"), record.get("drift_ppm")
    # measure's decode rule, frames wide enough for thumbnails
    video, _, audio, video_only = decode_for_measure(clip.media, name=clip.media_name, max_width=_THUMB_WIDTH,
                                                     audio_media=clip.audio_media, audio_name=clip.audio_name)
    if video_only:
        notes.append("video-only media: no audio, no waveform and no A/V lag curve")
    mono = audio.samples.numpy().mean(axis=0)
    times, low, high = _envelope(mono, audio.start_seconds, audio.sample_rate)
    times = _to_video_seconds(times, av_offset_ms, drift_ppm)
    if av_offset_ms is None:
        notes.append("A/V offset abstained: the audio is drawn with no correction")

    words_before: tuple[WordBox, ...] = ()
    if clip.transcript is not None:
        transcript = loaders.read_transcript(clip.transcript, name=clip.transcript_name)
        stamped = transcript.words or tuple(transcript.spans)
        words_before = tuple(WordBox(w.text, w.start_seconds, w.stop_seconds) for w in stamped)
    else:
        notes.append("no transcript: no word boxes")
    words_after = _boxes(record.get("words") or [])
    if not words_after and words_before:  # caption-only transcript: its spans, moved by the measured offsets
        text_seconds = (record.get("text_offset_ms") or 0.0) / 1000.0

        def corrected(seconds: float) -> float:
            return float(_to_video_seconds(np.asarray(seconds - text_seconds), av_offset_ms, drift_ppm))

        words_after = tuple(WordBox(b.text, corrected(b.start_seconds), corrected(b.stop_seconds)) for b in words_before)

    if video is None:
        notes.append("audio-only media: no frames and no A/V lag curve")
    event_frames: list = []
    word_frames: list = []
    curve = lag_curve_of(record)
    curve_source = "align.json" if curve is not None else ""
    if video is not None and video.num_frames:
        frames = video.frames.numpy()
        pts = video.pts_seconds.numpy()
        event_frames = [(float(pts[i]), _thumbnail(frames[i])) for i in _event_indices(video)]
        for box in words_after[:_MAX_WORD_FRAMES]:
            i = _frame_at(pts, box.start_seconds)
            word_frames.append((float(pts[i]), box.text, _thumbnail(frames[i])))
        if curve is None and not video_only:
            from aligner import estimate_av_offset

            curve = lag_curve_of(estimate_av_offset(video, audio))
            curve_source = "estimator" if curve is not None else ""
    if curve is None:
        notes.append("lag curve not available: no video, or the estimator correlated nothing (no visual events)")
    lags, scores, threshold = curve if curve is not None else (None, None, None)
    return ClipView(
        key=clip.key, envelope_seconds=times, envelope_min=low, envelope_max=high,
        audio_shift_ms=float(av_offset_ms or 0.0), words_before=words_before, words_after=words_after,
        event_frames=tuple(event_frames), word_frames=tuple(word_frames), lag_curve_ms=lags, lag_curve_score=scores,
        null_threshold=threshold, lag_curve_source=curve_source, notes=tuple(notes),
    )
