"""A fresh-eyes user's defects (round 37): each test runs what the user ran and checks the output against an oracle
(the names the test gave its files, the bytes it wrote, the truth file it wrote and the report's own rows)."""
from __future__ import annotations

import io
import json
import re
import shutil
import tarfile
from pathlib import Path

from tests.conftest import REPO, ffmpeg

SAMPLE = REPO / "sample_data"

# ---------------------------------------------------------------- 1. a file that is not a tar, given as a shard


def test_a_shard_that_is_not_a_tar_is_named_so(tmp_path, caplog):
    """Before: a media file (or an empty download) passed as a shard was reported as "tar stream ended early or is
    corrupt after member '': bad checksum", as "sample '' dropped": as if a tar had been cut short after a member
    named ''. Now: "not a tar archive", no empty sample name. A tar really cut short keeps naming the member it
    was reading (oracle: the name of the member the test cut)."""
    from loaders.shards import tar_members

    mkv = tmp_path / "clip-000.tar"
    shutil.copy(SAMPLE / "clip01.mkv", mkv)
    empty = tmp_path / "empty-000.tar"
    empty.write_bytes(b"")
    for path, why in ((mkv, "bad checksum"), (empty, "empty file")):
        members = list(tar_members(str(path)))
        assert [(m.name, m.problem) for m in members] == [("", "truncated")], members
        assert members[0].message.startswith("not a tar archive: its start is no tar header"), members[0].message
        assert why in members[0].message
        assert "after member" not in members[0].message

    # A real tar cut inside its second member: the message names the member being read (the oracle: "b.txt").
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, size in (("a.txt", 600), ("b.txt", 5000)):
            info = tarfile.TarInfo(name)
            info.size = size
            tar.addfile(info, io.BytesIO(b"x" * size))
    cut = tmp_path / "cut-000.tar"
    cut.write_bytes(buf.getvalue()[:3000])
    members = list(tar_members(str(cut)))
    assert [m.name for m in members] == ["a.txt", "b.txt"]
    assert members[1].problem == "truncated" and "not a tar archive" not in members[1].message

    # What the user sees from preprocess: skipped.jsonl says "dropped", not "sample '' dropped".
    from avalign.cli import main

    out = tmp_path / "out"
    assert main(["preprocess", str(mkv), str(out), "--no-progress"]) == 1  # nothing written: exit 1 (--help)
    rows = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [(r["key"], r["reason"]) for r in rows] == [("", "truncated")]
    assert rows[0]["message"].startswith(f"{mkv}: dropped (truncated): not a tar archive"), rows[0]["message"]
    assert "sample ''" not in rows[0]["message"]


# ---------------------------------------------------------------- 2. non-ASCII file names in a media directory


def test_preprocess_keeps_non_ascii_names_as_keys(tmp_path, capsys):
    """Before: every character outside A-Z a-z 0-9 _ - became "_", so 日本.mkv and 中国.mkv were both key "__": the
    second was skipped as duplicate_key (a directory of CJK-named clips lost all but one). Now the key is the
    stem with letters of any script kept (NFC, so a macOS NFD "é" is one letter); dots and spaces still become
    "_". Oracle: the stems the test gave, and the word counts of the transcripts it wrote; the loader reads the
    samples back under those keys."""
    import loaders
    from avalign.cli import main

    clips = tmp_path / "clips"
    clips.mkdir()
    names = {"日本": ("clip01.mkv", "clip01.srt"), "中国": ("clip05.mp4", "clip05.srt"),
             "cafe\u0301 talk": ("clip02.webm", "clip02.vtt")}  # NFD é, a space
    for stem, (media, transcript) in names.items():
        shutil.copy(SAMPLE / media, clips / f"{stem}.{media.rsplit('.', 1)[1]}")
        shutil.copy(SAMPLE / transcript, clips / f"{stem}.{transcript.rsplit('.', 1)[1]}")
    out = tmp_path / "out"
    assert main(["preprocess", str(clips), str(out), "--no-progress"]) == 0
    capsys.readouterr()
    manifest = {r["key"]: r for r in map(json.loads, (out / "manifest.jsonl").read_text().splitlines())}
    assert sorted(manifest) == sorted(["日本", "中国", "caf\u00e9_talk"])
    assert (out / "skipped.jsonl").read_text() == ""

    def words(path: Path) -> int:  # the cue text words of an SRT / WebVTT file, counted here
        lines = [line for line in path.read_text().splitlines()
                 if line.strip() and "-->" not in line and not line.strip().isdigit() and line.strip() != "WEBVTT"]
        return sum(len(re.findall(r"[\w'$%:,.-]+", line)) for line in lines)

    assert manifest["日本"]["num_words"] == words(SAMPLE / "clip01.srt")
    assert manifest["中国"]["num_words"] == words(SAMPLE / "clip05.srt")
    assert manifest["caf\u00e9_talk"]["num_words"] == words(SAMPLE / "clip02.vtt")

    loader = loaders.make_loader(str(out / "shard-000000.tar"), seed=0, window_seconds=2.0, frame_size=(32, 32))
    keys = {key.split("@")[0] for batch in loader for key in batch.sample_keys}
    assert keys == set(manifest)
    assert loader.stats.skipped == {}


