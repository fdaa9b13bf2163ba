"""Small robust statistics shared by the A/V and the text estimators (one owner for each)."""
from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["line_fit_theil_sen", "parabolic_peak", "robust_z", "standardise"]


def parabolic_peak(curve: np.ndarray, index: int) -> float:
    """Sub-sample position of the peak of ``curve`` near ``index`` (a parabola through three points).

    Returns ``index`` itself at either end of ``curve`` or where the three points are not concave; the
    correction is at most half a step either way.

    Example:
        >>> parabolic_peak(np.array([0.0, 1.0, 1.0, 0.0]), 1)
        1.5
    """
    if index <= 0 or index >= curve.size - 1:
        return float(index)
    left, centre, right = curve[index - 1], curve[index], curve[index + 1]
    denominator = left - 2.0 * centre + right
    if denominator >= 0:
        return float(index)
    return float(index) + float(np.clip(0.5 * (left - right) / denominator, -0.5, 0.5))


def robust_z(value: float, background: np.ndarray) -> float:
    """How many robust standard deviations ``value`` lies above ``background``: ``(value − median) / (1.4826·MAD)``.

    The spread is floored at ``1e-3·std(background)`` and ``1e-12`` so that a flat background gives a large,
    finite z.
    """
    centre = float(np.median(background))
    spread = 1.4826 * float(np.median(np.abs(background - centre)))
    spread = max(spread, 1e-3 * float(np.std(background)), 1e-12)
    return (value - centre) / spread


def standardise(curve: np.ndarray) -> np.ndarray:
    """``curve`` as robust z-scores against itself (every value through :func:`robust_z`'s median and spread)."""
    centre = float(np.median(curve))
    spread = 1.4826 * float(np.median(np.abs(curve - centre)))
    spread = max(spread, 1e-3 * float(np.std(curve)), 1e-12)
    return (curve - centre) / spread


def line_fit_theil_sen(times: np.ndarray, values: np.ndarray) -> tuple[float, float]:
    """Robust line ``values ≈ intercept + slope·times``: ``(intercept, slope)``.

    The slope is the median of the pairwise slopes (pairs with distinct times), the intercept the median of
    ``values − slope·times`` (``scipy.stats.theilslopes(method="joint")``). Needs at least two points.

    Example:
        >>> line_fit_theil_sen(np.arange(5.0), np.array([1.0, 3.0, 5.0, 7.0, 100.0]))   # one outlier
        (1.0, 2.0)
    """
    from scipy.stats import theilslopes

    result = theilslopes(values, times, method="joint")
    return float(result.intercept), float(result.slope)
