"""A/V offset and clock drift from content: visual change events vs audio onsets, no model weights.

Clock model (DESIGN.md): a sound that belongs to video time ``t`` is heard at audio time::

    a = t * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000          (av_offset_ms > 0: audio lags)

Method::

    video   frames ──► change entering frame k (luma rise / frame difference) ──► impulse at pts[k]
    audio   samples ─► energy per 1 ms bin ─► Hann smooth ─► positive rise ─► log1p ─► z-score  = A(a)

    c(lag) = Σ_k w_k · A(pts[k] + lag)      lag ∈ [-max_offset, +max_offset], A read with linear interpolation
             peak → parabolic refinement (sub-hop); peak-to-sidelobe ratio → confidence
    windows of ``window_seconds`` over the events: the same sum restricted to each window, searched near the
             global peak → (event-weighted time t_w, offset y_w); Theil–Sen line y = offset + drift·t

Each impulse sits at the frame's real pts (VFR-safe). Where the onset lands: a frame is shown over
``[pts[k], pts[k+1])``, so a flash becomes visible at ``pts[k]``, its first instant, and the matching
beep starts at audio time ``a(pts[k])``. Sub-frame precision comes from the audio side (1 ms grid +
parabolic interpolation); the video side is exact because real pts are used.

Drift is reported only where the clip can resolve it. The slope's standard error is computed from the
line fit's residuals and the windows' time spread (inflated by √2: windows overlap by half, so neighbours
share events), with a residual floor of 0.05 ms (codec-level onset timing)::

    se_ppm = 1e6 · √2 · max(rms(residuals)·√(n/(n−2)), 0.05 ms) / √(Σ (t_w − mean t)²)

A 5 s clip whose window offsets scatter by 0.5 ms has se_ppm ≈ 250: its slope is noise. With too few
windows, too short a span of events, or ``se_ppm > max_drift_se_ppm`` (default 60), ``drift_ppm = None``
and ``drift_confidence = 0.0``; the offset is then the global correlation peak (the offset at the events'
weighted mean time, which minimises the error over the clip when 0 drift is applied). Otherwise
``drift_confidence = agreement · min(1, n/8) · min(1, 2·(1 − se_ppm/max_drift_se_ppm))``.
Below ``min_confidence`` the estimator abstains (``av_offset_ms=None``); fewer than three visual
events give confidence 0 (``abstain:too_few_events``): one event-onset coincidence is no evidence.

Smooth motion without cuts (Big Buck Bunny, 5.3 s, 720p: a pan with the bunny emerging) gives no
event above the threshold, so ``frame_difference`` abstains (``no_visual_events``). Motion-onset
features do not rescue it: the positive change of per-region frame-difference energy (max over a
1x1, 4x4 or 6x8 grid, duplicated frames removed) peaks at -110, +242 and -174 ms with
peak-to-sidelobe 3.2-4.6 (noise < 8), and none rises within ±150 ms of the clip's one strong sound
(1.08 s, +24 dB). That clip also repeats every 25th frame (difference ≈ 0.1 between 3-7 luma
levels): any positive-change feature must drop such repeats, else it spikes on the frame after each
one, a 1 s periodic train that matches any periodic sound.
Talking heads (PsychoPy's ``jwpIntro.mp4``, ``testMovie.mp4``: static camera, real speech) have no events
either: their largest motion frames pass the event threshold one to four at a time, without confidence.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from aligner._signals import VisualFeature, audio_onset_envelope, mono, visual_change_events
from loaders._records import AudioClip, VideoClip

logger = logging.getLogger(__name__)

__all__ = [
    "AVEstimate",
    "estimate_av_offset",
    "estimate_av_offset_from_arrays",
    "estimate_av_offset_from_features",
]

# Peak-to-sidelobe ratios at or below this are what pure noise gives; at or above _PSR_FULL is certain.
_PSR_NOISE = 8.0
_PSR_FULL = 20.0
# Fewer visual events than this give no confidence, however high their peak-to-sidelobe ratio: with one
# event the lag curve is the audio onset envelope itself, whose loudest onset within the search range
# always "wins" (a real talking head, whose largest motion frame passed the event threshold, once gave
# confidence 1.0 at -176 ms from one such event). Two or more independent coincidences at one lag are evidence.
_MIN_EVENTS = 3


@dataclass(frozen=True)
class AVEstimate:
    """Estimated A/V clock relation ``a = t·(1 + drift_ppm·1e-6) + av_offset_ms/1000``."""

    av_offset_ms: Optional[float]
    """Audio lag behind video at video time 0 (ms, > 0 audio late); None when the estimator abstains."""
    drift_ppm: Optional[float]
    """Audio clock rate error in parts per million; None when abstaining or when the clip cannot resolve it
    (too short, too few windows, or slope standard error above ``max_drift_se_ppm``): apply 0 then."""
    confidence: float
    """Confidence in the offset, in [0, 1] (peak-to-sidelobe ratio, times window agreement)."""
    num_events: int
    """Visual change events used (frames whose change stands out)."""
    method: str
    """How the value was obtained (e.g. ``onset_xcorr+theil_sen``) or why it abstained (``abstain:…``)."""
    drift_confidence: float = 0.0
    """Confidence in ``drift_ppm`` in [0, 1]; 0.0 when drift is not reported."""
    num_windows: int = 0
    """Windows that produced an offset for the drift fit."""
    peak_to_sidelobe: float = 0.0
    """Raw peak-to-sidelobe ratio of the global correlation (robust z-score of the peak)."""
    drift_se_ppm: Optional[float] = None
    """Standard error of the fitted slope (ppm); None when no line was fitted."""

    @property
    def abstained(self) -> bool:
        """True when no offset is reported."""
        return self.av_offset_ms is None


def _abstain(reason: str, *, num_events: int = 0, psr: float = 0.0, confidence: float = 0.0) -> AVEstimate:
    logger.info("A/V offset estimation abstains: %s", reason)
    return AVEstimate(
        av_offset_ms=None,
        drift_ppm=None,
        confidence=float(confidence),
        num_events=num_events,
        method=f"abstain:{reason}",
        peak_to_sidelobe=float(psr),
    )


def _parabolic(curve: np.ndarray, index: int) -> float:
    """Sub-sample peak position near ``index`` by fitting a parabola through three points."""
    if index <= 0 or index >= curve.size - 1:
        return float(index)
    left, centre, right = curve[index - 1], curve[index], curve[index + 1]
    denominator = left - 2.0 * centre + right
    if denominator >= 0:
        return float(index)
    return float(index) + float(np.clip(0.5 * (left - right) / denominator, -0.5, 0.5))


def _theil_sen(times: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Robust line fit ``values ≈ intercept + slope·times``: median of pairwise slopes."""
    i, j = np.triu_indices(times.size, k=1)
    dt = times[j] - times[i]
    keep = dt > 1e-9
    slope = float(np.median((values[j] - values[i])[keep] / dt[keep]))
    intercept = float(np.median(values - slope * times))
    return intercept, slope


