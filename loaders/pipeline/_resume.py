"""Resume state of one epoch: what a pass has delivered, and which samples a restored pass must decode again.

The state after a yielded batch is: the epoch, the position of the next item the packer has not pulled,
the packer's state (keys, lengths and positions of buffered items: no tensors), the skipped list and the
counters. Restoring only stores it; the next pass starts at the earliest shard that holds a buffered item,
reads past samples before ``next_position`` that are not buffered (no decode), decodes the buffered ones
again (at most ``buffer_size``), then continues. Nothing is replayed from the start of the epoch.

Order of an epoch's items: ``make_dataset`` reads its shards one after the other (position order ``(p, e, w)``);
``make_loader`` reads groups of ``interleave`` shards at once, sample by sample (:func:`order_key`), so that its
workers move through their shards in step. Every comparison of positions goes through :func:`order_key`::

    interleave = 2, shards p = 0, 1 (group 0), 2, 3 (group 1); e = sample index in its shard
    read order: (0,e0) (1,e0) (0,e1) (1,e1) (0,e2) (1,e2) … | (2,e0) (3,e0) (2,e1) …
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["EpochCounters", "ResumePlan", "STATE_VERSION", "mix_seed", "order_key"]

STATE_VERSION = 2
"""Version of the saved state (2: typed counters, worker slot, decode errors)."""


def order_key(position: tuple[int, ...], interleave: int = 1) -> tuple[int, ...]:
    """Sort key of a position ``(shard_position, event_index[, window_index])`` in an epoch whose shards are read
    ``interleave`` at a time, round-robin by sample: ``(group, event_index, shard within group[, window])``.
    ``interleave=1`` is plain position order."""
    p, e = int(position[0]), int(position[1])
    return (p // interleave, e, p % interleave) + tuple(int(v) for v in position[2:])


@dataclass(frozen=True)
class ResumePlan:
    """Which samples a (restored) pass must decode: everything from ``next_position`` on, plus ``needed``."""

    next_position: tuple[int, int, int] = (0, 0, 0)
    """First item not yet pulled by the packer."""
    needed: frozenset = frozenset()
    """``(shard_position, event_index)`` of samples whose items are buffered in the packer."""
    interleave: int = 1
    """Shards read at a time (see :func:`order_key`)."""
    read_keys: tuple = ()
    """``(shard_position, event_index, key)`` of the last sample read from each shard in progress when the state was
    saved: the same position must hold the same key again, or the shard changed."""

    def check_key(self, position: tuple[int, int], key: str, shard: str) -> None:
        """Raises RuntimeError when ``position`` held another sample when the state was saved."""
        for p, e, saved in self.read_keys:
            if (p, e) == tuple(position) and saved and saved != key:
                raise RuntimeError(f"shard {shard!r} was modified since the loader state was saved: its sample {e} "
                                   f"was {saved!r} and is now {key!r}; resume on the shards the state was saved with, "
                                   "or start the epoch afresh without loading the state.")

    @property
    def first_shard(self) -> int:
        """The first shard a pass must open (the first of its group)."""
        first = min([self.next_position[0]] + [p for p, _ in self.needed])
        return first - first % self.interleave

    def wants(self, shard_position: int, event_index: int) -> bool:
        """True when the sample at this position must be decoded."""
        sample = (shard_position, event_index)
        return (order_key(sample, self.interleave) >= order_key(self.next_position[:2], self.interleave)
                or sample in self.needed)


@dataclass
class EpochCounters:
    """Counters of one epoch (saved with the state)."""

    samples_read: int = 0
    items_read: int = 0
    """Items (samples or windows) that reached the packer."""
    items_yielded: int = 0
    batches_yielded: int = 0
    batches_dropped: int = 0
    spans_outside: int = 0
    decode_errors: int = 0
    caption_words_failed: int = 0
    shards_failed: list = field(default_factory=list)
    """URLs of this pass's shards that could not be opened."""
    skipped: list = field(default_factory=list)
    """``(shard, key, reason)`` of every skip, in order."""
    members_dropped: list = field(default_factory=list)
    """``(shard, key, "stray_member")`` of every sample delivered without a member of it (not adjacent in the tar)."""
    duplicate_keys: list = field(default_factory=list)
    """``(shard, key)`` of every sample delivered whose key an earlier sample of this epoch (in this copy) had."""
    capacity: list = field(default_factory=lambda: [0, 0, 0])
    """Summed capacity (frames, samples, tokens) of the batches collated from packs (a trimmed tail: its own)."""
    used: list = field(default_factory=lambda: [0, 0, 0])
    """Summed lengths (frames, samples, tokens) of the items in those batches."""

    def to_state(self) -> dict[str, Any]:
        return {
            "samples_read": self.samples_read, "items_read": self.items_read, "items_yielded": self.items_yielded,
            "batches_yielded": self.batches_yielded, "batches_dropped": self.batches_dropped,
            "spans_outside": self.spans_outside, "decode_errors": self.decode_errors,
            "caption_words_failed": self.caption_words_failed, "shards_failed": list(self.shards_failed),
            "skipped": [list(s) for s in self.skipped], "members_dropped": [list(s) for s in self.members_dropped],
            "duplicate_keys": [list(s) for s in self.duplicate_keys], "capacity": list(self.capacity), "used": list(self.used),
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> "EpochCounters":
        counters = cls(**{k: int(state.get(k, 0)) for k in ("samples_read", "items_read", "items_yielded", "batches_yielded",
                                                              "batches_dropped", "spans_outside", "decode_errors",
                                                              "caption_words_failed")})
        counters.shards_failed = list(state.get("shards_failed", []))
        counters.skipped = [tuple(s) for s in state.get("skipped", [])]
        counters.members_dropped = [tuple(s) for s in state.get("members_dropped", [])]
        counters.duplicate_keys = [tuple(s) for s in state.get("duplicate_keys", [])]
        counters.capacity = [int(v) for v in state.get("capacity", [0, 0, 0])]
        counters.used = [int(v) for v in state.get("used", [0, 0, 0])]
        return counters


def mix_seed(*values: int) -> int:
    """A deterministic 63-bit seed from a few ints (e.g. seed, epoch, rank, worker)."""
    import numpy as np

    return int(np.random.SeedSequence([int(v) for v in values]).generate_state(1, dtype=np.uint64)[0] >> 1)
