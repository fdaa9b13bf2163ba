"""Shards, decoding with real timestamps, packing and collate. Re-exports only."""
from loaders._audio import read_audio
from loaders._collate import Collator, PackedBatch
from loaders._index import FrameIndex
from loaders._dataset import AVDataset, LoaderStats, make_dataset
from loaders._loader import Loader, make_loader
from loaders._pack import OnlinePacker, PackItem, PackStats, lower_bound_num_packs, plan_packs
from loaders._records import AudioClip, BatchItem, Span, TextTokens, Transcript, VideoClip, VideoMetadata, Word
from loaders._stages import decode_items, pack_batches
from loaders._transcripts import read_transcript
from loaders._video import probe_video, read_video
from loaders._watchdog import call_with_timeout
from loaders._window import windows
from loaders.errors import REASONS, DecodeError, DecodeTimeout, SampleError, TranscriptError, reason_of, sample_error

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
