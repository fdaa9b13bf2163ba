"""How skipped samples are logged: the first few of each reason as warnings, the rest counted silently.

A shard of 10,000 unreadable samples used to write 10,000 warning lines, drowning a training log. Now, per epoch
and per process (each DataLoader worker counts its own):

- the first :data:`WARNINGS_PER_REASON` skips of a reason: one warning each, naming shard, key and reason;
- the next one of that reason: one warning saying that further skips of it are logged at DEBUG only, and where
  the exact counts and keys are (``stats.skipped`` / ``stats.skipped_samples``);
- after that: DEBUG lines (``AVALIGN_LOG=debug`` / ``-vv`` shows them);
- at the end of the epoch: one line with the counts by reason (:func:`skip_summary`).

Logging never changes what is counted: the counts live in the dataset's counters, not here.
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Optional

__all__ = ["WARNINGS_PER_REASON", "SkipLog", "skip_summary"]

WARNINGS_PER_REASON = 5
"""Skips of one reason logged as warnings (each naming its shard and key) per epoch and process before the rest go
to DEBUG. Five show whether a reason is one odd file or a pattern (the same shard, consecutive keys, one codec)
and which keys to look at first; beyond that a line per sample tells nothing new and buries the training log. The
full list is in ``stats.skipped_samples``."""


class SkipLog:
    """Logs skips with a per-reason cap on warnings (see the module docstring); one per epoch and process.

    Args:
        where: Where the counts can be read, named in the "counted silently" line.
        scope: What the cap is counted over, in that line (``"this epoch"``, ``"in this shard"``).
        warnings_per_reason: Warnings per reason before DEBUG (default :data:`WARNINGS_PER_REASON`).

    Example:
        >>> log = SkipLog()
        >>> for i in range(7):
        ...     log.skipped(logging.getLogger("demo"), "decode", f"skipping sample: k{i} cannot be decoded")
        >>> log.logged
        {'decode': 7}
    """

    def __init__(self, *, where: str = "stats.skipped_samples", scope: str = "this epoch",
                 warnings_per_reason: int = WARNINGS_PER_REASON) -> None:
        self._where = where
        self._scope = scope
        self._warnings_per_reason = int(warnings_per_reason)
        self._counts: Counter[str] = Counter()

    @property
    def logged(self) -> dict[str, int]:
        """Skips seen so far by reason (warned or not)."""
        return dict(self._counts)

    def skipped(self, logger: logging.Logger, reason: str, message: str) -> None:
        """Log one skip of ``reason`` on ``logger``: ``message`` (which names shard, key and reason) as a warning
        while the reason is under its cap, else at DEBUG (announced once, with the first one past the cap)."""
        self._counts[reason] += 1
        seen = self._counts[reason]
        if seen <= self._warnings_per_reason:
            logger.warning("%s", message)
            return
        if seen == self._warnings_per_reason + 1:
            logger.warning("%d samples skipped as %r so far: further %r skips %s are counted silently (logged at "
                           "DEBUG); their keys and exact counts are in %s", seen, reason, reason, self._scope, self._where)
        logger.debug("%s", message)

    def log_summary(self, logger: logging.Logger, skipped: Iterable[tuple[str, str, str]], *, context: str) -> None:
        """One line for the epoch: the counts of ``skipped`` (``(shard, key, reason)`` rows: the exact counters) by
        reason, after ``context`` (``"epoch 3"``); a warning when a reason has more skips than the cap (some went
        unlogged here or in a worker process), else INFO; nothing when nothing was skipped."""
        rows = list(skipped)
        summary = skip_summary(rows)
        if summary is None:
            return
        counts = Counter(reason for _, _, reason in rows)
        silent = any(n > self._warnings_per_reason for n in counts.values())
        logger.log(logging.WARNING if silent else logging.INFO, "%s: %s (%s lists them)", context, summary, self._where)


def skip_summary(skipped: Iterable[tuple[str, str, str]]) -> Optional[str]:
    """``"12 sample(s) skipped: decode 10, transcript 2"`` for ``(shard, key, reason)`` rows (most frequent first,
    then by name), or None when there are none. Rows without a key are shard-level problems (a shard that could not
    be opened, is not a tar, or whose damage came before any sample), counted apart: ``"1 shard problem(s): open 1"``;
    when a shard was truncated, the samples after the damage are unknown: the line says they are lost, uncounted."""
    rows = list(skipped)

    def counted(reasons: Iterable[str]) -> str:
        counts: Mapping[str, int] = Counter(reasons)
        return ", ".join(f"{reason} {n}" for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    samples = [reason for _, key, reason in rows if key]
    shards = [reason for _, key, reason in rows if not key]
    parts = []
    if samples:
        parts.append(f"{len(samples)} sample(s) skipped: {counted(samples)}")
    if shards:
        parts.append(f"{len(shards)} shard problem(s): {counted(shards)}")
    if not parts:
        return None
    if "truncated" in samples + shards:
        parts.append("a truncated shard's samples after the damage are lost and not counted")
    return "; ".join(parts)
