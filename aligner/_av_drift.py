"""Step 4 of the A/V estimator: pair each visual event with its audio event on the best line, fit offset and drift.

::

    pairs    each visual event's nearest audio event within ±8 ms of the best (lag, drift) line → (t_k, a_j)
    offset   the 70th percentile of the pairs' a − t (less the fitted drift's part): a light is seen at or after the
             moment it comes on, never before, so visual dates are late or exact (late by up to (1 − shutter) of a
             frame interval for events between frames, ``aligner._av_events``) and the offset is near the top of the
             pairs' spread, not at its median; the audio dating noise (~1 ms) sets the top's margin
    line     Theil–Sen (scipy.stats.theilslopes) picks the inliers of a − t = offset + drift·t (residual within
             max(3 ms, 3 · 1.4826 · MAD)); weighted least squares on them, each event weighted 1/σ² by its dating
             precision σ = √(σ0² + (k · rise)²) (:func:`dating_sigma_seconds`)
    drift    reported when the slope's standard error (:func:`drift_line`) is at most ``max_drift_se_ppm``;
             otherwise the offset is the pairs' offset with no drift (at the events' centre, which keeps the error
             smallest over the clip when 0 drift is applied)
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from aligner._av_events import onset_ranks
from aligner._av_match import LagDriftMatch
from aligner._onsets import AudioOnsets
from aligner._options import AVOptions
from aligner._stats import line_fit_theil_sen

logger = logging.getLogger(__name__)

__all__ = ["MATCH_SECONDS", "MIN_PAIRS_FOR_DRIFT", "OFFSET_PERCENTILE", "DriftFit", "MatchedPairs", "dating_sigma_seconds", "drift_line", "fit_drift", "matched_pairs"]

MATCH_SECONDS = 0.008
"""A visual event is matched when an audio event lies within this of the best line."""
OFFSET_PERCENTILE = 70.0
"""The offset is this percentile of the matched pairs' ``audio − video`` (module diagram: visual dates are never
early). Chosen on the tune sets as the highest of 50, 70, 80, 90 that leaves no tune set's |error| median worse than
the median's (BENCHMARKS.md, "Events between frames: the offset near the top of the pairs"): TUNE43 6.8 -> 4.2 ms,
TUNE 0.85 -> 0.82, TUNE2 0.81 -> 0.62 (80: 3.1, 1.14, 0.76)."""
MIN_PAIRS_FOR_DRIFT = 4
"""Matched A/V events a drift line needs (fewer: ``event_match`` with no drift)."""
# Dating precision of an audio event: sqrt(sigma0^2 + (k * rise)^2); measurements in BENCHMARKS.md ("Lab notes").
_DATING_SIGMA0_SECONDS = 0.00075
_DATING_RISE_FACTOR = 0.45
# Floor of the residual scale over the sigma model (the former 0.3 ms residual floor over sigma0).
_SCALE_FLOOR = 0.4


@dataclass(frozen=True)
class MatchedPairs:
    """Visual events with an audio event near the best line."""

    video_seconds: np.ndarray
    """float64 ``[P]``: the matched visual events' pts (ascending)."""
    audio_seconds: np.ndarray
    """float64 ``[P]``: the audio event each was matched to."""
    dating_sigma_seconds: np.ndarray
    """float64 ``[P]``: expected dating error of each matched audio event (:func:`dating_sigma_seconds`)."""
    offset_ms: float
    """The :data:`OFFSET_PERCENTILE` percentile of ``audio − video`` over the pairs (ms), or the best line's offset at
    video time 0 without pairs: the unthresholded guess."""
    audio_rank: np.ndarray
    """float64 ``[P]`` in (0, 1): each matched audio event's rank by strength among the clip's audio events
    (``onset_ranks``)."""

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


def dating_sigma_seconds(onsets: AudioOnsets, index: np.ndarray) -> np.ndarray:
    """Expected dating error of audio events ``index``: ``√(σ0² + (k · rise)²)``, σ0 = 0.75 ms, k = 0.45.

    The back-extrapolated start of a soft attack is off by an amount that depends on its shape, so events with a
    long rising edge (``rise_seconds``, 20 % → 50 %) are dated less precisely. Equal (σ0) without ``rise_seconds``.
    """
    if onsets.rise_seconds is None:
        return np.full(np.asarray(index).shape, _DATING_SIGMA0_SECONDS)
    rise = onsets.rise_seconds[index]
    return np.sqrt(_DATING_SIGMA0_SECONDS ** 2 + np.square(_DATING_RISE_FACTOR * rise))


