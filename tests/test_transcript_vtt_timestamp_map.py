"""WebVTT ``X-TIMESTAMP-MAP`` (HLS subtitle segments): cue and word times land on the media's MPEG-TS timeline.

The oracle is ffprobe: each MPEG-TS is written by ffmpeg with a first pts that is not zero (its default 1.4 s, 10 s as
Apple's segmenter starts, and 26.5 h, next to the 33-bit wrap), and the WebVTT segment is written as an HLS
segmenter writes it: ``MPEGTS`` is the segment's first pts, ``LOCAL`` the cue time of that instant. A cue stamped at
the local time of frame ``k`` must start at ffprobe's pts of frame ``k`` (90 kHz ticks / 90000, exactly).
Before the map was read, every cue kept its local time: 1.4 s, 10 s or 26.5 h off the video's timeline.
"""
from __future__ import annotations

import json
import subprocess

import pytest

from loaders import read_transcript, read_video
from loaders.errors import TranscriptError
from tests.conftest import ffmpeg

FPS = 10
WRAP_TICKS = 1 << 33


def _ts(path, *, seconds: float, output_ts_offset: float, fps: int = FPS) -> list[int]:
    """An MPEG-TS of ``seconds`` of video at ``fps`` whose pts start at ``output_ts_offset`` + 1.4 s (ffmpeg's
    muxer delay); returns ffprobe's pts (90 kHz ticks) of every frame, as ffprobe reads them (unwrapped)."""
    ffmpeg("-f", "lavfi", "-i", f"testsrc2=size=32x32:rate={fps}:duration={seconds}", "-c:v", "libx264", "-bf", "0",
           "-g", str(fps), "-output_ts_offset", str(output_ts_offset), "-f", "mpegts", str(path))
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=pts",
                                   "-of", "json", str(path)])
    return [int(frame["pts"]) for frame in json.loads(out)["frames"]]


def _stamp(seconds: float) -> str:
    millis = round(seconds * 1000)
    return f"{millis // 3_600_000:02d}:{millis // 60_000 % 60:02d}:{millis // 1000 % 60:02d}.{millis % 1000:03d}"


def _hls_vtt(mpegts: int, cues: list[tuple[float, float, str]], *, local: float = 0.0, local_first=False) -> bytes:
    """A WebVTT segment as HLS segmenters write it; each cue's second word has an inline stamp 0.1 s in."""
    pair = [f"MPEGTS:{mpegts}", f"LOCAL:{_stamp(local)}"]
    lines = ["WEBVTT", "X-TIMESTAMP-MAP=" + ",".join(pair[::-1] if local_first else pair), ""]
    for start, stop, text in cues:
        first, second = text.split()
        lines += [f"{_stamp(start)} --> {_stamp(stop)}", f"{first} <{_stamp(start + 0.1)}>{second}", ""]
    return "\n".join(lines).encode()


@pytest.mark.parametrize("output_ts_offset, local_first", [(0, False), (8.6, True)])
def test_cues_land_on_ffprobe_pts_of_an_mpeg_ts(tmp_path, output_ts_offset, local_first):
    """First pts 1.4 s (ffmpeg's default) and 10 s (Apple's); ``LOCAL`` 0 and 2 s; both key orders."""
    pts = _ts(tmp_path / "a.ts", seconds=3, output_ts_offset=output_ts_offset)
    assert pts[0] == round((output_ts_offset + 1.4) * 90000)  # the first pts is not zero
    local = 2.0 if local_first else 0.0  # LOCAL is the cue time of the segment's first pts
    vtt = _hls_vtt(pts[0], [(local + 0.5, local + 1.0, "Hello there"), (local + 2.0, local + 2.7, "good day")],
                   local=local, local_first=local_first)
    spans = read_transcript(vtt, name="seg0.vtt").spans
    assert [s.start_seconds for s in spans] == [pts[5] / 90000, pts[20] / 90000]
    assert [s.stop_seconds for s in spans] == [pts[10] / 90000, pts[27] / 90000]
    assert [[w.start_seconds for w in s.words] for s in spans] == [[pts[5] / 90000, pts[6] / 90000],
                                                                   [pts[20] / 90000, pts[21] / 90000]]
    # the decoder's frame times are ffprobe's: the cue starts exactly at frame 5
    assert read_video(str(tmp_path / "a.ts")).pts_seconds[5].item() == spans[0].start_seconds


def test_no_map_and_a_zero_map_keep_the_stamps(tmp_path):
    """``MPEGTS:0,LOCAL:00:00:00.000`` (many encoders) and no map keep the times; a 10 s map moves them 10 s."""
    cues = [(0.5, 1.0, "Hello there")]
    zero = _hls_vtt(0, cues)
    none = zero.replace(b"X-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n", b"")
    apple = _hls_vtt(900000, cues)
    starts = [read_transcript(v, name="s.vtt").spans[0].start_seconds for v in (zero, none, apple)]
    assert starts == [0.5, 0.5, 10.5]


