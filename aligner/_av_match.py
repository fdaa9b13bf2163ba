"""Step 2 of the A/V estimator: match visual events to audio events over lag × drift, and score the best cell.

::

    G(x)    = max_j  u_j · exp(−(x − a_j)² / 2σ²)           how close an audio event (weight u_j) is to x
              u_j = clip(s_j / (1.5 · median z), 0.25, 1), s_j = detection z × tonal_boost(tonality): a tone that
              starts under speech counts like a clap (``onset_weights``)
    c(L, d) = Σ_k w_k · G(t_k + L + d·(t_k − t_c))          L: lag at the events' centre t_c, d: drift
              L ∈ ±max_offset_ms in 1 ms steps, d ∈ ±max_drift_ppm in steps that keep d·span/2 ≤ σ
    S       = −log10 P(≥ c(peak) of n = Σ w_k events match at one lag by chance) − log10(cells)
              (binomial tail; cells = lags × drifts / 6σ; chance rate = (the larger of the mean of c over all
              cells and its mean over the peak's own neighbourhood, 20-100 ms either side at the best drift) / n)

The neighbourhood term is the clip's own chance level next to the peak. Visual changes that follow the speech
(a mouth, lip-like motion) meet speech onsets more often than chance at every lag within a syllable of the
true offset, so their c is a broad hump whose top passes the global chance test; a true event-to-event peak
is as narrow as the dating error (a few ms) and stands above its neighbourhood as well::

    c(L)   flash ↔ sound events:            mouth ↔ speech (no events):
              │                                  │
              │            ▲ peak                │           ▲ peak (off by the lip lead)
              │            █                     │        ▄▆███▆▄
              │ ▁ ▁  ▁ ▁▁ █ ▁ ▁▁ ▁              │ ▁ ▁▂▄▆███████▆▄▂▁ ▁
              └──────────────────── L            └──────────────────── L
                       |ring|  ring: 20-100 ms         |ring| (high: chance here ≈ the peak)

The kernel widths σ = 2.5, 6 and 12 ms are tried and the largest significance wins (events dated a few ms apart
earn it at 6 ms, paying for its higher chance rate; the null threshold is calibrated on this maximum). 12 ms is for
events between frames seen by a camera with a short shutter: the light is dated late by up to (1 − shutter) of a
frame interval, differently for each event (``aligner._av_events``), so their sounds spread over 10-30 ms around the
lag (TUNE43: answer rate 76 → 88 %, tune null pairings' 99.5th percentile 0.663 → 0.676, the threshold still 0.7;
BENCHMARKS.md, "Events between frames").
The sidelobe is the most events matched at any lag outside ±(20 ms + max_drift·span/2) of the peak, and at the
peak's lag shifted by the interval between a visual event and one of its next four, in or out of the range
(recurring events match one period off as well: a true offset of +700 ms with a light blinking every second has
its alias at −300 ms, inside ±500 ms).
"""
from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import numpy as np

from aligner._av_events import VisualEvents, onset_weights
from aligner._onsets import AudioOnsets
from aligner._options import AVOptions

logger = logging.getLogger(__name__)

__all__ = ["LOCAL_CHANCE_RING_SECONDS", "LagDriftMatch", "MAX_SEARCH_CELLS", "MAX_SEARCH_EVENT_CELLS", "SEARCH_EVENT_CELLS_PER_SECOND",
           "match_lag_drift", "search_grid"]

LAG_STEP_SECONDS = 0.001
"""Lag grid step of the search."""
_SIGMA_SECONDS = 0.0025  # sets the drift step
_SIGMAS_SECONDS = (0.0025, 0.006, 0.012)
_SIDELOBE_EXCLUSION_SECONDS = 0.02
# The alias check shifts the peak's lag by the interval from each visual event to each of its next this many
# events: recurring events on a lattice skip some of its points (cuts on some beats; a light every 0.6 s against
# drums every 0.5 s coincides again after two of its intervals, 3 s).
_ALIAS_NEIGHBOURS = 4
LOCAL_CHANCE_RING_SECONDS = (0.02, 0.1)
"""Lags this far from the peak (inner, outer), at its drift, give the peak's local chance level (module diagram;
chosen on the tune set: BENCHMARKS.md, "A/V significance against the clip's own neighbourhood")."""


