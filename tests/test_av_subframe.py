"""Events between frames (issue #12, ninth session): the wild generator's sub-frame stream and the visual dating
that reads it.

Real flashes and claps do not start on the camera's frame grid. The wild generator's ranges below
``SUBFRAME_FROM_SEED`` all started each event's sound exactly at a frame's pts; from that seed on, each event starts
a fraction of a frame interval earlier, and the frame before shows the light by the part of its exposure the light
is on. Oracles: ffprobe's pts and the generator's exposure rule for the generator; flashes drawn into known frames
for the dating; the generator's truth for the end-to-end check.
"""
from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess

import numpy as np
import pytest

from aligner.estimators import detect_visual_events


def test_the_subframe_stream_starts_at_its_seed_and_leaves_older_ranges_alone() -> None:
    from avalign.synth import SUBFRAME_FROM_SEED, TUNE43_SEEDS, TUNE_SEEDS, REPORT39_SEEDS, spec_record, wild_specs

    for seeds in (TUNE_SEEDS, REPORT39_SEEDS):
        for spec in wild_specs(seeds):
            assert spec.shutter == 1.0 and all(e.phase == 0.0 for e in spec.events)
            record = spec_record(spec)  # what older clips' cached truth holds: no new keys
            assert "shutter" not in record and all("phase" not in e for e in record["events"])
    specs = wild_specs(TUNE43_SEEDS)
    assert min(TUNE43_SEEDS) >= SUBFRAME_FROM_SEED
    phases = [e.phase for s in specs for e in s.events]
    assert len(phases) > 200 and all(0.0 <= p < 1.0 for p in phases)
    assert np.histogram(phases, bins=4, range=(0, 1))[0].min() > len(phases) / 8  # spread over the frame
    assert all(0.25 <= s.shutter <= 1.0 for s in specs) and len({s.shutter for s in specs}) > 20


def _ffprobe_pts(path) -> np.ndarray:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts_time",
                          "-of", "json", str(path)], capture_output=True, text=True, check=True).stdout
    return np.array(sorted(float(f["pts_time"]) for f in json.loads(out)["frames"]))


@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffprobe")
def test_the_frame_before_a_subframe_event_shows_its_share_of_the_light(tmp_path) -> None:
    """A still scene, full-frame grey flashes of 120 levels for 2 frames, shutter 0.6 of the interval: the frame
    before each flash frame brightens by max(0, phase - 0.4) / 0.6 of the flash frame's brightening (the part of
    its exposure after the light came on); the truth dates each event phase x interval before the flash
    frame's ffprobe pts and its sound there plus the A/V offset."""
    import loaders
    from avalign.synth import TUNE43_SEEDS, make_wild_clip, wild_specs

    spec = wild_specs(TUNE43_SEEDS)[0]
    phases = (0.0, 0.2, 0.5, 0.7, 0.95)
    events = tuple(dataclasses.replace(spec.events[0], video_seconds=1.0 + 0.9 * i, phase=p, flash_frames=2,
                                       flash_level=120.0, flash_area=(0.0, 0.0, 1.0, 1.0), flash_colour=(1.0, 1.0, 1.0))
                   for i, p in enumerate(phases))
    spec = dataclasses.replace(spec, key="subframe", events=events, shutter=0.6, camera="static", num_objects=0,
                               mouth=False, cut_seconds=(), texture_px_per_frame=0.0, video_crf=18, vfr=False,
                               fps="25", duration_seconds=6.0, drift_ppm=0.0)
    record = make_wild_clip(spec, tmp_path)
    media = tmp_path / record["media"]
    pts = _ffprobe_pts(media)
    video = loaders.read_video(str(media))
    luma = video.frames.float().mean(dim=tuple(range(1, video.frames.ndim))).numpy()
    for truth, phase in zip(record["events"], phases):
        k = truth["frame_index"]
        interval = pts[k] - pts[k - 1]
        assert truth["video_seconds"] == pytest.approx(pts[k] - phase * interval, abs=1e-6)
        assert truth["audio_seconds"] == pytest.approx(truth["video_seconds"] + spec.av_offset_ms / 1000, abs=1e-6)
        share = max(0.0, phase - 0.4) / 0.6
        before, at = luma[k - 1] - luma[k - 2], luma[k] - luma[k - 2]
        assert at > 100.0, (phase, at)  # the whole light (less what clips at white)
        assert before == pytest.approx(at * share, abs=4.0), (phase, before, at)


