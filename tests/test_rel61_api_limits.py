"""Limits of the alignment API left by the adversarial round of fuzz57 (L2-L6, two CLI options): each is refused by
name, abstains saying what to change, or is handled as DESIGN.md's window rule says; never minutes of work, a
MemoryError, a sample index of -2**63 or a silent empty result."""
from __future__ import annotations

import json
import re
import time

import numpy as np
import pytest
import torch

import aligner
import aligner.estimators
import aligner.spans
import aligner.timeline
import avcore
from avalign.cli import MAX_OFFSET_MS, MAX_SEARCH_OFFSET_MS, main
from loaders import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word
from tests.conftest import SAMPLE_DATA, spread_flash_events

SAMPLE_RATE = 16000
_MAP = dict(level="word", clock=aligner.ClockModel(), sample_rate=SAMPLE_RATE)


def _audio(seconds: float = 2.0) -> AudioClip:
    samples = 0.1 * np.sin(np.arange(round(seconds * SAMPLE_RATE)) * 0.3).astype(np.float32)
    return AudioClip(torch.from_numpy(samples)[None], SAMPLE_RATE, 0.0)


def _video(num_frames: int = 50, fps: float = 25.0, pts: torch.Tensor | None = None) -> VideoClip:
    meta = VideoMetadata(codec="h264", width=8, height=8, fps_from_header=fps, num_frames_from_header=None,
                         start_seconds=0.0, duration_seconds_from_header=None)
    frames = torch.full((num_frames, 8, 8, 3), 40, dtype=torch.uint8)
    return VideoClip(frames, torch.arange(num_frames, dtype=torch.float64) / fps if pts is None else pts, meta)


def _words() -> Transcript:
    words = (Word("hello", 0.5, 0.9), Word("world", 1.0, 1.4))
    return Transcript((Span("hello world", 0.5, 1.4, words),))




# ---------------------------------------------------------------- L2: a search of minutes under the cell limit


def test_a_search_of_minutes_abstains_at_once_naming_what_to_narrow():
    """1 h of events (119 flashes) at ±10 s: 21.3 million cells, under the 50 million cell limit, but 2.5 billion
    event-cells: 175 s (375 s on the loaded 2-core machine) answering +100 ms before; now an abstention in 0.03 s
    (a 1 h clip with 913 events at the default ranges, 1.6 billion event-cells, still answers: 63-68 s)."""
    visual, pts, onsets = spread_flash_events(3600.0)
    options = aligner.AVOptions(max_offset_ms=10_000)
    started = time.perf_counter()
    est = aligner.estimators.estimate_av_offset_from_features(visual, pts, onsets, options=options)
    assert time.perf_counter() - started < 20.0
    assert est.av_offset_ms is None and est.abstain.reason == "search_too_large"
    assert est.abstain.found == ("119 visual events x 20001 lags x 1065 drifts = 2534826735 event-cells to search "
                                 "(±10000 ms, ±1500 ppm over 3550 s of visual events): too much work for one search")
    # the budget is 600,000 event-cells per second of the events' span (3550 s), about 1 s of work per 30 s of clip;
    # the suggestions fit it: ±8401 ms is 16803 lags; ±1256 ppm at a drift step of 2.817 ppm is 2·446 + 1 drifts
    assert est.abstain.needed == ("at most 2130000000 event-cells for 3550 s of events: max_offset_ms <= 8401 at "
                                  "±1500 ppm, or max_drift_ppm <= 1256 at ±10000 ms, or a shorter window of the clip "
                                  "(fewer events, fewer drifts)")
    assert aligner.estimators.SEARCH_EVENT_CELLS_PER_SECOND * 3550 == 2_130_000_000
    assert (2 * 8401 + 1) * 1065 * 119 <= 2_130_000_000 and 20001 * (2 * 446 + 1) * 119 <= 2_130_000_000
    assert "1 s of work per 30 s of clip" in est.abstain.hint and "narrow it" in est.abstain.hint


def test_many_events_at_a_wide_lag_range_and_no_drift_still_answer():
    """600 events over 40 min at ±10 s without a drift search: 12 million event-cells a row, done in blocks of lags
    (each step held 96 MB a temporary, gigabytes at thousands of events); the answer is the flashes' 100 ms."""
    visual, pts, onsets = spread_flash_events(2400.0, every=(3.0, 5.0))
    options = aligner.AVOptions(max_offset_ms=10_000, max_drift_ppm=0.0)
    est = aligner.estimators.estimate_av_offset_from_features(visual, pts, onsets, options=options)
    assert est.num_events > 500 and est.av_offset_ms == pytest.approx(100.0, abs=1.0)


# ---------------------------------------------------------------- L3: a window far outside the media


