"""``avalign preprocess``: byte-identical output for any worker count / backend, crash safety, inputs, errors.

Oracles: ffprobe's frame list (num_frames), closed-form sample counts (frames / fps × rate), the bytes of
an uninterrupted run (resume), and tar headers read back with ``tarfile``.
"""
from __future__ import annotations

import errno
import io
import json
import logging
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from avalign.preprocess import is_transcript_json, list_inputs, preprocess, process_sample
from loaders.errors import SampleError
from tests.conftest import REPO, collector_on_new_objects, ffmpeg, ffprobe_frame_times, start_forked

FPS, SECONDS, RATE = 25, 2, 16000
SRT = "1\n00:00:00,200 --> 00:00:01,000\nhello there\n\n2\n00:00:01,000 --> 00:00:01,800\ngood day\n"
WHISPER = {"segments": [{"text": "hi you", "start": 0.1, "end": 0.9,
                         "words": [{"word": "hi", "start": 0.1, "end": 0.4}, {"word": "you", "start": 0.5, "end": 0.9}]}]}


@pytest.fixture(scope="module", autouse=True)
def _collector_on_this_modules_objects():
    """Each preprocess run with forks (the per-sample watchdog, the worker pool, a killed run) collects cyclic garbage
    first (``heap_frozen_for_fork``): here over this module's own objects, not over the whole pytest worker's heap
    (``collector_on_new_objects``)."""
    with collector_on_new_objects():
        yield


def _clip(path: Path, frequency: int, seconds: float = SECONDS) -> None:
    ffmpeg("-f", "lavfi", "-i", f"testsrc=size=64x48:rate={FPS}", "-f", "lavfi", "-i", f"sine=f={frequency}:r={RATE}",
           "-t", str(seconds), "-c:v", "libx264", "-g", "10", "-c:a", "aac", str(path))


@pytest.fixture(scope="module")
def clips(tmp_path_factory) -> Path:
    """c0 (+srt), c1 (+Whisper JSON), c2 (no transcript), d3 (+malformed srt), bad (truncated mp4), orphan.srt."""
    d = tmp_path_factory.mktemp("pre_in")
    for i, name in enumerate(["c0", "c1", "c2", "d3"]):
        _clip(d / f"{name}.mp4", 300 + 100 * i)
    (d / "c0.srt").write_text(SRT)
    (d / "c1.json").write_text(json.dumps(WHISPER))
    (d / "d3.srt").write_text("1\n00:00:01,000 --> garbage\nbroken\n")
    (d / "bad.mp4").write_bytes((d / "c2.mp4").read_bytes()[:2000])
    (d / "orphan.srt").write_text(SRT)
    return d


def _outputs(directory: Path) -> dict[str, bytes]:
    """Every shard, manifest and skipped list (state.jsonl holds checksums only)."""
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())
            if p.name.startswith("shard-") or p.name in ("manifest.jsonl", "skipped.jsonl")}


