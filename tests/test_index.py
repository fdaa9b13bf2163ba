"""The frame index read from the container's header equals the demux scan's, and both equal ffprobe."""
import io
import struct

import av
import numpy as np
import pytest

import loaders
from conftest import ffmpeg, ffprobe_frame_times
from loaders.media import (
    FrameIndex,
    clear_frame_index_cache,
    frame_index,
    frame_index_cache_size,
    header_frame_index,
    pick_stream,
    scan_frame_index,
)

# (file name, ffmpeg arguments): every layout the header reader accepts, and two it must refuse.
_LAYOUTS = {
    "bframes.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30", "-t", "3", "-c:v", "libx264", "-bf", "3", "-g", "40"],
    "no_bframes.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30", "-t", "3", "-c:v", "libx264", "-bf", "0"],
    "start05.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=25", "-t", "2", "-output_ts_offset", "0.5",
                    "-c:v", "libx264"],
    "faststart.mov": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30000/1001", "-t", "2", "-c:v", "libx264",
                      "-movflags", "+faststart"],
    "vfr.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30", "-t", "3", "-vf",
                "setpts='if(lt(N,30),N/30,if(lt(N,60),1+(N-30)/15,3+(N-60)/30))/TB'", "-fps_mode", "vfr",
                "-c:v", "libx264"],
    "mpeg4_bframes.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30", "-t", "2", "-c:v", "mpeg4", "-bf", "2"],
    "audio_first.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=24", "-f", "lavfi", "-i", "sine=r=48000",
                        "-t", "2", "-c:v", "libx264", "-c:a", "aac", "-map", "1", "-map", "0"],
    "fragmented.mp4": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30", "-t", "2", "-c:v", "libx264",
                       "-movflags", "+frag_keyframe+empty_moov"],
    "ntsc.mkv": ["-f", "lavfi", "-i", "testsrc=size=96x64:rate=30000/1001", "-t", "2", "-c:v", "libx264"],
}
_FROM_HEADER = {"bframes.mp4", "no_bframes.mp4", "start05.mp4", "faststart.mov", "vfr.mp4", "mpeg4_bframes.mp4",
                "audio_first.mp4"}


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    d = tmp_path_factory.mktemp("index")
    for name, args in _LAYOUTS.items():
        ffmpeg(*args, str(d / name))
    return d


def _indexes(path):
    with av.open(str(path)) as container:
        stream = pick_stream(container, "video", str(path))
        header = header_frame_index(str(path), container, stream)
        scan = scan_frame_index(container, stream)
    return header, scan


@pytest.mark.parametrize("name", sorted(_LAYOUTS))
def test_header_index_equals_scan_and_ffprobe(layouts, name):
    path = layouts / name
    header, scan = _indexes(path)
    if name not in _FROM_HEADER:
        assert header is None  # fragmented MP4 and Matroska: only the scan is exact
        return
    assert header is not None
    assert header.pts_seconds.tolist() == scan.pts_seconds.tolist()  # the same doubles, not merely close
    assert header.is_keyframe.tolist() == scan.is_keyframe.tolist()
    assert header.end_seconds == scan.end_seconds
    np.testing.assert_allclose(header.pts_seconds, ffprobe_frame_times(path), atol=1e-6)
    assert header.is_keyframe[0] and header.is_keyframe.sum() >= 1
    if name == "bframes.mp4":
        assert not np.array_equal(header.pts_seconds, np.sort(header.pts_seconds)[::-1]) and header.is_keyframe.sum() >= 3
    if name == "start05.mp4":
        assert header.pts_seconds[0] == 0.5


def test_header_index_from_bytes_and_file_objects(layouts):
    path = layouts / "bframes.mp4"
    data = path.read_bytes()
    with av.open(str(path)) as container:
        stream = pick_stream(container, "video", str(path))
        from_path = header_frame_index(str(path), container, stream)
        from_bytes = header_frame_index(data, container, stream)
        handle = io.BytesIO(data)
        handle.seek(123)
        from_handle = header_frame_index(handle, container, stream)
        assert handle.tell() == 123  # a caller's file position is left as it was
    assert from_path.pts_seconds.tolist() == from_bytes.pts_seconds.tolist() == from_handle.pts_seconds.tolist()


