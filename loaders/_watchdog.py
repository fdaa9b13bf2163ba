"""A decode watchdog: run a native decode in a forked child and give up after a time limit.

Why a process, not a thread: decord can hang *holding the GIL* on a header that over-counts frames
(decord #373), and a hung native call cannot be interrupted from Python in the same process. A forked
child shares nothing it can corrupt; on timeout it is killed (SIGKILL) and the caller gets
:class:`~loaders.errors.DecodeTimeout`, which the loader counts as a skipped sample. Results come back
through a pipe; torch tensors travel through shared memory (torch's multiprocessing reductions), so a
decoded clip is not copied through the pipe byte by byte.

Cost: one ``fork`` per call (a few ms), so the loader enables it per call with ``timeout_seconds``.
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import traceback
from typing import Any, Callable

logger = logging.getLogger(__name__)

__all__ = ["call_with_timeout"]


def _child(conn, fn: Callable, args: tuple, kwargs: dict) -> None:
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
        conn.send(("error", (RuntimeError(f"cannot return the result from the watchdog child: {e}"), "")))
    # Tensors are sent as shared-memory handles served by this process: stay alive until the parent
    # has rebuilt them and says so.
    try:
        if conn.poll(60.0):
            conn.recv()
    finally:
        conn.close()


def call_with_timeout(fn: Callable[..., Any], *args: Any, timeout_seconds: float, label: str = "", **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` in a forked child; raises DecodeTimeout after ``timeout_seconds``.

    Exceptions raised by ``fn`` are re-raised in the caller with their type.
    """
    import torch.multiprocessing  # noqa: F401  (registers tensor reductions: tensors come back via shared memory)

    from loaders.errors import DecodeTimeout

    if not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be > 0, got {timeout_seconds = }")
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=True)
    process = ctx.Process(target=_child, args=(child, fn, args, kwargs), daemon=True)
    process.start()
    child.close()
    try:
        if not parent.poll(timeout_seconds):
            raise DecodeTimeout(f"{label or getattr(fn, '__name__', 'decode')}: no result after {timeout_seconds:g} s; decoder killed")
        try:
            status, payload = parent.recv()
            parent.send("received")
        except EOFError:
            process.join(1.0)
            raise RuntimeError(f"{label}: decoder process died (exit code {process.exitcode})") from None
    finally:
        if process.is_alive():
            os.kill(process.pid, signal.SIGKILL)
        process.join(5.0)
        parent.close()
    if status == "ok":
        return payload
    error, trace = payload
    logger.debug("watchdog child failed:\n%s", trace)
    raise error
