"""Resume at an epoch's end and on a changed shard list (adversarial round 43, F3 F4 F6): oracles are the keys the
uninterrupted run delivers and the shard names written here."""
from __future__ import annotations

import os
import pickle
import re

import pytest
from torchdata.stateful_dataloader import StatefulDataLoader

import loaders
from tests import hostile_inputs as hostile

OPTIONS = dict(frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None, max_items=2, buffer_size=4)
NUM_SHARDS, PER_SHARD = 5, 3


@pytest.fixture(scope="module")
def shard_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume_shard_list")
    media = hostile.clip(d / "clip.mp4", seconds=0.5)
    for i in range(NUM_SHARDS + 1):  # the last one is the "added" shard of the tests below
        members = []
        for j in range(PER_SHARD):
            members += [(f"s{i}k{j}.mp4", media), (f"s{i}k{j}.txt", f"caption {i} {j}".encode())]
        (d / f"shard-{i:06d}.tar").write_bytes(hostile.tar_bytes(members))
    return d


def _urls(d, indices=range(NUM_SHARDS)) -> list[str]:
    return [str(d / f"shard-{i:06d}.tar") for i in indices]


def _keys(batches) -> list[list[str]]:
    return [list(b.sample_keys) for b in batches]


# ------------------------------------------------------------------------- F3: checkpoint at the end of an epoch


@pytest.mark.parametrize("order", ["load_then_set", "set_then_load"])
@pytest.mark.parametrize("num_workers, persistent", [(0, False), (2, True)])
def test_a_checkpoint_taken_after_an_epoch_resumes_into_the_next_epoch_set(shard_dir, num_workers, persistent, order):
    # Before: with num_workers=0 the resumed epoch 1 had 0 batches (the state's completed epoch 0 won over
    # set_epoch(1)); with persistent workers it replayed epoch 0's order.
    def build():
        ds = loaders.make_dataset(_urls(shard_dir), seed=0, **OPTIONS)
        extra = {"persistent_workers": True} if persistent else {}
        return ds, StatefulDataLoader(ds, batch_size=None, num_workers=num_workers, **extra)

    ds, loader = build()
    ds.set_epoch(0)
    epoch0 = _keys(loader)
    state = pickle.loads(pickle.dumps(loader.state_dict()))  # the "save after each epoch" checkpoint
    ds.set_epoch(1)
    epoch1 = _keys(loader)  # the uninterrupted run's next epoch: the oracle
    assert epoch1 != epoch0 and sorted(sum(epoch1, [])) == sorted(sum(epoch0, []))
    del loader

    ds, loader = build()
    if order == "load_then_set":
        loader.load_state_dict(state)
        ds.set_epoch(1)
    else:
        ds.set_epoch(1)
        loader.load_state_dict(state)
    assert _keys(loader) == epoch1
    ds.set_epoch(2)
    assert sorted(sum(_keys(loader), [])) == sorted(sum(epoch0, []))


# ------------------------------------------------------------------------- F4: the same shards in another order


def _cut(loader, count: int) -> tuple[list[list[str]], dict]:
    iterator = iter(loader)
    head = [list(next(iterator).sample_keys) for _ in range(count)]
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    del iterator
    return head, state


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_with_the_shards_listed_in_another_order_continues_exactly(shard_dir, num_workers):
    # Before: positions indexed the shuffled list as passed, so a reordered list (an unsorted glob) read 3 samples
    # twice and 3 never, silently.
    def loader(urls):
        return StatefulDataLoader(loaders.make_dataset(urls, seed=0, **OPTIONS), batch_size=None,
                                  num_workers=num_workers)

    urls = _urls(shard_dir)
    full = _keys(loader(urls))
    head, state = _cut(loader(urls), 3)
    assert head == full[:3]
    resumed = loader(list(reversed(urls)))
    resumed.load_state_dict(state)
    assert _keys(resumed) == full[3:]


def test_make_loader_resumes_on_a_reordered_list_exactly(shard_dir):
    # Before: make_loader raised, blaming an unchanged shard ("shard-000002.tar changed since the state was saved").
    urls = _urls(shard_dir)
    full = _keys(loaders.make_loader(urls, seed=0, **OPTIONS))
    head, state = _cut(loaders.make_loader(urls, seed=0, **OPTIONS), 3)
    resumed = loaders.make_loader([urls[i] for i in (3, 0, 4, 2, 1)], seed=0, **OPTIONS)
    resumed.load_state_dict(state)
    assert head + _keys(resumed) == full


# ------------------------------------------------------------------------- F6: errors that say what changed


def test_resume_with_a_shard_added_names_it(shard_dir):
    # Before: "state num_shards = 5 but this dataset has 6; build it with the same settings (and the same
    # num_workers, interleave_shards)".
    ds = loaders.make_dataset(_urls(shard_dir), seed=0, **OPTIONS)
    next(iter(ds))
    state = ds.state_dict()
    with pytest.raises(ValueError, match=r"the shard list differs from the one the loader state was saved with "
                                         r"\(5 shards, now 6\): 1 shard\(s\) not in the saved list: "
                                         r"'shard-000005\.tar'\. .*resume with the same shards \(in any order\), or "
                                         r"start epoch 0 afresh without loading the state"):
        loaders.make_dataset(_urls(shard_dir, range(NUM_SHARDS + 1)), seed=0, **OPTIONS).load_state_dict(state)
    with pytest.raises(ValueError, match=r"\(5 shards, now 4\): 1 shard\(s\) of the saved list missing: "
                                         r"'shard-000001\.tar'"):
        loaders.make_dataset(_urls(shard_dir, (0, 2, 3, 4)), seed=0, **OPTIONS).load_state_dict(state)


def test_resume_after_a_buffered_shard_was_deleted_names_the_shard_and_its_keys(shard_dir, tmp_path):
    # Before: "could not re-read 2 buffered item(s) [(1, 0, 0), (1, 1, 0)] ... the shards changed since the state was
    # saved?" (internal positions; no shard, no key).
    work = tmp_path / "work"
    work.mkdir()
    for i in range(NUM_SHARDS):
        os.link(shard_dir / f"shard-{i:06d}.tar", work / f"shard-{i:06d}.tar")
    urls = _urls(work)
    ds = loaders.make_dataset(urls, seed=0, **OPTIONS)
    batches = iter(ds)
    delivered = [k for _ in range(3) for k in next(batches).sample_keys]
    state = ds.state_dict()
    packer = state["packer"]
    buffered = sorted(item["key"] for item in packer["buffer"] + [i for pack in packer["ready"] for i in pack])
    assert buffered and not set(buffered) & set(delivered)
    shard = buffered[0].split("k")[0][1:]
    mine = [k for k in buffered if k.startswith(f"s{shard}k")]
    path = work / f"shard-{int(shard):06d}.tar"
    path.unlink()
    restored = loaders.make_dataset(urls, seed=0, **OPTIONS)
    restored.load_state_dict(state)
    keys = re.escape(", ".join(repr(k) for k in mine))
    with pytest.raises(RuntimeError, match=(
            rf"could not re-read \d+ item\(s\) buffered when the loader state was saved \(epoch 0\): .*shard "
            rf"{re.escape(repr(str(path)))}: {keys}: it could not be opened \(removed\?")):
        list(restored)
