"""fsspec shards (``http://``, ``s3://``, ``gs://``, ``memory://``…): the file object, with its failures as ``OSError``.

A shard reader treats a stream that fails while it is read as a cut shard (``truncated``, named, the epoch goes on):
it catches ``OSError``, as a local file and a ``pipe:`` command raise. fsspec's filesystems raise what their client
library raises instead: an HTTP server that drops the connection mid-body gives aiohttp's ``ClientPayloadError``, a
range request answered 5xx its ``ClientResponseError``, neither an ``OSError``, so they ended the epoch, the training
loop with it (adv66). :class:`RemoteStream` passes every call on to fsspec's file and raises any exception of a read
or seek that is not an ``OSError`` as one (:class:`RemoteReadError`), the URL and the client's error in its message and
the client's error as its cause; so is an ``OSError`` without a message (a server that stops sending mid-body: aiohttp's
timeout, after 300 s by default), which a shard reader's log line would otherwise show as nothing.
"""
from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["RemoteReadError", "RemoteStream", "open_remote"]


class RemoteReadError(OSError):
    """Reading an fsspec shard failed in its client library (aiohttp, botocore…); ``__cause__`` is that error."""


class RemoteStream:
    """An fsspec file object whose reads and seeks raise :class:`RemoteReadError` (an ``OSError``) for whatever
    else their client library raises; every other attribute is the file's own."""

    def __init__(self, handle: Any, url: str) -> None:
        self._handle = handle
        self.url = url

    def _call(self, method: str, *args: Any) -> Any:
        try:
            return getattr(self._handle, method)(*args)
        except Exception as error:  # noqa: BLE001 - the client library's own errors: what a shard reader cannot know
            if isinstance(error, OSError) and str(error):
                raise
            # (an OSError without a message: a timeout, asyncio's TimeoutError, is named by its type)
            said = (f": {error}" if str(error) else " (the server sent nothing within the client's time limit)"
                    if isinstance(error, TimeoutError) else " (no message)")
            raise RemoteReadError(f"reading {self.url} failed: {type(error).__name__}{said}") from error

    def read(self, size: int = -1) -> bytes:
        return self._call("read", size)

    def readinto(self, buffer: Any) -> int:
        return self._call("readinto", buffer)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._call("seek", offset, whence)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> "RemoteStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self):
        return iter(self._handle)


def open_remote(url: str) -> RemoteStream:
    """``fsspec.open(url, "rb")``, opened, as a :class:`RemoteStream`. Failures to open are fsspec's (an HTTP 404 is
    its ``FileNotFoundError``)."""
    import fsspec

    return RemoteStream(fsspec.open(url, "rb").open(), url)
