"""Shard reading stages: list shards → split by node and worker → shuffle → expand tar → group by key.

Each stage is a generator (iterator in, iterator out, options keyword-only), composed in
:func:`shard_samples`. A sample is ``{"__key__": str, "__url__": str, "<ext>": bytes, ...}`` where
``<ext>`` is everything after the first dot of the member's base name (``clip.align.json`` →
``align.json``), as in WebDataset and video2dataset output.

Member names are text: bytes that are not UTF-8 (a tar written with a Latin-1 encoding) are read as cp1252, with a
warning naming the shard (:func:`member_name_text`), so a sample's key is the same in the loader, ``avalign
preprocess`` and ``avalign report``, and any UTF-8 writer takes it.

Security: tar members are read into memory only (never extracted to paths); names that are absolute
or contain ``..`` are refused, as are links, devices and members over ``max_member_bytes``.
Nothing is ever unpickled.
"""
from __future__ import annotations

import contextlib
import errno
import gzip
import logging
import os
import random
import stat
import tarfile
from collections import Counter
from dataclasses import dataclass
from typing import IO, Any, Callable, Iterable, Iterator, Literal, Optional, Sequence, Union

import numpy as np

from avcore import ShardError
from loaders._pipe import DEFAULT_PIPE_STALL_SECONDS, PipeError, PipeStream
from loaders._remote import IPV6_HOST, open_remote
from loaders._skip_log import SkipLog

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_PIPE_STALL_SECONDS",
    "ShardError",
    "TAR_NAME_ENCODING",
    "TarMember",
    "expand_shard_urls",
    "find_tar_header",
    "group_by_key",
    "member_name_text",
    "name_pipe_failures",
    "open_shard",
    "refuse_member",
    "safe_member_name",
    "scan_tar",
    "shard_samples",
    "shuffle_shards",
    "split_key",
    "split_shards",
    "tar_members",
]

OnError = Literal["skip", "raise"]
DEFAULT_MAX_MEMBER_BYTES = 2 * 1024**3
"""Refuse tar members larger than this (2 GiB) instead of reading them into memory."""


def expand_shard_urls(urls: Union[str, Sequence[str]]) -> list[str]:
    """Shard URLs from a list (of strings or paths), a brace pattern (``data-{000..009}.tar``), ``::``-joined lists,
    fsspec URLs or ``pipe:``. A ``pipe:`` URL is expanded as webdataset does: ``pipe:curl -s URL/s-{000..009}.tar``
    is ten commands and ``pipe:A::pipe:B`` two. A URL listed more than once is kept (each copy is read: repetition
    can be meant as weighting) and logged as a warning, since a list joined twice by mistake reads every sample of it
    twice. An IPv6 host's ``::`` (``http://[::1]:8000/s-{0..9}.tar``) is not a separator."""
    from webdataset.shardlists import expand_urls

    if isinstance(urls, (str, os.PathLike)):
        urls = [urls]
    out: list[str] = []
    for url in urls:
        url = os.fspath(url) if isinstance(url, os.PathLike) else url
        if not isinstance(url, str) or not url:
            raise ValueError(f"shard URL must be a non-empty string or path, got {url!r}")
        # An IPv6 host (`http://[::1]:8000/…`) holds '::', the list separator: kept whole (adv66: it was split into
        # 'http://[' and '1]:8000/…', two shards that do not exist)
        kept = IPV6_HOST.sub(lambda m: m.group(0).replace("::", _KEPT_COLONS), url)
        out.extend(u.replace(_KEPT_COLONS, "::") for u in expand_urls(kept))
    if not out:
        raise ValueError("no shards: the URL list is empty")
    repeated = {url: n for url, n in Counter(out).items() if n > 1}
    if repeated:
        shown = ", ".join(f"{url!r} x{n}" for url, n in list(repeated.items())[:3])
        logger.warning("%d shard URL(s) are listed more than once (%s%s): each copy is read, so their samples come "
                       "that many times an epoch; remove the repeats unless they are meant as weighting",
                       len(repeated), shown, " …" if len(repeated) > 3 else "")
    return out


_KEPT_COLONS = "\ue000\ue001"
"""What a ``::`` inside an IPv6 host stands as while the list is split at ``::`` (private-use characters)."""


