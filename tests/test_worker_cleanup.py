"""A training process killed with SIGKILL mid-epoch must not leave loader workers or shared memory behind.

The loader runs with ``num_workers=2`` in a child process (a fork of the test process) that reports its worker
pids after the first batch and then consumes slowly (the workers fill their queues and block). The test SIGKILLs the child and
checks that (1) every worker pid is gone within a few seconds and (2) no ``/dev/shm`` entry created during
the test (``torch_*``, multiprocessing ``sem.*`` / ``mp-*``) remains. Orphans found are killed by pid.
"""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import ffmpeg, start_forked
from tests.corrupt_cases import good_transcript, write_tar

def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return sorted(out)


def _training_child(shards: list[str], report_fd: int) -> None:
    """The process to be killed (a fork of the test process): a make_loader epoch with 2 workers that writes its
    children's pids to ``report_fd`` after the first batch, then consumes slowly."""
    from loaders import make_loader

    loader = make_loader(shards, seed=0, num_workers=2, budgets=(64, 64000, 64), buffer_size=2, min_fill=0.1,
                         frame_size=(24, 32), max_items=4)
    for i, batch in enumerate(loader):
        if i == 0:
            os.write(report_fd, (json.dumps(_children(os.getpid())) + "\n").encode())
            os.close(report_fd)
        time.sleep(0.5)

_SHM = Path("/dev/shm")
_OURS = ("torch_", "sem.mp-", "mp-", "pymp-")


def _shm_entries() -> set[str]:
    return {p.name for p in _SHM.iterdir() if p.name.startswith(_OURS)} if _SHM.is_dir() else set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"  # a zombie has exited (only its reaping is pending)


HANG_GUARD_SECONDS = 60.0
"""How long to wait for the workers to exit after their parent's SIGKILL: a hang guard on a loaded machine, not
a speed check (a worker notices its parent is gone at its next queue poll, every 0.5 s, or once the sample it
is decoding is done); the loop ends as soon as they have exited."""


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[str]:
    d = tmp_path_factory.mktemp("cleanup")
    clip = d / "clip.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "1",
           "-c:v", "libx264", "-g", "5", "-c:a", "aac", "-ac", "1", str(clip))
    media, text = clip.read_bytes(), good_transcript()
    paths = []
    for s in range(8):  # 8 shards x 6 clips: far more than the queues hold, so the epoch is mid-way when killed
        members = [m for k in range(6) for m in ((f"s{s}k{k}.json", text), (f"s{s}k{k}.mp4", media))]
        paths.append(write_tar(d / f"shard-{s:02d}.tar", members))
    return paths


@pytest.fixture(scope="module")
def killed_run(shards) -> dict:
    """Start the loader child, SIGKILL it after its first batch; returns worker pids still alive 5 s later and
    the /dev/shm entries left once every process of the run (orphans included, killed by pid) is gone."""
    shm_before = _shm_entries()
    read_fd, write_fd = os.pipe()
    child = start_forked(_training_child, shards, write_fd)
    os.close(write_fd)
    workers: list[int] = []
    reaped = False
    try:
        with os.fdopen(read_fd) as report:
            line = report.readline()
        assert line, "the loader child reported nothing (it died before its first batch)"
        workers = json.loads(line)
        assert len(workers) >= 2, f"expected 2 loader workers, found children {workers}"
        assert os.waitpid(child, os.WNOHANG) == (0, 0), "the epoch finished before the kill: make the shards longer"
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        reaped = True
        deadline = time.monotonic() + HANG_GUARD_SECONDS  # returns as soon as they are gone
        while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
            time.sleep(0.1)
        orphans = [pid for pid in workers if _alive(pid)]
    finally:
        if not reaped:
            os.kill(child, signal.SIGKILL)
            os.waitpid(child, 0)
        for pid in workers:  # only the pids the child reported as its own workers
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + HANG_GUARD_SECONDS
    while time.monotonic() < deadline and any(_alive(pid) for pid in workers):
        time.sleep(0.1)
    return {"workers": workers, "orphans": orphans, "shm_left": sorted(_shm_entries() - shm_before)}


@pytest.mark.timeout(90)
def test_sigkill_mid_epoch_leaves_no_orphaned_workers(killed_run):
    assert not killed_run["orphans"], (
        f"loader workers {killed_run['orphans']} of {killed_run['workers']} still running {HANG_GUARD_SECONDS:g} s "
        "after their parent was SIGKILLed")


@pytest.mark.timeout(90)
def test_sigkill_mid_epoch_leaves_no_shared_memory(killed_run):
    assert len(killed_run["workers"]) >= 2
    assert not killed_run["shm_left"], f"/dev/shm entries left behind: {killed_run['shm_left']}"
