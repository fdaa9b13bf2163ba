"""Display rotation: a phone clip's frames are stored sideways and shown turned by its display matrix.

A portrait phone clip is stored as landscape frames (e.g. 160 wide x 120 high) with a display matrix (MP4/MOV
``tkhd``, or an H.264/HEVC SEI) saying "turn by 90 degrees to show"; players and the ffmpeg CLI (which
autorotates by default) show 120 x 160. FFmpeg attaches the matrix to every decoded frame
(``AV_FRAME_DATA_DISPLAYMATRIX``); every video reader of ``loaders`` reads it from the first decoded frame and
returns frames *as displayed*::

    stored (coded) frame, 4 x 3      rotation_degrees = 90 (counterclockwise)      displayed, 3 x 4
        a b c d                                                                       d h l
        e f g h                     ------------------------------------------>       c g k
        i j k l                                                                       b f j
                                                                                      a e i

``rotation_degrees`` is FFmpeg's ``av_display_rotation_get`` (PyAV's ``VideoFrame.rotation``, ffprobe's side-data
``rotation``) taken modulo 360: the counterclockwise angle the stored frame is turned by for display, one of
0, 90, 180, 270 (``-90`` is 270). A matrix with a mirror (negative determinant) or an angle that is not a
multiple of 90 degrees (within FFmpeg's 1 degree) is refused with a :class:`~avcore.DecodeError` naming the file
and the matrix: the ffmpeg CLI of this project (5.1) does not apply mirrors, so there is no oracle to check them.
Times are not changed by rotation.
"""
from __future__ import annotations

import logging
import math
import struct
from fractions import Fraction
from typing import Optional, Sequence

import torch

from avcore import DecodeError

logger = logging.getLogger(__name__)

__all__ = ["FrameTurner", "coded_size", "frame_rotation_degrees", "rotate_frames", "rotation_from_matrix"]

_ANGLE_TOLERANCE_DEGREES = 1.0
"""An angle within this of a multiple of 90 degrees is that multiple (FFmpeg's autorotate uses the same bound)."""


def rotation_from_matrix(matrix: Sequence[int], label: str) -> int:
    """The rotation (0, 90, 180 or 270, counterclockwise) of FFmpeg's display matrix ``matrix`` (9 int32:
    ``a b u / c d v / x y w``, ``a``-``d`` in 16.16 fixed point), computed as ``av_display_rotation_get`` does.

    Raises:
        DecodeError: the matrix mirrors the image, is degenerate, or turns it by an angle that is not a
            multiple of 90 degrees; the message names ``label`` and the matrix.
    """
    a, b, c, d = (float(matrix[0]), float(matrix[1]), float(matrix[3]), float(matrix[4]))
    scale_x, scale_y = math.hypot(a, c), math.hypot(b, d)
    if scale_x == 0 or scale_y == 0:
        raise DecodeError(f"{label}: its display matrix {list(matrix)} is degenerate (a zero scale); cannot show the frames")
    if a * d - b * c < 0:
        raise DecodeError(f"{label}: its display matrix {list(matrix)} mirrors the frames (negative determinant); "
                          "mirrored display is not supported (re-encode with the mirror applied: ffmpeg -vf hflip/vflip)")
    degrees = -math.degrees(math.atan2(b / scale_y, a / scale_x))
    quarter = round(degrees / 90.0)
    if abs(degrees - 90.0 * quarter) > _ANGLE_TOLERANCE_DEGREES:
        raise DecodeError(f"{label}: its display matrix {list(matrix)} turns the frames by {degrees:.2f} degrees, not a "
                          "multiple of 90; only 0/90/180/270 are supported (re-encode with ffmpeg, which rotates it)")
    return int(quarter * 90) % 360


def frame_rotation_degrees(frame, label: str) -> int:
    """The display rotation of a decoded PyAV ``VideoFrame`` (0 when it has no display matrix); see
    :func:`rotation_from_matrix` for the value and the refusals."""
    from av.sidedata.sidedata import Type

    side = frame.side_data.get(Type.DISPLAYMATRIX)
    if side is None:
        return 0
    raw = bytes(side)
    if len(raw) < 36:
        raise DecodeError(f"{label}: its display matrix is {len(raw)} bytes, not 36")
    return rotation_from_matrix(struct.unpack("=9i", raw[:36]), label)


def coded_size(size: Optional[tuple[int, int]], rotation_degrees: int) -> Optional[tuple[int, int]]:
    """The ``(height, width)`` a stored frame is scaled to so that, once turned by ``rotation_degrees``, it is
    ``size`` (a displayed ``(height, width)``); None stays None."""
    if size is None or rotation_degrees % 180 == 0:
        return size
    return size[1], size[0]


_FILTERS = {90: (("transpose", "cclock"),), 180: (("hflip", ""), ("vflip", "")), 270: (("transpose", "clock"),)}
"""The filters the ffmpeg CLI inserts to autorotate, by counterclockwise rotation."""


class FrameTurner:
    """Turns decoded PyAV frames (still YUV) for display with the filters the ffmpeg CLI's autorotate inserts
    (``transpose``, ``hflip,vflip``), so that the RGB conversion and scaling that follow see what the CLI's see.
    In FFmpeg's YUV filters, turning costs a fraction of turning the RGB frame in numpy (BENCHMARKS.md, "Rotation and
    pipe shards"). One graph per decode, built from the first frame; not shared between threads."""

    def __init__(self, first_frame, rotation_degrees: int) -> None:
        import av

        self._graph = av.filter.Graph()
        last = self._graph.add_buffer(width=first_frame.width, height=first_frame.height, format=first_frame.format,
                                      time_base=first_frame.time_base or Fraction(1, 1000))
        for name, argument in _FILTERS[rotation_degrees]:
            node = self._graph.add(name, argument) if argument else self._graph.add(name)
            last.link_to(node)
            last = node
        sink = self._graph.add("buffersink")
        last.link_to(sink)
        self._graph.configure()

    def __call__(self, frame):
        self._graph.push(frame)
        return self._graph.pull()


def rotate_frames(frames: torch.Tensor, rotation_degrees: int) -> torch.Tensor:
    """``[T, H, W, C]`` frames turned counterclockwise by ``rotation_degrees`` (a contiguous copy; unchanged at 0)."""
    if not rotation_degrees:
        return frames
    return torch.rot90(frames, rotation_degrees // 90, dims=(1, 2)).contiguous()
