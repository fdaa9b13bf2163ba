"""The transcript offset method dispatcher: energy, forced alignment, or both (``auto``).

::

    method="energy"   estimate_text_offset (speech energy vs word/span starts)
    method="forced"   estimate_text_offset_forced (pocketsphinx; ImportError without it)
    method="auto"     energy ─┬─ answered, digital silence, word times ─▶ forced ─ heard there ─▶ energy, or abstain
                              │                                                         (words_not_heard)
                              ├─ answered, captions, < 3 starts after a pause ─▶ forced ─ confirm ─▶ energy, or abstain
                              │                                                 (few_caption_edges; also in digital silence)
                              ├─ answered, digital silence, captions ─▶ forced ─ cross-check ─▶ energy, or abstain
                              │                                                    (methods_disagree)
                              ├─ answered over a noise floor ─▶ forced ─ confirm ─ heard >= 1/3 there ─▶ energy,
                              │                    or abstain (methods_disagree, unconfirmed, words_not_heard)
                              │      captions, >= 3 starts after a pause, not +matched: energy's band-SNR onset peak
                              │      within ±30 ms of forced's guess, if there is one (``span_*+near_forced``)
                              └─ abstained ──▶ forced (when pocketsphinx is installed) ─▶ forced if it answers,
                                                                                          else energy
    forced alignment's evidence: chunks whose words fit the audio at >= MIN_WORD_FIT per frame only (else not placed;
                                 none: words_do_not_match_audio, confidence 0: confirms nothing)
    forced's answer, >= 3 onsets after a pause ──▶ energy's onset peak within ±30 ms of it, if there is one
                                                   (method ``forced_*+onsets``), else forced's answer
    forced's answer not re-read ──▶ energy's best guess (its abstained peak) if within ±20 ms of it
                                    (method ``forced_*+energy_peak``)
    forced's answer not dated by energy, captions with one start after a pause ──▶ abstain (few_caption_edges)
    (an onset peak exists where it is inside the window and no single item carries more than half the onset sum)
    forced's answer not dated by energy, captions in digital silence ──▶ abstain (forced_alone_in_digital_silence)
    energy's caption answer in digital silence, forced alignment placing none of the words ──▶ abstain
                                                   (words_do_not_match_audio)
    forced's answer ──▶ heard: >= 70 % of the transcript's items aligned within ±60 ms of where it puts them
                        (``heard_items``) ─▶ the answer, or abstain (words_not_heard)
    every method's final answer within 30 ms (a quarter of a narrower range) of ±max_offset_ms ──▶ abstain
                                                   (peak_at_search_edge)

Where forced alignment gives no verdict it judges nothing: pocketsphinx not installed (``auto`` keeps the energy
answer); a transcript item without a word of the en-us dictionary (non-English text, unknown names) is left out of the
heard fraction; a transcript with no dictionary word, or whose every alignment fails, gets no forced answer, and an
energy answer over a noise floor then abstains ``unconfirmed`` (in digital silence it stands on captions, except with
fewer than 3 starts after a pause: ``few_caption_edges``; on word times in digital silence it needs 70 % of the words
heard where it puts them, ``words_not_heard``). Energy answers over a
noise floor are judged by ``unconfirmed`` (forced alignment's best guess near them at confidence >= 0.2), not by the
heard fraction: on overlapping talkers (tests/test_text_conversation.py) forced alignment misplaces every other
caption of a right transcript.
"""
from __future__ import annotations

import dataclasses
import logging
from typing import Any, Optional, Sequence

import numpy as np

from aligner._decoder import shared_decoder
from aligner._forced import DIGITAL_SILENCE_DB, floor_gap_db
from aligner._options import TEXT_METHODS, TextMethod, TextOptions
from aligner._text_forced import REFUSAL_NEEDED, estimate_text_offset_forced
from aligner._signals import mono
from aligner._text_offset import caption_edges, estimate_text_offset, onset_offset_near
from aligner._text_records import TextEstimate, text_abstain
from avcore import AudioClip, Transcript

logger = logging.getLogger(__name__)

__all__ = ["estimate_transcript_offset", "estimate_transcript_offsets", "heard_items"]

