"""``read_transcript``: SRT, WebVTT, Whisper-style JSON, Praat TextGrid and NIST STM into one ``Transcript``.

Times are kept on the transcript's own clock (seconds, as stamped); the aligner moves them onto the
video timeline. Every span and word is a half-open interval ``[start_seconds, stop_seconds)``::

    file:   |--- span "hello world" ---|        |--- span "again" ---|
            1.50                       2.25     3.00                 4.00
    words:  |hello|world-------------|
            1.50  1.80                2.25

Empty input (no bytes, or only whitespace) is a valid transcript with zero spans, as is a valid
document with zero cues (``WEBVTT`` alone, ``{"segments": []}``, ``[]``, a TextGrid without intervals).
Bytes that are not UTF-8 (nor UTF-16/32 with a BOM) are read as cp1252, with a warning, when they are Western
European text; other encodings and broken UTF-8 are refused with a hint (:func:`decode_text`).
Anything else that cannot be read (binary bytes, UTF-8 with broken bytes, a malformed line or field, a
negative, NaN or infinite time, a stop before its start) raises ``TranscriptError`` naming the file
(or ``name=``) and the line or field.
"""
from __future__ import annotations

import codecs
import itertools
import logging
import os
import re
from collections.abc import Mapping
from typing import BinaryIO, Callable, Literal, Optional, TextIO, Union, get_args

from avcore import MEDIA_EXTENSIONS, TRANSCRIPT_EXTENSIONS, Span, Transcript, TranscriptError
from loaders._transcript_formats import parse_json, parse_srt, parse_stm, parse_textgrid, parse_vtt

logger = logging.getLogger(__name__)

__all__ = ["TRANSCRIPT_EXTENSIONS", "TranscriptFormat", "decode_text", "is_transcript_json", "pick_transcript", "read_transcript",
           "transcript_format_of"]


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
MAX_TRANSCRIPT_BYTES = 256 * 2**20
"""Bytes of a transcript file or stream read at most: ``DEFAULT_MAX_WORDS`` words of WhisperX JSON with character
alignments take about 100 MiB. A larger source (``/dev/zero``, a video given as the transcript) is refused as
``too_large`` instead of being read until memory runs out."""
_TOKEN = re.compile(r"\S+")
_LANGUAGE_TAG = re.compile(r"[a-z]{2,3}(?:[-_][a-z0-9]{2,8})*", re.IGNORECASE)
"""A language tag before a subtitle's extension, as yt-dlp and players name them: ``en``, ``pt-BR``, ``en-orig``."""
_TAGGABLE = ("srt", "vtt", "textgrid", "stm")
"""Transcript formats read from a language-tagged member (``KEY.en.srt``); not ``json``, whose tagged members
(``KEY.meta.json``, ``KEY.align.json``) are other records."""

TranscriptSource = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, BinaryIO, TextIO]


def _bounded(content: Union[bytes, str], label: str) -> tuple[Union[bytes, str], str]:
    if len(content) > MAX_TRANSCRIPT_BYTES:
        raise TranscriptError(f"{label}: over {MAX_TRANSCRIPT_BYTES // 2**20} MiB, larger than any transcript "
                              "(MAX_TRANSCRIPT_BYTES); hint: is it the transcript? split a longer one", reason="too_large")
    return content, label


