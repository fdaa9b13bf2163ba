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


# ------------------------------------------------ 2. several tagged subtitles in a directory (user66's "Left")

def _vtt(text: str) -> str:
    return f"WEBVTT\n\n00:00.100 --> 00:00.900\n{text}\n"


def _ambiguous(caplog, tags: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if f"several language-tagged subtitles ({tags})" in r.getMessage()]


def test_several_tagged_subtitles_in_a_directory_preprocess_and_report_say_the_same(tmp_path, caplog):
    """``talk.mp4`` + ``talk.XX.vtt`` + ``talk.YY.vtt``: preprocess read none and warned; report listed each as
    ``missing_media`` with a hint to rename it to ``talk.vtt``. Now both read none, list nothing, and give the one
    warning naming the tags and how to choose (tags no other test uses: the warning is once per set in a process)."""
    import logging

    from avalign.cli import main

    for d, tags in (("p", ("cy", "eu")), ("r", ("gd", "kw"))):
        (tmp_path / d).mkdir()
        tiny_clip(tmp_path / d / "talk.mp4", 1.0, fps=10, sample_rate=16000)
        for tag in tags:
            (tmp_path / d / f"talk.{tag}.vtt").write_text(_vtt("hello there"))
    with caplog.at_level(logging.WARNING):
        plan = list_inputs(str(tmp_path / "p"))
        assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "rep"), "--clip-pages", "0",
                     "--no-progress"]) == 0
    (sample,) = plan.samples
    assert sample.transcript is None and plan.skipped == ()
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["skipped"] == []
    (clip,) = report["clips"]
    assert clip["text_offset_ms"] is None
    for tags in ("cy.vtt, eu.vtt", "gd.vtt, kw.vtt"):
        (said,) = _ambiguous(caplog, tags)
        assert f"keep one per sample, or name the one to use without its tag (KEY.{tags[:6]} -> KEY.vtt" in said


def test_a_whisper_cpp_transcript_beside_a_tagged_one_lists_neither_in_either_tool(tmp_path):
    """``talk.mp4`` + ``talk.mp4.srt`` + ``talk.zh.vtt``: the whole-named SRT is read; the tagged one is a candidate
    that lost, not a key of its own. Before: preprocess listed ``talk_zh`` as ``missing_media`` (``talk.mp4.srt``
    had been moved in first, by key order), report listed ``talk.zh.vtt`` with a hint to rename it."""
    tiny_clip(tmp_path / "talk.mp4", 1.0, fps=10, sample_rate=16000)
    (tmp_path / "talk.mp4.srt").write_bytes(_srt("alpha words"))
    (tmp_path / "talk.zh.vtt").write_text(_vtt("bravo words"))
    plan = list_inputs(str(tmp_path))
    (sample,) = plan.samples
    assert sample.transcript.path == str(tmp_path / "talk.mp4.srt") and plan.skipped == ()
    (clip,) = list(iter_inputs(str(tmp_path)))
    assert clip.transcript == str(tmp_path / "talk.mp4.srt")


# ------------------------------------------------ 3. tar member names that are not UTF-8 (adv66's "Left")

def test_member_name_text_reads_bytes_that_are_not_utf8_as_cp1252():
    from loaders.shards import member_name_text

    assert member_name_text("caf\udce9.mp4") == "café.mp4"  # Latin-1 é (0xE9), kept by tarfile as a lone surrogate
    assert member_name_text("\u65e5\u672c\udce9.srt") == "\u65e5\u672c\u00e9.srt"  # the UTF-8 part kept as it is
    assert member_name_text("a\udc80\udc81.mp4") == "a\u20ac\x81.mp4"  # 0x80 is cp1252's euro; 0x81 has no character
    assert member_name_text("café.mp4") == "café.mp4"


