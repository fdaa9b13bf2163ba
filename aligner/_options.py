"""Every tunable of the estimators, in one frozen dataclass per family, validated once.

Entry points take ``options=AVOptions(...)`` / ``options=TextOptions(...)`` instead of repeating keyword
lists; change one field with ``dataclasses.replace(options, max_offset_ms=800.0)``.

Example:
    >>> AVOptions(max_offset_ms=800.0).max_drift_ppm
    1500.0
    >>> TextOptions(hop_seconds=0.0)
    Traceback (most recent call last):
    ...
    ValueError: hop_seconds must be in [0.0005, 0.02], got self.hop_seconds = 0.0; 0.0025 is the default
"""
from __future__ import annotations

import logging
import math
import numbers
from dataclasses import dataclass
from typing import Literal, get_args

from aligner._signals import VisualFeature

logger = logging.getLogger(__name__)

__all__ = ["AVOptions", "NULL_THRESHOLD", "TEXT_METHODS", "TextMethod", "TextOptions", "VISUAL_FEATURES"]

NULL_THRESHOLD = 0.7
"""Match significance reached by at most 0.5 % of null pairings on the tune seeds (half the 1 % target, for the
sampling error and a heavier held-out tail): the 99.5th percentile of 4,560 tune null pairings (the 24 wild and
24 mouth-speech tune clips: each video with every other clip's audio, and with every clip's audio played
backwards), 0.655, rounded up to 0.1 (``avalign bench align --calibrate``; BENCHMARKS.md, "A/V significance
against the clip's own neighbourhood"). Re-derived when audio events under a bed were dated at most 4 ms before
their 20 % point: 0.663 (0.651 before), still 0.7 (BENCHMARKS.md, "A/V answer rate on short bedded clips"); and
when a 12 ms kernel was added for events between frames: 0.676, still 0.7 (BENCHMARKS.md, "Events between
frames")."""

TextMethod = Literal["auto", "energy", "forced"]
"""Transcript offset estimator: speech energy, pocketsphinx forced alignment, or energy then forced alignment."""
TEXT_METHODS: tuple[str, ...] = get_args(TextMethod)
"""The values of :data:`TextMethod`, for run-time checks and CLI choices."""
VISUAL_FEATURES: tuple[str, ...] = get_args(VisualFeature)
"""The values of ``VisualFeature`` (the per-frame change signal of the A/V estimator)."""


def _check_numbers(options) -> None:
    """Every field but ``feature`` must be a real number (not a bool, not a string): a TypeError naming it, instead of
    a failed comparison that names nothing (or ``True`` taken as 1)."""
    for name, value in options.__dict__.items():
        if name != "feature" and (isinstance(value, bool) or not isinstance(value, numbers.Real)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")


def _check_search(max_offset_ms: float, min_confidence: float) -> None:
    """The two options every estimator shares: a search range in (0, 10 s] and a confidence in [0, 1]."""
    if not (0 < max_offset_ms <= 10_000):
        raise ValueError(f"max_offset_ms must be in (0, 10000], got {max_offset_ms = }")
    if not (0.0 <= min_confidence <= 1.0):
        raise ValueError(f"min_confidence must be in [0, 1], got {min_confidence = }")


@dataclass(frozen=True)
class AVOptions:
    """Options of the A/V offset and drift estimator (``estimate_av_offset`` and its variants).

    Raises:
        ValueError: a value outside its range (the message shows it).
        TypeError: a numeric field that is not a real number (a bool, a string).
    """

    max_offset_ms: float = 500.0
    """Search range ``[-max_offset_ms, +max_offset_ms]`` (at the events' centre); a true offset outside it is
    not found (``peak_at_search_edge``). In (0, 10000]."""
    min_confidence: float = 0.3
    """Abstain below this confidence (0.3: the calibrated null threshold); 0 returns the best guess. In [0, 1]."""
    max_drift_ppm: float = 1500.0
    """Drift search range ``±max_drift_ppm``. In [0, 20000]."""
    max_drift_se_ppm: float = 60.0
    """Drift is reported only when the fitted slope's standard error is at most this (else ``drift_ppm`` is None)."""
    min_drift_span_seconds: float = 4.0
    """Matched events must span at least this long for drift to be fitted."""
    null_threshold: float = NULL_THRESHOLD
    """Match significance mapped to confidence 0.3 (calibrated: :data:`NULL_THRESHOLD`). Finite."""
    feature: VisualFeature = "background_rise"
    """Per-frame visual change signal (see ``aligner.estimators.visual_change_events``)."""

    def __post_init__(self) -> None:
        _check_numbers(self)
        _check_search(self.max_offset_ms, self.min_confidence)
        if not math.isfinite(self.null_threshold):
            raise ValueError(f"null_threshold must be a finite match significance, got {self.null_threshold = }; "
                             f"{NULL_THRESHOLD} is the calibrated default")
        if not (0.0 <= self.max_drift_ppm <= 20_000):
            raise ValueError(f"max_drift_ppm must be in [0, 20000], got {self.max_drift_ppm = }")
        if not self.max_drift_se_ppm > 0:
            raise ValueError(f"max_drift_se_ppm must be > 0, got {self.max_drift_se_ppm = }; 60 suits most clips")
        if not self.min_drift_span_seconds >= 0:
            raise ValueError(f"min_drift_span_seconds must be >= 0, got {self.min_drift_span_seconds = }")
        if self.feature not in VISUAL_FEATURES:
            raise ValueError(f"feature must be one of {VISUAL_FEATURES}, got {self.feature!r}")


@dataclass(frozen=True)
class TextOptions:
    """Options of the transcript offset estimators (energy, forced alignment, and the dispatcher of both).

    Raises:
        ValueError: a value outside its range (the message shows it).
        TypeError: a numeric field that is not a real number (a bool, a string).
    """

    max_offset_ms: float = 500.0
    """Search range ``±max_offset_ms``; larger offsets are not found, and ``estimate_transcript_offset(s)`` (and so
    ``align``) abstain on answers within 30 ms of its edge (a quarter of the range when that is less;
    ``peak_at_search_edge``): set it at least 30 ms beyond the largest offset you expect. In (0, 10000]."""
    min_confidence: float = 0.3
    """Abstain below this confidence (``text_offset_ms is None``). In [0, 1]."""
    hop_seconds: float = 0.0025
    """Grid step of the energy estimator's features. In [0.0005, 0.02]."""
    agree_ms: float = 40.0
    """Forced alignment: per-word differences within this of their median count as agreeing. > 0."""
    max_chunk_seconds: float = 30.0
    """Forced alignment: connected speech is aligned in chunks of at most this many seconds of stamps (the
    aligner's time and memory grow with the chunk; words at a cut share the margin with their neighbours'
    speech, which the median absorbs). > 0."""

    def __post_init__(self) -> None:
        _check_numbers(self)
        _check_search(self.max_offset_ms, self.min_confidence)
        if not (0.0005 <= self.hop_seconds <= 0.02):
            raise ValueError(f"hop_seconds must be in [0.0005, 0.02], got {self.hop_seconds = }; 0.0025 is the default")
        if not self.agree_ms > 0:
            raise ValueError(f"agree_ms must be > 0, got {self.agree_ms = }")
        if not self.max_chunk_seconds > 0:
            raise ValueError(f"max_chunk_seconds must be > 0, got {self.max_chunk_seconds = }")
