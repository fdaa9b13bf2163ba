"""Generators of the hostile inputs of issue #13 (reliability, round two): each builds its input from a
documented ffmpeg command or a byte patch of generated media, never from a committed blob.

    generator                       what it makes
    clip(path, ...)                 a small H.264 + AAC clip (ffmpeg lavfi testsrc + sine)
    set_mdhd_timescale(data, k, v)  the k-th track's mdhd timescale set to v (0 and 1 are the corrupt cases)
    set_stts_deltas(data, delta)    every sample delta of the first track's stts set to ``delta`` (0: one pts)
    set_stsz_count(data, n)         the first track's stsz sample count set to ``n`` (0: no frames; 2**30: huge)
    eight_channel_aac(path)         1 s of 7.1 AAC, channel c a sine at 200 + 100 c Hz
    two_video_streams(path)         an MP4 with a 64x48 25 fps stream then a 160x120 30 fps stream
    cover_art_audio(path)           an M4A whose only "video" stream is an attached picture (cover art)
    cut_in_header(tar, member, n)   a tar cut ``n`` bytes into the header of ``member``
    srt(cues, words_per_cue)        an SRT of that many cues
"""
from __future__ import annotations

import io
import struct
import tarfile
from pathlib import Path

from tests.conftest import encode_once, ffmpeg

__all__ = ["clip", "cover_art_audio", "cut_in_header", "eight_channel_aac", "set_mdhd_timescale", "set_stsz_count",
           "set_stts_deltas", "srt", "tar_bytes", "two_video_streams"]


def clip(path: Path, *, seconds: float = 1.0, fps: int = 10, size: str = "32x24", editlist: bool = True,
         container_args: tuple[str, ...] = ()) -> bytes:
    """H.264 (GOP 5) + mono AAC 16 kHz; ``editlist=False`` writes no edit list (so header times are used as is)."""
    args = ["-f", "lavfi", "-i", f"testsrc=size={size}:rate={fps}", "-f", "lavfi", "-i", "sine=f=440:r=16000",
            "-t", str(seconds), "-c:v", "libx264", "-g", "5", "-c:a", "aac", "-ac", "1", *container_args]
    if not editlist:
        args += ["-use_editlist", "0"]
    return encode_once(path, *args)  # made once per test process (many tests use the same clip)


def _boxes(data: bytes, kind: bytes) -> list[int]:
    """Offsets of every box of type ``kind`` (its 4-byte type field), in file order."""
    found, at = [], data.find(kind)
    while at >= 0:
        found.append(at)
        at = data.find(kind, at + 1)
    return found


def set_mdhd_timescale(data: bytes, track: int, value: int) -> bytes:
    """The ``track``-th ``mdhd`` box's timescale set to ``value`` (ISO/IEC 14496-12 8.4.2)."""
    out = bytearray(data)
    at = _boxes(data, b"mdhd")[track]
    version = out[at + 4]
    field = at + 4 + 4 + (8 if version == 0 else 16)  # type, version+flags, creation+modification times
    out[field:field + 4] = struct.pack(">I", value)
    return bytes(out)


def set_stts_deltas(data: bytes, delta: int) -> bytes:
    """Every sample delta of the first ``stts`` (the first track's time-to-sample table) set to ``delta``."""
    out = bytearray(data)
    at = _boxes(data, b"stts")[0]
    entries = struct.unpack(">I", out[at + 8:at + 12])[0]
    for i in range(entries):
        field = at + 12 + 8 * i + 4
        out[field:field + 4] = struct.pack(">I", delta)
    return bytes(out)


def set_stsz_count(data: bytes, count: int) -> bytes:
    """The first ``stsz`` (the first track's sample sizes) claims ``count`` samples."""
    out = bytearray(data)
    at = _boxes(data, b"stsz")[0]
    out[at + 12:at + 16] = struct.pack(">I", count)  # after type, version+flags, sample_size
    return bytes(out)


def eight_channel_aac(path: Path) -> None:
    """1 s of 7.1 AAC at 48 kHz; channel ``c`` carries a sine at ``200 + 100 c`` Hz."""
    expr = "|".join(f"0.5*sin(2*PI*{200 + 100 * c}*t)" for c in range(8))
    ffmpeg("-f", "lavfi", "-i", f"aevalsrc={expr}:s=48000:c=7.1:d=1", "-c:a", "aac", str(path))


def two_video_streams(path: Path) -> None:
    """Stream 0: 64x48 at 25 fps; stream 1: 160x120 at 30 fps (FFmpeg's best stream: same disposition, more
    frames and bits); stream 2: AAC; 1 s."""
    encode_once(path, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i",
                "testsrc2=size=160x120:rate=30", "-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1", "-map", "0:v",
                "-map", "1:v", "-map", "2:a", "-c:v", "libx264", "-g", "5", "-c:a", "aac", "-ac", "1",
                "-disposition:v:0", "default", "-disposition:v:1", "default")


def cover_art_audio(path: Path, work: Path) -> None:
    """An M4A with AAC audio and a PNG cover (disposition ``attached_pic``): no real video stream."""
    ffmpeg("-f", "lavfi", "-i", "color=c=red:size=32x32", "-frames:v", "1", str(work / "cover.png"))
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1", "-c:a", "aac", str(work / "plain.m4a"))
    ffmpeg("-i", str(work / "plain.m4a"), "-i", str(work / "cover.png"), "-map", "0", "-map", "1", "-c", "copy",
           "-disposition:v:0", "attached_pic", str(path))


def tar_bytes(members: list[tuple[str, bytes]]) -> bytes:
    """A GNU tar of ``members`` (names may hold undecodable bytes as surrogates), fixed mtimes."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo("placeholder")
            info.name, info.size, info.mtime = name, len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def cut_in_header(data: bytes, member: str, keep: int) -> bytes:
    """``data`` (a tar) cut ``keep`` bytes (0 < keep < 512) into the header block of ``member``."""
    archive = tarfile.open(fileobj=io.BytesIO(data))
    header = next(m for m in archive.getmembers() if m.name == member).offset
    return data[:header + keep]


def srt(cues: int, words_per_cue: int = 2) -> bytes:
    """An SRT of ``cues`` cues, 1 s apart, each ``words_per_cue`` words."""
    text = " ".join(["word"] * words_per_cue)
    blocks = []
    for i in range(cues):
        h, rest = divmod(i, 3600)
        m, s = divmod(rest, 60)
        blocks.append(f"{i + 1}\n{h:02d}:{m:02d}:{s:02d},000 --> {h:02d}:{m:02d}:{s:02d},500\n{text}\n")
    return "\n".join(blocks).encode()
