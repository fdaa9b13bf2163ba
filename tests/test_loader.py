"""make_loader: determinism across worker counts, resume at start/middle/end, skipped samples. (Rank sync, two
ranks over these shards with a DDP step per batch: ``tests/test_torchrun.py``.)"""
from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from loaders.errors import SampleError
from loaders.pipeline import make_loader
from tests.conftest import collector_on_new_objects, cyclic_garbage
from tests.loader_shards import BUDGETS, WINDOW_SECONDS, write_loader_shards
from tests.resume_helper import assert_same, run_test_save_load_state


@pytest.fixture(scope="module", autouse=True)
def _collector_on_this_modules_objects():
    """Each make_loader epoch with workers collects cyclic garbage before forking (``heap_frozen_for_fork``): here
    over this module's own objects, not over the whole pytest worker's heap (``collector_on_new_objects``)."""
    with collector_on_new_objects():
        yield


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict:
    """3 shards: 7 good clips (1.0 / 1.3 / 0.7 s at 10 fps, AAC 16 kHz), one corrupt mp4, one bad transcript,
    one sample without video. Returns the shard paths and the expected windows per key."""
    return write_loader_shards(tmp_path_factory.mktemp("shards"))


def _loader(shards, **kwargs):
    options = dict(seed=3, budgets=BUDGETS, window_seconds=WINDOW_SECONDS, buffer_size=4, frame_size=(24, 32),
                   max_items=8, max_words=16)
    options.update(kwargs)
    return make_loader(shards["paths"], **options)


def _digest(batches) -> list:
    return [(b.sample_keys, b.frames.numpy().tobytes(), b.audio.numpy().tobytes(), b.word_spans.numpy().tobytes())
            for b in batches]


def test_every_window_once_and_skips_counted(shards):
    loader = _loader(shards)
    batches = list(loader)
    keys = [k for b in batches for k in b.sample_keys]
    expected = sorted(f"{k}@{i}" for k, n in shards["expected"].items() for i in range(n))
    assert sorted(keys) == expected and len(keys) == len(set(keys))
    for batch in batches:  # budgets hold: the windows of a clip are 5 frames / 8000 samples (the last shorter)
        assert int(batch.cu_seqlens_frames[-1]) <= BUDGETS[0] and int(batch.cu_seqlens_samples[-1]) <= BUDGETS[1]
        assert batch.frames.shape == (BUDGETS[0], 3, 24, 32)
    stats, all_batches = loader.stats, batches
    assert stats.skipped == {"decode": 1, "transcript": 1, "missing_video": 1}
    reasons = {key: (Path(shard).name, reason) for shard, key, reason in stats.skipped_samples}
    assert reasons == {"bad_mp4": ("shard-000000.tar", "decode"), "bad_txt": ("shard-000001.tar", "transcript"),
                       "no_video": ("shard-000002.tar", "missing_video")}
    assert stats.samples_read == 9 and stats.batches_yielded == len(batches) and stats.items_yielded == len(expected) == sum(b.num_items for b in all_batches)
    total_frames = sum(int(b.cu_seqlens_frames[-1]) for b in all_batches)
    assert stats.padding["frames"] == pytest.approx(1 - total_frames / (len(all_batches) * BUDGETS[0]))


def test_window_samples_match_clip_duration(shards):
    batch_items = {}
    for batch in _loader(shards):
        for i, key in enumerate(batch.sample_keys):
            batch_items[key] = int(batch.cu_seqlens_samples[i + 1] - batch.cu_seqlens_samples[i])
    # 1.3 s clip → windows of 0.5, 0.5, 0.3 s at 16 kHz (video timeline: 13 frames at 10 fps).
    assert [batch_items[f"k01@{i}"] for i in range(3)] == [8000, 8000, 4800]
    assert [batch_items[f"k10@{i}"] for i in range(2)] == [8000, 3200]


def test_workers_start_after_cyclic_garbage_is_freed_in_the_parent(shards, tmp_path):
    """A forked worker must never free an inherited decoder (it would wait on frame threads it does not have): the
    parent collects its cyclic garbage before starting the workers, so the first batch finds it freed, here."""
    log = tmp_path / "finalised.txt"
    with cyclic_garbage(log):
        next(iter(_loader(shards, num_workers=2)))
        assert log.read_text().split() == [str(os.getpid())]


def test_same_batches_for_0_and_2_workers(shards):
    reference = _digest(_loader(shards, num_workers=0))
    assert _digest(_loader(shards, num_workers=2)) == reference
    assert _digest(_loader(shards, num_workers=1)) == reference
    other_seed = _digest(_loader(shards, seed=4))
    assert sorted(k for b in other_seed for k in b[0]) == sorted(k for b in reference for k in b[0])


def test_epochs_differ_and_repeat(shards):
    loader = _loader(shards)
    first = _digest(loader)
    second = _digest(loader)  # epoch 1 (advanced automatically)
    loader.set_epoch(0)
    assert _digest(loader) == first
    assert [b[0] for b in second] != [b[0] for b in first]


