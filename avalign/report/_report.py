"""``run_report``: collect rows, summarise, gate, and write ``report.json``, ``report.html`` and the plots."""
from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass
from typing import Literal, Optional

from avalign.report._collect import collect
from avalign.report._summary import DEFAULT_MAX_ABSTAIN, GateOn, check_gate_options, format_terminal_summary, gate, summarize
from loaders._video import DEFAULT_MAX_PIXELS

logger = logging.getLogger(__name__)

__all__ = ["ReportResult", "load_truth", "run_report"]


@dataclass(frozen=True)
class ReportResult:
    """What :func:`run_report` wrote and decided."""

    report: dict
    """The ``report.json`` content: ``{"input", "truth", "clips", "skipped", "summary"}``."""
    out_dir: str
    """Where the files are."""
    files: tuple[str, ...]
    """Paths written (``report.json``, ``report.html``, the PNG plots)."""
    exit_code: int
    """1 when the gate failed (a clip over ``fail_over_ms``), else 0."""
    terminal_summary: str
    """A few lines for the terminal."""


def load_truth(path: str) -> dict:
    """``{key: {...}}`` from a truth file ``{"clips": {key: {"av_offset_ms", "drift_ppm", "text_offset_ms", ...}}}``.

    Raises:
        FileNotFoundError: no such file.
        ValueError: not JSON, or no ``clips`` object.
    """
    if not os.path.exists(path):
        raise FileNotFoundError(f"truth file not found: {path!r}")
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except json.JSONDecodeError as e:
        raise ValueError(f"truth file {path!r} is not valid JSON: {e}") from e
    clips = data.get("clips") if isinstance(data, dict) else None
    if not isinstance(clips, dict):
        raise ValueError(
            f"truth file {path!r} has no 'clips' object; expected {{\"clips\": {{key: {{\"av_offset_ms\": ...}}}}}}"
        )
    return clips


def run_report(
    input_path: str,
    *,
    out_dir: str,
    fail_over_ms: Optional[float] = None,
    gate_on: GateOn = "any",
    truth_path: Optional[str] = None,
    sample_rate: int = 16000,
    progress: bool = False,
    on_error: Literal["skip", "raise"] = "skip",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_abstain: float = DEFAULT_MAX_ABSTAIN,
) -> ReportResult:
    """Report on every clip of ``input_path`` and write ``out_dir/report.{json,html}`` and ``out_dir/*.png``.

    Args:
        input_path: preprocessed shards (``align.json`` is used, nothing decoded), raw WebDataset shards,
            a directory of media with sidecar transcripts (same stem), or one media file.
        out_dir: output directory (created).
        fail_over_ms: gate threshold: the exit code is 1 when any clip's |offset| exceeds it, or when the gate
            cannot vouch for the data (no media, nothing measured, abstentions over ``max_abstain``).
        gate_on: which offsets the gate checks: ``"av"``, ``"text"`` or ``"any"`` (both).
        truth_path: a truth file; adds ``residual = measured − true`` per clip.
        sample_rate: rate of the sample indices when clips are measured.
        progress: show a progress bar on stderr.
        on_error: ``"skip"`` counts bad inputs in ``report.json["skipped"]`` (each logged once, reason codes of
            ``loaders.errors.REASONS``); ``"raise"`` raises at the first one and writes nothing.
        max_pixels: skip media whose frames have more pixels (width × height) as ``too_large`` (default 3840 × 2160).
        max_abstain: the gate fails when more than this share of gated clips abstained (default 0.5).

    Raises:
        SampleError: with ``on_error="raise"``, the first bad input (its shard, key and reason attached).
        ValueError: a bad option (``gate_on``, ``fail_over_ms``, ``on_error``, ``max_pixels``) or truth file.

    Example:
        >>> result = run_report("sample_data/shards", out_dir="/tmp/report", fail_over_ms=60)  # doctest: +SKIP
        >>> result.exit_code                                                                      # doctest: +SKIP
    """
    from avalign.report._html import render_html
    from avalign.report._plots import make_plots

    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels <= 0:
        raise ValueError(f"max_pixels must be a positive int (width x height), got {max_pixels = !r}; try {DEFAULT_MAX_PIXELS}")
    truth = load_truth(truth_path) if truth_path else None
    check_gate_options(fail_over_ms=fail_over_ms, gate_on=gate_on, max_abstain=max_abstain)  # before any work
    rows, skipped = collect(input_path, sample_rate=sample_rate, truth=truth, progress=progress, on_error=on_error,
                            max_pixels=max_pixels)
    gate_check = gate(rows, fail_over_ms=fail_over_ms, gate_on=gate_on, max_abstain=max_abstain, skipped=skipped)
    report = {
        "input": input_path,
        "truth": truth_path,
        "clips": rows,
        "skipped": [s.to_json() for s in skipped],
        "summary": summarize(rows, skipped, gate_check),
    }
    os.makedirs(out_dir, exist_ok=True)
    plots = make_plots(rows)
    files = []
    for name, png in plots.items():
        path = os.path.join(out_dir, name)
        with open(path, "wb") as f:
            f.write(png)
        files.append(path)
    json_path = os.path.join(out_dir, "report.json")
    with open(json_path, "w", encoding="utf-8") as f:
        json.dump(report, f, indent=1, allow_nan=False)
    html_path = os.path.join(out_dir, "report.html")
    with open(html_path, "w", encoding="utf-8") as f:
        f.write(render_html(report, plots))
    files = [json_path, html_path, *files]
    logger.info("report: %d clips, %d skipped, written to %s", len(rows), len(skipped), out_dir)
    return ReportResult(
        report=report,
        out_dir=out_dir,
        files=tuple(files),
        exit_code=gate_check["exit_code"],
        terminal_summary=format_terminal_summary(report["summary"], out_dir=out_dir),
    )