def test_a_rise_split_over_two_frames_is_dated_between_them() -> None:
    """Rises drawn into known frames at 25 fps: all in one frame -> that frame's pts; split 30 / 70 over two frames
    (a light that came on 0.7 of the interval after the first frame's pts, with a frame-long exposure) -> pts + 0.7 x
    40 ms, one event of strength 100; a 5-level flicker beside a 100-level rise does not move it."""
    pts = np.arange(400) / 25.0
    visual = np.zeros(400)
    visual[50] = 100.0
    visual[[120, 121]] = [30.0, 70.0]
    visual[[200, 201]] = [70.0, 30.0]
    visual[[280, 281]] = [100.0, 5.0]
    visual[350] = 100.0
    events = detect_visual_events(visual, pts)
    assert events.times_seconds.tolist() == pytest.approx([pts[50], pts[120] + 0.7 * 0.04, pts[200] + 0.3 * 0.04,
                                                           pts[280], pts[350]], abs=1e-9)
    assert events.strength.tolist() == pytest.approx([100.0] * 5)


def _estimate_error_ms(tmp_path_factory, seed: int) -> tuple[dict, np.ndarray]:
    """``(truth record, A/V error in ms at 41 times across the clip)`` of a wild seed's clip, estimated as ``measure``
    does (frames decoded for estimation); fails when the estimator abstains."""
    import loaders
    from aligner import estimate_av_offset
    from avalign import read_video_for_estimation
    from conftest import wild_clip

    record, directory = wild_clip(tmp_path_factory, seed)
    media = str(directory / record["media"])
    video, _ = read_video_for_estimation(media, name=media)
    estimate = estimate_av_offset(video, loaders.read_audio(media))
    assert not estimate.abstained, estimate.abstain
    t = np.linspace(0.0, record["duration_seconds"], 41)
    error = (estimate.av_offset_ms + (estimate.drift_ppm or 0.0) * 1e-3 * t) - \
        (record["av_offset_ms"] + record["drift_ppm"] * 1e-3 * t)
    return record, error


def test_events_between_frames_on_a_tune_clip(tmp_path_factory) -> None:
    """TUNE43 seed 43009 (30 fps, shutter 0.98, 17 events, every one between frames): the answer within 3 ms of the
    truth at mid-clip; dating each event at the frame that first shows it answered 8.1 ms off."""
    record, error = _estimate_error_ms(tmp_path_factory, 43009)  # a TUNE43 seed: tune-only
    assert all(e["phase"] > 0 for e in record["events"]) and len(record["events"]) >= 10
    assert abs(error[20]) <= 3.0, error[20]


def test_a_short_shutter_clip_answers_within_a_frame(tmp_path_factory) -> None:
    """TUNE43 seed 43013 (10.2 s, 24 fps, shutter 0.63, 4 events between frames): the events' sounds spread over
    ~15 ms around the lag (each dated late by a different part of the closed shutter), which the 2.5 and 6 ms kernels
    did not hold (abstained ``below_null_threshold``); the 12 ms kernel answers, within 6 ms of the truth at mid-clip
    and well within a frame (41.7 ms) everywhere."""
    record, error = _estimate_error_ms(tmp_path_factory, 43013)  # a TUNE43 seed: tune-only
    assert len(record["events"]) == 4 and record["spec"]["shutter"] == 0.63
    assert abs(error[20]) <= 6.0 and np.abs(error).max() < 0.5 * 1000.0 / record["fps_nominal"], error[[0, 20, 40]]


def test_the_offset_is_read_near_the_top_of_the_pairs(tmp_path_factory) -> None:
    """TUNE43 seed 43006 (25.7 s, 29.97 fps, shutter 0.44, 13 events between frames): visual dates are late (a light
    is seen at or after it comes on), so the pairs' audio − video spread lies below the true offset; read at
    ``OFFSET_PERCENTILE`` the answer is within 3 ms of the truth at mid-clip, where their median was 11.0 ms
    off."""
    from aligner.estimators import OFFSET_PERCENTILE

    assert OFFSET_PERCENTILE == 90.0
    _, error = _estimate_error_ms(tmp_path_factory, 43006)  # a TUNE43 seed: tune-only
    assert abs(error[20]) <= 3.0, error[20]


def test_the_pairs_reach_a_frame_of_late_dating_and_lose_the_slope(tmp_path_factory) -> None:
    """TUNE51 seed 51000 (18 s, 30 fps, shutter 0.43, 9 events between frames, drift −439 ppm that 9 late-dated events
    cannot resolve): pairing within ``OFFSET_PAIR_SECONDS`` (14 ms) keeps the events dated late by more than 8 ms,
    and the top of their spread around the fitted slope is within 2.5 ms of the truth at mid-clip. The 70th
    percentile of the raw pairs within 8 ms answered 10.6 ms off."""
    from aligner.estimators import OFFSET_PAIR_SECONDS

    assert OFFSET_PAIR_SECONDS == 0.014
    record, error = _estimate_error_ms(tmp_path_factory, 51000)  # a TUNE51 seed: tune-only
    assert record["spec"]["shutter"] == 0.43 and record["drift_ppm"] == -439
    assert abs(error[20]) <= 2.5, error[20]
