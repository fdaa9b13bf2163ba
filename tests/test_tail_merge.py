"""Tails merged across DataLoader workers (``make_dataset``, ``num_workers > 1``): one tail per epoch as in
``make_loader``, every item delivered once, the same batches whatever the workers' speeds, no deadlock, exact
resume through ``StatefulDataLoader`` at every step, the tail policy applied to the merged tail."""
from __future__ import annotations

import json
import os
import pickle
import time

import pytest
import torch
from torch.utils.data import DataLoader, IterableDataset

from loaders import make_dataset, make_loader
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar
from tests.resume_helper import assert_same
from tests.test_dataset import OPTIONS, _digest, _windows, shards  # noqa: F401 - the module fixture
from tests.test_tail import _fill, _used

BUDGETS = OPTIONS["budgets"]
MIN_FILL = 0.9  # make_dataset's default


def _padding(batches) -> tuple[float, ...]:
    used = [sum(_used(b)[j] for b in batches) for j in range(3)]
    capacity = [sum((b.frames.shape[0], b.audio.shape[0], b.token_spans.shape[0])[j] for b in batches) for j in range(3)]
    return tuple(1 - u / c for u, c in zip(used, capacity))


def _keys(batches) -> list[str]:
    return sorted(k for b in batches for k in b.sample_keys)


def _dataloader(paths, num_workers, tail="pad", **extra):
    return DataLoader(make_dataset(paths, seed=5, tail=tail, **OPTIONS), batch_size=None, num_workers=num_workers,
                      **extra)


class _Runs:
    """One uninterrupted epoch per configuration, recorded once per module (each run forks its workers)."""

    def __init__(self, shards) -> None:
        self.shards, self.recorded = shards, {}

    def __call__(self, kind, tail="pad", num_workers=2) -> list:
        if (kind, tail, num_workers) not in self.recorded:
            paths = self.shards["paths"]
            if kind == "make_loader":
                source = make_loader(paths, seed=5, tail=tail, num_workers=num_workers, **OPTIONS)
            else:
                source = _dataloader(paths, num_workers, tail)
            self.recorded[kind, tail, num_workers] = list(source)
        return self.recorded[kind, tail, num_workers]


@pytest.fixture(scope="module")
def runs(shards) -> _Runs:
    return _Runs(shards)


@pytest.mark.parametrize("num_workers", [2, 3])
def test_one_tail_per_epoch_and_every_item_once(shards, runs, num_workers):
    batches = runs("DataLoader", num_workers=num_workers)
    reference = runs("make_loader")
    """Oracle: make_loader's single stream over the same items (and the item set). Without the merge a 2-worker
    epoch here had 2 tails; now the batches and the padding are at most make_loader's, and only the last batch (the
    merger's, which comes last in the DataLoader's order) may be a tail."""
    batches = runs("DataLoader", num_workers=num_workers)
    reference = runs("make_loader")
    assert _keys(batches) == _windows(shards)  # every item exactly once
    assert len(batches) <= len(reference)
    assert all(ours <= theirs + 1e-12 for ours, theirs in zip(_padding(batches), _padding(reference)))
    below = [i for i, b in enumerate(batches) if _fill(b) < MIN_FILL]
    assert len(below) <= len([b for b in reference if _fill(b) < MIN_FILL])


@pytest.mark.parametrize("num_workers", [2, 3])
def test_the_merged_batches_are_the_workers_tails_repacked(shards, runs, num_workers):
    """Oracle: the same DataLoader without the merge (a ``batches_per_epoch`` quota keeps each worker's own tail; with
    more batches than data, batch ``i`` is worker ``i % num_workers``'s, empty ones after its data). The merge only
    takes out some workers' last, partly filled batches: the others come out unchanged and in the same order, followed
    by packs of exactly the items taken out, no more of them and with no more padding."""
    quota = 12 * num_workers
    unmerged = list(DataLoader(make_dataset(shards["paths"], seed=5, batches_per_epoch=quota, **OPTIONS),
                               batch_size=None, num_workers=num_workers))
    assert len(unmerged) == quota and all(not b.num_items for b in unmerged[-num_workers:])  # no data dropped
    last = {max(i for i, b in enumerate(unmerged) if b.num_items and i % num_workers == w) for w in range(num_workers)
            if any(b.num_items for b in unmerged[w::num_workers])}
    merged = runs("DataLoader", num_workers=num_workers)
    pending = [(i, b) for i, b in enumerate(unmerged) if b.num_items]
    replaced, position, kept = [], 0, 0
    for batch in merged:  # match the merged run against the unmerged one, setting aside workers' last batches
        while position < len(pending) and pending[position][0] in last and \
                _digest(pending[position][1]) != _digest(batch):
            replaced.append(pending[position])
            position += 1
        if position == len(pending) or _digest(pending[position][1]) != _digest(batch):
            break
        position, kept = position + 1, kept + 1
    replaced += pending[position:]
    rest = merged[kept:]
    assert replaced and {i for i, _ in replaced} <= last  # only workers' last batches are replaced
    assert all(_fill(b) < MIN_FILL for _, b in replaced)
    assert _keys(rest) == _keys([b for _, b in replaced]) and 1 <= len(rest) <= len(replaced)
    assert all(m <= r + 1e-12 for m, r in zip(_padding(rest), _padding([b for _, b in replaced])))
    if num_workers == 2:  # on this set: both workers end with a partial batch, and the two fit in one
        assert (len(replaced), len(rest)) == (2, 1)