def _slope_standard_error_ppm(times: np.ndarray, residuals: np.ndarray) -> float:
    """Standard error (ppm) of a line's slope over window times, from its residuals (see module docstring)."""
    n = residuals.size
    spread = float(np.sum(np.square(times - times.mean())))
    if n < 3 or spread <= 0:
        return math.inf
    rms = math.sqrt(float(np.sum(np.square(residuals))) / (n - 2))
    return 1e6 * math.sqrt(2.0) * max(rms, 5e-5) / math.sqrt(spread)


def _robust_z(value: float, background: np.ndarray) -> float:
    centre = float(np.median(background))
    spread = 1.4826 * float(np.median(np.abs(background - centre)))
    spread = max(spread, 1e-3 * float(np.std(background)), 1e-12)
    return (value - centre) / spread


def _check_options(max_offset_ms: float, min_confidence: float, hop_ms: float, window_seconds: float) -> None:
    if not (0 < max_offset_ms <= 10_000):
        raise ValueError(f"max_offset_ms must be in (0, 10000], got {max_offset_ms = }")
    if not (0.0 <= min_confidence <= 1.0):
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence = }")
    if not (0.05 <= hop_ms <= 20.0):
        raise ValueError(f"hop_ms must be in [0.05, 20], got {hop_ms = }; 1 ms suits 16-48 kHz audio")
    if not window_seconds > 0:
        raise ValueError(f"window_seconds must be > 0, got {window_seconds = }")


