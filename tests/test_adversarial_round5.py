"""Regression tests of the fifth adversarial round (BENCHMARKS.md, "Adversarial round five": the defects round four
found and left). Inputs are generated here; each test fails on the code before its fix."""
from __future__ import annotations

import json
import logging
import os
import re
import signal
import subprocess
import sys

import pytest
import torch

import loaders
from avalign import cli
from loaders.errors import WARNINGS_PER_REASON
from tests import hostile_inputs as hostile
from tests.conftest import ffmpeg


# ------------------------------------------------------------------------- --json: one document, also on failure


def _one_document(out: str) -> dict:
    document = json.loads(out)  # raises on nothing, on two documents, on a partial one
    assert isinstance(document, dict)
    return document


def test_measure_json_on_unreadable_media_prints_one_error_document(tmp_path, capsys):
    # Before: stdout empty (exit 2, the message on stderr only): `avalign measure x --json | jq` got nothing to parse.
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"\0" * 100)
    assert cli.main(["measure", str(bad), "--json"]) == 2
    captured = capsys.readouterr()
    error = _one_document(captured.out)["error"]
    assert (error["command"], error["file"], error["reason"], error["exit_code"]) == ("measure", str(bad), "decode", 2)
    assert error["message"].startswith(f"cannot open {bad}: ")
    assert captured.err == f"avalign measure: error: {error['message']}\n"


def test_measure_json_names_the_transcript_when_it_is_what_failed(tmp_path, capsys):
    media, transcript = tmp_path / "clip.mp4", tmp_path / "clip.srt"
    media.write_bytes(b"\0" * 100)
    assert cli.main(["measure", str(media), "--transcript", str(transcript), "--json"]) == 2
    error = _one_document(capsys.readouterr().out)["error"]
    assert (error["file"], error["reason"]) == (str(transcript), "not_found")
    assert error["message"].startswith(f"transcript not found: '{transcript}'")


def test_json_commands_give_a_document_for_usage_errors_interrupts_and_bugs(monkeypatch, tmp_path, capsys):
    assert (tmp_path / "x.mp4").write_bytes(b"") == 0
    with pytest.raises(SystemExit):
        cli.main(["measure", str(tmp_path / "x.mp4"), "--json", "--sample-rate", "x"])
    assert _one_document(capsys.readouterr().out)["error"]["reason"] == "usage"

    def interrupted(args):
        raise KeyboardInterrupt

    def bug(args):
        raise RuntimeError("a bug")

    monkeypatch.setattr(cli, "_cmd_demo", interrupted)
    assert cli.main(["demo", "--data", str(tmp_path), "--json"]) == 130
    assert _one_document(capsys.readouterr().out)["error"] == {
        "command": "demo", "file": str(tmp_path), "reason": "interrupted", "exit_code": 130,
        "message": "interrupted; what it wrote so far may be incomplete (preprocess: a rerun reuses its complete shards)"}
    monkeypatch.setattr(cli, "_cmd_demo", bug)
    assert cli.main(["demo", "--data", str(tmp_path), "--json"]) == 1
    captured = capsys.readouterr()
    assert _one_document(captured.out)["error"]["message"] == "RuntimeError: a bug"
    assert "Traceback" in captured.err and "RuntimeError: a bug" in captured.err
    monkeypatch.setattr(cli, "_cmd_demo", bug)
    with pytest.raises(RuntimeError):  # without --json a bug is a traceback, as before
        cli.main(["demo", "--data", str(tmp_path)])


def test_preprocess_json_with_nothing_written_carries_the_error_in_its_one_document(tmp_path, capsys):
    # Before: the result document (exit 1) said nothing of the failure; stderr alone did.
    media_dir = tmp_path / "in"
    media_dir.mkdir()
    (media_dir / "bad.mp4").write_bytes(b"\0" * 100)
    assert cli.main(["preprocess", str(media_dir), str(tmp_path / "out"), "--json", "--no-progress"]) == 1
    document = _one_document(capsys.readouterr().out)
    assert document["num_samples"] == 0 and document["num_skipped"] == 1
    assert document["error"]["reason"] == "no_sample" and document["error"]["file"] == str(media_dir)
    assert document["error"]["exit_code"] == 1


# ------------------------------------------------------------------------- many skips: a few warnings, exact counts

