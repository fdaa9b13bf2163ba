"""What ``avalign report`` reads: preprocessed shards, raw WebDataset shards, or a media directory.

Every input becomes a :class:`ClipInput` (something to report) or a :class:`Skipped` (why not),
so that a corrupt shard, a stray file or a broken ``align.json`` is counted (``run_report(on_error="raise")``
stops at the first instead). Reasons are the shared codes of ``loaders.errors.REASONS``.

    INPUT                                   →  ClipInput
    dir/clip.mp4 + dir/clip.srt             →  key "clip", media path, transcript path
    shard.tar: clip.mp4 clip.json           →  key "clip", media bytes, transcript bytes (raw: measured)
    shard.tar: clip.align.json [clip.mp4]   →  key "clip", align record (preprocessed: no decoding)
    out/skipped.jsonl (preprocess output)   →  the inputs preprocess skipped, as Skipped records
                                               (read when INPUT is the output directory itself)
"""
from __future__ import annotations

import glob
import json
import logging
import os
import tarfile
from dataclasses import dataclass
from typing import Iterator, Literal, Optional, Union

from avalign._walk import walk
from avcore import (ALIGN_JSON, AUDIO_EXTENSIONS, CAPTION_EXTENSIONS, MEDIA_EXTENSIONS, SHARD_SUFFIXES, TRANSCRIPT_EXTENSIONS,
                    SampleError, read_align_json, sample_media)
from loaders.media import MediaSource
from loaders.shards import expand_shard_urls
from loaders.transcripts import is_language_tagged, pick_transcript

logger = logging.getLogger(__name__)

__all__ = ["ClipInput", "Skipped", "count_clips", "iter_inputs", "preprocess_skips"]

"""Media file extensions recognised in directories and shards (lower case)."""
_PREPROCESSED_KEYS = ("align.json", "frames.json", "transcript.json")


@dataclass(frozen=True)
class ClipInput:
    """One clip to report on."""

    key: str
    """The sample key (shard key or file stem)."""
    shard: str
    """Where it came from: the shard URL or the directory."""
    media: Optional[MediaSource] = None
    """Media path or bytes; None when a preprocessed sample carries no media."""
    media_name: str = ""
    """Label for messages (``shard:key.mp4`` or the path)."""
    transcript: Optional[MediaSource] = None
    """Transcript path or bytes, if any."""
    transcript_name: str = ""
    """Label of the transcript, with its extension so the format can be guessed."""
    align: Optional[dict] = None
    """The parsed ``align.json`` record of a preprocessed sample (the ``measure`` schema + ``config``)."""
    audio_media: Optional[MediaSource] = None
    """A sample's separate audio (member or file ``KEY.m4a``, ``KEY.wav``… beside a video), measured when the media
    has no audio stream, as the loader and ``preprocess`` do; None otherwise."""
    audio_name: str = ""
    """Label of ``audio_media`` (``shard:key.m4a``, or the file's path)."""


@dataclass(frozen=True)
class Skipped:
    """An input that was not reported on, and why."""

    key: str
    """Sample key or file name ("" for a whole shard)."""
    shard: str
    """Shard URL or directory."""
    reason: str
    """Reason code from ``loaders.errors.REASONS`` (``decode``, ``missing_audio``, ``too_large``, ``transcript``,
    ``missing_media``, ``align_json``, ``truncated``, ``unsafe_name``, ``duplicate_key``…; ``unknown_extension``
    for a stray file in a media directory)."""
    message: str = ""
    """Human-readable detail."""
    from_preprocess: bool = False
    """Read from preprocess's ``skipped.jsonl`` (an input of that run, not a clip of this one)."""

    def to_json(self) -> dict:
        return {"key": self.key, "shard": self.shard, "reason": self.reason, "message": self.message}


Item = Union[ClipInput, Skipped]
OnError = Literal["skip", "raise"]


