"""Frame index: every frame's presentation time and keyframe flag, without decoding.

Windows and sparse requests seek straight to the keyframe before a target with it, and the metadata
states the real frame count and rate of the whole file even when only a few frames are decoded.
:func:`frame_index` takes it from where it is cheapest and still exact:

1. the container's own tables (MP4/MOV ``moov``: ``stts``/``ctts``/``stss``/``elst``, read by
   :mod:`loaders._mp4_index` in a few ms whatever the file's length, checked against what FFmpeg read
   from the same header);
2. else a demux-only scan (:func:`scan_frame_index`: every packet read, no pixels decoded; Matroska
   cues list only keyframes, so Matroska/WebM, AVI and MPEG-TS are scanned; cost: BENCHMARKS.md, Lab notes);

and caches it per path within the process. Preprocessing stores it in shards (``frames.json``) so
training-time loading skips both.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from avcore import ticks_to_seconds

logger = logging.getLogger(__name__)

__all__ = [
    "FrameIndex",
    "clear_frame_index_cache",
    "frame_index",
    "frame_index_cache_size",
    "header_frame_index",
    "scan_frame_index",
]


@dataclass(frozen=True)
class FrameIndex:
    """Presentation times of all frames of a video stream, in presentation order."""

    pts_seconds: np.ndarray
    """float64 ``[T]``, sorted: when each frame appears."""
    is_keyframe: np.ndarray
    """bool ``[T]``: frame ``k`` can be decoded without earlier frames (a seek target)."""
    end_seconds: float
    """End of the last frame (its pts plus its duration): the stream's presentation end."""

    def __post_init__(self) -> None:
        if self.pts_seconds.shape != self.is_keyframe.shape:
            raise ValueError(f"pts and keyframe flags differ in length: {self.pts_seconds.shape} vs {self.is_keyframe.shape}")

    @property
    def num_frames(self) -> int:
        return int(self.pts_seconds.shape[0])

    @property
    def keyframe_pts_seconds(self) -> np.ndarray:
        return self.pts_seconds[self.is_keyframe]

    def keyframe_at_or_before(self, seconds: float) -> float:
        """Pts of the last keyframe at or before ``seconds`` (the first keyframe if none is)."""
        keys = self.keyframe_pts_seconds
        if keys.size == 0:
            return float(self.pts_seconds[0]) if self.num_frames else 0.0
        i = int(np.searchsorted(keys, seconds, side="right")) - 1
        return float(keys[max(i, 0)])

    def to_json(self) -> dict:
        return {
            "pts_seconds": [round(float(x), 9) for x in self.pts_seconds],
            "keyframe": [int(i) for i in np.flatnonzero(self.is_keyframe)],
            "end_seconds": round(self.end_seconds, 9),
        }

    @classmethod
    def from_json(cls, record: dict) -> "FrameIndex":
        pts = np.asarray(record["pts_seconds"], dtype=np.float64)
        key = np.zeros(pts.shape, dtype=bool)
        key[np.asarray(record["keyframe"], dtype=np.int64)] = True
        return cls(pts_seconds=pts, is_keyframe=key, end_seconds=float(record["end_seconds"]))


def scan_frame_index(container, stream) -> FrameIndex:
    """Demux every packet of ``stream`` (no decoding) and return its frame index; rewinds the container.

    A packet's time is its pts, or its dts when the container stores none (AVI). Packets without
    either, and empty packets (flush markers, AVI "drop" frames), are not frames and are skipped.
    """
    time_base = stream.time_base
    times: list[int] = []
    keys: list[bool] = []
    durations: list[int] = []
    for packet in container.demux(stream):
        if packet.size == 0:
            continue
        ts = packet.pts if packet.pts is not None else packet.dts
        if ts is None:
            continue
        times.append(ts)
        keys.append(bool(packet.is_keyframe))
        durations.append(packet.duration or 0)
    container.seek(0, stream=stream, backward=True, any_frame=False)
    if not times:
        return FrameIndex(np.zeros(0), np.zeros(0, dtype=bool), 0.0)
    order = np.argsort(np.asarray(times, dtype=np.int64), kind="stable")
    ticks = np.asarray(times, dtype=np.int64)[order]
    pts = ticks_to_seconds(ticks, time_base)
    is_key = np.asarray(keys, dtype=bool)[order]
    last_duration = ticks_to_seconds(int(durations[order[-1]]), time_base)
    if last_duration <= 0 and pts.size > 1:
        last_duration = float(np.median(np.diff(pts)))
    return FrameIndex(pts_seconds=pts, is_keyframe=is_key, end_seconds=float(pts[-1] + last_duration))


