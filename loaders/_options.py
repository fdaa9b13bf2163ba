"""Options of the training pipeline: one frozen record per job, validated once, picklable for workers.

``SampleOptions`` is what turns one tar sample into batch items (decode, align, window, tokenize, check the
budgets); ``check_*`` helpers raise ``ValueError`` naming the option, the value, the valid range and a hint.
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

logger = logging.getLogger(__name__)

__all__ = ["AUTO", "MissingAudio", "OnError", "SampleOptions", "WindowSeconds", "check_choice", "check_window_seconds"]

OnError = Literal["skip", "raise"]
MissingAudio = Literal["empty", "silence"]
AUTO = "auto"
WindowSeconds = Union[float, None, Literal["auto"]]
"""``float``: cut every clip longer than this; ``"auto"``: cut only clips over a budget, into the fewest equal
windows that fit; ``None``: never cut (an item over a budget is skipped as ``over_budget``)."""


@dataclass(frozen=True)
class SampleOptions:
    """What a worker needs to turn one tar sample into batch items (picklable: workers receive a copy)."""

    sample_rate: int
    """Audio rate of the items."""
    limits: tuple[int, int, int, int, int, int]
    """``(frames, samples, tokens, items, words, segments)`` a batch holds at most: an item over any of them is
    windowed (``window_seconds="auto"``) or skipped as ``over_budget``."""
    fps: Optional[float] = None
    """Sample frames at this rate; None keeps every frame."""
    window_seconds: WindowSeconds = AUTO
    """See :data:`WindowSeconds`."""
    estimate: bool = False
    """Estimate A/V and text offsets for samples without ``align.json``."""
    on_error: OnError = "skip"
    """``skip`` a bad sample (counted) or ``raise`` :class:`~loaders.errors.SampleError`."""
    decode_size: Optional[tuple[int, int]] = None
    """``(height, width)`` to scale frames to while decoding; None keeps the stream's size."""
    max_pixels: int = 3840 * 2160
    """Media with frames over this many pixels are skipped (``too_large``) before decoding."""
    tokenizer: Any = None
    """A ``tokenizers.Tokenizer``, a Hugging Face fast tokenizer, or a callable ``text -> (ids, offsets)``;
    None counts whitespace-separated tokens and carries no ids."""
    missing_audio: MissingAudio = "empty"
    """A video-only clip gets an ``empty`` audio span (0 samples) or ``silence`` over its whole duration."""
    sample_timeout_seconds: Optional[float] = None
    """Wall-clock limit for one sample (decode + align + tokenize); over it the sample is skipped (``timeout``).
    Enforced with ``SIGALRM``, so only in a process's main thread (loader workers and DataLoader workers are)."""


def check_choice(name: str, value: object, choices: tuple) -> None:
    """Raises ValueError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.")


def check_window_seconds(window_seconds: object) -> None:
    """Raises ValueError unless ``window_seconds`` is ``"auto"``, None or a positive finite number."""
    if window_seconds is None or window_seconds == AUTO:
        return
    if isinstance(window_seconds, bool) or not isinstance(window_seconds, (int, float)) or not (
        math.isfinite(window_seconds) and window_seconds > 0
    ):
        raise ValueError(f"window_seconds must be 'auto', None or a positive number of seconds, got {window_seconds = !r}; "
                         "try 10.0.")