def _skipped(key: str, shard: str, reason: str, message: str) -> Skipped:
    """A skip record, logged once (stray files at INFO: they are not inputs)."""
    level = logging.INFO if reason == "unknown_extension" else logging.WARNING
    logger.log(level, "%s: %r skipped (%s): %s", shard, key, reason, message)
    return Skipped(key, shard, reason, message)


def _is_shard_spec(path: str) -> bool:
    return (path.lower().endswith(SHARD_SUFFIXES) or "{" in path or "::" in path or path.startswith("pipe:")
            or "://" in path)


_PREPROCESS_FILES = ("state.jsonl", "manifest.jsonl", "skipped.jsonl")
"""Files ``avalign preprocess`` writes next to its shards: a directory holding one is its output, even with no shard."""


def iter_inputs(path: str, *, on_error: OnError = "skip", exclude_dir: Optional[str] = None) -> Iterator[Item]:
    """Clips (or skip records) of ``path``: a media directory, a single media file, a directory of ``.tar``
    shards (with preprocess's ``skipped.jsonl``: preprocess output, read even when it holds no shard), or a shard
    spec (path, brace pattern, fsspec URL, ``pipe:``).

    Args:
        path: the input.
        on_error: passed to the shard reader: ``"raise"`` makes shard-level problems (hostile or duplicate
            members, truncated tar, a shard that cannot be opened) raise instead of yielding a skip record.
        exclude_dir: a directory inside a media directory ``path`` that is not read (the report's own ``--out``:
            its ``report.json`` and PNGs are no inputs of the next run).

    Raises:
        FileNotFoundError: ``path`` is a local path that does not exist.
        SampleError: a shard-level problem with ``on_error="raise"`` (shard, key and reason attached).
    """
    if os.path.isdir(path):
        tars = _shards_of(path)
        files = _files(path, exclude_dir=exclude_dir)
        media = [f for f in files if _ext(f) in MEDIA_EXTENSIONS]
        preprocessed = any(os.path.isfile(os.path.join(path, name)) for name in _PREPROCESS_FILES)
        if (tars or preprocessed) and not media:  # shards, or preprocess output whose every sample was skipped
            yield from _shard_inputs(tars, on_error=on_error) if tars else ()
            yield from preprocess_skips(path)
        else:
            yield from _directory_inputs(path, files)
        return
    if _is_shard_spec(path):
        local = "://" not in path and not path.startswith("pipe:") and "::" not in path
        if local and "{" not in path and not os.path.exists(path):
            raise FileNotFoundError(f"input not found: {path!r}; hint: give a media directory, a .tar shard or a brace pattern")
        if local and "{" in path and not any(os.path.exists(url) for url in expand_shard_urls(path)):
            # Some shards of a pattern may be missing (each is a counted skip); none found is a wrong input.
            raise FileNotFoundError(f"no file matches the pattern {path!r}; hint: check the directory and the brace "
                                    "range, e.g. shards/shard-{000000..000009}.tar")
        yield from _shard_inputs(path, on_error=on_error)
        return
    if os.path.isfile(path):
        stem = os.path.splitext(path)[0]
        siblings = {_ext(f): f for f in sorted(glob.glob(glob.escape(stem) + ".*")) if os.path.splitext(f)[0] == stem}
        _, audio = sample_media({_ext(path), *(e for e in siblings if e in AUDIO_EXTENSIONS)})  # its KEY.m4a, as preprocess
        yield from _directory_clip(os.path.dirname(path) or ".", stem, path, siblings[audio] if audio else None)
        return
    raise FileNotFoundError(f"input not found: {path!r}; hint: give a media directory, a .tar shard or a brace pattern")


