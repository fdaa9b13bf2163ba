"""Which sample members / sidecar files are media, transcripts and captions: one list each, for every tool.

The loader (``loaders.pipeline``), ``avalign preprocess``, ``avalign report`` and ``avalign demo`` all read
these, so one sample is understood the same way by each of them. Extensions are lower case, as
``loaders.shards.split_key`` returns them (everything after the first dot of the base name).
"""
from __future__ import annotations

from collections.abc import Container
from typing import Optional

__all__ = ["AUDIO_EXTENSIONS", "CAPTION_EXTENSIONS", "MEDIA_EXTENSIONS", "SHARD_SUFFIXES", "TRANSCRIPT_EXTENSIONS",
           "VIDEO_EXTENSIONS", "sample_media"]

VIDEO_EXTENSIONS = ("mp4", "mkv", "webm", "mov", "avi", "m4v", "ts", "m2ts", "mts", "mpg", "mpeg", "3gp", "flv", "wmv", "ogv")
"""Media with (usually) a video stream, in order of preference when a sample has several."""
AUDIO_EXTENSIONS = ("flac", "wav", "mp3", "m4a", "ogg", "opus", "aac")
"""Audio-only media (tried after the video extensions): items without frames."""
MEDIA_EXTENSIONS = VIDEO_EXTENSIONS + AUDIO_EXTENSIONS
"""Every media extension: the first one a sample has is its media."""
TRANSCRIPT_EXTENSIONS = ("transcript.json", "json", "textgrid", "vtt", "srt", "stm")
"""Transcript members / sidecar extensions, in order of preference: avalign's normalised transcript, then the
formats that can carry word times (``loaders.transcripts.pick_transcript`` chooses with it; a ``json`` member
counts only when it holds a transcript, not video2dataset's metadata)."""
CAPTION_EXTENSIONS = ("txt", "caption", "json")
"""Members read as a clip-level caption: ``txt`` / ``caption`` (the text), ``json`` metadata with a string ``caption``
field (video2dataset). Without a transcript the caption is the sample's one segment; beside a transcript it is passed
through unaligned (``PackedBatch.caption_texts``)."""
SHARD_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""File names (lower case) read as WebDataset shards in a directory of shards (``avalign preprocess`` and ``avalign
report``): a plain tar, or one compressed as the shard reader opens it (``tarfile`` ``r|*``: gzip, bzip2, xz)."""


def sample_media(extensions: Container[str]) -> tuple[Optional[str], Optional[str]]:
    """``(media, separate_audio)`` of a sample (or a directory's files of one stem) holding these extensions: the rule
    of every tool (loader, ``preprocess``, ``report``, ``demo``). ``media`` is the first of ``MEDIA_EXTENSIONS`` present
    (video before audio), None if none is; beside a video, ``separate_audio`` is the first of ``AUDIO_EXTENSIONS``
    present (video2dataset's ``KEY.mp4`` + ``KEY.m4a``: read when the video has no audio stream), else None. Any
    other media of the sample is left out (the tools say so)."""
    media = next((ext for ext in MEDIA_EXTENSIONS if ext in extensions), None)
    if media not in VIDEO_EXTENSIONS:
        return media, None
    return media, next((ext for ext in AUDIO_EXTENSIONS if ext in extensions), None)
