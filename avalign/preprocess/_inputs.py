"""What to preprocess: a directory of media with sidecar transcripts (or one such media file), or WebDataset shards.

Both kinds of input become a sorted list of :class:`InputSample`, each naming where its bytes are
(a file path, or a tar member's offset in a shard) so that a worker can read one sample without the
others. Keys::

    directory input                         key              members read
    talks/a.mp4 + talks/a.srt               talks/a          a.mp4 (media), a.srt (transcript)
    b.v2.mkv + b.v2.json (Whisper JSON)     b_v2             dots in a stem become '_' (a dot starts the extension)
    shard input (video2dataset output)
    00001.mp4 + 00001.json + 00001.txt      00001            json is metadata unless it looks like a transcript

A JSON member or sidecar is a transcript when it holds ``"segments"`` (Whisper, WhisperX, faster-whisper)
or is a list of ``{"text", "start", "end"}``; anything else (video2dataset's url/caption/status
record) is kept as metadata (``meta.json``).

Shards are scanned with the loader's rules (``loaders._shards.group_by_key``): a sample with a hostile
member (absolute or ``..`` name, link, device, over the member size limit) or a repeated key/extension
is dropped whole, and a truncated tar drops the sample being read; each is reported ONCE under its
sample key with the shared reason codes (``loaders.errors.REASONS``: ``unsafe_name``, ``member_type``,
``too_large``, ``duplicate_key``, ``truncated``, ``open``). With ``on_error="raise"`` the first such
problem raises :class:`~loaders.errors.SampleError` naming the shard, the key and the reason; a key
without media (``missing_media``) or a duplicate key in a directory is listed, never raised.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import os
import re
import stat
import tarfile
import unicodedata
from dataclasses import dataclass, field
from typing import IO, Iterator, Literal, Optional

from avalign._walk import walk
from avalign.preprocess._streamed import read_streamed
from avcore import (CAPTION_EXTENSIONS, MEDIA_EXTENSIONS, SHARD_SUFFIXES, TRANSCRIPT_EXTENSIONS,
                    sample_media)
from loaders.shards import (
    DEFAULT_MAX_MEMBER_BYTES,
    ShardError,
    TarMember,
    expand_shard_urls,
    find_tar_header,
    group_by_key,
    name_pipe_failures,
    open_shard,
    scan_tar,
    split_key,
)
from loaders.errors import SampleError, SkipLog
from loaders.transcripts import is_language_tagged, is_transcript_json, pick_transcript

logger = logging.getLogger(__name__)

__all__ = [
    "InputPlan",
    "InputSample",
    "Locator",
    "is_transcript_json",
    "list_inputs",
    "read_members",
]

_PASS_THROUGH = tuple(ext for ext in CAPTION_EXTENSIONS if ext not in TRANSCRIPT_EXTENSIONS)
"""Members passed through (video2dataset's caption: ``txt``, ``caption``), written as UTF-8."""
_META_JSON = "meta.json"
"""The member under which preprocess writes a video2dataset ``KEY.json`` record (the loader reads its ``caption``):
passed through again when preprocess reads its own output (``--reencode`` later, another ``--sample-rate``)."""
_REWRITTEN = ("align.json", "frames.json")
"""Members of a preprocessed shard that preprocess writes afresh for every sample: not "left out" when it reads its own
output again."""
_KEY_CHARS = re.compile(r"[^\w\-]")
"""Replaced by ``_`` in keys: anything but letters and digits of any script, ``_`` and ``-`` (dots split WebDataset
keys, spaces and punctuation break shell globs). ``日本.mkv`` is key ``日本``: an ASCII-only rule turned every
CJK-named clip into ``__`` and skipped all but one of a directory as duplicate_key."""
_READ_CHUNK_BYTES = 1 << 20
OnError = Literal["skip", "raise"]


@dataclass(frozen=True)
class Locator:
    """Where one member's bytes are: a file, or ``size`` bytes at ``offset`` in a tar shard."""

    path: str
    """File path, or the shard URL."""
    offset: int = -1
    """Byte offset of the member's data in a seekable, uncompressed shard; -1 otherwise (read by streaming)."""
    stream_offset: int = -1
    """Byte offset of the member's data in the tar as streamed (after decompression); -1 for a plain file. A
    streamed shard is read back forward from where the last read stopped (``avalign.preprocess._streamed``)."""
    size: int = -1
    """Member size in bytes; -1 for a plain file."""
    member: str = ""
    """Tar member name; empty for a plain file."""
    stamp: str = ""
    """A fingerprint of the source: a change forces a redo. A plain file: its size and ``mtime_ns``. A member of a
    local shard: its offset and size, then the shard's size and ``mtime_ns`` (rel62: a shard rewritten with the same
    layout, e.g. a caption edited to the same length, used to keep its old outputs; touching a shard, or copying it
    without its mtime, now redoes its samples). A member of a remote or ``pipe:`` shard: its offset and size only."""
    listed: tuple = ()
    """A local shard's ``(size, mtime_ns, inode)`` when it was listed (empty otherwise): reading its members back, a
    shard that has changed since is refused (``read``), not read at offsets of another file (size and mtime are in
    ``stamp`` too; the inode is not: a shard moved to another disk unchanged is not redone)."""


@dataclass(frozen=True)
class InputSample:
    """One sample to preprocess: a media member, an optional transcript, optional extras."""

    key: str
    """Output key (no dots): members are written as ``<key>.<ext>``."""
    media_ext: str
    """Lower-case extension of the media, kept in the output (``mp4``, ``mkv``, ``m4a``…)."""
    media: Locator
    """The media bytes."""
    transcript: Optional[Locator] = None
    """The transcript bytes, when there is one."""
    transcript_format: str = ""
    """``json``, ``textgrid``, ``vtt`` or ``srt``."""
    extras: tuple[tuple[str, Locator], ...] = ()
    """Members passed through, as ``(output extension, locator)``: ``meta.json``, ``txt`` (written as UTF-8 by
    ``process_sample``), an audio member (as it is)."""
    source: str = ""
    """Human-readable origin for messages and skipped.jsonl (a path, or ``shard.tar:key``)."""

    def fingerprint(self) -> list:
        """JSON-able identity of the inputs: a change here means the sample must be redone."""
        parts = [self.key, self.media_ext, self.media.stamp, self.transcript_format]
        parts.append(self.transcript.stamp if self.transcript else "")
        parts.extend(f"{ext}:{loc.stamp}" for ext, loc in self.extras)
        return parts


@dataclass(frozen=True)
class InputPlan:
    """Everything found in the input: samples to do (sorted by key) and inputs refused up front."""

    samples: tuple[InputSample, ...]
    """Usable samples, sorted by key."""
    skipped: tuple[dict, ...] = field(default=())
    """``{"input", "key", "reason", "message"}`` for inputs that cannot become a sample."""
    kind: str = "directory"
    """``directory``, ``file`` (one media file and its same-stem sidecars) or ``shards``."""
    shard_urls: tuple[str, ...] = ()
    """The expanded shard list (shard input only)."""


def _clean_key(key: str) -> str:
    parts = unicodedata.normalize("NFC", key).replace("\\", "/").split("/")  # NFC: macOS's NFD é is one letter too
    return "/".join(_KEY_CHARS.sub("_", p) for p in parts if p)


def _holds_whisper_transcript(data: bytes) -> bool:
    """Whether a ``json`` member is a video2dataset record holding its Whisper subsampler's ``whisper_transcript``
    (read as the transcript, and kept as ``meta.json`` too: its url, status and caption)."""
    import json

    from loaders.errors import TranscriptError
    from loaders.transcripts import decode_text

    try:  # the transcript reader's decoding (cp1252 records too); it warns when it reads the transcript
        value = json.loads(decode_text(data, "", warn=False))
    except (ValueError, TranscriptError, RecursionError):
        return False
    return isinstance(value, dict) and isinstance(value.get("whisper_transcript"), dict) and "segments" not in value


def _assemble(
    key: str, found: dict[str, Locator], source: Optional[str], read_json: "callable", skipped: list[dict],
    *, hint: str = "",
) -> Optional[InputSample]:
    """One sample from the members of one key (extension → locator); None (and a skip, its message ending with
    ``hint``) if there is no media."""
    media = [ext for ext in MEDIA_EXTENSIONS if ext in found]
    t = pick_transcript(found, lambda ext: read_json(found[ext]), name=source or key) or ""
    extras: list[tuple[str, Locator]] = []
    if "json" in found and (t != "json" and not is_transcript_json(read_json(found["json"]))
                            or t == "json" and _holds_whisper_transcript(read_json(found["json"]))):
        extras.append(("meta.json", found["json"]))  # video2dataset's metadata (with its transcript), kept (as UTF-8)
    source = source or (found[media[0]].path if media else found[sorted(found)[0]].path)
    if not media:
        _skip(skipped, source, key, "missing_media",
              f"no media member/file for key {key!r} (found: {sorted(found)}); media extensions: {list(MEDIA_EXTENSIONS)}"
              + hint)
        return None
    _, audio_member = sample_media(found)
    if audio_member is not None:  # video2dataset's KEY.mp4 + KEY.m4a: kept (a video-only stream's audio is there)
        extras.append((audio_member, found[audio_member]))
    if len(media) > 1:
        # video2dataset's own layout (KEY.mp4 + KEY.m4a, nothing left out) is said at INFO, as the loader and report
        # read it silently: a WARNING per sample buried real ones; a media left out of the output is a WARNING
        dropped = [ext for ext in media[1:] if ext != audio_member]
        logger.log(logging.WARNING if dropped else logging.INFO,
                   "%s: several media for key %r (%s); measuring %s%s", source, key, media, media[0],
                   f" (and passing {audio_member} through: its audio is measured and loaded when the "
                   f"{media[0]} has no audio stream)" if audio_member else "")
        for ext in media[1:]:  # neither measured nor carried: listed, as a file the output lacks must be
            if ext != audio_member:
                where = found[ext]
                _skip(skipped, f"{where.path}:{where.member}" if where.member else where.path, key, "duplicate_key",
                      f"key {key!r} has several media ({', '.join(media)}): its {media[0]} is measured, this "
                      f"{ext} is not in the output; rename it to keep it as a sample of its own", log=False)
    extras.extend((ext, found[ext]) for ext in _PASS_THROUGH if ext in found)
    if _META_JSON in found and all(ext != _META_JSON for ext, _ in extras):
        extras.append((_META_JSON, found[_META_JSON]))  # a preprocessed shard's metadata (its caption), preprocessed again
    return InputSample(
        key=key,
        media_ext=media[0],
        media=found[media[0]],
        transcript=found[t] if t else None,
        transcript_format=t,
        extras=tuple(sorted(extras)),
        source=source,
    )


def _list_directory(root: str, *, only_stem: Optional[str] = None) -> InputPlan:
    """The samples of a directory (walked recursively); with ``only_stem``, the one sample of the files of ``root``
    itself named ``<only_stem>.<ext>`` (a single media file given as input, with its same-stem sidecars)."""
    groups: dict[str, dict[str, Locator]] = {}
    origin: dict[str, str] = {}
    skipped: list[dict] = _Skipped()
    ignored: collections.Counter = collections.Counter()
    for dirpath, dirnames, filenames in walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".") and only_stem is None]
        for name in filenames:
            stem, dot, suffix = name.rpartition(".")
            ext = suffix.lower()
            tag = stem[len(only_stem) + 1:] if only_stem is not None and stem.startswith(f"{only_stem}.") else ""
            if only_stem is not None and stem != only_stem and not (  # talk.en.vtt, whisper.cpp's talk.mp4.srt
                    tag and (is_language_tagged(f"{tag}.{ext}") or tag.lower() in MEDIA_EXTENSIONS)):
                continue
            if not dot or not stem or name.startswith(".") or ext not in MEDIA_EXTENSIONS + TRANSCRIPT_EXTENSIONS + _PASS_THROUGH:
                ignored[f".{ext}" if dot and stem else name] += not name.startswith(".")
                continue
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(os.path.join(dirpath, stem), root)
            key = _clean_key(rel)
            try:
                status = os.stat(path)
            except OSError as e:  # a broken symbolic link, a file removed while listing
                _skip(skipped, path, key, "read", f"{path}: cannot read it ({e.strerror}"
                      + ("; a symbolic link whose target is missing" if os.path.islink(path) else "") + ")")
                continue
            if not stat.S_ISREG(status.st_mode):  # opening a FIFO blocks until a writer comes: never open one
                _skip(skipped, path, key, "read", f"{path}: not a regular file (a named pipe, socket or device); not read")
                continue
            group = groups.setdefault(key, {})
            if ext in group or origin.setdefault(key, rel) != rel:
                _skip(skipped, path, key, "duplicate_key", f"{path}: key {key!r} already used by {origin[key]!r}; rename one of them")
                continue
            group[ext] = Locator(path=path, stamp=f"{status.st_size}:{status.st_mtime_ns}")

    if +ignored:  # not media, transcripts or captions: not samples, but said (a .mxf folder must not look empty)
        subtitles = sorted(e for e in +ignored if e in (".ass", ".ssa"))  # sidecars a user means as transcripts
        logger.warning("%s: %d file(s) ignored, not media, transcripts or captions: %s; media extensions: %s%s", root,
                       sum(ignored.values()), ", ".join(f"{e} ({n})" for e, n in sorted((+ignored).items())),
                       list(MEDIA_EXTENSIONS),
                       f"; {'/'.join(subtitles)} subtitles are not read as transcripts: convert each to SRT beside its "
                       f"media (`ffmpeg -i KEY{subtitles[0]} KEY.srt`) to measure against it" if subtitles else "")

    def read_json(loc: Locator) -> bytes:
        with open(loc.path, "rb") as handle:
            return handle.read()

    _pair_tagged_sidecars(groups, origin)
    samples = []
    for key in sorted(groups):
        found = groups[key]
        sample = _assemble(key, found, None, read_json, skipped, hint=_tagged_sidecar_hint(key, groups, origin, root))
        if sample is not None:
            samples.append(sample)
    return InputPlan(samples=tuple(samples), skipped=tuple(skipped), kind="directory")


