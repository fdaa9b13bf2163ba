"""Audio onsets in digital silence score on a finite scale (``aligner._onsets.MIN_DETECTION_SPREAD``).

Oracle: clicks synthesised here at known starts, in exact digital zeros (the detection curve's MAD is 0 there) and
over a white-noise floor (which has its own spread, so the floor must not change it).
"""
from __future__ import annotations

import numpy as np

from aligner.estimators import audio_onsets

RATE = 16000


def _clicks(starts: list[float], amplitudes: list[float], *, seconds: float, noise: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    out = np.random.default_rng(3).normal(0.0, noise, t.size) if noise > 0 else np.zeros(t.size)
    for start, amplitude in zip(starts, amplitudes):
        x = t - start
        inside = (x >= 0) & (x < 0.03)
        out[inside] += amplitude * np.sin(2 * np.pi * 1000.0 * x[inside]) * np.exp(-x[inside] / 0.01)
    return out


STARTS = [1.0, 2.3, 3.1, 4.7, 5.2, 6.9, 8.05]
AMPLITUDES = [0.5, 0.05, 0.3, 0.02, 0.4, 0.1, 0.2]


def test_clicks_in_digital_silence_are_dated_with_finite_strengths() -> None:
    onsets = audio_onsets(_clicks(STARTS, AMPLITUDES, seconds=9.0, noise=0.0), RATE)
    assert onsets.times_seconds.size == len(STARTS)
    np.testing.assert_allclose(onsets.times_seconds, STARTS, atol=0.002)
    # A MAD of 0 used to give z ≈ 1e11 to every one of them; the spread's floor keeps z on the scale a
    # recording with a noise floor has (a click's detection is hundreds of dB x bins).
    assert np.all(np.isfinite(onsets.strength))
    assert onsets.strength.max() < 1e4
    assert onsets.strength.min() >= 4.0


def test_a_noise_floor_keeps_its_own_spread() -> None:
    quiet = audio_onsets(_clicks(STARTS, AMPLITUDES, seconds=9.0, noise=0.003), RATE)
    loud = audio_onsets(_clicks(STARTS, [10 * a for a in AMPLITUDES], seconds=9.0, noise=0.03), RATE)
    # White noise's spread does not depend on its level (5.3-5.6): the same clicks 20 dB up over a floor 20 dB up
    # score the same.
    assert quiet.times_seconds.size == loud.times_seconds.size >= 5
    np.testing.assert_allclose(quiet.strength, loud.strength, rtol=0.05)
