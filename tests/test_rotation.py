"""Display rotation (phone clips): every reader returns frames as the ffmpeg CLI shows them (it autorotates by
default), reports ``rotation_degrees``, and keeps the times.

Oracles: ffmpeg's own rawvideo rgb24 output of each clip (autorotated), ffprobe's side-data ``rotation`` and
its frame times. Clips are made here: a 64x48 H.264 test pattern (1 s, 10 fps, B-frames) remuxed with
``-metadata:s:v:0 rotate=R`` (ffmpeg 5.1 has no ``-display_rotation``; the mov muxer writes the tag as the
``tkhd`` display matrix), and mirrored / 45-degree matrices written with PyAV's ``set_display_rotation``.
"""
from __future__ import annotations

import functools
import io
import json
import subprocess
import tarfile
from pathlib import Path

import numpy as np
import pytest
import torch

import loaders
from loaders.pipeline import IMAGENET_MEAN, IMAGENET_STD
from tests.conftest import ffmpeg, ffprobe_frame_times

TAGS = {"0": 0, "90": 90, "180": 180, "270": 270, "-90": 270}
"""``rotate`` tag written → ``rotation_degrees`` expected (counterclockwise, modulo 360; ffprobe says -90 for 270)."""
SIZE = (48, 64)
"""(height, width) of the stored frames."""


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("rotation")
    base = folder / "base.mp4"
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size={SIZE[1]}x{SIZE[0]}:rate=10", "-f", "lavfi", "-i", "sine=f=440:r=16000",
           "-t", "1", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-g", "5", "-bf", "2", "-c:a", "aac", "-ac", "1", str(base))
    out = {}
    for tag in TAGS:
        out[tag] = folder / f"rotate{tag}.mp4"
        ffmpeg("-i", str(base), "-c", "copy", "-metadata:s:v:0", f"rotate={tag}", str(out[tag]))
    return out


@functools.lru_cache(maxsize=None)
def ffmpeg_rgb24(path: Path, *filters: str) -> np.ndarray:
    """The oracle: the ffmpeg CLI's rgb24 frames (autorotated, as it does by default), ``[T, H, W, 3]`` (read-only;
    cached: each clip's oracle is run once)."""
    vf = ["-vf", ",".join(filters)] if filters else []
    raw = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), *vf, "-f", "rawvideo", "-pix_fmt",
                          "rgb24", "pipe:1"], capture_output=True, check=True).stdout
    probe = json.loads(subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                                "stream_side_data=rotation", "-of", "json", str(path)]))
    sides = [s for stream in probe["streams"] for s in stream.get("side_data_list", [])]
    turned = any(int(s.get("rotation", 0)) % 180 for s in sides)
    height, width = SIZE[::-1] if turned else SIZE
    if filters:  # a scale=W:H filter: the last one says the size
        width, height = (int(v) for v in filters[-1].split("=")[1].split(":")[:2])
    return np.frombuffer(raw, dtype=np.uint8).reshape(-1, height, width, 3)


@functools.lru_cache(maxsize=None)
def frame_times(path: Path) -> np.ndarray:
    return ffprobe_frame_times(path)


@functools.lru_cache(maxsize=None)
def ffprobe_rotation_degrees(path: Path) -> int:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries",
                                   "stream_side_data=rotation", "-of", "csv=p=0", str(path)], text=True).strip()
    return int(out.strip(",") or 0) % 360


@pytest.mark.parametrize("backend", ["pyav", "torchcodec"])
@pytest.mark.parametrize("tag", list(TAGS))
def test_frames_equal_ffmpegs_autorotated_frames_and_times_are_unchanged(clips, tag, backend):
    path = clips[tag]
    clip = loaders.read_video(path, backend=backend)
    expected = ffmpeg_rgb24(path)
    assert clip.metadata.rotation_degrees == TAGS[tag] == ffprobe_rotation_degrees(path)
    assert tuple(clip.frames.shape) == expected.shape
    assert (clip.metadata.height, clip.metadata.width) == expected.shape[1:3]
    np.testing.assert_array_equal(clip.frames.numpy(), expected)
    np.testing.assert_array_equal(clip.pts_seconds.numpy(), frame_times(path))
    np.testing.assert_array_equal(clip.pts_seconds.numpy(), frame_times(clips["0"]))


