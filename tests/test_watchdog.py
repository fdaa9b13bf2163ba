"""The decode watchdog: a hang that holds the GIL is cut off; results and errors come back typed."""
import os
import re

import pytest
import torch

import loaders
from loaders._watchdog import call_with_timeout


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
