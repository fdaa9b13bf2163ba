"""Long media at estimation size: the decoded frames and the visual events cost what the frames cost.

``avalign measure`` on a 2 h MP4 (64x48 at 5 fps, 330 MB of frames) peaked at 3.72 GB: the frame buffer doubled its
way to 65,536 frames (604 MB, the outgrown 302 MB buffer idle in the result pool), and the visual events summed the
whole clip's block lattice through an int32 copy of it (1.5 GB). Oracles: ffprobe's frame count and the frames' own
size; the events are checked bitwise against the per-frame block means computed directly.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

import loaders
from aligner.estimators import visual_change_events
from tests.conftest import ffmpeg, ffprobe_frame_times

NUM_FRAMES = 2100  # more than the 2,048 frames an untrusted header count may reserve


@pytest.fixture(scope="module")
def long_small_video(tmp_path_factory):
    path = tmp_path_factory.mktemp("longvideo") / "v.mp4"
    ffmpeg("-f", "lavfi", "-i", f"testsrc=size=32x24:rate=30:duration={NUM_FRAMES / 30}", "-c:v", "libx264",
           "-g", "60", "-pix_fmt", "yuv420p", str(path))
    return path


def test_a_full_decode_with_a_frame_index_holds_only_its_frames(long_small_video):
    """With the probe's frame index (what ``measure`` passes) the buffer is sized from it: the result's storage is the
    frames themselves, not a doubled buffer (before: 4,096 frames reserved for 2,100)."""
    meta, index = loaders.probe_video(str(long_small_video))
    assert index.num_frames == len(ffprobe_frame_times(long_small_video)) == NUM_FRAMES
    clip = loaders.read_video(str(long_small_video), frame_index=index)
    assert clip.num_frames == NUM_FRAMES
    np.testing.assert_allclose(clip.pts_seconds.numpy(), ffprobe_frame_times(long_small_video), atol=1e-6)
    assert clip.frames.untyped_storage().nbytes() == clip.frames.numel(), (
        clip.frames.untyped_storage().nbytes() / clip.frames.numel())


def test_visual_events_match_the_block_means_computed_directly():
    """``background_rise``'s first step, block means of an 8-column grid, equals a direct numpy computation on frames
    long enough to be summed in several chunks."""
    rng = np.random.default_rng(3)
    frames = rng.integers(0, 256, size=(3000, 48, 64, 3), dtype=np.uint8)
    blocks = frames.reshape(3000, 6, 8, 8, 8, 3).astype(np.int64).sum(axis=(2, 4)) / 64.0 @ np.array([0.299, 0.587, 0.114])
    blocks = blocks.reshape(3000, -1)
    step = np.zeros_like(blocks)
    step[1:] = blocks[1:] - blocks[:-1]
    history = np.stack([np.roll(blocks, lag, axis=0) for lag in range(1, 5)])
    history[:, :4] = blocks[:1]
    rise = np.maximum(0.0, np.minimum(step, blocks - np.median(history, axis=0)))
    strength = np.sort(rise, axis=1)[:, -6:].mean(axis=1)
    import scipy.ndimage

    expected = np.maximum(0.0, strength - scipy.ndimage.median_filter(strength, size=31, mode="nearest"))
    got = visual_change_events(torch.from_numpy(frames))
    np.testing.assert_allclose(got[1:], expected[1:], rtol=0, atol=1e-9)


_PEAK_SCRIPT = textwrap.dedent("""
    import sys, torch
    from aligner.estimators import visual_change_events
    frames = torch.randint(0, 256, (20000, 48, 64, 3), dtype=torch.uint8, generator=torch.Generator().manual_seed(0))
    visual_change_events(frames[:50])  # imports and first-call allocations before the peak is reset
    def kib(key):
        return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key))
    open("/proc/self/clear_refs", "w").write("5")  # VmHWM := current RSS
    before = kib("VmRSS:")
    visual_change_events(frames)
    print((kib("VmHWM:") - before) * 1024 / frames.numel())
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="peak RSS reset through /proc/self/clear_refs")
def test_visual_events_add_less_than_the_frames_at_their_peak():
    """2 h at 64x48 and 5 fps is 330 MB of frames; the events' peak working memory was 4-5x that (an int32 copy of the
    whole lattice), now chunks of 4 MB of lattice; what is left is the float64 per-block arrays of the events (48 blocks
    a frame). Measured on 20,000 frames (184 MB): before 5.1x, after 0.4-0.75x (5 runs)."""
    result = subprocess.run([sys.executable, "-c", _PEAK_SCRIPT], capture_output=True, text=True, timeout=300,
                            env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert result.returncode == 0, result.stderr[-2000:]
    added = float(result.stdout.split()[-1])
    assert added < 2.0, added  # RSS-based: glibc and huge pages move it by +-0.2x between runs


_STALE_INDEX_SCRIPT = textwrap.dedent("""
    import resource, sys
    import numpy as np
    import loaders, loaders.media as media
    path = sys.argv[1]
    loaders.read_video(path)  # imports and first-call allocations before the limit
    def kib(key):
        return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith(key))
    limit = kib("VmSize:") * 1024 + (1 << 30)  # 1 GiB more address space than now
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    n = 2_000_000  # another, 111 h long file's index: 2 M frames of 32x24 would be 4.6 GB
    stale = media.FrameIndex(pts_seconds=np.arange(n) / 5.0, is_keyframe=np.ones(n, bool), end_seconds=n / 5.0)
    clip = loaders.read_video(path, frame_index=stale)
    print(clip.num_frames)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/status")
def test_an_index_of_another_file_costs_nothing_on_a_short_clip(long_small_video):
    """A caller's mistake: the index of a much longer file passed with a short clip. The buffer's first allocation stays
    capped (2,048 frames); the index only says where the buffer grows to once it fills. The whole decode reads the
    file's own frames (ffprobe's count) inside 1 GiB more address space; sized from the stale index it needed 4.6 GB."""
    result = subprocess.run([sys.executable, "-c", _STALE_INDEX_SCRIPT, str(long_small_video)], capture_output=True,
                            text=True, timeout=300,
                            env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin", "PYTHONPATH": ":".join(sys.path)})
    assert result.returncode == 0, result.stderr[-2000:]
    assert int(result.stdout.split()[-1]) == len(ffprobe_frame_times(long_small_video)) == NUM_FRAMES
