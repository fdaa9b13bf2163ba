"""Word times inside a caption span by forced alignment with pocketsphinx (optional extra ``[align]``).

Segment-level captions (SRT, WebVTT) give one ``[start, stop)`` per line; training often needs words.
Given the span's audio and its text, pocketsphinx's forced aligner (acoustic model and dictionary ship
in the ``pocketsphinx==5.1.1`` wheel) places each word::

    audio clock        start                                                   stop
    padded input  ~~~~~|-----[he)[was)[not  )--[an)[ill)[disposed  )[young)[man  )--|~~~~~
    ps frames          10 ms per frame; a word's first frame f is dated at f / 100 s
    two passes         the second pass sees the input 5 ms later (half a frame); times are averaged
    lead correction    + FORCED_LEAD_MS to starts and stops (not in digital silence), + STOP_LEAD_MS to the
                       starts of stop-initial words, clamped into [start, stop)

The dictionary is looked up with the text lowercased and punctuation stripped (apostrophes inside words kept:
:func:`normalise_words`); a word missing from it gets espeak-ng's pronunciation (:func:`add_missing_pronunciations`,
Latin letters only), and one that still has none is left out of the alignment and of the result (logged); the
remaining words keep their order. Each word is reported as written (:func:`written_words`: ``"Hello,"`` →
``"Hello"``, ``"Don't!"`` → ``"Don't"``, ``"$1,000."`` → ``"$1,000"``); sound tags (``"[Music]"``) and speaker labels
(``"JOHN:"``) are not words (:func:`spoken_text`): neither aligned nor reported (the segment's text keeps them).
Times are on the clock of ``audio`` (apply the transcript offset before, if known).

Corrections of pocketsphinx's raw word times (measured in BENCHMARKS.md, "Word starts on
human-timed speech"):

- **Padding.** :data:`PAD_SECONDS` of digital silence before (after) a span that starts (ends) in
  silence: with less than about 70 ms of leading silence the aligner has no room for its silence model
  and puts the first word at frame 0 (North Wind: -68 ms raw, -38 ms padded; damon: -51 / -41 ms). A
  span cut inside speech is not padded there (:func:`_quiet_edges`). A start that is loud but known to lie
  before the speech (a caption window widened by a margin, over a noise or music bed) is padded when the
  caller says so (``pad_start=True``): unpadded, the aligner stretches the first word back over the bed.
  A word that lands in the padding is clamped to the span start.
- **Half-frame passes.** Word starts are quantised to 10 ms frames; a second alignment of the input
  delayed by 5 ms and the average of both halves the step (held-out |error| median 15.8 -> 14.3 ms).
- **Cut starts.** A span that starts inside speech is not padded, and pocketsphinx puts its first word on
  the first frame: that start is the cut, not a boundary the aligner chose. Where the caller knows the cut is a
  word start (``start_is_word_boundary``: a caption abutting the previous one), it gets no lead correction.
- **Lead.** Pocketsphinx dates a boundary at the first sample of the first 25.6 ms analysis window
  that it assigns to the new word, so starts come early. :data:`FORCED_LEAD_MS` was measured on
  praatio 6.2.2's ``examples/files`` (bobby, mary, damon_set_test: 12 words, 3 speakers, word TextGrids
  timed by hand): signed median of (aligned - annotated) start = -22.1 ms with padding and both passes.
  It is added to every time. The North Wind recording of praat-parselmouth 0.4.7 was not used for
  tuning; it is the held-out report. The lead comes with a noise floor: on espeak-ng speech (93 words)
  pocketsphinx's raw starts are -1.1 ms (median) from the truth in digital silence, but -12.8, -14.9
  and -17.1 ms with white noise 40, 30 and 20 dB below the speech. Real recordings always have a
  floor (the four above: 10th percentile of the 10 ms level 30-46 dB below its 95th); a span whose
  floor (judged on the span and 2 s around it) is more than :data:`DIGITAL_SILENCE_DB` below its loud
  level (synthetic speech in exact zeros) gets no correction.
- **Stop-initial words.** A word whose first phone is a stop (P B T D K G) is dated 20-25 ms earlier than the
  others, relative to the annotation, on espeak-ng caption words and on praatio's real words alike:
  :data:`STOP_LEAD_MS` is added to its start on top of the lead (``stop_lead=False``: one lead for every word).
- **Context.** Pocketsphinx dates a word boundary inside connected speech about 15 ms later, relative to the
  annotation, than a word start after a pause, in both voices measured (real and espeak-ng): a word that abuts the
  previous one as aligned gets :data:`CONNECTED_LEAD_MS` on top of the lead (its boundary, so the previous word's stop
  too), a word after a pause :data:`AFTER_PAUSE_LEAD_MS` (``context_lead=False``: one lead for every word).

How well the text fits the audio (:func:`forced_align_scored`): pocketsphinx scores each frame relative to that frame's
best senone, so the aligned words' mean score per frame is near 0 where the audio says the text and falls where it
says something else (the transcript-offset estimator's ``MIN_WORD_FIT``). Exact zeros are features no microphone
gives: espeak-ng speech in digital silence fitted at -20 to -43 with its own text, half its captions below
``MIN_WORD_FIT`` (BENCHMARKS.md, "Few caption edges in digital silence"). In digital silence the first pass is
therefore aligned a second time with white noise :data:`FIT_FLOOR_BELOW_DB` under the span's loud level added (the
quietest floor of the real recordings above), and the fit is that alignment's; the word times stay those of the span
as it is (a floor brings the aligner's lead, which digital silence does not correct), unless the span as it is does
not align at all, when the floored alignment's times are used. In digital silence only, this
costs one more alignment per span.

Memory and time grow with words x frames; a span is refused (empty result, a warning naming the
reason) when it holds more than :data:`MAX_ALIGN_WORDS` words, more than :data:`MAX_ALIGN_SECONDS`
of audio, or more words than its audio can hold (:data:`MAX_WORDS_PER_SECOND`); text is not even
split beyond that many words, so a 50 MB single-cue caption costs no more than a short one.
"""
from __future__ import annotations

