"""Text coverage per shard layout: the words, segments and tokens in the batch equal those written in the shard.

One 2 s clip (10 fps, 16 kHz) is stored once per layout with the same generated text: video2dataset caption
(``.txt``, ``.json`` metadata), SRT, WebVTT, TextGrid, Whisper JSON (segments), WhisperX JSON (segments and
words). The oracle is the generator's text and times: frame ``k`` is at ``k / 10`` s, so a span ``[s, e)`` owns
frames ``[ceil(10 s), ceil(10 e))`` and samples ``[round(16000 s), round(16000 e))``. Tokens come from a BPE
tokenizer trained here on the text (several tokens per word, ``[CLS]``/``[SEP]`` specials), compared with its
own ``encode`` of the joined text.
"""
from __future__ import annotations

import io
import json
import math
import tarfile

import pytest

from loaders import make_dataset, make_loader
from tests.conftest import tiny_clip

FPS, SAMPLE_RATE, SECONDS = 10, 16000, 2.0
NUM_FRAMES, NUM_SAMPLES = 20, 32000
WORDS = [("hello", 0.2, 0.5), ("brave", 0.6, 0.9), ("new", 1.0, 1.2), ("world", 1.3, 1.75)]
SEGMENTS = [("hello brave", 0.2, 0.9, WORDS[:2]), ("new world", 1.0, 1.75, WORDS[2:])]
CAPTION = "a  red square\nmoves left"


def _srt_time(t: float) -> str:
    ms = round(t * 1000)
    return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"


def _layouts() -> dict[str, list[tuple[str, bytes]]]:
    srt = "".join(f"{i + 1}\n{_srt_time(s)} --> {_srt_time(e)}\n{t}\n\n" for i, (t, s, e, _) in enumerate(SEGMENTS))
    vtt = "WEBVTT\n\n" + "".join(f"{_srt_time(s).replace(',', '.')} --> {_srt_time(e).replace(',', '.')}\n{t}\n\n"
                                 for t, s, e, _ in SEGMENTS)
    whisper = {"text": " ".join(t for t, *_ in SEGMENTS),
               "segments": [{"id": i, "start": s, "end": e, "text": " " + t} for i, (t, s, e, _) in enumerate(SEGMENTS)]}
    whisperx = {"segments": [{"start": s, "end": e, "text": t,
                              "words": [{"word": w, "start": ws, "end": we, "score": 0.9} for w, ws, we in words]}
                             for t, s, e, words in SEGMENTS]}
    return {
        "v2d_txt": [("txt", CAPTION.encode()), ("json", json.dumps({"url": "http://x", "status": "success",
                                                                       "caption": "ignored: txt wins"}).encode())],
        "v2d_json": [("json", json.dumps({"url": "http://x", "caption": CAPTION, "status": "success"}).encode())],
        "srt": [("srt", srt.encode())],
        "vtt": [("vtt", vtt.encode())],
        "textgrid": [("TextGrid", _textgrid().encode())],
        "whisper": [("json", json.dumps(whisper).encode())],
        "whisperx": [("json", json.dumps(whisperx).encode())],
    }


def _textgrid() -> str:
    def tier(name: str, items: list[tuple[str, float, float]]) -> str:
        filled, cursor = [], 0.0
        for text, s, e in items:  # TextGrid tiers tile the whole duration: silence is an empty interval
            if s > cursor:
                filled.append(("", cursor, s))
            filled.append((text, s, e))
            cursor = e
        filled.append(("", cursor, SECONDS))
        body = "".join(f"        intervals [{i + 1}]:\n            xmin = {s}\n            xmax = {e}\n"
                       f"            text = \"{t}\"\n" for i, (t, s, e) in enumerate(filled))
        return (f"        class = \"IntervalTier\"\n        name = \"{name}\"\n        xmin = 0\n        xmax = {SECONDS}\n"
                f"        intervals: size = {len(filled)}\n{body}")

    return ("File type = \"ooTextFile\"\nObject class = \"TextGrid\"\n\nxmin = 0\nxmax = 2.0\ntiers? <exists>\nsize = 2\n"
            "item []:\n    item [1]:\n" + tier("phrases", [(t, s, e) for t, s, e, _ in SEGMENTS])
            + "    item [2]:\n" + tier("words", WORDS))


