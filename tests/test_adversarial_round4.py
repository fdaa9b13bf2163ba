"""Regression tests of the fourth adversarial round (BENCHMARKS.md, "Adversarial round four": a training run in the
wild). Inputs are generated here (tiny tar shards of one ffmpeg clip); each test fails on the code before its fix."""
from __future__ import annotations

import errno
import sys

import pytest

from avalign import cli


# ------------------------------------------------------------------------- CLI: a full disk, a failed stdout


def test_a_full_stdout_is_a_one_line_error_not_a_traceback(monkeypatch, capsys):
    # Before: `avalign measure clip.mp4 --json > /dev/full` ended in a traceback (OSError: [Errno 28]), exit 1.
    def command(args):
        print('{"av_offset_ms": 0.0}')
        sys.stdout.flush()
        return 0

    monkeypatch.setattr(cli, "_cmd_demo", command)
    monkeypatch.setattr(sys, "stdout", open("/dev/full", "w"))
    assert cli.main(["demo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("avalign demo: error: [Errno 28] No space left on device; hint: the disk")
    assert "Traceback" not in err


def test_a_write_error_in_an_output_directory_names_the_command(monkeypatch, capsys):
    # Before: `ulimit -f 20; avalign report clips/ --out rep/` ended in a traceback (OSError: [Errno 27]).
    def command(args):
        raise OSError(errno.EFBIG, "File too large")

    monkeypatch.setattr(cli, "_cmd_demo", command)
    assert cli.main(["demo"]) == 2
    assert capsys.readouterr().err == ("avalign demo: error: [Errno 27] File too large; hint: the disk (or a file-size "
                                       "limit) is full: what was written is incomplete; free space and rerun\n")
