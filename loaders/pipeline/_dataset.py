"""``make_dataset``: the pipeline as a ``torch.utils.data.IterableDataset`` of :class:`PackedBatch`, resumable.

::

    shards ─ shuffle(seed, epoch) ─ split by rank ─ split by DataLoader worker (shard p → worker p % num_workers)
      └─ each worker: shard loop → items (decode, align, window, tokenize) → OnlinePacker → Collator → batches
    DataLoader(ds, batch_size=None, num_workers=N, pin_memory=True): batches taken from the workers in turn

Use::

    ds = make_dataset("shards/train-{000000..000099}.tar", seed=0, tokenizer=tok)
    dl = DataLoader(ds, batch_size=None, num_workers=2, pin_memory=True)          # or torchdata's
    dl = StatefulDataLoader(ds, batch_size=None, num_workers=2)                     # StatefulDataLoader
    for epoch in range(E):
        ds.set_epoch(epoch)            # reshuffles the shards (needed: DataLoader workers get a fresh copy)
        for batch in dl:
            batch = batch.to("cuda", non_blocking=True)

``set_epoch`` also reaches workers started with ``persistent_workers=True`` (which keep the copy they were started
with): the epoch travels in a small shared-memory cell, read by each worker when its next pass begins. Every
``set_epoch`` call (even with the same number) restarts that epoch at the next pass; without it, a new pass after a
completed epoch repeats that epoch, with or without persistent workers, and so does a new pass after an epoch
abandoned midway with several persistent workers (with one, or in the main process, that pass continues it).

Determinism: with the same ``seed``, epoch and shards, the batches (keys and tensor bytes) are identical from
run to run for a given ``num_workers``, whatever the workers' speeds. What depends on ``num_workers``: which items
are packed together, the batch order (each worker packs the items of its own shards; the DataLoader takes batches
from the workers in turn; the merged tails come last) and which items end up in the epoch's tail (see Padding), so
with ``tail="drop"`` which items are dropped. What does not: the set of items read in an epoch, each item's frames,
audio, words, segments and tokens, the shard order, the number of tails (one per epoch), and the other skip
records. (``make_loader`` merges its workers' items into one global order before packing, so there even the
batches do not depend on ``num_workers``.)

Padding and the tail policy: each worker packs its own items, and with ``num_workers > 1`` (and no
``batches_per_epoch``) the workers hand their last, partly filled packs (their *tails*) to one of them, which
repacks them: an epoch has one tail, as in ``make_loader``. Protocol (``loaders.pipeline._tail_merge``): a worker
that has yielded its full packs withholds its tail and publishes its count ``n_w`` of batches and the tail's
items (keys, lengths, positions) on a small board in ``/dev/shm``; the worker with the largest ``(n_w, worker id)``
(the *merger*) waits until every other one has published, loads their decoded tail items (``torch.save``'d beside
the board; after a restore, the samples are decoded again from the shards, as a resume does), packs all tails (by
worker id, each in its packer's order) and yields those packs, the last of which may be the epoch's tail; the
others stop.
Which worker merges depends only on the workers' own streams, never on timing, and no worker waits for one whose
next batch the DataLoader has not already asked for, so nothing can deadlock (the argument, against torch's
in-order task cycle, is in that module). The merged batches come last in the epoch. With ``tail="pad"`` (default)
the tail keeps the full capacities; ``tail="trim"`` sizes it to what it holds (rounded up to ``tail_multiple``);
``tail="drop"`` drops it (named skips). ``"pad"`` is the default because it is the only policy under which every
batch has the same shapes (the fixed-capacity contract): a trimmed tail makes a ``torch.compile``'d step compile
again (with the default ``dynamic=None`` once, into a dynamic-shape graph; with ``dynamic=False`` once per new tail
shape) and needs a CUDA graph of its own per tail shape (BENCHMARKS.md, "Tail policy: the default"). Use ``"trim"``
for small epochs (evaluation) or models that take any shape. The policy never changes which items are packed
together. With ``batches_per_epoch`` each worker keeps its own tail (its quota fixes its batch count).

Memory: inside a DataLoader worker each batch is built in one shared-memory slot that the worker reuses once the
main process has dropped everything made from that batch (``loaders.pipeline._shared_slots``): no fresh shared
memory, page faults or per-tensor descriptor passing per batch, and a batch, view, numpy array or DLPack export still
held in the main process is never overwritten. A received batch's tensors are views of that one slot (saving one
tensor with ``torch.save`` saves the slot: ``.clone()`` it first); ``pin_memory()`` / ``.to()`` copy out of it.

Resume: ``state_dict()`` / ``load_state_dict()`` (torchdata's Stateful protocol) hold one worker's position
(see ``loaders.pipeline._resume``); ``StatefulDataLoader`` saves and restores each worker's state, and the restored run
yields exactly the batches the uninterrupted run would have. A checkpoint taken after an epoch ends and loaded with
``set_epoch(next)`` (in either order) resumes into that next epoch. The state names its shards
(``loaders.pipeline._shard_ids``): the same shards passed in another list order resume exactly (in the saved order);
shards added, removed or renamed raise ``ValueError`` naming them; a shard modified or deleted since raises
``RuntimeError`` naming it and the keys it no longer holds (see ``AVDataset.load_state_dict``). With several ranks
(``torch.distributed``), each rank takes every ``world_size``-th shard; ranks are kept in step (``even_batches``)
only when the dataset is iterated in the main process (``num_workers=0``) or through ``make_loader``: DataLoader
workers cannot join a collective, so with workers set ``batches_per_epoch`` (every rank then yields exactly that many
batches).

Failures: a bad sample is a named skip (``stats.skipped``, ``stats.skipped_samples``). Where nothing can work
it raises: ``make_dataset`` when every URL is a local path and none exists (``FileNotFoundError`` naming them,
with a hint when it is a glob or a directory); an epoch where no shard could be opened (``FileNotFoundError``),
or shards were read but held no sample, or every sample was skipped (``RuntimeError`` with the counts by
reason), unless ``allow_empty_epoch=True``. A DataLoader worker sees only its own shards, so there the epoch
checks log a warning instead of raising (another worker may have data). A worker killed by a signal is
reported by PyTorch (``DataLoader worker (pid N) exited unexpectedly`` / ``is killed by signal``).
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import os
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

import torch

from avcore import BatchItem
from loaders._pipe import DEFAULT_PIPE_STALL_SECONDS
from loaders._shards import expand_shard_urls, shuffle_shards, split_shards
from loaders._skip_log import WARNINGS_PER_REASON, SkipLog
from loaders._video import DEFAULT_MAX_PIXELS
from loaders.pipeline._collate import Collator, PackedBatch
from loaders.pipeline._items import pack_lengths
from loaders.pipeline._options import (AUTO, MissingAudio, OnError, SampleOptions, WindowSeconds, check_counter, resolve_options,
                                       worker_decoder_threads)
from loaders.pipeline._pack import OnlinePacker, PackItem
from loaders.pipeline._preload import preload_for_workers
from loaders.pipeline._resume import STATE_VERSION, EpochCounters, ResumePlan, mix_seed, order_key
from loaders.pipeline._shard_ids import pack_names, restore_order, shard_names, unpack_names
from loaders.pipeline._shard_loop import (Event, ItemEvent, Position, SkipEvent, interleave_steps, shard_groups,
                                         shard_steps)
from loaders.pipeline._tail import Tail, tail_capacities, tail_multiples
from loaders.pipeline._tail_merge import PassRecord, TailBoard, pass_name
from loaders.pipeline._worker_env import (check_worker_socket, freeze_inherited_heap_in_forked_children, name_failed_sends,
                                          share_temp_dir_with_workers)

logger = logging.getLogger(__name__)

__all__ = ["AVDataset", "LoaderStats", "make_dataset"]

EvenBatches = Literal["drop", "pad"]
_MERGE_SEED_SALT = 0x7A11
"""Mixed into the merger's packer seed (``mix_seed(seed, epoch, rank, salt)``), so it differs from the workers'."""


@dataclass(frozen=True)
class LoaderStats:
    """Counters of the current epoch (restored with the state); per worker when read inside a DataLoader worker."""

    samples_read: int
    """Samples taken from the shards (decoded, or skipped as bad)."""
    items_yielded: int
    """Items (samples or windows) delivered inside batches."""
    batches_yielded: int
    """Batches delivered (including empty ones padded for rank sync)."""
    skipped: dict[str, int]
    """Skipped samples by reason code (``loaders.errors.REASONS``)."""
    skipped_samples: tuple[tuple[str, str, str], ...]
    """``(shard, key, reason)`` of every skipped sample or shard-level problem, in order."""
    padding: dict[str, float]
    """Fraction of the emitted capacity that is padding, per modality (``frames``, ``samples``, ``tokens``)."""
    batches_dropped_for_sync: int
    """1 when this rank stopped with a batch in hand because another rank ran out first (``even_batches="drop"``)."""
    spans_outside: int = 0
    """Transcript words + segments that fell wholly outside their media (counted once per sample)."""
    decode_errors: int = 0
    """Packets the decoders skipped in delivered samples (the timeline is kept: see ``read_video``)."""
    members_dropped: tuple[tuple[str, str, str], ...] = ()
    """``(shard, key, "stray_member")`` of samples delivered without some of their tar members: members of a key that
    come after another key's (not adjacent) are dropped; the sample is not counted in ``skipped``."""
    duplicate_keys: tuple[tuple[str, str], ...] = ()
    """``(shard, key)`` of samples delivered although an earlier sample of the epoch had the same key (the same clip in
    two shards?): both are delivered, with the same ``sample_keys`` entry, and a warning is logged. ``avalign preprocess``
    keeps the first only (``duplicate_key``). Seen per copy of the dataset (each DataLoader worker its own shards) and
    since the epoch began or the state was loaded."""
    caption_words_failed: int = 0
    """Captions (cues without word times) of delivered samples that forced alignment could not split into words (music,
    noise, silence, too many words for their time): kept as segments, with no words (counted once per sample)."""


