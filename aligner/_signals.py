"""Onset features for content-based offset estimation: visual change events and audio onsets.

All features are plain numpy arrays with explicit time axes, so the loader can cache them and the
estimators can be fed without decoding again.

Audio onset grid (``hop`` = ``hop_samples / sample_rate``)::

    samples  |....|....|....|....|....|        bins of hop_samples, bin m covers [m*hop, (m+1)*hop)
    energy      E0   E1   E2   E3   E4         (Hann-smoothed over neighbouring bins, centred)
    rise          ^d1  ^d2  ^d3  ^d4           d[m] = max(E[m] - E[m-1], 0) placed at start + m*hop

A sound starting at time ``t0`` makes a bell-shaped ``d`` centred on ``t0`` (the smoothing kernel is
symmetric and the energy is linear, not log, so the bell's centre is not pulled early) — for a sharp
attack. A smooth attack moves the bell late by about half the attack, which is why the A/V estimator no
longer uses this envelope but dated events (``aligner._onsets.audio_onsets``); the envelope is kept for
callers that cache it.

Visual events: the value for frame ``k`` measures the change *entering* frame ``k`` (from ``k-1``), and it
happens at ``pts_seconds[k]``: the frame is shown over ``[pts[k], pts[k+1])`` and a flash or cut
becomes visible at its first instant, ``pts[k]``.
"""
from __future__ import annotations

import logging
from typing import Literal

import numpy as np
import torch

logger = logging.getLogger(__name__)

__all__ = [
    "VisualFeature",
    "background_rise",
    "audio_onset_envelope",
    "check_finite_samples",
    "frame_bounds",
    "log_energy",
    "mono",
    "visual_change_events",
    "window_mean_square",
]

VisualFeature = Literal["background_rise", "luma_rise", "frame_difference"]

_LUMA_WEIGHTS = (0.299, 0.587, 0.114)
# Frames are reduced to about this many pixels on the short side before any arithmetic.
_TARGET_SHORT_SIDE_PIXELS = 32
# background_rise: blocks of an 8-column grid (6 rows at 4:3, 4-5 at 16:9).
_GRID_COLUMNS = 8


def check_finite_samples(array: np.ndarray) -> None:
    """Raise ValueError when audio samples ``[C, N]`` or ``[N]`` hold NaN or infinity (a broken float PCM stream):
    every estimate from them would be NaN, and the aligned audio NaN in a training batch.

    One summing pass; the samples are searched for the first bad one only when the sum is not finite.
    """
    if array.size == 0 or array.dtype.kind != "f" or np.isfinite(array.sum(dtype=np.float64)):
        return
    bad = ~np.isfinite(array)
    if not bad.any():  # finite samples whose sum overflowed
        return
    where = np.argwhere(bad)[0]
    at = f"sample {where[-1]}" + (f" of channel {where[0]}" if array.ndim == 2 else "")
    raise ValueError(f"audio samples must be finite: {int(bad.sum())} of {array.size} samples are NaN or infinite, the first "
                     f"at {at}; the audio is broken (float PCM with NaN/inf): repair it or skip the clip")


def mono(samples: torch.Tensor | np.ndarray, *, keep_float32: bool = False) -> np.ndarray:
    """Average channels of ``[C, N]`` (or pass ``[N]`` through) into float64 ``[N]``.

    With ``keep_float32`` float32 input stays float32 and one channel is returned as a view of ``samples`` (read
    it, do not write to it): for callers that walk a long clip block by block and convert a block at a time (2 h at
    16 kHz: no copy instead of 0.92 GB of float64).

    Raises:
        ValueError: not ``[C, N]`` (``C >= 1``) or ``[N]``, or a sample is NaN or infinite (:func:`check_finite_samples`).
    """
    array = samples.detach().cpu().numpy() if isinstance(samples, torch.Tensor) else np.asarray(samples)
    check_finite_samples(array)
    if array.ndim == 2 and array.shape[0] == 0:  # the mean of no channel is NaN at every sample
        raise ValueError(f"audio samples must have at least one channel, got shape {array.shape}")
    if array.ndim == 2:
        array = array[0] if keep_float32 and array.shape[0] == 1 else array.mean(axis=0)
    if array.ndim != 1:
        raise ValueError(f"audio samples must be [C, N] or [N], got shape {array.shape}; pass AudioClip.samples")
    if keep_float32 and array.dtype == np.float32:
        return array
    return array.astype(np.float64, copy=False)