def _pair_tagged_sidecars(groups: dict[str, dict[str, Locator]], origin: dict[str, str]) -> None:
    """Moves language-tagged subtitles (yt-dlp's ``talk.en.vtt`` beside ``talk.mp4``) into their media's group as
    ``en.vtt``, as a shard's ``KEY.en.vtt`` member is: :func:`pick_transcript` then reads the one tagged subtitle of a
    sample with no untagged transcript, and none of several (with its warning), in a directory as in a shard. Beside
    an untagged transcript (``talk.srt``) a tagged one stays a key of its own, listed as ``missing_media``. A transcript
    named after the media file whole (whisper.cpp's ``talk.mp4.srt``, ``talk.wav.json``) is that media's, as
    ``talk.srt`` would be. Whether a media has an untagged transcript of its own is decided before any is moved (a
    ``talk.mp4.srt`` moved first does not turn ``talk.zh.vtt`` into a key of its own)."""
    own = {key for key, found in groups.items() if any(ext in TRANSCRIPT_EXTENSIONS for ext in found)}
    for key in sorted(groups):
        base, dot, tag = origin.get(key, "").rpartition(".")
        media_key = _clean_key(base) if dot and base and tag else ""
        found = groups[key]
        if (not media_key or media_key == key or origin.get(media_key) != base
                or not any(ext in MEDIA_EXTENSIONS for ext in groups.get(media_key, {}))
                or media_key in own):
            continue
        target = groups[media_key]
        if tag.lower() in MEDIA_EXTENSIONS and tag.lower() in target and all(ext in TRANSCRIPT_EXTENSIONS for ext in found):
            target.update(found)  # whisper.cpp's talk.mp4.srt / talk.wav.json: named after the media file whole
            del groups[key]
            continue
        if not all(is_language_tagged(f"{tag}.{ext}") for ext in found):
            continue
        if any(f"{tag}.{ext}" in target for ext in found):  # (a clash of cleaned names: left to the hint's skip)
            continue
        target.update({f"{tag}.{ext}": loc for ext, loc in found.items()})
        del groups[key]


