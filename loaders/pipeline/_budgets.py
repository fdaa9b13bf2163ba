"""The over-budget rule: one check for the packer (plan and online), the item stage and the collator.

A budget is a per-column capacity (frames, audio samples, tokens, and for the item stage also items, words,
segments); a length is over it when strictly greater (a length equal to the budget fits).
"""
from __future__ import annotations

from typing import Optional, Sequence, Union

import numpy as np

__all__ = ["first_over_budget"]


def first_over_budget(
    lengths: Union[Sequence[int], np.ndarray], budgets: Union[Sequence[int], np.ndarray]
) -> Optional[tuple[int, ...]]:
    """Where ``lengths`` first exceeds ``budgets``, or None when everything fits.

    Args:
        lengths: one row of per-column lengths (an item, or a pack's totals), or a 2-D table of rows.
        budgets: the per-column budgets (as many as ``lengths`` has columns).

    Returns:
        ``(column,)`` for a row, ``(row, column)`` for a table (row-major order); None when no length is over.

    Example:
        >>> first_over_budget((10, 16000, 3), (20, 8000, 8))
        (1,)
        >>> first_over_budget(np.array([[1, 2], [3, 9]]), (5, 5))
        (1, 1)
    """
    if isinstance(lengths, np.ndarray) and lengths.ndim == 2:
        over = lengths > np.asarray(budgets)
        return tuple(int(v) for v in np.argwhere(over)[0]) if over.any() else None
    for column, (length, budget) in enumerate(zip(lengths, budgets)):
        if length > budget:
            return (column,)
    return None
