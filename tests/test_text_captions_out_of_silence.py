"""Caption offsets read from the captions that start out of silence.

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``), TUNE seeds (the rule was chosen on TUNE; its
held-out figures are in BENCHMARKS.md, "Transcript offset: captions out of silence"). TUNE 1010: two WebVTT captions,
the second cut inside connected speech. Its first caption starts out of silence, 0.6 ms from the truth by forced
alignment; the second starts at a word boundary inside speech, 70.6 ms off, and the median of both answered 35.6 ms off.
"""
from __future__ import annotations

import numpy as np
import pytest

from aligner.estimators import estimate_transcript_offsets, new_decoder

pytest.importorskip("pocketsphinx")


@pytest.mark.slow
def test_a_caption_cut_inside_speech_does_not_move_the_offset(wild_tune) -> None:
    record, audio, captions = wild_tune(1010)
    truth = record["text_offset_ms"]
    spans = captions.spans
    assert not captions.words and len(spans) == 2 and spans[1].start_seconds - spans[0].stop_seconds < 0.08
    forced = estimate_transcript_offsets(audio, captions, methods=("forced",), decoder=new_decoder())["forced"]
    assert not forced.abstained, forced
    differences = [d for _, d in forced.item_differences_ms]
    assert abs(differences[0] - truth) <= 5.0  # out of silence
    assert abs(float(np.median(differences)) - truth) > 25.0  # what the median of all answered
    assert forced.text_offset_ms == pytest.approx(differences[0])
    auto = estimate_transcript_offsets(audio, captions, decoder=new_decoder())["auto"]
    assert auto.text_offset_ms == pytest.approx(truth, abs=5.0), auto
