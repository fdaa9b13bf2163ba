"""Degenerate inputs to the alignment API (fuzz round 57): a clear error naming the argument and its value, or an
abstention, never NaN in a training batch, an obscure exception from numpy, or a hang."""
from __future__ import annotations

import re

import numpy as np
import pytest
import torch

import aligner
import aligner.estimators
import aligner.spans
import aligner.timeline
from loaders import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word
from tests.conftest import spread_flash_events

SAMPLE_RATE = 16000


def _audio(seconds: float = 2.0, *, bad_at: int | None = None, bad: float = float("nan")) -> AudioClip:
    samples = 0.1 * np.sin(np.arange(round(seconds * SAMPLE_RATE)) * 0.3).astype(np.float32)
    if bad_at is not None:
        samples[bad_at] = bad
    return AudioClip(torch.from_numpy(samples)[None], SAMPLE_RATE, 0.0)


def _video(num_frames: int = 50, fps: float = 25.0) -> VideoClip:
    meta = VideoMetadata(codec="h264", width=8, height=8, fps_from_header=fps, num_frames_from_header=None,
                         start_seconds=0.0, duration_seconds_from_header=None)
    frames = torch.full((num_frames, 8, 8, 3), 40, dtype=torch.uint8)
    return VideoClip(frames, torch.arange(num_frames, dtype=torch.float64) / fps, meta)


def _words() -> Transcript:
    words = (Word("hello", 0.5, 0.9), Word("world", 1.0, 1.4))
    return Transcript((Span("hello world", 0.5, 1.4, words),))


NON_FINITE = pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])


@NON_FINITE
def test_audio_with_a_non_finite_sample_is_refused_by_align_not_aligned_into_nan(bad):
    """One NaN in decoded float PCM spread to ~1000 NaN samples of the aligned audio (soxr) and into the batch."""
    with pytest.raises(ValueError, match=r"audio samples must be finite: 1 of 32000 samples are NaN or infinite, "
                                         r"the first at sample 1234 of channel 0"):
        aligner.align(_video(), _audio(bad_at=1234, bad=bad), _words(), estimate=False)


@NON_FINITE
def test_estimators_refuse_a_non_finite_sample_instead_of_answering_from_nan(bad):
    """The A/V estimator abstained at confidence 1.0 with NaN scores; energy features went NaN silently."""
    audio = _audio(bad_at=7, bad=bad)
    match = r"audio samples must be finite: 1 of 32000 samples are NaN or infinite, the first at sample 7"
    with pytest.raises(ValueError, match=match):
        aligner.estimate_av_offset(_video(), audio)
    with pytest.raises(ValueError, match=match):
        aligner.estimate_transcript_offset(audio, _words(), method="energy")
    with pytest.raises(ValueError, match=match):
        aligner.estimators.audio_onsets(audio.samples, SAMPLE_RATE)
    with pytest.raises(ValueError, match=match):
        aligner.timeline.audio_on_video_clock(audio, aligner.ClockModel(), sample_rate=8000, start_seconds=0.0,
                                              stop_seconds=2.0)


def test_finite_audio_of_huge_amplitude_is_not_called_non_finite():
    """The check sums the samples first: finite values whose sum overflows float32 are still finite."""
    samples = torch.full((2, 100), 3e38, dtype=torch.float32)
    out = aligner.timeline.audio_on_video_clock(AudioClip(samples, 100, 0.0), aligner.ClockModel(), sample_rate=100,
                                                start_seconds=0.0, stop_seconds=1.0)
    assert torch.equal(out.samples, samples)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_a_video_clip_with_a_non_finite_pts_is_refused_when_built(bad):
    """A NaN or inf pts was taken (a single NaN frame passed the order check) and align failed later with numpy's
    'negative dimensions are not allowed'."""
    video = _video(3)
    pts = video.pts_seconds.clone()
    pts[2] = bad
    with pytest.raises(ValueError, match=rf"pts_seconds must be finite: 1 of 3 are NaN or infinite, the first at "
                                         rf"frame 2 \({bad}\)"):
        VideoClip(video.frames, pts, video.metadata)


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_an_audio_clip_starting_at_a_non_finite_time_is_refused_when_built(bad):
    """estimate_av_offset failed with 'cannot convert float NaN to integer' deep in the lag search."""
    with pytest.raises(ValueError, match=rf"start_seconds must be a finite number, got self.start_seconds = {bad}"):
        AudioClip(torch.zeros(1, 10), SAMPLE_RATE, bad)
    with pytest.raises(ValueError, match=rf"start_seconds must be finite, got start_seconds = {bad}"):
        aligner.estimators.audio_onsets(torch.zeros(1, 10), SAMPLE_RATE, start_seconds=bad)


