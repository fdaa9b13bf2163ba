"""Resampling with soxr (the SoX resampler, quality "HQ": linear phase, its delay removed).

The one owner of one-shot soxr resampling in avalign: the readers (``loaders.read_audio``), the
alignment stage (``aligner.timeline.audio_on_video_clock``, the text estimators, forced alignment) call these.
Sample 0 of the output is at the same time as sample 0 of the input.
"""
from __future__ import annotations

import logging

import numpy as np

from avcore._time import seconds_to_samples

logger = logging.getLogger(__name__)

__all__ = ["resample", "soxr_hq"]


def soxr_hq(samples: np.ndarray, from_rate: float, to_rate: float) -> np.ndarray:
    """One soxr HQ pass over ``[C, N]`` samples; ``[C, M]`` with soxr's own output length.

    The rates may be fractional (``aligner`` treats drifting audio as running at ``rate·(1 + drift)``).
    """
    import soxr

    return soxr.resample(np.ascontiguousarray(samples.T), from_rate, to_rate, quality="HQ").T


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample ``[C, N]`` float32 with soxr HQ; the result has ``round_half_up(N * to / from)`` samples."""
    if from_rate == to_rate:
        return samples
    target = seconds_to_samples(samples.shape[1] / from_rate, to_rate)
    if samples.shape[1] == 0:
        return np.zeros((samples.shape[0], 0), dtype=np.float32)
    out = soxr_hq(samples, from_rate, to_rate)
    if out.shape[1] < target:
        out = np.pad(out, ((0, 0), (0, target - out.shape[1])))
    return np.ascontiguousarray(out[:, :target], dtype=np.float32)
