"""A/V offset and clock drift from content: visual events matched to dated audio events, no model weights.

Clock model (DESIGN.md): a sound that belongs to video time ``t`` is heard at audio time::

    a = t * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000          (av_offset_ms > 0: audio lags)

Method::

    video   frames ─► background_rise (block brightening over the previous frame and the recent
                      background, steady motion removed) ─► events t_k = pts[k] (real pts, VFR-safe)
            an event must be isolated: ≥ 4× the 90th percentile of the change around it (±15 frames);
            a mouth or region whose brightness follows the speech envelope changes every few frames by
            similar amounts, correlates with the audio, and is not an event (``continuous_motion``)
    audio   samples ─► audio_onsets: events dated at the start of their rise (any attack shape) ─► a_j
    match   G(x) = max_j exp(−(x − a_j)² / 2σ²)     σ = 2.5 ms and 6 ms: how close an audio event is to x
            c(L, d) = Σ_k w_k G(t_k + L + d·(t_k − t_c))  L: lag at the events' centre t_c, d: drift
            over L ∈ ±max_offset_ms (1 ms) and d ∈ ±max_drift_ppm (steps keep d·span/2 ≤ σ);
            c counts the visual events that have an audio event where the lag puts them, each weighted
            w_k = min(1, √(strength_k / (0.5 · 90th percentile of the clip's event strengths))): weak
            "events" beside strong flashes are mostly motion; audio events weigh min(1, s / (1.5 · median z)),
            s = detection z × 2^((tonality − 25 dB) / 6 dB): a tone that starts under speech counts like a clap
    score   match significance S = −log10 P(≥ c(peak) of n events match at one lag by chance) − log10(cells)
            (binomial tail, n = Σ w_k; chance rate = mean of c over all cells / n; cells = lags × drifts / 6σ);
            the larger of the two kernels' significances is the score (events dated 3-8 ms apart earn it at
            6 ms, paying for its higher chance rate; the null threshold is calibrated on this maximum);
            "5.0 of 5 visual events matched at the best lag, 0.9 by chance: significance 2.7"
            peak_to_sidelobe = c(peak) / max(1, max c outside ±(20 ms + max_drift·span/2) of the peak lag);
            a second lag with ≥ 0.8 of the peak's matches is ambiguous (periodic content): abstain
    refine  each visual event's nearest audio event within ±8 ms of the peak line → (t_k, a_j);
            Theil–Sen picks inliers of the line a − t = offset + drift·t; weighted least squares on them,
            each event weighted by its dating precision (1/σ², σ growing with its rise time, see
            ``_drift_line``); drift reported when the slope's standard error is ≤ ``max_drift_se_ppm``; otherwise drift is None
            and the offset is the median of a_j − t_k (the offset at the events' centre, which keeps
            the error smallest over the clip when 0 drift is applied)

Confidence, calibrated against null pairings: ``NULL_THRESHOLD`` is the match significance that at most
1 % of null pairings reach. Derivation (``avalign bench align --calibrate``): tune set only
(``avalign.synth.wild_specs(TUNE_SEEDS)``, 24 clips: the mouth leading its speech by 0-40 ms; on about half the
clips speech over the whole clip with tone beeps under it, soft attacks, clicks; a white noise floor; a scrolling
texture); every ordered pair (video of clip i, audio of clip j), i ≠ j: 552 null pairings; with audio events
weighted by tonality and tonal rises detected (``aligner._onsets``) their significance has 99th percentile 0.604
and maximum 1.20; the threshold is the 99th percentile rounded up to a multiple of 0.1: 0.7 (the same tune
clips without the tonal measure: 0.64 → 0.7, and 16 instead of 19 of 21 event clips answered). Earlier
generator (no speech over the events): 0.45 → 0.5. The held-out set (``HELDOUT_SEEDS``) was never used.
``confidence`` maps the significance linearly: 0.3 at ``NULL_THRESHOLD``, 1.0 four decades above it, 0 two
decades below it; the default ``min_confidence = 0.3`` answers exactly when the significance reaches the
null threshold.

Every abstention carries an :class:`AVAbstain` that names what was looked for, what was found, the best
unthresholded guess and what the user can do. Talking heads and scenes without sudden events give no
datable event (``continuous_motion``, ``no_visual_events`` or ``below_null_threshold``): lip-sync is not
estimated (issue #12, item 6: landmark models gave no sharper true pairing than wrong-audio pairings). Without
the isolation test a mouth box leading its speech by 0-40 ms gave 40-50 weak "events" that matched the audio
36-45 ms from the truth, above the null threshold (an independent evaluator's no-event clips).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from aligner._onsets import AudioOnsets, audio_onsets, tonal_boost
from aligner._signals import VisualFeature, visual_change_events
from avcore import AudioClip, VideoClip

logger = logging.getLogger(__name__)

__all__ = [
    "AVAbstain",
    "AVEstimate",
    "NULL_THRESHOLD",
    "estimate_av_offset",
    "estimate_av_offset_from_arrays",
    "estimate_av_offset_from_features",
]

NULL_THRESHOLD = 0.7
"""Match significance reached by at most 1 % of null pairings on the tune set (see module docstring)."""
_SIGMA_SECONDS = 0.0025
# Kernel widths tried; the score is the larger significance (a clip whose events are dated a few ms apart
# earns it at the wider kernel, paying for the wider kernel's higher chance rate).
_SIGMAS_SECONDS = (0.0025, 0.006)
_MATCH_SECONDS = 0.008
_WEIGHT_REFERENCE = 1.5
# A second lag matching this share of the best one's events: periodic events, the peak is a guess.
_AMBIGUOUS_RATIO = 0.8
# Visual event weight: sqrt(strength / (this x the 90th percentile of the clip's event strengths)), at most 1.
_VISUAL_REFERENCE = 0.5
_MIN_EVENTS = 3
_MIN_VISUAL_LEVEL = 4.0  # luma levels: weaker "events" are codec flicker, not datable
# An event must be this many times the 90th percentile of the change around it (±15 frames): on the tune set
# every true flash had a ratio >= 8 (1st percentile 9), the mouth's envelope-following changes a median of 2.3.
_ISOLATION = 4.0
_ISOLATION_FRAMES = 15
_ISOLATION_FLOOR = 0.5  # luma: a still neighbourhood does not make a weak change an event by itself
_DATING_SIGMA0_SECONDS = 0.00075
_DATING_RISE_FACTOR = 0.45
_SCALE_FLOOR = 0.4


@dataclass(frozen=True)
class AVAbstain:
    """Why the A/V estimator gave no offset, in words a user can act on (``measure --json``: ``av_abstain``)."""

    reason: str
    """Machine-readable reason: ``no_visual_events``, ``continuous_motion``, ``too_few_events``, ``no_audio_events``,
    ``below_null_threshold``, ``ambiguous_peak``, ``too_few_matches`` or ``peak_at_search_edge``."""
    found: str
    """What was found, e.g. ``"2 visual events"`` or ``"peak 2.1x sidelobe (7 of 9 events matched)"``."""
    needed: str
    """What an answer needs, e.g. ``"3 visual events"`` or ``"null threshold 3.0x"``."""
    best_guess_ms: Optional[float]
    """The unthresholded estimate of ``av_offset_ms`` (None when there was nothing to correlate)."""
    hint: str
    """What the user can do."""

    def to_json(self) -> dict:
        """``{reason, found, needed, best_guess_ms, hint}``."""
        return {"reason": self.reason, "found": self.found, "needed": self.needed,
                "best_guess_ms": None if self.best_guess_ms is None else round(float(self.best_guess_ms), 3),
                "hint": self.hint}


_KNOWN = ("If you know the offset, pass it: `avalign measure --av-offset-ms MS` (Python: "
          "`align(av_offset_ms=...)`).")
_HINTS = {
    "no_visual_events": "the video has no sudden brightening (flash, light, cut): content alignment needs events seen "
                        "and heard together (a clapperboard, a hand clap in view); talking heads and steady motion have "
                        "none. " + _KNOWN,
    "continuous_motion": "the picture changes continuously (a mouth or another region whose brightness follows the speech, "
                         "moving objects), not in sudden, isolated events: that is lip-sync territory, which is not "
                         "estimated. Content alignment needs a few flashes or claps seen and heard together. " + _KNOWN,
    "too_few_events": "fewer than 3 visual events cannot be told from chance coincidences; use a longer clip with more "
                      "flashes/claps. " + _KNOWN,
    "no_audio_events": "the audio has no sound that starts suddenly (clap, knock, beep); content alignment is not "
                       "possible. " + _KNOWN,
    "below_null_threshold": "visual events were found, but too few of them have a sound starting at the same lag to rule "
                            "out chance (another clip's audio reaches this score in 1 % of tries); best_guess_ms may be "
                            "right but is not trusted. Events hidden under loud speech or music, or flashes without a "
                            "sound, cause this. " + _KNOWN,
    "ambiguous_peak": "two lags match the events almost equally well (periodic flashes or sounds?); "
                      "best_guess_ms may be off by the period. " + _KNOWN,
    "too_few_matches": "fewer than 3 visual events have an audio event at the best lag; check that the events make a "
                       "sound. " + _KNOWN,
    "peak_at_search_edge": "the best lag is at the edge of the search range: the true offset may be larger; retry with "
                           "a larger range (`avalign measure --max-offset-ms MS`; Python: `align(max_offset_ms=...)`).",
}


@dataclass(frozen=True)
class AVEstimate:
    """Estimated A/V clock relation ``a = t·(1 + drift_ppm·1e-6) + av_offset_ms/1000``."""

    av_offset_ms: Optional[float]
    """Audio lag behind video at video time 0 (ms, > 0 audio late); None when the estimator abstains."""
    drift_ppm: Optional[float]
    """Audio clock rate error (ppm); None when abstaining or when the clip cannot resolve it (apply 0 then)."""
    confidence: float
    """In [0, 1]: 0.3 at the null threshold, 1.0 at twice it (see module docstring)."""
    num_events: int
    """Visual events used (frames whose brightening stands out)."""
    method: str
    """How the value was obtained (``event_match+theil_sen``, ``event_match``) or ``abstain:<reason>``."""
    drift_confidence: float = 0.0
    """Confidence in ``drift_ppm`` in [0, 1]; 0.0 when drift is not reported."""
    num_matched: int = 0
    """Visual events with an audio event within ±8 ms of the fitted line."""
    num_audio_events: int = 0
    """Dated audio events in the clip."""
    score: float = 0.0
    """Match significance at the best (lag, drift): ``−log10`` of the chance of matching that many visual
    events at one lag, minus ``log10`` of the lags × drifts tried (the scale of ``null_threshold``)."""
    peak_to_sidelobe: float = 0.0
    """Matched events at the best lag over those at the best other lag outside its neighbourhood (>= 1 event)."""
    drift_se_ppm: Optional[float] = None
    """Standard error of the fitted slope (ppm); None when no line was fitted."""
    peak_matches: float = 0.0
    """Visual events matched at the best (lag, drift), counted fuzzily (an event 1σ off counts 0.61)."""
    sidelobe_matches: float = 0.0
    """The most events matched at any lag outside the peak's neighbourhood (any drift)."""
    chance_matches: float = 0.0
    """Events matched on average over all (lag, drift) tried: what chance gives."""
    lag_curve_ms: tuple[float, ...] = ()
    """Offsets tried (ms, at video time 0, at the best drift), for plotting; empty when nothing was correlated."""
    lag_curve_score: tuple[float, ...] = ()
    """Match significance at each of ``lag_curve_ms`` (the ``score`` scale, comparable to ``null_threshold``)."""
    null_threshold: float = NULL_THRESHOLD
    """Calibrated threshold on the ``score`` / ``lag_curve_score`` scale (at most 1 % of tune-set null pairings reach it)."""
    abstain: Optional[AVAbstain] = None
    """Why no offset was given (None when answering)."""

    @property
    def abstained(self) -> bool:
        """True when no offset is reported."""
        return self.av_offset_ms is None

    def __repr__(self) -> str:
        return (f"AVEstimate(av_offset_ms={self.av_offset_ms}, drift_ppm={self.drift_ppm}, confidence={self.confidence:.2f}, "
                f"num_events={self.num_events}, num_matched={self.num_matched}, peak_to_sidelobe={self.peak_to_sidelobe:.2f}, "
                f"score={self.score:.2f}, method={self.method!r}, lag_curve=[{len(self.lag_curve_ms)}])")


