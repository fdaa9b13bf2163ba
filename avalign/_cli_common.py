"""What the subcommands' parsers share, kept free of heavy imports so that ``avalign --help`` starts fast.

The constants here mirror library values (tests check that they are equal): importing the library to
read them would load torch, PyAV and numpy before a single argument is parsed.
"""
from __future__ import annotations

import argparse
import math
import os
import re

__all__ = ["DEFAULT_MAX_PIXELS", "INPUT_HINT", "MAX_OFFSET_MS", "MAX_SEARCH_OFFSET_MS", "MEDIA_HINT", "SHARD_SUFFIXES", "TRANSCRIPT_FORMATS",
           "check_local_input", "cli_message", "display_path", "error_document", "error_reason", "finite_float",
           "limit_seconds", "offset_ms", "positive_int", "positive_seconds", "search_offset_ms"]

DEFAULT_MAX_PIXELS = 3840 * 2160
"""= ``loaders.media.DEFAULT_MAX_PIXELS`` (frames larger than this are skipped as ``too_large``)."""
TRANSCRIPT_FORMATS = ("srt", "vtt", "json", "textgrid", "stm")
"""= the formats ``loaders.read_transcript`` knows (its ``format=`` values), offered as ``--transcript-format``."""


SHARD_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz")
"""= ``avcore.SHARD_SUFFIXES`` (names read as WebDataset shards): ``measure`` says a shard is not one media file."""


MAX_OFFSET_MS = 100_000_000.0
"""= ``aligner.timeline.MAX_OFFSET_MS`` (the largest ``|av_offset_ms|`` / ``|text_offset_ms|`` the clock takes)."""
MAX_SEARCH_OFFSET_MS = 10_000.0
"""= the largest ``max_offset_ms`` of ``aligner.AVOptions`` and ``aligner.TextOptions`` (the estimators' search range)."""


def display_path(*parts: str) -> str:
    """A path joined and normalised for printing: ``report/`` + ``report.html`` → ``report/report.html`` (no ``//``)."""
    return os.path.normpath(os.path.join(*parts))


_FORMAT_HINT = re.compile(r"pass format=('?)([A-Za-z]+)\1")


def cli_message(message: str) -> str:
    """A library error message as a CLI user should read it: ``pass format='stm'`` (a Python argument)
    becomes ``pass --transcript-format stm`` (the flag that does the same)."""
    message = _FORMAT_HINT.sub(r"pass --transcript-format \2", message)
    return message.replace("pass format= one of", "pass --transcript-format, one of")


def finite_float(text: str) -> float:
    """argparse ``type`` for a number option: a finite float, else argparse's usage error naming the option
    (``nan`` and ``inf`` parse as floats but mean nothing as a time, an offset or a share)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
    return value


def offset_ms(text: str) -> float:
    """argparse ``type`` for a known offset (``--av-offset-ms``, ``--text-offset-ms``): a finite float within
    ±:data:`MAX_OFFSET_MS`."""
    value = finite_float(text)
    if abs(value) > MAX_OFFSET_MS:
        raise argparse.ArgumentTypeError(f"{text!r} ms is beyond ±{MAX_OFFSET_MS:.0f} ms ({MAX_OFFSET_MS / 3.6e6:.1f} h): "
                                         "give the offset in milliseconds (e.g. 120 for audio, or stamps, 120 ms "
                                         "late)")
    return value


def search_offset_ms(text: str) -> float:
    """argparse ``type`` for a search range (``--max-offset-ms``): a finite float in (0, :data:`MAX_SEARCH_OFFSET_MS`]."""
    value = finite_float(text)
    if not 0 < value <= MAX_SEARCH_OFFSET_MS:
        raise argparse.ArgumentTypeError(f"{text!r} is not in (0, {MAX_SEARCH_OFFSET_MS:.0f}]: the estimators search "
                                         f"at most ±{MAX_SEARCH_OFFSET_MS:.0f} ms (a known larger offset: --av-offset-ms)")
    return value


def limit_seconds(text: str) -> float:
    """argparse ``type`` for a time limit where 0 means none (``preprocess --timeout``): a finite float >= 0 (a negative
    one was taken as "no limit" without a word)."""
    value = finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not >= 0 (seconds; 0: no limit)")
    return value


def positive_seconds(text: str) -> float:
    """argparse ``type`` for a duration limit (``preprocess --max-duration``): a finite float > 0, refused with the
    option's own name (the library's message names its Python parameter, ``max_duration_seconds``)."""
    value = finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not > 0 (seconds)")
    return value


def positive_int(text: str) -> int:
    """argparse ``type`` for a count or a rate (``--sample-rate``): an int > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an int") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not > 0")
    return value


