"""What the subcommands' parsers share, kept free of heavy imports so that ``avalign --help`` starts fast.

The constants here mirror library values (tests check that they are equal): importing the library to
read them would load torch, PyAV and numpy before a single argument is parsed.
"""
from __future__ import annotations

import os
import re

__all__ = ["DEFAULT_MAX_PIXELS", "TRANSCRIPT_FORMATS", "check_local_input", "cli_message", "display_path"]

DEFAULT_MAX_PIXELS = 3840 * 2160
"""= ``loaders.media.DEFAULT_MAX_PIXELS`` (frames larger than this are skipped as ``too_large``)."""
TRANSCRIPT_FORMATS = ("srt", "vtt", "json", "textgrid", "stm")
"""= the formats ``loaders.read_transcript`` knows (its ``format=`` values), offered as ``--transcript-format``."""


def display_path(*parts: str) -> str:
    """A path joined and normalised for printing: ``report/`` + ``report.html`` → ``report/report.html`` (no ``//``)."""
    return os.path.normpath(os.path.join(*parts))


_FORMAT_HINT = re.compile(r"pass format=('?)([A-Za-z]+)\1")


def cli_message(message: str) -> str:
    """A library error message as a CLI user should read it: ``pass format='stm'`` (a Python argument)
    becomes ``pass --transcript-format stm`` (the flag that does the same)."""
    message = _FORMAT_HINT.sub(r"pass --transcript-format \2", message)
    return message.replace("pass format= one of", "pass --transcript-format, one of")


def check_local_input(path: str, *, what: str = "input") -> None:
    """Raise ``FileNotFoundError`` for a local ``path`` that does not exist, before any heavy import.

    Brace patterns, URLs (``s3://``, ``file://``…) and ``pipe:`` specs are left to the library, which expands them.
    """
    if "{" in path or "://" in path or path.startswith("pipe:") or "::" in path:
        return
    if not os.path.exists(path):
        raise FileNotFoundError(
            f"{what} not found: {path!r}; hint: give a media directory, a media file, a .tar shard or a brace "
            "pattern such as 'data-{000..009}.tar'"
        )
