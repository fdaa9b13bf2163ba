"""The ``avalign`` command line: fast start (no heavy import before work), progress output, transcript formats
on every command (STM included), clear messages for misnamed files, paths printed without ``//``.

Oracles: ``sys.modules`` of a fresh interpreter (what ``--help`` imported), the library's own constants, the
generator's known times for the STM segments, and the exact text a user sees.
"""
from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys

import pytest

from avalign.cli import DEFAULT_MAX_PIXELS, TRANSCRIPT_FORMATS, cli_message, display_path
from avalign.cli import Progress, format_eta
from avalign.cli import main
from tests.conftest import REPO, ffmpeg

HEAVY = ("torch", "av", "numpy", "matplotlib", "ray", "tqdm", "loaders", "aligner", "soxr")


@pytest.mark.parametrize("argv", [["--help"], ["report", "--help"], ["preprocess", "--help"], ["measure", "--help"]])
def test_help_imports_nothing_heavy(argv):
    code = (
        "import sys\n"
        "from avalign.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(REPO))).stdout
    assert out.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("argv", [["report", "/nonexistent/in", "--out", "/tmp/o"], ["preprocess", "/nonexistent/in", "/tmp/o"],
                                  ["measure", "/nonexistent/clip.mp4"]])
def test_missing_input_fails_before_heavy_imports(argv):
    code = (
        "import sys\n"
        "from avalign.cli import main\n"
        "code = main(sys.argv[1:])\n"
        f"print(code, sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True,
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert proc.stdout.strip() == "2 []"
    assert "not found: '/nonexistent/" in proc.stderr and "hint:" in proc.stderr


def test_cli_constants_match_the_library():
    from loaders.media import DEFAULT_MAX_PIXELS as LIBRARY_MAX_PIXELS
    from loaders.transcripts import TRANSCRIPT_FORMATS as LIBRARY_FORMATS

    assert DEFAULT_MAX_PIXELS == LIBRARY_MAX_PIXELS
    assert set(TRANSCRIPT_FORMATS) == set(LIBRARY_FORMATS)


def test_library_hints_name_cli_flags():
    assert cli_message("x.txt: bad; hint: the content looks like srt, pass format='srt'") == (
        "x.txt: bad; hint: the content looks like srt, pass --transcript-format srt")
    assert "--transcript-format, one of" in cli_message("x: cannot tell; hint: pass format= one of ['srt']")
    assert display_path("report/", "report.html") == "report/report.html"
    assert display_path("a//b/") == "a/b"


def test_report_summary_path_has_no_double_slash():
    from avalign.report import format_terminal_summary, gate, summarize

    summary = summarize([], [], gate([], fail_over_ms=None))
    text = format_terminal_summary(summary, out_dir="report/")
    assert text.splitlines()[-1] == "report      report/report.html"


# ---------------------------------------------------------------- progress

class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_plain_progress_lines_with_total_and_eta():
    stream, clock = io.StringIO(), _Clock()
    with Progress(total=10, desc="report", unit="clip", stream=stream, interval_seconds=5.0, clock=clock) as p:
        for _ in range(4):
            clock.now += 2.0
            p.update(1, reported=p.n + 1)
    lines = stream.getvalue().splitlines()
    # a line at 6 s (first after 5 s), then the final one; never a carriage return (no bar off a terminal)
    assert lines == ["report: 3/10 clip (30%), 0.50 clip/s, ETA 14 s, reported=3",
                     "report: 4/10 clip (40%), 0.50 clip/s, ETA 12 s, reported=4"]
    assert "\r" not in stream.getvalue()
    assert format_eta(125) == "2 min 05 s" and format_eta(None) == "?" and format_eta(7260) == "2 h 01 min"


def test_resumed_work_is_not_counted_in_the_rate():
    stream, clock = io.StringIO(), _Clock()
    p = Progress(total=10, initial=6, desc="preprocess", stream=stream, interval_seconds=1e9, clock=clock)
    clock.now = 4.0
    p.update(2)
    assert p.rate_per_second() == pytest.approx(0.5) and p.eta_seconds() == pytest.approx(4.0)
    p.close()
    p.close()
    assert stream.getvalue() == "preprocess: 8/10 clip (80%), 0.50 clip/s, ETA 4 s\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_warnings_print_above_the_bar_not_on_it(monkeypatch):
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [handler])
    with Progress(total=3, desc="report", unit="clip") as p:
        p.update(1)
        logging.getLogger("avalign.test").warning("clip b: decode error")
        p.update(2)
    out = terminal.getvalue()
    assert "3/3" in out and "\r" in out  # a tqdm bar with its total
    (line,) = [chunk for chunk in out.split("\n") if "decode error" in chunk]
    assert line.rsplit("\r", 1)[-1] == "WARNING avalign.test: clip b: decode error"  # on a line of its own
    assert root.handlers == [handler]  # the redirection is undone


# ---------------------------------------------------------------- transcript formats and misnamed files

STM = """;; NIST STM, as TED-LIUM writes it
clip 1 spk1 0.52 1.40 <o,f0,male> one two
clip 1 spk1 1.92 3.20 <o,f0,male> three
clip 1 spk1 3.20 3.50 <o,f0,male> ignore_time_segment_in_scoring
"""


def test_read_transcript_stm():
    from loaders import read_transcript
    from loaders.errors import TranscriptError

    t = read_transcript(STM.encode(), name="clip.stm")
    assert t.format == "stm"
    assert [(s.text, s.start_seconds, s.stop_seconds) for s in t.spans] == [("one two", 0.52, 1.4), ("three", 1.92, 3.2)]
    with pytest.raises(TranscriptError, match=r"line 2: STM begin/end"):
        read_transcript(b";; c\nclip 1 spk x 2.0 hi\n", format="stm", name="bad.stm")


@pytest.fixture(scope="module")
def beeps(tmp_path_factory):
    d = tmp_path_factory.mktemp("cli_media")
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=64x48:rate=25", "-f", "lavfi", "-i", "sine=f=440:r=16000",
           "-t", "4", "-c:v", "libx264", "-c:a", "aac", str(d / "clip.mp4"))
    (d / "clip.stm").write_text(STM)
    return d


