"""Fresh-eyes user round 10 (BENCHMARKS.md, "Fresh-eyes user round (branch user10)"): each test pins one defect
found by training from shards of every common layout, against an oracle computed independently (the
tokenizer called on the shard's own text, the shard's own words)."""
from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import pytest

from aligner import AlignedSpan
from loaders.pipeline import tokenize_item

tokenizers = pytest.importorskip("tokenizers")


@dataclasses.dataclass(frozen=True)
class _Sample:
    """What ``tokenize_item`` reads of an ``aligner.AlignedSample``."""

    video: Any
    audio: Any
    words: tuple
    segments: tuple
    start_seconds: float = 0.0
    stop_seconds: float = 3.0


def _span(text: str, level: str, frames: tuple[int, int], samples: tuple[int, int]) -> AlignedSpan:
    return AlignedSpan(text, level, frames[0] / 10, frames[1] / 10, frames[0], frames[1], samples[0], samples[1])


def _word_tokenizer(words: list[str]) -> Any:
    vocab = {"[UNK]": 0}
    for w in words:
        vocab.setdefault(w, len(vocab))
    tok = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    return tok


CAPTION = "Hello, World! It's jwplayer."


def test_caption_tokens_are_the_caption_text_not_the_forced_words():
    """An SRT/VTT/STM cue's words come from forced alignment: lowercased, punctuation stripped, a word missing
    from the aligner's dictionary ('jwplayer') left out. The ids must still be the tokenizer's ids of the cue
    (before: of "hello world it's", so [UNK] [UNK] [UNK] and no 'jwplayer', '.' or '!')."""
    tok = _word_tokenizer("Hello , World ! It ' s jwplayer .".split())
    segment = _span(CAPTION, "segment", (0, 30), (0, 48000))
    words = (_span("hello", "word", (2, 6), (3200, 9600)), _span("world", "word", (7, 11), (11200, 17600)),
             _span("it's", "word", (12, 15), (19200, 24000)))
    item = tokenize_item(_Sample(SimpleNamespace(num_frames=30), SimpleNamespace(num_samples=48000), words, (segment,)), tok)
    oracle = tok.encode(CAPTION)
    assert item.tokens.ids.tolist() == oracle.ids == list(range(1, 10))
    assert item.tokens.unit == "word"
    # each word keeps its text and times; its tokens are the ones inside its whitespace-separated piece of the cue
    assert [w.text for w in item.sample.words] == ["hello", "world", "it's"]
    assert [(w.token_start, w.token_stop) for w in item.sample.words] == [(0, 2), (2, 4), (4, 7)]
    assert [(w.frame_start, w.frame_stop) for w in item.sample.words] == [(2, 6), (7, 11), (12, 15)]
    frames = item.tokens.frame_ranges.tolist()
    assert frames[:7] == [[2, 6]] * 2 + [[7, 11]] * 2 + [[12, 15]] * 3
    assert frames[7:] == [[0, 30]] * 2  # 'jwplayer' and '.': no word, the cue's range
    assert item.tokens.sample_ranges.tolist()[7:] == [[0, 48000]] * 2


def test_a_window_that_cuts_a_caption_tokenizes_its_words_part_only():
    """Windows of a clip share a cut caption's words; they share its tokens the same way (a window holds the
    caption's text from its first to its last word in the window on the cut side), so cutting a clip into windows
    still fits the token budget. The clip's own edges are no cut: there the whole caption is kept."""
    tok = _word_tokenizer("Hello , World ! It ' s jwplayer .".split())
    segment = _span(CAPTION, "segment", (10, 20), (16000, 32000))  # the caption clipped to the window [1, 2) s
    words = (_span("world", "word", (10, 14), (16000, 22400)), _span("it's", "word", (15, 19), (24000, 30400)))
    window = _Sample(SimpleNamespace(num_frames=30), SimpleNamespace(num_samples=48000), words, (segment,), 1.0, 2.0)
    cases = {(True, True): "World! It's", (True, False): "World! It's jwplayer.", (False, True): "Hello, World! It's",
             (False, False): CAPTION}
    for cut_edges, text in cases.items():
        item = tokenize_item(window, tok, cut_edges=cut_edges)
        assert item.tokens.ids.tolist() == tok.encode(text).ids, cut_edges
        expected_ranges = [(0, 2), (2, 5)] if cut_edges[0] else [(2, 4), (4, 7)]
        assert [(w.token_start, w.token_stop) for w in item.sample.words] == expected_ranges, cut_edges


