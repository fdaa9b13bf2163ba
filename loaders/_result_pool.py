"""Large result tensors whose memory is reused within the process after their owner frees them.

A full decode's ``[T, H, W, 3]`` result is hundreds of megabytes to gigabytes. glibc hands allocations over
32 MiB back to the kernel on free, so without reuse every decode of a training loop pays the first touch of
its result again: one page fault per 4 KiB page, the largest cost of a full decode after decoding itself
(BENCHMARKS.md, "Full decode: ... populated result pages"). :class:`ResultPool` keeps a few recently freed
large buffers and hands them out again, the way FFmpeg's ``AVBufferPool`` and PyTorch's CUDA caching
allocator do.

Contract:

- A buffer goes back to the pool only when the tensor memory built on it is freed: the handed-out tensor is
  ``torch.from_numpy`` of a numpy view whose only strong reference is held by the tensor's storage, and a
  ``weakref.finalize`` on that view returns the buffer. Every torch view, ``.numpy()`` array or DLPack capsule
  of the tensor keeps the storage, hence the view, alive: memory that anything can still reach is never
  handed out again. (Raw pointers taken with ``data_ptr()`` are, as everywhere in torch, the caller's risk.)
- A reused buffer holds the bytes of its previous use; callers overwrite what they hand on (like ``torch.empty``).
- Bounded: at most ``max_count`` idle buffers and ``max_bytes`` idle bytes; the most recently freed is kept and
  the oldest evicted; a freed buffer is kept only while the system has ``min_available_bytes`` available besides.
  Requests smaller than ``min_bytes`` are not pooled (the C heap already reuses them).
  A buffer serves a request of ``n`` bytes only if it is at most ``n * (1 + max_waste)``.
- :meth:`ResultPool.release` frees every idle buffer now; ``set_limits(max_bytes=0)`` turns pooling off.
- Freshly allocated buffers of 64 MiB or more are advised to use transparent huge pages
  (:func:`loaders._pages.advise_huge_pages`): one first-touch fault per 2 MiB instead of per 4 KiB (a 1080p full
  decode's first result: 1.0 M faults without, 98 K with).
- A forked child starts with an empty pool and never pools memory it inherited (copy-on-write pages).
"""
from __future__ import annotations

import collections
import contextlib
import logging
import os
import threading
import weakref
from typing import Iterator, Optional

import numpy as np
import torch

from loaders._pages import advise_huge_pages

logger = logging.getLogger(__name__)

__all__ = ["ResultPool", "check_fits", "result_pool"]

MIN_POOLED_BYTES = 64 << 20
"""Requests below this are plain ``torch.empty`` (glibc keeps and reuses freed blocks under 32 MiB itself)."""

MAX_WASTE = 0.25
"""A pooled buffer serves a request only if it is at most this fraction larger than the request."""


def _physical_bytes() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def _available_bytes() -> Optional[int]:
    """The kernel's estimate of memory available without swapping (``MemAvailable``); None where unknown."""
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def check_fits(nbytes: int) -> None:
    """Raises MemoryError for a request of :data:`MIN_POOLED_BYTES` or more that exceeds the memory available now
    (``MemAvailable``): the kernel would grant it (overcommit) and then kill the process as its pages are written
    (e.g. ``read_video(fps=1e6)`` on a 2 s clip asks for 107 GiB: a frame per grid time). Readers turn the MemoryError into a
    ``DecodeError`` with reason ``too_large``."""
    if nbytes < MIN_POOLED_BYTES:
        return
    available = _available_bytes()
    if available is not None and nbytes > available:
        raise MemoryError(f"a result of {nbytes / 2**30:.2f} GiB does not fit in the {available / 2**30:.2f} GiB of "
                          "memory available")


