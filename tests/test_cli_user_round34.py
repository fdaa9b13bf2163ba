"""A fresh-eyes user's CLI defects (round 34): each test runs the command as a user would and checks its output
against an oracle (ffprobe, the files the test wrote, sample_data/truth.json)."""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import tarfile

import pytest

from avalign import count_words
from avalign.cli import main
from loaders import read_transcript
from tests.conftest import SAMPLE_DATA, ffmpeg, sample_truth, tiny_clip

SRT = "1\n00:00:00,200 --> 00:00:00,900\nhello there\n\n2\n00:00:01,000 --> 00:00:01,800\nhow are you\n"


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _srt_words(text: str) -> int:
    """Words of an SRT's cue text (the oracle: lines that are neither a cue number, a timing nor blank)."""
    return sum(len(line.split()) for line in text.splitlines()
               if line.strip() and not line.strip().isdigit() and "-->" not in line)


def _members(shard) -> dict[str, bytes]:
    with tarfile.open(shard) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def _rows(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------- 1. preprocess given one media file


def test_preprocess_takes_one_media_file_with_its_sidecar(tmp_path, capsys):
    """Before: `avalign preprocess clip.mp4 out/` read the .mp4 as a tar and skipped it as a corrupt shard (exit 1).
    A media file is now one sample with its same-stem transcript; other clips beside it are not read."""
    clips = tmp_path / "clips"
    clips.mkdir()
    media = tiny_clip(clips / "talk.mp4", 2.0, fps=25, sample_rate=16000)
    (clips / "talk.srt").write_text(SRT)
    tiny_clip(clips / "other.mp4", 1.0, fps=25, sample_rate=16000)
    out = tmp_path / "out"
    code, stdout, err = _run(capsys, "preprocess", str(clips / "talk.mp4"), str(out), "--no-progress")
    assert code == 0, err
    assert "truncated" not in err and "corrupt" not in err
    rows = _rows(out / "manifest.jsonl")
    assert [(r["key"], r["source"], r["num_words"]) for r in rows] == [("talk", str(clips / "talk.mp4"), _srt_words(SRT))]
    members = _members(out / "shard-000000.tar")
    assert set(members) == {"talk.mp4", "talk.align.json", "talk.frames.json", "talk.transcript.json"}
    assert members["talk.mp4"] == media  # the bytes of the file given, kept as they are
    record = json.loads(members["talk.align.json"])
    assert record["video"]["num_frames"] == 50 and [s["text"] for s in record["segments"]] == ["hello there", "how are you"]


def test_preprocess_refuses_a_transcript_alone_and_says_what_it_takes(tmp_path, capsys):
    srt = tmp_path / "talk.srt"
    srt.write_text(SRT)
    code, _, err = _run(capsys, "preprocess", str(srt), str(tmp_path / "out"), "--no-progress")
    assert code == 2
    assert f"input {str(srt)!r} is a transcript or caption file, not media" in err
    assert "give the media file" in err and "truncated" not in err


# ---------------------------------------------------------------- 2. preprocess on an empty directory


def test_preprocess_empty_directory_says_no_samples_found(tmp_path, capsys):
    """Before: "nothing processed: all 0.0 s of media reused from an earlier run" and "no sample was written
    (0 input(s) skipped …)". Exit 1 as documented ("1 no sample written (empty input …)")."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, stdout, err = _run(capsys, "preprocess", str(empty), str(tmp_path / "out"), "--no-progress")
    assert code == 1
    assert f"avalign preprocess: error: no samples found in {str(empty)!r}" in err
    assert "reused" not in stdout + err and "skipped.jsonl" not in err and "0/0" not in err
    code, stdout, err = _run(capsys, "preprocess", str(empty), str(tmp_path / "out2"), "--json", "--no-progress")
    assert code == 1
    error = json.loads(stdout)["error"]
    assert (error["reason"], error["file"], error["exit_code"]) == ("no_sample", str(empty), 1)
    assert error["message"].startswith(f"no samples found in {str(empty)!r}") and error["message"] in err


# ---------------------------------------------------------------- 3. measure's not-found hint


def _measure_options(capsys) -> set[str]:
    """The options `avalign measure --help` lists (the oracle of what a hint may name)."""
    with pytest.raises(SystemExit):
        main(["measure", "--help"])
    return set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", capsys.readouterr().out))


def test_measure_hints_suggest_only_what_measure_takes(tmp_path, capsys):
    """Before: a missing file got "hint: give a media directory, a media file, a .tar shard or a brace pattern",
    and a directory "cannot open DIR: [Errno 21] …"; measure takes one video or audio file."""
    missing = tmp_path / "nope.mp4"
    code, _, err = _run(capsys, "measure", str(missing))
    assert code == 2 and f"media file not found: {str(missing)!r}" in err
    hint = err.split("hint:", 1)[1]
    assert "video or audio file" in hint
    assert not re.search(r"director|\.tar|shard|pattern", hint), hint
    code, _, err = _run(capsys, "measure", str(tmp_path))
    assert code == 2 and f"media file {str(tmp_path)!r} is a directory" in err and "Errno" not in err
    assert "`avalign report INPUT --out DIR`" in err  # the commands that take a directory, named as such
    (tmp_path / "clip.mp4").write_bytes(b"")  # exists: the transcript is checked next
    code, _, err = _run(capsys, "measure", str(tmp_path / "clip.mp4"), "--transcript", str(tmp_path / "no.srt"))
    assert code == 2 and "transcript not found" in err and ".tar" not in err and "director" not in err


# ---------------------------------------------------------------- 4. transcript hints name real CLI options


def test_text_hints_name_only_options_measure_has(tmp_path, capsys):
    """Before: "pass text_offset_ms if the transcript's timing is known", "use text_method='forced'": Python names
    a CLI user cannot type. Every `--flag` a hint names is one of measure's; Python names appear only inside
    `align(...)`."""
    clip = tmp_path / "tone.mp4"
    tiny_clip(clip, 2.0, fps=25, sample_rate=16000)
    srt = tmp_path / "tone.srt"
    srt.write_text(SRT)
    code, out, _ = _run(capsys, "measure", str(clip), "--transcript", str(srt), "--text-method", "energy", "--json")
    assert code == 0
    why = json.loads(out)["text_abstain"]
    assert why is not None and why["reason"] == "no_speech_contrast"  # a steady tone: no pauses to find
    hint = why["hint"]
    flags = set(re.findall(r"--[a-z][a-z-]*", hint))
    options = _measure_options(capsys)
    assert {"--av-offset-ms", "--text-method", "--max-offset-ms"} <= options
    assert flags and flags <= options, (flags, hint)
    assert "--text-offset-ms" in options and "--text-offset-ms" in hint  # since left67 (tests/test_left67_leftovers.py)
    outside_python = re.sub(r"`align\([^`]*\)`", "", hint)
    assert not re.search(r"text_offset_ms|text_method|max_offset_ms", outside_python), hint
    assert "`align(text_offset_ms=...)`" in hint


# ---------------------------------------------------------------- 5. drift and empty transcripts say why


def test_drift_abstention_says_why_in_the_table(capsys):
    """Before: "drift       n/a (abstained)" with no reason while the A/V offset answered. clip00's flashes
    (truth.json) span less than the drift fit's minimum span, so no drift line is fitted."""
    from aligner import AVOptions

    truth = sample_truth()["clip00"]
    flashes = truth["flash_pts_seconds"]
    assert flashes[-1] - flashes[0] < AVOptions().min_drift_span_seconds
    code, out, _ = _run(capsys, "measure", str(SAMPLE_DATA / truth["media"]), "--json")
    record = json.loads(out)
    assert record["av_offset_ms"] == pytest.approx(truth["av_offset_ms"], abs=5) and record["av_abstain"] is None
    assert record["drift_ppm"] is None and record["av_method"] == "event_match"
    code, out, _ = _run(capsys, "measure", str(SAMPLE_DATA / truth["media"]))
    assert code == 0
    drift = next(line for line in out.splitlines() if line.startswith("drift"))
    assert drift.startswith("drift       n/a (abstained: too_few_matched_events: ")
    assert f"spread over at least {AVOptions().min_drift_span_seconds:g} s" in drift and "0 ppm applied" in drift
    code, out, _ = _run(capsys, "measure", str(SAMPLE_DATA / truth["media"]), "--av-offset-ms", "120")
    drift = next(line for line in out.splitlines() if line.startswith("drift"))
    assert drift == "drift       n/a (not estimated: the A/V offset was given; 0 ppm applied)"


def test_empty_srt_abstains_with_a_reason(tmp_path, capsys):
    """Before: an empty SRT gave text_offset_ms null with text_abstain null and text_method "none"."""
    clip = tmp_path / "clip.mp4"
    tiny_clip(clip, 1.0, fps=25, sample_rate=16000)
    empty = tmp_path / "empty.srt"
    empty.write_bytes(b"")
    code, out, _ = _run(capsys, "measure", str(clip), "--transcript", str(empty), "--json")
    assert code == 0
    record = json.loads(out)
    assert record["text_offset_ms"] is None and record["text_method"] == "abstain:empty_transcript"
    why = record["text_abstain"]
    assert set(why) == {"reason", "found", "needed", "best_guess_ms", "hint"}
    assert why["reason"] == "empty_transcript" and why["best_guess_ms"] is None and why["found"] and why["hint"]
    code, out, _ = _run(capsys, "measure", str(clip), "--transcript", str(empty))
    assert f"why       empty_transcript: found {why['found']}" in out


# ---------------------------------------------------------------- 6. video without audio


def test_video_only_measure_says_there_is_no_audio_stream(tmp_path, capsys):
    """Before: "audio       16000 Hz, first sample at 0.0 s, 0 samples" (the placeholder track's values)."""
    clip = tmp_path / "silent.mp4"
    tiny_clip(clip, 1.0, fps=25, sample_rate=None)
    probe = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(clip)],
                           capture_output=True, text=True, check=True)
    assert [s["codec_type"] for s in json.loads(probe.stdout)["streams"]] == ["video"]  # the oracle: no audio stream
    code, out, _ = _run(capsys, "measure", str(clip))
    assert code == 0
    audio_line = next(line for line in out.splitlines() if line.startswith("audio"))
    assert audio_line == "audio       none (video-only: the media has no audio stream)"
    assert "Hz" not in out
    # No Python None in the table (the probe round: "confidence None", sample ranges "[None,None)").
    srt = tmp_path / "silent.srt"
    srt.write_text("1\n00:00:00,200 --> 00:00:00,800\nhello world\n")
    code, table, _ = _run(capsys, "measure", str(clip), "--transcript", str(srt))
    assert code == 0 and "None" not in out + table, out + table
    assert "confidence n/a" in table and "no audio to align them to" in table
    code, out, _ = _run(capsys, "measure", str(clip), "--json")
    record = json.loads(out)
    assert record["audio"]["sample_rate"] is None and record["audio"]["start_seconds"] is None
    assert record["audio"]["num_samples"] == 0 and record["av_abstain"]["reason"] == "no_audio_stream"


