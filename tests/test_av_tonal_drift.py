"""Tonal events under speech and the drift's uncertainty (issue #12 follow-up, items 1-2).

Oracles: sounds synthesised here with known starts and kinds; a clock line with known offset and drift and
event dates disturbed by a known, attack-dependent error.
"""
from __future__ import annotations

import numpy as np

from aligner.estimators import AudioOnsets, audio_onsets, dating_sigma_seconds, tonal_rise_db
from aligner.estimators import drift_line as _drift_line
from aligner.estimators import onset_weights as _onset_weights

RATE = 16000


def _babble(seconds: float, seed: int) -> np.ndarray:
    """Speech-like bed: harmonic syllables (pitch 100-220 Hz, 8 harmonics, 120-300 ms, Hann) every 150-350 ms,
    plus a white floor 30 dB down: many broadband onsets, none of them a lone tone."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    out = rng.normal(0.0, 0.003, t.size)
    start = 0.05
    while start < seconds - 0.4:
        length = rng.uniform(0.12, 0.3)
        f0 = rng.uniform(100, 220)
        inside = (t >= start) & (t < start + length)
        x = t[inside] - start
        envelope = np.sin(np.pi * x / length) ** 2
        out[inside] += 0.1 * envelope * sum(np.sin(2 * np.pi * f0 * h * x + rng.uniform(0, 6)) / h for h in range(1, 9))
        start += rng.uniform(0.15, 0.35)
    return out


def _beep(t: np.ndarray, start: float, attack_ms: float = 6.0, hz: float = 1000.0) -> np.ndarray:
    x = t - start
    inside = (x >= 0) & (x < 0.04)
    out = np.zeros_like(t)
    ramp = 0.5 * (1 - np.cos(np.pi * np.clip(x[inside] / (attack_ms / 1000), 0, 1)))
    out[inside] = 0.25 * ramp * np.clip((0.04 - x[inside]) / 0.01, 0, 1) * np.sin(2 * np.pi * hz * x[inside])
    return out


def test_a_tone_starting_under_speech_is_isolated_in_frequency() -> None:
    """At 15 instants of a babble bed: with a 1 kHz beep starting there, without it, and with a noise burst (clap)."""
    bed = _babble(12.0, seed=1)
    t = np.arange(bed.size) / RATE
    instants = np.arange(1.0, 11.0, 0.7)
    rng = np.random.default_rng(2)
    beeps, plain, claps = [], [], []
    for s in instants:
        beeps.append(tonal_rise_db(bed + _beep(t, s), int(s * RATE)))
        plain.append(tonal_rise_db(bed, int(s * RATE)))
        burst = bed.copy()
        inside = (t >= s) & (t < s + 0.03)
        burst[inside] += 0.3 * rng.normal(0, 1, inside.sum()) * np.exp(-(t[inside] - s) / 0.006)
        claps.append(tonal_rise_db(burst, int(s * RATE)))
    assert np.median(beeps) >= 40.0 and np.min(beeps) >= 20.0, np.round(beeps)
    assert np.median(plain) <= 20.0, np.round(plain)
    assert np.median(claps) <= 20.0, np.round(claps)  # a clap rises over the whole spectrum


def test_beeps_under_speech_outweigh_the_syllables() -> None:
    """Six 1 kHz beeps with 6 ms Hann attacks under continuous babble (the independent evaluator's nuisance): each
    is found and dated within 3 ms, and weighs fully in the matcher while most syllables do not (broadband energy
    rise alone missed one beep and ranked the rest like syllables)."""
    bed = _babble(12.0, seed=3)
    t = np.arange(bed.size) / RATE
    starts = [1.2345 + 1.7 * i for i in range(6)]
    audio = bed + sum(_beep(t, s) for s in starts)
    onsets = audio_onsets(audio, RATE)
    assert onsets.tonality_db is not None and onsets.rise_seconds is not None
    weights = _onset_weights(onsets)
    near = np.min(np.abs(onsets.times_seconds[:, None] - np.asarray(starts)[None, :]), axis=1) <= 0.02
    assert float(np.mean(weights[~near] == 1.0)) <= 0.25, np.round(weights[~near], 2)
    for s in starts:
        j = int(np.argmin(np.abs(onsets.times_seconds - s)))
        assert abs(onsets.times_seconds[j] - s) <= 0.003, (s, onsets.times_seconds[j])
        assert weights[j] == 1.0 and onsets.tonality_db[j] >= 30.0


def test_dating_sigma_grows_with_the_rise() -> None:
    onsets = AudioOnsets(np.array([1.0, 2.0, 3.0]), np.ones(3), 4.0, rise_seconds=np.array([0.0, 0.002, 0.008]))
    sigma = dating_sigma_seconds(onsets, np.arange(3))
    assert sigma[0] == np.float64(0.00075) and sigma[0] < sigma[1] < sigma[2]
    assert sigma[2] == np.sqrt(0.00075 ** 2 + (0.45 * 0.008) ** 2)
    plain = AudioOnsets(np.array([1.0]), np.ones(1), 4.0)
    assert dating_sigma_seconds(plain, np.array([0])).tolist() == [0.00075]


def test_weighted_line_trusts_sharp_events() -> None:
    """200 simulated clips: 20 events over 30 s, true offset 40 ms and drift 900 ppm; half sharp (dated within
    ~0.5 ms), half soft (rise 6 ms, dated +1..+5 ms late, as soft attacks are). The weighted fit's drift error is
    smaller than the equal-weight fit's (median over clips), its standard error is smaller, and honest: the error
    is within 2 SE on >= 85 % of clips."""
    weighted, equal, within, se_w, se_e = [], [], [], [], []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        t = np.sort(rng.uniform(1.0, 31.0, 20))
        soft = np.arange(20) % 2 == 1
        dating = np.where(soft, rng.uniform(0.001, 0.005, 20), rng.normal(0.0, 0.0005, 20))
        r = 0.040 + 900e-6 * t + dating
        sigma = np.sqrt(0.00075 ** 2 + (0.45 * np.where(soft, 0.006, 0.0005)) ** 2)
        _, slope, se_ppm, _ = _drift_line(t, r, sigma)
        _, equal_slope, equal_se, _ = _drift_line(t, r, np.full(20, 0.00075))
        weighted.append(abs(slope * 1e6 - 900))
        equal.append(abs(equal_slope * 1e6 - 900))
        within.append(weighted[-1] <= 2 * se_ppm)
        se_w.append(se_ppm)
        se_e.append(equal_se)
    assert np.median(weighted) < 0.8 * np.median(equal), (np.median(weighted), np.median(equal))
    assert np.median(se_w) < np.median(se_e) and np.mean(within) >= 0.85, (np.median(se_w), np.mean(within))
