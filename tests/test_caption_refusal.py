"""A caption that forced alignment refuses names the refusal (issue #12 follow-up, item 4): ``too_many_words``
(or ``too_long`` / ``words_do_not_fit``) with found / needed / hint, not ``alignment_failed``, in the measure
record (``measure --json`` and preprocess's ``align.json`` share it) and in the report's abstain reasons."""
from __future__ import annotations

import pytest

import loaders
from aligner.estimators import MAX_ALIGN_WORDS
from avalign import measure_sample
from conftest import SAMPLE_DATA, sample_truth

pytest.importorskip("pocketsphinx")


def _captions(num_words: int, stop: str = "00:00:04,000") -> loaders.Transcript:
    text = " ".join(["hello"] * num_words)
    return loaders.read_transcript(f"1\n00:00:00,500 --> {stop}\n{text}\n".encode(), name="long.srt")


@pytest.fixture(scope="module")
def audio():
    return loaders.read_audio(str(SAMPLE_DATA / sample_truth()["clip01"]["media"]))


@pytest.mark.parametrize("method", ["forced", "auto"])
def test_too_many_words_is_named(audio, method):
    record = measure_sample(None, audio, _captions(MAX_ALIGN_WORDS + 100), text_method=method)
    why = record["text_abstain"]
    assert record["text_offset_ms"] is None and record["text_method"] == "abstain:too_many_words"
    assert why["reason"] == "too_many_words"
    assert f"more than {MAX_ALIGN_WORDS} words" in why["found"]
    assert str(MAX_ALIGN_WORDS) in why["needed"] and "split the caption" in why["hint"]
    assert record["caption_words_failed"] == 1  # the caption is kept as a segment, without words
    assert [s["text"][:11] for s in record["segments"]] == ["hello hello"]


def test_words_that_cannot_fit_are_named(audio):
    record = measure_sample(None, audio, _captions(200, stop="00:00:02,000"), text_method="forced")
    assert record["text_abstain"]["reason"] == "words_do_not_fit"
    assert "200 words in" in record["text_abstain"]["found"]


def test_a_short_caption_is_not_refused(audio):
    record = measure_sample(None, audio, _captions(3), text_method="forced")
    assert (record["text_abstain"] or {}).get("reason") not in ("too_many_words", "words_do_not_fit", "too_long")


def test_align_json_and_report_name_the_refusal(tmp_path):
    """preprocess writes the same record into ``align.json``; the report on the preprocessed shard lists the reason."""
    import json
    import shutil
    import tarfile

    from avalign.preprocess import preprocess
    from avalign.report import run_report

    truth = sample_truth()["clip01"]
    src = tmp_path / "in"
    src.mkdir()
    media = SAMPLE_DATA / truth["media"]
    shutil.copy(media, src / f"c0{media.suffix}")
    text = " ".join(["hello"] * (MAX_ALIGN_WORDS + 100))
    (src / "c0.srt").write_text(f"1\n00:00:00,500 --> 00:00:04,000\n{text}\n")
    preprocess(str(src), str(tmp_path / "out"), progress=False, timeout_seconds=None)
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        record = json.loads(tar.extractfile("c0.align.json").read())
    assert record["text_abstain"]["reason"] == "too_many_words" and record["text_method"] == "abstain:too_many_words"
    assert "split the caption" in record["text_abstain"]["hint"]
    result = run_report(str(tmp_path / "out" / "shard-000000.tar"), out_dir=str(tmp_path / "report"), fail_over_ms=50.0)
    (row,) = result.report["clips"]
    assert row["abstain_reasons"]["text_offset_ms"] == "too_many_words"