def test_cached_features_with_unsorted_pts_are_refused_by_name():
    """estimate_av_offset_from_features took pts in any order and failed with 'negative dimensions are not allowed'."""
    onsets = aligner.estimators.audio_onsets(_audio().samples, SAMPLE_RATE)
    pts = np.array([0.0, 0.08, 0.04, 0.12])
    with pytest.raises(ValueError, match=r"pts_seconds must be finite and non-decreasing \(presentation order\), got "
                                         r"\[0\.   0\.08 0\.04 0\.12\] \(0 NaN/inf, 1 decreasing steps\)"):
        aligner.estimators.estimate_av_offset_from_features(np.zeros(4), pts, onsets)


def test_token_ranges_of_a_long_transcript_take_linear_time():
    """Every word scanned every token: 20,000 words (a 2 h podcast) took 11 s per align call, the 200,000 that
    read_transcript allows about 20 minutes: a stalled loader worker. Now a binary search and one pass."""
    import time

    words = [f"w{i}" for i in range(30_000)]
    started = time.perf_counter()
    ranges, num_tokens = aligner.spans.word_token_ranges(words)
    assert time.perf_counter() - started < 5.0
    assert num_tokens == 30_000 and ranges == [(i, i + 1) for i in range(30_000)]


def test_token_ranges_keep_their_rule_for_odd_tokenizers():
    """Tokens in any order, overlapping, spanning several words or none: a word gets [first, last + 1) of the tokens
    overlapping its characters; a word with none an empty range at the next word's first token."""
    words = ["ab", "", "cd", "ef"]                      # "ab  cd ef": ab [0, 2), "" [3, 3), cd [4, 6), ef [7, 9)
    offsets = [(0, 0), (7, 9), (0, 1), (1, 6), (5, 5)]   # special, ef, a, "b  cd" (over "" too), inside cd
    ranges, num_tokens = aligner.spans.word_token_ranges(words, lambda text: offsets)
    assert num_tokens == 5
    assert ranges == [(2, 4), (3, 4), (3, 5), (1, 2)]
    ranges, _ = aligner.spans.word_token_ranges(words, lambda text: [(0, 0), (0, 1), (7, 9)])
    assert ranges == [(1, 2), (2, 2), (2, 2), (2, 3)]   # "" and cd: no token, an empty range at ef's first


