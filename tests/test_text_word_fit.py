"""Forced alignment's acoustic fit: words that the audio does not say are not evidence of where the transcript sits.

Oracles: espeak-ng speech of known sentences (``avalign.synth.synthesize_speech``: which text the audio says), and
the wild generator's truth (``avalign.synth.make_wild_clip``): a null pairing (one clip's audio, another clip's
captions, sharing no sentence) has no right answer, the true pairing's answer is the generator's ``text_offset_ms``.
Measured before the fit test (main at 7485e4d): the null pairing below answered ``forced_spans`` at -412 ms
(confidence 0.38).
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from aligner.estimators import MIN_WORD_FIT, estimate_transcript_offsets, forced_align_scored, shared_decoder
from avcore import AudioClip
from tests.conftest import spoken_on_audio_clock

pytest.importorskip("pocketsphinx")

SAID = "Every morning Maria walks her dog near the river."
NOT_SAID = "Robots sorted heavy boxes during long nights."


@pytest.fixture(scope="module")
def speech() -> AudioClip:
    from avalign.synth import synthesize_speech

    try:
        spoken = synthesize_speech(SAID)
    except OSError as e:  # libespeak-ng missing
        pytest.skip(f"espeak-ng unavailable: {e}")
    rate = spoken.sample_rate
    samples = np.concatenate([np.zeros(rate // 2, np.float32), spoken.samples.astype(np.float32),
                              np.zeros(rate // 2, np.float32)])
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))
    samples = samples + np.random.default_rng(0).standard_normal(samples.size).astype(np.float32) * rms * 10 ** (-30 / 20)
    return AudioClip(torch.from_numpy(samples.astype(np.float32))[None], rate, 0.0)


def test_fit_tells_the_said_text_from_another(speech: AudioClip) -> None:
    said_words, said_fit = forced_align_scored(speech, SAID, 0.0, speech.stop_seconds, decoder=shared_decoder())
    other_words, other_fit = forced_align_scored(speech, NOT_SAID, 0.0, speech.stop_seconds, decoder=shared_decoder())
    assert len(said_words) == 9 and len(other_words) == 7  # both texts are placed: placing alone proves nothing
    assert MIN_WORD_FIT < said_fit <= 0.0
    assert other_fit < MIN_WORD_FIT
    assert said_fit - other_fit > 15.0


def test_fit_is_none_without_dictionary_words(speech: AudioClip) -> None:
    # the dictionary's own words only (the transcript-offset estimator's alignment); by default espeak-ng would
    # pronounce the two (tests/test_forced_missing_words.py)
    assert forced_align_scored(speech, "zzqx vvbrk", 0.0, speech.stop_seconds, decoder=shared_decoder(),
                               pronounce_missing=False) == ((), None)


@pytest.fixture(scope="module")
def report25_pair(wild_seed):
    """REPORT25's wild25010 (audio) and wild25012 (captions). The long audio clip speaks wild25012's two sentences
    too, but not within the ±500 ms search range of where wild25012's captions put them."""
    audio_clip, text_clip = wild_seed(25010), wild_seed(25012)
    stamps = [(w, start + text_clip[0]["text_offset_ms"] / 1000) for w, start in spoken_on_audio_clock(text_clip[0])]
    spoken = spoken_on_audio_clock(audio_clip[0])
    assert not any(w == u and abs(s - a) <= 0.6 for w, s in stamps for u, a in spoken)
    assert not text_clip[2].words  # captions: forced_spans
    return audio_clip, text_clip


def test_null_pairing_abstains_naming_the_fit(report25_pair) -> None:
    (_, audio, _), (_, _, captions) = report25_pair
    estimates = estimate_transcript_offsets(audio, captions, methods=("forced", "auto"), decoder=shared_decoder())
    forced = estimates["forced"]
    assert forced.method == "abstain:words_do_not_match_audio"
    assert forced.best_guess_ms is not None and f"{MIN_WORD_FIT:g} per frame" in forced.needed
    assert all(d is None for _, d in forced.item_differences_ms)
    auto = estimates["auto"]  # energy abstained too: auto says why forced alignment did, with what energy saw
    assert auto.method == "abstain:words_do_not_match_audio" and "energy onsets:" in auto.found, auto


def test_true_pairing_still_answered(report25_pair) -> None:
    _, (record, audio, captions) = report25_pair
    estimates = estimate_transcript_offsets(audio, captions, methods=("forced", "auto"), decoder=shared_decoder())
    for method in ("forced", "auto"):
        assert not estimates[method].abstained, (method, estimates[method].found)
        assert estimates[method].text_offset_ms == pytest.approx(record["text_offset_ms"], abs=25.0)


def test_caption_words_keep_a_caption_the_audio_does_not_say_without_words(speech: AudioClip) -> None:
    """``caption_words``: the caption the audio says gets its 9 words; a caption of other text over the same speech gets
    none (kept, counted as failed) instead of 7 invented word times (main at 7485e4d gave it 7 words)."""
    from aligner.estimators import caption_words
    from avcore import Span, Transcript

    window = (0.3, speech.stop_seconds - 0.3)
    said, failed = caption_words(speech, Transcript((Span(SAID, *window),)), decoder=shared_decoder())
    assert failed == 0 and len(said.spans[0].words) == 9
    other, failed = caption_words(speech, Transcript((Span(NOT_SAID, *window),)), decoder=shared_decoder())
    assert failed == 1 and other.spans[0].words == () and other.spans[0].text == NOT_SAID
