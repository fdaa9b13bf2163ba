"""Shared-memory slots a DataLoader worker reuses for its batches once the main process has dropped them.

Inside a DataLoader worker a batch must live in shared memory, or sending it copies it. Fresh shared memory for
every batch costs a segment per tensor (created, mapped, its descriptor passed to the main process, unmapped) and
a zero-filled page fault per 4 KiB written (the 36 MB frames tensor of a 240 x 3 x 112 x 112 batch). A worker
therefore keeps a few *slots*: one shared segment each, holding every tensor of one batch end to end::

    slot  | header: int64 sent, int64 released | frames | audio | cu_seqlens … | word_spans … | token_spans |
           0                                     64 (each tensor starts on a 64-byte boundary)

Protocol, per slot (one worker process owns its slots; nothing is shared between workers):

1. The worker takes a slot whose every send has been released (``sent == released``) and that nothing in the
   worker holds (no tensor, view, numpy array or DLPack export: the storage's reference count is the pool's own),
   and builds the batch in it.
2. The batch pickles as ``(slot storage, byte offsets, plain fields)``, one shared segment (one descriptor) per
   batch, and the worker counts the send (``sent += 1``).
3. The receiving process maps the segment and rebuilds the tensors as views of one private storage whose last
   reference is a numpy array over the mapping; a ``weakref.finalize`` on that array counts the release
   (``released += 1``). The array dies only when every tensor, view, numpy array and DLPack export made from the
   batch there is gone (``pin_memory()`` / ``.to()`` copy, then the batch is dropped): only then may the worker write
   the slot again. Each counter has one writer (the worker; the receiver, under a lock), so no update is lost.

A send that is never received (a DataLoader shut down with batches in flight, a batch pickled to a file) is never
released: the slot is never reused (safe; the worker makes another, up to ``max_slots``, then builds batches in a
fresh one-off segment). A slot whose memory left the worker any other way (a tensor of the batch returned by a
``collate_fn``, a ``dataclasses.replace`` copy: torch shares the segment itself, and nobody counts that receipt) is
retired for good: the worker sees it in torch's cache of storages it has shared. Slots die with the worker process:
nothing carries over to the next epoch's workers. In the main process (``num_workers=0``, ``make_loader``), and with
the ``file_system`` sharing strategy, no slot is used (each batch goes to fresh shared memory there, as before).
"""
from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Optional

import torch
from torch.multiprocessing.reductions import fd_id, rebuild_storage_fd, shared_cache

from loaders.pipeline._buffers import _use_counts

logger = logging.getLogger(__name__)

__all__ = ["SharedSlots", "SlotWriter", "rebuild_from_slot"]

_ALIGN_BYTES = 64
"""Every tensor of a slot starts on this boundary (any dtype's alignment, one cache line)."""
_HEADER_BYTES = _ALIGN_BYTES
"""The slot's first bytes: the int64 counters ``sent`` and ``released``, then padding to the first tensor."""
_SENT, _RELEASED = 0, 1
"""Indices of the header's two int64 counters."""
_COUNT_LOCK = threading.Lock()
"""Serialises this process's updates of slot counters (releases may run in any thread: pin-memory, finalizers)."""


