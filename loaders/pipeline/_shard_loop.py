"""The shard loop: one shard's tar (read by ``loaders._shards``) → typed events in tar order, bundled in steps.

Every event has a position ``(shard_position, event_index, window_index)``: ``event_index`` counts the samples
(and the shard-level problem reports) of a shard in tar order, ``window_index`` the items of one sample. Events:

- :class:`ItemEvent`: one batch item (a sample, or one of its windows);
- :class:`SkipEvent`: a sample (or a shard-level problem) skipped, with its shard, key, reason and message;
- :class:`ShardEnd`: the shard is done (what a worker sends so the merging side moves to the next shard).

:func:`shard_steps` gives a shard's events bundled per ``event_index`` (one step, possibly empty, per sample or
report), and :func:`interleave_steps` merges several shards' steps round-robin: step ``e`` of every open shard of a
group before step ``e + 1`` of any (the order of :func:`~loaders.pipeline._resume.order_key`).
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Optional, Union

from avcore import BatchItem, SampleError
from loaders._shards import ShardError, group_by_key, tar_members
from loaders._skip_log import SkipLog
from loaders.pipeline._items import sample_items
from loaders.pipeline._options import SampleOptions
from loaders.pipeline._resume import ResumePlan
from loaders.pipeline._text import check_tokenizer

logger = logging.getLogger(__name__)

__all__ = ["Event", "ItemEvent", "Position", "ShardEnd", "SkipEvent", "interleave_steps", "shard_groups", "shard_steps"]

Position = tuple[int, int, int]
SHARD_REASONS_NOT_READ = ("open", "truncated", "member_type", "unsafe_name", "too_large", "stray_member")
"""Shard-level reports that took no sample from the shard (not counted in ``samples_read``; ``stray_member``: a member
dropped from a sample that was read and delivered)."""


@dataclass(frozen=True)
class ItemEvent:
    """One batch item at ``position``."""

    position: Position
    item: BatchItem
    sample_key: str = ""
    """The key of the sample the item comes from (a window's item key has ``@index`` added)."""


@dataclass(frozen=True)
class SkipEvent:
    """A skipped sample or shard-level problem at ``position``."""

    position: Position
    shard: str
    key: str
    reason: str
    """A code from ``loaders.errors.REASONS``."""
    message: str
    was_read: bool
    """False for shard-level reports that took no sample from the shard (``open``, ``truncated``…)."""
    sample_key: str = ""
    """The key of the skipped sample as the tar names it (``key`` may name one of its windows); empty for reports."""


@dataclass(frozen=True)
class ShardEnd:
    """All events of shard ``shard_position`` have been sent."""

    shard_position: int


Event = Union[ItemEvent, SkipEvent, ShardEnd]


def shard_steps(shard_position: int, url: str, options: SampleOptions, plan: ResumePlan,
                skip_log: Optional[SkipLog] = None) -> Iterator[list[Event]]:
    """The events of one shard bundled by ``event_index``: step ``e`` holds the events at ``(shard_position, e, *)``
    (a sample's items or its skip, or one shard-level report); a sample the plan does not want is an empty step.
    Without :class:`ShardEnd` (the iterator ends). Skips are logged through ``skip_log`` (shared by the shards of
    one epoch: a cap on warnings per reason); a fresh one per call when None.

    Raises:
        SampleError: with ``on_error="raise"``, the first bad sample or shard problem.
        TypeError, ValueError: a tokenizer that fails on a probe text (``_text.check_tokenizer``), before any sample.
    """
    check_tokenizer(options.tokenizer)  # here, in the decoding process: never in the main one before workers fork
    reports: list[tuple[str, str, str]] = []
    event_index = 0
    skip_log = SkipLog() if skip_log is None else skip_log

    def drain() -> Iterator[list[Event]]:
        nonlocal event_index
        while reports:
            shard, name, reason = reports.pop(0)
            yield [SkipEvent((shard_position, event_index, 0), shard, name, reason, f"shard problem: {reason}",
                             reason not in SHARD_REASONS_NOT_READ)]
            event_index += 1

    report: Callable[[str, str, str], None] = lambda shard, name, reason: reports.append((shard, name, reason))
    try:
        members = tar_members(url, pipe_stall_seconds=options.pipe_stall_seconds)
        samples = group_by_key(members, url=url, on_error=options.on_error, report=report, skip_log=skip_log)
        while True:
            try:
                sample = next(samples, None)
            except ShardError as error:
                if options.on_error == "raise" or error.reason != "open":
                    raise
                skip_log.skipped(logger, "open", f"skipping shard: {error}")
                report(url, "", "open")
                sample = None
            if sample is None:
                break
            yield from drain()
            position = (shard_position, event_index)
            event_index += 1
            plan.check_key(position, sample["__key__"], url)
            if not plan.wants(*position):
                yield []
                continue
            try:
                items = sample_items(sample, options)
            except SampleError as error:
                if options.on_error == "raise":
                    raise
                skip_log.skipped(logger, error.reason, f"skipping sample: {error}")
                yield [SkipEvent(position + (0,), error.shard, error.key, error.reason, str(error), True,
                                 sample["__key__"])]
                continue
            key = sample["__key__"]
            yield [ItemEvent(position + (window_index,), item, key) for window_index, item in enumerate(items)]
    except ShardError as error:
        raise SampleError(error.message, shard=error.shard, key=error.key, reason=error.reason) from None
    yield from drain()


def interleave_steps(streams: Sequence[Iterator[list[Event]]]) -> Iterator[Event]:
    """Round-robin over the shards' steps (``streams`` in shard order): step 0 of each, then step 1 of each still
    open, … — the order :func:`~loaders.pipeline._resume.order_key` sorts positions in within one group of shards."""
    active = list(streams)
    while active:
        still = []
        for stream in active:
            step = next(stream, None)
            if step is not None:
                yield from step
                still.append(stream)
        active = still


def shard_groups(jobs: Sequence[tuple[int, str]], interleave: int) -> list[list[tuple[int, str]]]:
    """``jobs`` (``(shard_position, url)``, in order) grouped by ``shard_position // interleave``, groups in order."""
    groups: dict[int, list[tuple[int, str]]] = {}
    for job in jobs:
        groups.setdefault(job[0] // interleave, []).append(job)
    return [groups[g] for g in sorted(groups)]
