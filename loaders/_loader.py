"""``make_loader``: shards → decode → align → window → pack → collate, deterministic and resumable.

::

    rank's shards (shuffled per epoch, split by rank)       p = 0     1     2     3     4 …
    worker slots (shard p → worker p % num_workers)           w0    w1    w0    w1    w0
    each worker: read tar → decode → align → windows → events tagged (p, e, w)
    main process: merge in global order (p, e, w) → OnlinePacker → Collator → PackedBatch

Every item has a global position ``(shard_position, event_index, window_index)``: ``event_index`` counts the
samples (and shard-level error reports) of a shard in tar order. The main process reads shard ``p``'s events
from worker ``p % num_workers`` in order, so the packer sees the same stream for any ``num_workers`` and the
same seed gives the same batches (keys and tensor bytes) for 0, 1 or 2 workers.

Resume: ``state_dict()`` holds the epoch, the position of the next item the packer has not pulled, the
packer state (keys, lengths and positions of buffered items: no tensors), the skipped list and counters.
``load_state_dict()`` only stores it (microseconds). The next ``iter()`` starts the workers at the earliest
shard that holds a buffered item; samples before the next position that are not buffered are read past in
the tar without decoding, the buffered ones (at most ``buffer_size``) are decoded again, then the stream
continues. Nothing is replayed from the start of the epoch.

Multi-node: with ``torch.distributed`` initialised, each rank takes every ``world_size``-th shard. Ranks may
hold different numbers of items, so before each batch the ranks all-reduce whether they still have one:
``even_batches="drop"`` (default) stops every rank when the first runs out (the others' tail of this epoch
is dropped unread; shards are reshuffled each epoch, so a different tail each time); ``"pad"`` lets exhausted
ranks yield empty batches (``num_items == 0``) until the last rank is done. Either way all ranks yield the
same number of batches. The cost is one all-reduce of two ints per batch. Each rank saves its own state.
"""
from __future__ import annotations

import json
import logging
import os
import queue as queue_module
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

import torch

from loaders._audio import read_audio
from loaders._collate import Collator, PackedBatch, item_lengths
from loaders._index import FrameIndex
from loaders._pack import OnlinePacker, PackItem
from loaders._shards import ShardError, expand_shard_urls, group_by_key, shuffle_shards, split_shards, tar_members
from loaders._transcripts import pick_transcript, read_transcript
from loaders._video import DEFAULT_MAX_PIXELS, read_video
from loaders._window import split_windows
from loaders.errors import SampleError, sample_error

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # aligner imports loaders' records: no runtime import at module level (cycle)
    from aligner._align import AlignedSample

logger = logging.getLogger(__name__)

__all__ = ["Loader", "LoaderStats", "make_loader"]

OnError = Literal["skip", "raise"]
EvenBatches = Literal["drop", "pad"]
Position = tuple[int, int, int]
VIDEO_EXTENSIONS = ("mp4", "mkv", "webm", "mov", "avi", "m4v")
"""Tar member extensions read as the sample's media, first match wins."""
"""(member extension, transcript format) tried in order."""
_STATE_VERSION = 1
_QUEUE_SIZE = 8
"""Events a worker may run ahead of the main process, per worker."""
_PARENT_POLL_SECONDS = 0.5
"""How often a blocked worker checks that the main process is still alive."""
_SHARD_REASONS_NOT_READ = ("open", "truncated", "member_type", "unsafe_name", "too_large")
"""Shard-level reports that are not counted in ``samples_read`` (no sample was taken from the shard)."""


@dataclass(frozen=True)
class _Options:
    """What a worker needs to turn a shard into items (picklable)."""

    fps: Optional[float]
    sample_rate: int
    window_seconds: Optional[float]
    estimate: bool
    on_error: OnError
    budgets: tuple[int, int, int]
    decode_size: Optional[tuple[int, int]] = None
    max_pixels: int = DEFAULT_MAX_PIXELS


@dataclass(frozen=True)
class _ResumePlan:
    """Which samples a (restored) pass must decode: everything from ``next_position`` on, plus ``needed``."""

    next_position: Position
    """First item not yet pulled by the packer."""
    needed: frozenset
    """``(shard_position, event_index)`` of samples whose items are buffered in the packer."""

    @property
    def first_shard(self) -> int:
        return min([self.next_position[0]] + [p for p, _ in self.needed])

    def wants(self, shard_position: int, event_index: int) -> bool:
        """True when the sample at this position must be decoded."""
        return (shard_position, event_index) >= self.next_position[:2] or (shard_position, event_index) in self.needed


