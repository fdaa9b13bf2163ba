"""Shards, decoding with real timestamps, packing and collate. Re-exports only."""
from loaders._audio import read_audio
from loaders._index import FrameIndex
from loaders._pack import OnlinePacker, PackItem, PackStats, lower_bound_num_packs, plan_packs
from loaders._records import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word
from loaders._transcripts import read_transcript
from loaders._video import probe_video, read_video
from loaders._watchdog import call_with_timeout
from loaders.errors import DecodeError, DecodeTimeout, SampleError, TranscriptError

__all__ = sorted(
    [
        "AudioClip",
        "DecodeError",
        "DecodeTimeout",
        "FrameIndex",
        "OnlinePacker",
        "PackItem",
        "PackStats",
        "SampleError",
        "Span",
        "Transcript",
        "TranscriptError",
        "VideoClip",
        "VideoMetadata",
        "Word",
        "call_with_timeout",
        "lower_bound_num_packs",
        "plan_packs",
        "probe_video",
        "read_audio",
        "read_transcript",
        "read_video",
    ]
)
