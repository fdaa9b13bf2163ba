"""Segment-level captions on conversational telephone speech: the transcript offset is right or abstains.

Oracle: ``tests/conversation.py`` places two espeak-ng voices at known samples (turns overlapping by
0.4 s, or following each other within 50 ms: long continuous speech), band-passes to 300-3400 Hz,
and writes one caption per turn at ``speech start + jitter + offset``. Jitter (uniform 0-80 ms) models
loose human segment times; an answer more than 50 ms from the offset is confidently wrong.
"""
from __future__ import annotations

from types import SimpleNamespace

import pytest

import aligner
from aligner.estimators import estimate_transcript_offsets, shared_decoder
from tests.conversation import conversation

pytest.importorskip("pocketsphinx")

WRONG_MS = 50.0
CASES = [  # (offset ms, jitter ms, overlap s)
    (-200.0, 0.0, 0.4),
    (250.0, 0.0, 0.4),
    (90.0, 80.0, 0.4),
    (-60.0, 80.0, 0.4),
    (150.0, 30.0, -0.05),
]


@pytest.fixture(scope="module", params=CASES, ids=lambda c: f"off{c[0]:+.0f}-jit{c[1]:.0f}-ovl{c[2]}")
def case(request):
    offset_ms, jitter_ms, overlap = request.param
    try:
        audio, captions, _ = conversation(offset_ms=offset_ms, jitter_ms=jitter_ms, overlap_seconds=overlap, seed=1)
    except OSError as e:  # libespeak-ng missing
        pytest.skip(f"espeak-ng unavailable: {e}")
    return offset_ms, audio, captions, {}


def _estimate(case, method: str) -> aligner.TextEstimate:
    """``estimate_transcript_offset`` of the case with ``method``: every method's estimate computed once per case
    (estimates are frozen), together (``estimate_transcript_offsets``: ``auto`` reuses the energy estimate and forced
    alignment's, equal to each method alone: ``tests/test_text_forced.py``)."""
    _, audio, captions, estimates = case
    if not estimates:
        estimates.update(estimate_transcript_offsets(audio, captions))
    return estimates[method]


@pytest.mark.parametrize("method", ["energy", "forced", "auto"])
def test_never_confidently_wrong(case, method):
    offset_ms = case[0]
    estimate = _estimate(case, method)
    if estimate.abstained:
        record = estimate.abstain_record()
        assert record["reason"] and record["found"] and record["needed"] and record["hint"], record
    else:
        assert abs(estimate.text_offset_ms - offset_ms) <= WRONG_MS, estimate


def test_tight_captions_are_answered(case):
    """With jitter 0 (captions at the speech's first sample) ``auto`` answers, within 15 ms."""
    offset_ms = case[0]
    if offset_ms not in (-200.0, 250.0):
        pytest.skip("loose captions may abstain")
    estimate = _estimate(case, "auto")  # the estimate test_never_confidently_wrong[auto] checked
    assert not estimate.abstained, estimate.abstain_record()
    assert estimate.text_offset_ms == pytest.approx(offset_ms, abs=15.0)


class _LateDecoder:
    """A pocketsphinx decoder whose word segments come ``frames`` 10 ms frames late: forced alignment then dates
    every word ``10·frames`` ms late, and its offset comes out that much early (each word's acoustic score kept)."""

    def __init__(self, inner, frames: int) -> None:
        self.inner, self.frames = inner, frames

    def seg(self):
        segments = self.inner.seg()
        if segments is None:
            return None
        return [SimpleNamespace(word=s.word, start_frame=s.start_frame + self.frames, end_frame=s.end_frame + self.frames,
                                ascore=s.ascore) for s in segments]

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_disagreeing_methods_abstain():
    """``auto`` on captions: an energy answer contradicted by forced alignment (> 40 ms) abstains, explained."""
    audio, captions, _ = conversation(offset_ms=0.0, jitter_ms=0.0, seed=1)
    energy = aligner.estimate_transcript_offset(audio, captions, method="energy")
    assert not energy.abstained and energy.text_offset_ms == pytest.approx(0.0, abs=15.0)
    late = _LateDecoder(shared_decoder(), frames=20)
    by_method = estimate_transcript_offsets(audio, captions, methods=("forced", "auto"), decoder=late)
    forced, estimate = by_method["forced"], by_method["auto"]
    assert forced.best_guess_ms == pytest.approx(-200.0, abs=30.0) and forced.confidence >= 0.1, forced
    assert estimate.abstained and estimate.method == "abstain:methods_disagree"
    record = estimate.abstain_record()
    assert record["best_guess_ms"] == pytest.approx(energy.text_offset_ms, abs=1e-3) and "forced alignment" in record["found"]
    # With the true decoder forced alignment agrees with the caption edges: auto keeps the energy answer, read off the
    # band-SNR onsets near forced alignment's guess (the captions start after pauses over a floor).
    auto = aligner.estimate_transcript_offset(audio, captions, method="auto")
    assert auto.method == energy.method + "+near_forced" and auto.confidence == energy.confidence, auto
    assert auto.text_offset_ms == pytest.approx(0.0, abs=15.0) and auto.text_offset_ms == pytest.approx(
        energy.text_offset_ms, abs=5.0)