def split_shards(urls: Sequence[str], *, rank: int = 0, world_size: int = 1, worker_id: int = 0, num_workers: int = 1) -> list[str]:
    """This (rank, worker)'s shards: every ``world_size * num_workers``-th shard, starting at its slot."""
    if not (0 <= rank < world_size):
        raise ValueError(f"rank must be in [0, {world_size}), got {rank = }")
    if not (0 <= worker_id < num_workers):
        raise ValueError(f"worker_id must be in [0, {num_workers}), got {worker_id = }")
    slot = rank * num_workers + worker_id
    return list(urls[slot :: world_size * num_workers])


def shuffle_shards(urls: Sequence[str], *, seed: int, epoch: int = 0) -> list[str]:
    """A seeded permutation of the shard list, different for each epoch, identical on every rank."""
    order = list(urls)
    random.Random(f"avalign-shards:{int(seed)}:{int(epoch)}").shuffle(order)
    return order


def open_shard(url: str, *, pipe_stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS):
    """A binary stream for ``url``: a local path, ``pipe:COMMAND``, or any fsspec URL (``s3://``, ``gs://``, ``file://``).

    An fsspec URL's stream raises ``OSError`` (:class:`~loaders._remote.RemoteReadError`) for any failure of a read or
    seek (an HTTP connection dropped mid-body is aiohttp's ``ClientPayloadError``), so every shard reader counts it as
    a cut shard (``truncated``), as it does a local file's or a ``pipe:`` command's.

    A ``pipe:`` URL is a :class:`~loaders._pipe.PipeStream`: its reads raise :class:`~loaders._pipe.PipeError` (an
    ``OSError``) with the command's exit status and stderr when it fails, or when it sends no byte for
    ``pipe_stall_seconds`` (it is then killed, with everything it started)."""
    if url.startswith("pipe:"):
        return PipeStream(url[len("pipe:"):], stall_seconds=pipe_stall_seconds)
    if "://" in url and not url.startswith("file://"):
        return open_remote(url)  # its client library's failures mid-read are OSError, as a file's (loaders._remote)
    path = url[len("file://") :] if url.startswith("file://") else url
    if url.startswith("file://") and "%" in path and not os.path.exists(path):
        from urllib.parse import unquote

        path = unquote(path)  # a file URI as Path.as_uri() writes it: 'file:///data/my%20shards/a.tar'
    return _open_regular_file(path)


def _open_regular_file(path: str) -> IO[bytes]:
    """``open(path, "rb")`` for a regular file; OSError for a named pipe, socket or device (adv61: opening a named
    pipe that no process writes waits forever, and a training run with it; a glob can pick one up). Opened
    non-blocking and checked on the descriptor, so nothing can be swapped in between the check and the open."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if not stat.S_ISREG(mode):
            if stat.S_ISFIFO(mode):
                why = ("not a regular file but a named pipe: not read, since a named pipe waits for a writer (forever "
                       f"when there is none); hint: read it as `pipe:cat {path}`, which has a stall limit")
            else:
                kind = "a socket" if stat.S_ISSOCK(mode) else "a device"
                why = f"not a regular file but {kind}: only regular files are read as shards (or `pipe:COMMAND`)"
            raise OSError(errno.EINVAL, why, path)
        if hasattr(os, "O_NONBLOCK"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


TAR_NAME_ENCODING = "utf-8"
"""How every shard reader decodes tar header names (``tarfile.open(encoding=...)``, with ``surrogateescape``): not the
locale's, so a name is the same text in any process; bytes that are not UTF-8 are then :func:`member_name_text`'s."""


def member_name_text(name: str) -> str:
    """A tar member's name as text any UTF-8 writer takes.

    ``tarfile`` keeps a header byte that is not UTF-8 as a lone surrogate (Latin-1 ``café.mp4`` is ``'caf\\udce9.mp4'``),
    which ``json.dump`` to a UTF-8 file or a strict UTF-8 terminal refuses. Each such byte is read as cp1252 (Latin-1
    where cp1252 has no character), as the loaders read a text file that is not UTF-8; the UTF-8 parts are kept.

    Example:
        >>> member_name_text("caf\\udce9.mp4"), member_name_text("日本.mp4")
        ('café.mp4', '日本.mp4')
    """
    if name.isascii():
        return name
    return "".join(_byte_as_cp1252(ord(c) - 0xDC00) if 0xDC80 <= ord(c) <= 0xDCFF else c for c in name)


def _byte_as_cp1252(byte: int) -> str:
    try:
        return bytes([byte]).decode("cp1252")
    except UnicodeDecodeError:  # 0x81, 0x8D, 0x8F, 0x90, 0x9D: no cp1252 character
        return chr(byte)


_NAMES_WARNED: set[str] = set()
"""Shards whose member names that are not UTF-8 were warned about in this process (once each, not once per epoch)."""


def _decoded_name(member: tarfile.TarInfo, url: str) -> str:
    """``member.name`` as :func:`member_name_text` reads it (the ``TarInfo`` renamed so), warning once per shard."""
    text = member_name_text(member.name)
    if text != member.name:
        if url not in _NAMES_WARNED:
            _NAMES_WARNED.add(url)
            logger.warning("%s: tar member names that are not UTF-8 (the first: %s) are read as cp1252 (%r), and the "
                           "sample keys with them; hint: write shards with UTF-8 member names (Python's tarfile and "
                           "webdataset's TarWriter do) if that is not the name meant", url or "a shard",
                           member.name.encode("utf-8", "surrogateescape"), text)
        member.name = text
    return text


def safe_member_name(name: str) -> bool:
    """True when a tar member name is relative and has no ``..`` part (it is never used as a path anyway)."""
    if not name or name.startswith("/") or name.startswith("\\") or os.path.isabs(name):
        return False
    parts = name.replace("\\", "/").split("/")
    return ".." not in parts


@dataclass(frozen=True)
class TarMember:
    """One tar member as the shard stage sees it."""

    name: str
    """The member's name in the tar (never used as a file path)."""
    data: bytes
    """Its bytes; empty when ``problem`` is set."""
    problem: str = ""
    """Empty for a good member; else a reason code: ``unsafe_name``, ``member_type``, ``too_large``, ``truncated``."""
    message: str = ""
    """What is wrong, for logs and errors."""