class _Slowed(IterableDataset):
    """``dataset`` whose DataLoader worker ``slow_worker`` sleeps ``seconds`` before each of its batches."""

    def __init__(self, dataset, slow_worker: int, seconds: float) -> None:
        self.dataset, self.slow_worker, self.seconds = dataset, slow_worker, seconds

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        for batch in self.dataset:
            if info is not None and info.id == self.slow_worker:
                time.sleep(self.seconds)
            yield batch


@pytest.mark.parametrize("slow_worker", [0, 1])
def test_the_batches_do_not_depend_on_the_workers_speeds(shards, runs, slow_worker):
    reference = [_digest(b) for b in runs("DataLoader", num_workers=2)]
    slowed = _Slowed(make_dataset(shards["paths"], seed=5, **OPTIONS), slow_worker, 0.2)
    got = [_digest(b) for b in DataLoader(slowed, batch_size=None, num_workers=2)]
    assert_same(got, reference, where=f"worker {slow_worker} slowed")


def _exited(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] in "ZX"
    except FileNotFoundError:
        return True


class _StaleUntilExit:
    """``json.load`` for DataLoader workers that reproduces, on demand, the interleaving of the CI failure
    (BENCHMARKS.md, "Tail merge, second try"): a worker that waits for another (smaller key, not done) reads that
    one's record, and the other then publishes ``done``, stops and exits before the waiting worker looks again. Here
    the read is held until the other process has exited (when its final key is below the reader's: it then stops) and
    returns the record as it was read; ``marker`` (a file) records that it happened."""

    def __init__(self, marker) -> None:
        self.marker, self.load = str(marker), json.load

    def __call__(self, f, *args, **kwargs):
        data = self.load(f, *args, **kwargs)
        info = torch.utils.data.get_worker_info()
        if info is None or os.path.exists(self.marker) or not isinstance(data, dict) or data.get("done", True):
            return data
        try:
            with open(os.path.join(os.path.dirname(f.name), f"w{info.id}.json")) as own:
                mine = self.load(own)
        except FileNotFoundError:
            return data
        key = (mine["count"], info.id)
        if not mine["done"] or (data["count"], data["worker_id"]) > key:
            return data  # not in the tail phase, or the other one is ahead: decide does not wait for it
        deadline = time.monotonic() + 60
        while not _exited(data["pid"]) and time.monotonic() < deadline:
            try:
                with open(f.name) as again:
                    now = self.load(again)
            except FileNotFoundError:
                now = data
            if now["done"] and (now["count"], now["worker_id"]) > key:
                return now  # it will merge, not exit: nothing to reproduce here
            time.sleep(0.002)
        if _exited(data["pid"]):
            with open(self.marker, "w") as out:
                out.write(f"worker {info.id} read worker {data['worker_id']}'s record {data} and saw it exit\n")
        return data


