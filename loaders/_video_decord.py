"""The decord backend of ``read_video`` (optional; ``auto`` falls back to it, in a watchdog process, when the
default backend fails on a file): decord's pixels with the times of our own frame index, because decord reports
Matroska times from zero and fails on VP9/WebM.

A stream with a display rotation (:mod:`loaders._rotation`) is refused with a DecodeError naming the file and the
degrees: decord 0.6 sizes its output from the rotation but turns the pixels only at 180 degrees, and then fails
(90/270: "size must exactly match") or returns stretched frames (90/270 with a size given); its rotation comes from
the old ``rotate`` tag, not the display matrix FFmpeg attaches to frames.

FFmpeg's own log lines ("[h264 @ 0x...] ...", "[mov,mp4,m4a,3gp,3g2,mj2 @ 0x...] ...") are switched off, as PyAV
and torchcodec have them by default: decord links its own FFmpeg (``decord.libs/libavutil``, not PyAV's), whose
default callback prints every decoder complaint on a damaged file straight to stderr. ``decord.logging.set_level``
is the one knob decord offers (no callback to route the lines to Python logging); it sets the level of decord's
FFmpeg only, for the whole process, which is why it is set at each read rather than at import. What the user needs
is in the DecodeError instead: the file, and decord's error without its build-path prefixes (:func:`_decord_error`)."""
from __future__ import annotations

import logging
import math
import re

import numpy as np
import torch

from avcore import DecodeError, VideoClip, check_window_overlaps, frame_played_at
from loaders._source import open_for_pyav
from loaders._video_meta import VideoRequest, probe_video

logger = logging.getLogger(__name__)

__all__ = ["read_decord"]

# dmlc's prefix on every decord error: "[09:27:49] /github/workspace/src/video/ffmpeg/threaded_decoder.cc:218: "
_DMLC_PREFIX = re.compile(r"\[\d\d:\d\d:\d\d\] \S+?:\d+: ")


def _decord_error(error: Exception) -> str:
    """decord's error message without dmlc's timestamp and build-path prefixes (they may repeat, one per rethrow)."""
    return _DMLC_PREFIX.sub("", str(error)).strip() or type(error).__name__


def read_decord(source, label: str, request: VideoRequest) -> VideoClip:
    """decord for pixels, our demux index for time (decord's own times miss Matroska start offsets)."""
    import dataclasses
    import io

    import decord

    decord.logging.set_level(decord.logging.QUIET)  # its own FFmpeg's stderr lines; see the module docstring
    start, stop, fps, max_pixels, num_threads = request.start, request.stop, request.fps, request.max_pixels, request.num_threads
    meta, index = probe_video(source, name=label, stream_index=request.stream_index,
                              max_duration_seconds=request.max_duration_seconds)
    if request.index is not None:
        index = request.index
    if meta.width * meta.height > max_pixels:
        raise DecodeError(f"{label}: {meta.width}x{meta.height} is over max_pixels={max_pixels}", reason="too_large")
    if meta.rotation_degrees:
        raise DecodeError(f"{label}: its display matrix turns the frames by {meta.rotation_degrees} degrees, which the "
                          "decord backend cannot apply exactly; use backend='pyav' (or 'torchcodec')")
    try:
        handle = open_for_pyav(source)
        if isinstance(handle, io.IOBase):
            handle.seek(0)
        height, width = request.size or (-1, -1)
        reader = decord.VideoReader(handle, ctx=decord.cpu(0), num_threads=num_threads, width=width, height=height)
    except Exception as e:
        raise DecodeError(f"{label}: decord cannot open it: {_decord_error(e)}") from e
    if len(reader) != index.num_frames:
        raise DecodeError(
            f"{label}: decord sees {len(reader)} frames, the demux index {index.num_frames}; refusing to guess times"
        )
    pts_all = index.pts_seconds
    first, end = (float(pts_all[0]), index.end_seconds) if pts_all.size else (0.0, 0.0)
    lo = first if start is None else start
    hi = end if stop is None else stop
    check_window_overlaps(lo, math.inf if stop is None else hi, first, end, label=label, what="video")
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
        raise DecodeError(f"{label}: decord decode failed: {_decord_error(e)}") from e
    finally:
        del reader
    meta = dataclasses.replace(meta, backend="decord")
    return VideoClip(frames=frames, pts_seconds=torch.from_numpy(pts_all[indices].copy()), metadata=meta)
