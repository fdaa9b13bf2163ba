"""make_dataset as a torch IterableDataset: DataLoader with workers, StatefulDataLoader resume, killed workers,
loud failures, PackedBatch.to / pin_memory."""
from __future__ import annotations

import json
import os
import re
import pickle
import signal
import traceback
from pathlib import Path

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

import loaders
from loaders import make_dataset, make_loader
from tests.conftest import tiny_clip
from tests.resume_helper import assert_same
from tests.corrupt_cases import write_tar

FPS = 10
SAMPLE_RATE = 16000
OPTIONS = dict(budgets=(20, 32000, 16), window_seconds=0.5, buffer_size=4, frame_size=(24, 32), max_items=8,
               max_words=16)


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict:
    """4 shards of 2–3 clips (0.7–1.3 s at 10 fps, AAC 16 kHz) with a WhisperX-style transcript; one corrupt mp4.
    Returns the paths and the expected windows (0.5 s) per key."""
    d = tmp_path_factory.mktemp("dataset_shards")
    media = {}
    for seconds in (0.7, 1.0, 1.3):
        out = d / f"clip{seconds}.mp4"
        media[seconds] = tiny_clip(out, seconds, fps=FPS, sample_rate=SAMPLE_RATE)
    words = [("one", 0.1, 0.3), ("two", 0.4, 0.65)]
    transcript = json.dumps({"segments": [{"start": 0.1, "end": 0.65, "text": "one two",
                                           "words": [{"word": w, "start": s, "end": e} for w, s, e in words]}]}).encode()
    layout = [[1.0, 1.3, None], [0.7, 1.0], [1.3, 0.7, 1.0], [1.0, 1.3]]
    paths, expected = [], {}
    for index, clips in enumerate(layout):
        members = []
        for j, seconds in enumerate(clips):
            key = f"s{index}c{j}"
            if seconds is None:
                members.append((f"{key}.mp4", b"\x00\x00\x00\x18ftypmp42 not a video"))
            else:
                members.append((f"{key}.mp4", media[seconds]))
                expected[key] = int(np.ceil(seconds / 0.5 - 1e-9))
            members.append((f"{key}.json", transcript))
        path = d / f"shard-{index:06d}.tar"
        write_tar(path, members)
        paths.append(str(path))
    return {"paths": paths, "expected": expected}


def _digest(batch) -> tuple:
    return (batch.sample_keys, batch.frames.numpy().tobytes(), batch.audio.numpy().tobytes(),
            batch.word_spans.numpy().tobytes(), batch.token_spans.numpy().tobytes(), batch.word_texts)


def _windows(shards) -> list[str]:
    return sorted(f"{k}@{i}" for k, n in shards["expected"].items() for i in range(n))


class _Epochs:
    """DataLoader epochs of ``make_dataset(shards, seed=5, **OPTIONS)``, each (num_workers, epoch) run once per module
    and shared by the tests that inspect it (a 2-worker run forks two workers). Each run has its own fresh dataset,
    ``set_epoch(epoch)`` called on it when epoch > 0; returns that dataset and the batches."""

    def __init__(self, shards) -> None:
        self.shards, self.recorded = shards, {}

    def __call__(self, num_workers: int, epoch: int = 0) -> tuple:
        if (num_workers, epoch) not in self.recorded:
            ds = make_dataset(self.shards["paths"], seed=5, **OPTIONS)
            if epoch:
                ds.set_epoch(epoch)
            loader = DataLoader(ds, batch_size=None, num_workers=num_workers, pin_memory=torch.cuda.is_available())
            self.recorded[num_workers, epoch] = (ds, list(loader))
        return self.recorded[num_workers, epoch]

    def digests(self, num_workers: int, epoch: int = 0) -> list[tuple]:
        return [_digest(b) for b in self(num_workers, epoch)[1]]


@pytest.fixture(scope="module")
def epochs(shards) -> _Epochs:
    return _Epochs(shards)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_dataloader_delivers_every_window_once(shards, epochs, num_workers):
    ds = epochs(num_workers)[0]
    assert isinstance(ds, torch.utils.data.IterableDataset)
    first = epochs.digests(num_workers)
    keys = [k for d in first for k in d[0]]
    assert sorted(keys) == _windows(shards)  # every window exactly once, the corrupt clip skipped
    again = [_digest(b) for b in DataLoader(ds, batch_size=None, num_workers=num_workers)]
    assert again == first  # same seed, same num_workers, same epoch: identical batches


