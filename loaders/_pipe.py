"""``pipe:COMMAND`` shards: the command's stdout as a stream, with its exit status, its stderr and a stall bound.

webdataset's ``gopen`` (``gopen_pipe`` → ``Pipe``) runs the command with ``shell=True`` and raises ``IOError`` on an
exit status other than 0 or 141 (a shell's SIGPIPE), but lets stderr through unread, has no bound on a read that
never returns, and on close waits up to two hours (``timeout=7200``) for the command to end: a ``pipe:sleep 1000``
holds its loader worker that long, and a failing command reaches the tar reader as an empty stream. This stream keeps
gopen's conventions (``shell=True``, webdataset's ``unsafe_gopen`` switch, 141 not a failure) and adds:

- the exit status and the last :data:`STDERR_TAIL_BYTES` of stderr in the error (:class:`PipeError`), and how
  many bytes had come before it (0: the shard never opened; more: it was cut);
- a stall bound: no stdout byte for ``stall_seconds`` (or the command still running that long after closing its
  stdout) kills the command's whole process group (it runs in a session of its own: ``sh -c 'a | b'`` and its
  children) and raises :class:`PipeError` with ``stalled`` set;
- ``close`` before the end (the reader stopped early) kills the group at once instead of waiting for it.

Every path out of the stream (end, failure, stall, ``close``, garbage collection) reaps the shell (``wait``) and
leaves nothing running.

A reader killed outright (SIGKILL, the OOM killer, a DataLoader worker terminated) never closes the stream. On Linux
the command dies with it: the shell is started with ``prctl(PR_SET_PDEATHSIG, SIGTERM)`` and runs the command as
``trap 'kill -9 0' TERM; (eval COMMAND) & wait $!`` (:data:`_DIE_WITH_READER`), so that the reader's death makes the
shell kill its whole process group (a trapped signal interrupts ``wait``, where a foreground command would defer
it); the command's exit status is the shell's, as before. The kernel sends the signal when the *thread* that
started the command exits: a stream must be read to its end (or closed) by the thread that opened it, or while that
thread lives. Elsewhere (macOS, Windows: no parent-death signal) a command that writes dies of SIGPIPE at its next
write, one that hangs without writing stays until it ends or the stall bound of a live reader kills it.
"""
from __future__ import annotations

import io
import logging
import os
import select
import signal
import subprocess
import sys
import time
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["DEFAULT_PIPE_STALL_SECONDS", "PipeError", "PipeStream", "STDERR_TAIL_BYTES"]

DEFAULT_PIPE_STALL_SECONDS = 300.0
"""A ``pipe:`` command that sends no byte for this long is killed and its shard skipped: long enough for a slow
object store's first byte, short enough that a hung command costs minutes, not a worker."""
STDERR_TAIL_BYTES = 2000
"""The last bytes of a command's stderr kept for its error message."""
_STATUS_NOT_FAILURE = (0, 141, -signal.SIGPIPE)
"""Exit statuses that are not a failure: 0, and SIGPIPE (the reader stopped early; 141 from a shell, as gopen)."""


_DIE_WITH_READER = 'trap "kill -9 0" TERM; (c=$1; shift; eval "$c") & wait $!'
"""The shell script that runs a command (its ``$1``) so that SIGTERM to the shell, the parent-death signal, kills the
shell's process group; otherwise the shell exits with the command's status."""


def _command_args(command: str) -> tuple[object, dict]:
    """``(args, Popen options)`` that run ``command`` as ``sh -c`` does, dying with the reader where the platform can
    (Linux: see the module docstring)."""
    prctl = _linux_prctl()
    if prctl is None:
        return command, {"shell": True}
    reader = os.getpid()

    def die_with_reader() -> None:  # in the child, between fork and exec: no allocation-heavy Python here
        prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != reader:  # the reader died before the signal was armed
            os._exit(1)

    return ["/bin/sh", "-c", _DIE_WITH_READER, "sh", command], {"preexec_fn": die_with_reader}


_PR_SET_PDEATHSIG = 1
"""``<linux/prctl.h>``: the signal the calling process gets when its parent (the thread that forked it) dies."""


