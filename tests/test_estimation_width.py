"""Estimation decodes frames 64 wide (``ESTIMATION_MAX_WIDTH``): the A/V answer of a larger clip is the answer at 256
wide, within the dating error, and the frames held are 16x smaller (BENCHMARKS.md, "Estimation frames 64 wide")."""
from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("sox") is None,
                                reason="ffmpeg and sox needed")


def test_a_640_wide_heldout_clip_answers_the_same_at_64_wide(tmp_path) -> None:
    """A short held-out wild clip rendered at 640x480: decoded 64x48 for estimation, its A/V offset is within 3 ms of
    the generator's truth at mid-clip, and within 1 ms of the estimate from frames 256 wide."""
    import loaders
    from aligner import estimate_av_offset
    from avalign import ESTIMATION_MAX_WIDTH, read_video_for_estimation
    from avalign.synth import HELDOUT_SEEDS, make_wild_clip, wild_specs

    assert ESTIMATION_MAX_WIDTH == 64
    # the first short held-out clip whose events stand out of its bed (wild5008: 14.2 s, 8 events, 28 dB)
    spec = next(s for s in wild_specs(HELDOUT_SEEDS) if s.duration_seconds <= 15.0 and len(s.events) >= 5
                and s.snr_db >= 15.0 and not s.talking_head)
    record = make_wild_clip(dataclasses.replace(spec, width=640, height=480), tmp_path)
    media = str(tmp_path / record["media"])
    audio = loaders.read_audio(media)
    small, _ = read_video_for_estimation(media, name=media)
    wide, _ = read_video_for_estimation(media, name=media, max_width=256)
    assert tuple(small.frames.shape[1:]) == (48, 64, 3) and tuple(wide.frames.shape[1:]) == (192, 256, 3)
    assert small.frames.numel() * 16 == wide.frames.numel()
    np.testing.assert_array_equal(small.pts_seconds.numpy(), wide.pts_seconds.numpy())
    at_64, at_256 = estimate_av_offset(small, audio), estimate_av_offset(wide, audio)
    assert not at_64.abstained, (spec.key, at_64.abstain)
    truth_mid = record["av_offset_ms"] + record["drift_ppm"] * 1e-3 * record["duration_seconds"] / 2
    mid = at_64.av_offset_ms + (at_64.drift_ppm or 0.0) * 1e-3 * record["duration_seconds"] / 2
    assert abs(mid - truth_mid) <= 3.0, (spec.key, mid, truth_mid)
    assert not at_256.abstained and abs(at_64.av_offset_ms - at_256.av_offset_ms) <= 1.0