def test_items_do_not_depend_on_num_workers(epochs):
    """Items (keys, frames, audio) are the same for 0 and 2 workers; only their grouping into batches differs."""
    def items(num_workers):
        out = {}
        for b in epochs(num_workers)[1]:
            cu_f, cu_s = b.cu_seqlens_frames.tolist(), b.cu_seqlens_samples.tolist()
            for i, key in enumerate(b.sample_keys):
                out[key] = (b.frames[cu_f[i]:cu_f[i + 1]].numpy().tobytes(), b.audio[cu_s[i]:cu_s[i + 1]].numpy().tobytes())
        return out

    assert items(0) == items(2)


def test_set_epoch_reshuffles(epochs):
    order0 = [k for b in epochs(2, 0)[1] for k in b.sample_keys]
    order1 = [k for b in epochs(2, 1)[1] for k in b.sample_keys]  # a dataset given set_epoch(1)
    assert sorted(order0) == sorted(order1) and order0 != order1


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stateful_dataloader_resumes_byte_identical(shards, epochs, num_workers):
    """States taken at five points of one StatefulDataLoader epoch (as a loop checkpointing several times does) each
    restore the rest of the epoch byte for byte as a plain DataLoader with as many workers delivers it."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build():
        return StatefulDataLoader(make_dataset(shards["paths"], seed=5, **OPTIONS), batch_size=None,
                                  num_workers=num_workers)

    reference = epochs.digests(num_workers)
    assert len(reference) >= 4
    loader = build()
    iterator, head, states = iter(loader), [], {}
    for cut in (0, 1, len(reference) // 2, len(reference) - 1, len(reference)):
        while len(head) < cut:
            head.append(_digest(next(iterator)))
        assert head == reference[:cut]
        states[cut] = pickle.loads(pickle.dumps(loader.state_dict()))
    del iterator
    for cut, state in states.items():
        restored = build()
        restored.load_state_dict(state)
        rest = [_digest(b) for b in restored]
        assert_same(rest, reference[cut:], where=f"resumed after {cut} batches")


def test_dataset_state_is_per_worker_and_checked(shards):
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    state = ds.state_dict()
    assert state["worker"] == [0, 1]
    state["worker"] = [1, 2]
    with pytest.raises(ValueError, match="worker"):
        make_dataset(shards["paths"], seed=5, **OPTIONS).load_state_dict(state)


def _free_dataloader_iterator(info: pytest.ExceptionInfo) -> None:
    """Drops the frames' locals of a caught exception and of its chain, so the DataLoader iterator they hold is freed
    now, by reference count, and torch shuts its workers down at once. A raised exception's traceback is a
    reference cycle: left to the cyclic garbage collector, the iterator's index queues are finalised (their
    feeder threads told to close) before its ``__del__`` queues the workers' shutdown message, so a live worker
    never gets it and torch waits 5 s (``MP_STATUS_CHECK_INTERVAL``) for it, in whatever later test the collector
    runs."""
    error = info.value
    while error is not None:
        traceback.clear_frames(error.__traceback__)
        error = error.__cause__ or error.__context__


class _KillsOneWorker:
    """A tokenizer (a callable: text → ids and character offsets, one per whitespace piece) that SIGKILLs the first
    worker process that calls it, as a crash in a tokenizer's native code would; the test's own process and the
    other workers tokenize normally. ``marker`` (a path) records that a worker was killed."""

    def __init__(self, marker: Path) -> None:
        self.marker, self.parent = str(marker), os.getpid()

    def __call__(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        if os.getpid() != self.parent:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))  # the first worker to get here
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        pieces = [m.span() for m in re.finditer(r"\S+", text)]
        return list(range(len(pieces))), pieces


def test_killed_dataloader_worker_is_named(shards, tmp_path):
    killer = _KillsOneWorker(tmp_path / "killed")  # fault injection: a worker dies
    loader = DataLoader(make_dataset(shards["paths"], seed=5, tokenizer=killer, **OPTIONS), batch_size=None,
                        num_workers=2)
    # PyTorch names the dead worker; when the worker dies while the main process is rebuilding a batch it had
    # sent (shared-memory file descriptors passed over a socket), the rebuild fails first with a connection
    # error from torch.multiprocessing: seen under load, 1 run in 3. Either way the epoch stops loudly.
    with pytest.raises((RuntimeError, ConnectionError, EOFError)) as info:
        list(loader)
    _free_dataloader_iterator(info)
    assert (tmp_path / "killed").exists()
    if isinstance(info.value, RuntimeError):
        assert re.search(r"DataLoader worker \(pid\(s\)? \d+\) exited unexpectedly|"
                         r"DataLoader worker \(pid \d+\) is killed by signal: Killed", str(info.value)), info.value


@pytest.mark.usefixtures("collector_on_test_objects")  # make_loader's pre-fork collection: this test's objects
def test_killed_loader_worker_is_named(shards, tmp_path):
    killer = _KillsOneWorker(tmp_path / "killed")  # fault injection: a worker dies
    with pytest.raises(RuntimeError, match=r"loader worker \d \(pid \d+\) was killed by signal 9 without finishing"):
        list(make_loader(shards["paths"], seed=5, num_workers=2, tokenizer=killer, **OPTIONS))
    assert (tmp_path / "killed").exists()


def test_no_shard_opens_names_the_urls(tmp_path):
    missing = [str(tmp_path / f"train-{i:06d}.tar") for i in range(3)]
    with pytest.raises(FileNotFoundError, match=r"no shard exists: .*train-000000\.tar.*train-000002\.tar"):
        make_dataset(str(tmp_path / "train-{000000..000002}.tar"), seed=0)
    with pytest.raises(FileNotFoundError, match=r"glob or a directory is not expanded"):
        make_loader(str(tmp_path / "*.tar"), seed=0)
    assert not any(os.path.exists(p) for p in missing)


# A reader stopped early must not leave "Exception ignored in: tar_members" (a pipe's exit status on close) behind.
@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_unreadable_remote_shards_raise_after_the_epoch(tmp_path):
    """URLs that are not plain paths are only tried when read: an epoch where none opens raises, naming them."""
    urls = [f"file://{tmp_path}/none-{i}.tar" for i in range(2)]
    with pytest.raises(FileNotFoundError, match=r"none of the shards could be opened: ") as info:
        list(make_loader(urls, seed=0))
    assert all(repr(url) in str(info.value) for url in urls)
    pipes = [f"pipe:cat {tmp_path}/none-{i}.tar 2>/dev/null || true" for i in range(2)]  # an empty stream: no sample
    with pytest.raises(RuntimeError, match=r"no sample could be read from the shards of epoch 0: .*none-0\.tar"):
        list(make_loader(pipes, seed=0))
    assert list(make_loader(pipes, seed=0, allow_empty_epoch=True)) == []


def test_over_budget_clips_are_windowed_by_default(shards):
    """With window_seconds left at 'auto', the 1.3 s clips (13 frames) are cut to fit a 10-frame budget."""
    options = dict(OPTIONS, window_seconds="auto", budgets=(10, 32000, 16))
    batches = list(make_loader(shards["paths"], seed=5, **options))
    frames: dict[str, int] = {}
    for b in batches:
        cu = b.cu_seqlens_frames.tolist()
        for i, key in enumerate(b.sample_keys):
            assert cu[i + 1] - cu[i] <= 10
            frames[key.split("@")[0]] = frames.get(key.split("@")[0], 0) + cu[i + 1] - cu[i]
    clip_frames = {k: round(10 * s) for k, s in [("s0c0", 1.0), ("s0c1", 1.3), ("s1c0", 0.7), ("s1c1", 1.0),
                                                  ("s2c0", 1.3), ("s2c1", 0.7), ("s2c2", 1.0), ("s3c0", 1.0),
                                                  ("s3c1", 1.3)]}
    assert frames == clip_frames  # every frame once; the windows tile each clip
    keys = [k for b in batches for k in b.sample_keys]
    assert "s0c1@0" in keys and "s0c1@1" in keys and "s0c0" in keys  # only the clips over budget are cut


@pytest.mark.usefixtures("collector_on_test_objects")  # make_loader's pre-fork collection: this test's objects
def test_sample_timeout_is_a_named_skip(shards, monkeypatch):
    """A sample stuck past sample_timeout_seconds is skipped as 'timeout'; the samples after it are delivered."""
    import time

    import aligner

    original = aligner.align

    def stuck(video, audio, transcript=None, **kwargs):
        if kwargs.get("key") == "s0c1":
            try:
                time.sleep(30)
            except Exception:  # noqa: BLE001 - as broad handlers in decoders do: the limit must get through
                pass
        return original(video, audio, transcript, **kwargs)

    monkeypatch.setattr(aligner, "align", stuck)
    loader = make_loader(shards["paths"][:2], seed=5, sample_timeout_seconds=2.0, num_workers=1, **OPTIONS)
    keys = {k.split("@")[0] for b in loader for k in b.sample_keys}
    assert keys == {"s0c0", "s1c0", "s1c1"}
    assert loader.stats.skipped == {"timeout": 1, "decode": 1}
    assert [s[1] for s in loader.stats.skipped_samples if s[2] == "timeout"] == ["s0c1"]


@pytest.mark.usefixtures("collector_on_test_objects")  # make_loader's pre-fork collection: this test's objects
def test_any_exception_in_a_sample_is_a_named_skip(shards, monkeypatch):
    """An unforeseen exception inside one sample's alignment skips that sample only (reason 'align')."""
    import aligner

    original = aligner.align

    def flaky(video, audio, transcript=None, **kwargs):
        if kwargs.get("key") == "s2c1":
            raise AttributeError("'NoneType' object has no attribute 'x'")
        return original(video, audio, transcript, **kwargs)

    monkeypatch.setattr(aligner, "align", flaky)
    loader = make_loader(shards["paths"], seed=5, num_workers=2, **OPTIONS)
    keys = {k.split("@")[0] for b in loader for k in b.sample_keys}
    assert keys == set(shards["expected"]) - {"s2c1"}
    assert loader.stats.skipped == {"decode": 1, "align": 1}
    assert [s[1:] for s in loader.stats.skipped_samples if s[2] == "align"] == [("s2c1", "align")]