def refuse_member(member: tarfile.TarInfo, *, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES) -> Optional[TarMember]:
    """The flagged :class:`TarMember` for a member that must not be read (link/device, hostile name, too large),
    else None. One rule for every reader of shards (the loader's stream and preprocess's header scan)."""
    name = member.name
    if not member.isfile():
        return TarMember(name, b"", "member_type", f"tar member {name!r} is not a regular file (link/device)")
    if not safe_member_name(name):
        return TarMember(name, b"", "unsafe_name", f"tar member name {name!r} is absolute or contains '..'")
    if (refused := _refuse_field_name(name)) is not None:
        return refused
    if member.size > max_member_bytes:
        return TarMember(name, b"", "too_large", f"tar member {name!r} is {member.size} bytes > {max_member_bytes = }")
    return None


def _refuse_field_name(name: str) -> Optional[TarMember]:
    """The ``unsafe_name`` member for a name whose extension starts with ``__`` (``a.__key__``, ``a.__url__``): it would
    overwrite its sample's own field (adv66: ``a.__key__`` made the sample's key its bytes, and ``a.mp4`` after it a
    stray member), so its sample is dropped, named; else None."""
    ext = split_key(name)[1]
    if not ext.startswith("__"):
        return None
    return TarMember(name, b"", "unsafe_name", f"tar member {name!r} has extension {ext!r}: extensions starting with "
                     "'__' are the sample's own fields (__key__, __url__), which a member must not overwrite")


def tar_members(url: str, *, max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
                pipe_stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS) -> Iterator[TarMember]:
    """Yield the regular-file members of a tar shard, streaming, flagging the ones that must not be used.

    A hostile member (absolute name, ``..``, link, device, over ``max_member_bytes``) is yielded with its
    ``problem`` set and no data. A truncated or corrupt tar ends with one ``truncated`` member named
    after the member being read when the damage was found (``""`` if no member had started). A ``pipe:`` command
    that fails or stalls (``pipe_stall_seconds`` without a byte: killed) after sending bytes is such a
    ``truncated`` end, its message giving the exit status and stderr; before sending any, it is a shard that
    could not be opened.

    Raises:
        ShardError: the shard cannot be opened (reason ``open``), e.g. ``pipe:false``, ``pipe:cat /missing``, or a
            ``pipe:`` command that sent nothing for ``pipe_stall_seconds``; the message has its status and stderr.
    """
    try:
        stream = open_shard(url, pipe_stall_seconds=pipe_stall_seconds)
    except (OSError, ValueError) as e:
        raise ShardError(f"cannot open shard: {_with_cause(e)}", shard=url, reason="open") from e
    stopped_early = False
    try:
        yield from name_pipe_failures(scan_tar(stream, "r|*", _read_bytes, max_member_bytes=max_member_bytes,
                                               url=url), stream, url)
    except GeneratorExit:
        stopped_early = True
        raise
    finally:
        if stopped_early:  # the consumer stopped reading: a `pipe:` command's exit status on close is not news
            with contextlib.suppress(OSError):
                stream.close()
        else:
            stream.close()