def _abstain(reason: str, *, found: str, needed: str, best_guess_ms: Optional[float] = None, **fields) -> AVEstimate:
    record = AVAbstain(reason, found, needed, best_guess_ms, _HINTS[reason])
    logger.info("A/V offset estimation abstains: %s (found %s, need %s)", reason, found, needed)
    return AVEstimate(av_offset_ms=None, drift_ppm=None, method=f"abstain:{reason}", abstain=record,
                      **{"confidence": 0.0, "num_events": 0, **fields})


def confidence_from_score(score: float, null_threshold: float = NULL_THRESHOLD) -> float:
    """0.3 at ``null_threshold``, 1.0 at ``null_threshold + 4`` (four more decades of significance), 0.0 at
    ``null_threshold − 2``; linear in between."""
    if score < null_threshold:
        return float(max(0.0, 0.3 * (1.0 - (null_threshold - score) / 2.0)))
    return float(min(1.0, 0.3 + 0.7 * (score - null_threshold) / 4.0))


def _parabolic(curve: np.ndarray, index: int) -> float:
    """Sub-sample peak position near ``index`` by fitting a parabola through three points (text estimator uses it)."""
    if index <= 0 or index >= curve.size - 1:
        return float(index)
    left, centre, right = curve[index - 1], curve[index], curve[index + 1]
    denominator = left - 2.0 * centre + right
    if denominator >= 0:
        return float(index)
    return float(index) + float(np.clip(0.5 * (left - right) / denominator, -0.5, 0.5))


