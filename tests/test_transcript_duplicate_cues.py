"""Exact duplicate cues (a subtitle file merged or exported twice: every cue twice at the same times) are read once.
Read as they stood, each caption's text was aligned twice inside its own audio and the transcript offset was lost
(BENCHMARKS.md, "Caption words on real ASR text").
"""
from __future__ import annotations

import json

import pytest

import aligner
import loaders
from avcore import Span
from tests.espeak_clips import SENTENCES, speech_over_noise, srt

_TWICE = (b"1\n00:00:01,000 --> 00:00:02,500\nHello there.\n\n2\n00:00:01,000 --> 00:00:02,500\nHello there.\n\n"
          b"3\n00:00:03,000 --> 00:00:04,000\nHello there.\n\n4\n00:00:04,000 --> 00:00:05,000\nHow are you?\n\n"
          b"5\n00:00:04,000 --> 00:00:05,000\nHow are you?\n")


def test_exact_repeats_are_read_once():
    transcript = loaders.read_transcript(_TWICE, name="twice.srt")
    assert transcript.spans == (Span("Hello there.", 1.0, 2.5), Span("Hello there.", 3.0, 4.0),  # said again: kept
                                Span("How are you?", 4.0, 5.0))


def test_exact_repeats_in_json_and_webvtt_are_read_once():
    segment = {"start": 1.0, "end": 2.0, "text": " Hi."}
    other = {"start": 1.0, "end": 2.5, "text": " Hi."}  # other times: kept
    doc = json.dumps({"segments": [segment, segment, other]}).encode()
    assert [(s.text, s.stop_seconds) for s in loaders.read_transcript(doc, name="a.json").spans] == [("Hi.", 2.0),
                                                                                                   ("Hi.", 2.5)]
    vtt = b"WEBVTT\n\n00:01.000 --> 00:02.000\nHi.\n\n00:01.000 --> 00:02.000\nHi.\n"
    assert loaders.read_transcript(vtt, name="a.vtt").spans == (Span("Hi.", 1.0, 2.0),)


def test_duplicated_captions_are_answered():
    pytest.importorskip("pocketsphinx")
    audio, placed = speech_over_noise(35.0, pauses_seconds=(0.5, 1.1))
    cues = [(text, words[0][1], words[-1][2]) for text, words in zip(SENTENCES, placed) for _ in (0, 1)]
    estimate = aligner.estimate_transcript_offset(audio, loaders.read_transcript(srt(cues, 70.0), name="twice.srt"))
    # before: abstained
    assert estimate.text_offset_ms == pytest.approx(70.0, abs=10.0), estimate
