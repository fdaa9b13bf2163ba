"""Audio event weights relative to the clip's loudest onsets, on simulated clips (no media), with counts asserted
against the simulation's truth: a few visual events that land by chance on ordinary onsets (a syllable, a note)
count for less than events met by the clip's outstanding sounds, so short true pairings answer and null pairings
(another clip's audio, audio played backwards) do not."""
from __future__ import annotations

import numpy as np
import pytest

from aligner.estimators import AudioOnsets, estimate_av_offset_from_features, onset_weights

FPS = 30.0


def test_weights_are_strength_over_the_90th_percentile() -> None:
    strength = np.arange(1.0, 21.0)  # 90th percentile (linear interpolation): 18.1
    weights = onset_weights(AudioOnsets(np.arange(20.0), strength, 21.0))
    assert weights == pytest.approx(np.clip(strength / 18.1, 0.25, 1.0))
    assert weights[-3:].tolist() == [1.0, 1.0, 1.0] and weights[0] == 0.25
    # A tone's boost counts before the percentile is taken: 40 dB of tonality doubles 2.5 times.
    tonal = AudioOnsets(np.arange(3.0), np.array([1.0, 1.0, 1.0]), 4.0, tonality_db=np.array([0.0, 0.0, 40.0]))
    boosted = np.array([1.0, 1.0, 2.0 ** 2.5])
    assert onset_weights(tonal) == pytest.approx(np.clip(boosted / np.percentile(boosted, 90), 0.25, 1.0))


def _clip(seed: int) -> tuple[np.ndarray, np.ndarray, AudioOnsets, float]:
    """(visual, pts, onsets, true offset in ms): 3-5 flashes over 6-14 s; speech-like audio onsets at 12/s with
    log-normal strengths; each flash heard at ``t + offset`` ± 1.5 ms as a sound between the bed's 75th percentile
    and twice its 90th."""
    rng = np.random.default_rng(seed)
    span = float(rng.uniform(6.0, 14.0))
    pts = np.arange(int(span * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    num_events = int(rng.integers(3, 6))
    frames = np.sort(rng.choice(np.arange(15, pts.size - 15), num_events, replace=False))
    visual[frames] = 80.0
    offset = float(rng.uniform(-0.3, 0.3))
    bed = np.sort(rng.uniform(0.0, span + 0.5, int(12 * (span + 0.5))))
    bed_strength = rng.lognormal(1.0, 0.7, bed.size)
    times = np.concatenate([bed, pts[frames] + offset + rng.normal(0.0, 0.0015, frames.size)])
    low, high = np.percentile(bed_strength, 85), 3.0 * np.percentile(bed_strength, 90)
    strength = np.concatenate([bed_strength, rng.uniform(low, high, frames.size)])
    order = np.argsort(times)
    return visual, pts, AudioOnsets(times[order], strength[order], span + 0.5), offset * 1000.0


def _reversed(onsets: AudioOnsets) -> AudioOnsets:
    return AudioOnsets(onsets.duration_seconds - onsets.times_seconds[::-1], onsets.strength[::-1],
                       onsets.duration_seconds)


def test_short_true_pairings_answer_and_null_pairings_do_not() -> None:
    clips = [_clip(seed) for seed in range(100)]
    right = wrong = 0
    for visual, pts, onsets, offset_ms in clips:
        est = estimate_av_offset_from_features(visual, pts, onsets)
        if not est.abstained:
            right += abs(est.av_offset_ms - offset_ms) <= 3.0
            wrong += abs(est.av_offset_ms - offset_ms) > 3.0
    assert wrong == 0 and right >= 90  # of 100 clips with 3-5 events (target: >= 90 % answered)
    other = reverse = 0
    for i, (visual, pts, onsets, _) in enumerate(clips):
        other += not estimate_av_offset_from_features(visual, pts, clips[(i + 1) % len(clips)][2]).abstained
        reverse += not estimate_av_offset_from_features(visual, pts, _reversed(onsets)).abstained
    assert other + reverse <= 2  # of 200 null pairings (target: <= 1 %)


def test_coincidences_with_ordinary_onsets_count_for_less() -> None:
    """The same 3 flashes, each met within 0.5 ms at one lag by an audio onset among a bed of 8 onsets a second:
    met by three of the bed's median-strength onsets (what chance does), the clip abstains; met by three sounds
    above the bed's 90th percentile (what flashes with their sounds do), it answers, at that lag."""
    rng = np.random.default_rng(7)
    pts = np.arange(int(10 * FPS)) / FPS
    visual = np.zeros(pts.size)
    frames = np.array([40, 150, 260])
    visual[frames] = 80.0
    bed = np.sort(rng.uniform(0.0, 10.5, 84))
    bed_strength = rng.lognormal(1.0, 0.7, bed.size)
    lag_seconds = 0.1234
    hits = pts[frames] + lag_seconds + np.array([0.0003, -0.0004, 0.0002])
    keep = np.min(np.abs(bed[:, None] - hits[None, :]), axis=1) > 0.03  # the bed leaves room around the hits
    results = {}
    for label, level in (("ordinary", np.median(bed_strength)), ("outstanding", 1.5 * np.percentile(bed_strength, 90))):
        times = np.concatenate([bed[keep], hits])
        strength = np.concatenate([bed_strength[keep], np.full(3, level)])
        order = np.argsort(times)
        onsets = AudioOnsets(times[order], strength[order], 10.5)
        results[label] = estimate_av_offset_from_features(visual, pts, onsets)
    assert results["ordinary"].abstained and results["ordinary"].abstain.reason == "below_null_threshold"
    assert not results["outstanding"].abstained
    assert results["outstanding"].av_offset_ms == pytest.approx(lag_seconds * 1000.0, abs=1.0)
    assert results["outstanding"].score > results["ordinary"].score + 1.0