import logging
import re
from typing import Any, Optional, Sequence

import numpy as np

from aligner._decoder import ALIGN_SAMPLE_RATE, new_decoder
from aligner._signals import mono
from aligner._spoken_numbers import spoken_form, written_label
from aligner._text_offset import after_pause
from avcore import AudioClip, Word, sample_range

logger = logging.getLogger(__name__)

__all__ = [
    "AFTER_PAUSE_LEAD_MS",
    "ALIGN_SAMPLE_RATE",
    "CONNECTED_LEAD_MS",
    "DIGITAL_SILENCE_DB",
    "FIT_FLOOR_BELOW_DB",
    "FORCED_LEAD_MS",
    "STOP_LEAD_MS",
    "MAX_ALIGN_SECONDS",
    "MAX_ALIGN_WORDS",
    "MAX_WORDS_PER_SECOND",
    "PAD_SECONDS",
    "add_missing_pronunciations",
    "alignment_refusal",
    "floor_gap_db",
    "forced_align_scored",
    "forced_align_words",
    "in_dictionary",
    "normalise_words",
    "spoken_tokens",
    "written_words",
]

FORCED_LEAD_MS = 22.1
"""Added to pocketsphinx's word times: its measured lead on human-timed speech (praatio 6.2.2 examples,
12 words; see the module docstring and BENCHMARKS.md)."""
STOP_LEAD_MS = 10.0
"""Added on top of :data:`FORCED_LEAD_MS` to the start of a word whose first phone is a stop (P B T D K G). After the
lead, stop-initial starts are early while the other words' are late or on time (wild TUNE caption words after a
caption's first: stops -11.7 ms signed median, n=142, fricatives +12.6, vowels +20.6; praatio's real words: stop-initial
-45.1 / -4.1 / -16.7, the others +3.8). Derived as minus the signed median of all 194 stop-initial TUNE caption words
(-10.8 ms), rounded; the other words are left on the one lead, which real speech needs (BENCHMARKS.md, "Caption words:
a lead for stop-initial words"). Like the lead, not added in digital silence."""
_STOPS = frozenset(("P", "B", "T", "D", "K", "G"))
CONNECTED_LEAD_MS = -7.0
"""Added on top of :data:`FORCED_LEAD_MS` to a word boundary inside connected speech: the start of a word that begins
less than :func:`~aligner._text_offset.after_pause`'s 80 ms after the previous word's aligned stop, and that stop
(the first word of a span not padded before, which starts inside speech, counts as connected). With
:data:`AFTER_PAUSE_LEAD_MS` it undoes the ~15 ms by which pocketsphinx dates boundaries inside connected speech
later than starts after a pause, relative to where the words start, with the one lead (signed medians, connected vs
after a pause): praatio's and North Wind's real words +4.8 ms (n=14) vs -10.2 ms (n=4); the wild generator's TUNE
caption words +11.7 ms (n=379) vs -5.1 ms (n=87). The pair (-7, +3) was chosen on TUNE and praatio's 12 words alone:
of a grid (after a pause 0 to +10 ms, connected +5 to -15 ms) the largest TUNE caption-word median gain that leaves
praatio's |error| median and |signed median| no worse than with the one lead (BENCHMARKS.md, "Caption words: a lead
by context"). The two voices still differ in the level of each group (espeak-ng's boundaries 5-26 ms later than real
ones), which no shared constant removes. Like the lead, not added in digital silence."""
AFTER_PAUSE_LEAD_MS = 3.0
"""Added on top of :data:`FORCED_LEAD_MS` to the start of a word after a pause (at least
:func:`~aligner._text_offset.after_pause`'s 80 ms after the previous word's aligned stop, or the first word of a
span padded before): see :data:`CONNECTED_LEAD_MS`."""
DIGITAL_SILENCE_DB = 70.0
"""A span whose quiet level (10th percentile of 10 ms frames) is this far below its loud level (95th) has
no noise floor (digital silence): pocketsphinx shows no lead there, and :data:`FORCED_LEAD_MS` is not added."""
FIT_FLOOR_BELOW_DB = 45.0
"""In digital silence (:data:`DIGITAL_SILENCE_DB`) the words' fit is judged on the span with white noise this far under
its loud level: the quietest floor measured on real recordings (30-46 dB under the loud level; module docstring)."""
PAD_SECONDS = 0.3
"""Digital silence added before and after a span so that its first word is not put at frame 0."""
MAX_ALIGN_WORDS = 2000
"""Most words one alignment takes; more is refused (memory grows about 5 KB per word, plus frames)."""
MAX_ALIGN_SECONDS = 600.0
"""Most seconds of audio one alignment takes."""
MAX_WORDS_PER_SECOND = 10.0
"""A span with more words per second than this cannot be speech of that text (fast speech is 5-6)."""
_FRAMES_PER_SECOND = 100
_HALF_FRAME_SECONDS = 0.005
_EDGE_SECONDS = 0.03
_QUIET_BELOW_LOUD_DB = 25.0
_FLOOR_CONTEXT_SECONDS = 2.0  # the noise floor is judged on the span and this much audio on each side
_NON_WORDS = {"<s>", "</s>", "<sil>", "[NOISE]", "[SPEECH]"}
_WORD = re.compile(r"\S+")
# What captions and ASR output write that nobody says: sound tags in brackets or parentheses ("[Music]", "(applause)",
# Whisper's "[BLANK_AUDIO]", WhisperX's "[SPEAKER_00]:"), and a speaker label (a name in capitals and a colon: "JOHN:",
# "DR. SMITH:", "MAN #2:") opening the text or a dialogue turn ("- ", ">> ").
_ANNOTATION = re.compile(r"\[[^\]]*\]|\([^)]*\)")
_SPEAKER_LABEL = re.compile(r"(^\s*|(?:^|\s)[-\u2013\u2014]\s*|>>\s*)[A-Z][A-Z0-9.'#_ -]{0,30}?:(?=\s|$)")


