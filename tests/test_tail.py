"""The tail policy (``tail="pad" | "trim" | "drop"``) in make_loader and make_dataset: the batches against the packs
of ``tail="pad"`` (the packer's plan: the policy never changes what is packed together), item counts, resume."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from loaders import make_dataset, make_loader
from loaders.pipeline import Collator, OnlinePacker, PackItem, SharedSlots
from tests.conftest import collector_on_new_objects
from tests.resume_helper import assert_same
from tests.test_dataset import OPTIONS, _digest, _windows, shards  # noqa: F401 - the module fixture

BUDGETS = OPTIONS["budgets"]
MIN_FILL = 0.9  # make_dataset's default


@pytest.fixture(scope="module", autouse=True)
def _collector_on_this_modules_objects():
    """Each make_loader epoch with workers collects cyclic garbage before forking (``heap_frozen_for_fork``): here
    over this module's own objects, not over the whole pytest worker's heap (``collector_on_new_objects``)."""
    with collector_on_new_objects():
        yield


DATALOADER_WORKERS = 3
"""Workers of the DataLoader runs: their merged tail is partly filled on this set (with 2 it happens to be full)."""


def _dataloader(shards, tail, num_workers=DATALOADER_WORKERS, **extra):
    ds = make_dataset(shards["paths"], seed=5, tail=tail, **OPTIONS, **extra)
    return DataLoader(ds, batch_size=None, num_workers=num_workers)


def _loader(shards, tail, **extra):
    return make_loader(shards["paths"], seed=5, tail=tail, num_workers=2, **OPTIONS, **extra)


def _capacity(batch) -> tuple[int, int, int]:
    return batch.frames.shape[0], batch.audio.shape[0], batch.token_spans.shape[0]


def _used(batch) -> tuple[int, int, int]:
    n = batch.num_items
    return (int(batch.cu_seqlens_frames[n]), int(batch.cu_seqlens_samples[n]), int(batch.cu_seqlens_tokens[n]))


def _fill(batch) -> float:
    """The packer's fill of a full-capacity batch: its fullest column of the six limits."""
    used = _used(batch) + (batch.num_items, batch.num_words, batch.num_segments)
    limits = BUDGETS + (OPTIONS["max_items"], OPTIONS["max_words"], 256)
    return max(u / b for u, b in zip(used, limits))


def _expected_trim(used: tuple[int, int, int]) -> tuple[int, int, int]:
    """The documented rule, written out: round each total (at least 1) up to budget / 8 (rounded up), cap at budget."""
    out = []
    for total, budget in zip(used, BUDGETS):
        multiple = math.ceil(budget / 8)
        out.append(min(budget, math.ceil(max(total, 1) / multiple) * multiple))
    return tuple(out)


def _batches(source) -> list:
    return [b for b in source]


class _Runs:
    """One epoch per (kind, tail) configuration, recorded once per module: the tests that inspect the same run share
    it (each run forks its workers). ``kind`` is ``"make_loader"`` (2 workers) or ``"DataLoader"`` (3); returns the
    batches and, for make_loader, its ``stats`` after the epoch. A make_loader run is checkpointed after every
    batch, as a training loop saving at every step does: ``states[tail][i]`` is its pickled state after ``i + 1``
    batches (a state that changed the run would show as a difference between it and a run restored from it)."""

    def __init__(self, shards) -> None:
        self.shards, self.recorded, self.states = shards, {}, {}

    def __call__(self, kind: str, tail: str) -> tuple[list, object]:
        if (kind, tail) not in self.recorded:
            if kind == "make_loader":
                loader, batches, states = _loader(self.shards, tail), [], []
                for batch in loader:
                    batches.append(batch)
                    states.append(pickle.loads(pickle.dumps(loader.state_dict())))
                self.recorded[kind, tail], self.states[tail] = (batches, loader.stats), states
            else:
                self.recorded[kind, tail] = (_batches(_dataloader(self.shards, tail)), None)
        return self.recorded[kind, tail]


@pytest.fixture(scope="module")
def runs(shards) -> _Runs:
    return _Runs(shards)


def _states_at(loader, cuts, reference) -> dict:
    """Iterates ``loader`` once, taking its (pickled) state after each number of batches in ``cuts``, as a training
    loop checkpointing more than once in an epoch does; the batches before the last cut must equal ``reference``'s."""
    iterator, head, states = iter(loader), [], {}
    for cut in sorted(cuts):
        while len(head) < cut:
            head.append(_digest(next(iterator)))
        states[cut] = pickle.loads(pickle.dumps(loader.state_dict()))
    assert head == reference[:len(head)]
    del iterator
    return states


