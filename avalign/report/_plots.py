"""Report plots as PNG bytes (matplotlib, Agg backend, no display needed)."""
from __future__ import annotations

import io
import logging
from typing import Optional, Sequence

from avalign.report._standards import STANDARDS

logger = logging.getLogger(__name__)

__all__ = ["make_plots"]

_DPI = 100
_SIZE_INCHES = (6.4, 3.6)


def _figure():
    from matplotlib.figure import Figure  # a Figure without pyplot uses no global state and no display

    fig = Figure(figsize=_SIZE_INCHES, dpi=_DPI, layout="constrained")
    return fig, fig.add_subplot()


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _histogram(values: Sequence[Optional[float]], *, title: str, xlabel: str, bands: bool = False) -> bytes:
    fig, ax = _figure()
    known = [v for v in values if v is not None]
    nulls = len(values) - len(known)
    if known:
        ax.hist(known, bins=min(40, max(5, len(known))), color="#3b6ea5", edgecolor="white")
    else:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes, color="#888")
    if bands:
        colours = {"bt1359_detectability": "#2a9d8f", "ebu_r37": "#e76f51"}
        for t in STANDARDS:
            if t.key in colours:
                lo, hi = t.avalign_range_ms()
                ax.axvspan(lo, hi, color=colours[t.key], alpha=0.12, label=f"{t.name} [{lo:g}, +{hi:g}]")
        ax.legend(loc="upper right", fontsize=7)
    ax.set_title(f"{title} ({len(known)} clips, {nulls} null)", fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("clips")
    from matplotlib.ticker import MaxNLocator

    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    return _png(fig)


def _scatter(rows: Sequence[dict]) -> bytes:
    fig, ax = _figure()
    points = [(r["duration_seconds"], r["av_offset_ms"]) for r in rows if r["duration_seconds"] and r["av_offset_ms"] is not None]
    if points:
        x, y = zip(*points)
        ax.scatter(x, y, s=14, color="#3b6ea5")
        ax.axhline(0.0, color="#999", linewidth=0.8)
    else:
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes, color="#888")
    ax.set_title(f"A/V offset against duration ({len(points)} clips)", fontsize=10)
    ax.set_xlabel("duration (s)")
    ax.set_ylabel("av_offset_ms (> 0: audio late)")
    return _png(fig)


def make_plots(rows: Sequence[dict]) -> dict[str, bytes]:
    """``{file name: PNG bytes}``: offset, drift and text-offset histograms, offset vs duration, residuals (with truth)."""
    plots = {
        "av_offset_hist.png": _histogram(
            [r["av_offset_ms"] for r in rows], title="A/V offset", xlabel="av_offset_ms (> 0: audio late)", bands=True
        ),
        "drift_hist.png": _histogram([r["drift_ppm"] for r in rows], title="Clock drift", xlabel="drift_ppm"),
        "text_offset_hist.png": _histogram(
            [r["text_offset_ms"] for r in rows if r.get("has_transcript")],
            title="Transcript offset",
            xlabel="text_offset_ms (> 0: stamps late)",
        ),
        "offset_vs_duration.png": _scatter(rows),
    }
    with_truth = [r for r in rows if r.get("residual")]
    if with_truth:
        plots["av_residual_hist.png"] = _histogram(
            [r["residual"]["av_offset_ms"] for r in with_truth],
            title="A/V residual (measured − true)",
            xlabel="ms",
        )
    return plots