# Segment-level captions: the energy answer and forced alignment's best guess must agree this closely (ms);
# chosen on the tune clips, figures in BENCHMARKS.md ("Lab notes"; "Caption offsets and caption words over
# speech beds").
_DISAGREE_MS = 40.0
# ... and forced alignment vetoes only when its own words agree better than chance (confidence > 0 means
# more than 30 % of the differences within ±40 ms of their median).
_VETO_MIN_CONFIDENCE = 0.1
# An energy answer on captions with fewer caption starts after a pause than this rests on one or two onsets: a
# sharp non-speech sound near the only edge wins whatever its peak-to-sidelobe says. Over a noise floor it stands
# only when forced alignment confirms it within _FEW_EDGES_AGREE_MS, at the confidence every other answer over a floor
# needs (_CONFIRM_MIN_CONFIDENCE; until 2026-12-06 _VETO_MIN_CONFIDENCE, 0.1: another clip's captions that share two
# of four with the audio were confirmed at 0.125, BENCHMARKS.md, "Few-edge captions: the same confirmation"). Chosen
# on the tune clips: right few-edge answers differed from forced alignment by at most 13.9 ms, wrong ones by 26.6 ms
# or more (BENCHMARKS.md, "Caption offsets that rest on few caption edges").
_FEW_EDGES = 3
_FEW_EDGES_AGREE_MS = 20.0
# Forced alignment's answer carries the aligner's lead, which differs between voices (BENCHMARKS.md, "Transcript
# offset where energy abstains"): where energy abstained but forced alignment answered and the transcript has at least
# _FEW_EDGES onsets after a pause, the answer is read from the band-SNR onset evidence within this many ms of forced
# alignment's. Chosen on the tune clips: forced alignment's answers there were at most 17.9 ms off; a 40-50 ms window
# caught a neighbouring onset on one-sentence tune clips.
_ONSET_WINDOW_MS = 30.0
# Over a noise floor an energy answer (word times or captions) stands only where forced alignment's best guess is
# within _DISAGREE_MS of it at confidence >= _CONFIRM_MIN_CONFIDENCE (else ``unconfirmed``): on another clip's
# transcript the energy evidence's peak-to-sidelobe often reads confident (null pairings), forced alignment's words
# then agree at chance. Chosen on the tune clips (BENCHMARKS.md, "Clean null pairings"): on the clean null pairings
# energy answered, forced alignment's confidence was <= 0.21, and <= 0.12 where its guess was within 40 ms of energy;
# on the right energy answers >= 0.45 (within 24 ms); on the conversational telephone captions of
# tests/test_text_conversation.py 0.29 (within 10 ms).
_CONFIRM_MIN_CONFIDENCE = 0.2
# Forced alignment's own answer (energy abstained) stands only where at least _MIN_HEARD_FRACTION of the transcript's
# items (words, or captions without word times) are aligned within _HEARD_MS of where the answer puts them (else
# ``words_not_heard``): forced alignment's agreement is about the median of its differences, and a transcript that
# shares a sentence or two with the audio (or shares none, its words forced onto other speech) can agree at 0.3-0.8
# confidence around a wrong offset. Chosen on the tune clips (BENCHMARKS.md, "Transcript offset on transcripts that do
# not belong to the audio"): right forced answers had >= 0.88 of their items within 60 ms (>= 0.78 at 40 ms), the wrong
# null answer 0.60 at 40-80 ms; the conversational captions of tests/test_text_conversation.py 0.78 (0.67 at 40 ms).
_HEARD_MS = 60.0
_MIN_HEARD_FRACTION = 0.7
_NOT_HEARD_SHOWN = 3
# Over a noise floor an energy answer that forced alignment confirmed (``unconfirmed`` above) stands only where at
# least _MIN_HEARD_OVER_FLOOR of the transcript's items are heard within _HEARD_MS of where the answer puts them (else
# ``words_not_heard``): confirmation compares medians, and another clip's word-level transcript that shares a sentence
# with the audio was confirmed at 0.22 with 7 of its 37 words heard there (REPORT37, 299.9 ms wrong). Lower than
# _MIN_HEARD_FRACTION because the conversational telephone captions of tests/test_text_conversation.py (overlapping
# talkers) are right with 4 of 9 captions heard (0.44); on TUNE the right energy answers over a floor had >= 0.80, on
# 13 held-out sets (124 right answers) >= 0.67 (BENCHMARKS.md, "Energy answers over a floor: the heard check").
_MIN_HEARD_OVER_FLOOR = 1 / 3
# Every method's answer within this of the search range's edge (±max_offset_ms) abstains (``peak_at_search_edge``):
# the energy estimator's significance test compares its peak with the lags more than 30 ms away, a neighbourhood the
# edge cuts off (the "peak" may be the flank of one beyond the range), and forced alignment aligns each chunk over its
# stamps widened by max_offset_ms, so an answer near the edge rests on words at their window's edge (a word put on its
# window's first frame reads max_offset_ms minus the lead correction, 477.9 ms, whatever the audio holds). The wild
# generator's true offsets lie within ±250 ms; on the null pairings of 8 wild sets the answers beyond ±470 ms were wrong
# 4 times in 5 (BENCHMARKS.md, "Transcript offset: one dating rule near forced alignment"). Applied to the final
# answers only: inside ``auto`` an energy answer at the edge still asks forced alignment to confirm it (treated as an
# abstention there, it let forced alignment answer alone on a null pairing). A search range narrower than 120 ms (a
# user who knows the offset is small) keeps a quarter of it as the edge zone instead.
_SEARCH_EDGE_MS = 30.0
_DEFAULT = TextOptions()