def test_words_not_in_the_segments_keep_the_joined_word_text():
    """Words that are not the segments' text (a transcript whose word list differs) are tokenized as before."""
    tok = _word_tokenizer(["alpha", "beta", "gamma"])
    segment = _span("gamma", "segment", (0, 10), (0, 16000))
    words = (_span("alpha", "word", (0, 4), (0, 6400)), _span("beta", "word", (5, 9), (8000, 14400)))
    item = tokenize_item(_Sample(SimpleNamespace(num_frames=10), SimpleNamespace(num_samples=16000), words, (segment,)), tok)
    assert item.tokens.ids.tolist() == tok.encode("alpha beta").ids == [1, 2]
    assert [w.text for w in item.sample.words] == ["alpha", "beta"]


def test_a_directory_of_shards_is_refused_when_the_dataset_is_built(tmp_path):
    """``make_dataset("shards/")`` with DataLoader workers used to give an epoch of 0 batches and two warnings
    (a directory exists, so the 'no shard exists' check passed; the workers only log it): now one clear error."""
    from loaders import make_dataset, make_loader

    (tmp_path / "train-000000.tar").write_bytes(b"")
    for urls in (str(tmp_path), str(tmp_path) + "/", [str(tmp_path), str(tmp_path / "sub")]):
        with pytest.raises(FileNotFoundError, match=r"no shard exists: .*a glob or a directory is not expanded"):
            make_dataset(urls, seed=0)
        with pytest.raises(FileNotFoundError, match=r"a glob or a directory is not expanded"):
            make_loader(urls, seed=0)
    make_dataset(str(tmp_path / "train-000000.tar"), seed=0)  # a file is accepted (read, and refused, per epoch)


