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
band-SNR energy (``_band_snr_level``: 7 bands from 100 Hz to 6 kHz at 16 kHz, each band's power over
its own 20th percentile, minus 1, summed): a stationary bed sets each band's floor and speech counts
where it rises above it. Measured on espeak-ng sentences (4 seeds): full-band abstained on all of white
noise at 10 dB SNR and a chord bed at 10 and 5 dB; with the retry, 11 of those 12 answer within 3 ms,
and unrelated transcripts still abstain (0 of 24). Captions (span-level) get no retry: a beep alone in
one band outweighed two caption edges (+358 ms for +126 ms).

The gate is what makes caption-level input (SRT/WebVTT: a few span starts, none inside connected
speech) safe: a sharp non-speech onset (a beep) 232 ms before the first caption once won the
ungated sum, while the caption's active interval did not cover speech there. ``rival`` near 1 means
the evidence cannot tell two offsets apart (unrelated speech, rhythmic speech with few onsets): the
estimator then abstains instead of picking one.

What biases it: activity edges follow the detector threshold (late on soft onsets, early on tails),
so they only choose the peak; the estimate is read from the onset curve near that peak. TTS/ASR
stamps of a word after a pause may include part of the pause; these shift the estimate by their
median error, which no content-based method can tell from a true offset.

Read speech (LibriVox, word times from pocketsphinx forced alignment): unthresholded, the estimate
tracks injected offsets exactly but sits 23.3 ms from pocketsphinx's word starts; psr 2.7-5.2 and
rival 0.25-0.8, so it abstains. The gap is not an onset-dating artefact. Dating each post-pause onset
where the 5 ms energy first leaves the noise floor (3-8 dB above it) puts the five utterance-initial
words (four matched) at -6 to +39 ms from pocketsphinx's starts (3 dB; /h/, stop closures: 30-65 ms):
none within ±10 ms of their median, which (17.5-30 ms, by threshold) is no closer. Pocketsphinx itself
dates words early: on espeak-ng speech, whose first-phoneme sample is known, its starts are a median
17.4 ms early (56 words, range -124 to +7 ms), partly because a word is dated at the first sample
of its first 25.6 ms analysis frame. For such speech ``align(text_method="auto")`` falls back to forced
alignment (``aligner._text_forced``) when this estimator abstains.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from aligner._estimate import _parabolic, _robust_z
from aligner._signals import log_energy, mono
from avcore import AudioClip, Transcript, Word

logger = logging.getLogger(__name__)

__all__ = ["SpeechFeatures", "TextEstimate", "estimate_text_offset", "refine_word_times", "speech_features"]

_PSR_NOISE = 4.5
_PSR_FULL = 10.0
_DYNAMIC_RANGE_DB = 50.0
_PAUSE_SECONDS = 0.08
_MATCH_SECONDS = 0.025
_MIN_MATCHES = 3


