"""``make_loader``: the dataset of :func:`make_dataset` with its own decode processes, ready to iterate.

::

    rank's shards (shuffled per epoch, split by rank)       p = 0     1     2     3  |  4 …   (interleave_shards = 4)
    worker slots (shard p → worker p % num_workers)           w0    w1    w0    w1 |  w0
    each worker: its shards of a group read round-robin by sample → steps (the events of one sample)
    main process: merge sample by sample (0,e0) (1,e0) (2,e0) (3,e0) (0,e1) … → OnlinePacker → Collator → PackedBatch

The shards are read ``interleave_shards`` at a time, sample by sample (``loaders.pipeline._resume.order_key``), and the main
process takes each sample's step from the worker that owns its shard: the workers move through their shards in
step, each running at most a few samples ahead (reading whole shards in order, as before, left a worker waiting
with a full queue while the main process drained another worker's shard: 17-20 % of its time). The order does not
depend on ``num_workers``: the same seed gives the same batches (keys and tensor bytes) for 0, 1 or 2 workers
(unlike a ``DataLoader`` over :func:`make_dataset`, where each worker packs its own shards); an epoch is one packer
stream, so it has one tail (``tail``: see ``make_dataset``) whatever ``num_workers``. Resume, rank sync and
failure rules are those of :class:`~loaders.pipeline._dataset.AVDataset`.

A worker that dies (killed, segfault in a native decoder) ends the epoch with ``RuntimeError("loader worker
N (pid P) was killed by signal 9 …")``; a worker that stops without dying (SIGSTOP, a read stuck on a hung network
filesystem) ends it after ``worker_stall_seconds`` with ``RuntimeError("loader worker N (pid P, stopped) sent
nothing for …")`` naming the shard and the last sample received from it, and is killed; a failure of the loader
itself inside a worker reaches the caller as
``RuntimeError("loader worker N failed: …")`` chained to the worker's exception (a ``SampleError`` under
``on_error="raise"`` is re-raised as is).
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import math
import multiprocessing.util
import os
import pickle
import queue as queue_module
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Optional, Union

import torch

from avcore import SampleError
from loaders._skip_log import SkipLog
from loaders._watchdog import heap_frozen_for_fork
from loaders.pipeline._collate import PackedBatch
from loaders.pipeline._dataset import AVDataset, LoaderStats, build, make_dataset
from loaders.pipeline._options import SampleOptions, worker_decoder_threads
from loaders.pipeline._resume import ResumePlan
from loaders.pipeline._shard_loop import Event, ShardEnd, shard_groups, shard_steps
from loaders.pipeline._worker_env import (DESCRIPTOR_REMEDY, SHARED_MEMORY_DIR, check_worker_socket, descriptor_words,
                                          move_to_shared_memory, out_of_descriptors, shared_memory_words)

logger = logging.getLogger(__name__)

__all__ = ["Loader", "LoaderStats", "make_loader"]

_QUEUE_SIZE = 8
"""Steps (one sample's events each) a worker may run ahead of the main process, per worker."""
DEFAULT_INTERLEAVE_SHARDS = 8
"""Shards read at a time by ``make_loader`` (a multiple of ``num_workers`` keeps every worker busy)."""
_PARENT_POLL_SECONDS = 0.5
"""How often a blocked worker checks that the main process is still alive."""
DEFAULT_WORKER_STALL_SECONDS = 900.0
"""How long the main process waits for a worker's next step (one sample's events) before it ends the epoch with an
error naming the worker, instead of waiting forever (rel62). A step is one sample read, decoded, aligned and
tokenized; the longest legitimate wait is a ``pipe:`` shard that stalls (killed after ``pipe_stall_seconds``, 300 s
by default, then skipped as a named shard problem) plus the slowest sample (seconds on this project's clips;
``estimate=True`` on a long clip, or a cold remote read, can take minutes). 900 s is three times the pipe limit,
so a stalled ``pipe:`` command is always a skip, never this error; and it is half of ``torch.distributed``'s
default collective timeout (30 min), so under DDP the stalled rank names its worker before its peers time out."""


@dataclass(frozen=True)
class WorkerFailure:
    """A worker's exception, sent instead of its remaining events."""

    worker_id: int
    error_type: str
    message: str
    sample_error: Any = None
    """The SampleError itself (``on_error="raise"``), re-raised as is."""
    cause: Any = None
    """The worker's exception when it pickles (the ``__cause__`` of the RuntimeError raised here)."""


class Loader(AVDataset):
    """:class:`AVDataset` whose samples are decoded by ``num_workers`` processes of its own; see :func:`make_loader`.

    Iterating it again after a completed epoch moves to the next epoch (shards reshuffled).
    """

    _advance_epoch_on_iter = True

    def __init__(self, urls: Sequence[str], *, num_workers: int = 0, multiprocessing_context: str = "fork",
                 pin_memory: bool = False, interleave_shards: int = DEFAULT_INTERLEAVE_SHARDS,
                 worker_stall_seconds: Optional[float] = DEFAULT_WORKER_STALL_SECONDS, **kwargs: Any) -> None:
        if int(num_workers) < 0:
            raise ValueError(f"num_workers must be >= 0, got {num_workers = }.")
        if isinstance(interleave_shards, bool) or not isinstance(interleave_shards, int) or interleave_shards < 1:
            raise ValueError(f"interleave_shards must be a positive int, got {interleave_shards = !r}; try "
                             f"{DEFAULT_INTERLEAVE_SHARDS} (a multiple of num_workers).")
        super().__init__(urls, **kwargs)
        self._stall_seconds = check_worker_stall_seconds(worker_stall_seconds, self._options)
        self._interleave = int(interleave_shards)
        self._num_workers = int(num_workers)
        self._context = multiprocessing_context
        self._pin_memory = bool(pin_memory)

    def __iter__(self) -> Iterator[PackedBatch]:
        pin = self._pin_memory and _can_pin()
        if self._pin_memory and not pin:  # as torch's DataLoader does: a warning, not a crash in the first batch
            logger.warning("pin_memory=True but no accelerator is found: batches are not pinned")
        for batch in super().__iter__():
            yield batch.pin_memory() if pin else batch

    def _event_source(self, jobs: list[tuple[int, str]], plan: ResumePlan) -> Iterator[Event]:
        if self._num_workers == 0:
            yield from super()._event_source(jobs, plan)
            return
        check_worker_socket()  # else every step is dropped by the queues' feeder threads (see its docstring)
        context = torch.multiprocessing.get_context(self._context)
        stop = context.Event()
        queues = [context.Queue(maxsize=_QUEUE_SIZE) for _ in range(self._num_workers)]
        processes = []
        options = dataclasses.replace(self._options, decoder_threads=worker_decoder_threads(self._num_workers))
        with heap_frozen_for_fork():  # a forked worker must never free an inherited decoder (see its docstring)
            for w in range(self._num_workers):
                mine = [job for job in jobs if job[0] % self._num_workers == w]
                process = context.Process(target=_worker_main,
                                          args=(w, mine, options, plan, self._interleave, queues[w], stop),
                                          daemon=False, name=f"avalign-loader-{w}")  # may fork a decode watchdog
                process.start()
                processes.append(process)

        def shut_down() -> None:
            stop.set()
            for process in processes:
                process.join(timeout=2.0)
                if process.is_alive():
                    process.terminate()
                    process.join(timeout=1.0)
                if process.is_alive():  # a stopped worker keeps SIGTERM pending until continued: SIGKILL ends it
                    process.kill()
                    process.join(timeout=1.0)
            for q in queues:
                q.cancel_join_thread()
                q.close()

        # Also at interpreter exit, before multiprocessing joins its non-daemonic children: a loader left mid-epoch
        # (``it = iter(loader); next(it)``, then the script ends) would otherwise wait for its workers forever.
        shut_down_once = multiprocessing.util.Finalize(None, shut_down, exitpriority=100)
        watch = _StallWatch()  # also without a stall limit: a death in the middle of a step is named, not waited on
        urls = dict(jobs)
        last_keys: dict[int, str] = {}  # shard position → the last sample key received from it (for a stall's message)
        try:
            for group in shard_groups(jobs, self._interleave):
                active = [p for p, _ in group]
                while active:  # one step of each open shard of the group, in shard order (as shard_loop.interleave_steps)
                    still = []
                    for p in active:
                        w = p % self._num_workers
                        step = _get(queues[w], processes[w], w, stall_seconds=self._stall_seconds,
                                    reading=lambda: _reading(urls[p], last_keys.get(p)), watch=watch)
                        if isinstance(step, WorkerFailure):
                            if step.sample_error is not None:
                                raise step.sample_error
                            if getattr(step.cause, "tokenizer_probe", False):  # a configuration error: as in-process
                                raise step.cause
                            raise RuntimeError(f"loader worker {w} failed: {step.error_type}: {step.message}") from step.cause
                        if isinstance(step, ShardEnd):
                            continue
                        keys = [getattr(event, "sample_key", "") for event in step]
                        if any(keys):
                            last_keys[p] = [k for k in keys if k][-1]
                        yield from step
                        still.append(p)
                    active = still
        finally:
            if watch is not None:
                watch.close()
            shut_down_once()


def _worker_main(worker_id: int, jobs: list[tuple[int, str]], options: SampleOptions, plan: ResumePlan, interleave: int,
                 out: Any, stop: Any) -> None:
    """Worker process: puts the steps of its shards on its queue in the main process's read order: per group of
    ``interleave`` shards, round-robin over its shards of the group, one step (a list of events) each, and
    :class:`ShardEnd` for a shard once it has no step left.

    It exits when ``stop`` is set, and also when the main process is gone (SIGKILLed: then nobody sets
    ``stop``): every blocking wait polls ``os.getppid()`` and ends once it differs from the parent recorded
    at start (the orphan has been re-parented).
    """
    torch.set_num_threads(1)
    parent = os.getppid()

    def orphaned() -> bool:
        if os.getppid() == parent:
            return False
        out.cancel_join_thread()  # queued events can never be read: do not block the exit flushing them
        return True

    def put(event: Any) -> bool:
        while not stop.is_set():
            try:
                out.put(event, timeout=_PARENT_POLL_SECONDS)
                return True
            except queue_module.Full:
                if orphaned():
                    return False
            except RuntimeError as error:  # the queue's feeder thread could not start: nothing would ever be sent
                if "can't start new thread" not in str(error):
                    raise
                print(f"loader worker {worker_id} (pid {os.getpid()}) cannot send to the main process: the thread that "
                      f"sends its steps could not start ({error}): this process is out of memory or threads "
                      "(ulimit -v / -u, a container's memory or pids limit). Raise the limit, or lower num_workers, "
                      "budgets or frame_size.", file=sys.stderr, flush=True)
                os._exit(1)
        return False

    skip_log = SkipLog()  # one cap on skip warnings per reason for this worker's pass (the epoch)
    try:
        for group in shard_groups(jobs, interleave):
            active = [(p, shard_steps(p, url, options, plan, skip_log)) for p, url in group]
            while active:
                still = []
                for p, steps in active:
                    step = next(steps, None)
                    if step is not None:
                        move_to_shared_memory(step)
                    if not put(ShardEnd(p) if step is None else step):
                        return
                    if step is not None:
                        still.append((p, steps))
                active = still
    except SampleError as error:
        put(WorkerFailure(worker_id, "SampleError", error.message, sample_error=error))
    except Exception as error:  # noqa: BLE001 - forwarded to the main process, which raises it
        put(WorkerFailure(worker_id, type(error).__name__, str(error), cause=_picklable(error)))
    # Tensors travel as shared-memory handles served by this process: stay alive until the main process is done.
    while not stop.wait(_PARENT_POLL_SECONDS):
        if orphaned():
            return


def _picklable(error: BaseException) -> Optional[BaseException]:
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:  # noqa: BLE001 - an exception that does not survive pickling is sent as text only
        return None


def check_worker_stall_seconds(value: object, options: SampleOptions) -> Optional[float]:
    """``worker_stall_seconds`` as a float (None: wait forever); raises ValueError unless it is None or a positive
    finite number above ``pipe_stall_seconds`` and ``sample_timeout_seconds`` (each of which ends a wait of its own
    with a named skip, and must come first)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and value > 0):
        raise ValueError(f"worker_stall_seconds must be a positive number of seconds or None (wait forever), got "
                         f"{value!r}; try {DEFAULT_WORKER_STALL_SECONDS:g}.")
    for name in ("pipe_stall_seconds", "sample_timeout_seconds"):
        limit = getattr(options, name)
        if limit is not None and value <= limit:
            raise ValueError(f"worker_stall_seconds must be above {name} ({limit:g} s: a wait that ends in a named skip "
                             f"of its own), got worker_stall_seconds = {value!r}; try {limit + 600:g}, or None.")
    return float(value)


def _reading(url: str, last_key: Optional[str]) -> str:
    where = f"after its sample {last_key!r}" if last_key else "before its first sample"
    return f"shard {url!r}, {where}"


def _process_state(pid: int) -> str:
    """What Linux says a process is doing (``/proc/PID/stat``), in words; "" where it cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return ""
    return {"T": "stopped", "t": "stopped by a debugger", "D": "in uninterruptible I/O", "S": "sleeping",
            "R": "running", "Z": "a zombie"}.get(state, f"state {state}")


class _StallWatch:
    """Kills a worker that stalls while the main process is inside ``Queue.get`` receiving its step (adv62).

    A worker stopped (SIGSTOP, a debugger) after it queued steps still has them on the queue: ``get`` finds one at
    once, and unpickling it asks the stopped worker for each tensor's shared-memory file descriptor (torch's
    ``file_descriptor`` strategy: ``resource_sharer`` connects to the worker and waits for its answer with no
    timeout). The main process hung there forever, under any ``worker_stall_seconds``. A worker stopped while its
    queue's feeder thread was writing a step larger than the pipe's buffer (a long caption passed through beside a
    transcript, ``PackedBatch.caption_texts``) left the main process reading the rest of that message, forever too.
    This thread, armed by :func:`_get` for each wait, SIGKILLs the worker once the wait has lasted ``stall_seconds``
    plus one poll: a connection to it then fails; a message it had begun is completed with zeros (the main process
    holds the queue's write end too, so the worker's death alone does not end that read), which do not unpickle.
    Either way :func:`_get` raises the stall error. A worker that died in the middle of a step (the OOM killer) is
    found the same way, within two seconds of its death (a zombie that the main thread, reading, does not reap), and
    named as a death; with no ``stall_seconds`` (None) that is all it watches for. A few lock-protected assignments
    per wait and a read of ``/proc/PID/stat`` every 0.25 s: no measurable cost."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._armed: Optional[tuple[float, float, Any, Any]] = None  # (started, deadline, process, queue)
        self._receiving = False  # the main thread is still inside the wait that the watch ended
        self._zombie_since: Optional[float] = None  # when the armed worker was first seen dead and unreaped
        self.fired: Optional[tuple[str, float]] = None  # the killed worker's state and how long it was waited for
        self.died = False  # the worker had died by itself: killed while it was sending a step, not stalled
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, name="avalign-loader-stall-watch", daemon=True)
        self._thread.start()

    def arm(self, process: Any, started: float, deadline: float, source: Any = None) -> None:
        with self._lock:
            self._armed = (started, deadline, process, source)
            self._zombie_since = None

    def disarm(self) -> None:
        with self._lock:
            self._armed = None
            self._receiving = False

    def close(self) -> None:
        self._closed.set()
        self._thread.join(timeout=2.0)

    def _run(self) -> None:
        while not self._closed.wait(0.25):
            with self._lock:
                if self._armed is None:
                    continue
                now = time.monotonic()
                # A worker that died (the OOM killer) in the middle of sending a step stays a zombie, unreaped, while
                # the main thread reads the rest of its message: no need to wait for the stall limit. (A death between
                # steps is the main thread's own poll's to name, within a second: hence 1.5 s as a zombie.)
                if _process_state(self._armed[2].pid) != "a zombie":
                    self._zombie_since = None
                elif self._zombie_since is None:
                    self._zombie_since = now
                dead = self._zombie_since is not None and now - self._zombie_since >= 1.5
                if now < self._armed[1] and not dead:
                    continue
                started, _, process, source = self._armed
                self._armed, self._receiving = None, True
                self.died = not process.is_alive()  # already dead (OOM killer) in the middle of sending a step
                self.fired = (_process_state(process.pid), time.monotonic() - started)
                process.kill()  # the main thread's receive from it now fails (connection reset) instead of waiting
            self._complete_message(source)

    def _complete_message(self, source: Any, limit_seconds: float = 10.0) -> None:
        """Writes zeros to ``source``'s pipe (in 512-byte writes, each only when the pipe has room: never blocking)
        until the main thread's receive returns."""
        writer = getattr(source, "_writer", None)  # multiprocessing.Queue's write end, held by this process too
        if writer is None:
            return
        give_up = time.monotonic() + limit_seconds
        while self._receiving and not self._closed.is_set() and time.monotonic() < give_up:
            try:
                if select.select([], [writer.fileno()], [], 0.05)[1]:
                    os.write(writer.fileno(), bytes(512))
            except (OSError, ValueError):  # closed meanwhile: the receive has ended
                return


def _stall_error(process: Any, worker_id: int, state: str, waited: float, stall_seconds: float,
                 reading: Any) -> RuntimeError:
    what = reading() if reading is not None else "its shards"
    return RuntimeError(
        f"loader worker {worker_id} (pid {process.pid}{', ' + state if state else ''}) sent nothing for "
        f"{waited:.1f} s (worker_stall_seconds={stall_seconds:g}) while reading {what}; it is alive but "
        "not progressing: stopped (SIGSTOP, a debugger), or a read stuck on a hung network filesystem. The "
        "epoch ends here and the worker is killed; hint: check the shard's storage, or raise "
        "worker_stall_seconds for samples that legitimately take longer (None waits forever)."
    )


def _get(source: Any, process: Any, worker_id: int, *, stall_seconds: Optional[float] = None,
         reading: Any = None, watch: Optional[_StallWatch] = None) -> Any:
    """Next event from a worker queue; raises a clear error if the worker died (even mid-transfer), or if it sent
    nothing for ``stall_seconds`` (None: wait forever), naming what it was reading (``reading()``). With ``watch``,
    a receive that blocks on the stalled worker itself (see :class:`_StallWatch`) ends the same way."""
    started = time.monotonic()
    if watch is not None:  # its deadline after the poll below had its chance; without a limit, deaths only
        watch.arm(process, started, math.inf if stall_seconds is None else started + stall_seconds + 1.0, source)

    def stalled() -> Optional[RuntimeError]:
        if watch is None or watch.fired is None:
            return None
        process.join(timeout=1.0)
        if watch.died or stall_seconds is None:  # without a limit the watch fires on a death only
            return _died(process, worker_id, detail=" (in the middle of sending a step)")
        return _stall_error(process, worker_id, *watch.fired, stall_seconds, reading)

    try:
        while True:
            waited = time.monotonic() - started
            poll = 1.0 if stall_seconds is None else max(0.01, min(1.0, stall_seconds - waited))
            try:
                step = source.get(timeout=poll)
            except queue_module.Empty:
                if (error := stalled()) is not None:
                    raise error from None
                if not process.is_alive():
                    raise _died(process, worker_id) from None
                waited = time.monotonic() - started
                if stall_seconds is not None and waited >= stall_seconds:
                    if watch is not None:
                        watch.disarm()
                    state = _process_state(process.pid)
                    process.kill()  # SIGKILL ends a stopped process too (SIGTERM would stay pending until SIGCONT)
                    process.join(timeout=1.0)
                    raise _stall_error(process, worker_id, state, waited, stall_seconds, reading) from None
            except (ConnectionError, EOFError, OSError) as error:  # a shared-memory tensor whose owner is gone
                if (stall := stalled()) is not None:
                    raise stall from None
                if out_of_descriptors(error):
                    raise _descriptors_error(worker_id, error) from None
                process.join(timeout=2.0)
                raise _died(process, worker_id, detail=f" ({type(error).__name__} while receiving its data)") from None
            except Exception as error:  # noqa: BLE001 - whatever a receive cut by the stall watch raises (torch's rebuild)
                if (stall := stalled()) is not None:
                    raise stall from None
                if out_of_descriptors(error):
                    raise _descriptors_error(worker_id, error) from None
                raise
            else:
                if (error := stalled()) is not None:  # killed just as its step arrived: the epoch ends all the same
                    raise error from None
                return step
    finally:
        if watch is not None:
            watch.disarm()


def _descriptors_error(worker_id: int, error: BaseException) -> RuntimeError:
    """The error for a receive that ran out of file descriptors, naming the limit and what to do."""
    return RuntimeError(f"receiving loader worker {worker_id}'s decoded tensors failed: this process has no file "
                        f"descriptor left ({type(error).__name__}: {error}; {descriptor_words()}). {DESCRIPTOR_REMEDY}")


def _died(process: Any, worker_id: int, detail: str = "") -> RuntimeError:
    code = process.exitcode
    how = f"was killed by signal {-code}" if code is not None and code < 0 else f"exited with code {code}"
    if code == -signal.SIGBUS:  # a write to shared memory that tmpfs could not back
        cause = (f"SIGBUS in a loader worker is nearly always shared memory running out ({shared_memory_words()}): "
                 f"give {SHARED_MEMORY_DIR} more room (docker run --shm-size=8g), or lower num_workers, budgets or "
                 "frame_size")
    elif code is not None and code > 0:  # errors inside its loop come as a WorkerFailure: this one was outside it
        cause = ("an exit code (not a signal) is an error outside its read loop, printed above by the worker; with "
                 "multiprocessing_context='spawn' or 'forkserver' the usual one is a script whose loader code is not "
                 "under `if __name__ == '__main__':` (each worker imports the main script again)")
    else:
        cause = "a native decoder crash or the OOM killer are the usual causes"
    return RuntimeError(f"loader worker {worker_id} (pid {process.pid}) {how} without finishing{detail}; {cause}.")


def make_loader(urls: Union[str, Sequence[str]], *, seed: int, num_workers: int = 0,
                multiprocessing_context: str = "fork", pin_memory: bool = False,
                interleave_shards: int = DEFAULT_INTERLEAVE_SHARDS,
                worker_stall_seconds: Optional[float] = DEFAULT_WORKER_STALL_SECONDS, **options: Any) -> Loader:
    """A resumable loader of :class:`PackedBatch` over WebDataset shards, decoding in ``num_workers`` processes.

    Args:
        urls: Shards: paths, a brace pattern, ``::``-joined lists, fsspec URLs or ``pipe:``.
        seed: Seeds the per-epoch shard shuffle and the packer (same seed → same batches).
        num_workers: Decoding processes (0: decode in this process). Results do not depend on it.
        multiprocessing_context: ``"fork"``, ``"spawn"`` or ``"forkserver"`` for the workers. With ``"fork"`` (or
            no workers) building the loader loads, once per process, what the workers would load before their first
            sample (modules, the pocketsphinx decoder), and the workers forked at each epoch inherit it; spawned
            workers load it again each epoch, so then nothing is preloaded (``loaders.pipeline._preload``).
        pin_memory: Yield batches in pinned host memory (for ``batch.to("cuda", non_blocking=True)``); without an
            accelerator (CUDA …) a warning at each epoch and unpinned batches, as torch's ``DataLoader`` does.
        interleave_shards: Shards read at a time, sample by sample (a multiple of ``num_workers`` keeps every worker
            busy; more mixes the packer's input more and opens more shards at once). Part of the order: batches
            depend on it, not on ``num_workers``.
        worker_stall_seconds: With workers, how long to wait for a worker's next sample before the epoch ends with
            ``RuntimeError`` naming the worker (pid, and ``stopped`` / ``in uninterruptible I/O`` as Linux says), the
            shard and the last sample received from it; the worker is killed. A worker stopped by SIGSTOP, or stuck
            reading a hung network filesystem, used to hang the epoch forever (as torch's ``DataLoader`` does without
            ``timeout=``). Must exceed ``pipe_stall_seconds`` and ``sample_timeout_seconds`` (their waits end in named
            skips); default 900 (:data:`DEFAULT_WORKER_STALL_SECONDS` says why); None waits forever for a live worker (a
            dead one is still named within seconds). Time spent by the
            caller between batches does not count. Unused with ``num_workers=0``.
        **options: Every option of :func:`~loaders.make_dataset` (``tokenizer``, ``budgets``, ``window_seconds``…).

    Returns:
        A :class:`Loader` (an :class:`AVDataset`): iterate it once per epoch; ``set_epoch``, ``stats``,
        ``state_dict``, ``load_state_dict``.

    Raises:
        ValueError: A bad option; the message names it, the valid range and a hint.
        RuntimeError: While iterating: a worker died, failed, or sent nothing for ``worker_stall_seconds``.
        OSError: At the first iteration with workers, when ``TMPDIR`` is too deep for the Unix socket over which the
            workers hand over their tensors (``loaders.pipeline._worker_env.check_worker_socket``).
        FileNotFoundError: Every URL is a local path and none exists.

    Example:
        >>> loader = make_loader("sample_data/shards/shard-{000000..000001}.tar", seed=0, num_workers=2)  # doctest: +SKIP
        >>> for batch in loader:                                                                         # doctest: +SKIP
        ...     print(batch.sample_keys, batch.padding)
    """
    return build(Loader, urls, seed=seed, num_workers=num_workers, multiprocessing_context=multiprocessing_context,
                 pin_memory=pin_memory, interleave_shards=interleave_shards,
                 worker_stall_seconds=worker_stall_seconds, **options)


def _full_signature() -> inspect.Signature:
    """make_loader's own parameters followed by every option of make_dataset (what ``help(make_loader)`` shows)."""
    own = list(inspect.signature(make_loader).parameters.values())[:-1]  # without **options
    names = {p.name for p in own}
    shared = [p for p in inspect.signature(make_dataset).parameters.values() if p.name not in names]
    return inspect.Signature(own + shared, return_annotation="Loader")


make_loader.__signature__ = _full_signature()  # type: ignore[attr-defined]


def _can_pin() -> bool:
    """Whether pinned host memory is available (torch's DataLoader asks the same: an accelerator is present)."""
    accelerator = getattr(torch, "accelerator", None)
    return bool(accelerator.is_available()) if accelerator is not None else torch.cuda.is_available()