def test_many_skips_log_a_few_warnings_per_reason_then_debug_and_an_epoch_summary_with_exact_counts(tmp_path, caplog):
    # Before: one warning per skipped sample (10,000 unreadable samples: 10,000 lines). Tiny bad samples: captions
    # without media (missing_video; 150 here), 12 undecodable mp4s (decode), 7 keys repeated later in the shard (duplicate_key).
    members = [(f"t{i:03d}.txt", b"a caption") for i in range(150)]
    members += [(f"d{i:02d}.mp4", b"\0" * 100) for i in range(12)]
    members += [(f"t{i:03d}.txt", b"again") for i in range(7)]
    url = str(tmp_path / "bad.tar")
    (tmp_path / "bad.tar").write_bytes(hostile.tar_bytes(members))
    loader = loaders.make_loader([url], seed=0, frame_size=(16, 16), allow_empty_epoch=True)
    for epoch in range(2):  # the cap is per epoch
        caplog.clear()
        with caplog.at_level(logging.DEBUG, logger="loaders"):
            assert list(loader) == []
        stats = loader.stats
        assert stats.skipped == {"missing_video": 150, "decode": 12, "duplicate_key": 7}
        assert [key for _, key, _ in stats.skipped_samples] == ([f"t{i:03d}" for i in range(150)]
                                                                + [f"d{i:02d}" for i in range(12)]
                                                                + [f"t{i:03d}" for i in range(7)])
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        debug = [r.getMessage() for r in caplog.records if r.levelno == logging.DEBUG and "skip" in r.getMessage()
                 or r.levelno == logging.DEBUG and "dropped" in r.getMessage()]
        for reason, total, first in (("missing_video", 150, "t000"), ("decode", 12, "d00"), ("duplicate_key", 7, "t000")):
            named = [w for w in warnings if f"reason={reason}" in w or f"({reason})" in w]
            assert len(named) == WARNINGS_PER_REASON, (reason, named)
            assert url in named[0] and repr(first) in named[0]
            assert warnings.count(f"{WARNINGS_PER_REASON + 1} samples skipped as {reason!r} so far: further {reason!r} "
                                  "skips this epoch are counted silently (logged at DEBUG); their keys and exact counts "
                                  "are in stats.skipped_samples") == 1
            assert len([d for d in debug if f"reason={reason}" in d or f"({reason})" in d]) == total - WARNINGS_PER_REASON
        assert warnings[-1] == (f"epoch {epoch}: 169 sample(s) skipped: missing_video 150, decode 12, duplicate_key 7 "
                                "(stats.skipped_samples lists them)")
        assert len(warnings) == 3 * (WARNINGS_PER_REASON + 1) + 1


def test_the_warning_cap_is_per_epoch_in_a_loader_worker_too_not_per_shard(tmp_path):
    # A make_loader worker logs in its own process (to the handlers it inherits): 8 + 8 captions without media in two
    # shards are 5 warnings in all, not 5 per shard.
    urls = []
    for s in range(2):
        (tmp_path / f"s{s}.tar").write_bytes(hostile.tar_bytes([(f"s{s}k{i}.txt", b"a caption") for i in range(8)]))
        urls.append(str(tmp_path / f"s{s}.tar"))
    log = tmp_path / "worker.log"
    handler = logging.FileHandler(log)
    handler.setLevel(logging.WARNING)
    logging.getLogger("loaders").addHandler(handler)
    try:
        loader = loaders.make_loader(urls, seed=0, num_workers=1, allow_empty_epoch=True)
        assert list(loader) == [] and loader.stats.skipped == {"missing_video": 16}
    finally:
        logging.getLogger("loaders").removeHandler(handler)
        handler.close()
    lines = log.read_text().splitlines()
    assert len([line for line in lines if line.startswith("skipping sample: ")]) == WARNINGS_PER_REASON
    assert len([line for line in lines if "counted silently" in line]) == 1
    assert lines[-1] == "epoch 0: 16 sample(s) skipped: missing_video 16 (stats.skipped_samples lists them)"


# ------------------------------------------------------------------------- a broken tokenizer: one error at once


def _caption_only_shard(tmp_path) -> str:
    path = tmp_path / "captions.tar"
    path.write_bytes(hostile.tar_bytes([("k0.txt", b"a caption")]))
    return str(path)


class _Raises:
    def __call__(self, text):
        raise RuntimeError("vocabulary file missing")


