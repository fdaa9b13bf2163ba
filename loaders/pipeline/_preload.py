"""What a pipeline worker would load before its first sample, loaded once in the process that builds the pipeline.

::

    building process   make_dataset / make_loader ─ preload_for_workers ─ (modules, torchcodec, pocketsphinx decoder)
                         │ fork (DataLoader iter(), each epoch without persistent_workers; make_loader each epoch)
    worker 0, 1, …       inherit all of it ─ first sample: decode, align (no import, no decoder to build)

The readers, transcript parsers, estimators and the forced aligner import their dependencies inside the functions
that use them (a plain ``import loaders`` stays light), so without this each forked worker imports them again
and builds its own pocketsphinx decoder, every epoch, on the way to its first batch.

Only forked workers inherit it. Under ``spawn`` or ``forkserver`` (``DataLoader(..., multiprocessing_context=
"spawn")``) a worker starts a fresh interpreter and loads everything again whatever this process did:
``make_loader`` then skips the preload; ``make_dataset`` cannot know the DataLoader's context and preloads anyway
(a one-off cost in the building process, which the DataLoader's ``num_workers=0`` path uses itself).
"""
from __future__ import annotations

import functools
import importlib
import logging

from loaders import _audio_torchcodec

logger = logging.getLogger(__name__)

__all__ = ["ESTIMATOR_MODULES", "READER_MODULES", "TAIL_MERGE_MODULES", "preload_for_workers"]

READER_MODULES = ("av", "av.subtitles", "av.subtitles.stream", "av.video.reformatter", "numpy.ma", "soxr", "pysubs2", "webvtt",
                  "praatio.utilities.textgrid_io", "encodings.utf_8_sig", "pocketsphinx", "num2words")
"""Imported inside the decode, resample, transcript and forced-alignment functions a sample goes through
(``av.subtitles`` by ``av.open``, ``numpy.ma`` by ``np.median``, ``encodings.utf_8_sig`` by caption decoding,
``num2words`` by forced alignment of a caption with digits)."""
TAIL_MERGE_MODULES = ("torch.utils.serialization", "encodings.latin_1")
"""Imported by ``torch.save`` / ``torch.load`` (``encodings.latin_1``: its unpickler), with which DataLoader workers
hand their tails to the merger (``loaders.pipeline._tail_merge``)."""
ESTIMATOR_MODULES = ("scipy.ndimage", "scipy.signal", "scipy.special", "scipy.stats")
"""Imported inside the A/V and transcript offset estimators (``estimate=True``)."""


@functools.cache
def preload_for_workers(*, estimate: bool) -> None:
    """Imports, in this process, what a pipeline worker imports on its first samples, and builds the process's
    pocketsphinx decoder (``aligner.estimators.shared_decoder``), once per process (later calls return at once).

    Processes forked afterwards (DataLoader and ``make_loader`` workers) inherit the modules and the decoder: a
    decoder built before ``fork`` aligns in the child exactly as in the parent (pocketsphinx runs no thread). The
    decoder is built whenever pocketsphinx is installed: the pipeline force-aligns every caption without word
    times (SRT, WebVTT, segment-only JSON) whatever its options, and the shards are not read here to find out
    whether they hold any. Nothing here starts a thread (a thread does not survive ``fork``).

    A module that fails to import is left out (the function that needs it raises where it is used), and so is the
    decoder without pocketsphinx.

    Args:
        estimate: Also import the offset estimators' dependencies (the pipeline's ``estimate`` option).
    """
    _audio_torchcodec.preload()
    for name in READER_MODULES + TAIL_MERGE_MODULES + (ESTIMATOR_MODULES if estimate else ()):
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 - not installed or not loadable: the code that needs it says so
            logger.debug("%s not preloaded: %s: %s", name, type(error).__name__, error)
    from aligner.estimators import shared_decoder

    try:
        shared_decoder()
    except ImportError:
        logger.debug("pocketsphinx is not installed: no decoder preloaded")