@pytest.fixture(scope="module")
def reference(clips, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("pre_ref") / "out"
    preprocess(str(clips), str(out), samples_per_shard=2, progress=False)
    return out


def test_output_values_against_ffprobe(clips, reference):
    manifest = [json.loads(line) for line in (reference / "manifest.jsonl").read_text().splitlines()]
    assert [row["key"] for row in manifest] == ["c0", "c1", "c2"]
    for row in manifest:
        num_frames = len(ffprobe_frame_times(clips / f"{row['key']}.mp4"))
        assert row["num_frames"] == num_frames == FPS * SECONDS
        assert row["num_samples"] == round(num_frames / FPS * RATE)
        assert row["duration"] == pytest.approx(num_frames / FPS)
    assert {r["key"]: r["num_words"] for r in manifest} == {"c0": 4, "c1": 2, "c2": 0}
    # bad, c0 → shard 0; c1, c2 → shard 1; d3 → shard 2 (empty after the skip): assignment by key order.
    assert [r["shard"] for r in manifest] == ["shard-000000.tar", "shard-000001.tar", "shard-000001.tar"]
    skipped = {r["key"]: r["reason"] for r in map(json.loads, (reference / "skipped.jsonl").read_text().splitlines())}
    assert skipped == {"bad": "decode", "d3": "transcript", "orphan": "missing_media"}

    with tarfile.open(reference / "shard-000000.tar") as tar:
        members = tar.getmembers()
        names = [m.name for m in members]
        assert names == sorted(names) == ["c0.align.json", "c0.frames.json", "c0.mp4", "c0.transcript.json"]
        assert {(m.mtime, m.uid, m.gid, m.uname, m.gname, m.mode) for m in members} == {(0, 0, 0, "", "", 0o644)}
        assert tar.extractfile("c0.mp4").read() == (clips / "c0.mp4").read_bytes()  # media kept as is
        align = json.loads(tar.extractfile("c0.align.json").read())
        frames = json.loads(tar.extractfile("c0.frames.json").read())
        text = json.loads(tar.extractfile("c0.transcript.json").read())
    pts = ffprobe_frame_times(clips / "c0.mp4")
    assert frames["pts_seconds"] == pytest.approx(list(pts), abs=1e-6)
    assert frames["keyframe"][:2] == [0, 10]  # -g 10
    assert align["video"]["num_frames"] == len(pts) and align["aligned"]["sample_rate"] == RATE
    assert align["config"]["sample_rate"] == RATE and "avalign" in align["config"] and align["config"]["seed"] == 0
    assert align["key"] == "c0" and align["media"] == "c0.mp4" and align["transcript"] == "c0.transcript.json"
    assert [(s["text"], s["start_seconds"], s["stop_seconds"]) for s in text["spans"]] == [
        ("hello there", 0.2, 1.0), ("good day", 1.0, 1.8)]  # original clock, unshifted
    assert not (reference / "shard-000002.tar").exists()  # d3 skipped: its shard holds no sample, so no file


def test_two_workers_byte_identical(clips, reference, tmp_path):
    # timeout_seconds=None here and in the reuse, video2dataset and throughput tests: each sample is measured in the
    # process that runs it, without a forked watchdog child (a fork of the test process per sample); the reference
    # run and the CLI runs keep the watchdog, and the shards are byte-identical either way (compared here).
    out = tmp_path / "out2"
    result = preprocess(str(clips), str(out), samples_per_shard=2, workers=2, progress=False, timeout_seconds=None)
    assert result.num_samples == 3 and result.num_skipped == 3
    assert _outputs(out) == _outputs(reference)


def test_decoder_threads_reach_the_decoder_and_do_not_change_the_output(clips, reference, tmp_path, monkeypatch):
    """Each measuring process decodes with its share of the cores (``worker_decoder_threads``) or the threads
    asked for; the shards are byte-identical to the reference run's for every thread count."""
    import loaders
    from loaders.pipeline import worker_decoder_threads

    asked, read_video = [], loaders.read_video

    def recording(*args, **kwargs):  # timeout_seconds=None: decoded in this process, so the patch applies
        asked.append(kwargs.get("num_threads"))
        return read_video(*args, **kwargs)

    monkeypatch.setattr(loaders, "read_video", recording)
    for threads, want in ((None, worker_decoder_threads(1)), (3, 3), (1, 1)):
        asked.clear()
        out = tmp_path / f"threads{threads}"
        preprocess(str(clips), str(out), samples_per_shard=2, progress=False, timeout_seconds=None,
                   decoder_threads=threads)
        assert asked and set(asked) == {want}, (threads, asked)
        assert _outputs(out) == _outputs(reference)
    with pytest.raises(ValueError, match="decoder_threads"):
        preprocess(str(clips), str(tmp_path / "bad"), decoder_threads=-1, progress=False)


def test_rerun_reuses_and_repairs(clips, reference, tmp_path):
    out = tmp_path / "out"
    preprocess(str(clips), str(out), samples_per_shard=2, progress=False, timeout_seconds=None)
    (out / "shard-000001.tar").write_bytes(b"corrupted")  # checksum no longer matches
    result = preprocess(str(clips), str(out), samples_per_shard=2, progress=False, timeout_seconds=None)
    assert result.shards_reused == ("shard-000000.tar",)
    assert result.shards_written == ("shard-000001.tar",)
    assert result.shards_empty == ("shard-000002.tar",)  # d3's, every sample skipped: done, no file
    assert _outputs(out) == _outputs(reference)
    with pytest.raises(ValueError, match="different options.*samples_per_shard"):
        preprocess(str(clips), str(out), samples_per_shard=3, progress=False)


@pytest.mark.slow
def _wait_until_unlocked(output_dir, *, timeout_seconds: float) -> None:
    """Return once no process holds ``output_dir``'s preprocess lock (``flock``), or fail after ``timeout_seconds``."""
    import fcntl

    from avalign.preprocess import LOCK_NAME

    deadline = time.monotonic() + timeout_seconds
    fd = os.open(os.path.join(output_dir, LOCK_NAME), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                fcntl.flock(fd, fcntl.LOCK_UN)
                return
            except BlockingIOError:
                assert time.monotonic() < deadline, "the killed run's workers still hold the lock"
                time.sleep(0.05)
    finally:
        os.close(fd)


def test_sigkill_then_rerun_matches_clean_run(clips, reference, tmp_path, capsys):
    """A run SIGKILLed after its first shard, then rerun, ends byte-identical to the clean run (``reference``,
    2 samples a shard). Only the run to be killed is a separate process (a fork of this one running the CLI
    command); the rerun goes through the same CLI command in this process."""
    args = [str(clips), "--samples-per-shard", "2", "--no-progress", "--json"]
    killed = tmp_path / "killed"
    pid = start_forked(_run_cli, [args[0], str(killed), *args[1:]])
    deadline, state = time.monotonic() + 60, killed / "state.jsonl"

    def first_shard_recorded() -> bool:  # the shard is renamed into place, then recorded in state.jsonl
        return (killed / "shard-000000.tar").exists() and state.exists() and b'"shard"' in state.read_bytes()

    exited = False
    while not first_shard_recorded() and time.monotonic() < deadline:
        if os.waitpid(pid, os.WNOHANG)[0]:  # it ended (reaped): "finished before the kill" is asserted below
            exited = True
            break
        time.sleep(0.005)
    if not exited:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    visible = {p.name: p.read_bytes() for p in killed.glob("shard-*.tar")}
    assert visible, "the first shard never appeared"
    assert len(visible) < 3, "the run finished before the kill: nothing was interrupted"
    expected = _outputs(reference)
    assert all(data == expected[name] for name, data in visible.items())  # no partial shard is visible
    capsys.readouterr()
    # The killed run's forked decode workers share the lock's descriptor until they notice their parent is gone
    # (avalign/preprocess/_lock.py): on a loaded machine that can take a moment. Wait for them, not for the run.
    _wait_until_unlocked(killed, timeout_seconds=30.0)
    assert _run_cli([args[0], str(killed), *args[1:]]) == 0
    result = json.loads(capsys.readouterr().out)
    assert "shard-000000.tar" in result["shards_reused"]
    assert not list(killed.glob(".*.tmp"))
    assert _outputs(killed) == expected


def test_cli_max_pixels(clips, tmp_path, capsys):
    import argparse

    from avalign.preprocess import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["preprocess", str(clips), str(tmp_path / "out"), "--no-progress", "--json",
                              "--max-pixels", str(64 * 48 - 1)])  # one pixel under the clips' 64x48
    assert args.func(args) == 1 and json.loads(capsys.readouterr().out)["num_samples"] == 0  # nothing written: exit 1
    skipped = {r["key"]: r["reason"] for r in map(json.loads, (tmp_path / "out" / "skipped.jsonl").read_text().splitlines())}
    assert skipped == {"bad": "decode", "c0": "too_large", "c1": "too_large", "c2": "too_large", "d3": "transcript",
                       "orphan": "missing_media"}


def _tar(path: Path, members: dict[str, bytes]) -> None:
    with tarfile.open(path, "w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def test_video2dataset_shards(clips, tmp_path):
    src = tmp_path / "v2d"
    src.mkdir()
    meta = json.dumps({"url": "http://x/v.mp4", "caption": "a cat", "status": "success"}).encode()
    _tar(src / "00000.tar", {"00000.mp4": (clips / "c0.mp4").read_bytes(), "00000.json": meta, "00000.txt": b"a cat"})
    _tar(src / "00001.tar", {"00001.mp4": (clips / "c1.mp4").read_bytes(), "00001.json": json.dumps(WHISPER).encode()})
    out = tmp_path / "out"
    result = preprocess(str(src / "{00000..00001}.tar"), str(out), progress=False, timeout_seconds=None)
    assert result.num_samples == 2 and result.num_skipped == 0
    with tarfile.open(out / "shard-000000.tar") as tar:
        assert tar.getnames() == ["00000.align.json", "00000.frames.json", "00000.meta.json", "00000.mp4", "00000.txt",
                                  "00001.align.json", "00001.frames.json", "00001.mp4", "00001.transcript.json"]
        assert tar.extractfile("00000.meta.json").read() == meta
        assert json.loads(tar.extractfile("00000.align.json").read())["transcript"] is None
        assert tar.extractfile("00001.mp4").read() == (clips / "c1.mp4").read_bytes()
    assert is_transcript_json(b'[{"text": "a", "start": 0, "end": 1}]')
    assert not is_transcript_json(b'{"url": "u", "key": "00000"}')


def test_video2dataset_record_in_cp1252_keeps_its_metadata(clips, tmp_path):
    """A video2dataset record holding its Whisper transcript, written in cp1252 (``Caf\xe9``): read as the transcript
    (the readers fall back to cp1252) and kept as ``meta.json`` too, as its UTF-8 twin is; before, the record was not
    recognised as holding a transcript (``json.loads`` of the bytes failed) and its metadata was dropped."""
    src = tmp_path / "v2d"
    src.mkdir()
    record = {"url": "http://x/caf\u00e9.mp4", "caption": "Caf\u00e9 au lait", "status": "success",
              "whisper_transcript": WHISPER}
    meta = json.dumps(record, ensure_ascii=False).encode("cp1252")
    assert b"Caf\xe9" in meta
    _tar(src / "00000.tar", {"00000.mp4": (clips / "c0.mp4").read_bytes(), "00000.json": meta})
    out = tmp_path / "out"
    result = preprocess(str(src / "00000.tar"), str(out), progress=False, timeout_seconds=None)
    assert result.num_samples == 1 and result.num_skipped == 0
    with tarfile.open(out / "shard-000000.tar") as tar:
        assert "00000.meta.json" in tar.getnames()
        assert tar.extractfile("00000.meta.json").read() == meta.decode("cp1252").encode("utf-8")  # written as UTF-8
        words = [w["text"] for w in json.loads(tar.extractfile("00000.align.json").read())["words"]]
    assert words == ["hi", "you"]


def test_cp1252_caption_and_metadata_are_written_as_utf8(clips, tmp_path, caplog):
    """A video2dataset shard whose ``KEY.txt`` caption and ``KEY.json`` metadata are cp1252 (a Windows tool's
    "ANSI"): the output's ``KEY.txt`` and ``KEY.meta.json`` are UTF-8 with the same characters, each decoded once
    with the readers' warning naming its input member. Before, both were copied raw, so a UTF-8 reader of the output
    shards (anything but avalign's own cp1252 fallback) failed or garbled them. Oracle: the strings the test wrote."""
    caption = "Caf\u00e9 cr\u00e8me \u2013 \u201cna\u00efve\u201d d\u00e9j\u00e0 vu \u20ac5"
    record = {"url": "http://x/caf\u00e9.mp4", "caption": "Gr\u00fc\u00dfe aus K\u00f6ln", "status": "success"}
    src = tmp_path / "v2d"
    src.mkdir()
    meta = json.dumps(record, ensure_ascii=False).encode("cp1252")
    _tar(src / "00000.tar", {"00000.mp4": (clips / "c0.mp4").read_bytes(), "00000.json": meta,
                             "00000.txt": caption.encode("cp1252")})
    out = tmp_path / "out"
    with caplog.at_level(logging.WARNING):
        result = preprocess(str(src / "00000.tar"), str(out), progress=False, timeout_seconds=None)
    assert result.num_samples == 1 and result.num_skipped == 0
    with tarfile.open(out / "shard-000000.tar") as tar:
        assert tar.extractfile("00000.txt").read().decode("utf-8") == caption
        assert json.loads(tar.extractfile("00000.meta.json").read().decode("utf-8")) == record
    warnings = [r.getMessage() for r in caplog.records if "read as cp1252" in r.getMessage()]
    assert sorted(w.split(": not UTF-8")[0] for w in warnings) == [f"{src / '00000.tar'}:00000.json",
                                                                    f"{src / '00000.tar'}:00000.txt"], warnings


def test_metadata_in_another_legacy_encoding_is_refused_naming_the_member(clips, tmp_path):
    """A ``KEY.json`` record in cp1251 (Cyrillic) beside a UTF-8 caption: before, copied raw (the loader reads the
    caption first and never decoded it), so the output held bytes no UTF-8 reader takes. Now the sample is a skip
    (reason ``transcript``, as the loader's decoding refuses it) whose message names the input member and the fix."""
    src = tmp_path / "v2d"
    src.mkdir()
    record = {"url": "http://x/v.mp4", "caption": "\u041f\u0440\u0438\u0432\u0435\u0442, \u043a\u0430\u043a "
              "\u0434\u0435\u043b\u0430? \u042d\u0442\u043e \u043f\u043e\u0434\u043f\u0438\u0441\u044c.",
              "status": "success"}
    _tar(src / "00000.tar", {"00000.mp4": (clips / "c0.mp4").read_bytes(),
                             "00000.json": json.dumps(record, ensure_ascii=False).encode("cp1251"),
                             "00000.txt": "a cat".encode()})
    out = tmp_path / "out"
    result = preprocess(str(src / "00000.tar"), str(out), progress=False, timeout_seconds=None)
    assert result.num_samples == 0 and result.num_skipped == 1
    [row] = map(json.loads, (out / "skipped.jsonl").read_text().splitlines())
    assert (row["key"], row["reason"]) == ("00000", "transcript")
    assert f"{src / '00000.tar'}:00000.json: byte " in row["message"], row
    assert "re-save the metadata as UTF-8" in row["message"] and "iconv -f CP1251 -t UTF-8" in row["message"], row

def test_errors_are_clear(clips, tmp_path, monkeypatch):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        preprocess(str(tmp_path / "missing.tar"), str(tmp_path / "o"), progress=False)
    with pytest.raises(ValueError, match="inside the input"):
        preprocess(str(clips), str(clips / "out"), progress=False)
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(NotADirectoryError, match="not a directory"):
        preprocess(str(clips), str(tmp_path / "a_file"), progress=False)
    with pytest.raises(ValueError, match="workers"):
        preprocess(str(clips), str(tmp_path / "o"), workers=0)
    with pytest.raises(SampleError, match=r"bad\.mp4") as info:
        preprocess(str(clips), str(tmp_path / "raise"), on_error="raise", progress=False)
    assert info.value.reason == "decode"
    assert not list((tmp_path / "raise").glob("shard-*")) and not list((tmp_path / "raise").glob(".*.tmp"))

    def full_disk(self, info, fileobj=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tarfile.TarFile, "addfile", full_disk)
    with pytest.raises(OSError, match="disk full") as info:
        preprocess(str(clips), str(tmp_path / "full"), progress=False)
    assert info.value.errno == errno.ENOSPC
    assert not [p for p in (tmp_path / "full").iterdir() if p.name.endswith(".tmp") or p.name.startswith("shard-")]


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output(clips, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(PermissionError, match="not writable"):
        preprocess(str(clips), str(locked), progress=False)


def test_dry_run_writes_nothing(clips, tmp_path):
    out = tmp_path / "dry"
    result = preprocess(str(clips), str(out), samples_per_shard=2, dry_run=True, progress=False)
    assert not out.exists()
    assert result.keys_by_shard == {"shard-000000.tar": ["bad", "c0"], "shard-000001.tar": ["c1", "c2"],
                                    "shard-000002.tar": ["d3"]}
    assert result.shards_written == tuple(result.keys_by_shard) and result.num_skipped == 1  # orphan.srt
    plan = list_inputs(str(clips))
    assert [s.transcript_format for s in plan.samples] == ["", "srt", "json", "", "srt"]


@pytest.mark.slow
def test_ray_backend_byte_identical(clips, reference, tmp_path):
    """One Ray worker (the smallest local instance) runs the three shard tasks: the same remote calls, waits and
    results in the driver as with more, without a second worker process to start."""
    pytest.importorskip("ray")
    out = tmp_path / "ray"
    preprocess(str(clips), str(out), samples_per_shard=2, backend="ray", workers=1, progress=False)
    assert _outputs(out) == _outputs(reference)


_INHERITED = (
    "import json, sys\n"
    "from aligner.estimators import shared_decoder\n"
    "from avalign.preprocess import preprocess\n"
    "lazy = ('scipy.ndimage', 'scipy.signal', 'scipy.stats', 'pysubs2', 'torchcodec.decoders')\n"
    "before = [m for m in lazy if m in sys.modules]\n"
    "preprocess(sys.argv[1], sys.argv[2], progress=False)\n"
    "print(json.dumps([before, [m for m in lazy if m in sys.modules], shared_decoder.cache_info().currsize]))\n"
)


def test_measure_dependencies_are_loaded_before_the_children_fork(clips, tmp_path):
    """What measuring imports on first use (SciPy's estimators, the SRT reader, torchcodec for AAC audio) and the
    pocketsphinx decoder of a caption-only transcript are loaded in the preprocess process, once, before its
    per-sample watchdog children fork: they inherit them instead of each loading them again."""
    pytest.importorskip("pocketsphinx")
    inputs = tmp_path / "in"
    inputs.mkdir()
    for name in ("c0.mp4", "c0.srt"):  # an SRT without word times: forced alignment
        (inputs / name).write_bytes((clips / name).read_bytes())
    run = subprocess.run([sys.executable, "-c", _INHERITED, str(inputs), str(tmp_path / "out")], capture_output=True,
                         text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    before, after, decoders = json.loads(run.stdout.splitlines()[-1])
    assert before == []  # importing preprocess does not load them
    assert after == ["scipy.ndimage", "scipy.signal", "scipy.stats", "pysubs2", "torchcodec.decoders"] and decoders == 1


# ---------------------------------------------------------------- CLI: exit codes, throughput, parallel over samples

def _run_cli(argv: list[str]) -> int:
    import argparse

    from avalign.preprocess import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["preprocess", *argv, "--no-progress"])
    return args.func(args)


def test_exit_code_when_no_sample_is_written(clips, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run_cli([str(empty), str(tmp_path / "out_empty")]) == 1
    assert f"no samples found in {str(empty)!r}" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "bad.mp4").write_bytes((clips / "bad.mp4").read_bytes())
    (broken / "x.srt").write_text(SRT)  # a transcript without media
    assert _run_cli([str(broken), str(tmp_path / "out_broken")]) == 1
    err = capsys.readouterr().err
    assert "2 input(s) skipped" in err and "out_broken/skipped.jsonl" in err and "//" not in err
    assert _run_cli([str(empty), str(tmp_path / "dry"), "--dry-run"]) == 1
    assert _run_cli([str(clips), str(tmp_path / "ok"), "--samples-per-shard", "2"]) == 0


def test_throughput_counts_only_processed_media(clips, tmp_path, capsys):
    from avalign.preprocess import format_result

    out = tmp_path / "out"
    first = preprocess(str(clips), str(out), samples_per_shard=2, progress=False, timeout_seconds=None)
    assert first.media_seconds_processed == pytest.approx(first.media_seconds) == pytest.approx(3 * SECONDS, abs=0.1)
    again = preprocess(str(clips), str(out) + "/", samples_per_shard=2, progress=False, timeout_seconds=None)
    assert again.shards_written == () and again.media_seconds_processed == 0.0
    line = format_result(again)
    assert "nothing processed" in line and "realtime" not in line and "//" not in line
    (out / "shard-000001.tar").write_bytes(b"corrupted")  # c1 and c2 are measured again, c0 is reused
    partial = preprocess(str(clips), str(out), samples_per_shard=2, progress=False, timeout_seconds=None)
    assert partial.media_seconds_processed == pytest.approx(2 * SECONDS, abs=0.1)
    line = format_result(partial)
    assert f"processed {partial.media_seconds_processed:.1f} s of media" in line
    assert f"{partial.media_seconds - partial.media_seconds_processed:.1f} s reused, not counted" in line


_PID_DIR = None
"""Where ``_recording_measure_one`` (wrapping ``process_sample``) notes the process that measured each sample (set by the test; fork copies it)."""


def _recording_measure_one(sample, options, config):
    (Path(_PID_DIR) / f"{sample.key}.pid").write_text(str(os.getpid()))
    # Rendezvous: measure only once another process has started a sample too, so one worker cannot take every
    # sample whatever the machine's load (no sleep tuned to it). 20 s is a hang guard for a pool that runs
    # one sample at a time: then each sample waits it out and the two-processes assertion fails.
    deadline = time.monotonic() + 20
    while len({p.name for p in Path(_PID_DIR).iterdir()}) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    return process_sample(sample, options, config)


def test_workers_parallel_over_samples_within_one_shard(clips, tmp_path, monkeypatch):
    global _PID_DIR
    one = tmp_path / "one"
    # one shard: all 5 samples; measured in-process (no watchdog fork per sample): the output is the same
    preprocess(str(clips), str(one), samples_per_shard=100, progress=False, timeout_seconds=None)
    _PID_DIR = tmp_path / "pids"
    _PID_DIR.mkdir()
    monkeypatch.setattr("avalign.preprocess._run.process_sample", _recording_measure_one)  # the pool workers' call
    two = tmp_path / "two"
    result = preprocess(str(clips), str(two), samples_per_shard=100, workers=2, progress=False)
    assert result.shards == ("shard-000000.tar",) and result.num_samples == 3
    pids = {p.stem: p.read_text() for p in _PID_DIR.iterdir()}
    assert sorted(pids) == ["bad", "c0", "c1", "c2", "d3"]
    assert len(set(pids.values())) == 2 and str(os.getpid()) not in pids.values()  # two worker processes
    assert _outputs(two) == _outputs(one)  # byte-identical to one worker


def test_progress_off_a_terminal_is_plain_lines(clips, tmp_path, capsys):
    import argparse

    from avalign.preprocess import add_parser

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["preprocess", str(clips), str(tmp_path / "out"), "--samples-per-shard", "2"])
    assert args.func(args) == 0
    err = capsys.readouterr().err
    assert "\r" not in err  # no bar drawn into a pipe or a log file
    assert "preprocess: 5/5 clip (100%)" in err and "ETA 0 s" in err and "done=3, skipped=2, not_clips=1" in err  # 3 + 2 of the 5 clips; orphan.srt is none