def preprocess_skips(directory: str) -> Iterator[Skipped]:
    """The inputs ``avalign preprocess`` skipped, from ``directory/skipped.jsonl`` (none when the file is absent).

    Each line ``{"input", "key", "reason", "message"}`` becomes a :class:`Skipped` whose ``shard`` is the
    original input; a line that is not such an object is itself listed (reason ``error``, with its line
    number), so a damaged list is visible rather than silently short.
    """
    path = os.path.join(directory, "skipped.jsonl")
    if not os.path.isfile(path):
        return
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or not row.get("reason"):
                    raise ValueError("not an object with a reason")
            except ValueError as e:
                yield _skipped("", path, "error", f"line {number} of skipped.jsonl is unreadable: {e}")
                continue
            yield Skipped(str(row.get("key", "")), str(row.get("input", "")), str(row["reason"]), str(row.get("message", "")),
                          from_preprocess=True)


def count_clips(path: str) -> Optional[int]:
    """How many clips :func:`iter_inputs` will yield for ``path`` (for a progress total), reading directory
    listings and tar headers only; None when it cannot tell cheaply (remote or piped shards, patterns)."""
    try:
        if os.path.isdir(path):
            tars = _shards_of(path)
            media = [f for f in _files(path) if _ext(f) in MEDIA_EXTENSIONS]
            if media or not tars:
                return len({os.path.splitext(f)[0] for f in media})
            if not all(t.lower().endswith(".tar") and os.path.isfile(t) for t in tars):
                return None  # a compressed shard is read through to list its headers: not cheap
            return len(set().union(*(_tar_keys(t) for t in tars)))  # a key in two shards is one clip (duplicate_key)
        if os.path.isfile(path):
            return len(_tar_keys(path)) if path.lower().endswith(".tar") else 1
    except (OSError, tarfile.TarError):
        return None
    return None


def _shards_of(directory: str) -> list[str]:
    """The shards at the top level of ``directory`` (names ending in one of ``avcore.SHARD_SUFFIXES``, not hidden),
    sorted: the rule ``avalign preprocess`` reads a directory of shards by."""
    return sorted(os.path.join(directory, n) for n in os.listdir(directory)
                  if not n.startswith(".") and n.lower().endswith(SHARD_SUFFIXES))


def _tar_keys(path: str) -> set[str]:
    """Keys of a local tar that have a media or an ``align.json`` member (headers only)."""
    keys = set()
    with tarfile.open(path) as tar:
        for name in tar.getnames():
            base = os.path.basename(name)
            key, _, ext = base.partition(".")
            if ext.lower() in MEDIA_EXTENSIONS or ext == "align.json":
                keys.add(os.path.join(os.path.dirname(name), key))
    return keys


def _ext(path: str) -> str:
    return os.path.splitext(path)[1].lstrip(".").lower()


def _files(directory: str, *, exclude_dir: Optional[str] = None) -> list[str]:
    """The files under ``directory``, hidden ones (and those of hidden directories) left out, as ``preprocess`` lists
    them: macOS's AppleDouble ``._clip.mp4`` was a ``decode`` skip of every clip, and a media file under
    ``.ipynb_checkpoints/`` made a directory of shards a media directory (BENCHMARKS.md, adv64). ``exclude_dir`` (the
    report's ``--out``) is left out too."""
    excluded = os.path.realpath(exclude_dir) if exclude_dir else None
    out = []
    for root, dirnames, names in walk(directory):
        dirnames[:] = [d for d in dirnames if not d.startswith(".")
                       and os.path.realpath(os.path.join(root, d)) != excluded]
        out.extend(os.path.join(root, n) for n in names if not n.startswith("."))
    return out


