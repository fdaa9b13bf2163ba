"""Media sources: a path, bytes (a tar member) or a file-like object, opened for PyAV or decord."""
from __future__ import annotations

import errno
import io
import logging
import os
from typing import BinaryIO, Callable, Optional, TypeVar, Union

logger = logging.getLogger(__name__)

__all__ = ["MediaSource", "can_reopen", "check_source", "decode_failure", "describe_source", "open_container",
           "open_for_pyav", "pick_stream", "read_seekable"]

MediaSource = Union[str, os.PathLike, bytes, bytearray, memoryview, BinaryIO]
"""What the decoders accept: a file path, the file's bytes, or a binary file-like object."""


def describe_source(source: MediaSource, name: str | None = None) -> str:
    """A short label for error messages: the path, the given name, or ``<N bytes>``."""
    if name:
        return name
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return f"<{len(source)} bytes>"
    return getattr(source, "name", None) or f"<{type(source).__name__}>"


_T = TypeVar("_T")


def read_seekable(source, read: Callable[[BinaryIO], _T]) -> Optional[_T]:
    """``read(handle)`` on a seekable binary view of ``source``: a path opened, bytes wrapped, a file object used as is
    and its position restored; None for a file object that cannot tell its position, or any other source. A file
    object's ``OSError`` / ``ValueError`` while seeking gives None; a path's ``OSError`` is raised."""
    if isinstance(source, (str, os.PathLike)):
        with open(os.fspath(source), "rb") as handle:
            return read(handle)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return read(io.BytesIO(source))
    if not (hasattr(source, "seek") and hasattr(source, "tell")):
        return None
    try:
        position = source.tell()
    except (OSError, ValueError):
        return None
    try:
        return read(source)
    except (OSError, ValueError):
        return None
    finally:
        source.seek(position)


def can_reopen(source: MediaSource) -> bool:
    """Whether :func:`open_container` can open ``source`` a second time from its first byte: a path or bytes, or a
    file object that says it is seekable (``seekable()``; one without that method, if it has ``seek``). A pipe or a
    stream read once is not: its second open would start where the first stopped reading."""
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return True
    seekable = getattr(source, "seekable", None)
    if callable(seekable):
        try:
            return bool(seekable())
        except (OSError, ValueError):
            return False
    return hasattr(source, "seek")


def check_source(source: MediaSource) -> None:
    """Raise what a caller's mistake deserves before any decoding: TypeError for an unsupported type,
    FileNotFoundError for a path that does not exist (everything after that is the file's fault)."""
    if isinstance(source, (str, os.PathLike)):
        if not os.path.exists(os.fspath(source)):
            raise FileNotFoundError(f"media file not found: {os.fspath(source)!r}")
    elif not isinstance(source, (bytes, bytearray, memoryview)) and not hasattr(source, "read"):
        raise TypeError(f"source must be a path, bytes or a binary file object, got {type(source).__name__}")


def _is_attached_picture(stream) -> bool:
    """Cover art stored as a one-frame "video" stream (``AV_DISPOSITION_ATTACHED_PIC``)."""
    import av

    disposition = getattr(stream, "disposition", 0)
    flag = getattr(getattr(av.stream, "Disposition", None), "attached_pic", 0x400)
    try:
        return bool(int(disposition) & int(flag))
    except (TypeError, ValueError):
        return False


def pick_stream(container, kind: str, label: str, *, stream_index: int | None = None):
    """The ``kind`` (``"video"``/``"audio"``) stream to decode, as FFmpeg chooses it by default.

    Default: ``av_find_best_stream`` (``container.streams.best``: the most frames/largest, what ``ffmpeg``,
    ``ffprobe -select_streams`` users and torchcodec get), never an attached picture (cover art), else the
    first such stream. ``stream_index`` picks one stream by its index in the container (``ffprobe``'s
    ``index``, all stream types counted).

    Raises:
        DecodeError: no such stream (reason ``missing_video`` / ``missing_audio``), or ``stream_index`` is not
            a ``kind`` stream of this file (same reasons: the file lacks what was asked for).
    """
    from avcore import DecodeError

    reason = f"missing_{kind}"
    if stream_index is not None:
        streams = list(container.streams)
        if not 0 <= stream_index < len(streams) or streams[stream_index].type != kind or _is_attached_picture(streams[stream_index]):
            types = [f"{s.index}:{s.type}" for s in streams]
            raise DecodeError(f"{label}: stream_index={stream_index} is not a {kind} stream (streams: {types})", reason=reason)
        return streams[stream_index]
    candidates = [s for s in getattr(container.streams, kind) if not _is_attached_picture(s)]
    if not candidates:
        types = [s.type for s in container.streams]
        raise DecodeError(f"{label} has no {kind} stream (streams: {types}; attached pictures do not count)", reason=reason)
    try:
        best = container.streams.best(kind)
    except Exception:  # noqa: BLE001 - an old PyAV or an odd container: the first stream is FFmpeg's fallback too
        best = None
    by_index = {s.index: s for s in candidates}
    return by_index.get(getattr(best, "index", None), candidates[0])


