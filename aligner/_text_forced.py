"""Transcript offset by forced alignment (pocketsphinx's acoustic model, optional extra ``[align]``).

The energy estimator (``estimate_text_offset``) dates words by acoustic onsets. On synthetic speech a
word start is an onset; in real connected speech most are not: a word starting with a weak consonant
(/h/, /f/, a stop closure) has its energy rise at the vowel, tens of ms later, so energy evidence on real
read speech is split between "word start" and "vowel onset" lags and that estimator abstains (BENCHMARKS.md,
"Lab notes"). A phonetic model knows where consonants are::

    transcript   [he)[was)[not  )--[an)[ill)...          stamps on the transcript clock
    audio        forced alignment of the same words      acoustic starts a_i (audio clock)
    d_i = stamp_i - a_i         offset = median(d_i)      (> 0: stamps late, DESIGN.md's sign)

Words are aligned in chunks: consecutive words closer than ``2·max_offset + 0.2 s`` share a chunk (at
most ``TextOptions.max_chunk_seconds`` of stamps each), aligned over ``[first stamp - max_offset,
last stop + max_offset]`` of the audio, so a chunk's audio holds its own speech for any offset in the
search range. Words that are not in the dictionary are left out (logged by the aligner). A chunk whose alignment fails
is retried in halves; a chunk (or half) of several items that still fails, or whose words do not fit the audio (below),
is retried one item at a time, each judged by its own fit: one caption that was never said (Whisper's "Thank you for
watching." over silence or music) no longer takes the real captions of its chunk down with it (BENCHMARKS.md, "Caption
words on real ASR text"). Words of an item whose alignment still fails are left out.

Confidence::

    agreement  = fraction of d_i within ±agree_ms of the median       (n items placed, one d_i each)
    coverage   = n / transcript items
    evidence   = min(1, w / 8)   w: dictionary words placed, when every item is placed (n = transcript items >= 2)
                 min(1, n / 8)   otherwise (one difference agrees with nothing; a transcript with items that do
                                 not fit may only partly belong to this audio: each placed item counts once)
    confidence = clip((agreement - 0.3) / 0.5, 0, 1) · coverage · evidence

Where the whole transcript is placed, evidence counts placed words, not items: a caption's words are all placed
inside its chunk and judged by their fit (below). Until 2026-12-06 it counted items, so a transcript of two captions
never reached 0.3 (at most 0.25), however well both fit and agreed: 24 true pairings of 9 wild sets abstained there,
forced alignment within 35.8 ms (median 14.6) of the truth on all of them. Counted in words where only some items were
placed, another clip's captions that share two sentences with the audio confirmed two wrong energy answers on TUNE
(BENCHMARKS.md, "Transcript offset: evidence counted in placed words").

An unrelated transcript forced onto speech still gets word times; a fifth to a half of its differences
agree by chance, hence the 0.3 floor. And it can place enough words near one offset (on speech that merely sounds
alike, or on a sentence it shares with the audio) to agree well above chance, so each chunk is also judged by how
well its words fit the audio (``forced_align_scored``: the acoustic score per frame relative to the frame's best
senone). A chunk that fits worse than :data:`MIN_WORD_FIT` is not evidence: its items are left out of the
differences and count as not placed (coverage, ``item_differences_ms``); when no chunk fits, the estimate abstains
``words_do_not_match_audio`` with the median of the unfit places as its best guess::

    chunk fit   -8 .. -14 (human speech, its own text)   -14 .. -36 (espeak-ng under noise, music, reverb, re-encodes)
                -40 .. -65 (another clip's text)   MIN_WORD_FIT = -35

The estimate inherits the aligner's word-boundary bias (measured: BENCHMARKS.md, "Lab notes").
Segment-only transcripts (SRT/WebVTT captions, no word times) are compared span start to first aligned
word start.

Captions out of silence. A caption that starts at least 80 ms after everything before it ends
(the first one always), by its stamps or as forced alignment placed its words (its first word at least 80 ms after the
previous caption's last word: Whisper-style segments whose ends run to the next start abut by their stamps while the
speaker paused; BENCHMARKS.md, "Transcripts as real ASR and subtitle files come"), starts at an onset out of silence, a
place any captioner and the aligner agree on. A caption
that abuts the previous one starts inside connected speech, at the word boundary where it was cut, and where a
boundary inside speech lies is a convention that differs between captioners and the aligner by tens of ms either
way (BENCHMARKS.md: with the one lead pocketsphinx dates abutting espeak-ng captions 20.3 ms late, human-timed words
inside speech 0.9 ms late and human starts after a pause 25 ms early; "Caption words: a lead by context"). For
captions, the offset is therefore the median over the captions out of silence where that median lies within
``agree_ms`` of the median over all (of two of them that are each more than ``agree_ms`` from their mean, the one nearer the
median over all when other captions were placed, not their mean: one of the two is misplaced, and the mean moved the
answer by half its error; BENCHMARKS.md,
"Transcript offset: two captions out of silence"); confidence is still judged on all of them, and ``method="auto"`` confirms energy answers and runs its
heard check against the median over all (``aligner._text_method``). Word-level transcripts keep the median over all words
(most words abut; their few starts out of silence are too few to date a transcript). Chosen on TUNE alone (forced
alignment's caption answers: |error| median 11.5 -> 7.0 ms, max 35.6 -> 24.9 ms), reported on eleven other sets in
BENCHMARKS.md ("Transcript offset: captions out of silence").
"""
from __future__ import annotations

