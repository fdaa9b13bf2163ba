"""The energy transcript-offset estimator on audio with a DC offset (cheap converters, some old recordings).

The band energy filtered each block of the clip with zeros around it: a DC offset was a step at the clip's edges,
from which every band's filter rings, and pure DC audio (no speech) got a word-level answer of +345 ms at
confidence 1.0. The full-band energy added the offset's square to every frame, which flattened the speech's rises
and pauses: a 0.05 offset under speech moved the answer 53 ms. Both now take the samples less their mean
(BENCHMARKS.md, "Band energy and a DC offset").

Oracles: audio without speech has no transcript offset (the estimator must not answer); espeak-ng speech placed at
known samples, a known transcript offset, the same with and without the offset.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.espeak_clips import speech_over_noise, srt

SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"


@pytest.mark.parametrize("level", [0.3, 1e-4])
def test_audio_that_is_only_a_dc_offset_gets_no_answer(level):
    import aligner
    import loaders
    from avcore import AudioClip

    audio = loaders.read_audio(str(SAMPLE_DATA / "clip00.mp4"))
    words = loaders.read_transcript(str(SAMPLE_DATA / "clip00.json"))
    dc = AudioClip(torch.full_like(audio.samples, level), audio.sample_rate, audio.start_seconds)
    estimate = aligner.estimate_transcript_offset(dc, words, method="energy")
    # before: +345 / +335 ms at confidence 1.0 / 0.92
    assert estimate.text_offset_ms is None, estimate


@pytest.mark.parametrize("offset", [0.05, 0.2])
def test_a_dc_offset_under_speech_does_not_move_the_answer(offset):
    import aligner
    import loaders
    from avcore import AudioClip

    audio, placed = speech_over_noise(20.0)
    captions = loaders.read_transcript(srt([(" ".join(w for w, _, _ in words), words[0][1], words[-1][2])
                                            for words in placed], 90.0), name="captions.srt")
    clean = aligner.estimate_transcript_offset(audio, captions, method="energy")
    shifted = AudioClip(audio.samples + offset, audio.sample_rate, audio.start_seconds)
    estimate = aligner.estimate_transcript_offset(shifted, captions, method="energy")
    assert clean.text_offset_ms == pytest.approx(90.0, abs=10.0), clean
    # before: 34.8 ms at 0.05 (confidence 0.35), an abstention at 0.2
    assert estimate.text_offset_ms == pytest.approx(clean.text_offset_ms, abs=0.5), estimate