# ---------------------------------------------------------------- 7. decode errors name the file


@pytest.mark.parametrize("case", ["zero_bytes", "random_bytes", "text_named_mp4"])
def test_decode_errors_name_the_file_not_an_errno(tmp_path, capsys, case):
    """Before: "cannot open X: [Errno 1094995529] Invalid data found when processing input: '<none>'" (preprocess
    reads bytes, so FFmpeg's file name was '<none>'); measure showed the raw errno too."""
    content = {"zero_bytes": b"", "random_bytes": bytes(range(256)) * 20, "text_named_mp4": b"hello world\n"}[case]
    clips = tmp_path / "clips"
    clips.mkdir()
    bad = clips / "bad.mp4"
    bad.write_bytes(content)
    code, _, err = _run(capsys, "measure", str(bad))
    assert code == 2
    assert f"avalign measure: error: cannot open {bad}: " in err
    assert "Errno" not in err and "<none>" not in err
    if case == "zero_bytes":
        assert "empty (0 bytes)" in err
    else:
        assert "not audio or video that FFmpeg can read" in err
    out = tmp_path / "out"
    code, _, err = _run(capsys, "preprocess", str(clips), str(out), "--no-progress")
    assert code == 1
    (row,) = _rows(out / "skipped.jsonl")
    assert (row["input"], row["key"], row["reason"]) == (str(bad), "bad", "decode")
    assert row["message"].startswith(f"cannot open {bad}: ")
    assert "Errno" not in row["message"] and "<none>" not in row["message"]


