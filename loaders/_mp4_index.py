"""The frame index of an MP4/MOV video track read from its ``moov`` box, without demuxing the file.

An MP4 already stores what :func:`loaders._index.scan_frame_index` finds by reading every packet: the
decode-time deltas (``stts``), the composition offsets (``ctts``), the sync samples (``stss``), the sample
sizes (``stsz``) and the edit list (``elst``). Presentation times follow as FFmpeg's mov demuxer computes
them for the simple, common layout::

    dts_k  = sum of stts deltas before sample k                      (media ticks, decode order)
    pts_k  = dts_k + ctts_k - media_time + empty_edit                (one edit, rate 1, maybe after an empty edit)

    x264 with B-frames, 3 frames of 512 ticks, ``media_time`` 1024:
    decode order    I0     P3     B1     B2
    dts             0      512    1024   1536
    ctts            1024   2048   512    512
    pts             0      1536   512    1024        -> presentation order 0, 512, 1024, 1536

Anything outside that layout returns None and the caller scans: fragmented files (``mvex``/``moof``),
several edits or an edit rate other than 1, frames the edit list would hide (pts before ``media_time`` or
after the edit's end), negative composition offsets, empty samples, or boxes that do not parse. The
caller also checks the result against the facts FFmpeg read from the same header (frame count, time
base, first pts) before trusting it.

The box walk (:func:`mp4_boxes`, public through ``loaders.media``) is also what ``avalign preprocess``'s
edit-list rewrite walks boxes with.
"""
from __future__ import annotations

import logging
import os
import struct
from dataclasses import dataclass
from typing import BinaryIO, Iterator, NamedTuple, Optional

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["Mp4Box", "Mp4Track", "file_boxes", "mp4_boxes", "read_mp4_video_tracks"]

_CONTAINERS = {b"moov", b"trak", b"mdia", b"minf", b"stbl", b"edts"}
_MAX_MOOV_BYTES = 256 << 20
"""A larger ``moov`` is not read (a corrupt size field): the caller scans instead."""


@dataclass(frozen=True)
class Mp4Track:
    """One video track's frame times, in media ticks (``1 / timescale`` s each)."""

    track_ordinal: int
    """Position of the ``trak`` among the file's tracks: FFmpeg's stream index for MP4/MOV."""
    timescale: int
    """Ticks per second (``mdhd``)."""
    pts_ticks: np.ndarray
    """int64 ``[T]`` in presentation order."""
    is_keyframe: np.ndarray
    """bool ``[T]``, same order."""
    last_duration_ticks: int
    """Duration of the frame presented last (its ``stts`` delta)."""


class _Malformed(ValueError):
    """A box that does not parse as the format says: the caller scans instead."""


class Mp4Box(NamedTuple):
    """One ISO base media file format box (ISO/IEC 14496-12 4.2) that :func:`mp4_boxes` found: offsets into the
    bytes walked (a named tuple: a moov holds hundreds of boxes, walked each time a header index is read)."""

    kind: bytes
    """Its four-character type, e.g. ``b"moov"``."""
    start: int
    """Offset of its size field."""
    payload: int
    """Offset of its contents, after the 8-byte header (16 with a 64-bit size)."""
    stop: int
    """Offset just past its end."""


def mp4_boxes(data, start: int, stop: int) -> Iterator[Mp4Box]:
    """The boxes laid end to end in ``data[start:stop]`` (a size of 1: a 64-bit size follows the type; 0: the box
    runs to ``stop``), in order. Walk into a box with ``mp4_boxes(data, box.payload, box.stop)``.

    Raises:
        ValueError: a header cut off or a box overrunning ``stop`` (raised when the walk reaches it).
    """
    at = start
    while at + 8 <= stop:
        size, kind = struct.unpack_from(">I4s", data, at)
        header = 8
        if size == 1:
            if at + 16 > stop:
                raise _Malformed(f"MP4 box {kind!r} at {at}: its 64-bit size is cut off")
            size = struct.unpack_from(">Q", data, at + 8)[0]
            header = 16
        elif size == 0:
            size = stop - at
        if size < header or at + size > stop:
            raise _Malformed(f"MP4 box {kind!r} of {size} bytes at {at} overruns its parent")
        yield Mp4Box(kind, at, at + header, at + size)
        at += size


