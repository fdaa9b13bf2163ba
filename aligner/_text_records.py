"""What the transcript offset estimators return: :class:`TextEstimate` (an abstention explains itself)."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["TextEstimate", "text_abstain"]


@dataclass(frozen=True)
class TextEstimate:
    """Estimated transcript offset (stamps = audio time + ``text_offset_ms / 1000``)."""

    text_offset_ms: Optional[float]
    """How late the transcript's stamps are (ms); None when the estimator abstains."""
    confidence: float
    """Confidence in [0, 1]. Energy: peak-to-sidelobe ratio of the combined evidence times the rival-peak margin;
    forced alignment: agreement of the per-word differences times coverage. A value re-read off onsets (``+onsets``,
    ``+near_forced``, ``+energy_peak``) keeps the confidence of the answer it re-read; an abstention carries its best guess's
    confidence (the lower of the two where two methods disagree)."""
    method: str
    """``word_onsets+activity[+matched][+bands]``, ``span_onsets+activity[+matched|+near_forced]``
    (``+near_forced``: re-read off the band-SNR onset evidence near forced alignment's guess), ``forced_words``,
    ``forced_spans`` (``+onsets``: read off the onset evidence near forced alignment's answer; ``+energy_peak``: the
    energy estimator's best guess, within 20 ms of forced alignment's answer) or ``abstain:<reason>``; ``align``
    suffixes ``+from_first_sample`` to an answer found with the stamps counted from the audio's first sample (audio that
    starts late, ``aligner._align._estimate_either_origin``)."""
    num_onsets: int = 0
    """Transcript onsets (word or span starts) the energy estimator used; 0 from forced alignment."""
    peak_to_sidelobe: float = 0.0
    """Energy estimator: raw peak-to-sidelobe ratio (robust z-score of the combined peak); 0 otherwise."""
    best_guess_ms: Optional[float] = None
    """The unthresholded estimate when abstaining (None when there was none); equals the answer otherwise."""
    found: str = ""
    """When abstaining: what the evidence showed, in words (e.g. ``"confidence 0.12 (psr 3.7)"``)."""
    needed: str = ""
    """When abstaining: what an answer needs (e.g. ``"confidence >= 0.3"``)."""
    hint: str = ""
    """When abstaining: what the user can do."""
    num_words_aligned: int = 0
    """Forced alignment: transcript items (words, or captions without word times) that were aligned and dated;
    0 from the energy estimator."""
    item_differences_ms: tuple[tuple[str, Optional[float]], ...] = field(default=(), repr=False)
    """Forced alignment: ``(text, stamp - aligned start in ms)`` of every transcript item with a dictionary word,
    in transcript order (None where its chunk did not align or did not fit the audio; items without a dictionary word are left out: no
    verdict); () from the energy estimator and when abstaining before aligning. What
    :func:`~aligner.estimators.heard_items` reads."""
    num_starts_after_pause: int = 0
    """Forced alignment on captions: placed captions that start out of silence (by their stamps, or as aligned), the
    items its caption answer is read from (``aligner._text_forced``, "Captions out of silence"); 0 otherwise."""

    @property
    def abstained(self) -> bool:
        """True when no offset is reported."""
        return self.text_offset_ms is None

    def abstain_record(self) -> Optional[dict]:
        """``{reason, found, needed, best_guess_ms, hint}`` when abstaining (the ``text_abstain`` of
        ``measure`` and ``align.json``), else None."""
        if not self.abstained:
            return None
        guess = None if self.best_guess_ms is None else round(float(self.best_guess_ms), 3)
        return {"reason": self.method.removeprefix("abstain:"), "found": self.found, "needed": self.needed,
                "best_guess_ms": guess, "hint": self.hint}


_GIVE_OFFSET = ("if you know the transcript's offset, pass it: `avalign measure --text-offset-ms MS` (Python: "
                "`align(text_offset_ms=...)`)")
"""How to give a known transcript offset: the A/V hints' wording (``aligner._av_records``)."""
_FORCED = ("use forced alignment (pocketsphinx): `avalign measure --text-method forced` (Python: "
           "`align(text_method='forced')`)")