def _robust_z(value: float, background: np.ndarray) -> float:
    """Robust z-score of ``value`` against ``background`` (median, 1.4826·MAD; text estimator uses it)."""
    centre = float(np.median(background))
    spread = 1.4826 * float(np.median(np.abs(background - centre)))
    spread = max(spread, 1e-3 * float(np.std(background)), 1e-12)
    return (value - centre) / spread


def _theil_sen(times: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Robust line fit ``values ≈ intercept + slope·times``: median of pairwise slopes."""
    i, j = np.triu_indices(times.size, k=1)
    dt = times[j] - times[i]
    keep = dt > 1e-9
    slope = float(np.median((values[j] - values[i])[keep] / dt[keep])) if keep.any() else 0.0
    intercept = float(np.median(values - slope * times))
    return intercept, slope


def dating_sigma_seconds(onsets: AudioOnsets, index: np.ndarray) -> np.ndarray:
    """Expected dating error of audio events ``index``: ``√(σ0² + (k · rise)²)``, σ0 = 0.75 ms, k = 0.45.

    The back-extrapolated start of a soft attack is off by an amount that depends on its shape, so events with a
    long rising edge (``rise_seconds``, 20 % → 50 %) are dated less precisely. Tune set, previous generator (158 events matched within
    8 ms): error SD 0.75 ms for rises under 2 ms, 1.7-2.7 ms for 2-8 ms, 2.5-3.7 ms above. Equal (σ0) without
    ``rise_seconds``.
    """
    if onsets.rise_seconds is None:
        return np.full(np.asarray(index).shape, _DATING_SIGMA0_SECONDS)
    rise = onsets.rise_seconds[index]
    return np.sqrt(_DATING_SIGMA0_SECONDS ** 2 + np.square(_DATING_RISE_FACTOR * rise))


def _drift_line(t: np.ndarray, r: np.ndarray, sigma: np.ndarray) -> Optional[tuple[float, float, float, int]]:
    """Line ``r ≈ intercept + slope·t`` through matched events (``r`` = audio − video time), with the slope's
    standard error: ``(intercept, slope, slope_se_ppm, inliers)``, or None with fewer than 4 inliers.

    Theil–Sen picks the inliers (residual ≤ max(3 ms, 3 robust SD)); weighted least squares on them (weight
    1/σ², σ from :func:`dating_sigma_seconds`) gives the line and ``se = s · √(1 / Σ w (t − t̄_w)²)`` with
    ``s = max(0.4, √(Σ w·res² / (n − 2)))`` (the residuals scale the σ model; 0.4: the old 0.3 ms floor over σ0).
    Before (equal weights, residual RMS): soft attacks' dating errors (+2-5 ms) swamped the sharp events' (< 1 ms),
    and a 31 s clip with 16 events had an SE of 60-75 ppm, just over the limit.
    """
    intercept, slope = _theil_sen(t, r)
    residuals = r - (intercept + slope * t)
    inliers = np.abs(residuals) <= max(0.003, 3.0 * 1.4826 * float(np.median(np.abs(residuals))))
    t_in, r_in, w = t[inliers], r[inliers], 1.0 / np.square(sigma[inliers])
    n = int(t_in.size)
    if n < 4:
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


def _onset_weights(onsets: AudioOnsets) -> np.ndarray:
    """Weight of each audio event in [0.25, 1]: its detection strength, raised for a tone (``tonal_boost``),
    relative to the clip's typical event (1.5 × the median strength)."""
    strength = onsets.strength
    if strength.size == 0:
        return strength
    boosted = strength if onsets.tonality_db is None else strength * tonal_boost(onsets.tonality_db)
    return np.clip(boosted / (_WEIGHT_REFERENCE * float(np.median(strength))), 0.25, 1.0)


def _proximity(onsets: np.ndarray, weights: np.ndarray, lo: float, hi: float, step: float,
               sigma: float) -> tuple[np.ndarray, float]:
    """``G`` on a grid of ``step`` from ``lo``: max over onsets of weight × a Gaussian of width ``sigma``."""
    size = int(math.ceil((hi - lo) / step)) + 2
    grid = np.zeros(size)
    reach = int(math.ceil(4 * sigma / step))
    offsets = np.arange(-reach, reach + 1)
    for a, w in zip(onsets, weights):
        centre = (a - lo) / step
        index = int(round(centre)) + offsets
        keep = (index >= 0) & (index < size)
        values = w * np.exp(-0.5 * np.square((index[keep] - centre) * step / sigma))
        grid[index[keep]] = np.maximum(grid[index[keep]], values)
    return grid, lo


def _select_events(visual: np.ndarray) -> tuple[np.ndarray, int]:
    """Frames whose brightening is a sudden, discrete event: ``(indices, num_continuous)``.

    A candidate must stand out of the clip (``> max(0.1 · peak, median + 6 · MAD, 4 luma)``) and of its own
    neighbourhood: at least ``_ISOLATION`` times the 90th percentile of the change entering the frames within
    ±``_ISOLATION_FRAMES`` (its own ±2 frames left out). A mouth or any region whose brightness follows the
    speech envelope changes every few frames by similar amounts: its candidates are not isolated and are
    counted in ``num_continuous`` instead (continuous motion, e.g. lip movement: not datable).
    """
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


def _significance(matches: np.ndarray, num_events: float, chance: float, num_cells: float) -> np.ndarray:
    """``−log10`` of the chance of matching at least ``matches`` of ``num_events`` events at one lag (binomial
    tail with the clip's own chance rate ``chance / num_events``), minus ``log10(num_cells)`` lags × drifts tried."""
    from scipy.special import betainc

    p = float(np.clip(chance / max(num_events, 1), 1e-4, 0.999))
    x = np.clip(np.asarray(matches, dtype=np.float64), 1e-6, num_events)
    tail = betainc(x, num_events - x + 1.0, p)
    return -np.log10(np.maximum(tail, 1e-300)) - math.log10(max(num_cells, 1.0))


def _check_options(max_offset_ms: float, min_confidence: float, max_drift_ppm: float, max_drift_se_ppm: float) -> None:
    if not (0 < max_offset_ms <= 10_000):
        raise ValueError(f"max_offset_ms must be in (0, 10000], got {max_offset_ms = }")
    if not (0.0 <= min_confidence <= 1.0):
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence = }")
    if not (0.0 <= max_drift_ppm <= 20_000):
        raise ValueError(f"max_drift_ppm must be in [0, 20000], got {max_drift_ppm = }")
    if not max_drift_se_ppm > 0:
        raise ValueError(f"max_drift_se_ppm must be > 0, got {max_drift_se_ppm = }; 60 suits most clips")