def test_a_video2dataset_json_caption_survives_preprocess(tmp_path):
    """A video2dataset sample whose caption is only in ``KEY.json`` (no ``KEY.txt``): the loader reads it from the
    raw shard, and ``avalign preprocess`` keeps that record as ``KEY.meta.json``; the loader used to read only
    ``json``, so after preprocessing the caption was gone (0 segments, 0 tokens), silently."""
    import io
    import json
    import tarfile

    from avalign.preprocess import preprocess
    from loaders import make_loader
    from loaders.pipeline import caption_text
    from tests.conftest import tiny_clip

    caption = "a cat on a mat"
    meta = json.dumps({"url": "http://x/v.mp4", "key": "00000", "caption": caption, "status": "success"}).encode()
    assert caption_text({"meta.json": meta}) == caption
    assert caption_text({"txt": b"from txt", "meta.json": meta}) == "from txt"
    members = {"00000.mp4": tiny_clip(tmp_path / "c.mp4", 1.0, fps=10, sample_rate=16000), "00000.json": meta}
    with tarfile.open(tmp_path / "in-000000.tar", "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = [t for b in make_loader(str(tmp_path / "in-000000.tar"), seed=0) for t in b.segment_texts]
    preprocess(str(tmp_path / "in-000000.tar"), str(tmp_path / "out"), progress=False, timeout_seconds=None)
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        assert tar.extractfile("00000.meta.json").read() == meta
    done = [t for b in make_loader(str(tmp_path / "out" / "shard-000000.tar"), seed=0) for t in b.segment_texts]
    assert raw == done == [caption]


def _textgrid(tiers: dict[str, list[tuple[str, float, float]]], seconds: float = 3.0) -> str:
    """A long-format TextGrid with one interval tier per entry (silence between intervals left empty)."""
    body = []
    for k, (name, items) in enumerate(tiers.items(), start=1):
        filled, cursor = [], 0.0
        for text, start, stop in sorted(items, key=lambda item: item[1]):
            if start > cursor:
                filled.append(("", cursor, start))
            filled.append((text, start, stop))
            cursor = stop
        filled.append(("", cursor, seconds))
        body.append(f"    item [{k}]:\n        class = \"IntervalTier\"\n        name = \"{name}\"\n        xmin = 0\n"
                    f"        xmax = {seconds}\n        intervals: size = {len(filled)}\n" + "".join(
                        f"        intervals [{i}]:\n            xmin = {s}\n            xmax = {e}\n            text = \"{t}\"\n"
                        for i, (t, s, e) in enumerate(filled, start=1)))
    return (f"File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = 0\nxmax = {seconds}\ntiers? <exists>\n"
            f"size = {len(tiers)}\nitem []:\n" + "".join(body))


SPEAKER_A = [("hello", 0.2, 0.5), ("there", 0.6, 0.9), ("friend", 2.0, 2.4)]
SPEAKER_B = [("oh", 1.0, 1.2), ("hi", 1.3, 1.6)]


def test_textgrid_reads_every_speakers_tier():
    """Multi-speaker TextGrids have a tier per speaker: Montreal Forced Aligner writes ``<speaker> - words`` and
    ``<speaker> - phones`` (a phrase and a word tier per speaker elsewhere). Only the first speaker's word tier used to
    be read, the others dropped silently."""
    from loaders import read_transcript

    phones = [("HH", 0.2, 0.3), ("AH", 0.3, 0.5)]
    mfa = _textgrid({"A - words": SPEAKER_A, "A - phones": phones, "B - words": SPEAKER_B, "B - phones": phones})
    words = sorted(SPEAKER_A + SPEAKER_B, key=lambda w: w[1])
    spans = read_transcript(mfa.encode(), format="textgrid").spans
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in spans] == words
    assert [[(w.text, w.start_seconds) for w in s.words] for s in spans] == [[(t, s)] for t, s, _ in words]

    # tiers named neither way may be layers of one speaker (WebMAUS): the first only, as before
    layers = _textgrid({"ORT-MAU": SPEAKER_A, "KAN-MAU": [("h@loU", 0.2, 0.5)], "MAU": [("h", 0.2, 0.3)]})
    assert [s.text for s in read_transcript(layers.encode(), format="textgrid").spans] == ["hello", "there", "friend"]

    # a phrase and a word tier per speaker: each speaker's words go to that speaker's phrases
    paired = _textgrid({"A phrases": [("hello there", 0.2, 0.9), ("friend", 2.0, 2.4)], "A words": SPEAKER_A,
                        "B phrases": [("oh hi", 0.1, 2.2)], "B words": SPEAKER_B})
    spans = read_transcript(paired.encode(), format="textgrid").spans
    assert [(s.text, [w.text for w in s.words]) for s in spans] == [
        ("oh hi", ["oh", "hi"]), ("hello there", ["hello", "there"]), ("friend", ["friend"])]
    # two kinds of phrase tier are the same text twice: the first kind only
    twice = _textgrid({"IPUs": [("hello there", 0.2, 0.9)], "Transcription": [("hello there", 0.2, 0.9)]})
    assert [s.text for s in read_transcript(twice.encode(), format="textgrid").spans] == ["hello there"]