@dataclass(frozen=True)
class TextEstimate:
    """Estimated transcript offset (stamps = audio time + ``text_offset_ms / 1000``)."""

    text_offset_ms: Optional[float]
    """How late the transcript's stamps are (ms); None when the estimator abstains."""
    confidence: float
    """Confidence in [0, 1]: peak-to-sidelobe ratio of the combined evidence times the rival-peak margin."""
    method: str
    """``word_onsets+activity``, ``span_onsets+activity`` or ``abstain:<reason>``."""
    num_onsets: int = 0
    """Transcript onsets (word or span starts) used."""
    peak_to_sidelobe: float = 0.0
    """Raw peak-to-sidelobe ratio (robust z-score of the combined peak)."""
    best_guess_ms: Optional[float] = None
    """The unthresholded estimate when abstaining (None when there was none); equals the answer otherwise."""
    found: str = ""
    """When abstaining: what the evidence showed, in words (e.g. ``"confidence 0.12 (psr 3.7)"``)."""
    needed: str = ""
    """When abstaining: what an answer needs (e.g. ``"confidence >= 0.3"``)."""
    hint: str = ""
    """When abstaining: what the user can do."""

    @property
    def abstained(self) -> bool:
        """True when no offset is reported."""
        return self.text_offset_ms is None

    def abstain_record(self) -> Optional[dict]:
        """``{reason, found, needed, best_guess_ms, hint}`` when abstaining (the ``text_abstain`` of
        ``measure`` and ``align.json``), else None."""
        if not self.abstained:
            return None
        guess = None if self.best_guess_ms is None else round(float(self.best_guess_ms), 3)
        return {"reason": self.method.removeprefix("abstain:"), "found": self.found, "needed": self.needed,
                "best_guess_ms": guess, "hint": self.hint}


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

    With ``band_snr`` the energy is :func:`_band_snr_level` (each band against its own floor: robust to
    noise and music beds) instead of the full-band log energy.
    """
    signal = mono(samples)
    onset_window = 0.005
    if band_snr:
        if sample_rate > _BAND_RATE:  # the bands end at 6 kHz: 16 kHz is enough, and 3x cheaper than 48 kHz
            from avcore import resample

            signal = resample(signal[None, :].astype(np.float32), sample_rate, _BAND_RATE)[0]
            sample_rate = _BAND_RATE
        bands = _speech_bands(signal, sample_rate)
        level, hop = _band_snr_level(bands, sample_rate, hop_seconds=hop_seconds, window_seconds=onset_window)
        vad_level, _ = _band_snr_level(bands, sample_rate, hop_seconds=hop_seconds, window_seconds=0.020)
    else:
        level, hop = log_energy(signal, sample_rate, hop_seconds=hop_seconds, window_seconds=onset_window)
        vad_level, _ = log_energy(signal, sample_rate, hop_seconds=hop_seconds, window_seconds=0.020)
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


_BAND_EDGES_HZ = (100.0, 300.0, 600.0, 1000.0, 1600.0, 2500.0, 4000.0, 6000.0)
_BAND_FLOOR_PERCENTILE = 20.0
_EXCESS_OVER_FLOOR = 1.0
_BAND_RATE = 16000


def _speech_bands(signal: np.ndarray, sample_rate: int) -> list[np.ndarray]:
    """``signal`` split into the bands of :data:`_BAND_EDGES_HZ` (FFT masks; bands above Nyquist dropped)."""
    spectrum = np.fft.rfft(signal.astype(np.float64))
    freqs = np.fft.rfftfreq(signal.size, 1.0 / sample_rate)
    out = []
    for lo, hi in zip(_BAND_EDGES_HZ, _BAND_EDGES_HZ[1:]):
        if lo >= sample_rate / 2:
            break
        mask = (freqs >= lo) & (freqs < hi)
        out.append(np.fft.irfft(np.where(mask, spectrum, 0.0), n=signal.size))
    return out


def _band_snr_level(bands: list[np.ndarray], sample_rate: int, *, hop_seconds: float,
                    window_seconds: float) -> tuple[np.ndarray, float]:
    """Level (dB) of the sum over bands of each band's power relative to its own floor (its 20th percentile).

    A stationary bed (noise, a held chord) sets each band's floor; speech counts where it rises above
    the bed in that band, so a bed 10 dB below the speech no longer hides speech onsets and pauses.
    """
    total, hop = None, hop_seconds
    for band in bands:
        level, hop = log_energy(band, sample_rate, hop_seconds=hop_seconds, window_seconds=window_seconds)
        power = 10.0 ** (level / 10.0)
        floor = max(float(np.percentile(power, _BAND_FLOOR_PERCENTILE)), 1e-12)
        ratio = np.maximum(power / floor - _EXCESS_OVER_FLOOR, 0.0)
        total = ratio if total is None else total + ratio
    if total is None:
        return np.zeros(0), hop
    return 10.0 * np.log10(total + 1e-12), hop


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
    gaps = np.empty_like(starts)
    if starts.size:
        gaps[0] = np.inf
        gaps[1:] = starts[1:] - np.maximum.accumulate(stops)[:-1]
    weights = np.where(gaps >= _PAUSE_SECONDS, 1.0, 0.3)
    return starts, weights, use_words


_GIVE_OFFSET = "pass text_offset_ms if the transcript's timing is known"
_HINTS = {
    "empty_transcript": ("a transcript with text", "check the transcript file"),
    "no_speech_contrast": ("speech with pauses (energy above and below the noise floor)",
                           "use text_method='forced' (pocketsphinx) or " + _GIVE_OFFSET),
    "no_onsets": ("speech onsets in the audio", _GIVE_OFFSET),
    "no_activity_contrast": ("speech activity that varies with the lag", _GIVE_OFFSET),
    "search_range_too_small": ("a search range of at least ~100 ms", "raise max_offset_ms"),
    "peak_at_search_edge": ("an evidence peak inside the search range", "raise max_offset_ms if the offset may be larger"),
    "low_confidence": ("", "check that the transcript belongs to this audio; " + _GIVE_OFFSET),
    "alignment_failed": ("words that forced alignment can place", "check the transcript's language (en-us model) and text"),
    "too_many_words": ("", "split the caption into shorter cues (forced alignment takes at most 2000 words at a time); "
                           + _GIVE_OFFSET),
    "too_long": ("", "split the caption into cues shorter than 10 minutes; " + _GIVE_OFFSET),
    "words_do_not_fit": ("", "the caption holds more words than its time span can hold as speech: check its cue times "
                             "and that its text belongs to this audio; " + _GIVE_OFFSET),
    "offset_out_of_range": ("an offset inside the search range", "raise max_offset_ms if the offset may be larger"),
    "methods_disagree": ("energy and forced alignment within 50 ms of each other",
                         "segment-level captions on conversational speech are often too loose; " + _GIVE_OFFSET),
}


def _abstain(reason: str, *, num_onsets: int = 0, psr: float = 0.0, confidence: float = 0.0,
             best_guess_ms: Optional[float] = None, found: str = "", needed: str = "") -> TextEstimate:
    """An abstention that explains itself: ``found`` / ``needed`` default to the reason's standard wording."""
    default_needed, hint = _HINTS.get(reason, ("", _GIVE_OFFSET))
    if not found:
        found = f"{num_onsets} transcript onset(s)"
        if psr:
            found += f", peak {psr:.1f}x sidelobe"
        if confidence:
            found += f", confidence {confidence:.2f}"
    logger.info("text offset estimation abstains: %s (%s)", reason, found)
    return TextEstimate(None, float(confidence), f"abstain:{reason}", num_onsets, float(psr),
                        None if best_guess_ms is None else float(best_guess_ms), found, needed or default_needed, hint)


