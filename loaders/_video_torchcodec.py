"""The torchcodec backend of ``read_video``: torchcodec's ``VideoDecoder`` in exact seek mode, times from its
frame metadata.

torchcodec (Meta's decoder, in the lock) has the rules ``read_video`` promises: ``get_frames_played_in_range``
returns the frames with ``start <= pts < stop`` and ``get_frames_played_at`` the frame on screen at each time
(the last one with ``pts <= t``). Header facts, the frame index (for ``fps_from_content``, ``vfr`` and the
window checks) and the refusals come from :func:`loaders._video_meta.probe_video`, as for every backend.
Differences from the PyAV backend, by construction:

- times are torchcodec's (FFmpeg's best-effort pts), *not* repaired by
  :func:`loaders._video_pyav.strictly_increasing`: a stream with ``stts`` deltas of 0 or DivX packed
  B-frames keeps its repeated times (PyAV's rule spaces them by one frame);
- ``frame_size`` is applied after decoding (``torch.nn.functional.interpolate``, area filter), not by swscale
  while converting: the pixels differ from the PyAV backend's by rounding;
- a corrupt packet is an error (the PyAV backend drops it and counts it in ``decode_errors``);
- ``get_frames_played_in_range(a, b)`` also returns the frame on screen at ``a`` (pts < a); it is dropped here;
- torchcodec 0.9 ignores the display matrix: frames are turned here (:func:`loaders._rotation.rotate_frames`, the
  rotation from :func:`~loaders._video_meta.probe_video`), after scaling to the stored orientation (area pooling
  commutes with a quarter turn, so the pixels equal those of turning first).

It fails the ffprobe-oracle tests on AVI with B-frames (no frame or the wrong frame), on zero ``stts`` deltas,
on MPEG-4 packed B-frames and on a corrupt packet (BENCHMARKS.md, "Video backend decision"), so it is an
opt-in backend (``backend="torchcodec"``); ``auto`` uses the measured fastest *exact* backend
(:data:`loaders._video.AUTO_BACKEND`).
"""
from __future__ import annotations

import dataclasses
import logging
import math
import os
from typing import Optional

import numpy as np
import torch

from avcore import DecodeError, VideoClip, check_window_overlaps, frame_played_at
from loaders._rotation import coded_size, rotate_frames
from loaders._video_meta import VideoRequest, content_facts, probe_video

logger = logging.getLogger(__name__)

__all__ = ["read_torchcodec"]


def _source_for_torchcodec(source):
    """What ``VideoDecoder`` takes: a path string, bytes or a seekable file object (rewound)."""
    if isinstance(source, os.PathLike):
        return os.fspath(source)
    if isinstance(source, (bytearray, memoryview)):
        return bytes(source)
    if hasattr(source, "seek"):
        source.seek(0)
    return source


def _resized(frames: torch.Tensor, size: Optional[tuple[int, int]]) -> torch.Tensor:
    """``[T, H, W, 3]`` uint8 scaled to ``size`` = (height, width) with the area filter (None: unchanged)."""
    if size is None or tuple(frames.shape[1:3]) == tuple(size):
        return frames
    if frames.shape[0] == 0:
        return torch.zeros((0, size[0], size[1], 3), dtype=torch.uint8)
    nchw = frames.permute(0, 3, 1, 2).float()
    out = torch.nn.functional.interpolate(nchw, size=size, mode="area").round_().clamp_(0, 255).to(torch.uint8)
    return out.permute(0, 2, 3, 1).contiguous()


def _expected_times(index, lo: float, hi: float, fps: Optional[float], targets: Optional[np.ndarray]) -> np.ndarray:
    """The times the frame index says a window (``fps`` None) or a grid of ``targets`` must return."""
    pts = index.pts_seconds
    if fps is None:
        return pts[(pts >= lo) & (pts < hi)] if hi > lo else pts[:0]
    played = frame_played_at(pts, targets, before_first="none")
    return pts[played[played >= 0]]


