"""Words that forced alignment finds inside captions (SRT, WebVTT, segment-only JSON) carry the caption's writing.

Before, a word's text was the pocketsphinx dictionary token: lowercased and without punctuation ("hello", "paris"),
in ``measure``'s ``words``, ``align.json`` and the loader's ``word_texts`` alike. Now it is the written word without the
punctuation around it ("Hello", "Paris", "Don't", "$1,000", "U.S."); the dictionary is still looked up in lowercase, so
the words' times do not change. Sound tags ("[Music]") and speaker labels ("JOHN:") are not words: neither aligned nor
reported (the segment's text keeps them).

Oracles: the written caption (the expected texts), the same caption lowercased (the dictionary text the aligner saw
before: its word times are the old times), espeak-ng's word times (``tests/espeak_clips.py``).
"""
from __future__ import annotations

import json

import pytest

import aligner
import loaders
from aligner import estimators
from tests.corrupt_cases import write_tar
from tests.espeak_clips import speech_over_noise, srt, wav_bytes

CAPTION = "Hello, Paris! Don't pay $1,000."
SPOKEN = "Hello, Paris! Don't pay one thousand dollars."
"""What the speaker says (espeak-ng says "$1,000" as "dollar one thousand", not as the captioned amount is said)."""
WRITTEN = ["Hello", "Paris", "Don't", "pay", "$1,000"]


@pytest.mark.parametrize("text, expected", [
    (CAPTION, WRITTEN),
    ("- JOHN: Hello. [Music] (applause) >> MARY: Yes!", ["Hello", "Yes"]),  # tags and labels are not words
    ("\u201cQuoted,\u201d he said: 'cause e.g., the U.S. and Mr. Smith's COVID-19 test",
     ["Quoted", "he", "said", "cause", "e.g.", "the", "U.S.", "and", "Mr", "Smith's", "COVID-19", "test"]),
])
def test_caption_words_are_reported_as_written(text, expected):
    tokens = estimators.spoken_tokens(text)
    assert [name for name, _ in tokens] == expected
    assert estimators.written_words(text) == expected
    # The dictionary is looked up in lowercase, one entry per word of normalise_words (counts unchanged).
    assert all(w == w.lower() for _, spoken in tokens for w in spoken)
    assert len(estimators.normalise_words(text)) == len(expected)


@pytest.fixture(scope="module")
def speech():
    """``(audio, [lo, hi) of the caption on the audio clock, espeak-ng's starts of the caption's words)``: :data:`SPOKEN`
    said, :data:`CAPTION` its caption ("$1,000" starts with "one")."""
    pytest.importorskip("pocketsphinx")
    pytest.importorskip("num2words")
    audio, placed = speech_over_noise(35.0, sentences=(SPOKEN,))
    words = placed[0]
    return audio, (words[0][1] - 0.3, words[-1][2] + 0.3), [start for _, start, _ in words[:5]]


def test_forced_words_keep_their_writing_and_their_times(speech):
    audio, (lo, hi), true_starts = speech
    decoder = estimators.shared_decoder()
    words = estimators.forced_align_words(audio, CAPTION, lo, hi, decoder=decoder)
    lowered = estimators.forced_align_words(audio, CAPTION.lower(), lo, hi, decoder=decoder)
    assert [w.text for w in words] == WRITTEN
    assert [w.text for w in lowered] == ["hello", "paris", "don't", "pay", "$1,000"]
    # Times as before: those of the dictionary text the aligner was given before (the caption lowercased), exactly.
    assert [(w.start_seconds, w.stop_seconds) for w in words] == [(w.start_seconds, w.stop_seconds) for w in lowered]
    # and where espeak-ng said the words
    assert all(abs(w.start_seconds - t) < 0.06 for w, t in zip(words, true_starts)), \
        [(w.text, w.start_seconds, t) for w, t in zip(words, true_starts)]


def test_aligned_captions_carry_the_written_words(speech):
    """Through ``aligner.align`` (what ``measure``, ``preprocess`` and the loader call): a caption with a speaker label
    and a sound tag gives the written words at the times of the lowercased caption; the segment keeps its text."""
    audio, (lo, hi), _ = speech

    def aligned(text: str):
        transcript = loaders.read_transcript(srt([(text, lo, hi)], 0.0), name="caption.srt")
        return aligner.align(None, audio, transcript, estimate=False, text_offset_ms=0.0)

    labelled = aligned(f"JOHN: {CAPTION} [Music]")
    lowered = aligned(CAPTION.lower())
    assert labelled.report.caption_words_failed == 0
    assert [w.text for w in labelled.words] == WRITTEN
    assert [s.text for s in labelled.segments] == [f"JOHN: {CAPTION} [Music]"]
    assert [w.text for w in lowered.words] == ["hello", "paris", "don't", "pay", "$1,000"]
    assert [(w.start_seconds, w.stop_seconds, w.sample_start, w.sample_stop) for w in labelled.words] == \
        [(w.start_seconds, w.stop_seconds, w.sample_start, w.sample_stop) for w in lowered.words]


