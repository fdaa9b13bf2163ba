"""Packed collate and windowing, checked against closed-form positions of synthetic inputs (no decoding)."""
from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
import torch

from aligner import align
from avcore import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word
from loaders.pipeline import IMAGENET_MEAN, IMAGENET_STD, Collator, PackedBatch
from loaders.pipeline import split_windows, windows

SAMPLE_RATE = 16000
FPS = 10


def make_sample(key: str, *, seconds: float, words: list[tuple[str, float, float]], seed: int, height: int = 8,
                width: int = 10, audio=None):
    """An aligned sample with frames at k / FPS, audio at 16 kHz from 0 and the given words (no estimation)."""
    rng = np.random.default_rng(seed)
    num_frames = int(round(seconds * FPS))
    frames = torch.from_numpy(rng.integers(0, 256, size=(num_frames, height, width, 3), dtype=np.uint8))
    pts = torch.arange(num_frames, dtype=torch.float64) / FPS
    metadata = VideoMetadata("h264", width, height, float(FPS), num_frames, 0.0, seconds, fps_from_content=float(FPS))
    video = VideoClip(frames, pts, metadata)
    if audio is None:
        audio = rng.uniform(-1, 1, size=(1, int(round(seconds * SAMPLE_RATE)))).astype(np.float32)
    clip = AudioClip(torch.from_numpy(audio), SAMPLE_RATE, 0.0)
    spans = tuple(Span(text, s, e, words=(Word(text, s, e),)) for text, s, e in words)
    return align(video, clip, Transcript(spans), sample_rate=SAMPLE_RATE, estimate=False, key=key)


@pytest.fixture(scope="module")
def samples():
    return [
        make_sample("a", seconds=1.0, words=[("hi", 0.25, 0.55), ("there", 0.6, 0.9)], seed=1),
        make_sample("b", seconds=0.5, words=[], seed=2),
        make_sample("c", seconds=0.8, words=[("yes", 0.1, 0.45)], seed=3),
    ]


def test_values_in_packed_coordinates(samples):
    collate = Collator((32, 48000, 8), frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)
    batch = collate(samples)
    assert isinstance(batch, PackedBatch)
    # Closed form: 10, 5, 8 frames; 16000, 8000, 12800 samples; 2, 0, 1 tokens.
    assert batch.cu_seqlens_frames.tolist() == [0, 10, 15, 23, 23]
    assert batch.cu_seqlens_samples.tolist() == [0, 16000, 24000, 36800, 36800]
    assert batch.cu_seqlens_tokens.tolist() == [0, 2, 2, 3, 3]
    assert batch.cu_seqlens_frames.dtype == torch.int32
    assert batch.frames.shape == (32, 3, 8, 10) and batch.audio.shape == (48000,)
    assert batch.segment_ids_frames.tolist() == [0] * 10 + [1] * 5 + [2] * 8 + [-1] * 9
    assert batch.position_ids_frames.tolist() == list(range(10)) + list(range(5)) + list(range(8)) + [0] * 9
    assert batch.segment_ids_tokens.tolist() == [0, 0, 2, -1, -1, -1, -1, -1]
    assert batch.position_ids_tokens.tolist() == [0, 1, 0, 0, 0, 0, 0, 0]
    assert (batch.segment_ids_samples[36800:] == -1).all() and int(batch.segment_ids_samples[24000]) == 2
    assert int(batch.position_ids_samples[24000 + 17]) == 17
    # Pixels: (x / 255 - mean) / std, no resize at the native size.
    mean, std = np.array(IMAGENET_MEAN).reshape(1, 3, 1, 1), np.array(IMAGENET_STD).reshape(1, 3, 1, 1)
    for i, sample in enumerate(samples):
        f0, f1 = int(batch.cu_seqlens_frames[i]), int(batch.cu_seqlens_frames[i + 1])
        expected = (sample.video.frames.numpy().transpose(0, 3, 1, 2) / 255.0 - mean) / std
        np.testing.assert_allclose(batch.frames[f0:f1].numpy(), expected, rtol=0, atol=1e-5)
        a0, a1 = int(batch.cu_seqlens_samples[i]), int(batch.cu_seqlens_samples[i + 1])
        assert torch.equal(batch.audio[a0:a1], sample.audio.samples[0])
    assert not batch.frames[23:].any() and not batch.audio[36800:].any()
    # Words: "hi" [0.25, 0.55) → frames [3, 6), samples [4000, 8800); "yes" of item 2 [0.1, 0.45) → frames [1, 5),
    # samples [1600, 7200), shifted by item 2's offsets (15 frames, 24000 samples, 2 tokens).
    assert batch.num_words == 3 and batch.word_texts == ("hi", "there", "yes")
    assert batch.word_spans.dtype == torch.int64
    assert batch.word_spans[:3].tolist() == [
        [0, 3, 6, 4000, 8800, 0, 1],
        [0, 6, 9, 9600, 14400, 1, 2],
        [2, 15 + 1, 15 + 5, 24000 + 1600, 24000 + 7200, 2, 3],
    ]
    assert (batch.word_spans[3:] == -1).all()
    assert batch.segment_spans[2].tolist() == [2, 16, 20, 25600, 31200, -1, -1] and batch.num_segments == 3
    assert batch.sample_keys == ("a", "b", "c") and batch.num_items == 3
    assert batch.padding == pytest.approx({"frames": 9 / 32, "samples": 1 - 36800 / 48000, "tokens": 5 / 8})


