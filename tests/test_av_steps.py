"""The A/V estimator's steps, each against an analytic oracle (no media): event detection, the lag × drift
match, pairing and the Theil–Sen drift fit. Truth: events placed exactly on ``a = t·(1 + drift) + offset``."""
from __future__ import annotations

import numpy as np
import pytest

from aligner import AVOptions
from aligner.estimators import OFFSET_PERCENTILE, AudioOnsets, detect_visual_events, fit_drift, match_lag_drift, matched_pairs

FPS = 30.0


def _visual(num_frames: int, flashes: list[int], *, flicker: list[int] = (), seed: int = 0) -> np.ndarray:
    """Codec-like noise (< 0.3 luma), strong isolated flashes, and optional weaker steady flicker."""
    visual = np.random.default_rng(seed).uniform(0.0, 0.3, num_frames)
    visual[0] = 0.0
    visual[list(flashes)] = 60.0
    visual[list(flicker)] = 20.0
    return visual


def test_isolated_flashes_are_events_and_steady_flicker_is_not() -> None:
    pts = 0.007 + np.arange(600) / FPS  # a first pts that is not zero
    flashes = [40, 150, 290, 420]
    flicker = list(range(480, 600, 3))  # a region changing every 3 frames by similar amounts (a mouth)
    events = detect_visual_events(_visual(600, flashes, flicker=flicker), pts)
    assert events.times_seconds.tolist() == pts[flashes].tolist()
    assert events.weights.tolist() == [1.0] * 4  # equal strengths: every event counts fully
    assert events.num_continuous == len(flicker)
    with pytest.raises(ValueError, match=r"\[T\]"):
        detect_visual_events(np.zeros(5), np.zeros(4))


def _line(offset_ms: float, drift_ppm: float, num_events: int = 12, span_seconds: float = 40.0):
    frames = np.linspace(15, span_seconds * FPS, num_events).astype(int)
    pts = np.arange(int(span_seconds * FPS) + 30) / FPS
    events = detect_visual_events(_visual(pts.size, list(frames)), pts)
    audio_t = pts[frames] * (1.0 + drift_ppm * 1e-6) + offset_ms / 1000.0
    onsets = AudioOnsets(audio_t, np.full(audio_t.size, 10.0), span_seconds + 1.0)
    return events, onsets


@pytest.mark.parametrize(("offset_ms", "drift_ppm"), [(40.0, 0.0), (-123.0, 800.0), (250.0, -500.0)])
def test_match_pairs_and_drift_fit_recover_the_line(offset_ms: float, drift_ppm: float) -> None:
    events, onsets = _line(offset_ms, drift_ppm)
    options = AVOptions()
    match = match_lag_drift(events, onsets, options)
    # The best cell is on the line: within one lag step (1 ms) of it at the events' centre.
    centre = match.centre_seconds
    assert match.lag_seconds == pytest.approx(offset_ms / 1000 + drift_ppm * 1e-6 * centre, abs=0.0011)
    # Every event matched: an audio event of the clip's median strength weighs 1 / 1.5, and the drift grid (steps
    # keeping d·span/2 <= 2.5 ms) costs each event at most a little of its kernel's peak.
    full = events.num_events / 1.5
    assert 0.9 * full <= match.peak_matches <= full + 1e-9 and not match.at_search_edge
    pairs = matched_pairs(events.times_seconds, onsets, match)
    assert pairs.num_matched == events.num_events
    assert pairs.audio_seconds.tolist() == onsets.times_seconds.tolist()
    fit = fit_drift(pairs, options)
    assert fit.method == "event_match+theil_sen"
    assert fit.offset_ms == pytest.approx(offset_ms, abs=1e-6) and fit.drift_ppm == pytest.approx(drift_ppm, abs=1e-3)
    # A span shorter than min_drift_span_seconds: no line, the offset is the OFFSET_PERCENTILE percentile of a − t over the pairs.
    short = fit_drift(pairs, AVOptions(min_drift_span_seconds=100.0))
    top_ms = 1000.0 * float(np.percentile(onsets.times_seconds - events.times_seconds, OFFSET_PERCENTILE))
    assert short.method == "event_match" and short.drift_ppm is None and short.offset_ms == pytest.approx(top_ms)


def test_drift_fit_ignores_an_outlier_pair() -> None:
    """Theil–Sen: one pair 6 ms off the line changes neither the slope nor the intercept beyond noise."""
    events, onsets = _line(-60.0, 300.0)
    moved = onsets.times_seconds.copy()
    moved[5] += 0.006
    match = match_lag_drift(events, AudioOnsets(moved, onsets.strength, onsets.duration_seconds), AVOptions())
    pairs = matched_pairs(events.times_seconds, AudioOnsets(moved, onsets.strength, onsets.duration_seconds), match)
    fit = fit_drift(pairs, AVOptions())
    assert pairs.num_matched == events.num_events  # 6 ms is within the 8 ms pairing distance
    assert fit.offset_ms == pytest.approx(-60.0, abs=0.6) and fit.drift_ppm == pytest.approx(300.0, abs=30.0)


def test_match_needs_events_on_both_sides() -> None:
    events, onsets = _line(0.0, 0.0)
    with pytest.raises(ValueError, match="need visual and audio events"):
        match_lag_drift(events, AudioOnsets(np.zeros(0), np.zeros(0), 1.0), AVOptions())


def test_late_visual_dates_put_the_offset_at_the_top_of_the_pairs() -> None:
    """Events seen late by up to 24 ms (a light that came on while a short shutter was closed): each sound starts
    ``lag_k`` before its event's pts, lags spread evenly over [0, 24] ms. The pairs within ``OFFSET_PAIR_SECONDS``
    hold every event (the match's line sits inside the spread), and the offset read at the top of their spread is
    within 2.5 ms of the truth (the lags' 10th percentile is 2.4 ms); the 70th percentile of those within 8 ms, the
    former rule, is 6 ms or more off."""
    from aligner.estimators import OFFSET_PAIR_SECONDS

    events, onsets = _line(75.0, 0.0, num_events=25)
    lags = np.random.default_rng(3).permutation(np.linspace(0.0, 0.024, 25))
    late = AudioOnsets(onsets.times_seconds - lags, onsets.strength, onsets.duration_seconds)
    options = AVOptions()
    match = match_lag_drift(events, late, options)
    near = matched_pairs(events.times_seconds, late, match)
    wide = matched_pairs(events.times_seconds, late, match, window_seconds=OFFSET_PAIR_SECONDS)
    assert near.num_matched < wide.num_matched == events.num_events
    fit = fit_drift(near, options, wide)
    assert abs(fit.offset_ms - 75.0) <= 2.5, fit
    former = 1000.0 * float(np.percentile(near.audio_seconds - near.video_seconds, 70.0))
    assert abs(former - 75.0) >= 6.0, former