def _read_source(source: TranscriptSource, name: Optional[str]) -> tuple[Union[bytes, str], str]:
    """The raw content (bytes, or str from a text stream) and the name to use in messages."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        with open(path, "rb") as handle:  # OSError (missing file…) propagates as is
            return _bounded(handle.read(MAX_TRANSCRIPT_BYTES + 1), name or str(path))
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source), name or "<bytes>"
    if hasattr(source, "read"):
        file_name = getattr(source, "name", None)
        label = name or (file_name if isinstance(file_name, str) else "<stream>")
        content = source.read(MAX_TRANSCRIPT_BYTES + 1)
        if not isinstance(content, (bytes, str)):
            raise TypeError(f"source.read() returned {type(content).__name__}; expected bytes or str")
        return _bounded(content, label)
    raise TypeError(
        f"source must be a path, bytes or a file-like object, got {type(source).__name__}; "
        "hint: pass the file path, or the bytes of a tar member"
    )


# cp1252 (Windows Western European, what "ANSI" subtitle editors and DVD rips write; a superset of Latin-1's letters)
# with Latin-1 for the five bytes cp1252 leaves undefined (0x81 0x8D 0x8F 0x90 0x9D): a table for codecs.charmap_decode.
_CP1252_TABLE = "".join(bytes([b]).decode("cp1252", errors="ignore") or chr(b) for b in range(256))
# What Western European text (French, German, Spanish, Portuguese, Italian, Dutch, Danish, Norwegian, Swedish, Catalan,
# English with typographic quotes) holds beyond ASCII when read as cp1252. Left out on purpose: Icelandic ð þ ý (they
# are what Turkish ğ ş ı in cp1254 read as), Ÿ (Polish ź in cp1250) and the symbols ¹ ³ ¼ ¾ ¶ ¦ ¨ ´ ¸ ¯ ¤ ¬ µ (Polish
# and Czech letters in cp1250 / ISO-8859-2); BENCHMARKS.md, "Transcripts that are not UTF-8".
_WESTERN_LETTERS = "àáâãäåæçèéêëìíîïñòóôõöøùúûüÿßœšžÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÑÒÓÔÕÖØÙÚÛÜŒŠŽ"
_WESTERN_SYMBOLS = ("\u00a0\u00ad¡¿«»‹›‘’‚“”„–—…•·°€£¢¥©®™§ªº±²½×÷†‡‰ˆ˜"
                    "\x81\x8d\x8f\x90\x9d")  # the five bytes cp1252 leaves undefined, read as Latin-1 (as ever)
_BEFORE_A_LETTER = "\u00a0\u00ad¡¿«»‹›‘’‚“”„–—…•·°"  # the symbols that may come right before a letter (all may after)
_LETTER = r"[^\W\d_]"
_NOT_WESTERN = re.compile(
    r"(?=[^\x00-\x7f])(?:"  # each starts at a non-ASCII character: the engine skips ASCII fast
    rf"[^\x00-\x7f{_WESTERN_LETTERS}{_WESTERN_SYMBOLS}]"  # a character Western text does not hold
    r"|(?<=[a-zß-ÿœšž])[À-ÞŒŠŽ]"  # an accented capital after a small letter: "CafÃ", "ðÒÉ×ÅÔ" (KOI8-R)
    rf"|[{_WESTERN_SYMBOLS.translate(dict.fromkeys(map(ord, _BEFORE_A_LETTER)))}](?={_LETTER})"  # "£odzi" (Polish Ł)
    rf"|(?<={_LETTER})[¡¿](?={_LETTER})"  # Spanish ¡ ¿ open a phrase; inside a word they are Polish ż: "Za¿ó"
    r"|[õÕ](?![eEsS])"  # Portuguese õ comes before e or s (-ões, põe); Hungarian ő in cp1250 reads as õ
    rf"|(?<![A-ZÀ-Þ])[ÂÃ](?!{_LETTER})"  # Â Ã end a word only in capitals (IRMÃ); alone, a UTF-8 lead byte (0xc2 0xc3)
    rf"|(?<=[ghijkwyzGHIJKWYZ])[êÊ](?!{_LETTER})"  # Polish ę ends words (się, proszę); Portuguese ê after c d l r v b t
    rf"|[ìùÌÙ](?={_LETTER})"  # Italian ì ù end words (così, più); in a word, Czech ě ů: "Dìkuji", "pùjdeme"
    rf"|(?<=[tnmbpvTNMBPV])[ìÌ](?!{_LETTER})|(?<=[mldMLD])[ùÙ](?!{_LETTER})"  # Czech tě mě ně, domů stolů
    r"|[ñÑ](?![aeiouáéíóúAEIOUÁÉÍÓÚ])"  # Spanish ñ comes before a vowel (año); Polish ń does not: "Gdañsku"
    r"|(?<![aeiouéèAEIOUÉÈ])[ïÏ]"  # French, Dutch, Catalan ï come after a vowel (naïve); Czech ď does not: "Pojï"
    rf"|[øØ]{_LETTER}*[áíúÁÍÚ]|[áíúÁÍÚ]{_LETTER}*[øØ])")  # Danish ø never shares a word with á í ú; Czech ř: "poøádku"

# Encodings charset-normalizer names, and the script they are for (the refusal's hint).
_SCRIPTS = {**dict.fromkeys(("cp1251", "koi8_r", "koi8_u", "mac_cyrillic", "cp866", "cp1125", "iso8859_5"), "Cyrillic"),
            **dict.fromkeys(("cp1253", "iso8859_7", "mac_greek"), "Greek"),
            **dict.fromkeys(("cp1250", "iso8859_2", "mac_latin2", "iso8859_16"), "Central European"),
            **dict.fromkeys(("cp1254", "iso8859_9", "mac_turkish"), "Turkish"),
            **dict.fromkeys(("cp1257", "iso8859_4", "iso8859_13", "iso8859_10"), "Baltic / Nordic"),
            **dict.fromkeys(("cp1255", "iso8859_8"), "Hebrew"), **dict.fromkeys(("cp1256", "iso8859_6"), "Arabic"),
            **dict.fromkeys(("cp932", "shift_jis", "shift_jis_2004", "shift_jisx0213", "euc_jp", "euc_jis_2004",
                             "euc_jisx0213", "iso2022_jp"), "Japanese"),
            **dict.fromkeys(("gbk", "gb2312", "gb18030", "hz"), "Chinese, simplified"),
            **dict.fromkeys(("big5", "big5hkscs", "cp950"), "Chinese, traditional"),
            **dict.fromkeys(("cp949", "euc_kr", "johab", "iso2022_kr"), "Korean"), "cp1258": "Vietnamese",
            "cp874": "Thai", "tis_620": "Thai"}
_SPLIT_CHARACTER = 3  # a character split in two (whisper.cpp) leaves at most 3 stray bytes


def _non_ascii_lines(content: bytes, limit: int = 65536) -> bytes:
    """The lines that hold non-ASCII bytes, up to ``limit`` bytes: what the detector looks at (not the timestamps)."""
    lines, size = [], 0
    for match in re.finditer(rb"[^\n]*[\x80-\xff][^\n]*", content):
        lines.append(match.group())
        size += len(match.group()) + 1
        if size >= limit:
            break
    return b"\n".join(lines)[:limit]


def _is_western(text: str, content: bytes) -> bool:
    """Whether ``text`` (``content`` read as cp1252) is Western European text rather than another encoding's
    mojibake: only Western letters and symbols, where such text has them (``_NOT_WESTERN``), and cp1252 passes
    charset-normalizer's mess check (which Cyrillic, Greek, Hebrew, Arabic and CJK bytes read as cp1252 fail)."""
    if _NOT_WESTERN.search(text):
        return False
    import charset_normalizer

    sample = _non_ascii_lines(content).translate(None, b"\x81\x8d\x8f\x90\x9d")  # undefined: judged above only
    return charset_normalizer.from_bytes(sample, cp_isolation=["cp1252"]).best() is not None


