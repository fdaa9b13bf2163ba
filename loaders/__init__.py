"""Shards, decoding with real timestamps, packing and collate. Re-exports only: the public API is the contract.

Top level (``loaders.X``): the contract of DESIGN.md (:func:`read_video`, :func:`read_audio`,
:func:`read_transcript`, :func:`probe_video`, :func:`plan_packs`, :func:`make_dataset`, :func:`make_loader`,
:class:`PackedBatch`), the stages a webdataset user composes (:func:`decode_items`, :func:`pack_batches`),
and the records and errors (they live in :mod:`avcore`).

Everything else is in explicit public submodules:

- :mod:`loaders.pipeline` — the training pipeline's parts (windows, packer, collator, dataset, loader, stats);
- :mod:`loaders.shards` — the shard-reading stages (for tools that read shards themselves);
- :mod:`loaders.media` — media sources, frame indexes, decode limits, the decode watchdog;
- :mod:`loaders.transcripts` — transcript formats and picking a sample's transcript;
- :mod:`loaders.errors` — the errors and the skip-reason vocabulary.

Two layers live here: the readers at the top of the package (``_video``, ``_audio``, ``_index``,
``_mp4_index``, ``_source``, ``_shards``, ``_transcripts``, ``_transcript_formats``, ``_watchdog``) import only
:mod:`avcore`; the training pipeline (:mod:`loaders.pipeline`) sits above the readers and :mod:`aligner`.
"""
from avcore import (
    REASONS,
    AudioClip,
    BatchItem,
    DecodeError,
    DecodeTimeout,
    SampleError,
    ShardError,
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
from loaders._transcripts import read_transcript
from loaders._video import probe_video, read_video
from loaders.pipeline import PackedBatch, decode_items, make_dataset, make_loader, pack_batches, plan_packs

__all__ = [
    "AudioClip",
    "BatchItem",
    "DecodeError",
    "DecodeTimeout",
    "PackedBatch",
    "REASONS",
    "SampleError",
    "ShardError",
    "Span",
    "TextTokens",
    "Transcript",
    "TranscriptError",
    "VideoClip",
    "VideoMetadata",
    "Word",
    "decode_items",
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
]