INPUT_HINT = "give a media directory, a media file, a .tar shard or a brace pattern such as 'data-{000..009}.tar'"
"""What ``preprocess`` and ``report`` take as INPUT (the default hint of :func:`check_local_input`)."""
MEDIA_HINT = "give one video or audio file (e.g. clip.mp4, talk.mkv, speech.m4a)"
"""What ``measure`` takes as MEDIA: one file (a directory, a shard or a pattern is ``preprocess``'s or ``report``'s)."""


def check_local_input(path: str, *, what: str = "input", hint: str = INPUT_HINT, file_only: bool = False,
                      elsewhere: str = "") -> None:
    """Raise ``FileNotFoundError`` for a local ``path`` that does not exist, before any heavy import.

    ``hint`` says what the command takes. With ``file_only`` (``measure``), a directory, a WebDataset shard
    (:data:`SHARD_SUFFIXES`), a brace pattern or a URL is refused with ``ValueError``; ``elsewhere`` then says which
    commands take such an input. Every error carries ``path`` (the refused file: what a ``--json`` error names).
    Brace patterns, URLs (``s3://``, ``file://``…) and ``pipe:`` specs are otherwise left to the library, which
    expands them.
    """
    more = f"; {elsewhere}" if elsewhere else ""

    def refused(message: str) -> ValueError:
        error = ValueError(message)
        error.path = path  # the file a --json error document names: this one, not the command's first input
        return error

    if "{" in path or "://" in path or path.startswith("pipe:") or "::" in path:
        if file_only and not os.path.isfile(path):
            raise refused(f"{what} {path!r} is not a local file; hint: {hint}{more}")
        return
    if not os.path.exists(path):
        glob_note = ""  # a quoted glob: the commands take one input, so the shell cannot expand it for them either
        if any(c in os.path.basename(path) for c in "*?["):
            glob_note = " (a glob is not expanded: " + ("give one file)" if file_only else
                                                        "give the directory that holds the files, or a brace pattern)")
        error = FileNotFoundError(f"{what} not found: {path!r}{glob_note}; hint: {hint}")
        error.path = path  # the file a --json error document names (``filename`` would change str(error))
        raise error
    if file_only and os.path.isdir(path):
        raise refused(f"{what} {path!r} is a directory; hint: {hint}{more}")
    if file_only and path.lower().endswith(SHARD_SUFFIXES):  # FFmpeg would call it "Invalid data", "not media?"
        raise refused(f"{what} {path!r} is a WebDataset shard (a tar of samples), not one {what.split()[0]} file; "
                      f"hint: {hint}{more}")


def error_reason(error: BaseException) -> str:
    """A short code for why a command failed, for ``--json`` error documents: always a key of
    ``loaders.errors.REASONS`` (the one vocabulary, with a meaning for each).

    The error's own ``reason`` where it carries one from the skip vocabulary (``DecodeError``: ``decode``,
    ``missing_audio``…; ``TranscriptError``: ``transcript``; ``ShardError``: ``open``…); else by type:
    ``not_found`` (FileNotFoundError), ``in_use`` (BlockingIOError: an output directory locked by another run),
    ``disk_full`` (ENOSPC / EFBIG / EDQUOT), ``read`` (another OSError),
    ``interrupted`` (KeyboardInterrupt), ``invalid`` (ValueError, IndexError: an input or option out of range),
    ``missing_dependency`` (ImportError), else ``error`` (a bug).
    """
    import errno

    from avcore import REASONS

    reason = getattr(error, "reason", None)
    if isinstance(reason, str) and reason in REASONS:
        return reason
    if isinstance(error, FileNotFoundError):
        return "not_found"
    if isinstance(error, BlockingIOError):
        return "in_use"
    if isinstance(error, OSError):
        return "disk_full" if error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) else "read"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted"
    if isinstance(error, ImportError):
        return "missing_dependency"
    if isinstance(error, (ValueError, IndexError)):
        return "invalid"
    return "error"


def error_document(command: str, *, file: "str | None", reason: str, message: str, exit_code: int) -> str:
    """The one JSON document a ``--json`` command prints on stdout when it fails (one line)::

        {"error": {"command": "measure", "file": "clip.mp4", "reason": "decode", "message": "cannot open …",
                   "exit_code": 2}}

    ``file`` is the input the failure is about (the media, the transcript, a shard; None when none is),
    ``reason`` a code from :func:`error_reason` (a key of ``loaders.errors.REASONS``), ``message`` what stderr says.
    """
    import json

    return json.dumps({"error": {"command": command, "file": file, "reason": reason, "message": message,
                                 "exit_code": exit_code}})