def estimate_transcript_offset(
    audio: AudioClip,
    transcript: Transcript,
    *,
    method: TextMethod = "auto",
    options: TextOptions = _DEFAULT,
    decoder: Optional[Any] = None,
) -> TextEstimate:
    """How late a transcript's stamps are, by ``method`` (module diagram).

    ``"energy"``: speech energy against word or span starts. ``"forced"``: pocketsphinx forced alignment.
    ``"auto"``: energy first; when it abstains and pocketsphinx is installed, forced alignment (real connected
    speech, where word starts are rarely energy onsets). For segment-level captions (no word times) ``"auto"``
    also runs forced alignment when energy answers, and abstains (``methods_disagree``) when the two are more
    than 40 ms apart while forced alignment's words agree better than chance; when fewer than 3 captions start
    after a pause (in digital silence too), the energy answer needs forced alignment to confirm it within
    20 ms (40 ms in digital silence) at confidence >= 0.2 (else ``few_caption_edges``). Over a noise floor every other energy answer (word times included) needs
    forced alignment's best guess within 40 ms at confidence >= 0.2 (else ``unconfirmed``: another clip's transcript
    can give confident energy evidence; forced alignment's words then agree at chance); a confirmed caption answer
    with at least 3 caption starts after a pause is then read from the band-SNR onset evidence within 30 ms of forced
    alignment's guess (``span_onsets+activity+near_forced``; answers already ``+matched`` are kept) where that
    evidence peaks inside the window; a confirmed answer over a floor (few-edge captions included) then stands only
    where forced alignment hears at least a third of the transcript's items within 60 ms of where it puts them (else
    ``words_not_heard``). In digital silence an energy answer on word times stands only where forced
    alignment hears at least 70 % of the words within 60 ms of where it puts them (else ``words_not_heard``).
    When energy abstained and forced alignment answered, the answer is read from
    the band-SNR onset evidence within 30 ms of forced alignment's (``forced_words+onsets`` / ``forced_spans+onsets``)
    where the transcript has at least 3 onsets after a pause and that evidence peaks inside the window: forced
    alignment's word starts carry a lead that differs between voices, onsets do not. Otherwise, where the energy
    estimator's best guess (its abstained peak) lies within 20 ms of forced alignment's answer, the answer is that
    guess (``forced_words+energy_peak`` / ``forced_spans+energy_peak``). A caption answer that energy dates neither way
    and that rests on one caption start after a pause abstains (``few_caption_edges``). Forced alignment's answer then
    stands only where at least 70 % of the transcript's items are aligned within 60 ms of where it puts them (else
    ``words_not_heard``, naming items not heard: a transcript that is not this audio's, or shares only a sentence
    with it); :func:`heard_items`. Every method's answer within 30 ms of ``±options.max_offset_ms`` abstains
    (``peak_at_search_edge``, best guess kept): near the edge the evidence is cut off.

    Args:
        audio: decoded audio (``start_seconds`` honoured).
        transcript: stamps on the transcript's clock.
        method: one of :data:`~aligner.estimators.TEXT_METHODS`.
        options: :class:`~aligner.TextOptions`, used by both estimators.
        decoder: a pocketsphinx decoder to reuse (never by two threads at once); default: one per thread (``shared_decoder()``).

    Returns:
        :class:`~aligner.TextEstimate`; ``text_offset_ms > 0``: stamps are late.

    Raises:
        ValueError: an unknown ``method``; with ``"forced"``, the decoder refused the input.
        ImportError: ``"forced"`` without pocketsphinx (``"auto"`` then keeps the energy result).
    """
    if method not in TEXT_METHODS:
        raise ValueError(f"text method must be one of {TEXT_METHODS}, got {method!r}")
    return estimate_transcript_offsets(audio, transcript, methods=(method,), options=options, decoder=decoder)[method]


def estimate_transcript_offsets(
    audio: AudioClip,
    transcript: Transcript,
    *,
    methods: Sequence[TextMethod] = TEXT_METHODS,
    options: TextOptions = _DEFAULT,
    decoder: Optional[Any] = None,
) -> dict[str, TextEstimate]:
    """Several methods' estimates at once, each estimator run at most once: ``{method: estimate}``, equal to
    ``estimate_transcript_offset(audio, transcript, method=method, options=options, decoder=decoder)`` for each of
    ``methods``. For a caller that compares the methods (the bench, tests): ``"auto"`` reuses the energy estimate and
    forced alignment's (pocketsphinx, the expensive one) instead of computing them again.

    Raises:
        ValueError: an unknown method; with ``"forced"``, the decoder refused the input.
        TypeError: ``methods`` is a string, not a sequence of names.
        ImportError: ``"forced"`` without pocketsphinx.
    """
    if isinstance(methods, str):
        raise TypeError(f"methods must be a sequence of method names, got the string {methods!r}: pass ({methods!r},)")
    unknown = [m for m in methods if m not in TEXT_METHODS]
    if unknown:
        raise ValueError(f"text methods must be among {TEXT_METHODS}, got {unknown!r}")
    out: dict[str, TextEstimate] = {}
    energy = estimate_text_offset(audio, transcript, options=options) if {"energy", "auto"} & set(methods) else None
    if "energy" in methods:
        out["energy"] = energy
    if "forced" in methods:
        out["forced"] = estimate_text_offset_forced(audio, transcript, options=options,
                                                    decoder=decoder if decoder is not None else shared_decoder())
    if "auto" in methods:
        out["auto"] = _auto(audio, transcript, energy, out.get("forced"), options=options, decoder=decoder)
    return {m: _inside_search_range(out[m], options) for m in methods}


