"""Forced alignment's bare answers: the energy peak read within 30 ms of them, and an answer on one caption start.

Oracle: the wild generator's truth (``avalign.synth.make_wild_clip``) on TUNE2 seeds, where both rules were chosen
(BENCHMARKS.md, "Transcript offset: the energy peak within 30 ms of forced alignment").

- TUNE2 41039 (WhisperX words, reverb 57, noise at 21 dB): energy abstains, forced alignment answers 27.9 ms early,
  and energy's abstained peak is 3.5 ms from the truth, 24.4 ms from forced alignment's answer: outside the former
  20 ms window, inside the onset reading's 30 ms.
- TUNE2 41005 (SRT: "Nine silver trains arrived" / "early", the second abutting the first): one caption start after a
  pause decides forced alignment's answer, 81.0 ms off at confidence 0.62; energy's peak is 79 ms from it. ``auto``
  abstains (``few_caption_edges``) and keeps forced alignment's answer as its best guess.
"""
from __future__ import annotations

import pytest

from aligner.estimators import caption_edges, estimate_transcript_offsets, new_decoder

pytest.importorskip("pocketsphinx")


@pytest.mark.slow
def test_energy_peak_within_30_ms_dates_a_bare_forced_answer(wild_seed) -> None:
    record, audio, transcript = wild_seed(41039)
    truth = record["text_offset_ms"]
    by = estimate_transcript_offsets(audio, transcript, methods=("energy", "forced", "auto"), decoder=new_decoder())
    energy, forced, auto = by["energy"], by["forced"], by["auto"]
    assert energy.abstained and not forced.abstained and transcript.words
    assert abs(forced.text_offset_ms - truth) > 25.0  # the bare answer, 27.9 ms early
    assert 20.0 < abs(energy.best_guess_ms - forced.text_offset_ms) <= 30.0
    assert auto.method == "forced_words+energy_peak", auto
    assert auto.text_offset_ms == pytest.approx(energy.best_guess_ms)
    assert auto.text_offset_ms == pytest.approx(truth, abs=6.0)
    assert auto.confidence == pytest.approx(forced.confidence)


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
    assert "1 caption start after a pause" in auto.found and "forced alignment alone" in auto.found
    assert "at least 2 caption starts" in auto.needed
