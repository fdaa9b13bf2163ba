"""A/V offset and clock drift from content: visual events matched to dated audio events, no model weights.

Clock model (DESIGN.md): a sound that belongs to video time ``t`` is heard at audio time::

    a = t * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000          (av_offset_ms > 0: audio lags)

Four steps, one module each::

    1 events      frames ─► visual change (background_rise) ─► isolated events t_k with weights w_k  (_av_events)
                  audio  ─► audio_onsets: events dated at the start of their rise ─► a_j            (_onsets)
    2 match       lag × drift search for the line putting the most events on audio events; significance S
                  of the best cell against chance, sidelobe outside its neighbourhood               (_av_match)
    3 confidence  confidence from S (0.3 at the calibrated null threshold); abstain, with an AVAbstain that
                  says why, when a gate fails (below, :func:`_gate`)
    4 drift fit   pairs on the best line ─► Theil–Sen line a − t = offset + drift·t; the offset at the
                  top of the pairs' spread (visual dates are late or exact)                         (_av_drift)

Confidence is calibrated against null pairings (another clip's audio, audio played backwards):
:data:`NULL_THRESHOLD` is the significance that at most 0.5 % of them reach on the tune seeds (its docstring
gives the rule). The significance counts only what stands above the peak's own neighbourhood (``_av_match``),
so lip-like motion that follows the speech within a syllable does not pass for events; and the sounds it matches
must stand out of the soundtrack (``ordinary_sounds``: a chance alignment meets syllables and notes, flashes meet
their claps, knocks and beeps).
Talking heads and scenes without sudden events give no datable event (``continuous_motion``,
``no_visual_events`` or ``below_null_threshold``): lip-sync is not estimated.

Every entry point takes one :class:`~aligner.AVOptions`.
"""
from __future__ import annotations

import logging
import math
from typing import Optional

import numpy as np
import torch

from aligner._av_drift import MATCH_SECONDS, OFFSET_PAIR_SECONDS, MatchedPairs, fit_drift, matched_pairs
from aligner._av_events import MIN_EVENTS, VisualEvents, detect_visual_events
from aligner._av_match import (LAG_STEP_SECONDS, MAX_SEARCH_CELLS, MAX_SEARCH_EVENT_CELLS, SEARCH_EVENT_CELLS_PER_SECOND,
                                LagDriftMatch, match_lag_drift, search_grid)
from aligner._av_records import AVEstimate, av_abstain, confidence_from_score
from aligner._onsets import AudioOnsets, audio_onsets
from aligner._options import AVOptions
from aligner._signals import visual_change_events
from avcore import AudioClip, VideoClip

logger = logging.getLogger(__name__)

__all__ = ["estimate_av_offset", "estimate_av_offset_from_arrays", "estimate_av_offset_from_features"]

# A second lag matching this share of the best one's events: periodic events, the peak is a guess.
_AMBIGUOUS_RATIO = 0.8
# The sounds matched at the best lag must rank, by median, above this share of the clip's audio events (by
# strength): flashes are met by claps, knocks and beeps that stand out of the soundtrack, while a chance alignment
# meets ordinary syllables and notes (tune set: BENCHMARKS.md, "A/V: the matched sounds must stand out").
MIN_MATCHED_RANK = 0.8
# ... unless the match alone is far beyond chance (louder unrelated sounds, door slams, may outrank the events'
# own): half a decade above the highest score of the tune set's 6,308 null pairings (1.95).
STRONG_MATCH_SCORE = 2.5
_DEFAULT = AVOptions()


def _edge_found(match, options: AVOptions) -> str:
    """What ``peak_at_search_edge`` found, in the range's own terms: the search runs over lags at the visual events'
    centre, so the lag at the edge is said there (``-500 ms``), with its offset at video time 0 beside it when a drift
    moves it (``-412 ms`` at -1466 ppm over a 120 s clip: not, on its own, at the edge of ±500 ms)."""
    at_centre = match.lag_seconds * 1000.0
    at_zero = match.lag_curve_ms[match.lag_index]
    found = f"best lag {at_centre:+.0f} ms at the edge of the ±{options.max_offset_ms:.0f} ms search"
    if abs(at_zero - at_centre) >= 1.0:
        found += (f" (at the visual events' centre, {match.centre_seconds:.1f} s; with its drift of "
                  f"{match.drift * 1e6:+.0f} ppm, {at_zero:+.0f} ms at video time 0)")
    return found