import dataclasses
import logging
import math
from typing import Any, Optional

import numpy as np

from aligner._decoder import new_decoder, shared_decoder
from aligner._forced import (MAX_ALIGN_SECONDS, MAX_ALIGN_WORDS, MAX_WORDS_PER_SECOND, alignment_refusal,
                             forced_align_scored, in_dictionary, normalise_words, spoken_tokens)
from aligner._options import TextOptions
from aligner._text_offset import after_pause
from aligner._text_records import TextEstimate, text_abstain
from avcore import AudioClip, Transcript, Word

logger = logging.getLogger(__name__)

__all__ = ["CAPTION_MARGIN_SECONDS", "MIN_RETRY_FIT", "MIN_WORD_FIT", "REFUSAL_NEEDED", "caption_words", "estimate_text_offset_forced"]

_FULL_EVIDENCE_WORDS = 8
_CHUNK_GAP_EXTRA_SECONDS = 0.2
# Forcing an unrelated transcript onto speech still places its words somewhere; a fifth to a half of the
# differences then agree by chance (BENCHMARKS.md, "Lab notes").
_CHANCE_AGREEMENT = 0.3
_DEFAULT = TextOptions()
MIN_WORD_FIT = -35.0
"""A chunk whose aligned words fit the audio worse than this (``forced_align_scored``'s fit: pocketsphinx's acoustic
score per 10 ms frame relative to the frame's best senone) is not evidence: its items count as not placed. Forcing
text onto audio that does not say it still places every word, and another clip's transcript can place enough of them
near one offset by chance (or on the sentences it shares with this audio) to agree at confidence 0.3-0.8. Chosen on the
wild generator's TUNE seeds (1000-1023) alone: the chunks of the true pairings fit at -26.4 or better; of the
chunks of clean null pairings (another clip's transcript sharing no sentence, where forced alignment's words agreed
at confidence >= 0.1) 18 of 21 fit below -35. The margin below -26.4 is left for audio harsher than TUNE's.
Human-read speech with its own text fits at -8 to -14 (praatio's examples, the North Wind recording, LibriVox
utterances); another utterance's text on it -43 to -60; the telephone-band conversations of
tests/test_text_conversation.py -26 to -29. Reported on other seeds in BENCHMARKS.md ("Transcript offset: words that do
not fit the audio")."""


