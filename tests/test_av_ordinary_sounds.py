"""The ``ordinary_sounds`` gate on simulated clips (no media), with counts asserted against the simulation's truth:
flashes are heard as sounds that stand out of the soundtrack, so true pairings answer, while a chance alignment of
a few flashes with another clip's audio (or the audio played backwards) meets ordinary onsets and abstains."""
from __future__ import annotations

import numpy as np
import pytest

from aligner.estimators import AudioOnsets, estimate_av_offset_from_features, onset_ranks

FPS = 30.0


def test_onset_ranks_order_by_boosted_strength() -> None:
    onsets = AudioOnsets(np.arange(5.0), np.array([2.0, 9.0, 1.0, 3.0, 2.0]), 6.0)
    assert onset_ranks(onsets).tolist() == [0.3, 0.9, 0.1, 0.7, 0.5]  # the tie goes in time order
    # A tone counts as louder (tonal_boost: 40 dB of tonality doubles 2.5 times: 1 -> 5.7).
    tonal = AudioOnsets(np.arange(3.0), np.array([1.0, 4.0, 1.0]), 4.0, tonality_db=np.array([0.0, 0.0, 40.0]))
    assert onset_ranks(tonal).tolist() == pytest.approx([1 / 6, 0.5, 5 / 6])


def _clip(seed: int) -> tuple[np.ndarray, np.ndarray, AudioOnsets, float]:
    """(visual, pts, onsets, true offset in ms): 3-5 flashes over 6-14 s; speech-like audio onsets at 12/s with
    log-normal strengths; each flash heard at ``t + offset`` ± 1.5 ms as a sound between the bed's 85th percentile
    and three times its 90th (the matched sounds of the tune clips' true pairings rank 0.91-1 by quartiles)."""
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
    """True pairings: >= 95 of 100 clips with 3-5 events answer (target: >= 90 %), |error| median <= 1.5 ms and none
    more than 3.5 ms off. The offset is read at the top tenth of the pairs (``OFFSET_PERCENTILE``: visual dates are
    mostly late), so with 3-5 pairs it sits near their highest, which the simulated audio dating noise (1.5 ms SD)
    puts up to ~2 SD above the truth (3.2 ms at most here; the median's rule: 2.5 ms)."""
    clips = [_clip(seed) for seed in range(100)]
    errors_ms = []
    for visual, pts, onsets, offset_ms in clips:
        est = estimate_av_offset_from_features(visual, pts, onsets)
        if not est.abstained:
            errors_ms.append(abs(est.av_offset_ms - offset_ms))
    assert len(errors_ms) >= 95 and np.median(errors_ms) <= 1.5 and max(errors_ms) <= 3.5, errors_ms
    answered = ordinary = 0
    for i, (visual, pts, onsets, _) in enumerate(clips):
        for audio in (clips[(i + 1) % len(clips)][2], _reversed(onsets)):
            est = estimate_av_offset_from_features(visual, pts, audio)
            answered += not est.abstained
            ordinary += est.abstain is not None and est.abstain.reason == "ordinary_sounds"
    assert answered <= 1  # of 200 null pairings (target: <= 1 %); 4 without the gate
    assert ordinary >= 3  # the gate is what stops them


def test_coincidences_with_ordinary_onsets_abstain() -> None:
    """The same 3 flashes, each met within 0.5 ms at one lag by an audio onset among a bed of 8 onsets a second:
    met by three onsets at the bed's 75th percentile of strength (loud enough to count fully in the match, as chance
    finds among a bed's many onsets), the clip abstains (``ordinary_sounds``);
    met by three sounds louder than the whole bed (what flashes with their sounds do), it answers, at that lag."""
    rng = np.random.default_rng(7)
    pts = np.arange(int(10 * FPS)) / FPS
    visual = np.zeros(pts.size)
    frames = np.array([40, 150, 260])
    visual[frames] = 80.0
    bed = np.sort(rng.uniform(0.0, 10.5, 84))
    bed_strength = rng.lognormal(1.0, 0.5, bed.size)
    lag_seconds = 0.1234
    hits = pts[frames] + lag_seconds + np.array([0.0003, -0.0004, 0.0002])
    keep = np.min(np.abs(bed[:, None] - hits[None, :]), axis=1) > 0.03  # the bed leaves room around the hits
    results = {}
    for label, level in (("ordinary", np.percentile(bed_strength, 75)), ("outstanding", 1.5 * bed_strength.max())):
        times = np.concatenate([bed[keep], hits])
        strength = np.concatenate([bed_strength[keep], np.full(3, level)])
        order = np.argsort(times)
        results[label] = estimate_av_offset_from_features(visual, pts, AudioOnsets(times[order], strength[order], 10.5))
    assert results["ordinary"].abstained and results["ordinary"].abstain.reason == "ordinary_sounds"
    assert results["ordinary"].score >= 0.7  # the match alone passes the null threshold
    record = results["ordinary"].abstain.to_json()
    assert "louder than 7" in record["found"] and "80%" in record["needed"] and "--av-offset-ms" in record["hint"]
    assert not results["outstanding"].abstained
    assert results["outstanding"].av_offset_ms == pytest.approx(lag_seconds * 1000.0, abs=1.0)