@pytest.mark.parametrize("kind", ["make_loader", "DataLoader"])
def test_trim_and_drop_against_the_padded_packs(shards, runs, kind):
    """The same packs in the same order under every policy; only each stream's last, partly filled pack differs:
    trimmed to its rounded lengths (values equal to the padded batch's prefix, ``cu_seqlens`` unchanged), or dropped
    with its items counted as ``tail_dropped``. One tail per epoch in both: a DataLoader's workers hand theirs to the
    merger, whose batches come last (``tests/test_tail_merge.py``)."""
    padded, trimmed = runs(kind, "pad")[0], runs(kind, "trim")[0]
    assert all(_capacity(b) == BUDGETS for b in padded)
    assert [b.sample_keys for b in trimmed] == [b.sample_keys for b in padded]
    assert sorted(k for b in padded for k in b.sample_keys) == _windows(shards)
    changed = [i for i, (p, t) in enumerate(zip(padded, trimmed)) if _capacity(t) != _capacity(p)]
    assert changed == [len(padded) - 1]  # the epoch's last batch
    for i, (p, t) in enumerate(zip(padded, trimmed)):
        if i not in changed:
            assert _digest(t) == _digest(p)
            continue
        assert _fill(p) < MIN_FILL
        assert _capacity(t) == _expected_trim(_used(p)) and _used(t) == _used(p)
        cap_f, cap_s, cap_t = _capacity(t)
        for name in ("cu_seqlens_frames", "cu_seqlens_samples", "cu_seqlens_tokens", "word_spans", "segment_spans"):
            assert torch.equal(getattr(t, name), getattr(p, name)), name
        assert torch.equal(t.frames, p.frames[:cap_f]) and torch.equal(t.audio, p.audio[:cap_s])
        for name, cap in (("position_ids_frames", cap_f), ("segment_ids_frames", cap_f), ("position_ids_samples", cap_s),
                          ("segment_ids_samples", cap_s), ("position_ids_tokens", cap_t), ("segment_ids_tokens", cap_t),
                          ("token_spans", cap_t)):
            assert torch.equal(getattr(t, name), getattr(p, name)[:cap]), name
        for j, name in enumerate(("frames", "samples", "tokens")):
            assert t.padding[name] == pytest.approx(1 - _used(t)[j] / _capacity(t)[j])
    assert sum(map(np.prod, (_capacity(b) for b in trimmed))) < sum(map(np.prod, (_capacity(b) for b in padded)))

    dropped_batches, stats = runs(kind, "drop")
    if kind == "make_loader":
        skipped = [key for _, key, reason in stats.skipped_samples if reason == "tail_dropped"]
        assert stats.skipped["tail_dropped"] == len(skipped)
        assert stats.items_yielded == sum(b.num_items for b in dropped_batches)
    else:
        skipped = None
    expected_dropped = sorted(k for i in changed for k in padded[i].sample_keys)
    kept = [b.sample_keys for b in dropped_batches]
    assert kept == [b.sample_keys for i, b in enumerate(padded) if i not in changed]
    assert all(_capacity(b) == BUDGETS for b in dropped_batches)
    if skipped is not None:
        assert sorted(skipped) == expected_dropped
    assert sorted([k for keys in kept for k in keys] + expected_dropped) == _windows(shards)


def test_in_the_main_process_dropped_items_are_counted_and_padding_is_of_the_emitted_capacity(shards):
    """``make_dataset`` iterated in the main process: ``stats`` counts the dropped items, and ``stats.padding`` is
    1 - used / capacity over the batches actually emitted (a trimmed tail counts at its own capacity)."""
    for tail in ("pad", "trim", "drop"):
        ds = make_dataset(shards["paths"], seed=5, tail=tail, **OPTIONS)
        batches = list(ds)
        stats = ds.stats
        used = np.sum([_used(b) for b in batches], axis=0)
        capacity = np.sum([_capacity(b) for b in batches], axis=0)
        for j, name in enumerate(("frames", "samples", "tokens")):
            assert stats.padding[name] == pytest.approx(1 - used[j] / capacity[j])
        delivered = sum(b.num_items for b in batches)
        assert stats.items_yielded == delivered
        assert delivered + stats.skipped.get("tail_dropped", 0) == len(_windows(shards))
        assert (stats.skipped.get("tail_dropped", 0) > 0) == (tail == "drop")


