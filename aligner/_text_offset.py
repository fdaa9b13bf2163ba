"""Transcript offset from speech content, and per-word start refinement. No model weights.

Convention (DESIGN.md): ``text_offset_ms > 0`` means stamps are late: a word heard at audio time ``a``
is stamped ``a + text_offset_ms / 1000``; correct with ``transcript.shifted(-text_offset_ms / 1000)``.

Two evidence curves over the lag ``δ`` (``±max_offset_ms``), both on a fine grid (default 2.5 ms)::

    activity   Σ_t (vad(t) - mean) · (spans_active(t + δ) - mean)     broad, picks the right region
    onsets     Σ_w g_w · rise(s_w - δ)                                sharp, gives the precision

``vad`` is an energy detector (20 ms windows, threshold adapted to the clip's noise floor and speech
level); ``rise`` is the step-to-step increase of the log energy (5 ms windows) clamped at the noise
floor, placed at the newest samples of the window (so a rise is not dated half a window early);
``s_w`` are word starts on the transcript clock, weighted ``g_w = 1`` after a pause (a true acoustic
onset) and less inside connected speech, where a word start has no energy onset.

Peak choice and confidence::

    support(δ) = clip((activity(δ) − median) / (max − median), 0, 1)
    gated(δ)   = max(z(onsets(δ)), 0) · support(δ)²          the offset is the peak of ``gated``
    psr        = robust z of (z(onsets) + z(activity)) at that peak against lags > 30 ms away
    rival      = max gated(δ) over lags > 30 ms away / gated(peak)
    confidence = clip((psr − 4.5) / 5.5, 0, 1) · clip(2·(1 − rival), 0, 1)

Noise and music beds: when the full-band pass abstains on a word-level transcript, a second pass uses
band-SNR energy (``band_snr_levels``: 7 bands from 100 Hz to 6 kHz at 16 kHz, each band's power over
its own 20th percentile, minus 1, summed): a stationary bed sets each band's floor and speech counts
where it rises above it. Captions (span-level) get no retry: a beep alone in one band can outweigh a few
caption edges. Measurements: BENCHMARKS.md, "Lab notes".

The gate is what makes caption-level input (SRT/WebVTT: a few span starts, none inside connected
speech) safe: a sharp non-speech onset (a beep) before the first caption can win the ungated sum,
while the caption's active interval does not cover speech there. ``rival`` near 1 means
the evidence cannot tell two offsets apart (unrelated speech, rhythmic speech with few onsets): the
estimator then abstains instead of picking one.

What biases it: activity edges follow the detector threshold (late on soft onsets, early on tails),
so they only choose the peak; the estimate is read from the onset curve near that peak. TTS/ASR
stamps of a word after a pause may include part of the pause; these shift the estimate by their
median error, which no content-based method can tell from a true offset.

Real read speech, where most word starts are not energy onsets, makes this estimator abstain (BENCHMARKS.md,
"Lab notes"); ``estimate_transcript_offset(method="auto")`` then falls back to forced alignment.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from aligner._options import TextOptions
from aligner._signals import frame_bounds, log_energy, mono, window_mean_square
from aligner._stats import parabolic_peak, robust_z, standardise
from aligner._text_records import TextEstimate, text_abstain
from avcore import AudioClip, Transcript, Word

logger = logging.getLogger(__name__)

__all__ = ["SpeechFeatures", "after_pause", "band_snr_levels", "caption_edges", "estimate_text_offset", "onset_offset_near",
           "refine_word_times", "speech_features"]

_PSR_NOISE = 4.5
_PSR_FULL = 10.0
_DYNAMIC_RANGE_DB = 50.0
_PAUSE_SECONDS = 0.08
_MATCH_SECONDS = 0.025
_MIN_MATCHES = 3
# onset_offset_near reads nothing when one item carries more than this share of the onset sum at its peak: the other
# items together must outweigh any one (a majority rule, like _MIN_MATCHES' "not one or two onsets"). On the tune
# clips the largest share was 0.46 (BENCHMARKS.md, "Transcript offset: one dating rule near forced alignment").
_MAX_ONE_ONSET_SHARE = 0.5
_DEFAULT = TextOptions()


@dataclass(frozen=True)
class SpeechFeatures:
    """Energy features of an audio clip on a fine grid; value ``m`` is at ``start_seconds + m * hop_seconds``."""

    rise_db: np.ndarray
    """float64 ``[M]``: increase of floor-clamped log energy entering step ``m`` (>= 0)."""
    level_db: np.ndarray
    """float64 ``[M]``: floor-clamped log energy (dB, 5 ms window) whose window ends at step ``m``."""
    active: np.ndarray
    """float64 ``[M]`` of 0/1: speech activity (20 ms windows, adaptive threshold)."""
    floor_db: float
    """Noise floor used for clamping (dB)."""
    hop_seconds: float
    """Grid step."""
    start_seconds: float
    """Time of step 0 (the audio's ``start_seconds``)."""


def speech_features(
    samples: np.ndarray, sample_rate: int, *, start_seconds: float = 0.0, hop_seconds: float = 0.0025,
    band_snr: bool = False,
) -> SpeechFeatures:
    """Compute :class:`SpeechFeatures` (fine-grid log energy, rise and activity) of mono/multi-channel audio.

    With ``band_snr`` the energy is :func:`band_snr_levels` (each band against its own floor: robust to
    noise and music beds) instead of the full-band log energy.
    """
    signal = mono(samples, keep_float32=True)  # float32 audio stays float32: log_energy converts a block at a time
    onset_window = 0.005
    if band_snr:
        if sample_rate > _BAND_RATE:  # the bands end at 6 kHz: 16 kHz is enough, and 3x cheaper than 48 kHz
            from avcore import resample

            signal = resample(signal[None, :].astype(np.float32, copy=False), sample_rate, _BAND_RATE)[0]
            sample_rate = _BAND_RATE
        (level, hop), (vad_level, _) = band_snr_levels(signal, sample_rate, hop_seconds=hop_seconds,
                                                        windows_seconds=(onset_window, 0.020))
    else:
        # Less a DC offset (:func:`_dc_offset`): it adds its square to every frame and flattens the speech's rises and
        # pauses; exact zeros stay silent (BENCHMARKS.md, "Band energy and a DC offset").
        dc = _dc_offset(signal)
        level, hop = log_energy(signal, sample_rate, hop_seconds=hop_seconds, window_seconds=onset_window, less=dc)
        vad_level, _ = log_energy(signal, sample_rate, hop_seconds=hop_seconds, window_seconds=0.020, less=dc)
    if level.size == 0:
        empty = np.zeros(0)
        return SpeechFeatures(empty, empty, empty, 0.0, hop, start_seconds)
    loud = float(np.percentile(level, 95))
    floor = max(float(np.percentile(level, 10)), loud - _DYNAMIC_RANGE_DB)
    clamped = np.maximum(level, floor)
    # log_energy frames are centred on m*hop; shift so value m describes the window ending at m*hop.
    shift = int(round(onset_window / 2 / hop))
    ending = np.concatenate([np.full(shift, floor), clamped[: clamped.size - shift]]) if shift else clamped
    rise = np.zeros_like(ending)
    rise[1:] = np.maximum(np.diff(ending), 0.0)
    vad_floor = max(float(np.percentile(vad_level, 10)), loud - _DYNAMIC_RANGE_DB)
    threshold = vad_floor + max(6.0, 0.35 * (loud - vad_floor))
    active = (vad_level > threshold).astype(np.float64)
    return SpeechFeatures(rise, ending, active, floor, hop, float(start_seconds))


def _dc_offset(signal: np.ndarray) -> float:
    """The DC offset to take from ``signal`` before its full-band energy: the mean of its samples that are not exactly 0
    (digital silence does not dilute it) when that mean is at least :data:`_DC_SHARE` of their rms, else 0.0: a
    smaller mean lies within the noise floor's own variation, and taking it would move quiet frames' levels (a
    generated clip with a 0.7 % mean lost its answer; BENCHMARKS.md, "Band energy and a DC offset")."""
    count = int(np.count_nonzero(signal))
    if not count:
        return 0.0
    mean = float(np.sum(signal, dtype=np.float64)) / count
    step = 1 << 18  # a block at a time: no float64 copy of a long clip
    squares = sum(float(np.square(signal[i:i + step], dtype=np.float64).sum()) for i in range(0, signal.size, step))
    rms = math.sqrt(squares / count)
    return mean if abs(mean) >= _DC_SHARE * rms else 0.0


_DC_SHARE = 0.1
"""A mean of at least this share of the rms is a DC offset (every generated set: 0.5-2 %; a converter's offset under
speech: tens of %)."""


_BAND_EDGES_HZ = (100.0, 300.0, 600.0, 1000.0, 1600.0, 2500.0, 4000.0, 6000.0)
_BAND_FLOOR_PERCENTILE = 20.0
_EXCESS_OVER_FLOOR = 1.0
_BAND_RATE = 16000
# The band masks run block by block, one FFT of at most _BAND_BLOCK_SAMPLES (65 s at 16 kHz) each, of which
# _BAND_MARGIN_SECONDS at either end only feed the filter (BENCHMARKS.md, "Band energy blockwise").
_BAND_BLOCK_SAMPLES = 1 << 20
_BAND_MARGIN_SECONDS = 8.0


def _band_bins(size: int, sample_rate: int) -> list[tuple[int, int]]:
    """``[first, stop)`` rfft bins of the bands of :data:`_BAND_EDGES_HZ` below Nyquist, for a transform of ``size``
    samples: bin ``k`` (at ``k · sample_rate / size`` Hz) is in a band when ``lo <= k · step < hi``."""
    step_hz = 1.0 / (size * (1.0 / sample_rate))  # bin k is at k * step_hz, as np.fft.rfftfreq computes it
    num_bins = size // 2 + 1

    def first_bin(hz: float) -> int:  # the first k with k * step_hz >= hz
        k = max(0, int(hz / step_hz))
        while k * step_hz < hz:
            k += 1
        while k > 0 and (k - 1) * step_hz >= hz:
            k -= 1
        return min(k, num_bins)

    return [(first_bin(lo), first_bin(hi)) for lo, hi in zip(_BAND_EDGES_HZ, _BAND_EDGES_HZ[1:]) if lo < sample_rate / 2]


def _band_powers(signal: np.ndarray, sample_rate: int, *, hop_samples: int,
                 windows_samples: Sequence[int]) -> np.ndarray:
    """float32 ``[bands, windows, M]``: each band's mean power in the frames of :func:`~aligner._signals.log_energy`
    (``M = N // hop_samples``), one row per window length.

    A band is the spectrum between two edges of :data:`_BAND_EDGES_HZ` (an FFT mask), taken block by block::

        clip     |..........................................................|
        block    [ margin |        core         | margin ]                      one FFT of <= _BAND_BLOCK_SAMPLES
        next                           [ margin |        core         | margin ]
        kept                |        core         |        core         |       frames whose windows lie in the core

    A mask on the whole clip (the computation before: one transform of the clip, whose wrap-around also carried the
    clip's end into its start) is a filter whose response decays as ``1/t``; on a block it reaches the ``margin``
    (:data:`_BAND_MARGIN_SECONDS`, 8 s) either way and wraps within the block beyond it. What it leaves out beyond
    8 s is 42 dB under a sound's energy in the 200 Hz band (``2 / (π² · 8 s)`` of ``2 · 200 Hz``), less in the wider
    bands. Zeros stand outside the clip; each block's samples are taken less their mean (no step at the clip's edges
    from a DC offset).
    The transform and band signals are float64 and one block long; only the per-frame powers (float32) are kept
    for the whole clip.
    """
    from scipy.fft import next_fast_len

    size_in = signal.size
    num_frames = size_in // hop_samples
    margin = int(round(_BAND_MARGIN_SECONDS * sample_rate))
    before = max(w // 2 for w in windows_samples)
    after = max(w - w // 2 for w in windows_samples)
    per_block = max(1, (_BAND_BLOCK_SAMPLES - 2 * margin - before - after) // hop_samples)
    out = np.empty((len(_band_bins(_BAND_BLOCK_SAMPLES, sample_rate)), len(windows_samples), num_frames),
                   dtype=np.float32)
    for first in range(0, num_frames, per_block):
        stop = min(first + per_block, num_frames)
        core_lo, core_hi = max(first * hop_samples - before, 0), min((stop - 1) * hop_samples + after, size_in)
        begin, end = core_lo - margin, core_hi + margin  # may reach outside the clip: zeros there
        size = next_fast_len(end - begin, real=True)  # <= _BAND_BLOCK_SAMPLES; a short clip: one block of its own
        block = np.zeros(size)
        inside = signal[max(begin, 0) : min(end, size_in)]
        # Less the block's mean: a DC offset would be a step against the zeros outside the clip, and every band's
        # filter rings from a step (pure DC audio got a confident answer from those edges; BENCHMARKS.md,
        # "Band energy and a DC offset"). The bands start at 100 Hz: the mean is nothing they measure.
        block[max(begin, 0) - begin : min(end, size_in) - begin] = inside - np.mean(inside, dtype=np.float64)
        del inside
        spectrum = np.fft.rfft(block)
        del block
        masked = np.zeros_like(spectrum)  # one buffer for every band's masked spectrum
        bounds = [frame_bounds(first, stop, hop_samples, w, size_in) for w in windows_samples]
        for j, (a, b) in enumerate(_band_bins(size, sample_rate)):
            masked[a:b] = spectrum[a:b]
            band = np.fft.irfft(masked, n=size)[core_lo - begin : core_hi - begin]
            masked[a:b] = 0.0
            for i, (w, (lo, hi)) in enumerate(zip(windows_samples, bounds)):
                out[j, i, first:stop] = window_mean_square(band, lo - core_lo, hi - core_lo, w)
            del band
        del spectrum, masked  # before the next block's: one block's arrays alive at a time
    return out


def band_snr_levels(samples: np.ndarray, sample_rate: int, *, hop_seconds: float,
                    windows_seconds: Sequence[float]) -> list[tuple[np.ndarray, float]]:
    """Band-SNR energy: ``(level_db, hop_seconds)`` for each of ``windows_seconds``, on the grid of
    :func:`~aligner._signals.log_energy` (frame ``m`` centred on ``m * hop``, float64 ``[N // hop_samples]``).

    The level is that of the sum over the bands of :data:`_BAND_EDGES_HZ` (100 Hz to 6 kHz, those below Nyquist) of
    each band's power relative to its own floor (its 20th percentile over the clip), minus 1, clamped at 0. A
    stationary bed (noise, a held chord) sets each band's floor; speech counts where it rises above the bed in that
    band, so a bed 10 dB below the speech no longer hides speech onsets and pauses.

    Memory: one block at a time (:func:`_band_powers`) plus the per-frame powers, float32, of every band and
    window: at 16 kHz and a 2.5 ms hop, 0.35x the float32 audio for two windows (BENCHMARKS.md, "Band energy
    blockwise").
    """
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    signal = mono(samples, keep_float32=True)
    hop_samples = max(1, int(round(hop_seconds * sample_rate)))
    hop = hop_samples / sample_rate
    windows_samples = [max(1, int(round(w * sample_rate))) for w in windows_seconds]
    if signal.size // hop_samples == 0 or sample_rate <= 2 * _BAND_EDGES_HZ[0]:
        return [(np.zeros(0), hop) for _ in windows_samples]
    powers = _band_powers(signal, sample_rate, hop_samples=hop_samples, windows_samples=windows_samples)
    out = []
    for i in range(len(windows_samples)):
        total = np.zeros(powers.shape[2])
        for band in powers[:, i]:
            power = band.astype(np.float64) + 1e-12  # as the level 10·log10(power + 1e-12) of log_energy
            floor = max(float(np.percentile(power, _BAND_FLOOR_PERCENTILE)), 1e-12)
            power /= floor
            power -= _EXCESS_OVER_FLOOR
            total += np.maximum(power, 0.0, out=power)
        out.append((10.0 * np.log10(total + 1e-12), hop))
    return out


_ITEMS_PER_BLOCK = 1024
"""Transcript items per block of the onset curve's item x lag arrays (1024 x 401 lags: 3.3 MB each)."""


def _gather(curve: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Linear interpolation of ``curve`` at fractional indices; 0 outside."""
    base = np.floor(positions).astype(np.int64)
    frac = positions - base
    inside = (base >= 0) & (base + 1 < curve.size)
    base = np.clip(base, 0, max(curve.size - 2, 0))
    upper = np.minimum(base + 1, curve.size - 1)
    return np.where(inside, curve[base] * (1.0 - frac) + curve[upper] * frac, 0.0)


def _onsets(transcript: Transcript) -> tuple[np.ndarray, np.ndarray, bool]:
    """Transcript onset times and weights: word starts if present, else span starts."""
    words = transcript.words
    use_words = len(words) > 0
    items = words if use_words else transcript.spans
    starts = np.array([item.start_seconds for item in items], dtype=np.float64)
    stops = np.array([item.stop_seconds for item in items], dtype=np.float64)
    order = np.argsort(starts, kind="stable")
    starts, stops = starts[order], stops[order]
    weights = np.where(after_pause(starts, stops), 1.0, 0.3)
    return starts, weights, use_words


def after_pause(starts: np.ndarray, stops: np.ndarray) -> np.ndarray:
    """Which items start after a pause: ``bool [N]`` for items sorted by start, True where the item starts at least
    80 ms after everything before it ends (the first item always). Such a start is an acoustic onset out of
    silence; an item that abuts the previous one starts inside connected speech, at a boundary whose place depends
    on who cut it."""
    starts = np.asarray(starts, dtype=np.float64)
    gaps = np.full(starts.shape, np.inf)
    if starts.size > 1:
        gaps[1:] = starts[1:] - np.maximum.accumulate(np.asarray(stops, dtype=np.float64))[:-1]
    return gaps >= _PAUSE_SECONDS


def caption_edges(transcript: Transcript) -> int:
    """How many of the transcript's onsets follow a pause (>= 80 ms after everything before it ends): the independent
    acoustic onsets the energy estimator can date. Word starts when the transcript has word times, else span starts
    (a caption that abuts the previous one starts inside speech and is not counted)."""
    _, weights, _ = _onsets(transcript)
    return int(np.count_nonzero(weights >= 1.0))


def estimate_text_offset(
    audio: AudioClip,
    transcript: Transcript,
    *,
    options: TextOptions = _DEFAULT,
) -> TextEstimate:
    """Estimate how late a transcript's stamps are relative to the audio, from speech energy.

    Args:
        audio: decoded audio (``start_seconds`` honoured).
        transcript: spans, with word times when available (much more precise).
        options: ``max_offset_ms`` (search range), ``min_confidence`` (abstain below it) and ``hop_seconds``
            (grid step of the energy features) of :class:`~aligner.TextOptions`.

    Returns:
        :class:`TextEstimate`; correct the transcript with ``transcript.shifted(-text_offset_ms / 1000)``.

    Example:
        >>> est = estimate_text_offset(audio, transcript)       # doctest: +SKIP
        >>> transcript.shifted(-est.text_offset_ms / 1000)      # doctest: +SKIP
    """
    first = _estimate_once(audio, transcript, options=options, band_snr=False)
    if first.method not in ("abstain:low_confidence", "abstain:no_speech_contrast") or not transcript.words:
        return first
    # A noise or music bed can hide speech onsets and pauses in the full-band energy: retry with each
    # band measured against its own floor (the bed), and keep that answer only when it is confident.
    # Word-level transcripts only: with a few caption edges, a beep alone in one band (its ratio to that
    # band's floor is huge) can outweigh the speech.
    second = _estimate_once(audio, transcript, options=options, band_snr=True)
    if second.abstained:
        return first
    return dataclasses.replace(second, method=second.method + "+bands")


def onset_offset_near(audio: AudioClip, transcript: Transcript, centre_ms: float, *, window_ms: float,
                      options: TextOptions = _DEFAULT) -> Optional[float]:
    """The band-SNR onset evidence's offset (ms) inside ``centre_ms ± window_ms``, or None when it has no peak there.

    The estimator's onset curve (module docstring) on band-SNR energy, searched only near an offset that another
    method found (forced alignment): the highest point of the curve inside the window, refined like an answer of
    :func:`estimate_text_offset` (sub-step peak, matched onsets). No peak-to-sidelobe test: the window, not the
    curve, chose the region. None when that highest point is at the window's edge (the evidence rises beyond it), when
    one item carries more than half of the onset sum there (one onset, e.g. an affricate's release in a reverberant
    pause, would decide), when the refined reading lies outside the window, when the window leaves the search range,
    or without onsets or speech contrast.

    Raises:
        ValueError: ``centre_ms`` or ``window_ms`` is not finite (the message shows it).
    """
    for name, value in (("centre_ms", centre_ms), ("window_ms", window_ms)):
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {name} = {value!r}")
    starts, weights, _ = _onsets(transcript)
    if starts.size == 0 or not window_ms > 0:
        return None
    features = speech_features(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds,
                               hop_seconds=options.hop_seconds, band_snr=True)
    if features.rise_db.size < 10 or not features.active.any():
        return None
    hop = features.hop_seconds
    half_lags = int(math.ceil(options.max_offset_ms / 1000.0 / hop)) + 1
    lags = np.arange(-half_lags, half_lags + 1)
    onset_curve = _onset_curve(features, starts, weights, lags)
    centre = int(round(centre_ms / 1000.0 / hop)) + half_lags
    width = int(round(window_ms / 1000.0 / hop))
    lo, hi = max(centre - width, 2), min(centre + width + 1, lags.size - 2)
    if hi - lo < 3 or np.ptp(onset_curve[lo:hi]) <= 0:
        return None
    peak = lo + int(np.argmax(onset_curve[lo:hi]))
    if peak in (lo, hi - 1):
        return None
    if _largest_share(features, starts, weights, lags[peak]) > _MAX_ONE_ONSET_SHARE:
        return None
    offset_seconds, _ = _precise_offset(features, onset_curve, peak, half_lags, starts, weights)
    if abs(offset_seconds * 1000.0 - centre_ms) > window_ms:
        return None  # the sub-step peak or the matched onsets' median left the window
    return offset_seconds * 1000.0


def _largest_share(features: SpeechFeatures, starts: np.ndarray, weights: np.ndarray, lag: int) -> float:
    """The largest single item's share of the onset sum ``Σ_w g_w · rise(s_w − δ)`` at lag ``lag`` (0 when the sum
    is 0): near 1, one onset decides the reading."""
    contributions = weights * _item_rises(features, starts, np.array([lag]))[:, 0]
    total = float(contributions.sum())
    return float(contributions.max()) / total if total > 0 else 0.0


def _item_rises(features: SpeechFeatures, starts: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """``rise(s_w − δ)`` per item ``w`` (rows) and lag ``δ = l · hop`` (columns): a word start ``s`` on the transcript
    clock is heard at ``s − offset``; ``rise[m]`` is dated ``(m − 0.5)·hop``, clamped at 30 dB."""
    positions = (starts[:, None] - features.start_seconds) / features.hop_seconds + 0.5 - lags[None, :]
    return _gather(np.minimum(features.rise_db, 30.0), positions)


def _onset_curve(features: SpeechFeatures, starts: np.ndarray, weights: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """``onsets(δ) = Σ_w g_w · rise(s_w − δ)`` at each lag (:func:`_item_rises`).

    Items that no lag puts on the features' grid add nothing and are left out (cues far beyond the audio: a 100,000-cue
    file on a 6 s clip held 2 GB); the others are summed :data:`_ITEMS_PER_BLOCK` at a time, so memory does not grow
    with the transcript (BENCHMARKS.md, "Transcript offset: memory of long transcripts")."""
    grid = (starts - features.start_seconds) / features.hop_seconds + 0.5
    reach = (grid - lags.min() >= -1.0) & (grid - lags.max() <= features.rise_db.size)
    starts, weights = starts[reach], weights[reach]
    curve = np.zeros(lags.size)
    for first in range(0, starts.size, _ITEMS_PER_BLOCK):
        block = slice(first, first + _ITEMS_PER_BLOCK)
        curve += weights[block] @ _item_rises(features, starts[block], lags)
    return curve


def _activity_curve(features: SpeechFeatures, intervals: Sequence, lags: np.ndarray) -> np.ndarray:
    """``activity(δ) = Σ_t (vad(t) − mean) · (text_active(t + δ) − mean)`` at each lag ``δ = l · hop``: computed
    every 10 ms of lag and linearly interpolated in between. ``intervals`` are the words (or spans) on the
    transcript clock."""
    hop = features.hop_seconds
    grid_times = features.start_seconds + np.arange(features.active.size) * hop
    edges = np.array([[w.start_seconds, w.stop_seconds] for w in intervals], dtype=np.float64)
    vad = features.active - features.active.mean()
    stride = max(1, int(round(0.01 / hop)))
    coarse = lags[::stride]
    coarse_values = np.empty(coarse.size)
    order = np.argsort(edges[:, 0])
    sorted_starts, sorted_stops = edges[order, 0], np.maximum.accumulate(edges[order, 1])
    for i, lag in enumerate(coarse):
        t = grid_times + lag * hop
        k = np.searchsorted(sorted_starts, t, side="right") - 1
        active_text = (k >= 0) & (t < sorted_stops[np.maximum(k, 0)])
        coarse_values[i] = float(vad @ (active_text - active_text.mean()))
    return np.interp(lags, coarse, coarse_values)


@dataclass(frozen=True)
class _Peak:
    """The lag chosen on the activity-gated onset evidence, and how far it stands out (module docstring)."""

    index: int
    """Index of the chosen lag."""
    psr: float
    """Robust z of the combined evidence at the peak against lags more than 30 ms away."""
    rival: float
    """Best gated evidence more than 30 ms away, as a fraction of the peak's."""
    confidence: float
    """``clip((psr − 4.5) / 5.5, 0, 1) · clip(2·(1 − rival), 0, 1)``."""


def _choose_peak(onset_curve: np.ndarray, activity_curve: np.ndarray, hop: float) -> Optional[_Peak]:
    """The peak of ``gated = max(z(onsets), 0) · support²``; None when fewer than 20 lags lie outside ±30 ms of it."""
    # Activity gates the onset evidence: an onset match counts only where the transcript's active
    # regions also cover the detected speech (a beep or a neighbouring word's onset does not).
    spread = float(np.max(activity_curve) - np.median(activity_curve))
    support = (np.clip((activity_curve - np.median(activity_curve)) / spread, 0.0, 1.0) if spread > 0
               else np.zeros_like(activity_curve))  # activity the same at every lag: it supports none
    onset_z = standardise(onset_curve)
    gated = np.maximum(onset_z, 0.0) * np.square(support)
    peak = int(np.argmax(gated))
    exclusion = int(math.ceil(0.03 / hop))
    outside = np.ones(gated.size, dtype=bool)
    outside[max(peak - exclusion, 0) : peak + exclusion + 1] = False
    if int(outside.sum()) < 20:
        return None
    combined = onset_z + standardise(activity_curve)
    psr = robust_z(float(combined[peak]), combined[outside])
    # The best rival peak (activity-gated, > 30 ms away) as a fraction of the chosen one: near 1, the
    # evidence cannot tell two offsets apart (periodic speech rhythm, unrelated speech).
    rival = float(np.max(gated[outside])) / max(float(gated[peak]), 1e-12)
    logger.debug("text offset peak at lag index %d: psr %.2f, support %.2f, rival %.2f", peak, psr, support[peak], rival)
    confidence = float(np.clip((psr - _PSR_NOISE) / (_PSR_FULL - _PSR_NOISE), 0.0, 1.0))
    confidence *= float(np.clip(2.0 * (1.0 - rival), 0.0, 1.0))
    return _Peak(peak, psr, rival, confidence)


def _precise_offset(features: SpeechFeatures, onset_curve: np.ndarray, peak: int, half_lags: int, starts: np.ndarray,
                    weights: np.ndarray) -> tuple[float, bool]:
    """``(offset_seconds, matched)``: the sub-step peak of the onset curve within ±20 ms of ``peak``, then, when at
    least 3 onsets after a pause have a detected acoustic onset within 25 ms, the median of their differences."""
    hop = features.hop_seconds
    near = int(math.ceil(0.02 / hop))
    lo, hi = max(peak - near, 1), min(peak + near + 1, onset_curve.size - 1)
    fine = lo + int(np.argmax(onset_curve[lo:hi]))
    offset_seconds = (parabolic_peak(onset_curve, fine) - half_lags) * hop
    candidates = _onset_candidates(features, min_rise_db=12.0, quiet_db=10.0)
    strong = starts[weights >= 1.0]
    if candidates.size and strong.size:
        expected = strong - offset_seconds
        nearest = candidates[np.clip(np.searchsorted(candidates, expected), 1, candidates.size - 1)[:, None] + [-1, 0]]
        if candidates.size == 1:
            nearest = np.repeat(candidates[None, :], expected.size, axis=0)
        pick = nearest[np.arange(expected.size), np.argmin(np.abs(nearest - expected[:, None]), axis=1)]
        matched = np.abs(pick - expected) <= _MATCH_SECONDS
        if int(matched.sum()) >= _MIN_MATCHES:
            return float(np.median(strong[matched] - pick[matched])), True
    return offset_seconds, False


def _estimate_once(audio: AudioClip, transcript: Transcript, *, options: TextOptions, band_snr: bool) -> TextEstimate:
    """One pass of :func:`estimate_text_offset` on full-band (``band_snr=False``) or band-SNR energy:
    features → evidence curves → peak and confidence → precise offset (module docstring)."""
    starts, weights, use_words = _onsets(transcript)
    if starts.size == 0:
        return text_abstain("empty_transcript")
    features = speech_features(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds,
                               hop_seconds=options.hop_seconds, band_snr=band_snr)
    hop, num_onsets = features.hop_seconds, int(starts.size)
    if features.rise_db.size < 10 or not features.active.any() or features.active.all():
        return text_abstain("no_speech_contrast", num_onsets=num_onsets)

    half_lags = int(math.ceil(options.max_offset_ms / 1000.0 / hop)) + 1
    lags = np.arange(-half_lags, half_lags + 1)  # lag l: text_offset = l * hop
    onset_curve = _onset_curve(features, starts, weights, lags)
    activity_curve = _activity_curve(features, transcript.words if use_words else transcript.spans, lags)
    if np.ptp(onset_curve) <= 0:
        return text_abstain("no_onsets", num_onsets=num_onsets)
    if np.ptp(activity_curve) <= 0:
        return text_abstain("no_activity_contrast", num_onsets=num_onsets)
    peak = _choose_peak(onset_curve, activity_curve, hop)
    if peak is None:
        return text_abstain("search_range_too_small", num_onsets=num_onsets)
    if peak.index < 2 or peak.index > lags.size - 3:
        return text_abstain("peak_at_search_edge", num_onsets=num_onsets, psr=peak.psr,
                            best_guess_ms=(peak.index - half_lags) * hop * 1000.0)
    offset_seconds, matched = _precise_offset(features, onset_curve, peak.index, half_lags, starts, weights)
    method = ("word" if use_words else "span") + "_onsets+activity" + ("+matched" if matched else "")
    if peak.confidence < options.min_confidence:
        return text_abstain("low_confidence", num_onsets=num_onsets, psr=peak.psr, confidence=peak.confidence,
                            best_guess_ms=offset_seconds * 1000.0, found=f"peak {peak.psr:.1f}x sidelobe, rival peak "
                            f"{peak.rival:.2f} of it: confidence {peak.confidence:.2f}",
                            needed=f"confidence >= {options.min_confidence}")
    return TextEstimate(offset_seconds * 1000.0, peak.confidence, method, num_onsets, peak.psr, offset_seconds * 1000.0)


def _onset_candidates(features: SpeechFeatures, *, min_rise_db: float, quiet_db: float) -> np.ndarray:
    """Times of strong onsets from near-silence: energy climbs >= ``min_rise_db`` within 10 ms."""
    hop = features.hop_seconds
    level, rise = features.level_db, features.rise_db
    size = level.size
    if size < 8:
        return np.zeros(0)
    span = int(round(0.010 / hop))
    before = np.concatenate([np.full(1, features.floor_db), level[:-1]])
    ahead = np.concatenate([level[span - 1 :], np.full(span - 1, level[-1])]) if span > 1 else level
    climb = ahead - before
    peaks = np.zeros(size, dtype=bool)
    peaks[1:-1] = (rise[1:-1] >= rise[:-2]) & (rise[1:-1] > rise[2:])
    candidate = np.flatnonzero(peaks & (climb >= min_rise_db) & (before <= features.floor_db + quiet_db))
    # rise[m] describes samples in [(m - 1)·hop, m·hop): date it at the middle.
    return np.array([features.start_seconds + (parabolic_peak(rise, int(i)) - 0.5) * hop for i in candidate])


def refine_word_times(
    audio: AudioClip,
    words: Sequence[Word],
    *,
    search_ms: float = 50.0,
    min_rise_db: float = 12.0,
    quiet_db: float = 10.0,
    hop_seconds: float = 0.0025,
) -> tuple[Word, ...]:
    """Snap each word start to the nearest strong acoustic onset within ``±search_ms``.

    Call after the global correction (the words must already be on the audio's clock). An onset is
    a step where the log energy climbs by at least ``min_rise_db`` within 10 ms from a level within
    ``quiet_db`` of the noise floor (a word after a pause). Words with no such onset nearby (e.g.
    inside connected speech) keep their original start. A refined start never reaches the word's stop.

    Args:
        audio: decoded audio.
        words: words on the audio clock.
        search_ms: half-width of the search window around each start.
        min_rise_db: minimal energy climb over 10 ms for an onset.
        quiet_db: the level before the onset must be within this of the floor.
        hop_seconds: grid step of the energy features, in [0.0005, 0.02].

    Returns:
        New :class:`Word` records, same order; only ``start_seconds`` may change.
    """
    if not (0 < search_ms <= 1000):
        raise ValueError(f"search_ms must be in (0, 1000], got {search_ms = }")
    if not (0.0005 <= hop_seconds <= 0.02):
        raise ValueError(f"hop_seconds must be in [0.0005, 0.02], got {hop_seconds = }")
    if not words:
        return ()
    features = speech_features(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds, hop_seconds=hop_seconds)
    if features.level_db.size < 8:
        return tuple(words)
    candidate_times = _onset_candidates(features, min_rise_db=min_rise_db, quiet_db=quiet_db)
    search = search_ms / 1000.0
    refined: list[Word] = []
    moved = 0
    for word in words:
        if candidate_times.size == 0:
            refined.append(word)
            continue
        distance = np.abs(candidate_times - word.start_seconds)
        best = int(np.argmin(distance))
        new_start = float(candidate_times[best])
        if distance[best] <= search and new_start < word.stop_seconds:
            refined.append(dataclasses.replace(word, start_seconds=new_start))
            moved += 1
        else:
            refined.append(word)
    logger.debug("refined %d of %d word starts", moved, len(words))
    return tuple(refined)