def _check_search(max_offset_ms: float, min_confidence: float) -> None:
    """The options every transcript-offset estimator shares."""
    if not (0 < max_offset_ms <= 10_000):
        raise ValueError(f"max_offset_ms must be in (0, 10000], got {max_offset_ms = }")
    if not (0.0 <= min_confidence <= 1.0):
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence = }")


def estimate_text_offset(
    audio: AudioClip,
    transcript: Transcript,
    *,
    max_offset_ms: float = 500.0,
    min_confidence: float = 0.3,
    hop_ms: float = 2.5,
) -> TextEstimate:
    """Estimate how late a transcript's stamps are relative to the audio, from speech energy.

    Args:
        audio: decoded audio (``start_seconds`` honoured).
        transcript: spans, with word times when available (much more precise).
        max_offset_ms: search range ``±max_offset_ms``.
        min_confidence: below this the result abstains (``text_offset_ms is None``).
        hop_ms: grid step of the energy features.

    Returns:
        :class:`TextEstimate`; correct the transcript with ``transcript.shifted(-text_offset_ms / 1000)``.

    Example:
        >>> est = estimate_text_offset(audio, transcript)       # doctest: +SKIP
        >>> transcript.shifted(-est.text_offset_ms / 1000)      # doctest: +SKIP
    """
    _check_search(max_offset_ms, min_confidence)
    if not (0.5 <= hop_ms <= 20.0):
        raise ValueError(f"hop_ms must be in [0.5, 20], got {hop_ms = }; 2.5 ms is the default")
    first = _estimate_once(audio, transcript, max_offset_ms=max_offset_ms, min_confidence=min_confidence,
                           hop_ms=hop_ms, band_snr=False)
    if first.method not in ("abstain:low_confidence", "abstain:no_speech_contrast") or not transcript.words:
        return first
    # A noise or music bed can hide speech onsets and pauses in the full-band energy: retry with each
    # band measured against its own floor (the bed), and keep that answer only when it is confident.
    # Word-level transcripts only: with a few caption edges, a beep alone in one band (its ratio to that
    # band's floor is huge) can outweigh the speech (a 2-caption clip with beeps: +358 ms for +126 ms).
    second = _estimate_once(audio, transcript, max_offset_ms=max_offset_ms, min_confidence=min_confidence,
                            hop_ms=hop_ms, band_snr=True)
    if second.abstained:
        return first
    return dataclasses.replace(second, method=second.method + "+bands")


