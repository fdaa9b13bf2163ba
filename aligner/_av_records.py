"""What the A/V estimator returns: :class:`AVEstimate`, and :class:`AVAbstain` when it gives no offset."""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Optional

from aligner._options import NULL_THRESHOLD

logger = logging.getLogger(__name__)

__all__ = ["AVAbstain", "AVEstimate", "av_abstain", "confidence_from_score"]


@dataclass(frozen=True)
class AVAbstain:
    """Why the A/V estimator gave no offset, in words a user can act on (``measure --json``: ``av_abstain``)."""

    reason: str
    """Machine-readable reason: ``no_visual_events``, ``continuous_motion``, ``too_few_events``, ``no_audio_events``,
    ``below_null_threshold``, ``ambiguous_peak``, ``too_few_matches``, ``ordinary_sounds``,
    ``peak_at_search_edge``, ``no_overlap`` or ``search_too_large``."""
    found: str
    """What was found, e.g. ``"2 visual events"`` or ``"peak 2.1x sidelobe (7 of 9 events matched)"``."""
    needed: str
    """What an answer needs, e.g. ``"3 visual events"`` or ``"null threshold 3.0x"``."""
    best_guess_ms: Optional[float]
    """The unthresholded estimate of ``av_offset_ms`` (None when there was nothing to correlate)."""
    hint: str
    """What the user can do."""

    def to_json(self) -> dict:
        """``{reason, found, needed, best_guess_ms, hint}``."""
        return {"reason": self.reason, "found": self.found, "needed": self.needed,
                "best_guess_ms": None if self.best_guess_ms is None else round(float(self.best_guess_ms), 3),
                "hint": self.hint}


_KNOWN = ("If you know the offset, pass it: `avalign measure --av-offset-ms MS` (Python: "
          "`align(av_offset_ms=...)`).")
_HINTS = {
    "no_visual_events": "the video has no sudden brightening (flash, light, cut): content alignment needs events seen "
                        "and heard together (a clapperboard, a hand clap in view); talking heads and steady motion have "
                        "none. " + _KNOWN,
    "continuous_motion": "the picture changes continuously (a mouth or another region whose brightness follows the speech, "
                         "moving objects), not in sudden, isolated events: that is lip-sync territory, which is not "
                         "estimated. Content alignment needs a few flashes or claps seen and heard together. " + _KNOWN,
    "too_few_events": "fewer than 3 visual events cannot be told from chance coincidences; use a longer clip with more "
                      "flashes/claps. " + _KNOWN,
    "no_audio_events": "the audio has no sound that starts suddenly (clap, knock, beep); content alignment is not "
                       "possible. " + _KNOWN,
    "below_null_threshold": "visual events were found, but too few of them have a sound starting at the same lag to rule "
                            "out chance (another clip's audio reaches this score in 1 % of tries); best_guess_ms may be "
                            "right but is not trusted. Events hidden under loud speech or music, or flashes without a "
                            "sound, cause this. " + _KNOWN,
    "ambiguous_peak": "two lags match the events almost equally well (periodic flashes or sounds?), the other one "
                      "possibly outside the range searched; best_guess_ms may be off by the period. " + _KNOWN,
    "too_few_matches": "fewer than 3 visual events have an audio event at the best lag; check that the events make a "
                       "sound. " + _KNOWN,
    "ordinary_sounds": "the visual events line up with sounds at one lag, but with ordinary ones (syllables, notes), "
                       "not with sounds that stand out of the soundtrack as a clap, knock or beep does: a chance "
                       "alignment looks like this; best_guess_ms is not trusted. Events hidden under loud speech or "
                       "music cause this too. " + _KNOWN,
    "peak_at_search_edge": "the best lag is at the edge of the search range: the true offset may be larger; retry with "
                           "a larger range (`avalign measure --max-offset-ms MS`; Python: "
                           "`align(max_offset_ms=...)`).",
    "search_too_large": "the search range is too wide for a clip this long (lags x drifts beyond what one search may "
                        "hold in memory, or visual events x lags x drifts beyond about 1 s of work per 30 s of clip): "
                        "narrow it (`align(av_options=AVOptions(max_offset_ms=..., max_drift_ppm=...))`; "
                        "`avalign measure --max-offset-ms MS`) or estimate on a shorter window of the clip. " + _KNOWN,
    "no_overlap": "the audio and the video do not play at the same time at any offset searched: check that they come "
                  "from the same recording, and their start times (the audio's start_seconds, the video's first pts: a "
                  "stream cut from a longer one keeps its own start). If they belong together at a larger offset (up "
                  "to 10 s), raise the search range (`avalign measure --max-offset-ms MS`; Python: "
                  "`align(max_offset_ms=...)`). " + _KNOWN,
}


