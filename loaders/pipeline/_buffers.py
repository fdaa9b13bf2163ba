"""Host buffers for batch tensors that are reused once nothing outside holds them.

A fresh 36 MB ``torch.empty`` is fresh pages from the kernel: the first write to each 4 KiB page faults and the
kernel zeroes it. For the frames of one batch (240 x 3 x 112 x 112 float32) that costs more than the
conversion itself (measured 66 ms for a fresh tensor against 19-31 ms for the same copy into a reused one;
BENCHMARKS.md). The pool hands a buffer out again only when no tensor, view, numpy array, DLPack capsule or
Python name refers to it any more (the batch that carried it was dropped), so a batch a caller still holds is
never overwritten; a buffer moved to shared memory (sent to another process) is never reused.
"""
from __future__ import annotations

import logging
import sys
from typing import Any

import torch

logger = logging.getLogger(__name__)

__all__ = ["RecycledBuffers"]


def _use_counts(tensor: torch.Tensor) -> tuple[int, int]:
    """``(references to the tensor's C++ object, references to its storage)``: DLPack capsules and arrays made from
    them hold the first, views the second (numpy arrays hold the Python object). ``(-1, -1)`` when this torch cannot
    tell (private accessors): then nothing is reused."""
    tensor_count = getattr(tensor, "_use_count", None)
    storage_count = getattr(torch._C, "_storage_Use_Count", None)
    if tensor_count is None or storage_count is None:
        return (-1, -1)
    return int(tensor_count()), int(storage_count(tensor.untyped_storage()._cdata))


class RecycledBuffers:
    """Uninitialised CPU tensors by ``(shape, dtype)``, at most ``per_shape`` kept for reuse.

    Not shared between processes: a copy (pickled for a worker) starts empty.
    """

    def __init__(self, per_shape: int = 4) -> None:
        self._per_shape = int(per_shape)
        self._pools: dict[tuple[Any, ...], list[torch.Tensor]] = {}
        probe = torch.empty(1)
        self._free_refs = (sys.getrefcount(probe),) + _use_counts(probe)
        """Python, tensor and storage reference counts of a tensor held by nothing but this pool (measured here)."""

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """A tensor of ``shape`` and ``dtype`` with arbitrary contents: a kept one nobody holds, else a new one."""
        pool = self._pools.setdefault((tuple(shape), dtype), [])
        pool[:] = [tensor for tensor in pool if not tensor.is_shared()]  # sent to another process: never reused
        for index in range(len(pool)):
            if self._is_free(pool, index):
                return pool[index]
        tensor = torch.empty(shape, dtype=dtype)
        if len(pool) < self._per_shape:
            pool.append(tensor)
        return tensor

    def _is_free(self, pool: list[torch.Tensor], index: int) -> bool:
        probe = pool[index]  # one reference here, one in the pool: as for `probe` in __init__ (one name + the call)
        if probe.is_shared() or self._free_refs[1] < 0:
            return False
        return (sys.getrefcount(probe) - 1,) + _use_counts(probe) == self._free_refs

    def __getstate__(self) -> dict[str, Any]:
        return {"_per_shape": self._per_shape, "_pools": {}, "_free_refs": self._free_refs}
