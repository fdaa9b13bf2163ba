"""Transcript files in the formats users bring: SRT, WebVTT, WhisperX JSON, Praat TextGrid, plain JSON list.

Every writer takes *stamped* words (times already on the transcript's clock, i.e. audio time plus
``text_offset``) grouped into sentences, and writes them as the tool would: captions of a few
words (SRT, WebVTT, ms precision), WhisperX segments with per-word times (ms precision, as WhisperX
rounds), TextGrid tiers ``words`` and ``phrases`` (µs precision), or ``[{"text", "start", "end"}]``
per word (µs precision).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Sequence

logger = logging.getLogger(__name__)

__all__ = ["StampedWord", "render_transcript"]

_CAPTION_MAX_WORDS = 4


@dataclass(frozen=True)
class StampedWord:
    """A word with its transcript stamps (seconds on the transcript's clock)."""

    text: str
    """The word."""
    start_seconds: float
    """Stamped start."""
    stop_seconds: float
    """Stamped end (excluded)."""


def _timestamp(seconds: float, *, separator: str) -> str:
    total_ms = int(round(seconds * 1000))
    if total_ms < 0:
        raise ValueError(f"caption time must be >= 0, got {seconds = }; shift the speech later")
    hours, rest = divmod(total_ms, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs, ms = divmod(rest, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}{separator}{ms:03d}"


def _captions(sentences: Sequence[Sequence[StampedWord]]) -> list[list[StampedWord]]:
    """Split each sentence into captions of at most four words (never across sentences)."""
    captions = []
    for words in sentences:
        for i in range(0, len(words), _CAPTION_MAX_WORDS):
            captions.append(list(words[i:i + _CAPTION_MAX_WORDS]))
    return captions


def _srt(sentences: Sequence[Sequence[StampedWord]]) -> str:
    blocks = []
    for number, caption in enumerate(_captions(sentences), start=1):
        start = _timestamp(caption[0].start_seconds, separator=",")
        stop = _timestamp(caption[-1].stop_seconds, separator=",")
        blocks.append(f"{number}\n{start} --> {stop}\n{' '.join(w.text for w in caption)}\n")
    return "\n".join(blocks)


def _vtt(sentences: Sequence[Sequence[StampedWord]]) -> str:
    blocks = ["WEBVTT\n"]
    for caption in _captions(sentences):
        start = _timestamp(caption[0].start_seconds, separator=".")
        stop = _timestamp(caption[-1].stop_seconds, separator=".")
        blocks.append(f"{start} --> {stop}\n{' '.join(w.text for w in caption)}\n")
    return "\n".join(blocks)


def _whisperx(sentences: Sequence[Sequence[StampedWord]]) -> str:
    segments = []
    for words in sentences:
        segments.append({
            "start": round(words[0].start_seconds, 3),
            "end": round(words[-1].stop_seconds, 3),
            "text": " " + " ".join(w.text for w in words),
            "words": [{"word": w.text, "start": round(w.start_seconds, 3), "end": round(w.stop_seconds, 3),
                       "score": 0.95} for w in words],
        })
    return json.dumps({"segments": segments, "language": "en"}, indent=1) + "\n"


def _jsonlist(sentences: Sequence[Sequence[StampedWord]]) -> str:
    items = [{"text": w.text, "start": round(w.start_seconds, 6), "end": round(w.stop_seconds, 6)}
             for words in sentences for w in words]
    return json.dumps(items, indent=1) + "\n"


def _textgrid_tier(name: str, items: Sequence[tuple[float, float, str]], xmax: float) -> list[str]:
    """Intervals covering [0, xmax) with empty intervals in the gaps (TextGrid tiers must tile)."""
    tiled: list[tuple[float, float, str]] = []
    cursor = 0.0
    for start, stop, text in items:
        if start > cursor:
            tiled.append((cursor, start, ""))
        tiled.append((start, stop, text))
        cursor = stop
    if cursor < xmax:
        tiled.append((cursor, xmax, ""))
    lines = ['        class = "IntervalTier"', f'        name = "{name}"', "        xmin = 0",
             f"        xmax = {xmax:.6f}", f"        intervals: size = {len(tiled)}"]
    for index, (start, stop, text) in enumerate(tiled, start=1):
        lines += [f"        intervals [{index}]:", f"            xmin = {start:.6f}", f"            xmax = {stop:.6f}",
                  f'            text = "{text}"']
    return lines


def _textgrid(sentences: Sequence[Sequence[StampedWord]], xmax: float) -> str:
    words = [(round(w.start_seconds, 6), round(w.stop_seconds, 6), w.text) for s in sentences for w in s]
    phrases = [(round(s[0].start_seconds, 6), round(s[-1].stop_seconds, 6), " ".join(w.text for w in s))
               for s in sentences]
    if words[0][0] < 0:
        raise ValueError(f"TextGrid times must be >= 0, got first word at {words[0][0]}")
    xmax = max(xmax, words[-1][1])
    lines = ['File type = "ooTextFile"', 'Object class = "TextGrid"', "", "xmin = 0", f"xmax = {xmax:.6f}",
             "tiers? <exists>", "size = 2", "item []:"]
    for index, (name, items) in enumerate((("words", words), ("phrases", phrases)), start=1):
        lines.append(f"    item [{index}]:")
        lines += _textgrid_tier(name, items, xmax)
    return "\n".join(lines) + "\n"


def render_transcript(sentences: Sequence[Sequence[StampedWord]], *, transcript_format: str,
                      duration_seconds: float) -> str:
    """Text of a transcript file.

    Args:
        sentences: stamped words, grouped by sentence, in time order.
        transcript_format: ``srt``, ``vtt``, ``whisperx``, ``textgrid`` or ``jsonlist``.
        duration_seconds: the TextGrid's ``xmax`` (at least the last word's stop).
    """
    if not sentences or not all(sentences):
        raise ValueError(f"need at least one non-empty sentence, got {len(sentences)} sentences")
    if transcript_format == "srt":
        return _srt(sentences)
    if transcript_format == "vtt":
        return _vtt(sentences)
    if transcript_format == "whisperx":
        return _whisperx(sentences)
    if transcript_format == "jsonlist":
        return _jsonlist(sentences)
    if transcript_format == "textgrid":
        return _textgrid(sentences, duration_seconds)
    raise ValueError(f"transcript_format must be srt|vtt|whisperx|textgrid|jsonlist, got {transcript_format = }")
