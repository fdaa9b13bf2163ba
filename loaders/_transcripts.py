"""``read_transcript``: SRT, WebVTT, Whisper-style JSON, Praat TextGrid and NIST STM into one ``Transcript``.

Times are kept on the transcript's own clock (seconds, as stamped); the aligner moves them onto the
video timeline. Every span and word is a half-open interval ``[start_seconds, stop_seconds)``::

    file:   |--- span "hello world" ---|        |--- span "again" ---|
            1.50                       2.25     3.00                 4.00
    words:  |hello|world-------------|
            1.50  1.80                2.25

Empty input (no bytes, or only whitespace) is a valid transcript with zero spans, as is a valid
document with zero cues (``WEBVTT`` alone, ``{"segments": []}``, ``[]``, a TextGrid without intervals).
Bytes that are not UTF-8 (or UTF-16 with a BOM) are read as cp1252, with a warning (:func:`decode_text`).
Anything else that cannot be read (binary bytes, UTF-8 with broken bytes, a malformed line or field, a
negative, NaN or infinite time, a stop before its start) raises ``TranscriptError`` naming the file
(or ``name=``) and the line or field.
"""
from __future__ import annotations

import codecs
import logging
import os
import re
from typing import BinaryIO, Callable, Literal, Optional, TextIO, Union, get_args

from avcore import TRANSCRIPT_EXTENSIONS, Span, Transcript, TranscriptError
from loaders._transcript_formats import parse_json, parse_srt, parse_stm, parse_textgrid, parse_vtt

logger = logging.getLogger(__name__)

__all__ = ["TRANSCRIPT_EXTENSIONS", "TranscriptFormat", "decode_text", "is_transcript_json", "pick_transcript", "read_transcript"]


TranscriptFormat = Literal["srt", "vtt", "json", "textgrid", "stm"]
TRANSCRIPT_FORMATS: tuple[str, ...] = get_args(TranscriptFormat)
"""The `format=` values of :func:`read_transcript`."""
_FORMATS = TRANSCRIPT_FORMATS
_SUFFIXES = {"srt": "srt", "vtt": "vtt", "webvtt": "vtt", "json": "json", "textgrid": "textgrid", "stm": "stm"}
_PARSERS: dict[str, Callable[..., list[Span]]] = {
    "srt": parse_srt,
    "vtt": parse_vtt,
    "json": parse_json,
    "textgrid": parse_textgrid,
    "stm": parse_stm,
}

DEFAULT_MAX_CUES = 100_000
"""Cues (segments, intervals) per transcript at most: a 10-hour talk in 2 s cues has 18,000."""
DEFAULT_MAX_WORDS = 200_000
"""Words per transcript at most: 22 hours of speech at 150 words a minute."""
_TOKEN = re.compile(r"\S+")

TranscriptSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO, TextIO]


