"""WebVTT's ``X-TIMESTAMP-MAP`` header (HLS, RFC 8216 §3.5): cue times moved onto the media's MPEG-TS timeline.

An HLS subtitle segment stamps its cues on its own clock and says, in its header, which cue time (``LOCAL``) is
which MPEG-TS presentation time (``MPEGTS``, 90 kHz ticks, 33 bits)::

    WEBVTT
    X-TIMESTAMP-MAP=MPEGTS:900000,LOCAL:00:00:00.000

    00:00:01.000 --> 00:00:02.500
    Hello

    cue clock   0.000        1.000          2.500        (LOCAL = 0.000)
                |------------|--"Hello"-----|
    media pts   10.000       11.000         12.500       (MPEGTS 900000 / 90000 = 10.000 s)

The reference timeline is the video's presentation timeline as the decoders read it (container pts, honoured:
``read_video``'s ``pts_seconds``), so every cue and word time ``t`` becomes::

    seconds = (anchor_ticks + round(t * 90000) - LOCAL_ms * 90) / 90000

exact in ticks for millisecond stamps (the same float as a frame's ``pts / 90000``); interpolated word times are
rounded to the tick (11 µs).

``anchor_ticks`` is ``MPEGTS`` where FFmpeg's MPEG-TS demuxer (so PyAV, torchcodec, ffprobe) reads the segment that
starts there:

- ``MPEGTS`` is taken modulo 2**33 (a PES pts has 33 bits; some packagers write the unwrapped count);
- within 60 s before the wrap (``MPEGTS >= 2**33 - 60 * 90000``) FFmpeg reads the segment's pts before the wrap as
  negative (its ``AV_PTS_WRAP_SUB_OFFSET``: a TS starting 0.3 s before the wrap starts at -0.3 s), so the anchor is
  ``MPEGTS - 2**33``; elsewhere the pts keep counting past 2**33 (``AV_PTS_WRAP_ADD_OFFSET``), as the cue times do.

A cue that maps before 0 (a segment that starts within 60 s before the wrap, or ``LOCAL`` past the cue with a small
``MPEGTS``) cannot be a transcript time: ``TranscriptError`` naming the cue line, the map line and its value.

No map, or ``MPEGTS:0,LOCAL:00:00:00.000`` (what many encoders write; FFmpeg's own HLS muxer writes none), leaves the
times as stamped: the transcript then runs on its own clock, like an SRT file, and the aligner's text offset
absorbs where the media starts (1.4 s for FFmpeg's MPEG-TS muxer). A map that is malformed (a key missing,
repeated or unknown, a value that is not a 90 kHz tick count or a ``[hh:]mm:ss.mmm`` time, two maps) raises
``TranscriptError`` naming the file, the line and the value: a wrong clock is worse than a refusal.
"""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Optional

from avcore import TranscriptError

logger = logging.getLogger(__name__)

__all__ = ["MPEGTS_HZ", "PTS_WRAP_TICKS", "TimestampMap", "find_timestamp_map"]

MPEGTS_HZ = 90_000
"""MPEG-2 presentation timestamps count a 90 kHz clock."""
PTS_WRAP_TICKS = 1 << 33
"""PES timestamps have 33 bits: they wrap after 2**33 ticks (26.5 hours)."""
_SUB_OFFSET_TICKS = PTS_WRAP_TICKS - 60 * MPEGTS_HZ
"""FFmpeg reads a TS whose first pts is at or past this (within 60 s before the wrap) with pts before the wrap
negative (libavformat ``update_wrap_reference``)."""
_KEY = "X-TIMESTAMP-MAP"
_LOCAL = re.compile(r"^(?:(\d{1,6}):)?(\d{1,2}):(\d{1,2})\.(\d{1,3})$")
_MAX_LOCAL_HOURS = 100
"""Latest ``LOCAL`` time taken (hours), as for any stamp (``MAX_STAMP_SECONDS``)."""


