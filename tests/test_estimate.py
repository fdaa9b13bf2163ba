"""A/V offset + drift estimation against synthetic clips with a known clock relation.

Oracle: each clip is built from the clock model itself — flash frame at video pts ``p`` (a real pts,
also VFR), beep starting at audio time ``p·(1 + drift_ppm·1e-6) + av_offset_ms/1000`` placed with
sub-sample phase — so the truth is exact by construction.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
import torch

from aligner import AVEstimate, AVOptions, estimate_av_offset
from aligner.estimators import (
    audio_onsets,
    estimate_av_offset_from_arrays,
    estimate_av_offset_from_features,
    visual_change_events,
)
from avcore import AudioClip, VideoClip, VideoMetadata

SAMPLE_RATE = 16000


def _pts(duration_seconds: float, *, vfr: bool, start_seconds: float, rng: np.random.Generator) -> np.ndarray:
    if not vfr:
        return start_seconds + np.arange(int(duration_seconds * 30)) / 30.0
    times, t = [], 0.0
    while t < duration_seconds:
        times.append(t)
        # alternating 30 / 15 fps stretches of 3 s, each frame duration jittered by ±15 %
        t += (1 / 30 if (int(t) // 3) % 2 == 0 else 1 / 15) * rng.uniform(0.85, 1.15)
    return start_seconds + np.asarray(times)


def make_clip(
    *,
    duration_seconds: float = 20.0,
    av_offset_ms: float = 0.0,
    drift_ppm: float = 0.0,
    vfr: bool = False,
    video_start_seconds: float = 0.0,
    audio_start_seconds: float = 0.0,
    seed: int = 0,
    flashes: bool = True,
    beeps: bool = True,
    content: str = "flash",
) -> tuple[VideoClip, AudioClip, np.ndarray]:
    """Dark noisy 160x120 video with events at irregular gaps; noise audio with 1 kHz beeps at the events.

    ``content="flash"``: two white frames per event; ``content="jump"``: a bright square jumps to a new
    place (mean luma unchanged: needs ``frame_difference``). Returns (video, audio, event pts).
    """
    rng = np.random.default_rng(seed)
    pts = _pts(duration_seconds, vfr=vfr, start_seconds=video_start_seconds, rng=rng)
    frames = np.full((pts.size, 120, 160, 3), 20, np.uint8) + rng.integers(0, 6, (pts.size, 120, 160, 3), dtype=np.uint8)
    events, t = [], pts[0] + 0.5
    while t < pts[-1] - 0.3:
        k = int(np.searchsorted(pts, t))
        events.append(k)
        t = pts[k] + rng.uniform(0.6, 1.4)
    events = np.asarray(events)
    if flashes and content == "flash":
        for k in events:
            frames[k : k + 2] = 220
    elif flashes:
        position = 0
        event_set = set(events.tolist())
        for k in range(pts.size):
            if k in event_set:
                position = (position + 37) % 130
            frames[k, 40:70, position : position + 30] = 230
    num_samples = int((pts[-1] + 1.1 - audio_start_seconds) * SAMPLE_RATE)
    audio = rng.normal(0.0, 0.01, num_samples)
    if beeps:
        length = int(0.08 * SAMPLE_RATE)
        fade = np.minimum(1.0, np.arange(length)[::-1] / (0.01 * SAMPLE_RATE))
        for p in pts[events]:
            onset = (p * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000 - audio_start_seconds) * SAMPLE_RATE
            first = int(np.ceil(onset))
            if first < 0 or first + length > num_samples:
                continue
            phase_seconds = (np.arange(length) + first - onset) / SAMPLE_RATE
            audio[first : first + length] += 0.5 * np.sin(2 * np.pi * 1000 * phase_seconds) * fade
    metadata = VideoMetadata(
        codec="rawvideo", width=160, height=120, fps_from_header=30.0, num_frames_from_header=int(pts.size),
        start_seconds=float(pts[0]), duration_seconds_from_header=None,
    )
    video = VideoClip(torch.from_numpy(frames), torch.from_numpy(pts.astype(np.float64)), metadata)
    clip = AudioClip(torch.from_numpy(audio.astype(np.float32))[None], SAMPLE_RATE, audio_start_seconds)
    return video, clip, pts[events]


@pytest.mark.parametrize(
    ("av_offset_ms", "drift_ppm"),
    [(0.0, 0.0), (300.0, 0.0), (-300.0, 0.0), (37.3, 1000.0), (-123.4, -1000.0), (12.5, 500.0)],
)
def test_recovers_offset_and_drift(av_offset_ms: float, drift_ppm: float) -> None:
    video, audio, _ = make_clip(av_offset_ms=av_offset_ms, drift_ppm=drift_ppm, seed=int(abs(av_offset_ms)))
    estimate = estimate_av_offset(video, audio)
    assert estimate.method == "event_match+theil_sen"
    assert estimate.av_offset_ms == pytest.approx(av_offset_ms, abs=2.0)
    assert estimate.drift_ppm == pytest.approx(drift_ppm, abs=40.0)
    assert estimate.confidence > 0.9
    assert estimate.drift_confidence > 0.5


def test_vfr_pts_and_nonzero_starts() -> None:
    video, audio, events = make_clip(
        av_offset_ms=-80.0, drift_ppm=1000.0, vfr=True, video_start_seconds=0.5, audio_start_seconds=1.234, seed=3
    )
    diffs = np.diff(video.pts_seconds.numpy())
    assert diffs.max() / diffs.min() > 1.8  # really variable frame rate
    estimate = estimate_av_offset(video, audio)
    assert estimate.av_offset_ms == pytest.approx(-80.0, abs=2.0)
    assert estimate.drift_ppm == pytest.approx(1000.0, abs=40.0)
    assert estimate.num_events == events.size


def test_frame_difference_feature_on_moving_content() -> None:
    video, audio, _ = make_clip(av_offset_ms=55.5, content="jump", seed=4)
    assert estimate_av_offset(video, audio, options=AVOptions(feature="luma_rise")).abstained  # mean luma never changes
    estimate = estimate_av_offset(video, audio, options=AVOptions(feature="frame_difference"))
    assert estimate.av_offset_ms == pytest.approx(55.5, abs=2.0)


def test_short_clip_reports_no_drift_without_confidence() -> None:
    video, audio, events = make_clip(duration_seconds=2.5, av_offset_ms=20.2, drift_ppm=1000.0, seed=18)
    assert events.size == 3  # the fewest that give confidence
    estimate = estimate_av_offset(video, audio)
    assert estimate.method == "event_match"
    assert estimate.drift_ppm is None and estimate.drift_confidence == 0.0 and estimate.drift_se_ppm is None
    # Without a drift fit the offset is the one at the events' centre (~1.2 s: +1.2 ms of drift); sharp
    # onsets are dated about 1 ms early (the 2 ms analysis window of aligner.estimators.audio_onsets).
    assert estimate.av_offset_ms == pytest.approx(20.2 + float(np.median(events)), abs=2.0)


def test_unresolvable_drift_is_not_reported() -> None:
    """12 s clip whose beeps are jittered by ±3 ms: the slope's standard error (~150 ppm) is above the
    limit, so no drift number is given; the offset is the one at the events' centre."""
    video, audio, events = make_clip(duration_seconds=12.0, av_offset_ms=-64.0, drift_ppm=700.0, seed=12)
    samples = audio.samples.numpy()[0].copy()
    rng = np.random.default_rng(0)
    length = int(0.08 * SAMPLE_RATE)
    for p in events:  # move each beep by a random whole number of samples in [-48, 48] (±3 ms)
        first = int(np.ceil((p * (1 + 700e-6) - 0.064) * SAMPLE_RATE))
        beep = samples[first : first + length].copy()
        samples[first : first + length] = rng.normal(0.0, 0.01, length)
        moved = first + int(rng.integers(-48, 49))
        samples[moved : moved + length] += beep
    jittered = AudioClip(torch.from_numpy(samples)[None], SAMPLE_RATE, 0.0)
    estimate = estimate_av_offset(video, jittered)
    assert estimate.drift_se_ppm is not None and estimate.drift_se_ppm > 60.0
    assert estimate.method == "event_match+drift_unresolved"
    assert estimate.drift_ppm is None and estimate.drift_confidence == 0.0
    centre = float(np.median(events))
    assert estimate.av_offset_ms == pytest.approx(-64.0 + 700e-3 * centre, abs=3.0)
    clean = estimate_av_offset(video, audio)  # the same clip without jitter resolves its drift
    assert clean.drift_se_ppm is not None and clean.drift_se_ppm <= 60.0
    assert clean.drift_ppm == pytest.approx(700.0, abs=60.0) and clean.drift_confidence > 0.0
    # Every drift option reaches the estimator through estimate_av_offset's one options object.
    loose = estimate_av_offset(video, jittered, options=AVOptions(max_drift_se_ppm=1000.0))
    assert loose.method == "event_match+theil_sen" and loose.drift_se_ppm == pytest.approx(estimate.drift_se_ppm)
    assert loose.drift_ppm == pytest.approx(700.0, abs=3.0 * estimate.drift_se_ppm)
    short = estimate_av_offset(video, audio, options=AVOptions(min_drift_span_seconds=60.0))
    assert short.method == "event_match" and short.drift_ppm is None and short.drift_se_ppm is None
    assert short.av_offset_ms == pytest.approx(-64.0 + 700e-3 * centre, abs=3.0)


