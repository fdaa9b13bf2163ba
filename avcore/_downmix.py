"""Mono downmix: the one rule every audio backend applies (``read_audio(mono=True)``).

One and two channels: the plain mean (stereo ``(L + R) / 2``, summed in channel order, then divided). More channels
with a known layout: ITU-R BS.775's mono downmix, which FFmpeg's ``-ac 1`` (swresample) applies, with its
coefficients scaled to sum to 1 as swresample scales them for integer output (so that no mix can clip, and so
that stereo's ``0.7071 L + 0.7071 R`` becomes the mean)::

    channel              FC     FL FR (FLC FRC)    LFE    every other (BL BR SL SR BC ...)
    BS.775 weight        1.0    0.7071             0      0.5
    5.1 after scaling    0.293  0.207              0      0.146     (a centre-only dialog: -10.7 dB, as ``-ac 1``
                                                                     to 16-bit gives; the plain mean gave -15.6 dB)

A layout without a front channel (unknown order, ``N channels``) keeps the plain mean.
"""
from __future__ import annotations

import logging
import math
from typing import Optional, Sequence

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["downmix", "downmix_weights"]

_CENTRE = frozenset({"FC"})
_FRONT_PAIR = frozenset({"FL", "FR", "FLC", "FRC"})
_LOW_FREQUENCY = frozenset({"LFE", "LFE2", "LOW_FREQUENCY", "LOW_FREQUENCY_2"})
_OTHER_WEIGHT = 0.5
"""Surround, back, side, top and wide channels: BS.775's -3 dB surround level into a -3 dB front pair."""


def downmix_weights(channel_names: Optional[Sequence[str]]) -> Optional[np.ndarray]:
    """float64 ``[C]`` weights summing to 1 for the channels named as FFmpeg names them (``FL``, ``FC``, ``LFE``,
    ...), or None where the plain mean applies (two channels or fewer, no names, or no front channel among them).

    >>> downmix_weights(["FL", "FR", "FC", "LFE", "BL", "BR"]).round(3).tolist()
    [0.207, 0.207, 0.293, 0.0, 0.146, 0.146]
    """
    if channel_names is None or len(channel_names) <= 2:
        return None
    names = [str(name).upper() for name in channel_names]
    if not any(name in _CENTRE or name in _FRONT_PAIR for name in names):
        return None
    weights = np.array([1.0 if name in _CENTRE else math.sqrt(0.5) if name in _FRONT_PAIR
                        else 0.0 if name in _LOW_FREQUENCY else _OTHER_WEIGHT for name in names])
    return weights / weights.sum()


def downmix(samples: np.ndarray, channel_names: Optional[Sequence[str]] = None, *,
            out: Optional[np.ndarray] = None) -> np.ndarray:
    """float32 ``[C, n]`` -> ``[n]``: the mono downmix of :func:`downmix_weights` (the plain mean where that is None;
    bit-identical to ``np.mean(axis=0)`` for two channels). A new array (or ``out``), never a view of ``samples``.

    Args:
        samples: ``[C, n]`` float32.
        channel_names: FFmpeg's names of the ``C`` channels in order (``frame.layout.channels``' names); None or a
            list of another length: the plain mean.
        out: float32 ``[n]`` to write the result to (not overlapping ``samples``).
    """
    channels = samples.shape[0]
    if channels == 1:
        if out is None:
            return np.array(samples[0])
        out[...] = samples[0]
        return out
    weights = downmix_weights(channel_names) if channel_names is not None and len(channel_names) == channels else None
    if weights is None:
        row = np.add(samples[0], samples[1], out=out)
        for ch in range(2, channels):
            row += samples[ch]
        row /= channels
        return row
    row = np.multiply(samples[0], np.float32(weights[0]), out=out)
    scratch = np.empty_like(row)
    for ch in range(1, channels):
        if weights[ch]:
            np.multiply(samples[ch], np.float32(weights[ch]), out=scratch)
            row += scratch
    return row
