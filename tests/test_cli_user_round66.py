"""A fresh user's round (user66): a directory of yt-dlp downloads (``talk.mp4`` beside ``talk.en.vtt``, as
``yt-dlp --write-subs --sub-langs en`` names them) is read as its shards are. Before, ``avalign preprocess`` and
``avalign report`` measured ``talk.mp4`` without its subtitles and listed ``talk.en.vtt`` as ``missing_media`` (with a
hint to rename it), while the same files packed as a shard's ``KEY.en.vtt`` member were read. Oracle: the files the
test wrote (their names, the cue's words) and sample_data's truth (clip01's transcript offset: 90 ms)."""
from __future__ import annotations

import json
import logging
import shutil

from avalign.cli import main
from avalign.preprocess import list_inputs
from tests.conftest import SAMPLE_DATA

SRT = "1\n00:00:00,200 --> 00:00:01,000\nhello there\n"


def _media(d, name="talk.mp4", source="clip00.mp4"):
    d.mkdir(exist_ok=True)
    shutil.copy(SAMPLE_DATA / source, d / name)


def test_a_directorys_language_tagged_subtitle_is_its_medias_transcript(tmp_path):
    _media(tmp_path)
    (tmp_path / "talk.en.srt").write_text(SRT)
    plan = list_inputs(str(tmp_path))
    (sample,) = plan.samples
    assert sample.key == "talk" and sample.transcript.path == str(tmp_path / "talk.en.srt")
    assert sample.transcript_format == "en.srt" and plan.skipped == ()
    # one media file given as input takes its tagged subtitle too
    (one,) = list_inputs(str(tmp_path / "talk.mp4")).samples
    assert one.transcript.path == str(tmp_path / "talk.en.srt")
    # yt-dlp's own file names ("%(title)s [%(id)s].%(ext)s"), with a regional tag
    ytdlp = tmp_path / "yt"
    _media(ytdlp, "Talk [abc].mp4")
    (ytdlp / "Talk [abc].pt-BR.vtt").write_text("WEBVTT\n\n00:00.200 --> 00:01.000\nhello there\n")
    (sample,) = list_inputs(str(ytdlp)).samples
    assert sample.transcript.path == str(ytdlp / "Talk [abc].pt-BR.vtt")


def test_several_tags_and_no_untagged_transcript_read_none_as_in_a_shard(tmp_path, caplog):
    _media(tmp_path)
    (tmp_path / "talk.en.srt").write_text(SRT)
    (tmp_path / "talk.de.srt").write_text(SRT)
    with caplog.at_level(logging.WARNING):
        (sample,) = list_inputs(str(tmp_path)).samples
    assert sample.transcript is None
    assert any("several language-tagged subtitles (de.srt, en.srt)" in r.getMessage() for r in caplog.records)


def test_preprocess_and_report_measure_a_yt_dlp_directory_against_its_en_vtt(tmp_path):
    """sample_data's clip01 with its own SRT, renamed as yt-dlp names it: the transcript offset is measured (truth
    90 ms, as on the untagged SRT) and every word counted; before, both were null / 0."""
    clips = tmp_path / "clips"
    _media(clips, "talk.mkv", "clip01.mkv")
    shutil.copy(SAMPLE_DATA / "clip01.srt", clips / "talk.en.srt")
    truth = json.loads((SAMPLE_DATA / "truth.json").read_text())
    assert main(["preprocess", str(clips), str(tmp_path / "out"), "--no-progress"]) == 0
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    untagged = tmp_path / "plain"
    _media(untagged, "talk.mkv", "clip01.mkv")
    shutil.copy(SAMPLE_DATA / "clip01.srt", untagged / "talk.srt")
    assert main(["preprocess", str(untagged), str(tmp_path / "out_plain"), "--no-progress"]) == 0
    (plain,) = [json.loads(line) for line in (tmp_path / "out_plain" / "manifest.jsonl").read_text().splitlines()]
    assert row["num_words"] == plain["num_words"] > 0
    main(["report", str(clips), "--out", str(tmp_path / "rep"), "--no-progress"])
    report = json.loads((tmp_path / "rep" / "report.json").read_text())
    assert report["skipped"] == []
    (clip,) = report["clips"]
    true_ms = truth["clips"]["clip01"]["text_offset_ms"]
    assert clip["text_offset_ms"] is not None and abs(clip["text_offset_ms"] - true_ms) <= 10.0, clip
