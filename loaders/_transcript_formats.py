"""Parsers for each transcript format: text in, spans out (``read_transcript`` picks one).

Every parser takes the decoded text and ``name`` (the file name or key, for messages) and returns
spans in file order; ``read_transcript`` sorts them. Malformed input raises ``TranscriptError`` naming
the file and the line (SRT, WebVTT) or field (JSON: ``segments[3].words[2].start``; TextGrid: tier and
interval), the bad value and a hint. Times are seconds, intervals half-open ``[start, stop)``.
"""
from __future__ import annotations

import bisect
import dataclasses
import html
import json
import logging
import math
import re
import unicodedata
from typing import Any, Optional, Sequence

from avcore import Span, TranscriptError, Word
from loaders._vtt_timestamp_map import TimestampMap, find_timestamp_map

logger = logging.getLogger(__name__)

__all__ = ["parse_json", "parse_srt", "parse_stm", "parse_textgrid", "parse_vtt"]

# A WebVTT timestamp as webvtt-py reads it: ``[hh:]mm:ss.mmm`` (fields may be short, as in ``0:1:5.2``).
_VTT_TIMESTAMP = r"(?:(\d{1,10}):)?(\d{1,2}):(\d{1,2})\.(\d{1,3})"
_VTT_TIMING_LINE = re.compile(rf"^\s*({_VTT_TIMESTAMP})\s+-->\s+({_VTT_TIMESTAMP})(?:\s.*)?$")
_VTT_INLINE_STAMP = re.compile(rf"<({_VTT_TIMESTAMP})>")
_VTT_TAG = re.compile(r"<[^>]*>")
# An SRT timing line: two ``hh:mm:ss,mmm`` stamps (``.`` accepted) around an arrow.
_SRT_TIMESTAMP = r"(\d{1,2}):(\d{1,2}):(\d{1,2})[.,](\d{1,3})"
_SRT_TIMING_LINE = re.compile(rf"^\s*{_SRT_TIMESTAMP}\s*-->\s*{_SRT_TIMESTAMP}(?:\s.*)?$")
_SRT_CUE_NUMBER = re.compile(r"^\s*\d+\s*$")
MAX_STAMP_SECONDS = 100 * 3600.0
"""Latest time a transcript may stamp (100 hours): anything later is a broken export, not a recording."""
_WHITESPACE = re.compile(r"\s+")
# Tier names (case-insensitive substrings) that mark a TextGrid's word tier and its phrase tier.
_WORD_TIER_HINTS = ("word",)
_PHRASE_TIER_HINTS = ("phrase", "segment", "sentence", "utterance", "span", "transcript", "text", "ipu")
# A phone tier's name holds phone..., syllable(s) or char(s)/character(s) as a word (``phones``, ``<speaker> - phones``,
# ``phoneTier``, ``chars``), not inside another word: speaker tiers ``Richard`` and ``Charlotte`` hold speech (adv65).
_PHONE_TIER_NAME = re.compile(r"(?<![a-z])(phone\w*|syllables?|chars?|characters?)(?![a-z])")
# A long-format TextGrid line that must hold a number (``xmax = 2.5``, ``intervals: size = 3``).
_TG_NUMERIC_LINE = re.compile(r"^\s*(xmin|xmax|size|intervals: size|points: size|number)\s*=\s*(.*?)\s*$")
# Slack when deciding that a word lies inside a span (stamps are often rounded to the millisecond).
_CONTAINS_TOLERANCE_SECONDS = 1e-3


def _clean(text: str) -> str:
    """Collapse runs of whitespace (line breaks included) to one space and strip."""
    return _WHITESPACE.sub(" ", text).strip()