def _inside_search_range(estimate: TextEstimate, options: TextOptions) -> TextEstimate:
    """``estimate``, or an abstention (``peak_at_search_edge``, best guess kept) when its answer lies within
    :data:`_SEARCH_EDGE_MS` (a quarter of the range, if less) of ``±options.max_offset_ms``."""
    edge_ms = min(_SEARCH_EDGE_MS, options.max_offset_ms / 4)
    if estimate.abstained or abs(estimate.text_offset_ms) <= options.max_offset_ms - edge_ms:
        return estimate
    return text_abstain("peak_at_search_edge", num_onsets=estimate.num_onsets, psr=estimate.peak_to_sidelobe,
                        confidence=estimate.confidence, best_guess_ms=estimate.text_offset_ms,
                        num_words_aligned=estimate.num_words_aligned, item_differences_ms=estimate.item_differences_ms,
                        found=f"{estimate.method} says {estimate.text_offset_ms:+.0f} ms, within {edge_ms:g} ms "
                              f"of the search range's edge (±{options.max_offset_ms:g} ms)",
                        needed=f"an answer at least {edge_ms:g} ms inside the search range")


def _auto(audio: AudioClip, transcript: Transcript, energy: TextEstimate, forced: Optional[TextEstimate], *,
          options: TextOptions, decoder: Optional[Any]) -> TextEstimate:
    """``method="auto"`` (module diagram) from the energy estimate, and forced alignment's when the caller has it
    (else computed here when needed)."""
    has_floor = floor_gap_db(mono(audio.samples, keep_float32=True), audio.sample_rate) <= DIGITAL_SILENCE_DB
    if forced is None:
        try:
            decoder = decoder if decoder is not None else shared_decoder()
        except ImportError:
            return energy
        try:
            forced = estimate_text_offset_forced(audio, transcript, options=options, decoder=decoder)
        except (RuntimeError, ValueError) as e:  # the decoder refused the input; auto keeps the energy answer
            logger.warning("forced alignment failed (%s); keeping the energy estimate", e)
            return energy
    if not energy.abstained:
        if transcript.words and not has_floor:
            return _heard(energy, forced, centre_ms=energy.text_offset_ms)
        edges = caption_edges(transcript)
        if not transcript.words and edges < _FEW_EDGES:
            answer = _confirmed(energy, forced, edges, has_floor)
            return answer if answer.abstained or not has_floor else _heard_over_floor(answer, forced)
        if not has_floor:
            return _cross_checked(energy, forced) if not _no_word_placed(forced) else _not_placed(energy, forced)
        checked = _cross_checked(energy, forced)
        answer = checked if checked.abstained else _forced_agrees(energy, forced)
        if answer.abstained:
            return answer
        return _heard_over_floor(_dated_near_forced(audio, transcript, answer, forced, options), forced)
    if forced.abstained and forced.method.removeprefix("abstain:") in (*REFUSAL_NEEDED, "words_do_not_match_audio"):
        # The caption itself is what stops an answer (too many words for forced alignment, or words this audio does
        # not say): say so, with what the energy estimator saw.
        return dataclasses.replace(forced, best_guess_ms=energy.best_guess_ms, confidence=energy.confidence,
                                   found=f"{forced.found}; energy onsets: {energy.found}")
    if forced.abstained:
        return energy
    dated = _dated_by_energy_peak(_onset_refined(audio, transcript, forced, options), forced, energy)
    if not transcript.words and not has_floor and dated.method == forced.method:
        return _alone_in_digital_silence(energy, forced)
    if not transcript.words and dated.method == forced.method and forced.num_starts_after_pause < 2:
        return _one_edge_alone(energy, forced)
    return _heard(dated, forced)


def _no_word_placed(forced: TextEstimate) -> bool:
    """Forced alignment had dictionary words to place and placed none that fits the audio (every alignment failed or
    fit worse than ``MIN_WORD_FIT``); a transcript without dictionary words (non-English text) gives no verdict."""
    items = forced.item_differences_ms
    return forced.abstained and bool(items) and all(d is None for _, d in items)