def test_a_dotted_key_says_so_instead_of_no_media():
    """``my.clip.mp4`` in a shard is member ``clip.mp4`` of key ``my`` (the key ends at the first dot): the skip used
    to say only "no media member (have ['clip.mp4', 'clip.srt'] …)", which reads as wrong: there is an mp4."""
    from loaders import SampleError, decode_items

    sample = {"__key__": "my", "__url__": "s.tar", "clip.mp4": b"\x00" * 16, "clip.srt": b""}
    with pytest.raises(SampleError, match=r"'clip\.mp4' is media under a key with a dot .* 'my\.clip\.mp4' is member "
                                          r"'clip\.mp4' of key 'my'.*'my_clip\.mp4'") as error:
        list(decode_items([sample], on_error="raise"))
    assert error.value.reason == "missing_video"


def test_caption_words_are_found_as_whole_words():
    """'is' is not found inside 'This', nor 'a' inside 'jwplayer,': each word owns its own piece of the caption."""
    text = "This is jwplayer, a test."
    tok = _word_tokenizer("This is jwplayer , a test .".split())
    segment = _span(text, "segment", (0, 30), (0, 48000))
    words = tuple(_span(w, "word", (f, f + 2), (0, 1)) for w, f in (("this", 1), ("is", 4), ("a", 10), ("test", 14)))
    item = tokenize_item(_Sample(SimpleNamespace(num_frames=30), SimpleNamespace(num_samples=48000), words, (segment,)), tok)
    assert item.tokens.ids.tolist() == tok.encode(text).ids == [1, 2, 3, 4, 5, 6, 7]
    assert [(w.token_start, w.token_stop) for w in item.sample.words] == [(0, 1), (1, 2), (4, 5), (5, 7)]
    assert item.tokens.frame_ranges.tolist()[2:4] == [[0, 30], [0, 30]]  # 'jwplayer' and ',': the caption's range


def test_failed_caption_words_are_counted_not_a_warning_per_cue(tmp_path, caplog):
    """Captions over a tone: forced alignment fails on each cue, every epoch. That used to be one WARNING per cue
    per epoch (112 lines in a 60-step ``scripts/train_example.py`` run); now the cues are counted in
    ``stats.caption_words_failed`` (and the report's ``caption_words_failed``), logged at INFO, one line per epoch."""
    import io
    import logging
    import tarfile

    from loaders import make_loader
    from tests.conftest import tiny_clip

    srt = b"1\n00:00:00,100 --> 00:00:00,900\nthe red screen\n\n2\n00:00:01,000 --> 00:00:01,800\nis red\n"
    clip = tiny_clip(tmp_path / "c.mp4", 2.0, fps=10, sample_rate=16000)
    with tarfile.open(tmp_path / "s-000000.tar", "w") as tar:
        for key in ("a",):
            for name, data in ((f"{key}.mp4", clip), (f"{key}.srt", srt)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    loader = make_loader(str(tmp_path / "s-000000.tar"), seed=0)
    with caplog.at_level(logging.INFO):
        batches = list(loader)
    assert [k for b in batches for k in b.sample_keys] == ["a"]
    assert sum(b.num_words for b in batches) == 0 and sum(b.num_segments for b in batches) == 2
    assert loader.stats.caption_words_failed == 2
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], [r.getMessage() for r in caplog.records]
    assert sum("forced alignment failed for" in r.getMessage() for r in caplog.records) == 2  # INFO
    assert [r.getMessage() for r in caplog.records if "could not be split into words" in r.getMessage()] == [
        "epoch 0: 2 caption(s) could not be split into words by forced alignment (kept as segments; "
        "stats.caption_words_failed)"]


def test_words_of_a_script_without_spaces_are_found_in_their_segment():
    """WhisperX words of a Chinese segment follow one another with no space: the ids are the tokenizer's on the
    segment's text, not on the words joined with spaces."""
    text = "你好世界。"
    tok = _word_tokenizer(["你好", "世界", "。"])
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"你好|世界|。"), "isolated")
    segment = _span(text, "segment", (0, 30), (0, 48000))
    words = (_span("你好", "word", (2, 10), (0, 1)), _span("世界", "word", (12, 20), (1, 2)))
    item = tokenize_item(_Sample(SimpleNamespace(num_frames=30), SimpleNamespace(num_samples=48000), words, (segment,)), tok)
    assert item.tokens.ids.tolist() == tok.encode(text).ids == [1, 2, 3]
    assert [(w.token_start, w.token_stop) for w in item.sample.words] == [(0, 1), (1, 2)]