def test_align_refuses_a_window_far_before_the_media_by_name_instead_of_a_memory_error():
    """start_seconds = -1e7 asked for 160 billion samples: MemoryError (596 GiB)."""
    message = ("start_seconds = -10000000.0 reaches 10000000.000 s before the media, which covers [0.000, 2.000) s on "
               "the video timeline (frames and audio): an explicit window may reach at most 600 s past it (this one "
               "would be 160000032000 audio samples at 16000 Hz, 596.05 GiB a channel")
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.align(_video(), _audio(), _words(), estimate=False, start_seconds=-1e7)
    with pytest.raises(ValueError, match=re.escape("stop_seconds = 100000.0 reaches 99998.000 s after the media")):
        aligner.align(_video(), _audio(), _words(), estimate=False, stop_seconds=1e5)
    assert aligner.timeline.MAX_WINDOW_BEYOND_MEDIA_SECONDS == 600.0


def test_align_keeps_a_window_that_reaches_a_little_past_the_media():
    sample = aligner.align(_video(), _audio(), _words(), estimate=False, start_seconds=-600.0, stop_seconds=602.0)
    assert sample.audio.samples.shape == (1, 1202 * SAMPLE_RATE)
    assert [(w.text, w.sample_start, w.frame_start) for w in sample.words] == [("hello", 600.5 * SAMPLE_RATE, 13),
                                                                               ("world", 601 * SAMPLE_RATE, 25)]


def test_map_spans_refuses_a_window_whose_sample_indices_overflow():
    """A window start of -1e30 s gave sample_start = sample_stop = -2**63 (a numpy warning only)."""
    message = ("window window_start_seconds = -1e+30, window_stop_seconds = 2.0 holds 1.6e+34 samples at 16000 Hz, "
               "more than a sample index can count (2**62)")
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.spans.map_spans([Word("a", 0.0, 0.5)], pts_seconds=None, window_start_seconds=-1e30,
                                window_stop_seconds=2.0, **_MAP)
    assert avcore.MAX_SAMPLE_INDEX == 2**62


def test_audio_on_video_clock_refuses_a_window_whose_sample_count_overflows():
    """Before: numpy's 'negative dimensions are not allowed' (the count wrapped to -2**63)."""
    with pytest.raises(ValueError, match=re.escape("window start_seconds = -1e+30, stop_seconds = 1.0 holds 1.6e+34 "
                                                   "samples at 16000 Hz")):
        aligner.timeline.audio_on_video_clock(_audio(), aligner.ClockModel(), sample_rate=SAMPLE_RATE,
                                              start_seconds=-1e30, stop_seconds=1.0)


# ---------------------------------------------------------------- L4: pts that do not increase


@pytest.mark.parametrize("value", [0.0, 1.0])
def test_align_refuses_frames_whose_pts_are_all_equal(value):
    """All 50 frames at one pts: the window was [0, 0) or [0, pts) and every span fell outside it, or got no frame,
    silently (words=(), spans_outside=3 at pts 0)."""
    video = _video(pts=torch.full((50,), value, dtype=torch.float64))
    message = f"video pts_seconds must increase: all 50 frames have pts {value!r} s"
    for estimate in (False, True):
        with pytest.raises(ValueError, match=re.escape(message)):
            aligner.align(video, _audio(), _words(), estimate=estimate)
    with pytest.raises(ValueError, match=re.escape("clip7: " + message)):
        aligner.align(video, _audio(), _words(), estimate=False, key="clip7")


def test_align_still_takes_one_frame_and_repeated_pts_among_increasing_ones():
    one = aligner.align(_video(1), _audio(), _words(), estimate=False)  # one frame: shown for 1/fps
    assert (one.start_seconds, one.stop_seconds, one.report.spans_outside) == (0.0, 0.04, 3)
    pts = torch.arange(50, dtype=torch.float64) / 25.0
    pts[10] = pts[9]
    some = aligner.align(_video(pts=pts), _audio(), _words(), estimate=False)
    assert [(w.text, w.frame_start, w.frame_stop) for w in some.words] == [("hello", 13, 23), ("world", 25, 35)]


# ---------------------------------------------------------------- L5: an empty window


def test_a_span_across_an_empty_window_is_outside_it():
    """[0.7, 0.7) kept word 'b' [0.5, 1.0) as the zero-length span [0.7, 0.7); an empty window holds nothing (as an
    empty span outside a window is dropped)."""
    spans, outside = aligner.spans.map_spans([Word("a", 0.0, 0.5), Word("b", 0.5, 1.0)], pts_seconds=None,
                                             window_start_seconds=0.7, window_stop_seconds=0.7, **_MAP)
    assert (spans, outside) == ([], 2)
    assert avcore.clip_to_window(0.5, 1.0, 0.7, 0.7) is None
    assert avcore.clip_to_window(0.7, 0.7, 0.7, 0.7) is None
    assert avcore.clip_to_window(0.5, 1.0, 0.7, 0.8) == (0.7, 0.8)