@pytest.mark.parametrize("tokenizer, error, message", [
    (_Raises(), ValueError, "tokenizer _Raises is unusable: it raised RuntimeError: vocabulary file missing on the "
                            "probe text 'hello world'"),
    (lambda text: ([1.5, 2.0], [(0, 5), (6, 11)]), TypeError,
     "tokenizer function is unusable: on the probe text 'hello world': tokenizer returned a token id that is not an "
     "integer: 1.5 (float); return int ids and (start, stop) character offsets."),
    (lambda text: ([1, 2], [(0, 5), (6, 40)]), ValueError,
     "tokenizer function is unusable: on the probe text 'hello world': tokenizer returned offsets outside the text "
     "(length 11): [(6, 40)]."),
    (lambda text: "1 2", TypeError, "tokenizer function is unusable: on the probe text 'hello world': tokenizer output "
                                    "must carry ids and character offsets, got str."),
    (lambda text: ([], []), ValueError, "tokenizer function is unusable: it returned no token for the probe text "
                                        "'hello world' (ids [], offsets []); every item would have 0 tokens"),
    (lambda: None, TypeError, "tokenizer function is unusable: it raised TypeError: <lambda>() takes 0 positional "
                              "arguments but 1 was given on the probe text 'hello world'"),
])
def test_a_broken_tokenizer_is_one_clear_error_before_any_sample(tmp_path, tokenizer, error, message):
    # Before: each sample with text was skipped as `error` (a bug) one at a time; here (a caption without media, never
    # tokenized) the epoch ended without a word about the tokenizer.
    loader = loaders.make_loader([_caption_only_shard(tmp_path)], seed=0, tokenizer=tokenizer, allow_empty_epoch=True)
    with pytest.raises(error) as info:
        list(loader)
    assert str(info.value) == message
    assert info.value.tokenizer_probe is True


@pytest.mark.parametrize("tokenizer", [42, "bert-base-uncased"])
def test_what_is_no_tokenizer_at_all_is_refused_when_the_loader_is_built(tmp_path, tokenizer):
    # Found without calling it (no user code runs in the main process before workers fork).
    with pytest.raises(TypeError, match=rf"^tokenizer must be a tokenizers\.Tokenizer, a fast Hugging Face tokenizer or a "
                                        rf"callable text -> \(ids, offsets\), got {type(tokenizer).__name__} "
                                        rf"{re.escape(repr(tokenizer))}; a model name is not one"):
        loaders.make_loader([_caption_only_shard(tmp_path)], seed=0, tokenizer=tokenizer)


def test_a_broken_tokenizer_in_a_loader_worker_is_the_same_error(tmp_path):
    loader = loaders.make_loader([_caption_only_shard(tmp_path)], seed=0, num_workers=1, allow_empty_epoch=True,
                                 tokenizer=lambda text: ([1.5, 2.0], [(0, 5), (6, 11)]))
    with pytest.raises(TypeError, match=r"^tokenizer function is unusable: on the probe text 'hello world': tokenizer "
                                        r"returned a token id that is not an integer: 1\.5"):
        list(loader)
    with pytest.raises(TypeError, match="tokenizer function is unusable"):  # the public stage checks it as well
        next(loaders.pipeline.decode_items(iter([]), tokenizer=lambda text: ([1.5], [(0, 5)])))


# ------------------------------------------------------------------------- Ctrl-C in `avalign report`: whole pages

