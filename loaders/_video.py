"""``read_video``: frames with their real presentation timestamps.

Timestamps are FFmpeg's *best-effort* timestamps (what ffprobe prints as ``best_effort_timestamp_time``
and what players show), never ``k / fps``::

    container pts   0.000  0.033  0.067  0.100 ...      (30 fps)     0.021  0.054 ...  (Matroska, start 21 ms)
    frame index     0      1      2      3                           0      1
    k / fps         0.000  0.033  0.067  0.100          wrong by ->  21 ms on every frame

Windows are half-open: ``read_video(src, start_seconds=a, stop_seconds=b)`` returns the frames with
``a <= pts < b``. ``fps=N`` returns, for each time ``t = a + i/N < b`` of a grid, the frame *played* at
``t`` (the last frame with ``pts <= t``), decoding only the GOPs that hold those frames, skipping every
non-reference frame that is not an answer, with FFmpeg's frame threads (a skip is set per packet, and
frame threading applies it to that packet). Windows and ``fps=`` locate frames with the file's frame index
(:func:`loaders._index.frame_index`: from the MP4 header where exact, else a demux scan; cached per path).

Stream: the one FFmpeg picks by default (``av_find_best_stream``; never an attached picture), or
``stream_index=``; recorded in ``metadata.stream_index``. Times that break presentation order (``stts``
deltas of 0, DivX packed B-frames, a last frame without a timestamp) are repaired by one rule
(:func:`strictly_increasing`); headers whose timescale cannot time the frames are refused.

Backends: ``pyav`` (FFmpeg through PyAV) is exact on every container we test and, measured on these
machines, the fastest full decode (see BENCHMARKS.md); ``auto`` uses it and falls back to ``decord``
when PyAV fails on a file. ``decord`` can be forced; its pixels are used with timestamps from our
own demux index, because decord reports Matroska times from zero and fails on VP9/WebM.
"""
from __future__ import annotations

import itertools
import logging
from dataclasses import dataclass
import math
from typing import Iterator, Literal, Optional

import numpy as np
import torch

from avcore import (
    DecodeError,
    VideoClip,
    VideoMetadata,
    check_window_overlaps,
    frame_played_at,
    seconds_to_ticks,
    ticks_to_seconds,
)
from loaders._index import FrameIndex, frame_index
from loaders._source import MediaSource, check_source, describe_source, open_container, open_for_pyav, pick_stream

logger = logging.getLogger(__name__)

__all__ = ["read_video", "probe_video"]

Backend = Literal["auto", "pyav", "decord"]
_BACKENDS = ("auto", "pyav", "decord")
DEFAULT_MAX_PIXELS = 3840 * 2160
"""Largest frame (width × height) decoded unless the caller raises it: 4K UHD."""
_SEEK_RETRIES = 3
"""Keyframes tried before a target when a seek lands after it, before falling back to the stream start."""
_VFR_TOLERANCE = 0.10
"""A clip is VFR when some frame duration differs from the median by more than this fraction."""
_MAX_TICK_SECONDS = 0.5
"""A stream whose time base is coarser than this cannot time frames: a corrupt ``mdhd`` timescale (0 or 1)."""
_MAX_MEAN_FRAME_SECONDS = 10.0
"""Frames shown longer than this on average mean timestamps in the wrong unit (a corrupt timescale):
a 2 s, 20-frame clip whose timescale reads 1 puts its frames 1024 s apart."""


class _BestEffortClock:
    """FFmpeg's ``guess_correct_pts``: trust pts unless it went backwards more often than dts did."""

    def __init__(self) -> None:
        self.faulty_pts = 0
        self.faulty_dts = 0
        self.last_pts: Optional[int] = None
        self.last_dts: Optional[int] = None

    def __call__(self, pts: Optional[int], dts: Optional[int]) -> Optional[int]:
        if dts is not None:
            self.faulty_dts += int(self.last_dts is not None and dts <= self.last_dts)
            self.last_dts = dts
        if pts is not None:
            self.faulty_pts += int(self.last_pts is not None and pts <= self.last_pts)
            self.last_pts = pts
        if pts is not None and (self.faulty_pts <= self.faulty_dts or dts is None):
            return pts
        return dts


