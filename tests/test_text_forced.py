"""Transcript offset by forced alignment (pocketsphinx) and the auto/energy/forced method choice.

Oracles: ``sample_data/truth.json`` (the generator's text offsets) and espeak-ng's word events
(``avalign.synth.synthesize_speech``) with a known injected offset.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

import aligner
import loaders
from aligner import _text_forced
from aligner._text_offset import TextEstimate
from avcore import AudioClip, Span, Transcript, Word

pytest.importorskip("pocketsphinx")

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_data"


def _truth() -> dict:
    return json.loads((SAMPLE / "truth.json").read_text())["clips"]


@pytest.mark.parametrize("clip", ["clip00", "clip03"])  # the clips whose transcripts carry word times
def test_sample_clip_offset_within_target(clip: str) -> None:
    record = _truth()[clip]
    audio = loaders.read_audio(str(SAMPLE / record["media"]))
    transcript = loaders.read_transcript(str(SAMPLE / record["transcript"]))
    assert transcript.words
    estimate = aligner.estimate_text_offset_forced(audio, transcript)
    assert estimate.method == "forced_words" and estimate.confidence >= 0.3
    assert estimate.text_offset_ms == pytest.approx(record["text_offset_ms"], abs=15.0)


def _espeak(sentences: tuple[str, ...], gap_seconds: float = 0.4):
    from avalign.synth import synthesize_speech

    try:
        speeches = [synthesize_speech(s) for s in sentences]
    except OSError as e:  # libespeak-ng missing
        pytest.skip(f"espeak-ng unavailable: {e}")
    rate = speeches[0].sample_rate
    chunks, spans, t = [np.zeros(int(0.5 * rate), np.float32)], [], 0.5
    for text, speech in zip(sentences, speeches):
        words = tuple(Word(w.text, t + w.start_seconds, t + w.stop_seconds) for w in speech.words)
        spans.append(Span(text, words[0].start_seconds, words[-1].stop_seconds, words))
        chunks += [speech.samples.astype(np.float32), np.zeros(int(gap_seconds * rate), np.float32)]
        t += speech.samples.size / rate + gap_seconds
    samples = np.concatenate(chunks)
    audio = AudioClip(torch.from_numpy(with_noise_floor(samples, snr_db=30.0))[None], rate, 0.0)
    return audio, Transcript(tuple(spans))


def with_noise_floor(samples: np.ndarray, *, snr_db: float, seed: int = 0) -> np.ndarray:
    """``samples`` plus white noise ``snr_db`` below their RMS. Recordings have a noise floor; pocketsphinx's
    lead (``aligner._forced.FORCED_LEAD_MS``) is measured with one, and digital silence is the one input
    where it is absent (espeak-ng in silence: -1 ms raw; with a 30 dB floor: -15 ms)."""
    rms = float(np.sqrt(np.mean(samples.astype(np.float64) ** 2)))
    noise = np.random.default_rng(seed).standard_normal(samples.size) * rms * 10 ** (-snr_db / 20)
    return (samples + noise).astype(np.float32)


def _late(transcript: Transcript, seconds: float) -> Transcript:
    return Transcript(tuple(
        Span(s.text, s.start_seconds + seconds, s.stop_seconds + seconds,
             tuple(Word(w.text, w.start_seconds + seconds, w.stop_seconds + seconds) for w in s.words))
        for s in transcript.spans))


SENTENCES = ("Every morning Maria walks her dog near the river.", "Please bring fresh bread and warm soup tonight.")


@pytest.mark.parametrize("injected_ms", [-120.0, 0.0, 90.0, 230.0])
def test_injected_offset_recovered_on_espeak_truth(injected_ms: float) -> None:
    audio, truth = _espeak(SENTENCES)
    estimate = aligner.estimate_text_offset_forced(audio, _late(truth, injected_ms / 1000))
    assert not estimate.abstained and estimate.num_onsets == len(truth.words)
    assert estimate.text_offset_ms == pytest.approx(injected_ms, abs=15.0)


def test_unrelated_transcript_abstains() -> None:
    """Forcing another text onto the speech still yields word times; their differences disagree: abstain."""
    audio, _ = _espeak(SENTENCES)
    _, other = _espeak(("Tiny birds sing loudly before sunrise.", "Seven old trucks carried heavy stones uphill."))
    estimate = aligner.estimate_text_offset_forced(audio, other)
    assert estimate.abstained and estimate.confidence < 0.3


def test_offset_beyond_search_range_abstains() -> None:
    audio, truth = _espeak(SENTENCES)
    estimate = aligner.estimate_text_offset_forced(audio, _late(truth, 0.25), max_offset_ms=100.0)
    assert estimate.abstained


def test_empty_and_bad_options() -> None:
    audio, _ = _espeak(SENTENCES[:1])
    assert aligner.estimate_text_offset_forced(audio, Transcript(())).method == "abstain:empty_transcript"
    with pytest.raises(ValueError, match="max_offset_ms"):
        aligner.estimate_text_offset_forced(audio, Transcript(()), max_offset_ms=0)
    with pytest.raises(ValueError, match="text method"):
        aligner.estimate_transcript_offset(audio, Transcript(()), method="whisper")


def test_auto_falls_back_to_forced_only_when_energy_abstains(monkeypatch) -> None:
    audio, truth = _espeak(SENTENCES)
    late = _late(truth, 0.09)
    energy = aligner.estimate_transcript_offset(audio, late, method="energy")
    auto = aligner.estimate_transcript_offset(audio, late, method="auto")
    assert not energy.abstained and auto == energy  # energy answered: no forced alignment
    import aligner._text_offset as energy_module

    monkeypatch.setattr(energy_module, "estimate_text_offset",
                        lambda *a, **k: TextEstimate(None, 0.1, "abstain:low_confidence"))
    assert aligner.estimate_transcript_offset(audio, late, method="energy").abstained
    auto = aligner.estimate_transcript_offset(audio, late, method="auto")
    assert auto.method == "forced_words" and auto.text_offset_ms == pytest.approx(90.0, abs=15.0)
    report = aligner.align(None, audio, late).report  # align() uses the same choice
    assert report.text_method == "forced_words" and report.text_offset_ms == pytest.approx(auto.text_offset_ms)


def test_forced_without_pocketsphinx(monkeypatch) -> None:
    audio, truth = _espeak(SENTENCES[:1])
    import aligner._forced as forced_module

    def missing():
        raise ImportError("forced alignment needs pocketsphinx")

    monkeypatch.setattr(_text_forced, "_DECODER", None)
    monkeypatch.setattr(forced_module, "_new_decoder", missing)
    with pytest.raises(ImportError, match="pocketsphinx"):
        aligner.estimate_transcript_offset(audio, truth, method="forced")
    auto = aligner.estimate_transcript_offset(audio, truth, method="auto")  # energy's answer, no error
    assert auto.method.startswith(("word_onsets", "abstain:"))


def test_long_speech_is_aligned_in_bounded_chunks(monkeypatch) -> None:
    """Connected speech longer than the chunk limit is cut into several alignments; the offset still holds."""
    audio, truth = _espeak(SENTENCES, gap_seconds=0.1)
    calls = []
    original = _text_forced.forced_align_words

    def counting(*args, **kwargs):
        calls.append(args[2:4])
        return original(*args, **kwargs)

    monkeypatch.setattr(_text_forced, "forced_align_words", counting)
    monkeypatch.setattr(_text_forced, "_MAX_CHUNK_SECONDS", 1.5)
    estimate = aligner.estimate_text_offset_forced(audio, _late(truth, 0.06))
    assert len(calls) >= 3 and all(hi - lo <= 1.5 + 2 * 0.5 + 1.0 for lo, hi in calls)
    assert not estimate.abstained and estimate.text_offset_ms == pytest.approx(60.0, abs=15.0)