def _with_cause(error: BaseException) -> str:
    """``error``'s message, and its cause's where it has one: fsspec's HTTP filesystem raises a bare
    ``FileNotFoundError(url)`` from the connection refused, the 404, the DNS failure or the timeout that says why (a
    timeout has no message: its type is named, with a hint)."""
    cause = error.__cause__
    if cause is None:
        return str(error)
    if not str(cause):  # a timeout (asyncio.TimeoutError: no message): its type is all there is to say why (adv66)
        return f"{error} ({type(cause).__name__}{_TIMEOUT_HINT if isinstance(cause, TimeoutError) else ''})"
    if str(cause) in str(error):
        return str(error)
    return f"{error} ({type(cause).__name__}: {cause})"


_TIMEOUT_HINT = (": the server did not answer in its client's time limit (fsspec's HTTP client: aiohttp's 300 s a request, "
                 "a HEAD then a GET, so 10 minutes a shard); hint: a shorter limit is fsspec's setting, e.g. "
                 "fsspec.config.conf['http'] = {'client_kwargs': {'timeout': aiohttp.ClientTimeout(total=60)}}")


def name_pipe_failures(members: Iterable[TarMember], stream, url: str) -> Iterator[TarMember]:
    """``members`` (read from ``stream``) with a ``pipe:`` command's failure named: the ``truncated`` member that a
    failed or stalled command leaves (:class:`~loaders._pipe.PipeError`) carries its exit status and stderr; when
    the command sent no byte at all, the shard could not be opened (ShardError ``open``) instead. When the tar ends
    whole but the command then exits with a failing status (``tar cf - a b`` that could not read ``b``: exit 2), one
    last ``truncated`` member under no key says so. Other streams' members pass unchanged. Shared by every reader of shards (the loader's stream and preprocess's scan)."""
    for member in members:
        failure = getattr(stream, "error", None)
        if member.problem == "truncated" and isinstance(failure, PipeError):
            if failure.bytes_read == 0:
                raise ShardError(f"cannot open shard: {failure}", shard=url, reason="open")
            if str(failure) not in member.message:
                member = TarMember(member.name, b"", "truncated", f"{member.message}: {failure}")
        yield member
        if member.problem == "truncated":
            return
    failure = stream.status_after_end() if isinstance(stream, PipeStream) else None
    if failure is not None:  # a complete tar, but the command failed: what it did not send is lost (adv66)
        yield TarMember("", b"", "truncated", f"the tar ended whole, but {failure}: every sample in it was read; "
                        "samples the command failed to put in it are missing")


def _read_bytes(archive: tarfile.TarFile, member: tarfile.TarInfo) -> tuple[bytes, int]:
    handle = archive.extractfile(member)
    data = handle.read() if handle is not None else b""
    return data, len(data)


class _CheckedTarInfo(tarfile.TarInfo):
    """``TarInfo`` that remembers a damaged header instead of letting ``tarfile`` take it for the end.

    ``tarfile`` ends iteration silently when a header after the first is cut short, fails its checksum, or
    is missing (no end-of-archive blocks): every later sample would vanish with no record. The damage is
    kept on the archive (``avalign_damage``: the header's name field as far as it is readable, how many bytes there
    were, why, and whether the block still looks like a header: :func:`_looks_like_header`) for :func:`scan_tar` to
    report. A block of zeros ends the archive when the block after it is zeros too, or missing (rel62): the
    end-of-archive is two zero blocks. A single zero block followed by data (a header zeroed in place, or a member
    whose header claims fewer bytes than it has, read on to a zero block of its data) is damage, where ``tarfile``
    ended silently and lost every later member. (Two or more zero blocks inside data still read as the end.)
    """

    @classmethod
    def fromtarfile(cls, archive):
        start = archive.fileobj.tell()
        buf = archive.fileobj.read(tarfile.BLOCKSIZE)
        try:
            obj = cls.frombuf(buf, archive.encoding, archive.errors)
        except tarfile.EOFHeaderError:
            after = archive.fileobj.read(tarfile.BLOCKSIZE)  # one more block: the second end-of-archive block
            if after.count(0) != len(after):
                archive.avalign_damage = ("", "<a block of zeros>", len(buf), f"a block of zeros at byte {start} "
                                          "followed by data, not by the second end-of-archive block", False)
            raise
        except (tarfile.TruncatedHeaderError, tarfile.InvalidHeaderError, tarfile.EmptyHeaderError) as e:
            field_bytes = buf[:100]
            complete = b"\0" in field_bytes
            name = field_bytes.split(b"\0", 1)[0].decode("utf-8", "surrogateescape") if buf else ""
            reason = "no end-of-archive blocks" if isinstance(e, tarfile.EmptyHeaderError) else str(e)
            if not name.isprintable():  # random bytes (a damaged block), not a member's name: no sample key of it
                name, complete = f"<{len(name)} bytes that are not text>", False
            archive.avalign_damage = (name if complete else "", name, len(buf), reason, _looks_like_header(buf))
            raise
        obj.offset = archive.fileobj.tell() - tarfile.BLOCKSIZE
        try:
            return obj._proc_member(archive)
        except tarfile.InvalidHeaderError as e:
            # An extended header (PAX ``x``/``g``) whose records do not parse (adv62: a record length of 0):
            # ``tarfile`` ended there silently, every later member lost with no record. It is the header of the member
            # after it, whose name it held: damage under no key, the sample before it kept (as for a damaged header).
            archive.avalign_damage = ("", f"<the extended header {obj.name!r} at byte {start}>", len(buf),
                                      f"its records do not parse: {e}", True)
            raise


