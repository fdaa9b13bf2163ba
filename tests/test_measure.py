"""`avalign measure`: the DESIGN schema on sample clips against truth, audio-only input, estimation decode size."""
import json
import subprocess
import sys

import pytest

from avalign import read_video_for_estimation
from conftest import REPO, SAMPLE_DATA, ffmpeg, ffprobe_frame_times, sample_truth


def test_measure_json_schema_and_values(capfd):
    """Through the CLI's parser and command in this process; ``capfd`` takes file descriptor 1 itself, so anything a
    native library printed there would break the JSON as it would a real run's. The console entry point runs in a
    subprocess in test_console_entry_point_runs_measure."""
    truth = sample_truth()["clip00"]
    from avalign.cli import main

    capfd.readouterr()
    assert main(["measure", str(SAMPLE_DATA / truth["media"]), "--transcript", str(SAMPLE_DATA / truth["transcript"]),
                 "--json"]) == 0
    record = json.loads(capfd.readouterr().out)
    for field in ("av_offset_ms", "drift_ppm", "av_confidence", "text_offset_ms", "text_confidence", "video", "audio", "words"):
        assert field in record
    assert record["av_offset_ms"] == pytest.approx(truth["av_offset_ms"], abs=5)
    assert record["text_offset_ms"] == pytest.approx(truth["text_offset_ms"], abs=15)
    assert record["video"]["num_frames"] == truth["num_frames"]
    assert set(record["video"]) >= {"num_frames", "fps_from_header", "fps_from_content", "vfr", "start_seconds"}
    assert set(record["audio"]) >= {"sample_rate", "start_seconds", "num_samples"}
    words = record["words"]
    assert [w["text"] for w in words] == [w["text"] for w in truth["words"]]
    for w, t in zip(words, truth["words"]):
        assert w["start_seconds"] == pytest.approx(t["start_seconds"], abs=0.015)
        assert set(w) >= {"frame_start", "frame_stop", "sample_start", "sample_stop"}


def test_console_entry_point_runs_measure():
    """``python -m avalign measure`` in a new interpreter: the console entry point reaches the measure command and
    its exit code and message (a missing input: before anything heavy is imported)."""
    out = subprocess.run([sys.executable, "-m", "avalign", "measure", "/nonexistent/clip.mp4", "--json"],
                         capture_output=True, text=True, cwd=REPO, timeout=120)
    assert out.returncode == 2, (out.returncode, out.stdout, out.stderr)
    error = json.loads(out.stdout)["error"]  # --json: one JSON document on stdout, failures included
    assert (error["command"], error["file"], error["reason"], error["exit_code"]) == (
        "measure", "/nonexistent/clip.mp4", "not_found", 2)
    assert "not found: '/nonexistent/clip.mp4'" in out.stderr and "hint:" in out.stderr


def _measure_json(capsys, *argv: str) -> dict:
    """``avalign measure ARGV --json`` in this process: the CLI's parser and command, without starting another
    interpreter (the console entry point itself runs in a subprocess in test_console_entry_point_runs_measure)."""
    from avalign.cli import build_parser

    args = build_parser().parse_args(["measure", *argv, "--json"])
    assert args.func(args) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", ["energy", "forced"])
def test_measure_text_method(method, capsys):
    pytest.importorskip("pocketsphinx")
    truth = sample_truth()["clip03"]  # TextGrid with word times
    record = _measure_json(capsys, str(SAMPLE_DATA / truth["media"]), "--transcript", str(SAMPLE_DATA / truth["transcript"]),
                           "--text-method", method)
    assert record["text_method"].startswith("forced_words" if method == "forced" else "word_onsets+activity")
    assert record["text_offset_ms"] == pytest.approx(truth["text_offset_ms"], abs=15)


def test_measure_audio_only_has_null_av_fields(tmp_path, capsys):
    truth = sample_truth()["clip00"]
    m4a = tmp_path / "speech.m4a"
    ffmpeg("-i", str(SAMPLE_DATA / truth["media"]), "-vn", "-c:a", "copy", str(m4a))
    record = _measure_json(capsys, str(m4a), "--transcript", str(SAMPLE_DATA / truth["transcript"]))
    assert record["av_offset_ms"] is None and record["video"] is None
    assert record["av_abstain"]["reason"] == "no_video_stream"
    assert record["av_abstain"]["needed"] == "a video stream"  # was "an video stream"
    assert all(w["frame_start"] is None for w in record["words"]) and record["words"]


def test_measure_video_only_keeps_the_frames_and_nulls_the_offsets(tmp_path, capsys):
    """Video-only media are measured like the loader loads them: every frame at ffprobe's time, offsets null
    (nothing to measure against), the caption's segments on frames, their sample ranges null."""
    truth = sample_truth()["clip00"]
    mp4 = tmp_path / "silent.mp4"
    ffmpeg("-i", str(SAMPLE_DATA / truth["media"]), "-an", "-c:v", "copy", str(mp4))
    record = _measure_json(capsys, str(mp4), "--transcript", str(SAMPLE_DATA / truth["transcript"]))
    times = ffprobe_frame_times(mp4)
    assert record["video"]["num_frames"] == len(times)
    assert record["video"]["start_seconds"] == pytest.approx(times[0], abs=1e-6)
    assert record["av_offset_ms"] is None and record["text_offset_ms"] is None and record["drift_ppm"] is None
    assert record["audio"]["num_samples"] == 0 and record["decode_errors"] == 0
    assert record["av_abstain"]["reason"] == record["text_abstain"]["reason"] == "no_audio_stream"
    assert record["segments"] and all(s["sample_start"] is None and s["frame_start"] is not None
                                      for s in record["segments"])


def test_estimation_decode_is_small_and_keeps_times(tmp_path):
    clip = tmp_path / "wide.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=640x360:rate=25", "-t", "1", "-c:v", "libx264", str(clip))
    small, index = read_video_for_estimation(clip, name="wide.mp4")
    assert small.frames.shape[1:] == (36, 64, 3)  # ESTIMATION_MAX_WIDTH, aspect kept
    assert small.metadata.width == 640  # metadata describes the stream, not the scaled frames
    assert small.pts_seconds.tolist() == index.pts_seconds.tolist()
