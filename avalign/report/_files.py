"""How the report writes its files: each appears whole or not at all, also when the run is interrupted (Ctrl-C).

A file is written to a temporary name beside it (``.NAME.PID.tmp``) and renamed over ``NAME`` (``os.replace``,
atomic on POSIX): a reader, or a run interrupted at any point, sees the old file or the new one, never a part.
A temporary left by an interruption is removed before the interruption propagates.

A clip page is an HTML file and the PNGs it shows: :func:`write_file_group` stages every file first, then renames
the PNGs and the HTML last, so that a page never points at missing images; a page that did not exist before and
is interrupted while being renamed into place takes its already renamed images with it.
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Union

__all__ = ["write_atomic", "write_file_group"]

Data = Union[bytes, str]


def _temporary(path: str) -> str:
    directory, name = os.path.split(path)
    return os.path.join(directory, f".{name}.{os.getpid()}.tmp")


def _stage(path: str, data: Data) -> str:
    """``data`` written to ``path``'s temporary name (removed again if anything, Ctrl-C included, interrupts)."""
    temporary = _temporary(path)
    try:
        with open(temporary, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def write_atomic(path: str, data: Data) -> None:
    """Write ``data`` (``str``: as UTF-8) to ``path`` through a temporary file and ``os.replace``."""
    write_file_group([(path, data)])


def write_file_group(files: Sequence[tuple[str, Data]]) -> None:
    """Write ``files`` (``(path, data)``; the last one is the file that refers to the others, e.g. a page after its
    images) so that a reader sees the group complete or, when it did not exist before, not at all."""
    staged: list[tuple[str, str]] = []
    renamed: list[str] = []
    last_existed = bool(files) and os.path.exists(files[-1][0])
    try:
        for path, data in files:
            staged.append((_stage(path, data), path))
        for temporary, path in staged:
            os.replace(temporary, path)
            renamed.append(path)
    except BaseException:
        for temporary, path in staged:
            if path not in renamed:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
        if not last_existed and len(renamed) < len(files):  # a new group, cut short: take back what appeared
            for path in renamed:
                with contextlib.suppress(OSError):
                    os.unlink(path)
        raise
