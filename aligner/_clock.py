"""The clock model that puts audio and transcript times on the video's presentation timeline.

::

    video time t ──(× (1 + drift_ppm·1e-6), + av_offset_ms/1000)──▶ audio time a ──(+ text_offset_ms/1000)──▶ stamp

    av_offset_ms > 0   audio lags video: a sound that belongs to video time t is heard at a > t
    text_offset_ms > 0 transcript stamps are late: a word heard at audio time a is stamped a + text_offset

Inverting: a stamp ``w`` is heard at ``a = w − text_offset`` and belongs to video time
``t = (a − av_offset) / (1 + drift)``.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["MAX_OFFSET_MS", "ClockModel"]

MAX_OFFSET_MS = 100_000_000.0
"""The largest ``|av_offset_ms|`` and ``|text_offset_ms|`` a :class:`ClockModel` takes: 100000 s (27.8 h), beyond any
start a container can carry (MPEG-TS pts wrap after 26.5 h) and any transcript of one recording. Larger offsets are
mistakes (a value in µs or ns, a wall-clock stamp) and overflowed the sample index: 1e20 ms put the audio at sample
-2**63 (silence, said only by a numpy warning)."""


@dataclass(frozen=True)
class ClockModel:
    """How audio and transcript clocks map onto the video timeline (see the module diagram)."""

    av_offset_ms: float = 0.0
    """Audio delay relative to video at video time 0 (ms); > 0: audio lags."""
    drift_ppm: float = 0.0
    """Audio clock rate error relative to video, parts per million; > 0: audio time runs faster."""
    text_offset_ms: float = 0.0
    """Transcript lateness relative to the audio (ms); > 0: stamps are late."""

    def __post_init__(self) -> None:
        for name in ("av_offset_ms", "drift_ppm", "text_offset_ms"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {name} = {value!r}")
        for name in ("av_offset_ms", "text_offset_ms"):
            value = getattr(self, name)
            if abs(value) > MAX_OFFSET_MS:
                raise ValueError(f"{name} must be within ±{MAX_OFFSET_MS:.0f} ms ({MAX_OFFSET_MS / 3.6e6:.1f} h), got "
                                 f"{name} = {value!r}")
        if abs(self.drift_ppm) >= 1e5:
            raise ValueError(f"drift_ppm must be within ±100000 (±10 %), got {self.drift_ppm = }")

    @property
    def rate(self) -> float:
        """Audio seconds per video second: ``1 + drift_ppm·1e-6``."""
        return 1.0 + self.drift_ppm * 1e-6

    def video_to_audio(self, video_seconds):
        """Audio presentation time at which the sound of video time ``t`` is heard."""
        return np.asarray(video_seconds, dtype=np.float64) * self.rate + self.av_offset_ms / 1000.0

    def audio_to_video(self, audio_seconds):
        """Video time that the sound heard at audio time ``a`` belongs to."""
        return (np.asarray(audio_seconds, dtype=np.float64) - self.av_offset_ms / 1000.0) / self.rate

    def stamp_to_video(self, stamp_seconds):
        """Video time of a transcript stamp (removes the text offset, then the A/V clock)."""
        return self.audio_to_video(np.asarray(stamp_seconds, dtype=np.float64) - self.text_offset_ms / 1000.0)
