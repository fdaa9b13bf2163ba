"""What a loader's worker processes need from the machine, checked where a failure would otherwise be silent.

Workers (``make_loader``'s and torch ``DataLoader``'s over :func:`~loaders.make_dataset`) hand their tensors to the
main process in shared memory (``/dev/shm``), as file descriptors passed over a Unix socket in the
``multiprocessing`` temporary directory. Each of these can run out: a socket path over 107 bytes (a deep
``TMPDIR``), a full ``/dev/shm``, the descriptor limit (``ulimit -n``). ``multiprocessing``'s queue feeder thread
only prints such a failure and drops what it was sending, so the loaders lost samples with no count, hung, or blamed
the shards. The checks and messages here name what ran out and the remedy (BENCHMARKS.md, "Loader workers in the
environments training runs in", adv69). Also here: what forked workers inherit (the temporary directory, a frozen
heap).
"""
from __future__ import annotations

import contextlib
import errno
import gc
import multiprocessing.connection
import multiprocessing.queues
import multiprocessing.reduction
import multiprocessing.util
import os
import pickle
import resource
import socket
import sys
from typing import Any, Optional

import torch

from loaders.pipeline._collate import PackedBatch

__all__ = ["DESCRIPTOR_REMEDY", "SHARED_MEMORY_DIR", "check_worker_socket", "descriptor_words",
           "freeze_inherited_heap_in_forked_children", "move_to_shared_memory", "name_failed_sends",
           "out_of_descriptors", "share_temp_dir_with_workers", "shared_memory_free_bytes", "shared_memory_words"]


SHARED_MEMORY_DIR = "/dev/shm"
"""Where ``shm_open`` puts the shared memory that workers hand tensors over in (Linux)."""


class _TensorFinder(multiprocessing.reduction.ForkingPickler):
    """Pickles an object the way its queue will, into nothing, and collects the tensors instead of sharing them."""

    class _Discard:
        @staticmethod
        def write(data: bytes) -> int:
            return len(data)

    def __init__(self) -> None:
        super().__init__(self._Discard(), pickle.HIGHEST_PROTOCOL)
        self.tensors: list[torch.Tensor] = []

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.Tensor):
            self.tensors.append(obj)
            return tuple, ()
        return NotImplemented


def move_to_shared_memory(obj: Any) -> None:
    """Moves the CPU tensors in ``obj`` to shared memory now, in the calling thread; raises ``RuntimeError`` naming
    ``/dev/shm``, its size and what was asked when it is full.

    A queue's feeder thread does this while it pickles a worker's step; when ``/dev/shm`` was full (a container's
    default 64 MB) it printed torch's "unable to write to file </torch_…>: No space left on device" and dropped the
    step, so its samples were lost with no count, or the worker died of SIGBUS, named as "a native decoder crash".
    Done first, the failure is the worker's own and ends the epoch with this message (the copy is the one the feeder
    would make: the tensors' storages are then shared, and pickling them passes their descriptors)."""
    finder = _TensorFinder()
    finder.dump(obj)
    storages = {}
    for tensor in finder.tensors:
        if tensor.device.type == "cpu" and not tensor.is_shared():
            storage = tensor.untyped_storage()
            storages[storage.data_ptr()] = storage
    need = sum(storage.nbytes() for storage in storages.values())
    if not need:
        return
    free = shared_memory_free_bytes()
    try:
        if free is not None and need > free:
            raise RuntimeError("it does not fit")
        for storage in storages.values():
            storage.share_memory_()
    except RuntimeError as error:
        if "Too many open files" in str(error):
            raise RuntimeError(f"a loader worker could not put {need / 2**20:.1f} MiB of decoded tensors in shared "
                               f"memory: it has no file descriptor left ({error}; {descriptor_words()}). "
                               f"{DESCRIPTOR_REMEDY}") from None
        raise RuntimeError(f"a loader worker could not put {need / 2**20:.1f} MiB of decoded tensors in shared memory "
                           f"({error}): {shared_memory_words()}. Give {SHARED_MEMORY_DIR} more room (docker run "
                           "--shm-size=8g; Kubernetes: an emptyDir with medium Memory at /dev/shm), or lower "
                           "num_workers, budgets or frame_size.") from None


