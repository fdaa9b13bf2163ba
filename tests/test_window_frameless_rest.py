"""A clip whose last window would hold no frame: the rest goes to the window before it.

A 29.97 fps clip of 300 frames spans 10.01 s (ffprobe). With ``window_seconds=10`` (or 5) the windows used to be
``[0, 10)`` and a 10 ms ``[10, 10.01)`` holding 160 samples and no frame: one item of length 0 in every batch's video
for every such clip. Oracles: ffprobe's frame times of the clip, and the whole clip's samples.
"""
from __future__ import annotations

import numpy as np
import pytest

import aligner
import loaders
from loaders.pipeline import split_windows
from tests.conftest import ffprobe_frame_times, ntsc_clip_300_frames, write_tar


@pytest.fixture(scope="module")
def ntsc_clip(tmp_path_factory):
    path = tmp_path_factory.mktemp("ntsc") / "ntsc.mp4"
    ntsc_clip_300_frames(path)
    return path


@pytest.fixture(scope="module")
def aligned(ntsc_clip):
    video, audio = loaders.read_video(str(ntsc_clip)), loaders.read_audio(str(ntsc_clip))
    return aligner.align(video, audio, None, estimate=False, av_offset_ms=0.0)


def test_the_clip_spans_a_rest_past_ten_seconds_with_no_frame(ntsc_clip, aligned):
    pts = ffprobe_frame_times(ntsc_clip)
    assert pts.size == 300 and pts[-1] < 10.0 < aligned.stop_seconds  # the premise: frames end before 10 s


@pytest.mark.parametrize("window_seconds, frames", [(10.0, [300]), (5.0, [150, 150]), (3.0, [90, 90, 90, 30])])
def test_no_window_is_left_without_a_frame(ntsc_clip, aligned, window_seconds, frames):
    parts = split_windows(aligned, window_seconds=window_seconds)
    assert [p.video.num_frames for p in parts] == frames
    assert sum(p.audio.num_samples for p in parts) == aligned.audio.num_samples  # no sample lost
    pts = ffprobe_frame_times(ntsc_clip)
    np.testing.assert_allclose(np.concatenate([p.video.pts_seconds.numpy() for p in parts]), pts, atol=1e-3)
    assert parts[-1].stop_seconds == aligned.stop_seconds
    assert all(p.stop_seconds - p.start_seconds <= window_seconds + 1001 / 30000 for p in parts)


def test_the_loader_batches_no_item_without_frames(ntsc_clip, tmp_path):
    shard = write_tar(tmp_path / "s.tar", [("ntsc.mp4", ntsc_clip.read_bytes())])
    dataset = loaders.make_dataset([str(shard)], seed=0, frame_size=(16, 16), budgets=(400, 400_000, 64),
                                   window_seconds=5.0, max_items=8)
    batches = list(dataset)
    frames_per_item = [int(n) for b in batches for n in np.diff(b.cu_seqlens_frames.numpy()[:b.num_items + 1])]
    assert sorted(frames_per_item) == [150, 150] and sum(b.num_items for b in batches) == 2


def test_a_gap_of_a_variable_rate_clip_keeps_its_windows():
    """Only the clip's last window, shorter than a frame interval, is merged: windows inside a gap of a variable-rate
    clip (frames to 0.9 s, then at 3.0 and 3.1 s) stay as they are, frameless, and the last one holds its frames."""
    import torch

    from avcore import AudioClip, Transcript, VideoClip, VideoMetadata

    pts = torch.tensor([k / 10 for k in range(10)] + [3.0, 3.1], dtype=torch.float64)
    frames = torch.zeros((12, 8, 10, 3), dtype=torch.uint8)
    video = VideoClip(frames, pts, VideoMetadata("h264", 10, 8, 10.0, 12, 0.0, 3.2, fps_from_content=10.0))
    audio = AudioClip(torch.zeros((1, 51200)), 16000, 0.0)
    sample = aligner.align(video, audio, Transcript(()), sample_rate=16000, estimate=False, key="gap")
    parts = split_windows(sample, window_seconds=1.0)
    assert [p.video.num_frames for p in parts] == [10, 0, 0, 2]
    assert parts[-1].stop_seconds == sample.stop_seconds and parts[-1].start_seconds == 3.0