@pytest.mark.parametrize("kwargs, error, message", [
    (dict(sample_rate=True), ValueError, "sample_rate must be a positive int (Hz), got sample_rate = True"),
    (dict(sample_rate="16000"), ValueError, "sample_rate must be a positive int (Hz), got sample_rate = '16000'"),
    (dict(sample_rate=16000.0), ValueError, "sample_rate must be a positive int (Hz), got sample_rate = 16000.0"),
    (dict(start_seconds=float("nan")), ValueError,
     "start_seconds must be None or a finite number of seconds, got start_seconds = nan"),
    (dict(stop_seconds=float("inf")), ValueError,
     "stop_seconds must be None or a finite number of seconds, got stop_seconds = inf"),
    (dict(start_seconds=2.0, stop_seconds=1.0), ValueError,
     "window must be finite with stop >= start, got start_seconds = 2.0, stop_seconds = 1.0"),
    (dict(text_method="bogus"), ValueError, "text_method must be one of ('auto', 'energy', 'forced'), got 'bogus'"),
    (dict(av_options="x"), TypeError, "av_options must be an aligner.AVOptions or None, got str 'x'"),
    (dict(text_options=aligner.AVOptions()), TypeError, "text_options must be an aligner.TextOptions or None, got AVOptions"),
])
def test_align_refuses_unusable_arguments_by_name_before_estimating(kwargs, error, message):
    """NaN / inf windows failed with numpy's 'negative dimensions are not allowed', a str rate with a TypeError from
    a comparison, True was taken as 1 Hz, and a float rate or an inverted window was refused only after every
    estimator had run (minutes on a long clip). The audio here would fail any estimator: the argument is named
    first."""
    with pytest.raises(error, match=re.escape(message)):
        aligner.align(_video(), _audio(bad_at=0), _words(), **kwargs)


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_null_threshold_that_is_not_finite_is_refused(bad):
    """null_threshold was never checked: NaN turned every match into confidence 1.0 and an answer."""
    with pytest.raises(ValueError, match=re.escape(f"null_threshold must be a finite match significance, got "
                                                   f"self.null_threshold = {bad}; 0.7 is the calibrated default")):
        aligner.AVOptions(null_threshold=bad)


@pytest.mark.parametrize("options, field, value", [
    (aligner.AVOptions, "max_offset_ms", "500"), (aligner.AVOptions, "max_offset_ms", True),
    (aligner.AVOptions, "null_threshold", None), (aligner.TextOptions, "hop_seconds", "0.01"),
    (aligner.TextOptions, "min_confidence", False),
])
def test_option_fields_that_are_not_numbers_are_named(options, field, value):
    """A string failed with "'<' not supported between instances of 'int' and 'str'" (no field named); True was taken
    as a 1 ms search range."""
    with pytest.raises(TypeError, match=re.escape(f"{field} must be a number, got {type(value).__name__} {value!r}")):
        options(**{field: value})


def test_option_fields_take_numpy_numbers():
    options = aligner.AVOptions(max_offset_ms=np.float32(800.0), max_drift_ppm=np.int64(3))
    assert options.max_offset_ms == 800.0 and options.max_drift_ppm == 3


@pytest.mark.parametrize("record", [Word, Span])
def test_words_and_spans_with_an_infinite_time_are_refused_when_built(record):
    """Only NaN was refused: a hand-built Word(-inf, inf) reached forced alignment, which reported best_guess_ms=-inf."""
    with pytest.raises(ValueError, match=re.escape(f"{record.__name__.lower()} 'hi' has a time that is not finite (NaN "
                                                   f"or inf): start_seconds = 0.0, stop_seconds = inf")):
        record("hi", 0.0, float("inf"))


@pytest.mark.parametrize("kwargs, message", [
    (dict(margin_seconds=float("nan")), "margin_seconds must be >= 0, got margin_seconds = nan"),
    (dict(text_offset_ms=float("nan")), "text_offset_ms must be finite, got text_offset_ms = nan"),
])
def test_caption_words_refuses_a_nan_margin_or_offset_instead_of_failing_every_caption(kwargs, message):
    """Both were taken: every caption then failed to align, silently (counted as failures, no words)."""
    captions = Transcript((Span("hello world", 0.5, 1.4),))
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.estimators.caption_words(_audio(), captions, **kwargs)


def test_onset_offset_near_refuses_a_nan_centre_by_name():
    """It failed with 'cannot convert float NaN to integer'."""
    with pytest.raises(ValueError, match=re.escape("centre_ms must be finite, got centre_ms = nan")):
        aligner.estimators.onset_offset_near(_audio(), _words(), float("nan"), window_ms=40.0)