def _tagged_sidecar_hint(key: str, groups: dict[str, dict[str, Locator]], origin: dict[str, str], root: str) -> str:
    """For a key of transcripts only whose stem is a media file's stem plus a tag (yt-dlp's ``talk.en.vtt`` beside
    ``talk.mp4``): a hint naming that media file, which is measured without this transcript (pairing is by the
    whole stem); else ``""``."""
    base, dot, tag = origin.get(key, "").rpartition(".")
    media_key = _clean_key(base) if dot and base and tag else ""
    if not media_key or any(ext in MEDIA_EXTENSIONS for ext in groups[key]):
        return ""
    beside = groups.get(media_key, {})
    media = next((loc.path for ext, loc in beside.items() if ext in MEDIA_EXTENSIONS), None)
    if media is None or any(ext in TRANSCRIPT_EXTENSIONS for ext in beside):  # none, or it has its own transcript
        return ""
    transcripts = [ext for ext in groups[key] if ext in TRANSCRIPT_EXTENSIONS]
    sidecar = os.path.join(root, f"{base}.{transcripts[0] if transcripts else 'srt'}")
    return (f"; hint: {os.path.relpath(media, root)!r} has this stem plus '.{tag}' and is measured without it "
            f"(a transcript pairs with media of the same stem): rename it to {os.path.relpath(sidecar, root)!r} "
            "to measure the media against it")