_GNU_VOLUME_LABEL = b"V"
"""The type of the archive label ``tar -V LABEL`` writes as the first header: no file, not a member of a sample (it
was counted as a dropped sample named after the label, ``member_type``: adv62)."""


def scan_tar(
    stream: IO[bytes],
    mode: str,
    read: Callable[[tarfile.TarFile, tarfile.TarInfo], tuple[Any, int]],
    *,
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES,
    header_inside: Optional[Callable[[tarfile.TarFile, tarfile.TarInfo, Any], Optional[tuple[int, str]]]] = None,
    url: str = "",
) -> Iterator[TarMember]:
    """The member loop every shard reader shares (the loader's stream and preprocess's header scan).

    Directories and a GNU volume label are skipped; hostile members are yielded flagged (:func:`refuse_member`);
    each good member is ``read(archive, member) -> (data, bytes_available)`` and yielded with that data; a member with
    fewer bytes than its header says, or a corrupt stream, ends the scan with one ``truncated`` member. Names are
    :func:`member_name_text`'s (each ``TarInfo`` renamed so before ``read`` sees it; a warning names ``url`` once).

    Who the ``truncated`` member is named after (adv61):

    - A damaged whole header block after a member whose data holds the start of a tar header
      (``header_inside(archive, member, data)`` → ``(offset, name)``; by default :func:`find_tar_header` on ``data``
      when it is bytes): that member's header claimed more bytes than it has and its data runs into the members after
      it, so its sample is dropped, not delivered with a wrong last member and without the members it swallowed.
    - A whole block that is no tar header at all (:func:`_looks_like_header`: its numeric fields are not octal and
      it has no ``ustar`` magic) where the header after a member must be (rel62): that member's header may claim
      FEWER bytes than it has, so what was read as its data is cut and its last bytes were taken for the next header
      (tar keeps no checksum of data: a caption came through cut, with no error), or the header after it was
      overwritten (a member of the same sample may be lost). Either way its sample is dropped, under its key, not
      delivered. The end-of-archive zero blocks are not damage.
    - A tar that ends at, or inside, the header after a member, where what is left of that header's name does not show
      another key (a shard still being written, a cut download): the member lost may be one of the open sample's,
      so that sample is dropped, not delivered without it.
    - Any other damaged header is named by its own name field, as far as readable (a header of another key that is
      cut, or a whole header whose checksum fails but whose fields still read as a header's: the sample before it is
      kept whole).
    """
    reading = ""
    last: Optional[tuple[tarfile.TarInfo, Any]] = None
    try:
        with tarfile.open(fileobj=stream, mode=mode, tarinfo=_CheckedTarInfo, encoding=TAR_NAME_ENCODING,
                          errors="surrogateescape") as archive:
            for member in archive:
                name = reading = _decoded_name(member, url)
                last = None
                if member.isdir() or member.type == _GNU_VOLUME_LABEL:
                    continue
                refused = refuse_member(member, max_member_bytes=max_member_bytes)
                if refused is not None:
                    yield refused
                    continue
                data, available = read(archive, member)
                if available != member.size:
                    yield TarMember(name, b"", "truncated", f"tar member {name!r} is truncated ({available} of {member.size} bytes)")
                    return
                last = (member, data)
                yield TarMember(name, data)
            damage = getattr(archive, "avalign_damage", None)
            if damage is not None and not reading:  # a first block of zeros with data after it (any other damage
                # there makes tarfile raise ReadError itself)
                yield TarMember("", b"", "truncated", f"the tar's first header is damaged ({damage[3]}): every member "
                                "of the shard is lost")
                return
            if damage is not None:
                name, partial, size, why, header_like = damage
                damaged = (f"tar header after member {reading!r} is damaged ({why}; {size} of {tarfile.BLOCKSIZE} "
                           f"bytes, name field {partial if partial.startswith('<') else repr(partial)})")
                inside = None
                if last is not None and size == tarfile.BLOCKSIZE:  # a whole block where the next header should be
                    member, data = last
                    inside = (header_inside(archive, member, data) if header_inside is not None
                              else find_tar_header(data) if isinstance(data, (bytes, bytearray)) else None)
                if inside is not None:
                    offset, inner = inside
                    yield TarMember(reading, b"", "truncated",
                                    f"tar member {reading!r} runs into the members after it: its header says "
                                    f"{last[0].size} bytes, but the header of member {inner!r} starts at byte {offset} "
                                    f"of them, and the {damaged[:1].lower()}{damaged[1:]}; its sample and the members "
                                    "after it are lost")
                    return
                if last is not None and size == tarfile.BLOCKSIZE and not header_like:
                    yield TarMember(reading, b"", "truncated",
                                    f"tar member {reading!r} is followed by a block that is no tar header where the "
                                    f"next header must be ({why}; name field "
                                    f"{partial if partial.startswith('<') else repr(partial)}): the member's header may "
                                    f"claim fewer bytes ({last[0].size}) than it has, so its data was cut there (tar "
                                    "keeps no checksum of data), or the header after it was overwritten; its sample is "
                                    "dropped, and the members after it are lost")
                    return
                if size < tarfile.BLOCKSIZE and not name and _may_continue(reading, partial):
                    # The tar ends at (or inside) the header after `reading` and what is left of the name does not
                    # show another key: a writer that had not finished, or a cut download. The member lost there may
                    # be one of this sample's (KEY.mp4 written, KEY.txt not yet): its sample is dropped, not
                    # delivered without it (adv61; before, it was delivered and the loss counted under no key).
                    where = (f"the tar ends after member {reading!r} without end-of-archive blocks" if size == 0 else
                             f"the tar ends {size} byte{'s' if size > 1 else ''} into the header after member "
                             f"{reading!r} (name field {partial if partial.startswith('<') else repr(partial)})")
                    yield TarMember(reading, b"", "truncated",
                                    f"{where}: a shard still being written, or cut short; the member that was to "
                                    "come may be one of this sample's, so the sample is dropped; the members after it "
                                    "are lost")
                    return
                yield TarMember(name, b"", "truncated", f"{damaged}; the members after it are lost")
    except (tarfile.TarError, EOFError, OSError, ValueError) as e:
        if not reading and isinstance(e, OSError) and not isinstance(e, gzip.BadGzipFile):
            # the stream failed (a local read error, an HTTP connection dropped: loaders._remote), not its format
            yield TarMember("", b"", "truncated", f"the shard's stream failed before its first member was read ({e}); "
                            "every member of the shard is lost")
            return
        if not reading:  # nothing read: not "after member ''" but a file that does not start as a tar
            yield TarMember("", b"", "truncated",
                            f"not a tar archive: its start is no tar header ({e}); a shard is a tar of KEY.EXT members, "
                            "optionally gzip/bz2/xz-compressed (a media file, an error page or an empty download is not)")
            return
        yield TarMember(reading, b"", "truncated", f"tar stream ended early or is corrupt after member {reading!r}: {e}; "
                        "the members after it are lost")


