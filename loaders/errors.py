"""Errors raised by the loaders: subclasses of built-in types, chosen by meaning."""
from __future__ import annotations

__all__ = ["DecodeError", "DecodeTimeout", "SampleError", "TranscriptError"]


class DecodeError(ValueError):
    """Media that cannot be decoded (corrupt, truncated, unsupported, missing stream)."""


class DecodeTimeout(DecodeError):
    """A decoder ran past its time limit (watchdog)."""


class TranscriptError(ValueError):
    """A transcript that cannot be parsed; the message names the file and the line or field."""


class SampleError(ValueError):
    """A sample that cannot be used, with the shard, key and reason attached.

    Attributes:
        shard: the shard URL the sample came from ('' if unknown).
        key: the sample's ``__key__``.
        reason: a short, stable reason code (``decode``, ``transcript``, ``missing_video``…).
    """

    def __init__(self, message: str, *, shard: str = "", key: str = "", reason: str = "error") -> None:
        super().__init__(f"{message} [shard={shard!r}, key={key!r}, reason={reason}]")
        self.message = message
        self.shard = shard
        self.key = key
        self.reason = reason
