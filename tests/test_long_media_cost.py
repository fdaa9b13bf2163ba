"""Long media (the scale round of 2026-12-06, fifth session): per-caption work must not grow with the clip.

Oracle: the same 2 s caption aligned inside a 60 s and a 1,200 s clip; only the clip's length differs. Before, each
caption converted the whole clip to float64 mono before slicing its span (1,800 s: 247 ms a caption against 49 ms;
2,000 captions on 2 h of audio: tens of minutes). Timed in the same process, alternating, best of several runs.
"""
from __future__ import annotations

import time

import torch

from aligner.estimators import forced_align_scored, new_decoder
from avcore import AudioClip


def test_a_caption_costs_the_same_in_a_short_and_a_long_clip():
    decoder = new_decoder()
    generator = torch.Generator().manual_seed(0)
    clips = {seconds: AudioClip(samples=(torch.rand(1, seconds * 16000, generator=generator) - 0.5) * 0.2,
                                sample_rate=16000, start_seconds=0.0) for seconds in (60, 1200)}
    best = {seconds: float("inf") for seconds in clips}
    for _ in range(4):
        for seconds, clip in clips.items():
            started = time.perf_counter()
            forced_align_scored(clip, "the quick brown fox jumps over", 10.0, 12.0, decoder=decoder)
            best[seconds] = min(best[seconds], time.perf_counter() - started)
    # before: about 3x at 1,200 s (the clip's conversion dominated); now the span's own work
    assert best[1200] < 1.8 * best[60], best


def test_band_energy_memory_does_not_hold_every_band_of_the_clip():
    """``onset_offset_near`` computes the band-SNR energy of the whole clip (7 bands). Before, the seven full-length
    float64 bands and the spectrum were alive at once: a traced peak of 21.6x the float32 audio (2 h at 16 kHz: over
    10 GB); one band at a time and one running-sum array in ``log_energy`` gave 11x; bands masked block by block
    (65 s blocks), keeping only per-frame float32 powers, give 2.6x on these 5 min, of which about 2x (the block's
    float64 arrays, 40 MB) does not grow with the clip (tests/test_band_energy.py measures the growth: 0.35x)."""
    import tracemalloc

    import loaders
    from aligner.estimators import onset_offset_near

    samples = (torch.rand(1, 300 * 16000, generator=torch.Generator().manual_seed(0)) - 0.5) * 0.2
    audio = AudioClip(samples=samples, sample_rate=16000, start_seconds=0.0)
    transcript = loaders.read_transcript(b"1\n00:00:10,000 --> 00:00:11,000\nhello there\n", name="a.srt")
    tracemalloc.start()
    try:
        onset_offset_near(audio, transcript, 0.0, window_ms=100.0)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * samples.numel() * 4, peak / (samples.numel() * 4)
