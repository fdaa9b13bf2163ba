"""Step 4 of the A/V estimator: pair each visual event with its audio event on the best line, fit offset and drift.

::

    pairs    each visual event's nearest audio event within ±8 ms of the best (lag, drift) line → (t_k, a_j)
    line     Theil–Sen fit  a − t = offset + drift·t  on the pairs (scipy.stats.theilslopes), inliers within
             max(3 ms, 3 · 1.4826 · MAD of the residuals)
    drift    reported when the slope's standard error (inlier residuals, √(n/(n−2)), floor 0.3 ms) is at most
             ``max_drift_se_ppm``; otherwise the offset is the median of a − t over the pairs (the offset at the
             events' centre, which keeps the error smallest over the clip when 0 drift is applied)
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from aligner._av_match import LagDriftMatch
from aligner._onsets import AudioOnsets
from aligner._options import AVOptions
from aligner._stats import line_fit_theil_sen

logger = logging.getLogger(__name__)

__all__ = ["MATCH_SECONDS", "DriftFit", "MatchedPairs", "fit_drift", "matched_pairs"]

MATCH_SECONDS = 0.008
"""A visual event is matched when an audio event lies within this of the best line."""
_RESIDUAL_FLOOR_SECONDS = 0.0003
_MIN_PAIRS_FOR_DRIFT = 4


@dataclass(frozen=True)
class MatchedPairs:
    """Visual events with an audio event near the best line."""

    video_seconds: np.ndarray
    """float64 ``[P]``: the matched visual events' pts (ascending)."""
    audio_seconds: np.ndarray
    """float64 ``[P]``: the audio event each was matched to."""
    offset_ms: float
    """Median of ``audio − video`` over the pairs (ms), or the best line's offset at video time 0 without pairs:
    the unthresholded guess."""

    @property
    def num_matched(self) -> int:
        """``P``."""
        return int(self.video_seconds.size)


@dataclass(frozen=True)
class DriftFit:
    """Offset and drift reported by the estimator."""

    offset_ms: float
    """``av_offset_ms`` at video time 0."""
    drift_ppm: Optional[float]
    """None when no line was fitted or its slope is not resolved."""
    drift_se_ppm: Optional[float]
    """Standard error of the fitted slope; None when no line was fitted."""
    drift_confidence: float
    """In [0, 1]; 0 when ``drift_ppm`` is None."""
    method: str
    """``event_match`` (no line fitted), ``event_match+theil_sen`` or ``event_match+drift_unresolved``."""


def matched_pairs(video_seconds: np.ndarray, onsets: AudioOnsets, match: LagDriftMatch) -> MatchedPairs:
    """Pair each of ``video_seconds`` with the nearest audio event of ``onsets`` when it lies within
    :data:`MATCH_SECONDS` of ``match``'s line. ``onsets`` must not be empty."""
    audio_t = onsets.times_seconds
    num_audio = int(audio_t.size)
    predicted = match.predicted_audio_seconds(video_seconds)
    index = np.clip(np.searchsorted(audio_t, predicted), 1, max(num_audio - 1, 1))
    candidates = np.stack([audio_t[index - 1], audio_t[np.minimum(index, num_audio - 1)]])
    nearest = candidates[np.argmin(np.abs(candidates - predicted[None, :]), axis=0), np.arange(predicted.size)]
    matched = np.abs(nearest - predicted) <= MATCH_SECONDS
    t_m, a_m = video_seconds[matched], nearest[matched]
    offset_ms = (float(np.median(a_m - t_m)) if t_m.size else match.offset_seconds) * 1000.0
    return MatchedPairs(t_m, a_m, offset_ms)


def fit_drift(pairs: MatchedPairs, options: AVOptions) -> DriftFit:
    """Fit ``a − t = offset + drift·t`` on ``pairs`` (module diagram).

    A line is fitted when at least 4 pairs span ``options.min_drift_span_seconds`` (and a nonzero time); the
    drift is reported when its standard error is at most ``options.max_drift_se_ppm``. Otherwise the offset is
    ``pairs.offset_ms`` and the drift None.
    """
    t_m, a_m = pairs.video_seconds, pairs.audio_seconds
    unresolved = DriftFit(pairs.offset_ms, None, None, 0.0, "event_match")
    if pairs.num_matched < _MIN_PAIRS_FOR_DRIFT or not float(np.ptp(t_m)) >= options.min_drift_span_seconds \
            or float(np.ptp(t_m)) <= 0:
        return unresolved
    intercept, slope = line_fit_theil_sen(t_m, a_m - t_m)
    residuals = (a_m - t_m) - (intercept + slope * t_m)
    inliers = np.abs(residuals) <= max(0.003, 3.0 * 1.4826 * float(np.median(np.abs(residuals))))
    t_in, r_in = t_m[inliers], residuals[inliers]
    n = t_in.size
    spread = float(np.sum(np.square(t_in - t_in.mean()))) if n else 0.0
    if n < _MIN_PAIRS_FOR_DRIFT or spread <= 0:
        return unresolved
    rms = math.sqrt(float(np.sum(np.square(r_in))) / (n - 2))
    drift_se_ppm = 1e6 * max(rms, _RESIDUAL_FLOOR_SECONDS) / math.sqrt(spread)
    if drift_se_ppm > options.max_drift_se_ppm:
        return DriftFit(pairs.offset_ms, None, drift_se_ppm, 0.0, "event_match+drift_unresolved")
    drift_confidence = float(min(1.0, n / 8.0) * min(1.0, 2.0 * (1.0 - drift_se_ppm / options.max_drift_se_ppm)))
    return DriftFit(intercept * 1000.0, slope * 1e6, drift_se_ppm, drift_confidence, "event_match+theil_sen")
