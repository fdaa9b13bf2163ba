"""Where a decode that starts at a seek falls on the whole stream's sample grid.

A whole read times sample ``n`` at ``origin + n / rate``, ``origin`` being the time of the stream's first decoded
sample. A read that seeks starts at a frame somewhere inside the stream and takes that frame's timestamp instead.
Where the container's tick is coarser than a sample (Matroska/WebM: 1 ms, 48 samples at 48 kHz) that timestamp
is rounded, and FFmpeg may round it twice (a packet's millisecond plus a decoder skip, such as Opus pre-skip
after a seek, rescaled to the tick), so a seeked read could stamp the same samples up to a tick away from the
whole read::

    whole read   origin
                 v
                 [ f0 ][  f1  ][  f2  ][  f3  ][  f4  ] ...   sample n at origin + n / rate
    seeked read                        [  f3  ][  f4  ] ...   FFmpeg's stamp of f3: origin + m·step ± 1 tick
    snapped                            ^ origin + m·step, the grid point nearest the stamp: f3's time in the whole read

Every frame a seek can start on begins a whole number of ``step`` samples after ``origin`` when the codec's frames
have sizes that are multiples of ``step`` (:func:`frame_step_samples`: Opus, AAC, MP3, fixed-block FLAC), so the
seeked read's first sample is the grid point nearest FFmpeg's stamp, provided the stamp is less than half a step
away: the grid is used only where ``step`` exceeds twice :func:`tolerance_samples` (one tick and one sample:
:func:`grid_step_samples`). A stamp farther than that from every grid point (the frame follows a gap in the
timestamps) keeps FFmpeg's time.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["SampleGrid", "frame_step_samples", "grid_step_samples", "tolerance_samples"]

_OPUS_STEP_SECONDS = 0.0025
"""Opus frames last 2.5, 5, 10, 20, 40 or 60 ms (RFC 6716 section 2.1.4): multiples of 2.5 ms."""


def frame_step_samples(codec_name: str, frame_size: int, sample_rate: int,
                       extradata: Optional[bytes] = None) -> Optional[int]:
    """The number of samples that every decoded frame of this codec is a multiple of (the last frame of a stream
    aside), or None when unknown.

    Opus: 2.5 ms (120 samples at 48 kHz; None at a rate where 2.5 ms is not a whole number of samples).
    FLAC: the block size where STREAMINFO (``extradata``) declares a fixed one (minimum = maximum).
    Otherwise the stream's constant frame size where the demuxer declares one (``frame_size``: AAC 1024, MP3 1152
    or 576); codecs with variable frames (Vorbis, PCM) declare none.

    Example:
        >>> frame_step_samples("opus", 0, 48000)
        120
        >>> frame_step_samples("flac", 0, 44100, bytes.fromhex("12001200") + bytes(30))
        4608
        >>> frame_step_samples("vorbis", 0, 48000) is None
        True
    """
    if codec_name in ("opus", "libopus"):
        step = _OPUS_STEP_SECONDS * sample_rate
        return int(step) if step == int(step) and step >= 1 else None
    if codec_name == "flac":
        return _flac_fixed_block_size(extradata)
    return int(frame_size) if frame_size and frame_size > 0 else None


def _flac_fixed_block_size(extradata: Optional[bytes]) -> Optional[int]:
    """STREAMINFO's block size when its minimum and maximum agree (a fixed-block-size stream), else None.
    ``extradata``: the 34-byte STREAMINFO, or the ``fLaC`` header with its first metadata block."""
    info = bytes(extradata or b"")
    if info[:4] == b"fLaC":
        info = info[8:]
    if len(info) < 34:
        return None
    smallest, largest = int.from_bytes(info[0:2], "big"), int.from_bytes(info[2:4], "big")
    return smallest if smallest == largest and smallest >= 16 else None


def grid_step_samples(step_samples: Optional[int], *, sample_rate: int, tick_seconds: float) -> Optional[int]:
    """``step_samples`` where a stream with this tick needs and can use a grid, else None: its timestamps cannot
    name a sample (the tick is longer than one sample), and a stamp's error (:func:`tolerance_samples`) is under
    half a step, so the nearest grid point is the right one.

    Example:
        >>> grid_step_samples(120, sample_rate=48000, tick_seconds=0.001)   # Opus in Matroska
        120
        >>> grid_step_samples(1024, sample_rate=48000, tick_seconds=1 / 48000) is None   # AAC in MP4: exact ticks
        True
    """
    if step_samples is None or not tick_seconds * sample_rate > 1.0:
        return None
    return step_samples if 2 * tolerance_samples(sample_rate, tick_seconds) < step_samples else None


def tolerance_samples(sample_rate: int, tick_seconds: float) -> float:
    """How far FFmpeg's stamp of a frame may lie from its grid point: one tick (two roundings of half a tick each)
    and one sample."""
    return tick_seconds * sample_rate + 1.0


@dataclass(frozen=True)
class SampleGrid:
    """The sample grid of a whole read: sample ``n`` at ``origin_seconds + n / sample_rate``, and a frame that a
    seek can start on at a multiple of ``step_samples``."""

    origin_seconds: float
    """FFmpeg's time of the stream's first decoded sample (the start of a whole read, in FFmpeg's time)."""
    step_samples: int
    """Every decoded frame's size is a multiple of this (:func:`frame_step_samples`)."""
    sample_rate: int
    """Samples per second of the decoded stream."""
    tolerance_samples: float
    """How far FFmpeg's stamp of a frame may lie from its grid point (:func:`tolerance_samples`); under half a step."""

    def __post_init__(self) -> None:
        if self.step_samples <= 0 or self.sample_rate <= 0:
            raise ValueError(f"step and rate must be > 0, got {self.step_samples = }, {self.sample_rate = }")
        if not 2 * self.tolerance_samples < self.step_samples:
            raise ValueError(f"tolerance must be under half a step, got {self.tolerance_samples = }, "
                             f"{self.step_samples = }")

    def snap(self, stamp_seconds: float) -> float:
        """The time of the grid point nearest ``stamp_seconds`` (FFmpeg's time of a frame's first sample), or
        ``stamp_seconds`` itself when no grid point lies within :attr:`tolerance_samples`.

        Example:
            >>> grid = SampleGrid(0.0, 120, 48000, 49.0)
            >>> grid.snap(0.021) * 48000   # Opus after a seek: 1 ms late on a 1 ms tick
            960.0
        """
        position = (stamp_seconds - self.origin_seconds) * self.sample_rate
        frames = round(position / self.step_samples)
        on_grid = frames * self.step_samples
        if abs(on_grid - position) > self.tolerance_samples:
            return stamp_seconds
        return self.origin_seconds + on_grid / self.sample_rate
