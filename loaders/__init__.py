"""Shards, decoding with real timestamps, packing and collate. Re-exports only.

Two layers live here: the readers at the top of the package (``_video``, ``_audio``, ``_index``,
``_mp4_index``, ``_source``, ``_shards``, ``_transcripts``, ``_transcript_formats``, ``_watchdog``) import only
:mod:`avcore`; the training pipeline (:mod:`loaders.pipeline`) sits above the readers and :mod:`aligner`.
The records and errors re-exported here live in :mod:`avcore`.
"""
from avcore import (
    REASONS,
    AudioClip,
    BatchItem,
    DecodeError,
    DecodeTimeout,
    SampleError,
    Span,
    TextTokens,
    Transcript,
    TranscriptError,
    VideoClip,
    VideoMetadata,
    Word,
    reason_of,
    sample_error,
)
from loaders._audio import read_audio
from loaders._index import FrameIndex
from loaders._transcripts import read_transcript
from loaders._video import probe_video, read_video
from loaders._watchdog import call_with_timeout
from loaders.pipeline import (
    AVDataset,
    Collator,
    Loader,
    LoaderStats,
    OnlinePacker,
    PackedBatch,
    PackItem,
    PackStats,
    decode_items,
    lower_bound_num_packs,
    make_dataset,
    make_loader,
    pack_batches,
    plan_packs,
    windows,
)

__all__ = [
    "AVDataset",
    "AudioClip",
    "BatchItem",
    "Collator",
    "DecodeError",
    "DecodeTimeout",
    "FrameIndex",
    "Loader",
    "LoaderStats",
    "OnlinePacker",
    "PackItem",
    "PackStats",
    "PackedBatch",
    "REASONS",
    "SampleError",
    "Span",
    "TextTokens",
    "Transcript",
    "TranscriptError",
    "VideoClip",
    "VideoMetadata",
    "Word",
    "call_with_timeout",
    "decode_items",
    "lower_bound_num_packs",
    "make_dataset",
    "make_loader",
    "pack_batches",
    "plan_packs",
    "probe_video",
    "read_audio",
    "read_transcript",
    "read_video",
    "reason_of",
    "sample_error",
    "windows",
]
