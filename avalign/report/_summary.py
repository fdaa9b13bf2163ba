"""Dataset summary, the worst clips, and the ``--fail-over-ms`` gate.

Gate rule: a clip **fails** when ``|av_offset_ms| > fail_over_ms`` or ``|text_offset_ms| > fail_over_ms``
(the fields chosen by ``gate_on``). A null offset (the estimator abstained) does not fail its clip:
such clips are listed as ``abstained`` so they can be inspected. The gate as a whole fails, with a
reason, when it cannot vouch for the data::

    no_media              the input holds no clip at all (empty directory, only stray files)
    nothing_measured      clips were read but none has a gated offset (all abstained or all skipped)
    too_many_abstentions  abstained clips / gated clips > max_abstain (default 0.5)

A clip counts as gated when it has a gated field to check: ``av_offset_ms`` for every clip with video,
``text_offset_ms`` for clips with a transcript. Skipped and corrupt inputs are counted in the summary;
they reach the exit code only through ``no_media`` / ``nothing_measured``.
"""
from __future__ import annotations

import logging
import os
from collections import Counter
from typing import Literal, Optional, Sequence

import numpy as np

from avalign.report._inputs import Skipped
from avalign.report._standards import STANDARDS

logger = logging.getLogger(__name__)

__all__ = ["CORRUPT_REASONS", "DEFAULT_MAX_ABSTAIN", "GateOn", "NOT_MEDIA_REASONS", "badness_ms", "check_gate_options",
           "clip_flags", "flagged_rows", "format_terminal_summary", "gate", "summarize", "truth_coverage"]

GateOn = Literal["av", "text", "any"]
_GATE_FIELDS = {"av": ("av_offset_ms",), "text": ("text_offset_ms",), "any": ("av_offset_ms", "text_offset_ms")}
_WORST_COUNT = 10
CORRUPT_REASONS = ("decode", "error", "missing_audio", "missing_video", "read", "timeout", "too_large", "transcript")
"""Skip reasons counted as ``corrupt`` in the summary: media or a transcript that was found but cannot be used."""
NOT_MEDIA_REASONS = ("unknown_extension", "missing_media")
"""Skip reasons of inputs that are not media: an input with only these holds no media (gate reason ``no_media``)."""


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


DEFAULT_MAX_ABSTAIN = 0.5
"""Largest share of gated clips that may abstain before the gate fails (``--max-abstain``)."""


def _gated_fields(row: dict, fields: Sequence[str]) -> list[str]:
    """The fields of ``fields`` that ``row`` is expected to have: text only with a transcript, A/V only with video."""
    out = []
    for f in fields:
        if f == "text_offset_ms" and not row.get("has_transcript"):
            continue
        if f == "av_offset_ms" and row.get("has_video") is False:
            continue
        out.append(f)
    return out


def check_gate_options(*, fail_over_ms: Optional[float], gate_on: str, max_abstain: float) -> None:
    """Raise ``ValueError`` for a bad gate option (called before any work)."""
    if gate_on not in _GATE_FIELDS:
        raise ValueError(f"gate_on must be one of {list(_GATE_FIELDS)}, got {gate_on!r}")
    if fail_over_ms is not None and not (fail_over_ms >= 0):
        raise ValueError(f"fail_over_ms must be >= 0, got {fail_over_ms = }")
    if not (0.0 <= max_abstain <= 1.0):
        raise ValueError(f"max_abstain must be a share in [0, 1], got {max_abstain = }; hint: 0.5 fails when over half abstain")


