"""``avalign preprocess``: raw media or shards → aligned WebDataset shards (local processes or Ray).

Re-exports only, imported on first use (PEP 562), so that ``avalign --help`` stays fast.
"""
from __future__ import annotations

from avalign._lazy import lazy_exports

_EXPORTS = {
    "InputPlan": "avalign.preprocess._inputs",
    "InputSample": "avalign.preprocess._inputs",
    "LOCK_NAME": "avalign.preprocess._lock",
    "PreprocessResult": "avalign.preprocess._run",
    "Reencoded": "avalign.preprocess._reencode",
    "SampleOptions": "avalign.preprocess._sample",
    "add_parser": "avalign.preprocess._cli",
    "audio_edit_list": "avalign.preprocess._mp4_edits",
    "format_result": "avalign.preprocess._cli",
    "is_transcript_json": "avalign.preprocess._inputs",
    "list_inputs": "avalign.preprocess._inputs",
    "output_lock": "avalign.preprocess._lock",
    "plan_shards": "avalign.preprocess._run",
    "preprocess": "avalign.preprocess._run",
    "process_sample": "avalign.preprocess._sample",
    "read_members": "avalign.preprocess._inputs",
    "reencode_mp4": "avalign.preprocess._reencode",
    "skip_priming": "avalign.preprocess._mp4_edits",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
