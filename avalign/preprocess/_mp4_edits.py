"""Rewrite the audio track's edit list (``elst``) of an MP4 so that an encoder's priming is never presented.

Why: FFmpeg's MP4 muxer (5.1) skips the AAC encoder's priming (``P`` = 1024 samples) with its edit list only when
the track starts at time 0. With ``-copyts`` a track that starts later keeps its start, but part or all of the
priming is presented, and the first sample time moves earlier (the content itself stays on the clock)::

    start a0 >= P/sr   muxed:  [ empty edit E ][ P priming | audio ......... ]   media_time 0
                               0               a0 - P/sr   a0
    start a0 <  P/sr   muxed:  [ k priming | audio ......... ]                   media_time P - k  (k = a0·sr)
                               0           a0
    skip_priming:              [ empty edit up to a0       ][ audio ......... ]   media_time P
                               0                           a0

The edit list's end is unchanged. Readers that honour edit lists (FFmpeg, so PyAV, torchcodec, ffprobe, and
players) then present sample 0 at ``a0``, as in the source. Only these two layouts are rewritten; anything else is
refused with ``ValueError``. Growing the edit list from one entry to two grows its boxes (``elst``, ``edts``,
``trak``, ``moov``) by one entry, and moves the chunk offsets (``stco`` / ``co64``) by as much when the ``moov``
comes before the media data (``-movflags +faststart``).
"""
from __future__ import annotations

import struct
from dataclasses import dataclass

from loaders.media import Mp4Box, mp4_boxes

__all__ = ["audio_edit_list", "skip_priming"]

_MAX_MOOV_BYTES = 256 << 20
_LAYOUTS = {False: (">IiI", 12), True: (">QqI", 20)}
"""elst entry layout (segment duration, media time, rate) and size, by version 1 or not."""


def _path(data, parent: Mp4Box, *kinds: bytes) -> list[Mp4Box]:
    """The boxes along ``kinds`` under ``parent`` (the first of each type)."""
    found = []
    for kind in kinds:
        parent = next((box for box in mp4_boxes(data, parent.payload, parent.stop) if box.kind == kind), None)
        if parent is None:
            raise ValueError(f"MP4 has no {kind.decode(errors='replace')!r} box where expected")
        found.append(parent)
    return found


def _timescale(data, box: Mp4Box) -> int:
    """The timescale of an ``mvhd`` / ``mdhd`` box (version 0 or 1)."""
    return struct.unpack_from(">I", data, box.payload + 4 + (16 if data[box.payload] == 1 else 8))[0]


@dataclass(frozen=True)
class _AudioEdits:
    movie_timescale: int
    media_timescale: int
    chain: list[Mp4Box]
    """moov, trak, edts, elst of the first audio track."""
    entries: list[tuple[int, int]]


def _audio_edits(data) -> _AudioEdits:
    top = list(mp4_boxes(data, 0, len(data)))
    moov = next((box for box in top if box.kind == b"moov"), None)
    if moov is None:
        raise ValueError("MP4 has no 'moov' box")
    if moov.stop - moov.start > _MAX_MOOV_BYTES:
        raise ValueError("MP4 moov box is too large")
    (mvhd,) = _path(data, moov, b"mvhd")
    for trak in mp4_boxes(data, moov.payload, moov.stop):
        if trak.kind != b"trak":
            continue
        _, hdlr = _path(data, trak, b"mdia", b"hdlr")
        if data[hdlr.payload + 8 : hdlr.payload + 12] != b"soun":
            continue
        _, mdhd = _path(data, trak, b"mdia", b"mdhd")
        edts, elst = _path(data, trak, b"edts", b"elst")
        version, count = data[elst.payload], struct.unpack_from(">I", data, elst.payload + 4)[0]
        layout, size = _LAYOUTS[version == 1]
        if elst.payload + 8 + count * size > elst.stop:
            raise ValueError("MP4 elst box is shorter than its entry count")
        entries = [struct.unpack_from(layout, data, elst.payload + 8 + i * size)[:2] for i in range(count)]
        return _AudioEdits(_timescale(data, mvhd), _timescale(data, mdhd), [moov, trak, edts, elst], entries)
    raise ValueError("MP4 has no audio track")