def _aligned(nbytes: int) -> int:
    return -(-int(nbytes) // _ALIGN_BYTES) * _ALIGN_BYTES


class _Slot:
    """One shared segment of ``nbytes`` and its header of send/release counters."""

    def __init__(self, nbytes: int) -> None:
        storage = torch.UntypedStorage._new_shared(int(nbytes))
        self.base = torch.empty(0, dtype=torch.uint8).set_(storage)
        """uint8 ``[nbytes]`` over the whole segment (the pool's only hold on it besides ``header``)."""
        del storage
        self.header = self.base[:16].view(torch.int64)
        self.header.zero_()
        self._own_count = _use_counts(self.base)[1]
        """The storage's use count when only this slot holds it (``base`` and ``header``)."""
        self.fd = self.base.untyped_storage()._share_fd_cpu_()[0]
        """The segment's descriptor (kept open by the storage), sent with each batch."""
        self._cache_key = fd_id(self.fd)

    @property
    def nbytes(self) -> int:
        return self.base.numel()

    def is_free(self) -> bool:
        """Every send released by its receiver, and held by nothing in this process."""
        if self._own_count < 0 or int(self.header[_SENT]) != int(self.header[_RELEASED]):
            return False
        return _use_counts(self.base)[1] == self._own_count

    def shared_elsewhere(self) -> bool:
        """Whether torch's own pickling shared this segment (a receipt nobody counts): then it is never reused."""
        ref = shared_cache.get(self._cache_key)
        return ref is not None and not ref.expired()


class SlotWriter:
    """Lays one batch's tensors end to end in a slot (``slot`` None: each tensor in its own fresh shared segment,
    counting the bytes a slot needs)."""

    def __init__(self, slot: Optional[_Slot]) -> None:
        self.slot = slot
        self.offset = _HEADER_BYTES
        """Next free byte; after the batch, the bytes a slot needs for it."""

    def empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised tensor in the slot (or in fresh shared memory)."""
        numel = 1
        for n in shape:
            numel *= int(n)
        nbytes = numel * dtype.itemsize
        if self.slot is None:
            self.offset += _aligned(nbytes)
            storage = torch.UntypedStorage._new_shared(nbytes)
            return torch.empty(0, dtype=dtype).set_(storage, 0, tuple(shape))
        if self.offset + nbytes > self.slot.nbytes:
            raise RuntimeError(f"batch tensors exceed their slot ({self.offset + nbytes} > {self.slot.nbytes} bytes); "
                               "the collator's capacities changed after its first batch.")
        view = self.slot.base[self.offset : self.offset + nbytes].view(dtype).view(tuple(shape))
        self.offset += _aligned(nbytes)
        return view

    def place(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor``'s values in the slot (a copy), or ``tensor`` itself without a slot."""
        if self.slot is None:
            self.offset += _aligned(tensor.numel() * tensor.element_size())
            return tensor
        out = self.empty(tuple(tensor.shape), tensor.dtype)
        out.copy_(tensor)
        return out


class SharedSlots:
    """The slots of one DataLoader worker process (see the module docstring). Not shared: a pickled copy (a
    worker's copy of the collator) starts empty.

    Args:
        max_slots: Slots kept at most; when all are in use, a batch goes to a fresh one-off segment.
    """

    def __init__(self, max_slots: int = 6) -> None:
        if int(max_slots) < 1:
            raise ValueError(f"max_slots must be >= 1, got {max_slots = }.")
        self._max_slots = int(max_slots)
        self._slots: list[_Slot] = []
        self._slot_nbytes: Optional[int] = None
        self.one_off = 0
        """Batches built outside a kept slot (the first one, which sizes the slots, and those with every slot in use)."""

    @property
    def num_slots(self) -> int:
        return len(self._slots)

    def writer(self) -> SlotWriter:
        """A writer for the next batch: in a free kept slot, else in a new one while fewer than ``max_slots`` exist,
        else in a one-off slot; for the very first batch (size not known yet) without a slot."""
        if self._slot_nbytes is None or torch.multiprocessing.get_sharing_strategy() != "file_descriptor":
            self.one_off += 1
            return SlotWriter(None)
        self._slots = [s for s in self._slots if not s.shared_elsewhere()]
        slot = next((s for s in self._slots if s.is_free()), None)
        if slot is None:
            slot = _Slot(self._slot_nbytes)
            if len(self._slots) < self._max_slots:
                self._slots.append(slot)
            else:
                self.one_off += 1
        return SlotWriter(slot)

    def finish(self, writer: SlotWriter, *, sizes_slots: bool = True) -> None:
        """After a batch: learns the slot size from the first one built at full capacity (``sizes_slots``; a trimmed
        tail batch is smaller than a full one, so it fits the slots but must not size them)."""
        if self._slot_nbytes is None and sizes_slots:
            self._slot_nbytes = writer.offset

    def __getstate__(self) -> dict[str, Any]:
        return {"_max_slots": self._max_slots, "_slots": [], "_slot_nbytes": None, "one_off": 0}


def reduce_to_slot(obj: Any, slot: _Slot, fields: dict[str, Any]) -> Optional[tuple]:
    """``__reduce__`` value sending ``obj`` (built from ``fields``) as its slot plus byte offsets, or None when a
    tensor field is not a contiguous view of the slot (then the caller pickles it the usual way)."""
    base = slot.base
    start, stop = base.data_ptr(), base.data_ptr() + base.numel()
    layout, plain = [], {}
    for name, value in fields.items():
        if not isinstance(value, torch.Tensor):
            plain[name] = value
            continue
        pointer = value.data_ptr()
        if (value.device.type != "cpu" or not value.is_contiguous()
                or not start + _HEADER_BYTES <= pointer <= stop - value.numel() * value.element_size()):
            return None
        layout.append((name, pointer - start, tuple(value.shape), value.dtype))
    from multiprocessing.reduction import DupFd

    _count(slot.header, _SENT)
    # The descriptor itself, not the storage: torch's storage pickling would mark the slot shared_elsewhere.
    return rebuild_from_slot, (type(obj), DupFd(slot.fd), base.numel(), tuple(layout), plain)


def rebuild_from_slot(cls: type, descriptor: Any, nbytes: int, layout: tuple, plain: dict[str, Any]) -> Any:
    """In the receiving process: ``cls(**fields)`` with the tensors as views of the slot; when the last of them (and
    of anything made from them) is gone, the release is counted in the slot's header for its worker to reuse it."""
    storage = rebuild_storage_fd(torch.UntypedStorage, descriptor, nbytes)
    mapped = torch.empty(0, dtype=torch.uint8).set_(storage)
    header = mapped[:16].view(torch.int64)
    array = mapped.numpy()  # the one object the private storage below holds; its death is the release signal
    owner = torch.from_numpy(array)
    weakref.finalize(array, _release, header).atexit = False
    del array, mapped
    tensors = {}
    for name, offset, shape, dtype in layout:
        numel = 1
        for n in shape:
            numel *= n
        tensors[name] = owner[offset : offset + numel * dtype.itemsize].view(dtype).view(shape)
    return cls(**tensors, **plain)


def _release(header: torch.Tensor) -> None:
    _count(header, _RELEASED)


def _count(header: torch.Tensor, index: int) -> None:
    with _COUNT_LOCK:
        header[index] = int(header[index]) + 1