@dataclass(frozen=True)
class LagDriftMatch:
    """The best (lag, drift) cell of the match surface and what it rests on."""

    lags_seconds: np.ndarray
    """float64 ``[L]``: lags tried at the events' centre, ascending, ``LAG_STEP_SECONDS`` apart."""
    lag_index: int
    """Index of the best lag in ``lags_seconds``."""
    drift: float
    """Best drift as a fraction (``drift_ppm · 1e-6``)."""
    centre_seconds: float
    """``t_c``: the middle of the first and last visual event (video timeline)."""
    score: float
    """Match significance ``S`` at the best cell."""
    curve_score: np.ndarray
    """float64 ``[L]``: significance at each lag, at the best drift."""
    peak_matches: float
    """``c`` at the best cell (visual events matched, weighted and counted fuzzily)."""
    sidelobe_matches: float
    """Most events matched outside the peak's neighbourhood (any drift), or at the peak's lag shifted by an interval
    between visual events (best drift, even outside the search range: the alias of a recurring event); 0 when there
    is no such lag."""
    chance_matches: float
    """What chance gives: the larger of the mean of ``c`` over all cells and over the peak's ring
    (:data:`LOCAL_CHANCE_RING_SECONDS`)."""
    weight_total: float
    """``n = Σ w_k``."""

    @property
    def lag_seconds(self) -> float:
        """The best lag (at the events' centre)."""
        return float(self.lags_seconds[self.lag_index])

    @property
    def offset_seconds(self) -> float:
        """The best line's offset at video time 0: ``a = t + L + d·(t − t_c)`` gives ``L − d·t_c``."""
        return self.lag_seconds - self.drift * self.centre_seconds

    @property
    def lag_curve_ms(self) -> tuple[float, ...]:
        """Offsets tried at video time 0 (ms, 3 decimals), at the best drift."""
        return tuple(float(v) for v in np.round((self.lags_seconds - self.drift * self.centre_seconds) * 1000.0, 3))

    @property
    def at_search_edge(self) -> bool:
        """The best lag is within two steps of either end of the range."""
        return self.lag_index < 2 or self.lag_index > self.lags_seconds.size - 3

    def predicted_audio_seconds(self, video_seconds: np.ndarray) -> np.ndarray:
        """Audio time of each of ``video_seconds`` on the best (lag, drift) line."""
        return video_seconds * (1.0 + self.drift) - self.drift * self.centre_seconds + self.lag_seconds


def _proximity(onsets: np.ndarray, weights: np.ndarray, lo: float, hi: float, step: float,
               sigma: float) -> tuple[np.ndarray, float]:
    """``G`` on a grid of ``step`` from ``lo``: max over onsets of weight × a Gaussian of width ``sigma``."""
    size = int(math.ceil((hi - lo) / step)) + 2
    grid = np.zeros(size)
    reach = int(math.ceil(4 * sigma / step))
    offsets = np.arange(-reach, reach + 1)
    for a, w in zip(onsets, weights):
        centre = (a - lo) / step
        index = int(round(centre)) + offsets
        keep = (index >= 0) & (index < size)
        values = w * np.exp(-0.5 * np.square((index[keep] - centre) * step / sigma))
        grid[index[keep]] = np.maximum(grid[index[keep]], values)
    return grid, lo


def _significance(matches: np.ndarray, num_events: float, chance: float, num_cells: float) -> np.ndarray:
    """``−log10`` of the chance of matching at least ``matches`` of ``num_events`` events at one lag (binomial
    tail with the clip's own chance rate ``chance / num_events``), minus ``log10(num_cells)`` lags × drifts tried."""
    from scipy.special import betainc

    p = float(np.clip(chance / max(num_events, 1), 1e-4, 0.999))
    x = np.clip(np.asarray(matches, dtype=np.float64), 1e-6, num_events)
    tail = betainc(x, num_events - x + 1.0, p)
    return -np.log10(np.maximum(tail, 1e-300)) - math.log10(max(num_cells, 1.0))


def _local_chance(curve: np.ndarray, peak_index: int, step: float) -> float:
    """Mean of ``curve`` (``c`` over lags, ``step`` apart) over the ring :data:`LOCAL_CHANCE_RING_SECONDS` around
    ``peak_index``; 0 when no lag lies in the ring."""
    inner, outer = LOCAL_CHANCE_RING_SECONDS
    distance = np.abs(np.arange(curve.size) - peak_index) * step
    ring = (distance > inner + 1e-9) & (distance <= outer + 1e-9)
    return float(curve[ring].mean()) if ring.any() else 0.0


_WHOLE_ROW_ELEMENTS = 262_144
"""A row of :func:`_surface` of at most this many events × lags is done in one step (2 MB a temporary), as it always was
(the sample clips' answers are bit for bit those of before); a larger one in blocks of :data:`_ROW_BLOCK_ELEMENTS`."""
_ROW_BLOCK_ELEMENTS = 65_536
"""Events × lags of one block of a large row (512 KB a temporary, held in cache): 119 events at ±2 s went from 15 to
100 million event-cells a second, and thousands of events at ±10 s no longer hold gigabytes a temporary. A block's
sums may differ from the whole row's in the last bit."""


