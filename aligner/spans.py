"""Transcript spans onto the video timeline and into frame, sample and token index ranges (used by ``align``).

:func:`map_spans` maps words or segments and clips them to a window; :func:`word_token_ranges` gives each
word its half-open token range, with any tokenizer that reports character offsets (or whitespace).
"""
from aligner._spans import SpanLevel, map_spans
from aligner._tokens import Tokenizer, whitespace_offsets, word_token_ranges

__all__ = ["SpanLevel", "Tokenizer", "map_spans", "whitespace_offsets", "word_token_ranges"]