def test_read_video_does_not_scan_an_mp4(layouts, monkeypatch):
    path = layouts / "bframes.mp4"
    reference = loaders.read_video(path)

    def no_scan(*args, **kwargs):
        raise AssertionError("scanned an MP4 whose header holds the index")

    monkeypatch.setattr("loaders._index.scan_frame_index", no_scan)
    clear_frame_index_cache()
    clip = loaders.read_video(path, start_seconds=1.0, stop_seconds=2.0)
    keep = (reference.pts_seconds >= 1.0) & (reference.pts_seconds < 2.0)
    assert clip.pts_seconds.tolist() == reference.pts_seconds[keep].tolist()
    assert bool((clip.frames == reference.frames[keep]).all())
    sparse = loaders.read_video(path, fps=2.0)
    assert sparse.pts_seconds.tolist() == [i / 2 for i in range(6)]


def test_scan_is_cached_per_path_and_redone_when_the_file_changes(layouts, tmp_path, monkeypatch):
    path = tmp_path / "clip.mkv"
    path.write_bytes((layouts / "ntsc.mkv").read_bytes())
    calls = []
    real_scan = scan_frame_index

    def counting_scan(container, stream):
        calls.append(1)
        return real_scan(container, stream)

    monkeypatch.setattr("loaders._index.scan_frame_index", counting_scan)
    clear_frame_index_cache()
    first = loaders.probe_video(path)[1]
    second = loaders.probe_video(path)[1]
    loaders.read_video(path, start_seconds=0.5, stop_seconds=1.0)
    assert len(calls) == 1 and second is first
    with pytest.raises(ValueError):
        first.pts_seconds[0] = 0.0  # shared between callers: read-only
    path.write_bytes((layouts / "bframes.mp4").read_bytes())  # another file at the same path
    third = loaders.probe_video(path)[1]
    assert third.num_frames == 90
    loaders.read_video(path.read_bytes(), start_seconds=0.0, stop_seconds=0.5)  # bytes: never cached
    assert frame_index_cache_size() == 2


def test_layouts_outside_the_simple_one_are_refused(layouts):
    """Two edits, or an edit rate other than 1: FFmpeg applies these frame by frame; the reader refuses."""
    from loaders.media import read_mp4_video_tracks

    data = (layouts / "bframes.mp4").read_bytes()
    tracks = read_mp4_video_tracks(io.BytesIO(data))
    assert tracks[0] is not None and tracks[0].pts_ticks.size == 90
    # elst payload: version/flags (4), entry count (4), then segment_duration, media_time, rate (int16.int16).
    at = data.index(b"elst") + 4
    rate_at = at + 8 + 8
    slowed = data[:rate_at] + struct.pack(">HH", 2, 0) + data[rate_at + 4:]
    assert read_mp4_video_tracks(io.BytesIO(slowed))[0] is None
    assert read_mp4_video_tracks(io.BytesIO(b"\x00" * 64)) is None  # not an MP4 at all
    assert read_mp4_video_tracks(io.BytesIO(data[: data.index(b"moov") - 4])) is None  # moov cut off


def test_mp4_boxes_walks_box_headers_as_the_format_defines_them():
    """ISO/IEC 14496-12 4.2: a 32-bit size, a 64-bit size after the type when it is 1, the rest of the parent when
    it is 0; a box past its parent's end raises, naming it (the header index and preprocess's edit-list rewrite
    both walk boxes with it)."""
    from loaders.media import Mp4Box, mp4_boxes

    inner = struct.pack(">I4s", 12, b"mvhd") + b"\0" * 4
    moov = struct.pack(">I4s", 8 + len(inner), b"moov") + inner
    large = struct.pack(">I4sQ", 1, b"free", 16 + 3) + b"abc"
    data = b"pad" + moov + large + struct.pack(">I4s", 0, b"mdat") + b"\xff" * 5
    boxes = list(mp4_boxes(data, 3, len(data)))
    assert boxes == [Mp4Box(b"moov", 3, 11, 3 + 20), Mp4Box(b"free", 23, 39, 42), Mp4Box(b"mdat", 42, 50, 55)]
    assert list(mp4_boxes(data, boxes[0].payload, boxes[0].stop)) == [Mp4Box(b"mvhd", 11, 19, 23)]
    with pytest.raises(ValueError, match=r"MP4 box b'moov' of 20 bytes at 3 overruns its parent"):
        list(mp4_boxes(data, 3, 20))
    with pytest.raises(ValueError, match="64-bit size is cut off"):
        list(mp4_boxes(large[:12], 0, 12))


def test_frame_index_round_trips_json(layouts):
    index = loaders.probe_video(layouts / "vfr.mp4")[1]
    again = FrameIndex.from_json(index.to_json())
    np.testing.assert_allclose(again.pts_seconds, index.pts_seconds, rtol=0, atol=5e-10)  # stored to 9 decimals
    assert again.is_keyframe.tolist() == index.is_keyframe.tolist()