def test_resize_keeps_uniform_frames_and_shapes():
    sample = make_sample("u", seconds=0.3, words=[], seed=0, height=16, width=20)
    flat = torch.full_like(sample.video.frames, 200)
    sample = type(sample)(**{**sample.__dict__, "video": VideoClip(flat, sample.video.pts_seconds, sample.video.metadata)})
    batch = Collator((4, 8000, 2), frame_size=(6, 7), max_items=2, max_words=1, max_segments=1)([sample])
    assert batch.frames.shape == (4, 3, 6, 7)
    expected = (200 / 255 - np.array(IMAGENET_MEAN)) / np.array(IMAGENET_STD)  # a flat image stays flat
    np.testing.assert_allclose(batch.frames[:3].mean(dim=(2, 3)).numpy(), np.tile(expected, (3, 1)), atol=1e-5)


def test_empty_batch_is_all_padding():
    batch = Collator((4, 100, 2), frame_size=(2, 2), max_items=3, max_words=2, max_segments=2).empty()
    assert batch.num_items == 0 and batch.cu_seqlens_samples.tolist() == [0, 0, 0, 0]
    assert (batch.segment_ids_frames == -1).all() and (batch.word_spans == -1).all()
    assert batch.padding == {"frames": 1.0, "samples": 1.0, "tokens": 1.0}


def test_over_budget_and_too_many_items_raise(samples):
    with pytest.raises(ValueError, match="frames: 23 over the budget 20"):
        Collator((20, 48000, 8), frame_size=(8, 10), max_items=4)(samples)
    with pytest.raises(ValueError, match="exceed max_items=2"):
        Collator((32, 48000, 8), frame_size=(8, 10), max_items=2)(samples)


def test_repr_shows_shapes_not_values(samples):
    text = repr(Collator((32, 48000, 8), frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)(samples))
    assert text.startswith("PackedBatch(frames=(32, 3, 8, 10), audio=(48000,)") and "tensor(" not in text


def test_log_mel_peak_at_tone_frequency():
    import torchaudio

    t = np.arange(SAMPLE_RATE) / SAMPLE_RATE
    tone = (0.5 * np.sin(2 * math.pi * 1000 * t)).astype(np.float32)[None]
    sample = make_sample("tone", seconds=1.0, words=[], seed=0, audio=tone)
    collate = Collator((16, 24000, 2), frame_size=(8, 10), log_mel=True, max_items=2, max_words=1, max_segments=1)
    batch = collate([sample])
    assert batch.log_mel.shape == (150, 80) and batch.cu_seqlens_hops.tolist() == [0, 100, 100]
    assert (batch.segment_ids_hops[100:] == -1).all() and not batch.log_mel[100:].any()
    fbanks = torchaudio.functional.melscale_fbanks(201, 0.0, 8000.0, 80, SAMPLE_RATE)  # [freqs, mels]
    centres = torch.linspace(0, 8000, 201)[fbanks.argmax(dim=0)]
    peak = batch.log_mel[10:90].mean(dim=0).argmax()
    assert abs(float(centres[peak]) - 1000.0) < 60.0


