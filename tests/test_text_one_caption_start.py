"""Forced alignment's bare caption answer on one caption start abstains (``few_caption_edges``).

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``) on a TUNE2 seed, where the rule was chosen
(BENCHMARKS.md, "Transcript offset: forced alignment alone on one caption start").

TUNE2 41005 (SRT: "Nine silver trains arrived" / "early", the second abutting the first): one caption start after a
pause decides forced alignment's answer, 81.0 ms off at confidence 0.62; energy's peak is 79 ms from it. ``auto``
abstains (``few_caption_edges``) and keeps forced alignment's answer as its best guess.
"""
from __future__ import annotations

import pytest

from aligner.estimators import caption_edges, estimate_transcript_offsets, new_decoder

pytest.importorskip("pocketsphinx")


@pytest.mark.slow
def test_a_bare_forced_answer_on_one_caption_start_abstains(wild_seed) -> None:
    record, audio, transcript = wild_seed(41005)
    truth = record["text_offset_ms"]
    assert [s.text for s in transcript.spans] == ["Nine silver trains arrived", "early"]
    assert caption_edges(transcript) == 1
    by = estimate_transcript_offsets(audio, transcript, methods=("energy", "forced", "auto"), decoder=new_decoder())
    energy, forced, auto = by["energy"], by["forced"], by["auto"]
    assert energy.abstained and abs(energy.best_guess_ms - forced.text_offset_ms) > 30.0
    assert abs(forced.text_offset_ms - truth) > 50.0  # forced alignment alone: confidently wrong (81 ms)
    assert auto.abstained and auto.method == "abstain:few_caption_edges", auto
    assert auto.best_guess_ms == pytest.approx(forced.text_offset_ms)
    assert forced.num_starts_after_pause == 1
    assert "1 caption start(s) out of silence" in auto.found and "forced alignment alone" in auto.found
    assert "at least 2 caption starts out of silence" in auto.needed
