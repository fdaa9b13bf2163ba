"""An MP4/MOV cut short after its ``moov`` is refused, not decoded into a shorter clip.

Oracle: ffmpeg's own muxer output. A faststart file (``moov`` first) ends with its ``mdat``, so the last sample byte is
the last byte of the file; a plain file's samples end where its trailing ``moov`` box begins. ffprobe counts the frames
the header promises and the frames a cut file still holds.
"""
from __future__ import annotations

import io
import json
import subprocess

import pytest

import loaders
from loaders.media import check_not_truncated, mp4_boxes, mp4_sample_data_end
from tests.conftest import ffmpeg

SECONDS = 4


@pytest.fixture(scope="module")
def clips(tmp_path_factory):
    d = tmp_path_factory.mktemp("truncated")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=30", "-f", "lavfi", "-i", "sine=f=440:r=16000",
           "-t", str(SECONDS), "-c:v", "libx264", "-g", "15", "-c:a", "aac", "-ac", "1", str(d / "plain.mp4"))
    ffmpeg("-i", str(d / "plain.mp4"), "-c", "copy", "-movflags", "+faststart", str(d / "fast.mp4"))
    ffmpeg("-i", str(d / "plain.mp4"), "-c", "copy", "-movflags", "+faststart", str(d / "fast.mov"))
    return d


def _ffprobe_frames(path, *, count: bool) -> int:
    args = ["ffprobe", "-v", "quiet", "-select_streams", "v:0", "-show_entries",
            "stream=nb_read_frames" if count else "stream=nb_frames", "-of", "json", str(path)]
    if count:
        args.insert(1, "-count_frames")
    stream = json.loads(subprocess.run(args, capture_output=True, text=True, check=True).stdout)["streams"][0]
    return int(stream["nb_read_frames" if count else "nb_frames"])


def test_sample_data_end_matches_the_muxer_layout(clips):
    fast = (clips / "fast.mp4").read_bytes()
    assert [b.kind for b in mp4_boxes(fast, 0, len(fast))][-1] == b"mdat"
    assert mp4_sample_data_end(io.BytesIO(fast)) == len(fast)
    plain = (clips / "plain.mp4").read_bytes()
    boxes = list(mp4_boxes(plain, 0, len(plain)))
    assert boxes[-1].kind == b"moov"
    assert mp4_sample_data_end(io.BytesIO(plain)) == boxes[-1].start
    assert mp4_sample_data_end(io.BytesIO(b"\x1aE\xdf\xa3" + bytes(60))) is None  # Matroska: not ours to judge


@pytest.mark.parametrize("name", ["fast.mp4", "fast.mov"])
@pytest.mark.parametrize("fraction", [0.4, 0.9])
def test_a_cut_faststart_file_is_a_decode_error_for_every_read(clips, tmp_path, name, fraction):
    data = (clips / name).read_bytes()
    cut = tmp_path / f"cut_{name}"
    cut.write_bytes(data[: int(len(data) * fraction)])
    # The defect this guards against: FFmpeg opens the cut file and decodes fewer frames than the header promises.
    assert _ffprobe_frames(cut, count=True) < _ffprobe_frames(cut, count=False) == 30 * SECONDS
    reads = [lambda: loaders.read_video(cut), lambda: loaders.read_video(cut, fps=2.0),
             lambda: loaders.read_video(cut, start_seconds=3.0, stop_seconds=4.0), lambda: loaders.read_audio(cut),
             lambda: loaders.read_audio(cut, start_seconds=3.0, stop_seconds=4.0),
             lambda: loaders.read_video(cut.read_bytes()), lambda: loaders.read_audio(io.BytesIO(cut.read_bytes()))]
    for read in reads:
        with pytest.raises(loaders.DecodeError, match=rf"truncated: .* up to byte {len(data):,} but it holds "
                                                      rf"{cut.stat().st_size:,} bytes") as caught:
            read()
        assert caught.value.reason == "decode"


def test_complete_files_and_a_file_object_position_are_untouched(clips):
    for name in ("plain.mp4", "fast.mp4", "fast.mov"):
        check_not_truncated(clips / name, name)  # no error
        assert loaders.read_video(clips / name).num_frames == 30 * SECONDS
    handle = open(clips / "fast.mp4", "rb")
    handle.seek(123)
    check_not_truncated(handle, "fast.mp4")
    assert handle.tell() == 123


def test_the_suggested_repair_gives_a_valid_shorter_file(clips, tmp_path):
    data = (clips / "fast.mp4").read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[: len(data) // 2])
    repaired = tmp_path / "repaired.mp4"
    ffmpeg("-i", str(cut), "-c", "copy", str(repaired))
    clip = loaders.read_video(repaired)
    assert 0 < clip.num_frames == _ffprobe_frames(cut, count=True) < 30 * SECONDS


def test_an_m4a_cut_anywhere_inside_its_trailing_header_is_a_named_decode_error(tmp_path):
    """A plain M4A (``moov`` last) cut inside that header. At some cuts FFmpeg opens it with an audio stream that has
    no decoder parameters (ffprobe: sample_rate 0); that raised a bare ``AttributeError``, wrapped as "audio decode
    failed". From a path, the cut ``moov`` box (it runs past the end of the file) now says truncated first; from a
    stream that cannot seek (no check possible) the decoder names the missing sample rate."""
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1", "-c:a", "aac", str(tmp_path / "a.m4a"))
    data = (tmp_path / "a.m4a").read_bytes()
    moov = [b for b in mp4_boxes(data, 0, len(data)) if b.kind == b"moov"][0]
    assert moov.stop == len(data)
    cut = tmp_path / "cut.m4a"

    class Stream:  # read() only: no seek, no tell
        def __init__(self, payload: bytes) -> None:
            self._buffer, self.name = io.BytesIO(payload), "cut.m4a"

        def read(self, n: int = -1) -> bytes:
            return self._buffer.read(n)

    streamed = []
    for size in range(moov.start + 8, moov.stop, 8):
        cut.write_bytes(data[:size])
        with pytest.raises(loaders.DecodeError, match=rf"truncated: .* up to byte {len(data):,} but it holds {size:,} "):
            loaders.read_audio(cut)
        try:
            loaders.read_audio(Stream(data[:size]))
        except loaders.DecodeError as e:
            streamed.append(str(e))
    # No Python error's text (AttributeError; FFmpeg's errno "[Errno 1094995529]" printed as InvalidDataError).
    assert streamed and all("cut.m4a" in m and "Error" not in m for m in streamed), sorted(set(streamed))
    assert any("no sample rate" in m for m in streamed)  # the case is reached at this FFmpeg's cuts


@pytest.mark.parametrize("where", ["in_mdat", "in_moov"])
def test_a_plain_mp4_cut_before_its_index_ends_says_truncated(clips, tmp_path, where):
    """A plain MP4 (``moov`` last) cut inside its ``mdat`` or its ``moov``: no sample table to read, but the top-level
    box that the cut runs through declares where it ends. Before: "cannot open ...: Invalid data found" (mdat) or
    "decoded to no frames (corrupt or truncated?)"."""
    data = (clips / "plain.mp4").read_bytes()
    boxes = {b.kind: b for b in mp4_boxes(data, 0, len(data))}
    box = boxes[b"mdat" if where == "in_mdat" else b"moov"]
    size = (box.start + box.stop) // 2
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(data[:size])
    for read in (loaders.read_video, loaders.read_audio):
        with pytest.raises(loaders.DecodeError, match=rf"truncated: .* up to byte {box.stop:,} but it holds {size:,} "):
            read(cut)
