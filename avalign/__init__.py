"""avalign: load video, audio and text for PyTorch training and put them on one clock.

The library lives in two packages, ``loaders`` (shards, decoding, packing, collate) and ``aligner``
(clock model, estimation, span matching); both are importable from here too::

    from avalign import aligner, loaders
"""
from __future__ import annotations

import aligner
import loaders

__version__ = "0.1.0"
__all__ = ["__version__", "aligner", "loaders"]