@pytest.mark.parametrize("unwrapped", [False, True])
def test_cues_past_the_33_bit_wrap_follow_ffprobe(tmp_path, unwrapped):
    """A TS that starts 141 s before the wrap: ffprobe's pts run on past 2**33 ticks, and so do the cues'. A packager
    that writes ``MPEGTS`` unwrapped (2**33 more) gives the same times (33 bits)."""
    pts = _ts(tmp_path / "w.ts", seconds=150, output_ts_offset=95301, fps=2)
    assert pts[0] < WRAP_TICKS - 60 * 90000 < WRAP_TICKS < pts[-1]
    mpegts = pts[0] + (WRAP_TICKS if unwrapped else 0)
    spans = read_transcript(_hls_vtt(mpegts, [(10.0, 11.0, "before wrap"), (145.0, 146.0, "after wrap")]),
                            name="w.vtt").spans
    assert [s.start_seconds for s in spans] == [pts[20] / 90000, pts[290] / 90000]
    assert spans[1].start_seconds > WRAP_TICKS / 90000


def test_a_segment_just_before_the_wrap_reads_as_ffprobe_reads_it(tmp_path):
    """A TS that starts 0.3 s before the wrap: ffprobe reads its first frames at negative times and the rest from 0
    on (FFmpeg's wrap rule near the wrap point); the cues after the wrap land on those pts, a cue before it (which
    would be before 0) is refused, naming the cue's line and the map."""
    pts = _ts(tmp_path / "n.ts", seconds=2, output_ts_offset=95442)
    assert pts[0] < 0 < pts[5]
    mpegts = pts[0] % WRAP_TICKS  # the 33-bit pts the segment carries, as a segmenter writes it
    spans = read_transcript(_hls_vtt(mpegts, [(0.5, 1.0, "Hello there"), (1.2, 1.9, "good day")]), name="n.vtt").spans
    assert [s.start_seconds for s in spans] == [pts[5] / 90000, pts[12] / 90000]
    with pytest.raises(TranscriptError, match=r"n\.vtt: line 4: time 0\.100 s maps to -0\.2[0-9]+ s by the "
                                              r"X-TIMESTAMP-MAP on line 2 \('MPEGTS:8589906\d+,LOCAL:00:00:00.000'\)"):
        read_transcript(_hls_vtt(mpegts, [(0.1, 1.0, "too early")]), name="n.vtt")


@pytest.mark.parametrize("value, problem", [
    ("MPEGTS:abc,LOCAL:00:00:00.000", "MPEGTS 'abc' is not a count of 90 kHz ticks"),
    ("MPEGTS:-90000,LOCAL:00:00:00.000", "MPEGTS '-90000' is not a count of 90 kHz ticks"),
    ("MPEGTS:900000", "LOCAL missing"),
    ("LOCAL:00:00:00.000", "MPEGTS missing"),
    ("MPEGTS:900000,LOCAL:1:00", "LOCAL '1:00' is not a WebVTT time"),
    ("MPEGTS:900000,LOCAL:00:61:00.000", "LOCAL '00:61:00.000': minutes and seconds must be <= 59"),
    ("MPEGTS:900000,MPEGTS:0,LOCAL:00:00:00.000", "MPEGTS given twice"),
    ("MPEGTS:900000,LOCAL:00:00:00.000,PTS:1", "'PTS:1' is not MPEGTS:<ticks> or LOCAL:<time>"),
])
def test_a_malformed_map_is_refused_naming_file_line_and_value(value, problem):
    vtt = f"WEBVTT\nX-TIMESTAMP-MAP={value}\n\n00:00:01.000 --> 00:00:02.000\nHello\n".encode()
    with pytest.raises(TranscriptError) as caught:
        read_transcript(vtt, name="seg7.vtt")
    message = str(caught.value)
    assert message.startswith(f"seg7.vtt: line 2: malformed X-TIMESTAMP-MAP {value!r}: {problem}"), message


def test_two_maps_are_refused():
    vtt = (b"WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000\nX-TIMESTAMP-MAP=MPEGTS:0,LOCAL:00:00:00.000\n\n"
           b"00:00:01.000 --> 00:00:02.000\nHello\n")
    with pytest.raises(TranscriptError, match=r"seg\.vtt: line 3: malformed X-TIMESTAMP-MAP 'MPEGTS:0,LOCAL:00:00:00"
                                              r"\.000': a second map \(the first is on line 2\)"):
        read_transcript(vtt, name="seg.vtt")