MIN_RETRY_FIT = -30.0
"""An item aligned on its own after its chunk failed or did not fit (:data:`MIN_WORD_FIT`) is evidence only when it
fits at least this well. The retry exists for one caption that was never said among real ones (a hallucinated "Thank
you for watching."); but a caption of a few words aligned alone fits other speech more easily than a chunk does: on
the null pairings of TUNE and TUNE2 (1,352 of them, another clip's transcript), items placed by the retry at -35 or
better that the audio does not say there fit at -34.4 to -19.2 (multi-word items: median -31 to -32), those it does
say at -31.0 to -11.3 (median -17 to -23); no true pairing of either set placed an item by the retry. REPORT39's
wild39021 captions on wild39010's audio were placed at -34.7 and -34.7, 82 ms from where either is spoken, and
answered. Chosen between the worst fits of right chunks (TUNE -26.4; the telephone-band conversations -26 to -29)
and the bulk of the unsaid items (BENCHMARKS.md, "Forced alignment: items retried alone")."""


def _items(transcript: Transcript) -> tuple[list[tuple[str, float, float]], bool]:
    """(text, start, stop) of each word, or of each span when there are no word times; sorted by start."""
    words = transcript.words
    if words:
        items = [(w.text, w.start_seconds, w.stop_seconds) for w in words]
    else:
        items = [(s.text, s.start_seconds, s.stop_seconds) for s in transcript.spans]
    return sorted(items, key=lambda item: item[1]), bool(words)


@dataclasses.dataclass(frozen=True)
class _Refused:
    """A chunk that forced alignment refuses to take (``alignment_refusal``)."""

    reason: str
    """``too_many_words``, ``too_long`` or ``words_do_not_fit``."""
    num_words: int
    """Words counted (counting stops at ``MAX_ALIGN_WORDS + 1``)."""
    seconds: float
    """Audio the words were to be aligned to."""

    def found(self) -> str:
        """What was refused, in words."""
        more = "more than " if self.num_words > MAX_ALIGN_WORDS else ""
        return f"{more}{min(self.num_words, MAX_ALIGN_WORDS)} words in {self.seconds:.1f} s of audio in one alignment"


REFUSAL_NEEDED = {
    "too_many_words": f"at most {MAX_ALIGN_WORDS} words per caption (forced alignment's limit)",
    "too_long": f"at most {MAX_ALIGN_SECONDS:g} s of audio per caption (forced alignment's limit)",
    "words_do_not_fit": f"at most {MAX_WORDS_PER_SECOND:g} words per second of the caption's audio",
}
"""The abstention reasons of a refused alignment, each with what an answer needs."""


def _in_dictionary(text: str, decoder: Any) -> bool:
    """Whether ``text`` holds a word of the decoder's dictionary (else forced alignment cannot judge it)."""
    return bool(_dictionary_words(text, decoder))


def _dictionary_words(text: str, decoder: Any) -> list[str]:
    """The written words of ``text`` that forced alignment can align: those whose spoken words (``spoken_tokens``:
    ``"$1,000"`` is spoken ``one thousand dollars``) are all in pocketsphinx's own dictionary (``in_dictionary``: not
    the words espeak-ng pronounced for caption words; this estimator's thresholds were measured on dictionary words)."""
    return [name for name, spoken in spoken_tokens(text, limit=MAX_ALIGN_WORDS)
            if all(in_dictionary(decoder, w) for w in spoken)]


@dataclasses.dataclass(frozen=True)
class _Placed:
    """A chunk that forced alignment placed."""

    differences: dict[int, float]
    """``{index in chunk: stamp - aligned start (s)}`` of each item with a dictionary word."""
    fit: Optional[float]
    """The words' acoustic fit per frame (``forced_align_scored``); None when the chunk held no dictionary word."""
    words: int = 0
    """Dictionary words placed (those of the items in ``differences``)."""
    pause_before: frozenset[int] = frozenset()
    """Indices in chunk of the items whose first word starts at least 80 ms after the previous item's last word ends,
    as aligned (the chunk's first placed item is not judged here)."""