def test_median_error_over_seeds_is_sub_millisecond() -> None:
    errors = []
    for seed in range(4):
        offset = float(np.random.default_rng(seed).uniform(-250, 250))
        video, audio, _ = make_clip(duration_seconds=12.0, av_offset_ms=offset, seed=seed + 10)
        errors.append(abs(estimate_av_offset(video, audio).av_offset_ms - offset))
    assert float(np.median(errors)) <= 1.5  # sharp onsets: about 1 ms early (2 ms analysis window)
    assert max(errors) <= 33.3 / 2  # never more than half a frame


@pytest.mark.parametrize("case", ["static_video", "no_beeps", "silent_audio", "noise_video", "offset_out_of_range"])
def test_abstains_instead_of_guessing(case: str) -> None:
    video, audio, _ = make_clip(
        seed=6, flashes=case != "static_video", beeps=case != "no_beeps",
        av_offset_ms=833.0 if case == "offset_out_of_range" else 0.0,
    )
    if case == "silent_audio":
        audio = AudioClip(torch.zeros_like(audio.samples), SAMPLE_RATE, 0.0)
    if case == "noise_video":
        rng = np.random.default_rng(7)
        video = VideoClip(
            torch.from_numpy(rng.integers(0, 255, tuple(video.frames.shape), dtype=np.uint8)), video.pts_seconds, video.metadata
        )
    estimate = estimate_av_offset(video, audio)
    assert estimate.abstained and estimate.av_offset_ms is None and estimate.drift_ppm is None
    assert estimate.method.startswith("abstain:")
    assert estimate.confidence < 0.3