# ---------------------------------------------------------------- 3. report --truth: the text residual on the terminal


def test_report_terminal_prints_the_text_residual_the_truth_gives(tmp_path):
    """Before: with ``--truth`` giving ``text_offset_ms``, report.json had the text residuals but the terminal
    summary printed the A/V residual only. Oracle: a truth file written here (each clip's true text offset 10 ms
    below what the report measured, so every residual is +10 ms, and A/V ones -5 ms)."""
    from avalign.report import run_report

    first = run_report(str(SAMPLE / "shards" / "shard-000000.tar"), out_dir=str(tmp_path / "r1"), clip_pages=0)
    rows = first.report["clips"]
    truth = {"clips": {}}
    for row in rows:
        entry = {}
        if row["av_offset_ms"] is not None:
            entry["av_offset_ms"] = row["av_offset_ms"] + 5.0
        if row["text_offset_ms"] is not None:
            entry["text_offset_ms"] = row["text_offset_ms"] - 10.0
        truth["clips"][row["key"]] = entry
    n_text = sum("text_offset_ms" in e for e in truth["clips"].values())
    n_av = sum("av_offset_ms" in e for e in truth["clips"].values())
    assert n_text >= 1 and n_av >= 1, rows
    truth_path = tmp_path / "truth.json"
    truth_path.write_text(json.dumps(truth))

    result = run_report(str(SAMPLE / "shards" / "shard-000000.tar"), out_dir=str(tmp_path / "r2"), clip_pages=0,
                        truth_path=str(truth_path))
    lines = result.terminal_summary.splitlines()
    text_line = [line for line in lines if line.startswith("vs truth    text residual")]
    av_line = [line for line in lines if line.startswith("vs truth    A/V residual")]
    assert len(text_line) == 1, result.terminal_summary
    assert len(av_line) == 1, result.terminal_summary
    median = float(re.search(r"median (-?[\d.]+) ms", text_line[0]).group(1))
    assert abs(median - 10.0) < 2e-3, text_line
    assert f"({n_text} clips," in text_line[0]
    assert abs(float(re.search(r"median (-?[\d.]+) ms", av_line[0]).group(1)) + 5.0) < 2e-3, av_line
    assert not any(line.startswith("vs truth    drift") for line in lines)  # no drift truth: no drift line


# ---------------------------------------------------------------- 4. whisper.cpp and Hugging Face pipeline JSON


def _srt_cues(path: Path) -> list[tuple[float, float, str]]:
    """(start, stop, text) of each cue of an SRT file, parsed here (the oracle for the JSON layouts below)."""
    def seconds(stamp: str) -> float:
        h, m, s = stamp.replace(",", ".").split(":")
        return int(h) * 3600 + int(m) * 60 + float(s)

    cues = []
    for block in path.read_text().strip().split("\n\n"):
        lines = block.splitlines()
        start, stop = lines[1].split(" --> ")
        cues.append((seconds(start), seconds(stop), " ".join(lines[2:])))
    return cues


