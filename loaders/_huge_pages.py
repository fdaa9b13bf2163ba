"""Transparent huge pages for large, freshly allocated result buffers (Linux).

A fresh allocation is fresh pages from the kernel: the first write to each 4 KiB page faults and the kernel zeroes
it. A 1080p full decode's 3.7 GB result is 0.9 M faults, most of what a process's first full decode pays over
ffmpeg writing to /dev/null (BENCHMARKS.md, "Full decode: huge pages for a fresh result"). Where the kernel's
transparent huge pages are in ``madvise`` mode (the default of most distributions, and this machine's),
``madvise(MADV_HUGEPAGE)`` on the buffer before its first write lets each fault map 2 MiB instead: 512 times fewer
faults and one zeroing per 2 MiB.

Contract: :func:`advise_huge_pages` is advice only. It never changes what the buffer holds, how it is freed (by
whoever allocated it, as before) or its size; it does nothing (returns False) off Linux, where the kernel has huge
pages ``never`` or ``always`` (nothing to ask), on buffers under :data:`MIN_ADVISED_BYTES`, or when ``madvise``
fails. ``AVALIGN_HUGE_PAGES=0`` in the environment turns it off.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys

import torch

logger = logging.getLogger(__name__)

__all__ = ["MIN_ADVISED_BYTES", "advise_huge_pages", "huge_pages_on_request"]

MIN_ADVISED_BYTES = 64 << 20
"""Buffers smaller than this are not advised (the C heap reuses small blocks; a few faults are cheap)."""

_HUGE_PAGE_BYTES = 2 << 20
_MADV_HUGEPAGE = 14  # <linux/mman.h>; Python's mmap module has it, but for mappings it made itself
_ENABLED_PATH = "/sys/kernel/mm/transparent_hugepage/enabled"


@functools.lru_cache(maxsize=1)
def huge_pages_on_request() -> bool:
    """Whether the kernel gives huge pages to memory that asks for them and not to other memory (``[madvise]``
    selected in ``/sys/kernel/mm/transparent_hugepage/enabled``), and ``AVALIGN_HUGE_PAGES`` is not ``0``."""
    if not sys.platform.startswith("linux") or os.environ.get("AVALIGN_HUGE_PAGES", "1") == "0":
        return False
    try:
        with open(_ENABLED_PATH, encoding="ascii") as f:
            return "[madvise]" in f.read()
    except OSError:
        return False


@functools.lru_cache(maxsize=1)
def _madvise():
    try:
        function = ctypes.CDLL(None, use_errno=True).madvise
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    function.restype = ctypes.c_int
    return function


def advise_huge_pages(buffer: torch.Tensor) -> bool:
    """Ask for huge pages on the 2 MiB-aligned part of a contiguous CPU ``buffer`` that nothing has written yet.

    Returns whether the advice was given (module docstring: never an error)."""
    nbytes = buffer.numel() * buffer.element_size()
    if nbytes < MIN_ADVISED_BYTES or buffer.device.type != "cpu" or not buffer.is_contiguous():
        return False
    if not huge_pages_on_request():
        return False
    madvise = _madvise()
    if madvise is None:
        return False
    address = buffer.data_ptr()
    start = -(-address // _HUGE_PAGE_BYTES) * _HUGE_PAGE_BYTES
    stop = (address + nbytes) // _HUGE_PAGE_BYTES * _HUGE_PAGE_BYTES
    if stop <= start:
        return False
    if madvise(start, stop - start, _MADV_HUGEPAGE) != 0:
        logger.debug("madvise(MADV_HUGEPAGE) failed: errno %d", ctypes.get_errno())
        return False
    return True
