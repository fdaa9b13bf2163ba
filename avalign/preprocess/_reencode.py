"""``preprocess --reencode mp4``: H.264 video in MP4 on the source's clock, audio copied where MP4 holds it.

The output is presented on the same clock as the source: every video frame at the source's presentation time,
audio sample 0 at the source's first audio time, so a transcript stamped on the source's timeline lands on the
same frames and samples before and after. The streams written are the ones the loaders read from the source
(``loaders.media.pick_stream``: FFmpeg's best video and audio stream, never an attached picture such as an M4A's
cover art). How (BENCHMARKS.md, "Preprocess --reencode keeps the clock", has the measurements behind each
choice)::

    video   libx264 (CRF 23, veryfast, 4:2:0, one thread), frames passed through with their own timestamps
            (-copyts, -fps_mode passthrough: no frame is duplicated or dropped, VFR stays VFR) in the source
            stream's time base (-enc_time_base -1; the MP4 track timescale is that base, doubled up to >= 10000).
            An odd width or height gets one black column / row on the right / bottom (4:2:0 needs even sizes);
            pixel (x, y) of the source stays at (x, y).
    audio   AAC, AC-3, E-AC-3: copied bit for bit (their MP4 timing is the source's: same first sample time,
            same sample count). Anything else (PCM, Opus, MP3, Vorbis, FLAC, ...) is encoded to AAC 128 kb/s:
            its 1024 priming samples are skipped by the audio edit list (FFmpeg's muxer does so only for a
            start at 0; :mod:`._mp4_edits` rewrites it for later starts), so sample 0 is at the source's
            first audio time; the last AAC frame is padded, so up to 1023 samples of encoder
            padding follow the source's last sample (their times are after the source's end; no sample moves).
    clock   the movie timescale is a common multiple of the video and audio timescales, so the edit lists that
            hold non-zero start times (5 s, 1.44 s of an MPEG-TS, 100000 s) are exact, not rounded to 1 ms.

Media before time 0 is not kept (an MP4 edit list cannot present negative times): audio that starts at -50 ms
is encoded (whatever its codec) from the sample that belongs at 0 (``atrim``), so every kept sample keeps its
time. Video frames before 0 are left to the muxer's edit list, which hides them (not measured: no generated
source had them; the recorded delta would show it).

The result is measured, not assumed: the first video frame's and the first audio sample's presentation times of
the output are compared with the source's (decoded with PyAV, as the loaders decode them), and the differences
are returned as :class:`Reencoded` ``video_start_delta_ms`` / ``audio_start_delta_ms``, which ``preprocess``
writes to ``align.json`` (``reencode``). They are 0 for every case measured, except that a source starting
before 0 gives the positive delta of what was dropped (logged as a warning), and a start that the MP4 track
timescale cannot hold gives its rounding (under half a tick: a mkv audio start of 0.477 s at 44.1 kHz is
+0.0068 ms). Same input, same bytes: bit-exact flags, one thread, and the edit-list rewrite is a pure
function of the muxed file.
"""
from __future__ import annotations

import logging
import math
import os
import subprocess
import tempfile
from dataclasses import dataclass
from fractions import Fraction
from typing import Optional

from avalign.preprocess._mp4_edits import skip_priming
from avcore import seconds_to_samples
from loaders.errors import DecodeError, DecodeTimeout

logger = logging.getLogger(__name__)

__all__ = ["AUDIO_COPY_CODECS", "AAC_PRIMING_SAMPLES", "Reencoded", "reencode_mp4"]