def _whisper_cpp(cues) -> dict:
    def stamp(t: float) -> str:
        ms = round(t * 1000)
        return f"{ms // 3_600_000:02d}:{ms // 60_000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
    return {"systeminfo": "AVX = 1", "model": {"type": "base"}, "params": {"model": "ggml-base.en.bin"},
            "result": {"language": "en"},
            "transcription": [{"timestamps": {"from": stamp(a), "to": stamp(b)},
                               "offsets": {"from": round(a * 1000), "to": round(b * 1000)}, "text": f" {t}"}
                              for a, b, t in cues]}


def _hf_chunks(cues) -> dict:
    return {"text": " ".join(t for _, _, t in cues), "chunks": [{"timestamp": [a, b], "text": f" {t}"} for a, b, t in cues]}


def test_whisper_cpp_and_hf_pipeline_json_are_read_as_transcripts(tmp_path):
    """Before: whisper.cpp's ``-oj`` JSON and the Hugging Face ASR pipeline's ``{"text", "chunks"}`` were not
    transcripts to ``is_transcript_json``, so a ``KEY.json`` in either layout was taken for video2dataset metadata
    and the sample trained with no words, with no warning (``read_transcript`` refused them: "segments: missing").
    Oracle: the cues of the SRT each JSON was written from, and the words the loader yields for the SRT itself."""
    import loaders
    from loaders.transcripts import is_transcript_json

    cues = _srt_cues(SAMPLE / "clip05.srt")
    layouts = {"cpp": _whisper_cpp(cues), "hf": _hf_chunks(cues)}
    for label, document in layouts.items():
        path = tmp_path / f"{label}.json"
        path.write_text(json.dumps(document))
        assert is_transcript_json(path.read_bytes()), label
        spans = loaders.read_transcript(str(path)).spans
        assert [(round(s.start_seconds, 3), round(s.stop_seconds, 3), s.text) for s in spans] == \
               [(round(a, 3), round(b, 3), t) for a, b, t in cues], label
    # whisper.cpp without "offsets": its "timestamps" strings are enough.
    only_stamps = _whisper_cpp(cues)
    for item in only_stamps["transcription"]:
        del item["offsets"]
    assert [s.start_seconds for s in loaders.read_transcript(json.dumps(only_stamps).encode(), format="json").spans] \
        == [round(a, 3) for a, _, _ in cues]
    # The HF pipeline's open last chunk is refused by name, not read as a zero-length or endless cue.
    open_end = _hf_chunks(cues)
    open_end["chunks"][-1]["timestamp"][1] = None
    try:
        loaders.read_transcript(json.dumps(open_end).encode(), format="json")
        raise AssertionError("an open last chunk was read")
    except loaders.TranscriptError as e:
        assert "chunks[1].timestamp: end is null" in str(e), e
    assert not is_transcript_json(json.dumps({"url": "http://x/a.mp4", "caption": "a dog", "status": "success"}))

    # In shards: the same words reach the batch from KEY.json (either layout) as from KEY.srt.
    def shard(path: Path, ext: str, data: bytes) -> str:
        with tarfile.open(path, "w") as tar:
            for name, blob in (("a.mp4", (SAMPLE / "clip05.mp4").read_bytes()), (f"a.{ext}", data)):
                info = tarfile.TarInfo(name)
                info.size = len(blob)
                tar.addfile(info, io.BytesIO(blob))
        return str(path)

    def words(url: str) -> list[str]:
        loader = loaders.make_loader(url, seed=0, window_seconds=2.0, frame_size=(32, 32))
        found = [w for batch in loader for w in batch.word_texts]
        assert loader.stats.skipped == {}
        return sorted(found)  # a word across a window boundary is in both windows: compared as a multiset

    expected = words(shard(tmp_path / "srt.tar", "srt", (SAMPLE / "clip05.srt").read_bytes()))
    assert set(expected) == {w for _, _, t in cues for w in t.split()}  # forced words as written ("Jack")
    for label, document in layouts.items():
        assert words(shard(tmp_path / f"{label}.tar", "json", json.dumps(document).encode())) == expected, label


