"""A static page per flagged clip: ``clips/<key>-<hash>.html`` with PNG figures beside it (no server, nothing fetched).

::

    ┌ waveform (video timeline, audio corrected by the A/V offset) ──────────────────────────┐
    │ ▁▃█▃▁      ▁▅█▅▁                                                                         │
    │ [before ] [before]            orange: words as stamped                                   │
    │   [after ] [after]            green: words after correction                              │
    └──────────────────────────────────────────────────────────────────────────────────────────┘
    frames at visual events | frames at word starts     (thumbnails with their pts)
    lag curve: score per lag (blue), its peak (red), the null threshold (dashed grey)

Colours are fixed (:data:`COLOURS`) so that a rendering test can find each mark by its pixels.
"""
from __future__ import annotations

import hashlib
import html
import io
import logging
import os
import re
from typing import Container, Optional

import numpy as np

from avalign._measure import FIGURE_BESIDE_ABSTENTION
from avalign.report._clip_view import ClipView
from avalign.report._files import write_file_group

logger = logging.getLogger(__name__)

__all__ = ["CLIP_PAGE_FILE", "COLOURS", "clip_page_name", "render_clip_page", "write_clip_page"]

COLOURS = {
    "waveform": "#3b6ea5",
    "before": "#e76f51",
    "after": "#2a9d8f",
    "lag_curve": "#1f3b99",
    "peak": "#d62828",
    "threshold": "#888888",
}
"""Mark → colour (hex RGB) on the clip pages."""
_DPI = 100


_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


CLIP_PAGE_FILE = re.compile(r".+-[0-9a-f]{8}(-[0-9]+)?(\.html|-(waveform|strip|lag_curve)\.png)")
"""The names :func:`write_clip_page` gives the files it writes in ``clips/`` (``fullmatch``)."""


def clip_page_name(key: str, taken: Container[str] = ()) -> str:
    """``clips/<key, safe characters only>-<8 hex of its SHA-1>.html``: the same key gives the same page in every
    report; a key that appears again (in another shard) gets ``-2``, ``-3``… (not in ``taken``)."""
    slug = _UNSAFE.sub("_", key)[:60].strip("._") or "clip"
    name = f"clips/{slug}-{hashlib.sha1(key.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    candidate, n = f"{name}.html", 1
    while candidate in taken:
        n += 1
        candidate = f"{name}-{n}.html"
    return candidate


def _figure(width_inches: float, height_inches: float, rows: int = 1, height_ratios=None):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width_inches, height_inches), dpi=_DPI, layout="constrained")
    axes = fig.subplots(rows, 1, sharex=True, gridspec_kw={"height_ratios": height_ratios} if height_ratios else None)
    return fig, axes


def _png(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    return buffer.getvalue()


def _draw_boxes(ax, boxes, *, y: float, colour: str, label: str) -> None:
    for i, box in enumerate(boxes):
        ax.add_patch(_rectangle(box.start_seconds, y, box.stop_seconds - box.start_seconds, 0.8, colour,
                                label=label if i == 0 else None))
        ax.text((box.start_seconds + box.stop_seconds) / 2, y + 0.4, box.text[:12], ha="center", va="center",
                fontsize=7, color="white", clip_on=True)


def _rectangle(x, y, width, height, colour, *, label=None):
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), max(width, 1e-3), height, facecolor=colour, edgecolor="none", label=label)


def waveform_png(view: ClipView) -> bytes:
    """Waveform envelope with two lanes of word boxes (before: orange, after: green), on the video timeline."""
    fig, (wave, words) = _figure(12.0, 3.6, rows=2, height_ratios=[2.2, 1.0])
    wave.fill_between(view.envelope_seconds, view.envelope_min, view.envelope_max, color=COLOURS["waveform"], linewidth=0)
    wave.set_ylabel("amplitude")
    shift = f"audio shifted by {-view.audio_shift_ms:+g} ms (A/V correction)" if view.audio_shift_ms else "no A/V correction"
    wave.set_title(f"{view.key}: waveform on the video timeline, {shift}", fontsize=10)
    _draw_boxes(words, view.words_before, y=1.1, colour=COLOURS["before"], label="as stamped")
    _draw_boxes(words, view.words_after, y=0.1, colour=COLOURS["after"], label="after correction")
    words.set_ylim(0, 2.0)
    words.set_yticks([0.5, 1.5], ["after", "before"])
    words.set_xlabel("video time (s)")
    if view.words_before or view.words_after:
        fig.legend(loc="outside lower center", fontsize=7, ncols=2)  # below the axes: never over a word
    else:
        words.text(0.5, 0.5, "no transcript", ha="center", va="center", transform=words.transAxes, color="#888")
    lo = float(view.envelope_seconds.min()) if view.envelope_seconds.size else 0.0
    hi = float(view.envelope_seconds.max()) if view.envelope_seconds.size else 1.0
    for box in (*view.words_before, *view.words_after):
        lo, hi = min(lo, box.start_seconds), max(hi, box.stop_seconds)
    words.set_xlim(lo, hi)
    return _png(fig)