def test_stm_on_every_command(beeps, tmp_path, capsys, monkeypatch):
    from avalign.report import run_report

    assert main(["measure", str(beeps / "clip.mp4"), "--transcript", str(beeps / "clip.stm"), "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["text_method"] not in (None, "none")
    # the same file under another name: the flag says what it is
    odd = tmp_path / "clip.transcript"
    odd.write_text(STM)
    assert main(["measure", str(beeps / "clip.mp4"), "--transcript", str(odd), "--json", "--transcript-format", "stm"]) == 0
    capsys.readouterr()
    assert main(["measure", str(beeps / "clip.mp4"), "--transcript", str(odd)]) == 2
    err = capsys.readouterr().err
    assert "--transcript-format" in err and "format=" not in err
    assert main(["preprocess", str(beeps), str(tmp_path / "pre"), "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_skipped"] == 0
    import tarfile

    with tarfile.open(tmp_path / "pre" / "shard-000000.tar") as tar:
        spans = json.loads(tar.extractfile("clip.transcript.json").read())["spans"]
    assert [(s["text"], s["start_seconds"]) for s in spans] == [("one two", 0.52), ("three", 1.92)]
    plotted = []  # the summary plots of a measured clip with a transcript are drawn by tests/test_report.py
    monkeypatch.setattr("avalign.report._plots.make_plots",  # private: run_report imports it at call time
                        lambda rows: plotted.append([row["key"] for row in rows]) or {})
    (row,) = run_report(str(beeps), out_dir=str(tmp_path / "rep"), clip_pages=0).report["clips"]
    assert row["has_transcript"] and row["num_words"] == 3 and plotted == [["clip"]]


def test_subtitle_file_named_mp4_is_named_as_such(tmp_path, capsys):
    fake = tmp_path / "talk.mp4"
    fake.write_text("1\n00:00:01,000 --> 00:00:02,000\nhello\n")
    assert main(["measure", str(fake)]) == 2
    err = capsys.readouterr().err
    assert "is a subtitle file (format srt)" in err and "--transcript" in err and ".srt" in err
