"""Text of a batch item: clip-level captions, and token ids mapped onto the item's frames and samples.

Captions: a video2dataset sample carries its text as ``KEY.txt`` (the caption) or in ``KEY.json`` metadata
(``{"caption": …}``); neither has times. :func:`caption_text` reads it and :func:`with_caption` makes it one
segment spanning the whole aligned item (every frame and sample); it does not go through the aligner, which
has nothing to estimate or force-align on a description of the clip. Beside a transcript (``KEY.srt`` …) the caption
is no segment (the transcript's spans are the item's text, and its tokens): it is passed through as the item's
``caption`` (``PackedBatch.caption_texts``).

Tokens: the item's text units (its words when it has any, else its segments: caption lines, cues) are joined
with single spaces and tokenized once (words found in their segments' text tokenize that text instead, so that
forced alignment's normalised words do not change the ids: :func:`tokenize_item`); each unit owns the characters
``[c0, c1)``; a token belongs to the first unit whose characters it overlaps (``t0 < c1 and t1 > c0``) and takes that unit's frame and sample ranges, on
the one clock ``align`` put the unit on::

    units      |"hello"   |"big"|"world"        |            joined: "hello big world"
    tokens     [CLS] hel  lo  big  wor  ld [SEP]
    unit       -     0    0   1    2    2  -       (special tokens overlap nothing: whole-item ranges)
    frames     [0,T) [3,7)[3,7)[7,9)[9,14)[9,14) [0,T)

A unit's tokens are the half-open range ``[token_start, token_stop)`` (empty, at the next token, when none
overlaps it). Without a tokenizer, whitespace-separated pieces are counted (no ids).
"""
from __future__ import annotations

import bisect
import dataclasses
import json
import logging
import math
import numbers
import operator
import os
import re
from collections import Counter
from typing import Any, Optional, Sequence

import numpy as np

from aligner import AlignedSpan
from avcore import CAPTION_EXTENSIONS, BatchItem, TextTokens
from avcore import TranscriptError
from loaders._transcripts import decode_text, is_transcript_json

logger = logging.getLogger(__name__)

__all__ = ["TOKENIZER_PROBE_TEXT", "caption_text", "check_tokenizer", "encode_text", "join_unit_texts", "locate_words",
           "token_owners", "tokenize_item", "unit_token_ranges", "with_caption"]

_WHITESPACE_TOKEN = re.compile(r"\S+")
MAX_CAPTION_BYTES = 1_000_000
"""A caption member larger than this is refused (a clip-level caption is a sentence or a paragraph)."""


_CAPTION_MEMBERS = (*CAPTION_EXTENSIONS, "meta.json")
"""Members read for a caption, in this order: ``avcore.CAPTION_EXTENSIONS``, then ``meta.json``, the name under
which ``avalign preprocess`` writes a video2dataset ``KEY.json`` metadata record (so its ``caption`` survives
preprocessing)."""


def caption_text(sample: dict) -> Optional[str]:
    """The clip-level caption of a sample (whitespace collapsed), or None when it has none.

    Read from ``txt`` / ``caption`` (the text), else from ``json`` / ``meta.json`` metadata's string ``caption``
    (video2dataset's record holding its ``whisper_transcript`` too: that is the transcript, this the caption;
    metadata that is not JSON holds no caption: :func:`~loaders._transcripts.is_transcript_json` takes it for a
    transcript, which the transcript reader reports).

    Raises:
        TranscriptError: a ``txt`` / ``caption`` member that is binary or broken UTF-8 (reason ``transcript``;
            cp1252 text is read as such, with a warning: :func:`~loaders._transcripts.decode_text`) or is over
            :data:`MAX_CAPTION_BYTES` (``too_large``); the message names the member (``KEY.txt``).
    """
    key = sample.get("__key__", "?")
    for ext in _CAPTION_MEMBERS:
        if ext not in sample:
            continue
        raw = sample[ext]
        if ext.endswith("json"):
            data = raw if isinstance(raw, str) else bytes(raw)
            if len(raw) > MAX_CAPTION_BYTES or is_transcript_json(raw) and not _record_holding_a_transcript(data):
                continue  # a transcript (read elsewhere), malformed (is_transcript_json says so), or too large
            value = json.loads(decode_text(data, f"{key}.{ext}", what="metadata"))
            text = value.get("caption") if isinstance(value, dict) else None
            if not isinstance(text, str):
                continue
        else:
            if len(raw) > MAX_CAPTION_BYTES:
                raise TranscriptError(f"{key}.{ext}: a caption of {len(raw)} bytes, over {MAX_CAPTION_BYTES}; hint: "
                                      "a long text with times belongs in a transcript (.srt, .vtt, .json)",
                                      reason="too_large")
            text = decode_text(bytes(raw), f"{key}.{ext}", what="caption")
        text = " ".join(text.split())
        if not text:
            continue
        return text
    return None


