"""Corrupt and hostile inputs, built at test time: one shard per case holding ONE good sample and the bad one.

Each :class:`Case` says what every tool must do with its bad sample, using the one vocabulary of reason
codes the three tools share (``loaders.errors.REASONS``; the table below is the contract the reliability
matrix checks)::

    case                 loader (make_loader)       preprocess (skipped.jsonl)   report (report.json skipped)
    truncated_media      skip  decode               skip  decode                 skip  decode
    truncated_faststart  skip  decode               skip  decode                 skip  decode
    empty_media          skip  decode               skip  decode                 skip  decode
    random_bytes         skip  decode               skip  decode                 skip  decode
    video_only           kept  (empty audio span)   kept  (offsets None)         kept  (offsets None)
    no_av_stream         skip  missing_audio        skip  missing_audio          skip  missing_audio
    audio_only           kept  (no frames)          kept  (av_offset_ms None)    kept  (av_offset_ms None)
    missing_transcript   kept  (no words)           kept  (no transcript.json)   kept  (has_transcript False)
    malformed_json       skip  transcript           skip  transcript             skip  transcript
    malformed_srt        skip  transcript           skip  transcript             skip  transcript
    malformed_vtt        skip  transcript           skip  transcript             skip  transcript
    malformed_textgrid   skip  transcript           skip  transcript             skip  transcript
    stop_before_start    skip  transcript           skip  transcript             skip  transcript
    spans_beyond_media   kept  (clipped, counted)   kept  (spans_outside = 2)    kept  (spans_outside = 2)
    duplicate_key        skip  duplicate_key        skip  duplicate_key          skip  duplicate_key
    dotdot_name          skip  unsafe_name          skip  unsafe_name            skip  unsafe_name
    absolute_name        skip  unsafe_name          skip  unsafe_name            skip  unsafe_name
    truncated_tar        skip  truncated            skip  truncated              skip  truncated
    lying_frame_count    kept  (true frame count)   kept  (true frame count)     kept  (frame_count_mismatch)
    over_max_pixels      skip  too_large            skip  too_large              skip  too_large

"kept" means the bad sample comes through with its facts told truthfully; "skip" means it is counted once
under that reason and the good sample is unaffected. A ``duplicate_key`` shard holds the key ``bad`` twice:
the first copy is a valid sample and is kept, the second is the one skipped.

All media are tiny (32x24, 10 fps, 1 s, mono 16 kHz) so that the whole matrix runs in seconds.
"""
from __future__ import annotations

import io
import json
import struct
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from tests.conftest import ffmpeg, tiny_clip

__all__ = ["Case", "GOOD_KEY", "BAD_KEY", "TOOLS", "build_cases", "good_transcript", "write_tar"]

GOOD_KEY = "good"
BAD_KEY = "bad"
TOOLS = ("loader", "preprocess", "report")
CLIP_SECONDS = 1.0
FPS = 10
SAMPLE_RATE = 16000
MAX_PIXELS_DEFAULT = 3840 * 2160
"""``read_video``'s default ``max_pixels`` (4K UHD), the only limit the loader/preprocess/report apply."""


@dataclass(frozen=True)
class Expect:
    """What one tool must do with the bad sample of a case."""

    outcome: str
    """``"skip"`` (counted under ``reason``, not delivered) or ``"kept"`` (delivered, facts flagged)."""
    reason: str = ""
    """The reason code of a skip (empty for ``kept``)."""
    flagged: str = ""
    """For ``kept``: what must be flagged (checked by the matrix): ``no_words``, ``no_video``,
    ``spans_outside``, ``frame_count``, ``first_copy``."""


@dataclass(frozen=True)
class Case:
    """One shard: the good sample plus one bad sample (or a hostile tar layout)."""

    name: str
    """Case id, used as the pytest parameter id."""
    shard: str
    """Path of the shard (``.tar``)."""
    expect: dict = field(default_factory=dict)
    """Tool name → :class:`Expect`."""
    note: str = ""
    """What is wrong with the bad sample."""


def write_tar(path: Path, members: list[tuple[str, bytes]]) -> str:
    """A plain (ustar/gnu) tar with fixed mtimes, members in the given order."""
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo("placeholder")
            info.name = name  # set after construction: TarInfo does not normalise it then
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    return str(path)


def good_transcript(words: Optional[list[tuple[str, float, float]]] = None) -> bytes:
    """Whisper-style JSON with word times inside the 1 s clip."""
    words = words or [("one", 0.1, 0.3), ("two", 0.4, 0.6), ("three", 0.7, 0.9)]
    segment = {"start": words[0][1], "end": words[-1][2], "text": " ".join(w for w, _, _ in words),
               "words": [{"word": w, "start": s, "end": e} for w, s, e in words]}
    return json.dumps({"segments": [segment]}).encode()


