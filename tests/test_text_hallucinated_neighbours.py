"""A caption that was never said (Whisper's "Thank you for watching." over silence or music) is aligned with the
captions less than 1.2 s from it as one chunk. The chunk failed (or fit the audio too badly), and the real captions in
it were lost with it: transcript offsets abstained. A chunk that fails or does not fit is retried one caption at a
time, each judged by its own fit (BENCHMARKS.md, "Caption words on real ASR text").

Oracle: espeak-ng speech placed at known samples, a known transcript offset; another clip's transcript must abstain.
"""
from __future__ import annotations

import pytest

from tests.espeak_clips import SENTENCES, caption_offset_estimate

_NEVER_SAID = ("Thank you.", "Thank you for watching.")


def _with_hallucinations(placed, texts=SENTENCES):
    cues = [(text, words[0][1], words[-1][2]) for text, words in zip(texts, placed)]
    end = placed[-1][-1][2]
    return [(_NEVER_SAID[0], 0.2, 1.3)] + cues + [(_NEVER_SAID[1], end + 0.1, end + 0.95)]


@pytest.mark.parametrize("offset_ms", [0.0, 150.0])
def test_real_captions_next_to_a_hallucination_are_answered(offset_ms):
    pytest.importorskip("pocketsphinx")
    estimate = caption_offset_estimate(_with_hallucinations, offset_ms, name="whisper.srt")
    # before: abstained (low_confidence); measured after: 2.4 ms off
    assert estimate.text_offset_ms == pytest.approx(offset_ms, abs=10.0), estimate


def test_another_clips_transcript_with_hallucinations_abstains():
    pytest.importorskip("pocketsphinx")
    others = SENTENCES[4:] + SENTENCES[:4]  # other sentences at these times, as another clip's captions would be
    estimate = caption_offset_estimate(lambda placed: _with_hallucinations(placed, others), 0.0, name="other.srt")
    assert estimate.text_offset_ms is None, estimate
