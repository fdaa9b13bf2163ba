"""``make_loader`` workers when shared memory runs out: an error that names ``/dev/shm``, not lost samples.

A worker hands its decoded tensors to the main process in shared memory (``/dev/shm``; 64 MB by default in a Docker
container). Before: the queue's feeder thread failed to copy a step there ("unable to write to file </torch_…>: No
space left on device"), printed it and dropped the step, and the epoch ended with "no sample could be read from the
shards … they are empty or their source failed"; or the worker died of SIGBUS, named as "a native decoder crash or the
OOM killer".
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from loaders import make_loader

ROOT = Path(__file__).resolve().parents[1]
SHARDS = str(ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar")
OPTIONS = dict(budgets=(300, 160_000, 512), window_seconds=2.0, frame_size=(112, 112))

_SCRIPT = """
import sys, loaders
loader = loaders.make_loader(sys.argv[1], seed=0, num_workers=2, budgets=(300, 160_000, 512), window_seconds=2.0,
                             frame_size=(112, 112), worker_stall_seconds=400)
print("KEYS", len([k for batch in loader for k in batch.sample_keys]))
"""


def _can_mount_a_small_dev_shm() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /dev/shm"],
                           capture_output=True, timeout=30)
    return probe.returncode == 0


@pytest.mark.timeout(600)
@pytest.mark.skipif(not _can_mount_a_small_dev_shm(), reason="needs `unshare -m` and mount (root in a container)")
def test_a_full_dev_shm_ends_the_epoch_naming_it():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    command = f"mount -t tmpfs -o size=4m tmpfs /dev/shm && exec {sys.executable} -c \"$0\" \"$1\""
    run = subprocess.run(["unshare", "-m", "sh", "-c", command, _SCRIPT, SHARDS], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode != 0, run.stdout  # the 6 clips' 2 s windows at 112x112 do not fit in 4 MiB
    last = run.stderr.strip().splitlines()[-1]
    assert re.search(r"loader worker \d failed: RuntimeError: a loader worker could not put [\d.]+ MiB of decoded "
                     r"tensors in shared memory", last), run.stderr[-3000:]
    assert "/dev/shm is 4 MiB" in last and "--shm-size" in last
    assert "no sample could be read" not in run.stderr and "No space left on device" not in run.stderr


class _BusErrorInOneWorker:
    """A tokenizer that raises SIGBUS in the first worker that calls it (as a write to shared memory that tmpfs cannot
    back does); ``marker`` records that it fired."""

    def __init__(self, marker: Path) -> None:
        self.marker, self.parent = str(marker), os.getpid()

    def __call__(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        if os.getpid() != self.parent:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                pass
            else:
                signal.signal(signal.SIGBUS, signal.SIG_DFL)  # Python's faulthandler may be on
                os.kill(os.getpid(), signal.SIGBUS)
        pieces = [m.span() for m in re.finditer(r"\S+", text)]
        return list(range(len(pieces))), pieces


@pytest.mark.timeout(300)
def test_a_worker_killed_by_sigbus_is_named_as_shared_memory(tmp_path):
    bus = _BusErrorInOneWorker(tmp_path / "fired")
    with pytest.raises(RuntimeError) as info:
        list(make_loader(SHARDS, seed=0, num_workers=2, tokenizer=bus, **OPTIONS))
    assert (tmp_path / "fired").exists()
    message = str(info.value)
    assert re.search(r"loader worker \d \(pid \d+\) was killed by signal 7 without finishing", message), message
    assert "shared memory running out" in message and "/dev/shm is " in message and "--shm-size" in message
    assert "native decoder crash" not in message