def test_align_over_an_empty_window_counts_every_span_outside():
    sample = aligner.align(_video(), _audio(), _words(), estimate=False, start_seconds=0.7, stop_seconds=0.7)
    assert (sample.words, sample.segments, sample.report.spans_outside) == ((), (), 3)
    assert sample.audio.samples.shape == (1, 0)


# ---------------------------------------------------------------- L6: absurd offsets


@pytest.mark.parametrize("name", ["av_offset_ms", "text_offset_ms"])
@pytest.mark.parametrize("value", [1e20, -1e20, 1.5e8])
def test_align_refuses_an_absurd_offset_by_name(name, value):
    """1e20 ms put the audio at sample -2**63 (silence, a numpy warning) and every word outside, silently."""
    message = f"{name} must be within ±100000000 ms (27.8 h), got {name} = {value!r}"
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.align(_video(), _audio(), _words(), estimate=False, **{name: value})
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.align(_video(), _audio(), _words(), **{name: value})  # before any estimate
    with pytest.raises(ValueError, match=re.escape(message)):
        aligner.ClockModel(**{name: value})


def test_an_offset_at_the_bound_is_taken():
    assert aligner.timeline.MAX_OFFSET_MS == 1e8
    sample = aligner.align(_video(), _audio(), _words(), estimate=False, text_offset_ms=-1e8)
    assert sample.report.text_offset_ms == -1e8 and sample.words == () and sample.report.spans_outside == 3
    assert aligner.ClockModel(av_offset_ms=1e8).av_offset_ms == 1e8


# ---------------------------------------------------------------- CLI


def test_cli_bounds_mirror_the_library():
    assert MAX_OFFSET_MS == aligner.timeline.MAX_OFFSET_MS
    assert aligner.AVOptions(max_offset_ms=MAX_SEARCH_OFFSET_MS).max_offset_ms == MAX_SEARCH_OFFSET_MS
    assert aligner.TextOptions(max_offset_ms=MAX_SEARCH_OFFSET_MS).max_offset_ms == MAX_SEARCH_OFFSET_MS
    with pytest.raises(ValueError, match="max_offset_ms must be in"):
        aligner.AVOptions(max_offset_ms=MAX_SEARCH_OFFSET_MS + 0.5)


@pytest.mark.parametrize("option, value, message", [
    ("--av-offset-ms", "1e9", "argument --av-offset-ms: '1e9' ms is beyond ±100000000 ms (27.8 h): give the offset in "
                              "milliseconds"),
    ("--av-offset-ms", "-2e8", "argument --av-offset-ms: '-2e8' ms is beyond ±100000000 ms"),
    ("--max-offset-ms", "1e9", "argument --max-offset-ms: '1e9' is not in (0, 10000]: the estimators search at most "
                               "±10000 ms"),
    ("--max-offset-ms", "0", "argument --max-offset-ms: '0' is not in (0, 10000]"),
    ("--sample-rate", "0", "argument --sample-rate: '0' is not > 0"),
    ("--sample-rate", "16k", "argument --sample-rate: '16k' is not an int"),
])
def test_measure_refuses_out_of_range_numbers_by_their_option(option, value, message, capsys):
    """Before: --av-offset-ms 1e9 was taken (exit 0, silence for audio); --max-offset-ms 1e9 and --sample-rate 0 were
    refused after decoding, by their Python names (``max_offset_ms must be in (0, 10000]``), without usage."""
    with pytest.raises(SystemExit) as stopped:
        main(["measure", str(SAMPLE_DATA / "clip00.mp4"), f"{option}={value}"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: avalign measure") and f"avalign measure: error: {message}" in err


def test_bench_without_a_benchmark_says_what_to_run(capsys):
    """Before: 'the following arguments are required: what, files'."""
    with pytest.raises(SystemExit) as stopped:
        main(["bench"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: avalign bench {decode,align} [files ...] [options]")
    assert ("avalign bench: error: say which benchmark to run: avalign bench {decode,align}, e.g. `avalign bench "
            "decode`") in err and "`avalign bench align --num-clips 24`" in err
    with pytest.raises(SystemExit):
        main(["bench", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert out["error"]["command"] == "bench" and out["error"]["reason"] == "usage"


def test_bench_still_refuses_an_unknown_benchmark(capsys):
    with pytest.raises(SystemExit) as stopped:
        main(["bench", "speed"])
    assert stopped.value.code == 2
    assert "argument what: invalid choice: 'speed' (choose from" in capsys.readouterr().err