def _report_in_a_child_interrupted_rendering_page_two(clips, out, log) -> int:
    """Runs ``avalign report`` in a forked child that sends itself SIGINT while page two's HTML is rendered (at the
    first ``html.escape`` after the second image drawn once page one exists); returns the child's exit status."""
    import html

    from matplotlib.figure import Figure  # imported before the fork: once for the child and the rerun

    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            # libgomp is not fork-safe (tests/conftest.py's start_forked): without make test's OMP_NUM_THREADS=1,
            # the luma matmul of visual_change_events hung here on a futex after other test files had run.
            torch.set_num_threads(1)
            signal.signal(signal.SIGINT, signal.default_int_handler)  # as in an interactive shell's foreground job
            sys.stdout = sys.stderr = open(log, "w", buffering=1)  # noqa: SIM115 - flushed below, before os._exit
            savefig, escape, images_after_page_one = Figure.savefig, html.escape, []

            def counting_savefig(self, *args, **kwargs):
                if any(name.endswith(".html") for name in os.listdir(out / "clips")):
                    images_after_page_one.append(1)
                return savefig(self, *args, **kwargs)

            def interrupting_escape(*args, **kwargs):
                if len(images_after_page_one) >= 2:
                    os.kill(os.getpid(), signal.SIGINT)
                return escape(*args, **kwargs)

            Figure.savefig, html.escape = counting_savefig, interrupting_escape
            code = cli.main(["report", str(clips), "--out", str(out), "--no-progress"])
        finally:
            sys.stderr.flush()
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _pages(out) -> dict[str, list[str]]:
    """Each clip page (HTML) with the images it shows; every file of clips/ must be a page or one of its images."""
    clips = out / "clips"
    pages = {p.name: re.findall(r'src="([^"]+\.png)"', p.read_text()) for p in clips.glob("*.html")}
    for name, text in ((p.name, p.read_text()) for p in clips.glob("*.html")):
        assert text.rstrip().endswith("</html>"), name
    shown = {image for images in pages.values() for image in images}
    assert sorted(os.listdir(clips)) == sorted([*pages, *shown]), "a file of no complete page (or a temporary)"
    return pages


def test_ctrl_c_in_report_leaves_whole_clip_pages_or_none_and_a_rerun_completes(tmp_path):
    # Before: page two's HTML was opened before it was rendered: an empty page (beside its images) stayed.
    clips, out = tmp_path / "clips", tmp_path / "rep"
    clips.mkdir()
    for i in range(2):  # MP4: the child's AAC audio by torchcodec, on torch's inter-op pool (BENCHMARKS.md,
        hostile.clip(clips / f"c{i}.mp4", seconds=0.5)  # "torchcodec audio in forked children (branch fork12)")
    assert _report_in_a_child_interrupted_rendering_page_two(clips, out, tmp_path / "log") == 130
    pages = _pages(out)
    assert len(pages) == 1 and all(len(images) == 2 for images in pages.values())  # page one, waveform + strip
    assert sorted(os.listdir(out)) == ["clips"]
    assert (tmp_path / "log").read_text().endswith(
        "avalign report: interrupted; every file it wrote is whole (a clip page with its images, or nothing of it), "
        "but report.json and report.html, written last, are not (re)written: rerun to complete the report\n")
    assert cli.main(["report", str(clips), "--out", str(out), "--no-progress"]) == 0
    assert len(_pages(out)) == 2
    report = json.loads((out / "report.json").read_text())
    assert sorted(os.path.basename(c["page"]) for c in report["clips"]) == sorted(_pages(out))


# ------------------------------------------------------------------------- a pipe: command dies with its reader


def _alive_in_group(pgid: int) -> list[int]:
    """Pids of the processes of group ``pgid`` that are not zombies (from /proc)."""
    alive = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            alive.append(int(entry))
    return alive


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as handle:
        return [int(p) for p in handle.read().split()]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the parent-death signal is Linux's (see loaders/_pipe.py)")
def test_a_pipe_command_dies_with_a_sigkilled_reader(tmp_path):
    # Before: `sleep 600 | cat` (never writing) outlived its SIGKILLed reader for the full 600 s (a session of its own).
    import time

    from loaders.shards import shard_samples

    reader = os.fork()
    if reader == 0:  # the reader: blocks reading the pipe until killed
        try:
            for _ in shard_samples("pipe:sleep 600 | cat", pipe_stall_seconds=600):
                pass
        finally:
            os._exit(1)
    pgid = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            shells = _children(reader)
            if shells and len(_alive_in_group(shells[0])) >= 3:  # the shell, its subshell or the pipeline's two
                pgid = shells[0]
                break
            time.sleep(0.02)
        assert pgid is not None, "the pipe command did not start"
        os.kill(reader, signal.SIGKILL)
        os.waitpid(reader, 0)
        deadline = time.monotonic() + 5
        while _alive_in_group(pgid) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert _alive_in_group(pgid) == []
    finally:
        if pgid is not None and _alive_in_group(pgid):
            os.killpg(pgid, signal.SIGKILL)
        try:
            os.kill(reader, signal.SIGKILL)
            os.waitpid(reader, 0)
        except (ProcessLookupError, ChildProcessError):
            pass