def check_seconds(value: object, *, where: str) -> float:
    """Return ``value`` as float seconds, or raise ``TranscriptError`` naming ``where``.

    Accepts int and float (not bool, not str); rejects NaN, inf and negative values.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TranscriptError(
            f"{where}: expected a number of seconds, got {value!r} ({type(value).__name__}); "
            "hint: times must be JSON numbers such as 1.25, not strings or null"
        )
    try:
        seconds = float(value)
    except OverflowError:
        seconds = math.inf
    if not math.isfinite(seconds):
        raise TranscriptError(f"{where}: time must be finite, got {value!r}; hint: NaN/inf stamps mark a broken export")
    if seconds > MAX_STAMP_SECONDS:
        raise TranscriptError(f"{where}: time {seconds!r} s is past {MAX_STAMP_SECONDS:g} s (100 hours); "
                              "hint: the stamps are in the wrong unit (ms?) or the export is broken")
    if seconds < 0:
        raise TranscriptError(
            f"{where}: time must be >= 0 seconds, got {seconds!r}; hint: shift the transcript so it starts at 0 or later"
        )
    return seconds


def make_word(text: str, start_seconds: float, stop_seconds: float, score: Optional[float], *, where: str) -> Word:
    """Build a ``Word``, turning its ``ValueError`` (stop < start) into a ``TranscriptError`` naming ``where``."""
    try:
        return Word(text=text, start_seconds=start_seconds, stop_seconds=stop_seconds, score=score)
    except ValueError as error:
        raise TranscriptError(f"{where}: {error}; hint: check the stamps of this word in the file") from None


def make_span(text: str, start_seconds: float, stop_seconds: float, words: Sequence[Word], *, where: str) -> Span:
    """Build a ``Span`` (words sorted by start), turning its ``ValueError`` into a ``TranscriptError``."""
    ordered = tuple(sorted(words, key=lambda w: (w.start_seconds, w.stop_seconds)))
    try:
        return Span(text=text, start_seconds=start_seconds, stop_seconds=stop_seconds, words=ordered)
    except ValueError as error:
        raise TranscriptError(f"{where}: {error}; hint: check the stamps of this segment in the file") from None


def attach_words(spans: Sequence[Span], words: Sequence[Word], *, name: str) -> list[Span]:
    """Give each word to the span that contains it (by its midpoint); a word in no span becomes its own span.

    Args:
        spans: spans without words, any order.
        words: words to distribute.
        name: file name, for the log line about orphans.
    """
    ordered = sorted(spans, key=lambda s: (s.start_seconds, s.stop_seconds))
    starts = [s.start_seconds for s in ordered]
    owned: list[list[Word]] = [[] for _ in ordered]
    orphans: list[Span] = []
    for word in words:
        mid = 0.5 * (word.start_seconds + word.stop_seconds)
        k = bisect.bisect_right(starts, mid) - 1
        if k >= 0 and mid <= ordered[k].stop_seconds + _CONTAINS_TOLERANCE_SECONDS:
            owned[k].append(word)
        else:
            orphans.append(Span(word.text, word.start_seconds, word.stop_seconds, (word,)))
    if orphans:
        logger.warning("%s: %d word(s) lie in no span; each became its own span", name, len(orphans))
    merged = [Span(s.text, s.start_seconds, s.stop_seconds, tuple(ws)) for s, ws in zip(ordered, owned)]
    return merged + orphans


def carried_lines(lines: Sequence[str], previous: Sequence[str], *, start_seconds: float,
                  previous_stop_seconds: Optional[float], after_snapshot: bool = False) -> int:
    """How many of a cue's leading lines are the previous cue still on screen (roll-up captions), to drop.

    Roll-up captions (YouTube's automatic captions, CEA-608 roll-up converted to SRT/WebVTT) show the previous
    line above the new one; each cue repeats the line(s) already spoken::

        00:00:01.000 --> 00:00:03.000        " "            / "seven bright lamps"    spoken 1.0-3.0
        00:00:03.000 --> 00:00:03.010        "seven bright lamps" / " "             (nothing new: dropped)
        00:00:03.010 --> 00:00:05.000        "seven bright lamps" / "glow above"    only "glow above" is new

    A cue of two lines or more (blank ones included) that starts no later than 1 ms after the previous cue ends, and
    whose first non-blank lines equal the previous cue's last non-blank lines, carries those lines over. After a pause
    in the speech the next cue starts later, still carrying the line on screen::

        00:00:03.000 --> 00:00:03.010        "seven bright lamps" / " "             (a snapshot: dropped)
        00:00:04.200 --> 00:00:06.000        "seven bright lamps" / "glow above"    only "glow above" is new

    so a cue right after such a snapshot (``after_snapshot``: the previous cue was dropped as one) carries lines
    whatever the gap. Returns the number of leading ``lines`` (blank lines among them included) to drop; 0 when
    nothing is carried.

    Args:
        lines: the cue's lines as plain text (markup removed), in order.
        previous: the previous cue's lines (as plain text), in file order.
        start_seconds: the cue's start.
        previous_stop_seconds: the previous cue's stop; None for the first cue.
        after_snapshot: the previous cue only repeated the lines before it (it was dropped as a roll-up snapshot).
    """
    if (previous_stop_seconds is None or len(lines) < 2
            or (start_seconds > previous_stop_seconds + _CONTAINS_TOLERANCE_SECONDS and not after_snapshot)):
        return 0
    shown = [_clean(line) for line in previous if _clean(line)]
    mine = [(k, _clean(line)) for k, line in enumerate(lines) if _clean(line)]
    for count in range(min(len(shown), len(mine)), 0, -1):
        if [text for _, text in mine[:count]] == shown[-count:]:
            return mine[count - 1][0] + 1
    return 0


_SRT_UNDERLINE = re.compile(r"\{\\u1\}(.*?)\{\\u0\}", re.S)
"""pysubs2's reading of SRT ``<u>…</u>`` (an SSA override pair)."""
_VTT_UNDERLINE = re.compile(r"<u>(.*?)</u>", re.S)
_SSA_TAG = re.compile(r"\{[^}]*\}")


def underlined_word(raw: str, underline: "re.Pattern[str]", tag: "re.Pattern[str]") -> Optional[tuple[int, str]]:
    """The one underlined stretch of a cue's markup as ``(words before it, its text)``; None when the cue has none or
    several (openai-whisper's ``--highlight_words True`` underlines one word per cue)."""
    found = list(underline.finditer(raw))
    if len(found) != 1:
        return None
    before = tag.sub(" ", raw[:found[0].start()]).replace("\\N", " ")
    return len(html.unescape(before).split()), _clean(html.unescape(tag.sub("", found[0].group(1))))


def merge_highlighted(spans: list[Span], marks: Sequence[Optional[tuple[int, str]]], *, name: str) -> list[Span]:
    """openai-whisper's ``--word_timestamps True --highlight_words True`` subtitles: each segment's text is repeated
    in one cue per word, that word underlined and the cue timed to it (plus a cue with no underline over a gap
    between words)::

        00:00:01.145 --> 00:00:01.492   <u>Bobby</u> ripped the ledger
        00:00:01.492 --> 00:00:01.738   Bobby <u>ripped</u> the ledger

    Read as they stand, the segment's text was spoken once per word (N cues, each aligned as the whole sentence).
    A run of two cues or more, each starting where the one before stops (1 ms), with the same text, each underlining
    one word (or none) at increasing word positions, at least two underlined, becomes one span over the run whose
    words are the underlined ones at their cues' times. ``marks[i]`` is :func:`underlined_word` of ``spans[i]``."""
    out: list[Span] = []
    i, merged = 0, 0
    while i < len(spans):
        j, last = i + 1, marks[i][0] if marks[i] else -1
        while (j < len(spans) and spans[j].text == spans[i].text and not spans[j].words
               and abs(spans[j].start_seconds - spans[j - 1].stop_seconds) <= _CONTAINS_TOLERANCE_SECONDS
               and (marks[j] is None or marks[j][0] > last)):
            last = marks[j][0] if marks[j] else last
            j += 1
        run = [(span, mark) for span, mark in zip(spans[i:j], marks[i:j]) if mark is not None]
        if len(run) >= 2 and not spans[i].words:
            words = [make_word(mark[1], span.start_seconds, span.stop_seconds, None, where=name) for span, mark in run
                     if mark[1]]
            out.append(make_span(spans[i].text, spans[i].start_seconds, spans[j - 1].stop_seconds, words, where=name))
            merged += j - i
            i = j
            continue
        out.append(spans[i])
        i += 1
    if merged:
        logger.info("%s: %d highlighted-word cue(s) (openai-whisper --highlight_words) read as words of their segment",
                    name, merged)
    return out


# ----------------------------------------------------------------------------------------------- SRT


def parse_srt(text: str, *, name: str) -> list[Span]:
    """SubRip: cues parsed by pysubs2; every line with ``-->`` must be a valid timing line."""
    import pysubs2

    timing_lines = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if "-->" in line:
            match = _SRT_TIMING_LINE.match(line)
            if not match:
                raise TranscriptError(
                    f"{name}: line {number}: malformed SRT timing line {line.strip()!r}; "
                    "hint: expected 'HH:MM:SS,mmm --> HH:MM:SS,mmm'"
                )
            for stamp in (match.groups()[:4], match.groups()[4:]):
                if int(stamp[1]) > 59 or int(stamp[2]) > 59:
                    raise TranscriptError(f"{name}: line {number}: bad SRT time in {line.strip()!r}: minutes and "
                                          "seconds must be <= 59")
            timing_lines.append(number)
    if timing_lines:  # none at all: reported below as "no SRT cues"
        _check_srt_blocks(_block_lines(text), name)
    try:
        events = list(pysubs2.SSAFile.from_string(text, format_="srt"))
    except Exception as error:  # pysubs2 raises its own and built-in types
        raise TranscriptError(f"{name}: pysubs2 could not read the SRT: {type(error).__name__}: {error}") from None
    if len(events) != len(timing_lines):
        raise TranscriptError(
            f"{name}: found {len(timing_lines)} timing lines but pysubs2 read {len(events)} cues; "
            "hint: check the cue structure (number, timing line, text, blank line)"
        )
    if not events and text.strip():
        raise TranscriptError(f"{name}: no SRT cues found (no line with '-->'); hint: is this really SubRip?")
    spans = []
    previous: tuple[list[str], Optional[float]] = ([], None)
    snapshot = False  # the previous cue was dropped as a roll-up snapshot
    marks = []  # the underlined word of each span kept (openai-whisper --highlight_words)
    for event, line_number in zip(events, timing_lines):
        where = f"{name}: line {line_number}"
        lines = event.plaintext.split("\n")
        start, stop = event.start / 1000.0, event.end / 1000.0
        mark = underlined_word(event.text, _SRT_UNDERLINE, _SSA_TAG)
        # a highlighted-word cue, or the plain cue over a gap after one, is no roll-up (its lines are the segment's)
        carried = 0 if mark or (marks and marks[-1]) else carried_lines(
            lines, previous[0], start_seconds=start, previous_stop_seconds=previous[1], after_snapshot=snapshot)
        previous = (lines, stop)
        # entities as in WebVTT: "Tom &amp; Jerry" -> "Tom & Jerry"
        text = _clean(html.unescape("\n".join(lines[carried:])))
        snapshot = bool(carried) and not text
        if carried and not text:
            logger.debug("%s: the cue repeats the previous one's last line(s) only (roll-up): dropped", where)
            continue
        spans.append(make_span(text, start, stop, (), where=where))
        marks.append(mark)
    if len(spans) < len(events):
        logger.info("%s: %d roll-up cue(s) that only repeat the previous cue's line(s) dropped", name,
                    len(events) - len(spans))
    return merge_highlighted(spans, marks, name=name) if any(marks) else spans


def _block_lines(text: str) -> list[str]:
    """The lines of an SRT file as :func:`_check_srt_blocks` judges blocks: ``text.splitlines()``, except that in a
    file whose cues end in LF a lone CR line (``\\n\\r\\n``) is a line break inside a cue, not the blank line that
    ends it: FFmpeg's SRT muxer (``yt-dlp --convert-subs srt``) writes a cue's line breaks as CRLF, and YouTube's
    roll-up cues start with a blank line. pysubs2 reads such a cue whole."""
    if "\r\n\r\n" in text or "\n\r\n" not in text:
        return text.splitlines()
    return ["\u00b6" if line == "\r" else line.rstrip("\r") for line in text.split("\n")]


def _check_srt_blocks(lines: Sequence[str], name: str) -> None:
    """Every cue (a block of non-blank lines) starts with its timing line, or its number then its timing line:
    pysubs2 silently drops a block without one, which would lose that cue's text."""
    block_start: Optional[int] = None
    for number, line in enumerate(list(lines) + [""], start=1):
        if line.strip():
            if block_start is None:
                block_start = number
            continue
        if block_start is not None:
            head = [lines[i - 1] for i in range(block_start, min(block_start + 2, number))]
            timed = "-->" in head[0] or (len(head) > 1 and _SRT_CUE_NUMBER.match(head[0]) and "-->" in head[1])
            if not timed:
                raise TranscriptError(
                    f"{name}: line {block_start}: cue without a timing line ({head[0].strip()[:40]!r}); "
                    "hint: each cue is a number, a 'HH:MM:SS,mmm --> HH:MM:SS,mmm' line, its text, then a blank line"
                )
            block_start = None


# ---------------------------------------------------------------------------------------------- STM

_STM_IGNORE = "ignore_time_segment_in_scoring"


def parse_stm(text: str, *, name: str) -> list[Span]:
    """NIST STM (segment time marks, as in TED-LIUM): one segment per line,
    ``<file> <channel> <speaker> <begin> <end> [<label>] <transcript>``; ``;;`` lines are comments.

    Segments marked ``ignore_time_segment_in_scoring`` (non-speech) and empty segments are dropped.
    """
    spans = []
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(";;"):
            continue
        fields = stripped.split(None, 5)
        where = f"{name}: line {number}"
        if len(fields) < 5:
            raise TranscriptError(
                f"{where}: STM line has {len(fields)} field(s), expected at least 5 "
                f"(file channel speaker begin end [<label>] text): {stripped[:80]!r}"
            )
        try:
            start, stop = float(fields[3]), float(fields[4])
        except ValueError:
            raise TranscriptError(f"{where}: STM begin/end {fields[3]!r} {fields[4]!r} are not numbers (seconds)") from None
        rest = fields[5] if len(fields) > 5 else ""
        if rest.startswith("<"):  # optional label, e.g. <o,f0,male>
            rest = rest.split(">", 1)[1] if ">" in rest else ""
        words = _clean(rest)
        if not words or words == _STM_IGNORE:
            continue
        spans.append(make_span(words, check_seconds(start, where=where), check_seconds(stop, where=where), (), where=where))
    return spans


# ---------------------------------------------------------------------------------------------- WebVTT


def _vtt_seconds(groups: Sequence[Optional[str]]) -> float:
    """Seconds from the groups of ``_VTT_TIMESTAMP`` (hours, minutes, seconds, fraction)."""
    hours, minutes, seconds, fraction = groups
    if int(minutes or 0) > 59 or int(seconds or 0) > 59:
        raise ValueError("minutes and seconds must be <= 59")
    if int(hours or 0) * 3600 > MAX_STAMP_SECONDS:
        raise ValueError(f"{hours} hours is past {MAX_STAMP_SECONDS / 3600:g} hours (a broken export)")
    millis = int(str(fraction).ljust(3, "0"))
    return (int(hours or 0) * 3_600_000 + int(minutes or 0) * 60_000 + int(seconds or 0) * 1000 + millis) / 1000.0


def _vtt_words(raw_text: str, start_seconds: float, stop_seconds: float, *, where: str) -> list[Word]:
    """Words from inline stamps: ``a<00:00:07.860> b`` → ``a`` from the cue start, ``b`` from 7.860.

    Each stamp starts the text that follows it; a chunk ends where the next begins (the last at the cue
    end). A chunk of several words is split evenly in time. No stamps → no words.
    """
    flat = " ".join(raw_text.splitlines())
    pieces = _VTT_INLINE_STAMP.split(flat)
    # split() yields text, then (stamp, 4 groups, text) per match.
    if len(pieces) == 1:
        return []
    chunks: list[tuple[float, str]] = [(start_seconds, pieces[0])]
    for k in range(1, len(pieces), 6):
        stamp = pieces[k]
        try:
            seconds = _vtt_seconds(pieces[k + 1 : k + 5])
        except ValueError as error:
            raise TranscriptError(f"{where}: bad inline timestamp <{stamp}>: {error}") from None
        previous = chunks[-1][0]
        if not (previous <= seconds <= stop_seconds):
            raise TranscriptError(
                f"{where}: inline timestamp <{stamp}> = {seconds}s is outside [{previous}, {stop_seconds}]; "
                "hint: inline stamps must increase and lie inside the cue"
            )
        chunks.append((seconds, pieces[k + 5]))
    words: list[Word] = []
    for j, (chunk_start, chunk_text) in enumerate(chunks):
        chunk_stop = chunks[j + 1][0] if j + 1 < len(chunks) else stop_seconds
        tokens = _clean(html.unescape(_VTT_TAG.sub("", chunk_text))).split()
        step = (chunk_stop - chunk_start) / max(len(tokens), 1)
        for i, token in enumerate(tokens):
            stop = chunk_stop if i == len(tokens) - 1 else chunk_start + (i + 1) * step
            words.append(make_word(token, chunk_start + i * step, stop, None, where=where))
    return words


def _mapped(span: Span, timestamp_map: TimestampMap, *, where: str) -> Span:
    """``span`` and its words moved onto the MPEG-TS timeline by the file's ``X-TIMESTAMP-MAP``."""
    words = [make_word(w.text, timestamp_map.seconds(w.start_seconds, where=where),
                       timestamp_map.seconds(w.stop_seconds, where=where), w.score, where=where) for w in span.words]
    return make_span(span.text, timestamp_map.seconds(span.start_seconds, where=where),
                     timestamp_map.seconds(span.stop_seconds, where=where), words, where=where)


def parse_vtt(text: str, *, name: str) -> list[Span]:
    """WebVTT: cues parsed by webvtt-py; inline ``<hh:mm:ss.mmm>`` stamps become words.

    An HLS segment's ``X-TIMESTAMP-MAP=MPEGTS:<ticks>,LOCAL:<time>`` header moves every cue and word time onto the
    media's MPEG-TS presentation timeline (``seconds = MPEGTS / 90000 + t - LOCAL``, 33-bit wrap as FFmpeg reads
    it): ``loaders._vtt_timestamp_map`` states the contract. Without a map the times are kept as stamped."""
    import webvtt

    timing_lines = []
    for number, line in enumerate(text.splitlines(), start=1):
        if "-->" in line:
            match = _VTT_TIMING_LINE.match(line)
            if match is None:
                raise TranscriptError(
                    f"{name}: line {number}: malformed WebVTT timing line {line.strip()!r}; "
                    "hint: expected '[HH:]MM:SS.mmm --> [HH:]MM:SS.mmm [settings]'"
                )
            try:
                _vtt_seconds(match.groups()[1:5])
                _vtt_seconds(match.groups()[6:10])
            except ValueError as error:
                raise TranscriptError(f"{name}: line {number}: bad timestamp in {line.strip()!r}: {error}") from None
            timing_lines.append(number)
    if not text.lstrip("\ufeff").startswith("WEBVTT"):
        raise TranscriptError(f"{name}: line 1: WebVTT must start with 'WEBVTT', got {text[:20]!r}")
    timestamp_map = find_timestamp_map(text, name=name)
    if timestamp_map is not None and timestamp_map.is_identity:
        timestamp_map = None  # MPEGTS:0,LOCAL:00:00:00.000: the times stay exactly as stamped
    try:
        captions = list(webvtt.WebVTT.from_string(text))
    except Exception as error:  # webvtt-py raises MalformedFileError / MalformedCaptionError and built-ins
        raise TranscriptError(f"{name}: webvtt-py could not read the file: {type(error).__name__}: {error}") from None
    if len(captions) != len(timing_lines):
        raise TranscriptError(
            f"{name}: found {len(timing_lines)} timing lines but webvtt-py read {len(captions)} cues; "
            "hint: cues must be separated by blank lines and NOTE blocks must not contain '-->'"
        )
    spans = []
    marks = []  # the underlined word of each span kept (openai-whisper --highlight_words)
    previous: tuple[list[str], Optional[float]] = ([], None)
    snapshot = False  # the previous cue was dropped as a roll-up snapshot
    for caption, line_number in zip(captions, timing_lines):
        where = f"{name}: line {line_number}"
        start = caption.start_time.in_milliseconds() / 1000.0
        stop = caption.end_time.in_milliseconds() / 1000.0
        raw_lines = caption.raw_text.split("\n")
        plain = [html.unescape(_VTT_TAG.sub("", line)) for line in raw_lines]
        mark = underlined_word(caption.raw_text, _VTT_UNDERLINE, _VTT_TAG)
        # a highlighted-word cue, or the plain cue over a gap after one, is no roll-up (its lines are the segment's)
        carried = 0 if mark or (marks and marks[-1]) else carried_lines(
            plain, previous[0], start_seconds=start, previous_stop_seconds=previous[1], after_snapshot=snapshot)
        previous = (plain, stop)
        raw_text = "\n".join(raw_lines[carried:]) if carried else caption.raw_text
        text = _clean(" ".join(plain[carried:])) if carried else _clean(html.unescape(caption.text))
        snapshot = bool(carried) and not text
        make_span(text, start, stop, (), where=where)  # stop < start, before reading inline stamps
        if carried and not text:
            logger.debug("%s: the cue repeats the previous one's last line(s) only (roll-up): dropped", where)
            continue
        words = _vtt_words(raw_text, start, stop, where=where)
        span = make_span(text, start, stop, words, where=where)
        spans.append(span if timestamp_map is None else _mapped(span, timestamp_map, where=where))
        marks.append(mark)
    if len(spans) < len(captions):
        logger.info("%s: %d roll-up cue(s) that only repeat the previous cue's line(s) dropped", name,
                    len(captions) - len(spans))
    return merge_highlighted(spans, marks, name=name) if any(marks) else spans


# ------------------------------------------------------------------------------------------------ JSON


def _json_get_seconds(item: dict, keys: Sequence[str], *, where: str) -> Optional[float]:
    """The first present key of ``keys`` as checked seconds; None when none is present (or it is null)."""
    for key in keys:
        if key in item and item[key] is not None:
            return check_seconds(item[key], where=f"{where}.{key}")
    return None


def _json_score(item: dict, *, where: str) -> Optional[float]:
    for key in ("score", "probability", "confidence"):
        value = item.get(key)
        if value is None:
            continue
        try:
            score = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        except OverflowError:
            score = math.inf
        if not math.isfinite(score):
            raise TranscriptError(f"{where}.{key}: expected a finite number, got {value!r:.40}")
        return score
    return None


def _json_text(item: dict, keys: Sequence[str], *, where: str) -> Optional[str]:
    for key in keys:
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise TranscriptError(f"{where}.{key}: expected a string, got {value!r} ({type(value).__name__})")
        return value.strip()
    return None


def _json_words(
    raw_words: Any, seg_start: float, seg_stop: float, *, where: str, counter: list[int]
) -> list[Word]:
    """Words of one segment; words without both stamps get times interpolated between their neighbours.

    A run of ``k`` untimed words between the previous timed word's stop (or the segment start) and the
    next timed word's start (or the segment end) shares that gap evenly. ``counter[0]`` counts them.
    """
    if not isinstance(raw_words, list):
        raise TranscriptError(f"{where}: expected a list of words, got {type(raw_words).__name__}")
    parsed: list[tuple[str, Optional[float], Optional[float], Optional[float]]] = []
    for i, item in enumerate(raw_words):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            raise TranscriptError(f"{at}: expected an object with 'word', 'start', 'end', got {item!r:.80}"
                                  + _namedtuple_hint(item, word=True))
        text = _json_text(item, ("word", "text"), where=at)
        if text is None:
            raise TranscriptError(f"{at}: missing 'word'; hint: each word needs a 'word' (or 'text') string")
        start = _json_get_seconds(item, ("start", "start_seconds"), where=at)
        stop = _json_get_seconds(item, ("end", "stop", "stop_seconds"), where=at)
        if start is not None and stop is not None:
            make_word(text, start, stop, None, where=at)  # reject stop < start before interpolating
        parsed.append((text, start, stop, _json_score(item, where=at)))
    words: list[Word] = []
    i = 0
    while i < len(parsed):
        text, start, stop, score = parsed[i]
        if start is not None and stop is not None:
            words.append(make_word(text, start, stop, score, where=f"{where}[{i}]"))
            i += 1
            continue
        j = i
        while j < len(parsed) and (parsed[j][1] is None or parsed[j][2] is None):
            j += 1
        gap_start = words[-1].stop_seconds if words else seg_start
        next_start = parsed[j][1] if j < len(parsed) else None
        # A trailing run past the segment end (word_segments, sloppy stamps) gets zero-length words.
        gap_stop = max(seg_stop, gap_start) if next_start is None else next_start
        if gap_stop < gap_start:
            raise TranscriptError(
                f"{where}[{i}]: cannot interpolate a time: the gap [{gap_start}, {gap_stop}] ends before it starts; "
                "hint: the neighbouring words' stamps overlap"
            )
        step = (gap_stop - gap_start) / (j - i)
        for k in range(i, j):
            w_start = gap_start + (k - i) * step
            w_stop = gap_stop if k == j - 1 else gap_start + (k - i + 1) * step
            words.append(make_word(parsed[k][0], w_start, w_stop, parsed[k][3], where=f"{where}[{k}]"))
        counter[0] += j - i
        i = j
    return words


def _namedtuple_hint(item: Any, *, word: bool) -> str:
    """A hint when ``item`` is faster-whisper's ``Word`` (``[start, end, word, probability]``) or ``Segment`` (``[id,
    seek, start, end, text, ...]``) written by ``json.dump``: before faster-whisper 1.1 they are namedtuples, which
    JSON writes as arrays (``segment._asdict()`` keeps its words as namedtuples)."""
    def number(x: Any) -> bool:
        return isinstance(x, (int, float)) and not isinstance(x, bool)

    if not isinstance(item, list):
        return ""
    if word and len(item) == 4 and number(item[0]) and number(item[1]) and isinstance(item[2], str):
        what = "faster-whisper's Word [start, end, word, probability]"
    elif not word and len(item) >= 5 and all(map(number, item[:4])) and isinstance(item[4], str):
        what = "faster-whisper's Segment [id, seek, start, end, text, ...]"
    else:
        return ""
    return (f"; hint: this looks like {what} written as a JSON array (a namedtuple): write objects, e.g. "
            "json.dump([{**s._asdict(), 'words': [w._asdict() for w in s.words or []]} for s in segments], f)")


def _json_segment(item: Any, *, where: str, counter: list[int]) -> Span:
    if not isinstance(item, dict):
        raise TranscriptError(f"{where}: expected an object with 'text', 'start', 'end', got {item!r:.80}"
                              + (_namedtuple_hint(item, word=False) or _namedtuple_hint(item, word=True)))
    start = _json_get_seconds(item, ("start", "start_seconds"), where=where)
    stop = _json_get_seconds(item, ("end", "stop", "stop_seconds"), where=where)
    if start is None or stop is None:
        missing = "start" if start is None else "end"
        raise TranscriptError(f"{where}.{missing}: missing; hint: every segment needs 'start' and 'end' (seconds)")
    text = _json_text(item, ("text",), where=where)
    make_span(_clean(text or ""), start, stop, (), where=where)  # stop < start, before the words
    words: list[Word] = []
    if item.get("words") is not None:
        words = _json_words(item["words"], start, stop, where=f"{where}.words", counter=counter)
    if text is None:
        text = " ".join(w.text for w in words)
    span = make_span(_clean(text), start, stop, words, where=where)
    if item.get("words_derived") is True and span.words:  # avalign preprocess: words placed inside a caption
        span = dataclasses.replace(span, words_derived=True)
    return span


def _cpp_seconds(value: Any, *, where: str) -> float:
    """whisper.cpp's ``timestamps`` string ``"HH:MM:SS,mmm"`` (``.`` accepted; an SRT time) in seconds."""
    match = re.fullmatch(rf"\s*{_SRT_TIMESTAMP}\s*", value) if isinstance(value, str) else None
    if match is None:
        raise TranscriptError(f"{where}: expected a time 'HH:MM:SS,mmm', got {value!r:.40}")
    try:
        return _vtt_seconds(match.groups())
    except ValueError as error:
        raise TranscriptError(f"{where}: bad time {value!r}: {error}") from None


def _cpp_bounds(item: dict, *, where: str) -> Optional[list[float]]:
    """``[from, to]`` seconds of a whisper.cpp segment or token: its ``offsets`` (ms), else its ``timestamps``
    (``"HH:MM:SS,mmm"``); None when it has neither (whisper.cpp writes a token's times only when it has them)."""
    offsets, stamps = item.get("offsets"), item.get("timestamps")
    if isinstance(offsets, dict) and "from" in offsets and "to" in offsets:
        return [_milliseconds(offsets[k], where=f"{where}.offsets.{k}") for k in ("from", "to")]
    if isinstance(stamps, dict) and "from" in stamps and "to" in stamps:
        return [_cpp_seconds(stamps[k], where=f"{where}.timestamps.{k}") for k in ("from", "to")]
    return None


# whisper.cpp's special tokens as ``-ojf`` writes them: ``[_BEG_]``, ``[_TT_123]``, ``[_SOT_]``, ``<|endoftext|>``.
_CPP_SPECIAL_TOKEN = re.compile(r"^\s*(\[_[^\]]*\]|<\|[^|]*\|>)\s*$")


def _is_punctuation(text: str) -> bool:
    """Whether ``text`` (not blank) is punctuation only (Unicode category P*: ``,`` ``.`` ``?`` ``...`` ``»``)."""
    return bool(text) and all(unicodedata.category(c).startswith("P") for c in text)


def _cpp_token_words(tokens: Any, *, where: str) -> list[dict]:
    """Words (``{"word", "start", "end", "score"}``, as :func:`_json_words` reads them) of one whisper.cpp
    ``-ojf`` segment's ``tokens``::

        tokens  [_BEG_]  " He"  " said"  ' "'  "hel"  "lo"  '"'  " ("  "tw"  "ice"  ")."  [_TT_150]
        words            "He"   "said"   '"hello"'                  "(twice)."

    Special tokens are skipped. A token whose text starts with a space begins a word, any other continues the
    current one (a word piece), as whisper.cpp itself splits words (``whisper.cpp``'s ``split_on_word``: a token
    starting with ``' '``). A token of punctuation only that starts with a space (an opening quote or bracket,
    ``¿``, ``«``, a dash), or that comes before the segment's first word, opens the next word: it is held, with any
    punctuation token right after it, until that word's first other token (OpenAI whisper's
    ``prepend_punctuations`` do the same); a punctuation token without a space (``,`` ``.`` ``"`` ``)``) joins the
    previous word, as does a held prefix that no word follows. A word runs from its first timed token's ``from``
    (a held prefix's, when it has one) to its tokens' latest ``to`` (a word with no timed token gets times
    interpolated by :func:`_json_words`); its score is its tokens' mean ``p``.
    """
    if not isinstance(tokens, list):
        raise TranscriptError(f"{where}: expected a list of tokens, got {type(tokens).__name__}")
    words: list[dict] = []
    current: Optional[dict] = None
    held: Optional[dict] = None  # opening punctuation waiting for its word
    for j, token in enumerate(tokens):
        at = f"{where}[{j}]"
        if not isinstance(token, dict) or not isinstance(token.get("text"), str):
            raise TranscriptError(f"{at}: expected an object with a 'text' string, got {token!r:.80}")
        text = token["text"]
        if _CPP_SPECIAL_TOKEN.match(text):
            continue
        bounds = _cpp_bounds(token, where=at)
        p = token.get("p")
        piece = text.strip()
        if not piece:  # a lone space: the next token begins a word
            current = None
            continue
        spaced = text[:1].isspace()
        if _is_punctuation(piece) and (spaced or current is None or held is not None):
            target = held = held or {"word": "", "start": None, "end": None, "p": []}
            target["word"] += piece
        elif _is_punctuation(piece) or not (spaced or current is None or held is not None):
            target = current  # a word piece, or closing punctuation: the current word goes on
            target["word"] += piece
        else:
            target = current = held or {"word": "", "start": None, "end": None, "p": []}
            current["word"] += piece
            held = None
            words.append(current)
        _cpp_add_times(target, bounds, p)
    if held is not None and words:  # punctuation that no word follows: it closes the last word
        last = words[-1]
        last["word"] += held["word"]
        last["start"] = held["start"] if last["start"] is None else last["start"]
        if held["end"] is not None:
            last["end"] = held["end"] if last["end"] is None else max(last["end"], held["end"])
        last["p"] += held["p"]
    return [{"word": w["word"], "start": w["start"], "end": w["end"],
             "score": sum(w["p"]) / len(w["p"]) if w["p"] else None} for w in words]


def _cpp_add_times(word: dict, bounds: Optional[list[float]], p: Any) -> None:
    """Add one token's times (``[from, to]`` or None) and ``p`` to ``word``: its start stays its first timed
    token's ``from``; its end is the latest ``to``."""
    if bounds is not None:
        word["start"] = bounds[0] if word["start"] is None else word["start"]
        word["end"] = bounds[1] if word["end"] is None else max(word["end"], bounds[1])
    if isinstance(p, (int, float)) and not isinstance(p, bool) and math.isfinite(p):
        word["p"].append(float(p))


# How words that come without segments (the Hugging Face pipeline's word chunks, whisper.cpp's ``-ml 1``) are
# grouped into segments (:func:`_word_segments`).
WORD_SEGMENT_PAUSE_SECONDS = 2.0
"""A silence this long between two word chunks ends a segment: faster-whisper's VAD ends a speech chunk at a
silence of 2 s (``VadOptions.min_silence_duration_ms=2000``); shorter pauses (breaths, commas) stay inside one, as
they do inside a Whisper segment."""
WORD_SEGMENT_MAX_WORDS = 32
"""Words per segment at most (about 10 s of speech at 3 words/s, a long Whisper segment): unpunctuated output (a CTC
model's, lower-case Whisper's) still makes segments short enough to window, not one segment per clip."""
WORD_SEGMENT_MAX_SECONDS = 30.0
"""A segment spans this long at most: Whisper decodes 30 s windows, and none of its segments is longer."""
HF_OPEN_WORD_SECONDS = 0.3
"""How long an open word (end null) lasts when no other word is closed to take a median from: about a spoken
English word at 160-200 words per minute."""
# What ends a sentence (so a segment), after any closing quotes and brackets: Latin and CJK full stops, ?, !, …
_SENTENCE_END = frozenset(".?!\u2026\u3002\uff1f\uff01\uff0e\uff61\u203c\u2047\u2048\u2049")


_TITLES = frozenset(("mr", "mrs", "ms", "dr", "prof", "st", "mt", "vs"))
"""Abbreviations (lower case, without their dot) that come before a name or a noun, never at a sentence's end: Mr.
Mrs. Ms. Dr. Prof. St. Mt. vs. (``Jr.``, ``etc.``, ``a.m.`` end sentences as often as not: not listed)."""
_DOTTED = re.compile(r"(?:[^\W\d_]\.){2,}")
"""Letters each followed by a dot: ``e.g.`` ``i.e.`` ``U.S.`` ``U.K.`` ``a.m.``: an abbreviation."""


def _is_abbreviation(word: str) -> bool:
    """Whether ``word`` (opening quotes and brackets allowed) ends with its abbreviation's dot, so that dot does not
    end a sentence: a title (:data:`_TITLES`: ``Mr.`` ``Dr.``), dotted letters (``e.g.`` ``U.S.``), or a single
    capital's initial (``J.``; not ``I.``, the pronoun that ends "…than I."). A closing quote or bracket after the
    dot (``U.S.)``) is read as a sentence's end."""
    stripped = word.strip()
    while stripped and (unicodedata.category(stripped[0]) in ("Ps", "Pi") or stripped[0] in "\"'"):
        stripped = stripped[1:]
    if not stripped.endswith(".") or stripped.endswith(".."):
        return False
    body = stripped[:-1]
    if body.lower() in _TITLES or _DOTTED.fullmatch(stripped):
        return True
    return len(body) == 1 and body.isalpha() and body.isupper() and body != "I"


def _ends_sentence(text: str) -> bool:
    """Whether a word ends a sentence: its last character before closing quotes/brackets is ``.`` ``?`` ``!`` ``…``
    (or a CJK form: ``。`` ``？`` ``！``), unless that ``.`` is an abbreviation's (:func:`_is_abbreviation`: ``Mr.``
    ``e.g.`` ``U.S.`` ``J.``). A sentence that does end with an abbreviation ("in the U.S.") runs on into the next
    segment: it ends at the next sentence end, pause or word limit instead."""
    stripped = text.rstrip()
    while stripped and (unicodedata.category(stripped[-1]) in ("Pe", "Pf") or stripped[-1] in "\"'"):
        stripped = stripped[:-1]
    return bool(stripped) and stripped[-1] in _SENTENCE_END and not _is_abbreviation(text)


def _written_word(group: Sequence[tuple[float, float, str]], own_spaces: bool) -> str:
    """The last word of ``group`` as written (trailing spaces dropped): with Whisper's own spaces, the items since the
    last one that starts with a space joined (whisper.cpp ``-ml 1`` writes ``" Mr"`` then ``"."``, ``" e"`` ``"."``
    ``"g"`` ``"."``); else the last item."""
    if not own_spaces:
        return group[-1][2].rstrip()
    k = len(group) - 1
    while k > 0 and not group[k][2][:1].isspace():
        k -= 1
    return "".join(w[2] for w in group[k:]).rstrip()


def _one_word_each(texts: Sequence[str]) -> bool:
    """Whether every non-blank text of ``texts`` is one word (and one is): word-level output written as items."""
    split = [t.split() for t in texts if t.strip()]
    return bool(split) and all(len(words) == 1 for words in split)


def _word_segments(words: list[tuple[float, float, str]], document_text: Any = None) -> list[dict]:
    """Words ``(start, stop, text)`` grouped into segments as ASR output is segmented: a segment ends after a
    word that ends a sentence (:func:`_ends_sentence`: not an abbreviation's dot, ``Mr.`` ``e.g.`` ``U.S.`` ``J.``;
    a word as written, :func:`_written_word`), before a pause of ``WORD_SEGMENT_PAUSE_SECONDS`` or more, and
    before it would hold more than ``WORD_SEGMENT_MAX_WORDS`` words or span more than ``WORD_SEGMENT_MAX_SECONDS``. Its
    text joins its words as the tool's own text does: as they are when they carry their own spaces (Whisper's
    ``" Hello"``), else with a space, unless the document's ``document_text`` has none (a script without spaces); it
    runs from its earliest word's start to its latest word's stop."""
    own_spaces = any(t[:1].isspace() for _, _, t in words)
    separator = "" if own_spaces or (isinstance(document_text, str) and not document_text.split()[1:]) else " "
    groups: list[list[tuple[float, float, str]]] = []
    group: list[tuple[float, float, str]] = []
    written = ""  # the group's last word as written; a sentence end closes the group before the next word, unless
    for word in words:  # that word goes on with no space after a dot (" e" "." "g" ".": e.g.)
        ends = _ends_sentence(written) and (word[2][:1].isspace() or not own_spaces or not written.endswith("."))
        if group and (ends or word[0] - max(w[1] for w in group) >= WORD_SEGMENT_PAUSE_SECONDS
                      or len(group) >= WORD_SEGMENT_MAX_WORDS
                      or word[1] - min(w[0] for w in group) > WORD_SEGMENT_MAX_SECONDS):
            groups.append(group)
            group = []
        group.append(word)
        written = _written_word(group, own_spaces)
    if group:
        groups.append(group)
    return [{"start": min(w[0] for w in g), "end": max(w[1] for w in g),
             "text": _clean(separator.join(w[2] for w in g)),
             "words": [{"word": w[2], "start": w[0], "end": w[1]} for w in g]} for g in groups]


def _sentences_of(words: list[Word], document_text: Any, *, where: str) -> list[Span]:
    """A document's words with no segments around them, as segments: grouped by :func:`_word_segments` as the other
    word-level layouts are (the pipeline's word chunks, whisper.cpp ``-ml 1``), each segment keeping its words
    (scores included). Before, each word became a segment of its own, with a warning that it "lies in no span"."""
    ordered = sorted(words, key=lambda w: (w.start_seconds, w.stop_seconds))
    groups = _word_segments([(w.start_seconds, w.stop_seconds, w.text) for w in ordered], document_text)
    spans, first = [], 0
    for number, group in enumerate(groups):
        own = ordered[first:first + len(group["words"])]
        first += len(own)
        spans.append(make_span(group["text"], group["start"], group["end"], own, where=f"{where} (sentence {number})"))
    return spans


def _hf_chunks(chunks: list, *, name: str, text: Any = None) -> tuple[dict, str]:
    """The Hugging Face ASR pipeline's ``chunks`` (``text``: the document's own ``text``) as segments: each chunk a
    segment, or, when every chunk's text is one word (``return_timestamps="word"``), each chunk a word, the words
    grouped into segments (:func:`_word_segments`: at sentence ends and long pauses)::

        [{"text": " Hello", "timestamp": [0.5, 0.8]}, {"text": " world.", "timestamp": [0.8, 1.2]}]   words
        [{"text": " Hello world.", "timestamp": [0.5, 1.2]}, {"text": " Yes.", "timestamp": [1.4, 1.6]}]  segments

    Mixed input (some chunks of several words) is read as segments, every chunk: sentence-level output has
    one-word sentences too. Chunks with empty text do not count either way (and make no word). Sentence chunks of a
    script written without spaces (Chinese, Japanese) look like one word each and are read as words (forced
    alignment would not split them either). A segment's text joins its word chunks as the pipeline's ``text`` does:
    as they are when they carry their own spaces (Whisper's ``" Hello"``), else with a space when the document's
    ``text`` has spaces (a CTC model's ``"HELLO"``), else as they are (a script without spaces). The pipeline leaves
    the last chunk's end null when the audio ends inside it: a last word then lasts the median duration of the
    other words, or ``HF_OPEN_WORD_SECONDS`` when it is the only word (logged); an open segment, or an open chunk
    before the last, is refused.
    """
    parsed = []
    for i, chunk in enumerate(chunks):
        where = f"{name}: chunks[{i}]"
        stamp = chunk.get("timestamp") if isinstance(chunk, dict) else None
        if not isinstance(stamp, (list, tuple)) or len(stamp) != 2:
            raise TranscriptError(f"{where}: expected an object with 'timestamp': [start, end] and 'text'")
        chunk_text = chunk.get("text") or ""
        if not isinstance(chunk_text, str):
            raise TranscriptError(f"{where}.text: expected a string, got {chunk_text!r:.40} "
                                  f"({type(chunk_text).__name__})")
        parsed.append((where, stamp[0], stamp[1], chunk_text))
    as_words = _one_word_each([t for _, _, _, t in parsed])
    for k, (where, _, stop, _) in enumerate(parsed):
        if stop is None and not (as_words and k == len(parsed) - 1):
            raise TranscriptError(f"{where}.timestamp: end is null (the pipeline's last chunk, cut by the end of "
                                  "the audio?); hint: set it to the audio's duration")
    if not as_words:
        return {"segments": [{"start": a, "end": b, "text": t} for _, a, b, t in parsed]}, f"{name} (chunks)"
    words = [(check_seconds(a, where=f"{w}.timestamp[0]"), check_seconds(b, where=f"{w}.timestamp[1]"), t)
             for w, a, b, t in parsed if b is not None and t.strip()]
    where, start, stop, last_text = parsed[-1]
    if stop is None and last_text.strip():
        start = check_seconds(start, where=f"{where}.timestamp[0]")
        durations = sorted(b - a for a, b, _ in words)
        length = (HF_OPEN_WORD_SECONDS if not durations else
                  0.5 * (durations[(len(durations) - 1) // 2] + durations[len(durations) // 2]))
        logger.warning("%s.timestamp: end is null (the pipeline's last word, cut by the end of the audio): it lasts "
                       "%s, %.3f s", where, "the median word duration" if durations else "a typical word's length",
                       length)
        words.append((start, start + length, last_text))
    return {"segments": _word_segments(words, text)}, f"{name} (word chunks)"


def _other_whisper_layouts(document: Any, *, name: str) -> tuple[Any, str]:
    """whisper.cpp's ``-oj`` / ``-ojf`` JSON (``{"transcription": [{"offsets": {"from", "to"} (ms), "timestamps",
    "text", "tokens"?}]}``) and the Hugging Face ASR pipeline's ``{"text", "chunks": [{"timestamp": [start, end],
    "text"}]}`` as the ``{"segments": [...]}`` that :func:`parse_json` reads. whisper.cpp's segments keep their words
    when ``-ojf`` (``--output-json-full``) gave their ``tokens`` (:func:`_cpp_token_words`); ``-ml 1`` output (every
    segment one word, no tokens) is read as words grouped into segments (:func:`_word_segments`); else words come
    from forced alignment; the pipeline's chunks are words or segments (:func:`_hf_chunks`). Any other document is
    returned as it is. Before this, a ``KEY.json`` in either layout was taken for metadata and its sample loaded
    with no transcript, silently."""
    if not isinstance(document, dict) or any(k in document for k in ("segments", "spans", "word_segments")):
        return document, name
    items = document.get("transcription")
    if isinstance(items, list):
        segments = []
        for i, item in enumerate(items):
            where = f"{name}: transcription[{i}]"
            if not isinstance(item, dict):
                raise TranscriptError(f"{where}: expected an object with 'offsets' and 'text', got {item!r:.80}")
            bounds = _cpp_bounds(item, where=where)
            if bounds is None:
                raise TranscriptError(f"{where}: 'offsets' or 'timestamps' with 'from' and 'to': missing")
            segment = {"start": bounds[0], "end": bounds[1], "text": item.get("text", "")}
            if item.get("tokens") is not None:
                segment["words"] = _cpp_token_words(item["tokens"], where=f"{where}.tokens")
            segments.append(segment)
        texts = [str(seg["text"]) for seg in segments]
        several = sum(bool(t.strip()) for t in texts) > 1
        if several and _one_word_each(texts) and not any("words" in seg for seg in segments):
            # ``-ml 1`` (max segment length 1): a segment per word. Read as words, grouped into segments as the
            # pipeline's word chunks are (a segment per word fills the loader's segment budget 20x sooner).
            words = [(seg["start"], seg["end"], t) for seg, t in zip(segments, texts) if t.strip()]
            return {"segments": _word_segments(words)}, f"{name} (whisper.cpp, a word per segment)"
        return {"segments": segments}, f"{name} (whisper.cpp)"
    chunks = document.get("chunks")
    if isinstance(chunks, list):
        return _hf_chunks(chunks, name=name, text=document.get("text"))
    return document, name


def _milliseconds(value: Any, *, where: str) -> float:
    """A JSON number of milliseconds in seconds, checked as every stamp is (:func:`check_seconds`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            value = value / 1000.0
        except OverflowError:  # an int too large for a float
            value = math.inf
    return check_seconds(value, where=where)


def parse_json(text: str, *, name: str) -> list[Span]:
    """WhisperX / faster-whisper / OpenAI-whisper ``{"segments": [...]}``, a plain list of segments, or avalign's
    normalised ``{"spans": [{"text", "start_seconds", "stop_seconds", "words": [...]}]}``.

    Segments have ``start``, ``end`` (or ``stop``), ``text`` and optional ``words`` (``word``, ``start``,
    ``end``, ``score`` or ``probability``). When segments carry no words, a top-level ``word_segments`` list
    (WhisperX), else a top-level ``words`` list (OpenAI's ``verbose_json`` with word timestamps, which has no
    ``segments`` unless they were asked for too), is distributed over them; with no ``segments`` at all, the words
    are grouped into sentence segments (:func:`_sentences_of`). A video2dataset ``KEY.json`` record
    whose Whisper subsampler wrote its transcript under ``whisper_transcript`` (WhisperX's ``{"segments": …}``) is
    read from there. whisper.cpp's ``-oj`` / ``-ojf`` JSON (words from ``-ojf``'s tokens) and the Hugging Face ASR
    pipeline's ``chunks`` (words when every chunk is one word) are read too (:func:`_other_whisper_layouts`).
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise TranscriptError(
            f"{name}: line {error.lineno} column {error.colno}: invalid JSON: {error.msg}"
        ) from None
    except RecursionError:
        raise TranscriptError(f"{name}: JSON nested too deeply to read") from None
    except ValueError as error:  # e.g. an integer literal longer than Python's digit limit
        raise TranscriptError(f"{name}: invalid JSON number: {str(error)[:120]}") from None
    counter = [0]
    if (isinstance(document, dict) and isinstance(document.get("whisper_transcript"), dict)
            and not any(k in document for k in ("segments", "spans", "word_segments"))):
        document, name = document["whisper_transcript"], f"{name}: whisper_transcript"  # video2dataset's record
    document, name = _other_whisper_layouts(document, name=name)
    if isinstance(document, list) and document and all(
            isinstance(item, dict) and isinstance(item.get("word"), str) and "text" not in item for item in document):
        # A list of words alone (faster-whisper's words dumped as objects, ``[w._asdict() for s in segments for w in
        # s.words]``): read as OpenAI's top-level 'words' are, not as segments without text (each was an empty span).
        words = _json_words(document, 0.0, 0.0, where=f"{name}: words", counter=counter)
        spans = _sentences_of(words, None, where=f"{name}: words")
    elif isinstance(document, list):
        spans = [_json_segment(item, where=f"{name}: [{i}]", counter=counter) for i, item in enumerate(document)]
    elif isinstance(document, dict):
        # "spans" (with start_seconds/stop_seconds) is avalign's normalised form, written by `avalign preprocess`.
        segments = document.get("segments", document.get("spans"))
        # WhisperX's word list is "word_segments"; OpenAI's transcription API (verbose_json with word timestamps)
        # puts it at the top level as "words", with "segments" only when segment timestamps were asked for too.
        words_key = "word_segments" if document.get("word_segments") is not None else "words"
        word_segments = document.get(words_key)
        if segments is None and word_segments is None and isinstance(document.get("caption"), str):
            raise TranscriptError(
                f"{name}: segments: missing: it is a clip's metadata with a 'caption' (video2dataset's KEY.json: "
                f"{sorted(map(str, document))[:10]}), not a timed transcript; hint: a caption has no times: in a "
                "shard the loader reads it as the sample's caption (PackedBatch.caption_texts); to align its words, make it one SRT cue over "
                "the media (`1`, then `00:00:00,000 --> HH:MM:SS,mmm` to the media's end, then the text)"
            )
        if segments is None and word_segments is None and (
                isinstance(document.get("tiers"), dict) or isinstance(document.get("fragments"), list)):
            tool, how = (("Montreal Forced Aligner's JSON export (its 'tiers')", "align with MFA's default "
                          "`--output_format long_textgrid` and give the .TextGrid (its word tiers are read)")
                         if isinstance(document.get("tiers"), dict) else
                         ("an aeneas sync map (its 'fragments')", "run aeneas with `os_task_file_format=srt` (or "
                          "vtt, textgrid) and give that file"))
            raise TranscriptError(f"{name}: segments: missing: this looks like {tool}, not a Whisper layout; hint: "
                                  f"{how}")
        if segments is None and word_segments is None:
            raise TranscriptError(
                f"{name}: segments: missing; hint: expected WhisperX/whisper JSON with a 'segments' list "
                "(or a word list, WhisperX's 'word_segments' or OpenAI's 'words') "
                f"(top-level keys are {sorted(map(str, document))[:10]})"
            )
        if segments is not None and not isinstance(segments, list):
            raise TranscriptError(f"{name}: segments: expected a list, got {type(segments).__name__}")
        spans = [
            _json_segment(item, where=f"{name}: segments[{i}]", counter=counter)
            for i, item in enumerate(segments or [])
        ]
        if word_segments is not None and not any(s.words for s in spans):
            last_stop = max((s.stop_seconds for s in spans), default=0.0)
            loose = _json_words(word_segments, 0.0, last_stop, where=f"{name}: {words_key}", counter=counter)
            if segments is None:  # words only (OpenAI's word granularity, WhisperX's word_segments alone): sentences
                spans = _sentences_of(loose, document.get("text"), where=f"{name}: {words_key}")
            else:
                spans = attach_words(spans, loose, name=name)
    else:
        raise TranscriptError(
            f"{name}: expected a JSON object with 'segments' or a list of segments, got {type(document).__name__}"
        )
    if counter[0]:
        logger.info("%s: interpolated times of %d word(s) that had no start/end stamps", name, counter[0])
    return spans


# -------------------------------------------------------------------------------------------- TextGrid


def _pick_tier(tiers: Sequence[dict], hints: Sequence[str], exclude: Sequence[dict] = ()) -> Optional[dict]:
    """The first tier (not in ``exclude``) whose name contains one of ``hints`` (case-insensitive)."""
    for tier in tiers:
        if tier not in exclude and any(h in str(tier["name"]).lower() for h in hints):
            return tier
    return None


def _tg_number(value: object, *, where: str) -> object:
    """praatio hands long-format times over as strings: turn them into floats."""
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        raise TranscriptError(f"{where}: expected a number of seconds, got {value!r}") from None


def _tier_items(tier: dict, *, name: str) -> list[tuple[str, float, float]]:
    """Non-empty intervals of a tier as (label, start, stop), validated; numbered from 1 as in the file."""
    items = []
    for k, entry in enumerate(tier["entries"]):
        where = f"{name}: tier {tier['name']!r} interval {k + 1}"
        raw_start, raw_stop, label = entry
        start = check_seconds(_tg_number(raw_start, where=f"{where}.xmin"), where=f"{where}.xmin")
        stop = check_seconds(_tg_number(raw_stop, where=f"{where}.xmax"), where=f"{where}.xmax")
        label = _clean(str(label))
        if label:
            make_span(label, start, stop, (), where=where)
            items.append((label, start, stop))
    return items


def parse_textgrid(text: str, *, name: str) -> list[Span]:
    """Praat TextGrid (long or short text format), read by praatio.

    Tier choice: the interval tiers named like ``word`` give words; those named like ``phrase`` /
    ``segment`` / ``sentence`` / ``utterance`` … give spans and the words are attached to them (paired tier by tier
    when there are as many of each, as a phrase and a word tier per speaker); of the phrase tiers, only those named
    with the first one's hint are read (a tier per speaker is named alike; SPPAS's ``IPUs`` and ``Transcription``
    hold the same text twice). With word tiers only (Montreal Forced
    Aligner's ``<speaker> - words`` and ``<speaker> - phones`` per speaker), each word is its own span. Without
    either, the first interval tier that is not a phone tier gives spans without words (tiers named otherwise may be
    speakers or layers of one speaker, e.g. WebMAUS's ``ORT-MAU`` / ``KAN-MAU`` / ``MAU``: only the first is read,
    logged). Spans of several tiers are sorted by time. Phone tiers are never read: a TextGrid of phone tiers only
    (parselmouth's North Wind ``phonemes``) gives no spans, with a warning naming the tiers. Empty intervals are
    silence and are dropped.
    """
    from praatio.utilities import textgrid_io

    if "ooTextFile" not in text[:200]:
        raise TranscriptError(f"{name}: line 1: not a Praat TextGrid (no 'File type = \"ooTextFile\"' header)")
    for number, line in enumerate(text.splitlines(), start=1):  # long format: point at the bad line
        match = _TG_NUMERIC_LINE.match(line)
        if match is not None:
            try:
                float(match.group(2))
            except ValueError:
                raise TranscriptError(
                    f"{name}: line {number}: {match.group(1)} must be a number, got {match.group(2).strip()!r}"
                ) from None
    try:
        document = textgrid_io.parseTextgridStr(text, includeEmptyIntervals=True)
        tiers = [
            {"name": t["name"], "class": t["class"], "entries": [tuple(e) for e in t["entries"]]}
            for t in document["tiers"]
        ]
        for tier in tiers:
            shape = "(xmin, xmax, text)" if tier["class"] == "IntervalTier" else "(time, mark)"  # point tiers
            for entry in tier["entries"]:
                if len(entry) != (3 if tier["class"] == "IntervalTier" else 2):
                    raise ValueError(f"tier {tier['name']!r}: entry {entry!r} is not {shape}")
    except TranscriptError:
        raise
    except Exception as error:  # praatio raises built-in and its own types on malformed input
        raise TranscriptError(
            f"{name}: praatio could not read the TextGrid: {type(error).__name__}: {error}; "
            "hint: check the header, the 'size' counts and the xmin/xmax/text lines"
        ) from None
    intervals = [t for t in tiers if t["class"] == "IntervalTier"]
    if len(intervals) < len(tiers):
        logger.debug("%s: ignoring %d point tier(s)", name, len(tiers) - len(intervals))
    if not intervals:
        if tiers:  # a TextGrid of marks only (e.g. pitch or event points): nothing here is a timed text span
            logger.warning("%s: no interval tier, only point tier(s) %s: no spans read (words and phrases must be "
                           "in interval tiers)", name, ", ".join(repr(t["name"]) for t in tiers))
        return []
    is_phone = [_PHONE_TIER_NAME.search(str(t["name"]).lower()) is not None for t in intervals]
    word_tiers = [t for t, phone in zip(intervals, is_phone) if not phone and _pick_tier([t], _WORD_TIER_HINTS)]
    phrase_tiers = [t for t, phone in zip(intervals, is_phone)
                    if not phone and t not in word_tiers and _pick_tier([t], _PHRASE_TIER_HINTS)]
    if phrase_tiers:  # a tier per speaker is named alike ("A phrases", "B phrases"); other kinds are the same text
        hint = next(h for h in _PHRASE_TIER_HINTS if h in str(phrase_tiers[0]["name"]).lower())
        phrase_tiers = [t for t in phrase_tiers if hint in str(t["name"]).lower()]
    if not phrase_tiers and not word_tiers:  # tiers named otherwise: the first that is not a phone tier
        others = [t for t, phone in zip(intervals, is_phone) if not phone]
        if not others:  # phone tiers only (a phonetician's "phonemes" tier): phones are not words, read nothing
            logger.warning("%s: only phone tier(s) %s (%d interval(s)), no word or phrase tier: no spans read (phones "
                           "are not words); hint: add a tier named 'words' (Praat, or Montreal Forced Aligner's "
                           "'<speaker> - words'), or rename the tier if it holds words", name,
                           ", ".join(repr(t["name"]) for t in intervals),
                           sum(1 for t in intervals for e in t["entries"] if str(e[2]).strip()))
            return []
        phrase_tiers = others[:1]
        if len(others) > 1:  # speakers ("A", "B") or layers of one speaker (WebMAUS ORT-MAU, KAN-MAU, MAU): unknown
            logger.info("%s: spans from tier %r only; tiers %s are not read (name a tier per speaker '<speaker> - "
                        "words' or '<speaker> phrases' to read them all)", name, others[0]["name"],
                        [t["name"] for t in others[1:]])
    if len(word_tiers) + len(phrase_tiers) > 1:
        logger.info("%s: spans from tier(s) %s, words from tier(s) %s", name, [t["name"] for t in phrase_tiers],
                     [t["name"] for t in word_tiers])
    word_lists = [_tier_words(t, name=name) for t in word_tiers]
    if not phrase_tiers:
        words = sorted((w for ws in word_lists for w in ws), key=lambda w: (w.start_seconds, w.stop_seconds))
        return [Span(w.text, w.start_seconds, w.stop_seconds, (w,)) for w in words]
    span_lists = [[Span(label, s, e) for label, s, e in _tier_items(t, name=name)] for t in phrase_tiers]
    if len(span_lists) == len(word_lists) > 1:  # a phrase and a word tier per speaker, in the same order: paired
        spans = [span for ss, ws in zip(span_lists, word_lists) for span in attach_words(ss, ws, name=name)]
    else:
        spans = [span for ss in span_lists for span in ss]
        words = [w for ws in word_lists for w in ws]
        spans = attach_words(spans, words, name=name) if words else spans
    return sorted(spans, key=lambda span: (span.start_seconds, span.stop_seconds)) if len(span_lists) > 1 else spans


def _tier_words(tier: dict, *, name: str) -> list[Word]:
    """The non-empty intervals of a word tier as words."""
    where = f"{name}: tier {tier['name']!r}"
    return [make_word(label, s, e, None, where=where) for label, s, e in _tier_items(tier, name=name)]