def gate(rows: Sequence[dict], *, fail_over_ms: Optional[float], gate_on: GateOn = "any",
         max_abstain: float = DEFAULT_MAX_ABSTAIN, skipped: Sequence[Skipped] = ()) -> dict:
    """Apply the gate (see the module docstring) to report ``rows``; ``skipped`` are the inputs not reported.

    Returns:
        ``{"fail_over_ms", "gate_on", "fields", "max_abstain", "failed": [{key, shard, offset_ms}],
        "abstained": [{key, shard, fields, reasons}], "num_gated", "num_measured", "abstained_share",
        "reasons": [{"code", "message"}], "exit_code"}``. ``reasons`` are filled with or without a gate;
        ``exit_code`` is 1 when a gate is set (``fail_over_ms`` not None) and a clip is over it or ``reasons`` is
        not empty, else 0.
    """
    check_gate_options(fail_over_ms=fail_over_ms, gate_on=gate_on, max_abstain=max_abstain)
    fields = _GATE_FIELDS[gate_on]
    failed, abstained = [], []
    num_gated = num_measured = 0
    for row in rows:
        expected = _gated_fields(row, fields)
        if not expected:
            continue
        num_gated += 1
        nulls = [f for f in expected if row.get(f) is None]
        if len(nulls) < len(expected):
            num_measured += 1
        if nulls:
            why = row.get("abstain_reasons") or {}
            abstained.append({"key": row["key"], "shard": row["shard"], "fields": nulls,
                              "reasons": [why.get(f) or "unknown" for f in nulls]})
        worst = badness_ms(row, fields=fields)
        if fail_over_ms is not None and worst is not None and worst > fail_over_ms:
            failed.append({"key": row["key"], "shard": row["shard"], "offset_ms": worst})
    failed.sort(key=lambda f: -f["offset_ms"])
    share = len(abstained) / num_gated if num_gated else None
    num_skipped = len(skipped)
    media_skipped = [s for s in skipped if s.reason not in NOT_MEDIA_REASONS]
    reasons = []  # found with or without a gate; they decide the exit code only when a gate is set
    if not rows and not media_skipped:
        stray = Counter(s.reason for s in skipped)  # inputs that are not media (a .mxf, a transcript alone)
        listed = f"; {num_skipped} input(s) that are not media: " + ", ".join(f"{r} {n}" for r, n in sorted(stray.items()))
        reasons.append({"code": "no_media", "message": "the input holds no media: nothing was reported"
                        + (listed if num_skipped else " or skipped")})
    elif num_measured == 0:
        reasons.append({"code": "nothing_measured", "message":
                        f"no clip has a measured {' or '.join(fields)}: {len(rows)} clip(s) reported, "
                        f"{len(abstained)} abstained, {num_skipped} input(s) skipped"})
    elif share is not None and share > max_abstain:
        reasons.append({"code": "too_many_abstentions", "message":
                        f"{len(abstained)} of {num_gated} clip(s) abstained ({share:.0%}), over --max-abstain "
                        f"{max_abstain:g} ({max_abstain:.0%}){_abstentions_by_field(abstained, rows, fields, max_abstain)}"})
    return {
        "fail_over_ms": fail_over_ms,
        "gate_on": gate_on,
        "fields": list(fields),
        "max_abstain": max_abstain,
        "failed": failed,
        "abstained": abstained,
        "num_gated": num_gated,
        "num_measured": num_measured,
        "abstained_share": None if share is None else round(share, 4),
        "reasons": reasons,
        "exit_code": 1 if fail_over_ms is not None and (failed or reasons) else 0,
    }


def _abstentions_by_field(abstained: list[dict], rows: Sequence[dict], fields: Sequence[str], max_abstain: float) -> str:
    """With both offsets gated: which abstained, and how often for what reason (``": av_offset_ms null on 5
    (no_visual_events 3, …), text_offset_ms null on 1 (…)"``), and, when the transcript offsets alone are within
    ``max_abstain``, the hint to gate on them (speech over footage without flash/sound events: A/V always abstains).
    ``""`` with one gated field (its count is the message's)."""
    if len(fields) < 2:
        return ""
    parts, text_nulls = [], 0
    for field in fields:
        why = Counter(reason for a in abstained for f, reason in zip(a["fields"], a["reasons"]) if f == field)
        if field == "text_offset_ms":
            text_nulls = sum(why.values())
        if why:
            parts.append(f"{field} null on {sum(why.values())} ("
                         + ", ".join(f"{reason} {n}" for reason, n in why.most_common()) + ")")
    with_text = sum(1 for row in rows if _gated_fields(row, ("text_offset_ms",)))
    hint = ""
    if with_text and text_nulls / with_text <= max_abstain:  # (the share over both is over it: the A/V offset's)
        hint = (f"; hint: the transcript offset was measured on {with_text - text_nulls} of {with_text} clip(s) with a "
                "transcript: where the footage has no flash/sound events seen and heard together (talking heads, "
                "speech over other video) the A/V offset abstains by design: gate on the transcript offset alone "
                "with --gate-on text")
    return (": " + ", ".join(parts) if parts else "") + hint


def clip_flags(row: dict, gate_result: dict) -> list[str]:
    """Why ``row`` deserves a look (empty: it does not): over the gate, outside a lip-sync window, abstained."""
    flags = []
    failed = {(f["key"], f["shard"]): f["offset_ms"] for f in gate_result["failed"]}
    if (row["key"], row["shard"]) in failed:
        flags.append(f"|offset| {failed[row['key'], row['shard']]:g} ms over the gate ({gate_result['fail_over_ms']:g} ms)")
    outside = [t.name for t in STANDARDS if row["lipsync"].get(t.key) is False]
    if outside:
        flags.append("A/V offset outside " + ", ".join(outside))
    for field, reason in (row.get("abstain_reasons") or {}).items():
        flags.append(f"{field} abstained ({reason})")
    return flags


