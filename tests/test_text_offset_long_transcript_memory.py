"""The energy estimator's onset evidence held an items x lags array: 20 KB per cue, whether or not the cue could meet
the audio. A transcript of 20,000 cues on a few seconds of audio held 395 MB (100,000 cues, the reader's default
``max_cues``: 2 GB). Cues that no lag of the search puts on the audio are now left out and the rest summed in blocks
(BENCHMARKS.md, "Transcript offset: memory of long transcripts").

Oracle: the estimate with the far cues equals the estimate without them (they cannot meet the audio at any offset
searched); espeak-ng speech placed at known samples, a known transcript offset.
"""
from __future__ import annotations

import tracemalloc

import pytest

from tests.espeak_clips import speech_over_noise, srt

_FAR_CUES = 20_000


def _captions(placed):
    return [(" ".join(w for w, _, _ in words), words[0][1], words[-1][2]) for words in placed]


def _far_cues(after_seconds: float):
    return [(f"word{k} again", after_seconds + 0.05 * k, after_seconds + 0.05 * (k + 1)) for k in range(_FAR_CUES)]


def test_cues_far_beyond_the_audio_cost_no_memory_and_change_nothing():
    import loaders
    from aligner.estimators import estimate_text_offset

    audio, placed = speech_over_noise(20.0)
    cues = _captions(placed)
    alone = estimate_text_offset(audio, loaders.read_transcript(srt(cues, 90.0), name="a.srt"))
    far = loaders.read_transcript(srt(cues + _far_cues(audio.stop_seconds + 5.0), 90.0), name="b.srt")
    tracemalloc.start()
    try:
        with_far = estimate_text_offset(audio, far)
        peak_mb = tracemalloc.get_traced_memory()[1] / 1e6
    finally:
        tracemalloc.stop()
    assert alone.text_offset_ms == pytest.approx(90.0, abs=10.0), alone
    assert with_far.text_offset_ms == pytest.approx(alone.text_offset_ms, abs=1e-6), with_far
    assert with_far.confidence == pytest.approx(alone.confidence, abs=1e-9)
    # before: 395 MB for 20,000 cues (20 KB each); measured after: see BENCHMARKS.md
    assert peak_mb < 60.0, f"peak {peak_mb:.0f} MB"
