"""Two captions: forced alignment's evidence is counted in placed words, so two fitting, agreeing captions answer.

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``), TUNE seed 1016: one sentence in two VTT captions
over a music bed. Before (main at f8756e5) forced alignment placed both captions within 2.2 ms of the truth, yet its
confidence stopped at 0.25 (two items of eight for full evidence) and ``auto`` abstained (``low_confidence``).
"""
from __future__ import annotations

import pytest

from aligner.estimators import estimate_transcript_offsets
from avcore import Transcript

pytest.importorskip("pocketsphinx")


@pytest.mark.slow
def test_two_fitting_captions_answer(wild_tune) -> None:
    record, audio, captions = wild_tune(1016)
    assert not captions.words and len(captions.spans) == 2
    by_method = estimate_transcript_offsets(audio, captions, methods=("forced", "auto"))
    for method in ("forced", "auto"):
        estimate = by_method[method]
        assert not estimate.abstained, (method, estimate.abstain_record())
        assert estimate.text_offset_ms == pytest.approx(record["text_offset_ms"], abs=25.0), method
        assert estimate.confidence >= 0.3


@pytest.mark.slow
def test_one_caption_alone_does_not_answer(wild_tune) -> None:
    """One caption's difference agrees with nothing: its evidence stays at 1/8 however many words it holds."""
    _, audio, captions = wild_tune(1016)
    one = Transcript(captions.spans[:1])
    forced = estimate_transcript_offsets(audio, one, methods=("forced",))["forced"]
    assert forced.abstained and forced.confidence <= 0.125 + 1e-9, forced
