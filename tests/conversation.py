"""A generated telephone conversation: two espeak-ng voices taking turns, overlapping, band-passed to
300-3400 Hz, with segment-level captions (one per turn) whose timing is known.

Truth: each turn's speech starts at a known sample (espeak's first word event). Caption times are
``speech start + jitter + offset``: jitter uniform in ``[0, jitter_ms]`` models loose human segment
times; ``offset_ms`` is the transcript offset to recover (DESIGN.md's sign: > 0, captions late).
"""
from __future__ import annotations

import numpy as np
import torch

from avcore import AudioClip, Span, Transcript

TURNS = (
    ("a", "Hello, did you get the report I sent this morning?"),
    ("b", "Yes I did, thanks. I read most of it on the train."),
    ("a", "Good. The numbers for March look much better than we hoped."),
    ("b", "They do. Sales went up in every region except the north."),
    ("a", "Right, the north is still a problem. We need a new plan there."),
    ("b", "I can call the team tomorrow and ask what they think."),
    ("a", "Please do. And send me a short summary before Friday."),
    ("b", "Sure, no problem. Anything else?"),
    ("a", "No, that is all for now. Talk to you soon."),
)
VOICES = {"a": ("en-us", 175), "b": ("en-us+f3", 190)}


def band_pass(samples: np.ndarray, sample_rate: int, *, low_hz: float = 300.0, high_hz: float = 3400.0) -> np.ndarray:
    """Telephone band: zero every FFT bin outside ``[low_hz, high_hz]``."""
    spectrum = np.fft.rfft(samples)
    freqs = np.fft.rfftfreq(samples.size, 1.0 / sample_rate)
    spectrum[(freqs < low_hz) | (freqs > high_hz)] = 0.0
    return np.fft.irfft(spectrum, n=samples.size).astype(np.float32)


def conversation(*, offset_ms: float, overlap_seconds: float = 0.4, jitter_ms: float = 80.0, seed: int = 0,
                 snr_db: float = 25.0) -> tuple[AudioClip, Transcript, list[float]]:
    """``(audio at 16 kHz, captions, true speech start of each turn in seconds)``."""
    from avalign.synth import synthesize_speech
    from avcore import resample

    rng = np.random.default_rng(seed)
    rate = 16000
    speeches = []
    for who, text in TURNS:
        voice, wpm = VOICES[who]
        speech = synthesize_speech(text.replace(",", "").replace("?", "."), voice=voice, rate_wpm=wpm)
        samples = resample(speech.samples.astype(np.float32)[None], speech.sample_rate, rate)[0]
        first = speech.words[0].start_seconds
        speeches.append((text, samples, first, speech.words[-1].stop_seconds))
    total = int((sum(s.size for _, s, _, _ in speeches) / rate + 0.6 * len(speeches) + 2.0) * rate)
    mix = np.zeros(total, np.float32)
    t, spans, truth = 0.5, [], []
    for i, (text, samples, first, last) in enumerate(speeches):
        start = int(round(t * rate))
        mix[start:start + samples.size] += samples * (0.8 if i % 2 else 1.0)
        speech_start, speech_stop = t + first, t + last
        truth.append(speech_start)
        jitter = rng.uniform(0.0, jitter_ms / 1000.0)
        spans.append(Span(text, speech_start + jitter + offset_ms / 1000.0,
                          speech_stop + rng.uniform(0.0, jitter_ms / 1000.0) + offset_ms / 1000.0))
        # The next talker starts before this one stops on every other turn (overlap), else after a short gap.
        t = speech_stop - overlap_seconds if i % 2 == 0 else speech_stop + rng.uniform(0.15, 0.5)
    mix = band_pass(mix[: int((t + 1.5) * rate)], rate)
    rms = float(np.sqrt(np.mean(mix ** 2)))
    mix = mix + (rng.standard_normal(mix.size) * rms * 10 ** (-snr_db / 20)).astype(np.float32)
    return AudioClip(torch.from_numpy(mix)[None], rate, 0.0), Transcript(tuple(spans)), truth