def estimate_av_offset_from_features(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    audio_onset: np.ndarray,
    *,
    onset_hop_seconds: float,
    audio_start_seconds: float,
    max_offset_ms: float = 500.0,
    min_confidence: float = 0.3,
    window_seconds: float = 4.0,
    max_drift_ppm: float = 3000.0,
    min_drift_span_seconds: float = 2.0,
    min_drift_windows: int = 4,
    max_drift_se_ppm: float = 60.0,
) -> AVEstimate:
    """Estimate offset and drift from cached features (the core of :func:`estimate_av_offset`).

    Args:
        visual_events: float ``[T]`` >= 0, change entering each frame (see ``visual_change_events``).
        pts_seconds: float ``[T]``, each frame's real presentation time (video timeline).
        audio_onset: float ``[M]``, onset strength, ``audio_onset[m]`` at
            ``audio_start_seconds + m * onset_hop_seconds`` (see ``audio_onset_envelope``).
        onset_hop_seconds: grid step of ``audio_onset``.
        audio_start_seconds: presentation time of the audio's first sample.
        max_offset_ms: search range ``[-max_offset_ms, +max_offset_ms]``.
        min_confidence: abstain below this confidence.
        window_seconds: longest window for the drift fit (50 % hop); shorter (span / 4, >= 0.5 s) on short clips.
        max_drift_ppm: largest drift searched around the global peak by the windows.
        min_drift_span_seconds: events must span at least this long for drift to be fitted.
        min_drift_windows: at least this many windows must give an offset for drift to be fitted.
        max_drift_se_ppm: drift is reported only when the slope's standard error is at most this.

    Returns:
        An :class:`AVEstimate`.
    """
    _check_options(max_offset_ms, min_confidence, onset_hop_seconds * 1000.0, window_seconds)
    if not max_drift_se_ppm > 0:
        raise ValueError(f"max_drift_se_ppm must be > 0, got {max_drift_se_ppm = }; 60 suits 5-10 s clips")
    visual = np.asarray(visual_events, dtype=np.float64)
    pts = np.asarray(pts_seconds, dtype=np.float64)
    onset = np.asarray(audio_onset, dtype=np.float64)
    if visual.shape != pts.shape or visual.ndim != 1:
        raise ValueError(f"visual_events and pts_seconds must both be [T], got {visual.shape} and {pts.shape}")
    hop = float(onset_hop_seconds)

    peak_visual = float(visual.max()) if visual.size else 0.0
    if not peak_visual > 0:
        return _abstain("no_visual_events")
    centre = float(np.median(visual))
    mad = 1.4826 * float(np.median(np.abs(visual - centre)))
    threshold = max(0.1 * peak_visual, centre + 6.0 * mad)
    selected = np.flatnonzero(visual > threshold)
    num_events = int(selected.size)
    if num_events == 0:
        return _abstain("no_visual_events")
    onset_std = float(onset.std()) if onset.size else 0.0
    if not onset_std > 0:
        return _abstain("silent_audio", num_events=num_events)
    audio_z = (onset - onset.mean()) / onset_std

    weights = np.sqrt(visual[selected] / peak_visual)
    event_pts = pts[selected]
    half_lags = int(math.ceil(max_offset_ms / 1000.0 / hop)) + 1
    lags = np.arange(-half_lags, half_lags + 1)
    # positions[k, l]: fractional index into audio_z of event k shifted by lag l (linear interpolation).
    positions = (event_pts[:, None] - audio_start_seconds) / hop + lags[None, :]
    base = np.floor(positions).astype(np.int64)
    frac = positions - base
    inside = (base >= 0) & (base + 1 < audio_z.size)
    base_clipped = np.clip(base, 0, max(audio_z.size - 2, 0))
    gathered = np.where(
        inside, audio_z[base_clipped] * (1.0 - frac) + audio_z[np.minimum(base_clipped + 1, audio_z.size - 1)] * frac, 0.0
    )
    curve = weights @ gathered

    peak_index = int(np.argmax(curve))
    span_seconds = float(event_pts[-1] - event_pts[0])
    exclusion = int(math.ceil((0.02 + max_drift_ppm * 1e-6 * span_seconds) / hop))
    sidelobes = np.concatenate([curve[: max(peak_index - exclusion, 0)], curve[peak_index + exclusion + 1 :]])
    if sidelobes.size < 20:
        return _abstain("search_range_too_small", num_events=num_events)
    psr = _robust_z(float(curve[peak_index]), sidelobes)
    confidence = float(np.clip((psr - _PSR_NOISE) / (_PSR_FULL - _PSR_NOISE), 0.0, 1.0))
    if peak_index < 2 or peak_index > curve.size - 3:
        return _abstain("peak_at_search_edge", num_events=num_events, psr=psr)
    if num_events < _MIN_EVENTS:
        confidence = 0.0
        if min_confidence > 0.0:
            return _abstain("too_few_events", num_events=num_events, psr=psr)
    global_offset_seconds = (_parabolic(curve, peak_index) - half_lags) * hop

    # Windowed offsets for the drift fit, searched near the global peak.
    local = int(math.ceil((0.02 + max_drift_ppm * 1e-6 * span_seconds) / hop))
    lo, hi = max(peak_index - local, 1), min(peak_index + local + 1, curve.size - 1)
    window_times: list[float] = []
    window_offsets: list[float] = []
    num_candidate_windows = 0
    # Short clips: shorter windows (down to about one event each), at least four across the span.
    window_seconds = float(np.clip(span_seconds / 4.0, 0.5, window_seconds))
    if span_seconds >= min_drift_span_seconds:
        start = float(event_pts[0])
        while start < float(event_pts[-1]):
            rows = np.flatnonzero((event_pts >= start) & (event_pts < start + window_seconds))
            start += window_seconds / 2.0
            if rows.size == 0:
                continue
            num_candidate_windows += 1
            window_curve = weights[rows] @ gathered[rows, lo:hi]
            best = int(np.argmax(window_curve))
            height = float(window_curve[best]) / float(weights[rows].sum())
            if height < 3.0 or best == 0 or best == window_curve.size - 1:
                continue  # weak or at the edge of the local search: not usable
            window_offsets.append((lo + _parabolic(window_curve, best) - half_lags) * hop)
            window_times.append(float(np.sum(weights[rows] * event_pts[rows]) / weights[rows].sum()))

    if num_candidate_windows:
        # A peak that only part of the clip supports (e.g. a true offset outside the search range
        # matching shifted events) fails in most windows.
        confidence *= len(window_times) / num_candidate_windows
    times = np.asarray(window_times)
    offsets = np.asarray(window_offsets)
    method = "onset_xcorr"
    drift_ppm: Optional[float] = None
    drift_confidence = 0.0
    drift_se_ppm: Optional[float] = None
    offset_seconds = global_offset_seconds
    if times.size >= min_drift_windows and float(np.ptp(times)) >= min_drift_span_seconds / 2.0:
        intercept, slope = _theil_sen(times, offsets)
        residuals = offsets - (intercept + slope * times)
        tolerance = max(0.003, 3.0 * hop)
        agreement = float(np.mean(np.abs(residuals) <= tolerance))
        confidence *= 0.5 + 0.5 * agreement
        inliers = np.abs(residuals) <= tolerance
        drift_se_ppm = _slope_standard_error_ppm(times[inliers], residuals[inliers])
        method = "onset_xcorr+theil_sen"
        logger.debug("drift fit over %d windows: slope %.1f ± %.1f ppm, agreement %.2f",
                     times.size, slope * 1e6, drift_se_ppm, agreement)
        if drift_se_ppm <= max_drift_se_ppm:
            offset_seconds = intercept
            drift_ppm = slope * 1e6
            drift_confidence = agreement * min(1.0, times.size / 8.0) * min(1.0, 2.0 * (1.0 - drift_se_ppm / max_drift_se_ppm))
        else:
            method = "onset_xcorr+drift_unresolved"
    if confidence < min_confidence:
        return _abstain("low_confidence", num_events=num_events, psr=psr, confidence=confidence)
    return AVEstimate(
        av_offset_ms=offset_seconds * 1000.0,
        drift_ppm=drift_ppm,
        confidence=confidence,
        num_events=num_events,
        method=method,
        drift_confidence=drift_confidence,
        num_windows=int(times.size),
        peak_to_sidelobe=psr,
        drift_se_ppm=drift_se_ppm,
    )


