"""Speech with known word times for transcript tests: espeak-ng sentences (``avalign.synth.synthesize_speech``) placed
one after another at known samples over white noise, and an SRT writer with a known offset.

Skips the calling test when espeak-ng (or soxr) is missing.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from avcore import AudioClip

SAMPLE_RATE = 16000
SENTENCES = ("Seven bright lamps glow above quiet harbors.", "Every morning Maria walks her dog near the river.",
             "Blue paper boats drift slowly past green fields.", "Robots sorted heavy boxes during long nights.",
             "Please bring fresh bread and warm soup tonight.", "Tiny birds sing loudly before sunrise.",
             "Our team painted seven wooden chairs yesterday.", "Cold wind pushed dark clouds across wide hills.")


def speech_over_noise(snr_db: float, *, seed: int = 3, pauses_seconds: tuple[float, float] = (0.25, 0.6),
                      sentences: tuple[str, ...] = SENTENCES):
    """``sentences`` (default :data:`SENTENCES`) one after another from 1.5 s (pauses drawn from ``pauses_seconds``) over white noise at
    ``snr_db``: ``(audio, sentences)``, each sentence a list of ``(word, start, stop)`` on the audio clock."""
    synth = pytest.importorskip("avalign.synth")
    soxr = pytest.importorskip("soxr")
    try:
        speeches = [synth.synthesize_speech(s) for s in sentences]
    except OSError as error:  # libespeak-ng missing
        pytest.skip(f"espeak-ng unavailable: {error}")
    rng = np.random.default_rng(seed)
    cursor, placed, pieces = 1.5, [], []
    for speech in speeches:
        x = soxr.resample(speech.samples.astype(np.float64), speech.sample_rate, SAMPLE_RATE)
        begin = round(cursor * SAMPLE_RATE) / SAMPLE_RATE
        pieces.append((round(cursor * SAMPLE_RATE), 0.5 * x / np.max(np.abs(x))))
        placed.append([(w.text, begin + w.start_seconds, begin + w.stop_seconds) for w in speech.words])
        cursor = begin + x.size / SAMPLE_RATE + rng.uniform(*pauses_seconds)
    audio = np.zeros(round((cursor + 1.0) * SAMPLE_RATE))
    for at, x in pieces:
        audio[at:at + x.size] += x
    rms = np.sqrt(np.mean(audio[audio != 0] ** 2))
    audio += rng.standard_normal(audio.size) * rms * 10 ** (-snr_db / 20)
    clip = AudioClip(samples=torch.from_numpy(audio[None, :].astype(np.float32)), sample_rate=SAMPLE_RATE,
                     start_seconds=0.0)
    return clip, placed


def srt(cues, offset_ms: float) -> bytes:
    """SubRip of ``(text, start, stop)`` cues (audio clock), every stamp ``offset_ms`` late."""
    def stamp(t: float) -> str:
        ms = round((t + offset_ms / 1000) * 1000)
        return f"{ms // 3600000:02d}:{ms // 60000 % 60:02d}:{ms // 1000 % 60:02d},{ms % 1000:03d}"
    return "\n".join(f"{i}\n{stamp(a)} --> {stamp(b)}\n{text}\n" for i, (text, a, b) in enumerate(cues, 1)).encode()


def caption_offset_estimate(cues_of, offset_ms: float, *, snr_db: float = 12.0, name: str = "captions.srt", **speech):
    """``aligner.estimate_transcript_offset`` of :func:`speech_over_noise` at ``snr_db`` (``speech``: its other
    options) and an SRT of ``cues_of(placed)`` (``(text, start, stop)`` cues from the placed words), every stamp
    ``offset_ms`` late."""
    import aligner
    import loaders

    audio, placed = speech_over_noise(snr_db, **speech)
    transcript = loaders.read_transcript(srt(cues_of(placed), offset_ms), name=name)
    return aligner.estimate_transcript_offset(audio, transcript)



def wav_bytes(audio: AudioClip) -> bytes:
    """``audio`` (mono) as a 16-bit PCM WAV file, e.g. a shard's ``KEY.wav`` member."""
    import io
    import wave

    pcm = (np.clip(audio.samples[0].numpy(), -1.0, 1.0) * 32767.0).astype("<i2")
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(audio.sample_rate)
        w.writeframes(pcm.tobytes())
    return out.getvalue()
