"""Step 1 of the A/V estimator: which frames are sudden, isolated visual events, and how much each counts.

::

    visual[k] (change entering frame k)   ──candidates──▶  stands out of the clip:  > max(0.1·peak, median + 6·MAD, 4)
                                          ──isolation──▶   ≥ 4 × the 90th percentile of the change within ±15 frames
                                                           (its own ±2 frames left out); the rest is continuous motion
    event k at pts[k], weight w_k = min(1, √(strength_k / max(0.5 · 90th percentile of the event strengths, 30)))

    a light that comes on between two frames:        visual  ▁ ▃ █ ▁      (rise split: share p, then 1 − p)
                                                     pts     j0 j0+1
    one event at the rise-weighted mean of its frames' pts: pts[j0] + (1 − p)·interval (a neighbour counts when its
    rise over the change around it is more than 0.3 of the event frame's)

Dating between frames assumes each frame is exposed for its whole interval from its pts: there the date is when the
light came on. A camera with a shorter shutter shows a light that comes on while it is closed in full in the next
frame, and the part-lit frame by a larger share: such events are dated late by up to (1 − shutter) of an interval,
(1 − shutter)/2 on average (measured on the wild generator's sub-frame stream: BENCHMARKS.md, "Events between
frames"). On the frame grid (all of a rise in one frame) the date is that frame's pts, as before. Dates can also be
early: under a long exposure a light that comes on early in a frame's exposure leaves under 0.3 of its rise to the
next frame, which is not counted (a codec's catch-up after a flash looks the same), so the event is dated at the
first frame's pts, up to 0.3 of an interval before the light came on; a light shorter than two frames is dated early
too (BENCHMARKS.md, "REPORT38 and REPORT53", "An independent generator").

The 30-level floor of the weight's reference: a flash or a light switched on changes the picture by tens of luma
levels, a mouth opening or closing by a few; in a clip whose only "events" are such small changes they count
for less than full events (the strengths measured on the tune set: BENCHMARKS.md, "A/V significance against the
clip's own neighbourhood").
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from aligner._onsets import AudioOnsets, tonal_boost

logger = logging.getLogger(__name__)

__all__ = ["MIN_EVENTS", "VisualEvents", "detect_visual_events", "onset_ranks", "onset_weights"]

MIN_EVENTS = 3
"""Fewer events (visual, or matched) cannot be told from chance coincidences."""
_MIN_VISUAL_LEVEL = 4.0  # luma levels: weaker "events" are codec flicker, not datable
# An event must be this many times the 90th percentile of the change around it (±_ISOLATION_FRAMES); measured
# ratios on the tune set are in BENCHMARKS.md ("Lab notes").
_ISOLATION = 4.0
_ISOLATION_FRAMES = 15
_ISOLATION_FLOOR = 0.5  # luma: a still neighbourhood does not make a weak change an event by itself
# Visual event weight: sqrt(strength / (this x the 90th percentile of the clip's event strengths)), at most 1.
_VISUAL_REFERENCE = 0.5
# ... and never below this (luma levels): small changes (a mouth) do not count as full events.
_VISUAL_REFERENCE_FLOOR = 30.0
# A neighbour of an event frame is part of its rise (a light coming on between frames) when it rises by more than this
# share of the event frame's rise, over the change around it. Chosen on TUNE43 (0.1, 0.3, 0.45 tried; TUNE and TUNE2,
# on the frame grid, unchanged at 0.3): BENCHMARKS.md, "Events between frames".
_SPLIT_SHARE = 0.3
# Audio event weight: strength / (this x the median strength), in [0.25, 1].
_AUDIO_REFERENCE = 1.5


@dataclass(frozen=True)
class VisualEvents:
    """The clip's isolated visual events, in frame order."""

    times_seconds: np.ndarray
    """float64 ``[K]``: pts of each event frame (video timeline), ascending."""
    strength: np.ndarray
    """float64 ``[K]``: the change entering each event frame (luma levels)."""
    weights: np.ndarray
    """float64 ``[K]`` in (0, 1]: how much each event counts in the match (weak events beside strong ones are
    mostly motion)."""
    num_continuous: int
    """Candidate frames rejected as not isolated (continuous change, e.g. a mouth following the speech)."""

    @property
    def num_events(self) -> int:
        """``K``."""
        return int(self.times_seconds.size)


def _isolated(visual: np.ndarray) -> tuple[np.ndarray, int]:
    """Indices of frames whose brightening is a sudden, discrete event, and how many candidates were not isolated."""
    if visual.size == 0:
        return np.zeros(0, dtype=np.int64), 0
    peak = float(visual.max())
    centre = float(np.median(visual))
    mad = 1.4826 * float(np.median(np.abs(visual - centre)))
    threshold = max(0.1 * peak, centre + 6.0 * mad, _MIN_VISUAL_LEVEL)
    candidates = np.flatnonzero(visual > threshold)
    keep = []
    for index in candidates:
        lo, hi = max(0, index - _ISOLATION_FRAMES), min(visual.size, index + _ISOLATION_FRAMES + 1)
        around = np.concatenate([visual[lo:max(lo, index - 2)], visual[index + 3:hi]])
        local = float(np.percentile(around, 90)) if around.size else 0.0
        keep.append(visual[index] >= _ISOLATION * max(local, _ISOLATION_FLOOR))
    keep = np.asarray(keep, dtype=bool)
    return candidates[keep], int((~keep).sum())


