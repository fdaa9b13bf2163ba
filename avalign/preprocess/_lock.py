"""One ``avalign preprocess`` at a time per output directory: an advisory ``flock`` on a lock file in it.

Without it a second run deletes the first run's temporaries (``remove_stale_temporaries``) and both
write the same shards. The lock is held for the whole write phase and released when the run ends
(or its process dies: the kernel drops ``flock`` locks with the last descriptor, so a SIGKILLed run
never leaves a stale lock behind). Forked workers share the lock's descriptor: while orphaned workers
of a killed run are still alive, the directory stays locked.
"""
from __future__ import annotations

import errno
import fcntl
import logging
import os
from contextlib import contextmanager
from typing import Iterator

logger = logging.getLogger(__name__)

__all__ = ["LOCK_NAME", "output_lock"]

LOCK_NAME = ".avalign-preprocess.lock"
"""The lock file's name in the output directory (it holds the pid of the run that has it)."""


@contextmanager
def output_lock(output_dir: str) -> Iterator[str]:
    """Hold the output directory's lock for the ``with`` block; yields the lock file's path.

    Raises:
        BlockingIOError: another run (this machine, or one sharing the directory over a file system with
            ``flock``) holds it; the message names its pid.
    """
    path = os.path.join(output_dir, LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno not in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES):
                raise
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            raise BlockingIOError(
                errno.EAGAIN,
                f"output directory {output_dir!r} is in use by another `avalign preprocess` (pid {holder}); "
                "hint: wait for it to finish (a rerun then resumes), or choose another output directory",
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock (forked children holding a copy keep it until they exit)