def _read_source(source: TranscriptSource, name: Optional[str]) -> tuple[Union[bytes, str], str]:
    """The raw content (bytes, or str from a text stream) and the name to use in messages."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as handle:  # OSError (missing file…) propagates as is
            return handle.read(), name or str(path)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    if hasattr(source, "read"):
        content = source.read()
        if not isinstance(content, (bytes, str)):
            raise TypeError(f"source.read() returned {type(content).__name__}; expected bytes or str")
        file_name = getattr(source, "name", None)
        return content, name or (file_name if isinstance(file_name, str) else "<stream>")
    raise TypeError(
        f"source must be a path, bytes or a file-like object, got {type(source).__name__}; "
        "hint: pass the file path, or the bytes of a tar member"
    )


# cp1252 (Windows Western European, what "ANSI" subtitle editors and DVD rips write; a superset of Latin-1's letters)
# with Latin-1 for the five bytes cp1252 leaves undefined (0x81 0x8D 0x8F 0x90 0x9D): a table for codecs.charmap_decode.
_CP1252_TABLE = "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256))
# One well-formed UTF-8 sequence of two to four bytes (Unicode Table 3-7). A file that holds one is UTF-8 with some
# broken bytes (whisper.cpp splitting a character between tokens), not cp1252: "é" in cp1252 is one byte, never
# followed by the continuation byte UTF-8 needs, while a cp1252 pair such as "Ã©" is itself mojibake.
_UTF8_MULTIBYTE = re.compile(rb"[\xc2-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf]{2}"
                             rb"|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf]{2}|[\xf1-\xf3][\x80-\xbf]{3}"
                             rb"|\xf4[\x80-\x8f][\x80-\xbf]{2}")


def _decode(content: Union[bytes, str], name: str, *, what: str) -> tuple[str, Optional[str]]:
    """``(text, fallback)``: the text of :func:`decode_text`, and ``"cp1252"`` when it was read as such (else None).
    Logs nothing; raises as :func:`decode_text` does."""
    if isinstance(content, str):
        return content.lstrip("\ufeff"), None
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    bom = 3 if encoding == "utf-8-sig" and content.startswith(codecs.BOM_UTF8) else 0
    try:
        return content[bom:].decode(encoding), None
    except UnicodeDecodeError as error:
        failed = error
    binary = b"\0" in content  # text has no NUL bytes: media (or other binary) given as the transcript
    hint = f"re-save the {what} as UTF-8"
    if binary:
        hint = "the file holds NUL bytes: it is binary (media?), not a text transcript, or UTF-16 without a BOM"
    elif bom:
        hint += "; it is not read as cp1252 because it starts with a UTF-8 byte order mark"
    elif encoding == "utf-8-sig" and _UTF8_MULTIBYTE.search(content):
        hint += "; it is not read as cp1252 because it holds valid UTF-8 too (a UTF-8 file with broken bytes)"
    elif encoding == "utf-8-sig":
        return codecs.charmap_decode(content, "strict", _CP1252_TABLE)[0], "cp1252"
    at = bom + failed.start
    raise TranscriptError(
        f"{name}: byte {at}: cannot decode as {encoding.replace('-sig', '')} ({failed.reason}, "
        f"bytes {content[at:at + 4]!r}); hint: {hint}"
    ) from None


def decode_text(content: Union[bytes, str], name: str, *, what: str = "transcript", warn: bool = True) -> str:
    """Text from bytes: UTF-8 (BOM optional), UTF-16 with a BOM (Praat's choice for non-ASCII), else cp1252.

    Bytes that are not UTF-8 are read as cp1252 (Latin-1 for the five bytes it leaves undefined), with a warning
    naming ``name`` and the encoding: a Latin-1 / Windows-1252 SRT from a European DVD rip (``Caf\\xe9``) loads.
    Valid UTF-8 never takes that path, nor does a file that holds any well-formed multi-byte UTF-8 sequence (UTF-8
    with some broken bytes: refused, not turned into mojibake), starts with a UTF-8 BOM, or holds a NUL byte.

    ``warn=False``: no warning (a caller that only looks inside the text; the reader of the same bytes warns).

    Raises:
        TranscriptError: bytes that are none of these, naming ``name``, the byte offset and a hint (re-save the
            ``what`` as UTF-8; a NUL byte: binary, not text).
    """
    text, fallback = _decode(content, name, what=what)
    if fallback is not None and warn:
        first = re.search(rb"[\x80-\xff]", bytes(content))  # not UTF-8, so there is a non-ASCII byte
        at = first.start() if first else 0
        logger.warning("%s: not UTF-8 (byte %d is %r): read as %s (Windows-1252, Latin-1 for its undefined bytes); "
                       "hint: re-save the %s as UTF-8", name, at, bytes(content)[at:at + 1], fallback, what)
    return text


def _guess_from_name(name: str) -> Optional[str]:
    """Format from a file suffix (``talk.srt``) or a bare WebDataset key (``srt``, ``TextGrid``)."""
    lowered = name.lower()
    suffix = lowered.rsplit(".", 1)[-1]
    return _SUFFIXES.get(suffix)


def sniff_format(text: str) -> Optional[str]:
    """Guess the format from the content; None when nothing matches."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("WEBVTT"):
        return "vtt"
    if head[:1] in ("{", "["):
        return "json"
    if "ooTextFile" in head[:200]:
        return "textgrid"
    if "-->" in head:
        return "srt"
    return None


def is_transcript_json(data: Union[bytes, str]) -> bool:
    """Whether a ``.json`` member is a transcript (Whisper/WhisperX ``segments``, avalign ``spans``, a list of
    ``{text, start, end}``, OpenAI's ``verbose_json`` whose ``words`` are ``{word, start, end}``, whisper.cpp's
    ``transcription``, the Hugging Face ASR pipeline's ``chunks``) rather than
    metadata, e.g. video2dataset's ``key.json`` (url, caption, status…); a video2dataset record that holds its
    Whisper subsampler's ``whisper_transcript`` (``{"segments": …}``) is one.

    Malformed JSON counts as a transcript, so that the transcript reader reports it with its line.
    """
    import json

    try:
        text = data if isinstance(data, str) else bytes(data)
        value = json.loads(_decode(text, "", what="transcript")[0])  # cp1252 metadata is metadata (decode_text)
    except (ValueError, TranscriptError, RecursionError):
        return True
    if isinstance(value, dict):
        nested = value.get("whisper_transcript")
        if isinstance(nested, dict) and "segments" in nested:
            return True
        if any(k in value for k in ("segments", "spans", "word_segments")):
            return True
        items = value.get("transcription")  # whisper.cpp's -oj JSON
        if isinstance(items, list) and items and all(
                isinstance(v, dict) and ("offsets" in v or "timestamps" in v) for v in items):
            return True
        chunks = value.get("chunks")  # the Hugging Face ASR pipeline's output with return_timestamps
        if isinstance(chunks, list) and chunks and all(isinstance(v, dict) and "timestamp" in v for v in chunks):
            return True
        words = value.get("words")  # OpenAI's verbose_json with word timestamps only: {"text", "words": [...]}
        return isinstance(words, list) and bool(words) and all(
            isinstance(w, dict) and ("word" in w or "text" in w) and any(k in w for k in ("start", "start_seconds"))
            for w in words)
    if isinstance(value, list):
        return all(
            isinstance(v, dict) and "text" in v and any(k in v for k in ("start", "start_seconds"))
            and any(k in v for k in ("end", "stop", "stop_seconds"))
            for v in value
        )
    return False


def pick_transcript(available, read) -> Optional[str]:
    """The extension of the transcript to use among ``available`` extensions (lower case), or None.

    ``read(ext)`` returns a member's bytes; it is called only for a ``json`` member, to tell a transcript
    from metadata (:func:`is_transcript_json`). For a WebDataset sample: ``pick_transcript(sample, sample.__getitem__)``.
    """
    for ext in TRANSCRIPT_EXTENSIONS:
        if ext in available and (ext != "json" or is_transcript_json(read(ext))):
            return ext
    return None


def _estimated_cues(text: str, chosen: str) -> int:
    """An upper bound of the cues/items a parse would build, by counting markers at C speed (no parsing)."""
    if chosen in ("srt", "vtt"):
        return text.count("-->")
    if chosen == "json":
        return text.count("{")  # every segment and word is an object: a bound on segments + word objects
    if chosen == "stm":
        return text.count("\n") + 1  # one segment per line
    return text.count("\n") // 3  # TextGrid: an interval takes 3 (short format) or 4 (long) lines


def _count_tokens(text: str, limit: int) -> int:
    """Whitespace-separated tokens of ``text``, counting stops past ``limit`` (constant memory)."""
    if len(text) < 2 * limit:  # cannot hold more than len/2 tokens
        return 0
    count = 0
    for _ in _TOKEN.finditer(text):
        count += 1
        if count > limit:
            break
    return count


# Whitespace tokens a word may take, at most, in a file whose text is mostly markup: a pretty-printed WhisperX word
# object takes 10 (``{ "word": "w", "start": 1.0, "end": 1.3, "score": 0.9 },``) plus its segment's share and the
# word in the segment's text (12 measured on WhisperX's layout), more with a speaker or other fields; a long-format
# TextGrid interval 11 (``intervals [1]: xmin = 0 xmax = 1 text = "w"``). The bound before parsing only keeps a
# pathological file from being parsed; the parsed count is the one that refuses.
_MARKUP_TOKENS_PER_WORD = {"json": 32, "textgrid": 32}


def check_size(text: str, chosen: str, label: str, *, max_cues: int, max_words: int) -> None:
    """Refuse (``too_large``) a transcript over the limits BEFORE parsing it, from bounds that never exceed what the
    parse would count: cue markers counted with ``str.count``, words as whitespace-separated tokens (minus the 4
    tokens of each SRT/VTT timing block and the 5 fields heading each STM line). JSON and TextGrid are mostly
    markup: a JSON's objects bound its segments plus word objects (refused over ``max_cues + max_words``), and its
    tokens over :data:`_MARKUP_TOKENS_PER_WORD` per word; the exact counts are checked after the parse."""
    cues = _estimated_cues(text, chosen)
    cue_limit = max_cues + max_words if chosen == "json" else max_cues
    if cues > cue_limit:
        raise TranscriptError(f"{label}: about {cues} cues/items, over max_cues={max_cues}"
                              + (f" + max_words={max_words} (a JSON object per segment and per word)" if chosen == "json" else "")
                              + "; hint: split the transcript or raise max_cues", reason="too_large")
    # tokens that are not words: the 4 of each SRT/VTT timing line, the 5 fields before each STM segment's text
    markup = 4 * text.count("-->") if chosen in ("srt", "vtt") else 5 * cues if chosen == "stm" else 0
    per_word = _MARKUP_TOKENS_PER_WORD.get(chosen, 1)
    limit = per_word * max_words + markup
    if _count_tokens(text, limit) > limit:
        what = (f"more than {max_words} words (max_words)" if per_word == 1 else
                f"more than {limit} whitespace-separated tokens, over what max_words={max_words} words take in "
                f"{chosen} ({per_word} tokens per word at most)")
        raise TranscriptError(f"{label}: {what}; hint: split the transcript or raise max_words", reason="too_large")


def read_transcript(
    source: TranscriptSource,
    *,
    format: Optional[TranscriptFormat] = None,
    name: Optional[str] = None,
    max_cues: int = DEFAULT_MAX_CUES,
    max_words: int = DEFAULT_MAX_WORDS,
) -> Transcript:
    """Read a transcript file into spans (and words when the file has word times).

    Args:
        source: a path, the file's bytes (e.g. a tar member), or a binary or text file-like object.
        format: ``"srt"``, ``"vtt"``, ``"json"`` (WhisperX / faster-whisper / whisper, or a plain list
            of ``{"text", "start", "end"}``), ``"textgrid"`` or ``"stm"`` (NIST); None guesses from the name's suffix,
            else from the content.
        name: what to call the source in messages and ``Transcript.source`` (e.g. the tar key);
            defaults to the path or the stream's name.
        max_cues: refuse a transcript with more cues/segments/intervals (``TranscriptError``, reason
            ``too_large``), estimated from the text before parsing it.
        max_words: refuse a transcript with more words (reason ``too_large``): whitespace-separated tokens
            counted before parsing, and the parsed words after.

    Returns:
        A ``Transcript`` whose spans are sorted by start; words belong to the span that contains them. A cue that
        repeats an earlier one exactly (same text, start and stop) is read once.

    Raises:
        TranscriptError: ANY failure caused by the content: malformed (reason ``transcript``; the message names
            the file and the line or field), or over ``max_cues`` / ``max_words`` (reason ``too_large``).
        ValueError: ``format`` is not one of the valid values.
        TypeError: ``source`` is of an unsupported type.
        OSError: the path cannot be opened (``FileNotFoundError`` where it does not exist).

    Example:
        >>> t = read_transcript(b"1\\n00:00:01,000 --> 00:00:02,500\\nhello\\n", name="a.srt")
        >>> (t.spans[0].text, t.spans[0].start_seconds, t.spans[0].stop_seconds)
        ('hello', 1.0, 2.5)
    """
    if format is not None and format not in _FORMATS:
        raise ValueError(f"format must be one of {list(_FORMATS)} or None, got {format!r}")
    for limit_name, limit in (("max_cues", max_cues), ("max_words", max_words)):
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"{limit_name} must be an int >= 1, got {limit!r}")
    content, label = _read_source(source, name)
    text = decode_text(content, label)
    chosen = format or _guess_from_name(label) or sniff_format(text)
    if not text.strip():
        logger.debug("%s: empty transcript", label)
        return Transcript(spans=(), source=label, format=chosen or "")
    if chosen is None:
        raise TranscriptError(
            f"{label}: cannot tell the transcript format from the name or the content (starts {text[:30]!r}); "
            f"hint: pass format= one of {list(_FORMATS)}"
        )
    check_size(text, chosen, label, max_cues=max_cues, max_words=max_words)
    try:
        spans = _PARSERS[chosen](text, name=label)
    except TranscriptError as error:
        guessed = sniff_format(text)
        if format is None and guessed not in (None, chosen):
            raise TranscriptError(f"{error}; hint: the content looks like {guessed}, pass format={guessed!r}") from None
        raise
    except RecursionError:
        raise TranscriptError(f"{label}: {chosen} content nested too deeply to read") from None
    except MemoryError:
        raise TranscriptError(f"{label}: out of memory parsing the {chosen} transcript", reason="too_large") from None
    except Exception as error:  # noqa: BLE001 - a parser library failing on garbage is the content's fault
        raise TranscriptError(f"{label}: the {chosen} parser failed: {type(error).__name__}: {error}") from None
    if len(spans) > max_cues:
        raise TranscriptError(f"{label}: {len(spans)} cues, over max_cues={max_cues}", reason="too_large")
    words = sum(len(s.words) or len(s.text.split()) for s in spans)
    if words > max_words:
        raise TranscriptError(f"{label}: {words} words, over max_words={max_words}", reason="too_large")
    ordered = tuple(sorted(_without_repeats(spans, name=label), key=lambda s: (s.start_seconds, s.stop_seconds)))
    return Transcript(spans=ordered, source=label, format=chosen)


def _without_repeats(spans: list[Span], *, name: str) -> list[Span]:
    """``spans`` without exact repeats: a cue with the same text, start, stop (and words) as an earlier one is
    dropped (logged with a count). Subtitle files merged or exported twice carry every cue twice; read as they stand,
    each caption's text was aligned twice inside its own audio and the transcript offset was lost (BENCHMARKS.md,
    "Caption words on real ASR text"). A repeat at other times is kept: people say things twice."""
    kept = list(dict.fromkeys(spans))
    if len(kept) < len(spans):
        logger.info("%s: %d cue(s) that repeat an earlier cue exactly (same text and times) dropped", name,
                    len(spans) - len(kept))
    return kept