def _may_continue(reading: str, partial: str) -> bool:
    """Whether a member name that begins with ``partial`` (the readable start of a cut header's name field) can be
    of the same sample as member ``reading``: true for no bytes at all, or bytes that are not text."""
    if not partial or partial.startswith("<"):
        return True
    stem = split_key(reading)[0] + "."
    return stem.startswith(partial) or partial.startswith(stem)


_USTAR = np.frombuffer(b"ustar", dtype=np.uint8)


def find_tar_header(data: bytes) -> Optional[tuple[int, str]]:
    """``(offset, name)`` of the first tar header in ``data`` at a multiple of 512 bytes, else None: how a member
    whose header claims more bytes than it has is told from a damaged header (:func:`scan_tar`).

    A whole block must parse (checksum included). The last block may be cut by the end of ``data`` (a claim a few
    hundred bytes too long swallows only the start of the next header): its first 156 bytes must read as a header's
    (a printable name, octal fields, a checksum no smaller than the bytes there add up to; ``ustar`` where its magic
    lies within them). Fast on media: only the 5 bytes at each block's magic offset are compared (a strided view, not
    a search of every byte: 1 MiB of media in 0.11 ms instead of 0.65, preprocess's streamed scan calls this on every
    chunk of every member), and a block is parsed only where they read ``ustar``, and the last one."""
    block = tarfile.BLOCKSIZE
    whole = len(data) // block
    starts = []
    if whole:
        magic = np.frombuffer(data, dtype=np.uint8, count=whole * block).reshape(whole, block)[:, 257:262]
        starts = [int(i) * block for i in np.flatnonzero((magic == _USTAR).all(axis=1))]
    if data:
        last = (len(data) - 1) // block * block
        if last not in starts:
            starts.append(last)
    for start in sorted(starts):
        name = _header_name(bytes(data[start:start + block]))
        if name is not None:
            return start, name
    return None


