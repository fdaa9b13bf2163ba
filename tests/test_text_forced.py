"""Transcript offset by forced alignment (pocketsphinx) and the auto/energy/forced method choice.

Oracles: ``sample_data/truth.json`` (the generator's text offsets) and espeak-ng's word events
(``avalign.synth.synthesize_speech``) with a known injected offset.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import aligner
import loaders
from aligner import TextOptions
from aligner.estimators import PAD_SECONDS, estimate_text_offset_forced, shared_decoder
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
    estimate = estimate_text_offset_forced(audio, transcript)  # the default: a new decoder
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
    lead (``aligner.estimators.FORCED_LEAD_MS``) is measured with one, and digital silence is the one input
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
    estimate = estimate_text_offset_forced(audio, _late(truth, injected_ms / 1000), decoder=shared_decoder())
    assert not estimate.abstained and estimate.num_words_aligned == len(truth.words) and estimate.num_onsets == 0
    assert estimate.text_offset_ms == pytest.approx(injected_ms, abs=15.0)


def test_unrelated_transcript_abstains() -> None:
    """Forcing another text onto the speech still yields word times; their differences disagree: abstain."""
    audio, _ = _espeak(SENTENCES)
    _, other = _espeak(("Tiny birds sing loudly before sunrise.", "Seven old trucks carried heavy stones uphill."))
    estimate = estimate_text_offset_forced(audio, other, decoder=shared_decoder())
    assert estimate.abstained and estimate.confidence < 0.3


def test_offset_beyond_search_range_abstains() -> None:
    audio, truth = _espeak(SENTENCES)
    estimate = estimate_text_offset_forced(audio, _late(truth, 0.25), options=TextOptions(max_offset_ms=100.0),
                                           decoder=shared_decoder())
    assert estimate.abstained


def test_empty_and_bad_options() -> None:
    audio, _ = _espeak(SENTENCES[:1])
    assert estimate_text_offset_forced(audio, Transcript(())).method == "abstain:empty_transcript"
    with pytest.raises(ValueError, match="max_offset_ms"):
        estimate_text_offset_forced(audio, Transcript(()), options=TextOptions(max_offset_ms=0))
    with pytest.raises(ValueError, match="text method"):
        aligner.estimate_transcript_offset(audio, Transcript(()), method="whisper")


def test_auto_falls_back_to_forced_only_when_energy_abstains() -> None:
    audio, truth = _espeak(SENTENCES)
    late = _late(truth, 0.09)
    energy = aligner.estimate_transcript_offset(audio, late, method="energy")
    auto = aligner.estimate_transcript_offset(audio, late, method="auto")
    assert not energy.abstained and auto == energy  # energy answered: no forced alignment
    # A search range too narrow for the energy estimator's sidelobe test (< ~100 ms): energy abstains, and
    # auto answers by forced alignment.
    late, narrow = _late(truth, 0.03), TextOptions(max_offset_ms=45.0)
    energy = aligner.estimate_transcript_offset(audio, late, method="energy", options=narrow)
    assert energy.method == "abstain:search_range_too_small"
    auto = aligner.estimate_transcript_offset(audio, late, method="auto", options=narrow)
    # ... read off the onset evidence near forced alignment's answer (">= 3 onsets after a pause": 6 sentences)
    assert auto.method == "forced_words+onsets" and auto.text_offset_ms == pytest.approx(30.0, abs=5.0)
    report = aligner.align(None, audio, late, max_offset_ms=45.0).report  # align() uses the same choice
    assert report.text_method == auto.method and report.text_offset_ms == pytest.approx(auto.text_offset_ms)
    assert aligner.align(None, audio, late, text_options=narrow).report == report  # the options object, same result


def test_forced_without_pocketsphinx(monkeypatch) -> None:
    audio, truth = _espeak(SENTENCES[:1])
    monkeypatch.setitem(sys.modules, "pocketsphinx", None)  # `import pocketsphinx` now raises ImportError
    shared_decoder.cache_clear()  # the process's decoder is made again on the next use
    try:
        with pytest.raises(ImportError, match="pocketsphinx"):
            aligner.estimate_transcript_offset(audio, truth, method="forced")
        auto = aligner.estimate_transcript_offset(audio, truth, method="auto")  # energy's answer, no error
        assert auto.method.startswith(("word_onsets", "abstain:"))
        assert auto == aligner.estimate_transcript_offset(audio, truth, method="energy")
    finally:
        shared_decoder.cache_clear()


class _CountingDecoder:
    """A pocketsphinx decoder that records the duration of each utterance it is given (16 kHz int16)."""

    def __init__(self, inner) -> None:
        self.inner, self.utterance_seconds = inner, []

    def process_raw(self, data: bytes, *args, **kwargs):
        self.utterance_seconds.append(len(data) / 2 / 16000)
        return self.inner.process_raw(data, *args, **kwargs)

    def __getattr__(self, name: str):
        return getattr(self.inner, name)


def test_long_speech_is_aligned_in_bounded_chunks() -> None:
    """Connected speech longer than the chunk limit is cut into several alignments; the offset still holds."""
    audio, truth = _espeak(SENTENCES, gap_seconds=0.1)
    decoder = _CountingDecoder(shared_decoder())
    estimate = estimate_text_offset_forced(audio, _late(truth, 0.06), options=TextOptions(max_chunk_seconds=1.5),
                                           decoder=decoder)
    # Each alignment's audio: the chunk's stamps (<= 1.5 s + a word) ± the 0.5 s search margin, padded with
    # PAD_SECONDS of silence on each side (and half a 10 ms frame for the second pass: one pass here).
    chunk_seconds = [seconds - 2 * PAD_SECONDS for seconds in decoder.utterance_seconds]
    assert len(chunk_seconds) >= 3 and all(seconds <= 1.5 + 2 * 0.5 + 1.0 for seconds in chunk_seconds), chunk_seconds
    assert not estimate.abstained and estimate.text_offset_ms == pytest.approx(60.0, abs=15.0)


def test_several_methods_at_once_equal_each_method_alone() -> None:
    """``estimate_transcript_offsets``: each method's estimate equals ``estimate_transcript_offset``'s, with one
    forced alignment for ``forced`` and ``auto`` together (tests and the bench comparing the methods rely on it)."""
    from aligner.estimators import TEXT_METHODS, estimate_transcript_offsets

    audio, truth = _espeak(SENTENCES)
    late, narrow = _late(truth, 0.03), TextOptions(max_offset_ms=45.0)  # energy abstains: auto force-aligns
    counting = _CountingDecoder(shared_decoder())
    alone = {m: aligner.estimate_transcript_offset(audio, late, method=m, options=narrow,
                                                   decoder=counting if m == "auto" else None) for m in TEXT_METHODS}
    one_alignment = len(counting.utterance_seconds)
    counting.utterance_seconds.clear()
    together = estimate_transcript_offsets(audio, late, options=narrow, decoder=counting)
    assert together == alone and list(together) == list(TEXT_METHODS)
    assert alone["auto"].method == "forced_words+onsets" and alone["forced"].method == "forced_words"
    assert one_alignment > 0 and len(counting.utterance_seconds) == one_alignment
    assert list(estimate_transcript_offsets(audio, late, methods=("auto", "energy"), options=narrow)) == ["auto", "energy"]
    with pytest.raises(ValueError, match="text methods"):
        estimate_transcript_offsets(audio, late, methods=("energy", "whisper"))