def _record_holding_a_transcript(data: Any) -> bool:
    """Whether a ``json`` member is video2dataset's metadata record holding its Whisper subsampler's
    ``whisper_transcript``: read as the sample's transcript, and still the record whose ``caption`` is the clip's."""
    try:
        value = json.loads(decode_text(data, "", what="metadata", warn=False))
    except (ValueError, TranscriptError, RecursionError):
        return False
    return isinstance(value, dict) and isinstance(value.get("whisper_transcript"), dict) and not any(
        k in value for k in ("segments", "spans", "word_segments"))


def with_caption(aligned: Any, text: str) -> Any:
    """``aligned`` (an ``aligner.AlignedSample`` without transcript) with one segment ``text`` over all of it."""
    num_frames = None if aligned.video is None else aligned.video.num_frames
    span = AlignedSpan(text, "segment", float(aligned.start_seconds), float(aligned.stop_seconds),
                       None if num_frames is None else 0, num_frames, 0, aligned.audio.num_samples)
    return dataclasses.replace(aligned, segments=(span,))


def encode_text(tokenizer: Any, text: str) -> tuple[Optional[list[int]], list[tuple[int, int]]]:
    """Token ids and character offsets of ``text``.

    Args:
        tokenizer: None (whitespace pieces, no ids); a ``tokenizers.Tokenizer`` (``encode(text)`` → ``.ids``,
            ``.offsets``); a Hugging Face fast tokenizer (called with ``return_offsets_mapping=True``); or a
            callable returning ``(ids, offsets)``, a dict with ``ids``/``input_ids`` and
            ``offsets``/``offset_mapping``, or an object with ``.ids`` and ``.offsets``.
        text: the joined text.

    Raises:
        TypeError: the tokenizer's output has none of those shapes.
        ValueError: ids and offsets differ in length, or an offset lies outside the text.
    """
    if tokenizer is None:
        return None, [(m.start(), m.end()) for m in _WHITESPACE_TOKEN.finditer(text)]
    return _checked_output(_call_tokenizer(tokenizer, text), text)


def _call_tokenizer(tokenizer: Any, text: str) -> Any:
    """The tokenizer's raw output for ``text`` (TypeError when ``tokenizer`` is none of the kinds taken)."""
    if hasattr(tokenizer, "backend_tokenizer"):  # transformers.PreTrainedTokenizerFast
        return tokenizer(text, return_offsets_mapping=True)
    if hasattr(tokenizer, "encode_batch") or (hasattr(tokenizer, "encode") and not callable(tokenizer)):
        return tokenizer.encode(text)  # tokenizers.Tokenizer: an Encoding with .ids and .offsets
    if callable(tokenizer):
        return tokenizer(text)
    raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, a fast HF tokenizer or a callable, got {type(tokenizer).__name__}.")