def test_latin1_member_names_give_one_utf8_key_in_loader_preprocess_and_report(tmp_path, caplog):
    """A tar written with a Latin-1 encoding (``café.mp4`` as bytes ``caf\\xe9.mp4``): before, the loader's
    ``sample_keys`` held ``'caf\\udce9'`` (a strict UTF-8 writer refuses it), report's key too, and preprocess wrote
    ``caf_``. Now each says ``café``, and one warning names the shard. Oracle: the names the test wrote."""
    import gzip
    import io
    import logging
    import tarfile

    from avalign.cli import main

    media = tiny_clip(tmp_path / "a.mp4", 1.0, fps=10, sample_rate=16000)
    shard = tmp_path / "latin1.tar"
    with tarfile.open(shard, "w", format=tarfile.GNU_FORMAT, encoding="latin-1") as tar:
        for name, data in (("café.mp4", media), ("café.srt", _srt("alpha words")), ("plain.mp4", media)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    assert b"caf\xe9.mp4\0" in shard.read_bytes()
    with caplog.at_level(logging.WARNING, logger="loaders"):
        keys = []
        for batch in make_dataset([str(shard)], budgets=(20, 32000, 16), window_seconds=None, frame_size=(24, 32),
                                  max_items=8, max_words=16, seed=0):
            keys.extend(batch.sample_keys)
    assert sorted(keys) == ["café", "plain"]
    said = [r.getMessage() for r in caplog.records if "not UTF-8" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith(f"{shard}: tar member names that are not UTF-8"), said
    plan = list_inputs(str(shard))
    assert {s.key: s.transcript and s.transcript.member for s in plan.samples} == {"café": "café.srt", "plain": None}
    assert sorted(c.key for c in iter_inputs(str(shard))) == ["café", "plain"]
    # preprocess on the shard gzipped: its members are read back by streaming (avalign.preprocess._streamed)
    packed = tmp_path / "latin1.tar.gz"
    packed.write_bytes(gzip.compress(shard.read_bytes()))
    assert main(["preprocess", str(packed), str(tmp_path / "out"), "--no-progress"]) == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text(encoding="utf-8").splitlines()]
    assert [(r["key"], r["num_words"]) for r in rows] == [("café", 2), ("plain", 0)]
    with tarfile.open(tmp_path / "out" / rows[0]["shard"]) as out:
        assert "café.mp4" in out.getnames()


# ------------------------------------------------ 4. avalign measure --text-offset-ms (user66's "Left")

def test_measure_takes_a_known_transcript_offset_and_reports_it_as_given(capsys):
    """Before: ``--av-offset-ms`` only; the text abstention hints said "`avalign measure` has no option for it". Oracle:
    the SRT's stamps, moved by the offset given (A/V offset given as 0: the segments are the stamps minus the text
    offset), and the values given."""
    import pytest

    from avalign.cli import main
    from loaders.transcripts import read_transcript
    from tests.conftest import SAMPLE_DATA

    stamps = [span.start_seconds for span in read_transcript(str(SAMPLE_DATA / "clip01.srt")).spans]
    for given in (90.0, -40.0):
        assert main(["measure", str(SAMPLE_DATA / "clip01.mkv"), "--transcript", str(SAMPLE_DATA / "clip01.srt"),
                     "--text-offset-ms", str(given), "--av-offset-ms", "0", "--json"]) == 0
        record = json.loads(capsys.readouterr().out)
        assert (record["text_offset_ms"], record["text_method"], record["text_confidence"]) == (given, "given", 1.0)
        assert record["text_abstain"] is None and record["av_method"] == "given"
        assert [s["start_seconds"] for s in record["segments"]] == pytest.approx([t - given / 1000 for t in stamps],
                                                                                abs=1e-6)
    with pytest.raises(SystemExit) as usage:
        main(["measure", str(SAMPLE_DATA / "clip01.mkv"), "--text-offset-ms", "90"])
    assert usage.value.code == 2 and "give the transcript too (--transcript FILE)" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    helped = capsys.readouterr().out
    assert "--text-offset-ms TEXT_OFFSET_MS" in helped and "--text-offset-ms 120   # stamps known 120 ms late" in helped
