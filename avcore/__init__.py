"""The base layer of avalign: records, time rules, errors and resampling. Re-exports only.

Layers (imports run one way, checked by ``tests/test_layers.py`` with import-linter):

    avalign (CLI tools)
    loaders.pipeline (windows, pack, collate, dataset/loader)
    aligner (the alignment stage)  |  loaders readers (decoding, shards, transcripts)
    avcore (records, time rules, errors, resampling)

``avcore`` imports nothing from ``aligner``, ``loaders`` or ``avalign``.
"""
from avcore._errors import REASONS, DecodeError, DecodeTimeout, SampleError, TranscriptError, reason_of, sample_error
from avcore._records import AudioClip, BatchItem, Span, TextTokens, Transcript, VideoClip, VideoMetadata, Word
from avcore._resample import resample, soxr_hq
from avcore._time import (
    clip_to_window,
    frame_played_at,
    frame_range,
    sample_range,
    samples_to_seconds,
    seconds_to_samples,
    seconds_to_ticks,
    ticks_to_seconds,
)

__all__ = [
    "AudioClip",
    "BatchItem",
    "DecodeError",
    "DecodeTimeout",
    "REASONS",
    "SampleError",
    "Span",
    "TextTokens",
    "Transcript",
    "TranscriptError",
    "VideoClip",
    "VideoMetadata",
    "Word",
    "clip_to_window",
    "frame_played_at",
    "frame_range",
    "reason_of",
    "resample",
    "sample_error",
    "sample_range",
    "samples_to_seconds",
    "seconds_to_samples",
    "seconds_to_ticks",
    "soxr_hq",
    "ticks_to_seconds",
]
