"""ASR stamps counted from the audio's first sample, on media whose audio starts late (adversarial round 43, F16).

Whisper-family tools decode with FFmpeg into raw samples, so their word times count from the first audio sample; an
MPEG-TS written by FFmpeg starts at 1.4 s. Oracle: espeak-ng's own word times (``avalign.synth.synthesize_speech``)
placed at a known point of the audio input, and ffprobe's start times of the streams (where FFmpeg put each input's 0).
"""
from __future__ import annotations

import json
import shutil
import subprocess

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None or shutil.which("ffprobe") is None,
                                reason="needs ffmpeg and ffprobe")

LEAD_SECONDS = 0.6


def _late_ts(tmp_path):
    from avalign.synth import SENTENCES, synthesize_speech

    try:
        speech = synthesize_speech(" ".join(SENTENCES[:4]))
    except OSError as e:  # libespeak-ng missing
        pytest.skip(f"espeak-ng unavailable: {e}")
    rate = speech.sample_rate
    samples = speech.samples.astype(np.float32)
    samples = samples / (32768.0 if speech.samples.dtype.kind == "i" else 1.0)
    audio = np.random.default_rng(0).normal(0.0, 1e-3, int((2 * LEAD_SECONDS) * rate) + samples.size)
    start = int(LEAD_SECONDS * rate)
    audio[start:start + samples.size] += samples
    raw = tmp_path / "speech.f32"
    raw.write_bytes(audio.astype("<f4").tobytes())
    media = tmp_path / "late.ts"
    seconds = audio.size / rate
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                    f"testsrc2=size=160x120:rate=25:duration={seconds:.3f}", "-f", "f32le", "-ar", str(rate), "-ac", "1",
                    "-i", str(raw), "-c:v", "libx264", "-preset", "veryfast", "-c:a", "aac", "-b:a", "96k",
                    "-shortest", str(media)], check=True)
    # Where FFmpeg put each input's time 0 (ffprobe): the video's first frame; the audio's first sample (AAC priming
    # before the input's first sample: MPEG-TS does not say how much to skip, so decoders output it).
    starts = {s["codec_type"]: float(s["start_time"]) for s in json.loads(subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "stream=codec_type,start_time", "-of", "json", str(media)],
        capture_output=True, text=True, check=True).stdout)["streams"]}
    truth = starts["video"] + LEAD_SECONDS + np.array([w.start_seconds for w in speech.words])
    # The transcript as an ASR tool writes it: word times from the first sample it decoded.
    words = [{"word": w.text, "start": round(t - starts["audio"], 3), "end": round(t - starts["audio"] + w.stop_seconds
                                                                                   - w.start_seconds, 3)}
             for w, t in zip(speech.words, truth)]
    transcript = tmp_path / "late.json"
    transcript.write_text(json.dumps({"segments": [{"start": words[0]["start"], "end": words[-1]["end"],
                                                     "text": " ".join(w["word"] for w in words), "words": words}]}))
    return media, transcript, truth, starts


def test_asr_words_stamped_from_the_first_sample_land_on_the_media_clock(tmp_path) -> None:
    """The .ts starts at 1.4 s (ffprobe); the estimated transcript offset is minus the audio's first sample time
    (ffprobe's audio start, within 20 ms) and every word lands within 30 ms of where the audio has it on the video
    timeline. Before: the search around 0 abstained and the words stayed 1.4 s early."""
    import loaders
    from aligner import align

    media, transcript, truth, starts = _late_ts(tmp_path)
    assert starts["audio"] > 1.0  # FFmpeg's MPEG-TS start
    audio = loaders.read_audio(str(media))
    sample = align(loaders.read_video(str(media)), audio, loaders.read_transcript(str(transcript)))
    report = sample.report
    assert report.text_method.endswith("+from_first_sample"), (report.text_method, report.text_offset_ms)
    assert report.text_offset_ms == pytest.approx(-1000.0 * starts["audio"], abs=20.0)
    got = np.array([w.start_seconds for w in sample.words])
    assert got.size == truth.size and np.abs(got - truth).max() < 0.030, np.round(got - truth, 3)


def test_stamps_on_the_media_clock_are_not_moved(tmp_path) -> None:
    """The same clip with the transcript stamped on the container's clock (the convention): answered by the first
    search (no suffix), offset within 20 ms of 0, words within 30 ms."""
    import loaders
    from aligner import align

    media, transcript, truth, starts = _late_ts(tmp_path)
    data = json.loads(transcript.read_text())
    for segment in data["segments"]:
        segment["start"] += starts["audio"]
        segment["end"] += starts["audio"]
        for w in segment["words"]:
            w["start"] = round(w["start"] + starts["audio"], 3)
            w["end"] = round(w["end"] + starts["audio"], 3)
    transcript.write_text(json.dumps(data))
    sample = align(loaders.read_video(str(media)), loaders.read_audio(str(media)), loaders.read_transcript(str(transcript)))
    assert not sample.report.text_method.endswith("+from_first_sample"), sample.report.text_method
    assert sample.report.text_offset_ms == pytest.approx(0.0, abs=20.0)
    got = np.array([w.start_seconds for w in sample.words])
    assert np.abs(got - truth).max() < 0.030, np.round(got - truth, 3)


_UNESTIMATED = """
import logging
import torch
from aligner import align
from loaders import AudioClip, Span, Transcript

logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
transcript = Transcript((Span("hello there", 0.5, 1.2),))
for start in (0.0, 1.4, 2.0):  # on time, then late twice: one warning, for the first late one
    audio = AudioClip(torch.zeros(1, 48000), 16000, start)
    sample = align(None, audio, transcript, estimate=False, caption_words=False, key=f"clip{start}")
    assert sample.report.clock.text_offset_ms == 0.0 and sample.segments[0].start_seconds == 0.5
"""


def test_a_late_audio_start_without_estimation_is_said_once() -> None:
    """``estimate=False`` and no offset given: the transcript is applied as stamped (0 offset), and on audio that starts
    ``FIRST_SAMPLE_ORIGIN_MIN_SECONDS`` or more late a warning says, once per process, that ASR stamps from this file
    would be that start early and what to pass (a fresh interpreter: the warning is per process)."""
    import sys

    run = subprocess.run([sys.executable, "-c", _UNESTIMATED], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    warnings = [line for line in run.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 1, run.stderr
    assert "clip1.4: the audio starts at 1.400 s" in warnings[0] and "text_offset_ms=-1400" in warnings[0]
