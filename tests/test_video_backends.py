"""read_video's backends side by side: the opt-in torchcodec backend against ffprobe's frame times on the
well-formed containers it is exact on, and against the PyAV backend's answers; ``auto``'s choice.

The whole oracle suite runs on one backend with ``pytest --video-backend=torchcodec`` (BENCHMARKS.md, "Video
backend decision": it fails on AVI with B-frames, zero ``stts`` deltas, MPEG-4 packed B-frames, corrupt packets).
"""
import numpy as np
import pytest

import loaders
from conftest import ffprobe_frame_times
from loaders.media import AUTO_BACKEND

pytest.importorskip("torchcodec.decoders")

WELL_FORMED = ["cfr30.mp4", "start05.mp4", "ntsc.mkv", "vp9.webm", "vfr.mp4"]


@pytest.mark.parametrize("name", WELL_FORMED)
def test_torchcodec_backend_every_pts_equals_ffprobe(media_dir, name):
    path = media_dir / name
    ref = ffprobe_frame_times(path)
    clip = loaders.read_video(path, backend="torchcodec")
    assert clip.metadata.backend == "torchcodec"
    np.testing.assert_allclose(clip.pts_seconds.numpy(), ref, atol=1e-6)
    pyav = loaders.read_video(path, backend="pyav")
    assert bool((clip.frames == pyav.frames).all())  # the same pixels (both convert with swscale's defaults)


@pytest.mark.parametrize("name", WELL_FORMED)
def test_torchcodec_backend_windows_and_fps_match_pyav(media_dir, name):
    path = media_dir / name
    ref = ffprobe_frame_times(path)
    a, b = float(ref[3]) + 0.01, float(ref[9]) + 0.01  # mid-frame: frames 4..9 (pts >= a), not 3 (on screen at a)
    for kwargs in ({"start_seconds": a, "stop_seconds": b}, {"fps": 3.0}, {"start_seconds": a, "fps": 7.0},
                   {"start_seconds": a, "stop_seconds": a}):
        ours = loaders.read_video(path, backend="torchcodec", **kwargs)
        want = loaders.read_video(path, backend="pyav", **kwargs)
        assert ours.pts_seconds.tolist() == pytest.approx(want.pts_seconds.tolist(), abs=1e-9), kwargs
        assert bool((ours.frames == want.frames).all()), kwargs
    window = loaders.read_video(path, backend="torchcodec", start_seconds=a, stop_seconds=b)
    np.testing.assert_allclose(window.pts_seconds.numpy(), ref[4:10], atol=1e-6)


def test_torchcodec_backend_resizes_and_refuses_like_pyav(media_dir):
    path = media_dir / "cfr30.mp4"
    small = loaders.read_video(path, backend="torchcodec", fps=2.0, frame_size=(60, 80))
    assert small.frames.shape == (6, 60, 80, 3)
    with pytest.raises(IndexError, match="outside the video"):
        loaders.read_video(path, backend="torchcodec", start_seconds=10.0, stop_seconds=11.0)
    with pytest.raises(loaders.DecodeError) as info:
        loaders.read_video(path, backend="torchcodec", max_pixels=100)
    assert info.value.reason == "too_large"


def test_auto_uses_the_decided_backend_for_every_kind_of_read(media_dir):
    """BENCHMARKS.md's decision: PyAV is faster and exact for every kind of read."""
    assert AUTO_BACKEND == {"full": "pyav", "window": "pyav", "fps": "pyav"}
    path = media_dir / "cfr30.mp4"
    for kwargs in ({}, {"start_seconds": 1.0, "stop_seconds": 2.0}, {"fps": 2.0}):
        assert loaders.read_video(path, **kwargs).metadata.backend == "pyav"
    with pytest.raises(ValueError, match="backend must be one of"):
        loaders.read_video(path, backend="ffmpeg")