@dataclass(frozen=True)
class LoaderStats:
    """Counters of the current epoch (restored with the state)."""

    samples_read: int
    """Samples taken from the shards (decoded, or skipped as bad)."""
    items_yielded: int
    """Items (samples or windows) delivered inside batches."""
    batches_yielded: int
    """Batches delivered (including empty ones padded for rank sync)."""
    skipped: dict[str, int]
    """Skipped samples by reason code (``loaders.errors.REASONS``: ``decode``, ``missing_audio``, ``too_large``,
    ``transcript``, ``duplicate_key``, ``over_budget``…)."""
    skipped_samples: tuple[tuple[str, str, str], ...]
    """``(shard, key, reason)`` of every skipped sample or shard-level problem, in order."""
    padding: dict[str, float]
    """Fraction of the emitted capacity that is padding, per modality (``frames``, ``samples``, ``tokens``)."""
    batches_dropped_for_sync: int
    """1 when this rank stopped with a batch in hand because another rank ran out first (``even_batches="drop"``);
    the rest of its epoch is not read, so the batches lost are not counted beyond that one."""
    spans_outside: int = 0
    """Transcript words + segments that fell wholly outside their media (dropped by ``align``), summed over the
    delivered samples (``AlignmentReport.spans_outside``; counted once per sample, with its first window)."""


def _decode_sample(sample: dict, options: _Options) -> list[AlignedSample]:
    """One tar sample → its aligned items (windows). Raises SampleError with a reason code."""
    key, url = sample["__key__"], sample.get("__url__", "")
    media_ext = next((ext for ext in VIDEO_EXTENSIONS if ext in sample), None)
    if media_ext is None:
        members = sorted(k for k in sample if not k.startswith("__"))
        raise SampleError(f"no video member (have {members}; expected one of {list(VIDEO_EXTENSIONS)})",
                          shard=url, key=key, reason="missing_video")
    given: dict[str, Optional[float]] = {}
    if "align.json" in sample:
        try:
            record = json.loads(sample["align.json"])
            given = {name: record.get(name) for name in ("av_offset_ms", "drift_ppm", "text_offset_ms")}
        except (ValueError, AttributeError) as error:
            raise SampleError(f"align.json is not a JSON object: {error}", shard=url, key=key, reason="align_json") from None
    index = None
    if "frames.json" in sample:  # written by `avalign preprocess`: seek without scanning the file
        try:
            index = FrameIndex.from_json(json.loads(sample["frames.json"]))
        except (ValueError, KeyError, TypeError, IndexError) as error:
            logger.warning("%s: ignoring unreadable frames.json (%s); the file is scanned instead", key, error)
    try:
        media = sample[media_ext]
        video = read_video(media, fps=options.fps, frame_size=options.decode_size, frame_index=index,
                           max_pixels=options.max_pixels, name=f"{key}.{media_ext}")
        audio = read_audio(media, name=f"{key}.{media_ext}")
    except Exception as error:  # noqa: BLE001 - one sample's failure is that sample's skip (errors.sample_error)
        raise sample_error(error, shard=url, key=key, stage="decode") from None
    transcript = None
    ext = pick_transcript(sample, sample.__getitem__)  # a video2dataset key.json (metadata) is not one
    if ext is not None:
        try:
            transcript = read_transcript(sample[ext], format="json" if ext.endswith("json") else ext, name=f"{key}.{ext}")
        except Exception as error:  # noqa: BLE001
            raise sample_error(error, shard=url, key=key, stage="transcript") from None
    if given:
        values = {name: float(value or 0.0) for name, value in given.items()}
        kwargs: dict[str, Any] = dict(estimate=False, **values)
    else:
        kwargs = dict(estimate=options.estimate)
    try:
        from aligner._align import align

        aligned = align(video, audio, transcript, sample_rate=options.sample_rate, key=key, **kwargs)
    except Exception as error:  # noqa: BLE001
        raise sample_error(error, shard=url, key=key, stage="align") from None
    return split_windows(aligned, window_seconds=options.window_seconds)


