"""The pocketsphinx decoder that forced alignment uses (optional extra ``[align]``): a new one, or one per thread."""
from __future__ import annotations

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
    """The decoder of the calling thread (a ``threading.local``: every thread starts with None)."""

    decoder: Any = None


_decoders = _PerThread()


def shared_decoder() -> Any:
    """One :func:`new_decoder` per thread, created on the thread's first use (an ImportError is raised again on each
    call, not cached). ``shared_decoder.cache_clear()`` drops the calling thread's.

    Per thread, not per process: a ``pocketsphinx.Decoder`` holds its search state, and two threads aligning on one
    at the same time crash the process (a segmentation fault: thread-based data loaders, a ``ThreadPoolExecutor``).
    """
    if _decoders.decoder is None:
        _decoders.decoder = new_decoder()
    return _decoders.decoder


def _drop_decoder() -> None:
    """Drop the calling thread's decoder; the next :func:`shared_decoder` call creates a new one."""
    _decoders.decoder = None


shared_decoder.cache_clear = _drop_decoder  # the name of the per-process cache it replaces (functools.lru_cache)
