"""A language-tagged subtitle member (``KEY.en.srt``, as yt-dlp names them; WebDataset's extension is then
``en.srt``) is the sample's transcript in the loader and in ``avalign preprocess``: it was silently ignored (no
text in the batch, no skip, no count). Oracles: the cue texts and word count written in ``sample_data/clip05.srt``."""
from __future__ import annotations

import io
import json
import tarfile

import loaders
from avalign.preprocess import preprocess
from loaders.transcripts import pick_transcript, transcript_format_of
from tests.conftest import SAMPLE_DATA


def _cue_texts(srt: str) -> list[str]:
    return [block.strip().splitlines()[2] for block in srt.strip().split("\n\n")]


def test_pick_transcript_takes_one_language_tagged_subtitle():
    never = lambda ext: b""  # noqa: E731 - no json member here
    assert pick_transcript({"mp4": 1, "en.srt": 1}, never) == "en.srt"
    assert pick_transcript({"mp4": 1, "pt-br.vtt": 1}, never) == "pt-br.vtt"
    assert pick_transcript({"mp4": 1, "srt": 1, "en.srt": 1}, never) == "srt"  # the untagged one first
    assert pick_transcript({"mp4": 1, "en.vtt": 1, "de.vtt": 1}, never) is None  # which language: ambiguous
    assert pick_transcript({"mp4": 1, "meta.json": 1, "v2.srt.bak": 1}, never) is None
    assert [transcript_format_of(e) for e in ("en.srt", "pt-br.vtt", "srt", "json", "transcript.json")] == [
        "srt", "vtt", "srt", "json", "json"]


def test_tagged_srt_member_reaches_the_batch_and_preprocess(tmp_path):
    srt = (SAMPLE_DATA / "clip05.srt").read_text()
    shard = tmp_path / "in.tar"
    with tarfile.open(shard, "w") as tar:
        for name, data in (("c.mp4", (SAMPLE_DATA / "clip05.mp4").read_bytes()), ("c.en.srt", srt.encode())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    loader = loaders.make_loader(str(shard), seed=0, num_workers=0, budgets=(300, 160_000, 64), window_seconds=None)
    (batch,) = list(loader)
    assert list(batch.segment_texts) == _cue_texts(srt)
    preprocess(str(shard), str(tmp_path / "out"), progress=False, timeout_seconds=None)
    row = json.loads((tmp_path / "out" / "manifest.jsonl").read_text())
    assert row["num_words"] == sum(len(text.split()) for text in _cue_texts(srt))
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        assert "c.transcript.json" in tar.getnames()


def test_several_tagged_subtitles_are_said_not_silently_dropped(caplog):
    available = {"mp4": b"", "fr.srt": b"", "es.srt": b""}  # tags no other test uses: warned once per process
    with caplog.at_level("WARNING", logger="loaders"):
        assert pick_transcript(available, available.__getitem__) is None
        assert pick_transcript(available, available.__getitem__) is None
    said = [r.getMessage() for r in caplog.records if "language-tagged" in r.getMessage()]
    assert len(said) == 1 and "es.srt, fr.srt" in said[0] and "none is used" in said[0], said