def _chunk_differences(audio: AudioClip, chunk: list[tuple[str, float, float]], margin: float,
                       decoder: Any) -> Optional[_Placed | _Refused]:
    """The differences and fit of ``chunk``'s items (:class:`_Placed`); None when the alignment fails,
    :class:`_Refused` when forced alignment refuses the chunk (too many words, too long, words that cannot fit)."""
    lo = max(chunk[0][1] - margin, audio.start_seconds)
    hi = min(max(i[2] for i in chunk) + margin, audio.stop_seconds)
    if not hi > lo:
        return _Placed({}, None)
    num_words = sum(len(normalise_words(text, limit=MAX_ALIGN_WORDS)) for text, _, _ in chunk)
    refusal = alignment_refusal(num_words, hi - lo)
    if refusal is not None:
        logger.warning("forced alignment refused (%s): %d words in %.2f s", refusal, num_words, hi - lo)
        return _Refused(refusal, num_words, hi - lo)
    # The first dictionary token of each item is dated; items with none are left out.
    tokens = [_dictionary_words(text, decoder) for text, _, _ in chunk]
    text = " ".join(t for item_tokens in tokens for t in item_tokens)
    if not text:
        return _Placed({}, None)
    # A median needs no half frames; one lead for every word (the offset estimator was measured without stop_lead;
    # with context_lead its answer on real speech moved 7 ms: BENCHMARKS.md, "Caption words: a lead by context").
    aligned, fit = forced_align_scored(audio, text, lo, hi, decoder=decoder, passes=1, stop_lead=False,
                                       context_lead=False, pronounce_missing=False)
    if not aligned:
        return None
    out, position, bounds = {}, 0, {}
    for index, ((_, start, _), item_tokens) in enumerate(zip(chunk, tokens)):
        if item_tokens:
            out[index] = start - aligned[position].start_seconds
            bounds[index] = (aligned[position].start_seconds, aligned[position + len(item_tokens) - 1].stop_seconds)
            position += len(item_tokens)
    placed = sorted(bounds)
    paused = after_pause(np.array([bounds[k][0] for k in placed]), np.array([bounds[k][1] for k in placed]))
    pause_before = frozenset(k for k, after in zip(placed[1:], paused[1:]) if after)
    return _Placed(out, fit, sum(len(t) for t in tokens), pause_before)


def _out_of_silence_median(post_pause: list[float], differences: np.ndarray, agree_seconds: float) -> float:
    """The median of the captions out of silence (``post_pause``, among all placed ``differences``). Two that do not
    agree with their own median (each further than ``agree_seconds`` from it, the confidence's sense of agreeing)
    hold a misplaced caption, and their mean would carry half its error: where other captions were placed, the one
    nearer the median over all of them is taken (module docstring, "Captions out of silence")."""
    if len(post_pause) == 2 and differences.size > 2 and abs(post_pause[0] - post_pause[1]) > 2.0 * agree_seconds:
        median_all = float(np.median(differences))
        return min(post_pause, key=lambda diff: abs(diff - median_all))
    return float(np.median(post_pause))


def _unfit(result: Optional[_Placed | _Refused]) -> bool:
    """Whether ``result`` is a placed chunk whose words fit the audio worse than :data:`MIN_WORD_FIT`."""
    return isinstance(result, _Placed) and result.fit is not None and result.fit < MIN_WORD_FIT