def _checked_output(result: Any, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """``(ids, offsets)`` of a tokenizer's output for ``text``, checked (see :func:`encode_text`)."""
    ids, offsets = _ids_and_offsets(result)
    if len(ids) != len(offsets):
        raise ValueError(f"tokenizer returned {len(ids)} ids but {len(offsets)} offsets for {text[:40]!r}.")
    bad = [o for o in offsets if not (0 <= o[0] <= o[1] <= len(text))]
    if bad:
        raise ValueError(f"tokenizer returned offsets outside the text (length {len(text)}): {bad[:3]}."
                         + _byte_offsets_hint(offsets, text))
    return ids, offsets


def _byte_offsets_hint(offsets: list[tuple[int, int]], text: str) -> str:
    """A sentence saying that ``offsets`` look like UTF-8 byte offsets (their largest end is the text's length in
    bytes, not in characters), or ``""``."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size == len(text) or not offsets or max(stop for _, stop in offsets) != size:
        return ""
    return (f" They look like UTF-8 byte offsets: the text is {len(text)} characters but {size} bytes, and the last "
            f"offset ends at {size}. Offsets must be character (str) offsets into the text, as a tokenizers.Tokenizer "
            "or a fast Hugging Face tokenizer gives them; convert byte offsets (e.g. tiktoken's) to character offsets "
            "in the callable.")


TOKENIZER_NON_ASCII_PROBE_TEXT = "héllo wörld"
"""The second probe of :func:`check_tokenizer`: 11 characters, 13 UTF-8 bytes (byte offsets end past the text)."""
TOKENIZER_PROBE_TEXT = "hello world"
"""The text :func:`check_tokenizer` tokenizes: two plain ASCII words every tokenizer has tokens for (``[UNK]`` at
worst), so that any failure on it is the tokenizer's, not the text's."""


def check_tokenizer(tokenizer: Any) -> None:
    """Raise when ``tokenizer`` cannot work on any text: it is called once on :data:`TOKENIZER_PROBE_TEXT`.

    The pipeline calls this in each process that decodes (the main process with no workers, else each worker,
    once per shard) before its first sample: a user's tokenizer is never called in the main process before the
    workers fork (it may start threads or a Rust thread pool there). A tokenizer that fails on every text is then
    one clear error at once, instead of every sample with text skipped as ``error`` while text-free items train
    on; failures that depend on the sample (a tokenizer that refuses one character) stay per-sample skips.

    Raises:
        TypeError: not a tokenizer, it raised a TypeError (a wrong signature), or its output has the wrong types
            (ids not ints, offsets not pairs, no offsets).
        ValueError: it raised anything else, returned no token, ids and offsets of different lengths, offsets
            outside the text, an id outside ``[0, 2**63)``, or UTF-8 byte offsets instead of character offsets
            (seen on a second, non-ASCII probe, :data:`TOKENIZER_NON_ASCII_PROBE_TEXT`).
        The message names the tokenizer's type, the probe text and what is wrong; the error has
        ``tokenizer_probe = True`` (a worker's error is re-raised as is).
    """
    if tokenizer is None:
        return
    what = f"tokenizer {type(tokenizer).__name__} is unusable"
    probe = TOKENIZER_PROBE_TEXT
    if isinstance(tokenizer, (str, bytes, os.PathLike)) or not (callable(tokenizer) or hasattr(tokenizer, "encode")):
        error: Exception = TypeError(f"{what}: it must be a tokenizers.Tokenizer, a fast HF tokenizer or a callable "
                                     "text -> (ids, offsets)")
        error.tokenizer_probe = True  # type: ignore[attr-defined]
        raise error
    cause: Optional[BaseException] = None
    try:
        result = _call_tokenizer(tokenizer, probe)
    except Exception as e:  # noqa: BLE001 - the user's code: whatever it raises on a plain text makes it unusable
        cause = e
        error = (TypeError if isinstance(e, TypeError) else ValueError)(
            f"{what}: it raised {type(e).__name__}: {e} on the probe text {probe!r}")
    else:
        try:
            ids, offsets = _checked_output(result, probe)
        except (TypeError, ValueError) as e:
            cause = e
            error = (TypeError if isinstance(e, TypeError) else ValueError)(f"{what}: on the probe text {probe!r}: {e}")
        else:
            if len(ids) > 0:
                _check_character_offsets(tokenizer, what)
                return
            error = ValueError(f"{what}: it returned no token for the probe text {probe!r} (ids {ids!r}, offsets "
                               f"{offsets!r}); every item would have 0 tokens")
    error.tokenizer_probe = True  # type: ignore[attr-defined]
    raise error from cause


def _check_character_offsets(tokenizer: Any, what: str) -> None:
    """Raise ValueError when ``tokenizer`` gives UTF-8 byte offsets on :data:`TOKENIZER_NON_ASCII_PROBE_TEXT` (an
    ASCII probe cannot tell bytes from characters): every sample with a non-ASCII character would be skipped. Any
    other failure on that text is left to the samples (a tokenizer may refuse some characters)."""
    probe = TOKENIZER_NON_ASCII_PROBE_TEXT
    try:
        _, offsets = _ids_and_offsets(_call_tokenizer(tokenizer, probe))
        hint = _byte_offsets_hint([(int(a), int(b)) for a, b in offsets], probe)
    except Exception:  # noqa: BLE001 - the user's code; whatever else fails here fails per sample, with its message
        return
    if hint:
        error = ValueError(f"{what}: on the probe text {probe!r} it returned offsets {list(offsets)!r}.{hint}")
        error.tokenizer_probe = True  # type: ignore[attr-defined]
        raise error


def _ids_and_offsets(result: Any) -> tuple[list[int], list[tuple[int, int]]]:
    if hasattr(result, "ids") and hasattr(result, "offsets"):
        ids, offsets = result.ids, result.offsets
    elif isinstance(result, dict) or hasattr(result, "keys"):
        ids_key = next((k for k in ("input_ids", "ids") if k in result), None)
        offsets_key = next((k for k in ("offset_mapping", "offsets") if k in result), None)
        if ids_key is None or offsets_key is None:
            raise TypeError(f"tokenizer output has keys {sorted(result.keys())[:8]}, not ids ('input_ids' or 'ids') and "
                            "character offsets ('offset_mapping' or 'offsets'); a Hugging Face tokenizer must be called "
                            "with return_offsets_mapping=True.")
        ids, offsets = result[ids_key], result[offsets_key]
    elif isinstance(result, (tuple, list)) and len(result) == 2 and not any(_is_id(x) for x in result):
        ids, offsets = result
    elif isinstance(result, (tuple, list)) and result and all(_is_id(x) for x in result):
        # tiktoken's / sentencepiece's encode: two ids ("hello world") were read as (ids, offsets) before
        raise TypeError(f"tokenizer output must carry ids and character offsets, got {type(result).__name__} of "
                        f"{len(result)} ids and no offsets (an encode(text) -> ids, as tiktoken's or sentencepiece's); "
                        "hint: pass a callable text -> (ids, offsets), offsets the (start, stop) character positions of "
                        "each token in the text: they put each token on its word's frames and samples.")
    else:
        raise TypeError(f"tokenizer output must carry ids and character offsets, got {type(result).__name__}.")
    return [_integer(i, "id") for i in ids], [_offset_pair(pair) for pair in offsets]


def _is_id(value: Any) -> bool:
    """Whether ``value`` is one token id (an int or a NumPy integer), not a sequence of them (a tensor is not one,
    whatever its size)."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _offset_pair(pair: Any) -> tuple[int, int]:
    try:
        start, stop = pair
    except (TypeError, ValueError):
        raise TypeError(f"tokenizer returned a character offset that is not a (start, stop) pair: {pair!r}.") from None
    return _integer(start, "offset"), _integer(stop, "offset")


def _integer(value: Any, what: str) -> int:
    """``value`` as an int; a float (1.5 would become id 1) or any other non-integer raises TypeError; an id outside
    ``[0, 2**63)`` (an embedding row that cannot exist, or no int64) raises ValueError."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"tokenizer returned a token {what} that is not an integer: {value!r} "
                        f"({type(value).__name__}); return int ids and (start, stop) character offsets.") from None
    if what == "id" and not 0 <= number < 2**63:
        raise ValueError(f"tokenizer returned token id {number}, outside [0, 2**63): an embedding has no such row "
                         "(pass pad_token_id= for the padding value instead).")
    return number


def tokenize_item(sample: Any, tokenizer: Any = None, *, cut_edges: tuple[bool, bool] = (False, False)) -> BatchItem:
    """An aligned sample with its tokens: ids (with a tokenizer), frame and sample ranges per token, and the
    words' (or segments') ``token_start``/``token_stop`` set to match (see the module docstring).

    The text tokenized is the transcript's own: when the item has words and segments and every word is found, in
    order, in its segments' joined text (see :func:`locate_words`), that text is tokenized, so caption words placed
    by forced alignment (punctuation around them stripped; sound tags, speaker labels and words missing from its
    dictionary left out) do not change the ids: they equal the tokenizer called on the captions. A token inside a
    word's whitespace-separated piece belongs to that word (``Hello,`` is the piece of the forced word ``Hello``), any
    other token to its segment (frame and sample ranges of the segment; no word's token range holds it). ``cut_edges`` says whether the item's
    start and stop are cuts of a longer clip (a window's, not the clip's own edges): a segment that a cut crosses (it
    starts at or before a cut start, or stops at or after a cut stop) contributes its text from its first to its last
    word in the item only on that side, so that windows share a cut caption's tokens as they share its words, instead
    of each holding all of them. Otherwise the words' texts joined with single spaces are tokenized (the module
    docstring). Word texts are kept as they are.
    """
    words, segments = tuple(sample.words), tuple(sample.segments)
    unit = "word" if words else ("segment" if segments else "")
    units = words if words else segments
    located = locate_words([w.text for w in words], [s.text for s in segments]) if words and segments else None
    if located is not None:
        cut_start = float(sample.start_seconds) if cut_edges[0] else -math.inf
        cut_stop = float(sample.stop_seconds) if cut_edges[1] else math.inf
        located = _trim_cut_segments(located, segments, cut_start, cut_stop)
    if located is None:
        text, char_ranges = join_unit_texts([u.text for u in units])
        fallback_ranges: list[tuple[int, int]] = []
    else:
        text, char_ranges, fallback_ranges = located
    ids, offsets = encode_text(tokenizer, text) if units else ([] if tokenizer is not None else None, [])
    owner = token_owners(offsets, char_ranges)
    fallback_owner = token_owners(offsets, fallback_ranges) if located is not None else [-1] * len(offsets)
    ranges = unit_token_ranges(owner, len(units))
    updated = tuple(dataclasses.replace(u, token_start=r[0], token_stop=r[1]) for u, r in zip(units, ranges))
    if unit == "word":
        words = updated
    elif unit == "segment":
        segments = updated
    num_frames = 0 if sample.video is None else sample.video.num_frames
    num_samples = sample.audio.num_samples
    frame_ranges = np.empty((len(offsets), 2), dtype=np.int64)
    sample_ranges = np.empty((len(offsets), 2), dtype=np.int64)
    for t, (j, k) in enumerate(zip(owner, fallback_owner)):
        u = units[j] if j >= 0 else (segments[k] if k >= 0 else None)
        if u is None:
            frame_ranges[t], sample_ranges[t] = (0, num_frames), (0, num_samples)
        else:
            frame_ranges[t] = (u.frame_start or 0, u.frame_stop or 0)
            sample_ranges[t] = (u.sample_start, u.sample_stop)
    tokens = TextTokens(
        ids=None if ids is None else np.asarray(ids, dtype=np.int64),
        frame_ranges=frame_ranges,
        sample_ranges=sample_ranges,
        unit=unit,
    )
    return BatchItem(dataclasses.replace(sample, words=words, segments=segments), tokens)


def locate_words(
    words: Sequence[str], segments: Sequence[str]
) -> Optional[tuple[str, list[tuple[int, int]], list[tuple[int, int]]]]:
    """The segments' joined text with each word's characters in it, or None when a word is not found.

    Words are searched in order, each after the previous one, ignoring case (words of other sources may differ in case
    from their segment's text) and never
    inside a longer word; a word whose whitespace-separated piece of the text holds no other word owns the whole
    piece (``Hello,`` for ``hello``), else only its own characters.

    Returns:
        ``(text, word_char_ranges, segment_char_ranges)``: half-open character ranges into ``text``.
    """
    text, segment_ranges = join_unit_texts(list(segments))
    folded = _fold_case(text)
    found, cursor = [], 0
    for word in words:
        needle = _fold_case(word.strip())
        start = _find_whole(folded, needle, cursor) if needle else cursor  # an empty word: an empty range, no token
        if start < 0:
            return None
        found.append((start, start + len(needle)))
        cursor = start + len(needle)
    pieces = [(m.start(), m.end()) for m in _WHITESPACE_TOKEN.finditer(text)]
    piece_starts = [p0 for p0, _ in pieces]
    piece_of = [bisect.bisect_right(piece_starts, c0) - 1 if c1 > c0 else -1 for c0, c1 in found]
    words_in_piece = Counter(piece_of)
    ranges = [(min(c0, pieces[p][0]), max(c1, pieces[p][1])) if p >= 0 and words_in_piece[p] == 1 else (c0, c1)
              for (c0, c1), p in zip(found, piece_of)]
    return text, ranges, segment_ranges


def _trim_cut_segments(
    located: tuple[str, list[tuple[int, int]], list[tuple[int, int]]],
    segments: Sequence[Any],
    cut_start_seconds: float,
    cut_stop_seconds: float,
) -> Optional[tuple[str, list[tuple[int, int]], list[tuple[int, int]]]]:
    """``located`` (:func:`locate_words`) with each segment that a cut crosses trimmed to its words in the item on
    that side (see :func:`tokenize_item`; ``-inf`` / ``inf``: no cut); None when a word lies in no segment's text."""
    text, word_ranges, segment_ranges = located
    pieces, new_words, new_segments, cursor, w = [], [], [], 0, 0
    for segment, (c0, c1) in zip(segments, segment_ranges):
        first = w
        while w < len(word_ranges) and word_ranges[w][0] < c1:
            if word_ranges[w][0] < c0 or word_ranges[w][1] > c1:
                return None  # a word across two segments' texts (it spans their joining space)
            w += 1
        inside = word_ranges[first:w]
        if inside and segment.start_seconds <= cut_start_seconds:
            c0 = max(c0, inside[0][0])
        if inside and segment.stop_seconds >= cut_stop_seconds:
            c1 = min(c1, inside[-1][1])
        shift = cursor - c0
        new_words.extend((a + shift, b + shift) for a, b in inside)
        new_segments.append((cursor, cursor + c1 - c0))
        pieces.append(text[c0:c1])
        cursor += c1 - c0 + 1
    if w != len(word_ranges):
        return None
    return " ".join(pieces), new_words, new_segments


def _find_whole(text: str, needle: str, start: int) -> int:
    """First index ``>= start`` where ``needle`` occurs in ``text`` not inside a longer word (no letter or digit just
    before or after it: ``a`` is not found in ``jwplayer, a``'s ``jwplayer``; in scripts written without spaces any
    match counts); -1 if none."""
    at = text.find(needle, start)
    while at >= 0:
        before = text[at - 1] if at > 0 else " "
        after = text[at + len(needle)] if at + len(needle) < len(text) else " "
        if not _joined(before, needle[0]) and not _joined(needle[-1], after):
            return at
        at = text.find(needle, at + 1)
    return -1


def _joined(left: str, right: str) -> bool:
    """Whether two adjacent characters belong to one word: both letters or digits of a script that separates its
    words with spaces (in Chinese, Japanese, Thai … a word may follow another with no space)."""
    return left.isalnum() and right.isalnum() and not (_unspaced(left) or _unspaced(right))


def _unspaced(char: str) -> bool:
    code = ord(char)
    return (0x0E00 <= code <= 0x0EFF or 0x1000 <= code <= 0x109F or 0x1780 <= code <= 0x17FF  # Thai Lao Myanmar Khmer
            or 0x2E80 <= code <= 0x9FFF or 0xAC00 <= code <= 0xD7AF or 0xF900 <= code <= 0xFAFF  # CJK, kana, Hangul
            or 0x20000 <= code <= 0x3FFFF)


def _fold_case(text: str) -> str:
    """``text`` lowercased character by character, keeping its length (a character whose lowercase is longer stays)."""
    lowered = text.lower()
    if len(lowered) == len(text):  # no character lowercases to several (none lowercases to none): same offsets
        return lowered
    return "".join(c.lower() if len(c.lower()) == 1 else c for c in text)


def join_unit_texts(texts: Sequence[str]) -> tuple[str, list[tuple[int, int]]]:
    ranges, cursor = [], 0
    for text in texts:
        ranges.append((cursor, cursor + len(text)))
        cursor += len(text) + 1
    return " ".join(texts), ranges


def token_owners(offsets: Sequence[tuple[int, int]], char_ranges: Sequence[tuple[int, int]]) -> list[int]:
    """Index of the first unit each token overlaps, -1 for none (special tokens, offset ``(0, 0)``)."""
    if not char_ranges or not len(offsets):
        return [-1] * len(offsets)
    ranges = np.asarray(char_ranges, dtype=np.int64).reshape(-1, 2)
    tokens = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    j = np.searchsorted(ranges[:, 1], tokens[:, 0], side="right")  # first unit ending after the token starts
    inside = np.minimum(j, len(ranges) - 1)
    owned = (j < len(ranges)) & (tokens[:, 1] > tokens[:, 0]) & (ranges[inside, 0] < tokens[:, 1])
    return np.where(owned, j, -1).tolist()


def unit_token_ranges(owner: Sequence[int], num_units: int) -> list[tuple[int, int]]:
    """``[token_start, token_stop)`` per unit; a unit without tokens gets an empty range at the next token."""
    first = [-1] * num_units
    last = [-1] * num_units
    for t, j in enumerate(owner):
        if j >= 0:
            if first[j] < 0:
                first[j] = t
            last[j] = t + 1
    out: list[tuple[int, int]] = [(0, 0)] * num_units
    following = len(owner)
    for j in reversed(range(num_units)):
        if first[j] < 0:
            out[j] = (following, following)
        else:
            out[j] = (first[j], last[j])
            following = first[j]
    return out
