"""align() with given clock values, audio on the video clock, span and token mapping, interpolation."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import aligner
from aligner import ClockModel
from aligner.spans import word_token_ranges
from aligner.timeline import audio_on_video_clock, interpolate_features
from loaders import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word


def make_video(pts):
    pts = np.asarray(pts, dtype=np.float64)
    meta = VideoMetadata("h264", 8, 6, 30.0, len(pts), float(pts[0]), None, backend="test")
    return VideoClip(torch.zeros((len(pts), 6, 8, 3), dtype=torch.uint8), torch.from_numpy(pts), meta)


def clicks(times_seconds, *, rate, start_seconds, duration_seconds):
    x = np.zeros(int(round(duration_seconds * rate)), dtype=np.float32)
    for t in times_seconds:
        x[int(round((t - start_seconds) * rate))] = 1.0
    return AudioClip(torch.from_numpy(x[None]), rate, start_seconds)


def test_clock_round_trip_and_signs():
    clock = ClockModel(av_offset_ms=120, drift_ppm=1000, text_offset_ms=200)
    assert clock.video_to_audio(1.0) == pytest.approx(1.0 * 1.001 + 0.12)
    assert clock.audio_to_video(clock.video_to_audio(3.7)) == pytest.approx(3.7)
    # A word heard at audio time a is stamped a + 0.2: the stamp maps back to the video time of the sound.
    assert clock.stamp_to_video(clock.video_to_audio(2.0) + 0.2) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="drift_ppm"):
        ClockModel(drift_ppm=2e5)
    with pytest.raises(ValueError, match="av_offset_ms"):
        ClockModel(av_offset_ms=float("nan"))


@pytest.mark.parametrize("offset_ms, drift_ppm, rate", [(0, 0, 16000), (150, 0, 48000), (-230, 800, 44100), (90, -1000, 16000)])
def test_audio_on_video_clock_moves_events_to_video_times(offset_ms, drift_ppm, rate):
    clock = ClockModel(av_offset_ms=offset_ms, drift_ppm=drift_ppm)
    video_times = np.array([1.0, 2.5, 4.0, 7.25])
    audio = clicks(clock.video_to_audio(video_times), rate=rate, start_seconds=0.0, duration_seconds=9.0)
    out = audio_on_video_clock(audio, clock, sample_rate=16000, start_seconds=0.0, stop_seconds=8.0)
    assert out.num_samples == 128000 and out.start_seconds == 0.0
    x = out.samples[0].numpy()
    for t in video_times:
        j = int(round(t * 16000))
        peak = j - 40 + int(np.argmax(np.abs(x[j - 40 : j + 40])))
        assert abs(peak - t * 16000) <= 1.0, (t, peak)  # within one sample (62.5 µs)


def test_audio_on_video_clock_pads_uncovered_window_with_silence():
    audio = AudioClip(torch.ones((1, 16000)), 16000, 0.4)  # audio starts 0.4 s into the video
    out = audio_on_video_clock(audio, ClockModel(), sample_rate=16000, start_seconds=0.0, stop_seconds=2.0)
    x = out.samples[0].numpy()
    assert x[:6400].max() == 0.0 and x[6400:22400].min() == 1.0 and x[22400:].max() == 0.0


def test_align_with_given_values_maps_words_to_frames_samples_tokens():
    pts = np.arange(90) / 30.0 + 0.007  # 3 s at 30 fps, first pts 7 ms (Matroska-like)
    video = make_video(pts)
    audio = AudioClip(torch.zeros((1, 48000 * 3)), 48000, 0.0)
    clock = ClockModel(av_offset_ms=100, drift_ppm=0, text_offset_ms=200)
    true = [("hello", 0.5, 0.9), ("big", 0.9, 1.2), ("world", 1.5, 2.0)]
    stamp = lambda t: float(clock.video_to_audio(t)) + 0.2  # noqa: E731
    words = tuple(Word(w, stamp(a), stamp(b)) for w, a, b in true)
    transcript = Transcript((Span("hello big world", words[0].start_seconds, words[-1].stop_seconds, words),))
    sample = aligner.align(video, audio, transcript, sample_rate=16000, av_offset_ms=100, drift_ppm=0, text_offset_ms=200)
    assert sample.report.av_method == "given" and sample.report.text_method == "given"
    assert sample.start_seconds == 0.0 and sample.stop_seconds == pytest.approx(3.007)
    assert [w.text for w in sample.words] == ["hello", "big", "world"]
    for w, (_, a, b) in zip(sample.words, true):
        assert w.start_seconds == pytest.approx(a) and w.stop_seconds == pytest.approx(b)
        inside = np.flatnonzero((pts >= a - 1e-9) & (pts < b - 1e-9))  # brute-force pts rule
        assert (w.frame_start, w.frame_stop) == (inside[0], inside[-1] + 1)
        assert (w.sample_start, w.sample_stop) == (int(np.floor(a * 16000 + 0.5)), int(np.floor(b * 16000 + 0.5)))
    assert [(w.token_start, w.token_stop) for w in sample.words] == [(0, 1), (1, 2), (2, 3)]
    assert sample.segments[0].sample_start == 8000 and sample.segments[0].sample_stop == 32000


def test_spans_outside_media_are_counted_and_clipped():
    video = make_video(np.arange(30) / 30.0)
    audio = AudioClip(torch.zeros((1, 16000)), 16000, 0.0)
    words = (Word("before", -2.0, -1.0), Word("edge", 0.9, 1.5), Word("after", 5.0, 6.0))
    transcript = Transcript((Span("x", -2.0, 6.0, words),))
    sample = aligner.align(video, audio, transcript, estimate=False)
    assert [w.text for w in sample.words] == ["edge"]
    assert sample.words[0].stop_seconds == pytest.approx(1.0) and sample.words[0].frame_stop == 30
    assert sample.report.spans_outside == 2


def test_audio_only_alignment_has_no_frames():
    audio = AudioClip(torch.zeros((1, 32000)), 16000, 0.0)
    transcript = Transcript((Span("a b", 0.5, 1.0, (Word("a", 0.5, 0.7), Word("b", 0.7, 1.0))),))
    sample = aligner.align(None, audio, transcript, text_offset_ms=0)
    assert sample.video is None and sample.words[0].frame_start is None
    assert (sample.words[1].sample_start, sample.words[1].sample_stop) == (11200, 16000)


@settings(max_examples=100, deadline=None)
@given(
    fps=st.sampled_from([25.0, 30000 / 1001, 30.0]),
    rate=st.sampled_from([16000, 22050, 48000]),
    cuts=st.lists(st.floats(min_value=0.0, max_value=4.0, allow_nan=False), min_size=2, max_size=12, unique=True),
)
def test_consecutive_words_partition_frames_and_samples(fps, rate, cuts):
    cuts = sorted(cuts)
    video = make_video(np.arange(int(4 * fps)) / fps)
    audio = AudioClip(torch.zeros((1, 4 * rate)), rate, 0.0)
    words = tuple(Word(f"w{i}", a, b) for i, (a, b) in enumerate(zip(cuts, cuts[1:])))
    sample = aligner.align(video, audio, Transcript((Span("s", cuts[0], cuts[-1], words),)), sample_rate=rate, estimate=False)
    ws = sample.words
    for a, b in zip(ws, ws[1:]):
        assert a.frame_stop == b.frame_start and a.sample_stop == b.sample_start
    assert sum(w.sample_stop - w.sample_start for w in ws) == ws[-1].sample_stop - ws[0].sample_start
    for w in ws:  # every span inside its clip
        assert 0 <= w.frame_start <= w.frame_stop <= video.num_frames
        assert 0 <= w.sample_start <= w.sample_stop <= sample.audio.num_samples


def test_token_ranges_with_a_trained_bpe_tokenizer():
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(["the cat sat on the mat"] * 20, trainers.BpeTrainer(vocab_size=40, special_tokens=["[UNK]"]))
    words = ["the", "catastrophe", "sat"]
    ranges, total = word_token_ranges(words, tok)
    offsets = tok.encode("the catastrophe sat").offsets
    assert total == len(offsets)
    # Independent check: the characters of each word are exactly covered by its tokens.
    text = "the catastrophe sat"
    for word, (t0, t1) in zip(words, ranges):
        assert "".join(text[a:b] for a, b in offsets[t0:t1]) == word
    assert ranges[1][1] - ranges[1][0] > 1  # an unseen word splits into several tokens
    assert ranges[0] == (0, 1) and ranges[2][1] == total


def test_interpolate_modes():
    values = np.array([[0.0], [10.0], [20.0]])
    src = np.array([0.0, 1.0, 3.0])
    tgt = np.array([-1.0, 0.4, 0.6, 2.0, 5.0])
    assert interpolate_features(values, src, tgt, mode="previous")[:, 0].tolist() == [0, 0, 0, 10, 20]
    assert interpolate_features(values, src, tgt, mode="nearest")[:, 0].tolist() == [0, 0, 10, 10, 20]
    assert interpolate_features(values, src, tgt, mode="linear")[:, 0].tolist() == pytest.approx([0, 4, 6, 15, 20])
    out = interpolate_features(torch.tensor(values), src, tgt, mode="linear")
    assert isinstance(out, torch.Tensor) and out.shape == (5, 1)
    with pytest.raises(ValueError, match="mode"):
        interpolate_features(values, src, tgt, mode="cubic")


def test_interpolate_features_against_analytic_signals():
    """Oracle: a line f(t) = 3t + 2 sampled at irregular (VFR-like) frame times. ``linear`` reproduces f at any
    time inside the sources; ``previous`` gives the value of the frame on screen (last pts <= t, found by a plain
    loop); ``nearest`` the closest source (ties to the earlier). Per-frame features onto a 10 ms hop timeline."""
    rng = np.random.default_rng(7)
    src = np.cumsum(rng.uniform(0.02, 0.05, size=60))  # 20-50 ms frame durations
    values = np.stack([3.0 * src + 2.0, -src], axis=1)  # [T, 2]
    tgt = np.arange(src[0], src[-1], 0.01)
    linear = interpolate_features(values, src, tgt, mode="linear")
    assert linear[:, 0] == pytest.approx(3.0 * tgt + 2.0, abs=1e-9)
    assert linear[:, 1] == pytest.approx(-tgt, abs=1e-9)
    on_screen = [max(k for k in range(src.size) if src[k] <= t) for t in tgt]
    assert interpolate_features(values, src, tgt, mode="previous").tolist() == values[on_screen].tolist()
    closest = [min(range(src.size), key=lambda k: (abs(src[k] - t), k)) for t in tgt]
    assert interpolate_features(values, src, tgt, mode="nearest").tolist() == values[closest].tolist()
    # At the source times themselves every mode returns the source values.
    for mode in ("previous", "nearest", "linear"):
        assert interpolate_features(values, src, src, mode=mode) == pytest.approx(values)
