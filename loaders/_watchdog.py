"""A decode watchdog: run a native decode in a forked child and give up after a time limit.

Why a process, not a thread: decord can hang *holding the GIL* on a header that over-counts frames
(decord #373), and a hung native call cannot be interrupted from Python in the same process; a native
crash (a segfault in a decoder) would take the whole process with it. A forked child shares nothing it
can corrupt: on timeout it is killed (SIGKILL) and the caller gets :class:`~loaders.errors.DecodeTimeout`;
when it dies (a crash, a kill) the caller gets :class:`~loaders.errors.DecodeError` naming the signal.
Both are counted skips of one sample. Results come back through a pipe; torch tensors travel through
shared memory (torch's multiprocessing reductions), so a decoded clip is not copied through the pipe.

The child is made with ``os.fork``, not ``multiprocessing.Process``: it must work inside daemonic
processes too (torch ``DataLoader`` workers, ``multiprocessing`` pool workers, another watchdog child),
where ``multiprocessing`` refuses to start children. It is killed when its parent dies
(:func:`exit_with_parent`), so a SIGKILLed caller leaves no decoder behind.

Cost: one ``fork`` per call (a few ms), so callers enable it per call with ``timeout_seconds``.

Who uses it: ``read_video``'s decord fallback (``backend="auto"`` when PyAV fails: ``fallback_timeout_seconds``),
so the loader too through ``read_video``; and ``avalign preprocess`` around each sample (``--timeout``). The
loader's own per-sample limit (``sample_timeout_seconds``) is a timer in the worker, not this watchdog.
"""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import signal
import threading
import time
import traceback
from typing import Any, Callable, Iterator

logger = logging.getLogger(__name__)

__all__ = ["call_with_timeout", "exit_with_parent", "heap_frozen_for_fork"]

_PR_SET_PDEATHSIG = 1
_PARENT_POLL_SECONDS = 0.5


@contextlib.contextmanager
def heap_frozen_for_fork() -> Iterator[None]:
    """Around starting forked worker processes: garbage in reference cycles (e.g. a decoder a caller dropped) is
    collected here, in the parent, where its decode threads exist, and the heap is frozen (``gc.freeze``) so a
    forked child never collects an inherited object: a child freeing a decoder would wait on frame threads it does
    not have, and hang. Used by ``avalign preprocess``'s pool and ``make_loader``'s workers.

    On exit the heap is unfrozen again, unless the process had frozen it itself before (``gc.freeze()``, as pre-fork
    servers do to keep the collector off inherited pages): that freeze, and what this one added to it, stay."""
    frozen_before = gc.get_freeze_count() > 0
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        if not frozen_before:
            gc.unfreeze()


def exit_with_parent() -> None:
    """Make this (child) process die when its parent does: ``PR_SET_PDEATHSIG`` on Linux, and a daemon thread
    that exits the process once the parent is gone (re-parented), for the cases the signal misses.

    Used as the initializer of ``avalign preprocess``'s worker pool and in every watchdog child: a parent
    killed by SIGKILL (the OOM killer) must not leave workers blocked forever on a queue.
    """
    parent = os.getppid()
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the thread below still does the job
        pass
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(_PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="avalign-exit-with-parent", daemon=True).start()


def _child_main(conn, fn: Callable, args: tuple, kwargs: dict) -> None:
    # What multiprocessing's own children do after a fork: fresh locks, and a fresh resource sharer, which
    # serves the file descriptors of the shared-memory tensors sent below.
    from multiprocessing import util

    util._run_after_forkers()
    exit_with_parent()
    # The parent may have run OpenMP parallel regions (torch intra-op threads); GNU OpenMP is not
    # fork-safe and the child would hang in its first parallel region. One thread avoids entering any
    # (what torch's DataLoader workers do too).
    import torch

    torch.set_num_threads(1)
    try:
        result = ("ok", fn(*args, **kwargs))
    except BaseException as e:  # report every failure to the parent, typed
        result = ("error", (e, traceback.format_exc()))
    try:
        conn.send(result)
    except Exception as e:  # unpicklable result or exception
        conn.send(("error", (RuntimeError(f"cannot return the result from the watchdog child: {type(e).__name__}: {e}"), "")))
    # Tensors are sent as shared-memory handles served by this process: stay alive until the parent
    # has rebuilt them and says so.
    if conn.poll(60.0):
        conn.recv()


def _describe_exit(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = f"signal {number}"
        return f"killed by {name}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _reap(pid: int, *, kill: bool) -> int:
    """Wait for the child (killing it first if asked); its wait status (0 if already reaped)."""
    if kill:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        return os.waitpid(pid, 0)[1]
    except ChildProcessError:
        return 0


def call_with_timeout(fn: Callable[..., Any], *args: Any, timeout_seconds: float, label: str = "", **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a forked child; raises DecodeTimeout after ``timeout_seconds``.

    Exceptions raised by ``fn`` are re-raised in the caller with their type. A child that dies without
    answering (a segfault in native code, a kill) raises :class:`~loaders.errors.DecodeError` (reason
    ``decode``) naming how it died: a crash is contained to the child.
    """
    import multiprocessing.connection

    import torch.multiprocessing  # noqa: F401  (registers tensor reductions: tensors come back via shared memory)

    from avcore import DecodeError, DecodeTimeout

    if not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds = }")
    what = label or getattr(fn, "__name__", "decode")
    parent, child = multiprocessing.connection.Pipe(duplex=True)
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        code = 0
        try:
            parent.close()
            _child_main(child, fn, args, kwargs)
        except BaseException:  # noqa: BLE001 - nothing may escape a forked child
            code = 1
        finally:
            os._exit(code)
    child.close()
    status = None
    try:
        if not parent.poll(timeout_seconds):
            raise DecodeTimeout(f"{what}: no result after {timeout_seconds:g} s; decoder killed")
        try:
            outcome, payload = parent.recv()
            parent.send("received")
        except (EOFError, ConnectionError, OSError):
            status = _reap(pid, kill=False)
            raise DecodeError(f"{what}: the decoder process died ({_describe_exit(status)}); "
                              "the crash was contained to it") from None
    finally:
        if status is None:
            _reap(pid, kill=True)
        parent.close()
    if outcome == "ok":
        return payload
    error, trace = payload
    logger.debug("watchdog child failed:\n%s", trace)
    raise error
