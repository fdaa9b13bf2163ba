"""The pocketsphinx decoder that forced alignment uses (optional extra ``[align]``): a new one, or one per thread."""
from __future__ import annotations

import collections
import logging
import threading
from typing import Any

logger = logging.getLogger(__name__)

__all__ = ["ALIGN_SAMPLE_RATE", "new_decoder", "shared_decoder"]

ALIGN_SAMPLE_RATE = 16000
"""Rate of pocketsphinx's default acoustic model (en-us)."""


def new_decoder() -> Any:
    """A new ``pocketsphinx.Decoder`` at :data:`ALIGN_SAMPLE_RATE` with wide beams (creating one takes about 0.3 s).

    Raises:
        ImportError: pocketsphinx is not installed (``pip install 'avalign[align]'``).
    """
    try:
        from pocketsphinx import Decoder
    except ImportError as e:  # optional dependency
        raise ImportError("forced alignment needs pocketsphinx: pip install 'avalign[align]' (pocketsphinx==5.1.1)") from e
    # Wide beams: with the defaults the search sometimes fails to reach the end of the text. loglevel FATAL: a
    # failed search is reported by the caller (an abstention with its reason); pocketsphinx's own "ERROR:
    # fsg_search.c ... does not match the grammar" lines on stderr, one per caption it cannot align, were noise
    # in a training run's log.
    return Decoder(samprate=ALIGN_SAMPLE_RATE, bestpath=False, loglevel="FATAL", beam=1e-80, wbeam=1e-60, pbeam=1e-80)


class _PerThread(threading.local):
    """The calling thread's decoder and its cache statistics (a ``threading.local``: every thread starts empty)."""

    decoder: Any = None
    hits: int = 0
    misses: int = 0


_decoders = _PerThread()
_CacheInfo = collections.namedtuple("CacheInfo", ["hits", "misses", "maxsize", "currsize"])


def shared_decoder() -> Any:
    """One :func:`new_decoder` per thread, created on the thread's first use (an ImportError is raised again on each
    call, not cached). ``shared_decoder.cache_info()`` / ``cache_clear()`` are ``functools.lru_cache``'s, for the
    calling thread (a decoder built before a fork is the forked child's main thread's).

    Per thread, not per process: a ``pocketsphinx.Decoder`` holds its search state, and two threads aligning on one
    at the same time crash the process (a segmentation fault: thread-based data loaders, a ``ThreadPoolExecutor``).
    """
    if _decoders.decoder is None:
        _decoders.decoder = new_decoder()
        _decoders.misses += 1
    else:
        _decoders.hits += 1
    return _decoders.decoder


def _cache_info() -> tuple:
    """``(hits, misses, maxsize, currsize)`` of the calling thread's decoder, as ``functools.lru_cache`` reports."""
    return _CacheInfo(_decoders.hits, _decoders.misses, 1, int(_decoders.decoder is not None))


def _cache_clear() -> None:
    """Drop the calling thread's decoder and its statistics; the next :func:`shared_decoder` call creates a new one."""
    _decoders.decoder, _decoders.hits, _decoders.misses = None, 0, 0


shared_decoder.cache_info = _cache_info  # type: ignore[attr-defined]
shared_decoder.cache_clear = _cache_clear  # type: ignore[attr-defined]
