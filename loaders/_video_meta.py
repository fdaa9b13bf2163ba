"""What every video backend shares: the request, header facts, content facts, the checks that refuse
corrupt timing, and :func:`probe_video` (header + frame index, no pixels).

Backends (:mod:`loaders._video_pyav`, :mod:`loaders._video_torchcodec`, :mod:`loaders._video_decord`) get a
:class:`VideoRequest` and return a ``VideoClip`` whose metadata is built here, so every backend reports the same
facts the same way; :mod:`loaders._video` picks the backend.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from avcore import DecodeError, VideoMetadata, ticks_to_seconds
from loaders._index import FrameIndex, frame_index
from loaders._rotation import frame_rotation_degrees
from loaders._source import MediaSource, check_source, describe_source, open_container, pick_stream

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_MAX_PIXELS", "VideoRequest", "check_duration", "check_time_base", "content_facts", "displayed",
           "first_frame_rotation", "frame_seconds", "header_metadata", "open_video", "probe_video"]

DEFAULT_MAX_PIXELS = 3840 * 2160
"""Largest frame (width × height) decoded unless the caller raises it: 4K UHD."""
_VFR_TOLERANCE = 0.10
"""A clip is VFR when some frame duration differs from the median by more than this fraction."""
_MAX_TICK_SECONDS = 0.5
"""A stream whose time base is coarser than this cannot time frames: a corrupt ``mdhd`` timescale (0 or 1)."""
_MAX_MEAN_FRAME_SECONDS = 10.0
"""Frames shown longer than this on average mean timestamps in the wrong unit (a corrupt timescale):
a 2 s, 20-frame clip whose timescale reads 1 puts its frames 1024 s apart."""


def open_video(source: MediaSource, label: str):
    return open_container(source, label, kind="video")


def check_time_base(stream, label: str) -> None:
    """Refuse a stream whose time base cannot time its frames: ticks over 0.5 s in an MP4/MOV (whose ``mdhd``
    timescale is a free field that muxers set to 1000 or more: 0 or 1 is a corrupt header), or elsewhere
    ticks over 0.5 s that are also longer than one frame at the declared rate. A 1 fps AVI, whose time base
    is its frame duration (1 s), is fine."""
    time_base = stream.time_base
    tick = float(time_base) if time_base is not None else 0.0
    try:
        mov = "mov" in stream.container.format.name
    except AttributeError:
        mov = False
    if not tick > 0 or (tick > _MAX_TICK_SECONDS and (mov or tick > 1.5 * frame_seconds(stream))):
        raise DecodeError(
            f"{label}: the {stream.type} stream's time base is {time_base} s per tick, too coarse to time its frames "
            f"(limit {_MAX_TICK_SECONDS} s): a corrupt header (mdhd timescale 0 or 1?)"
        )


def check_duration(first_seconds: float, end_seconds: float, num_frames: int, label: str,
                   max_duration_seconds: Optional[float]) -> None:
    """Refuse timestamps that cannot be right: frames far apart on average (a wrong timescale), or a
    presentation span over ``max_duration_seconds`` (reason ``too_large``)."""
    span = end_seconds - first_seconds
    if num_frames >= 2 and span / num_frames > _MAX_MEAN_FRAME_SECONDS:
        raise DecodeError(
            f"{label}: {num_frames} frames span {span:.3f} s ({span / num_frames:.1f} s per frame, limit "
            f"{_MAX_MEAN_FRAME_SECONDS:g}): the timestamps are in the wrong unit (corrupt timescale?)"
        )
    if max_duration_seconds is not None and span > max_duration_seconds:
        raise DecodeError(
            f"{label}: the video spans {span:.3f} s, over max_duration_seconds={max_duration_seconds:g}; "
            "raise the limit to decode it", reason="too_large",
        )


def header_metadata(stream, *, backend: str, label: str) -> VideoMetadata:
    """The stream header's facts. Raises DecodeError (naming ``label``) for a stream whose codec FFmpeg cannot name
    (no codec context: a damaged or cut header)."""
    time_base = stream.time_base
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    ctx = stream.codec_context
    if ctx is None or not ctx.name:
        raise DecodeError(f"{label}: FFmpeg cannot identify the video stream's codec (a damaged or unsupported stream "
                          f"header); hint: `ffprobe {label}` shows codec_name=unknown for such a stream")
    start = ticks_to_seconds(stream.start_time, time_base) if stream.start_time is not None and time_base else 0.0
    duration = ticks_to_seconds(stream.duration, time_base) if stream.duration and time_base else None
    return VideoMetadata(
        codec=ctx.name,
        width=int(ctx.width),
        height=int(ctx.height),
        fps_from_header=float(rate) if rate else None,
        num_frames_from_header=int(stream.frames) if stream.frames else None,
        start_seconds=float(start),
        duration_seconds_from_header=float(duration) if duration else None,
        backend=backend,
        stream_index=int(stream.index),
    )


_MAX_PACKETS_FOR_ROTATION = 256
"""Packets demuxed, at most, looking for the first decodable frame whose display matrix gives the rotation."""


def first_frame_rotation(container, stream, label: str) -> int:
    """The display rotation (:mod:`loaders._rotation`) of ``stream``'s first decodable frame: FFmpeg attaches the
    container's (or the codec's) display matrix to every frame. Decodes from the container's current position
    (call it at the start, or after a seek to it); 0 when no frame decodes within the first packets (the decode
    itself then reports the file).

    Raises:
        DecodeError: a display matrix that is mirrored or not a multiple of 90 degrees.
    """
    import av

    ctx = stream.codec_context
    for count, packet in enumerate(container.demux(stream)):
        if count >= _MAX_PACKETS_FOR_ROTATION:
            break
        try:
            frames = ctx.decode(packet)
        except av.error.FFmpegError:
            continue
        if frames:
            return frame_rotation_degrees(frames[0], label)
    logger.debug("%s: no frame decoded in the first %d packets: rotation taken as 0", label, _MAX_PACKETS_FOR_ROTATION)
    return 0


def displayed(meta: VideoMetadata, rotation_degrees: int) -> VideoMetadata:
    """``meta`` (the stream's stored size) as displayed: width and height swapped at 90/270, the rotation recorded."""
    import dataclasses

    if rotation_degrees % 180:
        meta = dataclasses.replace(meta, width=meta.height, height=meta.width)
    return dataclasses.replace(meta, rotation_degrees=rotation_degrees)


def content_facts(pts_seconds: np.ndarray) -> dict:
    """Mean frame rate over the decoded/indexed pts, and VFR (a frame duration far from the median).

    The mean (``(T - 1) / (last - first)``) is exact for CFR streams whose timestamps are rounded to
    the container's tick (Matroska: 1 ms, so 29.97 fps shows as 33/33/34 ms durations).
    """
    if pts_seconds.size < 2:
        return {"fps_from_content": None, "vfr": None}
    durations = np.diff(pts_seconds)
    median = float(np.median(durations))
    span = float(pts_seconds[-1] - pts_seconds[0])
    if median <= 0 or span <= 0:
        return {"fps_from_content": None, "vfr": None}
    vfr = bool(np.any(np.abs(durations - median) > _VFR_TOLERANCE * median))
    return {"fps_from_content": (pts_seconds.size - 1) / span, "vfr": vfr}


def probe_video(source: MediaSource, *, name: str | None = None, stream_index: Optional[int] = None,
                max_duration_seconds: Optional[float] = None) -> tuple[VideoMetadata, FrameIndex]:
    """Header facts and the frame index of ``source``'s video stream (chosen as ``read_video`` chooses it),
    decoding only the first frame (for its display rotation: ``width``/``height`` are as displayed, and
    ``rotation_degrees`` is set). The index comes from the MP4/MOV header where that is exact, else from a demux
    scan (:func:`loaders._index.frame_index`), and is cached per path within the process.

    Raises:
        DecodeError: as ``read_video`` (any failure of the file: ``decode``, ``missing_video``, ``too_large``).
    """
    check_source(source)
    label = describe_source(source, name)
    try:
        container = open_video(source, label)
        try:
            stream = pick_stream(container, "video", label, stream_index=stream_index)
            check_time_base(stream, label)
            header = header_metadata(stream, backend="", label=label)
            index = frame_index(source, container, stream)  # (a scan rewinds the container)
            header = displayed(header, first_frame_rotation(container, stream, label))
        finally:
            container.close()
        if index.num_frames:
            check_duration(float(index.pts_seconds[0]), index.end_seconds, index.num_frames, label, max_duration_seconds)
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the file is a DecodeError
        raise DecodeError(f"{label}: cannot probe the video: {type(e).__name__}: {e}") from e
    import dataclasses

    facts = content_facts(index.pts_seconds)
    return dataclasses.replace(header, num_frames_from_content=index.num_frames, **facts), index


def frame_seconds(stream) -> float:
    """One frame's duration from the stream's declared rate (25 fps when it declares none): the step the
    timestamp repair below uses. Always > 0."""
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        try:
            if rate and float(rate) > 0 and math.isfinite(float(rate)):
                return 1.0 / float(rate)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue
    return 1.0 / 25.0



@dataclass(frozen=True)
class VideoRequest:
    """What ``read_video`` was asked for (passed to a backend, and through the watchdog); validated by
    ``read_video``. Times in seconds on the stream's presentation timeline; ``size`` is ``(height, width)``."""

    start: Optional[float]
    stop: Optional[float]
    fps: Optional[float]
    max_pixels: int
    num_threads: int
    size: Optional[tuple[int, int]]
    index: Optional[FrameIndex]
    stream_index: Optional[int] = None
    max_duration_seconds: Optional[float] = None
