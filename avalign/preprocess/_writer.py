"""Reproducible, crash-safe tar shards: written under a temporary name, fsynced, renamed when complete.

Every member header is fixed (mtime 0, uid/gid 0, empty user/group names, mode 0o644, PAX format), so
a shard's bytes depend only on its members' names and contents. A reader never sees a partial
``shard-NNNNNN.tar``: until :meth:`ShardWriter.commit` the data lives in ``.shard-NNNNNN.tar.<pid>.tmp``,
which is removed on any failure (and by the next run after a SIGKILL, see :func:`remove_stale_temporaries`).
"""
from __future__ import annotations

import errno
import glob
import hashlib
import io
import logging
import os
import tarfile
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["ShardWriter", "atomic_write_bytes", "fsync_directory", "remove_stale_temporaries", "shard_name"]

MEMBER_MODE = 0o644


def shard_name(index: int) -> str:
    """``shard-000000.tar`` for index 0."""
    if index < 0:
        raise ValueError(f"shard index must be >= 0, got {index = }")
    return f"shard-{index:06d}.tar"


def fsync_directory(path: str) -> None:
    """Make a rename in ``path`` durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _disk_full(path: str, error: OSError) -> OSError:
    return OSError(
        errno.ENOSPC,
        f"disk full while writing {path!r} ({error}); the partial file was removed, completed shards are kept. "
        "Hint: free space (or choose another output directory) and rerun the same command: it resumes",
    )


class _HashingFile(io.RawIOBase):
    """A write-only file that hashes and counts what goes through it."""

    def __init__(self, handle) -> None:
        self.handle, self.sha256, self.size = handle, hashlib.sha256(), 0

    def writable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.size

    def write(self, data) -> int:
        self.handle.write(data)
        self.sha256.update(data)
        self.size += len(data)
        return len(data)


class ShardWriter:
    """Write one shard member by member; ``commit()`` renames it into place, ``abort()`` removes it.

    Example:
        >>> with ShardWriter("/tmp/out/shard-000000.tar") as w:  # doctest: +SKIP
        ...     w.add("a.mp4", b"...")
        ...     sha256, size = w.commit()
    """

    def __init__(self, path: str) -> None:
        self.path = path
        directory, name = os.path.split(path)
        self.temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
        self._last_name: Optional[str] = None
        try:
            self._handle = open(self.temporary, "wb")
        except OSError as e:
            if e.errno == errno.ENOSPC:
                raise _disk_full(path, e) from e
            raise
        self._hashing = _HashingFile(self._handle)
        self._tar = tarfile.open(fileobj=self._hashing, mode="w", format=tarfile.PAX_FORMAT)  # writes nothing yet
        self._done = False

    def add(self, name: str, data: bytes) -> None:
        """Append a member; names must come in sorted order (the caller sorts)."""
        if self._last_name is not None and name <= self._last_name:
            raise ValueError(f"tar members must be added in sorted order without repeats: {name!r} after {self._last_name!r}")
        self._last_name = name
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = len(data), 0, MEMBER_MODE
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        info.type = tarfile.REGTYPE
        try:
            self._tar.addfile(info, io.BytesIO(data))
        except OSError as e:
            self.abort()
            if e.errno == errno.ENOSPC:
                raise _disk_full(self.path, e) from e
            raise

    def commit(self) -> tuple[str, int]:
        """Finish the tar, fsync, rename atomically to the final name; returns (sha256 hex, size in bytes)."""
        try:
            self._tar.close()
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.replace(self.temporary, self.path)
        except OSError as e:
            self.abort()
            if e.errno == errno.ENOSPC:
                raise _disk_full(self.path, e) from e
            raise
        self._done = True
        fsync_directory(os.path.dirname(self.path) or ".")
        return self._hashing.sha256.hexdigest(), self._hashing.size

    def abort(self) -> None:
        """Drop the temporary file (idempotent)."""
        if self._done:
            return
        self._done = True
        for close in (self._tar.close, self._handle.close):
            try:
                close()
            except (OSError, ValueError):
                pass
        try:
            os.unlink(self.temporary)
        except FileNotFoundError:
            pass

    def __enter__(self) -> "ShardWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.abort()


def atomic_write_bytes(path: str, data: bytes) -> None:
    """Write ``data`` to ``path`` via a temporary file and a rename (ENOSPC → a clear OSError, nothing left)."""
    directory, name = os.path.split(path)
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except OSError as e:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if e.errno == errno.ENOSPC:
            raise _disk_full(path, e) from e
        raise
    fsync_directory(directory or ".")


def remove_stale_temporaries(output_dir: str) -> list[str]:
    """Remove ``.*.tmp`` files a killed run left behind; returns their paths."""
    removed = []
    for path in sorted(glob.glob(os.path.join(glob.escape(output_dir), ".*.tmp"))):
        try:
            os.unlink(path)
            removed.append(path)
        except FileNotFoundError:
            pass
    if removed:
        logger.info("removed %d temporary file(s) of an interrupted run", len(removed))
    return removed