def test_windows_tile_the_clip():
    sample = make_sample("w", seconds=2.5, words=[("long", 0.9, 1.2), ("end", 2.2, 2.4)], seed=4)
    parts = list(windows([sample], window_seconds=1.0))
    assert [p.key for p in parts] == ["w@0", "w@1", "w@2"]
    assert [p.video.num_frames for p in parts] == [10, 10, 5]
    assert [p.audio.num_samples for p in parts] == [16000, 16000, 8000]
    assert torch.equal(torch.cat([p.audio.samples for p in parts], dim=1), sample.audio.samples)
    assert torch.equal(parts[1].video.pts_seconds, torch.arange(10, 20, dtype=torch.float64) / FPS)
    assert [(p.start_seconds, p.stop_seconds) for p in parts] == [(0.0, 1.0), (1.0, 2.0), (2.0, 2.5)]
    first, second = parts[0].words[0], parts[1].words[0]
    assert (first.start_seconds, first.stop_seconds, first.frame_start, first.frame_stop) == (0.9, 1.0, 9, 10)
    assert (first.sample_start, first.sample_stop) == (14400, 16000)
    assert (second.start_seconds, second.stop_seconds, second.frame_start, second.frame_stop) == (1.0, 1.2, 0, 2)
    assert (second.sample_start, second.sample_stop) == (0, 3200)
    last = parts[2].words[0]
    assert (last.text, last.frame_start, last.frame_stop, last.sample_start, last.sample_stop) == ("end", 2, 4, 3200, 6400)
    assert (last.token_start, last.token_stop) == (0, 1)
    assert split_windows(sample, window_seconds=5.0) == [sample]
    with pytest.raises(ValueError, match="window_seconds must be a positive"):
        split_windows(sample, window_seconds=0.0)


def test_pixels_across_cache_blocks(monkeypatch):
    """Items longer than the CPU conversion block (forced to 3 frames here) are normalised in every block: values
    equal (x / 255 - mean) / std for every frame, padding stays zero."""
    monkeypatch.setattr("loaders.pipeline._collate._CACHE_BLOCK_BYTES", 3 * 3 * 8 * 10 * 4)
    items = [make_sample("a", seconds=1.0, words=[], seed=4), make_sample("b", seconds=0.7, words=[], seed=5)]
    batch = Collator((20, 32000, 8), frame_size=(8, 10), max_items=4)(items)
    mean, std = np.array(IMAGENET_MEAN).reshape(1, 3, 1, 1), np.array(IMAGENET_STD).reshape(1, 3, 1, 1)
    expected = np.concatenate([(s.video.frames.numpy().transpose(0, 3, 1, 2) / 255.0 - mean) / std for s in items])
    np.testing.assert_allclose(batch.frames[:17].numpy(), expected, rtol=0, atol=1e-5)
    assert not batch.frames[17:].any()


def test_batches_held_are_never_overwritten_and_dropped_ones_are_reused(samples):
    """The collator reuses the frame/audio buffers of batches nobody holds (no fresh pages per batch), and never
    those of a batch, a tensor, a view or a numpy array still held."""
    collate = Collator((32, 48000, 8), frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)
    first = collate(samples[:2])
    kept = (first.frames.clone(), first.audio.clone())
    second = collate(samples[2:])  # `first` is held: new buffers
    assert first.frames.data_ptr() != second.frames.data_ptr()
    assert torch.equal(first.frames, kept[0]) and torch.equal(first.audio, kept[1])
    view, array = first.frames[3:9], first.audio.numpy()
    pointer = first.frames.data_ptr()
    del first
    third = collate(samples[2:])  # only a view and a numpy array of `first` are left: still not reused
    assert third.frames.data_ptr() != pointer and third.audio.numpy().ctypes.data != array.ctypes.data
    assert torch.equal(view, kept[0][3:9]) and np.array_equal(array, kept[1].numpy())
    del view, array, second
    reused = collate(samples[:2])  # nothing holds `first`'s buffers any more
    assert reused.frames.data_ptr() == pointer
    assert torch.equal(reused.frames, kept[0]) and torch.equal(reused.audio, kept[1])  # rewritten in full
    del reused, third
    again = collate(samples[2:])  # a reused buffer that held 15 frames of other items now holds item c's 8
    fresh = Collator((32, 48000, 8), frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)(samples[2:])
    assert again.frames.data_ptr() == pointer
    assert torch.equal(again.frames, fresh.frames) and torch.equal(again.audio, fresh.audio)