_BLOCK_LUMA_CHUNK_BYTES = 4 << 20


def _block_luma(tensor: torch.Tensor) -> np.ndarray:
    """``[T, rows, cols]`` mean luma of an 8-column grid of square blocks, each averaged over a lattice of
    about 8 x 8 pixels (a moving texture averages out inside a block instead of aliasing; the full-size
    frames are never converted to float: one pass over the lattice's uint8 pixels)."""
    height, width = int(tensor.shape[1]), int(tensor.shape[2])
    side = max(1, width // _GRID_COLUMNS)
    rows, cols = max(1, height // side), min(_GRID_COLUMNS, width)
    within = torch.arange(0, side, max(1, side // 8))
    per_block = int(within.numel())
    row_index = (torch.arange(rows)[:, None] * side + within[None, :]).reshape(-1)
    col_index = (torch.arange(cols)[:, None] * side + within[None, :]).reshape(-1)
    num = int(tensor.shape[0])
    channels = min(3, int(tensor.shape[3])) if tensor.ndim == 4 else 1
    # Frames in chunks of about _BLOCK_LUMA_CHUNK_BYTES (4 MB) of lattice: the int32 sum works on a widened copy of its
    # input (4x the uint8 lattice), 1.5 GB for 2 h of 64x48 frames at 5 fps taken whole (BENCHMARKS.md, "Long media:
    # the video buffer and the visual events"). Integer sums per frame: the result does not depend on the chunking.
    step = max(1, _BLOCK_LUMA_CHUNK_BYTES // max(1, int(row_index.numel()) * int(col_index.numel()) * channels))
    sums = torch.empty((num, rows, cols, channels), dtype=torch.int32)
    for first in range(0, num, step):
        lattice = tensor[first:first + step].index_select(1, row_index).index_select(2, col_index)
        if lattice.ndim == 3:
            lattice = lattice[..., None]
        lattice = lattice[..., :3].contiguous()
        count = int(lattice.shape[0])
        sums[first:first + count] = lattice.view(count, rows, per_block, cols, per_block, channels).sum(
            dim=(2, 4), dtype=torch.int32)
    means = sums.double().numpy() / float(per_block * per_block)
    if channels >= 3:
        return means @ np.asarray(_LUMA_WEIGHTS)
    return means.mean(axis=-1)


def background_rise(frames: torch.Tensor | np.ndarray) -> np.ndarray:
    """Per-frame brightening that stands out of both the previous frame and the recent background.

    For each block ``b`` of an 8-column grid (block mean luma ``M[k, b]``)::

        r[k, b] = max(0, min(M[k,b] − M[k−1,b],  M[k,b] − median(M[k−4..k−1, b])))
        s[k]    = mean of the largest eighth of r[k, :]        (a flash over 1/8 of the frame counts fully)
        out[k]  = max(0, s[k] − median(s[k−15..k+15]))        (steady motion raises s everywhere: removed)

    A flash lasting 1-3 frames gives one value, at its first frame (the next frames do not rise over
    the previous one); its end gives nothing. Camera pans, drifting texture and moving objects change
    block means by both signs and steadily, so both minima and the running median remove most of it.
    A hard cut to a brighter scene still gives an event (a nuisance the correlation tolerates).
    """
    tensor = torch.as_tensor(frames)
    if tensor.ndim not in (3, 4):
        raise ValueError(f"frames must be [T, H, W, C] or [T, H, W], got shape {tuple(tensor.shape)}")
    num_frames = int(tensor.shape[0])
    out = np.zeros(num_frames, dtype=np.float64)
    if num_frames < 2:
        return out
    blocks = _block_luma(tensor).reshape(num_frames, -1)
    step = np.zeros_like(blocks)
    step[1:] = blocks[1:] - blocks[:-1]
    history = np.stack([np.roll(blocks, lag, axis=0) for lag in range(1, 5)])
    history[:, :4] = blocks[:1]  # before the clip: the first frame
    background = np.median(history, axis=0)
    rise = np.maximum(0.0, np.minimum(step, blocks - background))
    top = max(1, blocks.shape[1] // 8)
    strength = np.sort(rise, axis=1)[:, -top:].mean(axis=1)
    import scipy.ndimage

    running = scipy.ndimage.median_filter(strength, size=31, mode="nearest")
    out[1:] = np.maximum(0.0, strength - running)[1:]
    return out


def visual_change_events(
    frames: torch.Tensor | np.ndarray, *, feature: VisualFeature = "background_rise"
) -> np.ndarray:
    """Per-frame change strength (>= 0) entering each frame; ``out[0] == 0``.

    Args:
        frames: uint8 ``[T, H, W, C]`` (RGB) or ``[T, H, W]`` (grey).
        feature: ``"background_rise"`` (default) — block brightening over the previous frame and the
            recent background, steady motion removed (see :func:`background_rise`; robust to pans, moving
            texture and objects, finds partial and coloured flashes); ``"luma_rise"`` — positive part of
            the change of mean luma (full-frame flashes on a still background); ``"frame_difference"`` —
            mean absolute luma difference between consecutive frames (moving or jumping content, cuts).

    Returns:
        float64 ``[T]`` in luma units (0..255).

    Raises:
        ValueError: an unknown ``feature``; frames not ``[T, H, W, C]`` / ``[T, H, W]``, or frames without pixels
            (a height, width or channel count of 0).
    """
    if feature not in ("background_rise", "luma_rise", "frame_difference"):
        raise ValueError(f"feature must be 'background_rise', 'luma_rise' or 'frame_difference', got {feature!r}")
    shape = tuple(torch.as_tensor(frames).shape)  # no copy of a tensor or an array
    if len(shape) in (3, 4) and shape[0] > 0 and 0 in shape[1:]:
        raise ValueError(f"frames must have pixels (height, width and channels > 0), got shape {shape}")
    if feature == "background_rise":
        return background_rise(frames)
    tensor = torch.as_tensor(frames)
    if tensor.ndim not in (3, 4):
        raise ValueError(f"frames must be [T, H, W, C] or [T, H, W], got shape {tuple(tensor.shape)}")
    num_frames = int(tensor.shape[0])
    if num_frames == 0:
        return np.zeros(0, dtype=np.float64)
    stride = max(1, min(int(tensor.shape[1]), int(tensor.shape[2])) // _TARGET_SHORT_SIDE_PIXELS)
    small = tensor[:, ::stride, ::stride].to(torch.float32)
    if small.ndim == 4:
        if small.shape[-1] >= 3:
            weights = torch.tensor(_LUMA_WEIGHTS, dtype=torch.float32)
            luma = small[..., :3] @ weights
        else:
            luma = small.mean(dim=-1)
    else:
        luma = small
    out = np.zeros(num_frames, dtype=np.float64)
    if num_frames < 2:
        return out
    if feature == "luma_rise":
        mean_luma = luma.flatten(1).mean(dim=1).double().numpy()
        out[1:] = np.maximum(np.diff(mean_luma), 0.0)
    else:
        out[1:] = (luma[1:] - luma[:-1]).abs().flatten(1).mean(dim=1).double().numpy()
    return out


def audio_onset_envelope(
    samples: torch.Tensor | np.ndarray,
    sample_rate: int,
    *,
    hop_seconds: float = 0.001,
    smooth_seconds: float = 0.008,
) -> tuple[np.ndarray, float]:
    """Onset strength of audio on a fine grid: positive rise of smoothed linear energy, log-compressed.

    Args:
        samples: ``[C, N]`` or ``[N]`` float audio.
        sample_rate: samples per second.
        hop_seconds: grid step (rounded to a whole number of samples).
        smooth_seconds: length of the Hann kernel smoothing the per-bin energy.

    Returns:
        ``(onset, hop_seconds)``: float64 ``[M]`` (``M = N // hop_samples``), where ``onset[m]`` is at
        ``start_seconds + m * hop_seconds`` of the clip, and the exact hop used.
    """
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    hop_samples = max(1, int(round(hop_seconds * sample_rate)))
    signal = mono(samples)
    num_bins = signal.size // hop_samples
    exact_hop_seconds = hop_samples / sample_rate
    if num_bins < 3:
        return np.zeros(num_bins, dtype=np.float64), exact_hop_seconds
    energy = np.square(signal[: num_bins * hop_samples]).reshape(num_bins, hop_samples).sum(axis=1)
    taps = max(3, int(round(smooth_seconds / exact_hop_seconds)) | 1)  # odd: centred kernel
    kernel = np.hanning(taps + 2)[1:-1]
    kernel /= kernel.sum()
    smooth = np.convolve(energy, kernel, mode="same")
    rise = np.zeros(num_bins, dtype=np.float64)
    rise[1:] = np.maximum(np.diff(smooth), 0.0)
    positive = rise[rise > 0]
    if positive.size == 0:
        return rise, exact_hop_seconds
    scale = float(np.median(positive)) + 1e-30
    return np.log1p(rise / scale), exact_hop_seconds


def log_energy(
    samples: torch.Tensor | np.ndarray,
    sample_rate: int,
    *,
    hop_seconds: float = 0.01,
    window_seconds: float | None = None,
    less: float = 0.0,
) -> tuple[np.ndarray, float]:
    """Log energy (dB) of frames centred on ``m * hop`` (``m = 0, 1, …``), window ``window_seconds``.

    Frame ``m`` covers ``[m*hop - window/2, m*hop + window/2)`` of the clip (zero outside it), its samples taken less
    ``less`` (a DC offset the caller found), except samples that are exactly 0 (digital silence stays silent).

    Returns:
        ``(level_db, hop_seconds)``: float64 ``[M]`` with ``M = N // hop_samples`` and the exact hop.
    """
    if not sample_rate > 0:
        raise ValueError(f"sample_rate must be > 0, got {sample_rate = }")
    hop_samples = max(1, int(round(hop_seconds * sample_rate)))
    window_samples = hop_samples if window_seconds is None else max(1, int(round(window_seconds * sample_rate)))
    signal = mono(samples, keep_float32=True)
    num_frames = signal.size // hop_samples
    power = np.empty(num_frames, dtype=np.float64)
    chunk = max(1, _CHUNK_SAMPLES // hop_samples)  # frames per chunk: the float64 copy is of one chunk, not the clip
    for first in range(0, num_frames, chunk):
        stop = min(first + chunk, num_frames)
        lo, hi = frame_bounds(first, stop, hop_samples, window_samples, signal.size)
        segment = signal[lo[0] : hi[-1]]
        if less:  # digital silence (exact zeros) is no offset: it stays silent
            segment = np.where(segment != 0, segment - segment.dtype.type(less), segment)
        power[first:stop] = window_mean_square(segment, lo - lo[0], hi - lo[0], window_samples)
    return 10.0 * np.log10(power + 1e-12), hop_samples / sample_rate


# log_energy and the band energy convert and sum about this many samples at a time.
_CHUNK_SAMPLES = 1 << 18


def frame_bounds(first: int, stop: int, hop_samples: int, window_samples: int,
                 num_samples: int) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` int64: the samples ``[lo, hi)`` of frames ``first .. stop-1`` of :func:`log_energy` (frame ``m``
    covers ``[m*hop - window//2, m*hop - window//2 + window)``, cut to the clip ``[0, num_samples)``)."""
    starts = np.arange(first, stop, dtype=np.int64) * hop_samples - window_samples // 2
    return np.clip(starts, 0, num_samples), np.clip(starts + window_samples, 0, num_samples)


def window_mean_square(segment: np.ndarray, lo: np.ndarray, hi: np.ndarray, window_samples: int) -> np.ndarray:
    """float64: the sum of squares of ``segment[lo:hi]`` for each pair, over ``window_samples`` (a running sum
    of the segment in float64: one segment-long array)."""
    cumulative = np.empty(segment.size + 1)
    cumulative[0] = 0.0
    np.square(segment, out=cumulative[1:], dtype=np.float64)
    np.cumsum(cumulative[1:], out=cumulative[1:])
    return (cumulative[hi] - cumulative[lo]) / window_samples