def test_packed_batch_to_and_pin_memory(shards):
    batch = next(iter(make_loader(shards["paths"], seed=5, **OPTIONS)))
    moved = batch.to("cpu", non_blocking=True)
    assert_same(_digest(moved), _digest(batch))
    if torch.cuda.is_available():
        pinned = batch.pin_memory()
        assert pinned.frames.is_pinned() and pinned.token_spans.is_pinned()
        on_gpu = pinned.to("cuda", non_blocking=True)
        assert on_gpu.frames.device.type == "cuda" and torch.equal(on_gpu.frames.cpu(), batch.frames)


@pytest.mark.parametrize("error", [PermissionError(1, "Operation not permitted"), AttributeError("'NoneType' object"),
                                   ValueError("pts_seconds must be non-decreasing"), AssertionError("daemonic processes")])
def test_any_decoder_exception_is_a_decode_skip(shards, monkeypatch, error):
    """What #13 found escaping read_video (av.PermissionError from the decord fallback, AttributeError after a byte
    flip, ValueError from a zero stts delta, the daemonic-child assertion) is a 'decode' skip of that key only."""
    original = loaders.read_video

    def broken(media, **kwargs):
        if kwargs.get("name") == "s3c0.mp4":
            raise error
        return original(media, **kwargs)

    monkeypatch.setattr("loaders.pipeline._items.read_video", broken)  # fault injection
    loader = make_loader(shards["paths"], seed=5, **OPTIONS)
    keys = {k.split("@")[0] for b in loader for k in b.sample_keys}
    assert keys == set(shards["expected"]) - {"s3c0"}
    assert sorted(s[1:] for s in loader.stats.skipped_samples) == [("s0c2", "decode"), ("s3c0", "decode")]


