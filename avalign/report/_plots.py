"""Report plots as PNG bytes (matplotlib, Agg backend, no display needed).

Every distribution shows what exists: the answered values on the left, and beside them a bar per
abstain reason (grey), so a dataset where most clips abstained reads as such instead of "no values".
"""
from __future__ import annotations

import io
import logging
from collections import Counter
from typing import Optional, Sequence

from avalign.report._standards import STANDARDS

logger = logging.getLogger(__name__)

__all__ = ["ABSTAIN_COLOUR", "PLOT_FILES", "VALUE_COLOUR", "make_plots"]

_DPI = 100
_SIZE_INCHES = (6.4, 3.6)
_MIN_SPAN = 20.0
"""Narrowest histogram range (ms or ppm): a single value is drawn as a bar 1/5 of this wide."""
VALUE_COLOUR = "#3b6ea5"
"""Bars of answered values."""
ABSTAIN_COLOUR = "#9e9e9e"
"""Bars of abstentions."""
PLOT_FILES = ("av_offset_hist.png", "drift_hist.png", "text_offset_hist.png", "offset_vs_duration.png",
              "av_residual_hist.png")
"""Every file :func:`make_plots` may write (the residual plot only with a truth file)."""


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _figure_with_abstentions():
    from matplotlib.figure import Figure  # a Figure without pyplot uses no global state and no display

    fig = Figure(figsize=_SIZE_INCHES, dpi=_DPI, layout="constrained")
    values, abstained = fig.subplots(1, 2, gridspec_kw={"width_ratios": [4, 1]})
    return fig, values, abstained


def _abstention_bars(ax, reasons: Sequence[str]) -> None:
    """One grey bar per abstain reason (count on top), or 'none' when every clip answered."""
    from matplotlib.ticker import MaxNLocator

    counts = Counter(reasons)
    ax.set_title(f"abstained: {len(reasons)}", fontsize=9)
    if counts:
        names = sorted(counts, key=lambda r: (-counts[r], r))
        ax.bar(range(len(names)), [counts[n] for n in names], color=ABSTAIN_COLOUR)
        ax.set_xticks(range(len(names)), [n.replace("_", "\n") for n in names], fontsize=6)
        for i, n in enumerate(names):
            ax.text(i, counts[n], str(counts[n]), ha="center", va="bottom", fontsize=7)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    else:
        ax.text(0.5, 0.5, "none", ha="center", va="center", transform=ax.transAxes, color="#666")
        ax.set_xticks([])
        ax.set_yticks([])


def _histogram(values: Sequence[Optional[float]], reasons: Sequence[str], *, title: str, xlabel: str,
               bands: bool = False, empty: str = "no clip to plot") -> bytes:
    """A histogram of the answered ``values`` beside a bar per abstention reason; ``empty`` is written when no clip
    had the quantity to measure (not "all 0 abstained")."""
    from matplotlib.ticker import MaxNLocator

    fig, ax, side = _figure_with_abstentions()
    known = [v for v in values if v is not None]
    if known:
        lo, hi = min(known), max(known)
        if hi - lo < _MIN_SPAN:  # one value (or a tight cluster) still gets a visible bar
            lo, hi = lo - _MIN_SPAN / 2, hi + _MIN_SPAN / 2
        ax.hist(known, bins=min(40, max(5, len(known))), range=(lo, hi), color=VALUE_COLOUR, edgecolor="white",
                zorder=2)
    else:
        ax.text(0.5, 0.5, f"none answered: all {len(values)} abstained" if values else empty, ha="center", va="center",
                transform=ax.transAxes, color="#555")
    if bands:
        colours = {"bt1359_detectability": "#2a9d8f", "ebu_r37": "#e76f51"}
        for t in STANDARDS:
            if t.key in colours:
                lo, hi = t.avalign_range_ms()
                ax.axvspan(lo, hi, color=colours[t.key], alpha=0.12, zorder=0, label=f"{t.name} [{lo:g}, +{hi:g}]")
        ax.legend(loc="upper right", fontsize=7)
    ax.set_title(f"{title}: {len(known)} answered", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("clips")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    _abstention_bars(side, reasons)
    return _png(fig)


def _scatter(rows: Sequence[dict]) -> bytes:
    fig, ax, side = _figure_with_abstentions()
    points = [(r["duration_seconds"], r["av_offset_ms"]) for r in rows if r["duration_seconds"] and r["av_offset_ms"] is not None]
    if points:
        x, y = zip(*points)
        ax.scatter(x, y, s=14, color=VALUE_COLOUR)
        ax.axhline(0.0, color="#999", linewidth=0.8)
    else:
        ax.text(0.5, 0.5, "no clip with an A/V offset", ha="center", va="center", transform=ax.transAxes, color="#555")
    ax.set_title(f"A/V offset against duration ({len(points)} clips)", fontsize=10)
    ax.set_xlabel("duration (s)")
    ax.set_ylabel("av_offset_ms (> 0: audio late)")
    _abstention_bars(side, _reasons(rows, "av_offset_ms"))
    return _png(fig)


def _reasons(rows: Sequence[dict], field: str) -> list[str]:
    """The abstain reason of every row whose gated ``field`` is null."""
    return [(r.get("abstain_reasons") or {}).get(field, "unknown") for r in rows
            if r.get(field) is None and field in (r.get("abstain_reasons") or {})]


def make_plots(rows: Sequence[dict]) -> dict[str, bytes]:
    """``{file name: PNG bytes}``: offset, drift and text-offset histograms (with abstentions beside them),
    offset vs duration, residuals (with truth)."""
    video_rows = [r for r in rows if r.get("has_video", True)]
    plots = {
        "av_offset_hist.png": _histogram(
            [r["av_offset_ms"] for r in video_rows], _reasons(video_rows, "av_offset_ms"), title="A/V offset",
            xlabel="av_offset_ms (> 0: audio late)", bands=True, empty="no clip has video",
        ),
        "drift_hist.png": _histogram(
            [r["drift_ppm"] for r in video_rows if r["av_offset_ms"] is not None],
            ["not resolved" for r in video_rows if r["av_offset_ms"] is not None and r["drift_ppm"] is None],
            title="Clock drift (clips with an A/V offset)", xlabel="drift_ppm",
            empty="no clip has an A/V offset",
        ),
        "text_offset_hist.png": _histogram(
            [r["text_offset_ms"] for r in rows if r.get("has_transcript")], _reasons(rows, "text_offset_ms"),
            title="Transcript offset", xlabel="text_offset_ms (> 0: stamps late)",
            empty="no clip has a transcript",
        ),
        "offset_vs_duration.png": _scatter(rows),
    }
    with_truth = [r for r in rows if r.get("residual")]
    if with_truth:
        plots["av_residual_hist.png"] = _histogram(
            [r["residual"]["av_offset_ms"] for r in with_truth],
            ["no measured or true value" for r in with_truth if r["residual"]["av_offset_ms"] is None],
            title="A/V residual (measured − true)", xlabel="ms",
        )
    return plots