def _file_identity(stream) -> tuple:
    """``(size, mtime_ns, inode)`` of a local file's open stream; ``()`` for other streams (a pipe, fsspec)."""
    try:
        status = os.fstat(stream.fileno())
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        return ()
    return (status.st_size, status.st_mtime_ns, status.st_ino) if stat.S_ISREG(status.st_mode) else ()


def _check_unchanged(url: str, stream, locators: list[Locator]) -> None:
    """Raises OSError when the shard ``url`` (open as ``stream``) is not the file its members were listed from."""
    listed = next((loc.listed for loc in locators if loc.listed), ())
    now = _file_identity(stream) if listed else ()
    if listed and now != listed:
        changes = [f"{what} {a} -> {b}" for what, a, b in zip(("size", "mtime_ns", "inode"), listed, now) if a != b]
        names = sorted(loc.member for loc in locators)
        raise OSError(f"{url}: the shard changed after it was listed ({', '.join(changes) or 'not a file now'}): "
                      f"member(s) {names} are not read from another file at the offsets listed; hint: let whatever "
                      "writes the shard finish, then preprocess it into a fresh output directory (a rerun into this "
                      "one redoes the samples of every shard that changed)")


def _seekable_plain_tar(stream) -> bool:
    """True when members can be read by seeking: a seekable stream that is not gzip/bzip2/xz compressed."""
    try:
        if not stream.seekable():
            return False
        head = stream.read(6)
        stream.seek(0)
    except (AttributeError, OSError, ValueError):
        return False
    return not head.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ"))