def spoken_text(text: str) -> str:
    """``text`` without what captions and ASR output write that nobody says: sound tags in brackets or parentheses
    (``"[Music]"``, ``"(applause)"``) and speaker labels (``"JOHN:"``, ``"- MARY:"``) opening the text or a dialogue
    turn, each replaced by a space.

    Example:
        >>> " ".join(spoken_text("- JOHN: (sighs) Hello. [door closes]").split())
        '- Hello.'
    """
    return _SPEAKER_LABEL.sub(r"\1 ", _ANNOTATION.sub(" ", text))


_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'"})
"""Typographic apostrophes (``don’t``: subtitles and ASR output write them) read as the dictionary's ``'``."""
_DASHES = re.compile(r"[-\u2010\u2011\u2012\u2013\u2014]+")
"""Hyphens and dashes inside a piece of text (``well-known``, ``I—I``): between words that are said."""


def _dictionary_form(raw: str) -> str:
    """The dictionary form of a whitespace-separated piece of text: lowercased, typographic apostrophes as ``'``,
    without punctuation (apostrophes inside the word kept); ``""`` when nothing is left."""
    return re.sub(r"[^\w']", "", raw.lower().translate(_APOSTROPHES)).strip("'")


def _dashed_parts(raw: str) -> tuple[str, ...]:
    """The dictionary forms of a piece's parts between hyphens or dashes (``"well-known,"`` → ``("well", "known")``,
    ``"I—I"`` → ``("i", "i")``): how a hyphenated piece is said, a part that is a dotted initialism as its letters
    (``"U.S.-based"`` → ``("u", "s", "based")``, not the word ``us``). One part (or none) when it has no dash between
    words."""
    return tuple(part for p in _DASHES.split(raw) for part in (_initialism_letters(p) or (_dictionary_form(p),)) if part)


_WORD_CHARACTER = re.compile(r"\w")


def _strip_edges(word: str) -> str:
    r"""``word`` without the characters around it that are neither letters, digits nor ``_`` (``"“U.S.,”"`` →
    ``"U.S"``; ``""`` when it has none). In linear time: the pattern ``^\W+|\W+$`` retried ``\W+$`` at every
    position of a long run of punctuation inside a word (``"a-.-.- … b"``: 80 000 characters took 73 s)."""
    first = _WORD_CHARACTER.search(word)
    if first is None:
        return ""
    last = _WORD_CHARACTER.search(word[::-1])
    return word[first.start():len(word) - last.start()]


_ABBREVIATION = re.compile(r"\w\.\w")
_INITIALISM = re.compile(r"[^\W\d_](?:\.[^\W\d_])+")
"""Single letters joined by dots (``U.S``, ``a.m``, ``U.S.A``; the dots around them stripped): said letter by letter."""


def _initialism_letters(raw: str) -> tuple[str, ...]:
    """The letters of a dotted initialism, lowercased, as they are said (``"U.S.,"`` → ``("u", "s")``, ``"a.m."`` →
    ``("a", "m")``: each letter is a word of the dictionary, with its name's phones); ``()`` for any other piece
    (``"Mr."``, ``"Ph.D."``, ``"e-mail"``)."""
    word = _strip_edges(raw.translate(_APOSTROPHES))
    return tuple(word.lower().split(".")) if _INITIALISM.fullmatch(word) else ()


