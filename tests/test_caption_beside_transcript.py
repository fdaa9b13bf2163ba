"""A clip-level caption (``KEY.txt``, video2dataset's description of the clip) beside a transcript (``KEY.srt`` …) in
one sample reaches the batch: ``PackedBatch.caption_texts`` holds each item's caption, passed through unaligned and
untokenized (the transcript's cues and words stay the item's segments, words and tokens). Before, the caption of a
sample with a transcript was dropped silently (README: "the caption stays in the shard, not in the batch").

Oracles: the members written into the test's shard (captions, cue text), whitespace token counts of the cue text.
"""
from __future__ import annotations

import json
import logging

import pytest

import loaders
from tests.corrupt_cases import write_tar
from tests.espeak_clips import speech_over_noise, srt, wav_bytes

SENTENCE = "Every morning Maria walks her dog near the river."
CAPTION = "A woman describes her morning walk."
ALIGN_JSON = json.dumps({"av_offset_ms": 0.0, "drift_ppm": 0.0, "text_offset_ms": 0.0}).encode()


@pytest.fixture(scope="module")
def speech():
    pytest.importorskip("pocketsphinx")
    audio, placed = speech_over_noise(35.0, sentences=(SENTENCE,))
    words = placed[0]
    return audio, wav_bytes(audio), srt([(SENTENCE, words[0][1] - 0.2, words[-1][2] + 0.2)], 0.0)


def _shard(tmp_path, speech) -> str:
    """talk: transcript + caption; desc: caption only; plain: transcript only; broken: transcript + a binary txt;
    whisper: a JSON transcript (segments) + caption."""
    _, wav, cues = speech
    members = []
    segments = json.dumps({"segments": [{"start": 0.5, "end": speech[0].num_samples / 16000 - 0.5, "text": SENTENCE}]})
    for key, extra in (("talk", [("srt", cues), ("txt", f"  {CAPTION}\n".encode())]),
                       ("whisper", [("json", segments.encode()), ("txt", b"Whisper's clip.")]),
                       ("desc", [("txt", b"A clip with no transcript.")]),
                       ("plain", [("srt", cues)]),
                       ("broken", [("srt", cues), ("txt", b"\x00\xff\xfe binary" * 20)])):
        members += [(f"{key}.wav", wav)] + [(f"{key}.{ext}", data) for ext, data in extra]
        members.append((f"{key}.align.json", ALIGN_JSON))
    return write_tar(tmp_path / "shard-000000.tar", members)


def _items(batches) -> dict:
    """``{key: (caption, segment texts, word texts, tokens)}`` of every item of ``batches``."""
    out = {}
    for batch in batches:
        assert len(batch.caption_texts) == batch.num_items == len(batch.sample_keys)
        cu = batch.cu_seqlens_tokens.tolist()
        for i, key in enumerate(batch.sample_keys):
            segments = [t for t, row in zip(batch.segment_texts, batch.segment_spans.tolist()) if row[0] == i]
            words = [t for t, row in zip(batch.word_texts, batch.word_spans.tolist()) if row[0] == i]
            out[key] = (batch.caption_texts[i], segments, words, cu[i + 1] - cu[i])
    return out


def test_caption_beside_a_transcript_reaches_the_batch(speech, tmp_path, caplog):
    audio = speech[0]
    shard = _shard(tmp_path, speech)
    with caplog.at_level(logging.WARNING, logger="loaders"):
        loader = loaders.make_loader(shard, seed=0, budgets=(1, 5 * audio.num_samples + 80000, 256), tail="trim")
        items = _items(list(loader))
    assert sorted(items) == ["broken", "desc", "plain", "talk", "whisper"]
    words = ["Every", "morning", "Maria", "walks", "her", "dog", "near", "the", "river"]
    # The caption, whitespace collapsed, beside the transcript's cue and words; its text is not tokenized.
    assert items["talk"] == (CAPTION, [SENTENCE], words, len(SENTENCE.split()))
    assert items["plain"] == (None, [SENTENCE], words, len(SENTENCE.split()))
    assert items["whisper"] == ("Whisper's clip.", [SENTENCE], words, len(SENTENCE.split()))
    # Caption only: its one segment, as before, and the same caption in caption_texts.
    assert items["desc"] == ("A clip with no transcript.", ["A clip with no transcript."], [], 5)
    # A caption that cannot be read beside a readable transcript: the sample keeps its transcript, with a warning.
    assert items["broken"] == (None, [SENTENCE], words, len(SENTENCE.split()))
    assert any("broken" in r.getMessage() and "caption beside the transcript" in r.getMessage() for r in caplog.records)
    assert loader.stats.skipped_samples == ()


def test_every_window_carries_the_caption(speech, tmp_path):
    audio = speech[0]
    shard = _shard(tmp_path, speech)
    seconds = audio.num_samples / audio.sample_rate
    items = _items(loaders.make_loader(shard, seed=0, budgets=(1, audio.num_samples + 16000, 256), window_seconds=2.0,
                                       tail="trim"))
    talk = sorted(k for k in items if k.startswith("talk@"))
    assert len(talk) == -(-round(seconds * 1000) // 2000) >= 3
    assert {items[k][0] for k in talk} == {CAPTION}
    assert {items[k][0] for k in items if k.startswith("plain@")} == {None}


def test_preprocessed_shards_keep_the_caption_beside_the_transcript(speech, tmp_path):
    """``avalign preprocess`` passes ``KEY.txt`` through beside ``KEY.transcript.json``; loading its output gives the
    caption in ``caption_texts``."""
    import tarfile

    from avalign.preprocess import preprocess

    audio, wav, cues = speech
    src = tmp_path / "in"
    src.mkdir()
    (src / "talk.wav").write_bytes(wav)
    (src / "talk.srt").write_bytes(cues)
    (src / "talk.txt").write_text(CAPTION)
    preprocess(str(src), str(tmp_path / "out"), progress=False, timeout_seconds=None)
    shards = sorted((tmp_path / "out").glob("shard-*.tar"))
    with tarfile.open(shards[0]) as tar:
        assert {"talk.txt", "talk.transcript.json", "talk.align.json"} <= set(tar.getnames())
    items = _items(loaders.make_loader([str(s) for s in shards], seed=0,
                                       budgets=(1, audio.num_samples + 16000, 256), tail="trim"))
    assert list(items) == ["talk"]
    assert items["talk"][:2] == (CAPTION, [SENTENCE])
