"""Physics of ``sample_data/``: decode the committed clips directly and re-measure the ground truth.

Oracles are independent of the generator: PyAV decoding (frame luma at the frame's own pts, audio at
the first decoded frame's pts), ffprobe's per-frame JSON, and tiny parsers written here.

Tolerances:
- offset within 1 ms: beep onsets are sharp (full amplitude at the onset sample) and found by a
  half-amplitude crossing of a zero-phase band-pass envelope, which is unbiased for a step; lossy
  codecs smear the onset by well under a millisecond (measured residuals are tens of µs);
- drift within 100 ppm: 4–6 beeps over ~3–4 s with ~50 µs onset noise give a slope error of ~20 ppm;
- transcript stamps within 0.5 ms (+1 µs): SRT/WebVTT/WhisperX carry whole milliseconds.
"""
from __future__ import annotations

import json
import re
import tarfile
from pathlib import Path

import av
import numpy as np
import pytest
import scipy.signal

ROOT = Path(__file__).resolve().parents[1] / "sample_data"
TRUTH = json.loads((ROOT / "truth.json").read_text()) if (ROOT / "truth.json").exists() else {"clips": {}}
CLIPS = sorted(TRUTH["clips"])
STAMP_TOLERANCE_SECONDS = 0.0005 + 1e-6

pytestmark = pytest.mark.skipif(not CLIPS, reason="sample_data/truth.json missing: run make sample-data")


def _decode_video(path: Path) -> tuple[np.ndarray, np.ndarray]:
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pts, luma = [], []
        for frame in container.decode(stream):
            stamp = frame.pts if frame.pts is not None else frame.dts
            pts.append(float(stamp * frame.time_base))
            luma.append(float(frame.to_ndarray(format="gray").mean()))
    return np.asarray(pts), np.asarray(luma)


def _decode_audio(path: Path) -> tuple[float, int, np.ndarray]:
    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        first_pts, chunks = None, []
        for frame in container.decode(stream):
            if first_pts is None:
                first_pts = float(frame.pts * frame.time_base)
            x = frame.to_ndarray().astype(np.float64)
            x = x.mean(axis=0) if frame.format.is_planar else x.reshape(-1, len(frame.layout.channels)).mean(axis=1)
            chunks.append(x / 32768.0 if frame.format.name.startswith("s16") else x)
        return first_pts, stream.codec_context.sample_rate, np.concatenate(chunks)


def _beep_onsets(samples: np.ndarray, sample_rate: int, tone_hz: float) -> np.ndarray:
    """Sub-sample onsets (in samples) of tone bursts: half-plateau crossing of a zero-phase band-pass envelope."""
    sos = scipy.signal.butter(4, [tone_hz - 150, tone_hz + 150], btype="bandpass", fs=sample_rate, output="sos")
    envelope = np.abs(scipy.signal.hilbert(scipy.signal.sosfiltfilt(sos, samples)))
    threshold = 0.25 * envelope.max()
    onsets, i = [], 0
    above = envelope > threshold
    while True:
        hits = np.nonzero(above[i:])[0]
        if hits.size == 0:
            break
        k = i + int(hits[0])
        plateau = np.median(envelope[k + int(0.008 * sample_rate):k + int(0.025 * sample_rate)])
        half = 0.5 * plateau
        j = k
        while envelope[j] > half:
            j -= 1
        while envelope[j + 1] <= half:
            j += 1
        onsets.append(j + (half - envelope[j]) / (envelope[j + 1] - envelope[j]))
        i = k + int(0.3 * sample_rate)
    return np.asarray(onsets)


@pytest.fixture(scope="module", params=CLIPS)
def clip(request) -> tuple[str, dict]:
    return request.param, TRUTH["clips"][request.param]


def test_flash_frames_and_ffprobe_agree(clip):
    key, truth = clip
    pts, luma = _decode_video(ROOT / truth["media"])
    flashes = pts[luma > 128]
    np.testing.assert_allclose(flashes, truth["flash_pts_seconds"], atol=1e-9)
    assert 4 <= flashes.size <= 8 and np.min(np.diff(flashes)) >= 0.7
    assert np.all(luma[luma > 128] > 200) and np.all(luma[luma <= 128] < 100)
    frames = json.loads((ROOT / truth["ffprobe_frames"]).read_text())["frames"]
    assert len(frames) == pts.size == truth["num_frames"]
    probe = np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in frames])
    known = ~np.isnan(probe)
    assert known.sum() >= pts.size - 1, f"{key}: ffprobe lacks pts for {np.nonzero(~known)[0]}"
    np.testing.assert_allclose(probe[known], pts[known], atol=1e-6)
    assert pts[0] == pytest.approx(truth["video_start_seconds"], abs=1e-9)
    if truth["vfr"]:
        durations = np.diff(pts)
        assert durations.max() > 1.5 * durations.min(), f"{key}: expected irregular frame durations"


def test_beeps_fit_clock_model(clip):
    key, truth = clip
    first_pts, sample_rate, samples = _decode_audio(ROOT / truth["media"])
    assert sample_rate == truth["sample_rate"]
    assert first_pts == pytest.approx(truth["audio_start_seconds"], abs=1e-6)
    beeps = first_pts + _beep_onsets(samples, sample_rate, truth["beep_frequency_hz"]) / sample_rate
    flashes = np.asarray(truth["flash_pts_seconds"])
    assert beeps.size == flashes.size, f"{key}: {beeps.size} beeps for {flashes.size} flashes"
    slope, intercept = np.polyfit(flashes, beeps, 1)
    residual_ms = 1000 * (beeps - (slope * flashes + intercept))
    offset_error_ms = 1000 * intercept - truth["av_offset_ms"]
    drift_error_ppm = (slope - 1) * 1e6 - truth["drift_ppm"]
    print(f"{key}: offset error {offset_error_ms:+.3f} ms, drift error {drift_error_ppm:+.1f} ppm, "
          f"max |residual| {np.abs(residual_ms).max():.3f} ms, "
          f"max |beep - truth| {1000 * np.abs(beeps - truth['beep_audio_seconds']).max():.3f} ms")
    assert abs(offset_error_ms) < 1.0
    assert abs(drift_error_ppm) < 100
    np.testing.assert_allclose(beeps, truth["beep_audio_seconds"], atol=0.0005)


