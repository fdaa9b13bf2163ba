"""The decode watchdog: a hang that holds the GIL is cut off; results and errors come back typed."""
import os
import re

import pytest
import torch

import loaders
from loaders.media import call_with_timeout, heap_frozen_for_fork


def _hang_holding_the_gil(pid_file):
    # Catastrophic regex backtracking runs in C without releasing the GIL: like a native decoder hang
    # (2**64 steps: it never finishes on its own, so the call can only come back by the watchdog's kill).
    pid_file.write_text(str(os.getpid()))
    return re.match(r"(a+)+$", "a" * 64 + "b")


def test_gil_holding_hang_is_killed_within_the_limit(tmp_path, watchdog_waits):
    with pytest.raises(loaders.DecodeTimeout, match="no result after 1 s"):
        call_with_timeout(_hang_holding_the_gil, tmp_path / "child.pid", timeout_seconds=1.0)
    # The caller blocked in one wait, of exactly the limit (no clock read: a loaded machine cannot fail this),
    # and the hung child is gone: killed and reaped, not left spinning.
    assert watchdog_waits == [1.0]
    with pytest.raises(ProcessLookupError):
        os.kill(int((tmp_path / "child.pid").read_text()), 0)


def test_result_and_errors_come_back(media_dir):
    clip = call_with_timeout(loaders.read_video, media_dir / "cfr30.mp4", timeout_seconds=30, fps=2.0)
    direct = loaders.read_video(media_dir / "cfr30.mp4", fps=2.0)
    assert torch.equal(clip.frames, direct.frames) and torch.equal(clip.pts_seconds, direct.pts_seconds)
    with pytest.raises(loaders.DecodeError, match="no video stream"):
        call_with_timeout(loaders.read_video, media_dir / "audio.m4a", timeout_seconds=30)


_FORK_AFTER_OPENMP = r"""
import torch
from loaders._watchdog import call_with_timeout

torch.set_num_threads(2)
x = torch.ones(4_000_000)
assert float((x + x).sum()) == 8e6  # the parent's OpenMP thread pool is up (torch's parallel_for)
print(float(call_with_timeout(lambda: (x + x).sum().item(), timeout_seconds=60)))
"""


def test_child_runs_torch_after_the_parent_ran_openmp_threads():
    """GNU OpenMP is not fork-safe: a forked child that enters a parallel region hangs once the parent has run
    one; the watchdog's child uses one thread. Checked in a subprocess with two OpenMP threads, whatever the
    test run's own OMP_NUM_THREADS (make test sets 1)."""
    import subprocess
    import sys

    from tests.conftest import REPO

    env = dict(os.environ, OMP_NUM_THREADS="2", PYTHONPATH=str(REPO))
    proc = subprocess.run([sys.executable, "-c", _FORK_AFTER_OPENMP], capture_output=True, text=True, env=env,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["8000000.0"]


def test_heap_frozen_for_fork_keeps_a_freeze_the_process_made_itself():
    """Without a freeze of the process's own, the heap is frozen inside the context and unfrozen on exit; after the
    process's own ``gc.freeze()`` (a pre-fork server's, or tests/conftest.py's), the freeze stays on exit."""
    import gc

    frozen_by_the_session = gc.get_freeze_count()
    gc.unfreeze()
    try:
        with heap_frozen_for_fork():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() == 0
        gc.freeze()
        own = gc.get_freeze_count()
        with heap_frozen_for_fork():
            assert gc.get_freeze_count() >= own
        assert gc.get_freeze_count() >= own > 0
    finally:
        gc.unfreeze()
        if frozen_by_the_session:
            gc.freeze()