def _shard_events(shard_position: int, url: str, options: _Options, plan: _ResumePlan) -> Iterator[tuple]:
    """Events of one shard in tar order: ``("item", pos, AlignedSample)``, ``("skip", pos, shard, key, reason,
    message, was_read)``, then ``("end", shard_position)``. Samples the plan does not want are read past undecoded.
    ``was_read`` is False for shard-level reports that took no sample from the shard (``open``, ``truncated``…)."""
    reports: list[tuple[str, str, str]] = []

    def report(shard: str, name: str, reason: str) -> None:
        reports.append((shard, name, reason))

    try:
        yield from _shard_samples_events(shard_position, url, options, plan, report, reports)
    except ShardError as error:
        raise SampleError(error.message, shard=error.shard, key=error.key, reason=error.reason) from None


def _shard_samples_events(shard_position: int, url: str, options: _Options, plan: _ResumePlan, report: Any,
                          reports: list) -> Iterator[tuple]:
    """The body of :func:`_shard_events` (which converts shard errors to SampleError)."""
    event_index = 0

    def drain_reports() -> Iterator[tuple]:
        nonlocal event_index
        while reports:
            shard, name, reason = reports.pop(0)
            yield ("skip", (shard_position, event_index, 0), shard, name, reason, f"shard problem: {reason}",
                   reason not in _SHARD_REASONS_NOT_READ)
            event_index += 1

    samples = group_by_key(tar_members(url), url=url, on_error=options.on_error, report=report)
    while True:
        try:
            sample = next(samples, None)
        except ShardError as error:
            if options.on_error == "raise" or error.reason != "open":
                raise
            logger.warning("skipping shard: %s", error)
            report(url, "", "open")
            sample = None
        if sample is None:
            break
        yield from drain_reports()
        position = (shard_position, event_index)
        event_index += 1
        if not plan.wants(*position):
            continue
        try:
            items = _decode_sample(sample, options)
        except SampleError as error:
            if options.on_error == "raise":
                raise
            logger.warning("skipping sample: %s", error)
            yield ("skip", position + (0,), error.shard, error.key, error.reason, str(error), True)
            continue
        for window_index, item in enumerate(items):
            yield ("item", position + (window_index,), item)
    yield from drain_reports()
    yield ("end", shard_position)


def _worker_main(worker_id: int, jobs: list[tuple[int, str]], options: _Options, plan: _ResumePlan, out: Any, stop: Any) -> None:
    """Worker process: runs :func:`_shard_events` over its shards and puts the events on its queue.

    It exits when ``stop`` is set, and also when the main process is gone (SIGKILLed: then nobody sets
    ``stop``): every blocking wait polls ``os.getppid()`` and ends once it differs from the parent recorded
    at start (the orphan has been re-parented).
    """
    torch.set_num_threads(1)
    parent = os.getppid()

    def orphaned() -> bool:
        if os.getppid() == parent:
            return False
        out.cancel_join_thread()  # queued events can never be read: do not block the exit flushing them
        return True

    def put(event: tuple) -> bool:
        while not stop.is_set():
            try:
                out.put(event, timeout=_PARENT_POLL_SECONDS)
                return True
            except queue_module.Full:
                if orphaned():
                    return False
        return False

    try:
        for shard_position, url in jobs:
            for event in _shard_events(shard_position, url, options, plan):
                if not put(event):
                    return
    except SampleError as error:
        put(("error", "sample", error.message, error.shard, error.key, error.reason))
    except Exception as error:  # noqa: BLE001 - forwarded to the main process, which raises it
        put(("error", type(error).__name__, f"worker {worker_id}: {error}", "", "", "worker"))
    # Tensors travel as shared-memory handles served by this process: stay alive until the main process is done.
    while not stop.wait(_PARENT_POLL_SECONDS):
        if orphaned():
            return