def _no_match(events: VisualEvents, num_audio: int, common: dict) -> Optional[AVEstimate]:
    """Step 1's abstentions: nothing to correlate (no isolated visual event, or no audio event)."""
    num_events, num_continuous = events.num_events, events.num_continuous
    if num_events < MIN_EVENTS and num_continuous >= MIN_EVENTS:
        return av_abstain("continuous_motion",
                          found=f"{num_events} isolated visual events; {num_continuous} brightenings within continuous "
                                f"change (e.g. a mouth following the speech)",
                          needed=f"{MIN_EVENTS} isolated visual events (flashes, claps in view)", **common)
    if num_events == 0:
        return av_abstain("no_visual_events", found="0 visual events (no frame brightens suddenly)",
                          needed=f"{MIN_EVENTS} visual events", **common)
    if num_audio == 0:
        return av_abstain("no_audio_events", found="0 audio events", needed=f"{MIN_EVENTS} audio events", **common)
    return None


def _apart(pts_seconds: np.ndarray, audio_start_seconds: float, audio_stop_seconds: float,
           options: AVOptions) -> Optional[AVEstimate]:
    """The abstention ``no_overlap`` when the audio shares no time with the video's frames at any offset and drift
    searched (a sound of video time ``t`` is heard within ``t·(1 ± max_drift) ± max_offset``); None otherwise, and
    for no frames or no audio (the other abstentions say those)."""
    if pts_seconds.size == 0 or not audio_stop_seconds > audio_start_seconds:
        return None
    first, last = float(pts_seconds[0]), float(pts_seconds[-1])
    reach = options.max_offset_ms / 1000.0 + options.max_drift_ppm * 1e-6 * max(abs(first), abs(last))
    if audio_stop_seconds > first - reach and audio_start_seconds <= last + reach:
        return None
    gap = audio_start_seconds - last if audio_start_seconds > last else first - audio_stop_seconds
    return av_abstain("no_overlap",
                      found=f"audio [{audio_start_seconds:.3f}, {audio_stop_seconds:.3f}) s and video frames "
                            f"[{first:.3f}, {last:.3f}] s, {gap:.3f} s apart",
                      needed=f"audio and video that play at the same time at an offset within "
                             f"±{options.max_offset_ms:.0f} ms")


def _gate(events: VisualEvents, num_audio: int, match: LagDriftMatch, pairs: MatchedPairs, guess_ms: float,
          options: AVOptions, common: dict) -> Optional[AVEstimate]:
    """Step 3: the abstention for the first failed gate, or None to answer.

    The gates (``too_few_events``, ``below_null_threshold``, ``ambiguous_peak``, ``too_few_matches``,
    ``ordinary_sounds``, in that order) apply only when ``options.min_confidence > 0``; ``min_confidence = 0``
    returns the best guess.
    ``pairs`` are the events matched within :data:`MATCH_SECONDS`; ``guess_ms`` the unthresholded offset; ``common``
    holds the estimate's fields so far, ``confidence`` among them.
    """
    num_events, num_matched = events.num_events, pairs.num_matched
    guess = guess_ms
    if options.min_confidence <= 0.0:
        return None
    matched_rank = float(np.median(pairs.audio_rank)) if num_matched else 0.0
    peak, sidelobe = match.peak_matches, match.sidelobe_matches
    continuous = events.num_continuous
    gates = [
        (num_events < MIN_EVENTS, "too_few_events", f"{num_events} visual event{'s' * (num_events != 1)}",
         f"{MIN_EVENTS} visual events"),
        (common["confidence"] < options.min_confidence, "below_null_threshold",
         f"{num_events} visual events, {num_audio} audio events; at the best lag {num_matched} visual events have a "
         f"sound within {MATCH_SECONDS * 1000:.0f} ms (weighted by strength: {peak:.1f} of {match.weight_total:.1f}; "
         f"chance alone gives {match.chance_matches:.1f}): score {match.score:.2f}"
         + (f"; {continuous} brightenings within continuous change ignored" if continuous else ""),
         f"score {options.null_threshold:.2f} (reached by 1 % of wrong-audio pairings; confidence "
         f"{options.min_confidence:.2f})"),
        (sidelobe > _AMBIGUOUS_RATIO * peak, "ambiguous_peak",
         f"the most significant lag{'' if guess is None else f' ({guess:+.0f} ms)'} matches {peak:.1f} visual "
         f"events (weighted), another lag (away from its neighbourhood, or one interval between recurring events "
         f"off) {sidelobe:.1f}: periodic or repeated events",
         f"a best lag matching at least {1 / _AMBIGUOUS_RATIO:.2f}x more events than any other"),
        (num_matched < MIN_EVENTS, "too_few_matches", f"{num_matched} of {num_events} visual events matched an audio event",
         f"{MIN_EVENTS} matched events"),
        (matched_rank < MIN_MATCHED_RANK and match.score < STRONG_MATCH_SCORE, "ordinary_sounds",
         f"the {num_matched} sounds matched at the best lag are, by median, louder than {matched_rank:.0%} of the "
         f"clip's {num_audio} audio events (score {match.score:.2f})",
         f"sounds that stand out: louder, by median, than {MIN_MATCHED_RANK:.0%} of them, or a score of "
         f"{STRONG_MATCH_SCORE:.1f}"),
    ]
    for failed, reason, found, needed in gates:
        if failed:
            return av_abstain(reason, found=found, needed=needed, best_guess_ms=guess, **common)
    return None