def _check_times(got: np.ndarray, expected: np.ndarray, label: str) -> None:
    """Refuse frames at other times than the frame index's: torchcodec's seek lands late on demuxers that seek by
    decode time (MPEG-TS / MPEG-PS with B-frames) and returns later frames, or repeats, without an error."""
    distinct = np.unique(expected)  # fps= repeats a frame where the grid is finer than the frames
    tolerance = max(1e-6, 0.5 * float(np.median(np.diff(distinct)))) if distinct.size > 1 else 1e-3
    if got.shape != expected.shape or (got.size and float(np.abs(got - expected).max()) > tolerance):
        first = f"{got[0]:.6f} s" if got.size else "none"
        want = f"{expected[0]:.6f} s" if expected.size else "none"
        raise DecodeError(
            f"{label}: torchcodec returned {got.size} frame(s) (first {first}) where the file's frame index has "
            f"{expected.size} (first {want}): its seek does not land before the target in this file (MPEG-TS/PS with "
            "B-frames?); use backend='pyav' (or 'auto')")


def read_torchcodec(source, label: str, request: VideoRequest) -> VideoClip:
    """``read_video`` with torchcodec's decoder; contract and errors as ``read_video``'s. torchcodec's own errors
    (``RuntimeError``) become a DecodeError naming the file, with the PyAV backend as the hint."""
    try:
        return _read_torchcodec(source, label, request)
    except RuntimeError as e:
        raise DecodeError(f"{label}: torchcodec failed: {e}; use backend='pyav' (or 'auto'), which decodes what FFmpeg "
                          "decodes (e.g. MPEG-TS/PS with B-frames, where torchcodec's seeks land late)") from e


def _read_torchcodec(source, label: str, request: VideoRequest) -> VideoClip:
    from torchcodec.decoders import VideoDecoder

    meta, index = probe_video(source, name=label, stream_index=request.stream_index,
                              max_duration_seconds=request.max_duration_seconds)
    if request.index is not None:
        index = request.index
    if meta.width * meta.height > request.max_pixels:
        raise DecodeError(
            f"{label}: {meta.width}x{meta.height} = {meta.width * meta.height} pixels is over "
            f"max_pixels={request.max_pixels}; raise max_pixels to decode it", reason="too_large")
    if index.num_frames == 0:
        raise DecodeError(f"{label}: the video stream has no frames")
    first, end = float(index.pts_seconds[0]), index.end_seconds
    start, stop, fps = request.start, request.stop, request.fps
    lo = first if start is None else start
    hi = end if stop is None else stop
    check_window_overlaps(lo, math.inf if stop is None else hi, first, end, label=label, what="video")
    decoder = VideoDecoder(_source_for_torchcodec(source), stream_index=meta.stream_index, dimension_order="NHWC",
                           num_ffmpeg_threads=request.num_threads, seek_mode="exact")
    height, width = coded_size((meta.height, meta.width), meta.rotation_degrees)  # as stored: turned at the end
    empty = (torch.zeros((0, height, width, 3), dtype=torch.uint8), torch.zeros(0, dtype=torch.float64))
    if start is None and stop is None and fps is None:
        batch = decoder.get_frames_in_range(0, len(decoder))
        frames, pts = batch.data, batch.pts_seconds
    elif fps is None:
        if hi <= lo:
            frames, pts = empty
        else:
            begin_tc, end_tc = decoder.metadata.begin_stream_seconds, decoder.metadata.end_stream_seconds
            a, b = max(lo, begin_tc), min(hi, end_tc)
            if b <= a or a >= end_tc:
                frames, pts = empty
            else:
                batch = decoder.get_frames_played_in_range(a, b)
                # torchcodec 0.9 also returns the frame already on screen at ``a`` (pts < a): ours starts at pts >= a
                keep = batch.pts_seconds >= lo
                frames, pts = batch.data[keep], batch.pts_seconds[keep]
    else:
        count = max(0, math.ceil((hi - lo) * fps - 1e-9))
        targets = lo + np.arange(count, dtype=np.float64) / fps
        targets = targets[targets >= first]  # before the first frame nothing is on screen (as the PyAV backend)
        if targets.size == 0:
            frames, pts = empty
        else:
            last = float(index.pts_seconds[-1])
            batch = decoder.get_frames_played_at(seconds=np.minimum(targets, last).tolist())
            frames, pts = batch.data, batch.pts_seconds
    del decoder
    if not (start is None and stop is None and fps is None):
        _check_times(pts.numpy(), _expected_times(index, lo, hi, fps, targets if fps is not None else None), label)
    meta = dataclasses.replace(meta, backend="torchcodec", num_frames_from_content=index.num_frames,
                               **content_facts(index.pts_seconds))
    rotation = meta.rotation_degrees
    frames = rotate_frames(_resized(frames, coded_size(request.size, rotation)), rotation)
    return VideoClip(frames=frames, pts_seconds=pts.to(torch.float64), metadata=meta)
