"""Dataset summary, the worst clips, and the ``--fail-over-ms`` gate.

Gate rule: a clip **fails** when ``|av_offset_ms| > fail_over_ms`` or ``|text_offset_ms| > fail_over_ms``
(the fields chosen by ``gate_on``). A null offset (the estimator abstained, or no transcript) never
fails the gate: such clips are listed as ``abstained`` so they can be inspected. Skipped and corrupt
inputs are counted in the summary but do not change the exit code.
"""
from __future__ import annotations

import logging
from collections import Counter
from typing import Literal, Optional, Sequence

import numpy as np

from avalign.report._inputs import Skipped
from avalign.report._standards import STANDARDS

logger = logging.getLogger(__name__)

__all__ = ["CORRUPT_REASONS", "GateOn", "badness_ms", "format_terminal_summary", "gate", "summarize"]

GateOn = Literal["av", "text", "any"]
_GATE_FIELDS = {"av": ("av_offset_ms",), "text": ("text_offset_ms",), "any": ("av_offset_ms", "text_offset_ms")}
_WORST_COUNT = 10
CORRUPT_REASONS = ("decode", "error", "missing_audio", "missing_video", "read", "timeout", "too_large", "transcript")
"""Skip reasons counted as ``corrupt`` in the summary: media or a transcript that was found but cannot be used."""


def _stats(values: Sequence[Optional[float]]) -> dict:
    """Count, mean, median, 95th percentile of |x| and max |x| of the non-null values."""
    known = np.asarray([v for v in values if v is not None], dtype=np.float64)
    if known.size == 0:
        return {"count": 0, "null": len(values), "mean": None, "median": None, "p95_abs": None, "max_abs": None}
    return {
        "count": int(known.size),
        "null": len(values) - int(known.size),
        "mean": round(float(known.mean()), 3),
        "median": round(float(np.median(known)), 3),
        "p95_abs": round(float(np.percentile(np.abs(known), 95)), 3),
        "max_abs": round(float(np.abs(known).max()), 3),
    }


def badness_ms(row: dict, *, fields: Sequence[str] = ("av_offset_ms", "text_offset_ms")) -> Optional[float]:
    """The largest |offset| of ``row`` over ``fields``; None when all are null."""
    known = [abs(row[f]) for f in fields if row.get(f) is not None]
    return max(known) if known else None


def gate(rows: Sequence[dict], *, fail_over_ms: Optional[float], gate_on: GateOn = "any") -> dict:
    """Apply the gate; ``{"fail_over_ms", "gate_on", "failed": [{key, shard, offset_ms}], "abstained": [...], "exit_code"}``."""
    if gate_on not in _GATE_FIELDS:
        raise ValueError(f"gate_on must be one of {list(_GATE_FIELDS)}, got {gate_on!r}")
    if fail_over_ms is not None and not (fail_over_ms >= 0):
        raise ValueError(f"fail_over_ms must be >= 0, got {fail_over_ms = }")
    fields = _GATE_FIELDS[gate_on]
    failed, abstained = [], []
    for row in rows:
        worst = badness_ms(row, fields=fields)
        nulls = [f for f in fields if row.get(f) is None and (f != "text_offset_ms" or row.get("has_transcript"))]
        if nulls:
            abstained.append({"key": row["key"], "shard": row["shard"], "fields": nulls})
        if fail_over_ms is not None and worst is not None and worst > fail_over_ms:
            failed.append({"key": row["key"], "shard": row["shard"], "offset_ms": worst})
    failed.sort(key=lambda f: -f["offset_ms"])
    return {
        "fail_over_ms": fail_over_ms,
        "gate_on": gate_on,
        "fields": list(fields),
        "failed": failed,
        "abstained": abstained,
        "exit_code": 1 if failed else 0,
    }


