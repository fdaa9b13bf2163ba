"""Events that recur with a period (a light blinking with a clock's tick, cuts on the beat) match one period off as
well as at the truth: an offset of +700 ms with a light blinking every second is also -300 ms, inside the ±500 ms
searched. The estimator must abstain (``ambiguous_peak``) or be right, never answer the alias (BENCHMARKS.md, "A/V
on footage the generator does not make")."""
from __future__ import annotations

import shutil

import numpy as np
import pytest

from aligner.estimators import AudioOnsets, estimate_av_offset_from_features

FPS = 30.0
SPAN_SECONDS = 12.0


def _blinking(period_seconds: float, offset_ms: float, *, jitter_ms: float = 0.0,
              seed: int = 0) -> tuple[np.ndarray, np.ndarray, AudioOnsets]:
    """(visual, pts, onsets): a light on every ``period_seconds`` (± ``jitter_ms``, at frame starts) from 0.7 s,
    each heard ``offset_ms`` later as a tick, over a speech-like bed of weaker onsets (6/s)."""
    rng = np.random.default_rng(seed)
    pts = np.arange(int(SPAN_SECONDS * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    beats = np.arange(0.7, SPAN_SECONDS - 0.3, period_seconds)
    frames = np.round((beats + rng.uniform(-jitter_ms, jitter_ms, beats.size) / 1000.0) * FPS).astype(int)
    visual[frames] = 150.0
    ticks = pts[frames] + offset_ms / 1000.0 + rng.normal(0.0, 0.001, frames.size)
    bed = rng.uniform(-1.0, SPAN_SECONDS + 1.0, int(6 * (SPAN_SECONDS + 2.0)))
    times = np.concatenate([ticks, bed])
    strength = np.concatenate([np.full(ticks.size, 12.0), rng.uniform(3.0, 6.0, bed.size)])
    order = np.argsort(times)
    return visual, pts, AudioOnsets(times[order], strength[order], SPAN_SECONDS + 2.0)


@pytest.mark.parametrize(("period_seconds", "offset_ms", "jitter_ms"), [
    (1.0, 700.0, 0.0), (1.0, -600.0, 0.0), (0.8, 700.0, 0.0), (0.8, -600.0, 0.0), (0.6, -600.0, 0.0),
    (1.0, 700.0, 10.0), (0.8, -600.0, 10.0)])
def test_an_offset_outside_the_range_is_not_answered_by_its_alias_inside(period_seconds, offset_ms, jitter_ms) -> None:
    """The truth lies outside ±500 ms; its alias one period away lies inside and matches every tick but one (the
    first or last): before the alias check, this answered the alias, a period from the truth."""
    visual, pts, onsets = _blinking(period_seconds, offset_ms, jitter_ms=jitter_ms)
    est = estimate_av_offset_from_features(visual, pts, onsets)
    alias_ms = offset_ms - period_seconds * 1000.0 * np.round(offset_ms / (period_seconds * 1000.0))
    assert est.abstained, (est.av_offset_ms, offset_ms)
    assert est.abstain.reason == "ambiguous_peak"
    assert abs(est.abstain.best_guess_ms - alias_ms) <= 1000.0 / FPS  # the alias it answered before
    assert est.sidelobe_matches >= 0.8 * est.peak_matches
    # the reason names the guess it did not take and both match counts, the other lag's as "another lag"
    assert f"({est.abstain.best_guess_ms:+.0f} ms) matches {est.peak_matches:.1f}" in est.abstain.found
    assert "another lag" in est.abstain.found and f"{est.sidelobe_matches:.1f}" in est.abstain.found


@pytest.mark.parametrize(("period_seconds", "offset_ms"), [(1.0, 0.0), (1.0, 120.0), (0.8, -230.0), (0.5, 40.0)])
def test_a_periodic_clip_abstains_or_is_right(period_seconds, offset_ms) -> None:
    """Truth inside the range: the evidence cannot tell it from the truth ± one period either (both match every
    tick but one), so an answer must be the truth, and abstaining is as good."""
    visual, pts, onsets = _blinking(period_seconds, offset_ms)
    est = estimate_av_offset_from_features(visual, pts, onsets)
    assert est.abstained or abs(est.av_offset_ms - offset_ms) <= 1000.0 / FPS, (est.av_offset_ms, offset_ms)
    if est.abstained:
        assert abs(est.abstain.best_guess_ms - offset_ms) <= 1000.0 / FPS


def test_events_that_do_not_recur_still_answer() -> None:
    """The same clip with the light on at irregular times (intervals 0.7-2.3 s) answers its offset: a shift by one
    of its intervals is just another unrelated lag."""
    rng = np.random.default_rng(3)
    pts = np.arange(int(SPAN_SECONDS * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    frames = np.round(np.cumsum(rng.uniform(0.7, 2.3, 6)) * FPS).astype(int)
    visual[frames] = 150.0
    for offset_ms in (-230.0, 120.0, 350.0):
        ticks = pts[frames] + offset_ms / 1000.0 + rng.normal(0.0, 0.001, frames.size)
        bed = rng.uniform(-1.0, SPAN_SECONDS + 1.0, 80)
        times = np.concatenate([ticks, bed])
        strength = np.concatenate([np.full(ticks.size, 12.0), rng.uniform(3.0, 6.0, bed.size)])
        order = np.argsort(times)
        onsets = AudioOnsets(times[order], strength[order], SPAN_SECONDS + 2.0)
        est = estimate_av_offset_from_features(visual, pts, onsets)
        assert not est.abstained and abs(est.av_offset_ms - offset_ms) <= 3.0, (est.av_offset_ms, offset_ms)


def _encode(tmp_path, frames: np.ndarray, audio: np.ndarray, rate: int, name: str):
    """An MP4 (H.264, AAC) of ``frames`` ``[T, H, W, 3]`` uint8 at 30 fps and mono ``audio`` at ``rate``."""
    import subprocess

    (tmp_path / "v.rgb").write_bytes(np.ascontiguousarray(frames).tobytes())
    (tmp_path / "a.f32").write_bytes(audio.astype("<f4").tobytes())
    media = tmp_path / name
    height, width = frames.shape[1:3]
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s",
                    f"{width}x{height}", "-r", "30", "-i", str(tmp_path / "v.rgb"), "-f", "f32le", "-ar", str(rate),
                    "-ac", "1", "-i", str(tmp_path / "a.f32"), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac",
                    str(media)], check=True, capture_output=True)
    return media



def blinking_clip(tmp_path):
    """A 64x48 clip (9 s, 30 fps): a square lit for 2 frames every second, a 2 kHz tick 700 ms after each: the tick
    matches the flash one period away as well (-300 ms), so the A/V estimate abstains ``ambiguous_peak``."""
    rate, seconds = 16000, 9.0
    num_frames = int(seconds * FPS)
    frames = np.full((num_frames, 48, 64, 3), 80, np.uint8)
    flashes = np.arange(0.7, seconds - 0.3, 1.0)
    for t in flashes:
        k = int(round(t * FPS))
        frames[k:k + 2, 8:24, 8:24] = 250
    audio = np.random.default_rng(0).normal(0.0, 0.002, int(seconds * rate))
    tick_t = np.arange(int(0.05 * rate)) / rate
    tick = 0.5 * np.sin(2 * np.pi * 2000.0 * tick_t) * np.exp(-tick_t / 0.008)
    for t in flashes:
        i = int(round((round(t * FPS) / FPS + 0.7) * rate))
        audio[i:i + tick.size] += tick[:max(0, audio.size - i)]
    return _encode(tmp_path, frames, audio, rate, "blink.mp4")


@pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg needed")
def test_measure_abstains_on_a_blinking_light_heard_700_ms_late(tmp_path) -> None:
    """A 64x48 clip (9 s, 30 fps): a square lights up for 2 frames every second, a 2 kHz tick 700 ms after each.
    ``measure`` answered -300 ms (the alias) before; now it abstains, best guess -300 ms."""
    from avalign import measure

    record = measure(str(blinking_clip(tmp_path)))
    assert record["av_offset_ms"] is None, record["av_offset_ms"]
    assert record["av_abstain"]["reason"] == "ambiguous_peak"
    assert abs(record["av_abstain"]["best_guess_ms"] - (-300.0)) <= 1000.0 / FPS


@pytest.mark.parametrize("phase_seconds", [0.0, 0.025, 0.05])
def test_a_light_on_a_0_6_s_lattice_does_not_answer_a_0_5_s_drum_pattern(phase_seconds) -> None:
    """Null pairing: a light on every other or third tick of a 0.6 s metronome (intervals 1.2 s and 1.8 s) against
    another song's drum pattern (five hits every 0.5 s). The events fall in two phases of the pattern, 0.2 s apart,
    and at the lag where the pattern has hits 0.2 s apart every event matches: the binomial chance model counts
    them as independent (score 2.7, answered before the alias check); shifted by 1.2 s they match as well."""
    rng = np.random.default_rng(1)
    pts = np.arange(int(SPAN_SECONDS * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    frames = np.round(0.6 * np.array([1, 3, 6, 8, 11, 13, 16, 18]) * FPS).astype(int)
    visual[frames] = 150.0
    pattern, pattern_strength = np.array([0.035, 0.239, 0.289, 0.355, 0.435]), np.array([10.0, 8.0, 12.0, 7.0, 8.0])
    bars = np.arange(-1.0, SPAN_SECONDS + 1.0, 0.5) + phase_seconds
    times = (bars[:, None] + pattern[None, :]).ravel() + rng.normal(0.0, 0.001, bars.size * pattern.size)
    strength = np.tile(pattern_strength, bars.size)
    order = np.argsort(times)
    est = estimate_av_offset_from_features(visual, pts, AudioOnsets(times[order], strength[order], SPAN_SECONDS + 2.0))
    assert est.abstained and est.abstain.reason == "ambiguous_peak", (est.av_offset_ms, est.method)


def test_events_that_recur_every_two_intervals_are_ambiguous() -> None:
    """A light on ticks 1, 3, 6, 8, 11, 13, 16, 18 of a 0.6 s metronome (intervals 1.2 s and 1.8 s alternate: it
    recurs every 3 s) against another song's 1 s kick-snare cycle with hits at 0, 0.2, 0.5 and 0.75 s of it. At
    +400 ms every event meets a hit; no other lag in range matches more than half of them, nor does a shift by 1.2 s
    or 1.8 s, but a shift by 3 s (two intervals) matches all of them again: the lag is known modulo 3 s only.
    Answered +400 ms before the alias check, and with the intervals to the next event only."""
    rng = np.random.default_rng(2)
    pts = np.arange(int(SPAN_SECONDS * FPS)) / FPS
    visual = rng.uniform(0.0, 0.3, pts.size)
    frames = np.round(0.6 * np.array([1, 3, 6, 8, 11, 13, 16, 18]) * FPS).astype(int)
    visual[frames] = 150.0
    cycles = np.arange(-2.0, SPAN_SECONDS + 4.0, 1.0)
    times = (cycles[:, None] + np.array([0.0, 0.2, 0.5, 0.75])[None, :]).ravel()
    times = times + rng.normal(0.0, 0.001, times.size)
    strength = np.tile([12.0, 10.0, 12.0, 8.0], cycles.size)
    order = np.argsort(times)
    est = estimate_av_offset_from_features(visual, pts, AudioOnsets(times[order], strength[order], SPAN_SECONDS + 6.0))
    assert est.abstained and est.abstain.reason == "ambiguous_peak", (est.av_offset_ms, est.method)
    assert abs(est.abstain.best_guess_ms - 400.0) <= 3.0
