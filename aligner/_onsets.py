"""Audio events dated at the start of their rise, whatever the attack: :func:`audio_onsets`.

Why not the energy rise: a sound whose attack is a 30 ms raised cosine has its steepest energy rise
~15 ms after it starts, so an estimator that dates onsets by the rise is late by an amount that depends
on the attack (issue #12: +11..+20 ms on Hann-attack beeps). Here each event is dated by extrapolating
its rising edge back to the floor::

    power per bin      P[f, m]     2 ms Hann window, 1 ms hop, 16 kHz (frame m centred at m ms)
    floor per bin      N[f, m]     30th percentile of the last 300 ms of P (trailing, so a sound
                                   does not raise its own floor)
    detection          D[m] = Σ_f max(0, dB(P[f,m]) − dB(P[f,m−4]))  over bins ≥ 6 dB above N
                       peaks of D that stand out of the clip's D (robust z ≥ ``min_z``) → candidates
    dating             bins that rose (≥ 6 dB over floor) near the peak; excess amplitude
                       A(m) = Σ_f √max(0, P[f,m] − N[f]);   A_max its maximum just after the peak
                       t20, t50 = last times before the maximum where A crosses 20 % and 50 % of A_max
                       start    = t20 − min((t50 − t20) · 0.2 / 0.3, 4 ms)   (line through both, back to A = 0,
                                                                            at most 4 ms before t20)

    amplitude  A_max ┤            ______
                50 % ┤         _/
                20 % ┤      _/ |
                     ┤ ____/   |                       start: where the line through the 20 % and
                     └──┴──┴───┴──────► m               50 % points meets A = 0
                      start t20 t50

Tones under speech (issue #12 follow-up: an independent evaluator's 1 kHz beeps with 6 ms Hann attacks under
unfiltered speech scored like syllables, and 4 of 8 event clips abstained). Broadband rise sums dB over 500 Hz
bins, so a tone counts in two or three of them while a syllable counts in all. Two additions on 32 ms windows
(31 Hz bins), see :func:`tonal_rise_db`::

    tonality   max over bins of the rise (after-window vs before-window, dB) − its median over bins
    candidates 4 ms grid: tonality peaks ≥ 30 dB, ≥ 50 ms apart, not within 20 ms of a broadband
               detection → dated by the same rising-edge line (tune set: 13 % of beeps under speech were
               missed by the broadband detection)
    weight     the matcher weighs an event by z × 2^((tonality − 25 dB) / 6 dB) over the clip's median z
               (:func:`tonal_boost`; z is ``min_z`` for a tonal candidate): a tone under speech counts like
               a clap, the syllables keep their weight

Tune set (new generator, speech over the whole clip on half the clips): tonality median 56 dB for beeps,
17.5 dB for other onsets (p90 31); with both additions 19 of 21 event clips answer at the recalibrated null
threshold, against 16 without (``aligner._estimate``). Each event also carries its rise time (20 % → 50 %):
soft attacks are dated less precisely (error SD 0.75 ms under 2 ms of rise, 2-3.7 ms above 3 ms), which the
drift fit uses as weights.

Attack-shape dependence of the back-extrapolation (analytic, noise-free, attack length T): linear
ramp 0, concave exponential ``1 − e^{−4x}`` −0.02·T, raised cosine (Hann) +0.16·T (4.7 ms at T = 30 ms);
the analysis window makes every rise start earlier by up to about a millisecond. The line reaches back from t20
0.14·T (Hann), 0.2·T (linear) or 0.08·T (exponential), so the 4 ms limit dates a linear attack longer than 20 ms late
by 0.2·T − 4 ms (+2 ms at 30 ms). A longer reach is a bed that swells in the same bins during the event's attack (a
syllable or a note under it): the excess keeps growing after the event's own rise, its 50 % point comes 9-28 ms after
the start while its 20 % point is the start, and the unlimited line dated such events 5-19 ms early (tune seeds:
events more than 5 ms off 50 → 23 of 638; BENCHMARKS.md, "A/V answer rate on short bedded clips"). Dating at a fixed
threshold instead would give the Hann attack +0.2·T at 10 % and +0.3·T at 20 %. Measured medians per
attack on the tune set (BENCHMARKS.md has both sets) are within ±2 ms: sharp −1.1, Hann +1.7,
exponential −0.5, linear −0.4 ms (a 4 ms window gave sharp −1.75 and 73 % instead of 78 % of events
within 2.5 ms of the median).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from aligner._signals import mono

logger = logging.getLogger(__name__)

__all__ = ["AudioOnsets", "MIN_DETECTION_SPREAD", "audio_onsets"]

_RATE = 16000
_HOP = 16  # 1 ms
_WINDOW = 32  # 2 ms
_MAX_HZ = 7800.0
_BINS = int(_MAX_HZ / (_RATE / _WINDOW))  # 500 Hz bins 1.._BINS (DC left out)
_LOW, _HIGH = 0.2, 0.5  # rising-edge levels (fractions of the event's peak excess amplitude) the line goes through
# The dating line reaches back from the 20 % point at most this far (module docstring: a clean attack of up to 30 ms
# reaches back at most 4.1 ms, Hann, or 6 ms, linear; a bed swelling under the event, 6-19 ms). 4 ms of 2-6 ms tried
# on the tune seeds (TUNE and TUNE2): BENCHMARKS.md, "A/V answer rate on short bedded clips".
_MAX_BACK_EXTRAPOLATION_MS = 4.0
MIN_DETECTION_SPREAD = 1.0
"""Least robust spread (1.4826 × MAD, in dB × bins) the detection's z-scores divide by: a guard against a MAD of
0, below every recording with a noise floor. White noise at any level gives 5.3-5.6; the 384 clips of 16 wild
sets (codec low-passes included) 3.6-16.4 and 12 real recordings (Big Buck Bunny, PsychoPy's talking heads,
praatio's and parselmouth's speech, LibriVox) 8.7-29.5, so none is affected; of ``sample_data``, clip05 (0: digital
silence) is. Without it, digital silence or a steady tone had
a MAD of 0 and every codec ripple scored z ≈ 1e10 (a 440 Hz tone in 16 kbit/s AAC: 31 events, weighed like
claps). A floor of 5 (white noise) was tried: it changed 4 wild clips with codec-narrowed spreads (3.6-3.9) and
their null pairings, one more of which answered on REPORT31 and FRESH each."""


@dataclass(frozen=True)
class AudioOnsets:
    """Dated audio events of a clip."""

    times_seconds: np.ndarray
    """float64 ``[E]``, presentation time of each event's start (clip ``start_seconds`` added), ascending."""
    strength: np.ndarray
    """float64 ``[E]``, robust z-score of each event's detection peak (how much it stands out; ``min_z`` for a
    tonal candidate); :func:`tonal_boost` of ``tonality_db`` raises a tone's weight in the matcher."""
    duration_seconds: float
    """Length of the analysed audio."""
    rise_seconds: Optional[np.ndarray] = None
    """float64 ``[E]``, time from the 20 % to the 50 % point of each event's rising edge: how soft its attack is,
    hence how far its date may be off (the back-extrapolation's error grows with the attack); None: unknown."""
    tonality_db: Optional[np.ndarray] = None
    """float64 ``[E]``, how isolated in frequency each event's rise is (:func:`tonal_rise_db`); None: unknown."""

    def __post_init__(self) -> None:
        if self.times_seconds.shape != self.strength.shape:
            raise ValueError(f"times and strength must match, got {self.times_seconds.shape} and {self.strength.shape}")
        times = np.asarray(self.times_seconds, dtype=np.float64)
        if not (np.isfinite(times).all() and np.isfinite(np.asarray(self.strength, dtype=np.float64)).all()):
            raise ValueError(f"times_seconds and strength must be finite, got {np.count_nonzero(~np.isfinite(times))} "
                             f"NaN/inf times and {np.count_nonzero(~np.isfinite(self.strength))} NaN/inf strengths")
        if np.any(np.diff(times) < 0):
            raise ValueError(f"times_seconds must be ascending, got {np.count_nonzero(np.diff(times) < 0)} "
                             f"decreasing steps, the first after event {int(np.argmax(np.diff(times) < 0))}")
        for name in ("rise_seconds", "tonality_db"):
            value = getattr(self, name)
            if value is not None and value.shape != self.times_seconds.shape:
                raise ValueError(f"{name} must match times, got {value.shape} and {self.times_seconds.shape}")

    def __repr__(self) -> str:
        return f"AudioOnsets(events={self.times_seconds.size}, duration_seconds={self.duration_seconds:.2f})"


