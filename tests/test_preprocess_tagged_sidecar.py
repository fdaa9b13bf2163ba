"""``avalign preprocess`` on a directory where a transcript carries a language tag (yt-dlp's ``talk.en.srt`` beside
``talk.mp4``): it is the media's transcript when the media has no untagged one (as a shard's ``KEY.en.srt``);
beside an untagged one it is a key of its own, skipped as ``missing_media``. Oracle: the file names written by the test."""
from __future__ import annotations

from avalign.preprocess import list_inputs
from tests.conftest import SAMPLE_DATA

SRT = "1\n00:00:00,200 --> 00:00:01,000\nhello there\n"


def _by_key(plan) -> dict[str, dict]:
    return {row["key"]: row for row in plan.skipped}


def test_a_language_tagged_transcript_is_its_medias_when_it_has_no_other(tmp_path):
    """Since user66 (tests/test_cli_user_round66.py): read as a shard's ``KEY.en.srt`` member is, not skipped with a
    hint to rename it."""
    (tmp_path / "talk.mp4").write_bytes((SAMPLE_DATA / "clip00.mp4").read_bytes())
    (tmp_path / "talk.en.srt").write_text(SRT)
    plan = list_inputs(str(tmp_path))
    (sample,) = plan.samples
    assert (sample.key, sample.transcript.path) == ("talk", str(tmp_path / "talk.en.srt"))
    assert plan.skipped == ()


def test_no_hint_when_the_media_has_its_own_transcript_or_no_media_shares_the_stem(tmp_path):
    (tmp_path / "talk.mp4").write_bytes((SAMPLE_DATA / "clip00.mp4").read_bytes())
    (tmp_path / "talk.srt").write_text(SRT)
    (tmp_path / "talk.de.srt").write_text(SRT)
    (tmp_path / "other.en.vtt").write_text("WEBVTT\n\n00:00.200 --> 00:01.000\nhello\n")
    plan = list_inputs(str(tmp_path))
    (sample,) = plan.samples
    assert sample.transcript is not None and sample.transcript.path.endswith("talk.srt")
    rows = _by_key(plan)
    assert "hint" not in rows["talk_de"]["message"] and "hint" not in rows["other_en"]["message"]
