"""The PyAV backend of ``read_video``: FFmpeg through PyAV, frame threading, exact skipping.

Timestamps are FFmpeg's *best-effort* timestamps (``best_effort_timestamp_time`` in ffprobe), made strictly
increasing by one repair rule (:func:`strictly_increasing`). Windows and ``fps=`` locate frames with the file's
frame index (:func:`loaders._index.frame_index`) and seek to the keyframe before (a seek is used only when its
first frame is shown to be at or before the target, :class:`_Seeker`: MPEG-TS/PS seek by decode time and land late);
``fps=`` decodes only the GOPs that hold the answers and skips every non-reference frame that is not one (a skip is
set per packet, and frame threading applies it to that packet). RGB conversion (and scaling) runs on a helper thread
while the decoder's threads go on.
"""
from __future__ import annotations

import itertools
import logging
import math
from typing import Iterator, Optional

import numpy as np
import torch

from avcore import DecodeError, VideoClip, check_window_overlaps, frame_played_at, seconds_to_ticks, ticks_to_seconds
from loaders._index import FrameIndex, frame_index
from loaders._pages import PagePopulator
from loaders._result_pool import check_fits, result_pool
from loaders._rotation import FrameTurner, coded_size, frame_rotation_degrees
from loaders._source import decode_failure, pick_stream
from loaders._video_meta import (VideoRequest, check_duration, check_time_base, content_facts, displayed,
                                 first_frame_rotation, frame_seconds, header_metadata, open_video)

logger = logging.getLogger(__name__)

__all__ = ["read_pyav", "strictly_increasing"]

_SEEK_RETRIES = 3
"""Keyframes tried before a target when a seek lands after it, before falling back to the stream start."""

_BEFORE_START_SECONDS = 3600.0
"""How far before ``stream.start_time`` :func:`_seek_to_start` aims (decode times precede presentation times)."""


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



class _RGB:
    """Frame → RGB24 array, as displayed, with one reusable swscale context per decode.

    ``frame.to_ndarray(format="rgb24")`` builds a new conversion context for every frame, several times the cost
    of a reused ``VideoReformatter`` (BENCHMARKS.md, Lab notes). Not shared between calls or threads.
    ``size`` is the displayed ``(height, width)``. A stream with a display rotation (:meth:`orient`, from the first
    frame) has each frame turned in YUV by :class:`~loaders._rotation.FrameTurner` before the conversion and
    scaling, as the ffmpeg CLI autorotates.
    """

    def __init__(self, size: Optional[tuple[int, int]] = None) -> None:
        from av.video.reformatter import VideoReformatter

        self._reformatter = VideoReformatter()
        self.size = size
        """The displayed ``(height, width)`` asked for (None: the stream's own)."""
        self.rotation_degrees: Optional[int] = None
        """Set by :meth:`orient` (None until the first frame is seen)."""
        self._turn = None

    def orient(self, first_frame, rotation_degrees: int) -> None:
        self.rotation_degrees = rotation_degrees
        self._turn = FrameTurner(first_frame, rotation_degrees) if rotation_degrees else None

    def __call__(self, frame) -> np.ndarray:
        if self._turn is not None:
            frame = self._turn(frame)
        if self.size is None:
            return self._reformatter.reformat(frame, format="rgb24").to_ndarray()
        height, width = self.size
        # One swscale pass converts and scales ("area" averaging: the right filter for downscaling).
        return self._reformatter.reformat(frame, format="rgb24", width=width, height=height, interpolation="AREA").to_ndarray()


