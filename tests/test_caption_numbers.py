"""Numbers and symbols in captions, as Whisper writes them (``$1,000``, ``3:30pm``, ``25%``, ``2021``, ``3rd``): not
dictionary words, so forced alignment left them out and captions full of them abstained. They are aligned as the words
a speaker says (``spoken_tokens``) and reported under their written form (BENCHMARKS.md, "Caption words on real ASR
text").

Oracle: espeak-ng speech placed at known samples (its word times from ``avalign.synth.synthesize_speech``, one per
written token), a known transcript offset.
"""
from __future__ import annotations

import pytest

import loaders
from aligner.estimators import caption_words, normalise_words, spoken_tokens
from tests.espeak_clips import caption_offset_estimate, speech_over_noise, srt

NUMBERS = ("I paid $1,000 at 3:30pm yesterday.", "COVID-19 cases rose 25% in 2021.",
           "The 3rd floor has 12 rooms and 4 baths.", "Dr. Smith sold 1.5 million copies.",
           "Version 2.0 costs $49.99 per month.", "We left at 7:15 and arrived at 9:45.")


@pytest.mark.parametrize("text, expected", [
    ("paid $1,000.", [("paid", ("paid",)), ("$1,000", ("one", "thousand", "dollars"))]),
    ("at 3:30pm,", [("at", ("at",)), ("3:30pm", ("three", "thirty", "p", "m"))]),
    ("In 2019 the 1st", [("In", ("in",)), ("2019", ("twenty", "nineteen")), ("the", ("the",)), ("1st", ("first",))]),
    ("50% of 155", [("50%", ("fifty", "percent")), ("of", ("of",)), ("155", ("one", "hundred", "fifty", "five"))]),
    ("1.5 and £5 or €1", [("1.5", ("one", "point", "five")), ("and", ("and",)), ("£5", ("five", "pounds")),
                          ("or", ("or",)), ("€1", ("one", "euro"))]),
    ("10:05 or 3:00", [("10:05", ("ten", "oh", "five")), ("or", ("or",)), ("3:00", ("three", "o'clock"))]),
    ("call 555-0199", [("call", ("call",)), ("555-0199", ("5550199",))]),  # not spoken out: as before
    ("id " + "9" * 400, [("id", ("id",)), ("9" * 400, ("9" * 400,))]),  # no number anyone says (num2words overflows)
])
def test_written_numbers_are_spoken(text, expected):
    pytest.importorskip("num2words")
    assert spoken_tokens(text) == expected
    assert len(normalise_words(text)) == len(expected)  # counts (limits, words per second) are unchanged


def _cues(placed):
    return [(text, words[0][1], words[-1][2]) for text, words in zip(NUMBERS, placed)]


@pytest.mark.parametrize("offset_ms", [160.0, -210.0])
def test_captions_with_numbers_are_answered(offset_ms):
    pytest.importorskip("pocketsphinx")
    pytest.importorskip("num2words")
    estimate = caption_offset_estimate(_cues, offset_ms, name="numbers.srt", sentences=NUMBERS,
                                       pauses_seconds=(0.5, 1.1), seed=11)
    # before: abstained (words_do_not_match_audio); measured after: 3.1 ms off (forced_spans+onsets)
    assert estimate.text_offset_ms == pytest.approx(offset_ms, abs=10.0), estimate


def test_number_words_keep_their_writing_and_times():
    pytest.importorskip("pocketsphinx")
    pytest.importorskip("num2words")
    audio, placed = speech_over_noise(35.0, sentences=NUMBERS[:5], pauses_seconds=(0.5, 1.1), seed=11)
    transcript = loaders.read_transcript(srt(_cues(placed), 0.0), name="numbers.srt")
    out, failed = caption_words(audio, transcript)
    assert failed == 0
    truth = {w.lower(): start for words in placed for w, start, _ in words}
    got = {w.text: w.start_seconds for w in out.words}
    assert "$1,000" in got and "2021" in got, sorted(got)  # placed (espeak-ng says "dollar one thousand", "two
    # thousand twenty one": not how the aligner says them, so their starts are not compared)
    for token in ("3:30pm", "25%", "3rd", "12", "4", "1.5", "2.0"):  # said as espeak-ng says them
        assert token in got, sorted(got)
        # espeak-ng's word events give each written token's start; measured within 39 ms
        assert abs(got[token] - truth[token]) < 0.06, (token, got[token], truth[token])
