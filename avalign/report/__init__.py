"""``avalign report``: per-clip alignment facts, dataset summary, lip-sync standards and a gate. Re-exports only."""
from avalign.report._collect import clip_row, collect, measure_clip
from avalign.report._inputs import ClipInput, Skipped, iter_inputs
from avalign.report._probe import probe_container
from avalign.report._report import ReportResult, load_truth, run_report
from avalign.report._standards import STANDARDS, LipSyncTolerance, lipsync_status, to_standard_offset_ms, within_tolerance
from avalign.report._summary import format_terminal_summary, gate, summarize

__all__ = sorted(
    [
        "ClipInput",
        "LipSyncTolerance",
        "ReportResult",
        "STANDARDS",
        "Skipped",
        "clip_row",
        "collect",
        "format_terminal_summary",
        "gate",
        "iter_inputs",
        "lipsync_status",
        "load_truth",
        "measure_clip",
        "probe_container",
        "run_report",
        "summarize",
        "to_standard_offset_ms",
        "within_tolerance",
    ]
)