def test_cached_features_give_the_same_answer() -> None:
    video, audio, _ = make_clip(av_offset_ms=-42.0, seed=8, duration_seconds=10.0)
    visual = visual_change_events(video.frames)
    onsets = audio_onsets(audio.samples, SAMPLE_RATE, start_seconds=0.0)
    from_features = estimate_av_offset_from_features(visual, video.pts_seconds.numpy(), onsets)
    from_arrays = estimate_av_offset_from_arrays(
        visual, video.pts_seconds.numpy(), audio.samples.numpy(), sample_rate=SAMPLE_RATE, audio_start_seconds=0.0
    )
    direct = estimate_av_offset(video, audio)
    assert from_features == from_arrays == direct
    assert isinstance(direct, AVEstimate) and direct.av_offset_ms == pytest.approx(-42.0, abs=2.0)


def test_visual_events_values() -> None:
    frames = torch.zeros((4, 8, 8, 3), dtype=torch.uint8)
    frames[1] = 100
    frames[3] = 40
    assert visual_change_events(frames, feature="luma_rise").tolist() == pytest.approx([0.0, 100.0, 0.0, 40.0], abs=0.01)
    assert visual_change_events(frames, feature="frame_difference").tolist() == pytest.approx(
        [0.0, 100.0, 100.0, 40.0], abs=0.01
    )
    with pytest.raises(ValueError, match="feature"):
        visual_change_events(frames, feature="optical_flow")  # type: ignore[arg-type]


@pytest.mark.parametrize("field, value", [("max_offset_ms", 0.0), ("max_offset_ms", 20_000.0), ("min_confidence", 1.5),
                                          ("max_drift_ppm", -1.0), ("max_drift_se_ppm", 0.0),
                                          ("min_drift_span_seconds", -1.0), ("feature", "optical_flow")])
def test_rejects_bad_options(field, value) -> None:
    with pytest.raises(ValueError, match=field):
        AVOptions(**{field: value})


def test_thirty_second_clip() -> None:
    video, audio, events = make_clip(duration_seconds=30.0, seed=9)
    estimate = estimate_av_offset(video, audio)
    assert estimate.av_offset_ms == pytest.approx(0.0, abs=2.0)
    assert estimate.num_events == events.size and estimate.num_matched == events.size