def test_a_worker_that_finishes_and_exits_right_after_its_record_was_read_is_not_taken_for_abandoned(
        shards, runs, tmp_path, monkeypatch):
    """The cause of the CI failure, made deterministic: worker 0 is slowed, so worker 1 (the merger: key (2, 1)) waits
    for it; its read of worker 0's record (not yet done) is held until worker 0 has published ``done``, stopped and
    exited. The merger must judge worker 0 by a record read after it saw the exit (done), not by the stale one
    (before the fix: ``RuntimeError: DataLoader worker 0 (pid N) exited before it finished its epoch pass``)."""
    reference = [_digest(b) for b in runs("DataLoader", num_workers=2)]
    marker = tmp_path / "reproduced"
    monkeypatch.setattr(json, "load", _StaleUntilExit(marker))  # forked workers inherit it
    slowed = _Slowed(make_dataset(shards["paths"], seed=5, **OPTIONS), 0, 0.2)
    got = [_digest(b) for b in DataLoader(slowed, batch_size=None, num_workers=2)]
    assert marker.exists()  # the interleaving happened
    assert_same(got, reference, where="worker 0 exited right after the merger read its record")


@pytest.fixture(scope="module")
def uneven(tmp_path_factory) -> list[str]:
    """Two shards: 7 clips and 1 clip (1 s at 10 fps each): one worker has many batches, the other one tail."""
    d = tmp_path_factory.mktemp("uneven_shards")
    clip = tiny_clip(d / "clip.mp4", 1.0, fps=10, sample_rate=16000)
    paths = []
    for index, count in enumerate((7, 1)):
        path = d / f"shard-{index:06d}.tar"
        write_tar(path, [(f"u{index}c{j}.mp4", clip) for j in range(count)])
        paths.append(str(path))
    return paths


@pytest.mark.timeout(120)
@pytest.mark.parametrize("num_workers", [2, 3])
def test_no_deadlock_with_uneven_shards_and_prefetch_factor_1(uneven, num_workers):
    """The worker with the short shard reaches its tail while the other has most of its batches ahead and the main
    process takes one batch per worker in turn (``prefetch_factor=1``); a third worker has no shard at all."""
    batches = list(_dataloader(uneven, num_workers, prefetch_factor=1))
    single = list(_dataloader(uneven, 0))
    assert _keys(batches) == _keys(single) == sorted(f"u{i}c{j}@{w}" for i, n in ((0, 7), (1, 1))
                                                       for j in range(n) for w in range(2))
    assert len([b for b in batches if _fill(b) < MIN_FILL]) <= 1


def test_persistent_workers_over_two_epochs_and_an_aborted_epoch(shards):
    """Persistent workers make one pass per epoch with the same processes: each epoch (after an aborted one too)
    equals a fresh DataLoader's epoch, and a pass after an epoch abandoned midway (no ``set_epoch``) repeats it
    whole (continuing it would start the workers' counts out of step with the DataLoader's task cycle)."""
    def fresh(epoch):
        ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
        ds.set_epoch(epoch)
        return [_digest(b) for b in DataLoader(ds, batch_size=None, num_workers=2)]

    expected = {0: fresh(0), 1: fresh(1)}
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    for epoch in (0, 1):
        ds.set_epoch(epoch)
        assert_same([_digest(b) for b in loader], expected[epoch], where=f"persistent, epoch {epoch}")
    ds.set_epoch(0)
    iterator = iter(loader)
    for _ in range(len(expected[0]) - 1):  # abandoned with the merger's batch (at least) still to come
        next(iterator)
    ds.set_epoch(1)
    assert_same([_digest(b) for b in loader], expected[1], where="persistent, epoch 1 after an aborted epoch 0")
    iterator = iter(loader)
    for _ in range(2):  # epoch 1 abandoned midway, the workers' counts left at 1
        next(iterator)
    assert_same([_digest(b) for b in loader], expected[1], where="persistent, epoch 1 again after abandoning it")
    del iterator, loader


def test_an_aborted_epoch_then_a_new_dataloader(shards, runs):
    """Non-persistent workers: an epoch abandoned near its end, then a new iteration: the same batches again."""
    reference = [_digest(b) for b in runs("DataLoader", num_workers=2)]
    loader = _dataloader(shards["paths"], 2)
    iterator = iter(loader)
    for _ in range(len(reference) - 1):
        next(iterator)
    del iterator
    assert_same([_digest(b) for b in loader], reference, where="after an aborted epoch")


