"""``avalign report``: per-clip alignment facts, dataset summary, lip-sync standards and a gate.

Re-exports only, imported on first use (PEP 562), so that ``avalign --help`` stays fast.
"""
from __future__ import annotations

from avalign._lazy import lazy_exports

_EXPORTS = {
    "ABSTAIN_COLOUR": "avalign.report._plots",
    "COLOURS": "avalign.report._clip_page",
    "ClipInput": "avalign.report._inputs",
    "LipSyncTolerance": "avalign.report._standards",
    "ReportResult": "avalign.report._report",
    "STANDARDS": "avalign.report._standards",
    "VALUE_COLOUR": "avalign.report._plots",
    "Skipped": "avalign.report._inputs",
    "add_parser": "avalign.report._cli",
    "clip_page_name": "avalign.report._clip_page",
    "clip_row": "avalign.report._collect",
    "collect": "avalign.report._collect",
    "count_clips": "avalign.report._inputs",
    "format_terminal_summary": "avalign.report._summary",
    "gate": "avalign.report._summary",
    "gather_clip_view": "avalign.report._clip_view",
    "iter_inputs": "avalign.report._inputs",
    "lipsync_status": "avalign.report._standards",
    "load_truth": "avalign.report._report",
    "measure_clip": "avalign.report._collect",
    "probe_container": "avalign.report._probe",
    "run_report": "avalign.report._report",
    "summarize": "avalign.report._summary",
    "truth_coverage": "avalign.report._summary",
    "to_standard_offset_ms": "avalign.report._standards",
    "within_tolerance": "avalign.report._standards",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