def flagged_rows(rows: Sequence[dict], gate_result: dict) -> list[tuple[dict, list[str]]]:
    """``(row, flags)`` of every flagged row: gate failures first, then by largest |offset|, abstentions last."""
    flagged = [(r, clip_flags(r, gate_result)) for r in rows]
    failed = {(f["key"], f["shard"]) for f in gate_result["failed"]}

    def order(item):
        row = item[0]
        worst = badness_ms(row)
        return ((row["key"], row["shard"]) not in failed, worst is None, -(worst or 0.0), row["key"])

    return sorted(((r, f) for r, f in flagged if f), key=order)


def summarize(rows: Sequence[dict], skipped: Sequence[Skipped], gate_result: dict) -> dict:
    """Dataset figures: counts, statistics per measure, standards pass counts, residuals, worst clips, skips."""
    # A/V figures are over the clips with video: an audio-only clip has no A/V offset to abstain from
    with_video = [r for r in rows if _gated_fields(r, ("av_offset_ms",))]
    standards = {}
    for t in STANDARDS:
        verdicts = [r["lipsync"][t.key] for r in with_video]
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
        # Over the clips whose truth gives the field: a null residual there is an abstention (a truth file that gives
        # no A/V offset leaves the A/V residual with no clip, not with every clip "abstained").
        residuals = {f: _stats([r["residual"][f] for r in with_truth if (r.get("truth") or {}).get(f) is not None])
                     for f in ("av_offset_ms", "drift_ppm", "text_offset_ms")}
    problems = Counter(p.split(":")[0] for r in rows for p in r["problems"])
    durations = [r["duration_seconds"] for r in rows if r.get("duration_seconds")]
    return {
        "num_clips": len(rows),
        "total_hours": round(sum(durations) / 3600.0, 6),
        "num_words": sum(int(r.get("num_words") or 0) for r in rows),
        "abstain_reasons": {
            f: dict(sorted(Counter((r.get("abstain_reasons") or {}).get(f) or "unknown" for r in rows
                                   if r.get(f) is None and f in _gated_fields(r, (f,))).items()))
            for f in ("av_offset_ms", "text_offset_ms")
        },
        "num_skipped": len(skipped),
        "skipped_by_reason": dict(sorted(Counter(s.reason for s in skipped).items())),
        "corrupt": sum(s.reason in CORRUPT_REASONS for s in skipped),
        "sources": dict(sorted(Counter(r["source"] for r in rows).items())),
        "av_offset_ms": _stats([r["av_offset_ms"] for r in with_video]),
        "drift_ppm": _stats([r["drift_ppm"] for r in with_video]),
        "text_offset_ms": _stats([r["text_offset_ms"] for r in rows if _gated_fields(r, ("text_offset_ms",))]),
        "standards": standards,
        "residuals": residuals,
        "num_with_truth": len(with_truth),
        "row_problems": dict(sorted(problems.items())),
        "worst": worst,
        "gate": gate_result,
    }


def _worst_offsets(worst: dict) -> str:
    """``"text 192.461 ms (A/V -5.47 ms)"``: a worst clip's larger offset first, signed and named, then the other."""
    names = {"av_offset_ms": "A/V", "text_offset_ms": "text"}
    known = [f for f in names if worst.get(f) is not None]
    if not known:
        return f"{worst['offset_ms']} ms"
    first = max(known, key=lambda f: abs(worst[f]))
    text = f"{names[first]} {worst[first]} ms"
    others = [f"{names[f]} {worst[f]} ms" for f in known if f != first]
    return text + (f" ({', '.join(others)})" if others else "")


_TRUTH_KEYS_SHOWN = 5
"""Keys listed by :func:`truth_coverage` (the first, in order); the counts give the rest."""


def truth_coverage(rows: Sequence[dict], truth: dict) -> dict:
    """How a truth file's keys met the report's clips: a mistyped or differently keyed truth file must not just leave
    the residuals out. ``{"num_truth_keys", "num_clips", "num_clips_with_truth", "clips_without_truth": [first keys],
    "unmatched_truth_keys": [first keys]}``."""
    keys = {row["key"] for row in rows}
    without = [row["key"] for row in rows if row.get("truth") is None]
    unmatched = [key for key in truth if key not in keys]
    return {
        "num_truth_keys": len(truth),
        "num_clips": len(rows),
        "num_clips_with_truth": len(rows) - len(without),
        "clips_without_truth": without[:_TRUTH_KEYS_SHOWN],
        "unmatched_truth_keys": unmatched[:_TRUTH_KEYS_SHOWN],
        "num_unmatched_truth_keys": len(unmatched),
    }