@pytest.mark.parametrize("source, target, message", [
    ([0.0, 1.0, float("nan")], [5.0], "source_seconds must be finite: 1 of 3 are NaN or infinite, the first at index 2"),
    ([0.0, 1.0, float("inf")], [1.5], "source_seconds must be finite: 1 of 3 are NaN or infinite, the first at index 2"),
    ([0.0, 1.0, 2.0], [0.5, float("nan")], "target_seconds must be finite: 1 of 2 are NaN or infinite, the first at index 1"),
])
def test_interpolate_features_refuses_non_finite_times(source, target, message):
    """A NaN time passed the sort check and read a silently wrong value (a NaN target: the last value)."""
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.timeline.interpolate_features(np.arange(3.0), np.array(source), np.array(target), mode="linear")


def test_interpolate_features_refuses_scalar_values_by_shape():
    """A 0-d value failed with 'tuple index out of range'."""
    with pytest.raises(ValueError, match=re.escape("need one value per source time and at least one: values (), "
                                                   "times (1,)")):
        aligner.timeline.interpolate_features(np.float64(3.0), np.array([0.0]), np.array([0.5]))


@pytest.mark.parametrize("audio_start, gap", [(20.0, "18.040"), (-20.0, "18.000")])
def test_audio_that_never_plays_with_the_video_abstains_as_no_overlap(audio_start, gap):
    """Audio 20 s away from the frames abstained as peak_at_search_edge, hinting at a larger search range, which
    cannot reach it (at most 10 s) and is not the cause."""
    audio = AudioClip(_audio().samples, SAMPLE_RATE, audio_start)
    est = aligner.estimate_av_offset(_video(), audio)
    assert est.av_offset_ms is None and est.abstain.reason == "no_overlap"
    assert est.abstain.found == (f"audio [{audio_start:.3f}, {audio_start + 2:.3f}) s and video frames [0.000, 1.960] "
                                 f"s, {gap} s apart")
    assert est.abstain.needed == "audio and video that play at the same time at an offset within ±500 ms"
    assert "check that they come from the same recording" in est.abstain.hint


def test_audio_within_the_search_range_of_the_frames_is_searched_not_called_apart():
    audio = AudioClip(_audio().samples, SAMPLE_RATE, 2.4)   # starts 0.44 s after the last frame: inside ±500 ms
    est = aligner.estimate_av_offset(_video(), audio)
    assert est.abstain.reason != "no_overlap"


@pytest.mark.parametrize("values, pts, message", [
    ([0.0, float("inf"), 0.0], [0.0, 0.04, 0.08], "visual_events must be finite, got 1 NaN/inf of 3, the first at frame 1"),
    ([0.0, 0.0, float("nan")], [0.0, 0.04, 0.08], "visual_events must be finite, got 1 NaN/inf of 3, the first at frame 2"),
])
def test_cached_visual_events_that_are_not_finite_are_refused(values, pts, message):
    """One NaN or inf in a cached change signal silently removed every event: 'no_visual_events'."""
    onsets = aligner.estimators.audio_onsets(_audio().samples, SAMPLE_RATE)
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.estimators.estimate_av_offset_from_features(np.array(values), np.array(pts), onsets)


@pytest.mark.parametrize("times, strength, message", [
    ([0.1, float("nan")], [5.0, 5.0], "times_seconds and strength must be finite, got 1 NaN/inf times and 0 NaN/inf strengths"),
    ([0.1, 0.2], [5.0, float("inf")], "times_seconds and strength must be finite, got 0 NaN/inf times and 1 NaN/inf strengths"),
    ([0.3, 0.2, 0.4], [5.0, 5.0, 5.0], "times_seconds must be ascending, got 1 decreasing steps, the first after event 0"),
])
def test_cached_audio_onsets_that_are_not_finite_or_not_sorted_are_refused(times, strength, message):
    """A NaN onset time failed in the lag search with 'cannot convert float NaN to integer'; unsorted ones were
    matched as if sorted (a confident clip abstained)."""
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.estimators.AudioOnsets(np.array(times), np.array(strength), 1.0)