@pytest.mark.parametrize("backend", ["pyav", "torchcodec"])
@pytest.mark.parametrize("tag", ["90", "180", "270"])
def test_windows_and_fps_reads_are_turned_too(clips, tag, backend):
    path = clips[tag]
    expected, times = ffmpeg_rgb24(path), frame_times(path)
    window = loaders.read_video(path, backend=backend, start_seconds=0.25, stop_seconds=0.65)
    first = int(np.searchsorted(times, 0.25))
    np.testing.assert_array_equal(window.frames.numpy(), expected[first:first + 4])
    np.testing.assert_array_equal(window.pts_seconds.numpy(), times[first:first + 4])
    sparse = loaders.read_video(path, backend=backend, fps=3.0)  # played at 0, 1/3, 2/3 s: frames 0, 3, 6
    np.testing.assert_array_equal(sparse.frames.numpy(), expected[[0, 3, 6]])
    empty = loaders.read_video(path, backend=backend, start_seconds=0.5, stop_seconds=0.5)
    assert tuple(empty.frames.shape) == (0,) + expected.shape[1:]
    assert empty.metadata.rotation_degrees == TAGS[tag]


@pytest.mark.parametrize("tag", list(TAGS))
def test_probe_video_reports_the_rotation_and_the_displayed_size(clips, tag):
    meta, index = loaders.probe_video(clips[tag])
    assert meta.rotation_degrees == ffprobe_rotation_degrees(clips[tag])
    assert (meta.height, meta.width) == ffmpeg_rgb24(clips[tag]).shape[1:3]
    np.testing.assert_array_equal(index.pts_seconds, frame_times(clips[tag]))