def _written_form(raw: str) -> str:
    """A whitespace-separated piece of text as the word it writes, case kept: a piece with digits as
    :func:`~aligner._spoken_numbers.written_label` says (``"$1,000."`` → ``"$1,000"``, ``"25%,"`` → ``"25%"``); any
    other without the characters around it that are neither letters, digits nor ``_`` (``"“Hello,”"`` → ``"Hello"``,
    ``"'cause"`` → ``"cause"``, as its dictionary form drops them), an abbreviation's last dot kept (``"U.S.,"`` →
    ``"U.S."``; ``"Mr."`` → ``"Mr"``: a single dot may end the sentence)."""
    if any(c.isdigit() for c in raw):
        return written_label(raw)
    word = _strip_edges(raw)
    if _ABBREVIATION.search(word) and raw[raw.find(word) + len(word):].startswith("."):
        word += "."
    return word


def normalise_words(text: str, *, limit: Optional[int] = None) -> list[str]:
    """The spoken words of ``text`` (:func:`spoken_text`), lowercased and without punctuation: the dictionary forms
    (``"Don't!"`` → ``["don't"]``, ``"JOHN: Hi! [laughs]"`` → ``["hi"]``). :func:`written_words` gives the same words
    as written (what forced alignment reports).

    With ``limit``, stop after ``limit + 1`` words (enough to tell that there are too many) without
    splitting the rest of the text.
    """
    words = []
    for match in _WORD.finditer(spoken_text(text)):
        token = _dictionary_form(match.group(0))
        if token:
            words.append(token)
            if limit is not None and len(words) > limit:
                break
    return words


def written_words(text: str, *, limit: Optional[int] = None) -> list[str]:
    """The words of :func:`normalise_words` (the same count, in order), each as ``text`` writes it: case kept, the
    punctuation around it dropped (``"Hello, Paris! Don't pay $1,000."`` → ``["Hello", "Paris", "Don't", "pay",
    "$1,000"]``; rule in :func:`_written_form`). Sound tags and speaker labels are not words (:func:`spoken_text`:
    ``"JOHN: Hi! [laughs]"`` → ``["Hi"]``). The texts forced alignment reports its words under; ``limit`` as in
    :func:`normalise_words`.

    Example:
        >>> written_words("- JOHN: Hello, Paris! [Music] Don't pay $1,000 in the U.S.")
        ['Hello', 'Paris', "Don't", 'pay', '$1,000', 'in', 'the', 'U.S.']
    """
    words = []
    for match in _WORD.finditer(spoken_text(text)):
        if _dictionary_form(match.group(0)):
            words.append(_written_form(match.group(0)))
            if limit is not None and len(words) > limit:
                break
    return words


def spoken_tokens(text: str, *, limit: Optional[int] = None) -> list[tuple[str, tuple[str, ...]]]:
    """The words of :func:`written_words`, one entry per written word, each with the dictionary words it is spoken as:
    where forced alignment aligns text and reports its words. A word with digits is spoken as
    :func:`~aligner._spoken_numbers.spoken_form` says (``"$1,000,"`` → ``("$1,000", ("one", "thousand", "dollars"))``);
    a word of parts between hyphens or dashes is said as its parts (``("well-known", ("well", "known"))``,
    ``("I—I", ("i", "i"))``: the dictionary holds the parts, not ``wellknown``), a dotted initialism as its letters
    (``("U.S.", ("u", "s"))``, not the word ``us``); one that cannot be spoken out, and
    every other word, is its dictionary form (:func:`normalise_words`: ``("Paid", ("paid",))``, ``("don’t",
    ("don't",))``, ``("555-0199", ("5550199",))``; so are all words with digits when ``num2words`` is not installed).
    Entries and ``limit`` count as :func:`normalise_words`' words do.
    """
    out: list[tuple[str, tuple[str, ...]]] = []
    for match in _WORD.finditer(spoken_text(text)):
        raw = match.group(0)
        token = _dictionary_form(raw)
        if not token:
            continue
        spoken = None
        if any(c.isdigit() for c in raw):
            try:
                spoken = spoken_form(raw)
            except ImportError:  # num2words (extra [align]) missing: digits stay unspoken, as before it was used
                spoken = None
        if spoken is None and not any(c.isdigit() for c in raw):
            # "U.S.": said as its letters (its dictionary form "us" is another word); "well-known": as "well known"
            parts = _initialism_letters(raw) or _dashed_parts(raw)
            spoken = parts if len(parts) > 1 else None
        out.append((_written_form(raw), spoken or (token,)))
        if limit is not None and len(out) > limit:
            break
    return out


_PRONOUNCED: set[str] = set()
"""Words this process added to a decoder with espeak-ng's pronunciation (:func:`add_missing_pronunciations`): not
words of the dictionary itself (:func:`in_dictionary`)."""