def file_boxes(handle: BinaryIO) -> Iterator[Mp4Box]:
    """The top-level boxes of a seekable file, read header by header (payloads are not read): a box of size 0 runs to
    the end of the file; a box may claim to end past it (a file cut short: its ``stop`` says where it should end, and
    the walk stops there). The walk also stops at a header cut off or smaller than itself. The position is changed."""
    end = handle.seek(0, os.SEEK_END)
    at = 0
    while at + 8 <= end:
        handle.seek(at)
        head = handle.read(16)
        if len(head) < 8:
            return
        size, kind = struct.unpack_from(">I4s", head, 0)
        header = 8
        if size == 1:
            if len(head) < 16:
                return
            size, header = struct.unpack_from(">Q", head, 8)[0], 16
        elif size == 0:
            size = end - at
        if size < header:
            return
        yield Mp4Box(kind, at, at + header, at + size)
        at += size


def _read_moov(handle: BinaryIO) -> Optional[bytes]:
    """The ``moov`` box's payload from a seekable file, walking top-level box headers (``mdat`` is skipped)."""
    end = handle.seek(0, os.SEEK_END)
    for box in file_boxes(handle):
        if box.kind == b"moof":
            return None  # fragmented: samples live outside moov
        if box.kind == b"moov":
            if box.stop - box.payload > _MAX_MOOV_BYTES or box.stop > end:
                return None
            handle.seek(box.payload)
            payload = handle.read(box.stop - box.payload)
            return payload if len(payload) == box.stop - box.payload else None
    return None


def _full_box(data: bytes, start: int) -> tuple[int, int]:
    """``(version, payload start after version/flags)``."""
    return data[start], start + 4


def _table(data: bytes, start: int, stop: int, fields: int, count_at: int, dtype: str) -> np.ndarray:
    count = struct.unpack_from(">I", data, count_at)[0]
    need = count * fields * 4
    if count_at + 4 + need > stop:
        raise _Malformed(f"table of {count} entries overruns its box")
    return np.frombuffer(data, dtype=dtype, count=count * fields, offset=count_at + 4).reshape(count, fields)