def _open(source: MediaSource, label: str):
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
    if not tick > 0 or (tick > _MAX_TICK_SECONDS and (mov or tick > 1.5 * _frame_seconds(stream))):
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


def _header_metadata(stream, *, backend: str) -> VideoMetadata:
    time_base = stream.time_base
    rate = stream.average_rate or stream.guessed_rate or stream.base_rate
    ctx = stream.codec_context
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


def _content_facts(pts_seconds: np.ndarray) -> dict:
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
    without decoding pixels. The index comes from the MP4/MOV header where that is exact, else from a demux
    scan (:func:`loaders._index.frame_index`), and is cached per path within the process.

    Raises:
        DecodeError: as ``read_video`` (any failure of the file: ``decode``, ``missing_video``, ``too_large``).
    """
    check_source(source)
    label = describe_source(source, name)
    try:
        container = _open(source, label)
        try:
            stream = pick_stream(container, "video", label, stream_index=stream_index)
            check_time_base(stream, label)
            header = _header_metadata(stream, backend="")
            index = frame_index(source, container, stream)
        finally:
            container.close()
        if index.num_frames:
            check_duration(float(index.pts_seconds[0]), index.end_seconds, index.num_frames, label, max_duration_seconds)
    except DecodeError:
        raise
    except Exception as e:  # noqa: BLE001 - any failure of the file is a DecodeError
        raise DecodeError(f"{label}: cannot probe the video: {type(e).__name__}: {e}") from e
    import dataclasses

    facts = _content_facts(index.pts_seconds)
    return dataclasses.replace(header, num_frames_from_content=index.num_frames, **facts), index


def _check_window(start_seconds: Optional[float], stop_seconds: Optional[float], fps: Optional[float]) -> None:
    for name, value in (("start_seconds", start_seconds), ("stop_seconds", stop_seconds), ("fps", fps)):
        if value is not None and not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {name} = {value!r}")
    if start_seconds is not None and stop_seconds is not None and stop_seconds < start_seconds:
        raise ValueError(f"window must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    if fps is not None and fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps = }")


class _RGB:
    """Frame → RGB24 array with one reusable swscale context per decode.

    ``frame.to_ndarray(format="rgb24")`` builds a new conversion context for every frame, several times the cost
    of a reused ``VideoReformatter`` (BENCHMARKS.md, Lab notes). Not shared between calls or threads.
    """

    def __init__(self, size: Optional[tuple[int, int]] = None) -> None:
        from av.video.reformatter import VideoReformatter

        self._reformatter = VideoReformatter()
        self._size = size

    def __call__(self, frame) -> np.ndarray:
        if self._size is None:
            return self._reformatter.reformat(frame, format="rgb24").to_ndarray()
        height, width = self._size
        # One swscale pass converts and scales ("area" averaging: the right filter for downscaling).
        return self._reformatter.reformat(frame, format="rgb24", width=width, height=height, interpolation="AREA").to_ndarray()


class _FrameBuffer:
    """Frames written straight into one preallocated uint8 tensor, grown by doubling.

    Measured: ``np.stack`` of per-frame arrays doubles the memory traffic of a full 720p decode
    (a second 830 MB allocation and copy for 10 s); writing into a buffer sized from the header does not.
    The header's count is only a hint, capped, since a hostile header may claim billions of frames.
    """

    _MAX_HINT_FRAMES = 2048

    def __init__(self, hint: Optional[int], height: int, width: int) -> None:
        capacity = min(max(int(hint or 0), 16), self._MAX_HINT_FRAMES)
        self._data = torch.empty((capacity, height, width, 3), dtype=torch.uint8)
        self._count = 0

    @property
    def full(self) -> bool:
        return self._count == self._data.shape[0]

    def grow(self) -> None:
        """Double the capacity (no write may be in flight: views of the old storage become stale)."""
        grown = torch.empty((2 * self._data.shape[0],) + tuple(self._data.shape[1:]), dtype=torch.uint8)
        grown[: self._count] = self._data[: self._count]
        self._data = grown

    @property
    def count(self) -> int:
        """Frames written (or being written) so far."""
        return self._count

    def take_slot(self) -> torch.Tensor:
        """The ``[H, W, 3]`` view the next frame goes to."""
        slot = self._data[self._count]
        self._count += 1
        return slot

    def tensor(self) -> torch.Tensor:
        out = self._data[: self._count]
        return out.clone() if self._count < self._data.shape[0] // 2 else out


class _RGBWriter:
    """Converts decoded frames to RGB into a :class:`_FrameBuffer` on one helper thread.

    The decoder (FFmpeg's own threads, driven from this thread) and the conversion + copy then overlap
    (swscale and torch's copy release the GIL; the gain: BENCHMARKS.md, Lab notes). At most ``depth`` frames
    are in flight, which bounds the memory held by decoded frames.
    """

    def __init__(self, buffer: _FrameBuffer, rgb: "_RGB", *, depth: int = 8) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self._buffer, self._rgb, self._depth = buffer, rgb, depth
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="avalign-rgb")
        self._pending: "deque" = deque()

    def _convert(self, frame, slot: torch.Tensor) -> None:
        array = self._rgb(frame)
        if array.shape != tuple(slot.shape):
            raise DecodeError(f"frame size changed mid-stream: {tuple(slot.shape)} -> {array.shape}")
        slot.numpy()[...] = array  # numpy: single-threaded, GIL released (torch.copy_ would start OpenMP threads)

    def put(self, frame) -> None:
        if self._buffer.full:
            self.drain()
            self._buffer.grow()
        self._pending.append(self._pool.submit(self._convert, frame, self._buffer.take_slot()))
        if len(self._pending) > self._depth:
            self._pending.popleft().result()

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        for future in self._pending:
            future.cancel()
        self._pool.shutdown(wait=True)


def _frame_seconds(stream) -> float:
    """One frame's duration from the stream's declared rate (25 fps when it declares none): the step the
    timestamp repair below uses. Always > 0."""
    for rate in (stream.average_rate, stream.guessed_rate, stream.base_rate):
        try:
            if rate and float(rate) > 0 and math.isfinite(float(rate)):
                return 1.0 / float(rate)
        except (TypeError, ValueError, ZeroDivisionError, OverflowError):
            continue
    return 1.0 / 25.0


def strictly_increasing(timed: Iterator[tuple[Optional[float], object]], frame_seconds: float) -> Iterator[tuple[float, object]]:
    """Presentation times that never repeat and never go back, repaired with one frame of look-ahead.

    Input: ``(seconds or None, frame)`` in decode output order, times from FFmpeg's best-effort rule.
    A time that breaks the order is a timestamp the container or decoder got wrong; the rule (``d`` is one
    frame duration, ``prev`` the time given to the frame before)::

        no time at all                      -> prev + d          (never a copy of prev; first frame: next - d)
        time <= prev                        -> prev + d          (``stts`` deltas of 0: 0 0 0 -> 0 d 2d)
        time >= the next frame's time       -> prev + d, when that lies before the next frame's time
          (it took its successor's time:       (else it keeps its time and the next frame moves up)
           packed B-frames)

        packed B-frames (DivX):  in  0.000 0.042 0.083 0.209 0.209 0.250      out  0.000 0.042 0.083 0.125 0.209 0.250
        last frame, no stamp:    in  ... 1.918 None                            out  ... 1.918 1.960

    Times that are already strictly increasing pass unchanged (every well-formed stream).
    """
    if not frame_seconds > 0:
        raise ValueError(f"frame_seconds must be > 0, got {frame_seconds = }")
    prev: Optional[float] = None
    anchor, steps = 0.0, 0  # prev == anchor + steps * d: repaired times are counted in steps, not summed
    pending = next(timed, None)
    while pending is not None:
        upcoming = next(timed, None)
        t, frame = pending
        following = upcoming[0] if upcoming is not None else None
        stepped = prev is not None and (
            t is None or t <= prev
            or (following is not None and t >= following and anchor + (steps + 1) * frame_seconds < following)
        )
        if stepped:
            steps += 1
            t = anchor + steps * frame_seconds
        elif t is None:  # the first frame has no time
            t = following - frame_seconds if following is not None else 0.0
        if not stepped:
            anchor, steps = t, 0
        yield t, frame
        prev = t
        pending = upcoming


def _timed(decoder, stream, clock: Optional[_BestEffortClock] = None) -> Iterator[tuple[float, object]]:
    """``(pts_seconds, frame)`` of decoded frames: FFmpeg's best-effort time, made strictly increasing
    (:func:`strictly_increasing`)."""
    clock = clock or _BestEffortClock()
    time_base = stream.time_base

    def raw() -> Iterator[tuple[Optional[float], object]]:
        for frame in decoder:
            ts = clock(frame.pts, frame.dts)
            yield (ticks_to_seconds(ts, time_base) if ts is not None else None), frame

    return strictly_increasing(raw(), _frame_seconds(stream))


def _packets(container, stream) -> Iterator[object]:
    """The stream's packets; MPEG-4 part 2 goes through FFmpeg's ``mpeg4_unpack_bframes`` filter, which
    splits DivX "packed bitstream" packets (a P- and a B-frame in one packet) so each frame gets its own
    timestamp (a no-op on streams that are not packed)."""
    packets = container.demux(stream)
    unpack = None
    if stream.codec_context.name == "mpeg4":
        try:
            from av.bitstream import BitStreamFilterContext

            unpack = BitStreamFilterContext("mpeg4_unpack_bframes", stream)
        except Exception as e:  # noqa: BLE001 - an FFmpeg built without the filter: packets as they are
            logger.debug("mpeg4_unpack_bframes unavailable (%s)", e)
    if unpack is None:
        yield from packets
        return
    for packet in packets:
        if packet.size == 0:  # the demuxer's flush packet: drain the filter first
            yield from unpack.filter(None)
            yield packet
            continue
        yield from unpack.filter(packet)


def _decode_packets(container, stream, needed_ticks: Optional[frozenset], bad_packets: Optional[list] = None) -> Iterator[object]:
    """Decoded frames of ``stream`` from the current position; with ``needed_ticks``, non-reference frames
    whose packet time is not needed are not decoded at all (``skip_frame``, set per packet). The pts of each
    corrupt packet dropped is appended to ``bad_packets`` when given (``VideoMetadata.decode_errors``).

    Skipping is exact: a non-reference frame is by definition never used to decode another frame, and
    every frame that will be returned is decoded. Packet times are the frame index's own times.
    """
    import av

    ctx = stream.codec_context
    rejected = 0
    for packet in _packets(container, stream):
        if needed_ticks is not None:
            ts = packet.pts if packet.pts is not None else packet.dts
            ctx.skip_frame = "DEFAULT" if packet.size == 0 or ts is None or ts in needed_ticks else "NONREF"
        try:
            frames = ctx.decode(packet)
        except av.error.InvalidDataError:
            # A corrupt packet: FFmpeg (the CLI, and frame-threaded decoding) drops it and decodes on; so do we,
            # whatever the thread count. A file whose every packet is corrupt decodes to no frames (DecodeError).
            rejected += 1
            if bad_packets is not None:
                bad_packets.append(packet.pts)
            continue
        yield from frames
    if rejected:
        logger.warning("%s: %d corrupt video packet(s) dropped by the decoder", getattr(container, "name", ""), rejected)


def _frames_from(container, stream, index: FrameIndex, seconds: float,
                 needed_ticks: Optional[frozenset] = None, bad_packets: Optional[list] = None) -> Iterator[tuple[float, object]]:
    """Timed frames from a seek point whose first frame is at or before ``seconds``.

    Some demuxers seek by decode timestamps (AVI with B-frames): asking for the keyframe presented at
    1.48 s can land on the next one, presented at 1.6 s. Then earlier keyframes are tried, and at
    last the start of the stream, so no frame before the target is ever silently missed.
    """
    time_base = stream.time_base
    keys = index.keyframe_pts_seconds
    candidates = [float(k) for k in keys[keys <= seconds][::-1][:_SEEK_RETRIES]] + [None]
    for keyframe in candidates:
        target = seconds_to_ticks(keyframe, time_base) if keyframe is not None else (stream.start_time or 0)
        container.seek(target, stream=stream, backward=True, any_frame=False)
        frames = _timed(_decode_packets(container, stream, needed_ticks, bad_packets), stream)
        first = next(frames, None)
        if first is None:
            continue
        if keyframe is None or first[0] <= seconds + 1e-9:
            return itertools.chain([first], frames)
        logger.debug("seek to keyframe %.6f s landed at %.6f s (> %.6f s): trying an earlier one", keyframe, first[0], seconds)
    return iter(())


def _decode_range_pyav(container, stream, start: float, stop: float, index: Optional[FrameIndex], hint: Optional[int],
                       size: Optional[tuple[int, int]] = None, bad_packets: Optional[list] = None):
    """Frames with ``start <= pts < stop`` in presentation order: (pts_seconds list, uint8 tensor [T, H, W, 3])."""
    if index is None:
        frames = _timed(_decode_packets(container, stream, None, bad_packets), stream)
    else:
        frames = _frames_from(container, stream, index, start, bad_packets=bad_packets)
    pts_out: list[float] = []
    height, width = size or (stream.codec_context.height, stream.codec_context.width)
    buffer = _FrameBuffer(hint, height, width)
    writer = _RGBWriter(buffer, _RGB(size))
    try:
        for t, frame in frames:
            if t >= stop:
                break
            if t < start:
                continue
            pts_out.append(t)
            writer.put(frame)
        writer.drain()
    finally:
        writer.close()
    return pts_out, buffer.tensor()


def _decode_played_at_pyav(container, stream, targets: np.ndarray, index: FrameIndex, size: Optional[tuple[int, int]] = None,
                           bad_packets: Optional[list] = None):
    """For each target time, the frame on screen then: (pts_seconds list, uint8 tensor [T, H, W, 3]).

    Seeks only when the next keyframe is ahead of us, and decodes no non-reference frame that is not one of
    the answers (known in advance from the index). Each distinct answer is converted to RGB once, on the
    helper thread of :class:`_RGBWriter`, while the decoder's threads go on."""
    played = frame_played_at(index.pts_seconds, targets, before_first="none")
    needed = frozenset(seconds_to_ticks(float(index.pts_seconds[i]), stream.time_base) for i in played[played >= 0])
    frames: Optional[Iterator[tuple[float, object]]] = None
    position = -math.inf  # pts of the last decoded frame
    prev: Optional[tuple[float, object]] = None  # last frame with pts <= current target
    pending: Optional[tuple[float, object]] = None  # first frame with pts > current target
    height, width = size or (stream.codec_context.height, stream.codec_context.width)
    buffer = _FrameBuffer(len(targets), height, width)
    writer = _RGBWriter(buffer, _RGB(size))
    pts_out: list[float] = []
    rows: list[int] = []  # the buffer row of each answer (consecutive targets may share one frame)
    last: Optional[float] = None
    try:
        for t in targets:
            keyframe = index.keyframe_at_or_before(float(t))
            if frames is None or keyframe > position + 1e-9:
                frames = _frames_from(container, stream, index, float(t), needed, bad_packets)
                prev = pending = None
            while pending is None or pending[0] <= t:
                if pending is not None:
                    prev, pending = pending, None
                item = next(frames, None)
                if item is None:
                    break
                position = item[0]
                if position <= t:
                    prev = item
                else:
                    pending = item
            if prev is None:
                continue  # target before the first frame: nothing on screen
            if prev[0] != last:
                writer.put(prev[1])
                last = prev[0]
            pts_out.append(prev[0])
            rows.append(buffer.count - 1)
        writer.drain()
    finally:
        writer.close()
    out = buffer.tensor()
    if rows != list(range(out.shape[0])):
        out = out[torch.as_tensor(rows, dtype=torch.long)]
    return pts_out, out


def _stack(rgb: list[np.ndarray], height: int, width: int) -> torch.Tensor:
    if not rgb:
        return torch.zeros((0, height, width, 3), dtype=torch.uint8)
    return torch.from_numpy(np.stack(rgb))


@dataclass(frozen=True)
class _Request:
    """What ``read_video`` was asked for (passed to a backend, and through the watchdog)."""

    start: Optional[float]
    stop: Optional[float]
    fps: Optional[float]
    max_pixels: int
    num_threads: int
    size: Optional[tuple[int, int]]
    index: Optional[FrameIndex]
    stream_index: Optional[int] = None
    max_duration_seconds: Optional[float] = None


def _read_pyav(source, label: str, request: _Request) -> VideoClip:
    import dataclasses

    start, stop, fps, max_pixels = request.start, request.stop, request.fps, request.max_pixels
    size = request.size
    container = _open(source, label)
    bad_packets: list = []  # corrupt packets dropped (VideoMetadata.decode_errors)
    try:
        stream = pick_stream(container, "video", label, stream_index=request.stream_index)
        check_time_base(stream, label)
        meta = _header_metadata(stream, backend="pyav")
        if meta.width * meta.height > max_pixels:
            raise DecodeError(
                f"{label}: {meta.width}x{meta.height} = {meta.width * meta.height} pixels is over max_pixels={max_pixels}; "
                "raise max_pixels to decode it",
                reason="too_large",
            )
        # Frame threading also for sparse sampling: FFmpeg copies ``skip_frame`` into the worker thread's context
        # when a packet is submitted (``update_context_from_user``), so a per-packet skip applies to exactly that
        # packet. Slice threading alone leaves the second core idle on x264 output (one slice per frame).
        stream.thread_type = "AUTO"
        stream.codec_context.thread_count = request.num_threads
        whole = start is None and stop is None and fps is None
        index = None if whole else (request.index or frame_index(source, container, stream))
        known = request.index if whole else None
        if known is not None and known.num_frames:  # refuse before decoding what the caller's index says is too long
            check_duration(float(known.pts_seconds[0]), known.end_seconds, known.num_frames, label, request.max_duration_seconds)
        if index is not None:
            if index.num_frames == 0:
                raise DecodeError(f"{label}: the video stream has no frames")
            first, end = float(index.pts_seconds[0]), index.end_seconds
            check_duration(first, end, index.num_frames, label, request.max_duration_seconds)
            lo = first if start is None else start
            hi = end if stop is None else stop
            check_window_overlaps(lo, hi, first, end, label=label, what="video")
        if whole:
            hint = request.index.num_frames if request.index is not None else meta.num_frames_from_header
            pts, frames = _decode_range_pyav(container, stream, -math.inf, math.inf, None, hint, size, bad_packets)
        elif fps is None:
            a, b = np.searchsorted(index.pts_seconds, [lo, hi], side="left")
            pts, frames = (
                ([], _stack([], *(size or (meta.height, meta.width))))
                if hi <= lo
                else _decode_range_pyav(container, stream, lo, hi, index, int(b - a), size, bad_packets)
            )
        else:
            count = max(0, math.ceil((hi - lo) * fps - 1e-9))
            targets = lo + np.arange(count, dtype=np.float64) / fps
            pts, frames = _decode_played_at_pyav(container, stream, targets, index, size, bad_packets)
    except (DecodeError, IndexError):
        raise
    except Exception as e:  # FFmpeg errors, corrupt data mid-stream
        raise DecodeError(f"{label}: video decode failed: {type(e).__name__}: {e}") from e
    finally:
        container.close()
    if whole and not pts:
        raise DecodeError(f"{label}: the video stream decoded to no frames (corrupt or truncated?)")
    if whole:
        check_duration(pts[0], pts[-1] + _frame_seconds_of(pts), len(pts), label, request.max_duration_seconds)
    all_pts = np.asarray(pts, dtype=np.float64) if whole else index.pts_seconds
    meta = dataclasses.replace(
        meta,
        num_frames_from_content=len(pts) if whole else index.num_frames,
        decode_errors=len(bad_packets),
        **_content_facts(all_pts),
    )
    return VideoClip(frames=frames, pts_seconds=torch.tensor(pts, dtype=torch.float64), metadata=meta)


def _frame_seconds_of(pts: list[float]) -> float:
    """The last frame's duration as the median of the others (0 for a single frame)."""
    return float(np.median(np.diff(pts))) if len(pts) > 1 else 0.0


def _read_decord(source, label: str, request: _Request) -> VideoClip:
    """decord for pixels, our demux index for time (decord's own times miss Matroska start offsets)."""
    import dataclasses
    import io

    import decord

    start, stop, fps, max_pixels, num_threads = request.start, request.stop, request.fps, request.max_pixels, request.num_threads
    meta, index = probe_video(source, name=label, stream_index=request.stream_index,
                              max_duration_seconds=request.max_duration_seconds)
    if request.index is not None:
        index = request.index
    if meta.width * meta.height > max_pixels:
        raise DecodeError(f"{label}: {meta.width}x{meta.height} is over max_pixels={max_pixels}", reason="too_large")
    try:
        handle = open_for_pyav(source)
        if isinstance(handle, io.IOBase):
            handle.seek(0)
        height, width = request.size or (-1, -1)
        reader = decord.VideoReader(handle, ctx=decord.cpu(0), num_threads=num_threads, width=width, height=height)
    except Exception as e:
        raise DecodeError(f"{label}: decord cannot open it: {e}") from e
    if len(reader) != index.num_frames:
        raise DecodeError(
            f"{label}: decord sees {len(reader)} frames, the demux index {index.num_frames}; refusing to guess times"
        )
    pts_all = index.pts_seconds
    first, end = (float(pts_all[0]), index.end_seconds) if pts_all.size else (0.0, 0.0)
    lo = first if start is None else start
    hi = end if stop is None else stop
    check_window_overlaps(lo, hi, first, end, label=label, what="video")
    if fps is None:
        a, b = int(np.searchsorted(pts_all, lo, "left")), int(np.searchsorted(pts_all, hi, "left"))
        indices = np.arange(a, b)
    else:
        count = max(0, math.ceil((hi - lo) * fps - 1e-9))
        targets = lo + np.arange(count, dtype=np.float64) / fps
        indices = frame_played_at(pts_all, targets, before_first="none")
        indices = indices[indices >= 0]
    try:
        frames = (
            torch.from_numpy(reader.get_batch(indices.tolist()).asnumpy())
            if indices.size
            else torch.zeros((0,) + tuple(request.size or (meta.height, meta.width)) + (3,), dtype=torch.uint8)
        )
    except Exception as e:
        raise DecodeError(f"{label}: decord decode failed: {e}") from e
    finally:
        del reader
    meta = dataclasses.replace(meta, backend="decord")
    return VideoClip(frames=frames, pts_seconds=torch.from_numpy(pts_all[indices].copy()), metadata=meta)


def read_video(
    source: MediaSource,
    *,
    start_seconds: Optional[float] = None,
    stop_seconds: Optional[float] = None,
    fps: Optional[float] = None,
    backend: Backend = "auto",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    num_threads: int = 0,
    frame_size: Optional[tuple[int, int]] = None,
    frame_index: Optional[FrameIndex] = None,
    name: Optional[str] = None,
    fallback_timeout_seconds: float = 60.0,
    stream_index: Optional[int] = None,
    max_duration_seconds: Optional[float] = None,
) -> VideoClip:
    """Decode video frames with their real presentation timestamps.

    Args:
        source: a path, the file's bytes (e.g. a tar member) or a binary file object.
        start_seconds: first time of the half-open window ``[start, stop)``; default: the first frame.
        stop_seconds: end of the window (excluded); default: the end of the stream.
        fps: when given, return the frame played at each time ``start + i/fps < stop`` instead of every frame.
        backend: ``"auto"`` (PyAV, decord fallback), ``"pyav"`` or ``"decord"``.
        max_pixels: refuse frames larger than this (width × height) with a DecodeError.
        num_threads: decoder threads; 0 lets FFmpeg choose.
        frame_size: ``(height, width)`` to scale frames to while converting to RGB (one swscale pass, area
            filter); None keeps the stream's size. ``max_pixels`` still applies to the stream's own size.
        frame_index: the file's :class:`FrameIndex` when already known (e.g. ``frames.json`` written by
            ``avalign preprocess``): windows and ``fps=`` seek with it instead of indexing the file.
        name: label used in error messages (e.g. the shard key) when ``source`` is bytes.
        fallback_timeout_seconds: time limit of the decord fallback of ``auto`` (run in a watchdog process).
        stream_index: the container index of the video stream to decode (``ffprobe``'s ``index``); default:
            the stream FFmpeg picks (``av_find_best_stream``), never an attached picture. Recorded in
            ``metadata.stream_index``.
        max_duration_seconds: refuse (``too_large``) a stream whose frames span longer than this; None: no limit.
            Whatever the limit, timestamps that put frames more than 10 s apart on average, or a time base
            coarser than 0.5 s, are refused as corrupt (``decode``): a broken ``mdhd`` timescale.

    Returns:
        VideoClip with ``frames`` uint8 ``[T, H, W, 3]`` and ``pts_seconds`` float64 ``[T]``.

    Raises:
        DecodeError: ANY failure caused by the file (whatever FFmpeg, PyAV or decord raised, or a crash of the
            decord fallback's process): it cannot be opened or decoded (``reason`` ``decode``), has no video
            stream (``missing_video``), or is over ``max_pixels`` / ``max_duration_seconds`` (``too_large``).
        IndexError: the window lies entirely outside the stream (the message gives the valid range).
        ValueError: a bad argument (window with stop < start, fps <= 0, unknown backend).
        FileNotFoundError, TypeError: a path that does not exist, a source of an unsupported type.

    Example:
        >>> clip = read_video("sample_data/clip00.mp4", start_seconds=1.0, stop_seconds=2.0)  # doctest: +SKIP
        >>> clip.pts_seconds[0] >= 1.0                                                          # doctest: +SKIP
    """
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend = !r}")
    _check_window(start_seconds, stop_seconds, fps)
    if frame_size is not None and (len(frame_size) != 2 or min(frame_size) <= 0):
        raise ValueError(f"frame_size must be (height, width) > 0, got {frame_size = }")
    if stream_index is not None and (isinstance(stream_index, bool) or not isinstance(stream_index, int) or stream_index < 0):
        raise ValueError(f"stream_index must be an int >= 0 or None, got {stream_index = !r}")
    if max_duration_seconds is not None and not max_duration_seconds > 0:
        raise ValueError(f"max_duration_seconds must be > 0 or None, got {max_duration_seconds = !r}")
    check_source(source)
    label = describe_source(source, name)
    size = None if frame_size is None else (int(frame_size[0]), int(frame_size[1]))
    request = _Request(start_seconds, stop_seconds, fps, max_pixels, num_threads, size, frame_index, stream_index,
                       max_duration_seconds)
    args = (source, label, request)
    if backend == "decord":
        return _guarded(_read_decord, *args)
    if backend == "pyav":
        return _guarded(_read_pyav, *args)
    try:
        return _guarded(_read_pyav, *args)
    except DecodeError as first_error:
        if first_error.reason in ("too_large", "missing_video"):
            raise
        logger.warning("%s: PyAV failed (%s); trying decord", label, first_error)
        from loaders._watchdog import call_with_timeout

        try:
            # decord can hang on files FFmpeg itself rejects (decord #373), or crash: only ever in the watchdog.
            return call_with_timeout(_guarded, _read_decord, *args, timeout_seconds=fallback_timeout_seconds, label=label)
        except Exception as second_error:  # noqa: BLE001 - the fallback failing leaves PyAV's error the one to report
            logger.debug("%s: decord fallback failed too: %s: %s", label, type(second_error).__name__, second_error)
            raise first_error from None


def _guarded(read, source, label: str, request: _Request) -> VideoClip:
    """``read(source, label, request)`` with every failure of the file as a DecodeError (the window's
    IndexError passes: it is about the request)."""
    try:
        return read(source, label, request)
    except (DecodeError, IndexError):
        raise
    except MemoryError as e:
        raise DecodeError(f"{label}: out of memory decoding the video ({e}); try frame_size= or fps=", reason="too_large") from e
    except Exception as e:  # noqa: BLE001 - FFmpeg/PyAV/decord errors, AttributeError on corrupt headers, bad pts
        raise DecodeError(f"{label}: video decode failed: {type(e).__name__}: {e}") from e