@pytest.mark.parametrize("feature", ["background_rise", "luma_rise", "frame_difference"])
@pytest.mark.parametrize("shape", [(5, 8, 0, 3), (5, 8, 8, 0), (5, 0, 8)])
def test_frames_without_pixels_are_refused_by_shape(feature, shape):
    """A width or channel count of 0 made NaN features (numpy 'Mean of empty slice') read as 'no visual events'."""
    with pytest.raises(ValueError, match=re.escape(f"frames must have pixels (height, width and channels > 0), got "
                                                   f"shape {shape}")):
        aligner.estimators.visual_change_events(torch.zeros(shape, dtype=torch.uint8), feature=feature)
    assert aligner.estimators.visual_change_events(torch.zeros((0,) + shape[1:], dtype=torch.uint8), feature=feature).shape == (0,)


def test_each_thread_aligns_on_its_own_decoder():
    """shared_decoder() was one decoder per process: threads aligning at once (a thread-based data loader, a
    ThreadPoolExecutor) shared its search state and the process died of a segmentation fault."""
    import threading

    pytest.importorskip("pocketsphinx")
    barrier, found = threading.Barrier(3), []

    def take() -> None:
        barrier.wait()
        found.append((aligner.estimators.shared_decoder(), aligner.estimators.shared_decoder()))

    threads = [threading.Thread(target=take) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(first is second for first, second in found)           # reused within a thread
    assert len({id(first) for first, _ in found}) == 3                 # never shared between threads


_THREADED_CAPTIONS = """
import sys
from concurrent.futures import ThreadPoolExecutor
import loaders
from aligner.estimators import caption_words
audio = loaders.read_audio(sys.argv[1])
captions = loaders.read_transcript(sys.argv[2])
def words(_):
    return [(w.text, round(w.start_seconds, 6)) for w in caption_words(audio, captions)[0].words]
alone = words(0)
with ThreadPoolExecutor(4) as pool:
    together = list(pool.map(words, range(8)))
print(all(result == alone for result in together), len(alone))
"""


def test_caption_words_from_four_threads_at_once_do_not_crash_and_match_one_thread():
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("pocketsphinx")
    sample = Path(__file__).resolve().parent.parent / "sample_data"
    done = subprocess.run([sys.executable, "-c", _THREADED_CAPTIONS, str(sample / "clip01.mkv"), str(sample / "clip01.srt")],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "8"]


_MAP = dict(level="word", clock=aligner.ClockModel(), sample_rate=16000)


@pytest.mark.parametrize("window, message", [
    ((2.0, 1.0), "window must be finite with stop >= start, got window_start_seconds = 2.0, window_stop_seconds = 1.0"),
    ((float("nan"), 2.0), "window must be finite with stop >= start, got window_start_seconds = nan, "
                          "window_stop_seconds = 2.0"),
])
def test_map_spans_refuses_a_window_that_no_span_can_be_in(window, message):
    """An inverted or NaN window counted every span 'outside the media', silently."""
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.spans.map_spans([Word("a", 0.0, 0.5)], pts_seconds=np.arange(0, 2, 0.04), window_start_seconds=window[0],
                                window_stop_seconds=window[1], **_MAP)


@pytest.mark.parametrize("pts, message", [
    (np.arange(0, 2, 0.04)[::-1].copy(), "got shape (50,), 0 NaN/inf, 49 decreasing steps"),
    (np.where(np.arange(50) == 3, np.nan, np.arange(0, 2, 0.04)), "got shape (50,), 1 NaN/inf, 0 decreasing steps"),
    (np.arange(0, 2, 0.04)[None], "got shape (1, 50), 0 NaN/inf, 0 decreasing steps"),
])
def test_map_spans_refuses_pts_the_frame_rule_cannot_search(pts, message):
    """Reversed pts gave word 'b' [0.5, 1.0) frames [0, 50) (all of them), NaN pts their own silent ranges, 2-D pts
    'object too deep for desired array'."""
    with pytest.raises(ValueError, match=re.escape("pts_seconds must be 1-D, finite and non-decreasing (presentation "
                                                   "order), " + message)):
        aligner.spans.map_spans([Word("a", 0.0, 0.5), Word("b", 0.5, 1.0)], pts_seconds=pts, window_start_seconds=0.0,
                                window_stop_seconds=2.0, **_MAP)


@pytest.mark.parametrize("start, stop", [(float("nan"), 1.0), (0.0, float("inf")), (1.0, 0.5)])
def test_audio_on_video_clock_refuses_a_window_that_is_not_finite(start, stop):
    """A NaN or inf bound failed with numpy's 'negative dimensions are not allowed'."""
    with pytest.raises(ValueError, match=re.escape(f"window must be finite with stop >= start, got start_seconds = "
                                                   f"{start}, stop_seconds = {stop}")):
        aligner.timeline.audio_on_video_clock(_audio(), aligner.ClockModel(), sample_rate=SAMPLE_RATE,
                                              start_seconds=start, stop_seconds=stop)




def test_a_search_too_wide_for_the_clip_abstains_instead_of_allocating_gigabytes():
    """±10 s and ±20000 ppm over 2 h of events is 571 million lag x drift cells: a 4.6 GB match surface and more
    than 5 minutes (killed there) in one estimate; now an abstention that says so, at once."""
    visual, pts, onsets = spread_flash_events(7200.0)
    options = aligner.AVOptions(max_offset_ms=10_000, max_drift_ppm=20_000)
    est = aligner.estimators.estimate_av_offset_from_features(visual, pts, onsets, options=options)
    assert est.av_offset_ms is None and est.abstain.reason == "search_too_large"
    assert est.abstain.found == ("20001 lags x 28569 drifts = 571408569 cells to search (±10000 ms, ±20000 ppm over "
                                 "7142 s of visual events)")
    assert est.abstain.needed == "at most 50000000 cells"
    assert "narrow it" in est.abstain.hint


def test_a_search_within_the_budget_still_answers():
    visual, pts, onsets = spread_flash_events(600.0)
    est = aligner.estimators.estimate_av_offset_from_features(visual, pts, onsets)
    assert est.av_offset_ms == pytest.approx(100.0, abs=1.0)


@pytest.mark.parametrize("num_samples", [0, 32000])
def test_audio_without_a_channel_is_refused_by_shape(num_samples):
    """[0, N] audio: the mean of no channel made every sample NaN (then called 'broken audio' further on, or aligned
    into a batch row of 0 channels with estimate=False)."""
    audio = AudioClip(torch.zeros(0, num_samples), SAMPLE_RATE, 0.0)
    message = re.escape(f"audio samples must have at least one channel, got shape (0, {num_samples})")
    with pytest.raises(ValueError, match=message):
        aligner.align(_video(), audio, _words(), estimate=False)
    with pytest.raises(ValueError, match=message):
        aligner.estimate_transcript_offset(audio, _words(), method="energy")


@pytest.mark.parametrize("score, threshold", [(float("nan"), 0.7), (1.0, float("nan")), (1.0, float("inf"))])
def test_confidence_from_a_nan_score_is_refused_not_full(score, threshold):
    """confidence_from_score(nan) was 1.0 (min(1.0, nan) keeps the 1.0): a NaN score read as full confidence."""
    with pytest.raises(ValueError, match=re.escape(f"score must not be NaN and null_threshold must be finite, got "
                                                   f"score = {score}, null_threshold = {threshold}")):
        aligner.estimators.confidence_from_score(score, threshold)


def test_transcript_methods_given_as_one_string_are_named():
    """methods='auto' was read letter by letter: "got ['a', 'u', 't', 'o']"."""
    with pytest.raises(TypeError, match=re.escape("methods must be a sequence of method names, got the string 'auto': "
                                                  "pass ('auto',)")):
        aligner.estimators.estimate_transcript_offsets(_audio(), _words(), methods="auto")