def in_dictionary(decoder: Any, word: str) -> bool:
    """Whether ``word`` (a dictionary form) is in pocketsphinx's own dictionary: found by ``decoder``, and not one
    that :func:`add_missing_pronunciations` added (the transcript-offset estimator counts only these; a decoder shared
    with caption words holds both)."""
    return word not in _PRONOUNCED and decoder.lookup_word(word) is not None


_LATIN_WORD = re.compile(r"[a-z'\u00e0-\u00f6\u00f8-\u00ff]+")
"""A dictionary form espeak-ng's English rules may pronounce: lowercase Latin letters (Latin-1 accents included)."""


def add_missing_pronunciations(decoder: Any, words: Sequence[str]) -> int:
    """Add to ``decoder``'s dictionary each of ``words`` (dictionary forms) that it lacks, with espeak-ng's
    pronunciation (:func:`~aligner._g2p.espeak_pronunciations`); returns how many were added. Only words in Latin
    letters are pronounced (:data:`_LATIN_WORD`: English rules say nothing useful of other scripts, and words with
    digits are :func:`spoken_tokens`' to spell). A word that gets no pronunciation (other letters, no espeak-ng, an IPA
    symbol without a phone) stays missing: it is left out of the alignment, as every missing word was before."""
    missing = [w for w in dict.fromkeys(words) if decoder.lookup_word(w) is None and _LATIN_WORD.fullmatch(w)]
    if not missing:
        return 0
    from aligner._g2p import espeak_pronunciations

    added = [(w, phones) for w, phones in espeak_pronunciations(missing).items() if phones is not None]
    _PRONOUNCED.update(w for w, _ in added)
    for word, phones in added:
        # update=False: each alignment pass builds its search from the dictionary (set_align_text); updating the
        # recognizer rebuilds a search it never uses (0.26 s a call, against 0.8 ms per word; same word times).
        decoder.add_word(word, phones, False)
    if added:
        logger.info("forced alignment: %d word(s) missing from the dictionary pronounced by espeak-ng: %s", len(added),
                    ", ".join(f"{w} ({p})" for w, p in added[:10]))
    return len(added)


def alignment_refusal(num_words: int, duration_seconds: float) -> Optional[str]:
    """Why an alignment of ``num_words`` words to ``duration_seconds`` of audio is refused, or None.

    Reasons: ``too_many_words`` (> :data:`MAX_ALIGN_WORDS`), ``too_long`` (> :data:`MAX_ALIGN_SECONDS`),
    ``words_do_not_fit`` (more than :data:`MAX_WORDS_PER_SECOND` words per second, plus one).
    """
    if num_words > MAX_ALIGN_WORDS:
        return "too_many_words"
    if duration_seconds > MAX_ALIGN_SECONDS:
        return "too_long"
    if num_words > MAX_WORDS_PER_SECOND * duration_seconds + 1:
        return "words_do_not_fit"
    return None


def floor_gap_db(signal: np.ndarray, sample_rate: int) -> float:
    """Loud level minus quiet level (dB): 95th minus 10th percentile of 10 ms frame levels (more than
    :data:`DIGITAL_SILENCE_DB`: no noise floor)."""
    from aligner._signals import log_energy

    level, _ = log_energy(signal, sample_rate, hop_seconds=0.01)
    if level.size == 0:
        return 0.0
    return float(np.percentile(level, 95) - np.percentile(level, 10))


def _fit_floor_rms(signal: np.ndarray, sample_rate: int) -> float:
    """RMS (full scale 1) of the noise floor the fit is judged with in digital silence: :data:`FIT_FLOOR_BELOW_DB`
    under the loud level (95th percentile of 10 ms frame levels) of ``signal``."""
    from aligner._signals import log_energy

    level, _ = log_energy(signal, sample_rate, hop_seconds=0.01)
    return 10.0 ** ((float(np.percentile(level, 95)) - FIT_FLOOR_BELOW_DB) / 20.0) if level.size else 0.0


def _with_floor(pcm: np.ndarray, floor_rms: float) -> np.ndarray:
    """``pcm`` (int16) plus white noise of RMS ``floor_rms`` (full scale 1), the same noise for the same length."""
    noise = np.random.default_rng(pcm.size).standard_normal(pcm.size) * (32767.0 * floor_rms)
    return np.clip(pcm + np.round(noise), -32768, 32767).astype("<i2")


def _quiet_edges(signal: np.ndarray) -> tuple[bool, bool]:
    """Whether the first / last 30 ms of the span (16 kHz) are quiet: more than 25 dB below its loud level.

    Only a span that starts (ends) in silence is padded there: a span cut inside speech (abutting captions)
    padded with silence gets a false onset at the cut (generated SRT/VTT clips: word-start median 9.6 ->
    14.1 ms, 8 of 66 words lost to failed alignments, when every span was padded).
    """
    from aligner._signals import log_energy

    level, _ = log_energy(signal, ALIGN_SAMPLE_RATE, hop_seconds=0.01)
    edge = int(round(_EDGE_SECONDS * ALIGN_SAMPLE_RATE))
    if level.size == 0 or signal.size < 2 * edge:
        return True, True
    loud = float(np.percentile(level, 95))

    def quiet(part: np.ndarray) -> bool:
        return 10.0 * np.log10(float(np.mean(np.square(part, dtype=np.float64))) + 1e-12) < loud - _QUIET_BELOW_LOUD_DB

    return quiet(signal[:edge]), quiet(signal[-edge:])


