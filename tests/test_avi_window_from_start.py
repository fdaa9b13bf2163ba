"""``read_video`` of an AVI window that starts before its first keyframe (``start_seconds=0`` when the first frame is
presented at 0.04 s): FFmpeg's AVI demuxer refuses a seek target before 0 (``EPERM``), which failed the PyAV
decode and left the window to the optional decord backend (and to nothing without it). The window is now decoded
by PyAV and holds exactly ffprobe's frames in ``[start, stop)``. Oracle: ffprobe's frame times
(``sample_data/clip04.frames.json`` and a fresh probe), the half-up window rule of DESIGN.md."""
from __future__ import annotations

import numpy as np
import pytest

import loaders
from tests.conftest import SAMPLE_DATA, ffprobe_frame_times

AVI = SAMPLE_DATA / "clip04.avi"


@pytest.mark.parametrize("start_seconds", [0.0, 0.01, -0.02])
def test_avi_window_before_the_first_keyframe_is_decoded_by_pyav(start_seconds):
    stop_seconds = 0.3
    oracle = ffprobe_frame_times(AVI)
    assert oracle[0] == pytest.approx(0.04)  # the premise: the first frame is after the window's start
    expected = oracle[(oracle >= start_seconds) & (oracle < stop_seconds)]
    clip = loaders.read_video(AVI, start_seconds=start_seconds, stop_seconds=stop_seconds, backend="pyav")
    np.testing.assert_allclose(clip.pts_seconds.numpy(), expected, atol=1e-6)
    whole = loaders.read_video(AVI, backend="pyav")
    np.testing.assert_array_equal(clip.frames.numpy(), whole.frames[: len(expected)].numpy())