class _FrameBuffer:
    """Frames written straight into one preallocated uint8 tensor, grown by doubling.

    Measured: ``np.stack`` of per-frame arrays doubles the memory traffic of a full 720p decode
    (a second 830 MB allocation and copy for 10 s); writing into a buffer sized from the header does not.
    The header's count is only a hint, capped, since a hostile header may claim billions of frames. A count from a
    frame index (``trusted``: one entry per packet of the file) is where the buffer grows to when it first fills (then
    doubling again): a 2 h decode at estimation size otherwise doubles its way to up to twice the result (36,000
    frames in a 65,536-frame buffer, 604 MB for 330 MB) and leaves the outgrown buffers idle in the result pool. The
    first allocation stays capped, so an index of another, longer file (a caller's mistake) costs nothing on a
    short clip.
    The tensor comes from :data:`loaders._result_pool.result_pool` (memory of freed large results is reused).
    With ``populate``, fresh memory is populated ahead of the writer by a :class:`PagePopulator`
    (a writer calls :meth:`wait_ready` before writing a slot; :meth:`close` when done).
    """

    _MAX_HINT_FRAMES = 2048

    def __init__(self, hint: Optional[int], height: int, width: int, *, populate: bool = True,
                 trusted: bool = False) -> None:
        capacity = min(max(int(hint or 0), 16), self._MAX_HINT_FRAMES)
        self._grow_to = int(hint or 0) if trusted else 0
        self._populate = populate
        self._frame_bytes = height * width * 3
        self._populator: Optional[PagePopulator] = None
        self._data = self._allocate(capacity, height, width)
        self._count = 0

    def _allocate(self, capacity: int, height: int, width: int) -> torch.Tensor:
        data, reused = result_pool.empty((capacity, height, width, 3))
        self.close()
        if self._populate and not reused:  # reused memory is already populated
            self._populator = PagePopulator(data)
        return data

    def orient(self, rotation_degrees: int, *, sized: bool) -> None:
        """Before the first write: a buffer sized from the stored frame (``sized`` False: no ``frame_size``) takes
        the displayed shape, ``[H, W]`` swapped at 90/270 degrees (same bytes, a view)."""
        if self._count or sized or rotation_degrees % 180 == 0:
            return
        capacity, height, width, _ = self._data.shape
        self._data = self._data.view(capacity, width, height, 3)

    @property
    def full(self) -> bool:
        return self._count == self._data.shape[0]

    def grow(self) -> None:
        """Grow to the trusted count if the buffer is smaller, else double (no write may be in flight: views of the
        old storage become stale)."""
        capacity = int(self._data.shape[0])
        grown = self._allocate(self._grow_to if self._grow_to > capacity else 2 * capacity, *self._data.shape[1:3])
        self.wait_ready(self._count)
        grown[: self._count] = self._data[: self._count]
        self._data = grown

    @property
    def count(self) -> int:
        """Frames written (or being written) so far."""
        return self._count

    def take_slot(self) -> tuple[torch.Tensor, int]:
        """The ``[H, W, 3]`` view the next frame goes to, and its row number."""
        slot = self._data[self._count]
        self._count += 1
        return slot, self._count - 1

    def wait_ready(self, row: int) -> None:
        """Block until the memory of rows ``[0, row]`` is populated (or populating is over)."""
        if self._populator is not None:
            self._populator.wait_for((row + 1) * self._frame_bytes)

    def close(self) -> None:
        """Stop populating memory (idempotent)."""
        if self._populator is not None:
            self._populator.close()
            self._populator = None

    def tensor(self) -> torch.Tensor:
        self.close()
        out = self._data[: self._count]
        return out.clone() if self._count < self._data.shape[0] // 2 else out