def test_pin_memory_is_what_dataloader_calls(shards, monkeypatch):
    """DataLoader(pin_memory=True) pins a PackedBatch through its pin_memory(); make_loader(pin_memory=True) too.
    (Pinning itself needs CUDA: here Tensor.pin_memory is replaced by a marker copy.)"""
    from torch.utils.data._utils.pin_memory import pin_memory as dataloader_pin

    pinned = []

    def fake_pin(tensor, *args, **kwargs):
        pinned.append(tensor.shape)
        return tensor.clone()

    monkeypatch.setattr(torch.Tensor, "pin_memory", fake_pin)
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: True)  # else make_loader warns and does not pin
    loader = make_loader(shards["paths"], seed=5, pin_memory=True, **OPTIONS)
    batch = next(iter(loader))
    tensors = [f for f in ("frames", "audio", "token_spans", "cu_seqlens_frames") if getattr(batch, f) is not None]
    assert len(pinned) >= len(tensors) and batch.frames.shape in pinned
    pinned.clear()
    again = dataloader_pin(batch)
    assert type(again).__name__ == "PackedBatch" and batch.frames.shape in pinned
    assert_same(_digest(again), _digest(batch))


@pytest.mark.usefixtures("collector_on_test_objects")  # make_loader's pre-fork collection: this test's objects
def test_loader_failure_in_a_worker_names_it_and_chains_the_cause(shards, monkeypatch):
    """A failure of the loader itself in a worker (here: the shard loop breaks) ends the epoch with a RuntimeError
    naming the worker, chained to the original exception."""
    def broken(shard_position, url, options, plan, skip_log=None):
        raise KeyError("shard loop bug")
        yield  # a generator, as the real one

    monkeypatch.setattr("loaders.pipeline._loader.shard_steps", broken)  # fault injection
    with pytest.raises(RuntimeError, match=r"loader worker [01] failed: KeyError: 'shard loop bug'") as info:
        list(make_loader(shards["paths"], seed=5, num_workers=2, **OPTIONS))
    assert isinstance(info.value.__cause__, KeyError)


