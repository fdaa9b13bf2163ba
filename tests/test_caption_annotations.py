"""Captions as subtitle files and ASR tools write them: sound tags (``[Music]``, ``(applause)``) and speaker labels
(``JOHN:``, ``- MARY:``) are not speech. Forced alignment aligned them as spoken words ("john", "applause", "music"),
which moved every labelled caption's words and lost the transcript offset over a noise bed (BENCHMARKS.md,
"Transcripts as real ASR and subtitle files come").

Oracle: espeak-ng speech placed at known samples (its word times from ``avalign.synth.synthesize_speech``), a known
transcript offset.
"""
from __future__ import annotations

import numpy as np
import pytest

import loaders
from aligner.estimators import caption_words, normalise_words
from tests.espeak_clips import SENTENCES, caption_offset_estimate, speech_over_noise, srt


@pytest.mark.parametrize("text, expected", [
    ("JOHN: Seven bright lamps.", ["seven", "bright", "lamps"]),
    ("- MARY: Hi. - DR. SMITH: Hello.", ["hi", "hello"]),
    (">> REPORTER: We are live.", ["we", "are", "live"]),
    ("[Music]", []),
    ("(applause) Thank you. [door closes]", ["thank", "you"]),
    ("[SPEAKER_00]: good morning", ["good", "morning"]),
    ("\u266a la la \u266a", ["la", "la"]),
    ("Note: this stays, and so does Don't!", ["note", "this", "stays", "and", "so", "does", "don't"]),
])
def test_sound_tags_and_speaker_labels_are_not_words(text, expected):
    assert normalise_words(text) == expected


def _labelled(placed):
    """Every other caption opens with a speaker label, the others with a dialogue dash; an ``(applause)`` cue in the
    pause after the third."""
    cues = [(("JOHN: " if i % 2 == 0 else "- ") + text, words[0][1], words[-1][2])
            for i, (text, words) in enumerate(zip(SENTENCES, placed))]
    cues.insert(3, ("(applause)", placed[2][-1][2] + 0.05, placed[3][0][1] - 0.05))
    return cues


@pytest.mark.parametrize("offset_ms", [0.0, 200.0])
def test_labelled_captions_over_noise_are_answered(offset_ms):
    pytest.importorskip("pocketsphinx")
    estimate = caption_offset_estimate(_labelled, offset_ms, name="labelled.srt")
    # measured: -2.6 ms off at both offsets (before: abstained, low_confidence and words_not_heard)
    assert estimate.text_offset_ms == pytest.approx(offset_ms, abs=10.0), estimate


def test_labelled_caption_words_are_the_spoken_words():
    pytest.importorskip("pocketsphinx")
    audio, placed = speech_over_noise(35.0)
    transcript = loaders.read_transcript(srt(_labelled(placed)[:4], 0.0), name="labelled.srt")
    out, failed = caption_words(audio, transcript)
    assert failed == 0
    spoken = [(w, start) for words in placed[:3] for w, start, _ in words]  # as written ("Seven")
    assert [w.text for w in out.words] == [w for w, _ in spoken]  # no "john", no "applause"
    errors_ms = [abs(w.start_seconds - start) * 1000 for w, (_, start) in zip(out.words, spoken)]
    assert np.median(errors_ms) < 30.0 and max(errors_ms) < 100.0, errors_ms