AUDIO_COPY_CODECS = ("aac", "ac3", "eac3")
"""Audio codecs copied into the MP4 unchanged (FFmpeg codec names): their first sample time and sample count
in MP4 are the source's. Opus and MP3 are not among them: copied into MP4 from Matroska / MP3 files they move
(Opus: 0.5 ms, ms-rounded Matroska timestamps; MP3: the decoder delay is presented, 23 ms at 48 kHz)."""
AAC_PRIMING_SAMPLES = 1024
"""Priming of FFmpeg's AAC encoder (``initial_padding``), skipped by the audio edit list."""
_MAX_TIMESCALE = (1 << 31) - 1
"""MP4 timescales are 32-bit."""
_MAX_PROBE_PACKETS = 2000
"""Packets read for the streams' first frames before giving up (a time not found is not compared)."""
_DELTA_DIGITS = 6
"""Deltas are rounded to 1 ns (in ms: 6 decimals), so equal inputs give equal ``align.json`` bytes."""


@dataclass(frozen=True)
class Reencoded:
    """The re-encoded MP4 and how its clock compares with the source's."""

    data: bytes
    """The MP4 file's bytes."""
    audio: Optional[str]
    """``"copy"`` (the source's audio stream, unchanged), ``"aac"`` (encoded) or None (no audio stream)."""
    video_start_delta_ms: Optional[float]
    """First video frame's presentation time, output minus source (ms; 0: the same first frame at the same
    time); None without video."""
    audio_start_delta_ms: Optional[float]
    """First audio sample's presentation time, output minus source (ms; 0: sample 0 at the same time; > 0:
    samples before time 0 were not kept); None without audio."""

    def record(self) -> dict:
        """The ``reencode`` block of ``align.json`` (avcore's schema module documents it)."""
        return {"audio": self.audio, "video_start_delta_ms": self.video_start_delta_ms,
                "audio_start_delta_ms": self.audio_start_delta_ms}


@dataclass(frozen=True)
class _Streams:
    """What the command depends on, read from the source's header: the video and audio stream the loaders
    read (``loaders.media.pick_stream``: FFmpeg's best stream, never an attached picture)."""

    video_index: Optional[int]
    video_timescale: Optional[int]
    """Ticks per second of the MP4 video track: the source stream's time base, doubled up to >= 10000."""
    audio_index: Optional[int]
    audio_codec: Optional[str]
    audio_sample_rate: Optional[int]
    audio_shift_seconds: float = 0.0
    """How far FFmpeg's audio timestamps run ahead of the loaders' (``loaders.media.audio_timeline_shift_seconds``:
    a raw MP3's encoder delay); the encoded audio is moved back by it, so its sample 0 is where ``read_audio`` puts
    the source's."""


def _picked(container, kind: str):
    """The stream of ``kind`` the loaders decode, or None."""
    from loaders.errors import DecodeError as _Missing
    from loaders.media import pick_stream

    try:
        return pick_stream(container, kind, "reencode")
    except _Missing as e:
        if e.reason == f"missing_{kind}":
            return None
        raise


def _streams_of(video, audio, audio_shift_seconds: float = 0.0) -> _Streams:
    timescale = None
    if video is not None and video.time_base:
        timescale = Fraction(video.time_base).denominator
        while timescale < 10000:  # as FFmpeg's MP4 muxer does for a coarse base
            timescale *= 2
    return _Streams(
        video_index=None if video is None else video.index, video_timescale=timescale,
        audio_index=None if audio is None else audio.index,
        audio_codec=None if audio is None else audio.codec_context.name,
        audio_sample_rate=None if audio is None else int(audio.codec_context.sample_rate or 0) or None,
        audio_shift_seconds=audio_shift_seconds)


