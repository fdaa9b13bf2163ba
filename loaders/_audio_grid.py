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
timestamps) keeps FFmpeg's time. Where the tick is shorter than half a sample and frames do not start on ticks
(MPEG-TS at 44.1 or 22.05 kHz: 1/90000 s, 0.49 samples), the step is one sample: the stamp is put on the nearest
sample of the whole read's grid, not a fraction of one away.

Vorbis and PCM frames have no such step wide enough for one stamp: Vorbis frames are multiples of a quarter of its short
block (:func:`vorbis_step_samples`: 64 samples for libvorbis' 256-sample short block, under the 98 samples one stamp
leaves open at 48 kHz), PCM blocks may have any size. Their seeked reads are placed by the stamps of several frames
(:class:`StampedGrid`). Each stamp is a frame's exact time rounded to the tick, and the samples between frames are
counted, so each frame narrows where the exact time of the first one lies (a vernier: frames of 1024 samples sit 16,
32 and 0 samples past a millisecond at 48 kHz)::

    whole read   [ f0 ][  f1  ][  f2  ] ...      f_j at index P_j (counted), stamp s_j = round(c + P_j / rate)
                 => u = c - origin lies in the intersection of [s_j - origin - P_j / rate ± tick / 2]
    seeked read                  [  fm  ][ fm+1 ] ...   at index P + R_i (R_i counted), stamp σ_i
                 => u + P / rate lies in the intersection of [σ_i - origin - R_i / rate ± tick / 2]
                 => P lies in [lo1 - hi0, hi1 - lo0]; the one multiple of the step inside it (with a sample's slack) is P

Both reads see the same rounding, so a muxer's bias cancels. Where the interval holds no multiple of the step, or
more than one (too few frames, a frame not a multiple of the step: PCM blocks of unequal sizes), FFmpeg's stamp stays.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional, Sequence

logger = logging.getLogger(__name__)

__all__ = ["SampleGrid", "StampedGrid", "frame_step_samples", "grid_step_samples", "stamp_interval", "tolerance_samples",
           "vorbis_step_samples"]

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

    A tick shorter than a sample (MPEG-TS: 1/90000 s, 0.49 samples at 44.1 kHz) names a sample only to within a
    tick: 1, the nearest sample, where two roundings stay under half a sample (the tick is under half a sample) and
    frames of ``step_samples`` do not all start on a tick (1152 samples at 16 kHz are 6480 ticks: exact already).

    Example:
        >>> grid_step_samples(120, sample_rate=48000, tick_seconds=0.001)   # Opus in Matroska
        120
        >>> grid_step_samples(1024, sample_rate=48000, tick_seconds=1 / 48000) is None   # AAC in MP4: exact ticks
        True
        >>> grid_step_samples(1152, sample_rate=44100, tick_seconds=1 / 90000)   # MP2 in MPEG-TS at 44.1 kHz
        1
    """
    samples_per_tick = tick_seconds * sample_rate
    if 0 < samples_per_tick < 1.0:
        ticks = None if step_samples is None else step_samples / samples_per_tick
        if ticks is not None and abs(ticks - round(ticks)) < 1e-6:
            return None  # every frame starts on a tick: the stamps name their samples
        return 1 if 2 * tolerance_samples(sample_rate, tick_seconds) < 1 else None
    if step_samples is None or not samples_per_tick > 1.0:
        return None
    return step_samples if 2 * tolerance_samples(sample_rate, tick_seconds) < step_samples else None


def tolerance_samples(sample_rate: int, tick_seconds: float) -> float:
    """How far FFmpeg's stamp of a frame may lie from its grid point: one tick (two roundings of half a tick each)
    and, where the tick is longer than a sample, one sample."""
    samples_per_tick = tick_seconds * sample_rate
    return samples_per_tick + (1.0 if samples_per_tick > 1.0 else 0.0)


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

    def settled(self, stamps: Sequence[tuple[float, int, int]]) -> bool:
        """Whether :meth:`place` can answer from these frames: one is enough."""
        return bool(stamps)

    def place(self, stamps: Sequence[tuple[float, int, int]]) -> float:
        """:meth:`snap` of the first frame's stamp (``stamps`` as :meth:`StampedGrid.place` takes them)."""
        return self.snap(stamps[0][0])


def vorbis_step_samples(extradata: Optional[bytes]) -> Optional[int]:
    """A quarter of the Vorbis short block, which every decoded Vorbis frame is a multiple of (a frame is a quarter of
    the previous block and a quarter of its own; the long block is a multiple of the short one), from the
    identification header in ``extradata`` (Matroska's Xiph-laced CodecPrivate or the header itself); None without it.

    Example:
        >>> header = b"\\x01vorbis" + bytes(21) + bytes([0xB8, 1])   # short block 2**8, long block 2**11
        >>> vorbis_step_samples(header)
        64
    """
    data = bytes(extradata or b"")
    at = data.find(b"\x01vorbis")
    if at < 0 or len(data) < at + 30:
        return None
    short_block = 1 << (data[at + 28] & 0x0F)
    return short_block // 4 if 64 <= short_block <= 8192 else None


def stamp_interval(stamps: Sequence[tuple[float, int, int]], *, origin_seconds: float, sample_rate: int,
                   tick_seconds: float) -> tuple[float, float]:
    """Where the exact time of the first of ``stamps`` lies, as samples after ``origin_seconds``: ``(low, high)``, the
    intersection over the frames of ``stamp - samples before it ± half a tick`` (``low > high``: the stamps disagree).

    ``stamps``: ``(FFmpeg's time of a frame, samples decoded before it since the first listed frame, its samples)``.

    Example:
        >>> stamp_interval([(0.0, 0, 1024), (0.021, 1024, 1024), (0.043, 2048, 1024)], origin_seconds=0.0,
        ...                sample_rate=48000, tick_seconds=0.001)   # PCM blocks of 1024 samples at 48 kHz
        (-8.0, 8.0)
    """
    half = tick_seconds * sample_rate / 2
    low, high = -math.inf, math.inf
    for stamp_seconds, before, _ in stamps:
        at = (stamp_seconds - origin_seconds) * sample_rate - before
        low, high = max(low, at - half), min(high, at + half)
    return round(low, 6), round(high, 6)


@dataclass(frozen=True)
class StampedGrid:
    """The sample grid of a whole read placed by the stamps of several frames (the module's vernier): sample ``n`` at
    ``origin_seconds + n / sample_rate``; a frame a seek can start on at a multiple of ``step_samples``; the exact time
    of sample 0 between ``origin_low_samples`` and ``origin_high_samples`` samples after ``origin_seconds``."""

    origin_seconds: float
    """FFmpeg's time of the stream's first decoded sample (the start of a whole read, in FFmpeg's time)."""
    step_samples: int
    """Every decoded frame's size is a multiple of this (:func:`vorbis_step_samples`, a PCM stream's first block)."""
    sample_rate: int
    """Samples per second of the decoded stream."""
    tick_seconds: float
    """The container's tick (Matroska: 1 ms); each stamp is an exact time rounded to it."""
    origin_low_samples: float
    """The exact time of the whole read's first sample is at least this many samples after ``origin_seconds``."""
    origin_high_samples: float
    """... and at most this many (:func:`stamp_interval` of the whole read's first frames)."""

    frames_wanted = 16
    """The most frames of a seeked read :meth:`place` is given (they are decoded anyway)."""
    slack_samples = 1.0
    """Added to each side of the interval where the seeked frame's index lies (float rounding of the stamps)."""

    def __post_init__(self) -> None:
        if self.step_samples <= 0 or self.sample_rate <= 0 or not self.tick_seconds > 0:
            raise ValueError(f"step, rate and tick must be > 0, got {self.step_samples = }, {self.sample_rate = }, "
                             f"{self.tick_seconds = }")
        if not self.origin_low_samples <= self.origin_high_samples:
            raise ValueError(f"the origin's interval is empty, got {self.origin_low_samples = }, "
                             f"{self.origin_high_samples = }")

    def _candidates(self, stamps: Sequence[tuple[float, int, int]]) -> tuple[float, float, int, int]:
        low, high = stamp_interval(stamps, origin_seconds=self.origin_seconds, sample_rate=self.sample_rate,
                                   tick_seconds=self.tick_seconds)
        low = low - self.origin_high_samples - self.slack_samples
        high = high - self.origin_low_samples + self.slack_samples
        step = self.step_samples
        return low, high, math.ceil(low / step), math.floor(high / step)

    def settled(self, stamps: Sequence[tuple[float, int, int]]) -> bool:
        """Whether these frames narrow the seeked frame's index to less than a step (more would not change
        :meth:`place`), or are as many as :attr:`frames_wanted`."""
        if len(stamps) >= self.frames_wanted:
            return True
        low, high, _, _ = self._candidates(stamps) if stamps else (0.0, math.inf, 0, 0)
        return high - low < self.step_samples

    def place(self, stamps: Sequence[tuple[float, int, int]]) -> float:
        """The whole read's time of the first of ``stamps`` (a seeked read's first frames: FFmpeg's time, samples
        decoded before it since the first, its samples): the one grid point the stamps allow, else FFmpeg's time of
        the first frame (none or several allowed, or a frame other than the last not a multiple of the step).

        Example:
            >>> grid = StampedGrid(0.0, 1024, 48000, 0.001, -8.0, 8.0)   # PCM blocks of 1024 samples at 48 kHz
            >>> grid.place([(4.288, 0, 1024), (4.309, 1024, 1024), (4.331, 2048, 1024)]) * 48000
            205824.0
        """
        first = stamps[0][0]
        if any(samples % self.step_samples for _, _, samples in stamps[:-1]):
            return first
        _, _, lowest, highest = self._candidates(stamps)
        if lowest != highest:
            return first
        return self.origin_seconds + lowest * self.step_samples / self.sample_rate