def _too_long(events: VisualEvents, lags: np.ndarray, drifts: np.ndarray, options: AVOptions,
              common: dict) -> Optional[AVEstimate]:
    """The abstention ``search_too_large`` when the search would evaluate more visual events × cells than its budget:
    :data:`MAX_SEARCH_EVENT_CELLS`, or :data:`SEARCH_EVENT_CELLS_PER_SECOND` per second of the events' span when that is
    more (about 1 s of work per 30 s of clip); its ``needed`` says which ``max_offset_ms`` (at this drift range) or
    ``max_drift_ppm`` (at this offset range) would fit. None otherwise."""
    num_events = events.num_events
    work = num_events * lags.size * drifts.size
    span = float(events.times_seconds[-1] - events.times_seconds[0])
    budget = max(MAX_SEARCH_EVENT_CELLS, int(SEARCH_EVENT_CELLS_PER_SECOND * span))
    if work <= budget:
        return None
    lags_fit = budget // (num_events * drifts.size)  # at this drift range
    offset_fit = ((lags_fit - 1) // 2 - 1) * LAG_STEP_SECONDS * 1000.0  # one lag spare: the grid rounds up
    drifts_fit = budget // (num_events * lags.size)  # at this offset range
    drift_step_ppm = float(drifts[1] - drifts[0]) * 1e6 if drifts.size > 1 else 0.0
    ways = []
    if offset_fit >= 1.0:
        ways.append(f"max_offset_ms <= {offset_fit:.0f} at ±{options.max_drift_ppm:.0f} ppm")
    if drifts_fit >= 1 and drifts.size > 1:
        drift_fit = math.floor((drifts_fit - 1) // 2 * drift_step_ppm)
        ways.append(f"max_drift_ppm <= {drift_fit} at ±{options.max_offset_ms:.0f} ms")
    ways.append("a shorter window of the clip (fewer events, fewer drifts)")
    return av_abstain("search_too_large",
                      found=f"{num_events} visual events x {lags.size} lags x {drifts.size} drifts = {work} event-cells "
                            f"to search (±{options.max_offset_ms:.0f} ms, ±{options.max_drift_ppm:.0f} ppm over "
                            f"{span:.0f} s of visual events): too much work for one search",
                      needed=f"at most {budget} event-cells for {span:.0f} s of events: " + ", or ".join(ways), **common)


def estimate_av_offset_from_features(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    onsets: AudioOnsets,
    *,
    options: AVOptions = _DEFAULT,
) -> AVEstimate:
    """Estimate offset and drift from cached features (the core of :func:`estimate_av_offset`).

    Args:
        visual_events: float ``[T]`` >= 0, change entering each frame (``visual_change_events``).
        pts_seconds: float ``[T]``, each frame's real presentation time (video timeline).
        onsets: dated audio events (``audio_onsets``), on the audio presentation timeline.
        options: search ranges, thresholds and drift options (``options.feature`` is not used here: the
            visual signal is given).

    Returns:
        An :class:`AVEstimate`; when abstaining, ``abstain`` says why.

    Raises:
        ValueError: ``visual_events`` and ``pts_seconds`` are not both ``[T]``.
    """
    events = detect_visual_events(visual_events, pts_seconds)
    num_audio = int(onsets.times_seconds.size)
    common = dict(num_events=events.num_events, num_audio_events=num_audio, null_threshold=options.null_threshold)
    nothing = _no_match(events, num_audio, common)
    if nothing is not None:
        return nothing

    lags, drifts = search_grid(events, options)
    if lags.size * drifts.size > MAX_SEARCH_CELLS:
        span = float(events.times_seconds[-1] - events.times_seconds[0])
        return av_abstain("search_too_large",
                          found=f"{lags.size} lags x {drifts.size} drifts = {lags.size * drifts.size} cells to search "
                                f"(±{options.max_offset_ms:.0f} ms, ±{options.max_drift_ppm:.0f} ppm over {span:.0f} s "
                                f"of visual events)",
                          needed=f"at most {MAX_SEARCH_CELLS} cells", **common)
    too_long = _too_long(events, lags, drifts, options, common)
    if too_long is not None:
        return too_long
    match = match_lag_drift(events, onsets, options)
    common.update(score=match.score, peak_to_sidelobe=match.peak_matches / max(match.sidelobe_matches, 1.0),
                  peak_matches=match.peak_matches, sidelobe_matches=match.sidelobe_matches,
                  chance_matches=match.chance_matches, lag_curve_ms=match.lag_curve_ms,
                  lag_curve_score=tuple(float(v) for v in np.round(match.curve_score, 4)))
    pairs = matched_pairs(events.times_seconds, onsets, match)
    fit = fit_drift(pairs, options, matched_pairs(events.times_seconds, onsets, match, window_seconds=OFFSET_PAIR_SECONDS))
    common.update(num_matched=pairs.num_matched, confidence=confidence_from_score(match.score, options.null_threshold))
    if match.at_search_edge:  # abstains whatever min_confidence: the true offset may lie outside the range
        return av_abstain("peak_at_search_edge", found=_edge_found(match, options),
                          needed=f"a peak inside ±{options.max_offset_ms:.0f} ms", best_guess_ms=fit.offset_ms, **common)
    if events.num_events < MIN_EVENTS:
        common["confidence"] = 0.0  # one or two coincidences prove nothing, however sharp
    abstention = _gate(events, num_audio, match, pairs, fit.offset_ms, options, common)
    if abstention is not None:
        return abstention
    return AVEstimate(av_offset_ms=fit.offset_ms, drift_ppm=fit.drift_ppm, method=fit.method,
                      drift_confidence=fit.drift_confidence, drift_se_ppm=fit.drift_se_ppm, **common)


def estimate_av_offset_from_arrays(
    visual_events: np.ndarray,
    pts_seconds: np.ndarray,
    audio_samples: np.ndarray | torch.Tensor,
    *,
    sample_rate: int,
    audio_start_seconds: float,
    options: AVOptions = _DEFAULT,
) -> AVEstimate:
    """Like :func:`estimate_av_offset`, from a per-frame change signal + pts and raw audio samples
    (``[C, N]`` or ``[N]`` at ``sample_rate``, first sample at ``audio_start_seconds``).

    Abstains (``no_overlap``) without looking at the content when the audio and the frames share no time at any
    offset and drift searched."""
    num_samples = int(np.shape(audio_samples)[-1]) if np.ndim(audio_samples) else 0
    if sample_rate > 0:
        apart = _apart(np.asarray(pts_seconds, dtype=np.float64).reshape(-1), float(audio_start_seconds),
                       float(audio_start_seconds) + num_samples / sample_rate, options)
        if apart is not None:
            return apart
    onsets = audio_onsets(audio_samples, sample_rate, start_seconds=audio_start_seconds)
    return estimate_av_offset_from_features(visual_events, pts_seconds, onsets, options=options)


def estimate_av_offset(video: VideoClip, audio: AudioClip, *, options: AVOptions = _DEFAULT) -> AVEstimate:
    """Estimate the A/V offset and drift of a clip from its content (flashes/cuts vs sounds that start suddenly).

    Args:
        video: decoded frames with real pts (the reference timeline).
        audio: decoded audio with its ``start_seconds``.
        options: :class:`~aligner.AVOptions` (search range ``max_offset_ms``, ``min_confidence``, drift options,
            visual ``feature``).

    Returns:
        :class:`AVEstimate`; ``av_offset_ms > 0`` means audio lags video; ``abstain`` explains a None.

    Example:
        >>> est = estimate_av_offset(video, audio, options=AVOptions(max_offset_ms=800))   # doctest: +SKIP
        >>> est.av_offset_ms, est.drift_ppm, est.confidence                                  # doctest: +SKIP
        (40.2, None, 1.0)
    """
    visual = visual_change_events(video.frames, feature=options.feature)
    return estimate_av_offset_from_arrays(visual, video.pts_seconds.numpy(), audio.samples, sample_rate=audio.sample_rate,
                                          audio_start_seconds=audio.start_seconds, options=options)