def shared_memory_free_bytes() -> Optional[int]:
    """Bytes free in ``/dev/shm`` (None where it cannot be read)."""
    try:
        stat = os.statvfs(SHARED_MEMORY_DIR)
    except OSError:
        return None
    return stat.f_bavail * stat.f_frsize


def shared_memory_words() -> str:
    try:
        stat = os.statvfs(SHARED_MEMORY_DIR)
    except OSError:
        return f"{SHARED_MEMORY_DIR} cannot be read"
    size, free = stat.f_blocks * stat.f_frsize, stat.f_bavail * stat.f_frsize
    return f"{SHARED_MEMORY_DIR} is {size / 2**20:.0f} MiB with {free / 2**20:.1f} MiB free"


def out_of_descriptors(error: BaseException) -> bool:
    """Whether receiving a step failed because this process has no file descriptor left: ``EMFILE``, or
    ``multiprocessing.reduction.recvfds``'s "received 0 items of ancdata" (the kernel drops a passed descriptor that
    does not fit, and says only that none came)."""
    if isinstance(error, OSError) and error.errno == errno.EMFILE:
        return True
    return isinstance(error, RuntimeError) and "items of ancdata" in str(error)


DESCRIPTOR_REMEDY = ("Each tensor handed over in shared memory holds a descriptor while it is alive (torch's "
                      "file_descriptor sharing strategy): raise the limit (`ulimit -n 65536` in the shell that starts "
                      "training, or resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard)) at start), or lower "
                      "num_workers or buffer_size.")


def descriptor_words() -> str:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        open_now = str(len(os.listdir("/proc/self/fd")))
    except OSError:
        open_now = "unknown"
    return f"open: {open_now}, limit `ulimit -n`: {soft}, hard limit: {hard}"


def share_temp_dir_with_workers() -> None:
    """Makes this process's ``multiprocessing`` temporary directory (``/tmp/pymp-*``) now, so that the worker processes
    forked after it (DataLoader's, ``make_loader``'s) use it instead of making their own.

    A worker makes one the first time it sends a tensor's shared-memory descriptor (torch's ``file_descriptor``
    strategy, and the batch slots of ``loaders.pipeline._shared_slots``: ``multiprocessing.resource_sharer`` listens on
    a socket there) and removes it only when it exits normally. Persistent DataLoader workers are terminated (SIGTERM)
    at interpreter exit, and workers that do not stop in time are killed: each left its ``/tmp/pymp-*`` directory
    behind, one per worker per run (soak66: 2 per run of a 2-worker DataLoader with ``persistent_workers=True``, as
    with any torch dataset). Inherited, the directory is this process's, removed at its exit (after its workers)."""
    if torch.utils.data.get_worker_info() is None:
        multiprocessing.util.get_temp_dir()


_freezes_in_forked_children = False


def freeze_inherited_heap_in_forked_children() -> None:
    """From now on every process forked from this one freezes the heap it inherits (``gc.freeze`` right after the
    fork, ``os.register_at_fork``), so that it never collects an object of its parent: DataLoader workers included,
    which torch forks without asking the dataset.

    A decoder dropped in the parent inside a reference cycle (a ``decord.VideoReader``, a PyAV container) is garbage
    that only a collection frees; collected in a forked child, its destructor joins or detaches decode threads that
    exist only in the parent: the worker segfaulted or aborted ("std::thread::detach: No such process"), killing the
    epoch (seen in the test suite, and reproduced with a reader in a cycle and a collection in a worker). ``make_loader``
    and ``avalign preprocess`` collect in the parent before they fork (``loaders.media.heap_frozen_for_fork``); torch's
    DataLoader does not, so the child side is done here for every fork after the first dataset is built. Cost: one
    ``gc.freeze()`` per fork; the inherited objects stay where they are (shared copy-on-write pages, untouched)."""
    global _freezes_in_forked_children
    if not _freezes_in_forked_children:
        os.register_at_fork(after_in_child=gc.freeze)
        _freezes_in_forked_children = True