def _linux_prctl():
    """libc's ``prctl`` on Linux (loaded in the parent, never between fork and exec), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no libc symbol (a static or unusual runtime): behave as elsewhere
        return None


class PipeError(OSError):
    """A ``pipe:`` command failed (non-zero exit) or stalled (killed after ``stall_seconds`` without output).

    Attributes:
        command: the shell command.
        status: its exit status (negative: killed by that signal); None if it was still running when killed.
        stderr_tail: the last :data:`STDERR_TAIL_BYTES` of its stderr, decoded.
        bytes_read: stdout bytes read before the failure (0: nothing ever came).
        stalled: True when the stall bound ended it.
    """

    def __init__(self, message: str, *, command: str, status: Optional[int], stderr_tail: str, bytes_read: int,
                 stalled: bool) -> None:
        super().__init__(message)
        self.command, self.status, self.stderr_tail = command, status, stderr_tail
        self.bytes_read, self.stalled = bytes_read, stalled


class PipeStream(io.RawIOBase):
    """The stdout of ``command`` (a ``pipe:`` URL without its prefix), read with a stall bound; see the module.

    Raises (from ``read``):
        PipeError: the command exited with a failing status (raised at the end of its output) or stalled.
    """

    def __init__(self, command: str, *, stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS) -> None:
        super().__init__()
        if not stall_seconds > 0:
            raise ValueError(f"stall_seconds must be > 0, got {stall_seconds = }")
        from webdataset import utils as wds_utils

        if getattr(wds_utils, "enforce_security", False):  # webdataset's own switch (WDS_SECURE / unsafe_gopen)
            raise ValueError("pipe: URLs are disabled by webdataset's enforce_security (unsafe_gopen is False)")
        self.command = command
        self.stall_seconds = float(stall_seconds)
        self.bytes_read = 0
        self.error: Optional[PipeError] = None
        """The failure this stream raised, kept for the shard reader (which may only see its own wrapper)."""
        self._tail = bytearray()
        self._done = False
        args, options = _command_args(command)
        self._proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      start_new_session=True, **options)  # noqa: S602 - gopen's pipe: contract
        self._out, self._err = self._proc.stdout, self._proc.stderr
        for stream in (self._out, self._err):
            os.set_blocking(stream.fileno(), False)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._done:
            return 0
        if self.closed:
            raise ValueError("read from a closed pipe stream")
        deadline = time.monotonic() + self.stall_seconds
        while True:
            watched = [self._out] + ([self._err] if not self._err.closed else [])
            ready, _, _ = select.select(watched, [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                self._fail(stalled=True, why=f"sent no bytes for {self.stall_seconds:g} s")
            if self._err in ready:
                self._drain_stderr()
            if self._out in ready:
                try:
                    count = os.readv(self._out.fileno(), [buffer])
                except BlockingIOError:
                    continue
                if count:
                    self.bytes_read += count
                    return count
                self._finish(deadline)
                return 0

    def _drain_stderr(self) -> None:
        """Read what stderr holds now (EOF closes it), keeping the tail."""
        while not self._err.closed:
            try:
                chunk = os.read(self._err.fileno(), 65536)
            except BlockingIOError:
                return
            if not chunk:
                self._err.close()
                return
            self._tail += chunk
            del self._tail[:-STDERR_TAIL_BYTES]

    def _finish(self, deadline: float) -> None:
        """stdout ended: wait (within the stall bound) for the command to exit, then check its status."""
        try:
            status = self._proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self._fail(stalled=True, why=f"closed its output but was still running {self.stall_seconds:g} s later")
        self._drain_stderr()
        self._done = True
        if status not in _STATUS_NOT_FAILURE:
            self._fail(stalled=False, why=f"exited with status {status}", status=status)

    def _fail(self, *, stalled: bool, why: str, status: Optional[int] = None) -> None:
        if stalled:
            self._kill()
        self._done = True
        stderr = bytes(self._tail).decode("utf-8", "replace").strip()
        message = f"pipe command {self.command!r} {why} after {self.bytes_read} bytes of output"
        if stalled:
            message += "; killed with its process group (the stall bound, pipe_stall_seconds)"
        message += f"; stderr: {stderr!r}" if stderr else "; no stderr"
        self.error = PipeError(message, command=self.command, status=status, stderr_tail=stderr,
                               bytes_read=self.bytes_read, stalled=stalled)
        raise self.error

    def _kill(self) -> None:
        """Kill the command's process group (the shell and everything it started) and reap the shell."""
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self._proc.kill()
        else:  # the shell is gone; its children (same group) may not be
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        self._proc.wait()

    def status_after_end(self, *, max_bytes: int = 1 << 20, wait_seconds: float = 5.0) -> Optional[PipeError]:
        """After the reader found the end of what it reads (a tar's end-of-archive blocks): the command's failure, if
        it fails. What is left of its output (the tar's last record) is read and dropped, up to ``max_bytes``, and the
        command waited for, ``wait_seconds`` at most (or the stall bound, if shorter); a command still sending or
        running after that is not waited for (None: it is killed on ``close``, as before). adv66: ``pipe:tar cf - a b``
        where ``b`` cannot be read writes a complete tar without ``b`` and exits 2; the reader, done at the end of the
        archive, killed it unread and its samples were lost without a word."""
        if self._done or self.closed:
            return self.error
        left, stall_seconds = max_bytes, self.stall_seconds
        self.stall_seconds = min(stall_seconds, wait_seconds)
        try:
            while left > 0:
                chunk = self.read(min(left, 65536))
                if not chunk:
                    return None
                left -= len(chunk)
        except PipeError as error:
            return None if error.stalled else error  # (still running: not a failure it reported)
        finally:
            self.stall_seconds = stall_seconds
        return None

    def close(self) -> None:
        """Close the stream; a command still running (the reader stopped early) is killed, never waited for."""
        if not self.closed:
            try:
                self._kill()
            finally:
                self._out.close()
                self._err.close()
        super().close()

    @property
    def pid(self) -> int:
        """The shell's pid, which is also the command's process-group id."""
        return self._proc.pid