def _sidecar(stem: str) -> Optional[str]:
    """The transcript of media ``stem``: ``stem.srt`` …, else one named after the media file whole (whisper.cpp's
    ``stem.mp4.srt``), else its one language-tagged subtitle (yt-dlp's ``stem.en.vtt``), chosen by
    :func:`pick_transcript` as a shard's members are (and as ``preprocess`` does)."""
    candidates, whole = {}, {}
    for f in glob.glob(glob.escape(stem) + ".*"):
        rest = f[len(stem) + 1:]
        if os.path.splitext(f)[0] == stem:
            candidates[_ext(f)] = f
        elif os.sep in rest:
            continue
        elif rest.partition(".")[0].lower() in MEDIA_EXTENSIONS and os.path.isfile(os.path.splitext(f)[0]):
            whole[_ext(f)] = f  # whisper.cpp's talk.mp4.srt: named after the media file whole, read as talk.srt
        elif is_language_tagged(rest):
            candidates[rest.rpartition(".")[0] + "." + _ext(f)] = f  # en.vtt (TextGrid: en.textgrid)
    if not any(ext in TRANSCRIPT_EXTENSIONS for ext in candidates):
        candidates.update(whole)

    def read(ext: str) -> bytes:
        with open(candidates[ext], "rb") as f:
            return f.read()

    ext = pick_transcript(candidates, read, name=stem)
    return candidates[ext] if ext else None


def _directory_clip(directory: str, stem: str, media_path: str, audio_path: Optional[str] = None) -> Iterator[Item]:
    transcript = _sidecar(stem)
    yield ClipInput(
        key=os.path.relpath(stem, directory),
        shard=directory,
        media=media_path,
        media_name=media_path,
        transcript=transcript,
        transcript_name=transcript or "",
        audio_media=audio_path,
        audio_name=audio_path or "",
    )


def _directory_inputs(directory: str, files: list[str]) -> Iterator[Item]:
    media_files: dict[str, dict[str, str]] = {}  # stem -> extension -> the first file (talk.MP4 beside talk.mp4: one)
    for f in files:
        if _ext(f) in MEDIA_EXTENSIONS:
            media_files.setdefault(os.path.splitext(f)[0], {}).setdefault(_ext(f), f)
    media_stems = set(media_files)
    for f in files:
        ext, stem = _ext(f), os.path.splitext(f)[0]
        if ext in MEDIA_EXTENSIONS:
            found = media_files[stem]
            media, audio = sample_media(found)
            if f == found[media]:
                yield from _directory_clip(directory, stem, f, found[audio] if audio else None)
            elif f != found.get(audio):  # the separate audio is its video's; any other is not measured
                yield _skipped(os.path.relpath(f, directory), directory, "duplicate_key",
                               f"key {os.path.relpath(stem, directory)!r} has several media "
                               f"({', '.join(sorted(os.path.basename(p) for p in found.values()))}): its "
                               f"{os.path.basename(found[media])} is measured, this file is not; rename it to keep it "
                               "as a clip of its own")
        elif ext in TRANSCRIPT_EXTENSIONS and stem in media_stems:
            continue  # a sidecar, reported with its media
        elif ext in TRANSCRIPT_EXTENSIONS and stem.rpartition(".")[0] in media_stems and (
                _sidecar(stem.rpartition(".")[0]) == f or _one_of_its_tagged_subtitles(f, files)):
            # the media's transcript (its one language-tagged subtitle talk.en.vtt, or talk.mp4.srt), or one of its
            # several tagged subtitles: none is read, and pick_transcript's warning names them and how to choose, as
            # preprocess says it (a shard's rule)
            continue
        elif ext in CAPTION_EXTENSIONS and stem in media_stems:
            continue  # video2dataset's KEY.txt: its media's clip-level caption, read by preprocess and the loader
        elif ext in TRANSCRIPT_EXTENSIONS:
            yield _skipped(os.path.relpath(f, directory), directory, "missing_media", "transcript without a media file of "
                           f"the same stem{_tagged_sidecar_hint(f, files, media_stems, directory)}")
        else:
            hint = (f"; ASS/SSA subtitles are not read as transcripts: convert it to SRT beside its media (`ffmpeg -i "
                    f"{os.path.relpath(f, directory)} {os.path.relpath(stem, directory)}.srt`)" if ext in ("ass", "ssa") else "")
            yield _skipped(os.path.relpath(f, directory), directory, "unknown_extension", f"not media or a transcript: .{ext}{hint}")


