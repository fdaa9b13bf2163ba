"""A transcript source larger than any transcript is refused as ``too_large``, not read until memory runs out.

adv68: ``avalign measure CLIP --transcript /dev/zero`` ended in ``MemoryError`` (exit 1) after reading memory full.
"""
from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import pytest

from loaders import TranscriptError, read_transcript
from loaders.transcripts import MAX_TRANSCRIPT_BYTES

ROOT = Path(__file__).resolve().parents[1]


def test_an_endless_file_is_refused_as_too_large():
    with pytest.raises(TranscriptError, match=r"/dev/zero: over 256 MiB") as info:
        read_transcript("/dev/zero")
    assert info.value.reason == "too_large"


def test_a_stream_over_the_limit_is_refused_and_one_at_the_limit_is_read():
    srt = b"1\n00:00:01,000 --> 00:00:02,500\nhello\n\n"
    padded = srt + b" " * (MAX_TRANSCRIPT_BYTES - len(srt))  # exactly the limit: read (trailing blanks)
    assert read_transcript(io.BytesIO(padded), name="a.srt").spans[0].text == "hello"
    with pytest.raises(TranscriptError, match=r"a\.srt: over 256 MiB"):
        read_transcript(io.BytesIO(padded + b" "), name="a.srt")


@pytest.mark.timeout(120)
def test_measure_names_it_and_exits_2():
    run = subprocess.run([sys.executable, "-m", "avalign", "measure", "sample_data/clip01.mkv", "--transcript",
                          "/dev/zero"], cwd=ROOT, capture_output=True, text=True, timeout=110)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "/dev/zero: over 256 MiB" in run.stderr