def _track(data: bytes, start: int, stop: int, movie_timescale: int, ordinal: int) -> Optional[Mp4Track]:
    boxes: dict[bytes, tuple[int, int]] = {}

    def walk(a: int, b: int) -> None:
        for box in mp4_boxes(data, a, b):
            if box.kind in _CONTAINERS:
                walk(box.payload, box.stop)
            elif box.kind not in boxes:
                boxes[box.kind] = (box.payload, box.stop)

    walk(start, stop)
    if b"hdlr" not in boxes or data[boxes[b"hdlr"][0] + 8: boxes[b"hdlr"][0] + 12] != b"vide":
        return None
    for needed in (b"mdhd", b"stts", b"stsz"):
        if needed not in boxes:
            raise _Malformed(f"video track without {needed.decode()}")
    version, at = _full_box(data, boxes[b"mdhd"][0])
    timescale = struct.unpack_from(">I", data, at + (16 if version == 1 else 8))[0]
    if timescale <= 0:
        raise _Malformed("mdhd timescale 0")
    s, e = boxes[b"stts"]
    stts = _table(data, s, e, 2, s + 4, ">u4").astype(np.int64)
    deltas = np.repeat(stts[:, 1], stts[:, 0])
    count = int(deltas.size)
    s, e = boxes[b"stsz"]
    uniform, sizes_count = struct.unpack_from(">II", data, s + 4)
    if sizes_count != count:
        raise _Malformed(f"stsz has {sizes_count} samples, stts {count}")
    if uniform == 0:
        sizes = _table(data, s, e, 1, s + 8, ">u4")
        if count and int(sizes.min()) == 0:
            raise _Malformed("empty samples")  # the demux scan skips them: let it decide
    elif count == 0:
        raise _Malformed("no samples")
    if count == 0:
        raise _Malformed("no samples")
    dts = np.zeros(count, dtype=np.int64)
    np.cumsum(deltas[:-1], out=dts[1:])
    offsets = np.zeros(count, dtype=np.int64)
    if b"ctts" in boxes:
        s, e = boxes[b"ctts"]
        version, _ = _full_box(data, s)
        ctts = _table(data, s, e, 2, s + 4, ">u4" if version == 0 else ">i4").astype(np.int64)
        if int(ctts[:, 0].sum()) != count:
            raise _Malformed("ctts does not cover every sample")
        offsets = np.repeat(ctts[:, 1], ctts[:, 0])
        if int(offsets.min()) < 0:
            raise _Malformed("negative composition offsets")
    keys = np.ones(count, dtype=bool)
    if b"stss" in boxes:
        s, e = boxes[b"stss"]
        sync = _table(data, s, e, 1, s + 4, ">u4").reshape(-1).astype(np.int64) - 1
        if sync.size and (int(sync.min()) < 0 or int(sync.max()) >= count):
            raise _Malformed("stss names a sample that does not exist")
        keys = np.zeros(count, dtype=bool)
        keys[sync] = True
    pts = dts + offsets
    shift, edit_end = 0, None
    if b"elst" in boxes:
        s, e = boxes[b"elst"]
        version, at = _full_box(data, s)
        entries = struct.unpack_from(">I", data, at)[0]
        fmt, width = (">QqHH", 20) if version == 1 else (">IiHH", 12)
        if at + 4 + entries * width > e:
            raise _Malformed("elst overruns its box")
        edits = [struct.unpack_from(fmt, data, at + 4 + i * width) for i in range(entries)]
        if edits and edits[0][1] == -1:  # a leading empty edit delays the track
            if movie_timescale <= 0:
                raise _Malformed("mvhd timescale 0")
            shift = edits[0][0] * timescale // movie_timescale
            if shift * movie_timescale != edits[0][0] * timescale:
                raise _Malformed("empty edit not a whole number of media ticks")
            edits = edits[1:]
        if len(edits) > 1 or any(rate != 1 or frac != 0 for _, _, rate, frac in edits):
            raise _Malformed(f"edit list FFmpeg applies frame by frame: {edits}")
        if edits:
            duration, media_time = edits[0][0], edits[0][1]
            if media_time < 0:
                raise _Malformed("edit with media_time -1 after the first")
            if int(pts.min()) < media_time:
                raise _Malformed("frames before the edit's media_time")
            pts = pts - media_time
            if duration:  # movie ticks -> media ticks; frames at or after the edit's end would be cut
                edit_end = duration * timescale / movie_timescale
                if float(pts.max()) >= edit_end:
                    raise _Malformed("frames after the edit's end")
    order = np.argsort(pts, kind="stable")
    if np.any(np.diff(pts[order]) == 0):
        raise _Malformed("two frames with one presentation time")
    return Mp4Track(
        track_ordinal=ordinal,
        timescale=int(timescale),
        pts_ticks=pts[order] + shift,
        is_keyframe=keys[order],
        last_duration_ticks=int(deltas[order[-1]]),
    )


def read_mp4_video_tracks(handle: BinaryIO) -> Optional[dict[int, Optional[Mp4Track]]]:
    """``{track ordinal: Mp4Track, or None where that track's index is not simple}`` for the video tracks
    of an MP4/MOV, or None when the file has no readable ``moov`` (not an MP4, fragmented, corrupt).
    ``handle`` must be seekable; its position is changed."""
    try:
        moov = _read_moov(handle)
        if moov is None:
            return None
        movie_timescale = 0
        tracks: dict[int, Optional[Mp4Track]] = {}
        ordinal = 0
        for box in mp4_boxes(moov, 0, len(moov)):
            if box.kind == b"mvex":
                return None  # fragmented
            if box.kind == b"mvhd":
                version, at = _full_box(moov, box.payload)
                movie_timescale = struct.unpack_from(">I", moov, at + (16 if version == 1 else 8))[0]
            elif box.kind == b"trak":
                try:
                    track = _track(moov, box.payload, box.stop, movie_timescale, ordinal)
                    if track is not None:
                        tracks[ordinal] = track
                except (_Malformed, struct.error, ValueError, IndexError) as why:
                    logger.debug("mp4 track %d: no header index (%s)", ordinal, why)
                    tracks[ordinal] = None
                ordinal += 1
        return tracks
    except (_Malformed, struct.error, OSError, ValueError) as why:
        logger.debug("no mp4 header index: %s", why)
        return None

