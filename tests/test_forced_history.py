"""Forced alignment does not depend on what the decoder aligned before.

pocketsphinx's front end keeps running estimates across utterances (noise removal, CMN). A decoder shared by every
alignment in a process (``shared_decoder``) used to align a span differently after other audio: on ``clip00``'s first
caption the fit was -29.26 on a fresh decoder and -29.45 after the same span once; on a wild clip's null pairing the
transcript offset's best guess moved 70 ms. Oracle: a fresh decoder for every alignment.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import loaders
from aligner.estimators import forced_align_scored, new_decoder

pytest.importorskip("pocketsphinx")

SAMPLE = Path(__file__).resolve().parent.parent / "sample_data"


def _spans():
    transcript = loaders.read_transcript(SAMPLE / "clip00.json")
    return [(s.text, s.start_seconds - 0.3, s.stop_seconds + 0.3) for s in transcript.spans]


def test_reused_decoder_aligns_like_a_fresh_one():
    audio = loaders.read_audio(SAMPLE / "clip00.mp4")
    spans = _spans()
    assert len(spans) >= 2
    fresh = [forced_align_scored(audio, text, lo, hi, decoder=new_decoder()) for text, lo, hi in spans]
    assert all(words and fit is not None for words, fit in fresh)
    reused = new_decoder()
    # Every span after every other one, twice over: the state left by any history must not show.
    for _ in range(2):
        for (text, lo, hi), (words, fit) in zip(spans, fresh):
            again_words, again_fit = forced_align_scored(audio, text, lo, hi, decoder=reused)
            assert again_fit == fit
            assert [(w.text, w.start_seconds, w.stop_seconds) for w in again_words] == \
                [(w.text, w.start_seconds, w.stop_seconds) for w in words]