# ------------------------------------------------------------------------- AAC in MP4: where the samples start and end

def _ffmpeg_samples(path) -> int:
    """The oracle: how many mono samples ``ffmpeg -i FILE -f s16le -ac 1 -`` writes."""
    out = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-f", "s16le", "-ac", "1", "-"],
                         capture_output=True, check=True).stdout
    return len(out) // 2


def _ffprobe_duration_seconds(path) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "stream=duration", "-of",
                          "csv=p=0", str(path)], capture_output=True, text=True, check=True).stdout
    return float(out)


@pytest.fixture(scope="module")
def aac_files(tmp_path_factory) -> dict:
    """ffmpeg's native AAC encoder, mp4 muxer: an edit list (priming start, 1 s end) or none; a stream-copied cut
    whose edit list starts 448 samples into a frame."""
    work = tmp_path_factory.mktemp("round5_aac")
    files = {name: work / f"{name}.m4a" for name in ("edit_list", "no_edit_list", "two_seconds", "cut")}
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1", "-c:a", "aac", "-ac", "1", str(files["edit_list"]))
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1", "-c:a", "aac", "-ac", "1", "-use_editlist", "0",
           str(files["no_edit_list"]))
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", "2", "-c:a", "aac", "-ac", "1", str(files["two_seconds"]))
    ffmpeg("-ss", "0.5", "-i", str(files["two_seconds"]), "-t", "1", "-c", "copy", str(files["cut"]))
    return files


@pytest.mark.parametrize("backend", ["pyav", "torchcodec"])
def test_aac_padding_after_the_edit_list_end_stays_as_ffmpeg_decodes_it(aac_files, backend):
    # Checked, not changed: FFmpeg does not cut inside the last packet at the edit list's end (ffprobe: 1.000 s =
    # 16000 samples; ffmpeg decodes 16384, the encoder's padding included), so read_audio (either backend) neither.
    for name in ("edit_list", "no_edit_list"):
        clip = loaders.read_audio(aac_files[name], backend=backend)
        assert (clip.start_seconds, clip.num_samples) == (0.0, _ffmpeg_samples(aac_files[name])), name
    assert _ffprobe_duration_seconds(aac_files["edit_list"]) * 16000 == 16000 < 16384 == _ffmpeg_samples(aac_files["edit_list"])


@pytest.mark.parametrize("backend", ["pyav", "auto"])
def test_an_edit_list_starting_inside_a_frame_keeps_its_tail_from_time_zero_as_ffmpeg_does(aac_files, backend):
    # Before: the torchcodec backend (chosen by "auto" for AAC in MP4) dropped the cut's first, partial frame: its
    # first sample at 0.012 s, 576 samples fewer than ffmpeg's 48,704 (PyAV: 0.0 s, 48,704).
    clip = loaders.read_audio(aac_files["cut"], backend=backend)
    assert (clip.start_seconds, clip.num_samples) == (0.0, _ffmpeg_samples(aac_files["cut"])) == (0.0, 48704)
    with pytest.raises(loaders.errors.DecodeError, match=r"cannot decode this exactly \(the samples start at 0\.0120 s, "
                                                         r"PyAV's first frame at 0\.0000 s"):
        loaders.read_audio(aac_files["cut"], backend="torchcodec")


def test_preprocess_logs_a_few_skips_per_reason_and_records_them_all(tmp_path, caplog):
    # Before: one warning per stray transcript (round four: 3,000 .srt without media, 3,000 lines).
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    for i in range(12):
        (raw / f"k{i:02d}.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n")
    with caplog.at_level(logging.WARNING):
        result = preprocess(str(raw), str(tmp_path / "out"), progress=False)
    assert result.num_skipped == 12
    rows = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert [(r["key"], r["reason"]) for r in rows] == [(f"k{i:02d}", "missing_media") for i in range(12)]
    named = [r.getMessage() for r in caplog.records if "(missing_media)" in r.getMessage()]
    assert len(named) == WARNINGS_PER_REASON
    assert [r.getMessage() for r in caplog.records if "counted silently" in r.getMessage()] == [
        f"{WARNINGS_PER_REASON + 1} samples skipped as 'missing_media' so far: further 'missing_media' skips while "
        "planning are counted silently (logged at DEBUG); their keys and exact counts are in skipped.jsonl"]
