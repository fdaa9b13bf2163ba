"""Word-level transcripts over exact digital silence: an energy answer stands only where forced alignment hears the
words there (issue #12: never answer confidently wrong).

Oracle: the generator's truth (``avalign.synth.make_clip``) on ``random_specs(33033, 40, prefix="tw")``, the
word-level digital-silence tune set of BENCHMARKS.md ("Word times in digital silence: the heard check").

- tw0003's audio with tw0009's WhisperX words (no shared sentence): energy dated its onsets at -427.6 ms, confidence
  over the threshold, and ``auto`` kept it unchecked (word times in digital silence). Forced alignment hears almost
  none of the words there: the answer now abstains ``words_not_heard``.
- tw0009 and tw0024 with their own words: still answered, within 3 ms of the truth.
"""
from __future__ import annotations

import pytest

from aligner.estimators import estimate_transcript_offsets, new_decoder

pytest.importorskip("pocketsphinx")

NEEDED = ("tw0003", "tw0009", "tw0024")


@pytest.fixture(scope="module")
def tw(tmp_path_factory):
    from conftest import random_spec_clips

    return random_spec_clips(tmp_path_factory, 33033, 40, "tw", NEEDED)


def _estimates(audio, transcript):
    return estimate_transcript_offsets(audio, transcript, methods=("energy", "auto"), decoder=new_decoder())


@pytest.mark.slow
def test_another_clips_words_in_digital_silence_are_not_answered(tw):
    _, audio, _ = tw("tw0003")
    _, _, words = tw("tw0009")
    assert words.words, "the null transcript must carry word times"
    got = _estimates(audio, words)
    assert not got["energy"].abstained, "energy alone answers this null pairing (the case the check is for)"
    assert got["auto"].method == "abstain:words_not_heard", got["auto"]
    assert got["auto"].best_guess_ms == pytest.approx(got["energy"].text_offset_ms)
    assert "speech energy" in got["auto"].found


@pytest.mark.slow
@pytest.mark.parametrize("key", ["tw0009", "tw0024"])
def test_own_words_in_digital_silence_are_still_answered(tw, key):
    record, audio, words = tw(key)
    got = _estimates(audio, words)["auto"]
    assert got.method.startswith("word_onsets"), got
    assert got.text_offset_ms == pytest.approx(record["text_offset_ms"], abs=3.0)