def open_for_pyav(source: MediaSource) -> Union[str, BinaryIO]:
    """What ``av.open`` takes: a path string or a seekable binary file object (bytes are wrapped, not copied)."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if not os.path.exists(path):
            raise FileNotFoundError(f"media file not found: {path!r}")
        if os.path.isdir(path):
            raise IsADirectoryError(errno.EISDIR, "it is a directory, not a media file")
        if os.path.getsize(path) == 0:
            raise ValueError("media is empty (0 bytes)")
        return path
    if isinstance(source, (bytes, bytearray, memoryview)):
        if len(source) == 0:
            raise ValueError("media is empty (0 bytes)")
        return io.BytesIO(source)
    if hasattr(source, "read"):
        if hasattr(source, "seek"):
            try:
                source.seek(0)
            except (OSError, ValueError):
                pass
        return source
    raise TypeError(f"source must be a path, bytes or a binary file object, got {type(source).__name__}")


def _is_tar(source: MediaSource) -> bool:
    """Whether ``source`` starts as a POSIX / GNU tar does (``ustar`` at byte 257): a WebDataset shard."""
    try:
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as handle:
                head = handle.read(265)
        elif isinstance(source, (bytes, bytearray, memoryview)):
            head = bytes(source[:265])
        else:
            return False
    except OSError:
        return False
    return head[257:262] == b"ustar"


def _open_failure(error: BaseException) -> str:
    """Why ``av.open`` failed, in words: FFmpeg's own message without its errno and file name (``[Errno 1094995529]``
    and ``'<none>'`` for bytes: the caller names the file), with a hint when FFmpeg found no container it reads."""
    text = getattr(error, "strerror", None) or str(error)
    if type(error).__name__ == "InvalidDataError":  # av.error.InvalidDataError: not a container FFmpeg knows
        text += ("; hint: the file is not audio or video that FFmpeg can read (truncated, damaged, or another kind of "
                 "file with a media extension?): check it with `ffprobe FILE`")
    return text


def decode_failure(error: BaseException) -> str:
    """An exception raised while decoding, in words: FFmpeg's own message for PyAV's errors (``av.error.*``, without
    the errno and file name: the caller names the file), else the exception's type and message."""
    if type(error).__module__ == "av.error":
        return getattr(error, "strerror", None) or str(error)
    return f"{type(error).__name__}: {error}"


_TRANSCRIPT_SUFFIX_OF_FFMPEG_FORMAT = {"srt": "srt", "webvtt": "vtt"}
"""FFmpeg's name of a subtitle format that avalign reads as a transcript → the suffix avalign knows it by
(``avcore.TRANSCRIPT_EXTENSIONS``: WebVTT is ``.vtt``, not FFmpeg's ``webvtt``)."""


def _subtitle_hint(label: str, format_name: str) -> str:
    """What to do with a subtitle file given as media: use it as the transcript (renamed to the suffix avalign reads
    it by, where its name does not have it), or, for a format avalign does not read (ASS/SSA…), convert it to SRT."""
    name = format_name.split(",")[0]
    suffix = _TRANSCRIPT_SUFFIX_OF_FFMPEG_FORMAT.get(name)
    if suffix is None:
        return (f"avalign does not read {name} subtitles as a transcript (it reads SRT, WebVTT, Whisper JSON, TextGrid, "
                f"STM): convert it with `ffmpeg -i {label} OUT.srt` and give OUT.srt as the transcript (--transcript)")
    if label.lower().endswith(f".{suffix}"):
        return "give it as the transcript (--transcript)"
    return f"give it as the transcript (--transcript), named .{suffix}"


def open_container(source: MediaSource, label: str, *, kind: str):
    """``av.open`` the source and check it has a stream of ``kind`` (``"video"`` or ``"audio"``).

    Raises:
        DecodeError: the container cannot be opened (reason ``decode``) or has no such stream
            (reason ``missing_video`` / ``missing_audio``).
        FileNotFoundError, TypeError: a missing path or an unsupported source type.
    """
    import av

    from avcore import DecodeError

    try:
        container = av.open(open_for_pyav(source), mode="r", metadata_errors="ignore")
    except (FileNotFoundError, TypeError):
        raise
    except (av.error.FFmpegError, ValueError, OSError) as e:
        if _is_tar(source):  # a shard given as one media file: FFmpeg's "Invalid data" would not say so
            error = DecodeError(f"cannot open {label}: it is a tar archive (a WebDataset shard?), not audio or video; "
                                "hint: read a shard's samples with loaders.make_loader / loaders.make_dataset, or "
                                "`avalign report SHARD --out DIR` / `avalign preprocess SHARD OUT_DIR`")
            error.container_unreadable = True
            raise error from e
        error = DecodeError(f"cannot open {label}: {_open_failure(e)}")
        error.container_unreadable = True  # FFmpeg cannot even read the container: no other FFmpeg-based decoder can
        raise error from e
    if not getattr(container.streams, kind):
        types = [s.type for s in container.streams]
        format_name = container.format.name if container.format else "?"
        container.close()
        container_formats = ("matroska", "mov", "mp4", "avi", "mpegts", "ogg", "flv", "asf", "nut")
        is_container = any(name in format_name.split(",") for name in container_formats)
        if types and all(t == "subtitle" for t in types) and not is_container:  # e.g. an SRT saved as .mp4
            raise DecodeError(f"{label} is a subtitle file (format {format_name}), not audio or video; "
                              f"hint: {_subtitle_hint(label, format_name)}", reason="decode")
        raise DecodeError(f"{label} has no {kind} stream (streams: {types})", reason=f"missing_{kind}")
    return container