_OCTAL_FIELDS = ((100, 108), (108, 116), (116, 124), (124, 136), (136, 148), (148, 156))
"""mode, uid, gid, size, mtime, chksum: the octal fields of a tar header before its type flag."""


def _octal_fields(buf: bytes) -> bool:
    """Whether ``buf``'s numeric header fields read as octal (size, mtime and chksum not blank)."""
    fields = [buf[a:b].strip(b" \0") for a, b in _OCTAL_FIELDS]
    return all(all(48 <= c <= 55 for c in f) for f in fields) and all(fields[3:])


def _looks_like_header(buf: bytes) -> bool:
    """Whether a whole block that failed to parse as a tar header is still a damaged header (its numeric fields are
    octal, or it has the ``ustar`` magic), not the data of a member or garbage (:func:`scan_tar`)."""
    return len(buf) == tarfile.BLOCKSIZE and (buf[257:262] == b"ustar" or _octal_fields(buf))


def _header_name(buf: bytes) -> Optional[str]:
    """The member name of the tar header ``buf`` (512 bytes, or its first 156 or more), else None."""
    if len(buf) >= tarfile.BLOCKSIZE:
        try:
            return member_name_text(tarfile.TarInfo.frombuf(buf[:tarfile.BLOCKSIZE], "utf-8", "surrogateescape").name)
        except tarfile.HeaderError:
            return None
    if len(buf) < 156 or (len(buf) >= 262 and buf[257:262] != b"ustar"):
        return None
    name, nul, _ = buf[:100].partition(b"\0")
    if not nul or not name:
        return None
    try:
        text = name.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.isprintable():
        return None
    if not _octal_fields(buf):  # digits 0-7 only (empty: a field left blank); size, mtime and chksum never blank
        return None
    fields = [buf[a:b].strip(b" \0") for a, b in _OCTAL_FIELDS]
    partial_sum = sum(buf[:148]) + 8 * 32 + sum(buf[156:])  # the bytes missing from the block only add to it
    return text if partial_sum <= int(fields[5], 8) else None


def split_key(name: str) -> tuple[str, str]:
    """``dir/clip.align.json`` → (``dir/clip``, ``align.json``): the extension starts at the base name's first dot."""
    directory, _, base = name.rpartition("/")
    stem, dot, ext = base.partition(".")
    key = f"{directory}/{stem}" if directory else stem
    return key, ext.lower() if dot else ""