def test_recycled_buffers_respect_every_kind_of_holder():
    """A buffer is handed out again only when nothing holds it: not while a view, a numpy array, a DLPack capsule
    or an array imported from it lives, nor once it was moved to shared memory."""
    from torch.utils.dlpack import to_dlpack

    from loaders.pipeline import RecycledBuffers

    pool = RecycledBuffers(per_shape=1)

    def pointer_after(make_holder) -> tuple[bool, int]:
        tensor = pool.empty((4, 5), torch.float32)
        pointer = tensor.data_ptr()
        holder = make_holder(tensor)
        del tensor
        reused = pool.empty((4, 5), torch.float32).data_ptr() == pointer
        del holder
        return reused, pointer

    for make_holder in (lambda t: t[1:3], lambda t: t.numpy(), lambda t: to_dlpack(t), lambda t: np.from_dlpack(t)):
        reused, pointer = pointer_after(make_holder)
        assert not reused
        assert pool.empty((4, 5), torch.float32).data_ptr() == pointer  # once the holder is gone: reused
    shared = pool.empty((4, 5), torch.float32)
    shared.share_memory_()
    pointer = shared.data_ptr()
    del shared
    fresh = pool.empty((4, 5), torch.float32)
    assert fresh.data_ptr() != pointer and not fresh.is_shared()
    fresh_pointer = fresh.data_ptr()
    del fresh
    assert pool.empty((4, 5), torch.float32).data_ptr() == fresh_pointer  # the shared one left the pool


def test_window_spans_keep_their_samples_at_a_sub_sample_cut():
    """Issue #15's case: a cut at a = 1 s + 0.4 sample, a word at s = 2 s + 0.6 sample (16 kHz). The window's audio
    starts at the parent's sample round(a·sr) = 16000; the word starts at the parent's sample 32001, so in the window
    it is sample 16001 (not round((s - a)·sr) = 16000). The window [a, 2a) ends at 2 s + 0.8 sample, its audio at the
    parent's sample 32001 (excluded): the word's part in it holds no sample. A word at 1.5 s + 0.6 sample (parent
    sample 24001) is window sample 8001 and holds the parent's sample 24001."""
    tick = 1 / SAMPLE_RATE
    a, s, mid = 1.0 + 0.4 * tick, 2.0 + 0.6 * tick, 1.5 + 0.6 * tick
    sample = make_sample("x", seconds=2.5, words=[("m", mid, 1.7), ("w", s, 2.2)], seed=5)
    assert [w.sample_start for w in sample.words] == [24001, 32001]  # align: round(t·sr) from the audio's 0 s
    window = split_windows(sample, window_seconds=a)[1]
    assert window.audio.start_seconds == 16000 / SAMPLE_RATE and window.audio.num_samples == 32001 - 16000
    m, w = window.words
    assert (w.start_seconds, w.sample_start, w.sample_stop) == (s, 32001 - 16000, 32001 - 16000)
    assert (m.start_seconds, m.sample_start) == (mid, 24001 - 16000)
    assert torch.equal(window.audio.samples[:, m.sample_start], sample.audio.samples[:, 24001])


def _as_worker(monkeypatch):
    """Makes the collator believe it runs in a DataLoader worker (it then builds batches in shared slots)."""
    monkeypatch.setattr(torch.utils.data, "get_worker_info", lambda: object())


def _send(batch):
    """What a DataLoader worker's queue does to a batch (torch's ForkingPickler), and the main process's receipt: a
    mapping of its own (torch's cache of received storages emptied, as in another process), so that only the slot's
    header, not this process's reference counts, tells the sender the batch was dropped."""
    from multiprocessing.reduction import ForkingPickler

    from torch.multiprocessing.reductions import shared_cache

    data = ForkingPickler.dumps(batch)
    sender = dict(shared_cache)  # the two processes' caches of shared storages, kept apart
    shared_cache.clear()
    received = pickle.loads(data)
    shared_cache.clear()
    shared_cache.update(sender)
    return received


def _fields(batch) -> dict:
    out = {}
    for name, value in vars(batch).items():
        if name.startswith("_"):
            continue
        out[name] = value.clone() if isinstance(value, torch.Tensor) else value
    return out