class _RGBWriter:
    """Converts decoded frames to RGB into a :class:`_FrameBuffer` on one helper thread.

    The decoder (FFmpeg's own threads, driven from this thread) and the conversion + copy then overlap
    (swscale and torch's copy release the GIL; the gain: BENCHMARKS.md, Lab notes). At most ``depth`` frames
    are in flight, which bounds the memory held by decoded frames.
    """

    def __init__(self, buffer: _FrameBuffer, rgb: "_RGB", *, label: str = "", depth: int = 8) -> None:
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        self._buffer, self._rgb, self._depth, self._label = buffer, rgb, depth, label
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="avalign-rgb")
        self._pending: "deque" = deque()

    def _convert(self, frame, slot: torch.Tensor, row: int) -> None:
        array = self._rgb(frame)
        if array.shape != tuple(slot.shape):
            raise DecodeError(f"frame size changed mid-stream: {tuple(slot.shape)} -> {array.shape}")
        self._buffer.wait_ready(row)
        slot.numpy()[...] = array  # numpy: single-threaded, GIL released (torch.copy_ would start OpenMP threads)

    def put(self, frame) -> None:
        if self._rgb.rotation_degrees is None:  # the first frame: its display matrix sets the output's orientation
            rotation = frame_rotation_degrees(frame, self._label)
            self._rgb.orient(frame, rotation)
            self._buffer.orient(rotation, sized=self._rgb.size is not None)
        if self._buffer.full:
            self.drain()
            self._buffer.grow()
        self._pending.append(self._pool.submit(self._convert, frame, *self._buffer.take_slot()))
        if len(self._pending) > self._depth:
            self._pending.popleft().result()

    def drain(self) -> None:
        while self._pending:
            self._pending.popleft().result()

    def close(self) -> None:
        for future in self._pending:
            future.cancel()
        self._pool.shutdown(wait=True)
        self._buffer.close()


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

    return strictly_increasing(raw(), frame_seconds(stream))


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


def _seek_to_start(container, stream) -> None:
    """Seek to the stream's first packet: a target well before every timestamp (demuxers that seek by decode
    time, MPEG-TS and MPEG-PS, land *after* the first keyframe when asked for ``stream.start_time``, which is its
    presentation time). A demuxer that refuses a target before 0 (AVI: ``EPERM``; its timestamps start at 0 or
    later) is asked for 0 instead."""
    import av

    low = (stream.start_time or 0) - seconds_to_ticks(_BEFORE_START_SECONDS, stream.time_base)
    try:
        container.seek(low, stream=stream, backward=True, any_frame=False)
    except av.error.FFmpegError:
        if low >= 0:
            raise
        container.seek(0, stream=stream, backward=True, any_frame=False)


class _Seeker:
    """Timed frames from a seek point shown to be at or before the target, so that no frame at or after the target
    is ever missed.

    A seek is taken only when the first frame it decodes is at or before the target (or is the stream's first
    frame). Demuxers that seek by decode timestamps land late: AVI with B-frames (asking for the keyframe presented
    at 1.48 s can land on the next one, presented at 1.6 s), and MPEG-TS / MPEG-PS with B-frames, where every seek
    to a keyframe's presentation time lands on a packet after it, so decoding starts at the *next* keyframe (none:
    no frame at all)::

        decode order   I(pts 0.10, dts 0.03)  P(0.20, 0.07)  B(0.13, 0.10)  B(0.17, 0.13)  ...  I(1.10) ...
        seek to 0.10   lands on B(dts 0.10)  ->  first decoded frame: I at 1.10 > target: rejected

    Then earlier keyframes are tried, then the start of the stream (:func:`_seek_to_start`), and when even that
    cannot be shown to start at the first frame, the container is opened again (``reopen``) and decoded from the
    beginning without seeking: the frames are then those of a full decode. How far back the last accepted seek had
    to go is remembered for the next one (a demuxer that lands late lands late every time).
    """

    def __init__(self, container, stream, index: FrameIndex, reopen, bad_packets: Optional[list] = None,
                 label: str = "") -> None:
        self._container, self._stream, self._index, self._label = container, stream, index, label
        self._reopen = reopen
        self._bad_packets = bad_packets
        self._back = 0  # keyframes before the target's own that the last accepted seek needed
        self._opened: list = []  # containers opened by ``reopen``, closed by :meth:`close`
        self._first_seconds = float(index.pts_seconds[0]) + 0.5 * frame_seconds(stream)

    def _decode(self, container, stream, needed_ticks: Optional[frozenset]) -> Iterator[tuple[float, object]]:
        return _timed(_decode_packets(container, stream, needed_ticks, self._bad_packets), stream)

    def frames_from(self, seconds: float, needed_ticks: Optional[frozenset] = None) -> Iterator[tuple[float, object]]:
        container, stream = self._container, self._stream
        keys = self._index.keyframe_pts_seconds
        before = [float(k) for k in keys[keys <= seconds][::-1]]
        first_try = min(self._back, len(before))
        candidates: list[Optional[int]] = list(range(first_try, min(first_try + _SEEK_RETRIES, len(before)))) + [None]
        for back in candidates:
            if back is None:
                _seek_to_start(container, stream)
            else:
                container.seek(seconds_to_ticks(before[back], stream.time_base), stream=stream, backward=True, any_frame=False)
            frames = self._decode(container, stream, needed_ticks)
            first = next(frames, None)
            if first is not None and first[0] <= max(seconds + 1e-9, self._first_seconds if back is None else -math.inf):
                self._back = len(before) if back is None else back
                return itertools.chain([first], frames)
            logger.debug("seek for %.6f s (keyframe %s) landed at %s: trying further back", seconds,
                         "start" if back is None else f"{before[back]:.6f} s", "no frame" if first is None else f"{first[0]:.6f} s")
        logger.info("%s: no seek lands at or before %.6f s; decoding from the start of a fresh open", self._label, seconds)
        fresh = self._reopen()
        self._opened.append(fresh)
        fresh_stream = fresh.streams[stream.index]
        fresh_stream.thread_type = stream.thread_type
        fresh_stream.codec_context.thread_count = stream.codec_context.thread_count
        self._back = len(before)
        return self._decode(fresh, fresh_stream, needed_ticks)

    def close(self) -> None:
        for container in self._opened:
            container.close()
        self._opened.clear()