_WIDER = "raise the search range: `avalign measure --max-offset-ms MS` (Python: `align(max_offset_ms=...)`)"
_HINTS = {
    "empty_transcript": ("a transcript with text", "check the transcript file: it is empty, or none of its cues or "
                                                   "segments holds text"),
    "no_speech_contrast": ("speech with pauses (energy above and below the noise floor)",
                           _FORCED + "; or, " + _GIVE_OFFSET),
    "no_onsets": ("speech onsets in the audio", _GIVE_OFFSET),
    "no_activity_contrast": ("speech activity that varies with the lag", _GIVE_OFFSET),
    "search_range_too_small": ("a search range of at least ~100 ms", _WIDER),
    "peak_at_search_edge": ("an evidence peak inside the search range", "if the offset may be larger, " + _WIDER),
    "low_confidence": ("", "check that the transcript belongs to this audio; " + _GIVE_OFFSET),
    "alignment_failed": ("words that forced alignment can place", "check the transcript's language (en-us model) and text"),
    "too_many_words": ("", "split the caption into shorter cues (forced alignment takes at most 2000 words at a time); "
                           + _GIVE_OFFSET),
    "too_long": ("", "split the caption into cues shorter than 10 minutes; " + _GIVE_OFFSET),
    "words_do_not_fit": ("", "the caption holds more words than its time span can hold as speech: check its cue times "
                             "and that its text belongs to this audio; " + _GIVE_OFFSET),
    "offset_out_of_range": ("an offset inside the search range", "if the offset may be larger, " + _WIDER),
    "few_caption_edges": ("", "captions that follow each other without pauses give one onset per run of speech: "
                              "use word-level timestamps (WhisperX JSON) or " + _GIVE_OFFSET),
    "forced_alone_in_digital_silence": ("", "captions without word times over exact digital silence are dated only when "
                                            "their edges' energy and forced alignment agree: use word-level timestamps "
                                            "(WhisperX JSON) or " + _GIVE_OFFSET),
    "unconfirmed": ("", "forced alignment does not place the transcript's words where the energy evidence does: "
                        "check that the transcript belongs to this audio; " + _GIVE_OFFSET),
    "words_not_heard": ("", "much of the transcript is not spoken where its stamps say: check that the transcript belongs "
                            "to this audio (another clip's transcript can share a sentence with it); " + _GIVE_OFFSET),
    "words_do_not_match_audio": ("", "forced alignment can place the transcript's words only where the audio says "
                                     "something else: check that the transcript belongs to this audio and is in "
                                     "English (en-us model); " + _GIVE_OFFSET),
    "methods_disagree": ("energy and forced alignment within 40 ms of each other",
                         "segment-level captions on conversational speech are often too loose; " + _GIVE_OFFSET),
}


def text_abstain(reason: str, *, num_onsets: int = 0, psr: float = 0.0, confidence: float = 0.0,
                 best_guess_ms: Optional[float] = None, found: str = "", needed: str = "",
                 num_words_aligned: int = 0,
                 item_differences_ms: tuple[tuple[str, Optional[float]], ...] = ()) -> TextEstimate:
    """An abstaining :class:`TextEstimate` (``method = "abstain:<reason>"``) with the reason's hint;
    ``found`` / ``needed`` default to the reason's standard wording."""
    default_needed, hint = _HINTS.get(reason, ("", _GIVE_OFFSET))
    if not found:
        found = f"{num_onsets} transcript onset(s)"
        if psr:
            found += f", peak {psr:.1f}x sidelobe"
        if confidence:
            found += f", confidence {confidence:.2f}"
    logger.info("text offset estimation abstains: %s (%s)", reason, found)
    return TextEstimate(None, float(confidence), f"abstain:{reason}", num_onsets=num_onsets, peak_to_sidelobe=float(psr),
                        best_guess_ms=None if best_guess_ms is None else float(best_guess_ms), found=found,
                        needed=needed or default_needed, hint=hint, num_words_aligned=num_words_aligned,
                        item_differences_ms=item_differences_ms)