def _inspect(path: str) -> tuple[_Streams, Optional[float], Optional[float]]:
    """The streams the loaders read from ``path``, and the presentation time (s) of the first decoded video frame
    and of the first decoded audio sample as their PyAV readers see them (None: no such stream, or none within
    :data:`_MAX_PROBE_PACKETS` packets). A packet the decoder rejects is skipped, as the readers skip it; the
    demuxer's end-of-stream packets flush a frame the decoder held back."""
    import av

    from loaders.media import audio_timeline_shift_seconds

    with av.open(path) as container:
        video, audio = _picked(container, "video"), _picked(container, "audio")
        shift = 0.0 if audio is None else audio_timeline_shift_seconds(container, audio)
        pending = {s.index: s for s in (video, audio) if s is not None}
        first: dict[int, Optional[float]] = {}
        if pending:
            for number, packet in enumerate(container.demux(*pending.values())):
                if number >= _MAX_PROBE_PACKETS or not pending:
                    break
                if packet.stream.index not in pending:
                    continue
                try:
                    frames = packet.decode()
                except (av.error.EOFError, av.error.ExitError):
                    raise
                except av.FFmpegError:
                    continue
                frame = next((f for f in frames if packet.stream.type == "video" or f.samples > 0), None)
                if frame is not None:
                    moved = shift if packet.stream.type == "audio" else 0.0
                    first[packet.stream.index] = None if frame.time is None else float(frame.time) - moved
                    del pending[packet.stream.index]
        streams = _streams_of(video, audio, shift)
    return (streams, first.get(streams.video_index) if video is not None else None,
            first.get(streams.audio_index) if audio is not None else None)


def _movie_timescale(streams: _Streams) -> int:
    """A common multiple of the track timescales (their edit lists are then exact), within 32 bits; else the
    largest of them (a start may then round: the measured delta says by how much)."""
    scales = [s for s in (streams.video_timescale, streams.audio_sample_rate) if s]
    if not scales:
        return 1000
    common = math.lcm(*scales)
    return common if common <= _MAX_TIMESCALE else max(scales)


def _command(src: str, dst: str, streams: _Streams, *, copy_audio: bool, drop_samples: int) -> list[str]:
    video = []
    if streams.video_index is not None:
        video = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-threads", "1",
                 "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2",  # 4:2:0 needs even sizes: one black column / row
                 "-fps_mode", "passthrough", "-enc_time_base:v", "-1", "-flags:v", "+bitexact"]
        if streams.video_timescale:
            video += ["-video_track_timescale", str(streams.video_timescale)]
    audio = []
    if streams.audio_index is not None:
        audio = ["-c:a", "copy"] if copy_audio else ["-c:a", "aac", "-b:a", "128k", "-flags:a", "+bitexact"]
        if drop_samples:  # the samples before time 0 (MP4 cannot present them); sample `drop_samples` is at 0
            audio += ["-af", f"atrim=start_sample={drop_samples},asetpts=N/SR/TB"]
        elif streams.audio_shift_seconds and not copy_audio:  # FFmpeg's times of a raw MP3: its delay late
            audio += ["-af", f"asetpts=PTS-round({streams.audio_shift_seconds!r}/TB)"]
    maps = [f"0:{i}" for i in (streams.video_index, streams.audio_index) if i is not None]
    return ["ffmpeg", "-v", "error", "-nostdin", "-y", "-copyts", "-i", src, *[x for m in maps for x in ("-map", m)],
            *video, *audio, "-map_metadata", "-1", "-fflags", "+bitexact",
            "-movie_timescale", str(_movie_timescale(streams)), "-movflags", "+faststart", dst]


def _delta_ms(out: Optional[float], src: Optional[float]) -> Optional[float]:
    if out is None or src is None:
        return None
    return round((out - src) * 1000.0, _DELTA_DIGITS) + 0.0  # + 0.0: no "-0.0" in the JSON


