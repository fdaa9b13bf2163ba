"""adv68: the offline tools (``avalign preprocess``, ``report``, ``measure``) under adversarial input
(BENCHMARKS.md, "adv68").

Each test asserts against an oracle and failed before its fix.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess

import pytest

from avalign import measure
from avalign.preprocess import preprocess, process_sample
from avalign.report import run_report
from avcore import SampleError, read_align_json
from tests.conftest import SAMPLE_DATA, tiny_clip
from tests.corrupt_cases import write_tar

GOOD = {"av_offset_ms": 12.5, "drift_ppm": None, "text_offset_ms": None, "av_confidence": 0.7, "av_method": "event_match",
        "video": {"num_frames": 30, "fps_from_content": 30.0, "fps_from_header": 30.0, "start_seconds": 0.0},
        "audio": {"sample_rate": 16000, "num_samples": 16000, "start_seconds": 0.0}, "aligned": {"spans_outside": 0}}


def _record(**changes) -> bytes:
    return json.dumps(dict(GOOD, **changes)).encode()


HAND_EDITED = {  # what the report's rows looked into: each crashed `avalign report` (exit 1, a traceback) or lost it all
    "video a string": _record(video="x"),
    "aligned a list": _record(aligned=[1]),
    "audio a list": _record(audio=[1]),
    "NaN confidence": _record(av_confidence=float("nan")),  # json.dumps writes the NaN token
}


@pytest.mark.parametrize("name", sorted(HAND_EDITED))
def test_a_hand_edited_align_json_is_one_align_json_skip_and_the_report_is_written(name, tmp_path):
    data = HAND_EDITED[name]
    with pytest.raises(SampleError) as info:
        read_align_json(data, key="bad", shard="s.tar")
    assert info.value.reason == "align_json"
    shard = write_tar(tmp_path / "shard-000000.tar", [("good.align.json", _record()), ("bad.align.json", data)])
    result = run_report(shard, out_dir=str(tmp_path / "report"), clip_pages=0)
    report = json.loads((tmp_path / "report" / "report.json").read_text(), parse_constant=pytest.fail)
    assert result.exit_code == 0
    assert [row["key"] for row in report["clips"]] == ["good"] and report["clips"][0]["av_offset_ms"] == 12.5
    assert [(s["key"], s["reason"]) for s in report["skipped"]] == [("bad", "align_json")]


def test_a_record_value_that_is_not_a_number_is_a_problem_of_its_row_not_a_crash(tmp_path):
    data = _record(video=dict(GOOD["video"], num_frames="many"), audio=dict(GOOD["audio"], sample_rate=None))
    shard = write_tar(tmp_path / "shard-000000.tar", [("k.align.json", data)])
    run_report(shard, out_dir=str(tmp_path / "report"), clip_pages=0)
    [row] = json.loads((tmp_path / "report" / "report.json").read_text())["clips"]
    assert row["av_offset_ms"] == 12.5 and row["container"]["num_frames_from_content"] is None
    assert row["container"]["fps_from_content"] == 30.0 and row["container"]["audio_duration_seconds"] is None
    assert row["problems"] == ["video.num_frames is not a number: 'many'"]


BAD_TRUTH = {  # before: a traceback (exit 1, the gate's code), "could not convert string to float: 'abc'" or
    # matplotlib's "supplied range of [nan, nan] is not finite", none naming the file or the key
    "not an object": ('{"clips": {"k": 120}}', r"clips\['k'\] must be an object"),
    "a string": ('{"clips": {"k": {"av_offset_ms": "abc"}}}', r"clips\['k'\]\['av_offset_ms'\] must be null or a finite"),
    "NaN": ('{"clips": {"k": {"drift_ppm": NaN}}}', r"clips\['k'\]\['drift_ppm'\] must be null or a finite"),
    "a list": ('{"clips": {"k": {"text_offset_ms": [1]}}}', r"clips\['k'\]\['text_offset_ms'\] must be null or a finite"),
    "a bool": ('{"clips": {"k": {"av_offset_ms": true}}}', r"clips\['k'\]\['av_offset_ms'\] must be null or a finite"),
}


@pytest.mark.parametrize("name", sorted(BAD_TRUTH))
def test_a_bad_truth_entry_is_a_value_error_naming_the_file_and_key(name, tmp_path):
    text, match = BAD_TRUTH[name]
    truth = tmp_path / "truth.json"
    truth.write_text(text)
    shard = write_tar(tmp_path / "shard-000000.tar", [("k.align.json", _record())])
    with pytest.raises(ValueError, match=match) as info:
        run_report(shard, out_dir=str(tmp_path / "report"), clip_pages=0, truth_path=str(truth))
    assert str(truth) in str(info.value)
    truth.write_text('{"clips": {"k": {"av_offset_ms": 10, "drift_ppm": null, "note": "other fields are free"}}}')
    result = run_report(shard, out_dir=str(tmp_path / "report"), clip_pages=0, truth_path=str(truth))
    assert result.report["clips"][0]["residual"] == {"av_offset_ms": 2.5, "drift_ppm": None, "text_offset_ms": None}


def test_audio_only_clips_are_not_counted_as_av_abstentions_in_the_summary(tmp_path):
    # praatio's bobby.wav / mary.wav with their TextGrids beside one video: "A/V offset none answered (6 abstained)"
    # while the gate and the plots said 1; the A/V figures are over the clips with video, as the gate's
    audio_only = _record(av_offset_ms=None, video=None, av_method=None)
    shard = write_tar(tmp_path / "shard-000000.tar", [("v.align.json", _record(av_offset_ms=10.0)),
                                                       ("a1.align.json", audio_only), ("a2.align.json", audio_only),
                                                       ("v2.align.json", _record(av_offset_ms=None))])
    summary = run_report(shard, out_dir=str(tmp_path / "report"), clip_pages=0).report["summary"]
    assert (summary["av_offset_ms"]["count"], summary["av_offset_ms"]["null"]) == (1, 1)
    assert summary["drift_ppm"]["null"] == 2 and summary["abstain_reasons"]["av_offset_ms"] == {"unknown": 1}
    assert {k: (s["within"], s["outside"], s["unknown"]) for k, s in summary["standards"].items()} == {
        "bt1359_detectability": (1, 0, 1), "bt1359_acceptability": (1, 0, 1), "ebu_r37": (1, 0, 1)}
    assert summary["gate"]["num_gated"] == 2 and len(summary["gate"]["abstained"]) == 1


def test_report_on_a_directory_measures_the_media_preprocess_measures_with_its_separate_audio(tmp_path):
    # video2dataset's layout as files: clip.mp4 (video only) + clip.m4a + clip.json (WhisperX), and a clip.mkv.
    # Before: the first file by name (clip.m4a) was measured, audio only (no A/V offset, not even an abstention),
    # clip.mkv and clip.mp4 were "duplicate_key"; preprocess measures clip.mp4 with clip.m4a's audio (119.2 ms)
    ffmpeg = shutil.which("ffmpeg") or pytest.skip("ffmpeg not installed")
    source, clips = SAMPLE_DATA / "clip00.mp4", tmp_path / "clips"  # truth: av_offset_ms 120, text_offset_ms 180
    clips.mkdir()
    for args in (["-an", "-c:v", "copy", "clip.mp4"], ["-vn", "-c:a", "copy", "clip.m4a"], ["-c", "copy", "clip.mkv"]):
        subprocess.run([ffmpeg, "-loglevel", "error", "-i", str(source), *args], cwd=clips, check=True)
    shutil.copy(SAMPLE_DATA / "clip00.json", clips / "clip.json")
    result = run_report(str(clips), out_dir=str(tmp_path / "report"), clip_pages=1)
    [row] = result.report["clips"]
    assert row["has_video"] and row["container"]["format"].startswith("mov,mp4")
    assert row["av_offset_ms"] == pytest.approx(120, abs=3) and row["text_offset_ms"] == pytest.approx(180, abs=3)
    assert [(s["key"], s["reason"]) for s in result.report["skipped"]] == [("clip.mkv", "duplicate_key")]
    page = (tmp_path / "report" / row["page"]).read_text()  # its page draws the audio it was measured on
    assert "video-only media" not in page and "lag_curve.png" in page
    # the video given alone, as `avalign preprocess clips/clip.mp4 out/` takes it (with clip.m4a): before, no audio
    [alone] = run_report(str(clips / "clip.mp4"), out_dir=str(tmp_path / "alone"), clip_pages=0).report["clips"]
    assert (alone["av_offset_ms"], alone["text_offset_ms"]) == (row["av_offset_ms"], row["text_offset_ms"])


def test_a_report_written_inside_its_media_directory_is_not_read_as_input_by_the_next_run(tmp_path):
    # `avalign report clips/ --out clips/report`, run twice: the second run read the first one's report.json as a
    # transcript without media (missing_media, a warning) and its PNG/HTML files as 8 stray files: 9 skips
    clips = tmp_path / "clips"
    clips.mkdir()
    tiny_clip(clips / "a.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "a.srt").write_text("1\n00:00:00,100 --> 00:00:00,800\nhello there\n")
    first = run_report(str(clips), out_dir=str(clips / "report"), clip_pages=1).report
    assert first["clips"][0]["page"] and (clips / "report" / "report.json").is_file()
    second = run_report(str(clips), out_dir=str(clips / "report"), clip_pages=1).report
    assert [row["key"] for row in second["clips"]] == ["a"] and second["skipped"] == []
    assert second["clips"][0]["num_words"] == first["clips"][0]["num_words"] == 2


def test_a_rerun_tries_again_the_samples_that_ran_past_the_time_limit(tmp_path):
    # A first run under a too-short --timeout (a loaded machine) skips samples as `timeout`; the rerun with a longer
    # limit reused those shards as complete and wrote nothing ("no sample was written"): only deleting the output
    # helped. A `decode` skip is of the input, and stays.
    clips, out = tmp_path / "clips", str(tmp_path / "out")
    clips.mkdir()
    tiny_clip(clips / "a.mp4", 1.0, fps=10, sample_rate=16000)
    (clips / "b.mp4").write_bytes(b"not a video")
    options = dict(samples_per_shard=1, progress=False)
    first = preprocess(str(clips), out, timeout_seconds=0.001, **options)
    assert first.num_samples == 0 and {json.loads(line)["reason"] for line in open(f"{out}/skipped.jsonl")} == {"timeout"}
    second = preprocess(str(clips), out, timeout_seconds=300, **options)
    assert second.num_samples == 1 and [json.loads(line)["key"] for line in open(f"{out}/manifest.jsonl")] == ["a"]
    assert [json.loads(line)["reason"] for line in open(f"{out}/skipped.jsonl")] == ["decode"]
    third = preprocess(str(clips), out, timeout_seconds=300, **options)
    assert third.shards_written == () and third.shards_reused == ("shard-000000.tar",)


def test_a_report_written_over_an_earlier_one_leaves_none_of_its_pages_or_plots(tmp_path):
    # Before: clips/ kept the pages of clips the new report does not flag (or no longer has), and the residual plot
    # of a run with --truth stayed beside a report without truth: DIR mixed two reports
    out = tmp_path / "report"
    late = _record(av_offset_ms=500.0)  # outside every lip-sync window: flagged, a page each
    first_input = write_tar(tmp_path / "first.tar", [("a.align.json", late), ("b.align.json", late)])
    truth = tmp_path / "truth.json"
    truth.write_text('{"clips": {"a": {"av_offset_ms": 490}}}')
    first = run_report(first_input, out_dir=str(out), truth_path=str(truth)).report
    assert (out / "av_residual_hist.png").is_file() and len(list((out / "clips").glob("*.html"))) == 2
    (out / "notes.txt").write_text("mine")
    (out / "clips" / "mine.html").write_text("mine")
    second_input = write_tar(tmp_path / "second.tar", [("b.align.json", late)])
    second = run_report(second_input, out_dir=str(out)).report
    [page_b] = [row["page"] for row in second["clips"]]
    assert page_b in [row["page"] for row in first["clips"]]
    assert sorted(p.name for p in (out / "clips").iterdir()) == sorted(["mine.html", page_b.split("/")[1]])
    assert not (out / "av_residual_hist.png").exists() and (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.glob("*.png")) == ["av_offset_hist.png", "drift_hist.png", "offset_vs_duration.png",
                                                         "text_offset_hist.png"]


_KILLED_ONCE = ""  # a file: the worker measuring "c" is killed the first time only


def _killing_process_sample(sample, options, config):
    """The pool workers' call (fault injection): the worker dies with SIGKILL, as the OOM killer kills it, on every
    try of sample "b" and on the first of "c"."""
    if sample.key == "b" or (sample.key == "c" and not os.path.exists(_KILLED_ONCE)):
        open(_KILLED_ONCE, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return process_sample(sample, options, config)


def test_a_worker_killed_mid_sample_is_that_samples_skip_not_the_end_of_the_run(tmp_path, monkeypatch):
    # Before: BrokenProcessPool ended the run (exit 1, the "no sample written" code, reason "error") at the first
    # worker the OOM killer took, and the rerun died on the same sample; with no --timeout the worker decodes itself
    global _KILLED_ONCE
    clips = tmp_path / "clips"
    clips.mkdir()
    for key in "abcd":
        tiny_clip(clips / f"{key}.mp4", 1.0, fps=10, sample_rate=16000)
    _KILLED_ONCE = str(tmp_path / "killed")
    monkeypatch.setattr("avalign.preprocess._run.process_sample", _killing_process_sample)  # the pool workers' call
    out = tmp_path / "out"
    result = preprocess(str(clips), str(out), workers=2, samples_per_shard=2, timeout_seconds=None, progress=False)
    assert result.num_samples == 3 and [json.loads(line)["key"] for line in open(out / "manifest.jsonl")] == ["a", "c", "d"]
    [skip] = [json.loads(line) for line in open(out / "skipped.jsonl")]
    assert (skip["key"], skip["reason"]) == ("b", "decode") and "worker process measuring it died" in skip["message"]
    monkeypatch.undo()
    alone = preprocess(str(clips), str(tmp_path / "alone"), samples_per_shard=2, timeout_seconds=None, progress=False)
    with_b = {json.loads(line)["key"] for line in open(tmp_path / "alone" / "manifest.jsonl")}
    assert alone.num_samples == 4 and with_b == {"a", "b", "c", "d"}
    assert (out / "shard-000001.tar").read_bytes() == (tmp_path / "alone" / "shard-000001.tar").read_bytes()  # c, d


def test_a_known_av_offset_for_audio_only_media_is_refused_not_applied_unreported(tmp_path):
    # Before: `avalign measure speech.wav --transcript speech.srt --av-offset-ms 20` moved every word 20 ms earlier
    # (a cue stamped [0.5, 1.0) came out at [0.48, 0.98)) while the record said av_offset_ms null (av_method "given")
    ffmpeg = shutil.which("ffmpeg") or pytest.skip("ffmpeg not installed")
    subprocess.run([ffmpeg, "-loglevel", "error", "-f", "lavfi", "-i", "sine=f=440:r=16000:d=2", str(tmp_path / "s.wav")],
                   check=True)
    (tmp_path / "s.srt").write_text("1\n00:00:00,500 --> 00:00:01,000\nhello there\n")
    with pytest.raises(ValueError, match="has no video stream: a known A/V offset"):
        measure(str(tmp_path / "s.wav"), transcript=str(tmp_path / "s.srt"), av_offset_ms=20.0, text_offset_ms=0.0)
    record = measure(str(tmp_path / "s.wav"), transcript=str(tmp_path / "s.srt"), text_offset_ms=0.0)
    assert record["av_offset_ms"] is None and record["video"] is None
    assert [(s["start_seconds"], s["stop_seconds"]) for s in record["segments"]] == [(0.5, 1.0)]  # the audio's timeline