EXPECTED = {  # layout → (segments, words) written in the shard; None: no word times in the file
    "v2d_txt": ([("a red square moves left", 0.0, SECONDS)], None),
    "v2d_json": ([("a red square moves left", 0.0, SECONDS)], None),
    "srt": ([(t, s, e) for t, s, e, _ in SEGMENTS], None),
    "vtt": ([(t, s, e) for t, s, e, _ in SEGMENTS], None),
    "textgrid": ([(t, s, e) for t, s, e, _ in SEGMENTS], WORDS),
    "whisper": ([(t, s, e) for t, s, e, _ in SEGMENTS], None),
    "whisperx": ([(t, s, e) for t, s, e, _ in SEGMENTS], WORDS),
}


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("layouts")
    clip = d / "clip.mp4"
    tiny_clip(clip, SECONDS, fps=FPS, sample_rate=SAMPLE_RATE, tone_hz=300)
    out = {}
    for layout, members in _layouts().items():
        path = d / f"{layout}.tar"
        with tarfile.open(path, "w") as tar:
            for ext, data in [("mp4", clip.read_bytes())] + members:
                info = tarfile.TarInfo(f"{layout}.{ext}")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        out[layout] = str(path)
    return out


@pytest.fixture(scope="module")
def tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    trainer = trainers.BpeTrainer(vocab_size=40, special_tokens=["[UNK]", "[CLS]", "[SEP]"], show_progress=False)
    tok.train_from_iterator([CAPTION, *(t for t, *_ in SEGMENTS)] * 3, trainer=trainer)
    tok.post_processor = processors.TemplateProcessing(single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 1), ("[SEP]", 2)])
    return tok


def _frames(s: float, e: float) -> tuple[int, int]:
    return min(math.ceil(round(s * FPS, 9)), NUM_FRAMES), min(math.ceil(round(e * FPS, 9)), NUM_FRAMES)


def _samples(s: float, e: float) -> tuple[int, int]:
    return min(math.floor(s * SAMPLE_RATE + 0.5), NUM_SAMPLES), min(math.floor(e * SAMPLE_RATE + 0.5), NUM_SAMPLES)


def _one_batch(path: str, tokenizer):
    batches = list(make_loader(path, seed=0, tokenizer=tokenizer, budgets=(64, 64000, 64), window_seconds=None,
                               frame_size=(24, 32), buffer_size=2))
    assert len(batches) == 1 and batches[0].num_items == 1
    return batches[0]


@pytest.mark.parametrize("layout", sorted(EXPECTED))
def test_text_in_the_batch_equals_the_shard(shards, tokenizer, layout):
    batch = _one_batch(shards[layout], tokenizer)
    segments, words = EXPECTED[layout]
    assert int(batch.cu_seqlens_frames[1]) == NUM_FRAMES and int(batch.cu_seqlens_samples[1]) == NUM_SAMPLES
    # segments: texts, frames and samples
    assert list(batch.segment_texts) == [t for t, _, _ in segments] and batch.num_segments == len(segments)
    rows = batch.segment_spans[: batch.num_segments].tolist()
    assert [tuple(r[1:3]) for r in rows] == [_frames(s, e) for _, s, e in segments]
    assert [tuple(r[3:5]) for r in rows] == [_samples(s, e) for _, s, e in segments]
    # words: those of the file (the aligner may add words inside captions by forced alignment: then they are
    # the captions' words, in order)
    if words is not None:
        assert list(batch.word_texts) == [w for w, _, _ in words]
        rows = batch.word_spans[: batch.num_words].tolist()
        assert [tuple(r[1:3]) for r in rows] == [_frames(s, e) for _, s, e in words]
        assert [tuple(r[3:5]) for r in rows] == [_samples(s, e) for _, s, e in words]
    else:
        assert list(batch.word_texts) in ([], " ".join(t for t, _, _ in segments).split())
    # tokens: the tokenizer's ids of the joined words (else segments), each with its unit's frames and samples
    units = [(w, s, e) for w, s, e in words] if words is not None and batch.num_words else segments
    if batch.num_words and words is None:
        pytest.skip("words came from forced alignment: their times are the aligner's, not the file's")
    text = " ".join(t for t, _, _ in units)
    encoding = tokenizer.encode(text)
    num_tokens = int(batch.cu_seqlens_tokens[1])
    assert num_tokens == len(encoding.ids) > len(units) + 2  # BPE: more tokens than units, plus [CLS] [SEP]
    assert batch.token_ids[:num_tokens].tolist() == encoding.ids
    assert (batch.token_ids[num_tokens:] == 0).all() and (batch.token_spans[num_tokens:] == -1).all()
    starts, cursor = [], 0
    for t, _, _ in units:
        starts.append((cursor, cursor + len(t)))
        cursor += len(t) + 1
    for token, (a, b), span in zip(encoding.tokens, encoding.offsets, batch.token_spans[:num_tokens].tolist()):
        owner = next((j for j, (c0, c1) in enumerate(starts) if a < c1 and b > c0), None)
        if owner is None:  # [CLS] / [SEP]: the whole item
            assert token in ("[CLS]", "[SEP]") and span == [0, NUM_FRAMES, 0, NUM_SAMPLES]
        else:
            _, s, e = units[owner]
            assert tuple(span) == _frames(s, e) + _samples(s, e), (token, units[owner])
    unit_rows = (batch.word_spans[: batch.num_words] if units is not segments else batch.segment_spans[: batch.num_segments])
    assert int(unit_rows[0, 5]) == 1 and int(unit_rows[-1, 6]) == num_tokens - 1  # after [CLS], before [SEP]