def _first_phone(decoder: Any, word: str) -> str:
    """The first phone of ``word``'s dictionary pronunciation (``""`` when it has none)."""
    pronunciation = decoder.lookup_word(word)
    return pronunciation.split()[0] if pronunciation else ""


def _context_shifts_seconds(raw: np.ndarray, *, padded_before: bool) -> np.ndarray:
    """``[W, 2]`` shifts (s) of the words' start/stop times by context (:data:`CONNECTED_LEAD_MS`,
    :data:`AFTER_PAUSE_LEAD_MS`), from the raw aligned times ``raw`` (``[W, 2]``, seconds from the span's first
    sample)::

        raw        [w0 )    [w1 )[w2  )      a pause (after_pause: >= 80 ms) before w1; w2 abuts w1
        shift      +after   +after            starts after a pause (w0: the span was padded before)
                                 |<-connected: w2's start and w1's stop move together (one boundary)

    The first word of a span not padded before starts inside speech (connected), unless pocketsphinx put it on the
    span's first frame: that start is the cut, not a boundary the aligner chose (no shift, as for the stop lead)."""
    shifts = np.zeros_like(raw)
    paused = after_pause(raw[:, 0], raw[:, 1])
    paused[0] = padded_before  # the span's first word: after a pause only where the span was padded before it
    shifts[:, 0] = np.where(paused, AFTER_PAUSE_LEAD_MS, CONNECTED_LEAD_MS) / 1000.0
    connected = ~paused
    shifts[:-1, 1] = np.where(connected[1:], shifts[1:, 0], 0.0)  # a connected word's boundary is the previous stop
    if not padded_before and raw[0, 0] <= _HALF_FRAME_SECONDS:
        shifts[0, 0] = 0.0  # on the cut
    return shifts


def _align_pass(decoder: Any, pcm: np.ndarray, text: str, expected: list[str]) -> Optional[tuple[np.ndarray, float]]:
    """``([W, 2]`` start/stop seconds (from the first sample of ``pcm``) of the words, their acoustic fit per frame
    (:func:`forced_align_scored`)``)``, or None on failure."""
    decoder.set_align_text(text)
    # A fresh front end for every pass: pocketsphinx's noise removal (``remove_noise``, which the en-us model's
    # feat.params turns on) carries its noise estimate from one utterance to the next (CMN is batch: per utterance),
    # so a reused decoder aligned the same span differently after other audio, the second pass after the first
    # included (fits, and on marginal spans word times and transcript offsets). reinit_feat() takes ~0.05 ms.
    decoder.reinit_feat()
    decoder.start_utt()
    decoder.process_raw(pcm.tobytes(), full_utt=True)
    decoder.end_utt()
    out, names, score, frames = [], [], 0.0, 0
    logmath = decoder.get_logmath()
    for seg in decoder.seg() or ():  # None when the audio does not match the text
        name = re.sub(r"\(\d+\)$", "", seg.word)  # alternate pronunciations: "was(2)"
        if name in _NON_WORDS:
            continue
        names.append(name)
        out.append((seg.start_frame / _FRAMES_PER_SECOND, (seg.end_frame + 1) / _FRAMES_PER_SECOND))
        # seg.ascore is the word's acoustic score as a probability (logmath.exp); back to pocketsphinx's log units.
        score += logmath.log(seg.ascore) if seg.ascore > 0 else logmath.get_zero()
        frames += seg.end_frame - seg.start_frame + 1
    if names != expected:
        return None
    return np.asarray(out, dtype=np.float64), score / max(frames, 1)


