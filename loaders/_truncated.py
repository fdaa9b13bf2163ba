"""Refuse an MP4/MOV whose sample data runs past the end of the file (a download or copy cut short).

An MP4 written with ``-movflags +faststart`` keeps its ``moov`` (every sample's offset and size) at the front, so a
file cut anywhere after it still opens: FFmpeg demuxes the samples that are there, logs "partial file" and stops.
Every reader then returned a shorter clip without an error (a 240-frame file cut to 60 kB decoded to 145 frames,
``decode_errors=0``; a sparse read repeated the last frame present for every later time)::

    moov (stsc, stsz, stco/co64) says:  [ftyp][moov][mdat ........................................)  data end
    the file holds:                     [ftyp][moov][mdat .................)                         size

The check reads the ``moov`` tables of every track, takes the largest ``chunk offset + bytes of its samples`` and
compares it with the size of the source. Without a whole ``moov`` (a plain file, index last, cut inside its ``mdat``
or its ``moov``), the top-level box that the cut runs through says where it should end. Anything it cannot read (not
an MP4, fragmented, a ``moov`` that does not parse, a file cut exactly between two boxes) is left to the decoder, as
before. Files are checked once per process (keyed by path, size, mtime and inode).
"""
from __future__ import annotations

import logging
import os
import struct
import threading
from collections import OrderedDict
from typing import BinaryIO, Optional

import numpy as np

from avcore import DecodeError
from loaders._mp4_index import _read_moov, file_boxes, mp4_boxes
from loaders._source import read_seekable

logger = logging.getLogger(__name__)

__all__ = ["check_not_truncated", "mp4_sample_data_end"]

_TOP_LEVEL = {b"ftyp", b"moov", b"mdat", b"free", b"skip", b"wide", b"pnot", b"uuid", b"styp"}
_SAMPLE_TABLE_PATH = (b"trak", b"mdia", b"minf", b"stbl")


def _u32_table(data: bytes, count_at: int, stop: int, fields: int, dtype: str = ">u4") -> np.ndarray:
    count = struct.unpack_from(">I", data, count_at)[0]
    width = np.dtype(dtype).itemsize
    if count_at + 4 + count * fields * width > stop:
        raise ValueError(f"table of {count} entries overruns its box")
    return np.frombuffer(data, dtype=dtype, count=count * fields, offset=count_at + 4).reshape(count, fields)


def _track_data_end(data: bytes, start: int, stop: int) -> Optional[int]:
    """The offset just past the last byte of one track's samples, or None for a track without samples."""
    boxes: dict[bytes, tuple[int, int]] = {}

    def walk(a: int, b: int) -> None:
        for box in mp4_boxes(data, a, b):
            if box.kind in _SAMPLE_TABLE_PATH:
                walk(box.payload, box.stop)
            elif box.kind in (b"stsz", b"stsc", b"stco", b"co64"):
                boxes.setdefault(box.kind, (box.payload, box.stop))

    walk(start, stop)
    if b"stsz" not in boxes or b"stsc" not in boxes or not (b"stco" in boxes or b"co64" in boxes):
        return None
    s, e = boxes[b"stsz"]
    uniform, count = struct.unpack_from(">II", data, s + 4)
    sizes = None if uniform else _u32_table(data, s + 8, e, 1).reshape(-1).astype(np.int64)
    s, e = boxes[b"stsc"]
    stsc = _u32_table(data, s + 4, e, 3).astype(np.int64)
    s, e = boxes[b"co64"] if b"co64" in boxes else boxes[b"stco"]
    offsets = _u32_table(data, s + 4, e, 1, ">u8" if b"co64" in boxes else ">u4").reshape(-1).astype(np.int64)
    if count == 0 or offsets.size == 0 or stsc.size == 0:
        return None
    first_chunk = stsc[:, 0] - 1  # 1-based in the file
    if int(first_chunk[0]) != 0 or np.any(np.diff(first_chunk) <= 0) or int(first_chunk[-1]) >= offsets.size:
        raise ValueError("stsc runs out of order")
    runs = np.diff(np.append(first_chunk, offsets.size))
    per_chunk = np.repeat(stsc[:, 1], runs)
    last_sample = np.cumsum(per_chunk)  # one past each chunk's last sample
    if int(last_sample[-1]) > count:
        raise ValueError(f"stsc places {int(last_sample[-1])} samples, stsz has {count}")
    if uniform:
        chunk_bytes = per_chunk * int(uniform)
    else:
        cumulative = np.concatenate([[0], np.cumsum(sizes)])
        chunk_bytes = cumulative[last_sample] - cumulative[last_sample - per_chunk]
    used = per_chunk > 0
    return int((offsets[used] + chunk_bytes[used]).max()) if used.any() else None


