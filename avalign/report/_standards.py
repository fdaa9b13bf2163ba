"""Lip-sync tolerances (ITU-R BT.1359, EBU R37) and the sign conversion from avalign's convention.

The standards count **+ = audio early** (sound before picture); avalign's ``av_offset_ms > 0`` means
audio **lags** (late). One conversion, in one place::

    avalign av_offset_ms     -200    -45      0     +60   +125   +185
    standard offset (ms)     +200    +45      0     -60   -125   -185
                              early ◀──────── in sync ────────▶ late

    BT.1359 detectability    [-125, +45]  (standard sign)  ⇔  avalign [-45, +125]
    BT.1359 acceptability    [-185, +90]                   ⇔  avalign [-90, +185]
    EBU R37                  [ -60, +40]                   ⇔  avalign [-40,  +60]

Boundaries are inclusive: an offset exactly at a limit is within it. Example: avalign +100 ms (audio
100 ms late) is −100 ms in standard terms: within BT.1359 detectability (−125) but outside EBU R37 (−60).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["LipSyncTolerance", "STANDARDS", "lipsync_status", "to_standard_offset_ms", "within_tolerance"]


@dataclass(frozen=True)
class LipSyncTolerance:
    """A lip-sync window in the standards' sign convention (+ = audio early)."""

    key: str
    """Short identifier used in JSON (``bt1359_detectability``)."""
    name: str
    """Human-readable name (``ITU-R BT.1359 detectability``)."""
    audio_early_ms: float
    """Largest tolerated audio lead, > 0 (standard offset ``<= +audio_early_ms``)."""
    audio_late_ms: float
    """Largest tolerated audio lag, > 0 (standard offset ``>= -audio_late_ms``)."""

    def __post_init__(self) -> None:
        if not (self.audio_early_ms > 0 and self.audio_late_ms > 0):
            raise ValueError(
                f"tolerances must be positive magnitudes, got {self.audio_early_ms = }, {self.audio_late_ms = }; "
                "hint: give the audio-late limit as a positive number"
            )

    def avalign_range_ms(self) -> tuple[float, float]:
        """The window in avalign's sign (``av_offset_ms``, + = audio late): ``[-audio_early_ms, +audio_late_ms]``."""
        return (-self.audio_early_ms, self.audio_late_ms)


STANDARDS: tuple[LipSyncTolerance, ...] = (
    LipSyncTolerance("bt1359_detectability", "ITU-R BT.1359 detectability", 45.0, 125.0),
    LipSyncTolerance("bt1359_acceptability", "ITU-R BT.1359 acceptability", 90.0, 185.0),
    LipSyncTolerance("ebu_r37", "EBU R37", 40.0, 60.0),
)
"""The windows reported per clip, strictest last."""


def to_standard_offset_ms(av_offset_ms: Optional[float]) -> Optional[float]:
    """avalign's ``av_offset_ms`` (+ = audio late) in the standards' sign (+ = audio early); None stays None."""
    if av_offset_ms is None:
        return None
    if not math.isfinite(av_offset_ms):
        raise ValueError(f"av_offset_ms must be finite or None, got {av_offset_ms = }")
    return 0.0 - float(av_offset_ms)


def within_tolerance(av_offset_ms: Optional[float], tolerance: LipSyncTolerance) -> Optional[bool]:
    """Whether an avalign offset (+ = audio late) lies in ``tolerance`` (inclusive); None when unknown."""
    standard = to_standard_offset_ms(av_offset_ms)
    if standard is None:
        return None
    return -tolerance.audio_late_ms <= standard <= tolerance.audio_early_ms


def lipsync_status(av_offset_ms: Optional[float]) -> dict[str, Optional[bool]]:
    """``{standard key: within?}`` for every window in :data:`STANDARDS` (None when the offset is unknown).

    Example:
        >>> lipsync_status(100.0)
        {'bt1359_detectability': True, 'bt1359_acceptability': True, 'ebu_r37': False}
    """
    return {t.key: within_tolerance(av_offset_ms, t) for t in STANDARDS}