def _estimate_once(audio: AudioClip, transcript: Transcript, *, max_offset_ms: float, min_confidence: float,
                   hop_ms: float, band_snr: bool) -> TextEstimate:
    """One pass of :func:`estimate_text_offset` on full-band (``band_snr=False``) or band-SNR energy."""
    starts, weights, use_words = _onsets(transcript)
    if starts.size == 0:
        return _abstain("empty_transcript")
    features = speech_features(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds,
                               hop_seconds=hop_ms / 1000, band_snr=band_snr)
    hop = features.hop_seconds
    if features.rise_db.size < 10 or not features.active.any() or features.active.all():
        return _abstain("no_speech_contrast", num_onsets=int(starts.size))

    half_lags = int(math.ceil(max_offset_ms / 1000.0 / hop)) + 1
    lags = np.arange(-half_lags, half_lags + 1)  # lag l: text_offset = l * hop
    # Onset evidence: word start s (transcript clock) heard at s - offset.
    rise = np.minimum(features.rise_db, 30.0)
    positions = (starts[:, None] - features.start_seconds) / hop + 0.5 - lags[None, :]  # rise m dates (m - 0.5)·hop
    onset_curve = weights @ _gather(rise, positions)
    # Activity evidence on the grid: transcript active at audio time t + offset.
    grid_times = features.start_seconds + np.arange(features.active.size) * hop
    intervals = transcript.words if use_words else transcript.spans
    edges = np.array([[w.start_seconds, w.stop_seconds] for w in intervals], dtype=np.float64)
    vad = features.active - features.active.mean()
    stride = max(1, int(round(0.01 / hop)))  # activity at 10 ms lag steps is enough, then interpolated
    coarse = lags[::stride]
    coarse_values = np.empty(coarse.size)
    order = np.argsort(edges[:, 0])
    sorted_starts, sorted_stops = edges[order, 0], np.maximum.accumulate(edges[order, 1])
    for i, lag in enumerate(coarse):
        t = grid_times + lag * hop
        k = np.searchsorted(sorted_starts, t, side="right") - 1
        active_text = (k >= 0) & (t < sorted_stops[np.maximum(k, 0)])
        coarse_values[i] = float(vad @ (active_text - active_text.mean()))
    activity_curve = np.interp(lags, coarse, coarse_values)

    if np.ptp(onset_curve) <= 0:
        return _abstain("no_onsets", num_onsets=int(starts.size))
    if np.ptp(activity_curve) <= 0:
        return _abstain("no_activity_contrast", num_onsets=int(starts.size))
    # Activity gates the onset evidence: an onset match counts only where the transcript's active
    # regions also cover the detected speech (a beep or a neighbouring word's onset does not).
    support = np.clip((activity_curve - np.median(activity_curve)) / (np.max(activity_curve) - np.median(activity_curve)), 0.0, 1.0)
    onset_z = _standardise(onset_curve)
    gated = np.maximum(onset_z, 0.0) * np.square(support)
    peak = int(np.argmax(gated))
    exclusion = int(math.ceil(0.03 / hop))
    outside = np.ones(gated.size, dtype=bool)
    outside[max(peak - exclusion, 0) : peak + exclusion + 1] = False
    if int(outside.sum()) < 20:
        return _abstain("search_range_too_small", num_onsets=int(starts.size))
    combined = onset_z + _standardise(activity_curve)
    psr = _robust_z(float(combined[peak]), combined[outside])
    # The best rival peak (activity-gated, > 30 ms away) as a fraction of the chosen one: near 1, the
    # evidence cannot tell two offsets apart (periodic speech rhythm, unrelated speech).
    rival = float(np.max(gated[outside])) / max(float(gated[peak]), 1e-12)
    logger.debug("text offset peak %.1f ms: psr %.2f, support %.2f, rival %.2f",
                 (peak - half_lags) * hop * 1000, psr, support[peak], rival)
    confidence = float(np.clip((psr - _PSR_NOISE) / (_PSR_FULL - _PSR_NOISE), 0.0, 1.0))
    confidence *= float(np.clip(2.0 * (1.0 - rival), 0.0, 1.0))
    if peak < 2 or peak > gated.size - 3:
        return _abstain("peak_at_search_edge", num_onsets=int(starts.size), psr=psr,
                        best_guess_ms=(peak - half_lags) * hop * 1000.0)
    # Precision from the onset curve alone, near the combined peak.
    near = int(math.ceil(0.02 / hop))
    lo, hi = max(peak - near, 1), min(peak + near + 1, onset_curve.size - 1)
    fine = lo + int(np.argmax(onset_curve[lo:hi]))
    offset_seconds = (_parabolic(onset_curve, fine) - half_lags) * hop
    method = ("word" if use_words else "span") + "_onsets+activity"
    # Final precision: match each onset after a pause to the nearest detected acoustic onset; median.
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
            offset_seconds = float(np.median(strong[matched] - pick[matched]))
            method += "+matched"
    if confidence < min_confidence:
        return _abstain("low_confidence", num_onsets=int(starts.size), psr=psr, confidence=confidence,
                        best_guess_ms=offset_seconds * 1000.0, found=f"peak {psr:.1f}x sidelobe, rival peak "
                        f"{rival:.2f} of it: confidence {confidence:.2f}", needed=f"confidence >= {min_confidence}")
    return TextEstimate(offset_seconds * 1000.0, confidence, method, int(starts.size), psr, offset_seconds * 1000.0)


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
    return np.array([features.start_seconds + (_parabolic(rise, int(i)) - 0.5) * hop for i in candidate])


def _standardise(curve: np.ndarray) -> np.ndarray:
    centre = float(np.median(curve))
    spread = 1.4826 * float(np.median(np.abs(curve - centre)))
    spread = max(spread, 1e-3 * float(np.std(curve)), 1e-12)
    return (curve - centre) / spread


def refine_word_times(
    audio: AudioClip,
    words: Sequence[Word],
    *,
    search_ms: float = 50.0,
    min_rise_db: float = 12.0,
    quiet_db: float = 10.0,
    hop_ms: float = 2.5,
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
        hop_ms: grid step of the energy features.

    Returns:
        New :class:`Word` records, same order; only ``start_seconds`` may change.
    """
    if not (0 < search_ms <= 1000):
        raise ValueError(f"search_ms must be in (0, 1000], got {search_ms = }")
    if not (0.5 <= hop_ms <= 20.0):
        raise ValueError(f"hop_ms must be in [0.5, 20], got {hop_ms = }")
    if not words:
        return ()
    features = speech_features(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds, hop_seconds=hop_ms / 1000)
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
