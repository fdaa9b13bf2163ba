"""Which sample members / sidecar files are media, transcripts and captions: one list each, for every tool.

The loader (``loaders.pipeline``), ``avalign preprocess``, ``avalign report`` and ``avalign demo`` all read
these, so one sample is understood the same way by each of them. Extensions are lower case, as
``loaders.shards.split_key`` returns them (everything after the first dot of the base name).
"""
from __future__ import annotations

__all__ = ["AUDIO_EXTENSIONS", "CAPTION_EXTENSIONS", "MEDIA_EXTENSIONS", "SHARD_SUFFIXES", "TRANSCRIPT_EXTENSIONS",
           "VIDEO_EXTENSIONS"]

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