def test_loader_batches_carry_the_written_words(speech, tmp_path):
    """A shard sample (``KEY.wav`` + ``KEY.srt``, its clock given by ``KEY.align.json``): the batch's ``word_texts``
    are the caption's words as written, and each word owns its written piece's tokens (``Hello,`` for ``Hello``)."""
    audio, (lo, hi), _ = speech
    shard = write_tar(tmp_path / "shard-000000.tar", [
        ("talk.wav", wav_bytes(audio)),
        ("talk.srt", srt([(CAPTION, lo, hi)], 0.0)),
        ("talk.align.json", json.dumps({"av_offset_ms": 0.0, "drift_ppm": 0.0, "text_offset_ms": 0.0}).encode()),
    ])
    batches = list(loaders.make_loader(shard, seed=0, budgets=(1, audio.num_samples + 16000, 64), tail="trim"))
    assert [b.sample_keys for b in batches] == [("talk",)]
    batch = batches[0]
    assert list(batch.word_texts) == WRITTEN and list(batch.segment_texts) == [CAPTION]
    # whitespace tokens of the caption: "Hello," "Paris!" "Don't" "pay" "$1,000." -> one per word, in order
    assert batch.word_spans[:5, 5].tolist() == [0, 1, 2, 3, 4] and batch.word_spans[:5, 6].tolist() == [1, 2, 3, 4, 5]


# ---------------------------------------------------------------- typographic apostrophes and hyphenated words

TYPOGRAPHIC = "Don\u2019t pay the well-known man\u2014now."
"""A caption as subtitles and ASR output write it: a curly apostrophe, a hyphenated word, an em dash between words.
Before, their dictionary forms (``dont``, ``wellknown``, ``mannow``) are in no dictionary and the words were left out."""
PLAIN = "Don't pay the well known man now."
"""The same words as the dictionary holds them: the oracle of the times."""


def test_typographic_apostrophes_and_dashes_are_said_as_the_dictionary_holds_them():
    assert estimators.spoken_tokens(TYPOGRAPHIC) == [
        ("Don\u2019t", ("don't",)), ("pay", ("pay",)), ("the", ("the",)), ("well-known", ("well", "known")),
        ("man\u2014now", ("man", "now"))]
    assert estimators.normalise_words("It\u2019s \u2018quoted\u2019") == ["it's", "quoted"]
    # a word with digits keeps its own rule: not split at its hyphen
    assert estimators.spoken_tokens("555-0199")[0][1] in (("5550199",), ("five", "five", "five", "zero", "one", "nine", "nine"))


def test_typographic_caption_words_are_aligned_not_left_out():
    pytest.importorskip("pocketsphinx")
    audio, placed = speech_over_noise(35.0, sentences=(PLAIN,), seed=5)
    words = placed[0]
    lo, hi = words[0][1] - 0.3, words[-1][2] + 0.3
    decoder = estimators.shared_decoder()
    typographic = estimators.forced_align_words(audio, TYPOGRAPHIC, lo, hi, decoder=decoder)
    plain = estimators.forced_align_words(audio, PLAIN, lo, hi, decoder=decoder)
    assert [w.text for w in typographic] == ["Don\u2019t", "pay", "the", "well-known", "man\u2014now"]
    assert [w.text for w in plain] == ["Don't", "pay", "the", "well", "known", "man", "now"]
    # each written word spans the words it is said as, at the times of the plain caption
    spans = [(w.start_seconds, w.stop_seconds) for w in plain]
    assert [(w.start_seconds, w.stop_seconds) for w in typographic] == \
        spans[:3] + [(spans[3][0], spans[4][1]), (spans[5][0], spans[6][1])]
    # and where espeak-ng said them (pocketsphinx puts "now", after "man", 0.1 s late: the median is the check)
    errors = sorted(abs(w.start_seconds - start) for w, (_, start, _) in zip(plain, words))
    assert errors[len(errors) // 2] < 0.03, [(w.text, w.start_seconds, start) for w, (_, start, _) in zip(plain, words)]
