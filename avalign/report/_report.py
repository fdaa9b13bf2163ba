"""``run_report``: collect rows, summarise, gate, and write ``report.json``, ``report.html`` and the plots."""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import dataclass
from typing import Literal, Optional

from avalign.report._collect import MEASURED_FIELDS, collect
from avalign.report._files import write_atomic
from avalign.report._summary import (
    DEFAULT_MAX_ABSTAIN,
    GateOn,
    check_gate_options,
    flagged_rows,
    format_terminal_summary,
    gate,
    summarize,
    truth_coverage,
)
from loaders.media import DEFAULT_MAX_PIXELS

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
        ValueError: not JSON, no ``clips`` object, an entry that is not an object, or an ``av_offset_ms`` /
            ``drift_ppm`` / ``text_offset_ms`` that is not null or a finite number (naming the key).
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
    for key, entry in clips.items():
        if not isinstance(entry, dict):
            raise ValueError(f"truth file {path!r}: clips[{key!r}] must be an object such as "
                             f"{{\"av_offset_ms\": 120.0}}, got {entry!r:.80}")
        for name in MEASURED_FIELDS:  # the values residuals are computed against
            value = entry.get(name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise ValueError(f"truth file {path!r}: clips[{key!r}][{name!r}] must be null or a finite number "
                                 f"(milliseconds / ppm), got {value!r:.80}")
    return clips


class _Silence(logging.Filter):
    """Drops records: the second pass over the inputs must not log their skips again."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


_SECOND_PASS_LOGGERS = ("avalign.report._inputs", "loaders._shards", "loaders._transcripts")


def _write_clip_pages(input_path: str, out_dir: str, rows: list[dict], *, sample_rate: int, max_pixels: int,
                      progress: bool = False) -> list[str]:
    """A page for each of ``rows`` (``row["page"]`` set to its relative path); reads the inputs a second time
    and decodes only these clips. A clip that cannot be decoded again gets a page saying so."""
    from avalign.report._inputs import iter_inputs

    wanted = {(r["key"], r["shard"]): i for i, r in enumerate(rows)}
    files: list[str] = []
    if not wanted:
        return files
    silence = _Silence()
    for name in _SECOND_PASS_LOGGERS:
        logging.getLogger(name).addFilter(silence)
    bar = None
    if progress:
        from avalign._progress import Progress

        bar = Progress(total=len(wanted), desc="clip pages", unit="page")
    try:
        files += _pages_from_inputs(iter_inputs(input_path, on_error="skip", exclude_dir=out_dir), out_dir, rows, wanted,
                                    sample_rate=sample_rate, max_pixels=max_pixels, on_page=bar.update if bar else None)
    finally:
        for name in _SECOND_PASS_LOGGERS:
            logging.getLogger(name).removeFilter(silence)
        if bar is not None:
            bar.close()
    return files


def _pages_from_inputs(items, out_dir: str, rows: list[dict], wanted: dict, *, sample_rate: int, max_pixels: int,
                       on_page=None) -> list[str]:
    from avalign.report._clip_page import clip_page_name, write_clip_page
    from avalign.report._clip_view import gather_clip_view
    from avalign.report._collect import measure_clip
    from avalign.report._inputs import ClipInput

    files: list[str] = []
    taken: set[str] = set()
    for item in items:
        if not isinstance(item, ClipInput) or (item.key, item.shard) not in wanted:
            continue
        index = wanted.pop((item.key, item.shard))
        row, view, error = rows[index], None, ""
        try:
            if item.media is None:
                error = "the sample carries no media member (align.json only): facts without figures"
            else:
                record = item.align if item.align is not None else measure_clip(item, sample_rate=sample_rate, max_pixels=max_pixels)
                view = gather_clip_view(item, record)
        except Exception as e:  # a page without figures, saying why, rather than no report
            error = f"{type(e).__name__}: {e}"
            logger.warning("%s: clip page without figures: %s", item.key, error, exc_info=not isinstance(e, ValueError))
        page = clip_page_name(row["key"], taken)
        taken.add(page)
        files += write_clip_page(out_dir, page, row, view, error=error)
        row["page"] = page
        if on_page is not None:
            on_page(1)
        if not wanted:
            break
    return files


def _remove_earlier_files(out_dir: str, written: list[str]) -> None:
    """Remove the plots and clip-page files an earlier report left in ``out_dir`` that this one did not write (a
    page of a clip no longer flagged, the residual plot of a run with ``--truth``): the directory holds one report.
    Only names the report gives its files are touched (``PLOT_FILES``, ``CLIP_PAGE_FILE`` in ``clips/``)."""
    from avalign.report._clip_page import CLIP_PAGE_FILE
    from avalign.report._plots import PLOT_FILES

    kept = {os.path.realpath(p) for p in written}
    clips = os.path.join(out_dir, "clips")
    candidates = [os.path.join(out_dir, name) for name in PLOT_FILES]
    if os.path.isdir(clips):
        candidates += [os.path.join(clips, n) for n in sorted(os.listdir(clips)) if CLIP_PAGE_FILE.fullmatch(n)]
    removed = [p for p in candidates if os.path.isfile(p) and os.path.realpath(p) not in kept]
    for path in removed:
        os.remove(path)
    if removed:
        logger.info("%s: removed %d file(s) of an earlier report (%s)", out_dir, len(removed),
                    ", ".join(os.path.relpath(p, out_dir) for p in removed[:3]) + (", ..." if len(removed) > 3 else ""))


def _make_out_dir(out_dir: str) -> None:
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ValueError(f"--out {out_dir!r} exists and is not a directory; hint: pass a directory path")
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise ValueError(f"cannot create --out {out_dir!r}: {e.strerror}; hint: pass a writable directory path") from e


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
    clip_pages: int = 50,
) -> ReportResult:
    """Report on every clip of ``input_path`` and write ``out_dir/report.{json,html}`` and ``out_dir/*.png``.

    Args:
        input_path: preprocessed shards (``align.json`` is used, nothing decoded), raw WebDataset shards,
            a directory of media with sidecar transcripts (same stem), or one media file.
        out_dir: output directory (created). The plots and clip pages of an earlier report there that this one
            does not write again are removed (other files are left alone).
        fail_over_ms: gate threshold: the exit code is 1 when any clip's |offset| exceeds it, or when the gate
            cannot vouch for the data (no media, nothing measured, abstentions over ``max_abstain``).
        gate_on: which offsets the gate checks: ``"av"``, ``"text"`` or ``"any"`` (both).
        truth_path: a truth file; adds ``residual = measured − true`` per clip.
        sample_rate: rate of the sample indices when clips are measured.
        progress: show progress on stderr (clips, then clip pages): a bar with total and ETA on a terminal,
            else a plain line every 10 s.
        on_error: ``"skip"`` counts bad inputs in ``report.json["skipped"]`` (each logged once, reason codes of
            ``loaders.errors.REASONS``); ``"raise"`` raises at the first one and writes nothing.
        max_pixels: skip media whose frames have more pixels (width × height) as ``too_large`` (default 3840 × 2160).
        max_abstain: the gate fails when more than this share of gated clips abstained (default 0.5).
        clip_pages: write a page (``out_dir/clips/<key>-<hash>.html`` + PNGs, linked from the clip table) for at most
            this many flagged clips (over the gate, outside a lip-sync window, abstained), gate failures first,
            then worst first. Each page decodes its clip again (and measures it again when it was measured).

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
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"--sample-rate must be a positive int (Hz), got {sample_rate!r}; try 16000")
    if isinstance(clip_pages, bool) or not isinstance(clip_pages, int) or clip_pages < 0:
        raise ValueError(f"--clip-pages must be an int >= 0 (0: no clip pages), got {clip_pages!r}")
    truth = load_truth(truth_path) if truth_path else None
    check_gate_options(fail_over_ms=fail_over_ms, gate_on=gate_on, max_abstain=max_abstain)  # before any work
    _make_out_dir(out_dir)  # also before any work: a bad --out must not fail after every clip was measured
    rows, skipped = collect(input_path, sample_rate=sample_rate, truth=truth, progress=progress, on_error=on_error,
                            max_pixels=max_pixels, exclude_dir=out_dir)  # --out inside a media directory is no input
    gate_check = gate(rows, fail_over_ms=fail_over_ms, gate_on=gate_on, max_abstain=max_abstain, skipped=skipped)
    flagged = flagged_rows(rows, gate_check)
    for row, flags in flagged:
        row["flags"] = flags
    report = {
        "input": input_path,
        "truth": truth_path,
        "clips": rows,
        "skipped": [s.to_json() for s in skipped],
        "summary": summarize(rows, skipped, gate_check),
    }
    if truth is not None:
        report["summary"]["truth_coverage"] = truth_coverage(rows, truth)
    files = _write_clip_pages(input_path, out_dir, [r for r, _ in flagged[:clip_pages]], sample_rate=sample_rate,
                              max_pixels=max_pixels, progress=progress)
    report["summary"]["num_flagged"] = len(flagged)
    report["summary"]["num_clip_pages"] = sum(1 for r in rows if r.get("page"))
    plots = make_plots(rows)
    for name, png in plots.items():  # each file whole or not at all (Ctrl-C included): avalign.report._files
        path = os.path.join(out_dir, name)
        write_atomic(path, png)
        files.append(path)
    json_path = os.path.join(out_dir, "report.json")
    write_atomic(json_path, json.dumps(report, indent=1, allow_nan=False))
    html_path = os.path.join(out_dir, "report.html")
    write_atomic(html_path, render_html(report, plots))
    files = [json_path, html_path, *files]
    _remove_earlier_files(out_dir, files)
    logger.info("report: %d clips, %d skipped, written to %s", len(rows), len(skipped), out_dir)
    return ReportResult(
        report=report,
        out_dir=out_dir,
        files=tuple(files),
        exit_code=gate_check["exit_code"],
        terminal_summary=format_terminal_summary(report["summary"], out_dir=out_dir),
    )
