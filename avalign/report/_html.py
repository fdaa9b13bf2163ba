"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG, nothing fetched).

Every key, path, message and number from the data goes through :func:`html.escape`.
"""
from __future__ import annotations

import base64
import html
import logging
from typing import Optional, Sequence

from avalign.report._standards import STANDARDS
from avalign.report._summary import badness_ms

logger = logging.getLogger(__name__)

__all__ = ["render_html"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
p.note{color:#555;font-size:13px;max-width:1100px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f2f4f7} td.k,th.k{text-align:left;max-width:340px;overflow:hidden;text-overflow:ellipsis}
.ok{color:#1b7f3b}.bad{color:#b3261e;font-weight:600}.na{color:#999}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600}
.pass{background:#e3f4e8;color:#1b7f3b}.fail{background:#fbe4e2;color:#b3261e}.none{background:#eee;color:#555}
.scroll{overflow-x:auto;max-width:100%}
.plots{display:flex;flex-wrap:wrap;gap:12px}.plots figure{margin:0}.plots img{width:600px;border:1px solid #eee}
"""


def _e(value) -> str:
    """Escape anything for HTML text or attribute context."""
    return html.escape("" if value is None else str(value), quote=True)


def _num(value, unit: str = "") -> str:
    if value is None:
        return '<span class="na">null</span>'
    if isinstance(value, bool):
        return _e(value)
    if isinstance(value, float):
        return _e(f"{value:g}{unit}") if abs(value) < 1e6 else _e(f"{value:.6g}{unit}")
    return _e(f"{value}{unit}")


