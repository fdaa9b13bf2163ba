"""Forced alignment does not depend on what the decoder aligned before.

pocketsphinx's noise removal (``remove_noise``, on in the en-us model's feat.params) keeps its noise estimate across
utterances; CMN is batch (per utterance). A decoder shared by every alignment in a process (``shared_decoder``) used to
align a span differently after other audio: ``clip00``'s second caption fit at -28.58 on a fresh decoder and -28.63
after the first caption; on REPORT31's wild31021 audio with wild31017's captions (a null pairing) the transcript
offset's best guess was 407.4 ms on a fresh decoder and 337.4 ms when the same decoder aligned it again. Oracle: a fresh
decoder for every alignment (with ``remove_noise`` off, a reused decoder already matched it).
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


@pytest.mark.slow
def test_a_transcript_offset_does_not_depend_on_what_the_decoder_aligned_before(wild_seed):
    from aligner.estimators import estimate_text_offset_forced

    _, audio, _ = wild_seed(31021)
    _, _, captions = wild_seed(31017)  # another clip's captions: a null pairing, the marginal case
    _, other_audio, other_captions = wild_seed(31000)
    reused = new_decoder()
    fresh = estimate_text_offset_forced(audio, captions, decoder=reused)
    again = estimate_text_offset_forced(audio, captions, decoder=reused)
    estimate_text_offset_forced(other_audio, other_captions, decoder=reused)
    after_other = estimate_text_offset_forced(audio, captions, decoder=reused)
    assert fresh.best_guess_ms is not None
    for later in (again, after_other):
        assert (later.method, later.best_guess_ms, later.confidence) == (fresh.method, fresh.best_guess_ms, fresh.confidence)
        assert later.item_differences_ms == fresh.item_differences_ms
