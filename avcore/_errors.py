"""Errors raised by the readers and the pipeline: subclasses of built-in types, chosen by meaning.

They live in the base layer (``avcore``); the public module ``loaders.errors`` re-exports them.

Every error about an input carries a short, stable **reason code**. The loader (``LoaderStats.skipped``),
``avalign preprocess`` (``skipped.jsonl``) and ``avalign report`` (``report.json["skipped"]``) all speak
the one vocabulary in :data:`REASONS`; :func:`reason_of` maps an exception to its code.
"""
from __future__ import annotations

from typing import Optional

__all__ = ["DecodeError", "DecodeTimeout", "REASONS", "SampleError", "ShardError", "TranscriptError", "reason_of",
           "sample_error"]

REASONS: dict[str, str] = {
    # media
    "decode": "the media cannot be opened or decoded (corrupt, truncated, unsupported codec)",
    "missing_video": "no video stream in the media (loader: or no video member in the sample); "
                     "preprocess and report keep audio-only media with a null A/V offset",
    "missing_audio": "no audio stream in the media",
    "missing_media": "a key with a transcript or metadata but no media member/file at all (preprocess, report)",
    "too_large": "frames over max_pixels (width x height), a tar member over the member size limit, media whose "
                 "timestamps claim more than max_duration_seconds, or a transcript over max_cues / max_words",
    "timeout": "decoding (or measuring) ran past its time limit",
    # text and records
    "transcript": "the transcript cannot be parsed or is invalid (e.g. a span whose stop is before its start)",
    "align_json": "align.json is not JSON or not the measure schema",
    # shards (reported once per sample key; the whole sample is dropped)
    "unsafe_name": "a tar member name is absolute or contains '..'",
    "member_type": "a tar member is not a regular file (link, device)",
    "duplicate_key": "a key appears again (non-consecutive repeat, repeated extension, or in another shard/file)",
    "stray_member": "a tar member whose key's other members came earlier, not adjacent to it (a tar written by "
                    "extension, `tar cf s.tar *.mp4 *.txt`): the member is dropped and its sample is delivered (or "
                    "measured) without it; not a skipped sample (the loader counts it in stats.members_dropped)",
    "truncated": "the tar ends (or is corrupt) inside this sample, or inside a member header after it",
    "open": "a shard cannot be opened (key is empty)",
    # tool specific
    "over_budget": "loader: an item larger than a batch budget",
    "tail_dropped": "loader: an item of a stream's last, partly filled batch, dropped by tail='drop'",
    "align": "loader: aligning the decoded sample failed",
    "read": "preprocess: a member's bytes could not be read back (I/O error)",
    "unknown_extension": "report: a stray file in a media directory (listed, never raised)",
    "error": "an unexpected error (a bug: logged with its traceback)",
    # commands: why a whole command failed (the "reason" of a --json error document; the codes above apply there too)
    "invalid": "command: an input or option out of range (a directory given where one file is needed, a value "
               "outside its limits): a ValueError or IndexError about the request, not about a file's content",
    "not_found": "command: an input file or directory does not exist",
    "disk_full": "command: the disk (or a file-size limit) filled up while writing the output",
    "in_use": "command: the output directory is locked by another run (preprocess's lock file)",
    "missing_dependency": "command: an optional package it needs is not installed (ray, pocketsphinx)",
    "usage": "command: the command line does not parse (argparse explains it on stderr)",
    "interrupted": "command: stopped by Ctrl-C (SIGINT)",
    "no_sample": "preprocess: nothing was written (the input holds no sample, or every one was skipped)",
}
"""Reason code → meaning: the one vocabulary of loader, preprocess and report skips, and of the ``reason`` of the
commands' ``--json`` error documents (``avalign._cli_common.error_reason``)."""


class DecodeError(ValueError):
    """Media that cannot be decoded (corrupt, truncated, unsupported, missing stream, too large).

    Attributes:
        reason: a reason code from :data:`REASONS`: ``decode`` (default), ``missing_video``,
            ``missing_audio``, ``too_large`` or ``timeout``.

    Example:
        >>> DecodeError("clip.mp4 has no audio stream", reason="missing_audio").reason
        'missing_audio'
    """

    default_reason = "decode"

    def __init__(self, *args: object, reason: Optional[str] = None) -> None:
        super().__init__(*args)
        self.reason = reason or self.default_reason
        if self.reason not in REASONS:
            raise ValueError(f"reason must be one of {sorted(REASONS)}, got {self.reason!r}")


class DecodeTimeout(DecodeError):
    """A decoder ran past its time limit (watchdog); reason ``timeout``."""

    default_reason = "timeout"