# ---------------------------------------------------------------- 8. manifest num_words vs align.json words


def test_manifest_num_words_counts_the_transcripts_words(tmp_path, capsys):
    """clip05's SRT has two captions; its first is replaced by words the audio does not say, so forced alignment
    splits the second into words and keeps the first as a segment (caption_words_failed). The manifest counts the
    transcript's words (the SRT's 7), align.json lists the words it placed; documented relation
    (``avalign.count_words``): num_words = len(words) + the words of the segments holding no word. Before: the
    transcript.json preprocess wrote counted only its placed words, so `report` on the output disagreed with the
    manifest."""
    pytest.importorskip("pocketsphinx")
    clips = tmp_path / "clips"
    clips.mkdir()
    shutil.copy(SAMPLE_DATA / "clip05.mp4", clips / "clip05.mp4")
    srt = (SAMPLE_DATA / "clip05.srt").read_text()
    assert "Jack found golden keys" in srt
    (clips / "clip05.srt").write_text(srt.replace("Jack found golden keys", "zebra xylophone quantum yacht"))
    srt_words = _srt_words((clips / "clip05.srt").read_text())
    out = tmp_path / "out"
    code, _, err = _run(capsys, "preprocess", str(clips), str(out), "--no-progress")
    assert code == 0, err
    (row,) = _rows(out / "manifest.jsonl")
    assert row["num_words"] == srt_words == 7
    members = _members(out / "shard-000000.tar")
    record = json.loads(members["clip05.align.json"])
    words = record["words"]
    assert 0 < len(words) < srt_words and record["caption_words_failed"] >= 1  # the case: one caption not split
    unsplit = [s for s in record["segments"]
               if not any(s["start_seconds"] <= w["start_seconds"] < s["stop_seconds"] for w in words)]
    assert len(unsplit) == record["caption_words_failed"] and record["aligned"]["spans_outside"] == 0
    assert row["num_words"] == len(words) + sum(len(s["text"].split()) for s in unsplit)
    stored = read_transcript(io.BytesIO(members["clip05.transcript.json"]).read(), name="clip05.transcript.json")
    assert len(stored.words) == len(words)  # the placed caption words are stored
    assert count_words(stored) == row["num_words"]  # and counted as the manifest counts them (report's total)


def test_preprocess_of_a_truncated_file_says_every_input_was_skipped(tmp_path, capsys):
    """The probe round: one MP4 cut after its index (faststart) given to preprocess. Before: "hint: INPUT must hold
    media files with audio", which it does. The skip carries the truncation message, under reason decode."""
    full = tmp_path / "full.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "2",
           "-c:v", "libx264", "-c:a", "aac", "-ac", "1", "-movflags", "+faststart", str(full))
    data = full.read_bytes()
    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "cut.mp4").write_bytes(data[: len(data) // 2])
    code, _, err = _run(capsys, "preprocess", str(clips / "cut.mp4"), str(tmp_path / "out"), "--no-progress")
    assert code == 1
    assert "every input was skipped" in err and "with audio" not in err, err
    (row,) = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert row["key"] == "cut" and row["reason"] == "decode" and f"but it holds {len(data) // 2:,} bytes" in row["message"]
