"""``report.html``: one self-contained page (inline CSS, plots as base64 PNG, nothing fetched).

Every key, path, message and number from the data goes through :func:`html.escape`.
"""
from __future__ import annotations

import base64
import html
import logging
from typing import Optional, Sequence

from avalign._measure import FIGURE_BESIDE_ABSTENTION
from avalign.report._standards import STANDARDS
from avalign.report._summary import badness_ms

logger = logging.getLogger(__name__)

__all__ = ["clip_headers", "render_html"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
p.note{color:#555;font-size:13px;max-width:1100px}
table{border-collapse:collapse;font-size:12px;margin:6px 0}
th,td{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
th{background:#f2f4f7} td.k,th.k{text-align:left;max-width:260px;overflow:hidden;text-overflow:ellipsis}
.ok{color:#1b7f3b}.bad{color:#b3261e;font-weight:600}.na{color:#999}
.verdict{display:inline-block;padding:4px 10px;border-radius:4px;font-weight:600}
.pass{background:#e3f4e8;color:#1b7f3b}.fail{background:#fbe4e2;color:#b3261e}.none{background:#eee;color:#555}
.scroll{overflow-x:auto;max-width:100%}
.plots{display:flex;flex-wrap:wrap;gap:12px;max-width:1240px}.plots figure{margin:0}.plots img{width:600px;border:1px solid #eee}
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
        warnings = "".join(f'<li class="bad">{_e(r["code"])}: {_e(r["message"])}</li>' for r in gate["reasons"])
        return ('<p><span class="verdict none">no gate</span> (run with <code>--fail-over-ms X</code> to gate)</p>'
                + (f'<ul id="gate-reasons">{warnings}</ul>' if warnings else ""))
    css, word = ("fail", "FAIL") if gate["exit_code"] else ("pass", "PASS")
    text = (
        f'<p id="gate"><span class="verdict {css}">{word}</span> {len(gate["failed"])} clip(s) with |offset| &gt; '
        f'{_e(gate["fail_over_ms"])} ms on {_e(", ".join(gate["fields"]))}; {len(gate["abstained"])} of '
        f'{gate["num_gated"]} gated clip(s) abstained (at most {gate["max_abstain"]:.0%} allowed; a null offset does '
        "not fail its clip, it is listed below).</p>"
    )
    if gate["reasons"]:
        text += '<ul id="gate-reasons">' + "".join(
            f'<li class="bad">{_e(r["code"])}: {_e(r["message"])}</li>' for r in gate["reasons"]) + "</ul>"
    if gate["failed"]:
        text += _table(["key", "shard", "|offset| ms"], [[_e(f["key"]), _e(f["shard"]), _num(f["offset_ms"])] for f in gate["failed"]], left=2, css_id="failed")
    if gate["abstained"]:
        text += _table(["abstained key", "shard", "null fields", "reasons"],
                       [[_e(a["key"]), _e(a["shard"]), _e(", ".join(a["fields"])), _e(", ".join(a.get("reasons", [])))]
                        for a in gate["abstained"]], left=4, css_id="abstained")
    return text


def _short_standard(name: str) -> str:
    return name.replace("ITU-R ", "").replace("detectability", "det.").replace("acceptability", "acc.")


def clip_headers(with_truth: bool) -> list[str]:
    """Columns of the clip table (container facts and the rest are on each clip's page)."""
    return [
        "key", "av_offset_ms", "av conf", "drift_ppm", "text_offset_ms", "text conf",
        *[_short_standard(t.name) for t in STANDARDS], "abstain reason",
        *(["resid. av ms", "resid. text ms"] if with_truth else []), "dur. s", "words", "flags",
    ]


def _flag_tags(flags: Sequence[str]) -> str:
    """Short tags of a row's flags for the table (the sentences are on the clip page)."""
    tags = []
    for flag in flags:
        tag = "gate" if "over the gate" in flag else "lip-sync" if "outside" in flag else "abstained"
        if tag not in tags:
            tags.append(tag)
    return ", ".join(tags)


def _confidence_cell(row: dict, which: str) -> str:
    """The confidence of an answer; beside an abstention a dash (the figure is no confidence in the abstention: an
    ``ambiguous_peak`` abstains at A/V confidence 1.0, the best lag's match strength), kept in the cell's title."""
    value = row[f"{which}_confidence"]
    if row[f"{which}_offset_ms"] is not None or value is None:
        return _num(value)
    what = FIGURE_BESIDE_ABSTENTION[which]
    return f'<span class="na" title="abstained; {_e(what)} {_e(value)}, not a confidence">–</span>'


def _clip_rows(rows: Sequence[dict], with_truth: bool) -> list[list[str]]:
    ranked = sorted(rows, key=lambda r: -(badness_ms(r) if badness_ms(r) is not None else -1.0))
    out = []
    for r in ranked:
        residual = r.get("residual") or {}
        key = _e(r["key"])
        if r.get("page"):
            key = f'<a href="{_e(r["page"])}" title="{_e(r["shard"])}">{key}</a>'
        else:
            key = f'<span title="{_e(r["shard"])}">{key}</span>'
        reasons = r.get("abstain_reasons") or {}
        out.append([
            key, _num(r["av_offset_ms"]), _confidence_cell(r, "av"), _num(r["drift_ppm"]),
            _num(r["text_offset_ms"]), _confidence_cell(r, "text"),
            *[_verdict(r["lipsync"][t.key]) for t in STANDARDS],
            _e(", ".join(f"{'av' if f.startswith('av') else 'text'}: {v}" for f, v in reasons.items())) or "–",
            *([_num(residual.get("av_offset_ms")), _num(residual.get("text_offset_ms"))] if with_truth else []),
            _num(r["duration_seconds"]), _num(r.get("num_words")), _e(_flag_tags(r.get("flags") or [])) or "–",
        ])
    return out


def render_html(report: dict, plots: dict[str, bytes], *, title: str = "avalign alignment report") -> str:
    """The whole page for ``report`` (``{"input", "clips", "skipped", "summary"}``) with ``plots`` embedded."""
    summary = report["summary"]
    with_truth = bool(summary.get("num_with_truth"))
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
        f'<b id="num-skipped">{summary["num_skipped"]}</b> skipped ({reasons}); '
        f'<b id="total-hours">{summary["total_hours"]:.3f}</b> h of media, <b id="num-words">{summary["num_words"]}</b> words; '
        f'{summary.get("num_flagged", 0)} clip(s) flagged, {summary.get("num_clip_pages", 0)} with a page (linked keys).</p>',
        '<p class="note">Signs: <code>av_offset_ms</code> &gt; 0 means audio is <b>late</b> (lags the picture); '
        "<code>text_offset_ms</code> &gt; 0 means transcript stamps are late. The lip-sync standards count "
        "<b>+ = audio early</b>, so avalign +100 ms is −100 ms in their terms. Null = the estimator abstained.</p>",
        "<h2>Gate</h2>", _gate_section(summary["gate"]),
        "<h2>Summary</h2>", _summary_section(summary),
        "<h2>Plots</h2>", f'<div class="plots">{images}</div>',
        '<h2 id="clips-title">Clips, worst first</h2>',
        '<p class="note">Container facts (starts, priming, codec delay, frame counts, fps), residuals and problems '
        "of a flagged clip are on its page: follow its key.</p>",
        '<div class="scroll">' + _table(clip_headers(with_truth), _clip_rows(report["clips"], with_truth), left=1,
                                        css_id="clips") + "</div>",
        "<h2>Skipped and corrupt inputs</h2>", skipped,
        "</body></html>",
    ]
    return "\n".join(parts)