def _not_placed(energy: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """Captions in digital silence whose words forced alignment places nowhere (:func:`_no_word_placed`): the energy
    answer does not stand (abstain ``words_do_not_match_audio``, energy's answer as the best guess). Energy dates
    onsets, any onsets; on another clip's whole transcript in digital silence it answered confidently wrong on 3 of
    31 tune pairings (``random_specs(33033)``), each time with none of the words placed. Since fits in digital silence
    are judged over a recording's floor (``aligner._forced``), the clips' own captions were placed on 9 of 9."""
    return text_abstain("words_do_not_match_audio", num_onsets=energy.num_onsets, psr=energy.peak_to_sidelobe,
                        confidence=forced.confidence, best_guess_ms=energy.text_offset_ms,
                        item_differences_ms=forced.item_differences_ms,
                        found=f"captions in digital silence; their edges say {energy.text_offset_ms:+.0f} ms (confidence "
                              f"{energy.confidence:.2f}), but forced alignment places none of their words in this audio "
                              f"({forced.method}: {forced.found})",
                        needed="captions whose words forced alignment places in the audio")


def _alone_in_digital_silence(energy: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """Captions in digital silence where energy abstained and no energy evidence dates forced alignment's answer (no
    onset reading, no energy peak within 20 ms of it): that answer is not taken (abstain
    ``forced_alone_in_digital_silence``, its answer as the best guess). Without a floor its caption starts get no lead
    correction, and such answers were 37.6 and 65.2 ms off on the tune set's digital-silence clips
    (``random_specs(33033)``, two of two; BENCHMARKS.md, "Fits in digital silence judged over a recording's floor").
    Dated by energy (``+onsets``, ``+energy_peak``), forced alignment's answer stands, and so does its confirmation
    of an energy answer."""
    return text_abstain("forced_alone_in_digital_silence", confidence=forced.confidence,
                        best_guess_ms=forced.text_offset_ms, num_words_aligned=forced.num_words_aligned,
                        item_differences_ms=forced.item_differences_ms,
                        found=f"energy abstained ({energy.found or energy.method}); forced alignment alone says "
                              f"{forced.text_offset_ms:+.0f} ms, on captions in digital silence",
                        needed="an energy answer that forced alignment confirms (in digital silence forced "
                               "alignment's caption answers alone are tens of ms off)")


def _one_edge_alone(energy: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """Captions with one start out of silence as forced alignment placed them (``num_starts_after_pause``: by their
    stamps or as aligned; every other caption abuts the one before it) where energy abstained and
    no energy evidence dates forced alignment's answer (no onset reading, no energy peak within
    :data:`_FEW_EDGES_AGREE_MS` of it): abstain ``few_caption_edges``, forced alignment's answer as the best guess.

    Forced alignment's caption answer is read from the captions out of silence (``aligner._text_forced``, "Captions
    out of silence"), so here a single word boundary decides it. On the tune sets (TUNE, TUNE2) such answers were
    -81.0, +19.7 and +20.4 ms off (confidence 0.62-1.0): one boundary is as precise as one forced-alignment word start,
    whose tail reaches tens of ms (caption starts: |error| p90 24 ms on TUNE). The energy path already asks for this
    (``_confirmed``: an energy answer on fewer than 3 caption starts needs forced alignment to confirm it); with two
    starts the pair rule of ``aligner._text_forced`` can set one against the other, so two still answer
    (BENCHMARKS.md, "Transcript offset: forced alignment alone on one caption start")."""
    return text_abstain("few_caption_edges", confidence=forced.confidence, best_guess_ms=forced.text_offset_ms,
                        num_words_aligned=forced.num_words_aligned, item_differences_ms=forced.item_differences_ms,
                        found=f"{forced.num_starts_after_pause} caption start(s) out of silence; forced alignment alone says "
                              f"{forced.text_offset_ms:+.0f} ms (confidence {forced.confidence:.2f}), energy abstained "
                              f"({energy.found or energy.method})",
                        needed=f"at least 2 caption starts out of silence, or the energy evidence dating forced "
                               f"alignment's answer (its onsets, or its peak within {_FEW_EDGES_AGREE_MS:g} ms)")


def _onset_refined(audio: AudioClip, transcript: Transcript, forced: TextEstimate,
                   options: TextOptions) -> TextEstimate:
    """Forced alignment's answer, read off the onset evidence where that is possible.

    Forced alignment finds the region (energy abstained: its evidence had rivals across the search range); inside
    ±:data:`_ONSET_WINDOW_MS` of that answer the band-SNR onset curve's peak dates the transcript's onsets without the
    aligner's voice-dependent lead. Needs :data:`_FEW_EDGES` onsets after a pause (fewer: one sound near an edge
    decides) and a peak inside the window; else forced alignment's answer stands. Forced alignment answered, so this
    answers no more often than forced alignment does (null pairings included).
    """
    return _read_off_onsets(audio, transcript, forced, forced.text_offset_ms, "+onsets", options)


def _dated_by_energy_peak(answer: TextEstimate, forced: TextEstimate, energy: TextEstimate) -> TextEstimate:
    """Forced alignment's own answer, dated by the energy estimator's peak where the two agree.

    Where the onset reading (:func:`_onset_refined`) did not apply (fewer than :data:`_FEW_EDGES` onsets after a
    pause, or no peak in its window) and the energy estimator's best guess, the highest point of its evidence over the
    whole search range, lies within :data:`_FEW_EDGES_AGREE_MS` of forced alignment's answer, the answer takes that
    guess (method ``+energy_peak``, forced alignment's confidence kept). Energy abstained because rival peaks elsewhere
    stood nearly as high; forced alignment chooses among them, and the one it chooses dates the onsets without the
    aligner's lead, which varies from item to item (an item inside connected speech is aligned 11-20 ms later than one
    after a pause on the wild generator's speech; BENCHMARKS.md, "A/V on three sets never used for A/V, and where forced
    alignment's transcript answers lose precision"). The agreement window is the one a few-edge energy answer needs
    from forced alignment. On TUNE the guesses within it were 0.3-3.6 ms from the truth where forced alignment was 0.1-20.3
    ms off; the guesses beyond it (37-38 ms away) were once right, once 35 ms wrong. A 30 ms window (the onset
    reading's) was screened on 2026-12-07 and dropped: on human speech it moved forced alignment's answers on joined
    utterances from +0.4..+2.5 to -20.1 ms and from +22.8 to +47.1 ms (BENCHMARKS.md, "Transcript offset: forced
    alignment alone on one caption start"). It moves an answer by at most 20 ms and never makes one."""
    guess = energy.best_guess_ms
    if answer.method != forced.method or guess is None or abs(guess - answer.text_offset_ms) > _FEW_EDGES_AGREE_MS:
        return answer
    return dataclasses.replace(answer, text_offset_ms=guess, best_guess_ms=guess, method=answer.method + "+energy_peak")


def _read_off_onsets(audio: AudioClip, transcript: Transcript, answer: TextEstimate, centre_ms: float, suffix: str,
                     options: TextOptions) -> TextEstimate:
    """``answer`` with its value read off the band-SNR onset evidence within ±:data:`_ONSET_WINDOW_MS` of
    ``centre_ms`` (``onset_offset_near``; method ``+ suffix``, confidence kept); ``answer`` itself where the transcript
    has fewer than :data:`_FEW_EDGES` onsets after a pause or the evidence gives no reading there."""
    if caption_edges(transcript) < _FEW_EDGES:
        return answer
    refined = onset_offset_near(audio, transcript, centre_ms, window_ms=_ONSET_WINDOW_MS, options=options)
    if refined is None:
        return answer
    return dataclasses.replace(answer, text_offset_ms=refined, best_guess_ms=refined, method=answer.method + suffix)


def _dated_near_forced(audio: AudioClip, transcript: Transcript, energy: TextEstimate, forced: TextEstimate,
                       options: TextOptions) -> TextEstimate:
    """A caption energy answer over a noise floor that forced alignment confirmed, dated like forced alignment's own
    answers (:func:`_onset_refined`): the band-SNR onset reading within ±:data:`_ONSET_WINDOW_MS` of forced
    alignment's guess, where the captions have :data:`_FEW_EDGES` starts after a pause and that reading exists (it
    needs a peak inside the window, and no single caption carrying most of the onset sum); else the energy answer.

    Captions only: their energy answer is read from the full-band curve (a beep alone in one band can win a band-SNR
    search over the whole range), and under a music bed the full band rises at a caption's first vowel, its consonant
    masked (REPORT17's wild17005: 47 ms late). Near forced alignment's guess that risk is the one
    :func:`_onset_refined` takes. Word-level answers already retry on band-SNR energy when the full band abstains.
    An answer that is already ``+matched`` (at least 3 caption starts each within 25 ms of a strong onset from
    near-silence: nothing masked them) is kept: re-read, such answers moved 1-2 ms away from the truth on every set
    (BENCHMARKS.md, "Transcript offset: one dating rule near forced alignment"). The energy answer stood, so this
    answers no more often than before (null pairings included)."""
    if transcript.words or energy.method.endswith("+matched"):
        return energy
    # forced alignment's guess is set: _forced_agrees confirmed the energy answer with it
    return _read_off_onsets(audio, transcript, energy, _all_items_ms(forced), "+near_forced", options)


def _cross_checked(energy: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """Segment-level captions: the energy answer stands only where forced alignment does not contradict it.

    Caption edges follow speech activity only loosely (conversational speech, overlapping talkers, long
    continuous speech). Forced alignment dates the captions' words instead; when its words agree better than
    chance (confidence >= :data:`_VETO_MIN_CONFIDENCE`) and its best guess is more than :data:`_DISAGREE_MS`
    from the energy answer, neither is trusted. A forced estimate at chance does not veto.
    """
    guess = _all_items_ms(forced)
    if forced.confidence < _VETO_MIN_CONFIDENCE or guess is None or abs(guess - energy.text_offset_ms) <= _DISAGREE_MS:
        return energy  # forced alignment whose words agree no better than chance cannot veto
    return text_abstain("methods_disagree", num_onsets=energy.num_onsets, psr=energy.peak_to_sidelobe,
                        confidence=min(energy.confidence, forced.confidence), best_guess_ms=energy.text_offset_ms,
                        found=f"caption edges say {energy.text_offset_ms:+.0f} ms (confidence {energy.confidence:.2f}), "
                              f"forced alignment of their words {guess:+.0f} ms",
                        needed=f"agreement within {_DISAGREE_MS:g} ms")


def _confirmed(energy: TextEstimate, forced: TextEstimate, edges: int, has_floor: bool) -> TextEstimate:
    """Captions with fewer than :data:`_FEW_EDGES` starts after a pause: the energy answer is one or two onsets, and
    stands only where forced alignment (confidence >= :data:`_CONFIRM_MIN_CONFIDENCE`, as for every energy answer over
    a floor) puts the captions' words within :data:`_FEW_EDGES_AGREE_MS` of it (over a noise floor) or within
    :data:`_DISAGREE_MS` (in digital silence, the window of its cross-check there).

    In digital silence too (no floor: ``DIGITAL_SILENCE_DB`` of ``aligner._forced``). Until 2026-12-06 it was exempt
    there, since a caption edge is an onset from exact zero; but it can be any utterance's onset. On 9 generated
    caption clips in digital silence (``avalign.synth.random_specs(33033, 30)``, never tuned on), one caption alone
    answered 9 of 27 times, 3 of them wrong by more than 50 ms. Another clip's single caption answered 64 of 130
    times, all wrong. A user's one-caption transcript in a language the dictionary lacks was answered 363 ms wrong at
    confidence 0.79. Held out (``random_specs(44044, 40)``, 12 clips): 190 wrong answers removed; 7 of 12 right
    whole-transcript answers lost where forced alignment judged espeak-ng speech in digital silence not to fit
    (BENCHMARKS.md, "Few caption edges in digital silence").
    """
    guess = _all_items_ms(forced)
    # In digital silence forced alignment carries no lead correction and the captions' energy evidence is cleaner:
    # the window is the one its cross-check already uses there (_DISAGREE_MS), confirmation now required.
    window_ms = _FEW_EDGES_AGREE_MS if has_floor else _DISAGREE_MS
    agrees = guess is not None and abs(guess - energy.text_offset_ms) <= window_ms
    if agrees and forced.confidence >= _CONFIRM_MIN_CONFIDENCE:
        return energy
    if not has_floor and _no_word_placed(forced):  # the words are not this audio's: say so, not "too few edges"
        return _not_placed(energy, forced)
    said = ("no place for them" if guess is None
            else f"{guess:+.0f} ms (confidence {forced.confidence:.2f})")
    return text_abstain("few_caption_edges", num_onsets=energy.num_onsets, psr=energy.peak_to_sidelobe,
                        confidence=min(energy.confidence, forced.confidence), best_guess_ms=energy.text_offset_ms,
                        found=f"{edges} caption start(s) after a pause"
                              f"{' over a noise floor' if has_floor else ' in digital silence'}; caption edges say "
                              f"{energy.text_offset_ms:+.0f} ms (confidence {energy.confidence:.2f}), forced alignment "
                              f"of their words {said}",
                        needed=f"at least {_FEW_EDGES} caption starts after pauses, or forced alignment (confidence >= "
                               f"{_CONFIRM_MIN_CONFIDENCE:g}) within {window_ms:g} ms of the caption edges")


def _forced_agrees(energy: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """Over a noise floor: the energy answer stands only where forced alignment (confidence >=
    :data:`_CONFIRM_MIN_CONFIDENCE`) puts the transcript's words within :data:`_DISAGREE_MS` of it; else abstain
    (``unconfirmed``): energy's peak-to-sidelobe alone reads confident on another clip's transcript."""
    guess = _all_items_ms(forced)
    if guess is not None and abs(guess - energy.text_offset_ms) <= _DISAGREE_MS \
            and forced.confidence >= _CONFIRM_MIN_CONFIDENCE:
        return energy
    said = "nothing" if guess is None else f"{guess:+.0f} ms (confidence {forced.confidence:.2f})"
    return text_abstain("unconfirmed", num_onsets=energy.num_onsets, psr=energy.peak_to_sidelobe,
                        confidence=min(energy.confidence, forced.confidence), best_guess_ms=energy.text_offset_ms,
                        found=f"energy says {energy.text_offset_ms:+.0f} ms (confidence {energy.confidence:.2f}), "
                              f"forced alignment of the words {said}",
                        needed=f"forced alignment (confidence >= {_CONFIRM_MIN_CONFIDENCE:g}) within "
                               f"{_DISAGREE_MS:g} ms of the energy answer")


def heard_items(forced: TextEstimate, offset_ms: float, *, within_ms: float = _HEARD_MS) -> tuple[int, int, list[str]]:
    """Which of the transcript's items forced alignment heard where ``offset_ms`` puts them.

    An item (a word, or a caption without word times) is heard when its aligned start lies within ``within_ms`` of
    ``stamp - offset_ms``::

        stamps          [a)   [b)      [c)  [d)         item stamps, transcript clock
        stamp - offset   [a)   [b)      [c)  [d)        where the offset puts them (audio clock)
        forced starts    ^a    ^b  ^c           ^d      a, b heard; c (placed on other speech), d not heard

    Args:
        forced: forced alignment's estimate (its ``item_differences_ms``: stamp minus aligned start per item).
        offset_ms: the answer to judge (DESIGN.md sign).
        within_ms: tolerance (ms).

    Returns:
        ``(heard, items, not_heard_texts)``; items that did not align count as not heard. ``(0, 0, [])`` when
        ``forced`` carries no per-item differences.
    """
    items = forced.item_differences_ms
    heard = [d is not None and abs(d - offset_ms) <= within_ms for _, d in items]
    return sum(heard), len(items), [text for (text, _), ok in zip(items, heard) if not ok]


def _all_items_ms(forced: TextEstimate) -> Optional[float]:
    """Forced alignment's guess over all its placed items: the median of their differences (its answer before the
    captions out of silence date it, ``aligner._text_forced``), else its best guess. What energy answers are confirmed
    against and where the heard check looks: a caption cut inside connected speech is no worse evidence that the
    transcript belongs to the audio, only a worse date."""
    placed = [d for _, d in forced.item_differences_ms if d is not None]
    return float(np.median(placed)) if placed else forced.best_guess_ms


def _heard_over_floor(answer: TextEstimate, forced: TextEstimate) -> TextEstimate:
    """An energy answer over a noise floor that forced alignment confirmed: it stands only where at least
    :data:`_MIN_HEARD_OVER_FLOOR` of the transcript's items are heard within :data:`_HEARD_MS` of where the answer puts
    them (:func:`_heard` centred on the answer; else ``words_not_heard``). Confirmation looks at the median of forced
    alignment's differences; another clip's transcript that shares a sentence with the audio can be confirmed there
    while most of its words are placed elsewhere."""
    return _heard(answer, forced, centre_ms=answer.text_offset_ms, min_fraction=_MIN_HEARD_OVER_FLOOR)


def _heard(answer: TextEstimate, forced: TextEstimate, *, centre_ms: Optional[float] = None,
           min_fraction: float = _MIN_HEARD_FRACTION) -> TextEstimate:
    """Forced alignment's own answer stands only where at least ``min_fraction`` (:data:`_MIN_HEARD_FRACTION`) of the
    transcript's items are heard within :data:`_HEARD_MS` of where forced alignment's placed items as a whole put them (their
    median, :func:`_all_items_ms`; :func:`heard_items`); else abstain (``words_not_heard``, naming some of the items
    not heard, best guess kept). Without per-item differences there is nothing to judge and the answer stands.

    With ``centre_ms`` the items are looked for where that offset puts them instead: an energy answer on word times in
    digital silence is judged there. Energy dates onsets, any onsets: on short clips in digital silence another
    clip's word-level transcript was answered on 17 of 132 null pairings, at confidence up to 1.0 (BENCHMARKS.md,
    "Word times in digital silence: the heard check")."""
    centre = _all_items_ms(forced) if centre_ms is None else centre_ms
    heard, total, missing = heard_items(forced, centre)
    if total == 0 or heard >= min_fraction * total:
        return answer
    shown = "; ".join(repr(text if len(text) <= 40 else text[:37] + "...") for text in missing[:_NOT_HEARD_SHOWN])
    more = f" and {len(missing) - _NOT_HEARD_SHOWN} more" if len(missing) > _NOT_HEARD_SHOWN else ""
    elsewhere = round(centre) != round(answer.text_offset_ms)  # forced alignment's answer, dated off its items' median
    return text_abstain("words_not_heard", confidence=answer.confidence, best_guess_ms=answer.text_offset_ms,
                        num_words_aligned=forced.num_words_aligned, item_differences_ms=forced.item_differences_ms,
                        found=f"{'forced alignment' if centre_ms is None else 'speech energy'} ({answer.method}) says "
                              f"{answer.text_offset_ms:+.0f} ms{f' (its items centre on {centre:+.0f} ms)' * elsewhere}"
                              f", but only {heard} of {total} transcript item(s) are heard within ±{_HEARD_MS:g} ms of "
                              f"{'their centre' if elsewhere else 'there'}; not heard there: {shown}{more}",
                        needed=f"at least {min_fraction:.0%} of the items heard there")