# ---------------------------------------------------------------- 5. two media files with one stem


def test_a_second_media_file_of_one_stem_is_listed_in_skipped_jsonl(tmp_path, capsys):
    """Before: ``talk.mp4`` and ``talk.mov`` in one directory gave one sample (the mp4) and a log line; the mov
    was in neither manifest.jsonl nor skipped.jsonl, so the output's lists did not account for every input file.
    Oracle: the files the test wrote (every media file is in the manifest or in skipped.jsonl, once); a video's
    ``KEY.wav`` companion (video2dataset's separate audio) is passed through, not listed as skipped."""
    from avalign.cli import main

    clips = tmp_path / "clips"
    clips.mkdir()
    shutil.copy(SAMPLE / "clip05.mp4", clips / "talk.mp4")
    shutil.copy(SAMPLE / "clip03.mov", clips / "talk.mov")
    shutil.copy(SAMPLE / "clip05.srt", clips / "talk.srt")
    shutil.copy(SAMPLE / "clip01.mkv", clips / "solo.mkv")
    ffmpeg("-i", str(SAMPLE / "clip01.mkv"), "-vn", "-c:a", "pcm_s16le", str(clips / "solo.wav"))
    out = tmp_path / "out"
    assert main(["preprocess", str(clips), str(out), "--no-progress"]) == 0
    capsys.readouterr()
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    skipped = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert sorted(r["source"] for r in manifest) == sorted([str(clips / "talk.mp4"), str(clips / "solo.mkv")])
    assert [(r["input"], r["key"], r["reason"]) for r in skipped] == [(str(clips / "talk.mov"), "talk", "duplicate_key")]
    assert "its mp4 is measured, this mov is not in the output" in skipped[0]["message"]
    with tarfile.open(out / "shard-000000.tar") as tar:
        assert "solo.wav" in tar.getnames()  # the video's audio companion: carried, not skipped
    # A rerun reuses the shard and lists the same skip (the plan is the same).
    assert main(["preprocess", str(clips), str(out), "--no-progress"]) == 0
    assert "0 written, 1 reused" in capsys.readouterr().out
    assert [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()] == skipped


# ---------------------------------------------------------------- 6. a quoted glob


def test_a_quoted_glob_is_said_to_be_unexpanded(tmp_path, capsys):
    """Before: ``avalign preprocess 'shards/train-*.tar' out/`` (quoted, as the README quotes brace patterns) said
    only "input not found", while ``make_loader`` says "a glob ... is not expanded". Oracle: the shards exist (the
    glob would match them), so "not found" alone is misleading; the brace pattern for the same files works."""
    from avalign.cli import main

    shards = tmp_path / "shards"
    shards.mkdir()
    for name in ("shard-000000.tar", "shard-000001.tar"):
        shutil.copy(SAMPLE / "shards" / name, shards / f"train-{name[6:]}")
    note = "(a glob is not expanded: give the directory that holds the files, or a brace pattern)"
    assert main(["preprocess", str(shards / "train-*.tar"), str(tmp_path / "out"), "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["reason"] == "not_found" and note in error["message"]
    assert main(["report", str(shards / "train-*.tar"), "--out", str(tmp_path / "rep")]) == 2
    assert note in capsys.readouterr().err
    assert main(["measure", str(shards / "*.mkv"), "--json"]) == 2
    assert "(a glob is not expanded: give one file)" in json.loads(capsys.readouterr().out)["error"]["message"]
    assert main(["preprocess", str(shards / "train-{000000..000001}.tar"), str(tmp_path / "out"), "--dry-run"]) == 0
    assert "6 sample(s)" in capsys.readouterr().out