@pytest.mark.parametrize("num_workers", [2, 3])
def test_stateful_dataloader_resumes_exactly_after_every_step(shards, runs, num_workers):
    """Saved after every batch (also after a worker has ended and while the merger yields), a restored
    StatefulDataLoader yields the rest of the epoch byte for byte."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build():
        return StatefulDataLoader(make_dataset(shards["paths"], seed=5, **OPTIONS), batch_size=None,
                                  num_workers=num_workers)

    reference = [_digest(b) for b in runs("DataLoader", num_workers=num_workers)]
    loader, states, got = build(), [], []
    for batch in loader:
        got.append(_digest(batch))
        states.append(pickle.loads(pickle.dumps(loader.state_dict())))
    assert_same(got, reference, where="StatefulDataLoader, uninterrupted")
    for cut, state in enumerate(states, start=1):
        restored = build()
        restored.load_state_dict(state)
        assert_same([_digest(b) for b in restored], reference[cut:], where=f"resumed after {cut} batches")


@pytest.mark.parametrize("tail", ["trim", "drop"])
def test_the_tail_policy_applies_to_the_merged_tail(shards, runs, tail):
    """The policy never changes what is packed together (against the ``"pad"`` run): ``"trim"`` sizes the last batch
    to what it holds, ``"drop"`` leaves it out; every other batch is the same (3 workers: this set's merged tail is
partial there)."""
    padded = runs("DataLoader", num_workers=3)
    got = runs("DataLoader", tail=tail, num_workers=3)
    last = padded[-1]
    assert _fill(last) < MIN_FILL  # this set's merged tail is partial
    assert [_digest(b) for b in got[:len(padded) - 1]] == [_digest(b) for b in padded[:-1]]
    if tail == "drop":
        assert len(got) == len(padded) - 1
        assert _keys(got) == sorted(set(_windows(shards)) - set(last.sample_keys))
    else:
        assert len(got) == len(padded) and got[-1].sample_keys == last.sample_keys
        assert _used(got[-1]) == _used(last)
        multiples = [-(-b // 8) for b in BUDGETS]
        expected = tuple(min(b, -(-max(u, 1) // m) * m) for u, b, m in zip(_used(last), BUDGETS, multiples))
        assert (got[-1].frames.shape[0], got[-1].audio.shape[0], got[-1].token_spans.shape[0]) == expected


def test_persistent_stateful_dataloader_resumes_exactly_after_every_step_of_a_later_epoch(shards):
    """Persistent workers, epoch 1 (after ``set_epoch``), a state saved after every batch: each restores the rest of
    epoch 1 byte for byte. A worker's first state of a pass is taken when torch calls ``iter()``, before its first
    batch: the pending ``set_epoch`` must be in it (before, a state saved before every worker had yielded in the new
    epoch restored that worker to the end of the old one: wrong batches, and with the merge, tails of the old epoch)."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build():
        ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
        return ds, StatefulDataLoader(ds, batch_size=None, num_workers=3, persistent_workers=True)

    ds, loader = build()
    [_digest(b) for b in loader]  # epoch 0
    ds.set_epoch(1)
    reference, states = [], []
    for batch in loader:
        reference.append(_digest(batch))
        states.append(pickle.loads(pickle.dumps(loader.state_dict())))
    del loader
    for cut, state in enumerate(states, start=1):
        restored_ds, restored = build()
        restored_ds.set_epoch(1)  # what a training loop does before loading the checkpoint
        restored.load_state_dict(state)
        assert_same([_digest(b) for b in restored], reference[cut:], where=f"epoch 1 resumed after {cut} batches")
        del restored


@pytest.mark.timeout(120)
def test_a_restored_loader_runs_beside_the_iterator_it_was_saved_from(shards, runs):
    """One dataset, one StatefulDataLoader: a state saved after the first batch is restored while the iterator it was
    saved from lives on, and the two are read in turn. Their workers share the board, the base seed (restored) and
    the pass count: each pass must read only its own workers' records (oracle: the uninterrupted DataLoader)."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    reference = [_digest(b) for b in runs("DataLoader", num_workers=2)]
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    loader = StatefulDataLoader(ds, batch_size=None, num_workers=2, prefetch_factor=1)
    first = iter(loader)
    assert _digest(next(first)) == reference[0]
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    restored = StatefulDataLoader(ds, batch_size=None, num_workers=2, prefetch_factor=1)
    restored.load_state_dict(state)
    second, got = iter(restored), {"first": [reference[0]], "restored": []}
    for _ in range(len(reference)):  # in turn, one batch each
        for name, iterator in (("restored", second), ("first", first)):
            batch = next(iterator, None)
            if batch is not None:
                got[name].append(_digest(batch))
    assert_same(got["restored"], reference[1:], where="restored, read in turn with the iterator it was saved from")
    assert_same(got["first"], reference, where="the iterator the state was saved from")
