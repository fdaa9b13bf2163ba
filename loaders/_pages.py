"""Large result tensors whose memory is populated in bulk, ahead of the writer, on a helper thread.

A full decode writes every byte of a multi-gigabyte ``[T, H, W, 3]`` tensor exactly once. Left to the first
write, each 4 KiB page costs a page fault (1.2 million of them for 5 GB), a trap into the kernel each.
Linux can instead populate a range in one call
(``madvise(MADV_POPULATE_WRITE)``, kernel >= 5.14), which skips the trap per page. :class:`PagePopulator` does
that chunk by chunk on its own thread, so it overlaps decoding, and lets the writer wait for the chunk it is
about to write (what this saves: BENCHMARKS.md, "Full decode: ... populated result pages").

Where the kernel's transparent huge pages are in ``madvise`` mode (most distributions' default), a fresh buffer can
also ask for them (:func:`advise_huge_pages`, ``madvise(MADV_HUGEPAGE)`` before anything writes it): each fault or
populate step then maps 2 MiB instead of 4 KiB. The result pool asks for every fresh buffer of 64 MiB or more: a
1080p full decode's first result took 1.0 M faults without, 98 K with, 4-7 % of the decode's time (BENCHMARKS.md,
"Huge pages for a fresh result"). Where memory is fragmented the kernel may compact it to find a huge page (its
``defrag`` setting) or falls back to 4 KiB pages; after a process's first results the pool hands back memory already
populated, so fresh buffers are rare. ``AVALIGN_HUGE_PAGES=0`` in the environment turns the advice off.

Contract: the tensor's values are never read or changed here (populating writes no data); where the calls
are unavailable (not Linux, an older kernel, a small tensor) nothing is done and the writer's own page faults
populate the memory as before.
"""
from __future__ import annotations

import ctypes
import functools
import logging
import os
import sys
import threading
from typing import Optional

import torch

logger = logging.getLogger(__name__)

__all__ = ["PagePopulator", "advise_huge_pages", "huge_pages_on_request"]

_MADV_POPULATE_WRITE = 23
_PAGE_BYTES = 4096

MIN_POPULATE_BYTES = 64 << 20
"""Tensors smaller than this are left to ordinary page faults (the thread would cost more than it saves)."""

CHUNK_BYTES = 32 << 20
"""Bytes populated per ``madvise`` call: the unit the writer waits for, and how often a stop is noticed."""

LEAD_BYTES = 256 << 20
"""How far populating may run ahead of the furthest byte a writer has asked for: bounds the work and memory
spent on capacity a decode never fills (a header that over-counts its frames)."""

MIN_ADVISED_BYTES = 64 << 20
"""Buffers smaller than this are not advised to use huge pages (the C heap reuses small blocks)."""

_HUGE_PAGE_BYTES = 2 << 20
_MADV_HUGEPAGE = 14
_HUGE_PAGES_MODE = "/sys/kernel/mm/transparent_hugepage/enabled"


@functools.lru_cache(maxsize=1)
def _libc_madvise():
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return None
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    return madvise


@functools.lru_cache(maxsize=1)
def huge_pages_on_request() -> bool:
    """Whether the kernel gives transparent huge pages to memory that asks for them and not to other memory
    (``[madvise]`` in ``/sys/kernel/mm/transparent_hugepage/enabled``), and ``AVALIGN_HUGE_PAGES`` is not ``0``."""
    if not sys.platform.startswith("linux") or os.environ.get("AVALIGN_HUGE_PAGES", "1") == "0":
        return False
    try:
        with open(_HUGE_PAGES_MODE, encoding="ascii") as f:
            return "[madvise]" in f.read()
    except OSError:
        return False