def _index_fits_stream(index: Optional[FrameIndex], meta) -> bool:
    """Whether a caller's frame index plausibly belongs to this stream, so that its count may size the decode buffer
    (:class:`_FrameBuffer`): its span within a factor 1.5 (and 1 s) of the header's duration, else its count within a
    factor 1.5 of the header's frame count; with neither in the header, trusted. An index of another, longer file then
    leaves the buffer to grow by doubling."""
    if index is None or not index.num_frames:
        return False
    span = index.end_seconds - float(index.pts_seconds[0])
    duration, count = meta.duration_seconds_from_header, meta.num_frames_from_header
    if duration:
        return span <= 1.5 * duration + 1.0 and duration <= 1.5 * span + 1.0
    if count:
        return index.num_frames <= 1.5 * count and count <= 1.5 * index.num_frames
    return True


def _decode_range_pyav(container, stream, start: float, stop: float, seeker: Optional[_Seeker], hint: Optional[int],
                       rgb: "_RGB", bad_packets: Optional[list] = None, label: str = "", *, trusted_hint: bool = False):
    """Frames with ``start <= pts < stop`` in presentation order: (pts_seconds list, uint8 tensor [T, H, W, 3]),
    as displayed (``rgb`` learns the rotation from the first frame). Without a ``seeker``, decodes from the
    container's current position. ``hint``: the expected frame count, from a frame index when ``trusted_hint``
    (:class:`_FrameBuffer`)."""
    if seeker is None:
        frames = _timed(_decode_packets(container, stream, None, bad_packets), stream)
    else:
        frames = seeker.frames_from(start)
    pts_out: list[float] = []
    height, width = rgb.size or (stream.codec_context.height, stream.codec_context.width)
    buffer = _FrameBuffer(hint, height, width, trusted=trusted_hint)
    writer = _RGBWriter(buffer, rgb, label=label)
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


