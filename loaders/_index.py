"""Frame index from a demux-only scan: every frame's presentation time and keyframe flag, no decoding.

The scan reads packets (cheap: no pixels are decoded) so that windows and sparse requests can
seek straight to the keyframe before a target, and so the metadata can state the real frame count
and rate of the whole file even when only a few frames are decoded. Preprocessing stores it in
shards (``frames.json``) so training-time loading skips the scan.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from aligner._time import ticks_to_seconds

logger = logging.getLogger(__name__)

__all__ = ["FrameIndex", "scan_frame_index"]


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