def check_worker_socket() -> None:
    """Raises ``OSError`` naming ``TMPDIR`` when a worker process could not hand tensors to the main process.

    A worker sends each tensor's shared memory as a file descriptor, served over a Unix socket that
    ``multiprocessing.resource_sharer`` binds in the ``multiprocessing`` temporary directory (``TMPDIR/pymp-*``; torch's
    ``file_descriptor`` strategy and ``loaders.pipeline._shared_slots`` alike). A socket's path is limited to 107
    bytes; under a deeper ``TMPDIR`` the bind fails inside the queue's feeder thread, which only prints it: torch's
    ``DataLoader`` then dropped the batches (0 of 4) or waited forever, and ``make_loader`` ended the epoch saying the
    shards were empty. This binds a socket where the worker's would be (and removes it), about 0.1 ms, before the
    first sample is read: in each DataLoader worker when its pass begins, and in ``make_loader``'s main process before
    it forks its workers."""
    path = multiprocessing.connection.arbitrary_address("AF_UNIX")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.bind(path)
    except OSError as error:
        temp = multiprocessing.util.get_temp_dir()
        raise OSError(
            f"loader workers cannot hand batches to the main process: binding a Unix socket at {path!r} "
            f"({len(os.fsencode(path))} bytes) failed: {error}. multiprocessing puts these sockets in its temporary "
            f"directory {temp!r} (under TMPDIR={os.environ.get('TMPDIR', '')!r}), and a Unix socket's path must fit in "
            "107 bytes: set TMPDIR to a short directory (e.g. TMPDIR=/tmp), or use num_workers=0.") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def name_failed_sends() -> None:
    """In a DataLoader worker: a batch that cannot be sent ends the worker with its cause on stderr, not a hang.

    torch's worker puts each batch on a ``multiprocessing`` queue whose feeder thread pickles it; that moves its
    tensors to shared memory and passes their file descriptors (``multiprocessing.resource_sharer``). When this fails
    (the worker's ``ulimit -n`` reached: "Too many open files", or ``/dev/shm`` full), the feeder only prints the
    traceback and drops the batch, and the main process waits for it forever (adv69: a 48-descriptor limit hung
    ``DataLoader(make_dataset(...), num_workers=2)``). Here the queue's error hook, for a batch of this pipeline,
    prints what ran out and the remedy, then exits the worker: torch then raises "DataLoader worker (pid(s) …) exited
    unexpectedly" within seconds. Other objects keep ``multiprocessing``'s default (print and drop)."""
    queues = multiprocessing.queues.Queue
    if getattr(queues._on_queue_feeder_error, "_avalign", False):
        return
    default = queues._on_queue_feeder_error

    def on_error(error: BaseException, obj: Any) -> None:
        if not (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[1], PackedBatch)):
            default(error, obj)
            return
        if out_of_descriptors(error) or "Too many open files" in str(error):
            cause = f"it has no file descriptor left ({descriptor_words()}). {DESCRIPTOR_REMEDY}"
        elif "No space left" in str(error) or getattr(error, "errno", None) == errno.ENOSPC:
            cause = (f"shared memory is full ({shared_memory_words()}): give /dev/shm more room (docker run "
                     "--shm-size=8g), or lower num_workers, budgets or frame_size.")
        else:
            cause = "see the error above."
        import traceback

        traceback.print_exception(error)
        print(f"loader: DataLoader worker (pid {os.getpid()}) could not send a batch to the main process "
              f"({type(error).__name__}: {error}): {cause} The worker exits so that the epoch ends instead of waiting "
              "for the batch.", file=sys.stderr, flush=True)
        os._exit(1)

    on_error._avalign = True  # type: ignore[attr-defined]
    queues._on_queue_feeder_error = staticmethod(on_error)