def _decode_played_at_pyav(stream, targets: np.ndarray, index: FrameIndex, seeker: _Seeker, rgb: "_RGB",
                           label: str = ""):
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
    height, width = rgb.size or (stream.codec_context.height, stream.codec_context.width)
    buffer = _FrameBuffer(len(targets), height, width)
    writer = _RGBWriter(buffer, rgb, label=label)
    pts_out: list[float] = []
    rows: list[int] = []  # the buffer row of each answer (consecutive targets may share one frame)
    last: Optional[float] = None
    try:
        for t in targets:
            keyframe = index.keyframe_at_or_before(float(t))
            if frames is None or keyframe > position + 1e-9:
                frames = seeker.frames_from(float(t), needed)
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


def read_pyav(source, label: str, request: VideoRequest) -> VideoClip:
    import dataclasses

    start, stop, fps, max_pixels = request.start, request.stop, request.fps, request.max_pixels
    size = request.size
    container = open_video(source, label)
    bad_packets: list = []  # corrupt packets dropped (VideoMetadata.decode_errors)
    rgb = _RGB(size)
    seeker: Optional[_Seeker] = None
    try:
        stream = pick_stream(container, "video", label, stream_index=request.stream_index)
        check_time_base(stream, label)
        meta = header_metadata(stream, backend="pyav", label=label)
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
            check_window_overlaps(lo, math.inf if stop is None else hi, first, end, label=label, what="video")
            seeker = _Seeker(container, stream, index, lambda: open_video(source, label), bad_packets, label)
        if whole:
            hint = request.index.num_frames if request.index is not None else meta.num_frames_from_header
            pts, frames = _decode_range_pyav(container, stream, -math.inf, math.inf, None, hint, rgb, bad_packets, label,
                                             trusted_hint=_index_fits_stream(request.index, meta))
        elif fps is None:
            a, b = np.searchsorted(index.pts_seconds, [lo, hi], side="left")
            pts, frames = (
                ([], _stack([], *(size or (meta.height, meta.width))))
                if hi <= lo
                else _decode_range_pyav(container, stream, lo, hi, seeker, int(b - a), rgb, bad_packets, label,
                                        trusted_hint=_index_fits_stream(index, meta))
            )
        else:
            count = max(0, math.ceil((hi - lo) * fps - 1e-9))
            height, width = size or (stream.codec_context.height, stream.codec_context.width)
            check_fits(count * height * width * 3)  # a frame per grid time, repeats included; before the grid itself
            targets = lo + np.arange(count, dtype=np.float64) / fps
            pts, frames = _decode_played_at_pyav(stream, targets, index, seeker, rgb, label)
        rotation = rgb.rotation_degrees
        if rotation is None and not whole:  # no frame decoded (an empty window): the first frame of the stream says
            _seek_to_start(container, stream)
            rotation = first_frame_rotation(container, stream, label)
            if size is None and frames.shape[0] == 0:
                frames = frames.reshape((0,) + coded_size((meta.height, meta.width), rotation) + (3,))
    except (DecodeError, IndexError, MemoryError):  # MemoryError: read_video's guard makes it reason 'too_large'
        raise
    except Exception as e:  # FFmpeg errors, corrupt data mid-stream
        raise DecodeError(f"{label}: video decode failed: {decode_failure(e)}") from e
    finally:
        if seeker is not None:
            seeker.close()
        container.close()
    if whole and not pts:
        raise DecodeError(f"{label}: the video stream decoded to no frames (corrupt or truncated?)")
    if whole:
        check_duration(pts[0], pts[-1] + _frame_seconds_of(pts), len(pts), label, request.max_duration_seconds)
    all_pts = np.asarray(pts, dtype=np.float64) if whole else index.pts_seconds
    meta = dataclasses.replace(
        displayed(meta, rotation or 0),
        num_frames_from_content=len(pts) if whole else index.num_frames,
        decode_errors=len(bad_packets),
        **content_facts(all_pts),
    )
    return VideoClip(frames=frames, pts_seconds=torch.tensor(pts, dtype=torch.float64), metadata=meta)


def _frame_seconds_of(pts: list[float]) -> float:
    """The last frame's duration as the median of the others (0 for a single frame)."""
    return float(np.median(np.diff(pts))) if len(pts) > 1 else 0.0
