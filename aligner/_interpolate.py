"""Per-frame or per-hop features onto another timeline.

Modes:
    ``previous``  sample-and-hold: the value of the last source time <= t (the frame on screen at t;
                  the right choice for video features, matching the pts rule);
    ``nearest``   the source time closest to t (ties go to the earlier one);
    ``linear``    linear interpolation between the two source times around t (for smooth signals:
                  audio energy, pitch, embeddings); clamped at the ends.
Targets before the first source time take the first value in every mode (nothing earlier exists).
"""
from __future__ import annotations

import logging
from typing import Literal, get_args

import numpy as np
import torch

logger = logging.getLogger(__name__)

__all__ = ["InterpolationMode", "interpolate_features"]

InterpolationMode = Literal["previous", "nearest", "linear"]
"""How :func:`interpolate_features` reads between source times (module docstring)."""


def interpolate_features(values, source_seconds, target_seconds, *, mode: InterpolationMode = "previous"):
    """Resample ``values`` ``[T, ...]`` stamped at ``source_seconds`` ``[T]`` (sorted) onto ``target_seconds`` ``[U]``.

    Returns a tensor if ``values`` is a tensor, else a numpy array, shaped ``[U, ...]``.

    Raises:
        ValueError: an unknown ``mode``, ``source_seconds`` not 1-D, sorted and finite, ``target_seconds`` not finite,
            or not one value per source time.

    Example:
        >>> interpolate_features(np.array([0., 10.]), np.array([0., 1.]), np.array([0.25, 0.5]), mode="linear")
        array([2.5, 5. ])
    """
    if mode not in get_args(InterpolationMode):
        raise ValueError(f"mode must be one of {get_args(InterpolationMode)}, got {mode!r}")
    as_tensor = isinstance(values, torch.Tensor)
    v = values.detach().cpu().numpy() if as_tensor else np.asarray(values)
    src = np.asarray(source_seconds, dtype=np.float64)
    tgt = np.asarray(target_seconds, dtype=np.float64)
    if v.ndim == 0 or src.ndim != 1 or v.shape[0] != src.shape[0] or src.size == 0:
        raise ValueError(f"need one value per source time and at least one: values {v.shape}, times {src.shape}")
    for name, times in (("source_seconds", src), ("target_seconds", tgt)):
        if not np.isfinite(times).all():
            bad = ~np.isfinite(times).reshape(-1)
            raise ValueError(f"{name} must be finite: {np.count_nonzero(bad)} of {times.size} are NaN or infinite, "
                             f"the first at index {int(np.argmax(bad))}")
    if src.size > 1 and np.any(np.diff(src) < 0):
        raise ValueError("source_seconds must be sorted")
    right = np.searchsorted(src, tgt, side="right")
    prev = np.clip(right - 1, 0, src.size - 1)
    if mode == "previous":
        out = v[prev]
    elif mode == "nearest":
        nxt = np.clip(right, 0, src.size - 1)
        out = v[np.where(np.abs(src[nxt] - tgt) < np.abs(tgt - src[prev]), nxt, prev)]
    else:
        nxt = np.clip(right, 0, src.size - 1)
        gap = src[nxt] - src[prev]
        w = np.where(gap > 0, (tgt - src[prev]) / np.where(gap > 0, gap, 1), 0.0)
        w = np.clip(w, 0.0, 1.0).reshape((-1,) + (1,) * (v.ndim - 1))
        out = v[prev] * (1 - w) + v[nxt] * w
        out = out.astype(v.dtype if v.dtype.kind == "f" else np.float64)
    return torch.from_numpy(np.ascontiguousarray(out)) if as_tensor else out
