"""Audio resampled onto the video clock: drift and offset removed, exact sample counts.

Sample ``j`` of the result belongs to video time ``T0 + j / sample_rate``; its value is the source
audio at audio time ``(T0 + j/sr)·(1 + drift) + av_offset``. One soxr pass does both the rate
change and the drift (the source is treated as running at ``rate·(1 + drift)``); the offset is then
an integer shift, so the residual is at most half an output sample (31 µs at 16 kHz). Parts of the
window that the source does not cover are silence.
"""
from __future__ import annotations

import logging

import numpy as np
import torch

from aligner._clock import ClockModel
from aligner._signals import check_finite_samples
from avcore import MAX_SAMPLE_INDEX, AudioClip, check_window, check_window_samples, seconds_to_samples, soxr_hq

logger = logging.getLogger(__name__)

__all__ = ["audio_on_video_clock"]


def audio_on_video_clock(
    audio: AudioClip,
    clock: ClockModel,
    *,
    sample_rate: int,
    start_seconds: float,
    stop_seconds: float,
) -> AudioClip:
    """The window ``[start_seconds, stop_seconds)`` of the video timeline, as audio at ``sample_rate``.

    The result has exactly ``round_half_up((stop - start)·sample_rate)`` samples.

    Raises:
        ValueError: a window bound that is not finite or ``stop_seconds < start_seconds``, a window (or a distance from
            it to the audio) of more samples than an index can count (``avcore.MAX_SAMPLE_INDEX``), ``audio`` without a
            channel, or a sample of ``audio`` that is NaN or infinite.
    """
    check_window(start_seconds, stop_seconds)
    check_window_samples(start_seconds, stop_seconds, sample_rate)
    num_out = seconds_to_samples(stop_seconds - start_seconds, sample_rate)
    x = audio.samples.numpy()
    check_finite_samples(x)
    if x.shape[0] == 0:
        raise ValueError(f"audio samples must have at least one channel, got shape {x.shape}")
    channels = x.shape[0]
    source_rate = audio.sample_rate * clock.rate
    if x.shape[1] == 0:
        y = np.zeros((channels, 0), dtype=np.float32)
    elif clock.drift_ppm == 0 and audio.sample_rate == sample_rate:
        y = x
    else:
        y = soxr_hq(x, source_rate, sample_rate)
    # y[k] sits at video time v0 + k / sample_rate.
    v0 = float(clock.audio_to_video(audio.start_seconds))
    if not abs(v0 - start_seconds) * sample_rate <= MAX_SAMPLE_INDEX:
        raise ValueError(f"the audio starts at video time {v0!r} s (audio start_seconds = {audio.start_seconds!r}, "
                         f"{clock}), {abs(v0 - start_seconds) * sample_rate:.3g} samples at {sample_rate} Hz from the "
                         f"window's start_seconds = {start_seconds!r}: more than a sample index can count (2**62)")
    shift = seconds_to_samples(v0 - start_seconds, sample_rate)  # out[j] = y[j - shift]
    out = np.zeros((channels, num_out), dtype=np.float32)
    lo, hi = max(shift, 0), min(shift + y.shape[1], num_out)
    if hi > lo:
        out[:, lo:hi] = y[:, lo - shift : hi - shift]
    return AudioClip(
        samples=torch.from_numpy(out),
        sample_rate=sample_rate,
        start_seconds=float(start_seconds),
        source_sample_rate=audio.source_sample_rate or audio.sample_rate,
        codec=audio.codec,
    )