def _one_of_its_tagged_subtitles(path: str, files: list[str]) -> bool:
    """Whether ``path`` is a language-tagged subtitle (``talk.de.vtt``) of a media file (``talk.mp4``) that has no
    untagged transcript: a candidate of that media, as ``preprocess`` pairs it (the media's stem is in ``files``)."""
    stem = os.path.splitext(path)[0]
    base = stem.rpartition(".")[0]
    if not is_language_tagged(f"{stem[len(base) + 1:]}.{_ext(path)}"):
        return False
    return not any(os.path.splitext(f)[0] == base and _ext(f) in TRANSCRIPT_EXTENSIONS for f in files)


def _tagged_sidecar_hint(path: str, files: list[str], media_stems: set[str], directory: str) -> str:
    """For a transcript whose stem is a media file's stem plus a tag (yt-dlp's ``talk.en.vtt`` beside ``talk.mp4``),
    when that media has no transcript of its own: a hint naming the media and the name to rename to (as ``avalign
    preprocess`` says it); else ``""``."""
    stem = os.path.splitext(path)[0]
    base, dot, tag = stem.rpartition(".")
    if not (dot and base and tag) or base not in media_stems:
        return ""
    beside = [f for f in files if os.path.splitext(f)[0] == base]
    if any(_ext(f) in TRANSCRIPT_EXTENSIONS for f in beside):  # it has its own transcript
        return ""
    media = next(f for f in beside if _ext(f) in MEDIA_EXTENSIONS)
    return (f"; hint: {os.path.relpath(media, directory)!r} has this stem plus '.{tag}' and is measured without it (a "
            f"transcript pairs with media of the same stem): rename it to "
            f"{os.path.relpath(base, directory) + '.' + _ext(path)!r} to measure the media against it")


def _shard_inputs(urls, *, on_error: OnError = "skip") -> Iterator[Item]:
    from loaders.shards import ShardError, shard_samples
    from loaders.errors import SampleError

    problems: list[Skipped] = []

    def report(shard: str, name: str, reason: str) -> None:  # the shard reader has logged it
        problems.append(Skipped(name, shard, reason, f"shard reader: {reason}"))

    try:
        for sample in shard_samples(urls, on_error=on_error, report=report):
            while problems:
                yield problems.pop(0)
            yield _sample_input(sample)
    except ShardError as e:
        raise SampleError(e.message, shard=e.shard, key=e.key, reason=e.reason) from None
    yield from problems


def _sample_input(sample: dict) -> Item:
    key, url = sample["__key__"], sample.get("__url__", "")
    media_ext, audio_ext = sample_media(sample)
    media = sample.get(media_ext) if media_ext else None
    align = None
    if ALIGN_JSON in sample:
        try:
            align = read_align_json(sample[ALIGN_JSON], key=key, shard=url)
        except SampleError as e:
            return _skipped(key, url, e.reason, e.message)
    if align is None and media is None:
        members = sorted(k for k in sample if not k.startswith("__"))
        return _skipped(key, url, "missing_media", f"no media member (has {members}); expected one of {list(MEDIA_EXTENSIONS)}")
    transcript_ext = pick_transcript(sample, sample.__getitem__)  # a video2dataset key.json (metadata) is not one
    return ClipInput(
        key=key,
        shard=url,
        media=media,
        media_name=f"{url}:{key}.{media_ext}" if media_ext else "",
        transcript=sample.get(transcript_ext) if transcript_ext else None,
        transcript_name=f"{key}.{transcript_ext}" if transcript_ext else "",
        align=align,
        audio_media=sample[audio_ext] if audio_ext else None,
        audio_name=f"{url}:{key}.{audio_ext}" if audio_ext else "",
    )
