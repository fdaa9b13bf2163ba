"""The one rounding rule and the pts rule (avcore/_time.py), with hypothesis invariants."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from avcore import check_window_overlaps, frame_played_at, frame_range, sample_range, samples_to_seconds, seconds_to_samples, span_sample_range

RATES = st.sampled_from([8000, 16000, 22050, 24000, 44100, 48000])


def test_half_up_rounding_at_exact_halves():
    assert seconds_to_samples(0.5 / 16000, 16000) == 1  # 0.5 samples -> 1
    assert seconds_to_samples(1.5 / 16000, 16000) == 2
    assert seconds_to_samples(2.5 / 16000, 16000) == 3  # banker's rounding would give 2
    assert seconds_to_samples(0.1, 16000) == 1600  # 0.1*16000 = 1600.0000000000002 in floats
    assert seconds_to_samples(0.0, 44100) == 0


def test_rejects_bad_rate():
    with pytest.raises(ValueError, match="sample_rate"):
        seconds_to_samples(1.0, 0)


@settings(max_examples=300, deadline=None)
@given(
    rate=RATES,
    cuts=st.lists(st.floats(min_value=0, max_value=600, allow_nan=False), min_size=2, max_size=20),
)
def test_consecutive_spans_sample_counts_add_up(rate, cuts):
    cuts = sorted(cuts)
    counts = [sample_range(a, b, rate)[1] - sample_range(a, b, rate)[0] for a, b in zip(cuts, cuts[1:])]
    whole = sample_range(cuts[0], cuts[-1], rate)
    assert sum(counts) == whole[1] - whole[0]
    assert all(c >= 0 for c in counts)


@settings(max_examples=300, deadline=None)
@given(rate=RATES, seconds=st.floats(min_value=0, max_value=3600, allow_nan=False))
def test_seconds_index_seconds_within_half_a_tick(rate, seconds):
    back = samples_to_seconds(seconds_to_samples(seconds, rate), rate)
    assert abs(back - seconds) <= 0.5 / rate + 1e-9


@settings(max_examples=200, deadline=None)
@given(
    fps=st.sampled_from([24000 / 1001, 25.0, 30000 / 1001, 30.0, 60.0]),
    first=st.floats(min_value=0, max_value=5, allow_nan=False),
    n=st.integers(min_value=1, max_value=300),
    a=st.floats(min_value=0, max_value=20, allow_nan=False),
    length=st.floats(min_value=0, max_value=5, allow_nan=False),
)
def test_frame_range_matches_pts_rule(fps, first, n, a, length):
    pts = first + np.arange(n) / fps
    b = a + length
    start, stop = frame_range(pts, a, b)
    inside = np.flatnonzero((pts >= a) & (pts < b))
    if inside.size:
        assert (start, stop) == (inside[0], inside[-1] + 1)
    else:
        assert start == stop


def test_frame_range_exact_boundaries_and_empty():
    pts = np.array([0.0, 0.04, 0.08, 0.12])
    assert frame_range(pts, 0.04, 0.12) == (1, 3)  # start included, stop excluded
    assert frame_range(pts, 0.05, 0.05) == (2, 2)  # start == stop: empty
    assert frame_range(pts, 0.041, 0.079) == (2, 2)  # mid-frame, no pts inside
    with pytest.raises(ValueError, match="stop >= start"):
        frame_range(pts, 0.1, 0.05)


def test_frame_played_at_before_the_first_frame():
    pts = [0.5, 0.6, 0.8]
    assert frame_played_at(pts, [0.1, 0.5, 0.7], before_first="none").tolist() == [-1, 0, 1]
    assert frame_played_at(pts, [0.1, 0.5, 0.7], before_first="first").tolist() == [0, 0, 1]
    assert frame_played_at([], [0.1], before_first="none").tolist() == [-1]
    with pytest.raises(ValueError, match="before_first"):
        frame_played_at(pts, 0.6, before_first="clamp")


def test_frame_played_at():
    pts = np.array([0.5, 0.6, 0.8])  # first pts not zero, uneven (VFR)
    assert frame_played_at(pts, [0.5, 0.59, 0.6, 0.79, 0.8, 9.0]).tolist() == [0, 0, 1, 1, 2, 2]
    with pytest.raises(IndexError, match=r"before the first frame.*0\.5"):
        frame_played_at(pts, 0.4)


def test_clip_to_window():
    from avcore import clip_to_window

    assert clip_to_window(0.5, 2.0, 1.0, 3.0) == (1.0, 2.0)
    assert clip_to_window(0.0, 1.0, 1.0, 3.0) is None  # touches the start: half-open, no overlap
    assert clip_to_window(3.0, 4.0, 1.0, 3.0) is None
    assert clip_to_window(1.0, 1.0, 1.0, 3.0) == (1.0, 1.0)  # an empty span at the window start is inside
    assert clip_to_window(3.0, 3.0, 1.0, 3.0) is None  # ... at the window stop it is not


def test_span_sample_range_counts_from_the_audios_first_sample():
    """Issue #15: a = 1 s + 0.4 sample, s = 2 s + 0.6 sample at 16 kHz. Audio starting at a: 16000; audio starting at
    the sample grid's 1.0 s (a window cut at a): 16001. Both are the sample nearest to s (half-up) in that audio."""
    tick = 1 / 16000
    a, s = 1.0 + 0.4 * tick, 2.0 + 0.6 * tick
    assert span_sample_range(s, s, audio_start_seconds=a, sample_rate=16000) == (16000, 16000)
    assert span_sample_range(s, s, audio_start_seconds=1.0, sample_rate=16000) == (16001, 16001)
    assert span_sample_range(-1.0, 9.0, audio_start_seconds=0.0, sample_rate=10, num_samples=50) == (0, 50)
    assert span_sample_range(7.0, 9.0, audio_start_seconds=0.0, sample_rate=10, num_samples=50) == (50, 50)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([8000, 16000, 44100, 48000]), st.floats(0, 100), st.floats(0, 100))
def test_span_sample_range_is_the_nearest_sample(rate, audio_start, offset):
    """Oracle: the sample n whose play time audio_start + n/sr is nearest to the span start (brute force)."""
    start = audio_start + offset
    got = span_sample_range(start, start, audio_start_seconds=audio_start, sample_rate=rate)[0]
    candidates = np.arange(max(got - 3, 0), got + 4)
    distance = np.abs(audio_start + candidates / rate - start)
    assert abs(distance[candidates == got][0] - distance.min()) <= 1e-6 / rate


def test_window_outside_the_media_boundaries():
    """Half-open on both sides: [4, 5) misses media [0, 4); [-1, 0) misses it; [3.9, 5) overlaps; empty never raises."""
    for lo, hi in [(4.0, 5.0), (-1.0, 0.0), (9.0, 10.0)]:
        with pytest.raises(IndexError, match=r"clip: window .* is outside the audio, which covers \[0\.000000, 4\.000000\) s"):
            check_window_overlaps(lo, hi, 0.0, 4.0, label="clip", what="audio")
    for lo, hi in [(3.9, 5.0), (-1.0, 0.1), (0.0, 4.0), (7.0, 7.0), (8.0, 7.0)]:
        check_window_overlaps(lo, hi, 0.0, 4.0, label="clip", what="video")