class AVDataset(torch.utils.data.IterableDataset):
    """An ``IterableDataset`` of :class:`PackedBatch`, one epoch per ``iter()``; build it with :func:`make_dataset`."""

    _advance_epoch_on_iter = False
    """Whether ``iter()`` after a completed epoch moves to the next epoch (``make_loader``) or repeats it."""
    _interleave = 1
    """Shards read at a time, round-robin by sample (see ``loaders.pipeline._resume.order_key``); 1: one after the other."""

    def __init__(
        self,
        urls: Sequence[str],
        *,
        seed: int,
        options: SampleOptions,
        collator: Collator,
        buffer_size: int = 64,
        min_fill: float = 0.9,
        rank: int = 0,
        world_size: int = 1,
        even_batches: EvenBatches = "drop",
        allow_empty_epoch: bool = False,
        batches_per_epoch: Optional[int] = None,
        tail: Tail = "pad",
        tail_multiple: Optional[Sequence[int]] = None,
    ) -> None:
        super().__init__()
        self._tail = tail
        self._tail_multiples = tail_multiples(collator.budgets, tail_multiple)
        self._urls = list(urls)
        self._packed_names: Optional[bytes] = None
        """The shard list by name, packed for the state (``_shard_ids``); built at the first ``state_dict``."""
        self._seed = check_counter("seed", seed)
        self._options = options
        self.collator = collator
        self._buffer_size = int(buffer_size)
        self._min_fill = float(min_fill)
        self._rank, self._world_size = int(rank), int(world_size)
        self._even_batches = even_batches
        self._allow_empty_epoch = bool(allow_empty_epoch)
        self._batches_per_epoch = None if batches_per_epoch is None else int(batches_per_epoch)
        self._epoch = 0
        self._epoch_cell = torch.zeros(3, dtype=torch.int64).share_memory_()
        """``[epoch, generation, worker passes]``: the first two written by :meth:`set_epoch` in the main process and
        read by every DataLoader worker's copy when a pass begins (shared memory: persistent workers see it too); the
        third counted up by DataLoader workers' passes (so that :attr:`stats` in the main process can tell that its
        copy's counters are not the epoch's)."""
        self._warned_stats_in_workers = False
        self._generation_seen = 0
        """The cell's generation this copy has applied."""
        self._epoch_set_pending = False
        """A ``set_epoch`` reached this copy and no pass has begun since (``load_state_dict`` weighs it against the
        state's epoch). A DataLoader worker's copy inherits it from the main process's."""
        self._restored_mid_epoch = False
        """A state saved mid-epoch was loaded and no pass has begun since (``set_epoch`` of its epoch keeps it)."""
        self._board = TailBoard()
        """Where DataLoader workers hand their tails to the merger (``loaders.pipeline._tail_merge``)."""
        share_temp_dir_with_workers()
        freeze_inherited_heap_in_forked_children()
        self._pass_index = 0
        """``iter()`` calls on this copy: part of the name of its pass on the board (``_tail_merge.pass_name``)."""
        self._restores = 0
        """``load_state_dict`` calls in this copy's lineage (saved in the state): part of the pass's name on the board."""
        self._pass = ""
        """The board subdirectory of the pass in progress (``_tail_merge.pass_name``)."""
        self._reset_epoch_state()

    # -- public -------------------------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        return self._epoch

    def set_epoch(self, epoch: int) -> None:
        """Starts epoch ``epoch`` afresh at the next ``iter()`` (shards reshuffled with ``(seed, epoch)``), here and
        in DataLoader workers, persistent ones included.

        Right after :meth:`load_state_dict` of a state saved mid-epoch (no pass begun since), ``set_epoch`` of the
        state's own epoch keeps the restored position: the training loop ``load_state_dict(ckpt); for epoch in
        range(ckpt_epoch, n): set_epoch(epoch); ...`` resumes where the checkpoint was taken, as it does with the two
        calls the other way round, however many times it is called before the pass (a callback and the loop both
        calling it). Another epoch starts afresh, with a warning that the rest of the state's epoch is not read."""
        epoch = check_counter("epoch", epoch, below=2**63)  # the cell shared with workers is an int64
        restored = self._restored_mid_epoch
        if restored and epoch == self._epoch:
            return  # the restored epoch: its position stands, and stands again for a second set_epoch of it (a pass
            # applies no set_epoch: generation unchanged)
        self._restored_mid_epoch = False
        if restored:
            logger.warning("set_epoch(%d) after a loader state saved in the middle of epoch %d was loaded: epoch %d "
                           "starts afresh (the rest of epoch %d is not read); hint: set_epoch(%d) keeps the restored "
                           "position", epoch, self._epoch, epoch, self._epoch, self._epoch)
        self._epoch = epoch
        self._reset_epoch_state()
        self._epoch_cell[0] = self._epoch
        self._epoch_cell[1] += 1
        self._generation_seen = int(self._epoch_cell[1])
        self._epoch_set_pending = True

    def _apply_set_epoch(self) -> None:
        """In a copy that lives on (a persistent DataLoader worker): applies a ``set_epoch`` made since the last pass."""
        generation = int(self._epoch_cell[1])
        if generation != self._generation_seen:
            self._epoch = int(self._epoch_cell[0])
            self._reset_epoch_state()
            self._generation_seen = generation
            self._epoch_set_pending = True

    @property
    def stats(self) -> LoaderStats:
        """Counters of the current epoch so far, of this copy of the dataset.

        Under ``DataLoader(ds, num_workers=N)`` with N > 0 each worker process reads, counts and packs in its own copy:
        ``ds.stats`` in the main process then stays at zero, and reading it logs a warning once. The epoch's counts
        are in the workers' copies (a ``StatefulDataLoader``'s ``state_dict()`` holds each worker's ``counters``);
        :func:`~loaders.pipeline.make_loader` packs in the main process, so its ``stats`` count the whole epoch.
        """
        if (not self._warned_stats_in_workers and torch.utils.data.get_worker_info() is None
                and int(self._epoch_cell[2]) > 0 and self._passes_begun == 0 and self._counters.samples_read == 0):
            self._warned_stats_in_workers = True
            logger.warning(
                "stats read in the main process are all zero: the dataset was iterated by DataLoader worker processes "
                "(%d pass(es) so far), and each worker counts in its own copy of the dataset, so these counters (and "
                "skips) are not the epoch's. Use loaders.make_loader(..., num_workers=N), whose stats count every "
                "worker's samples, or read each worker's 'counters' from a StatefulDataLoader's state_dict().",
                int(self._epoch_cell[2]))
        c = self._counters
        skipped = dict(Counter(reason for _, _, reason in c.skipped))
        names = ("frames", "samples", "tokens")
        return LoaderStats(samples_read=c.samples_read, items_yielded=c.items_yielded, batches_yielded=c.batches_yielded,
                           skipped=skipped, skipped_samples=tuple(tuple(s) for s in c.skipped),
                           padding={name: (1.0 - used / capacity if capacity else 0.0)
                                    for name, used, capacity in zip(names, c.used, c.capacity)},
                           batches_dropped_for_sync=c.batches_dropped, spans_outside=c.spans_outside,
                           decode_errors=c.decode_errors, caption_words_failed=c.caption_words_failed,
                           members_dropped=tuple(tuple(s) for s in c.members_dropped),
                           duplicate_keys=tuple(tuple(s) for s in c.duplicate_keys))

    def state_dict(self) -> dict[str, Any]:
        """Plain, picklable state after the last yielded batch (no tensors)."""
        return {
            "version": STATE_VERSION,
            "seed": self._seed,
            "epoch": self._epoch,
            "rank": self._rank,
            "world_size": self._world_size,
            "worker": list(self._worker_slot()),
            "num_shards": len(self._urls),
            "shard_names": self._shard_names_blob(),
            "interleave": self._interleave,
            "next_position": list(self._next_position),
            "packer": self._packer.state_dict(),
            "counters": self._counters.to_state(),
            "completed": self._completed,
            "read_keys": [list(v) for v in self._read_keys.values()],
            "tail_merge": None if self._merge is None else dict(self._merge),
            "restores": self._restores,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict`; the next ``iter()`` continues that epoch exactly.

        The state names its shards (``loaders.pipeline._shard_ids``): the same shards passed in another list order
        (an unsorted ``glob.glob``, another machine's ``os.listdir``) continue the saved epoch exactly, in the saved
        order (later epochs shuffle the list as passed now); shards added, removed or renamed raise.

        Epochs: ``StatefulDataLoader`` loads the state at ``iter()``, so there a ``set_epoch`` always comes first,
        whatever the call order. A ``set_epoch(n)`` made before the state is loaded (no pass begun since): with ``n``
        the state's epoch, the state continues (saved at the end of its epoch: nothing is left of it); with another
        ``n``, epoch ``n`` starts afresh (the "checkpoint after each epoch" loop); a state saved mid-epoch is then
        dropped with a warning (the rest of its epoch is not read). A ``set_epoch`` after this call, before the next
        pass, does the same for a state saved mid-epoch (its own epoch keeps the restored position; another starts
        afresh, with that warning); after a state saved at the end of its epoch it starts that epoch afresh.

        Raises:
            ValueError: The state has another version, seed, rank, world size, worker slot, shard list or
                ``interleave_shards`` (the read order its positions refer to); the message says what differs.
        """
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"unsupported loader state version {state.get('version')!r}; expected {STATE_VERSION}.")
        self._check_state_settings(state)
        self._apply_set_epoch()
        generation = int(self._epoch_cell[1])
        requested = self._epoch if self._epoch_set_pending else None  # a set_epoch not yet followed by a pass
        self._epoch_set_pending = False
        saved_epoch = int(state["epoch"])
        if requested is not None and requested != saved_epoch:
            # The "checkpoint after each epoch" loop: the state is at (or, in a DataLoader worker's last snapshot,
            # just before) the end of its epoch, and the training loop has moved on to the next one.
            at_end = bool(state["completed"]) or state.get("tail_merge") is not None
            log = logger.info if at_end else logger.warning
            log("loader state of epoch %d loaded after set_epoch(%d): epoch %d starts afresh%s", saved_epoch, requested,
                requested, "" if at_end else f" (the rest of epoch {saved_epoch} is not read)")
            self._epoch = requested
            self._reset_epoch_state()
            self._restores = int(state.get("restores", 0)) + 1
            self._generation_seen = generation
            return
        order = None
        if state.get("shard_names") is not None and not state["completed"]:  # a completed epoch has no position left
            order = restore_order(unpack_names(state["shard_names"]), self._urls, epoch=saved_epoch)
        self._epoch = int(state["epoch"])
        self._reset_epoch_state()
        self._order = order
        self._packer.load_state_dict(state["packer"])
        self._next_position = tuple(int(v) for v in state["next_position"])
        self._counters = EpochCounters.from_state(state["counters"])
        self._keys_seen = {}
        self._completed = bool(state["completed"])
        self._restored_completed = self._completed
        self._read_keys = {int(p): (int(p), int(e), str(k)) for p, e, k in state.get("read_keys", [])}
        merge = state.get("tail_merge")
        self._merge = None if merge is None else dict(merge)
        self._restores = int(state.get("restores", 0)) + 1  # a restored pass is named apart from the one saved
        self._generation_seen = generation  # the state's epoch wins over an earlier set_epoch of the same epoch
        self._restored_mid_epoch = not self._completed and self._merge is None
        # a position to continue (something read): it belongs to this worker slot; a state saved before any read
        # holds none, and any slot may start it
        self._state_slot = (self._worker_slot() if not self._completed and (self._read_keys or self._next_position != (0, 0, 0))
                            else None)

    def _check_state_settings(self, state: dict[str, Any]) -> None:
        """Raises ValueError when the state was saved under other settings than this dataset's."""
        worker_id, num_workers = self._worker_slot()
        saved_slot = state.get("worker")
        if saved_slot is not None and list(saved_slot) != [worker_id, num_workers]:
            raise ValueError(f"loader state of DataLoader worker {saved_slot[0]} of {saved_slot[1]} loaded into worker "
                             f"{worker_id} of {num_workers}: resume with the num_workers the state was saved with "
                             f"({saved_slot[1]}).")
        if state.get("num_shards") != len(self._urls) and state.get("shard_names") is None and not state["completed"]:
            raise ValueError(f"the loader state was saved with {state.get('num_shards')} shards but this dataset has "
                             f"{len(self._urls)}: shards were added or removed since; resume with the shards the state "
                             "was saved with, or start the epoch afresh without loading the state.")
        mine = {"seed": self._seed, "world_size": self._world_size, "rank": self._rank,
                "interleave_shards": self._interleave}
        for name, value in mine.items():
            key = "interleave" if name == "interleave_shards" else name
            saved = state.get(key, 1 if key == "interleave" else None)  # states from before interleaving: 1
            if saved != value:
                raise ValueError(f"the loader state has {name} = {saved!r} but this dataset has {value!r}; build it "
                                 f"with {name}={saved!r} to resume, or start the epoch afresh without the state.")

    def _shard_names_blob(self) -> bytes:
        if self._packed_names is None:
            self._packed_names = pack_names(shard_names(self._urls))
        return self._packed_names

    def __iter__(self) -> Iterator[PackedBatch]:
        """Yields the rest of the current epoch (all of it when fresh or restored at its start).

        After a completed epoch the next ``iter()`` repeats it (the same in the main process and in DataLoader
        workers, which get a fresh copy per epoch): ``set_epoch`` moves to another, as with ``DistributedSampler``.
        """
        self._pass_index += 1  # here, not in the generator: every worker counts its passes when torch calls iter()
        # A set_epoch for persistent workers applies here too: torch calls iter() when the pass begins, and a
        # StatefulDataLoader takes the pass's first worker state right after, before the first batch.
        self._apply_set_epoch()
        self._epoch_set_pending = False
        self._restored_mid_epoch = False  # a pass has begun: a set_epoch from now on starts its epoch afresh
        if torch.utils.data.get_worker_info() is not None:
            check_worker_socket()
            name_failed_sends()
            self._epoch_cell[2] += 1
            self._warn_ranks_out_of_step()
        return self._iterate()

    def _check_state_slot(self) -> None:
        """Raises ValueError when a state loaded mid-epoch (its read position is one worker's share of the shards) is
        continued in another worker slot: ``ds.load_state_dict(state)`` in the main process, then ``DataLoader(ds,
        num_workers=2)``. Each worker then waited for the buffered items of shards it does not read, and the epoch
        ended blaming the shards ("modified or truncated"; BENCHMARKS.md, adv64)."""
        slot = self._worker_slot()
        if self._state_slot is None or self._state_slot == slot or self._completed:
            return
        saved_id, saved_workers = self._state_slot
        saved = "the main process (num_workers=0)" if saved_workers == 1 else f"DataLoader worker {saved_id} of {saved_workers}"
        raise ValueError(
            f"a loader state loaded in {saved} is continued in DataLoader worker {slot[0]} of {slot[1]}: a state's read "
            f"position is one worker's; resume it with num_workers={0 if saved_workers == 1 else saved_workers}, as it "
            "was saved, or with a StatefulDataLoader's own load_state_dict (its state holds each worker's), or start the "
            "epoch afresh (set_epoch) without the state.")

    def _warn_ranks_out_of_step(self) -> None:
        """In DataLoader worker 0, with several ranks and no ``batches_per_epoch``: a warning (once per pass) that the
        ranks' batch counts are not kept equal (workers cannot all-reduce), so a DDP step at the end of the epoch
        can wait forever for a rank that has run out."""
        if self._world_size > 1 and self._batches_per_epoch is None and self._worker_slot()[0] == 0:
            logger.warning("rank %d of %d iterated in DataLoader workers without batches_per_epoch: ranks are not kept "
                           "in step (workers cannot all-reduce), so ranks can yield different numbers of batches and "
                           "a DDP step at the end of the epoch waits forever for a rank that ran out; hint: pass "
                           "batches_per_epoch=N (every rank yields exactly N batches), iterate with num_workers=0, "
                           "or use make_loader", self._rank, self._world_size)

    def _iterate(self) -> Iterator[PackedBatch]:
        self._apply_set_epoch()
        self._check_state_slot()
        merging = self._merging()
        if merging:
            self._pass = pass_name(torch.utils.data.get_worker_info(), self._pass_index, self._restores)
            self._board.begin(self._pass)
        if self._completed and self._restored_completed and not self._advance_epoch_on_iter:
            self._restored_completed = False
            if merging:  # the others of this pass may still need its tail (and its count, to stop)
                self._publish(done=True)
            return  # restored after its epoch ended: nothing is left of it (set_epoch starts the next one)
        restored_merger = self._merge is not None and self._merge["role"] == "merger" and not self._passes_begun
        if merging and not self._completed and restored_merger:
            self._passes_begun += 1
            self._publish(done=True)  # restored while yielding the merged packs: the rest of them
            yield from self._merged_batches()
            self._completed = True
            return
        if self._completed:
            self._epoch += int(self._advance_epoch_on_iter)
            self._reset_epoch_state()
        elif merging and self._passes_begun:
            # This copy's earlier pass of the epoch was abandoned (a persistent worker; the main process left the
            # epoch): start the epoch again. Continuing would start the workers' counts out of step with the
            # DataLoader's task cycle, which the merge relies on (loaders.pipeline._tail_merge).
            self._reset_epoch_state()
        self._passes_begun += 1
        plan = ResumePlan(next_position=tuple(self._next_position),
                          needed=frozenset((p, e) for p, e, _ in self._buffered() - set(self._payloads)),
                          interleave=self._interleave, read_keys=tuple(self._read_keys.values()))
        worker_id, num_workers = self._worker_slot()
        if torch.utils.data.get_worker_info() is not None and self.collator.device.type != "cpu":
            raise ValueError(f"device={str(self.collator.device)!r} cannot be used inside DataLoader workers; build "
                             "batches on 'cpu' (with pin_memory=True) and move them with batch.to(device, "
                             "non_blocking=True), or use make_loader(device=...).")
        rank_shards = self._rank_shards()
        jobs = [(p, url) for p, url in enumerate(rank_shards)
                if p % num_workers == worker_id and p >= plan.first_shard]
        _say_idle_workers(worker_id, num_workers, len(rank_shards))
        source = self._event_source(jobs, plan)
        try:
            events = self._reattach_buffered(source)
            packs = self._packer.pack(self._pack_items(events))
            yield from self._synced(packs)
        finally:
            source.close()
        self._completed = True
        self._skip_log.log_summary(logger, self._counters.skipped, context=self._epoch_name())
        if self._counters.caption_words_failed:
            logger.info("%s: %d caption(s) could not be split into words by forced alignment (kept as segments; "
                        "stats.caption_words_failed)", self._epoch_name(), self._counters.caption_words_failed)
        self._check_epoch(jobs)

    # -- internals ----------------------------------------------------------------------------------------

    def _worker_slot(self) -> tuple[int, int]:
        """``(worker_id, num_workers)`` of the DataLoader worker running this copy; ``(0, 1)`` in the main process."""
        info = torch.utils.data.get_worker_info()
        return (0, 1) if info is None else (int(info.id), int(info.num_workers))

    def _epoch_name(self) -> str:
        worker_id, num_workers = self._worker_slot()
        return f"epoch {self._epoch}" + (f" (DataLoader worker {worker_id})" if num_workers > 1 else "")

    def _rank_shards(self) -> list[str]:
        urls = self._urls if self._order is None else self._order
        return split_shards(shuffle_shards(urls, seed=self._seed, epoch=self._epoch),
                            rank=self._rank, world_size=self._world_size)

    def _event_source(self, jobs: list[tuple[int, str]], plan: ResumePlan) -> Iterator[Event]:
        """Events of ``jobs`` (``(shard_position, url)``) in read order (``order_key``); decoded here."""
        options = self._worker_options()
        for group in shard_groups(jobs, self._interleave):
            yield from interleave_steps([shard_steps(p, url, options, plan, self._skip_log) for p, url in group])

    def _worker_options(self) -> SampleOptions:
        options = self._options
        info = torch.utils.data.get_worker_info()
        if info is not None:  # a DataLoader worker: its share of the cores for FFmpeg
            options = dataclasses.replace(options, decoder_threads=worker_decoder_threads(info.num_workers))
        return options

    def _before(self, position: Position, other: Position) -> bool:
        """Whether ``position`` comes before ``other`` in this epoch's read order."""
        return order_key(position, self._interleave) < order_key(other, self._interleave)

    def _reset_epoch_state(self) -> None:
        self._packer = OnlinePacker(self._options.limits, buffer_size=self._buffer_size, min_fill=self._min_fill,
                                    seed=mix_seed(self._seed, self._epoch, self._rank))
        self._next_position: Position = (0, 0, 0)
        self._order: Optional[list[str]] = None
        """The shard list in the order a restored state was saved with, when it was passed in another (this epoch)."""
        self._payloads: dict[Position, BatchItem] = {}
        self._counters = EpochCounters()
        self._keys_seen: dict[str, str] = {}
        """Sample key → the shard it was first read from, this epoch (in this copy): a repeat is counted and warned."""
        self._skip_log = SkipLog()
        self._completed = False
        self._restored_completed = False
        self._read_keys: dict[int, tuple[int, int, str]] = {}
        """Shard position → (position, event index, key) of the last sample read from it (the group in progress)."""
        self._merge: Optional[dict[str, Any]] = None
        """This worker's part in the tail merge, once its full packs are out (``_tail_phase``): ``count`` (full
        packs), ``tail`` (its tail's items as plain dicts), ``role`` (``"stopped"`` / ``"merger"``), and for the
        merger ``tails`` (every worker's, by worker id) and ``yielded`` (merged batches yielded)."""
        self._withheld: Optional[list[PackItem]] = None
        self._state_slot: Optional[tuple[int, int]] = None
        """The worker slot (``_worker_slot``) whose loaded state this epoch continues; None for an epoch begun afresh."""
        self._passes_begun = 0
        """Passes of this epoch begun on this copy since it was reset or restored."""

    def _packer_keys(self) -> dict[Position, str]:
        state = self._packer.state_dict()
        held = state["buffer"] + [item for pack in state["ready"] for item in pack]
        return {tuple(item["payload"]): item["key"] for item in held}

    def _buffered(self) -> set[Position]:
        return {tuple(payload) for payload in self._packer.held_payloads()}

    def _reattach_buffered(self, events: Iterator[Event]) -> Iterator[Event]:
        """After a restore, takes the buffered items (decoded again: they precede ``next_position``) from the stream.

        Raises:
            RuntimeError: A buffered item is no longer where it was (its shard was modified, removed or cannot be
                opened); the message names the shard, the keys and what to do.
        """
        missing = self._buffered() - set(self._payloads)
        if not missing:
            return events
        saved_keys = self._packer_keys()
        shards = self._rank_shards()
        unreadable: dict[int, str] = {}
        for event in events:
            if not self._before(event.position, self._next_position):
                events = _chain_front(event, events)
                break
            if isinstance(event, SkipEvent) and not event.was_read and event.reason != "stray_member":
                unreadable.setdefault(event.position[0], event.reason)
            if isinstance(event, ItemEvent) and event.position in missing:
                saved = saved_keys.get(event.position)
                if saved is not None and saved != event.item.key:
                    raise RuntimeError(
                        f"shard {shards[event.position[0]]!r} was modified since the loader state was saved (epoch "
                        f"{self._epoch}): its buffered item {saved!r} is now {event.item.key!r} (sample "
                        f"{event.position[1]} of the shard); resume on the shards the state was saved with, or start "
                        "the epoch afresh without loading the state.")
                self._payloads[event.position] = event.item
                missing.discard(event.position)
                if not missing:
                    break
        if missing:
            by_shard: dict[int, list[str]] = {}
            for position in sorted(missing):
                by_shard.setdefault(position[0], []).append(saved_keys.get(position, "?"))
            parts = []
            for p, keys in by_shard.items():
                why = ("it could not be opened (removed? see the 'skipping shard' log line)"
                       if unreadable.get(p) == "open" else
                       f"it could not be read ({unreadable[p]})" if p in unreadable else
                       "it no longer holds them (modified or truncated)")
                shown = ", ".join(repr(k) for k in keys[:5]) + (f" … ({len(keys)} in all)" if len(keys) > 5 else "")
                parts.append(f"shard {shards[p]!r}: {shown}: {why}")
            raise RuntimeError(f"could not re-read {len(missing)} item(s) buffered when the loader state was saved "
                               f"(epoch {self._epoch}): {'; '.join(parts)}. Restore the shard(s) the state was saved "
                               "with, or start the epoch afresh without loading the state.")
        return events

    def _note_key(self, event: ItemEvent) -> None:
        """Counts (and warns about, a few per epoch) a sample whose key an earlier sample of this epoch had."""
        key, shard = event.sample_key, self._rank_shards()[event.position[0]]
        first = self._keys_seen.get(key)
        if first is None:
            self._keys_seen[key] = shard
            return
        self._counters.duplicate_keys.append((shard, key))
        if len(self._counters.duplicate_keys) <= WARNINGS_PER_REASON:
            logger.warning("shard %s: sample key %r was already read from %s this epoch: both are delivered, with the "
                           "same sample key (stats.duplicate_keys lists them; avalign preprocess keeps only the first, "
                           "as duplicate_key). Is the same clip in two shards?", shard, key, first)

    def _pack_items(self, events: Iterator[Event]) -> Iterator[PackItem]:
        """Pack items from events at or after ``next_position``; counts samples and skips."""
        c = self._counters
        for event in events:
            position = event.position
            if self._before(position, self._next_position):
                continue
            self._next_position = (position[0], position[1], position[2] + 1)
            key = event.sample_key  # the tar's key at this position ("" for a shard-level report: not checked)
            group = position[0] // self._interleave
            self._read_keys = {p: v for p, v in self._read_keys.items() if p // self._interleave == group}
            self._read_keys[position[0]] = (position[0], position[1], key)
            if isinstance(event, SkipEvent) and event.reason == "stray_member":  # its sample was delivered
                c.members_dropped.append((event.shard, event.key, event.reason))
                continue
            if isinstance(event, SkipEvent):
                c.skipped.append((event.shard, event.key, event.reason))
                c.samples_read += int(event.was_read)
                if event.reason == "open":
                    c.shards_failed.append(event.shard)
                continue
            if position[2] == 0:
                c.samples_read += 1
                self._note_key(event)
            c.items_read += 1
            self._payloads[position] = event.item
            yield PackItem(event.item.key, pack_lengths(event.item), payload=list(position))

    def _next_pack(self, packs: Iterator[list[PackItem]], *, withhold: bool = False
                   ) -> tuple[Optional[list[PackItem]], Optional[tuple[int, ...]]]:
        """The next pack and its capacities (None: the budgets), after the tail policy: the stream's last pack, when
        below ``min_fill``, is trimmed, or dropped (its items skipped as ``tail_dropped``; None returned). With
        ``withhold`` (tails merged across workers) that pack is kept in ``_withheld`` instead and None returned."""
        pack = next(packs, None)
        if pack is not None and withhold and self._is_tail(pack, self._packer):
            self._withheld = pack
            return None, None
        return self._tail_policy(pack, self._packer)

    def _is_tail(self, pack: list[PackItem], packer: OnlinePacker) -> bool:
        return packer.finished() and packer.fill(pack) < packer.min_fill()

    def _tail_policy(self, pack: Optional[list[PackItem]], packer: OnlinePacker
                     ) -> tuple[Optional[list[PackItem]], Optional[tuple[int, ...]]]:
        if pack is None or self._tail == "pad" or not self._is_tail(pack, packer):
            return pack, None
        if self._tail == "trim":
            totals = [sum(p.lengths[j] for p in pack) for j in range(3)]
            return pack, tail_capacities(totals, self.collator.budgets, self._tail_multiples)
        shards = self._rank_shards()
        for p in pack:
            position = tuple(p.payload)
            self._payloads.pop(position)
            self._counters.skipped.append((shards[position[0]], p.key, "tail_dropped"))
        return None, None

    def _collate(self, pack: list[PackItem], capacities: Optional[tuple[int, ...]] = None) -> PackedBatch:
        items = [self._payloads.pop(tuple(p.payload)) for p in pack]
        batch = self.collator(items, capacities=capacities)
        caps = self.collator.budgets if capacities is None else capacities
        for j in range(3):
            self._counters.capacity[j] += int(caps[j])
            self._counters.used[j] += sum(p.lengths[j] for p in pack)
        first = [item for item, p in zip(items, pack) if p.payload[2] == 0]  # windows share their sample's report
        self._counters.spans_outside += sum(item.sample.report.spans_outside for item in first)
        self._counters.decode_errors += sum(item.decode_errors for item in items)
        self._counters.caption_words_failed += sum(item.sample.report.caption_words_failed for item in first)
        return batch

    def _quota(self) -> Optional[int]:
        """This worker's share of ``batches_per_epoch`` (workers ``w < n % W`` take one more), or None."""
        if self._batches_per_epoch is None:
            return None
        worker_id, num_workers = self._worker_slot()
        return self._batches_per_epoch // num_workers + int(worker_id < self._batches_per_epoch % num_workers)

    def _synced(self, packs: Iterator[list[PackItem]]) -> Iterator[PackedBatch]:
        """Collated batches: exactly this worker's quota of ``batches_per_epoch`` (empty batches after the data,
        the rest of the data dropped), else with several ranks in the main process, all ranks the same number."""
        c = self._counters
        quota = self._quota()
        if quota is not None:
            while c.batches_yielded < quota:
                pack, capacities = self._next_pack(packs)
                batch = self.collator.empty() if pack is None else self._collate(pack, capacities)
                c.batches_yielded += 1
                c.items_yielded += batch.num_items
                yield batch
            if next(packs, None) is not None:
                c.batches_dropped += 1  # the rest of this worker's epoch is not read (nor counted)
            return
        distributed = (self._world_size > 1 and torch.utils.data.get_worker_info() is None
                       and torch.distributed.is_available() and torch.distributed.is_initialized())
        merging = self._merging()
        if merging:
            self._publish(done=False)
        while True:
            pack, capacities = self._next_pack(packs, withhold=merging)
            if distributed:
                have = _all_reduce_flags(pack is not None)
                if self._even_batches == "drop" and not have["all"]:
                    if pack is not None:
                        c.batches_dropped += 1  # the rest of this rank's epoch is not read (nor counted)
                    return
                if self._even_batches == "pad" and not have["any"]:
                    return
                if pack is None:
                    c.batches_yielded += 1
                    yield self.collator.empty()
                    continue
            elif pack is None:
                if merging:
                    yield from self._tail_phase()
                return
            batch = self._collate(pack, capacities)
            c.batches_yielded += 1
            c.items_yielded += batch.num_items
            if merging:
                self._publish(done=False)
            yield batch

    # -- tails merged across DataLoader workers (loaders.pipeline._tail_merge) -----------------------------

    def _merging(self) -> bool:
        """Whether this copy hands its tail to a merger: inside a DataLoader worker with others, without a quota."""
        info = torch.utils.data.get_worker_info()
        return info is not None and info.num_workers > 1 and self._batches_per_epoch is None

    def _publish(self, *, done: bool) -> None:
        """Publishes this worker's count (and, when ``done``, its full-pack count and tail) on the pass's board."""
        merge = self._merge
        count = self._counters.batches_yielded if merge is None else int(merge["count"])
        tail = () if merge is None else tuple(merge["tail"])
        self._board.publish(self._pass, PassRecord(self._worker_slot()[0], count, done, os.getpid(), tail))

    def _tail_phase(self) -> Iterator[PackedBatch]:
        """After the last full pack: deposits the withheld tail, then stops, or (the merger) yields the merged packs."""
        tail, self._withheld = self._withheld or [], None
        worker_id, num_workers = self._worker_slot()
        self._merge = {"count": self._counters.batches_yielded, "role": None, "tails": None, "yielded": 0,
                       "tail": [{"key": p.key, "lengths": list(p.lengths), "payload": list(p.payload)} for p in tail]}
        name = self._pass
        if tail:
            self._board.save_items(name, worker_id, {tuple(p.payload): self._payloads[tuple(p.payload)]
                                                           for p in tail})
        self._publish(done=True)
        records = self._board.decide(name, worker_id, num_workers, self._merge["count"])
        if records is None:
            self._merge["role"] = "stopped"
            for p in tail:
                self._payloads.pop(tuple(p.payload), None)
            return
        records[worker_id] = PassRecord(worker_id, self._merge["count"], True, os.getpid(), tuple(self._merge["tail"]))
        self._merge["role"] = "merger"
        self._merge["tails"] = [list(records[v].tail) for v in range(num_workers)]
        for v in range(num_workers):
            if v != worker_id and records[v].tail:
                self._payloads.update(self._board.load_items(name, v))
        self._board.end(name, worker_id)
        yield from self._merged_batches()

    def _merged_batches(self) -> Iterator[PackedBatch]:
        """The merger's packs of every worker's tail (by worker id, each in its packer's order), from ``yielded`` on;
        the last, when below ``min_fill``, under the tail policy."""
        merge, c = self._merge, self._counters
        items = [PackItem(d["key"], tuple(d["lengths"]), payload=list(d["payload"])) for t in merge["tails"] for d in t]
        packer = OnlinePacker(self._options.limits, buffer_size=len(items) + 1, min_fill=self._min_fill,
                              seed=mix_seed(self._seed, self._epoch, self._rank, _MERGE_SEED_SALT))
        packs = list(packer.pack(items))
        wanted = {tuple(p.payload): p.key for pack in packs[int(merge["yielded"]):] for p in pack}
        self._read_items({position: key for position, key in wanted.items() if position not in self._payloads})
        for index in range(int(merge["yielded"]), len(packs)):
            pack, capacities = packs[index], None
            if index == len(packs) - 1:
                pack, capacities = self._tail_policy(pack, packer)  # the packer has finished: its last pack
            merge["yielded"] += 1
            if pack is None:
                continue
            batch = self._collate(pack, capacities)
            c.batches_yielded += 1
            c.items_yielded += batch.num_items
            yield batch

    def _read_items(self, wanted: dict[Position, str]) -> None:
        """Decodes the items at ``wanted`` (position → key) again from their shards into ``_payloads``.

        Raises:
            RuntimeError: An item is no longer there, or another key is at its position (the shards changed).
        """
        shards = self._rank_shards()
        by_shard: dict[int, set[Position]] = {}
        for position in wanted:
            by_shard.setdefault(position[0], set()).add(position)
        options = self._worker_options()
        for p, missing in sorted(by_shard.items()):
            plan = ResumePlan(next_position=(len(shards), 0, 0), needed=frozenset((q, e) for q, e, _ in missing),
                              interleave=self._interleave)
            steps = shard_steps(p, shards[p], options, plan)
            try:
                for step in steps:
                    for event in step:
                        if isinstance(event, ItemEvent) and event.position in missing:
                            if event.item.key != wanted[event.position]:
                                raise RuntimeError(f"shard {shards[p]} changed during epoch {self._epoch}: item "
                                                   f"{wanted[event.position]!r} is now {event.item.key!r}.")
                            self._payloads[event.position] = event.item
                            missing.discard(event.position)
                    if not missing:
                        break
            finally:
                steps.close()
            if missing:
                raise RuntimeError(f"could not read {len(missing)} tail item(s) {sorted(missing)[:3]} of shard "
                                   f"{shards[p]} again to merge the workers' tails; the shards changed?")

    def _check_epoch(self, jobs: list[tuple[int, str]]) -> None:
        """Fails loudly where nothing could work (see the module docstring). Inside a DataLoader worker, which sees
        only its own shards, the same findings are logged as warnings instead (another worker may have data)."""
        c = self._counters
        urls = [url for _, url in jobs]
        problem = None
        if urls and set(urls) <= set(c.shards_failed):
            shown = ", ".join(repr(u) for u in urls[:5]) + (f" … ({len(urls)} in all)" if len(urls) > 5 else "")
            problem = FileNotFoundError(
                f"none of the shards could be opened: {shown}; check the paths (a glob or a directory is not "
                "expanded: pass a brace pattern like 'train-{000000..000099}.tar' or a list of files).")
        elif urls and not c.samples_read and not self._allow_empty_epoch:
            shown = ", ".join(repr(u) for u in urls[:5]) + (f" … ({len(urls)} in all)" if len(urls) > 5 else "")
            problem = RuntimeError(f"no sample could be read from the shards of epoch {self._epoch}: {shown}; they are "
                                   "empty or their source failed (pass allow_empty_epoch=True to allow it).")
        elif c.samples_read and not c.items_read and not self._allow_empty_epoch:
            counts = dict(Counter(reason for _, _, reason in c.skipped))
            problem = RuntimeError(
                f"every sample of epoch {self._epoch} was skipped ({c.samples_read} read; skipped by reason: {counts}); "
                "see stats.skipped_samples for the keys, or pass allow_empty_epoch=True.")
        if problem is None:
            return
        if torch.utils.data.get_worker_info() is not None:
            logger.warning("DataLoader worker %d: %s", self._worker_slot()[0], problem)
            return
        raise problem


def _all_reduce_flags(have: bool) -> dict[str, bool]:
    """Whether all / any ranks have a batch (one all-reduce of two ints)."""
    import torch.distributed as dist

    device = "cuda" if dist.get_backend() == "nccl" else "cpu"
    flags = torch.tensor([int(have), -int(have)], dtype=torch.int64, device=device)
    dist.all_reduce(flags, op=dist.ReduceOp.MIN)
    return {"all": bool(flags[0].item() == 1), "any": bool(flags[1].item() == -1)}


def _chain_front(first: Event, rest: Iterator[Event]) -> Iterator[Event]:
    yield first
    yield from rest


def make_dataset(
    urls: Union[str, Sequence[str]],
    *,
    seed: int,
    tokenizer: Any = None,
    fps: Optional[float] = None,
    sample_rate: int = 16000,
    budgets: Sequence[int] = (300, 160_000, 512),
    window_seconds: WindowSeconds = AUTO,
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
    resize_in_decoder: bool = True,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    missing_audio: MissingAudio = "empty",
    sample_timeout_seconds: Optional[float] = None,
    max_duration_seconds: Optional[float] = None,
    allow_empty_epoch: bool = False,
    pad_token_id: int = 0,
    batches_per_epoch: Optional[int] = None,
    tail: Tail = "pad",
    tail_multiple: Optional[tuple[int, int, int]] = None,
    pipe_stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS,
) -> AVDataset:
    """An ``IterableDataset`` of :class:`PackedBatch` over WebDataset shards of media + text (see the module
    docstring for DataLoader use, determinism and resume).

    Building it loads, once per process, what its workers would load before their first sample (the decoders'
    and transcript parsers' modules, the pocketsphinx decoder for captions' words): DataLoader workers forked
    afterwards inherit it instead of loading it again at every epoch; spawned workers (``multiprocessing_context=
    "spawn"``) load it again whatever (``loaders.pipeline._preload``).

    Args:
        urls: Shards: paths, a brace pattern, ``::``-joined lists, fsspec URLs or ``pipe:``.
        seed: Seeds the per-epoch shard shuffle and the packer (same seed → same batches).
        tokenizer: A ``tokenizers.Tokenizer``, a Hugging Face fast tokenizer or a callable ``text -> (ids,
            offsets)``: batches then carry ``token_ids`` and text budgets count its tokens. None counts
            whitespace-separated words (no ids).
        fps: Sample frames at this rate: an item's frame k is the frame played at its clip's first frame time + k / fps
            (a window's frames are cut from its clip's grid; ``word_spans`` index them); None keeps every frame.
        sample_rate: Audio rate of the batches.
        budgets: ``(frames, audio samples, tokens)`` per batch; also the fixed tensor capacities. The packer packs
            under six *limits*: these three, then ``max_items``, ``max_words``, ``max_segments``
            (``SampleOptions.limits``, what ``LoaderStats``' pack statistics are per column of).
        window_seconds: ``"auto"`` (default) cuts a clip over a budget into the fewest equal windows that fit;
            a number cuts every clip longer than it; None keeps clips whole (over budget: skipped, ``over_budget``).
        buffer_size: Items the packer looks ahead over (more: tighter packs, more memory).
        min_fill: Pack fill at which the packer emits before the end of the epoch.
        on_error: ``"skip"`` bad samples (counted in ``stats``) or ``"raise"`` :class:`SampleError`.
        device: Where batches are built; keep ``"cpu"`` with DataLoader workers and move with ``batch.to``.
        frame_size: ``(height, width)`` of the frames in batches.
        estimate: Estimate A/V and text offsets for samples without ``align.json`` (slow); False applies 0.
        log_mel: Add per-item log-mel features.
        max_items, max_words, max_segments: Items, word rows and segment rows per batch at most.
        even_batches: With several ranks, ``"drop"`` the tail or ``"pad"`` with empty batches.
        rank, world_size: Default from ``torch.distributed`` when initialised, else 0 and 1.
        resize_in_decoder: Scale frames to ``frame_size`` while decoding (fastest on CPU).
        max_pixels: Skip (``too_large``) media whose frames have more pixels than this, before decoding.
        missing_audio: A video-only clip gets an ``"empty"`` audio span or ``"silence"`` over its duration.
        sample_timeout_seconds: Skip (``timeout``) a sample whose decode + align takes longer; None: no limit.
        max_duration_seconds: Skip (``too_large``) media whose video or audio spans longer; None: no limit.
        allow_empty_epoch: Do not raise when every sample of an epoch was skipped.
        pad_token_id: Value of ``token_ids`` on padding.
        batches_per_epoch: Every rank yields exactly this many batches per epoch (split over its DataLoader
            workers): empty batches (``num_items == 0``) once its data is used up, the rest of its data dropped
            when there is more. What keeps DDP ranks in step with DataLoader workers, which cannot all-reduce;
            pick it from the smallest rank's share (e.g. items per rank / items per batch). None: no quota.
        tail: The last batch of a packer's stream when it is not full (below ``min_fill``): ``"pad"`` (default) keeps
            the full capacities (every batch the same shapes: what ``torch.compile`` and CUDA graphs want);
            ``"trim"`` sizes its frames / samples / tokens to what it holds, rounded up to ``tail_multiple`` (few
            shapes; least padding); ``"drop"`` skips its items (counted in ``stats.skipped`` as ``tail_dropped``).
            One tail per epoch: DataLoader workers hand theirs to one merger (module docstring, Padding), as
            ``make_loader`` has one stream. See ``loaders.pipeline._tail``.
        tail_multiple: ``(frames, samples, tokens)`` a trimmed tail is rounded up to; None: each budget / 8.
        pipe_stall_seconds: A ``pipe:`` shard whose command sends no byte for this long is killed (its whole process
            group) and skipped: as ``open`` before its first byte, as ``truncated`` after; the log line and a
            ``raise``'s message give its exit status and stderr. Default 300 s (``loaders._pipe``).

    Raises:
        ValueError: A bad option; the message names it, the valid range and a hint.
        FileNotFoundError: Every URL is a local path and none exists.
        OSError: In a DataLoader worker when its pass begins, where ``TMPDIR`` is too deep for the Unix socket over which
            it hands its batches to the main process (:func:`check_worker_socket`; torch re-raises it in the main
            process).

    Example:
        >>> ds = make_dataset("sample_data/shards/shard-{000000..000001}.tar", seed=0)       # doctest: +SKIP
        >>> for batch in torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2):  # doctest: +SKIP
        ...     print(batch.sample_keys, batch.segment_texts[:1])
    """
    return build(AVDataset, urls, seed=seed, tokenizer=tokenizer, fps=fps, sample_rate=sample_rate, budgets=budgets,
                 window_seconds=window_seconds, buffer_size=buffer_size, min_fill=min_fill, on_error=on_error,
                 device=device, frame_size=frame_size, estimate=estimate, log_mel=log_mel, max_items=max_items,
                 max_words=max_words, max_segments=max_segments, even_batches=even_batches, rank=rank,
                 world_size=world_size, resize_in_decoder=resize_in_decoder, max_pixels=max_pixels,
                 missing_audio=missing_audio, sample_timeout_seconds=sample_timeout_seconds,
                 max_duration_seconds=max_duration_seconds,
                 allow_empty_epoch=allow_empty_epoch, pad_token_id=pad_token_id, batches_per_epoch=batches_per_epoch,
                 tail=tail, tail_multiple=tail_multiple, pipe_stall_seconds=pipe_stall_seconds)


def build(cls: type, urls: Union[str, Sequence[str]], *, seed: int, **kwargs: Any) -> Any:
    """Validates the options of :func:`make_dataset` and builds ``cls`` (AVDataset or a subclass) with them;
    ``kwargs`` beyond make_dataset's options are passed to ``cls``."""
    o = dict(_DEFAULTS)
    loader_only = ("num_workers", "multiprocessing_context", "pin_memory", "interleave_shards", "worker_stall_seconds")
    unknown = set(kwargs) - set(o) - set(loader_only)
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; see make_dataset for the valid ones.")
    extra = {k: kwargs.pop(k) for k in loader_only if k in kwargs}
    o.update(kwargs)
    resolved = resolve_options(o)
    shard_urls = expand_shard_urls(urls)
    _check_local_paths(shard_urls)
    _check_shards_per_rank(len(shard_urls), resolved.world_size, o["even_batches"], o["batches_per_epoch"])
    # Here, before any worker is forked (a DataLoader forks at iter()): each forked worker then inherits the modules
    # and the pocketsphinx decoder instead of loading them before its first batch (loaders.pipeline._preload).
    if extra.get("multiprocessing_context", "fork") == "fork" or not extra.get("num_workers"):
        preload_for_workers(estimate=resolved.sample.estimate)
    return cls(shard_urls, seed=seed, options=resolved.sample, collator=resolved.collator, buffer_size=o["buffer_size"],
               min_fill=o["min_fill"], rank=resolved.rank, world_size=resolved.world_size,
               even_batches=o["even_batches"], allow_empty_epoch=o["allow_empty_epoch"],
               batches_per_epoch=o["batches_per_epoch"], tail=o["tail"], tail_multiple=o["tail_multiple"], **extra)


_DEFAULTS: dict[str, Any] = {
    name: parameter.default for name, parameter in inspect.signature(make_dataset).parameters.items()
    if parameter.kind is inspect.Parameter.KEYWORD_ONLY and name != "seed"
}


_IDLE_WORKERS_SAID = False
"""Whether this process has said that DataLoader workers have no shard (once per worker process)."""


def _say_idle_workers(worker_id: int, num_workers: int, num_shards: int) -> None:
    """In the first DataLoader worker that gets no shard (workers ``num_shards..num_workers-1``: shard ``p`` goes to
    worker ``p % num_workers``), warn once per process: those workers decode nothing, silently, and the epoch runs at
    the speed of fewer workers (``make_loader`` shares samples between its workers instead)."""
    global _IDLE_WORKERS_SAID
    if _IDLE_WORKERS_SAID or num_workers <= 1 or num_shards >= num_workers or worker_id != num_shards:
        return
    _IDLE_WORKERS_SAID = True
    logger.warning("DataLoader num_workers=%d but this rank has %d shard(s): a DataLoader worker reads whole shards, "
                   "so %d worker(s) decode nothing this epoch; hint: write more shards (`avalign preprocess INPUT OUT "
                   "--samples-per-shard N`) or use loaders.make_loader(num_workers=...), whose workers share samples",
                   num_workers, num_shards, num_workers - num_shards)


