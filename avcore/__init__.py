"""The base layer of avalign: records, time rules, errors, media types, the align.json schema, resampling and
the mono downmix.

Re-exports only.

Layers (imports run one way, checked by ``tests/test_layers.py`` with import-linter):

    avalign (CLI tools)
    loaders.pipeline (windows, pack, collate, dataset/loader)
    aligner (the alignment stage)  |  loaders readers (decoding, shards, transcripts)
    avcore (records, time rules, errors, resampling)

``avcore`` imports nothing from ``aligner``, ``loaders`` or ``avalign``.
"""
from avcore._align_json import ALIGN_JSON, canonical_json, clock_values, dump_align_json, read_align_json
from avcore._downmix import downmix, downmix_weights
from avcore._errors import (
    REASONS,
    DecodeError,
    DecodeTimeout,
    SampleError,
    ShardError,
    TranscriptError,
    reason_of,
    sample_error,
)
from avcore._media_types import (
    AUDIO_EXTENSIONS,
    CAPTION_EXTENSIONS,
    MEDIA_EXTENSIONS,
    SHARD_SUFFIXES,
    TRANSCRIPT_EXTENSIONS,
    VIDEO_EXTENSIONS,
    sample_media,
)
from avcore._records import AudioClip, BatchItem, Span, TextTokens, Transcript, VideoClip, VideoMetadata, Word
from avcore._resample import resample, soxr_hq
from avcore._time import (
    MAX_SAMPLE_INDEX,
    check_window,
    check_window_overlaps,
    check_window_samples,
    clip_to_window,
    frame_played_at,
    frame_range,
    sample_range,
    samples_to_seconds,
    seconds_to_samples,
    seconds_to_ticks,
    span_sample_range,
    ticks_to_seconds,
)

__all__ = [
    "ALIGN_JSON",
    "AUDIO_EXTENSIONS",
    "CAPTION_EXTENSIONS",
    "AudioClip",
    "BatchItem",
    "DecodeError",
    "DecodeTimeout",
    "MAX_SAMPLE_INDEX",
    "MEDIA_EXTENSIONS",
    "REASONS",
    "SHARD_SUFFIXES",
    "SampleError",
    "ShardError",
    "Span",
    "TRANSCRIPT_EXTENSIONS",
    "TextTokens",
    "Transcript",
    "TranscriptError",
    "VIDEO_EXTENSIONS",
    "VideoClip",
    "VideoMetadata",
    "Word",
    "canonical_json",
    "clock_values",
    "check_window",
    "check_window_overlaps",
    "check_window_samples",
    "clip_to_window",
    "downmix",
    "downmix_weights",
    "dump_align_json",
    "frame_played_at",
    "frame_range",
    "read_align_json",
    "reason_of",
    "resample",
    "sample_media",
    "sample_error",
    "sample_range",
    "samples_to_seconds",
    "seconds_to_samples",
    "seconds_to_ticks",
    "soxr_hq",
    "span_sample_range",
    "ticks_to_seconds",
]