def estimate_av_offset_from_arrays(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    audio_samples: np.ndarray | torch.Tensor,
    *,
    sample_rate: int,
    audio_start_seconds: float,
    hop_ms: float = 1.0,
    **options: float,
) -> AVEstimate:
    """Like :func:`estimate_av_offset`, from a per-frame change signal + pts and raw audio samples.

    ``options`` are those of :func:`estimate_av_offset_from_features` (``max_offset_ms``, ``min_confidence``…).
    """
    onset, hop_seconds = audio_onset_envelope(mono(audio_samples), sample_rate, hop_seconds=hop_ms / 1000.0)
    return estimate_av_offset_from_features(
        visual_events, pts_seconds, onset, onset_hop_seconds=hop_seconds, audio_start_seconds=audio_start_seconds, **options
    )


def estimate_av_offset(
    video: VideoClip,
    audio: AudioClip,
    *,
    max_offset_ms: float = 500.0,
    min_confidence: float = 0.3,
    feature: VisualFeature = "luma_rise",
    hop_ms: float = 1.0,
    window_seconds: float = 4.0,
    max_drift_ppm: float = 3000.0,
    min_drift_span_seconds: float = 2.0,
    max_drift_se_ppm: float = 60.0,
) -> AVEstimate:
    """Estimate the A/V offset and drift of a clip from its content (flashes/cuts vs sound onsets).

    Args:
        video: decoded frames with real pts (the reference timeline).
        audio: decoded audio with its ``start_seconds``.
        max_offset_ms: search range ``±max_offset_ms``; a true offset outside it cannot be found.
        min_confidence: below this the result abstains (``av_offset_ms is None``).
        feature: visual change feature, ``"luma_rise"`` (flashes) or ``"frame_difference"`` (motion, cuts).
        hop_ms: audio onset grid step.
        window_seconds: longest window for the drift fit (shortened to span / 4 on short clips).
        max_drift_ppm: largest drift the windowed search allows.
        min_drift_span_seconds: events must span this long for drift to be fitted (else drift None).
        max_drift_se_ppm: drift is reported only when the slope's standard error is at most this (else None).

    Returns:
        :class:`AVEstimate`; ``av_offset_ms > 0`` means audio lags video.

    Example:
        >>> est = estimate_av_offset(video, audio)              # doctest: +SKIP
        >>> est.av_offset_ms, est.drift_ppm, est.confidence     # doctest: +SKIP
        (40.2, None, 1.0)
    """
    _check_options(max_offset_ms, min_confidence, hop_ms, window_seconds)
    visual = visual_change_events(video.frames, feature=feature)
    return estimate_av_offset_from_arrays(
        visual,
        video.pts_seconds.numpy(),
        audio.samples,
        sample_rate=audio.sample_rate,
        audio_start_seconds=audio.start_seconds,
        hop_ms=hop_ms,
        max_offset_ms=max_offset_ms,
        min_confidence=min_confidence,
        window_seconds=window_seconds,
        max_drift_ppm=max_drift_ppm,
        min_drift_span_seconds=min_drift_span_seconds,
        max_drift_se_ppm=max_drift_se_ppm,
    )
