"""``read_video``: frames with their real presentation timestamps.

Timestamps are FFmpeg's *best-effort* timestamps (what ffprobe prints as ``best_effort_timestamp_time``
and what players show), never ``k / fps``::

    container pts   0.000  0.033  0.067  0.100 ...      (30 fps)     0.021  0.054 ...  (Matroska, start 21 ms)
    frame index     0      1      2      3                           0      1
    k / fps         0.000  0.033  0.067  0.100          wrong by ->  21 ms on every frame

Windows are half-open: ``read_video(src, start_seconds=a, stop_seconds=b)`` returns the frames with
``a <= pts < b``. ``fps=N`` returns, for each time ``t = a + i/N < b`` of a grid, the frame *played* at
``t`` (the last frame with ``pts <= t``); the PyAV backend decodes only the GOPs that hold those frames,
skipping every non-reference frame that is not an answer, with FFmpeg's frame threads (a skip is set per
packet, and frame threading applies it to that packet). Windows and ``fps=`` locate frames with the file's frame index
(:func:`loaders._index.frame_index`: from the MP4 header where exact, else a demux scan; cached per path).

Stream: the one FFmpeg picks by default (``av_find_best_stream``; never an attached picture), or
``stream_index=``; recorded in ``metadata.stream_index``. Times that break presentation order (``stts``
deltas of 0, DivX packed B-frames, a last frame without a timestamp) are repaired by one rule
(:func:`strictly_increasing`, PyAV backend); headers whose timescale cannot time the frames are refused.

Backends, one module each: ``pyav`` (:mod:`loaders._video_pyav`, FFmpeg through PyAV: frame threading, exact
skipping), ``torchcodec`` (:mod:`loaders._video_torchcodec`, its ``VideoDecoder`` in exact mode) and ``decord``
(:mod:`loaders._video_decord`, optional: decord's pixels with our index's times, because decord reports Matroska
times from zero and fails on VP9/WebM). Shared facts and checks: :mod:`loaders._video_meta`. ``auto`` uses the
backend measured fastest among the exact ones for the kind of read (:data:`AUTO_BACKEND`, BENCHMARKS.md's
decision table), and falls back to ``decord`` in a watchdog process when it fails on a file it could open (a container
FFmpeg cannot read is refused at once: decord reads it with FFmpeg too).
"""
from __future__ import annotations

import logging
import math
from typing import Literal, Optional

from avcore import DecodeError, VideoClip
from loaders import _video_decord, _video_pyav, _video_torchcodec
from loaders._index import FrameIndex
from loaders._source import MediaSource, check_source, decode_failure, describe_source
from loaders._truncated import check_not_truncated
from loaders._video_meta import DEFAULT_MAX_PIXELS, VideoRequest, probe_video
from loaders._video_pyav import strictly_increasing

logger = logging.getLogger(__name__)

__all__ = ["AUTO_BACKEND", "DEFAULT_MAX_PIXELS", "probe_video", "read_video", "strictly_increasing"]

Backend = Literal["auto", "pyav", "torchcodec", "decord"]
_BACKENDS = ("auto", "pyav", "torchcodec", "decord")
ReadKind = Literal["full", "window", "fps"]
AUTO_BACKEND: dict[ReadKind, str] = {"full": "pyav", "window": "pyav", "fps": "pyav"}
"""The backend ``auto`` uses for each kind of read: ``full`` (no window, no fps), ``window`` (start/stop, every
frame) and ``fps`` (frames played at a grid of times). Decided by measurement (BENCHMARKS.md, "Video backend
decision"): the fastest backend that passes every ffprobe-oracle test."""


def _reader(backend: str):
    """The read function of a backend, looked up in its module at call time (tests replace them)."""
    module = {"pyav": _video_pyav, "torchcodec": _video_torchcodec, "decord": _video_decord}[backend]
    return getattr(module, f"read_{backend}")


def _check_window(start_seconds: Optional[float], stop_seconds: Optional[float], fps: Optional[float]) -> None:
    for name, value in (("start_seconds", start_seconds), ("stop_seconds", stop_seconds), ("fps", fps)):
        if value is not None and not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {name} = {value!r}")
    if start_seconds is not None and stop_seconds is not None and stop_seconds < start_seconds:
        raise ValueError(f"window must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    if fps is not None and fps <= 0:
        raise ValueError(f"fps must be > 0, got {fps = }")


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
        backend: ``"auto"`` (the measured fastest exact backend for this kind of read, :data:`AUTO_BACKEND`;
            decord fallback), ``"pyav"``, ``"torchcodec"`` or ``"decord"``.
        max_pixels: refuse frames larger than this (width × height) with a DecodeError.
        num_threads: decoder threads; 0 lets FFmpeg choose.
        frame_size: ``(height, width)`` to scale frames to while converting to RGB (one swscale pass, area
            filter), as displayed (after the display rotation); None keeps the stream's size. ``max_pixels`` still
            applies to the stream's own size.
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
        VideoClip with ``frames`` uint8 ``[T, H, W, 3]`` and ``pts_seconds`` float64 ``[T]``. Frames are as
        displayed: a display matrix's rotation (a phone clip's) is applied as the ffmpeg CLI autorotates and recorded
        in ``metadata.rotation_degrees`` (:mod:`loaders._rotation`; the decord backend refuses such a stream). The PyAV backend
        takes large results' memory from the process's :data:`loaders.media.result_pool`: memory of an earlier
        result that has been freed entirely (no tensor, view or array of it left) is reused.

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
    check_not_truncated(source, label)
    size = None if frame_size is None else (int(frame_size[0]), int(frame_size[1]))
    request = VideoRequest(start_seconds, stop_seconds, fps, max_pixels, num_threads, size, frame_index, stream_index,
                       max_duration_seconds)
    args = (source, label, request)
    if backend != "auto":
        return _guarded(_reader(backend), *args)
    kind = "full" if start_seconds is None and stop_seconds is None and fps is None else ("window" if fps is None else "fps")
    chosen = AUTO_BACKEND[kind]
    try:
        return _guarded(_reader(chosen), *args)
    except DecodeError as first_error:
        if first_error.reason in ("too_large", "missing_video") or getattr(first_error, "container_unreadable", False):
            raise  # decord (FFmpeg too) opened none of 23 containers PyAV could not, in 176 corrupt mutants (BENCHMARKS.md)
        logger.warning("%s: %s failed (%s); trying decord", label, chosen, first_error)
        from loaders._watchdog import call_with_timeout

        try:
            # decord can hang on files FFmpeg itself rejects (decord #373), or crash: only ever in the watchdog.
            return call_with_timeout(_guarded, _reader("decord"), *args, timeout_seconds=fallback_timeout_seconds, label=label)
        except Exception as second_error:  # noqa: BLE001 - the fallback failing leaves PyAV's error the one to report
            logger.debug("%s: decord fallback failed too: %s: %s", label, type(second_error).__name__, second_error)
            raise first_error from None


def _guarded(read, source, label: str, request: VideoRequest) -> VideoClip:
    """``read(source, label, request)`` with every failure of the file as a DecodeError (the window's
    IndexError passes: it is about the request)."""
    try:
        return read(source, label, request)
    except (DecodeError, IndexError):
        raise
    except MemoryError as e:
        raise DecodeError(f"{label}: out of memory decoding the video ({e}); try frame_size= or fps=", reason="too_large") from e
    except Exception as e:  # noqa: BLE001 - FFmpeg/PyAV/decord errors, AttributeError on corrupt headers, bad pts
        raise DecodeError(f"{label}: video decode failed: {decode_failure(e)}") from e
