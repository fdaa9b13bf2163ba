"""Word-level ASR output grouped into sentences: an abbreviation's dot (Mr. Dr. Mrs. St. e.g. U.S., an initial J.)
does not end a segment; a sentence's full stop (``than I.`` included) does.

Before: every word ending in ``.`` ended a segment, so "Mr. Smith met Dr. J. Watson" became four segments, and a
caption-level consumer (the loader's ``segment_texts``, windows, tokens) saw "Mr." as a sentence. Oracle: the word
chunks each test writes, and the sentences they spell.
"""
from __future__ import annotations

import json

from loaders import read_transcript

SENTENCES = [
    "Mr. Smith met Dr. J. Watson at St. Paul's, e.g. on Sunday.",
    "Mrs. Brown is taller than I.",
    "Then U.S. troops left at 9 a.m. sharp!",
]


def _timed(words: list[str], *, start_ms: int = 500, step_ms: int = 300) -> list[tuple[str, int, int]]:
    """Each word 250 ms long, one every 300 ms from 0.5 s (no pause long enough to end a segment)."""
    return [(w, start_ms + step_ms * i, start_ms + step_ms * i + 250) for i, w in enumerate(words)]


def test_hf_word_chunks_keep_abbreviations_inside_their_sentence():
    """The Hugging Face pipeline's ``return_timestamps="word"`` chunks (Whisper's own leading spaces)."""
    words = _timed([" " + w for s in SENTENCES for w in s.split()])
    doc = {"text": "".join(w for w, _, _ in words),
           "chunks": [{"text": w, "timestamp": [a / 1000, b / 1000]} for w, a, b in words]}
    spans = read_transcript(json.dumps(doc).encode(), name="hf.json").spans
    assert [s.text for s in spans] == SENTENCES
    ends = [sum(len(s.split()) for s in SENTENCES[:k + 1]) for k in range(len(SENTENCES))]
    firsts = [0] + ends[:-1]
    assert [(s.start_seconds, s.stop_seconds) for s in spans] == [
        (words[a][1] / 1000, words[b - 1][2] / 1000) for a, b in zip(firsts, ends)]
    assert [len(s.words) for s in spans] == [b - a for a, b in zip(firsts, ends)]


def test_whisper_cpp_a_token_per_segment_keeps_abbreviations_inside_their_sentence():
    """whisper.cpp ``-ml 1`` writes a token per segment: ``" Mr"`` then ``"."``, ``" e"`` ``"."`` ``"g"`` ``"."``;
    the word as written (the tokens since the last leading space) decides."""
    tokens = [" Mr", ".", " Smith", " met", " Dr", ".", " J", ".", " Watson", ",", " e", ".", "g", ".", " twice", ".",
              " Then", " U", ".", "S", ".", " troops", " left", "."]
    timed = _timed(tokens)
    doc = {"transcription": [{"timestamps": {}, "offsets": {"from": a, "to": b}, "text": t} for t, a, b in timed]}
    spans = read_transcript(json.dumps(doc).encode(), name="ml1.json").spans
    assert [s.text for s in spans] == ["Mr. Smith met Dr. J. Watson, e.g. twice.", "Then U.S. troops left."]
    assert [(s.start_seconds, s.stop_seconds) for s in spans] == [(0.5, timed[15][2] / 1000),
                                                                  (timed[16][1] / 1000, timed[-1][2] / 1000)]
