"""Dotted initialisms in captions ("U.S.", "a.m.") are said letter by letter, and forced alignment aligns them so.

Before, "U.S." was aligned as the dictionary word "us" (``AH S``) and "U.K." as a made-up word "uk" spelled by
espeak-ng's rules: other phones than the ones said. Oracles: how the initialisms are said (pocketsphinx's own dictionary
spells ``u.s.`` ``Y UW EH S``, its letters ``u`` + ``s``), and espeak-ng's word times of the speech.
"""
from __future__ import annotations

import shutil

import pytest

from aligner import estimators
from tests.espeak_clips import speech_over_noise


def test_a_dotted_initialism_is_spoken_as_its_letters_and_reported_as_written():
    # A possessive ("U.K.'s") is not an initialism of letters alone: its dictionary form, as before.
    tokens = estimators.spoken_tokens("The U.S. army, the U.K.'s team at 9 a.m. e.g. U.S.A.! Mr. Smith, Ph.D.")
    assert tokens == [("The", ("the",)), ("U.S.", ("u", "s")), ("army", ("army",)), ("the", ("the",)),
                      ("U.K.'s", ("uk's",)), ("team", ("team",)), ("at", ("at",)),
                      ("9", ("nine",)), ("a.m.", ("a", "m")), ("e.g.", ("e", "g")), ("U.S.A.", ("u", "s", "a")),
                      ("Mr", ("mr",)), ("Smith", ("smith",)), ("Ph.D.", ("phd",))]


def test_the_letters_have_the_phones_the_dictionary_gives_the_initialism():
    pytest.importorskip("pocketsphinx")
    decoder = estimators.new_decoder()
    letters = [decoder.lookup_word(letter) for letter in ("u", "s")]
    assert " ".join(letters) == decoder.lookup_word("u.s.") == "Y UW EH S"
    assert decoder.lookup_word("us") != "Y UW EH S"  # what "U.S." was aligned as before


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng (make env installs it)")
def test_initialisms_are_aligned_where_they_are_said():
    pytest.importorskip("pocketsphinx")
    caption = "The U.S. army met the U.K. team near the river."
    audio, placed = speech_over_noise(35.0, sentences=(caption,), seed=5)
    said = placed[0]
    words = estimators.forced_align_words(audio, caption, said[0][1] - 0.3, said[-1][2] + 0.3,
                                          decoder=estimators.new_decoder())
    assert [w.text for w in words] == ["The", "U.S.", "army", "met", "the", "U.K.", "team", "near", "the", "river"]
    for word, (_, start, stop) in zip(words, said):
        assert abs(word.start_seconds - start) < 0.035, (word, start)
    assert abs(words[1].stop_seconds - said[1][2]) < 0.035