@pytest.mark.parametrize("tail", ["pad", "trim", "drop"])
def test_stateful_dataloader_resumes_exactly_with_every_tail_policy(shards, runs, tail):
    """Resumed before the merged tail (cut 1: test_dataset), a StatefulDataLoader delivers the rest of the epoch
    byte for byte as a DataLoader's uninterrupted epoch (the reference) has it."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build():
        return StatefulDataLoader(make_dataset(shards["paths"], seed=5, tail=tail, **OPTIONS), batch_size=None,
                                  num_workers=DATALOADER_WORKERS)

    reference = [_digest(b) for b in runs("DataLoader", tail)[0]]
    states = _states_at(build(), (len(reference) - 2, len(reference) - 1), reference)
    for cut, state in states.items():
        restored = build()
        restored.load_state_dict(state)
        assert_same([_digest(b) for b in restored], reference[cut:], where=f"tail={tail}, resumed after {cut} batches")


@pytest.mark.parametrize("tail", ["pad", "trim", "drop"])
def test_make_loader_resumes_exactly_with_every_tail_policy(shards, runs, tail):
    """Saved mid-epoch and before the tail, make_loader restores the rest of the epoch byte for byte, and the
    epoch's skip counts (tail_dropped included)."""
    batches, final_stats = runs("make_loader", tail)
    reference, final_skips = [_digest(b) for b in batches], final_stats.skipped
    for cut in (len(reference) // 2, len(reference) - 1):
        state = runs.states[tail][cut - 1]  # taken in the recorded run after `cut` batches
        restored = _loader(shards, tail)
        restored.load_state_dict(state)
        assert_same([_digest(b) for b in restored], reference[cut:], where=f"tail={tail}, resumed after {cut} batches")
        assert restored.stats.skipped == final_skips


def test_packer_emits_the_least_filled_pack_last_and_says_when_finished():
    items = [PackItem(f"k{i}", (n,)) for i, n in enumerate([9, 2, 8, 3, 10, 1, 7, 4])]
    packer = OnlinePacker([10], buffer_size=100, seed=3)
    packs, finished = [], []
    for pack in packer.pack(items):
        packs.append(sum(item.lengths[0] for item in pack))
        finished.append(packer.finished())
    assert sorted(packs) == [4, 10, 10, 10, 10] and packs[-1] == 4  # 44 in packs of 10: the 4 last
    assert finished == [False] * 4 + [True]
    assert packer.fill([PackItem("a", (4,)), PackItem("b", (3,))]) == pytest.approx(0.7)

    saved = OnlinePacker([10], buffer_size=100, seed=3)  # restored with packs ready: still knows the input ended
    stream = saved.pack(items)
    next(stream)
    resumed = OnlinePacker([10], buffer_size=100, seed=3)
    resumed.load_state_dict(pickle.loads(pickle.dumps(saved.state_dict())))
    rest = []
    for pack in resumed.pack([]):
        rest.append((sum(item.lengths[0] for item in pack), resumed.finished()))
    assert rest == [(n, False) for n in packs[1:-1]] + [(4, True)]


def test_tail_options_are_checked(shards):
    with pytest.raises(ValueError, match="tail must be one of"):
        make_dataset(shards["paths"], seed=0, tail="keep")
    for bad in ((0, 1, 1), (1, 1), 8, (1.5, 1, 1)):
        with pytest.raises(ValueError, match="tail_multiple"):
            make_dataset(shards["paths"], seed=0, tail="trim", tail_multiple=bad)


def test_tail_multiple_sets_the_rounding(shards, runs):
    padded = runs("make_loader", "pad")[0]
    trimmed = _batches(_loader(shards, "trim", tail_multiple=(3, 1000, 1)))
    used = _used(padded[-1])
    expected = tuple(min(b, math.ceil(max(u, 1) / m) * m) for u, b, m in zip(used, BUDGETS, (3, 1000, 1)))
    assert _capacity(trimmed[-1]) == expected


def test_collator_capacities_are_checked_and_a_small_batch_never_sizes_the_shared_slots():
    collator = Collator((20, 32000, 16), frame_size=(8, 8), max_items=4)
    with pytest.raises(ValueError, match="capacities"):
        collator([], capacities=(21, 10, 10))
    batch = collator([], capacities=(5, 4000, 2))
    assert _capacity(batch) == (5, 4000, 2) and batch.padding["frames"] == 1.0
    slots = SharedSlots()
    writer = slots.writer()
    writer.empty((10,), torch.float32)
    slots.finish(writer, sizes_slots=False)  # a trimmed batch: later full-size batches would not fit slots of its size
    assert slots.writer().slot is None  # still unsized: the next batch goes to fresh memory and sizes the slots
