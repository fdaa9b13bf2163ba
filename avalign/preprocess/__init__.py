"""``avalign preprocess``: raw media or shards → aligned WebDataset shards (local processes or Ray).

Re-exports only, imported on first use (PEP 562), so that ``avalign --help`` stays fast.
"""
from __future__ import annotations

import importlib

_EXPORTS = {
    "InputPlan": "avalign.preprocess._inputs",
    "InputSample": "avalign.preprocess._inputs",
    "PreprocessResult": "avalign.preprocess._run",
    "SampleOptions": "avalign.preprocess._sample",
    "is_transcript_json": "avalign.preprocess._inputs",
    "list_inputs": "avalign.preprocess._inputs",
    "plan_shards": "avalign.preprocess._run",
    "preprocess": "avalign.preprocess._run",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