class _Skipped(list):
    """The inputs refused while planning (dicts, as ``skipped.jsonl`` rows), with the log that caps their warnings at
    ``loaders.errors.WARNINGS_PER_REASON`` per reason (3,000 stray transcripts: 6 lines, not 3,000)."""

    def __init__(self) -> None:
        super().__init__()
        self.skip_log = SkipLog(where="skipped.jsonl", scope="while planning")


def _skip(skipped: list[dict], source: str, key: str, reason: str, message: str, *, log: bool = True) -> None:
    """Record an input refused at planning time (logged once unless the shard reader has logged it)."""
    if log:
        line = f"{source}: key {key!r} skipped ({reason}): {message}"
        skip_log = getattr(skipped, "skip_log", None)
        if skip_log is None:
            logger.warning("%s", line)
        else:
            skip_log.skipped(logger, reason, line)
    skipped.append({"input": source, "key": key, "reason": reason, "message": message})


def _shard_problem(skipped: list[dict], url: str, key: str, reason: str, message: str, on_error: OnError) -> None:
    if on_error == "raise":
        raise SampleError(message, shard=url, key=key, reason=reason)
    _skip(skipped, url, key, reason, message)


def _tar_locators(url: str, stream: IO[bytes], *, seekable: bool,
                  max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES) -> Iterator[TarMember]:
    """The members of a tar as ``loaders._shards.tar_members`` flags them, but each good member's ``data`` is
    its :class:`Locator` instead of its bytes: a seekable plain tar is read header by header (the media
    bytes are skipped by seeking, a member running past the end of the file is ``truncated``); a stream
    is read through in chunks to find where it ends."""
    total = -1
    if seekable:
        total = stream.seek(0, os.SEEK_END)
        stream.seek(0)
    listed = _file_identity(stream)
    shard_stamp = f":{listed[0]}:{listed[1]}" if listed else ""  # the shard's size and mtime_ns (see Locator.stamp)

    def stamp_of(member: tarfile.TarInfo) -> str:
        return f"{member.offset_data}:{member.size}{shard_stamp}"

    headers_inside: dict[str, Optional[tuple[int, str]]] = {}
    """Member name → the start of a tar header found in its data (streamed members; kept for the last one only)."""

    def locate(archive: tarfile.TarFile, member: tarfile.TarInfo) -> tuple[Locator, int]:
        offset = member.offset_data if seekable else -1
        if seekable and member.issparse():
            # A sparse member (GNU tar -S) is stored without its holes: `size` bytes at its offset are its stored
            # pieces and the headers after it, not its content. It is read back by streaming, as tarfile fills the
            # holes (adv62: preprocess wrote those bytes as the member, or called it truncated near the shard's end).
            stored = sum(length for _, length in member.sparse)
            available = member.size if member.offset_data + stored <= total else max(0, total - member.offset_data)
            offset = -1
        elif seekable:
            available = max(0, min(member.size, total - member.offset_data))
        else:
            handle, available, found = archive.extractfile(member), 0, None
            while handle is not None and (chunk := handle.read(_READ_CHUNK_BYTES)):  # 1 MiB: whole 512-byte blocks
                if found is None and (inside := find_tar_header(chunk)) is not None:
                    found = (available + inside[0], inside[1])
                available += len(chunk)
            headers_inside.clear()
            headers_inside[member.name] = found
        locator = Locator(path=url, offset=offset, size=member.size, stream_offset=member.offset_data,
                          member=member.name, stamp=stamp_of(member), listed=listed)
        return locator, available  # group_by_key only looks at names and problems, never at data

    def header_inside(archive: tarfile.TarFile, member: tarfile.TarInfo, locator: Locator) -> Optional[tuple[int, str]]:
        """The start of a tar header in ``member``'s data, as the loader finds it in the bytes it holds
        (``scan_tar``): read back here, after a damaged header."""
        if not seekable:
            return headers_inside.get(member.name)
        stream.seek(member.offset_data)
        done = 0
        while done < member.size and (chunk := stream.read(min(_READ_CHUNK_BYTES, member.size - done))):
            if (inside := find_tar_header(chunk)) is not None:
                return done + inside[0], inside[1]
            done += len(chunk)
        return None

    yield from scan_tar(stream, "r:" if seekable else "r|*", locate, max_member_bytes=max_member_bytes,
                        header_inside=header_inside, url=url)