def _decode_with_pyav(path: str, *, sample_rate: int = 16000) -> tuple[VideoClip, AudioClip]:
    """Independent decode (PyAV directly): small RGB frames with their real pts; mono audio + first pts."""
    import av

    frames, pts = [], []
    with av.open(path) as container:
        for frame in container.decode(container.streams.video[0]):
            frames.append(frame.to_ndarray(format="rgb24", width=80, height=60))
            pts.append(frame.time)
    chunks, start_seconds = [], None
    with av.open(path) as container:
        resampler = av.AudioResampler(format="flt", layout="mono", rate=sample_rate)
        for frame in container.decode(container.streams.audio[0]):
            start_seconds = frame.time if start_seconds is None else start_seconds
            chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(frame)]
        chunks += [f.to_ndarray().reshape(-1) for f in resampler.resample(None)]
    order = np.argsort(pts)
    pts_array = np.asarray(pts, dtype=np.float64)[order]
    metadata = VideoMetadata("", 80, 60, None, None, float(pts_array[0]), None)
    video = VideoClip(torch.from_numpy(np.stack(frames)[order]), torch.from_numpy(pts_array), metadata)
    return video, AudioClip(torch.from_numpy(np.concatenate(chunks))[None], sample_rate, float(start_seconds))


def test_generated_sample_clips() -> None:
    """sample_data/ clips (real codecs, containers, VFR, drift) against the generator's truth.json."""
    import json
    from pathlib import Path

    truth_path = Path(__file__).resolve().parent.parent / "sample_data" / "truth.json"
    if not truth_path.exists():
        pytest.skip("sample_data/truth.json not generated")
    clips = json.loads(truth_path.read_text())["clips"]
    clips = list(clips.values()) if isinstance(clips, dict) else clips
    for clip in clips:
        video, audio = _decode_with_pyav(str(truth_path.parent / clip["media"]))
        estimate = estimate_av_offset(video, audio)
        label = clip["media"]
        assert not estimate.abstained, label
        # Applied clock (drift None → 0) against the truth over the clip: within 3 ms at mid-clip, never a frame.
        t = np.linspace(0.0, clip["duration_seconds"], 41)
        error = (estimate.av_offset_ms + (estimate.drift_ppm or 0.0) * 1e-3 * t) - (clip["av_offset_ms"] + clip["drift_ppm"] * 1e-3 * t)
        assert abs(error[20]) <= 3.0 and np.abs(error).max() < 1000.0 / clip["fps_nominal"], (label, error[[0, 20, 40]])
        if estimate.drift_ppm is not None:
            assert estimate.drift_ppm == pytest.approx(clip["drift_ppm"], abs=150.0), label


@pytest.mark.parametrize("num_events", [1, 2])
def test_too_few_events_give_no_confidence(num_events: int) -> None:
    """One or two flash/beep pairs match perfectly (huge peak-to-sidelobe), yet prove nothing: abstain."""
    video, audio, events = make_clip(duration_seconds=30.0, av_offset_ms=40.0, seed=3)
    keep = set(np.searchsorted(video.pts_seconds.numpy(), events[:num_events]).tolist())
    frames = video.frames.clone()
    for k in np.searchsorted(video.pts_seconds.numpy(), events[num_events:]):
        frames[k : k + 2] = frames[k - 1]  # remove the other flashes (their beeps stay: onsets without events)
    assert len(keep) == num_events
    video = VideoClip(frames, video.pts_seconds, video.metadata)
    estimate = estimate_av_offset(video, audio)
    assert estimate.num_events == num_events and estimate.abstained
    assert estimate.method == "abstain:too_few_events" and estimate.confidence == 0.0
    unthresholded = estimate_av_offset(video, audio, options=AVOptions(min_confidence=0.0))
    assert unthresholded.confidence == 0.0 and unthresholded.av_offset_ms is not None
    # Three events are enough evidence for the same clip.
    video3, audio3, events3 = make_clip(duration_seconds=2.5, av_offset_ms=40.0, seed=18)
    estimate3 = estimate_av_offset(video3, audio3)
    assert events3.size == 3 and estimate3.num_events == 3 and not estimate3.abstained
    assert estimate3.av_offset_ms == pytest.approx(40.0, abs=2.0)


def test_align_passes_its_options_to_the_estimator() -> None:
    """``align(av_options=...)`` reaches the estimator; the ``max_offset_ms`` shorthand replaces that one field."""
    import aligner

    video, audio, _ = make_clip(duration_seconds=8.0, av_offset_ms=120.0, seed=5)
    narrow = aligner.align(video, audio, av_options=AVOptions(max_offset_ms=60.0)).report
    assert narrow.av_offset_ms is None and narrow.av_abstain is not None  # 120 ms is outside ±60 ms
    wide = aligner.align(video, audio, av_options=AVOptions(max_offset_ms=60.0), max_offset_ms=300.0).report
    assert wide.av_offset_ms == pytest.approx(120.0, abs=2.0)