def lag_curve_png(view: ClipView) -> Optional[bytes]:
    """The estimator's score per lag with its peak and null threshold; None without a curve."""
    if view.lag_curve_ms is None:
        return None
    fig, ax = _figure(12.0, 2.8)
    lags, scores = view.lag_curve_ms, view.lag_curve_score
    ax.plot(lags, scores, color=COLOURS["lag_curve"], linewidth=1.2, label="score per lag")
    peak = int(np.argmax(scores))
    ax.plot([lags[peak]], [scores[peak]], "o", color=COLOURS["peak"], markersize=8, label=f"peak {lags[peak]:+.1f} ms")
    if view.null_threshold is not None:
        ax.axhline(view.null_threshold, color=COLOURS["threshold"], linestyle="--", linewidth=2.0,
                   label=f"null threshold {view.null_threshold:.3g}")
    ax.set_xlabel("lag (ms, > 0: audio late)")
    ax.set_ylabel("score")
    ax.set_title(f"A/V lag curve ({view.lag_curve_source})", fontsize=10)
    fig.legend(loc="outside lower center", fontsize=7, ncols=3)  # below the axes: never over the curve
    return _png(fig)


def _strip_png(frames, labels) -> bytes:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(1.8 * len(frames), 1.7), dpi=_DPI, layout="constrained")
    for ax, frame, label in zip(np.atleast_1d(fig.subplots(1, len(frames))), frames, labels):
        ax.imshow(frame)
        ax.set_title(label, fontsize=7)
        ax.set_xticks([])
        ax.set_yticks([])
        for spine in ax.spines.values():
            spine.set_color("#999999")
    return _png(fig)


def strip_png(view: ClipView) -> Optional[bytes]:
    """Thumbnails at the visual events, then at corrected word starts; None without frames."""
    frames = [f for _, f in view.event_frames] + [f for _, _, f in view.word_frames]
    labels = [f"event {t:.3f} s" for t, _ in view.event_frames] + [f"“{w[:10]}” {t:.3f} s" for t, w, _ in view.word_frames]
    return _strip_png(frames, labels) if frames else None


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


_CSS = """
body{font-family:system-ui,sans-serif;margin:20px;color:#222;background:#fff;max-width:1260px}
h1{font-size:20px;margin:0 0 6px} h2{font-size:15px;margin:20px 0 6px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px} th,td{border:1px solid #ddd;padding:2px 6px;text-align:left}
img{display:block;max-width:100%;border:1px solid #eee} .na{color:#888}
.key-before{color:#e76f51;font-weight:600}.key-after{color:#2a9d8f;font-weight:600}
"""


def _confidence_fact(row: dict, which: str) -> tuple[str, object]:
    """``(label, value)`` of an estimate's confidence; beside an abstention the figure is named for what it is (an
    ``ambiguous_peak`` abstains at A/V confidence 1.0: the best lag's match strength, not a confidence)."""
    value = row.get(f"{which}_confidence")
    if row.get(f"{which}_offset_ms") is not None or value is None:
        return f"{which} confidence", value
    return f"{which} {FIGURE_BESIDE_ABSTENTION[which]} (abstained: not a confidence)", value


def _abstain_facts(row: dict) -> list[tuple[str, object]]:
    """Per abstention, what the estimator found, what it needed, its best guess and what to do (``abstain_details``;
    a plot's curve alone can read as an answer: an ``ambiguous_peak``'s rival lag may lie outside the plotted range)."""
    facts = []
    for field, detail in (row.get("abstain_details") or {}).items():
        which = field.split("_")[0]
        for key, label in (("found", "found"), ("needed", "needed"), ("best_guess_ms", "best guess ms"),
                           ("hint", "what to do")):
            if detail.get(key) is not None:
                facts.append((f"{which} abstained: {label}", detail[key]))
    return facts