def test_make_loader_pin_memory_without_an_accelerator_warns_and_loads(tmp_path, monkeypatch, caplog):
    """``make_loader(..., pin_memory=True)`` on a machine without CUDA crashed in the first batch ("Found no NVIDIA
    driver on your system"), where ``DataLoader(pin_memory=True)`` warns and loads: now it does the same."""
    import io
    import logging
    import tarfile

    import torch

    from loaders import make_loader
    from tests.conftest import tiny_clip

    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    with tarfile.open(tmp_path / "s-000000.tar", "w") as tar:
        for name, data in (("a.mp4", clip), ("a.txt", b"a red square")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    monkeypatch.setattr(torch.accelerator, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with caplog.at_level(logging.WARNING):
        pinned = list(make_loader(str(tmp_path / "s-000000.tar"), seed=0, pin_memory=True))
    plain = list(make_loader(str(tmp_path / "s-000000.tar"), seed=0))
    assert [b.segment_texts for b in pinned] == [b.segment_texts for b in plain] == [("a red square",)]
    assert torch.equal(pinned[0].frames, plain[0].frames) and not pinned[0].frames.is_pinned()
    assert "pin_memory=True but no accelerator is found: batches are not pinned" in caplog.text


def test_a_video2dataset_record_with_its_whisper_transcript_is_read():
    """video2dataset's Whisper subsampler writes WhisperX's result into the sample's ``KEY.json`` record, under
    ``whisper_transcript``; that record was taken for metadata (its caption, or nothing): the transcript with its
    times never reached the batch."""
    import json

    from loaders import read_transcript
    from loaders.transcripts import is_transcript_json

    segments = [{"text": " The bunny wakes up.", "start": 0.2, "end": 2.0}, {"text": " It stretches.", "start": 2.4, "end": 4.6}]
    record = {"url": "https://x/v.mp4", "key": "000001", "status": "success", "caption": "a rabbit",
              "whisper_transcript": {"segments": segments, "language": "en"}}
    data = json.dumps(record).encode()
    assert is_transcript_json(data)
    assert not is_transcript_json(json.dumps({k: v for k, v in record.items() if k != "whisper_transcript"}).encode())
    spans = read_transcript(data, format="json").spans
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in spans] == [
        ("The bunny wakes up.", 0.2, 2.0), ("It stretches.", 2.4, 4.6)]


def test_a_video_only_stream_takes_its_audio_from_the_samples_audio_member(tmp_path):
    """video2dataset's yt-dlp downloader writes KEY.mp4 (often a video-only DASH stream) and, when audio is asked
    for, KEY.m4a beside it. The audio member was ignored: 0 samples, silently."""
    import io
    import wave

    import numpy as np

    from loaders import decode_items
    from tests.conftest import tiny_clip

    video = tiny_clip(tmp_path / "v.mp4", 1.0, fps=10, sample_rate=None)
    tone = (0.5 * np.sin(2 * np.pi * 440 * np.arange(24000) / 16000) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(tone.tobytes())
    sample = {"__key__": "k", "__url__": "s.tar", "mp4": video, "wav": buffer.getvalue(), "txt": b"a tone"}
    (item,) = decode_items([sample], frame_size=None)
    assert item.sample.video.num_frames == 10
    samples = item.sample.audio.samples[0].numpy()
    assert samples.shape == (16000,)  # the video's [0, 1) s
    np.testing.assert_allclose(samples, tone[:16000] / 32768, atol=1e-6)
