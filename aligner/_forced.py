"""Word times inside a caption span by forced alignment with pocketsphinx (optional extra ``[align]``).

Segment-level captions (SRT, WebVTT) give one ``[start, stop)`` per line; training often needs words.
Given the span's audio and its text, pocketsphinx's forced aligner (acoustic model and dictionary ship
in the ``pocketsphinx==5.1.1`` wheel) places each word::

    audio clock   start                                                   stop
                  |-----[he)[was)[not  )--[an)[ill)[disposed  )[young)[man  )--|
    ps frames     0    10 ms per frame ...                          (frame f at start + f / 100 s)

Text is lowercased, punctuation is stripped (apostrophes inside words kept), and words missing from
the dictionary are left out of the alignment and of the result (logged); the remaining words keep
their order. Times are on the clock of ``audio`` (apply the transcript offset before, if known).
"""
from __future__ import annotations

import logging
import re
from typing import Any, Optional

import numpy as np

from aligner._signals import mono
from aligner._time import sample_range
from loaders._records import AudioClip, Word

logger = logging.getLogger(__name__)

__all__ = ["ALIGN_SAMPLE_RATE", "forced_align_words", "normalise_words"]

ALIGN_SAMPLE_RATE = 16000
"""Rate of pocketsphinx's default acoustic model (en-us)."""
_FRAMES_PER_SECOND = 100
_NON_WORDS = {"<s>", "</s>", "<sil>", "[NOISE]", "[SPEECH]"}


def normalise_words(text: str) -> list[str]:
    """Lowercase ``text`` and split it into words without punctuation (``"Don't!"`` → ``["don't"]``)."""
    words = []
    for token in text.lower().split():
        token = re.sub(r"[^\w']", "", token).strip("'")
        if token:
            words.append(token)
    return words


def _new_decoder() -> Any:
    try:
        from pocketsphinx import Decoder
    except ImportError as e:  # optional dependency
        raise ImportError("forced alignment needs pocketsphinx: pip install 'avalign[align]' (pocketsphinx==5.1.1)") from e
    # Wide beams: with the defaults the search sometimes fails to reach the end of the text.
    return Decoder(samprate=ALIGN_SAMPLE_RATE, bestpath=False, loglevel="ERROR", beam=1e-80, wbeam=1e-60, pbeam=1e-80)


def forced_align_words(
    audio: AudioClip,
    span_text: str,
    start: float,
    stop: float,
    *,
    decoder: Optional[Any] = None,
) -> tuple[Word, ...]:
    """Split one caption span into words with times, by forced alignment of ``span_text`` to ``audio[start, stop)``.

    Args:
        audio: decoded audio (any rate and channel count; resampled to 16 kHz mono for the aligner).
        span_text: the caption's text.
        start: span start in seconds on the audio clock (inclusive).
        stop: span stop in seconds on the audio clock (exclusive); ``stop > start``.
        decoder: a ``pocketsphinx.Decoder`` at 16 kHz to reuse (creating one takes about 0.3 s).

    Returns:
        The dictionary words of ``span_text`` in order, each with ``[start_seconds, stop_seconds)`` on the
        audio clock inside ``[start, stop)``; ``()`` when no word is in the dictionary or the alignment fails.

    Raises:
        ValueError: ``stop <= start`` or the span lies outside the audio.
        ImportError: pocketsphinx is not installed.

    Example:
        >>> words = forced_align_words(audio, "He was not an ill-disposed young man.", 0.0, 3.0)  # doctest: +SKIP
        >>> [(w.text, round(w.start_seconds, 2)) for w in words][:2]                              # doctest: +SKIP
        [('he', 0.21), ('was', 0.33)]
    """
    if not stop > start:
        raise ValueError(f"span must have stop > start, got {start = }, {stop = }")
    if stop <= audio.start_seconds or start >= audio.stop_seconds:
        raise ValueError(
            f"span [{start}, {stop}) lies outside the audio [{audio.start_seconds}, {audio.stop_seconds}); "
            "pass times on the audio clock"
        )
    words = normalise_words(span_text)
    if not words:
        return ()
    decoder = decoder if decoder is not None else _new_decoder()
    known = [w for w in words if decoder.lookup_word(w) is not None]
    if len(known) < len(words):
        logger.info("forced alignment: %d word(s) not in the dictionary, left out: %s", len(words) - len(known),
                    sorted(set(words) - set(known)))
    if not known:
        return ()
    # The span's samples (half-open, the project's rounding rule), mono, at 16 kHz, as int16.
    first, last = sample_range(max(start, audio.start_seconds) - audio.start_seconds,
                               min(stop, audio.stop_seconds) - audio.start_seconds, audio.sample_rate)
    signal = mono(audio.samples)[first:last]
    if audio.sample_rate != ALIGN_SAMPLE_RATE:
        from loaders._audio import resample

        signal = resample(signal[None, :].astype(np.float32), audio.sample_rate, ALIGN_SAMPLE_RATE)[0]
    pcm = (np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2").tobytes()
    origin = audio.start_seconds + first / audio.sample_rate
    decoder.set_align_text(" ".join(known))
    decoder.start_utt()
    decoder.process_raw(pcm, full_utt=True)
    decoder.end_utt()
    out = []
    for seg in decoder.seg() or ():  # None when the audio does not match the text
        text = re.sub(r"\(\d+\)$", "", seg.word)  # alternate pronunciations: "was(2)"
        if text in _NON_WORDS:
            continue
        out.append(Word(text, origin + seg.start_frame / _FRAMES_PER_SECOND,
                        origin + (seg.end_frame + 1) / _FRAMES_PER_SECOND))
    if [w.text for w in out] != known:
        logger.warning("forced alignment failed for %r (got %d of %d words)", span_text, len(out), len(known))
        return ()
    return tuple(out)