def _make_media(d: Path) -> dict[str, bytes]:
    lavfi_v = f"testsrc=size=32x24:rate={FPS}"
    lavfi_a = f"sine=f=440:r={SAMPLE_RATE}"
    t = str(CLIP_SECONDS)
    tiny_clip(d / "good.mp4", CLIP_SECONDS, fps=FPS, sample_rate=SAMPLE_RATE)
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=32x24:rate=10", "-f", "lavfi", "-i", "sine=f=660:r=16000", "-t", t,
           "-c:v", "libx264", "-g", "5", "-c:a", "aac", "-ac", "1", str(d / "other.mp4"))
    ffmpeg("-i", str(d / "other.mp4"), "-c", "copy", "-movflags", "+faststart", str(d / "faststart.mp4"))
    tiny_clip(d / "video_only.mp4", CLIP_SECONDS, fps=FPS, sample_rate=None)
    ffmpeg("-f", "lavfi", "-i", lavfi_a, "-t", t, "-c:a", "aac", "-ac", "1", str(d / "audio_only.mp4"))
    (d / "cue.srt").write_text("1\n00:00:00,000 --> 00:00:00,500\nhello\n")
    ffmpeg("-i", str(d / "cue.srt"), "-c:s", "srt", str(d / "subtitle_only.mkv"))  # a container with no A/V stream
    ffmpeg("-f", "lavfi", "-i", lavfi_v, "-f", "lavfi", "-i", lavfi_a, "-t", t, "-c:v", "mpeg4", "-bf", "2",
           "-c:a", "libmp3lame", "-ac", "1", str(d / "liar.avi"))
    # Over read_video's 4K limit (4096x2176 > 3840x2160): one black frame, cheap to encode, refused before decoding.
    ffmpeg("-f", "lavfi", "-i", "color=c=black:size=4096x2176:rate=10", "-f", "lavfi", "-i", lavfi_a, "-t", "0.1",
           "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-ac", "1", str(d / "huge.mp4"))
    media = {name: (d / name).read_bytes() for name in
             ("good.mp4", "other.mp4", "faststart.mp4", "video_only.mp4", "audio_only.mp4", "subtitle_only.mkv", "liar.avi", "huge.mp4")}
    avi = bytearray(media["liar.avi"])
    for tag, offset in ((b"avih", 24), (b"strh", 40)):  # avih dwTotalFrames, the video strh dwLength
        at = avi.index(tag)
        avi[at + offset: at + offset + 4] = struct.pack("<I", 1_000_000_000)
    media["liar.avi"] = bytes(avi)
    return media


_MALFORMED = {
    "malformed_json": ("json", b'{"segments": [{"start": 0.1, "end": 0.5, "text": "cut off'),
    "malformed_srt": ("srt", b"1\n00:00:00,100 --> not a time\nhello\n"),
    "malformed_vtt": ("vtt", b"WEBVTT\n\n00:00.100 --> 00:xx.500\nhello\n"),
    "malformed_textgrid": ("textgrid", b'File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = '),
}