def _expected_stamps(truth: dict) -> list[tuple[str, float, float]]:
    scale, offset = 1 + truth["drift_ppm"] * 1e-6, truth["av_offset_ms"] / 1000 + truth["text_offset_ms"] / 1000
    return [(w["text"], w["start_seconds"] * scale + offset, w["stop_seconds"] * scale + offset)
            for w in truth["words"]]


def _parse_captions(text: str) -> list[tuple[str, float, float]]:
    """SRT or WebVTT cues as (text, start, end)."""
    pattern = re.compile(r"(\d+):(\d\d):(\d\d)[,.](\d{3}) --> (\d+):(\d\d):(\d\d)[,.](\d{3})\s*\n(.+)")
    cues = []
    for m in pattern.finditer(text):
        g = [int(x) for x in m.groups()[:8]]
        cues.append((m.group(9).strip(), g[0] * 3600 + g[1] * 60 + g[2] + g[3] / 1000,
                     g[4] * 3600 + g[5] * 60 + g[6] + g[7] / 1000))
    return cues


def _parse_textgrid_words(text: str) -> list[tuple[str, float, float]]:
    tier = text.split('name = "words"')[1].split("item [")[0]
    intervals = re.findall(r"xmin = ([\d.]+)\s+xmax = ([\d.]+)\s+text = \"([^\"]*)\"", tier)
    return [(t, float(a), float(b)) for a, b, t in intervals if t]


def test_transcript_stamps_are_truth_shifted_by_text_offset(clip):
    key, truth = clip
    expected = _expected_stamps(truth)
    text = (ROOT / truth["transcript"]).read_text()
    fmt = truth["transcript_format"]
    if fmt in ("srt", "vtt"):
        assert text.startswith("WEBVTT") == (fmt == "vtt")
        cues, cursor = _parse_captions(text), 0
        assert len(cues) >= 2
        for cue_text, start, end in cues:
            words = cue_text.split()
            group = expected[cursor:cursor + len(words)]
            assert [w[0] for w in group] == words
            assert start == pytest.approx(group[0][1], abs=STAMP_TOLERANCE_SECONDS)
            assert end == pytest.approx(group[-1][2], abs=STAMP_TOLERANCE_SECONDS)
            cursor += len(words)
        assert cursor == len(expected)
        return
    if fmt == "whisperx":
        data = json.loads(text)
        got = [(w["word"], w["start"], w["end"]) for s in data["segments"] for w in s["words"]]
        for segment in data["segments"]:
            assert segment["start"] == segment["words"][0]["start"] and segment["end"] == segment["words"][-1]["end"]
    elif fmt == "jsonlist":
        got = [(w["text"], w["start"], w["end"]) for w in json.loads(text)]
    elif fmt == "textgrid":
        assert 'name = "phrases"' in text
        got = _parse_textgrid_words(text)
    else:
        raise AssertionError(f"unknown format {fmt}")
    assert [g[0] for g in got] == [e[0] for e in expected]
    np.testing.assert_allclose([g[1:] for g in got], [e[1:] for e in expected], atol=STAMP_TOLERANCE_SECONDS)


def test_truth_covers_required_variety():
    clips = TRUTH["clips"].values()
    assert len(CLIPS) >= 6
    offsets = [c["av_offset_ms"] for c in clips]
    assert min(offsets) < 0 < max(offsets) and 0 in offsets and max(map(abs, offsets)) <= 300
    assert sum(c["drift_ppm"] != 0 for c in clips) >= 2 and max(abs(c["drift_ppm"]) for c in clips) <= 1000
    assert {c["transcript_format"] for c in clips} >= {"srt", "vtt", "whisperx", "textgrid", "jsonlist"}
    assert {c["container"] for c in clips} >= {"mp4", "mkv", "webm", "mov", "avi"}
    assert any(c["vfr"] for c in clips) and any(c["audio_start_seconds"] > 0.3 for c in clips)
    for c in clips:
        starts = [w["start_seconds"] for w in c["words"]]
        assert all(w["start_seconds"] < w["stop_seconds"] for w in c["words"]) and starts == sorted(starts)
        assert 3.0 <= c["duration_seconds"] <= 8.0


def test_shards_hold_exactly_the_clips():
    shards = sorted((ROOT / "shards").glob("shard-*.tar"))
    assert [p.name for p in shards] == ["shard-000000.tar", "shard-000001.tar"]
    expected = {name for c in TRUTH["clips"].values() for name in (c["media"], c["transcript"])}
    seen = []
    for path in shards:
        with tarfile.open(path) as tar:
            members = tar.getmembers()
            names = [m.name for m in members]
            assert names == sorted(names)
            assert 3 <= len({n.split(".")[0] for n in names}) <= 4
            for m in members:
                assert (m.mtime, m.uid, m.gid, m.uname, m.gname) == (0, 0, 0, "", "")
                assert tar.extractfile(m).read() == (ROOT / m.name).read_bytes()
            seen += names
    assert sorted(seen) == sorted(expected) and len(seen) == len(set(seen))
