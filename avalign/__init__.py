"""avalign: load video, audio and text for PyTorch training and put them on one clock.

The library lives in two packages, ``loaders`` (shards, decoding, packing, collate) and ``aligner``
(clock model, estimation, span matching), on the base package ``avcore`` (records, time rules, errors);
``loaders`` and ``aligner`` are importable from here too::

    from avalign import aligner, loaders

Here too: ``avalign measure``'s library function (:func:`measure`: one media file → the measure JSON), the
flow it shares with preprocess and report (:func:`measure_media`), and its parts (:func:`measure_sample`,
:func:`format_measurement`, :func:`read_video_for_estimation` and its :data:`ESTIMATION_MAX_WIDTH`). The CLI tools are the subpackages ``avalign.preprocess``, ``avalign.report``, ``avalign.bench``, ``avalign.synth``;
the command's shared helpers are in ``avalign.cli``.

Everything is imported on first use (PEP 562), so that ``avalign --help`` does not load torch.
"""
from __future__ import annotations

import importlib

from avalign._lazy import lazy_exports

__version__ = "0.1.0"

_PACKAGES = ("aligner", "loaders")
_EXPORTS = {
    "ESTIMATION_MAX_WIDTH": "avalign._measure",
    "Measurement": "avalign._measure",
    "count_words": "avalign._measure",
    "format_measurement": "avalign._measure",
    "given_transcript": "avalign._measure",
    "measure": "avalign._measure",
    "measure_aligned": "avalign._measure",
    "measure_media": "avalign._measure",
    "measure_sample": "avalign._measure",
    "read_video_for_estimation": "avalign._measure",
}
__all__ = sorted(["__version__", *_PACKAGES, *_EXPORTS])

_getattr, _dir = lazy_exports(globals(), _EXPORTS)


def __dir__() -> list[str]:
    return sorted(set(_dir()) | set(_PACKAGES))


def __getattr__(name: str):
    if name in _PACKAGES:
        module = importlib.import_module(name)
        globals()[name] = module
        return module
    return _getattr(name)