def drift_line(t: np.ndarray, r: np.ndarray, sigma: np.ndarray) -> Optional[tuple[float, float, float, int]]:
    """Line ``r ≈ intercept + slope·t`` through matched events (``r`` = audio − video time), with the slope's
    standard error: ``(intercept, slope, slope_se_ppm, inliers)``, or None with fewer than 4 inliers.

    Theil–Sen picks the inliers (residual ≤ max(3 ms, 3 robust SD)); weighted least squares on them (weight
    1/σ²) gives the line and ``se = s · √(1 / Σ w (t − t̄_w)²)`` with ``s = max(0.4, √(Σ w·res² / (n − 2)))``
    (the residuals scale the σ model).
    """
    intercept, slope = line_fit_theil_sen(t, r)
    residuals = r - (intercept + slope * t)
    inliers = np.abs(residuals) <= max(0.003, 3.0 * 1.4826 * float(np.median(np.abs(residuals))))
    t_in, r_in, w = t[inliers], r[inliers], 1.0 / np.square(sigma[inliers])
    n = int(t_in.size)
    if n < MIN_PAIRS_FOR_DRIFT:
        return None
    t_bar = float(np.sum(w * t_in) / np.sum(w))
    sxx = float(np.sum(w * np.square(t_in - t_bar)))
    if not sxx > 0:
        return None
    slope = float(np.sum(w * (t_in - t_bar) * r_in) / sxx)
    intercept = float(np.sum(w * r_in) / np.sum(w)) - slope * t_bar
    chi2 = float(np.sum(w * np.square(r_in - intercept - slope * t_in))) / (n - 2)
    se_ppm = 1e6 * max(math.sqrt(chi2), _SCALE_FLOOR) / math.sqrt(sxx)
    return intercept, slope, se_ppm, n


def matched_pairs(video_seconds: np.ndarray, onsets: AudioOnsets, match: LagDriftMatch) -> MatchedPairs:
    """Pair each of ``video_seconds`` with the nearest audio event of ``onsets`` when it lies within
    :data:`MATCH_SECONDS` of ``match``'s line. ``onsets`` must not be empty."""
    audio_t = onsets.times_seconds
    num_audio = int(audio_t.size)
    predicted = match.predicted_audio_seconds(video_seconds)
    index = np.clip(np.searchsorted(audio_t, predicted), 1, max(num_audio - 1, 1))
    neighbours = np.stack([index - 1, np.minimum(index, num_audio - 1)])
    candidates = audio_t[neighbours]
    nearest_index = neighbours[np.argmin(np.abs(candidates - predicted[None, :]), axis=0), np.arange(predicted.size)]
    nearest = audio_t[nearest_index]
    matched = np.abs(nearest - predicted) <= MATCH_SECONDS
    t_m, a_m = video_seconds[matched], nearest[matched]
    offset_ms = (float(np.percentile(a_m - t_m, OFFSET_PERCENTILE)) if t_m.size else match.offset_seconds) * 1000.0
    return MatchedPairs(t_m, a_m, dating_sigma_seconds(onsets, nearest_index[matched]), offset_ms,
                        onset_ranks(onsets)[nearest_index[matched]])


def fit_drift(pairs: MatchedPairs, options: AVOptions) -> DriftFit:
    """Fit ``a − t = offset + drift·t`` on ``pairs`` (module diagram).

    A line is fitted when at least 4 pairs span ``options.min_drift_span_seconds`` (and a nonzero time); the
    drift is reported when its standard error is at most ``options.max_drift_se_ppm``. Otherwise the offset is
    ``pairs.offset_ms`` and the drift None.
    """
    t_m, a_m = pairs.video_seconds, pairs.audio_seconds
    unresolved = DriftFit(pairs.offset_ms, None, None, 0.0, "event_match")
    if pairs.num_matched < MIN_PAIRS_FOR_DRIFT or not float(np.ptp(t_m)) >= options.min_drift_span_seconds \
            or float(np.ptp(t_m)) <= 0:
        return unresolved
    line = drift_line(t_m, a_m - t_m, pairs.dating_sigma_seconds)
    if line is None:
        return unresolved
    intercept, slope, drift_se_ppm, n = line
    if drift_se_ppm > options.max_drift_se_ppm:
        return DriftFit(pairs.offset_ms, None, drift_se_ppm, 0.0, "event_match+drift_unresolved")
    drift_confidence = float(min(1.0, n / 8.0) * min(1.0, 2.0 * (1.0 - drift_se_ppm / options.max_drift_se_ppm)))
    # The line's slope; its offset near the top of the pairs' spread around it (module diagram), not the fit's mean.
    intercept = float(np.percentile((a_m - t_m) - slope * t_m, OFFSET_PERCENTILE))
    return DriftFit(intercept * 1000.0, slope * 1e6, drift_se_ppm, drift_confidence, "event_match+theil_sen")