def estimate_av_offset_from_features(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    onsets: AudioOnsets,
    *,
    max_offset_ms: float = 500.0,
    min_confidence: float = 0.3,
    max_drift_ppm: float = 1500.0,
    max_drift_se_ppm: float = 60.0,
    min_drift_span_seconds: float = 4.0,
    null_threshold: float = NULL_THRESHOLD,
) -> AVEstimate:
    """Estimate offset and drift from cached features (the core of :func:`estimate_av_offset`).

    Args:
        visual_events: float ``[T]`` >= 0, change entering each frame (see ``visual_change_events``).
        pts_seconds: float ``[T]``, each frame's real presentation time (video timeline).
        onsets: dated audio events (see ``aligner._onsets.audio_onsets``), on the audio presentation timeline.
        max_offset_ms: search range ``[-max_offset_ms, +max_offset_ms]`` (at the events' centre).
        min_confidence: abstain below this confidence (0.3 = the null threshold).
        max_drift_ppm: drift search range ``±max_drift_ppm``.
        max_drift_se_ppm: drift is reported only when the slope's standard error is at most this.
        min_drift_span_seconds: matched events must span this long for drift to be fitted.
        null_threshold: peak-to-sidelobe ratio mapped to confidence 0.3 (default: calibrated, see module docstring).

    Returns:
        An :class:`AVEstimate`; when abstaining, ``abstain`` says why.
    """
    _check_options(max_offset_ms, min_confidence, max_drift_ppm, max_drift_se_ppm)
    visual = np.asarray(visual_events, dtype=np.float64)
    pts = np.asarray(pts_seconds, dtype=np.float64)
    if visual.shape != pts.shape or visual.ndim != 1:
        raise ValueError(f"visual_events and pts_seconds must both be [T], got {visual.shape} and {pts.shape}")
    selected, num_continuous = _select_events(visual)
    num_events, num_audio = int(selected.size), int(onsets.times_seconds.size)
    common = dict(num_events=num_events, num_audio_events=num_audio, null_threshold=null_threshold)
    if num_events < _MIN_EVENTS and num_continuous >= _MIN_EVENTS:
        return _abstain("continuous_motion",
                        found=f"{num_events} isolated visual events; {num_continuous} brightenings within continuous "
                              f"change (e.g. a mouth following the speech)",
                        needed=f"{_MIN_EVENTS} isolated visual events (flashes, claps in view)", **common)
    if num_events == 0:
        return _abstain("no_visual_events", found="0 visual events (no frame brightens suddenly)",
                        needed=f"{_MIN_EVENTS} visual events", **common)
    if num_audio == 0:
        return _abstain("no_audio_events", found="0 audio events", needed=f"{_MIN_EVENTS} audio events", **common)

    event_t = pts[selected]
    strength = visual[selected]
    # Weak "events" beside strong ones are mostly motion (objects, mouths): they count less.
    event_w = np.minimum(1.0, np.sqrt(strength / (_VISUAL_REFERENCE * float(np.percentile(strength, 90)))))
    weight_total = float(event_w.sum())
    centre_t = 0.5 * (float(event_t[0]) + float(event_t[-1]))
    half_span = 0.5 * float(event_t[-1] - event_t[0])
    step = 0.001
    half_lags = int(math.ceil(max_offset_ms / 1000.0 / step))
    lags = np.arange(-half_lags, half_lags + 1) * step
    drift_step = 2.0 * _SIGMA_SECONDS / half_span if half_span > 0 else math.inf
    num_drift = int(math.floor(max_drift_ppm * 1e-6 / drift_step)) if math.isfinite(drift_step) else 0
    drifts = np.arange(-num_drift, num_drift + 1) * drift_step if num_drift > 0 else np.zeros(1)
    reach = max_offset_ms / 1000.0 + max_drift_ppm * 1e-6 * half_span + 0.05
    weights = _onset_weights(onsets)
    best = None
    for sigma in _SIGMAS_SECONDS:
        grid, grid_lo = _proximity(onsets.times_seconds, weights, float(event_t[0]) - reach, float(event_t[-1]) + reach,
                                   step / 2, sigma)
        surface = np.empty((drifts.size, lags.size))
        for row, drift in enumerate(drifts):
            # positions[k, l] on the half-ms grid of G (linear interpolation).
            positions = (event_t + drift * (event_t - centre_t) - grid_lo)[:, None] / (step / 2) + lags[None, :] / (step / 2)
            base = np.clip(np.floor(positions).astype(np.int64), 0, grid.size - 2)
            frac = np.clip(positions - base, 0.0, 1.0)
            surface[row] = event_w @ (grid[base] * (1.0 - frac) + grid[base + 1] * frac)
        cell = np.unravel_index(int(np.argmax(surface)), surface.shape)
        chance_here = float(surface.mean())
        curve_here = _significance(surface[cell[0]], weight_total, chance_here, surface.size / (6.0 * sigma / step))
        if best is None or curve_here[cell[1]] > best[0]:
            best = (float(curve_here[cell[1]]), surface, cell, chance_here, curve_here)
    score, surface, (best_d, best_l), chance, curve = best
    exclusion = int(math.ceil((0.02 + max_drift_ppm * 1e-6 * half_span) / step))
    outside = np.abs(np.arange(lags.size) - best_l) > exclusion
    sidelobe = float(surface[:, outside].max()) if outside.any() else 0.0
    peak = float(surface[best_d, best_l])
    drift0 = float(drifts[best_d])
    # Offsets at video time 0: a = t + L + d (t - t_c)  →  offset = L − d·t_c.
    curve_ms = tuple(float(v) for v in np.round((lags - drift0 * centre_t) * 1000.0, 3))
    common.update(score=score, peak_to_sidelobe=peak / max(sidelobe, 1.0), peak_matches=peak, sidelobe_matches=sidelobe,
                  chance_matches=chance, lag_curve_ms=curve_ms, lag_curve_score=tuple(float(v) for v in np.round(curve, 4)))

    # Refine on matched pairs.
    predicted = event_t * (1.0 + drift0) - drift0 * centre_t + lags[best_l]
    index = np.clip(np.searchsorted(onsets.times_seconds, predicted), 1, max(num_audio - 1, 1))
    neighbours = np.stack([index - 1, np.minimum(index, num_audio - 1)])
    candidates = onsets.times_seconds[neighbours]
    nearest_index = neighbours[np.argmin(np.abs(candidates - predicted[None, :]), axis=0), np.arange(predicted.size)]
    nearest = onsets.times_seconds[nearest_index]
    matched = np.abs(nearest - predicted) <= _MATCH_SECONDS
    t_m, a_m = event_t[matched], nearest[matched]
    num_matched = int(matched.sum())
    guess_offset = (float(np.median(a_m - t_m)) if num_matched else lags[best_l] - drift0 * centre_t) * 1000.0
    confidence = confidence_from_score(score, null_threshold)
    common.update(num_matched=num_matched, confidence=confidence)
    if best_l < 2 or best_l > lags.size - 3:
        return _abstain("peak_at_search_edge", found=f"best lag {curve_ms[best_l]:+.0f} ms at the edge",
                        needed=f"a peak inside ±{max_offset_ms:.0f} ms", best_guess_ms=guess_offset, **common)
    if num_events < _MIN_EVENTS:
        confidence = 0.0  # one or two coincidences prove nothing, however sharp
        common["confidence"] = 0.0
    # The gates below apply when a threshold is asked for; min_confidence = 0 returns the best guess.
    gates = [
        (num_events < _MIN_EVENTS, "too_few_events", f"{num_events} visual event{'s' * (num_events != 1)}",
         f"{_MIN_EVENTS} visual events"),
        (confidence < min_confidence, "below_null_threshold",
         f"{num_events} visual events, {num_audio} audio events; at the best lag {num_matched} visual events have a "
         f"sound within {_MATCH_SECONDS * 1000:.0f} ms (weighted by strength: {peak:.1f} of {weight_total:.1f}; "
         f"chance alone gives {chance:.1f}): score {score:.2f}"
         + (f"; {num_continuous} brightenings within continuous change ignored" if num_continuous else ""),
         f"score {null_threshold:.2f} (reached by 1 % of wrong-audio pairings; confidence {min_confidence:.2f})"),
        (sidelobe > _AMBIGUOUS_RATIO * peak, "ambiguous_peak",
         f"{peak:.1f} events matched at the best lag, {sidelobe:.1f} at another",
         f"a best lag matching at least {1 / _AMBIGUOUS_RATIO:.2f}x more events than any other"),
        (num_matched < _MIN_EVENTS, "too_few_matches", f"{num_matched} of {num_events} visual events matched an audio event",
         f"{_MIN_EVENTS} matched events"),
    ]
    for failed, reason, found, needed in gates:
        if failed and min_confidence > 0.0:
            return _abstain(reason, found=found, needed=needed, best_guess_ms=guess_offset, **common)

    offset_seconds, drift_ppm, drift_se_ppm, drift_confidence = guess_offset / 1000.0, None, None, 0.0
    method = "event_match"
    if num_matched >= 4 and float(np.ptp(t_m)) >= min_drift_span_seconds:
        line = _drift_line(t_m, a_m - t_m, dating_sigma_seconds(onsets, nearest_index[matched]))
        if line is not None:
            intercept, slope, drift_se_ppm, n = line
            method = "event_match+theil_sen"
            if drift_se_ppm <= max_drift_se_ppm:
                offset_seconds, drift_ppm = intercept, slope * 1e6
                drift_confidence = float(min(1.0, n / 8.0) * min(1.0, 2.0 * (1.0 - drift_se_ppm / max_drift_se_ppm)))
            else:
                method = "event_match+drift_unresolved"
    return AVEstimate(av_offset_ms=offset_seconds * 1000.0, drift_ppm=drift_ppm, method=method,
                      drift_confidence=drift_confidence, drift_se_ppm=drift_se_ppm, **common)