def _guess(content: bytes) -> tuple[str, str]:
    """charset-normalizer's guesses at the encoding, for a hint: ``("cp1251 (Cyrillic) or koi8_r (Cyrillic)",
    "CP1251")`` (up to three, best first; the second: the best as iconv names it); ``("", "")`` when none fits."""
    import charset_normalizer

    names = [m.encoding for m in charset_normalizer.from_bytes(_non_ascii_lines(content))
             if m.encoding not in ("ascii", "utf_8")][:3]
    shown = [f"{n} ({_SCRIPTS[n]})" if n in _SCRIPTS else n for n in names]
    return " or ".join(shown), (names[0].upper().replace("_", "-") if names else "")


def _decode(content: Union[bytes, str], name: str, *, what: str) -> tuple[str, Optional[str]]:
    """``(text, fallback)``: the text of :func:`decode_text`, and ``"cp1252"`` when it was read as such (else None).
    Logs nothing; raises as :func:`decode_text` does."""
    if isinstance(content, str):
        return content.lstrip("\ufeff"), None
    if content.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        encoding = "utf-32"  # before UTF-16: UTF-32 LE's BOM starts with UTF-16 LE's
    elif content.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16"
    else:
        encoding = "utf-8-sig"
    bom = 3 if encoding == "utf-8-sig" and content.startswith(codecs.BOM_UTF8) else 0
    try:
        return content[bom:].decode(encoding), None
    except UnicodeDecodeError as error:
        failed = error
    at = bom + failed.start
    where = f"{name}: byte {at}: cannot decode as {encoding.replace('-sig', '')} ({failed.reason}, bytes {content[at:at + 4]!r})"
    if b"\0" in content or encoding != "utf-8-sig":  # text has no NUL bytes: media (or other binary) as the transcript
        raise TranscriptError(f"{where}; hint: the file holds NUL bytes: it is binary (media?), not a text "
                              "transcript, or UTF-16 without a BOM" if b"\0" in content else
                              f"{where}; hint: it starts with a {encoding.upper()} byte order mark but is not "
                              f"{encoding.upper()}: re-save the {what} as UTF-8") from None
    if bom:
        raise TranscriptError(f"{where}; hint: re-save the {what} as UTF-8; it is not read as cp1252 because it "
                              "starts with a UTF-8 byte order mark") from None
    escaped = content.decode("utf-8", errors="surrogateescape")  # a broken byte -> one surrogate U+DC80..U+DCFF
    broken = len(escaped) - len(content.decode("utf-8", errors="ignore"))
    whole = len(content.translate(None, bytes(range(128)))) - broken  # bytes of well-formed multi-byte characters
    text = codecs.charmap_decode(content, "strict", _CP1252_TABLE)[0]
    if not (whole and broken <= whole) and _is_western(text, content):
        return text, "cp1252"
    if (whole and broken <= whole) or (not whole and broken <= _SPLIT_CHARACTER):
        first = itertools.islice(re.finditer("[\udc80-\udcff]", escaped), 5)
        listed = ", ".join(str(len(escaped[:m.start()].encode("utf-8", errors="surrogateescape"))) for m in first)
        listed += ", …" if broken > 5 else ""
        if b'"transcription"' in content:
            fix = ("whisper.cpp's JSON splits a character's bytes between tokens (-ojf, whisper.cpp issue #1798) or "
                   "segments (#438, #3760): write it with -oj and without -ojf, or with a whisper.cpp that fixes it")
        else:
            fix = f"repair those bytes, or re-save the {what} as UTF-8 with the program that wrote it"
        raise TranscriptError(
            f"{where}; hint: it is UTF-8 with {broken} broken byte{'s' if broken > 1 else ''} (at "
            f"byte{'s' if broken > 1 else ''} {listed}; {whole} byte{'s' if whole != 1 else ''} of whole characters), not another encoding, so it is not "
            f"read as cp1252: {fix}") from None
    guesses, iconv = _guess(content)
    looks = (f"it may be {guesses} (charset-normalizer's guesses, often wrong on a few lines: check the result)"
             if guesses else "charset-normalizer finds no encoding that fits (binary?)")
    shown = _NOT_WESTERN.search(text)
    garbled = f", which would garble it ({text[max(0, shown.start() - 8):shown.start() + 8]!r})" if shown else ""
    raise TranscriptError(
        f"{where}; hint: not UTF-8 nor Western European text: {looks}; re-save the {what} as UTF-8 from its "
        f"encoding (e.g. iconv -f {iconv or 'ENCODING'} -t UTF-8); it is not read as cp1252{garbled}") from None