class TranscriptError(ValueError):
    """A transcript that cannot be parsed; the message names the file and the line or field.

    Attributes:
        reason: ``transcript`` (default), or ``too_large`` for one over ``max_cues`` / ``max_words``.
    """

    reason = "transcript"

    def __init__(self, *args: object, reason: Optional[str] = None) -> None:
        super().__init__(*args)
        if reason is not None:
            if reason not in REASONS:
                raise ValueError(f"reason must be one of {sorted(REASONS)}, got {reason!r}")
            self.reason = reason


class SampleError(ValueError):
    """A sample that cannot be used, with the shard, key and reason attached.

    Attributes:
        shard: the shard URL the sample came from ('' if unknown).
        key: the sample's ``__key__``.
        reason: a short, stable reason code from :data:`REASONS` (``decode``, ``transcript``, ``missing_video``…).
    """

    def __init__(self, message: str, *, shard: str = "", key: str = "", reason: str = "error") -> None:
        super().__init__(f"{message} [shard={shard!r}, key={key!r}, reason={reason}]")
        self.message = message
        self.shard = shard
        self.key = key
        self.reason = reason

    def __reduce__(self):
        return (_rebuild_sample_error, (type(self), self.message, self.shard, self.key, self.reason))


class ShardError(SampleError):
    """A shard, or a member of it, that cannot be used: a :class:`SampleError` whose shard is always named.

    Raised by the shard reader with ``on_error="raise"``; reason ``open`` (the shard cannot be opened; key is
    empty), ``unsafe_name``, ``member_type``, ``too_large``, ``duplicate_key`` or ``truncated``.
    """

    def __init__(self, message: str, *, shard: str, key: str = "", reason: str = "open") -> None:
        super().__init__(message, shard=shard, key=key, reason=reason)


def _rebuild_sample_error(cls: type, message: str, shard: str, key: str, reason: str) -> SampleError:
    return cls(message, shard=shard, key=key, reason=reason)


def reason_of(error: BaseException, *, default: str = "error") -> str:
    """The reason code of ``error``: its ``reason`` (DecodeError, TranscriptError, SampleError, ShardError),
    ``read`` for an OSError, else ``default``."""
    reason = getattr(error, "reason", None)
    if isinstance(reason, str) and reason in REASONS:
        return reason
    if isinstance(error, OSError):
        return "read"
    return default


_STAGE_REASONS = {"decode": "decode", "transcript": "transcript", "align": "align", "read": "read", "sample": "error"}
"""The reason of a failure in each step of one sample, when the exception carries none of its own."""


def sample_error(error: BaseException, *, key: str = "", shard: str = "", stage: str = "sample") -> SampleError:
    """Any failure of ONE sample as a :class:`SampleError` naming its key and a reason from :data:`REASONS`.

    The one rule the loader and ``avalign preprocess`` share: whatever was raised while reading, decoding,
    parsing or aligning one sample (a ``DecodeError``, an ``av.error``, an ``AttributeError`` from a parser
    fed garbage…) becomes a skip of that sample, never the end of an epoch. Total: it never raises, for any
    exception and any arguments.

    Reason: the exception's own code when it has one from the vocabulary (``DecodeError.reason``,
    ``TranscriptError``, ``SampleError``, ``ShardError``); else the code of ``stage`` (``decode``,
    ``transcript``, ``align``, ``read``; ``sample`` or an unknown stage: ``error``, the vocabulary's "a bug"),
    with ``read`` also for an ``OSError`` raised in the ``read`` stage. A ``SampleError`` keeps its reason and
    gets ``key`` / ``shard`` filled where it had none.

    Example:
        >>> e = sample_error(AttributeError("'NoneType' object has no attribute 'pts'"), key="k1", stage="decode")
        >>> (e.key, e.reason)
        ('k1', 'decode')
    """
    try:
        key = key if isinstance(key, str) else repr(key)
        shard = shard if isinstance(shard, str) else repr(shard)
        if isinstance(error, SampleError):
            if (error.key or not key) and (error.shard or not shard):
                return error
            return SampleError(error.message, shard=error.shard or shard, key=error.key or key, reason=error.reason)
        own = getattr(error, "reason", None)
        has_own = isinstance(own, str) and own in REASONS
        reason = own if has_own else _STAGE_REASONS.get(stage, "error")
        if stage == "read" and isinstance(error, OSError):
            reason = "read"
        text = str(error) or type(error).__name__
        if not has_own:
            text = f"{type(error).__name__}: {text}"
        return SampleError(text, shard=shard, key=key, reason=reason)
    except Exception:  # noqa: BLE001 - str(error) itself may fail on a hostile exception; stay total
        return SampleError(f"{type(error).__name__} (message unavailable)", shard=str(shard), key=str(key), reason="error")
