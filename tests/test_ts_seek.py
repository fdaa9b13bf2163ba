"""Windows and ``fps=`` on MPEG-TS / MPEG-PS with B-frames equal a full decode, with ffprobe's pts.

Those demuxers seek by decode time: a seek to a keyframe's presentation time lands on a packet after it, so the
decoder starts at the next keyframe (none in a one-GOP clip: no frame at all). Before the fix, windows and ``fps=``
on an ordinary ``ffmpeg -c:v libx264 out.ts`` returned 0 frames, and a .mpg lost its first GOP.
"""
import json
import subprocess

import numpy as np
import pytest
import torch

import loaders
from conftest import encode_once, write_tar

SOURCE = ("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "4")
CLIPS = {
    # ffmpeg's defaults: libx264 with B-frames, one keyframe in 4 s (GOP 250)
    "x264.ts": (*SOURCE, "-c:v", "libx264"),
    "x264_gop30.ts": (*SOURCE, "-c:v", "libx264", "-g", "30"),
    "x264_offset.ts": (*SOURCE, "-c:v", "libx264", "-g", "45", "-output_ts_offset", "100"),
    "mpeg2.mpg": (*SOURCE, "-c:v", "mpeg2video", "-bf", "2", "-g", "30"),
    "mpeg2_default.mpg": (*SOURCE, "-c:v", "mpeg2video"),
}


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("ts_seek")
    for name, args in CLIPS.items():
        encode_once(folder / name, *args)
    return {name: folder / name for name in CLIPS}


def _ffprobe_pts(path) -> np.ndarray:
    """ffprobe's time of every decoded video frame: ``pts_time``, and its ``best_effort_timestamp_time`` where a frame
    has no pts (an MPEG-PS packet carries a pts only for the first frame that starts in it)."""
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "frame=pts_time,best_effort_timestamp_time", "-of", "json", str(path)], text=True)
    frames = json.loads(out)["frames"]
    return np.asarray([float(f.get("pts_time", f.get("best_effort_timestamp_time", "nan"))) for f in frames])


def _full(path):
    full = loaders.read_video(path, backend="pyav")
    ref = _ffprobe_pts(path)
    timed = np.isfinite(ref)  # MPEG-PS: ffprobe has no time for the last frame, flushed without one
    assert full.num_frames == len(ref) and timed[:-1].all()
    np.testing.assert_allclose(full.pts_seconds.numpy()[timed], ref[timed], atol=1e-6)  # ffprobe prints 6 decimals
    return full


def _windows(pts: np.ndarray) -> list[tuple[float, float]]:
    first, last, step = float(pts[0]), float(pts[-1]), float(np.median(np.diff(pts)))
    return [
        (first, first + 0.5),             # the stream's first frame, exactly
        (first - 1.0, first + 0.3),       # starting before the stream
        (first + 0.51, first + 2.0),      # mid-frame, inside the first GOP
        (float(pts[60]), float(pts[95])),  # exact frame boundaries, past a keyframe at 30/45 frames
        (last - 1.0, last + 1.0),         # the end
        (float(pts[40]) + step / 2, float(pts[40]) + step / 2),  # start == stop: empty
    ]


@pytest.mark.parametrize("name", list(CLIPS))
def test_window_equals_full_decode(clips, name):
    path = clips[name]
    full = _full(path)
    pts = full.pts_seconds.numpy()
    for a, b in _windows(pts):
        keep = (pts >= a) & (pts < b)
        got = loaders.read_video(path, start_seconds=a, stop_seconds=b)
        assert got.num_frames == int(keep.sum()), (name, a, b)
        np.testing.assert_array_equal(got.pts_seconds.numpy(), pts[keep])
        assert torch.equal(got.frames, full.frames[torch.from_numpy(keep)]), (name, a, b)


