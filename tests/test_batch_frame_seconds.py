"""``PackedBatch.frame_seconds``: each frame's time after its item's first audio sample, from the frames' real
timestamps (a variable frame rate and a late audio start included), so that a model can find a frame's sound.

Oracles: ffprobe's frame times, and a click the clip's audio holds at a known time on the media timeline: the frame
shown at that time must sit, by ``frame_seconds``, on the click's sample of the batch's audio.
"""
from __future__ import annotations

import numpy as np
import pytest

import loaders
from tests.conftest import ffmpeg, ffprobe_frame_times, write_tar

RATE = 16000
CLICK_SECONDS = 1.25
"""Where the click is on the media timeline: 1.0 s into an audio stream that starts at 0.25 s (``-itsoffset``)."""


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """20 fps with every 7th frame dropped (a variable rate; ffprobe: 0, 0.05, 0.1, 0.2, …), PCM audio from 0.25 s
    holding one 0.5 ms click at 1.0 s of its own clock."""
    path = tmp_path_factory.mktemp("frame_seconds") / "vfr.mkv"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x24:rate=20,select='not(eq(mod(n\\,7)\\,3))'",
           "-itsoffset", "0.25", "-f", "lavfi", "-i", f"aevalsrc='if(between(t\\,1.0\\,1.0005)\\,0.9\\,0)':s={RATE}:d=3",
           "-t", "3", "-fps_mode", "passthrough", "-c:v", "libx264", "-c:a", "pcm_s16le", str(path))
    return path


def _items(clip, tmp_path, **options):
    shard = write_tar(tmp_path / "s.tar", [("vfr.mkv", clip.read_bytes())])
    dataset = loaders.make_dataset([str(shard)], seed=0, frame_size=(16, 16), budgets=(200, 200_000, 64),
                                   max_items=8, sample_rate=RATE, **options)
    for batch in dataset:
        cu_f, cu_s = batch.cu_seqlens_frames.numpy(), batch.cu_seqlens_samples.numpy()
        for i in range(batch.num_items):
            yield (batch.frame_seconds.numpy()[cu_f[i]:cu_f[i + 1]], batch.audio.numpy()[cu_s[i]:cu_s[i + 1]],
                   batch.frame_seconds.numpy()[cu_f[batch.num_items]:])


def test_the_frame_shown_with_the_click_sits_on_the_clicks_sample(clip, tmp_path):
    pts = ffprobe_frame_times(clip)
    assert np.isclose(pts, CLICK_SECONDS).any() and np.diff(pts).max() > 0.09  # the premise: a frame then; a gap
    (frame_seconds, audio, padding), = _items(clip, tmp_path, window_seconds=None)
    click_seconds = int(np.argmax(np.abs(audio))) / RATE
    frame = int(np.argmin(np.abs(pts - CLICK_SECONDS)))
    assert abs(frame_seconds[frame] - click_seconds) <= 1.0 / RATE
    np.testing.assert_allclose(np.diff(frame_seconds), np.diff(pts), atol=2e-6)  # the real spacing, not 1/fps
    assert not padding.any()  # 0 on padding


def test_each_window_counts_from_its_own_first_sample(clip, tmp_path):
    pts = ffprobe_frame_times(clip)
    items = list(_items(clip, tmp_path, window_seconds=1.0))
    assert len(items) == 3
    frames_so_far = 0
    for frame_seconds, audio, _ in items:
        window_pts = pts[frames_so_far:frames_so_far + len(frame_seconds)]
        frames_so_far += len(frame_seconds)
        np.testing.assert_allclose(np.diff(frame_seconds), np.diff(window_pts), atol=2e-6)
        assert 0 <= frame_seconds[0] < 0.1 and frame_seconds[-1] < len(audio) / RATE  # inside the window's audio
        if np.isclose(window_pts, CLICK_SECONDS).any():
            frame = int(np.argmin(np.abs(window_pts - CLICK_SECONDS)))
            assert abs(frame_seconds[frame] - int(np.argmax(np.abs(audio))) / RATE) <= 1.0 / RATE
    assert frames_so_far == len(pts)
