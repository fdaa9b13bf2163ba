"""fsspec shards (``http://``, ``s3://``, ``gs://``, ``memory://``…): the file object, with its failures as ``OSError``.

A shard reader treats a stream that fails while it is read as a cut shard (``truncated``, named, the epoch goes on):
it catches ``OSError``, as a local file and a ``pipe:`` command raise. fsspec's filesystems raise what their client
library raises instead: an HTTP server that drops the connection mid-body gives aiohttp's ``ClientPayloadError``, a
range request answered 5xx its ``ClientResponseError``, neither an ``OSError``, so they ended the epoch, the training
loop with it (adv66). :class:`RemoteStream` passes every call on to fsspec's file and raises any exception of a read
or seek that is not an ``OSError`` as one (:class:`RemoteReadError`), the URL and the client's error in its message and
the client's error as its cause; so is an ``OSError`` without a message (a server that stops sending mid-body: aiohttp's
timeout, after 300 s by default), which a shard reader's log line would otherwise show as nothing. An HTTP server that
does not answer range requests (fsspec reads in 5 MiB ranges) is read on as one stream from where the reader is.
"""
from __future__ import annotations

import contextlib
import logging
import re
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["IPV6_HOST", "RemoteReadError", "RemoteStream", "open_remote"]

IPV6_HOST = re.compile(r"\[[0-9A-Fa-f.:]*::[0-9A-Fa-f.:]*(?:%[\w.~-]+)?\]")
"""An IPv6 address in a URL's host, in brackets with a ``::`` (``[::1]``, ``[fe80::1%25eth0]``): not a list separator
for the shard list (``loaders._shards.expand_shard_urls``), nor a chain (``::``) or a glob (``[...]``) for fsspec."""


class RemoteReadError(OSError):
    """Reading an fsspec shard failed in its client library (aiohttp, botocore…); ``__cause__`` is that error."""


class RemoteStream:
    """An fsspec file object whose reads and seeks raise :class:`RemoteReadError` (an ``OSError``) for whatever
    else their client library raises; every other attribute is the file's own."""

    def __init__(self, handle: Any, url: str) -> None:
        self._handle = handle
        self.url = url
        self._streaming = False
        """True once read as one streamed GET (a server without range requests: :meth:`_stream_from_here`)."""

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

    @property
    def streamed(self) -> bool:
        """Whether the file is now read as one stream (its server does not answer range requests): a seek backwards
        streams it again from its start, so a reader that can should read it forward only."""
        return self._streaming

    def read(self, size: int = -1) -> bytes:
        try:
            data = self._call("read", size)
        except RemoteReadError as error:
            if not _no_range_requests(error.__cause__) or not self._stream_from_here():
                raise
            data = self._call("read", size)
        if self._streaming and size is not None and 0 <= len(data) < size and data:
            # a streamed GET returns what the connection holds (adv67: a 2 MB member read back as its first
            # 589,259 bytes, 'truncated'): read on to ``size`` or the end, as a file does
            parts = [data]
            while (left := size - sum(map(len, parts))) > 0 and (more := self._call("read", left)):
                parts.append(more)
            data = b"".join(parts)
        return data

    def _stream_from_here(self) -> bool:
        """After an HTTP server answered a range request with the whole file (fsspec reads in 5 MiB ranges: a shard
        past the first 5 MiB failed, every later sample lost; python's http.server, some static servers and proxies
        ignore ``Range``): the file again as one streamed GET, read up to the position reached. True when done."""
        position = self._handle.tell()
        with contextlib.suppress(Exception):
            self._handle.close()
        try:
            handle = self._call_open_streaming(position)
        except OSError:  # the first error (no range requests) is the one to report
            logger.debug("%s: streaming it instead failed", self.url, exc_info=True)
            return False
        logger.info("%s: the server does not answer range requests; read as one stream from byte %d on", self.url,
                    position)
        self._handle, self._streaming = handle, True
        return True

    def _call_open_streaming(self, position: int) -> Any:
        """The file as one streamed GET (fsspec's ``block_size=0``), read up to ``position``; OSError when it fails."""
        try:
            handle = _fsspec_open(self.url, block_size=0)
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001 - as in _call
            raise RemoteReadError(f"reading {self.url} failed: {type(error).__name__}: {error}") from error
        _skip(handle, position, self.url)
        return handle

    def readinto(self, buffer: Any) -> int:
        return self._call("readinto", buffer)

    def seek(self, offset: int, whence: int = 0) -> int:
        if not self._streaming:
            return self._call("seek", offset, whence)
        # streamed (no range requests): forward by reading, backward by streaming again from the start
        here = self._handle.tell()
        target = offset if whence == 0 else here + offset if whence == 1 else None
        if target is None or target < 0:
            return self._call("seek", offset, whence)  # (from the end: fsspec's own error, as an OSError)
        if target < here:
            self._handle.close()
            self._handle = self._call_open_streaming(target)
        else:
            _skip(self._handle, target - here, self.url)
        return target

    def __getattr__(self, name: str) -> Any:
        return getattr(self._handle, name)

    def __enter__(self) -> "RemoteStream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __iter__(self):
        return iter(self._handle)


def _skip(handle: Any, count: int, url: str) -> None:
    """Reads and drops ``count`` bytes of a streamed ``handle``; OSError when it ends before."""
    while count > 0:
        try:
            chunk = handle.read(min(count, 1 << 20))
        except OSError:
            raise
        except Exception as error:  # noqa: BLE001 - as in RemoteStream._call
            raise RemoteReadError(f"reading {url} failed: {type(error).__name__}: {error}") from error
        if not chunk:
            raise RemoteReadError(f"reading {url} failed: it ended {count} bytes before the position sought")
        count -= len(chunk)


def _no_range_requests(error: Any) -> bool:
    """Whether ``error`` is fsspec's refusal to read an HTTP file on from a position its server cannot seek to."""
    return isinstance(error, ValueError) and "support range requests" in str(error)


def _fsspec_open(url: str, **kwargs: Any) -> Any:
    """``fsspec.open(url, "rb", **kwargs).open()``; a URL with an IPv6 host is opened by its protocol's filesystem, as
    ``fsspec.open`` splits it at ``::`` (a chained URL) and takes ``[...]`` for a glob (adv66)."""
    import fsspec

    if IPV6_HOST.search(url):
        return fsspec.filesystem(url.split("://", 1)[0]).open(url, "rb", **kwargs)
    return fsspec.open(url, "rb", **kwargs).open()


def open_remote(url: str) -> RemoteStream:
    """``fsspec.open(url, "rb")``, opened, as a :class:`RemoteStream`. Failures to open are ``OSError`` (an HTTP 404
    is fsspec's ``FileNotFoundError``; a client library's own error becomes :class:`RemoteReadError`), or
    ``ImportError`` for a protocol whose package is not installed."""
    try:
        handle = _fsspec_open(url)
    except OSError:
        raise
    except ImportError as error:  # the protocol's package is missing: a set-up error, raised, naming the shard (adv66)
        raise ImportError(f"{error} (to read shard {url})", name=error.name) from error
    except Exception as error:  # noqa: BLE001 - e.g. a streamed HTTP file's 5xx (aiohttp's ClientResponseError)
        raise RemoteReadError(f"opening {url} failed: {type(error).__name__}: {error}") from error
    return RemoteStream(handle, url)