@pytest.mark.parametrize("name", list(CLIPS))
@pytest.mark.parametrize("fps", [5.0, 29.97])
def test_fps_equals_full_decode(clips, name, fps):
    path = clips[name]
    full = _full(path)
    pts = full.pts_seconds.numpy()
    end = float(pts[-1]) + float(np.median(np.diff(pts)))
    for start in (None, float(pts[0]) + 1.25):
        lo = float(pts[0]) if start is None else start
        targets = lo + np.arange(int(np.ceil((end - lo) * fps - 1e-9))) / fps
        played = np.searchsorted(pts, targets, side="right") - 1  # the last frame with pts <= t
        got = loaders.read_video(path, fps=fps, start_seconds=start)
        assert got.num_frames == len(played), (name, fps, start)
        np.testing.assert_array_equal(got.pts_seconds.numpy(), pts[played])
        assert torch.equal(got.frames, full.frames[torch.from_numpy(played)]), (name, fps, start)


def test_bytes_source_and_frame_size(clips):
    """The loader passes tar members as bytes, with a frame size."""
    path = clips["x264_gop30.ts"]
    blob = path.read_bytes()
    full = loaders.read_video(blob, frame_size=(24, 32))
    pts = full.pts_seconds.numpy()
    keep = (pts >= 2.0) & (pts < 3.5)
    got = loaders.read_video(blob, start_seconds=2.0, stop_seconds=3.5, frame_size=(24, 32), name="clip.ts")
    np.testing.assert_array_equal(got.pts_seconds.numpy(), pts[keep])
    assert torch.equal(got.frames, full.frames[torch.from_numpy(keep)])


def test_loader_delivers_every_fps_frame_of_a_ts_clip(clips, tmp_path):
    """``make_loader(fps=...)`` on a shard holding a one-GOP .ts: one frame per grid time, none lost."""
    path = clips["x264.ts"]
    pts = _ffprobe_pts(path)
    end = float(pts[-1]) + float(np.median(np.diff(pts)))
    expected = int(np.ceil((end - float(pts[0])) * 5.0 - 1e-9))
    shard = write_tar(tmp_path / "ts-000000.tar", {"clip.ts": path.read_bytes(), "clip.txt": b"a test pattern"})
    loader = loaders.make_loader([str(shard)], seed=0, budgets=(400, 200_000, 256), window_seconds=None, fps=5.0,
                                 frame_size=(24, 32), sample_rate=16000)
    counts = {}
    for batch in loader:
        cu = batch.cu_seqlens_frames.tolist()
        counts.update({key: cu[i + 1] - cu[i] for i, key in enumerate(batch.sample_keys)})
    assert counts == {"clip": expected}


@pytest.mark.parametrize("name", ["x264_gop30.ts", "mpeg2.mpg"])
def test_torchcodec_backend_is_right_or_refuses_naming_the_file(clips, name):
    """torchcodec's seeks land late here too: its frames equal the full decode's, or it raises a DecodeError that
    names the file and the PyAV backend, never later frames in silence (it returned 1.53 s for 0.53 s on mpeg2.mpg)."""
    pytest.importorskip("torchcodec.decoders")
    path = clips[name]
    full = _full(path)
    pts = full.pts_seconds.numpy()
    grid = float(pts[0]) + np.arange(int(np.ceil((float(pts[-1]) - float(pts[0])) * 5.0))) / 5.0
    for kwargs, want in (({"start_seconds": 2.0, "stop_seconds": 3.5}, pts[(pts >= 2.0) & (pts < 3.5)]),
                         ({"fps": 5.0}, pts[np.searchsorted(pts, grid, side="right") - 1])):
        try:
            got = loaders.read_video(path, backend="torchcodec", **kwargs)
        except loaders.DecodeError as e:
            assert str(path) in str(e) and "backend='pyav'" in str(e), str(e)
            continue
        np.testing.assert_allclose(got.pts_seconds.numpy(), want, atol=1e-6, err_msg=str(kwargs))