def _scan_shard(url: str, skipped: list[dict], *, on_error: OnError = "skip",
                left_out: Optional[collections.Counter] = None) -> dict[str, dict[str, Locator]]:
    """Key → extension → locator for one shard, with the loader's drop rules (see the module docstring); ``left_out``
    counts ``(url, extension)`` of the members of its samples that the output does not carry (``KEY.cls``…).

    Raises:
        SampleError: a shard-level problem with ``on_error="raise"``.
    """
    groups: dict[str, dict[str, Locator]] = {}
    try:
        stream = open_shard(url)
    except (OSError, ValueError) as e:
        _shard_problem(skipped, url, "", "open", f"cannot open shard {url}: {e}", on_error)
        return groups
    details: dict[str, str] = {}

    def noted(members: Iterator[TarMember]) -> Iterator[TarMember]:
        for member in members:
            if member.problem:
                details.setdefault(split_key(member.name)[0], member.message)
            yield member

    def report(shard: str, key: str, reason: str) -> None:  # group_by_key has logged it
        detail = details.get(key, "the key (or one of its extensions) appears again: the first copy is kept, this one "
                                  "skipped; a sample's members must be adjacent in the tar (`tar --sort=name`)")
        if reason == "stray_member":  # a member, not the sample: the sample is measured and written without it
            _skip(skipped, shard, key, reason, f"{shard}: a member of key {key!r} after other keys' members was dropped "
                  f"(stray_member); sample {key!r} is in the output without it; a sample's members must be adjacent in "
                  "the tar (`tar --sort=name`)", log=False)
            return
        what = "repeated" if key not in details and reason == "duplicate_key" else "dropped"
        sample = f"sample {key!r} " if key else ""  # no key: no sample had started (a file that is not a tar)
        _skip(skipped, shard, key, reason, f"{shard}: {sample}{what} ({reason}): {detail}", log=False)

    known = MEDIA_EXTENSIONS + TRANSCRIPT_EXTENSIONS + _PASS_THROUGH + (_META_JSON,)
    members_left_out: collections.Counter = collections.Counter()  # kept samples' members the output does not carry
    with stream:
        members = noted(name_pipe_failures(_tar_locators(url, stream, seekable=_seekable_plain_tar(stream)), stream, url))
        try:
            for sample in group_by_key(members, url=url, on_error=on_error, report=report,
                                       skip_log=getattr(skipped, "skip_log", None)):
                found = {ext: loc for ext, loc in sample.items() if ext in known}
                dotted = [ext for ext in sample if "." in ext and ext not in known]
                # whisper.cpp's `KEY.mp4.srt` (named after a media member whole): _assemble's pick_transcript reads
                # it as the loader does (a `KEY.wav.json` when it holds a transcript)
                whole = [ext for ext in dotted if ext.count(".") == 1 and ext.partition(".")[0] in found
                         and ext.partition(".")[0] in MEDIA_EXTENSIONS and ext.partition(".")[2] in TRANSCRIPT_EXTENSIONS]
                found.update({ext: sample[ext] for ext in whole})
                # A language-tagged subtitle (`KEY.en.srt`: extension `en.srt`), read as the loader reads it.
                tagged = None if any(not ext.endswith("json") for ext in whole) else pick_transcript(
                    [ext for ext in dotted if ext not in whole], lambda ext: b"", name=f"{url}:{sample['__key__']}")
                if tagged is not None and found:
                    found[tagged] = sample[tagged]
                if found:
                    groups[sample["__key__"]] = found
                    members_left_out.update(ext for ext in sample if not ext.startswith("__") and ext not in found
                                            and ext not in _REWRITTEN)
                else:  # e.g. only `b.v2.mp4`: its extension is `v2.mp4` (the loader reports it too)
                    exts = sorted(ext for ext in sample if not ext.startswith("__"))
                    _skip(skipped, url, sample["__key__"], "missing_media",
                          f"{url}: sample {sample['__key__']!r} has no media member (extensions {exts}; media: "
                          f"{list(MEDIA_EXTENSIONS)}); hint: the extension starts at the first dot of the member name")
        except ShardError as e:
            if e.reason == "open" and not e.key:  # a `pipe:` command that failed or stalled before its first byte
                _shard_problem(skipped, url, "", "open", f"{url}: {e.message}", on_error)
                return groups
            raise SampleError(e.message, shard=e.shard, key=e.key, reason=e.reason) from None
    if left_out is not None:
        left_out.update({(url, ext): n for ext, n in members_left_out.items()})
    if getattr(stream, "streamed", False):
        # an HTTP server without range requests: the listing went on as one stream (loaders._remote), and so must the
        # read-back (avalign.preprocess._streamed); seeking to each sample streamed the shard again from its start
        # (adv67: quadratic in the shard's size)
        groups = {key: {ext: dataclasses.replace(loc, offset=-1) for ext, loc in found.items()}
                  for key, found in groups.items()}
    return groups