def test_without_tokenizer_tokens_are_counted_words(shards):
    """No tokenizer: no ids; the token budget counts whitespace pieces of the words (else of the segments)."""
    batch = _one_batch(shards["whisperx"], None)
    assert batch.token_ids is None and int(batch.cu_seqlens_tokens[1]) == len(WORDS)
    batch = _one_batch(shards["v2d_txt"], None)
    assert int(batch.cu_seqlens_tokens[1]) == len("a red square moves left".split())


def test_callable_and_hf_style_tokenizers(shards, tokenizer):
    """Any callable returning (ids, offsets), and an object shaped like transformers' fast tokenizers."""
    def callable_tokenizer(text):
        encoding = tokenizer.encode(text)
        return encoding.ids, encoding.offsets

    class FastTokenizerLike:  # the shape of transformers.PreTrainedTokenizerFast (the real one: the next test)
        backend_tokenizer = tokenizer

        def __call__(self, text, return_offsets_mapping=False):
            encoding = tokenizer.encode(text)
            return {"input_ids": encoding.ids, "offset_mapping": encoding.offsets if return_offsets_mapping else None}

    reference = _one_batch(shards["whisperx"], tokenizer)
    for other in (callable_tokenizer, FastTokenizerLike()):
        batch = _one_batch(shards["whisperx"], other)
        assert batch.token_ids.tolist() == reference.token_ids.tolist()
        assert batch.token_spans.tolist() == reference.token_spans.tolist()


def test_token_budget_counts_tokenizer_tokens(shards, tokenizer):
    """A token budget below the clip's token count cuts it into windows (auto) that each fit."""
    num_tokens = len(tokenizer.encode(" ".join(w for w, _, _ in WORDS)).ids)
    ds = make_dataset(shards["whisperx"], seed=0, tokenizer=tokenizer, budgets=(64, 64000, num_tokens - 1),
                      frame_size=(24, 32), buffer_size=2)
    batches = list(ds)
    keys = [k for b in batches for k in b.sample_keys]
    assert len(keys) > 1 and all(k.startswith("whisperx@") for k in keys)
    assert all(int(b.cu_seqlens_tokens[-1]) <= num_tokens - 1 for b in batches)
    assert [w for b in batches for w in b.word_texts] == [w for w, _, _ in WORDS]  # each word in one window


def test_webdataset_stages_give_the_same_items(shards, tokenizer):
    """wds.WebDataset(urls).compose(decode_items).compose(pack_batches): the same text, tokens, frames and audio
    per key as make_loader (batches may group items differently)."""
    from functools import partial

    import webdataset as wds

    from loaders import decode_items, pack_batches

    options = dict(budgets=(64, 64000, 64), window_seconds=None, frame_size=(24, 32))
    urls = [shards[layout] for layout in sorted(EXPECTED)]

    def per_key(batches) -> dict:
        out = {}
        for b in batches:
            cu = {name: getattr(b, f"cu_seqlens_{name}").tolist() for name in ("frames", "samples", "tokens")}
            for i, key in enumerate(b.sample_keys):
                f, s, t = ((cu[n][i], cu[n][i + 1]) for n in ("frames", "samples", "tokens"))
                segments = [b.segment_texts[r] for r, row in enumerate(b.segment_spans[: b.num_segments].tolist()) if row[0] == i]
                out[key] = (b.frames[f[0]:f[1]].numpy().tobytes(), b.audio[s[0]:s[1]].numpy().tobytes(),
                            b.token_ids[t[0]:t[1]].tolist(), segments)
        return out

    pipeline = (wds.WebDataset(urls, shardshuffle=False, empty_check=False)
                .compose(partial(decode_items, tokenizer=tokenizer, **options))
                .compose(partial(pack_batches, budgets=options["budgets"], frame_size=options["frame_size"], buffer_size=4)))
    ours = per_key(make_loader(urls, seed=0, tokenizer=tokenizer, buffer_size=4, **options))
    theirs = per_key(pipeline)
    assert sorted(theirs) == sorted(EXPECTED) and theirs == ours


