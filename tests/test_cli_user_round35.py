"""A fresh-eyes user's defects (round 35): each test runs what the user ran and checks the output against an oracle
(the bytes the test damaged, the files it wrote, ffprobe, ``loaders.errors.REASONS``)."""
from __future__ import annotations

import random
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import encode_once

# ---------------------------------------------------------------- 1. decord's own FFmpeg log lines on stderr


def _damaged_clip(path) -> None:
    """A 2 s H.264 MP4 whose bytes from 30 % of the file on are 2,000 seeded random bytes: the container (and its
    ``moov`` at the end) is intact, the packets there are garbage, so every decoder complains about them."""
    data = bytearray(encode_once(path, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=30", "-t", "2", "-c:v", "libx264",
                                 "-threads", "1", "-g", "15"))
    rng = random.Random(35)
    at = int(len(data) * 0.3)
    data[at:at + 2000] = bytes(rng.randrange(256) for _ in range(2000))
    path.write_bytes(bytes(data))


def test_decord_reads_of_a_damaged_file_print_no_ffmpeg_log_lines(tmp_path):
    """Before: decord links its own FFmpeg, whose default log callback printed "[h264 @ 0x...] Invalid NAL unit
    size ..." straight to the user's stderr (PyAV and torchcodec keep FFmpeg quiet). The read must still fail with a
    DecodeError naming the file, both as ``backend="decord"`` and as ``auto``'s decord fallback (forced here by making
    torchcodec, which refuses these packets, the first choice)."""
    path = tmp_path / "damaged.mp4"
    _damaged_clip(path)
    script = textwrap.dedent(f"""
        import loaders
        from loaders.media import AUTO_BACKEND
        AUTO_BACKEND["full"] = "torchcodec"
        for backend in ("decord", "auto"):
            try:
                loaders.read_video({str(path)!r}, backend=backend)
                print(backend, "decoded")
            except loaders.DecodeError as e:
                print(backend, "DecodeError", e)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert [line.split(" ", 2)[:2] for line in lines] == [["decord", "DecodeError"], ["auto", "DecodeError"]], proc.stdout
    assert all(str(path) in line for line in lines), proc.stdout
    assert "decord decode failed: Check failed" in lines[0]  # decord's message, without dmlc's "[hh:mm:ss] src/..:N:"
    assert "/github/workspace" not in lines[0]
    assert [line for line in proc.stderr.splitlines() if line.startswith("[")] == [], proc.stderr


# ---------------------------------------------------------------- 2. preprocess: no shard file without samples


def test_preprocess_writes_no_empty_shard_and_resumes_without_redoing(tmp_path, capsys):
    """Before: a shard whose every sample was skipped (here: one MP4 cut after its ``moov``) was written as a tar
    holding no member. Now there is no shard file; the summary, ``--json`` and skipped.jsonl name the skip, and a
    rerun neither crashes nor measures the sample again (state.jsonl is not appended to)."""
    import json

    from avalign.cli import main

    clips = tmp_path / "clips"
    clips.mkdir()
    whole = encode_once(clips / "cut.mp4", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=30", "-f", "lavfi", "-i",
                        "sine=f=440:r=16000", "-t", "2", "-c:v", "libx264", "-g", "15", "-c:a", "aac", "-ac", "1",
                        "-movflags", "+faststart")
    (clips / "cut.mp4").write_bytes(whole[: len(whole) // 2])  # moov first: the cut loses half of mdat
    out = tmp_path / "out"
    code = main(["preprocess", str(clips), str(out), "--no-progress", "--json"])
    stdout, err = capsys.readouterr()
    document = json.loads(stdout)
    assert code == 1 and document["error"]["reason"] == "no_sample"
    assert sorted(p.name for p in out.glob("*.tar")) == [] and sorted(p.name for p in out.glob(".*.tmp")) == []
    assert (document["shards"], document["shards_empty"], document["shards_written"]) == (
        ["shard-000000.tar"], ["shard-000000.tar"], [])
    assert document["num_samples"] == 0 and document["num_skipped"] == 1
    rows = [json.loads(line) for line in (out / "skipped.jsonl").read_text().splitlines()]
    assert [(r["key"], r["input"], r["reason"]) for r in rows] == [("cut", str(clips / "cut.mp4"), "decode")]
    assert "truncated" in rows[0]["message"]
    state = (out / "state.jsonl").read_bytes()

    code = main(["preprocess", str(clips), str(out), "--no-progress"])
    summary, err = capsys.readouterr()
    assert code == 1 and "Traceback" not in err
    assert "0 written, 0 reused, 1 not written: every sample skipped (shard-000000.tar)" in summary
    assert "1 skipped" in summary and "skipping" not in err  # counted from state.jsonl, not measured again
    assert (out / "state.jsonl").read_bytes() == state and list(out.glob("*.tar")) == []


# ---------------------------------------------------------------- 3. video-only: aligned.num_samples


def test_video_only_clip_has_no_aligned_samples(tmp_path, capsys):
    """Before: ``measure --json`` on a clip without an audio stream said ``audio.num_samples`` 0 but
    ``aligned.num_samples`` 32000 (the 2 s window at 16 kHz: the silence ``align`` pads with), and preprocess's
    manifest counted those samples too. Both are 0 now (what the loader yields by default, ``missing_audio="empty"``);
    the window itself is the video's frames (oracle: ffprobe's frame times)."""
    import json

    from avalign.cli import main
    from tests.conftest import ffprobe_frame_times

    clips = tmp_path / "clips"
    clips.mkdir()
    media = clips / "silent.mp4"
    encode_once(media, "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-t", "2", "-c:v", "libx264", "-g", "10")
    pts = ffprobe_frame_times(media)
    assert main(["measure", str(media), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["video"]["num_frames"] == len(pts) == 50
    assert record["audio"]["num_samples"] == 0 and record["audio"]["sample_rate"] is None
    assert record["aligned"]["num_samples"] == 0
    assert record["aligned"]["start_seconds"] == 0.0 and record["aligned"]["stop_seconds"] == 2.0  # 50 frames at 25 fps

    out = tmp_path / "out"
    assert main(["preprocess", str(clips), str(out), "--no-progress", "--timeout", "0"]) == 0
    capsys.readouterr()
    rows = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert [(r["key"], r["num_frames"], r["num_samples"], r["duration"]) for r in rows] == [("silent", 50, 0, 2.0)]


# ---------------------------------------------------------------- 4. measure's error reasons are documented


def test_measure_json_error_reasons_are_documented_reasons(tmp_path, capsys):
    """Before: ``avalign measure DIR --json`` answered reason ``invalid``, which ``loaders.REASONS`` (the one
    documented vocabulary) did not list; nor did ``not_found`` or ``usage``. Every reason measure's ``--json``
    error document gives is a key of REASONS now, with the file it is about."""
    import json

    from avalign.cli import main
    from loaders import REASONS

    clips = tmp_path / "clips"
    clips.mkdir()
    (clips / "notes.mp4").write_bytes(b"this is not a video\n" * 10)
    missing = tmp_path / "missing.mp4"
    cases = [([str(clips)], "invalid", str(clips), 2),  # a directory where one media file is needed
             ([str(clips / "notes.mp4")], "decode", str(clips / "notes.mp4"), 2),
             ([str(missing)], "not_found", str(missing), 2)]
    for argv, reason, file, exit_code in cases:
        assert main(["measure", *argv, "--json"]) == exit_code
        error = json.loads(capsys.readouterr().out)["error"]
        assert (error["reason"], error["file"], error["command"]) == (reason, file, "measure")
        assert error["reason"] in REASONS, error
    with pytest.raises(SystemExit):
        main(["measure", str(clips / "notes.mp4"), "--json", "--sample-rate", "fast"])
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["reason"] == "usage" and error["reason"] in REASONS
    assert REASONS["invalid"].startswith("command: an input or option out of range")