def _skip_presented_priming(out: bytes, dst: str, streams: _Streams, copy_audio: bool, src_audio: Optional[float],
                            label: str) -> tuple[bytes, Optional[float], Optional[float]]:
    """``(out, first video time, first audio time)`` of the muxed file ``dst`` (bytes ``out``), its audio edit list
    rewritten when part of an encoded track's priming is presented (:mod:`._mp4_edits`)."""
    _, out_video, out_audio = _inspect(dst)
    if streams.audio_index is not None and not copy_audio and src_audio is not None and out_audio is not None:
        first = max(src_audio, 0.0)  # where sample 0 of the written audio belongs
        presented = int(seconds_to_samples(first - out_audio, streams.audio_sample_rate))
        if 0 < presented <= AAC_PRIMING_SAMPLES:  # (some of) the priming is presented: skip it
            try:
                out = skip_priming(out, presented_samples=presented, priming_samples=AAC_PRIMING_SAMPLES)
            except ValueError as e:  # a layout it does not know: kept as muxed, the delta is recorded
                logger.warning("%s: the AAC priming stays presented: %s", label, e)
            else:
                with open(dst, "wb") as handle:
                    handle.write(out)
                out_audio = _inspect(dst)[2]
    return out, out_video, out_audio


def reencode_mp4(data: bytes, *, label: str, timeout_seconds: Optional[float]) -> Reencoded:
    """``data`` (any media FFmpeg reads) as H.264 + AAC/AC-3/E-AC-3 in MP4 on the source's clock (module docstring).

    Raises:
        DecodeError: no ffmpeg on PATH, or ffmpeg / the source's header failed (the message has ffmpeg's error).
        DecodeTimeout: ffmpeg ran past ``timeout_seconds``.
    """
    import av

    with tempfile.TemporaryDirectory(prefix="avalign-reencode-") as tmp:
        src, dst = os.path.join(tmp, "in"), os.path.join(tmp, "out.mp4")
        with open(src, "wb") as handle:
            handle.write(data)
        try:
            streams, src_video, src_audio = _inspect(src)
        except (av.FFmpegError, OSError, ValueError) as e:
            raise DecodeError(f"{label}: cannot read the media to re-encode it: {e}") from e
        drop_samples = 0
        if src_audio is not None and src_audio < 0 and streams.audio_sample_rate:
            drop_samples = int(seconds_to_samples(-src_audio, streams.audio_sample_rate))
        copy_audio = streams.audio_codec in AUDIO_COPY_CODECS and not drop_samples
        command = _command(src, dst, streams, copy_audio=copy_audio, drop_samples=drop_samples)
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_seconds)
        except FileNotFoundError:
            raise DecodeError("reencode='mp4' needs the ffmpeg program on PATH; hint: install ffmpeg or pass reencode=None") from None
        except subprocess.TimeoutExpired:
            raise DecodeTimeout(f"{label}: ffmpeg re-encode ran past {timeout_seconds:g} s") from None
        if proc.returncode != 0:
            raise DecodeError(f"{label}: ffmpeg re-encode failed: {proc.stderr.strip()[-500:]}")
        with open(dst, "rb") as handle:
            out = handle.read()
        try:
            out, out_video, out_audio = _skip_presented_priming(out, dst, streams, copy_audio, src_audio, label)
        except (av.FFmpegError, OSError, ValueError) as e:
            raise DecodeError(f"{label}: the re-encoded MP4 does not read back: {e}") from e
    result = Reencoded(data=out, audio=None if streams.audio_index is None else "copy" if copy_audio else "aac",
                       video_start_delta_ms=_delta_ms(out_video, src_video),
                       audio_start_delta_ms=_delta_ms(out_audio, src_audio))
    checks = (("video", result.video_start_delta_ms, src_video, streams.video_timescale),
              ("audio", result.audio_start_delta_ms, src_audio, streams.audio_sample_rate))
    for kind, delta, source_seconds, ticks_per_second in checks:
        if delta is not None and abs(delta) > 500.0 / (ticks_per_second or 1):  # over half a tick
            why = "media before 0 is not kept: MP4 cannot present it" if source_seconds < 0 else "not exact"
            logger.warning("%s: the re-encoded MP4's first %s time is %+g ms from the source's (%s); recorded in "
                           "align.json's reencode.%s_start_delta_ms", label, kind, delta, why, kind)
    return result
