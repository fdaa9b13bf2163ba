"""Transcripts (a public module): :func:`read_transcript` and what tools need to pick one from a sample.

Implementation: ``loaders._transcripts`` (dispatch, limits) and ``loaders._transcript_formats`` (parsers).
"""
from loaders._transcripts import (
    DEFAULT_MAX_CUES,
    DEFAULT_MAX_WORDS,
    MAX_TRANSCRIPT_BYTES,
    TRANSCRIPT_EXTENSIONS,
    TRANSCRIPT_FORMATS,
    TranscriptFormat,
    decode_text,
    is_language_tagged,
    is_transcript_json,
    pick_transcript,
    read_transcript,
    transcript_format_of,
)

__all__ = [
    "DEFAULT_MAX_CUES",
    "DEFAULT_MAX_WORDS",
    "MAX_TRANSCRIPT_BYTES",
    "TRANSCRIPT_EXTENSIONS",
    "TRANSCRIPT_FORMATS",
    "TranscriptFormat",
    "decode_text",
    "is_language_tagged",
    "is_transcript_json",
    "pick_transcript",
    "read_transcript",
    "transcript_format_of",
]