def test_ranks_and_workers_split_the_shards(shards):
    """Two ranks x two DataLoader workers: every window exactly once over the four (rank, worker) slots."""
    seen = []
    for rank in (0, 1):
        ds = make_dataset(shards["paths"], seed=5, rank=rank, world_size=2, **OPTIONS)
        keys = [k for b in DataLoader(ds, batch_size=None, num_workers=2) for k in b.sample_keys]
        assert keys
        seen.append(keys)
    assert not set(seen[0]) & set(seen[1])
    assert sorted(seen[0] + seen[1]) == _windows(shards)


def test_video_only_clip_with_silence_option(tmp_path):
    """missing_audio='silence': a video-only clip gets silence over its frames' duration (default: 0 samples)."""
    clip = tmp_path / "v.mp4"
    tiny_clip(clip, 1, fps=FPS, sample_rate=None)
    shard = tmp_path / "shard-000000.tar"
    write_tar(shard, [("v.mp4", clip.read_bytes())])
    for mode, num_samples in (("empty", 0), ("silence", SAMPLE_RATE)):
        batch = next(iter(make_loader(str(shard), seed=0, missing_audio=mode, frame_size=(24, 32),
                                      budgets=(20, 32000, 16))))
        assert batch.sample_keys == ("v",) and int(batch.cu_seqlens_frames[1]) == 10
        assert int(batch.cu_seqlens_samples[1]) == num_samples and float(batch.audio.abs().max()) == 0.0


def test_cuda_device_inside_workers_is_refused(shards):
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    ds.collator.device = torch.device("cuda")  # as make_dataset(device="cuda") would set it, without needing a GPU
    with pytest.raises(ValueError, match=r"cannot be used inside DataLoader workers; build batches on 'cpu'") as info:
        list(DataLoader(ds, batch_size=None, num_workers=1))
    _free_dataloader_iterator(info)


