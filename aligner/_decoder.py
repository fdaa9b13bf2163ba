"""The pocketsphinx decoder that forced alignment uses (optional extra ``[align]``): a new one, or one per process."""
from __future__ import annotations

import functools
import logging
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


@functools.lru_cache(maxsize=1)
def shared_decoder() -> Any:
    """One :func:`new_decoder` per process, created on first use (an ImportError is raised again on each call,
    not cached). ``shared_decoder.cache_clear()`` drops it."""
    return new_decoder()
