"""Segment-level captions on conversational telephone speech: the transcript offset is right or abstains.

Oracle: ``tests/conversation.py`` places two espeak-ng voices at known samples (turns overlapping by
0.4 s, or following each other within 50 ms: long continuous speech), band-passes to 300-3400 Hz,
and writes one caption per turn at ``speech start + jitter + offset``. Jitter (uniform 0-80 ms) models
loose human segment times; an answer more than 50 ms from the offset is confidently wrong.
"""
from __future__ import annotations

import pytest

import aligner
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
    return offset_ms, audio, captions


@pytest.mark.parametrize("method", ["energy", "forced", "auto"])
def test_never_confidently_wrong(case, method):
    offset_ms, audio, captions = case
    estimate = aligner.estimate_transcript_offset(audio, captions, method=method)
    if estimate.abstained:
        record = estimate.abstain_record()
        assert record["reason"] and record["found"] and record["needed"] and record["hint"], record
    else:
        assert abs(estimate.text_offset_ms - offset_ms) <= WRONG_MS, estimate


def test_tight_captions_are_answered(case):
    """With jitter 0 (captions at the speech's first sample) ``auto`` answers, within 15 ms."""
    offset_ms, audio, captions = case
    if offset_ms not in (-200.0, 250.0):
        pytest.skip("loose captions may abstain")
    estimate = aligner.estimate_transcript_offset(audio, captions, method="auto")
    assert not estimate.abstained, estimate.abstain_record()
    assert estimate.text_offset_ms == pytest.approx(offset_ms, abs=15.0)


def test_disagreeing_methods_abstain(monkeypatch):
    """``auto`` on captions: an energy answer contradicted by forced alignment (> 50 ms) abstains, explained."""
    from aligner import _text_forced
    from aligner._text_offset import TextEstimate

    audio, captions, _ = conversation(offset_ms=0.0, jitter_ms=0.0, seed=1)
    import aligner._text_offset as energy_module

    monkeypatch.setattr(energy_module, "estimate_text_offset",
                        lambda *a, **k: TextEstimate(472.0, 0.6, "span_onsets+activity", 9, 6.0, 472.0))
    estimate = _text_forced.estimate_transcript_offset(audio, captions, method="auto")
    assert estimate.abstained and estimate.method == "abstain:methods_disagree"
    record = estimate.abstain_record()
    assert record["best_guess_ms"] == 472.0 and "forced alignment" in record["found"], record
