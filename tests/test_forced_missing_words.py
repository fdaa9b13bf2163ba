"""Words missing from pocketsphinx's dictionary (names, brands) get espeak-ng's pronunciation and are aligned.

Before, "Zelensky", "Kubernetes" and "Grafana" were left out of forced alignment and of the caption's words. Now
espeak-ng spells them (IPA, mapped to the model's phones) and they are aligned like any word. Oracles: espeak-ng's word
times of the speech (``tests/espeak_clips.py``), the written caption; with espeak-ng off the PATH, the words are left
out as before.
"""
from __future__ import annotations

import shutil

import pytest

import aligner
import loaders
from aligner import estimators
from tests.espeak_clips import speech_over_noise, srt

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng (make env installs it)")

CAPTION = "Inspector Zelensky deployed Kubernetes near Grafana today."
WRITTEN = ["Inspector", "Zelensky", "deployed", "Kubernetes", "near", "Grafana", "today"]
MISSING = {"zelensky", "kubernetes", "grafana"}


@pytest.fixture(scope="module")
def speech():
    pytest.importorskip("pocketsphinx")
    audio, placed = speech_over_noise(35.0, sentences=(CAPTION,), seed=5)
    words = placed[0]
    return audio, (words[0][1] - 0.3, words[-1][2] + 0.3), [start for _, start, _ in words]


def test_the_caption_names_are_missing_from_the_dictionary():
    decoder = estimators.new_decoder()
    assert {w for w in estimators.normalise_words(CAPTION) if decoder.lookup_word(w) is None} == MISSING


def test_missing_words_are_pronounced_and_aligned_where_they_are_said(speech):
    audio, (lo, hi), true_starts = speech
    words = estimators.forced_align_words(audio, CAPTION, lo, hi, decoder=estimators.new_decoder())
    assert [w.text for w in words] == WRITTEN
    errors = [abs(w.start_seconds - t) for w, t in zip(words, true_starts)]
    assert max(errors[i] for i in (1, 3, 5)) < 0.05, list(zip(WRITTEN, errors))  # the three names
    assert sorted(errors)[len(errors) // 2] < 0.03, list(zip(WRITTEN, errors))


def test_caption_words_of_an_srt_include_the_names(speech):
    """Through ``aligner.align`` (``measure``, ``preprocess`` and the loader): every word of the cue, none failed."""
    audio, (lo, hi), true_starts = speech
    transcript = loaders.read_transcript(srt([(CAPTION, lo, hi)], 0.0), name="names.srt")
    sample = aligner.align(None, audio, transcript, estimate=False, text_offset_ms=0.0)
    assert sample.report.caption_words_failed == 0
    assert [w.text for w in sample.words] == WRITTEN
    assert all(abs(w.start_seconds - t) < 0.05 for w, t in zip(sample.words, true_starts))


def test_without_espeak_ng_missing_words_are_left_out_as_before(speech, monkeypatch, tmp_path):
    audio, (lo, hi), _ = speech
    monkeypatch.setenv("PATH", str(tmp_path))  # no espeak-ng to be found
    text = CAPTION.replace("Zelensky", "Lestradeau").replace("Kubernetes", "Zorblax").replace("Grafana", "Quxley")
    words = estimators.forced_align_words(audio, text, lo, hi, decoder=estimators.new_decoder())
    assert [w.text for w in words] == ["Inspector", "deployed", "near", "today"]


def test_words_in_other_scripts_are_not_pronounced_by_english_rules():
    decoder = estimators.new_decoder()
    assert estimators.add_missing_pronunciations(decoder, ["你好", "5550199", "café"]) == 1
    assert decoder.lookup_word("你好") is None and decoder.lookup_word("5550199") is None
    assert decoder.lookup_word("café") is not None


def test_the_transcript_offset_estimator_counts_only_the_dictionary_words(speech):
    """Its thresholds were measured on dictionary words: a word espeak-ng pronounced for caption words (in the same
    shared decoder) is still not one of its words."""
    audio, (lo, hi), _ = speech
    decoder = estimators.shared_decoder()
    estimators.forced_align_words(audio, CAPTION, lo, hi, decoder=decoder)  # pronounces the three names
    assert all(decoder.lookup_word(w) is not None for w in MISSING)
    assert not any(estimators.in_dictionary(decoder, w) for w in MISSING)
    assert estimators.in_dictionary(decoder, "inspector")
    only = estimators.forced_align_words(audio, CAPTION, lo, hi, decoder=decoder, pronounce_missing=False)
    assert [w.text for w in only] == ["Inspector", "deployed", "near", "today"]