def test_token_owner_rules_on_plain_lists():
    """A token belongs to the first unit whose characters it overlaps; specials (0, 0) to none; a unit without
    tokens gets an empty range at the next token; a token across two units belongs to the first."""
    from loaders.pipeline import join_unit_texts, token_owners, unit_token_ranges

    text, chars = join_unit_texts(["hello", "", "big", "world"])
    assert text == "hello  big world" and chars == [(0, 5), (6, 6), (7, 10), (11, 16)]
    offsets = [(0, 0), (0, 3), (3, 5), (7, 10), (9, 13), (13, 16), (0, 0)]  # [CLS] hel lo big g-wo rld [SEP]
    owners = token_owners(offsets, chars)
    assert owners == [-1, 0, 0, 2, 2, 3, -1]
    assert unit_token_ranges(owners, 4) == [(1, 3), (3, 3), (3, 5), (5, 6)]
    assert token_owners([(0, 0)], []) == [-1] and unit_token_ranges([], 2) == [(0, 0), (0, 0)]


def test_encode_text_rejects_bad_tokenizer_output():
    from loaders.pipeline import encode_text

    with pytest.raises(ValueError, match="outside the text"):
        encode_text(lambda text: ([1], [(0, len(text) + 1)]), "abc")
    with pytest.raises(ValueError, match="2 ids but 1 offsets"):
        encode_text(lambda text: ([1, 2], [(0, 1)]), "abc")
    with pytest.raises(TypeError, match="ids and character offsets"):
        encode_text(lambda text: 42, "abc")
    assert encode_text(None, " a  bc ") == (None, [(1, 2), (4, 6)])


def test_caption_members_on_plain_dicts():
    """txt wins over json metadata; transcripts and captionless metadata are not captions; a huge txt is refused."""
    from loaders.pipeline import MAX_CAPTION_BYTES, caption_text

    meta = json.dumps({"url": "u", "caption": "from json"}).encode()
    assert caption_text({"txt": " from\n  txt ".encode(), "json": meta}) == "from txt"
    assert caption_text({"json": meta}) == "from json"
    assert caption_text({"json": json.dumps({"url": "u", "status": "success"}).encode()}) is None
    assert caption_text({"json": json.dumps({"segments": []}).encode()}) is None  # a transcript, read elsewhere
    assert caption_text({"txt": b"   "}) is None
    with pytest.raises(ValueError, match="over"):
        caption_text({"txt": b"x" * (MAX_CAPTION_BYTES + 1)})


def test_transformers_fast_tokenizer(shards, tokenizer):
    """A real ``transformers.PreTrainedTokenizerFast`` (built offline around the tokenizer trained above, no hub):
    the same ids and per-token frame/sample ranges as the ``tokenizers.Tokenizer`` it wraps, in the main process
    and through a DataLoader worker (the HF object pickles to the worker)."""
    import torch
    from transformers import PreTrainedTokenizerFast

    hf = PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]")
    text = " ".join(w for w, _, _ in WORDS)
    assert hf(text)["input_ids"] == tokenizer.encode(text).ids  # the wrapper adds [CLS]/[SEP] as the template does
    reference = _one_batch(shards["whisperx"], tokenizer)
    batch = _one_batch(shards["whisperx"], hf)
    assert batch.token_ids.tolist() == reference.token_ids.tolist()
    assert batch.token_spans.tolist() == reference.token_spans.tolist()
    ds = make_dataset(shards["whisperx"], seed=0, tokenizer=hf, budgets=(64, 64000, 64), window_seconds=None,
                      frame_size=(24, 32), buffer_size=2)
    [through_worker] = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=1))
    assert through_worker.token_ids.tolist() == reference.token_ids.tolist()
    assert through_worker.token_spans.tolist() == reference.token_spans.tolist()