def forced_align_words(
    audio: AudioClip,
    span_text: str,
    start_seconds: float,
    stop_seconds: float,
    *,
    decoder: Optional[Any] = None,
    passes: int = 2,
    start_is_word_boundary: bool = False,
    pad_start: Optional[bool] = None,
    stop_lead: bool = True,
    context_lead: bool = True,
    pronounce_missing: bool = True,
) -> tuple[Word, ...]:
    """Split one caption span into words with times, by forced alignment of ``span_text`` to
    ``audio[start_seconds, stop_seconds)``.

    Args:
        audio: decoded audio (any rate and channel count; resampled to 16 kHz mono for the aligner).
        span_text: the caption's text.
        start_seconds: span start on the audio clock (inclusive).
        stop_seconds: span stop on the audio clock (exclusive); ``stop_seconds > start_seconds``.
        decoder: a ``pocketsphinx.Decoder`` at 16 kHz to reuse (creating one takes about 0.3 s).
        passes: 2 (the second on input delayed by half a frame, times averaged: finer word starts) or 1
            (half the time; the same mean bias, so enough for a median over many words).
        start_is_word_boundary: ``start_seconds`` is where a word begins (a cut between abutting captions): when
            the span starts inside speech and the first word is put on its first frame, that start is the cut,
            not a boundary pocketsphinx chose, and gets no lead correction.
        pad_start: whether to put :data:`PAD_SECONDS` of digital silence before the span: None (default) when its
            first 30 ms are quiet (:func:`_quiet_edges`); True where the caller knows the span starts before the
            speech it holds (a caption window widened by a margin), however loud the bed there; False never.
        stop_lead: add :data:`STOP_LEAD_MS` to the start of each word whose first phone is a stop (where the lead
            applies); False keeps every word on the one lead (the transcript-offset estimator's choice).
        context_lead: add :data:`CONNECTED_LEAD_MS` to each boundary inside connected speech and
            :data:`AFTER_PAUSE_LEAD_MS` to each start after a pause (where the lead applies); False keeps every word
            on the one lead (the transcript-offset estimator's choice: its answer on real speech moved 7 ms with it).
        pronounce_missing: give words missing from the dictionary espeak-ng's pronunciation and align them
            (:func:`add_missing_pronunciations`); False aligns only the dictionary's own words (:func:`in_dictionary`:
            the transcript-offset estimator's choice, whose thresholds were measured on them).

    Returns:
        The words of ``span_text`` that have a pronunciation (``pronounce_missing``), in order, as written
        (:func:`written_words`), each with ``[start_seconds, stop_seconds)`` on the audio clock inside
        ``[start_seconds, stop_seconds)``, lead-corrected (module docstring); ``()`` when no word has one, the span is
        refused (:func:`alignment_refusal`, logged) or the alignment fails.

    Raises:
        ValueError: ``stop_seconds <= start_seconds`` or the span lies outside the audio.
        ImportError: pocketsphinx is not installed.

    Example:
        >>> words = forced_align_words(audio, "He was not an ill-disposed young man.", 0.0, 3.0)  # doctest: +SKIP
        >>> [(w.text, round(w.start_seconds, 2)) for w in words][:2]                              # doctest: +SKIP
        [('He', 0.23), ('was', 0.35)]
    """
    return forced_align_scored(audio, span_text, start_seconds, stop_seconds, decoder=decoder, passes=passes,
                               start_is_word_boundary=start_is_word_boundary, pad_start=pad_start,
                               stop_lead=stop_lead, context_lead=context_lead, pronounce_missing=pronounce_missing)[0]