def estimate_text_offset_forced(
    audio: AudioClip,
    transcript: Transcript,
    *,
    options: TextOptions = _DEFAULT,
    decoder: Optional[Any] = None,
) -> TextEstimate:
    """Estimate how late a transcript's stamps are by force-aligning its words to the audio.

    Args:
        audio: decoded audio (any rate; ``start_seconds`` honoured).
        transcript: words with times (best), or spans with text.
        options: ``max_offset_ms`` (search range; larger offsets abstain, ``offset_out_of_range``),
            ``min_confidence`` (abstain below it) and ``agree_ms`` (per-word differences within this of the
            median count as agreeing) of :class:`~aligner.TextOptions`.
        decoder: a ``pocketsphinx.Decoder`` at 16 kHz to reuse (default: a new one, ``new_decoder()``).

    Returns:
        :class:`~aligner.TextEstimate` with ``method="forced_words"`` (or ``forced_spans``) and
        ``num_words_aligned`` set (``num_onsets`` is 0: no energy onsets were used).

    Raises:
        ImportError: pocketsphinx is not installed (``pip install 'avalign[align]'``).

    Example:
        >>> est = estimate_text_offset_forced(audio, transcript)   # doctest: +SKIP
        >>> transcript.shifted(-est.text_offset_ms / 1000)         # doctest: +SKIP
    """
    max_offset_ms, min_confidence, agree_ms = options.max_offset_ms, options.min_confidence, options.agree_ms
    items, use_words = _items(transcript)
    items = [item for item in items if normalise_words(item[0], limit=0)]
    if not items:
        return text_abstain("empty_transcript")
    if decoder is None:
        decoder = new_decoder()
    margin = max_offset_ms / 1000.0
    chunks: list[list[tuple[str, float, float]]] = [[items[0]]]
    firsts = [0]  # index in items of each chunk's first item
    chunk_stop = items[0][2]
    for index, item in enumerate(items[1:], start=1):
        pause = item[1] - chunk_stop >= 2 * margin + _CHUNK_GAP_EXTRA_SECONDS
        if pause or item[1] - chunks[-1][0][1] > options.max_chunk_seconds:
            chunks.append([item])
            firsts.append(index)
            chunk_stop = item[2]
        else:
            chunks[-1].append(item)
            chunk_stop = max(chunk_stop, item[2])
    # Caption starts out of silence (module docstring, "Captions out of silence"): which items start after a pause.
    out_of_silence = after_pause(np.array([i[1] for i in items]), np.array([i[2] for i in items]))
    differences: list[float] = []
    post_pause: list[float] = []  # differences of the captions that start after a pause
    placed_words = 0
    unfit: list[float] = []  # differences of items whose chunk did not fit (MIN_WORD_FIT)
    unfit_fits: list[float] = []
    per_item: list[tuple[str, Optional[float]]] = []
    refused: list[_Refused] = []
    for chunk, first in zip(chunks, firsts):
        found = _chunk_differences(audio, chunk, margin, decoder)
        if (found is None or isinstance(found, _Refused)) and len(chunk) > 1:
            # The search sometimes fails on a long chunk ("final result does not match the grammar"), or the
            # chunk holds too many words: retry in halves, each with the same margin.
            half = len(chunk) // 2
            parts = [(part, start, _chunk_differences(audio, part, margin, decoder))
                     for part, start in ((chunk[:half], first), (chunk[half:], first + half))]
        else:
            parts = [(chunk, first, found)]
        # A chunk that fails to align or whose words do not fit may hold one caption that was never said (a
        # hallucinated "Thank you for watching.") among real ones: retry its items one by one, each judged by its fit.
        retried = []
        for part, start, result in parts:
            if (result is None or _unfit(result)) and len(part) > 1:
                retried += [([item], start + k, _chunk_differences(audio, [item], margin, decoder), MIN_RETRY_FIT)
                            for k, item in enumerate(part)]
            else:
                retried.append((part, start, result, MIN_WORD_FIT))
        for part, start, result, min_fit in retried:
            if isinstance(result, _Refused):
                refused.append(result)
            placed = result if isinstance(result, _Placed) else _Placed({}, None)
            kept = placed.differences
            if placed.fit is not None and placed.fit < min_fit:
                # The words are not what this audio says there: their places are not evidence (not placed).
                unfit += list(kept.values())
                unfit_fits.append(placed.fit)
                kept = {}
            else:
                placed_words += placed.words
            differences += list(kept.values())
            post_pause += [diff for k, diff in kept.items() if out_of_silence[start + k] or k in placed.pause_before]
            # Items without a dictionary word get no verdict and are left out; the others were aligned or not placed.
            per_item += [(text, round(kept[k] * 1000.0, 3) if k in kept else None)
                         for k, (text, _, _) in enumerate(part) if k in kept or _in_dictionary(text, decoder)]
    item_differences_ms = tuple(per_item)
    method = "forced_words" if use_words else "forced_spans"
    if not differences and unfit:  # said first: the words do not belong to this audio, whatever else was refused
        guess = float(np.median(unfit)) * 1000.0
        return text_abstain("words_do_not_match_audio", best_guess_ms=guess, item_differences_ms=item_differences_ms,
                            found=f"{len(unfit_fits)} chunk(s) of {len(unfit)} item(s) aligned, the best fitting the "
                                  f"audio at {max(unfit_fits):.1f} per frame (median of their places {guess:+.0f} ms)"
                                  + (f"; {len(refused)} caption(s)/chunk(s) refused by forced alignment" if refused else ""),
                            needed=f"words that fit the audio at >= {MIN_WORD_FIT:g} per frame (forced alignment's "
                                   f"acoustic fit; >= {MIN_RETRY_FIT:g} for a caption aligned alone after its chunk "
                                   f"did not fit)")
    if not differences and refused:
        worst = max(refused, key=lambda r: r.num_words)
        return text_abstain(worst.reason, needed=REFUSAL_NEEDED[worst.reason],
                            found=f"{len(refused)} caption(s)/chunk(s) refused by forced alignment, e.g. {worst.found()}")
    if not differences:
        return text_abstain("alignment_failed", found=f"0 of {len(items)} item(s) aligned",
                            needed="at least one aligned word", item_differences_ms=item_differences_ms)
    d = np.asarray(differences)
    offset_seconds = float(np.median(d))
    agreement = float(np.mean(np.abs(d - offset_seconds) <= agree_ms / 1000.0))
    if not use_words and post_pause:
        # Captions: the offset of the caption starts out of silence where they agree with the rest (module docstring).
        out_of_silence_seconds = _out_of_silence_median(post_pause, d, agree_ms / 1000.0)
        if abs(out_of_silence_seconds - offset_seconds) <= agree_ms / 1000.0:
            offset_seconds = out_of_silence_seconds
    coverage = d.size / len(items)
    whole = d.size > 1 and d.size == len(items)  # every item placed: count its words
    evidence = min(1.0, (placed_words if whole else d.size) / _FULL_EVIDENCE_WORDS)
    confidence = float(np.clip((agreement - _CHANCE_AGREEMENT) / 0.5, 0.0, 1.0)) * coverage * evidence
    logger.debug("forced text offset %.1f ms from %d of %d items: agreement %.2f", offset_seconds * 1000, d.size,
                 len(items), agreement)
    if abs(offset_seconds) > margin:
        return text_abstain("offset_out_of_range", num_words_aligned=int(d.size), confidence=confidence,
                            item_differences_ms=item_differences_ms,
                        best_guess_ms=offset_seconds * 1000.0, found=f"median {offset_seconds * 1000:.0f} ms over {d.size} word(s)",
                        needed=f"within ±{max_offset_ms:g} ms")
    if confidence < min_confidence:
        return text_abstain("low_confidence", num_words_aligned=int(d.size), confidence=confidence,
                        best_guess_ms=offset_seconds * 1000.0, item_differences_ms=item_differences_ms,
                        found=f"{d.size} of {len(items)} item(s) aligned, {agreement:.0%} within ±{agree_ms:g} ms of "
                              f"the median: confidence {confidence:.2f}", needed=f"confidence >= {min_confidence}")
    return TextEstimate(offset_seconds * 1000.0, confidence, method, best_guess_ms=offset_seconds * 1000.0,
                        num_words_aligned=int(d.size), item_differences_ms=item_differences_ms,
                        num_starts_after_pause=0 if use_words else len(post_pause))