def test_hostile_transcript_is_skipped_fast_not_cut(tmp_path, monkeypatch):
    """A 5 000-cue SRT on a 1 s clip needs ~300 windows for its text: over_budget at once, not cut into
    windows (cutting costs windows x spans; the bound is loaders.pipeline._items._MAX_TEXT_WINDOWS_FACTOR)."""
    clip = tmp_path / "c.mp4"
    tiny_clip(clip, 1, fps=FPS, sample_rate=SAMPLE_RATE)
    srt = "".join(f"{i + 1}\n00:00:00,{i % 900:03d} --> 00:00:00,{i % 900 + 50:03d}\nw{i}\n\n" for i in range(5_000))
    shard = tmp_path / "shard-000000.tar"
    write_tar(shard, [("h.mp4", clip.read_bytes()), ("h.srt", srt.encode()), ("ok.mp4", clip.read_bytes())])
    from loaders.pipeline import split_windows as original

    cuts = []
    monkeypatch.setattr("loaders.pipeline._items.split_windows", lambda sample, **kw: cuts.append(sample.key) or original(sample, **kw))
    loader = make_loader(str(shard), seed=0, frame_size=(24, 32), budgets=(20, 32000, 64), max_segments=16)
    keys = [k for b in loader for k in b.sample_keys]
    assert cuts == []  # neither clip was cut: "ok" fits, "h" is refused before any cutting
    assert keys == ["ok"] and loader.stats.skipped == {"over_budget": 1}
    assert [s[1] for s in loader.stats.skipped_samples] == ["h"]


def test_batches_per_epoch_keeps_ranks_in_step_with_workers(shards):
    """Rank 0 holds more data than rank 1; with batches_per_epoch both yield exactly that many batches through a
    DataLoader with 2 workers: rank 1 pads with empty batches, rank 0 drops its tail."""
    counts, items = [], []
    for rank in (0, 1):
        ds = make_dataset(shards["paths"][:3], seed=5, rank=rank, world_size=2, batches_per_epoch=3, **OPTIONS)
        batches = list(DataLoader(ds, batch_size=None, num_workers=2))
        counts.append(len(batches))
        items.append([b.num_items for b in batches])
        free = make_dataset(shards["paths"][:3], seed=5, rank=rank, world_size=2, **OPTIONS)
        every = [k for b in free for k in b.sample_keys]  # the rank's every window (the same set for any workers)
        keys = [k for b in batches for k in b.sample_keys]
        assert len(keys) == len(set(keys)) and set(keys) <= set(every)  # a prefix of each worker's stream, no repeats
    assert counts == [3, 3]
    assert any(n == 0 for n in items[0] + items[1])  # someone padded
    with pytest.raises(ValueError, match="batches_per_epoch must be a positive int"):
        make_dataset(shards["paths"], seed=5, batches_per_epoch=0, **OPTIONS)


def test_max_duration_seconds_is_a_named_skip(shards):
    """The 1.3 s clips are over max_duration_seconds=1.2 and skipped as too_large; the others load."""
    loader = make_loader(shards["paths"], seed=5, max_duration_seconds=1.2, **OPTIONS)
    keys = {k.split("@")[0] for b in loader for k in b.sample_keys}
    long_clips = {"s0c1", "s2c0", "s3c1"}  # the 1.3 s clips of the fixture
    assert keys == set(shards["expected"]) - long_clips
    assert loader.stats.skipped == {"decode": 1, "too_large": 3}


def test_state_saved_after_the_epoch_restores_to_nothing_left(shards):
    """A state saved once the epoch is over resumes to an empty rest (not a replay); set_epoch starts the next."""
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    first = [_digest(b) for b in ds]
    state = pickle.loads(pickle.dumps(ds.state_dict()))
    assert state["completed"]
    restored = make_dataset(shards["paths"], seed=5, **OPTIONS)
    restored.load_state_dict(state)
    assert list(restored) == []
    restored.set_epoch(1)
    second = [_digest(b) for b in restored]
    assert sorted(k for d in second for k in d[0]) == sorted(k for d in first for k in d[0]) and second != first


def test_persistent_workers_follow_set_epoch(shards, epochs):
    """persistent_workers=True: set_epoch reaches the workers (their copy lives on), each epoch equals a fresh
    DataLoader's epoch byte for byte, and a pass without set_epoch repeats the epoch."""
    def fresh(epoch):
        return epochs.digests(2, epoch)

    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    passes = []
    for epoch in (0, 1, 2):
        ds.set_epoch(epoch)
        passes.append([_digest(b) for b in loader])
    repeat = [_digest(b) for b in loader]  # no set_epoch: epoch 2 again
    assert passes[0] == fresh(0) and passes[1] == fresh(1) and passes[2] == fresh(2)
    assert passes[0] != passes[1] != passes[2] and repeat == passes[2]
    assert all(sorted(k for d in e for k in d[0]) == _windows(shards) for e in passes)