class Loader:
    """Iterable over :class:`PackedBatch` for one epoch per ``iter()``; see :func:`make_loader`."""

    def __init__(self, urls: list[str], *, seed: int, options: _Options, collator: Collator, num_workers: int,
                 buffer_size: int, min_fill: float, rank: int, world_size: int, even_batches: EvenBatches,
                 multiprocessing_context: str) -> None:
        self._urls = urls
        self._seed = int(seed)
        self._options = options
        self.collator = collator
        self._num_workers = int(num_workers)
        self._buffer_size = int(buffer_size)
        self._min_fill = float(min_fill)
        self._rank, self._world_size = rank, world_size
        self._even_batches = even_batches
        self._context = multiprocessing_context
        self._epoch = 0
        self._reset_epoch_state()

    # -- public API -------------------------------------------------------------------------------------

    def set_epoch(self, epoch: int) -> None:
        """Selects the epoch (shard shuffle and packer seed); drops any restored mid-epoch position."""
        if int(epoch) < 0:
            raise ValueError(f"epoch must be >= 0, got {epoch = }.")
        self._epoch = int(epoch)
        self._reset_epoch_state()

    @property
    def epoch(self) -> int:
        """The epoch being run, or last completed (the next ``iter()`` then runs ``epoch + 1``)."""
        return self._epoch

    @property
    def stats(self) -> LoaderStats:
        """Counters of the current epoch."""
        skipped: dict[str, int] = {}
        for _, _, reason in self._skipped:
            skipped[reason] = skipped.get(reason, 0) + 1
        pack_stats = self._packer.stats()
        names = ("frames", "samples", "tokens")
        return LoaderStats(
            samples_read=self._samples_read,
            items_yielded=self._items_yielded,
            batches_yielded=self._batches_yielded,
            skipped=skipped,
            skipped_samples=tuple(self._skipped),
            padding=dict(zip(names, pack_stats.padding)),
            batches_dropped_for_sync=self._batches_dropped,
            spans_outside=self._spans_outside,
        )

    def state_dict(self) -> dict[str, Any]:
        """Plain, picklable state after the last yielded batch (no tensors; a few kB plus the packer's metadata)."""
        return {
            "version": _STATE_VERSION,
            "seed": self._seed,
            "epoch": self._epoch,
            "rank": self._rank,
            "world_size": self._world_size,
            "num_shards": len(self._urls),
            "next_position": list(self._next_position),
            "packer": self._packer.state_dict(),
            "skipped": [list(s) for s in self._skipped],
            "samples_read": self._samples_read,
            "items_yielded": self._items_yielded,
            "batches_yielded": self._batches_yielded,
            "batches_dropped": self._batches_dropped,
            "spans_outside": self._spans_outside,
            "completed": self._completed,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; the next ``iter()`` continues that epoch exactly.

        Raises:
            ValueError: The state has another version, seed, world size or shard count.
        """
        if state.get("version") != _STATE_VERSION:
            raise ValueError(f"unsupported loader state version {state.get('version')!r}; expected {_STATE_VERSION}.")
        mine = {"seed": self._seed, "world_size": self._world_size, "num_shards": len(self._urls), "rank": self._rank}
        for name, value in mine.items():
            if state[name] != value:
                raise ValueError(f"state {name} = {state[name]!r} but this loader has {value!r}; build it with the same settings.")
        self._epoch = int(state["epoch"])
        self._reset_epoch_state()
        self._packer.load_state_dict(state["packer"])
        self._next_position = tuple(int(v) for v in state["next_position"])
        self._skipped = [tuple(s) for s in state["skipped"]]
        self._samples_read = int(state["samples_read"])
        self._items_yielded = int(state["items_yielded"])
        self._batches_yielded = int(state["batches_yielded"])
        self._batches_dropped = int(state["batches_dropped"])
        self._spans_outside = int(state.get("spans_outside", 0))  # absent from states saved before it existed
        self._completed = bool(state["completed"])

    def __iter__(self) -> Iterator[PackedBatch]:
        """Yields the rest of the current epoch (all of it when fresh or restored at the start).

        After an epoch has been completed, the next ``iter()`` moves to the following epoch (so a plain
        ``for epoch in ...: for batch in loader`` reshuffles); ``set_epoch`` picks one explicitly. Calling
        ``iter()`` again mid-epoch continues from the last yielded batch.
        """
        if self._completed:
            self._epoch += 1
            self._reset_epoch_state()
        plan = self._plan()
        shards = split_shards(shuffle_shards(self._urls, seed=self._seed, epoch=self._epoch),
                              rank=self._rank, world_size=self._world_size)
        source = self._events(shards, plan)
        try:
            events = self._reattach_buffered(source)
            packs = self._packer.pack(self._items(events))
            yield from self._synced(packs)
        finally:
            source.close()
        self._completed = True

    # -- internals ----------------------------------------------------------------------------------------

    @property
    def _pack_budgets(self) -> tuple[int, ...]:
        """Packer columns: the three budgets plus item, word and segment counts, so every pack fits the collator."""
        c = self.collator
        return self._options.budgets + (c.max_items, c.max_words, c.max_segments)

    def _reset_epoch_state(self) -> None:
        self._packer = OnlinePacker(self._pack_budgets, buffer_size=self._buffer_size, min_fill=self._min_fill,
                                    seed=_mix(self._seed, self._epoch, self._rank))
        self._next_position: Position = (0, 0, 0)
        self._payloads: dict[Position, AlignedSample] = {}
        self._skipped: list[tuple[str, str, str]] = []
        self._samples_read = self._items_yielded = self._batches_yielded = self._batches_dropped = 0
        self._spans_outside = 0
        self._completed = False

    def _buffered_positions(self) -> set[Position]:
        state = self._packer.state_dict()
        entries = list(state["buffer"]) + [entry for pack in state["ready"] for entry in pack]
        return {tuple(entry["payload"]) for entry in entries}

    def _plan(self) -> _ResumePlan:
        needed = self._buffered_positions() - set(self._payloads)
        return _ResumePlan(next_position=tuple(self._next_position), needed=frozenset((p, e) for p, e, _ in needed))

    def _events(self, shards: list[str], plan: _ResumePlan) -> Iterator[tuple]:
        """All events of this rank's shards in global order, from ``plan.first_shard`` on."""
        jobs = [(p, url) for p, url in enumerate(shards) if p >= plan.first_shard]
        if self._num_workers == 0:
            for p, url in jobs:
                yield from (event for event in _shard_events(p, url, self._options, plan) if event[0] != "end")
            return
        context = torch.multiprocessing.get_context(self._context)
        stop = context.Event()
        queues = [context.Queue(maxsize=_QUEUE_SIZE) for _ in range(self._num_workers)]
        processes = []
        for w in range(self._num_workers):
            mine = [job for job in jobs if job[0] % self._num_workers == w]
            process = context.Process(target=_worker_main, args=(w, mine, self._options, plan, queues[w], stop),
                                      daemon=False)  # not daemonic: read_video may fork a decode watchdog
            process.start()
            processes.append(process)
        try:
            for p, _ in jobs:
                source, process = queues[p % self._num_workers], processes[p % self._num_workers]
                while True:
                    event = _get(source, process)
                    if event[0] == "error":
                        _, kind, message, shard, key, reason = event
                        if kind == "sample":
                            raise SampleError(message, shard=shard, key=key, reason=reason)
                        raise RuntimeError(message)
                    if event[0] == "end":
                        break
                    yield event
        finally:
            stop.set()
            for process in processes:
                process.join(timeout=2.0)
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=1.0)
            for q in queues:
                q.cancel_join_thread()
                q.close()

    def _reattach_buffered(self, events: Iterator[tuple]) -> Iterator[tuple]:
        """After a restore, decodes the buffered items again (they precede ``next_position``) before packing."""
        missing = self._buffered_positions() - set(self._payloads)
        if not missing:
            return events
        for event in events:
            position = tuple(event[1])
            if position >= self._next_position:
                events = _chain_front(event, events)
                break
            if event[0] == "item" and position in missing:
                self._payloads[position] = event[2]
                missing.discard(position)
                if not missing:
                    break
        if missing:
            raise RuntimeError(
                f"could not re-read {len(missing)} buffered item(s) {sorted(missing)[:3]} while resuming epoch "
                f"{self._epoch}; the shards changed since the state was saved?"
            )
        return events

    def _items(self, events: Iterator[tuple]) -> Iterator[PackItem]:
        """Pack items from events at or after ``next_position``; counts samples and skips."""
        for event in events:
            position: Position = tuple(event[1])
            if position < self._next_position:
                continue
            self._next_position = (position[0], position[1], position[2] + 1)
            if event[0] == "skip":
                _, _, shard, key, reason, _message, was_read = event
                self._skipped.append((shard, key, reason))
                self._samples_read += int(was_read)
                continue
            item: AlignedSample = event[2]
            self._samples_read += int(position[2] == 0)
            lengths = item_lengths(item) + (1, len(item.words), len(item.segments))
            if any(n > b for n, b in zip(lengths, self._pack_budgets)):
                message = (f"item {item.key!r} has (frames, samples, tokens, items, words, segments) = {lengths} over "
                           f"the limits {self._pack_budgets}; set window_seconds or raise the budgets")
                if self._options.on_error == "raise":
                    raise SampleError(message, shard=self._shard_of(position), key=item.key, reason="over_budget")
                logger.warning("skipping %s", message)
                self._skipped.append((self._shard_of(position), item.key, "over_budget"))
                continue
            self._payloads[position] = item
            yield PackItem(item.key, lengths, payload=list(position))

    def _shard_of(self, position: Position) -> str:
        shards = split_shards(shuffle_shards(self._urls, seed=self._seed, epoch=self._epoch),
                              rank=self._rank, world_size=self._world_size)
        return shards[position[0]]

    def _collate(self, pack: list[PackItem]) -> PackedBatch:
        samples = [self._payloads.pop(tuple(item.payload)) for item in pack]
        batch = self.collator(samples)
        # Windows share their sample's report: count it once, with the first window (window index 0).
        self._spans_outside += sum(s.report.spans_outside for s, item in zip(samples, pack) if item.payload[2] == 0)
        return batch

    def _synced(self, packs: Iterator[list[PackItem]]) -> Iterator[PackedBatch]:
        """Collated batches; with several ranks, all ranks yield the same number (see the module docstring)."""
        distributed = self._world_size > 1 and torch.distributed.is_available() and torch.distributed.is_initialized()
        while True:
            pack = next(packs, None)
            if distributed:
                have = _all_reduce_flags(pack is not None)
                if self._even_batches == "drop" and not have["all"]:
                    if pack is not None:
                        self._batches_dropped += 1  # the rest of this rank's epoch is not read (nor counted)
                    return
                if self._even_batches == "pad" and not have["any"]:
                    return
                if pack is None:
                    self._batches_yielded += 1
                    yield self.collator.empty()
                    continue
            elif pack is None:
                return
            batch = self._collate(pack)
            self._batches_yielded += 1
            self._items_yielded += batch.num_items
            yield batch


