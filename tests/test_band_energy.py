"""Band-SNR energy and log energy, block by block (issue #12, scale round of 2026-12-06, branch scale37).

Oracles: the straightforward computation on the whole signal at once — each band an FFT mask on the whole
(zero-padded) signal, each frame's mean square from the band signal, each band over its 20th percentile — against
:func:`band_snr_levels`, which masks one block of at most 65 s at a time with 8 s either side; and a whole-signal
running sum against :func:`log_energy`. Memory: tracemalloc's peak grows with the clip by less than the float32
audio (before: the full-length spectrum, each band's full-length float64 signal and a running sum of it, about
11x; 2 h at 16 kHz took about 5 GB).
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import scipy.fft

from aligner.estimators import band_snr_levels, log_energy, mono

RATE = 16000
EDGES_HZ = (100.0, 300.0, 600.0, 1000.0, 1600.0, 2500.0, 4000.0, 6000.0)
# band_snr_levels against the whole-signal masks, frames within 30 dB of the loudest (measured 2026-12-06 on the
# signal of the test, 5 ms / 20 ms windows: median 0.039 / 0.048 dB, 99th percentile 0.12 / 0.13 dB, max 0.22 /
# 0.25 dB; the reference itself moves the median by 0.02 dB with the length of its zero padding)
TOLERANCE_MEDIAN_DB = 0.1
TOLERANCE_P99_DB = 0.5
TOLERANCE_MAX_DB = 1.0


def _speechlike(seconds: float, seed: int) -> np.ndarray:
    """Noise bursts (80-400 ms, tones and noise, levels over 30 dB) on a quiet noise bed: float32, 16 kHz."""
    rng = np.random.default_rng(seed)
    signal = rng.standard_normal(int(seconds * RATE)) * 0.002
    t = 0.2
    while t < seconds - 0.5:
        length = int(rng.uniform(0.08, 0.4) * RATE)
        start = int(t * RATE)
        burst = rng.standard_normal(length) + np.sin(2 * np.pi * rng.uniform(120, 3000) * np.arange(length) / RATE)
        signal[start : start + length] += burst * 10 ** rng.uniform(-1.5, 0.0)
        t += length / RATE + rng.uniform(0.05, 0.8)
    return signal.astype(np.float32)


def _reference_levels(signal: np.ndarray, hop: int, window: int) -> np.ndarray:
    """Band-SNR level (dB) per frame, every band of the whole signal at once (16 s or more of zeros after it: the
    transform's wrap brings no sound near the signal's start)."""
    x = np.zeros(scipy.fft.next_fast_len(signal.size + 16 * RATE, real=True))
    x[: signal.size] = signal
    spectrum = np.fft.rfft(x)
    hz = np.fft.rfftfreq(x.size, 1.0 / RATE)
    frames = signal.size // hop
    starts = np.arange(frames) * hop - window // 2
    lo, hi = np.clip(starts, 0, signal.size), np.clip(starts + window, 0, signal.size)
    total = np.zeros(frames)
    for f_lo, f_hi in zip(EDGES_HZ, EDGES_HZ[1:]):
        band = np.fft.irfft(np.where((hz >= f_lo) & (hz < f_hi), spectrum, 0.0), n=x.size)[: signal.size]
        cumulative = np.concatenate([[0.0], np.cumsum(band**2)])
        power = (cumulative[hi] - cumulative[lo]) / window + 1e-12
        floor = max(np.percentile(power, 20), 1e-12)
        total += np.maximum(power / floor - 1.0, 0.0)
    return 10 * np.log10(total + 1e-12)


def test_band_levels_agree_with_the_whole_signal_computation_across_blocks():
    signal = _speechlike(150.0, seed=1)  # 150 s: three blocks (49 s of core each), two seams and the clip's ends
    (onset, hop), (activity, _) = band_snr_levels(signal, RATE, hop_seconds=0.0025, windows_seconds=(0.005, 0.020))
    assert hop == 0.0025 and onset.shape == activity.shape == (signal.size // 40,)
    for window, level in ((80, onset), (320, activity)):
        reference = _reference_levels(signal, 40, window)
        # Frames within 30 dB of the loudest (speech, not the floor: near a band's floor the level is 10·log10 of a
        # difference of nearly equal powers, and the whole-signal masks' tails, a burst's energy spread over the
        # clip 45-60 dB under it, are what the blocks leave out beyond 8 s).
        loud = reference > reference.max() - 30.0
        assert loud.mean() > 0.3
        difference = np.abs(level[loud] - reference[loud])  # dB
        assert np.median(difference) < TOLERANCE_MEDIAN_DB, np.median(difference)
        assert np.percentile(difference, 99) < TOLERANCE_P99_DB, np.percentile(difference, 99)
        assert difference.max() < TOLERANCE_MAX_DB, difference.max()


def test_log_energy_agrees_with_a_running_sum_and_keeps_float32_audio_float32():
    signal = _speechlike(70.0, seed=2)  # more than one chunk of 2^18 samples
    level, hop = log_energy(signal, RATE, hop_seconds=0.01, window_seconds=0.025)
    x = signal.astype(np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(x**2)])
    starts = np.arange(x.size // 160) * 160 - 200
    lo, hi = np.clip(starts, 0, x.size), np.clip(starts + 400, 0, x.size)
    reference = 10 * np.log10((cumulative[hi] - cumulative[lo]) / 400 + 1e-12)
    assert hop == 0.01
    np.testing.assert_allclose(level, reference, atol=1e-6)

    long = np.tile(signal, 9)  # 10.5 min
    tracemalloc.start()
    try:
        log_energy(long, RATE, hop_seconds=0.01, window_seconds=0.025)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 0.25 * long.nbytes, peak / long.nbytes  # before: a float64 copy and a running sum of it, 4x


def _traced_peak(seconds: int) -> int:
    signal = np.random.default_rng(seconds).standard_normal(seconds * RATE).astype(np.float32) * 0.1
    tracemalloc.start()
    try:
        band_snr_levels(signal, RATE, hop_seconds=0.0025, windows_seconds=(0.005, 0.020))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak


def test_band_levels_memory_grows_by_less_than_the_audio():
    """Measured (2026-12-06, 120 s and 360 s of noise): the traced peak grows by 0.35x the float32 audio (the
    per-frame powers, float32, of 7 bands and 2 windows at a 2.5 ms hop, and the float64 sums); before, by 8.6x
    (tracemalloc does not see all of the FFT's buffers: peak RSS grew by about 14x)."""
    short, long = 120, 360  # both at least two full blocks (49.5 s of core each)
    _traced_peak(20)  # first-call allocations (FFT plans, imports) are not the clip's
    growth = (_traced_peak(long) - _traced_peak(short)) / ((long - short) * RATE * 4)
    assert growth < 0.8, growth


def test_mono_keeps_one_float32_channel_without_a_copy_only_when_asked():
    samples = np.arange(12, dtype=np.float32).reshape(1, 12)
    kept = mono(samples, keep_float32=True)
    assert kept.dtype == np.float32 and np.shares_memory(kept, samples)
    converted = mono(samples)
    assert converted.dtype == np.float64 and not np.shares_memory(converted, samples)
    np.testing.assert_array_equal(converted, kept)
    stereo = np.stack([samples[0], -samples[0] + 2])
    np.testing.assert_array_equal(mono(stereo, keep_float32=True), np.ones(12, dtype=np.float32))