@dataclass(frozen=True)
class TimestampMap:
    """One ``X-TIMESTAMP-MAP``: cue time ``local_ms`` is MPEG-TS time ``mpegts_ticks``."""

    mpegts_ticks: int
    """``MPEGTS`` as written (90 kHz ticks)."""
    local_ms: int
    """``LOCAL`` in milliseconds."""
    anchor_ticks: int
    """``MPEGTS`` on the demuxer's timeline: modulo 2**33, minus 2**33 within 60 s before the wrap."""
    line: int
    """Line of the map in the file (1-based), for messages."""
    text: str
    """The map's value as written, for messages."""

    def seconds(self, local_seconds: float, *, where: str) -> float:
        """``local_seconds`` (a cue or word time as stamped) on the media's timeline.

        Raises:
            TranscriptError: it maps before 0; the message names ``where``, the map's line and value.
        """
        ticks = self.anchor_ticks + round(local_seconds * MPEGTS_HZ) - self.local_ms * (MPEGTS_HZ // 1000)
        if ticks < 0:
            raise TranscriptError(
                f"{where}: time {local_seconds:.3f} s maps to {ticks / MPEGTS_HZ:.6f} s by the {_KEY} on line "
                f"{self.line} ({self.text!r}): before 0 on the MPEG-TS timeline (a segment that starts within 60 s "
                "before the 33-bit pts wrap, or LOCAL later than the cue with a small MPEGTS); hint: fix the map, or "
                "remove it to keep the cue times as stamped")
        return ticks / MPEGTS_HZ

    @property
    def is_identity(self) -> bool:
        """Whether the map leaves every time as stamped (``MPEGTS:0,LOCAL:00:00:00.000``)."""
        return self.anchor_ticks == self.local_ms * (MPEGTS_HZ // 1000)


def _bad(name: str, line: int, value: str, problem: str) -> TranscriptError:
    return TranscriptError(
        f"{name}: line {line}: malformed {_KEY} {value!r}: {problem}; hint: expected "
        f"'{_KEY}=MPEGTS:<90 kHz ticks>,LOCAL:<[hh:]mm:ss.mmm>' (RFC 8216 §3.5), e.g. "
        f"'{_KEY}=MPEGTS:900000,LOCAL:00:00:00.000'")


def _parse(value: str, *, name: str, line: int) -> TimestampMap:
    """One map's value (after ``X-TIMESTAMP-MAP=``), checked."""
    fields: dict[str, str] = {}
    for part in value.split(","):
        key, colon, field = part.strip().partition(":")
        key = key.strip().upper()
        if not colon or key not in ("MPEGTS", "LOCAL"):
            raise _bad(name, line, value, f"{part.strip()!r} is not MPEGTS:<ticks> or LOCAL:<time>")
        if key in fields:
            raise _bad(name, line, value, f"{key} given twice")
        fields[key] = field.strip()
    missing = [key for key in ("MPEGTS", "LOCAL") if key not in fields]
    if missing:
        raise _bad(name, line, value, f"{' and '.join(missing)} missing")
    if not fields["MPEGTS"].isascii() or not fields["MPEGTS"].isdigit() or len(fields["MPEGTS"]) > 20:
        raise _bad(name, line, value, f"MPEGTS {fields['MPEGTS']!r} is not a count of 90 kHz ticks (an integer >= 0)")
    local = _LOCAL.match(fields["LOCAL"])
    if local is None:
        raise _bad(name, line, value, f"LOCAL {fields['LOCAL']!r} is not a WebVTT time [hh:]mm:ss.mmm")
    hours, minutes, secs, fraction = local.groups()
    if int(minutes) > 59 or int(secs) > 59 or int(hours or 0) > _MAX_LOCAL_HOURS:
        raise _bad(name, line, value, f"LOCAL {fields['LOCAL']!r}: minutes and seconds must be <= 59, hours <= "
                                      f"{_MAX_LOCAL_HOURS}")
    local_ms = ((int(hours or 0) * 60 + int(minutes)) * 60 + int(secs)) * 1000 + int(fraction.ljust(3, "0"))
    mpegts = int(fields["MPEGTS"])
    anchor = mpegts % PTS_WRAP_TICKS
    if anchor != mpegts:
        logger.info("%s: line %d: %s MPEGTS %d is past 33 bits: read as %d (modulo 2**33)", name, line, _KEY,
                    mpegts, anchor)
    if anchor >= _SUB_OFFSET_TICKS:
        anchor -= PTS_WRAP_TICKS
    return TimestampMap(mpegts_ticks=mpegts, local_ms=local_ms, anchor_ticks=anchor, line=line, text=value.strip())


def find_timestamp_map(text: str, *, name: str) -> Optional[TimestampMap]:
    """The ``X-TIMESTAMP-MAP`` of a WebVTT file's header (the lines after ``WEBVTT`` up to the first blank line, as
    RFC 8216 places it), or None when there is none. Raises ``TranscriptError`` for a malformed map or two maps."""
    found: Optional[TimestampMap] = None
    for number, line in enumerate(text.lstrip("\ufeff").splitlines(), start=1):
        if number == 1:
            continue  # the WEBVTT line
        if not line.strip() or "-->" in line:
            break  # the header ends at the first blank line (or, in a sloppy file, at the first cue)
        key, equals, value = line.strip().partition("=")
        if key.strip().upper() != _KEY:
            continue
        if not equals:
            raise _bad(name, number, line.strip(), "no '=' after X-TIMESTAMP-MAP")
        if found is not None:
            raise _bad(name, number, value, f"a second map (the first is on line {found.line}): which one holds?")
        found = _parse(value, name=name, line=number)
    if found is not None and not found.is_identity:
        logger.info("%s: line %d: %s=%s: cue times move by %+.6f s onto the MPEG-TS timeline", name, found.line, _KEY,
                    found.text, (found.anchor_ticks - found.local_ms * (MPEGTS_HZ // 1000)) / MPEGTS_HZ)
    return found
