"""The decode watchdog: a hang that holds the GIL is cut off; results and errors come back typed."""
import re
import time

import pytest
import torch

import loaders
from loaders.media import call_with_timeout


def _hang_holding_the_gil():
    # Catastrophic regex backtracking runs in C without releasing the GIL: like a native decoder hang.
    return re.match(r"(a+)+$", "a" * 64 + "b")


def test_gil_holding_hang_is_killed_within_the_limit():
    t0 = time.perf_counter()
    with pytest.raises(loaders.DecodeTimeout, match="no result after 1 s"):
        call_with_timeout(_hang_holding_the_gil, timeout_seconds=1.0)
    assert time.perf_counter() - t0 < 5.0


def test_result_and_errors_come_back(media_dir):
    clip = call_with_timeout(loaders.read_video, media_dir / "cfr30.mp4", timeout_seconds=30, fps=2.0)
    direct = loaders.read_video(media_dir / "cfr30.mp4", fps=2.0)
    assert torch.equal(clip.frames, direct.frames) and torch.equal(clip.pts_seconds, direct.pts_seconds)
    with pytest.raises(loaders.DecodeError, match="no video stream"):
        call_with_timeout(loaders.read_video, media_dir / "audio.m4a", timeout_seconds=30)
