"""Step 4 of the A/V estimator: pair each visual event with its audio event on the best line, fit offset and drift.

::

    pairs    each visual event's nearest audio event within ±14 ms of the best (lag, drift) line → (t_k, a_j)
             (the gates count those within ±8 ms: ``MATCH_SECONDS``)
    offset   the 90th percentile of the pairs' a − t (less the fitted slope's part): a light that stays on is seen
             at or after the moment it comes on, so visual dates are mostly late (by up to (1 − shutter) of a frame
             interval for events between frames, ``aligner._av_events``) and the offset is near the top of the
             pairs' spread, not at its median; the top tenth leaves room for the audio dating noise (~1 ms) and a
             stray pair. Not always: under a long exposure a light that comes on early in a frame's exposure leaves
             under ``_SPLIT_SHARE`` of its rise to the next frame and is dated up to 0.3 of an interval early, and
             a light shorter than two frames is dated early too (BENCHMARKS.md, "REPORT38 and REPORT53")
    line     Theil–Sen (scipy.stats.theilslopes) picks the inliers of a − t = offset + drift·t (residual within
             max(3 ms, 3 · 1.4826 · MAD)); weighted least squares on them, each event weighted 1/σ² by its dating
             precision σ = √(σ0² + (k · rise)²) (:func:`dating_sigma_seconds`)
    drift    reported when the slope's standard error (:func:`drift_line`) is at most ``max_drift_se_ppm``;
             otherwise no drift, and the offset is the top of the pairs' spread around the fitted slope at the pairs'
             centre (an imprecise slope still takes its spread out of the pairs; 0 drift applied at the centre keeps
             the error smallest over the clip)

Late dating spreads a clip's pairs over up to a frame interval (10-30 ms under short shutters) around the match's
line, which the 12 ms kernel puts in the middle of that spread: hence the ±14 ms pairing. With the true drift and the
true pairs, the top of the spread is 1.1-1.5 ms from the truth on the sub-frame tune sets (median over clips); the
choice of 14 ms, the 90th percentile and the detrending was made on the four tune sets (BENCHMARKS.md, "Events between
frames: pairs within 14 ms, the top tenth, the spread around the slope").
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

__all__ = ["MATCH_SECONDS", "MIN_PAIRS_FOR_DRIFT", "OFFSET_PAIR_SECONDS", "OFFSET_PERCENTILE", "DriftFit", "MatchedPairs", "dating_sigma_seconds", "drift_line", "fit_drift", "matched_pairs"]

MATCH_SECONDS = 0.008
"""A visual event is matched when an audio event lies within this of the best line (the gates' count)."""
OFFSET_PAIR_SECONDS = 0.014
"""Offset and drift are fitted on the visual events with an audio event within this of the best line (module
diagram). Chosen on the tune sets with :data:`OFFSET_PERCENTILE` from 8, 11, 14 ms (BENCHMARKS.md, "Events between
frames: pairs within 14 ms, the top tenth, the spread around the slope")."""
OFFSET_PERCENTILE = 90.0
"""The offset is this percentile of the pairs' ``audio − video`` (less the fitted slope's part; module diagram:
visual dates are mostly late). Chosen on the tune sets (TUNE, TUNE2 on the frame grid; TUNE43, TUNE51 between frames)
from 70, 80, 90 with :data:`OFFSET_PAIR_SECONDS`, as the smallest worst-set |error| median: against the former 70th
percentile of the pairs within 8 ms, TUNE43 4.2 → 1.7 ms, TUNE51 3.5 → 2.6, TUNE 0.82 → 1.16, TUNE2 0.62 → 1.02
(at 80: 3.4, 2.2, 0.68, 0.75). On the sub-frame sets not tuned on: REPORT43 5.0 → 3.1, REPORT47 3.9 → 3.2,
REPORT49 4.9 → 2.4, an independent generator 4.8 → 3.5, but REPORT53 2.2 → 4.4 (long exposures dated early)."""
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


def matched_pairs(video_seconds: np.ndarray, onsets: AudioOnsets, match: LagDriftMatch, *,
                  window_seconds: float = MATCH_SECONDS) -> MatchedPairs:
    """Pair each of ``video_seconds`` with the nearest audio event of ``onsets`` when it lies within
    ``window_seconds`` of ``match``'s line (:data:`MATCH_SECONDS` for the gates' count, :data:`OFFSET_PAIR_SECONDS`
    for the fit). ``onsets`` must not be empty."""
    audio_t = onsets.times_seconds
    num_audio = int(audio_t.size)
    predicted = match.predicted_audio_seconds(video_seconds)
    index = np.clip(np.searchsorted(audio_t, predicted), 1, max(num_audio - 1, 1))
    neighbours = np.stack([index - 1, np.minimum(index, num_audio - 1)])
    candidates = audio_t[neighbours]
    nearest_index = neighbours[np.argmin(np.abs(candidates - predicted[None, :]), axis=0), np.arange(predicted.size)]
    nearest = audio_t[nearest_index]
    matched = np.abs(nearest - predicted) <= window_seconds
    t_m, a_m = video_seconds[matched], nearest[matched]
    offset_ms = (float(np.percentile(a_m - t_m, OFFSET_PERCENTILE)) if t_m.size else match.offset_seconds) * 1000.0
    return MatchedPairs(t_m, a_m, dating_sigma_seconds(onsets, nearest_index[matched]), offset_ms,
                        onset_ranks(onsets)[nearest_index[matched]])


def fit_drift(pairs: MatchedPairs, options: AVOptions, offset_pairs: Optional[MatchedPairs] = None) -> DriftFit:
    """Fit ``a − t = offset + drift·t`` on ``pairs`` and read the offset on ``offset_pairs`` (module diagram).

    A line is fitted on ``pairs`` (the events matched within :data:`MATCH_SECONDS`) when at least 4 of them span
    ``options.min_drift_span_seconds`` (and a nonzero time); the drift is reported when its standard error is at most
    ``options.max_drift_se_ppm``. The offset is the :data:`OFFSET_PERCENTILE` percentile of ``offset_pairs`` (those
    within :data:`OFFSET_PAIR_SECONDS`, which hold ``pairs``; default ``pairs``) around the line's slope: over the
    whole clip with a reported drift, at the pairs' centre with an unresolved one (the drift None), and
    ``offset_pairs.offset_ms`` without a line.
    """
    offset_pairs = pairs if offset_pairs is None else offset_pairs
    t_m, a_m = pairs.video_seconds, pairs.audio_seconds
    unresolved = DriftFit(offset_pairs.offset_ms, None, None, 0.0, "event_match")
    if pairs.num_matched < MIN_PAIRS_FOR_DRIFT or not float(np.ptp(t_m)) >= options.min_drift_span_seconds \
            or float(np.ptp(t_m)) <= 0:
        return unresolved
    line = drift_line(t_m, a_m - t_m, pairs.dating_sigma_seconds)
    if line is None:
        return unresolved
    intercept, slope, drift_se_ppm, n = line
    t_o, r_o = offset_pairs.video_seconds, offset_pairs.audio_seconds - offset_pairs.video_seconds
    if drift_se_ppm > options.max_drift_se_ppm:
        centre = 0.5 * float(t_m[0] + t_m[-1])
        around = float(np.percentile(r_o - slope * (t_o - centre), OFFSET_PERCENTILE))
        return DriftFit(around * 1000.0, None, drift_se_ppm, 0.0, "event_match+drift_unresolved")
    drift_confidence = float(min(1.0, n / 8.0) * min(1.0, 2.0 * (1.0 - drift_se_ppm / options.max_drift_se_ppm)))
    # The line's slope; its offset near the top of the pairs' spread around it (module diagram), not the fit's mean.
    intercept = float(np.percentile(r_o - slope * t_o, OFFSET_PERCENTILE))
    return DriftFit(intercept * 1000.0, slope * 1e6, drift_se_ppm, drift_confidence, "event_match+theil_sen")