def advise_huge_pages(buffer: torch.Tensor) -> bool:
    """Ask for huge pages on the 2 MiB-aligned part of a contiguous CPU ``buffer`` that nothing has written yet.

    Advice only: the buffer's bytes, size and owner are unchanged. Returns whether it was given: False for buffers
    under :data:`MIN_ADVISED_BYTES`, non-contiguous or not on the CPU, where :func:`huge_pages_on_request` is False,
    or when ``madvise`` fails."""
    nbytes = buffer.numel() * buffer.element_size()
    if nbytes < MIN_ADVISED_BYTES or buffer.device.type != "cpu" or not buffer.is_contiguous():
        return False
    madvise = _libc_madvise() if huge_pages_on_request() else None
    if madvise is None:
        return False
    address = buffer.data_ptr()
    start = -(-address // _HUGE_PAGE_BYTES) * _HUGE_PAGE_BYTES
    stop = (address + nbytes) // _HUGE_PAGE_BYTES * _HUGE_PAGE_BYTES
    if stop <= start or madvise(start, stop - start, _MADV_HUGEPAGE) != 0:
        logger.debug("madvise(MADV_HUGEPAGE) not applied (errno %d)", ctypes.get_errno())
        return False
    return True


class PagePopulator:
    """Populates the memory of one contiguous CPU tensor, front to back, on a helper thread.

    ``wait_for(stop_byte)`` blocks until bytes ``[0, stop_byte)`` of the tensor are populated (or populating
    has stopped or failed: the caller then writes and faults as usual). Populating runs at most ``lead_bytes``
    past the furthest ``stop_byte`` asked for. ``close()`` stops the thread; call it when writing is over,
    whether or not the whole tensor was needed.
    """

    def __init__(self, tensor: torch.Tensor, *, chunk_bytes: Optional[int] = None,
                 min_bytes: Optional[int] = None, lead_bytes: Optional[int] = None) -> None:
        if not tensor.is_contiguous() or tensor.device.type != "cpu":
            raise ValueError(f"need a contiguous CPU tensor, got {tensor.device = }, {tensor.is_contiguous() = }")
        self._tensor = tensor  # keeps the memory alive while the thread works on it
        nbytes = tensor.numel() * tensor.element_size()
        chunk_bytes = CHUNK_BYTES if chunk_bytes is None else chunk_bytes
        min_bytes = MIN_POPULATE_BYTES if min_bytes is None else min_bytes
        self._lead_bytes = LEAD_BYTES if lead_bytes is None else lead_bytes
        self._wanted_bytes = 0  # the furthest stop_byte a writer has asked for
        self._cond = threading.Condition()
        self._stop = False
        self._populated_bytes = 0  # bytes [0, this) are populated (tensor offsets)
        self._thread: Optional[threading.Thread] = None
        madvise = _libc_madvise() if nbytes >= min_bytes else None
        if madvise is None:
            self._populated_bytes = nbytes  # nothing to wait for
            return
        address = tensor.data_ptr()
        first_page = -(-address // _PAGE_BYTES) * _PAGE_BYTES  # madvise needs page-aligned ranges
        last_page = (address + nbytes) // _PAGE_BYTES * _PAGE_BYTES
        self._thread = threading.Thread(target=self._run, name="avalign-pages", daemon=True,
                                        args=(madvise, address, first_page, last_page, nbytes, chunk_bytes))
        self._thread.start()

    def _run(self, madvise, address: int, first_page: int, last_page: int, nbytes: int, chunk_bytes: int) -> None:
        try:
            probe = min(last_page, first_page + _PAGE_BYTES)
            if last_page <= first_page or madvise(first_page, probe - first_page, _MADV_POPULATE_WRITE) != 0:
                logger.debug("MADV_POPULATE_WRITE unavailable (errno %d): ordinary page faults", ctypes.get_errno())
                return
            position = probe
            while position < last_page:
                with self._cond:
                    self._cond.wait_for(lambda: self._stop or position - address < self._wanted_bytes + self._lead_bytes)
                    if self._stop:
                        return
                end = min(last_page, position + chunk_bytes)
                if madvise(position, end - position, _MADV_POPULATE_WRITE) != 0:
                    logger.debug("MADV_POPULATE_WRITE failed at byte %d (errno %d)", position - address, ctypes.get_errno())
                    return
                position = end
                with self._cond:
                    self._populated_bytes = end - address
                    self._cond.notify_all()
        finally:
            with self._cond:
                self._populated_bytes = nbytes  # done, stopped or failed: writers go on with their own faults
                self._cond.notify_all()

    def wait_for(self, stop_byte: int) -> None:
        """Block until bytes ``[0, stop_byte)`` are populated or populating is over."""
        with self._cond:
            if stop_byte > self._wanted_bytes:
                self._wanted_bytes = stop_byte
                self._cond.notify_all()
            self._cond.wait_for(lambda: self._populated_bytes >= stop_byte)

    def close(self) -> None:
        """Stop populating (the rest is left to page faults) and join the thread."""
        if self._thread is None:
            return
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()
        self._thread = None