CAPTION_MARGIN_SECONDS = 0.25
"""Caption edges are loose: each caption's words are searched this far beyond its ``[start, stop)``."""


def caption_words(
    audio: AudioClip,
    transcript: Transcript,
    *,
    text_offset_ms: float = 0.0,
    margin_seconds: float = CAPTION_MARGIN_SECONDS,
    decoder: Optional[Any] = None,
) -> tuple[Transcript, int]:
    """Give each caption without words its words, by forced alignment inside the caption.

    ::

        transcript clock   [caption s ............ e)            (stamps, ``text_offset_ms`` late)
        audio clock      [s - off - margin ........ e - off + margin)   forced_align_scored → words, fit
        result           words + off, back on the transcript clock, in the caption's Span (each word may lie up
                         to the margin outside the cue's own times: caption edges are loose; the audio decides)

    A caption whose words fit the window's audio worse than :data:`MIN_WORD_FIT` (``forced_align_scored``) gets no words:
    the audio there does not say its text (TUNE: 154 of 154 true captions fit at -32.3 or better; another clip's
    captions at the same times: 31 of 91 failed to align, 53 of the other 60 fit below -35; BENCHMARKS.md,
    "Transcript offset: words that do not fit the audio").

    A caption that abuts the previous one (no gap: the window starts at the cue edge, inside speech) is taken to
    start where its first word starts (``forced_align_words(..., start_is_word_boundary=True)``). A window widened
    before its caption (a gap before it) starts before the caption's speech: it is padded with silence even when a
    noise or music bed makes that start loud (``pad_start=True``), so that the aligner does not stretch the first
    word back over the bed.

    Args:
        audio: decoded audio.
        transcript: captions (spans that already have words are kept as they are).
        text_offset_ms: the transcript offset (DESIGN.md sign) to apply before aligning.
        margin_seconds: search this far beyond each caption's edges (at most half-way to the next or previous caption).
        decoder: a pocketsphinx decoder to reuse (never by two threads at once); default: one per thread.

    Returns:
        ``(transcript, failed)``: the transcript with words for every caption that aligned, and how many
        captions with text got none (alignment failed or refused, or its words do not fit the audio; the caption
        itself is kept).

    Raises:
        ImportError: pocketsphinx is not installed.
        ValueError: ``margin_seconds`` negative or NaN, ``text_offset_ms`` not finite.
    """
    if not margin_seconds >= 0:
        raise ValueError(f"margin_seconds must be >= 0, got {margin_seconds = }")
    if not math.isfinite(text_offset_ms):
        raise ValueError(f"text_offset_ms must be finite, got {text_offset_ms = }")
    decoder = decoder if decoder is not None else shared_decoder()
    shift = text_offset_ms / 1000.0
    spans, failed = [], 0
    ordered = transcript.spans
    for i, span in enumerate(ordered):
        # The margin stops half-way to a neighbouring caption: another caption's speech inside the window
        # (words the text does not hold) pulls the edge words towards it.
        before = min(margin_seconds, max(0.0, (span.start_seconds - ordered[i - 1].stop_seconds) / 2)) if i else margin_seconds
        after = (min(margin_seconds, max(0.0, (ordered[i + 1].start_seconds - span.stop_seconds) / 2))
                 if i + 1 < len(ordered) else margin_seconds)
        lo = max(span.start_seconds - shift - before, audio.start_seconds)
        hi = min(span.stop_seconds - shift + after, audio.stop_seconds)
        if span.words or not normalise_words(span.text, limit=0):
            spans.append(span)
            continue
        # A caption that abuts the previous one starts where its first word starts (the captioner cut there).
        abuts = i > 0 and before == 0.0 and lo > audio.start_seconds
        # A window widened before the caption starts before its speech, whatever the bed there: pad it (else the
        # quiet-edge rule decides).
        pad_start = True if before > 0.0 else None
        found, fit = (forced_align_scored(audio, span.text, lo, hi, decoder=decoder, start_is_word_boundary=abuts,
                                          pad_start=pad_start)
                      if hi > lo else ((), None))
        if found and fit is not None and fit < MIN_WORD_FIT:
            # Words placed where the audio says something else (a caption for another clip, lyrics, a sound tag):
            # their times would be invented. The caption is kept without words, counted as failed.
            logger.info("caption words dropped: %r fits the audio at %.1f per frame (< %g)", span.text[:200], fit,
                        MIN_WORD_FIT)
            found = ()
        if not found:
            failed += 1
            spans.append(span)
            continue
        words = tuple(Word(w.text, w.start_seconds + shift, w.stop_seconds + shift) for w in found)
        spans.append(dataclasses.replace(span, words=words))
    return dataclasses.replace(transcript, spans=tuple(spans)), failed