def _with_edits(data: bytes, found: _AudioEdits, edits: list[tuple[int, int]]) -> bytes:
    """``data`` with the audio edit list replaced by ``edits``; box sizes grow with it, and chunk offsets
    (``stco`` / ``co64``) move when the ``moov`` comes before the media data (``+faststart``)."""
    moov, _, _, elst = found.chain
    version = data[elst.payload]
    if version != 1 and any(duration >= 1 << 32 or abs(time) >= 1 << 31 for duration, time in edits):
        version = 1
    layout, size = _LAYOUTS[version == 1]
    body = struct.pack(">B3xI", version, len(edits)) + b"".join(struct.pack(layout, d, t, 1 << 16) for d, t in edits)
    old = elst.stop - elst.payload
    delta = len(body) - old
    out = bytearray(data[: elst.payload] + body + data[elst.stop :])
    for box in found.chain:  # the sizes of elst and of the boxes holding it
        if box.payload - box.start == 16:
            struct.pack_into(">Q", out, box.start + 8, box.stop - box.start + delta)
        else:
            if box.stop - box.start + delta >= 1 << 32:
                raise ValueError("MP4 box too large to grow")
            struct.pack_into(">I", out, box.start, box.stop - box.start + delta)
    if delta and any(box.kind == b"mdat" and box.start > moov.start for box in mp4_boxes(data, 0, len(data))):
        grown = Mp4Box(moov.kind, moov.start, moov.payload, moov.stop + delta)
        for trak in mp4_boxes(out, grown.payload, grown.stop):
            if trak.kind != b"trak":
                continue
            _, _, stbl = _path(out, trak, b"mdia", b"minf", b"stbl")
            for table in mp4_boxes(out, stbl.payload, stbl.stop):
                if table.kind in (b"stco", b"co64"):
                    wide = table.kind == b"co64"
                    count = struct.unpack_from(">I", out, table.payload + 4)[0]
                    for i in range(count):
                        at = table.payload + 8 + i * (8 if wide else 4)
                        offset = struct.unpack_from(">Q" if wide else ">I", out, at)[0] + delta
                        if not wide and offset >= 1 << 32:
                            raise ValueError("a chunk offset no longer fits stco")
                        struct.pack_into(">Q" if wide else ">I", out, at, offset)
    return bytes(out)


def audio_edit_list(data: bytes) -> list[tuple[int, int]]:
    """The audio track's edit list as ``[(segment duration in movie ticks, media time in media ticks)]``
    (media time -1: an empty edit)."""
    return _audio_edits(data).entries


def skip_priming(data: bytes, *, presented_samples: int, priming_samples: int) -> bytes:
    """``data`` with the audio edit list changed so that the ``presented_samples`` priming samples that it presents
    (of the encoder's ``priming_samples``) are skipped and the first real sample keeps its time. Two layouts::

        [empty E, (D, 0)]       (start >= priming): presented == priming   -> [empty E + k, (D - k, P)]
        [(D, P - k)]            (0 < start < priming): presented == k < P  -> [empty k, (D - k, P)]

    where ``k`` = ``presented_samples`` and ``P`` = ``priming_samples``, both converted to movie ticks for
    durations. The edit's end (``E + D``) is unchanged (module docstring).

    Raises:
        ValueError: no audio track, another edit-list layout, a count that does not match it, or ``k`` not a
            whole number of movie ticks (choose a movie timescale that is a multiple of the sample rate).
    """
    for name, value in (("presented_samples", presented_samples), ("priming_samples", priming_samples)):
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise ValueError(f"{name} must be a positive int, got {name} = {value!r}")
    if presented_samples > priming_samples:
        raise ValueError(f"{presented_samples = } is more than {priming_samples = }")
    found = _audio_edits(data)
    entries = found.entries
    ticks, remainder = divmod(presented_samples * found.movie_timescale, found.media_timescale)
    if remainder:
        raise ValueError(f"{presented_samples} samples at {found.media_timescale} Hz are not whole ticks of the movie "
                         f"timescale {found.movie_timescale}")
    if len(entries) == 2 and entries[0][1] == -1 and entries[1][1] == 0 and presented_samples == priming_samples:
        (empty, _), (duration, _) = entries
    elif len(entries) == 1 and entries[0][1] == priming_samples - presented_samples:
        empty, duration = 0, entries[0][0]
    else:
        raise ValueError(f"the audio edit list is {entries}: not an encoder priming of {priming_samples} samples "
                         f"of which {presented_samples} are presented")
    if ticks >= duration:
        raise ValueError(f"{ticks} movie ticks of priming are not shorter than the audio edit ({duration})")
    return _with_edits(data, found, [(empty + ticks, -1), (duration - ticks, priming_samples)])