# Small budgets and windows leave items buffered in the packer and packs ready at the save points, so the
# restore must decode buffered items again (checked below), not only skip ahead. (Frame budget 8, was 9: since round 10
# a clip's last window tokenizes its segment's text to the end, not only its words, and budget 9 left no such point.)
RESUME = dict(window_seconds=0.4, buffer_size=8, budgets=(8, 16000, 16))


@pytest.mark.parametrize("num_workers", [0, 2])
def test_resume_start_middle_end(shards, num_workers):
    loader = _loader(shards, **RESUME)
    batches, hard = [], None  # hard: the first save point with items buffered in the packer and packs ready
    for count, batch in enumerate(loader, start=1):  # (restore must decode again there)
        batches.append(batch)
        packer = loader.state_dict()["packer"]
        if hard is None and len(packer["buffer"]) > 0 and len(packer["ready"]) > 0:
            hard = count
    assert hard is not None
    positions = ("start", 1, hard, "middle", 5, "end") if num_workers == 0 else (hard, "middle")
    # The reference is this in-process epoch: with 2 workers the runs must also deliver exactly its batches.
    reference = run_test_save_load_state(
        lambda: _loader(shards, num_workers=num_workers, **RESUME), (), positions=positions,
        iterate=lambda stage, _: iter(stage), reference=batches,
    )
    assert len(reference) == 8


def test_restore_is_fast_and_small(shards, monkeypatch):
    """The state is metadata; restoring decodes nothing, and the restored pass decodes only what was not yet
    pulled plus the packer's buffered samples (at most buffer_size): the work is counted, not timed."""
    import loaders

    decoded, read_video = [], loaders.read_video
    monkeypatch.setattr("loaders.pipeline._items.read_video",  # counting, not fault injection
                        lambda media, **kw: decoded.append(kw["name"]) or read_video(media, **kw))
    num_full = len(_digest(_loader(shards))) and len(decoded)
    decoded.clear()
    loader = _loader(shards)
    it = iter(loader)
    head = [next(it) for _ in range(2)]
    num_head = len(decoded)
    state = pickle.loads(pickle.dumps(loader.state_dict()))
    assert len(pickle.dumps(state)) < 20_000  # metadata only: no tensors
    rest = list(it)
    restored = _loader(shards)
    decoded.clear()
    restored.load_state_dict(state)
    assert decoded == []  # restoring only stores the state
    assert_same(list(restored), rest, where="restored")
    assert 0 < num_head < num_full and num_full - num_head <= len(decoded) <= num_full - num_head + 4  # buffer_size=4
    assert head


@pytest.mark.parametrize("num_workers", [0, 2])
def test_raise_mode_names_shard_key_reason(shards, num_workers):
    with pytest.raises(SampleError, match=r"bad_mp4.*reason=decode") as info:  # shards one after the other: the first
        list(_loader(shards, on_error="raise", num_workers=num_workers, interleave_shards=1))  # bad sample is bad_mp4
    error = info.value
    assert (Path(error.shard).name, error.key, error.reason) == ("shard-000000.tar", "bad_mp4", "decode")
    assert str(error).count("reason=") == 1  # the worker's error is not wrapped twice


def test_errors_carry_reason_codes_through_pickle():
    """Reason codes survive the trip from a worker or watchdog process (pickle), and map to the vocabulary."""
    from loaders.errors import REASONS, DecodeError, DecodeTimeout, TranscriptError, reason_of

    missing = DecodeError("x.mp4 has no audio stream", reason="missing_audio")
    back = pickle.loads(pickle.dumps(missing))
    assert (type(back), back.reason, str(back)) == (DecodeError, "missing_audio", "x.mp4 has no audio stream")
    assert isinstance(missing, ValueError) and DecodeError("corrupt").reason == "decode"
    assert pickle.loads(pickle.dumps(DecodeTimeout("slow"))).reason == "timeout"
    sample = SampleError("boom", shard="s.tar", key="k", reason="too_large")
    back = pickle.loads(pickle.dumps(sample))
    assert (str(back), back.message, back.shard, back.key, back.reason) == (str(sample), "boom", "s.tar", "k", "too_large")
    assert [reason_of(e) for e in (missing, TranscriptError("t"), sample, OSError("io"), RuntimeError("bug"))] == [
        "missing_audio", "transcript", "too_large", "read", "error"]
    assert reason_of(UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), default="decode") == "decode"
    with pytest.raises(ValueError, match="reason must be one of"):
        DecodeError("x", reason="corrupt_media")
    assert {"decode", "missing_video", "missing_audio", "missing_media", "too_large", "transcript", "unsafe_name",
            "member_type", "duplicate_key", "truncated", "open", "align_json", "over_budget", "timeout"} <= set(REASONS)


def test_max_pixels_is_checked(shards):
    with pytest.raises(ValueError, match="max_pixels must be a positive int"):
        _loader(shards, max_pixels=0)