def _all_reduce_flags(have: bool) -> dict[str, bool]:
    """Whether all / any ranks have a batch (one all-reduce of two ints)."""
    import torch.distributed as dist

    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    flags = torch.tensor([int(have), -int(have)], dtype=torch.int64, device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    return {"all": bool(flags[0].item() == 1), "any": bool(flags[1].item() == -1)}


def _get(source: Any, process: Any) -> tuple:
    """Next event from a worker queue; raises if the worker died without reporting."""
    while True:
        try:
            return source.get(timeout=1.0)
        except queue_module.Empty:
            if not process.is_alive():
                raise RuntimeError(f"loader worker {process.name} exited with code {process.exitcode} without finishing") from None


def _chain_front(first: tuple, rest: Iterator[tuple]) -> Iterator[tuple]:
    yield first
    yield from rest


def _mix(*values: int) -> int:
    """A deterministic 63-bit seed from a few ints."""
    import numpy as np

    return int(np.random.SeedSequence([int(v) for v in values]).generate_state(1, dtype=np.uint64)[0] >> 1)


def make_loader(
    urls: Union[str, Sequence[str]],
    *,
    seed: int,
    num_workers: int = 0,
    fps: Optional[float] = None,
    sample_rate: int = 16000,
    budgets: Sequence[int] = (300, 160_000, 512),
    window_seconds: Optional[float] = None,
    buffer_size: int = 64,
    min_fill: float = 0.9,
    on_error: OnError = "skip",
    device: Union[str, torch.device] = "cpu",
    frame_size: tuple[int, int] = (112, 112),
    estimate: bool = False,
    log_mel: bool = False,
    max_items: int = 64,
    max_words: int = 1024,
    max_segments: int = 256,
    even_batches: EvenBatches = "drop",
    rank: Optional[int] = None,
    world_size: Optional[int] = None,
    multiprocessing_context: str = "fork",
    resize_in_decoder: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> Loader:
    """A resumable loader of :class:`PackedBatch` over WebDataset shards of media + transcripts.

    Args:
        urls: Shards: paths, a brace pattern, ``::``-joined lists, fsspec URLs or ``pipe:``.
        seed: Seeds the per-epoch shard shuffle and the packer (same seed → same batches).
        num_workers: Decoding processes (0: decode in this process). Results do not depend on it.
        fps: Sample frames at this rate (the frame played at each grid time); None keeps every frame.
        sample_rate: Audio rate of the batches.
        budgets: ``(frames, audio samples, tokens)`` per batch; also the fixed tensor capacities.
        window_seconds: Cut longer clips into windows of this length; None keeps clips whole (clips over a
            budget are then skipped with reason ``over_budget``).
        buffer_size: Items the packer looks ahead over (more: tighter packs, more memory).
        min_fill: Pack fill at which the packer emits before the end of the epoch.
        on_error: ``"skip"`` bad samples (counted in ``stats``) or ``"raise"`` :class:`SampleError`.
        device: Where batches are built (``"cuda"`` uses pinned staging buffers and on-device resize).
        frame_size: ``(height, width)`` of the frames in batches.
        resize_in_decoder: Scale frames to ``frame_size`` while decoding (one swscale pass: measured the
            fastest on CPU); False decodes full frames and resizes in the collate step, on ``device``.
        max_pixels: Skip (reason ``too_large``) media whose frames have more pixels (width × height) than
            this, before decoding them; default 3840 × 2160.
        estimate: Estimate A/V and text offsets for samples without ``align.json`` (slow); False applies 0.
        log_mel: Add per-item log-mel features.
        max_items: Items per batch at most.
        max_words: Words per batch at most.
        max_segments: Transcript segments per batch at most.
        even_batches: With several ranks, ``"drop"`` the tail or ``"pad"`` with empty batches.
        rank: This rank; default from ``torch.distributed`` when initialised, else 0.
        world_size: Number of ranks; default from ``torch.distributed`` when initialised, else 1.
        multiprocessing_context: ``"fork"``, ``"spawn"`` or ``"forkserver"`` for the workers.

    Returns:
        A :class:`Loader`: iterate it once per epoch; ``set_epoch``, ``stats``, ``state_dict``, ``load_state_dict``.

    Raises:
        ValueError: A bad option; the message names it, the valid range and a hint.

    Example:
        >>> loader = make_loader("sample_data/shards/shard-{000000..000001}.tar", seed=0, window_seconds=5.0)  # doctest: +SKIP
        >>> for batch in loader:                                                                             # doctest: +SKIP
        ...     print(batch.sample_keys, batch.padding)
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}.")
    if even_batches not in ("drop", "pad"):
        raise ValueError(f"even_batches must be 'drop' or 'pad', got {even_batches!r}.")
    if int(num_workers) < 0:
        raise ValueError(f"num_workers must be >= 0, got {num_workers = }.")
    if int(buffer_size) < 1:
        raise ValueError(f"buffer_size must be >= 1, got {buffer_size = }; try 64.")
    if fps is not None and not fps > 0:
        raise ValueError(f"fps must be > 0 or None, got {fps = }.")
    if not (isinstance(sample_rate, int) and sample_rate > 0):
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate = !r}; try 16000.")
    if window_seconds is not None and not (isinstance(window_seconds, (int, float)) and 0 < window_seconds < float("inf")):
        raise ValueError(f"window_seconds must be a positive number of seconds or None, got {window_seconds = !r}; try 10.0.")
    budget_row = tuple(int(b) for b in budgets)
    if len(budget_row) != 3 or min(budget_row) <= 0:
        raise ValueError(f"budgets must be 3 positive ints (frames, samples, tokens), got {budgets = }.")
    if rank is None or world_size is None:
        initialised = torch.distributed.is_available() and torch.distributed.is_initialized()
        rank = (torch.distributed.get_rank() if initialised else 0) if rank is None else rank
        world_size = (torch.distributed.get_world_size() if initialised else 1) if world_size is None else world_size
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank = }.")
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels <= 0:
        raise ValueError(f"max_pixels must be a positive int (width x height), got {max_pixels = !r}; try {DEFAULT_MAX_PIXELS}.")
    options = _Options(fps=fps, sample_rate=sample_rate, window_seconds=window_seconds, estimate=bool(estimate),
                       on_error=on_error, budgets=budget_row,
                       decode_size=(int(frame_size[0]), int(frame_size[1])) if resize_in_decoder else None,
                       max_pixels=max_pixels)
    collator = Collator(budget_row, frame_size=frame_size, device=device, log_mel=log_mel, sample_rate=sample_rate,
                        max_items=max_items, max_words=max_words, max_segments=max_segments)
    return Loader(expand_shard_urls(urls), seed=seed, options=options, collator=collator, num_workers=num_workers,
                  buffer_size=buffer_size, min_fill=min_fill, rank=rank, world_size=world_size,
                  even_batches=even_batches, multiprocessing_context=multiprocessing_context)
