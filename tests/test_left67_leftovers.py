"""Leftovers of the sixteenth session (left67; BENCHMARKS.md, adv66 and user66 "Left"). Oracles: the names and words
of the files each test writes."""
from __future__ import annotations

import json
import shutil

from avalign.preprocess import list_inputs
from avalign.report import iter_inputs
from loaders import make_dataset
from loaders.transcripts import pick_transcript
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar


def _srt(text: str) -> bytes:
    return f"1\n00:00:00,100 --> 00:00:00,900\n{text}\n".encode()


WHISPER_CPP_JSON = json.dumps({"transcription": [
    {"timestamps": {"from": "00:00:00,100", "to": "00:00:00,900"}, "offsets": {"from": 100, "to": 900},
     "text": " alpha words"}]}).encode()


# ------------------------------------------------ 1. whisper.cpp's KEY.mp4.srt in a shard (user66's "Left")

def test_pick_transcript_reads_a_tag_that_names_the_samples_media_as_whisper_cpps_naming():
    """Before: ``mp4.srt`` was not read (no language tag: warned as a transcript under another name), ``wav.srt`` was
    read as a language and made ``en.srt`` ambiguous (none read). A tag that is a media extension the sample lacks is
    still a language tag (``ts``: Tsonga, beside no ``KEY.ts``)."""
    assert pick_transcript({"mp4": b"", "mp4.srt": b""}, None) == "mp4.srt"
    assert pick_transcript({"wav": b"", "wav.srt": b"", "en.srt": b""}, None) == "wav.srt"
    assert pick_transcript({"mp4": b"", "srt": b"", "mp4.srt": b""}, None) == "srt"  # an untagged one still wins
    assert pick_transcript({"mkv": b"", "ts.srt": b""}, None) == "ts.srt"
    sample = {"wav": b"", "wav.json": WHISPER_CPP_JSON}
    assert pick_transcript(sample, sample.__getitem__) == "wav.json"  # whisper.cpp's -oj output
    record = {"wav": b"", "wav.json": b'{"duration": 1.0}', "en.srt": b""}
    assert pick_transcript(record, record.__getitem__) == "en.srt"  # a JSON record under that name is no transcript


def test_a_shard_member_named_after_its_media_whole_is_read_by_loader_preprocess_and_report(tmp_path):
    """``a.mp4`` + ``a.mp4.srt``; ``b.wav`` + ``b.wav.srt`` + ``b.en.srt``: before, the loader read neither sample's
    text, preprocess wrote neither's transcript and report measured both bare (as a directory now does not)."""
    media = tiny_clip(tmp_path / "a.mp4", 1.0, fps=10, sample_rate=16000)
    shard = write_tar(tmp_path / "s.tar", [("a.mp4", media), ("a.mp4.srt", _srt("alpha words")), ("b.wav", media),
                                           ("b.wav.srt", _srt("bravo words")), ("b.en.srt", _srt("guten tag"))])
    texts = set()
    for batch in make_dataset([shard], budgets=(20, 32000, 16), window_seconds=None, frame_size=(24, 32), max_items=8,
                              max_words=16, seed=0):
        texts.update(batch.segment_texts)
    assert texts == {"alpha words", "bravo words"}
    plan = list_inputs(shard)
    assert {s.key: (s.transcript.member, s.transcript_format) for s in plan.samples} == {
        "a": ("a.mp4.srt", "mp4.srt"), "b": ("b.wav.srt", "wav.srt")}
    assert {c.key: (c.transcript_name, c.transcript) for c in iter_inputs(shard)} == {
        "a": ("a.mp4.srt", _srt("alpha words")), "b": ("b.wav.srt", _srt("bravo words"))}


def test_one_media_file_given_as_input_takes_its_whisper_cpp_transcript(tmp_path):
    """As its directory does (user66): ``list_inputs("talk.mp4")`` left ``talk.mp4.srt`` out (``mp4`` is no language
    tag, so the file was not among its sidecars)."""
    tiny_clip(tmp_path / "talk.mp4", 1.0, fps=10, sample_rate=16000)
    (tmp_path / "talk.mp4.srt").write_bytes(_srt("alpha words"))
    plan = list_inputs(str(tmp_path / "talk.mp4"))
    (sample,) = plan.samples
    assert sample.transcript.path == str(tmp_path / "talk.mp4.srt") and plan.skipped == ()
    (sample,) = list_inputs(str(tmp_path)).samples
    assert sample.transcript.path == str(tmp_path / "talk.mp4.srt")