def _list_shards(urls: list[str], *, on_error: OnError = "skip") -> InputPlan:
    skipped: list[dict] = _Skipped()
    by_key: dict[str, tuple[str, str, dict[str, Locator]]] = {}
    left_out: collections.Counter = collections.Counter()
    for url in urls:
        for raw_key, found in _scan_shard(url, skipped, on_error=on_error, left_out=left_out).items():
            key = _clean_key(raw_key)
            if key in by_key:
                first_url, first_raw, _ = by_key[key]
                if first_raw == raw_key:
                    message = f"{url}: key {raw_key!r} already seen in {first_url}; the first is used"
                else:  # two keys that become one output key ('clip 1', 'clip_1'): say so (adv66)
                    message = (f"{url}: key {raw_key!r} is written as {key!r} (output keys keep letters, digits, '_' "
                               f"and '-'), as key {first_raw!r} of {first_url} is; the first is used; hint: rename one "
                               "of them in the input shards")
                _shard_problem(skipped, url, raw_key, "duplicate_key", message, on_error)
                continue
            by_key[key] = (url, raw_key, found)
    if left_out:  # said once, as a directory's ignored files are: a dataset's labels or metadata must not vanish unsaid
        by_ext = collections.Counter()
        for (_, ext), n in left_out.items():
            by_ext[ext] += n
        renamed = [ext for ext in sorted(by_ext) if _transcript_under_another_name(ext)]
        hint = ("; a transcript under another name is not read (a sample's transcript is KEY.json, KEY.srt, KEY.vtt, "
                "KEY.TextGrid or KEY.stm, or one language-tagged subtitle such as KEY.en.srt): if "
                + ", ".join(f".{ext}" for ext in renamed) + " holds the samples' transcript, name it KEY."
                + renamed[0].rpartition(".")[2].replace("textgrid", "TextGrid") + " in the input shards") if renamed else ""
        logger.warning("%d member(s) of %d shard(s) not written to the output shards (not media, transcripts or "
                       "captions): %s; first in %s; keep the input shards for them%s", sum(by_ext.values()),
                       len({url for url, _ in left_out}), ", ".join(f".{ext} ({n})" for ext, n in sorted(by_ext.items())),
                       next(iter(left_out))[0], hint)

    def read_json(loc: Locator) -> bytes:
        return read_members([loc])[0]

    samples = []
    for key in sorted(by_key):
        url, raw_key, found = by_key[key]
        sample = _assemble(key, found, f"{url}:{raw_key}", read_json, skipped)
        if sample is not None:
            samples.append(sample)
    return InputPlan(samples=tuple(samples), skipped=tuple(skipped), kind="shards", shard_urls=tuple(urls))


def _directory_of_shards(root: str) -> list[str]:
    """The shards of ``root``'s top level (sorted; names ending in one of ``avcore.SHARD_SUFFIXES``: plain or
    gzip/bzip2/xz-compressed tars, as the shard reader opens them) when it holds some and no media file anywhere
    below it (a media file would be a sample of the directory: nothing is dropped); else []. An entry with a shard's
    name that is not a regular file (a directory ``x.tar``) is listed too: the shard reader skips it as ``open``,
    counted and named, where leaving it out would say nothing (adv61: ``.tar.gz`` shards were left out silently)."""
    names = [n for n in sorted(os.listdir(root)) if not n.startswith(".")]
    tars = [os.path.join(root, n) for n in names if n.lower().endswith(SHARD_SUFFIXES)]
    if not tars:
        return []
    for dirpath, dirnames, filenames in walk(root):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")]
        if any(n.rpartition(".")[2].lower() in MEDIA_EXTENSIONS for n in filenames if not n.startswith(".")):
            return []
    others = [n for n in names if not n.lower().endswith(SHARD_SUFFIXES)]
    if others:
        logger.info("%s: %d top-level entr%s not read (not shards: names ending %s): %s%s", root, len(others),
                    "y" if len(others) == 1 else "ies", "/".join(SHARD_SUFFIXES), ", ".join(others[:5]),
                    " …" if len(others) > 5 else "")
    return tars