@dataclass(frozen=True)
class AVEstimate:
    """Estimated A/V clock relation ``a = t·(1 + drift_ppm·1e-6) + av_offset_ms/1000``."""

    av_offset_ms: Optional[float]
    """Audio lag behind video at video time 0 (ms, > 0 audio late); None when the estimator abstains."""
    drift_ppm: Optional[float]
    """Audio clock rate error (ppm); None when abstaining or when the clip cannot resolve it (apply 0 then)."""
    confidence: float
    """In [0, 1]: 0.3 at the null threshold, 1.0 four decades of significance above it (:func:`confidence_from_score`)."""
    num_events: int
    """Visual events used (frames whose brightening stands out)."""
    method: str
    """How the value was obtained (``event_match+theil_sen``, ``event_match+drift_unresolved``, ``event_match``)
    or ``abstain:<reason>``."""
    drift_confidence: float = 0.0
    """Confidence in ``drift_ppm`` in [0, 1]; 0.0 when drift is not reported."""
    num_matched: int = 0
    """Visual events with an audio event within ±8 ms of the fitted line."""
    num_audio_events: int = 0
    """Dated audio events in the clip."""
    score: float = 0.0
    """Match significance at the best (lag, drift): ``−log10`` of the chance of matching that many visual
    events at one lag, minus ``log10`` of the lags × drifts tried (the scale of ``null_threshold``)."""
    peak_to_sidelobe: float = 0.0
    """Matched events at the best lag over those at the best other lag outside its neighbourhood (>= 1 event)."""
    drift_se_ppm: Optional[float] = None
    """Standard error of the fitted slope (ppm); None when no line was fitted."""
    peak_matches: float = 0.0
    """Visual events matched at the best (lag, drift), counted fuzzily (an event 1σ off counts 0.61)."""
    sidelobe_matches: float = 0.0
    """The most events matched at any lag outside the peak's neighbourhood (any drift), or at the best lag shifted by
    an interval between visual events, even outside the search range (recurring events: ``LagDriftMatch``)."""
    chance_matches: float = 0.0
    """Events matched on average over all (lag, drift) tried: what chance gives."""
    lag_curve_ms: tuple[float, ...] = ()
    """Offsets tried (ms, at video time 0, at the best drift), for plotting; empty when nothing was correlated."""
    lag_curve_score: tuple[float, ...] = ()
    """Match significance at each of ``lag_curve_ms`` (the ``score`` scale, comparable to ``null_threshold``)."""
    null_threshold: float = NULL_THRESHOLD
    """Calibrated threshold on the ``score`` / ``lag_curve_score`` scale (at most 1 % of tune-set null pairings reach it)."""
    abstain: Optional[AVAbstain] = None
    """Why no offset was given (None when answering)."""

    @property
    def abstained(self) -> bool:
        """True when no offset is reported."""
        return self.av_offset_ms is None

    def __repr__(self) -> str:
        return (f"AVEstimate(av_offset_ms={self.av_offset_ms}, drift_ppm={self.drift_ppm}, confidence={self.confidence:.2f}, "
                f"num_events={self.num_events}, num_matched={self.num_matched}, peak_to_sidelobe={self.peak_to_sidelobe:.2f}, "
                f"score={self.score:.2f}, method={self.method!r}, lag_curve=[{len(self.lag_curve_ms)}])")


def av_abstain(reason: str, *, found: str, needed: str, best_guess_ms: Optional[float] = None, **fields) -> AVEstimate:
    """An abstaining :class:`AVEstimate` (offset and drift None, ``method = "abstain:<reason>"``) whose
    :class:`AVAbstain` carries ``found``, ``needed``, ``best_guess_ms`` and the reason's hint; ``fields`` fill the
    other :class:`AVEstimate` fields (``confidence`` and ``num_events`` default to 0)."""
    record = AVAbstain(reason, found, needed, best_guess_ms, _HINTS[reason])
    logger.info("A/V offset estimation abstains: %s (found %s, need %s)", reason, found, needed)
    return AVEstimate(av_offset_ms=None, drift_ppm=None, method=f"abstain:{reason}", abstain=record,
                      **{"confidence": 0.0, "num_events": 0, **fields})


def confidence_from_score(score: float, null_threshold: float = NULL_THRESHOLD) -> float:
    """Match significance → confidence: 0.3 at ``null_threshold``, 1.0 at ``null_threshold + 4`` (four more
    decades of significance), 0.0 at ``null_threshold − 2``; linear in between, clipped to [0, 1].

    Example:
        >>> confidence_from_score(0.7), confidence_from_score(4.7), confidence_from_score(-1.3)
        (0.3, 1.0, 0.0)

    Raises:
        ValueError: ``score`` is NaN or ``null_threshold`` is not finite (a NaN read as confidence 1.0).
    """
    if math.isnan(score) or not math.isfinite(null_threshold):
        raise ValueError(f"score must not be NaN and null_threshold must be finite, got {score = }, {null_threshold = }")
    if score < null_threshold:
        return float(max(0.0, 0.3 * (1.0 - (null_threshold - score) / 2.0)))
    return float(min(1.0, 0.3 + 0.7 * (score - null_threshold) / 4.0))