def detect_visual_events(visual_events: np.ndarray, pts_seconds: np.ndarray) -> VisualEvents:
    """Select the datable visual events of a clip (module diagram) and weigh them.

    Args:
        visual_events: float ``[T]`` >= 0, the change entering each frame (``visual_change_events``).
        pts_seconds: float ``[T]``, each frame's presentation time.

    Returns:
        :class:`VisualEvents` (possibly empty).

    Raises:
        ValueError: the two arrays are not both ``[T]``, ``visual_events`` is not finite, or ``pts_seconds`` is not
            finite and non-decreasing.
    """
    visual = np.asarray(visual_events, dtype=np.float64)
    pts = np.asarray(pts_seconds, dtype=np.float64)
    if visual.shape != pts.shape or visual.ndim != 1:
        raise ValueError(f"visual_events and pts_seconds must both be [T], got {visual.shape} and {pts.shape}")
    if not np.isfinite(visual).all():
        raise ValueError(f"visual_events must be finite, got {np.count_nonzero(~np.isfinite(visual))} NaN/inf of "
                         f"{visual.size}, the first at frame {int(np.argmax(~np.isfinite(visual)))}")
    if not np.isfinite(pts).all() or np.any(np.diff(pts) < 0):
        raise ValueError(f"pts_seconds must be finite and non-decreasing (presentation order), got {pts[:5]}"
                         f"{' ...' if pts.size > 5 else ''} ({np.count_nonzero(~np.isfinite(pts))} NaN/inf, "
                         f"{np.count_nonzero(np.diff(pts) < 0)} decreasing steps)")
    selected, num_continuous = _isolated(visual)
    times, strength = _dated_between_frames(visual, pts, selected)
    if strength.size:
        reference = max(_VISUAL_REFERENCE * float(np.percentile(strength, 90)), _VISUAL_REFERENCE_FLOOR)
        weights = np.minimum(1.0, np.sqrt(strength / reference))
    else:
        weights = np.zeros(0)
    return VisualEvents(times, strength, weights, num_continuous)


def _dated_between_frames(visual: np.ndarray, pts: np.ndarray, selected: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each event's time and strength, from the rise around its frame (module diagram).

    A light that comes on between two frames shows in part in the first frame that sees it (the part of that frame's
    exposure it is on) and in full in the next: its rise is split over two frames, and one or both may be selected.
    The event is one, dated at the rise-weighted mean of the pts of its frames (a frame's rise is counted above the
    change around it, :func:`_local_change`): for a frame-long exposure that is when the light came on; on the frame
    grid (all of the rise in one frame) it is that frame's pts. Its strength is the whole rise.
    """
    if selected.size == 0:
        return np.zeros(0), np.zeros(0)
    groups: list[list[int]] = []
    for index in selected.tolist():
        if groups and index - groups[-1][-1] == 1:
            groups[-1].append(index)
        else:
            groups.append([index])
    times, strength = [], []
    for group in groups:
        frames = [f for f in range(group[0] - 1, group[-1] + 2) if 0 < f < visual.size]
        floor = _local_change(visual, group[0], group[-1])
        rise = np.array([visual[f] - floor if (f in group or visual[f] > _SPLIT_SHARE * visual[group].max() + floor)
                         else 0.0 for f in frames])
        rise = np.maximum(rise, 0.0)
        if rise.sum() <= 0:
            rise = np.array([1.0 if f in group else 0.0 for f in frames])
        times.append(float(np.dot(rise, pts[frames]) / rise.sum()))
        strength.append(float(visual[[f for f, r in zip(frames, rise) if r > 0]].sum()))
    return np.asarray(times), np.asarray(strength)


def _local_change(visual: np.ndarray, first: int, last: int) -> float:
    """The change around frames ``first..last`` (median of ±``_ISOLATION_FRAMES``, those frames and one either side left
    out): what a frame's rise is counted above when dating."""
    lo, hi = max(0, first - _ISOLATION_FRAMES), min(visual.size, last + _ISOLATION_FRAMES + 1)
    around = np.concatenate([visual[lo:max(lo, first - 1)], visual[last + 2:hi]])
    return float(np.median(around)) if around.size else 0.0


def _boosted_strength(onsets: AudioOnsets) -> np.ndarray:
    """Detection strength, raised for a tone (``tonal_boost`` of ``tonality_db``, when measured)."""
    strength = onsets.strength
    return strength if onsets.tonality_db is None else strength * tonal_boost(onsets.tonality_db)


def onset_ranks(onsets: AudioOnsets) -> np.ndarray:
    """Rank of each audio event among the clip's events by strength (tonal boost included, as in
    :func:`onset_weights`), as a fraction in (0, 1): ``(i + 0.5) / E`` for the ``i``-th weakest of ``E`` (ties in
    time order). A sound that stands out of its clip (a clap over speech) ranks near 1; a syllable near 0.5.

    Example:
        >>> from aligner.estimators import AudioOnsets
        >>> onset_ranks(AudioOnsets(np.arange(4.0), np.array([2.0, 9.0, 1.0, 3.0]), 5.0)).tolist()
        [0.375, 0.875, 0.125, 0.625]
    """
    boosted = _boosted_strength(onsets)
    order = np.argsort(np.argsort(boosted, kind="stable"), kind="stable")
    return (order + 0.5) / max(boosted.size, 1)


def onset_weights(onsets: AudioOnsets) -> np.ndarray:
    """Weight of each audio event in [0.25, 1]: its detection strength, raised for a tone (``tonal_boost`` of
    ``tonality_db``, when measured), over 1.5 × the clip's median strength."""
    strength = onsets.strength
    if strength.size == 0:
        return strength
    boosted = _boosted_strength(onsets)
    return np.clip(boosted / (_AUDIO_REFERENCE * float(np.median(strength))), 0.25, 1.0)