def _top_level_overrun(handle: BinaryIO) -> Optional[int]:
    """Where the first top-level box that runs past the end of the file says it ends (an ``mdat`` or ``moov`` cut
    short: a plain MP4 whose index was at the end), or None when every box ends inside the file or the headers stop
    looking like boxes (four printable characters)."""
    end = handle.seek(0, 2)
    for box in file_boxes(handle):
        if not all(32 <= c < 127 for c in box.kind):
            return None
        if box.stop > end:
            return box.stop
    return None


def mp4_sample_data_end(handle: BinaryIO) -> Optional[int]:
    """The offset just past the last sample byte of any track of an MP4/MOV (``moov``'s ``stsz``, ``stsc`` and
    ``stco``/``co64``); without a whole ``moov``, where a top-level box cut by the end of the file says it ends; None
    when ``handle`` is not an MP4 with a readable ``moov`` and nothing is cut (fragmented files included). ``handle``
    must be seekable; its position is changed."""
    handle.seek(0)
    head = handle.read(8)
    if len(head) < 8 or head[4:8] not in _TOP_LEVEL:
        return None
    try:
        moov = _read_moov(handle)
        if moov is None:  # no whole moov: a top-level box cut by the end of the file says truncated too
            return _top_level_overrun(handle)
        ends = []
        for box in mp4_boxes(moov, 0, len(moov)):
            if box.kind == b"mvex":
                return None  # fragmented: samples also live in moof boxes
            if box.kind == b"trak":
                end = _track_data_end(moov, box.payload, box.stop)
                if end is not None:
                    ends.append(end)
        return max(ends) if ends else None
    except (ValueError, struct.error, OSError) as why:  # a moov that does not parse: the decoder decides
        logger.debug("mp4 sample tables not read: %s", why)
        return None


_CHECKED: "OrderedDict[tuple, Optional[tuple[int, int]]]" = OrderedDict()
_CHECKED_LOCK = threading.Lock()
_CHECKED_CAPACITY = 1024


def _data_end_and_size(source) -> Optional[tuple[int, int]]:
    """``(sample data end, source size)`` of an MP4 source, or None when it is not one (or cannot be told)."""
    found = read_seekable(source, lambda handle: (mp4_sample_data_end(handle), handle.seek(0, os.SEEK_END)))
    return None if found is None or found[0] is None else found


def check_not_truncated(source, label: str) -> None:
    """Raise :class:`~avcore.DecodeError` (reason ``decode``) when ``source`` is an MP4/MOV whose sample tables place
    data beyond its last byte; return quietly for complete files and for anything that is not an MP4 with a readable
    ``moov``. A path is checked once per process (until its size, mtime or inode change)."""
    key = None
    if isinstance(source, (str, os.PathLike)):
        try:
            path = os.path.realpath(os.fspath(source))
            st = os.stat(path)
            key = (path, st.st_size, st.st_mtime_ns, st.st_ino)
        except OSError:
            return  # the decoder names the problem
    with _CHECKED_LOCK:
        known = key is not None and key in _CHECKED
        found = _CHECKED.get(key) if known else None
    if not known:
        try:
            found = _data_end_and_size(source)
        except OSError:
            return
        if key is not None:
            with _CHECKED_LOCK:
                _CHECKED[key] = found
                while len(_CHECKED) > _CHECKED_CAPACITY:
                    _CHECKED.popitem(last=False)
    if found is not None and found[0] > found[1]:
        end, size = found
        missing = (end - size) / max(end, 1)
        share = f"{missing:.0%}" if missing >= 0.005 else "under 1%"
        suffix = os.path.splitext(label)[1] if os.path.splitext(label)[1].lower() in (".mov", ".m4a", ".m4v", ".3gp") \
            else ".mp4"
        raise DecodeError(
            f"{label}: truncated: its MP4/MOV structure (sample tables, or a box cut short) places data up to byte "
            f"{end:,} but it holds {size:,} "
            f"bytes ({share} of the data missing), so the end of its streams is missing. Fetch it again; "
            f"`ffmpeg -i IN -c copy OUT{suffix}` keeps the part that is there as a shorter, valid file."
        )
