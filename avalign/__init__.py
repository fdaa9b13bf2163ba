"""avalign: load video, audio and text for PyTorch training and put them on one clock.

The library lives in two packages, ``loaders`` (shards, decoding, packing, collate) and ``aligner``
(clock model, estimation, span matching), on the base package ``avcore`` (records, time rules, errors);
``loaders`` and ``aligner`` are importable from here too::

    from avalign import aligner, loaders

They are imported on first use (PEP 562), so that ``avalign --help`` does not load torch.
"""
from __future__ import annotations

import importlib

__version__ = "0.1.0"
__all__ = ["__version__", "aligner", "loaders"]


def __getattr__(name: str):
    if name in ("aligner", "loaders"):
        module = importlib.import_module(name)
        globals()[name] = module
        return module
    raise AttributeError(f"module 'avalign' has no attribute {name!r}")