def test_over_budget_clip_without_windows_is_skipped(shards):
    loader = _loader(shards, window_seconds=None, budgets=(12, 32000, 16))
    keys = [key for batch in loader for key in batch.sample_keys]
    stats = loader.stats
    assert stats.skipped["over_budget"] == 2  # the two 1.3 s clips have 13 frames > 12
    assert sorted(keys) == ["k00", "k10", "k11", "k21"]


def test_sample_data_shards_every_frame_once():
    from tests.conftest import SAMPLE_DATA, sample_truth

    truth = sample_truth()
    paths = sorted(str(p) for p in (SAMPLE_DATA / "shards").glob("*.tar"))
    if not paths:
        pytest.skip("sample_data/shards missing: run `make sample-data`")
    loader = make_loader(paths, seed=0, window_seconds=5.0, budgets=(300, 160_000, 512), buffer_size=8,
                         frame_size=(16, 16))
    frames: dict[str, int] = {}
    for batch in loader:
        for i, key in enumerate(batch.sample_keys):
            clip = key.split("@")[0]
            frames[clip] = frames.get(clip, 0) + int(batch.cu_seqlens_frames[i + 1] - batch.cu_seqlens_frames[i])
    assert loader.stats.skipped == {}
    assert frames == {clip: record["num_frames"] for clip, record in truth.items()}  # generator's frame counts


def test_interleave_steps_and_order_key_agree():
    """The merge reads step e of every open shard of a group before step e + 1 of any; order_key sorts positions
    in that order (plain lists, no media)."""
    from loaders.pipeline import ResumePlan, interleave_steps, order_key, shard_groups

    lengths = {0: 3, 1: 1, 2: 2, 3: 0, 4: 2}  # steps per shard; shard 3 is empty
    jobs = [(p, f"s{p}") for p in lengths]
    assert shard_groups(jobs, 2) == [[(0, "s0"), (1, "s1")], [(2, "s2"), (3, "s3")], [(4, "s4")]]
    read = []
    for group in shard_groups(jobs, 2):
        streams = [iter([[(p, e, 0), (p, e, 1)] if e % 2 == 0 else [] for e in range(lengths[p])]) for p, _ in group]
        read.extend(interleave_steps(streams))
    assert read == [(0, 0, 0), (0, 0, 1), (1, 0, 0), (1, 0, 1), (0, 2, 0), (0, 2, 1), (2, 0, 0), (2, 0, 1),
                    (4, 0, 0), (4, 0, 1)]
    assert read == sorted(read, key=lambda position: order_key(position, 2))
    plan = ResumePlan(next_position=(1, 0, 1), interleave=2)
    assert plan.first_shard == 0 and not plan.wants(0, 0) and plan.wants(1, 0) and plan.wants(0, 1)
    assert ResumePlan(next_position=(3, 0, 0), interleave=2).first_shard == 2


@pytest.mark.parametrize("interleave_shards", [1, 2])
def test_interleaved_order_is_the_same_for_0_and_2_workers_and_resumes(shards, interleave_shards):
    """Any interleave_shards: the same batches for 0 and 2 workers; saved mid-epoch (a group boundary falls
    inside the 3 shards for 2), the restored loader yields the rest exactly."""
    reference = _digest(_loader(shards, num_workers=0, interleave_shards=interleave_shards, **RESUME))
    two_workers = list(_loader(shards, num_workers=2, interleave_shards=interleave_shards, **RESUME))
    assert _digest(two_workers) == reference
    keys = [k.split("@")[0] for d in reference for k in d[0]]
    assert sorted(set(keys)) == sorted(shards["expected"])
    run_test_save_load_state(lambda: _loader(shards, num_workers=2, interleave_shards=interleave_shards, **RESUME), (),
                             positions=(2, 4), iterate=lambda stage, _: iter(stage), reference=two_workers)


def test_interleave_shards_is_checked(shards):
    with pytest.raises(ValueError, match="interleave_shards must be a positive int"):
        _loader(shards, interleave_shards=0)


def test_state_of_another_interleave_is_refused(shards):
    """Positions in a state refer to one read order: a loader with another interleave_shards refuses it (and a
    state saved before interleaving, which has no such entry, counts as interleave 1)."""
    loader = _loader(shards, interleave_shards=2)
    next(iter(loader))
    state = loader.state_dict()
    assert state["interleave"] == 2
    with pytest.raises(ValueError, match="the loader state has interleave_shards = 2 but this dataset has 8"):
        _loader(shards).load_state_dict(state)
    del state["interleave"]
    with pytest.raises(ValueError, match="the loader state has interleave_shards = 1 but this dataset has 2"):
        _loader(shards, interleave_shards=2).load_state_dict(state)


def test_worker_decoder_threads_share_the_cores(monkeypatch):
    """Each loader worker gives FFmpeg its share of the cores (at least one thread), not FFmpeg's default of one
    thread per core in every worker; 0 workers means the main process decodes alone."""
    import os

    from loaders.pipeline import worker_decoder_threads

    for cores, workers, want in ((2, 2, 1), (2, 1, 2), (16, 4, 4), (8, 3, 2), (2, 3, 1), (1, 0, 1)):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, n=cores: set(range(n)))
        assert worker_decoder_threads(workers) == want, (cores, workers)