def _surface(events: VisualEvents, grid: np.ndarray, grid_lo: float, lags: np.ndarray, drifts: np.ndarray,
             centre_t: float) -> np.ndarray:
    """``c(L, d)`` as ``[drifts, lags]``: the weighted sum of ``G`` (on a half-step grid, linearly interpolated)
    at each event's predicted audio time."""
    half_step = LAG_STEP_SECONDS / 2
    event_t, event_w = events.times_seconds, events.weights
    surface = np.empty((drifts.size, lags.size))
    block = lags.size if event_t.size * lags.size <= _WHOLE_ROW_ELEMENTS else \
        max(2, _ROW_BLOCK_ELEMENTS // max(event_t.size, 1))
    lag_steps = lags / half_step
    for row, drift in enumerate(drifts):
        on_line = (event_t + drift * (event_t - centre_t) - grid_lo)[:, None] / half_step
        for start in range(0, lags.size, block):
            positions = on_line + lag_steps[None, start:start + block]
            base = np.clip(np.floor(positions).astype(np.int64), 0, grid.size - 2)
            frac = np.clip(positions - base, 0.0, 1.0)
            surface[row, start:start + block] = event_w @ (grid[base] * (1.0 - frac) + grid[base + 1] * frac)
    return surface


def _alias_matches(events: VisualEvents, onset_t: np.ndarray, onset_w: np.ndarray, lag: float, drift: float,
                   centre_t: float, sigma: float, min_shift: float) -> float:
    """The most events matched (``c``, computed on the onsets directly) at the best lag shifted by the interval
    from a visual event to one of its next :data:`_ALIAS_NEIGHBOURS` events (if over ``min_shift``, the peak's
    neighbourhood), either way, at the best drift, whether or not the shifted lag lies in the search range; 0 when
    there is no such interval.

    Events that recur with a period P (a blinking light, a metronome, cuts on the beat) match at L ± P as well as
    at L: the true offset may be L ± P, outside the range searched, with L its alias inside it. For events that do
    not recur, a shift by one of their intervals is one more unrelated lag."""
    event_t, event_w = events.times_seconds, events.weights
    intervals = [event_t[step:] - event_t[:-step] for step in range(1, min(_ALIAS_NEIGHBOURS, event_t.size - 1) + 1)]
    shifts = np.unique(np.round(np.concatenate(intervals), 3)) if intervals else np.zeros(0)
    shifts = shifts[shifts > min_shift]
    if shifts.size == 0:
        return 0.0
    order = np.argsort(onset_t)
    onset_t, onset_w = onset_t[order], onset_w[order]
    alias_lags = lag + np.concatenate([-shifts, shifts])
    on_line = event_t + drift * (event_t - centre_t)
    most = 0.0
    chunk = max(1, 500_000 // event_t.size)
    for start in range(0, alias_lags.size, chunk):
        predicted = on_line[None, :] + alias_lags[start:start + chunk, None]
        nearest = np.searchsorted(onset_t, predicted)
        best = np.zeros(predicted.shape)
        for offset in (-2, -1, 0, 1):
            index = np.clip(nearest + offset, 0, onset_t.size - 1)
            best = np.maximum(best, onset_w[index] * np.exp(-0.5 * np.square((predicted - onset_t[index]) / sigma)))
        most = max(most, float((best @ event_w).max()))
    return most


MAX_SEARCH_CELLS = 50_000_000
"""The most lag × drift cells one search may hold: its match surface is float64 ``[drifts, lags]``, two of them alive
at once (400 MB each at this size). Wide options on long clips reach far beyond it (±10 s and ±20000 ppm over 2 h of
events: 576 million cells, 4.6 GB each, hours of work): :func:`~aligner.estimate_av_offset` abstains
(``search_too_large``) instead."""


MAX_SEARCH_EVENT_CELLS = 500_000_000
"""The most visual events × lag × drift cells one search may evaluate on a clip of a few minutes or less (its time grows
with all three: each cell sums every event, for each of the three kernel widths); a longer clip may use
:data:`SEARCH_EVENT_CELLS_PER_SECOND` per second of its events' span when that is more. Over the bound
:func:`~aligner.estimate_av_offset` abstains (``search_too_large``), naming the ``max_offset_ms`` or ``max_drift_ppm``
that would fit. Measured (BENCHMARKS.md, "Alignment API limits"): 20-23 million event-cells a second on one core with
the blocked rows of large searches, so this floor is about 25 s of work."""
SEARCH_EVENT_CELLS_PER_SECOND = 600_000
"""Event-cells a search may evaluate per second of its visual events' span: about 1 s of work per 30 s of clip at the
measured 20 million a second, the estimator's cost target. A 1 h clip with an event every 4 s at the default ranges
(913 events, 1.6 billion event-cells) answers in 68 s; one with a flash every 20-40 s searched at ±10 s (119 events,
2.5 billion) abstains."""


def search_grid(events: VisualEvents, options: AVOptions) -> tuple[np.ndarray, np.ndarray]:
    """The lags (at the events' centre, :data:`LAG_STEP_SECONDS` apart, ``±max_offset_ms``) and the drifts (steps
    that keep ``drift·span/2`` within 2σ, ``±max_drift_ppm``; one drift, 0, for a single event) that
    :func:`match_lag_drift` searches."""
    event_t = events.times_seconds
    half_span = 0.5 * float(event_t[-1] - event_t[0]) if event_t.size else 0.0
    half_lags = int(math.ceil(options.max_offset_ms / 1000.0 / LAG_STEP_SECONDS))
    lags = np.arange(-half_lags, half_lags + 1) * LAG_STEP_SECONDS
    drift_step = 2.0 * _SIGMA_SECONDS / half_span if half_span > 0 else math.inf
    num_drift = int(math.floor(options.max_drift_ppm * 1e-6 / drift_step)) if math.isfinite(drift_step) else 0
    drifts = np.arange(-num_drift, num_drift + 1) * drift_step if num_drift > 0 else np.zeros(1)
    return lags, drifts


def match_lag_drift(events: VisualEvents, onsets: AudioOnsets, options: AVOptions) -> LagDriftMatch:
    """Search lag × drift for the line that puts the most visual events on audio events (module diagram).

    Args:
        events: at least one visual event.
        onsets: at least one dated audio event (audio presentation timeline).
        options: ``max_offset_ms`` and ``max_drift_ppm`` bound the search.

    Returns:
        :class:`LagDriftMatch` at the most significant cell over both kernel widths.

    Raises:
        ValueError: ``events`` or ``onsets`` is empty.
    """
    if events.num_events == 0 or onsets.times_seconds.size == 0:
        raise ValueError(f"need visual and audio events, got {events.num_events} and {onsets.times_seconds.size}")
    event_t = events.times_seconds
    weight_total = float(events.weights.sum())
    centre_t = 0.5 * (float(event_t[0]) + float(event_t[-1]))
    half_span = 0.5 * float(event_t[-1] - event_t[0])
    step = LAG_STEP_SECONDS
    lags, drifts = search_grid(events, options)
    reach = options.max_offset_ms / 1000.0 + options.max_drift_ppm * 1e-6 * half_span + 0.05
    weights = onset_weights(onsets)
    best = None
    for sigma in _SIGMAS_SECONDS:
        grid, grid_lo = _proximity(onsets.times_seconds, weights, float(event_t[0]) - reach, float(event_t[-1]) + reach,
                                   step / 2, sigma)
        surface = _surface(events, grid, grid_lo, lags, drifts, centre_t)
        cell = np.unravel_index(int(np.argmax(surface)), surface.shape)
        chance_here = max(float(surface.mean()), _local_chance(surface[cell[0]], int(cell[1]), step))
        curve_here = _significance(surface[cell[0]], weight_total, chance_here, surface.size / (6.0 * sigma / step))
        if best is None or curve_here[cell[1]] > best[0]:
            best = (float(curve_here[cell[1]]), surface, cell, chance_here, curve_here, sigma)
    score, surface, (best_d, best_l), chance, curve, best_sigma = best
    exclusion = int(math.ceil((_SIDELOBE_EXCLUSION_SECONDS + options.max_drift_ppm * 1e-6 * half_span) / step))
    outside = np.abs(np.arange(lags.size) - best_l) > exclusion
    sidelobe = float(surface[:, outside].max()) if outside.any() else 0.0
    sidelobe = max(sidelobe, _alias_matches(events, onsets.times_seconds, weights, float(lags[best_l]),
                                            float(drifts[best_d]), centre_t, best_sigma, exclusion * step))
    return LagDriftMatch(lags_seconds=lags, lag_index=int(best_l), drift=float(drifts[best_d]), centre_seconds=centre_t,
                         score=score, curve_score=curve, peak_matches=float(surface[best_d, best_l]),
                         sidelobe_matches=sidelobe, chance_matches=chance, weight_total=weight_total)