def _facts_table(row: dict) -> str:
    c = row.get("container") or {}
    items = [
        ("why flagged", "; ".join(row.get("flags", [])) or "–"),
        ("av_offset_ms (> 0 audio late)", row.get("av_offset_ms")), _confidence_fact(row, "av"),
        ("av method", row.get("av_method")), ("drift_ppm", row.get("drift_ppm")),
        ("text_offset_ms (> 0 stamps late)", row.get("text_offset_ms")), _confidence_fact(row, "text"),
        ("text method", row.get("text_method")),
        ("abstain reasons", ", ".join(f"{k}: {v}" for k, v in (row.get("abstain_reasons") or {}).items()) or "–"),
        *_abstain_facts(row),
        ("duration s", row.get("duration_seconds")), ("words", row.get("num_words")),
        ("video start s", c.get("video_start_seconds")), ("audio start s", c.get("audio_start_seconds")),
        ("priming ms", c.get("priming_ms")), ("codec delay ms", c.get("codec_delay_ms")),
        ("A−V duration ms", c.get("duration_mismatch_ms")),
        ("frames header / content", f"{c.get('num_frames_from_header')} / {c.get('num_frames_from_content')}"),
        ("fps header / content", f"{c.get('fps_from_header')} / {c.get('fps_from_content')}"), ("vfr", c.get("vfr")),
        ("spans outside the media", row.get("spans_outside")),
        ("residual vs truth", row.get("residual")), ("problems", "; ".join(row.get("problems") or []) or "–"),
        ("shard", row.get("shard")), ("source", row.get("source")),
    ]
    body = "".join(f"<tr><th>{_e(k)}</th><td>{_e(v) if v is not None else '<span class=na>null</span>'}</td></tr>"
                   for k, v in items)
    return f'<table id="facts">{body}</table>'


def render_clip_page(row: dict, view: Optional[ClipView], images: dict[str, str], *, error: str = "") -> str:
    """HTML of one clip page; ``images`` maps a figure (``waveform``, ``strip``, ``lag_curve``) to its file name."""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(row['key'])} · avalign clip</title><style>{_CSS}</style></head><body>",
        '<p><a href="../report.html#clips">← report</a></p>',
        f"<h1>{_e(row['key'])}</h1>",
        f'<p id="flags"><b>Flagged:</b> {_e("; ".join(row.get("flags", [])) or "–")}</p>',
    ]
    if error:
        parts.append(f'<p class="na" id="error">No figures: {_e(error)}</p>')
    if view is not None:
        parts += [
            "<h2>Audio and words</h2>",
            '<p>Word boxes: <span class="key-before">orange = as the transcript stamps them</span>, '
            '<span class="key-after">green = after correction</span> (text offset, A/V offset and drift applied).</p>',
            f'<img id="waveform" alt="waveform and word boxes" src="{_e(images["waveform"])}">',
            "<h2>Frames at visual events and at word starts</h2>",
            f'<img id="strip" alt="frame strip" src="{_e(images["strip"])}">' if "strip" in images
            else '<p class="na" id="strip-missing">no frames (audio-only media)</p>',
            "<h2>A/V lag curve</h2>",
            f'<img id="lag-curve" alt="lag curve" src="{_e(images["lag_curve"])}">' if "lag_curve" in images
            else '<p class="na" id="lag-curve-missing">lag curve not available</p>',
        ]
        if view.notes:
            parts.append("<h2>Notes</h2><ul>" + "".join(f"<li>{_e(n)}</li>" for n in view.notes) + "</ul>")
    parts += ["<h2>Facts</h2>", _facts_table(row), "</body></html>"]
    return "\n".join(parts)


def write_clip_page(out_dir: str, page: str, row: dict, view: Optional[ClipView], *, error: str = "") -> list[str]:
    """Write ``out_dir/<page>`` (``clips/….html``, see :func:`clip_page_name`) and its PNGs; returns the paths written.

    Everything is rendered first, then written as one group (:func:`~avalign.report._files.write_file_group`): an
    interrupted run leaves a page complete with its images, or (a new page) nothing of it.
    """
    clips_dir = os.path.join(out_dir, os.path.dirname(page))
    os.makedirs(clips_dir, exist_ok=True)
    stem = os.path.splitext(os.path.basename(page))[0]
    images: dict[str, str] = {}
    files: list[tuple[str, bytes | str]] = []
    if view is not None:
        for name, png in (("waveform", waveform_png(view)), ("strip", strip_png(view)), ("lag_curve", lag_curve_png(view))):
            if png is None:
                continue
            file_name = f"{stem}-{name}.png"
            images[name] = file_name
            files.append((os.path.join(clips_dir, file_name), png))
    path = os.path.join(out_dir, page)
    files.append((path, render_clip_page(row, view, images, error=error)))
    write_file_group(files)
    return [path, *(p for p, _ in files[:-1])]