class _IndexCache:
    """Frame indexes of files already indexed in this process, keyed by path, size, mtime and inode (so
    a rewritten file is indexed again); least recently used dropped beyond ``capacity``. Thread-safe."""

    def __init__(self, capacity: int = 256) -> None:
        import threading
        from collections import OrderedDict

        self._entries: "OrderedDict[tuple, FrameIndex]" = OrderedDict()
        self._capacity = capacity
        self._lock = threading.Lock()

    def get(self, key: tuple) -> "FrameIndex | None":
        with self._lock:
            found = self._entries.get(key)
            if found is not None:
                self._entries.move_to_end(key)
            return found

    def put(self, key: tuple, index: FrameIndex) -> None:
        with self._lock:
            self._entries[key] = index
            self._entries.move_to_end(key)
            while len(self._entries) > self._capacity:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


_CACHE = _IndexCache()
"""Per-process cache of :func:`frame_index`: a cache, not a setting (results are identical without it)."""


def clear_frame_index_cache() -> None:
    """Forget every cached frame index of this process (benchmarks time a cold start with it)."""
    _CACHE.clear()


def frame_index_cache_size() -> int:
    """How many frame indexes this process holds in its cache (one per file path, size, mtime and stream)."""
    return len(_CACHE)


def _cache_key(source, stream) -> "tuple | None":
    import os

    if not isinstance(source, (str, os.PathLike)):
        return None  # bytes and file objects have no cheap identity: not cached
    try:
        path = os.path.realpath(os.fspath(source))
        st = os.stat(path)
    except OSError:
        return None
    return (path, st.st_size, st.st_mtime_ns, st.st_ino, int(stream.index))


def _freeze(index: FrameIndex) -> FrameIndex:
    index.pts_seconds.setflags(write=False)
    index.is_keyframe.setflags(write=False)
    return index


def header_frame_index(source, container, stream) -> "FrameIndex | None":
    """The index from the container's own header where that is exact (MP4/MOV ``moov`` tables in the simple
    layout :mod:`loaders._mp4_index` accepts, agreeing with what FFmpeg read from the same header), else None.
    A file object's position is restored."""
    from fractions import Fraction

    from loaders._mp4_index import read_mp4_video_tracks
    from loaders._source import read_seekable

    try:
        if "mov" not in container.format.name.split(","):
            return None
    except AttributeError:
        return None
    tracks = read_seekable(source, read_mp4_video_tracks)
    track = (tracks or {}).get(int(stream.index))
    if track is None:
        return None
    time_base = stream.time_base
    if time_base is None or Fraction(time_base) != Fraction(1, track.timescale):
        logger.debug("mp4 header index: timescale %d, stream time base %s: scanning", track.timescale, time_base)
        return None
    if stream.frames and int(stream.frames) != track.pts_ticks.size:
        logger.debug("mp4 header index: %d samples, FFmpeg counts %d: scanning", track.pts_ticks.size, stream.frames)
        return None
    if stream.start_time is not None and int(stream.start_time) != int(track.pts_ticks[0]):
        logger.debug("mp4 header index: first pts %d, FFmpeg's start %d: scanning", track.pts_ticks[0], stream.start_time)
        return None
    pts = ticks_to_seconds(track.pts_ticks, time_base)
    end = float(pts[-1] + ticks_to_seconds(track.last_duration_ticks, time_base))
    return FrameIndex(pts_seconds=np.asarray(pts, dtype=np.float64), is_keyframe=track.is_keyframe.copy(), end_seconds=end)


def frame_index(source, container, stream) -> FrameIndex:
    """``stream``'s frame index: read from the container's header where it is exact (MP4/MOV), else from a
    demux scan (:func:`scan_frame_index`: Matroska, WebM, AVI, MPEG-TS, and MP4s outside the simple layout);
    cached within the process for paths. The arrays of the result are read-only (it may be shared)."""
    key = _cache_key(source, stream)
    if key is not None:
        cached = _CACHE.get(key)
        if cached is not None:
            return cached
    index = header_frame_index(source, container, stream)
    if index is None:
        index = scan_frame_index(container, stream)
    index = _freeze(index)
    if key is not None:
        _CACHE.put(key, index)
    return index