def _bucket_bytes(nbytes: int) -> int:
    """``nbytes`` rounded up to a step of 1/8 of its power of two (< 12.5 % more), so that requests of
    nearly the same size get interchangeable buffers."""
    step = max(1 << max(nbytes.bit_length() - 4, 0), 4096)
    return -(-nbytes // step) * step


class ResultPool:
    """A bounded cache of freed large uint8 result buffers (thread-safe; one per process: :data:`result_pool`).

    Args:
        max_bytes: most idle bytes kept (default: a quarter of physical memory). 0 disables pooling.
        max_count: most idle buffers kept. One is what a decode loop needs (the next result is decoded while
            the last is alive, then the last is freed, and the decode after takes its memory); so a process
            keeps at most one freed result beyond its live ones (each loader worker process: one of its own).
        min_bytes: smaller requests are never pooled.
        min_available_bytes: a freed buffer is kept only while the system has at least this much memory
            available besides (``MemAvailable``, Linux; default: a quarter of physical memory), so that several
            processes (loader or preprocess workers), each keeping its own, give memory back when it runs short.
    """

    def __init__(self, *, max_bytes: Optional[int] = None, max_count: int = 1, min_bytes: int = MIN_POOLED_BYTES,
                 min_available_bytes: Optional[int] = None) -> None:
        self._lock = threading.Lock()
        self._idle: collections.OrderedDict[int, torch.Tensor] = collections.OrderedDict()  # id -> flat buffer, oldest first
        self._incoming: collections.deque = collections.deque()  # (generation, buffer) freed, not yet admitted
        self._generation = 0  # bumped in a forked child: buffers of an earlier generation are never admitted
        self._max_bytes = self._max_count = self._min_bytes = 0
        self._min_available_bytes = 0
        quarter = _physical_bytes() // 4
        self.set_limits(max_bytes=quarter if max_bytes is None else max_bytes, max_count=max_count, min_bytes=min_bytes,
                        min_available_bytes=quarter if min_available_bytes is None else min_available_bytes)
        _POOLS.add(self)

    def set_limits(self, *, max_bytes: Optional[int] = None, max_count: Optional[int] = None,
                   min_bytes: Optional[int] = None, min_available_bytes: Optional[int] = None) -> None:
        """Change the caps (None: unchanged); idle buffers over them are freed now."""
        for name, value in (("max_bytes", max_bytes), ("max_count", max_count), ("min_bytes", min_bytes),
                            ("min_available_bytes", min_available_bytes)):
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        with self._locked():
            self._max_bytes = self._max_bytes if max_bytes is None else int(max_bytes)
            self._max_count = self._max_count if max_count is None else int(max_count)
            self._min_bytes = self._min_bytes if min_bytes is None else int(min_bytes)
            if min_available_bytes is not None:
                self._min_available_bytes = int(min_available_bytes)
            self._evict_over_limits()

    @property
    def limits(self) -> dict[str, int]:
        """``{"max_bytes", "max_count", "min_bytes", "min_available_bytes"}`` now in force."""
        return {"max_bytes": self._max_bytes, "max_count": self._max_count, "min_bytes": self._min_bytes,
                "min_available_bytes": self._min_available_bytes}

    @property
    def idle_bytes(self) -> int:
        """Bytes held in idle buffers (counted at their full capacity, resident or not)."""
        with self._locked():
            return sum(b.numel() for b in self._idle.values())

    @property
    def idle_count(self) -> int:
        """Idle buffers held."""
        with self._locked():
            return len(self._idle)

    def release(self) -> int:
        """Free every idle buffer now (like ``torch.cuda.empty_cache``); returns the bytes freed."""
        with self._locked():
            idle, self._idle = self._idle, collections.OrderedDict()
        freed = sum(b.numel() for b in idle.values())
        idle.clear()  # the memory goes back to the system here, outside the lock
        return freed

    def empty(self, shape: tuple[int, ...]) -> tuple[torch.Tensor, bool]:
        """A contiguous uint8 tensor of ``shape`` with unspecified contents, and whether its memory was reused
        (already populated by an earlier result) rather than freshly allocated."""
        nbytes = int(np.prod(shape, dtype=np.int64))
        check_fits(nbytes)
        if nbytes < max(self._min_bytes, 1) or self._max_bytes < nbytes:
            fresh = torch.empty(shape, dtype=torch.uint8)
            advise_huge_pages(fresh)
            return fresh, False
        buffer = None
        with self._locked():
            fits = [(b.numel(), key) for key, b in self._idle.items() if nbytes <= b.numel() <= nbytes * (1 + MAX_WASTE)]
            if fits:
                buffer = self._idle.pop(min(fits)[1])
            generation = self._generation
        reused = buffer is not None
        if buffer is None:
            buffer = torch.empty(_bucket_bytes(nbytes), dtype=torch.uint8)
            advise_huge_pages(buffer)  # fresh pages: 2 MiB per first-touch fault instead of 4 KiB
        view = buffer.numpy()[:nbytes].reshape(shape)  # the one object the handed-out tensor's storage keeps alive
        finalizer = weakref.finalize(view, self._returned, generation, buffer)
        finalizer.atexit = False
        return torch.from_numpy(view), reused

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The lock, with queued buffers admitted before and after (a finalizer that ran meanwhile could not)."""
        self._settle()
        with self._lock:
            yield
        self._settle()

    def _returned(self, generation: int, buffer: torch.Tensor) -> None:
        """Finalizer of a handed-out view: runs on whatever thread freed the last reference to its tensor, maybe
        while this thread holds the lock (a free inside :meth:`empty`), so it only queues and tries the lock."""
        self._incoming.append((generation, buffer))
        self._settle()

    def _settle(self) -> None:
        """Admit queued buffers under the caps. Never blocks: whoever holds the lock settles after releasing it."""
        while self._incoming and self._lock.acquire(blocking=False):
            try:
                while self._incoming:
                    generation, buffer = self._incoming.popleft()
                    if generation == self._generation and buffer.numel() <= self._max_bytes and self._memory_to_spare():
                        self._idle[id(buffer)] = buffer
                self._evict_over_limits()
            finally:
                self._lock.release()

    def _memory_to_spare(self) -> bool:
        available = _available_bytes() if self._min_available_bytes > 0 else None
        return available is None or available >= self._min_available_bytes

    def _evict_over_limits(self) -> None:
        total = sum(b.numel() for b in self._idle.values())
        while self._idle and (len(self._idle) > self._max_count or total > self._max_bytes):
            _, oldest = self._idle.popitem(last=False)
            total -= oldest.numel()

    def _after_fork_in_child(self) -> None:
        self._lock = threading.Lock()
        self._idle = collections.OrderedDict()
        self._incoming = collections.deque()
        self._generation += 1


_POOLS: "weakref.WeakSet[ResultPool]" = weakref.WeakSet()


def _reset_pools_in_child() -> None:
    for pool in list(_POOLS):
        pool._after_fork_in_child()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pools_in_child)

result_pool = ResultPool()
"""The process's pool for ``read_video``'s full-decode and window results (``loaders.media.result_pool``)."""