def _to_16k(signal: np.ndarray, sample_rate: int) -> np.ndarray:
    if sample_rate == _RATE:
        return signal
    import math

    import scipy.signal

    g = math.gcd(int(sample_rate), _RATE)
    return scipy.signal.resample_poly(signal, _RATE // g, int(sample_rate) // g)


def _power(signal: np.ndarray, first: int, last: int) -> np.ndarray:
    """``P[m, f]`` for frames ``first <= m < last``: power (+1e-12) of the 2 ms Hann frame centred on sample
    ``m * hop``, signal zero padded. Frames are independent, so any range gives the rows of the whole clip's."""
    lo, hi = first * _HOP - _WINDOW // 2, last * _HOP  # frame m reads samples [m·hop − 16, m·hop + 16)
    padded = np.pad(signal[max(0, lo): min(signal.size, hi)], (max(0, -lo), max(0, hi - signal.size)))
    frames = np.lib.stride_tricks.sliding_window_view(padded, _WINDOW)[::_HOP][: last - first]
    spectrum = np.fft.rfft(frames * np.hanning(_WINDOW + 2)[1:-1], axis=1)
    return np.square(np.abs(spectrum[:, 1: _BINS + 1])) + 1e-12


# Frames per block of the detection pass (a multiple of 10, the floor's grid): 20 s, some 20-30 MB of temporaries.
_BLOCK_FRAMES = 20_000
# Frames read before a block: the floor of frame m is the 30th percentile of the 30 rows of 10 ms ending at row
# m // 10 − 1 (the last rows' floor is held from row num_rows − 2), and the rise compares frame m with m − 4.
_HISTORY_FRAMES = 320


def _floor_row(frame, num_rows: int):
    """Row of the 10 ms floor grid that frame ``frame`` (an int or an int array) uses: the previous row, held
    (:func:`_floor_rows`)."""
    return np.maximum(0, np.minimum(frame // 10, num_rows - 1) - 1)


def _floor_rows(power: np.ndarray) -> np.ndarray:
    """30th percentile of the previous 300 ms of power, per bin, on a 10 ms grid: row ``i`` from the means of
    rows ``[i − 29, i]`` (trailing: a sound does not raise its own floor; before the first row, the first row);
    frame ``m`` uses row ``m // 10 − 1`` (:func:`_floor_row`). ``power`` starts on the grid."""
    import scipy.ndimage

    num = power.shape[0] // 10
    coarse = power[: num * 10].reshape(num, 10, -1).mean(axis=1)
    return scipy.ndimage.percentile_filter(coarse, 30, size=(30, 1), origin=(14, 0), mode="nearest")


def _rise_sums(signal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(Σ_f rise[m, f], floor rows)`` (module docstring): the detection's per-frame sum of dB rises over the
    bins above their floor, and the floor on its 10 ms grid ``[num_frames // 10, bins]``. Block by block
    (``_BLOCK_FRAMES`` frames, each with ``_HISTORY_FRAMES`` before it): memory is one block's spectrogram, not
    the clip's (BENCHMARKS.md, "Audio onsets blockwise"), and every value is the one the whole clip at once gives."""
    num_frames = signal.size // _HOP
    num_rows = num_frames // 10
    sums = np.zeros(num_frames)
    floor_rows = np.empty((num_rows, _BINS))
    for first in range(0, num_frames, _BLOCK_FRAMES):
        last = min(num_frames, first + _BLOCK_FRAMES)
        begin = max(0, first - _HISTORY_FRAMES)  # on the 10 ms grid, as first is
        power = _power(signal, begin, last)
        floor = _floor_rows(power)  # rows begin // 10 ...; exact from row begin // 10 + 29 (or all, from 0)
        row0 = begin // 10
        floor_rows[first // 10: row0 + floor.shape[0]] = floor[first // 10 - row0:]
        rows = _floor_row(np.arange(first, last), num_rows) - row0
        level_db = 10.0 * np.log10(power)
        above = level_db[first - begin:] > 10.0 * np.log10(floor[rows]) + 6.0
        rise = np.zeros((last - first, power.shape[1]))
        lead = max(0, 4 - first)  # rise of frames 0..3 is 0
        m = first - begin + lead
        rise[lead:] = np.maximum(level_db[m:] - level_db[m - 4: level_db.shape[0] - 4], 0.0) * above[lead:]
        sums[first:last] = rise.sum(axis=1)
    return sums, floor_rows


def _crossing_back(amplitude: np.ndarray, top: int, level: float) -> float:
    """Last fractional index before ``top`` where ``amplitude`` rises through ``level`` (-1 if none)."""
    below = np.flatnonzero(amplitude[: top + 1] < level)
    if below.size == 0:
        return -1.0
    i = int(below[-1])
    a, b = amplitude[i], amplitude[i + 1]
    return float(i + (level - a) / (b - a)) if b > a else float(i)


_TONAL_WINDOW = 512  # 32 ms at 16 kHz: 31 Hz bins, fine enough to resolve a tone from speech harmonics
_TONAL_GAP = 16  # 1 ms between the "before" and "after" windows and the event's start
_TONAL_BINS = (8, 240)  # 250 Hz .. 7.5 kHz (31.25 Hz bins)
# The matcher's weight factor (tonal_boost): 2 ** (max(0, tonality - _TONAL_REFERENCE_DB) / _TONAL_DOUBLING_DB)
_TONAL_REFERENCE_DB = 25.0
_TONAL_DOUBLING_DB = 6.0


def tonal_rise_db(signal: np.ndarray, start_index: int) -> float:
    """How isolated in frequency a rise at ``start_index`` (16 kHz samples) is, in dB.

    ::

        before  [start − 1 ms − 32 ms, start − 1 ms)     after  [start + 1 ms, start + 33 ms)   (Hann, 31 Hz bins)
        rise[f] = dB(P_after[f] + ε) − dB(P_before[f] + ε)          ε = 1e-4 × mean power of both
        tonality = max_f (rise smoothed over 3 bins) − median_f rise        over 250 Hz .. 7.5 kHz

    A tone (beep) that starts under speech rises in two or three bins by 30-60 dB while the rest of the spectrum
    keeps its level: a large value (tune set: median 56 dB). A speech onset or a clap rises over many bins
    together (median 10-18 dB); a music note's harmonics are in between. Broadband energy rise (the detection)
    ranks a beep under speech like a syllable; this measure does not.
    """
    window = np.hanning(_TONAL_WINDOW)

    def power(first: int) -> np.ndarray:
        segment = signal[max(0, first): max(0, first + _TONAL_WINDOW)]
        if segment.size < _TONAL_WINDOW:
            segment = np.pad(segment, (0, _TONAL_WINDOW - segment.size))
        return np.square(np.abs(np.fft.rfft(segment * window)))

    after = power(start_index + _TONAL_GAP)
    before = power(start_index - _TONAL_GAP - _TONAL_WINDOW)
    epsilon = 1e-12 + 1e-4 * float(after.mean() + before.mean())
    rise = 10.0 * np.log10((after + epsilon) / (before + epsilon))
    lo, hi = _TONAL_BINS
    smoothed = np.convolve(rise, np.ones(3) / 3.0, mode="same")[lo:hi]
    return float(smoothed.max() - np.median(rise[lo:hi]))


def tonal_boost(tonality_db: np.ndarray) -> np.ndarray:
    """Factor on an event's detection strength for its tonality: ``2^(max(0, tonality − 25 dB) / 6 dB)``."""
    return np.power(2.0, np.maximum(0.0, np.asarray(tonality_db, dtype=np.float64) - _TONAL_REFERENCE_DB)
                    / _TONAL_DOUBLING_DB)


def _date_rise(signal: np.ndarray, floor_rows: np.ndarray, peak: int) -> Optional[tuple[float, float]]:
    """``(start, rise)`` in 1 ms frames of the event detected at frame ``peak``: the line through the 20 % and 50 %
    points of its rising edge, back to the floor (module docstring); ``rise`` is the 20 % → 50 % time. None when
    nothing rose. Reads the power of frames ``[peak − 60, peak + 40)`` only."""
    num_frames = signal.size // _HOP
    lo, hi = max(0, peak - 60), min(num_frames, peak + 40)
    if hi <= peak:
        return None
    power = _power(signal, lo, hi)
    reference = floor_rows[_floor_row(max(0, peak - 5), floor_rows.shape[0])]
    rose = power[peak - lo:].max(axis=0) > 4.0 * reference
    if not rose.any():
        return None
    excess = np.sqrt(np.maximum(power[:, rose] - reference[rose], 0.0)).sum(axis=1)
    local_top = peak - lo + int(np.argmax(excess[peak - lo: min(hi - lo, peak - lo + 30)]))
    top_value = float(excess[local_top])
    if top_value <= 0:
        return None
    t_low = _crossing_back(excess, local_top, _LOW * top_value)
    t_high = _crossing_back(excess, local_top, _HIGH * top_value)
    if t_low < 0 or t_high < t_low:
        return None
    back = min((t_high - t_low) * (_LOW / (_HIGH - _LOW)), _MAX_BACK_EXTRAPOLATION_MS * _RATE / 1000 / _HOP)
    return lo + t_low - back, t_high - t_low


_TONAL_HOP = 64  # 4 ms
_TONAL_DETECT_DB = 30.0


def _tonality_curve(signal: np.ndarray) -> np.ndarray:
    """Tonality (:func:`tonal_rise_db`, windows abutting) at every 4 ms step ``m``: the rise starting at sample
    ``(m + 8) * 64``. Computed in blocks of 2048 steps (8 s), so memory stays bounded on long clips."""
    frames = np.lib.stride_tricks.sliding_window_view(signal, _TONAL_WINDOW)[::_TONAL_HOP]
    lo, hi = _TONAL_BINS
    shift = _TONAL_WINDOW // _TONAL_HOP
    window = np.hanning(_TONAL_WINDOW)
    out = np.zeros(max(0, frames.shape[0] - shift))
    block = 2048
    for first in range(0, out.size, block):
        last = min(out.size, first + block)
        chunk = frames[first: last + shift]  # before[m] = chunk[m], after[m] = chunk[m + shift]
        spectrum = np.square(np.abs(np.fft.rfft(chunk * window, axis=1)))[:, : hi + 1]
        after, before = spectrum[shift:], spectrum[:-shift]
        epsilon = 1e-12 + 1e-4 * (after.mean(axis=1, keepdims=True) + before.mean(axis=1, keepdims=True))
        rise = 10.0 * np.log10((after + epsilon) / (before + epsilon))
        smoothed = (rise[:, lo - 1: hi - 1] + rise[:, lo:hi] + rise[:, lo + 1: hi + 1]) / 3.0
        out[first:last] = smoothed.max(axis=1) - np.median(rise[:, lo:hi], axis=1)
    return out


def _tonal_candidates(signal: np.ndarray) -> list[int]:
    """1 ms frames where a narrow-band rise (:func:`_tonality_curve`) peaks above ``_TONAL_DETECT_DB``, at least
    50 ms apart."""
    import scipy.signal

    if signal.size < 4 * _TONAL_WINDOW:
        return []
    tonality = _tonality_curve(signal)
    peaks, _ = scipy.signal.find_peaks(tonality, height=_TONAL_DETECT_DB, distance=max(1, 50 * _RATE // 1000 // _TONAL_HOP))
    # Step m's "after" window starts at sample (m + shift) * hop: the rise's start, in 1 ms frames.
    shift = _TONAL_WINDOW // _TONAL_HOP
    return [int((m + shift) * _TONAL_HOP // _HOP) for m in peaks]


def audio_onsets(
    samples: torch.Tensor | np.ndarray,
    sample_rate: int,
    *,
    start_seconds: float = 0.0,
    min_z: float = 4.0,
    min_gap_seconds: float = 0.05,
) -> AudioOnsets:
    """Detect the clip's audio events and date each at the start of its rise (see module docstring).

    Args:
        samples: ``[C, N]`` or ``[N]`` float audio.
        sample_rate: samples per second (resampled to 16 kHz inside).
        start_seconds: presentation time of the first sample.
        min_z: detection peaks must stand this many robust standard deviations (at least
            :data:`MIN_DETECTION_SPREAD`) above the clip's median.
        min_gap_seconds: closer peaks are one event (the stronger is kept).

    Returns:
        :class:`AudioOnsets` (possibly empty).

    Raises:
        ValueError: ``sample_rate`` <= 0, ``start_seconds`` not finite, or samples that are not finite (``mono``).
    """
    import scipy.signal

    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    if not np.isfinite(start_seconds):
        raise ValueError(f"start_seconds must be finite, got {start_seconds = }")
    signal = mono(samples, keep_float32=True)  # float32 at 16 kHz stays float32: every product below is float64
    if int(sample_rate) != _RATE:
        signal = _to_16k(signal.astype(np.float64, copy=False), int(sample_rate))
    duration = signal.size / _RATE
    empty = AudioOnsets(np.zeros(0), np.zeros(0), duration)
    if signal.size < 20 * _WINDOW or not np.any(signal):
        return empty
    sums, floor_rows = _rise_sums(signal)
    detection = np.convolve(sums, np.ones(3) / 3.0, mode="same")
    centre = float(np.median(detection))
    spread = max(1.4826 * float(np.median(np.abs(detection - centre))), MIN_DETECTION_SPREAD)
    z = (detection - centre) / spread
    peaks, _ = scipy.signal.find_peaks(z, height=min_z, distance=max(1, int(min_gap_seconds * 1000)))
    # Tones that start under speech or music barely move the broadband detection: add the narrow-band rises.
    found = [int(p) for p in peaks]
    for candidate in _tonal_candidates(signal):
        if not found or np.min(np.abs(np.asarray(found) - candidate)) > 20:
            found.append(candidate)
    times, strengths, rises, tonal = [], [], [], []
    for peak in found:
        dated = _date_rise(signal, floor_rows, peak)
        if dated is None:
            continue
        start_frame, rise_frames = dated
        times.append(start_seconds + start_frame * _HOP / _RATE)
        tonality = tonal_rise_db(signal, int(round(start_frame * _HOP)))
        strengths.append(max(float(z[peak]), min_z))
        rises.append(rise_frames * _HOP / _RATE)
        tonal.append(tonality)
    if not times:
        return empty
    order = np.argsort(times)
    return AudioOnsets(np.asarray(times)[order], np.asarray(strengths)[order], duration,
                       rise_seconds=np.asarray(rises)[order], tonality_db=np.asarray(tonal)[order])
