"""Bounded fuzz of read_transcript: random bytes and mutated valid documents of every format.

Contract: the only exception allowed is TranscriptError, nothing hangs (each call runs under a
SIGALRM watchdog), and whatever parses satisfies the Transcript invariants.
"""
from __future__ import annotations

import contextlib
import json
import math
import signal
from typing import Iterator, Optional

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from avcore import Transcript
from loaders.transcripts import read_transcript
from loaders.errors import TranscriptError

_WATCHDOG_SECONDS = 5

_SEEDS = {
    "srt": "1\n00:00:01,000 --> 00:00:02,500\nHello <i>there</i>\n\n2\n00:00:03,000 --> 00:00:04,000\nbye\n",
    "vtt": (
        "WEBVTT\n\nNOTE hi\n\nc1\n00:00:01.000 --> 00:00:03.000 align:start\n"
        "a<00:00:01.500><c> b</c><00:00:02.000><c> c</c>\n\n00:03.000 --> 00:04.000\nd\n"
    ),
    "json": json.dumps(
        {
            "segments": [
                {"start": 0.5, "end": 2.0, "text": " a 12 b", "words": [
                    {"word": " a", "start": 0.5, "end": 0.9, "score": 0.5}, {"word": "12"},
                    {"word": "b", "start": 1.5, "end": 2.0, "probability": 0.25}]},
                {"start": 2.5, "end": 3.0, "text": "c"},
            ],
            "word_segments": [{"word": "a", "start": 0.5, "end": 0.9}],
        }
    ),
    "json_list": json.dumps([{"text": "x", "start": 0, "end": 1}, {"text": "y", "start": 1, "stop": 2.5}]),
    "textgrid": (
        'File type = "ooTextFile"\nObject class = "TextGrid"\n\nxmin = 0\nxmax = 3\ntiers? <exists>\nsize = 2\n'
        'item []:\n    item [1]:\n        class = "IntervalTier"\n        name = "phrase"\n        xmin = 0\n'
        '        xmax = 3\n        intervals: size = 2\n        intervals [1]:\n            xmin = 0\n'
        '            xmax = 1\n            text = ""\n        intervals [2]:\n            xmin = 1\n'
        '            xmax = 3\n            text = "hi you"\n    item [2]:\n        class = "IntervalTier"\n'
        '        name = "words"\n        xmin = 0\n        xmax = 3\n        intervals: size = 2\n'
        '        intervals [1]:\n            xmin = 1\n            xmax = 2\n            text = "hi"\n'
        '        intervals [2]:\n            xmin = 2\n            xmax = 3\n            text = "you"\n'
    ),
    "textgrid_short": (
        'File type = "ooTextFile"\nObject class = "TextGrid"\n\n0\n3\n<exists>\n1\n"IntervalTier"\n"words"\n'
        '0\n3\n2\n0\n1.5\n"one"\n1.5\n3\n"two"\n'
    ),
}
_FORMATS: list[Optional[str]] = [None, "srt", "vtt", "json", "textgrid", "stm"]
_TOKENS = ["-->", "<", ">", "<00:00:01.200>", "\n", "\n\n", "-", "NaN", "1e999", "-1", "9", ":", ",", ".", '"',
           "{", "}", "[", "]", "null", "WEBVTT", "\ufeff", "\x00", "\xff", "99:99:99,999", "intervals [9]:"]


@contextlib.contextmanager
def _watchdog(seconds: int) -> Iterator[None]:
    """Fail the example (instead of hanging the suite) when a call runs longer than ``seconds``."""

    def on_alarm(signum: int, frame: object) -> None:
        raise TimeoutError(f"read_transcript ran past {seconds} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _check_contract(content: bytes, fmt: Optional[str]) -> None:
    with _watchdog(_WATCHDOG_SECONDS):
        try:
            t = read_transcript(content, format=fmt, name="fuzz")  # type: ignore[arg-type]
        except TranscriptError as error:
            assert "fuzz" in str(error)  # every message names the source
            return
    assert isinstance(t, Transcript)
    starts = [s.start_seconds for s in t.spans]
    assert starts == sorted(starts)
    for span in t.spans:
        assert math.isfinite(span.start_seconds) and 0 <= span.start_seconds <= span.stop_seconds
        for word in span.words:
            assert math.isfinite(word.start_seconds) and 0 <= word.start_seconds <= word.stop_seconds


@st.composite
def _mutated(draw: st.DrawFn) -> bytes:
    text = draw(st.sampled_from(sorted(_SEEDS.values())))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 12)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate", "digit"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(st.sampled_from(_TOKENS) | st.text(max_size=6)) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.text(max_size=4)) + text[j:]
        elif op == "duplicate":
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i] + str(draw(st.integers(0, 99))) + text[i + 1 :]
    encoding = draw(st.sampled_from(["utf-8", "utf-16", "latin-1"]))
    return text.encode(encoding, errors="replace")


_FUZZ = settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow], derandomize=True)


@_FUZZ
@given(content=st.binary(max_size=400), fmt=st.sampled_from(_FORMATS))
def test_random_bytes_raise_only_transcript_error(content: bytes, fmt: Optional[str]) -> None:
    _check_contract(content, fmt)


@_FUZZ
@given(content=_mutated(), fmt=st.sampled_from(_FORMATS))
def test_mutated_documents_raise_only_transcript_error(content: bytes, fmt: Optional[str]) -> None:
    _check_contract(content, fmt)


@pytest.mark.parametrize(
    ("key", "num_spans", "num_words"),
    [("srt", 2, 0), ("vtt", 2, 3), ("json", 2, 3), ("json_list", 2, 0), ("textgrid", 1, 2), ("textgrid_short", 2, 2)],
)
def test_seed_documents_parse(key: str, num_spans: int, num_words: int) -> None:
    """The fuzz seeds themselves are valid, so mutations start from documents that parse."""
    t = read_transcript(_SEEDS[key].encode(), name="seed")
    assert (len(t.spans), len(t.words)) == (num_spans, num_words)