def list_inputs(source: str, *, on_error: OnError = "skip") -> InputPlan:
    """Find the samples of ``source``: a directory, one media file, a tar path, a brace pattern or an fsspec/pipe URL.

    A directory whose top level holds shards (``.tar``, or compressed: ``avcore.SHARD_SUFFIXES``), and that holds no
    media file at any depth, is read as those shards (sorted by name).

    One media file (``talks/a.mp4``) is read as a directory holding only it and its same-stem sidecars
    (``talks/a.srt``…): one sample, keyed by its stem (``a``). A transcript or caption file alone is refused.

    Args:
        source: the input.
        on_error: ``"skip"`` lists shard-level problems in ``InputPlan.skipped`` (each logged once);
            ``"raise"`` raises at the first one.

    Raises:
        FileNotFoundError: a local input that does not exist.
        PermissionError: a directory that cannot be listed.
        ValueError: an empty pattern, a transcript or caption file given alone, or a bad ``on_error``.
        SampleError: a shard-level problem (hostile or duplicate member, truncated tar, shard that cannot be
            opened) with ``on_error="raise"``; it names the shard, the sample key and the reason.
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    if not isinstance(source, (str, os.PathLike)) or not os.fspath(source):
        raise ValueError(f"input must be a directory or shard URL(s), got {source!r}")
    source = os.fspath(source)
    if os.path.isdir(source):
        if not os.access(source, os.R_OK | os.X_OK):
            raise PermissionError(f"input directory {source!r} is not readable; hint: check its permissions")
        shards = _directory_of_shards(source)
        if shards:
            logger.info("%s: no media files, %d shard(s): reading the shards", source, len(shards))
            return _list_shards(shards, on_error=on_error)
        return _list_directory(source)
    if os.path.isfile(source):
        stem, dot, suffix = os.path.basename(source).rpartition(".")
        if dot and stem and suffix.lower() in MEDIA_EXTENSIONS:  # one clip: a directory input of one sample
            plan = _list_directory(os.path.dirname(source) or ".", only_stem=stem)
            return dataclasses.replace(plan, kind="file")
        if dot and stem and suffix.lower() in TRANSCRIPT_EXTENSIONS + _PASS_THROUGH:
            raise ValueError(
                f"input {source!r} is a transcript or caption file, not media; hint: give the media file (its "
                "same-stem transcript is picked up), a directory of media files, or WebDataset shards")
    if os.path.exists(source) and not os.path.isfile(source):  # a FIFO, socket, device: opening may block forever
        raise ValueError(f"input {source!r} is not a regular file or a directory (a named pipe, socket or device); "
                         "hint: give a directory of media files, a media file or WebDataset shards; a shard from a stream as "
                         "'pipe:COMMAND' (preprocess reads a shard twice, which standard input cannot give)")
    urls = expand_shard_urls(source)
    for url in urls:
        local = url[len("file://"):] if url.startswith("file://") else url
        if "://" not in local and not local.startswith("pipe:") and not os.path.exists(local):
            raise FileNotFoundError(
                f"input {url!r} does not exist; hint: pass a directory of media files or WebDataset shards "
                "(path, brace pattern like data-{000..009}.tar, or an fsspec URL)"
            )
    return _list_shards(urls, on_error=on_error)


def _transcript_under_another_name(ext: str) -> bool:
    """Whether a member extension left out could be a transcript named so that it is not read: a transcript format
    after a tag that is not a record's (``whisperx.json``, ``whisper.srt``; not ``info.json``, yt-dlp's metadata)."""
    tag, dot, last = ext.lower().rpartition(".")
    if last != "json" and re.fullmatch(r"[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*", tag):
        return False  # a language-tagged subtitle (`en.srt`): read when it is the only one, else warned as ambiguous
    return bool(dot) and last in ("json", "srt", "vtt", "textgrid", "stm") and tag.rpartition(".")[2] not in (
        "align", "frames", "meta", "metadata", "info", "transcript")


def read_members(locators: list[Locator]) -> list[bytes]:
    """The bytes of each locator, in order; members of one shard are read with one open of it, or, for a shard that
    cannot seek (compressed, ``pipe:``), on from where this process last read it (``avalign.preprocess._streamed``)."""
    out: list[Optional[bytes]] = [None] * len(locators)
    by_shard: dict[str, list[int]] = {}
    for i, loc in enumerate(locators):
        if not loc.member:
            with open(loc.path, "rb") as handle:
                out[i] = handle.read()
        else:
            by_shard.setdefault(loc.path, []).append(i)
    for url, indices in by_shard.items():
        listed = [locators[i] for i in indices]
        if not all(loc.offset >= 0 for loc in listed):
            # compressed, pipe:, HTTP without ranges: read on from where this process's last read of it stopped
            found = read_streamed(url, [(loc.member, loc.stream_offset) for loc in listed],
                                  lambda stream: _check_unchanged(url, stream, listed))
            for i, data in zip(indices, found):
                out[i] = data
            continue
        with open_shard(url) as stream:
            _check_unchanged(url, stream, listed)
            for i in sorted(indices, key=lambda j: locators[j].offset):
                stream.seek(locators[i].offset)
                data = stream.read(locators[i].size)
                if len(data) != locators[i].size:
                    raise OSError(f"{url}: member {locators[i].member!r} is truncated ({len(data)} of {locators[i].size} bytes)")
                out[i] = data
    return [b if b is not None else b"" for b in out]
