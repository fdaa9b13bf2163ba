"""Members of a streamed shard (``.tar.gz`` and other compressed tars, ``pipe:``, HTTP without range requests) read
back in one pass per process.

``preprocess`` lists a shard's members in one pass (``avalign.preprocess._inputs``), then reads each sample's members
back when the sample is processed. A plain local tar is read back by seeking. A stream cannot seek: each sample's read
streamed the shard from its start to the sample's members, so a shard of N samples was decompressed (or downloaded,
or its command run) N + 1 times (adv66: reading back the 400 samples of a 39 MB ``.tar.gz`` took 16.9 s, the same
plain tar 0.04 s).

A process now keeps the one streamed shard it read last open (:func:`read_streamed`), just past the members it
returned. Samples are processed in key order, which is the member order of a shard written in key order (webdataset's
``TarWriter``, video2dataset), so each process streams such a shard once; every worker of a pool takes samples in
that order too. A member behind that position (a shard not in key order) is read by streaming the shard again from
its start, as before, and so is a sample whose read fails on a kept stream (a server that dropped the idle
connection): a stream is never trusted for more than it gave.

A forked child (a worker of ``preprocess``'s pool) does not use or close the stream it inherits: closing it would
end the parent's (a ``pipe:`` command is killed on close); it opens its own.
"""
from __future__ import annotations

import logging
import os
import tarfile
import threading
from typing import IO, Callable, Optional, Sequence

from loaders.shards import open_shard

logger = logging.getLogger(__name__)

__all__ = ["close_streamed", "read_streamed"]


class _Cursor:
    """One streamed shard open at a position: the tar read member by member (``r|*``), never backwards."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stream = open_shard(url)
        try:
            self.archive = tarfile.open(fileobj=self.stream, mode="r|*")
        except BaseException:
            self.stream.close()
            raise
        self.members = iter(self.archive)
        self.position = 0
        """Stream offset up to which members have been passed: a member whose data starts before it is behind."""
        self.fresh = True
        """Nothing has been read through it yet (a failure is then the shard's, not the kept stream's)."""

    def read(self, wanted: dict[tuple[str, int], int], out: list[Optional[bytes]]) -> None:
        """Fills ``out[index]`` for each ``(member name, data offset)`` of ``wanted`` found ahead, removing it from
        ``wanted``; an offset of -1 matches the member's first copy by name."""
        self.fresh = False
        by_name = {key[0]: key for key in wanted if key[1] < 0}
        for member in self.members:
            self.position = member.offset_data + member.size
            key = (member.name, member.offset_data)
            if key not in wanted:
                key = by_name.pop(member.name, None)
                if key is None:
                    continue
            handle = self.archive.extractfile(member)
            out[wanted.pop(key)] = handle.read() if handle is not None else b""
            if not wanted:
                return

    def close(self) -> None:
        try:
            self.archive.close()
        finally:
            self.stream.close()


_lock = threading.Lock()
_kept: Optional[_Cursor] = None
_inherited: list[_Cursor] = []
"""Cursors a forked child inherited: kept referenced, never closed (their stream is the parent's)."""


def _forget_in_child() -> None:
    global _kept
    if _kept is not None:
        _inherited.append(_kept)
        _kept = None


os.register_at_fork(after_in_child=_forget_in_child)


def close_streamed() -> None:
    """Closes the streamed shard this process keeps open, if any (a ``pipe:`` command still running is killed)."""
    global _kept
    with _lock:
        if _kept is not None:
            cursor, _kept = _kept, None
            cursor.close()


def read_streamed(url: str, members: Sequence[tuple[str, int]], check: Callable[[IO[bytes]], None]) -> list[bytes]:
    """The bytes of ``members`` (``(tar member name, data offset in the uncompressed tar or -1)``) of the streamed
    shard ``url``, in the order given; the shard stays open in this process for the next call (module docstring).

    Args:
        check: called with the shard's stream before reading (raises ``OSError`` when the shard is not the one
            listed: ``avalign.preprocess._inputs``).

    Raises:
        OSError: the shard cannot be opened or read, or a member is not in it.
    """
    global _kept
    with _lock:
        first = min(offset for _, offset in members)
        cursor = _kept if _kept is not None and _kept.url == url and 0 <= first and _kept.position <= first else None
        if cursor is None and _kept is not None:
            _kept.close()
            _kept = None
        for attempt in range(2):
            if cursor is None:
                cursor = _kept = _Cursor(url)
            out: list[Optional[bytes]] = [None] * len(members)
            wanted = {member: i for i, member in enumerate(members)}
            fresh = cursor.fresh
            try:
                check(cursor.stream)
                cursor.read(wanted, out)
            except (OSError, tarfile.TarError, EOFError) as error:
                _kept = None
                cursor.close()
                if fresh or attempt:
                    raise OSError(f"{url}: {error}") if not isinstance(error, OSError) else error
                logger.info("%s: reading on from byte %d failed (%s); streaming it again from its start", url,
                            cursor.position, error)
                cursor = None
                continue
            if wanted:
                _kept = None
                cursor.close()
                if fresh or attempt:
                    raise OSError(f"{url}: members {sorted(name for name, _ in wanted)} not found on a second read")
                cursor = None
                continue
            return [b if b is not None else b"" for b in out]
    raise AssertionError("unreachable")  # pragma: no cover
