"""Audio onsets block by block (issue #12, scale round of 2026-12-06, branch onsets37).

Oracle: the whole-clip computation :func:`audio_onsets` did before (one 1 ms-hop spectrogram of the clip, its
trailing floor, dB rises, detection, z-scores and each event's rising edge dated on the clip's spectrogram),
written out below, against :func:`audio_onsets`, which walks the clip in blocks of 20 s and reads each event's
100 ms of spectrogram again. The signal is 70 s of noise bursts (three seams, events placed on and just after
them): the events, their z, rise and tonality must be the same numbers. Memory: tracemalloc's peak grows with the
clip by less than the float32 audio (before: about 14x; 2 h at 16 kHz took 6 GB).
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import scipy.ndimage
import scipy.signal

from aligner.estimators import audio_onsets, tonal_rise_db

RATE = 16000


def _bursts(seconds: float, seed: int, *, at: tuple[float, ...] = ()) -> np.ndarray:
    """Noise bursts (30-300 ms, sharp or 10 ms attacks, levels over 30 dB) on a quiet noise bed, also starting at
    each of ``at``: float32, 16 kHz. Broadband: no narrow-band (tonal) candidates."""
    rng = np.random.default_rng(seed)
    signal = rng.standard_normal(int(seconds * RATE)) * 0.002
    starts = sorted(list(at) + list(np.cumsum(rng.uniform(0.25, 0.9, int(seconds / 0.4)))))
    for start in starts:
        if start > seconds - 0.4:
            break
        length = int(rng.uniform(0.03, 0.3) * RATE)
        first = int(start * RATE)
        attack = np.clip(np.arange(length) / (RATE * rng.choice([1e-4, 0.01])), 0.0, 1.0)
        burst = rng.standard_normal(length) * attack * np.exp(-np.arange(length) / (0.05 * RATE))
        signal[first: first + length] += burst * 10 ** rng.uniform(-1.5, 0.0)
    return signal.astype(np.float32)


def _reference(signal: np.ndarray, *, min_z: float = 4.0) -> tuple[np.ndarray, ...]:
    """The whole-clip computation (module docstring of ``aligner._onsets``), broadband detection only."""
    x = signal.astype(np.float64)
    frames = np.lib.stride_tricks.sliding_window_view(np.pad(x, (16, 16)), 32)[::16][: x.size // 16]
    power = np.square(np.abs(np.fft.rfft(frames * np.hanning(34)[1:-1], axis=1)[:, 1:16])) + 1e-12
    num = power.shape[0] // 10
    coarse = power[: num * 10].reshape(num, 10, -1).mean(axis=1)
    rows = scipy.ndimage.percentile_filter(coarse, 30, size=(30, 1), origin=(14, 0), mode="nearest")
    floor = np.repeat(np.vstack([rows[:1], rows[:-1]]), 10, axis=0)
    floor = np.vstack([floor, np.repeat(floor[-1:], power.shape[0] - floor.shape[0], axis=0)])
    level_db = 10.0 * np.log10(power)
    rise = np.zeros_like(level_db)
    rise[4:] = np.maximum(level_db[4:] - level_db[:-4], 0.0) * (level_db > 10.0 * np.log10(floor) + 6.0)[4:]
    detection = np.convolve(rise.sum(axis=1), np.ones(3) / 3.0, mode="same")
    centre = float(np.median(detection))
    z = (detection - centre) / max(1.4826 * float(np.median(np.abs(detection - centre))), 1.0)  # MIN_DETECTION_SPREAD
    peaks, _ = scipy.signal.find_peaks(z, height=min_z, distance=50)
    out = []
    for peak in peaks:
        lo, hi = max(0, peak - 60), min(power.shape[0], peak + 40)
        reference = floor[max(0, peak - 5)]
        rose = power[peak:hi].max(axis=0) > 4.0 * reference
        if not rose.any():
            continue
        excess = np.sqrt(np.maximum(power[lo:hi, rose] - reference[rose], 0.0)).sum(axis=1)
        top = peak - lo + int(np.argmax(excess[peak - lo: min(hi - lo, peak - lo + 30)]))
        if excess[top] <= 0:
            continue
        crossings = []
        for level in (0.2 * excess[top], 0.5 * excess[top]):
            below = np.flatnonzero(excess[: top + 1] < level)
            i = int(below[-1]) if below.size else -1
            a, b = excess[i], excess[i + 1]
            crossings.append(-1.0 if i < 0 else float(i + (level - a) / (b - a)) if b > a else float(i))
        t_low, t_high = crossings
        if t_low < 0 or t_high < t_low:
            continue
        start = lo + t_low - min((t_high - t_low) * (0.2 / 0.3), 4.0)
        out.append((start / 1000.0, max(float(z[peak]), min_z), (t_high - t_low) / 1000.0,
                    tonal_rise_db(signal, int(round(start * 16)))))
    order = np.argsort([event[0] for event in out])  # a rise dated before an earlier peak's
    return tuple(np.asarray(column)[order] for column in zip(*out))


def test_blockwise_onsets_are_the_whole_clip_computation():
    seams = (20.0, 40.0, 60.0)  # the blocks' boundaries (20 s each)
    # A rise across each seam, and events whose floor (the 300 ms before them) reaches back over it.
    at = tuple(s + d for s in seams for d in (-0.003, 0.045, 0.09, 0.2))
    signal = _bursts(70.0057, seed=3, at=at)  # and 5 frames after the floor grid's last 10 ms row
    onsets = audio_onsets(signal, RATE)
    times, strength, rise, tonality = _reference(signal)
    assert times.size > 100 and np.all(tonality < 30.0)  # no tonal candidates here: the reference leaves them out
    for seam in seams:  # events dated on both sides of each seam, within the floor's 300 ms after it
        assert np.sum(np.abs(times - seam) < 0.3) >= 3, times[np.abs(times - seam) < 1.0]
    np.testing.assert_array_equal(onsets.times_seconds, times)
    np.testing.assert_array_equal(onsets.strength, strength)
    np.testing.assert_array_equal(onsets.rise_seconds, rise)
    np.testing.assert_array_equal(onsets.tonality_db, tonality)
    assert onsets.duration_seconds == signal.size / RATE


def _traced_peak(seconds: int) -> int:
    signal = _bursts(seconds, seed=seconds)
    tracemalloc.start()
    try:
        audio_onsets(signal, RATE)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_onsets_memory_grows_by_less_than_the_audio():
    """Measured (2026-12-06, 60 s and 180 s of bursts): the traced peak grows by 0.60x the float32 audio (float64
    per-frame sums, detection and z-scores, the floor on its 10 ms grid); before, by 11.5x (the clip's spectrogram
    and four arrays of its size, and a float64 copy of the audio)."""
    short, long = 60, 180  # both several 20 s blocks
    _traced_peak(5)  # first-call allocations (FFT plans, imports) are not the clip's
    growth = (_traced_peak(long) - _traced_peak(short)) / ((long - short) * RATE * 4)
    assert growth < 1.0, growth