@pytest.mark.parametrize("tag", ["90", "180", "270"])
def test_frame_size_is_the_displayed_size_and_as_close_to_ffmpegs_scale_as_unturned(clips, tag):
    """frame_size is (height, width) as displayed. The PyAV backend turns in YUV before scaling, as the CLI does;
    its distance to the CLI's area scaling is the same as on the clip that is not turned (same filter, same data)."""
    size = (32, 24) if TAGS[tag] % 180 else (24, 32)
    turned = loaders.read_video(clips[tag], frame_size=size).frames.numpy().astype(int)
    plain = loaders.read_video(clips["0"], frame_size=(24, 32)).frames.numpy().astype(int)
    turned_error = np.abs(turned - ffmpeg_rgb24(clips[tag], f"scale={size[1]}:{size[0]}:flags=area"))
    plain_error = np.abs(plain - ffmpeg_rgb24(clips["0"], "scale=32:24:flags=area"))
    assert turned.shape[1:3] == size
    assert turned_error.mean() <= plain_error.mean() * 1.25 and turned_error.max() <= plain_error.max() * 1.25
    tc = loaders.read_video(clips[tag], frame_size=size, backend="torchcodec").frames  # area pooling commutes with turns
    plain_tc = loaders.read_video(clips["0"], frame_size=(24, 32), backend="torchcodec").frames
    np.testing.assert_array_equal(tc.numpy(), torch.rot90(plain_tc, TAGS[tag] // 90, dims=(1, 2)).numpy())


def test_decord_refuses_a_turned_stream_naming_the_file_and_the_degrees(clips):
    pytest.importorskip("decord")
    with pytest.raises(loaders.DecodeError, match=r"rotate90\.mp4: its display matrix turns the frames by 90 degrees"):
        loaders.read_video(clips["90"], backend="decord")
    plain = loaders.read_video(clips["0"], backend="decord")
    np.testing.assert_array_equal(plain.frames.numpy(), ffmpeg_rgb24(clips["0"]))


def _pyav_clip(path: Path, degrees: float, hflip: bool = False) -> Path:
    import av

    with av.open(str(path), "w") as out:
        stream = out.add_stream("mpeg4", rate=10)
        stream.width, stream.height, stream.pix_fmt = SIZE[1], SIZE[0], "yuv420p"
        stream.set_display_rotation(degrees, hflip=hflip)
        for i in range(3):
            image = np.full(SIZE + (3,), 40 * i, dtype=np.uint8)
            for packet in stream.encode(av.VideoFrame.from_ndarray(image, format="rgb24")):
                out.mux(packet)
        for packet in stream.encode():
            out.mux(packet)
    return path


@pytest.mark.parametrize("degrees, hflip, message", [
    (0, True, r"mirror\.mp4: its display matrix \[.*\] mirrors the frames"),
    (45, False, r"mirror\.mp4: its display matrix \[.*\] turns the frames by 45\.00 degrees, not a multiple of 90"),
])
def test_a_mirrored_or_oblique_display_matrix_is_refused_clearly(tmp_path, degrees, hflip, message):
    path = _pyav_clip(tmp_path / "mirror.mp4", degrees, hflip)
    for read in (loaders.read_video, loaders.probe_video):
        with pytest.raises(loaders.DecodeError, match=message):
            read(path)
    turned = loaders.read_video(_pyav_clip(tmp_path / "turned.mp4", -90))  # PyAV's own writer, read back: 270
    assert turned.metadata.rotation_degrees == 270 and tuple(turned.frames.shape) == (3, SIZE[1], SIZE[0], 3)


def test_the_loaders_batch_holds_the_displayed_frames(clips, tmp_path):
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for key, tag in (("a_turned", "90"), ("b_plain", "0")):
            data = clips[tag].read_bytes()
            info = tarfile.TarInfo(f"{key}.mp4")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    shard = tmp_path / "rotated.tar"
    shard.write_bytes(buffer.getvalue())
    displayed = SIZE[::-1]  # the turned clip's own size: no scaling, so its pixels are ffmpeg's exactly
    loader = loaders.make_loader(str(shard), seed=0, frame_size=displayed, budgets=(100, 64_000, 64), window_seconds=None,
                                 max_items=2)
    mean = torch.tensor(IMAGENET_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(IMAGENET_STD).view(1, 3, 1, 1)
    frames = {}
    for batch in loader:
        for i, key in enumerate(batch.sample_keys):
            a, b = int(batch.cu_seqlens_frames[i]), int(batch.cu_seqlens_frames[i + 1])
            rgb = (batch.frames[a:b] * std + mean) * 255  # undo the collator's normalisation
            frames[key] = rgb.round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    assert set(frames) == {"a_turned", "b_plain"}
    np.testing.assert_array_equal(frames["a_turned"], ffmpeg_rgb24(clips["90"]))
    assert frames["b_plain"].shape[1:3] == displayed  # scaled from 64 wide x 48 high


def test_av_offset_of_a_turned_clip_is_the_unturned_clips(tmp_path):
    """The estimator's visual events (per-frame luma changes) on sample_data/clip00.mp4 (truth: audio 120 ms late)
    remuxed with a 90-degree display matrix: the same offset as the clip itself."""
    from avalign import measure_media

    source = Path(__file__).resolve().parent.parent / "sample_data" / "clip00.mp4"
    turned = tmp_path / "clip00_rotate90.mp4"
    ffmpeg("-i", str(source), "-c", "copy", "-metadata:s:v:0", "rotate=90", str(turned))
    truth = json.loads((source.parent / "truth.json").read_text())["clips"]["clip00"]["av_offset_ms"]
    plain_record = measure_media(source, name="clip00.mp4").record
    turned_record = measure_media(turned, name="clip00_rotate90.mp4").record
    assert turned_record["av_offset_ms"] == plain_record["av_offset_ms"]
    assert turned_record["av_offset_ms"] == pytest.approx(truth, abs=5)
    assert turned_record["av_method"] == plain_record["av_method"]
    assert (turned_record["video"]["width"], turned_record["video"]["height"], turned_record["video"]["rotation_degrees"]) \
        == (plain_record["video"]["height"], plain_record["video"]["width"], 90)


def test_the_estimation_reader_scales_the_displayed_frame(tmp_path):
    """``read_video_for_estimation`` keeps the aspect of what is displayed: a 640x360 stream turned by 90 degrees is
    360 wide, scaled to 64 wide x 114 high (even sizes), the same as ffmpeg's turned frames scaled so."""
    from avalign import read_video_for_estimation

    plain, turned = tmp_path / "wide.mp4", tmp_path / "wide_rotate90.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=640x360:rate=25", "-t", "0.4", "-c:v", "libx264", str(plain))
    ffmpeg("-i", str(plain), "-c", "copy", "-metadata:s:v:0", "rotate=90", str(turned))
    small, index = read_video_for_estimation(turned, name="wide_rotate90.mp4")
    assert tuple(small.frames.shape[1:]) == (114, 64, 3)
    assert (small.metadata.width, small.metadata.height, small.metadata.rotation_degrees) == (360, 640, 90)
    np.testing.assert_array_equal(small.pts_seconds.numpy(), index.pts_seconds)
    ffmpeg_scaled = ffmpeg_rgb24(turned, "scale=64:114:flags=area")
    plain_error = np.abs(read_video_for_estimation(plain, name="wide.mp4")[0].frames.numpy().astype(int)
                         - ffmpeg_rgb24(plain, "scale=64:36:flags=area")).mean()
    assert np.abs(small.frames.numpy().astype(int) - ffmpeg_scaled).mean() <= 1.25 * plain_error


def test_an_angle_within_one_degree_of_a_quarter_turn_is_that_turn(tmp_path):
    """FFmpeg's autorotate takes 89.6 degrees as 90 (within 1 degree); so does ``rotation_degrees``, pixel for pixel."""
    path = _pyav_clip(tmp_path / "almost.mp4", 89.6)
    clip = loaders.read_video(path)
    assert clip.metadata.rotation_degrees == 90
    np.testing.assert_array_equal(clip.frames.numpy(), ffmpeg_rgb24(path))
