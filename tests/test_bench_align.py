"""``avalign bench align`` on a tiny generated set: structure, and accuracy against the generator's truth.

Oracles: the clip specs (``random_specs``) for the true values; the clock model of DESIGN.md for the
naive word error (a raw stamp of a word at video time ``t`` is ``t·(1 + drift) + av_offset + text_offset``);
closed-form statistics for ``error_stats``.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from avalign.bench import TARGETS, bench_align, error_stats, format_align_table
from avalign.synth import random_specs

SEED = 9  # three clips: webm/vp9+opus (jsonlist), mkv (vtt), mp4 VFR (srt)

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="ffmpeg is not installed")


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return bench_align(num_clips=3, seed=SEED, work_dir=tmp_path_factory.mktemp("bench_align"), real=False,
                       repeats=1, timing=False, wild=False)


def test_null_threshold_rule_closed_form():
    from avalign.bench import calibrate_null_threshold

    scores = list(np.arange(100) / 100.0)  # 0.00 .. 0.99: the 99.5th percentile is 0.98505, the 99th 0.9801
    got = calibrate_null_threshold(scores)  # half the 1 % target by default
    assert got["num_pairs"] == 100 and got["max"] == pytest.approx(0.99)
    assert got["quantile"] == pytest.approx(0.98505) and got["threshold"] == pytest.approx(1.0)
    assert calibrate_null_threshold(scores, rate=0.01)["quantile"] == pytest.approx(0.9801)
    assert calibrate_null_threshold(list(np.arange(1000) / 1000.0))["threshold"] == pytest.approx(1.0)
    assert calibrate_null_threshold(list(np.arange(1000) / 1000.0), rate=0.02)["threshold"] == pytest.approx(1.0)
    assert calibrate_null_threshold(list(np.arange(1000) / 1000.0), rate=0.2)["threshold"] == pytest.approx(0.8)
    assert calibrate_null_threshold([0.2, 0.3])["threshold"] == pytest.approx(0.3)


def test_wild_clock_error_is_over_the_clip():
    from avalign.bench import clock_errors_ms

    record = {"duration_seconds": 10.0, "av_offset_ms": 100.0, "drift_ppm": 1000.0}
    # drift not reported, offset right at mid-clip (105 ms): 0 at mid-clip, 5 ms at both ends
    assert clock_errors_ms(record, 105.0, None) == pytest.approx((0.0, 5.0))
    assert clock_errors_ms(record, 100.0, 1000.0) == pytest.approx((0.0, 0.0))


def test_error_stats_closed_form():
    stats = error_stats([1.0, None, 3.0, 2.0, 10.0])
    assert stats == {"count": 4, "abstained": 1, "median": 2.5, "p90": pytest.approx(10 - 0.1 * 3 * 7), "max": 10.0}
    assert error_stats([None]) == {"count": 0, "abstained": 1, "median": None, "p90": None, "max": None}


def test_rows_carry_the_generator_truth(result):
    specs = random_specs(SEED, 3, prefix="bench")
    assert [r["key"] for r in result["clips"]] == [s.key for s in specs]
    for row, spec in zip(result["clips"], specs):
        assert (row["true_av_offset_ms"], row["true_drift_ppm"], row["true_text_offset_ms"]) == \
               (spec.av_offset_ms, spec.drift_ppm, spec.text_offset_ms)
        assert row["container"] == spec.container and row["transcript_format"] == spec.transcript_format
        assert row["naive_av_error_ms"] == abs(spec.av_offset_ms)
        if row["av_offset_ms"] is not None:
            assert row["av_error_ms"] == pytest.approx(abs(row["av_offset_ms"] - spec.av_offset_ms))


def test_accuracy_meets_targets(result):
    s = result["summary"]
    assert s["av_offset_error_ms"]["count"] == 3  # no abstention on flash/beep clips
    assert s["av_offset_error_ms"]["median"] <= TARGETS["av_offset_error_ms_median"]
    for row in result["clips"]:
        assert row["av_error_ms"] <= row["frame_ms"], row["key"]
        # 5-8 s clips: drift is reported only when the clip resolves it (else None, 0 applied)
        assert row["drift_error_ppm"] is None or row["drift_error_ppm"] <= TARGETS["drift_error_ppm_max"], row["key"]
        assert row["text_error_ms"] <= TARGETS["text_offset_error_ms_max"], row["key"]
    words = s["word_start_error_ms"]
    assert words["count"] >= 5
    assert words["median"] <= TARGETS["word_start_error_ms_median"] and words["p90"] <= TARGETS["word_start_error_ms_p90"]
    assert s["caption_start_error_ms"]["count"] >= 2  # the VTT and SRT clips
    assert s["caption_start_error_ms"]["max"] <= 20.0
    forced = s["forced_word_start_error_ms"]  # captions split into words by pocketsphinx, when installed
    if forced["count"]:
        assert forced["median"] <= TARGETS["word_start_error_ms_median"]
    # The aligner must beat the naive reading by far on these offsets.
    assert s["naive_word_start_error_ms"]["median"] > 5 * words["median"]


def test_naive_word_error_follows_the_clock_model(result):
    """Raw stamp − true time = t·drift + av_offset + text_offset (stamps rounded to 1 ms or finer)."""
    for row in result["clips"]:
        if "word_error_naive_ms" not in row:
            continue
        with open(f"{result['work_dir']}/clips/{row['key']}.truth.json") as f:
            truth = json.load(f)
        t = np.asarray([w["start_seconds"] for w in truth["words"]])
        expected = np.abs(t * row["true_drift_ppm"] * 1e-6 + (row["true_av_offset_ms"] + row["true_text_offset_ms"]) / 1000) * 1000
        np.testing.assert_allclose(row["word_error_naive_ms"], expected, atol=0.6)


def test_table_reports_targets_and_clips(result):
    text = format_align_table(result)
    assert "| A/V offset error median (ms) | 5.0 |" in text
    assert all(f"| {r['key']} |" in text for r in result["clips"])
    assert "NO |" not in text  # every target met on this set