def summarize(rows: Sequence[dict], skipped: Sequence[Skipped], gate_result: dict) -> dict:
    """Dataset figures: counts, statistics per measure, standards pass counts, residuals, worst clips, skips."""
    standards = {}
    for t in STANDARDS:
        verdicts = [r["lipsync"][t.key] for r in rows]
        standards[t.key] = {
            "name": t.name,
            "audio_early_ms": t.audio_early_ms,
            "audio_late_ms": t.audio_late_ms,
            "within": sum(v is True for v in verdicts),
            "outside": sum(v is False for v in verdicts),
            "unknown": sum(v is None for v in verdicts),
        }
    ranked = sorted(rows, key=lambda r: -(badness_ms(r) if badness_ms(r) is not None else -1.0))
    worst = [
        {"key": r["key"], "shard": r["shard"], "offset_ms": badness_ms(r), "av_offset_ms": r["av_offset_ms"],
         "text_offset_ms": r["text_offset_ms"]}
        for r in ranked[:_WORST_COUNT]
        if badness_ms(r) is not None
    ]
    with_truth = [r for r in rows if r.get("residual")]
    residuals = None
    if with_truth:
        residuals = {f: _stats([r["residual"][f] for r in with_truth]) for f in ("av_offset_ms", "drift_ppm", "text_offset_ms")}
    problems = Counter(p.split(":")[0] for r in rows for p in r["problems"])
    return {
        "num_clips": len(rows),
        "num_skipped": len(skipped),
        "skipped_by_reason": dict(sorted(Counter(s.reason for s in skipped).items())),
        "corrupt": sum(s.reason in CORRUPT_REASONS for s in skipped),
        "sources": dict(sorted(Counter(r["source"] for r in rows).items())),
        "av_offset_ms": _stats([r["av_offset_ms"] for r in rows]),
        "drift_ppm": _stats([r["drift_ppm"] for r in rows]),
        "text_offset_ms": _stats([r["text_offset_ms"] for r in rows if r.get("has_transcript")]),
        "standards": standards,
        "residuals": residuals,
        "num_with_truth": len(with_truth),
        "row_problems": dict(sorted(problems.items())),
        "worst": worst,
        "gate": gate_result,
    }


def format_terminal_summary(summary: dict, *, out_dir: str = "") -> str:
    """A few lines for the terminal: counts, offsets, standards, gate verdict and where the report is."""
    def fmt(stats: dict, unit: str) -> str:
        if not stats["count"]:
            return f"no values ({stats['null']} null)"
        return (
            f"median {stats['median']}{unit}, p95 |x| {stats['p95_abs']}{unit}, max |x| {stats['max_abs']}{unit}"
            f" ({stats['count']} clips, {stats['null']} null)"
        )

    lines = [
        f"clips       {summary['num_clips']} reported, {summary['num_skipped']} skipped"
        + (f" {summary['skipped_by_reason']}" if summary["skipped_by_reason"] else ""),
        f"A/V offset  {fmt(summary['av_offset_ms'], ' ms')}   (> 0: audio late)",
        f"drift       {fmt(summary['drift_ppm'], ' ppm')}",
        f"text offset {fmt(summary['text_offset_ms'], ' ms')}   (> 0: stamps late)",
    ]
    for s in summary["standards"].values():
        lines.append(f"{s['name']:<28} within {s['within']}, outside {s['outside']}, unknown {s['unknown']}")
    if summary["residuals"]:
        r = summary["residuals"]["av_offset_ms"]
        lines.append(f"vs truth    A/V residual {fmt(r, ' ms')}")
    for w in summary["worst"][:3]:
        lines.append(f"worst       {w['key']}  {w['offset_ms']} ms  ({w['shard']})")
    g = summary["gate"]
    if g["fail_over_ms"] is not None:
        verdict = "FAIL" if g["exit_code"] else "pass"
        lines.append(
            f"gate        {verdict}: {len(g['failed'])} clip(s) over {g['fail_over_ms']} ms on {'/'.join(g['fields'])}; "
            f"{len(g['abstained'])} abstained (not failing)"
        )
    if out_dir:
        lines.append(f"report      {out_dir}/report.html")
    return "\n".join(lines)