def estimate_av_offset_from_arrays(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    audio_samples: np.ndarray | torch.Tensor,
    *,
    sample_rate: int,
    audio_start_seconds: float,
    **options: float,
) -> AVEstimate:
    """Like :func:`estimate_av_offset`, from a per-frame change signal + pts and raw audio samples.

    ``options`` are those of :func:`estimate_av_offset_from_features` (``max_offset_ms``, ``min_confidence``…).
    """
    onsets = audio_onsets(audio_samples, sample_rate, start_seconds=audio_start_seconds)
    return estimate_av_offset_from_features(visual_events, pts_seconds, onsets, **options)


def estimate_av_offset(
    video: VideoClip,
    audio: AudioClip,
    *,
    max_offset_ms: float = 500.0,
    min_confidence: float = 0.3,
    feature: VisualFeature = "background_rise",
    max_drift_ppm: float = 1500.0,
    max_drift_se_ppm: float = 60.0,
    min_drift_span_seconds: float = 4.0,
) -> AVEstimate:
    """Estimate the A/V offset and drift of a clip from its content (flashes/cuts vs sounds that start suddenly).

    Args:
        video: decoded frames with real pts (the reference timeline).
        audio: decoded audio with its ``start_seconds``.
        max_offset_ms: search range ``±max_offset_ms``; a true offset outside it cannot be found.
        min_confidence: below this the result abstains (0.3: the calibrated null threshold).
        feature: visual event feature (see ``visual_change_events``); ``background_rise`` by default.
        max_drift_ppm: drift search range.
        max_drift_se_ppm: drift is reported only when the slope's standard error is at most this (else None).
        min_drift_span_seconds: matched events must span this long for drift to be fitted.

    Returns:
        :class:`AVEstimate`; ``av_offset_ms > 0`` means audio lags video; ``abstain`` explains a None.

    Example:
        >>> est = estimate_av_offset(video, audio)              # doctest: +SKIP
        >>> est.av_offset_ms, est.drift_ppm, est.confidence     # doctest: +SKIP
        (40.2, None, 1.0)
    """
    _check_options(max_offset_ms, min_confidence, max_drift_ppm, max_drift_se_ppm)
    visual = visual_change_events(video.frames, feature=feature)
    return estimate_av_offset_from_arrays(
        visual, video.pts_seconds.numpy(), audio.samples, sample_rate=audio.sample_rate,
        audio_start_seconds=audio.start_seconds, max_offset_ms=max_offset_ms, min_confidence=min_confidence,
        max_drift_ppm=max_drift_ppm, max_drift_se_ppm=max_drift_se_ppm, min_drift_span_seconds=min_drift_span_seconds)