def test_persistent_workers_resume_mid_epoch(shards, epochs):
    """StatefulDataLoader with persistent workers: a state saved in epoch 1 restores the rest of epoch 1 exactly."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    def build():
        ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
        return ds, StatefulDataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)

    ds, loader = build()
    [_digest(b) for b in loader]  # epoch 0
    ds.set_epoch(1)
    iterator = iter(loader)
    head = [_digest(next(iterator)) for _ in range(2)]
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    tail = [_digest(b) for b in iterator]
    del iterator, loader
    restored_ds, restored = build()
    restored_ds.set_epoch(1)  # what a training loop does before loading the checkpoint
    restored.load_state_dict(state)
    assert_same([_digest(b) for b in restored], tail, where="resumed in epoch 1 after 2 batches")
    restored_ds.set_epoch(2)  # and the persistent workers move on
    assert [_digest(b) for b in restored] == epochs.digests(2, 2)  # a fresh DataLoader's epoch 2
    assert head + tail != [] and len(tail) >= 1


def test_batches_held_in_the_main_process_are_never_overwritten(shards, epochs):
    """DataLoader workers reuse the shared memory of batches the main process dropped (loaders.pipeline._shared_slots):
    batches, views and numpy arrays still held keep the values they arrived with, and every batch equals the one
    iterating in the main process gives (1 worker: the same packing)."""
    from loaders.pipeline import SharedSlots

    reference = epochs.digests(0)
    assert len(reference) >= 5
    for holding in ("all", "some"):
        ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
        ds.collator.slots = SharedSlots(max_slots=2)  # few slots: reused (or exhausted) within the epoch
        loader = DataLoader(ds, batch_size=None, num_workers=1)
        kept, received = [], []
        for epoch in range(2):
            for i, batch in enumerate(loader):
                received.append(_digest(batch))
                if holding == "all" or i % 3 == 0:
                    kept.append((len(received) - 1, batch))
                elif i % 3 == 1:
                    kept.append((len(received) - 1, batch.frames[1:].numpy(), batch.audio[5:]))
        assert received == reference * 2
        for entry in kept:
            digest = received[entry[0]]
            if len(entry) == 2:
                assert _digest(entry[1]) == digest
            else:
                assert entry[1].tobytes() == digest[1][entry[1].itemsize * 3 * 24 * 32:]
                assert entry[2].numpy().tobytes() == digest[2][5 * 4:]


def _frames_and_audio(batch):
    return batch.frames, batch.audio


def test_tensors_a_collate_fn_takes_from_worker_batches_are_never_overwritten(shards, epochs):
    """A collate_fn in the worker that returns the batch's tensors (torch shares their memory itself): the worker
    never reuses that memory, so tensors held in the main process keep their values."""
    from loaders.pipeline import SharedSlots

    reference = epochs.digests(0)
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    ds.collator.slots = SharedSlots(max_slots=2)
    held = list(DataLoader(ds, batch_size=None, num_workers=1, collate_fn=_frames_and_audio))
    assert [(f.numpy().tobytes(), a.numpy().tobytes()) for f, a in held] == [d[1:3] for d in reference]


def _shared_memory_mappings() -> int:
    """torch's shared-memory segments mapped in this process (batches, slots). Python's multiprocessing semaphores
    (``/dev/shm/sem.*``) are not counted: a DataLoader's queues free theirs when their feeder threads end, which
    under load can be after the epoch's last batch (seen: 101, 101, 103)."""
    with open("/proc/self/maps") as maps:
        return sum(1 for line in maps if "/dev/shm/torch_" in line)


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
@pytest.mark.parametrize("persistent", [False, True])
def test_worker_batches_leave_no_shared_memory_behind_across_epochs(shards, persistent):
    """Batches dropped in the main process leave no mapping there, epoch after epoch (the workers' slots die with
    them, or stay bounded in persistent workers)."""
    import gc

    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    loader = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=persistent)
    counts = []
    for _ in range(3):
        assert sum(1 for _ in loader) > 0
        gc.collect()
        counts.append(_shared_memory_mappings())
    assert counts[0] == counts[1] == counts[2], counts
