"""Words → tokens by character offsets, with any tokenizer that reports them (HF ``tokenizers``) or whitespace.

The transcript's words are joined with single spaces; each word owns the characters ``[c0, c1)``; a token
belongs to every word whose characters it overlaps (``t0 < c1 and t1 > c0``), so a word's tokens are a
half-open range ``[token_start, token_stop)``. Special tokens (offset ``(0, 0)``) overlap nothing.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Protocol, Sequence, Union

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["word_token_ranges", "whitespace_offsets"]


class _HasEncode(Protocol):
    """A ``tokenizers.Tokenizer``: ``encode(text).offsets`` are the tokens' ``(char_start, char_stop)``."""

    def encode(self, text: str): ...


Tokenizer = Union[_HasEncode, Callable[[str], Sequence[tuple[int, int]]]]
"""A ``tokenizers.Tokenizer``, or a callable returning each token's ``(char_start, char_stop)`` in ``text``."""


def whitespace_offsets(text: str) -> list[tuple[int, int]]:
    """Character offsets of whitespace-separated tokens: the fallback tokenizer."""
    offsets, start = [], None
    for i, ch in enumerate(text + " "):
        if ch.isspace():
            if start is not None:
                offsets.append((start, i))
                start = None
        elif start is None:
            start = i
    return offsets


def _offsets(text: str, tokenizer: Optional[Tokenizer]) -> list[tuple[int, int]]:
    """Each token's half-open character range in ``text`` (whitespace tokens without a tokenizer).

    Raises:
        ValueError: the tokenizer returned a range outside ``text``.
    """
    if tokenizer is None:
        return whitespace_offsets(text)
    if hasattr(tokenizer, "encode"):
        offsets = [tuple(o) for o in tokenizer.encode(text).offsets]
    else:
        offsets = [tuple(o) for o in tokenizer(text)]
    bad = [o for o in offsets if not (0 <= o[0] <= o[1] <= len(text))]
    if bad:
        raise ValueError(f"tokenizer returned offsets outside the text (length {len(text)}): {bad[:3]}")
    return offsets


def _covered_words(chars: list[tuple[int, int]], offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """For each token, the half-open range of words whose characters it overlaps (``t0 < c1 and t1 > c0``).

    The words' characters are disjoint and in order, so both ends are binary searches.
    """
    starts = np.asarray([c0 for c0, _ in chars], dtype=np.int64)
    stops = np.asarray([c1 for _, c1 in chars], dtype=np.int64)
    t0 = np.asarray([o[0] for o in offsets], dtype=np.int64)
    t1 = np.asarray([o[1] for o in offsets], dtype=np.int64)
    lo = np.searchsorted(stops, t0, side="right")
    hi = np.searchsorted(starts, t1, side="left")
    return list(zip(lo.tolist(), hi.tolist()))


def _first_cover(covered: list[tuple[int, int]], num_words: int, order) -> list[int]:
    """For each word, the first token in ``order`` whose range of words holds it (-1 for none).

    Each word is assigned once: a skip pointer to the next unassigned word (with path halving) keeps the work
    near-linear in words + tokens, whatever the tokens' ranges.
    """
    result = [-1] * num_words
    skip = list(range(num_words + 1))

    def unassigned_from(j: int) -> int:
        while skip[j] != j:
            skip[j] = skip[skip[j]]
            j = skip[j]
        return j

    for token in order:
        lo, hi = covered[token]
        j = unassigned_from(lo) if lo < hi else hi
        while j < hi:
            result[j] = token
            skip[j] = j + 1
            j = unassigned_from(j + 1)
    return result


def word_token_ranges(words: Sequence[str], tokenizer: Optional[Tokenizer] = None) -> tuple[list[tuple[int, int]], int]:
    """``[token_start, token_stop)`` for each word, and the number of tokens of the joined text.

    Example:
        >>> word_token_ranges(["hello", "big", "world"])
        ([(0, 1), (1, 2), (2, 3)], 3)
    """
    chars, cursor = [], 0
    for w in words:
        chars.append((cursor, cursor + len(w)))
        cursor += len(w) + 1
    text = " ".join(words)
    offsets = _offsets(text, tokenizer)
    covered = _covered_words(chars, offsets)
    first = _first_cover(covered, len(chars), range(len(offsets)))
    last = _first_cover(covered, len(chars), reversed(range(len(offsets))))
    ranges = [(f, l + 1) if f >= 0 else (0, 0) for f, l in zip(first, last)]
    # Words with no token (empty text) get an empty range at the next word's start.
    fixed, nxt = [], len(offsets)
    for r in reversed(ranges):
        if r == (0, 0) and nxt != 0:
            r = (nxt, nxt)
        fixed.append(r)
        nxt = r[0]
    return list(reversed(fixed)), len(offsets)