def _check_shards_per_rank(num_shards: int, world_size: int, even_batches: str, batches_per_epoch: Optional[int]) -> None:
    """Ranks ``num_shards..world_size-1`` get no shard. With ``even_batches="drop"`` (and no quota) every rank then
    stops at its first batch, an empty epoch everywhere: refused. With ``"pad"`` or a quota those ranks only pad: logged."""
    if world_size <= num_shards:
        return
    message = (f"world_size = {world_size} ranks but only {num_shards} shard(s): ranks {num_shards}..{world_size - 1} "
               "get no shard (shards are split between ranks whole)")
    if even_batches == "drop" and batches_per_epoch is None:
        raise ValueError(f"{message}, and with even_batches='drop' every rank stops when the first one runs out: an "
                         "empty epoch on every rank; write at least world_size shards (split them finer: `avalign "
                         "preprocess INPUT OUT --samples-per-shard N` writes N samples a shard), or pass "
                         "even_batches='pad' or batches_per_epoch=N.")
    logger.warning("%s; they yield only empty batches.", message)


def _check_local_paths(urls: list[str]) -> None:
    """Raises FileNotFoundError when every URL is a plain local path and none is an existing file (a typo, a glob,
    a directory: a directory exists but is no shard, and a DataLoader worker would only log it, for an epoch of
    no batch)."""
    local = [u for u in urls if "://" not in u and not u.startswith("pipe:")]
    if len(local) != len(urls) or any(os.path.exists(u) and not os.path.isdir(u) for u in local):
        return
    shown = ", ".join(repr(u) for u in urls[:5]) + (f" … ({len(urls)} in all)" if len(urls) > 5 else "")
    hint = ""
    if any(any(c in u for c in "*?[") for u in urls) or any(os.path.isdir(u) for u in urls):
        hint = " (a glob or a directory is not expanded: pass a brace pattern or a list of .tar files)"
        import glob

        from avcore import SHARD_SUFFIXES

        # What the user meant (`avalign preprocess` / `report` take a directory of shards): name it, and the call.
        patterns = [os.path.join(u, "*.tar") if os.path.isdir(u) else u for u in urls]
        found = sorted({f for pattern in patterns for f in glob.glob(pattern)
                        if os.path.isfile(f) and f.lower().endswith(SHARD_SUFFIXES)})
        if found:
            call = (f"sorted(glob.glob({patterns[0]!r}))" if len(patterns) == 1 else
                    f"sorted(f for p in {patterns!r} for f in glob.glob(p))")
            hint = (f" (a glob or a directory is not expanded; it matches {len(found)} shard(s), first {found[0]!r}: "
                    f"pass {call}, or a brace pattern)")
    raise FileNotFoundError(f"no shard exists: {shown}{hint}.")
