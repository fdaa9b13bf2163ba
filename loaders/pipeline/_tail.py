"""Tail policy: what happens to the last, partly filled batch of a packer's stream.

A packer's stream is one epoch of ``make_loader`` (one packer over every worker's items) or, for a DataLoader over
``make_dataset``, each worker's full packs followed by the merger's packs of every worker's last pack
(``loaders.pipeline._tail_merge``): one tail per epoch either way.
Its *tail* is the stream's last pack when that pack is not full: its fullest column is below the packer's
``min_fill``. The packer emits the least-filled pack of its final round last, so the tail is that pack::

    budget 240 frames    | pack | pack | pack | … | pack |  tail: 70 frames                       |
    tail="pad"           |  240 |  240 |  240 | … |  240 | [70 ....... padding to 240 ..........]   fixed shapes
    tail="trim"          |  240 |  240 |  240 | … |  240 | [70 .. to 90]   (multiple 30 = 240/8)    one of 8 sizes
    tail="drop"          |  240 |  240 |  240 | … |  240 |  (items skipped, reason "tail_dropped")  fixed shapes

``"trim"`` sizes the frames, audio samples and tokens of the tail batch (and the log-mel hops, which follow the
samples) to what it holds, rounded up to a multiple per column (default: an eighth of the budget, so a trimmed
column takes one of 8 sizes); the rows of items, words and segments keep their capacities. A batch's capacity is
the length of its tensors: ``frames.shape[0]``, ``audio.shape[0]``, ``token_spans.shape[0]``.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Literal, Optional

logger = logging.getLogger(__name__)

__all__ = ["TAIL_CHOICES", "TAIL_FRACTION", "Tail", "check_tail_multiple", "tail_capacities", "tail_multiples"]

Tail = Literal["pad", "trim", "drop"]
TAIL_CHOICES = ("pad", "trim", "drop")
TAIL_FRACTION = 8
"""Default ``tail_multiple``: each budget divided by this (rounded up), so a trimmed column has at most 8 sizes."""


def check_tail_multiple(tail_multiple: object) -> None:
    """Raises ValueError unless ``tail_multiple`` is None or 3 positive ints ``(frames, samples, tokens)``."""
    if tail_multiple is None:
        return
    values = tuple(tail_multiple) if isinstance(tail_multiple, (tuple, list)) else ()
    if len(values) != 3 or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ValueError(f"tail_multiple must be None or 3 positive ints (frames, samples, tokens), got "
                         f"{tail_multiple = !r}; try (30, 16000, 64).")


def tail_multiples(budgets: Sequence[int], tail_multiple: Optional[Sequence[int]] = None) -> tuple[int, int, int]:
    """The multiple each trimmed column is rounded up to: ``tail_multiple``, or each budget / 8 rounded up."""
    if tail_multiple is not None:
        return tuple(int(m) for m in tail_multiple)  # type: ignore[return-value]
    return tuple(-(-int(b) // TAIL_FRACTION) for b in budgets)  # type: ignore[return-value]


def tail_capacities(totals: Sequence[int], budgets: Sequence[int], multiples: Sequence[int]) -> tuple[int, int, int]:
    """Capacities of a trimmed batch: each column's total rounded up to its multiple (at least one multiple), at most
    the budget.

    Example:
        >>> tail_capacities((70, 0, 512), (240, 128000, 512), (30, 16000, 64))
        (90, 16000, 512)
    """
    out = []
    for total, budget, multiple in zip(totals, budgets, multiples):
        rounded = -(-max(int(total), 1) // int(multiple)) * int(multiple)
        out.append(min(rounded, int(budget)))
    return tuple(out)  # type: ignore[return-value]