def build_cases(root: Path) -> tuple[str, dict[str, Case]]:
    """Build the clean shard (good sample only) and every case's shard under ``root``.

    Returns:
        ``(clean_shard_path, {case name: Case})``.
    """
    root = Path(root)
    media = _make_media(root)
    good = [(f"{GOOD_KEY}.json", good_transcript()), (f"{GOOD_KEY}.mp4", media["good.mp4"])]
    bad_text = good_transcript([("alpha", 0.2, 0.4), ("beta", 0.5, 0.8)])
    other = media["other.mp4"]
    clean = write_tar(root / "clean.tar", good)

    def skip(reason: str) -> Expect:
        return Expect("skip", reason)

    def same(expect: Expect) -> dict:
        return {tool: expect for tool in TOOLS}

    cases: dict[str, Case] = {}

    def add(name: str, bad: list[tuple[str, bytes]], expect: dict, note: str, *, bad_first: bool = False) -> None:
        members = bad + good if bad_first else good + bad
        cases[name] = Case(name, write_tar(root / f"{name}.tar", members), expect, note)

    add("truncated_media", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", other[: len(other) // 2])],
        same(skip("decode")),
        "an MP4 cut in half (its moov index is at the end)")
    faststart = media["faststart.mp4"]
    add("truncated_faststart", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", faststart[: len(faststart) * 2 // 3])],
        same(skip("decode")),
        "a faststart MP4 (moov first) cut at two thirds: it opens and demuxes up to the cut, a silent shorter clip "
        "until the sample tables were checked against the size")
    add("empty_media", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", b"")],
        same(skip("decode")),
        "a zero-byte .mp4 member")
    noise = bytes((i * 7919 + 13) % 251 for i in range(20_000))
    add("random_bytes", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", noise)],
        same(skip("decode")),
        "20 kB of pseudo-random bytes named .mp4")
    add("video_only", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", media["video_only.mp4"])],
        same(Expect("kept", flagged="no_audio")),
        "an H.264 MP4 without an audio stream (the loader keeps it with an empty audio span; preprocess/report "
        "keep it with null A/V and text offsets)")
    add("no_av_stream", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mkv", media["subtitle_only.mkv"])],
        same(skip("missing_audio")),
        "a Matroska file holding only a subtitle stream (neither video nor audio)")
    add("audio_only", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", media["audio_only.mp4"])],
        {tool: Expect("kept", flagged="no_video") for tool in TOOLS},
        "an AAC-only MP4 (the loader gives it no frames; preprocess/report keep it with null A/V offset)")
    add("missing_transcript", [(f"{BAD_KEY}.mp4", other)], same(Expect("kept", flagged="no_words")),
        "media without any transcript member")
    for name, (ext, data) in _MALFORMED.items():
        add(name, [(f"{BAD_KEY}.{ext}", data), (f"{BAD_KEY}.mp4", other)],
            same(skip("transcript")),
            f"a malformed .{ext} transcript")
    backwards = json.dumps({"segments": [{"start": 0.8, "end": 0.2, "text": "backwards"}]}).encode()
    add("stop_before_start", [(f"{BAD_KEY}.json", backwards), (f"{BAD_KEY}.mp4", other)],
        same(skip("transcript")),
        "a segment whose stop (0.2 s) is before its start (0.8 s)")
    beyond = json.dumps({"segments": [
        {"start": 0.2, "end": 0.4, "text": "inside", "words": [{"word": "inside", "start": 0.2, "end": 0.4}]},
        {"start": 0.8, "end": 3.0, "text": "straddles", "words": [{"word": "straddles", "start": 0.8, "end": 3.0}]},
        {"start": 5.0, "end": 6.0, "text": "after", "words": [{"word": "after", "start": 5.0, "end": 6.0}]},
    ]}).encode()
    add("spans_beyond_media", [(f"{BAD_KEY}.json", beyond), (f"{BAD_KEY}.mp4", other)],
        same(Expect("kept", flagged="spans_outside")),
        "a 1 s clip whose transcript has a span straddling its end (clipped) and one at 5-6 s (counted outside)")
    first_copy = [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", other)]
    second_copy = [(f"{BAD_KEY}.json", good_transcript()), (f"{BAD_KEY}.mp4", media["good.mp4"])]
    cases["duplicate_key"] = Case(
        "duplicate_key", write_tar(root / "duplicate_key.tar", first_copy + good + second_copy),
        {tool: Expect("skip", "duplicate_key", flagged="first_copy") for tool in TOOLS},
        "the key 'bad' twice in one shard, separated by the good sample (its first copy is valid and kept)")
    add("dotdot_name", [(f"../{BAD_KEY}.json", bad_text), (f"../{BAD_KEY}.mp4", other)],
        same(skip("unsafe_name")), "members named ../bad.*")
    add("absolute_name", [(f"/tmp/{BAD_KEY}.json", bad_text), (f"/tmp/{BAD_KEY}.mp4", other)],
        same(skip("unsafe_name")), "members named /tmp/bad.*")
    whole = Path(write_tar(root / "untruncated.tar", good + [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", other)]))
    data = whole.read_bytes()
    cut = data.index(other[:64]) + len(other) // 2  # half-way through the bad media's data
    (root / "truncated_tar.tar").write_bytes(data[:cut])
    cases["truncated_tar"] = Case("truncated_tar", str(root / "truncated_tar.tar"), same(skip("truncated")),
                                  "a shard cut half-way through the bad sample's media")
    add("lying_frame_count", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.avi", media["liar.avi"])],
        same(Expect("kept", flagged="frame_count")),
        "an AVI whose avih dwTotalFrames and strh dwLength claim 1e9 frames (it has 10)")
    add("over_max_pixels", [(f"{BAD_KEY}.json", bad_text), (f"{BAD_KEY}.mp4", media["huge.mp4"])],
        same(skip("too_large")), "4096x2176 frames, over the default max_pixels (3840x2160)")
    return clean, cases