def decode_text(content: Union[bytes, str], name: str, *, what: str = "transcript", warn: bool = True) -> str:
    """Text from bytes: UTF-8 (BOM optional), UTF-16 or UTF-32 with a BOM, else Western European cp1252, else refused.

    The one place transcript and caption bytes become text; the contract:

    * **Read**: UTF-8 (a BOM is dropped); UTF-16 and UTF-32 that start with their BOM (Praat writes UTF-16);
      a ``str`` as it is.
    * **Read as cp1252, with a warning** naming ``name`` and the first non-ASCII byte (cp1252 is Windows Western
      European, with Latin-1 for the five bytes it leaves undefined): bytes that are not UTF-8 and read as Western
      European text, e.g. a French or German "ANSI" SRT from a DVD rip (``Caf\xe9``). Western means: every non-ASCII
      character is a letter or symbol of French, German, Spanish, Portuguese, Italian, Dutch, Scandinavian or
      English text, placed as those languages place it (``_NOT_WESTERN``: no "CafÃ", "Za¿ó³æ", "Dìkuji", "Nasýlsýn"),
      and charset-normalizer's mess check passes cp1252 (Cyrillic, Greek, Hebrew, Arabic and CJK bytes fail it).
    * **Refused** (``TranscriptError``, never mojibake), with a hint:

      - UTF-8 with broken bytes: more bytes of well-formed multi-byte characters than broken ones, or, with none
        well-formed, at most 3 broken bytes (one split character): "it is UTF-8 with N broken bytes (at byte …)";
        for whisper.cpp JSON it names whisper.cpp's bug (a character split between ``-ojf`` tokens or segments)
        and the fix (``-oj`` without ``-ojf``).
      - Other encodings (Cyrillic cp1251 / KOI8-R, Greek, Central European cp1250 / ISO-8859-2, Turkish cp1254,
        Hebrew, Arabic, Shift-JIS, EUC-JP, GBK, Big5, EUC-KR, …): "not UTF-8 nor Western European text: it may be
        cp1251 (Cyrillic) or … (charset-normalizer's guesses …); re-save the ``what`` as UTF-8 (e.g. iconv -f CP1251
        -t UTF-8)". They are not decoded with the guess: on one- to five-cue files charset-normalizer names the
        wrong encoding for up to 10 in 10 (KOI8-R, Hebrew) and a wrong decode is worse than a refusal
        (BENCHMARKS.md, "Transcripts that are not UTF-8").
      - A UTF-8 BOM before bytes that are not UTF-8; a NUL byte (binary, or UTF-16 without a BOM); a UTF-16/32
        BOM before bytes that are not that encoding.

    Limit (measured): a one-line Polish or Czech file whose letters cp1252 also has (``bêdzie``, ``Promiòte``)
    can still be read as cp1252; from five cues on, none was.

    ``warn=False``: no warning (a caller that only looks inside the text; the reader of the same bytes warns).

    Raises:
        TranscriptError: the refusals above, naming ``name``, the byte offset, the bytes there and the hint.
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


def _is_ass(name: str, text: str) -> bool:
    """An ASS / SSA (Advanced SubStation Alpha) file, by its suffix or its ``[Script Info]`` header: its ``[`` would
    otherwise be sniffed as JSON and refused as invalid JSON."""
    suffix = name.lower().rsplit(".", 1)[-1]
    return suffix in ("ass", "ssa") or text.lstrip("\ufeff \t\r\n").startswith("[Script Info]")


_LRC_TIME = re.compile(r"\[(?:\d{1,3}:\d{2}(?:[.:]\d{1,3})?|[A-Za-z#]{1,8}:[^\]\n]*)\]")
"""An LRC line's time tag (``[01:02.50]``) or ID tag (``[ti:Title]``, ``[ar:Artist]``, ``[length: 03:20]``,
``[offset:+100]``, which most LRC files start with): lyrics FFmpeg reads, whose ``[`` is not JSON's."""
_WHISPER_TSV = re.compile(r"start\tend\ttext\s*\n")
"""The header of openai-whisper's ``--output_format tsv`` (times in integer milliseconds)."""
_ANY_TIME = re.compile(r"\d:\d\d|(?<!\d)\d+[.,]\d++(?:\s*+(?:-->|,)|\s)\s*+\d")
r"""Something that reads as a time stamp or a start/stop pair: a file without any is text with no times. Tried once
per run of digits, each run of spaces taken whole: ``\d+[.,]\d+\s*(?:-->|,|\t|\s)\s*\d`` retried every digit of a
long run, and every split of a run of spaces (20 000 digits: 4.7 s, 100 000: about two minutes; BENCHMARKS.md,
adv64)."""


def _unknown_format_hint(label: str, text: str) -> str:
    """What to do with a transcript whose format neither its name nor its content tells (the part after ``hint:``)."""
    head = text.lstrip("\ufeff \t\r\n")
    formats = f"pass format= one of {list(_FORMATS)} if it is one of them"
    if _WHISPER_TSV.match(head):
        return ("this is openai-whisper's TSV output, which is not read: read the .srt, .vtt or .json that Whisper writes "
                "beside it (`--output_format json` keeps the word times with `--word_timestamps True`)")
    if head.startswith("<") and "<sami" in head[:500].lower():  # before the time stamps: SAMI's are `Start=1000`
        return (f"SAMI (.smi) subtitles are not read; FFmpeg reads them: convert it with `ffmpeg -i {label} OUT.srt` "
                "and read OUT.srt")
    if head.startswith("<"):
        return ("XML subtitles (TTML / DFXP) are not read, and FFmpeg does not read them: get WebVTT or SRT "
                "instead (yt-dlp `--sub-format vtt`, or `--convert-subs srt`, which converts TTML itself)")
    if _ANY_TIME.search(text[:100_000]) is None:
        return ("it holds no time stamps (plain text?): a transcript needs times; for text without times, make it one "
                "SRT cue over the media (`1`, then `00:00:00,000 --> HH:MM:SS,mmm` to the media's end, then the text): "
                "its words are then placed by forced alignment")
    return (f"{formats}; another subtitle format that FFmpeg reads (YouTube .sbv, .lrc lyrics, SAMI, MicroDVD…): "
            f"convert it with `ffmpeg -i {label} OUT.srt` and read OUT.srt")


def sniff_format(text: str) -> Optional[str]:
    """Guess the format from the content; None when nothing matches."""
    head = text.lstrip("\ufeff \t\r\n")
    if head.startswith("WEBVTT"):
        return "vtt"
    if head[:1] == "{" or head[:1] == "[" and _LRC_TIME.match(head) is None:  # `[00:01.50]` starts an LRC line
        return "json"
    if "ooTextFile" in head[:200]:
        return "textgrid"
    if head.startswith("<"):  # markup (TTML, DFXP, SAMI): the `-->` of its comments (`<!-- … -->`) is not SRT's
        return None
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
        try:
            decoded = _decode(text, "", what="transcript")[0]  # cp1252 metadata is metadata (decode_text)
        except TranscriptError:
            # Bytes decode_text refuses (another legacy encoding): their JSON structure, not their text, says what
            # they are; Latin-1 maps every byte, and JSON's syntax is ASCII. Metadata stays metadata (kept as is).
            decoded = text.decode("latin-1") if isinstance(text, bytes) else text
        value = json.loads(decoded)
    except (ValueError, RecursionError):
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


def pick_transcript(available, read, *, name: Optional[str] = None) -> Optional[str]:
    """The extension of the transcript to use among ``available`` extensions (lower case), or None.

    ``read(ext)`` returns a member's bytes; it is called only for a ``json`` member, to tell a transcript
    from metadata (:func:`is_transcript_json`). For a WebDataset sample: ``pick_transcript(sample, sample.__getitem__)``.

    Without one, a transcript named after a media member of the same sample whole is used: whisper.cpp names its
    output after its input file (``talk.mp4.srt``, ``talk.wav.json``), packed as member ``KEY.mp4.srt`` of a sample
    with ``KEY.mp4`` (extension ``mp4.srt``), as a directory's ``talk.mp4.srt`` is read beside ``talk.mp4``. Such a
    tag is no language (``wav``, ``ts`` are media here); a ``json`` one counts when it parses as a transcript.

    Else a single language-tagged subtitle is used (``en.srt`` of member ``KEY.en.srt``, as yt-dlp names
    them: WebDataset's key ends at the first dot); its format is :func:`transcript_format_of` it. Several tagged
    ones (``en.vtt`` and ``de.vtt``) are ambiguous: None, with a warning (once per set of tags in a process) naming
    the first sample found so: ``name``, else a WebDataset sample's ``__url__:__key__``.

    A member that holds a transcript under another name (``KEY.whisperx.json``, ``KEY.asr.json``, ``KEY.whisper.srt``:
    a tag that is no language before a transcript format) is not read either: None, with a warning (once per set of
    such extensions in a process, at the first sample that has them) that names the member and the names that are
    read. A tagged ``json`` counts only when ``read(ext)`` parses as a transcript; avalign's and the tools' records
    (``align.json``, ``frames.json``, ``meta.json``, yt-dlp's ``info.json``) never do, and a tagged ``json`` that held
    no transcript at 8 samples is taken for a record and not parsed again.
    """
    for ext in TRANSCRIPT_EXTENSIONS:
        if ext in available and (ext != "json" or is_transcript_json(read(ext))):
            return ext
    media = _media_of(available)
    for ext in (e for e in TRANSCRIPT_EXTENSIONS if "." not in e):  # whisper.cpp's KEY.mp4.srt (lower case members)
        for named in (f"{m}.{ext}" for m in media):
            if named in available and (ext != "json" or is_transcript_json(read(named))):
                return named
    tagged = sorted(ext for ext in available if is_language_tagged(ext) and ext.rpartition(".")[0] not in media)
    if name is None and isinstance(available, Mapping) and isinstance(available.get("__key__"), str):
        name = ":".join(str(available[k]) for k in ("__url__", "__key__") if available.get(k))
    if len(tagged) > 1 and tuple(tagged) not in _AMBIGUOUS_WARNED:
        _AMBIGUOUS_WARNED.add(tuple(tagged))
        logger.warning("%sseveral language-tagged subtitles (%s) and no untagged transcript: none is used, the sample "
                       "has no text (warned once per set of tags, at the first sample that has them); keep one per "
                       "sample, or name the one to use without its tag (KEY.%s -> KEY.%s; in a directory KEY is the "
                       "media file's stem)", f"{name}: " if name else "", ", ".join(tagged), tagged[0],
                       transcript_format_of(tagged[0]).replace("textgrid", "TextGrid"))
    if not tagged:
        _warn_misnamed(available, read, name)
    return tagged[0] if len(tagged) == 1 else None


def _media_of(available) -> list[str]:
    """The media extensions among ``available`` (a sample's members, or a list of extensions)."""
    return [ext for ext in MEDIA_EXTENSIONS if ext in available]


_AMBIGUOUS_WARNED: set[tuple[str, ...]] = set()
_MISNAMED_WARNED: set[tuple[str, ...]] = set()
_RECORD_TAGS = frozenset({"align", "frames", "meta", "metadata", "info", "transcript"})
"""Tags of ``json`` members that are records, not a transcript under another name: avalign's ``align.json`` and
``frames.json`` (whose ``segments`` / ``words`` are a measurement), video2dataset's ``meta.json``, yt-dlp's
``info.json``; ``transcript.json`` is read first."""


def _warn_misnamed(available, read, name: Optional[str]) -> None:
    """Warn about members that hold a transcript under a name :func:`pick_transcript` does not read."""
    found, tagged_json = [], []
    for ext in available:
        if not isinstance(ext, str) or ext.startswith("__") or "." not in ext:
            continue
        tag, _, last = ext.lower().rpartition(".")
        if last in _TAGGABLE:
            found.append(ext)
        elif last == "json" and tag.rpartition(".")[2] not in _RECORD_TAGS:
            tagged_json.append(ext)
    # a member that held no transcript at _MAX_NOT_TRANSCRIPT samples is a record (BENCHMARKS.md, adv64)
    tagged_json = [ext for ext in tagged_json if _NOT_TRANSCRIPT.get(ext, 0) < _MAX_NOT_TRANSCRIPT]
    if tagged_json and not _could_warn(found, tagged_json):
        tagged_json = []  # whatever they hold, the warning was given: not parsed again (BENCHMARKS.md, adv63b)
    members = tuple(sorted([*found, *tagged_json]))
    for ext in tagged_json:
        if _holds_transcript_json(read, ext):
            found.append(ext)
        else:
            _NOT_TRANSCRIPT[ext] = _NOT_TRANSCRIPT.get(ext, 0) + 1
    key = tuple(sorted(found))
    if key:
        _WARNED_MEMBERS.add(members)
    if not key or key in _MISNAMED_WARNED:
        return
    _MISNAMED_WARNED.add(key)
    logger.warning("%s%s hold%s a transcript under a name that is not read: the sample has no text (warned once per "
                   "set of such names, at the first sample that has them); a sample's transcript is KEY.json, "
                   "KEY.srt, KEY.vtt, KEY.TextGrid or KEY.stm, or one language-tagged subtitle such as KEY.en.srt: "
                   "rename %s to KEY.%s when writing the shards", f"{name}: " if name else "",
                   ", ".join(f"KEY.{ext}" for ext in key),
                   "s" if len(key) == 1 else "", "it" if len(key) == 1 else "the one to use",
                   transcript_format_of(key[0]).replace("textgrid", "TextGrid"))


_NOT_TRANSCRIPT: dict[str, int] = {}
"""Tagged ``json`` extension → samples at which :func:`_warn_misnamed` parsed its member and found no transcript."""
_MAX_NOT_TRANSCRIPT = 8
"""After this many, the extension is taken for a record (embeddings, scene lists under a tag of their own) and not
parsed again in this process: it was parsed twice at every sample (279 ms a sample for a 2.6 MB record; BENCHMARKS.md,
adv64). A few, not one: a first sample whose ASR failed (``{}``) does not hide the transcripts of the others."""
_MAX_JSON_SUBSETS = 4
"""Up to this many tagged ``json`` members, :func:`_could_warn` weighs every warning they could give."""
_WARNED_MEMBERS: set[tuple[str, ...]] = set()
"""The candidate members (tagged subtitles and ``json``) of samples at which a warning was given or had been: with more
than :data:`_MAX_JSON_SUBSETS` tagged ``json``, the same members are not parsed again (five language-tagged Whisper
JSON, ``KEY.en.json`` … ``KEY.it.json``, were parsed at every sample; BENCHMARKS.md, adv64)."""


def _could_warn(found: list, tagged_json: list) -> bool:
    """Whether parsing the ``tagged_json`` members could give a warning not given yet: some subset of them (those
    that hold a transcript) joined to ``found`` names a set not in ``_MISNAMED_WARNED``. A sample with a tagged JSON
    member is parsed until its warning is given, not at every sample after (a word-level WhisperX JSON of an hour:
    95 ms a sample)."""
    if len(tagged_json) > _MAX_JSON_SUBSETS:  # too many subsets to weigh: these members were parsed once, or not
        return tuple(sorted([*found, *tagged_json])) not in _WARNED_MEMBERS
    for size in range(len(tagged_json) + 1):
        for chosen in itertools.combinations(tagged_json, size):
            key = tuple(sorted([*found, *chosen]))
            if key and key not in _MISNAMED_WARNED:
                return True
    return False


def _holds_transcript_json(read, ext: str) -> bool:
    """Whether member ``ext`` parses as JSON that :func:`is_transcript_json` calls a transcript (unreadable or
    malformed bytes do not count here: only a transcript that would have been read is reported)."""
    import json

    try:
        data = read(ext)
        json.loads(data if isinstance(data, str) else bytes(data).decode("utf-8-sig"))
    except Exception:  # noqa: BLE001 - not readable JSON: not a transcript to report
        return False
    return is_transcript_json(data)


def is_language_tagged(ext: str) -> bool:
    """Whether ``ext`` (a member's extension, or what follows a file's stem) is a language-tagged subtitle that
    :func:`pick_transcript` reads: ``en.srt``, ``pt-BR.vtt``, ``en-orig.vtt`` (as yt-dlp names them); not ``en.json``.
    In a sample that has a media member of that name (``wav.srt`` beside ``KEY.wav``), :func:`pick_transcript` reads
    the tag as whisper.cpp's naming, not as a language.

    Example:
        >>> is_language_tagged("en.vtt"), is_language_tagged("pt-BR.srt"), is_language_tagged("info.json")
        (True, True, False)
    """
    tag, dot, last = str(ext).rpartition(".")
    return bool(dot) and last.lower() in _TAGGABLE and _LANGUAGE_TAG.fullmatch(tag) is not None


def transcript_format_of(ext: str) -> str:
    """The ``read_transcript`` format of a member extension chosen by :func:`pick_transcript`: ``json`` for any
    ``*json``, the last part of a language-tagged one (``en.srt`` → ``srt``), else ``ext`` itself."""
    return "json" if ext.endswith("json") else ext.rpartition(".")[2].lower()


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
            of ``{"text", "start", "end"}``), ``"textgrid"`` or ``"stm"`` (NIST), in any case (``"TextGrid"``;
            ``"webvtt"`` is ``"vtt"``); None guesses from the name's suffix, else from the content.
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
    if isinstance(format, str):  # the names files and tools use: "TextGrid", "SRT", "WebVTT"
        format = _SUFFIXES.get(format.lower(), format)
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
    if format is None and _guess_from_name(label) is None and _is_ass(label, text):
        raise TranscriptError(
            f"{label}: ASS/SSA subtitles are not read as a transcript (SRT, WebVTT, Whisper/WhisperX JSON, TextGrid and "
            f"STM are); hint: convert it to SRT with `ffmpeg -i {label} OUT.srt` and read OUT.srt"
        )
    if chosen is None:
        raise TranscriptError(
            f"{label}: cannot tell the transcript format from the name or the content (starts {text[:30]!r}); "
            f"hint: {_unknown_format_hint(label, text)}"
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
        raise TranscriptError(f"{label}: {len(spans)} cues, over max_cues={max_cues}; hint: split the transcript or "
                              "raise read_transcript's max_cues", reason="too_large")
    words = sum(len(s.words) or len(s.text.split()) for s in spans)
    if words > max_words:
        raise TranscriptError(f"{label}: {words} words, over max_words={max_words}; hint: split the transcript or "
                              "raise read_transcript's max_words", reason="too_large")
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