def forced_align_scored(
    audio: AudioClip,
    span_text: str,
    start_seconds: float,
    stop_seconds: float,
    *,
    decoder: Optional[Any] = None,
    passes: int = 2,
    start_is_word_boundary: bool = False,
    pad_start: Optional[bool] = None,
    stop_lead: bool = True,
    context_lead: bool = True,
    pronounce_missing: bool = True,
) -> tuple[tuple[Word, ...], Optional[float]]:
    """:func:`forced_align_words`, with how well the words fit the audio: ``(words, fit)``.

    ``fit`` is the aligned words' acoustic score per 10 ms frame, in pocketsphinx's log units (base 1.0001, as its
    decoder reports them): each frame's score is relative to the best-scoring senone of that frame, so ``fit`` is 0
    when every frame of the words is the best the acoustic model can do, and falls as the text fits the audio worse.
    Silence between words is not counted; with two passes, the mean of both. None when nothing was aligned. Measured
    (BENCHMARKS.md, "Transcript offset: words that do not fit the audio"): human-read speech with its own text -8 to
    -14; espeak-ng speech under the wild generator's nuisances -14 to -36; another clip's text -40 to -65.

    In digital silence the fit is that of the first pass aligned with a recording's noise floor added
    (:data:`FIT_FLOOR_BELOW_DB`, module docstring); the word times are those of the span as it is (the floored
    alignment's where the span as it is does not align).

    Arguments, words, errors: as :func:`forced_align_words` (which returns ``words`` alone).
    """
    if not stop_seconds > start_seconds:
        raise ValueError(f"span must have stop > start, got {start_seconds = }, {stop_seconds = }")
    if passes not in (1, 2):
        raise ValueError(f"passes must be 1 or 2, got {passes = }")
    if stop_seconds <= audio.start_seconds or start_seconds >= audio.stop_seconds:
        raise ValueError(
            f"span [{start_seconds}, {stop_seconds}) lies outside the audio [{audio.start_seconds}, "
            f"{audio.stop_seconds}); pass times on the audio clock"
        )
    lo, hi = max(start_seconds, audio.start_seconds), min(stop_seconds, audio.stop_seconds)
    tokens = spoken_tokens(span_text, limit=MAX_ALIGN_WORDS)
    if not tokens:
        return (), None
    refusal = alignment_refusal(len(tokens), hi - lo)
    if refusal is not None:
        logger.info("forced alignment refused (%s): %s%d words in %.2f s", refusal,  # counted: caption_words_failed
                       "more than " if len(tokens) > MAX_ALIGN_WORDS else "", len(tokens), hi - lo)
        return (), None
    decoder = decoder if decoder is not None else new_decoder()
    if pronounce_missing:
        add_missing_pronunciations(decoder, [w for _, spoken in tokens for w in spoken])

    def known(word: str) -> bool:
        return decoder.lookup_word(word) is not None if pronounce_missing else in_dictionary(decoder, word)

    # A written word is aligned as the words it is spoken as (spoken_tokens) and reported under its written form.
    known_tokens = [(name, spoken) for name, spoken in tokens if all(known(w) for w in spoken)]
    if len(known_tokens) < len(tokens):
        logger.info("forced alignment: %d word(s) not in the dictionary, left out: %s", len(tokens) - len(known_tokens),
                    sorted({name for name, _ in tokens} - {name for name, _ in known_tokens}))
    if not known_tokens:
        return (), None
    known = [w for _, spoken in known_tokens for w in spoken]
    # The span's samples (half-open, the project's rounding rule), mono, at 16 kHz, as int16.
    first, last = sample_range(lo - audio.start_seconds, hi - audio.start_seconds, audio.sample_rate)
    signal = mono(audio.samples[..., first:last])  # the span only: a per-caption call must not convert the clip
    if audio.sample_rate != ALIGN_SAMPLE_RATE:
        from avcore import resample

        signal = resample(signal[None, :].astype(np.float32), audio.sample_rate, ALIGN_SAMPLE_RATE)[0]
    pcm = (np.clip(signal, -1.0, 1.0) * 32767.0).astype("<i2")
    origin = audio.start_seconds + first / audio.sample_rate
    text = " ".join(known)
    aligned_passes, fits = [], []
    context = sample_range(max(lo - _FLOOR_CONTEXT_SECONDS, audio.start_seconds) - audio.start_seconds,
                           min(hi + _FLOOR_CONTEXT_SECONDS, audio.stop_seconds) - audio.start_seconds, audio.sample_rate)
    around = mono(audio.samples[..., context[0]:context[1]])
    gap_db = floor_gap_db(around, audio.sample_rate)
    # In digital silence the fit is judged with a recording's noise floor added (module docstring).
    floor_rms = _fit_floor_rms(around, audio.sample_rate) if gap_db > DIGITAL_SILENCE_DB else 0.0
    floor_fit: Optional[float] = None
    pad_before, pad_after = _quiet_edges(signal)
    pad_before = pad_before if pad_start is None else pad_start
    for delay in (0.0, _HALF_FRAME_SECONDS)[:passes]:
        before = int(round(((PAD_SECONDS if pad_before else 0.0) + delay) * ALIGN_SAMPLE_RATE))
        after = int(round((PAD_SECONDS if pad_after else 0.0) * ALIGN_SAMPLE_RATE))
        padded = np.concatenate([np.zeros(before, "<i2"), pcm, np.zeros(after, "<i2")])
        aligned = _align_pass(decoder, padded, text, known)
        if floor_rms > 0 and delay == 0.0:  # the fit of the first pass over the floor
            floored = _align_pass(decoder, _with_floor(padded, floor_rms), text, known)
            if floored is not None:
                floor_fit = floored[1]
                aligned = aligned if aligned is not None else (floored[0], floored[1])
        if aligned is not None:
            aligned_passes.append(aligned[0] - before / ALIGN_SAMPLE_RATE)
            fits.append(aligned[1])
    if floor_fit is not None:
        fits = [floor_fit]
    if not aligned_passes:
        # INFO, not WARNING: a training epoch meets this once per caption of music or noise (every epoch); callers
        # count it (AlignmentReport.caption_words_failed, LoaderStats.caption_words_failed, `avalign measure`).
        logger.info("forced alignment failed for %r (%d words)", span_text[:200], len(known))
        return (), None
    lead_ms = 0.0 if gap_db > DIGITAL_SILENCE_DB else FORCED_LEAD_MS
    raw = np.mean(aligned_passes, axis=0)
    times = raw + origin + lead_ms / 1000.0
    if stop_lead and lead_ms:
        is_stop = np.array([_first_phone(decoder, w) in _STOPS for w in known])
        # A first word put on the first frame of an unpadded span starts at the cut, not where the aligner chose.
        is_stop[0] &= pad_before or raw[0, 0] > _HALF_FRAME_SECONDS
        times[is_stop, 0] += STOP_LEAD_MS / 1000.0
    if context_lead and lead_ms:
        shifts = _context_shifts_seconds(raw, padded_before=pad_before)
        shifts[times[:, 0] < lo, 0] = 0.0  # a start put in the padding stays clamped to the span start
        times += shifts
    if start_is_word_boundary and not pad_before and raw[0, 0] <= _HALF_FRAME_SECONDS:
        times[0, 0] = origin + max(raw[0, 0], 0.0)
    # Clamp into the span, keeping starts non-decreasing and every word non-empty where the span allows.
    starts = np.maximum.accumulate(np.clip(times[:, 0], lo, hi))
    stops = np.clip(np.maximum(times[:, 1], starts), lo, hi)
    # Back to written words: each spans its spoken words, from the first's start to the last's stop.
    last = np.cumsum([len(spoken) for _, spoken in known_tokens]) - 1
    first = np.concatenate([[0], last[:-1] + 1])
    return (tuple(Word(name, float(a), float(b)) for (name, _), a, b in zip(known_tokens, starts[first], stops[last])),
            float(np.mean(fits)))