def group_by_key(
    members: Iterable[Union[TarMember, tuple[str, bytes]]],
    *,
    url: str = "",
    on_error: OnError = "skip",
    report: Optional[Callable[[str, str, str], None]] = None,
    skip_log: Optional[SkipLog] = None,
) -> Iterator[dict]:
    """Group consecutive members by key into samples.

    A sample is dropped whole, and reported ONCE under its key, when: a member of it has a problem
    (hostile name, link, too large, truncated; an extension starting with ``__``, which would overwrite the sample's
    ``__key__`` / ``__url__``: ``unsafe_name``), or one of its extensions repeats (``duplicate_key``). A truncated
    member ends the shard. Members of a key already seen before another key (a non-consecutive repeat) cannot join
    its sample, which was yielded already: when the first of them has an extension the sample has, they are a second
    copy, skipped as ``duplicate_key`` (the first copy was delivered); else (``a.mp4 b.mp4 b.txt a.txt``) they are
    members the sample lacked, dropped and reported under the key as ``stray_member`` (the sample, delivered, is not
    a skip). Each drop is logged as a warning, or through ``skip_log`` (a cap per reason) when one is given.
    """
    seen: dict[str, set[str]] = {}
    """Key → the extensions of its sample (so far), for every key that started a sample in this shard."""
    current: Optional[dict] = None
    dropping: Optional[str] = None  # key of the sample being dropped (its later members are ignored silently)

    def drop(key: str, reason: str, message: str) -> None:
        if on_error == "raise":
            raise ShardError(message, shard=url, key=key, reason=reason)
        line = (f"shard {url}: {message}" if reason == "stray_member" or message.startswith("a second copy")  # names what
                else f"shard {url}: sample {key!r} dropped ({reason}): {message}" if key
                else f"shard {url}: dropped ({reason}): {message}")  # no sample had started (e.g. not a tar)
        if skip_log is None:
            logger.warning("%s", line)
        else:
            skip_log.skipped(logger, reason, line)
        if report:
            report(url, key, reason)

    for member in members:
        if not isinstance(member, TarMember):
            member = TarMember(*member)
        key, ext = split_key(member.name)
        if not member.problem:
            member = _refuse_field_name(member.name) or member
        if current is not None and key != current["__key__"]:
            yield current
            current = None
        if dropping is not None and key == dropping:
            continue
        dropping = None
        if member.problem:
            drop(key, member.problem, member.message)
            current, dropping = None, key
            seen.setdefault(key, set())
            if member.problem == "truncated":
                return
            continue
        if not ext:
            continue  # no extension: not part of any sample (e.g. a README in the tar)
        if current is None:
            if key in seen:
                adjacent = ("A sample's members must be adjacent in the tar: a tar written by extension (`tar cf s.tar "
                            "*.mp4 *.srt`) splits every sample; write it sorted by name (`tar --sort=name`)")
                if ext in seen[key]:  # a second copy of the sample: skipped, the first was delivered
                    drop(key, "duplicate_key", f"a second copy of key {key!r} (member {member.name!r}) after other "
                         f"keys is skipped (duplicate_key); the first copy was delivered. {adjacent}")
                else:  # members the sample lacked: dropped, the sample was delivered without them
                    drop(key, "stray_member", f"member {member.name!r} dropped (stray_member): its key {key!r} "
                         f"appeared earlier, before other keys, and sample {key!r} was delivered without it. {adjacent}")
                dropping = key
                continue
            seen[key] = set()
            current = {"__key__": key, "__url__": url}
        elif ext in current:
            drop(key, "duplicate_key", f"member {member.name!r} appears twice in sample {key!r}")
            current, dropping = None, key
            continue
        current[ext] = member.data
        seen[key].add(ext)
    if current is not None:
        yield current


def shard_samples(
    urls: Union[str, Sequence[str]],
    *,
    seed: Optional[int] = None,
    epoch: int = 0,
    rank: int = 0,
    world_size: int = 1,
    worker_id: int = 0,
    num_workers: int = 1,
    on_error: OnError = "skip",
    report: Optional[Callable[[str, str, str], None]] = None,
    pipe_stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS,
) -> Iterator[dict]:
    """All samples of this rank's and worker's shards: list → shuffle (if ``seed``) → split → expand → group.
    A ``pipe:`` shard whose command sends nothing for ``pipe_stall_seconds`` is killed (see :func:`tar_members`).

    Example:
        >>> for sample in shard_samples("sample_data/shards/shard-{000000..000001}.tar"):  # doctest: +SKIP
        ...     print(sample["__key__"], sorted(k for k in sample if not k.startswith("__")))
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    shards = expand_shard_urls(urls)
    if seed is not None:
        shards = shuffle_shards(shards, seed=seed, epoch=epoch)
    for url in split_shards(shards, rank=rank, world_size=world_size, worker_id=worker_id, num_workers=num_workers):
        try:
            members = tar_members(url, pipe_stall_seconds=pipe_stall_seconds)
            yield from group_by_key(members, url=url, on_error=on_error, report=report)
        except ShardError as e:
            if on_error == "raise" or e.reason != "open":
                raise
            logger.warning("skipping shard %s: %s", url, e)
            if report:
                report(url, "", "open")