def _assert_batch_equals(batch, fields: dict) -> None:
    for name, value in fields.items():
        got = getattr(batch, name)
        if isinstance(value, torch.Tensor):
            assert got.dtype == value.dtype and torch.equal(got, value), name
        else:
            assert got == value, name


def test_worker_slots_reused_only_after_the_receiver_drops_every_holder(samples, monkeypatch):
    """In a DataLoader worker, batches go to shared slots; a slot is written again only once the receiving side
    holds nothing made from the batch it carried (batch, tensor, view, numpy array, DLPack capsule), and never while
    the worker itself holds it; received batches equal the collator's output bit for bit."""
    from torch.utils.dlpack import to_dlpack

    kwargs = dict(frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)
    reference = Collator((32, 48000, 8), **kwargs)
    expected = {name: _fields(reference(part)) for name, part in (("ab", samples[:2]), ("c", samples[2:]))}
    _as_worker(monkeypatch)
    collate = Collator((32, 48000, 8), **kwargs)
    first = collate(samples[:2])  # sizes the slots: one-off shared memory, sent the usual way
    assert collate.slots.num_slots == 0 and first.frames.is_shared()
    _assert_batch_equals(_send(first), expected["ab"])
    del first

    def slot_of(batch):
        return batch.__dict__["_shared_slot"]

    built = collate(samples[2:])
    slot = slot_of(built)
    received = _send(built)
    _assert_batch_equals(received, expected["c"])
    del built
    holders = [lambda b: b, lambda b: b.frames[2:5], lambda b: b.audio.numpy(), lambda b: to_dlpack(b.word_spans),
               lambda b: b.token_spans]
    for make_holder in holders:
        kept = make_holder(received)
        del received
        other = collate(samples[:2])  # the slot's batch is still held by the receiver: another slot
        assert slot_of(other) is not slot
        _assert_batch_equals(other, expected["ab"])
        received = _send(other)
        del other, received
        del kept  # now nothing holds the first slot's batch: it is released and reused
        again = collate(samples[2:])
        assert slot_of(again) is slot
        _assert_batch_equals(again, expected["c"])
        received = _send(again)
        del again
    assert collate.slots.num_slots == 2
    worker_held = collate(samples[:2])  # the worker keeps this one (never sent): its slot is never reused
    del received
    later = [collate(samples[2:]) for _ in range(3)]
    assert all(slot_of(b) is not slot_of(worker_held) for b in later)
    _assert_batch_equals(worker_held, expected["ab"])


def test_worker_slot_sent_twice_is_reused_only_after_both_receipts_are_dropped(samples, monkeypatch):
    """Every send of a slot's batch counts: dropping one of two received copies does not free the slot."""
    kwargs = dict(frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)
    expected = _fields(Collator((32, 48000, 8), **kwargs)(samples[:2]))
    _as_worker(monkeypatch)
    collate = Collator((32, 48000, 8), **kwargs)
    collate(samples[2:])  # sizes the slots (one-off memory)
    batch = collate(samples[:2])
    slot = batch.__dict__["_shared_slot"]
    first, second = _send(batch), _send(batch)
    del batch, first
    other = collate(samples[2:])
    assert other.__dict__["_shared_slot"] is not slot
    _assert_batch_equals(second, expected)
    del other, second
    assert collate(samples[2:]).__dict__["_shared_slot"] is slot


def test_worker_slot_shared_by_torch_itself_is_never_reused(samples, monkeypatch):
    """A slot's tensor pickled the usual way (e.g. returned by a collate_fn) shares the segment with a receiver nobody
    counts: that slot is retired, and what the receiver holds keeps its values."""
    kwargs = dict(frame_size=(8, 10), max_items=4, max_words=5, max_segments=5)
    _as_worker(monkeypatch)
    collate = Collator((32, 48000, 8), **kwargs)
    collate(samples[2:])  # sizes the slots (one-off memory)
    batch = collate(samples[:2])
    slot = batch.__dict__["_shared_slot"]
    frames = _send(batch.frames)  # torch's own tensor pickling: the receiver maps the slot
    kept = frames.clone()
    del batch
    later = [collate(samples[2:]) for _ in range(2)]
    assert all(b.__dict__["_shared_slot"] is not slot for b in later)
    assert torch.equal(frames, kept)
    del frames, later
    assert collate(samples[2:]).__dict__["_shared_slot"] is not slot  # retired for good