def _verdict(value: Optional[bool]) -> str:
    if value is None:
        return '<span class="na">–</span>'
    return '<span class="ok">within</span>' if value else '<span class="bad">outside</span>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: int = 1, css_id: str = "") -> str:
    head = "".join(f'<th class="k">{_e(h)}</th>' if i < left else f"<th>{_e(h)}</th>" for i, h in enumerate(headers))
    body = "".join(
        "<tr>" + "".join(f'<td class="k">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(row)) + "</tr>"
        for row in rows
    )
    ident = f' id="{_e(css_id)}"' if css_id else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _summary_section(summary: dict) -> str:
    rows = []
    for name, field, unit in (("A/V offset", "av_offset_ms", " ms"), ("drift", "drift_ppm", " ppm"), ("text offset", "text_offset_ms", " ms")):
        s = summary[field]
        rows.append([_e(name), _num(s["count"]), _num(s["null"]), _num(s["mean"], unit), _num(s["median"], unit),
                     _num(s["p95_abs"], unit), _num(s["max_abs"], unit)])
    out = _table(["measure", "clips", "null", "mean", "median", "p95 |x|", "max |x|"], rows, css_id="stats")
    standards = [
        [_e(s["name"]), _e(f"+{s['audio_early_ms']:g} / −{s['audio_late_ms']:g}"), _num(s["within"]), _num(s["outside"]), _num(s["unknown"])]
        for s in summary["standards"].values()
    ]
    out += _table(["standard", "window (+ = audio early)", "within", "outside", "unknown"], standards, css_id="standards")
    if summary.get("residuals"):
        res = [[_e(f), _num(s["count"]), _num(s["mean"]), _num(s["median"]), _num(s["p95_abs"]), _num(s["max_abs"])]
               for f, s in summary["residuals"].items()]
        out += "<h2>Residuals against truth (measured − true)</h2>"
        out += _table(["field", "clips", "mean", "median", "p95 |x|", "max |x|"], res, css_id="residuals")
    return out


def _gate_section(gate: dict) -> str:
    if gate["fail_over_ms"] is None:
        return '<p><span class="verdict none">no gate</span> (run with <code>--fail-over-ms X</code> to gate)</p>'
    css, word = ("fail", "FAIL") if gate["exit_code"] else ("pass", "PASS")
    text = (
        f'<p id="gate"><span class="verdict {css}">{word}</span> {len(gate["failed"])} clip(s) with |offset| &gt; '
        f'{_e(gate["fail_over_ms"])} ms on {_e(", ".join(gate["fields"]))}; {len(gate["abstained"])} abstained '
        "(null offsets do not fail the gate and are listed below).</p>"
    )
    if gate["failed"]:
        text += _table(["key", "shard", "|offset| ms"], [[_e(f["key"]), _e(f["shard"]), _num(f["offset_ms"])] for f in gate["failed"]], left=2, css_id="failed")
    if gate["abstained"]:
        text += _table(["abstained key", "shard", "null fields"],
                       [[_e(a["key"]), _e(a["shard"]), _e(", ".join(a["fields"]))] for a in gate["abstained"]], left=3, css_id="abstained")
    return text


def _clip_rows(rows: Sequence[dict]) -> list[list[str]]:
    ranked = sorted(rows, key=lambda r: -(badness_ms(r) if badness_ms(r) is not None else -1.0))
    out = []
    for r in ranked:
        c = r["container"]
        residual = r.get("residual") or {}
        out.append([
            _e(r["key"]), _e(r["shard"]), _e(r["source"]),
            _num(r["av_offset_ms"]), _num(r["av_confidence"]), _num(r["drift_ppm"]),
            _num(r["text_offset_ms"]), _num(r["text_confidence"]),
            *[_verdict(r["lipsync"][t.key]) for t in STANDARDS],
            _num(residual.get("av_offset_ms")), _num(residual.get("drift_ppm")), _num(residual.get("text_offset_ms")),
            _num(r["duration_seconds"]), _num(c.get("video_start_seconds")), _num(c.get("audio_start_seconds")),
            _num(c.get("priming_ms")), _num(c.get("codec_delay_ms")), _num(c.get("duration_mismatch_ms")),
            _e(f"{c.get('num_frames_from_header')} / {c.get('num_frames_from_content')}"),
            _e(f"{c.get('fps_from_header')} / {c.get('fps_from_content')}"), _num(c.get("vfr")),
            _num(r["spans_outside"]), _e("; ".join(r["problems"])),
        ])
    return out


_CLIP_HEADERS = [
    "key", "shard", "source", "av_offset_ms", "av conf", "drift_ppm", "text_offset_ms", "text conf",
    *[t.name.replace("ITU-R ", "").replace("detectability", "detect.").replace("acceptability", "accept.") for t in STANDARDS],
    "resid. av ms", "resid. ppm", "resid. text ms", "duration s", "video start s",
    "audio start s", "priming ms", "codec delay ms", "A−V duration ms", "frames hdr / content", "fps hdr / content",
    "vfr", "spans outside", "problems",
]


def render_html(report: dict, plots: dict[str, bytes], *, title: str = "avalign alignment report") -> str:
    """The whole page for ``report`` (``{"input", "clips", "skipped", "summary"}``) with ``plots`` embedded."""
    summary = report["summary"]
    images = "".join(
        f'<figure><img alt="{_e(name)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}"></figure>'
        for name, png in plots.items()
    )
    skipped = _table(
        ["key", "shard", "reason", "message"],
        [[_e(s["key"]), _e(s["shard"]), _e(s["reason"]), _e(s["message"])] for s in report["skipped"]],
        left=4, css_id="skipped",
    )
    reasons = ", ".join(f"{_e(k)}: {v}" for k, v in summary["skipped_by_reason"].items()) or "none"
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="note">Input <code>{_e(report["input"])}</code>: <b id="num-clips">{summary["num_clips"]}</b> clips reported, '
        f'<b id="num-skipped">{summary["num_skipped"]}</b> skipped ({reasons}).</p>',
        '<p class="note">Signs: <code>av_offset_ms</code> &gt; 0 means audio is <b>late</b> (lags the picture); '
        "<code>text_offset_ms</code> &gt; 0 means transcript stamps are late. The lip-sync standards count "
        "<b>+ = audio early</b>, so avalign +100 ms is −100 ms in their terms. Null = the estimator abstained.</p>",
        "<h2>Gate</h2>", _gate_section(summary["gate"]),
        "<h2>Summary</h2>", _summary_section(summary),
        "<h2>Plots</h2>", f'<div class="plots">{images}</div>',
        "<h2>Clips, worst first</h2>",
        '<div class="scroll">' + _table(_CLIP_HEADERS, _clip_rows(report["clips"]), left=3, css_id="clips") + "</div>",
        "<h2>Skipped and corrupt inputs</h2>", skipped,
        "</body></html>",
    ]
    return "\n".join(parts)
