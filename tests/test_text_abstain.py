"""Text abstentions explain themselves: ``text_abstain`` {reason, found, needed, best_guess_ms, hint} in the
``measure`` record (``--json``), its table, and ``AlignmentReport``; null when the estimator answers."""
from __future__ import annotations

import loaders
from avalign import format_measurement, measure_sample
from conftest import SAMPLE_DATA, sample_truth


def test_unrelated_captions_abstain_with_an_explanation():
    truth = sample_truth()
    audio = loaders.read_audio(str(SAMPLE_DATA / truth["clip01"]["media"]))
    other = loaders.read_transcript(str(SAMPLE_DATA / truth["clip02"]["transcript"]))  # another clip's captions
    record = measure_sample(None, audio, other, text_method="energy")
    why = record["text_abstain"]
    assert record["text_offset_ms"] is None and record["text_method"] == "abstain:" + why["reason"]
    assert set(why) == {"reason", "found", "needed", "best_guess_ms", "hint"}
    assert why["found"] and why["needed"] and why["hint"]
    record.update(media="clip01", transcript="clip02.vtt")
    table = format_measurement(record)
    assert f"why       {why['reason']}: found {why['found']}" in table and why["hint"] in table


def test_answer_has_no_abstain_record():
    truth = sample_truth()["clip00"]
    audio = loaders.read_audio(str(SAMPLE_DATA / truth["media"]))
    record = measure_sample(None, audio, loaders.read_transcript(str(SAMPLE_DATA / truth["transcript"])))
    assert record["text_offset_ms"] is not None and record["text_abstain"] is None
