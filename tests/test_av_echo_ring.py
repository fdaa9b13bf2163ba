"""The A/V peak's local chance level (the ring's median) on simulated clips whose events are heard in a
reverberant room, with counts asserted against the simulation's truth: each event's sound is followed by the
room's reflections (onsets at the same few delays after every event), which raise the match count at narrow lags
just after the peak. They are the same sound, not chance: the true pairings answer; other clips' audio and
lip-like humps still do not."""
from __future__ import annotations

import numpy as np

from aligner.estimators import AudioOnsets, estimate_av_offset_from_features

FPS = 30.0
SPAN_SECONDS = 20.0
NUM_EVENTS = 5


def _room_clip(seed: int, *, echoes: bool = True, mouth: bool = False) -> tuple[np.ndarray, np.ndarray, AudioOnsets, float]:
    """(visual, pts, onsets, true offset ms): 5 flashes (60 luma) over speech-like onsets (12/s, strength 3-6).

    Each flash is heard at ``t + offset`` ± 1 ms with probability 0.8 (strength 6-10); with ``echoes`` the room's
    4 reflection delays (35-95 ms, drawn once per clip) each follow every flash's sound with probability 0.9
    (±1.5 ms, strength 2.5-4: weaker than the sound). ``mouth``: instead of sounds, 6 speech onsets within ±60 ms
    of each brightening (a mouth following the speech, no event).
    """
    rng = np.random.default_rng(seed)
    pts = np.arange(int(SPAN_SECONDS * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    frames = (np.arange(NUM_EVENTS) * (SPAN_SECONDS - 2) / NUM_EVENTS * FPS + 20 + rng.integers(0, 20, NUM_EVENTS))
    frames = frames.astype(int)
    visual[frames] = 60.0
    offset = float(rng.uniform(-0.3, 0.3))
    times = list(np.sort(rng.uniform(0.0, SPAN_SECONDS + 1.0, int(12 * (SPAN_SECONDS + 1.0)))))
    strength = list(rng.uniform(3.0, 6.0, len(times)))
    delays = rng.uniform(0.035, 0.095, 4)
    for t in pts[frames]:
        if mouth:
            times += list(t + offset + rng.uniform(-0.06, 0.06, 6))
            strength += list(rng.uniform(3.0, 6.0, 6))
            continue
        heard = t + offset + rng.normal(0.0, 0.001)
        if rng.random() < 0.8:
            times.append(heard)
            strength.append(rng.uniform(6.0, 10.0))
        for delay in delays if echoes else ():
            if rng.random() < 0.9:
                times.append(heard + delay + rng.normal(0.0, 0.0015))
                strength.append(rng.uniform(2.5, 4.0))
    order = np.argsort(times)
    onsets = AudioOnsets(np.asarray(times)[order], np.asarray(strength)[order], SPAN_SECONDS + 1.0)
    return visual, pts, onsets, offset * 1000.0


def _answered_right(clips: list) -> tuple[int, int]:
    right = wrong = 0
    for visual, pts, onsets, offset_ms in clips:
        est = estimate_av_offset_from_features(visual, pts, onsets)
        if not est.abstained:
            right += abs(est.av_offset_ms - offset_ms) <= 3.0
            wrong += abs(est.av_offset_ms - offset_ms) > 3.0
    return right, wrong


def test_events_with_room_echoes_answer_as_often_as_dry_ones() -> None:
    """60 clips, each with and without its reflections. Measured (BENCHMARKS.md, "A/V: a ring robust to the events'
    own echoes"): dry 40, with echoes 38 (the ring's mean: 21); none wrong."""
    echo_clips = [_room_clip(seed) for seed in range(60)]
    dry_right, dry_wrong = _answered_right([_room_clip(seed, echoes=False) for seed in range(60)])
    echo_right, echo_wrong = _answered_right(echo_clips)
    assert dry_wrong == 0 and echo_wrong == 0
    assert dry_right >= 36
    assert echo_right >= dry_right - 4
    # Other clips' audio (with its own echoes) with each video: no answer.
    false = sum(not estimate_av_offset_from_features(v, p, echo_clips[(i + 1) % 60][2]).abstained
                for i, (v, p, _, _) in enumerate(echo_clips))
    assert false <= 1


def test_lip_like_humps_in_the_same_room_do_not_answer() -> None:
    answered = sum(not estimate_av_offset_from_features(v, p, o).abstained
                   for v, p, o, _ in (_room_clip(seed, mouth=True) for seed in range(40)))
    assert answered <= 1