def _truth_line(coverage: dict) -> str:
    """``"truth       2 of 3 clips have a truth entry; none for: c1; 1 truth key(s) match no clip: zz"``."""
    def listed(keys: list, total: int) -> str:
        return ", ".join(keys) + (f", … ({total - len(keys)} more)" if total > len(keys) else "")

    line = f"truth       {coverage['num_clips_with_truth']} of {coverage['num_clips']} clips have a truth entry"
    if coverage["clips_without_truth"]:
        missing = coverage["num_clips"] - coverage["num_clips_with_truth"]
        line += f"; none for: {listed(coverage['clips_without_truth'], missing)}"
    if coverage["num_unmatched_truth_keys"]:
        line += (f"; {coverage['num_unmatched_truth_keys']} truth key(s) match no clip: "
                 f"{listed(coverage['unmatched_truth_keys'], coverage['num_unmatched_truth_keys'])}")
    if not coverage["num_clips_with_truth"] and coverage["num_clips"]:
        line += " (hint: truth keys are the samples' keys, as the clip table lists them)"
    return line


def format_terminal_summary(summary: dict, *, out_dir: str = "") -> str:
    """A few lines for the terminal: counts, offsets, standards, gate verdict and where the report is."""
    def fmt(stats: dict, unit: str, nothing: str = "no clip measured") -> str:
        if not stats["count"] and not stats["null"]:
            return f"none: {nothing}"  # not "none answered (0 abstained)"
        if not stats["count"]:
            return f"none answered ({stats['null']} abstained)"
        return (
            f"median {stats['median']}{unit}, p95 |x| {stats['p95_abs']}{unit}, max |x| {stats['max_abs']}{unit}"
            f" ({stats['count']} clips, {stats['null']} null)"
        )

    lines = [
        f"clips       {summary['num_clips']} reported, {summary['num_skipped']} skipped"
        + (f" {summary['skipped_by_reason']}" if summary["skipped_by_reason"] else ""),
        f"totals      {summary['total_hours'] * 3600.0:.1f} s of media ({summary['total_hours']:.3f} h), "
        f"{summary['num_words']} words",
        f"A/V offset  {fmt(summary['av_offset_ms'], ' ms')}   (> 0: audio late)",
        f"drift       {fmt(summary['drift_ppm'], ' ppm')}",
        f"text offset {fmt(summary['text_offset_ms'], ' ms', 'no clip has a transcript')}   (> 0: stamps late)",
    ]
    for s in summary["standards"].values():
        lines.append(f"{s['name']:<28} within {s['within']}, outside {s['outside']}, unknown {s['unknown']}")
    if summary.get("truth_coverage"):  # --truth given: how its keys met the clips (before the residuals they make)
        lines.append(_truth_line(summary["truth_coverage"]))
    if summary["residuals"]:  # A/V always; drift and text where a residual exists (a truth file may not give them)
        for field, name, unit in (("av_offset_ms", "A/V", " ms"), ("drift_ppm", "drift", " ppm"),
                                  ("text_offset_ms", "text", " ms")):
            r = summary["residuals"][field]
            if field == "av_offset_ms" or r["count"] or r["null"]:
                lines.append(f"vs truth    {name} residual {fmt(r, unit, f'--truth gives no {field}')}")
    for w in summary["worst"][:3]:
        lines.append(f"worst       {w['key']}  {_worst_offsets(w)}  ({w['shard']})")
    g = summary["gate"]
    if g["fail_over_ms"] is not None:
        verdict = "FAIL" if g["exit_code"] else "pass"
        lines.append(
            f"gate        {verdict}: {len(g['failed'])} clip(s) over {g['fail_over_ms']} ms on {'/'.join(g['fields'])}; "
            f"{len(g['abstained'])} of {g['num_gated']} abstained (at most {g['max_abstain']:.0%} allowed)"
        )
        for reason in g["reasons"]:
            lines.append(f"gate        FAIL ({reason['code']}): {reason['message']}")
    else:
        for reason in g["reasons"]:
            lines.append(f"warning     {reason['code']}: {reason['message']} (no gate: exit 0; see --fail-over-ms)")
    if summary.get("num_flagged"):
        pages = summary.get("num_clip_pages", 0)
        where = f", pages in {os.path.join(os.path.normpath(out_dir), 'clips')}/" if out_dir and pages else ""
        lines.append(f"flagged     {summary['num_flagged']} clip(s), {pages} with a page{where}")
    if out_dir:
        lines.append(f"report      {os.path.join(os.path.normpath(out_dir), 'report.html')}")
    return "\n".join(lines)
