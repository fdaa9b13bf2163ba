"""soak66: what training processes left in /dev/shm and /tmp: tail boards of processes that die without their finalizer,
and the multiprocessing temporary directories of persistent DataLoader workers.

A DataLoader over ``make_dataset`` with several workers merges the workers' tails on a small board directory, which
the dataset's process removes when it drops the dataset or exits normally. A process that is killed (SIGKILL, the
OOM killer, SIGTERM's default action) or leaves with ``os._exit`` left it in ``/dev/shm`` for good: a job preempted
and resumed again and again added one directory per kill, and ``make_loader``, which never merges, made one too.
"""
from __future__ import annotations

import gc
import glob
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from torch.utils.data import DataLoader

from loaders import make_dataset, make_loader
from tests.conftest import REPO, start_forked
from tests.test_dataset import OPTIONS, _windows, shards  # noqa: F401 - the module fixture

PARENT = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()


def _boards(pid: int) -> list[str]:
    return sorted(glob.glob(os.path.join(PARENT, f"avalign-tails-{pid}-*")))


def _age(path: str, seconds: float) -> None:
    """Sets the mtime of ``path`` and of what it holds ``seconds`` back (a board left that long ago)."""
    old = time.time() - seconds
    for entry in os.scandir(path):
        os.utime(entry.path, (old, old))
    os.utime(path, (old, old))


def _one_epoch(paths, kill: bool) -> None:
    """A training process's epoch (DataLoader, 2 workers); then, its dataset alive, it is killed or leaves with
    ``os._exit``."""
    dataset = make_dataset(paths, seed=5, **OPTIONS)
    assert list(DataLoader(dataset, batch_size=None, num_workers=2))
    if kill:
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(0)


def test_boards_of_killed_training_processes_are_removed_when_the_next_dataset_is_built(shards):
    dead = []
    for kill in (True, False):  # two preempted runs: SIGKILL, os._exit
        pid = start_forked(_one_epoch, shards["paths"][:2], kill)
        _, status = os.waitpid(pid, 0)
        assert (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL) if kill else os.WEXITSTATUS(status) == 0
        dead.append(pid)
    left = [_boards(pid) for pid in dead]
    gc.collect()
    earlier = set(_boards(os.getpid()))  # datasets of earlier tests in this process, if any are still alive
    try:
        assert [len(b) for b in left] == [1, 1]  # each run left its board (its finalizer never ran)
        _age(left[0][0], 1000.0)  # untouched for longer than MERGE_WAIT_SECONDS (900 s)
        live = make_dataset(shards["paths"][:2], seed=5, **OPTIONS)  # this process's own board, aged too: never removed
        assert len(list(DataLoader(live, batch_size=None, num_workers=2))) >= 2
        [mine] = set(_boards(os.getpid())) - earlier
        _age(mine, 1000.0)

        make_dataset(shards["paths"], seed=5, **OPTIONS)
        assert [len(_boards(pid)) for pid in dead] == [0, 1]  # the aged dead one gone; the recent one kept
        assert set(_boards(os.getpid())) == earlier | {mine}  # a live process's board stays, however old
        _age(left[1][0], 1000.0)
        make_loader(shards["paths"], seed=5, num_workers=2, **OPTIONS)  # make_loader builds a dataset too
        assert [len(_boards(pid)) for pid in dead] == [0, 0]
        del live
        gc.collect()
        assert set(_boards(os.getpid())) == earlier  # dropped with its dataset, as before
    finally:
        for boards in left:
            for path in boards:
                if os.path.isdir(path):
                    for entry in os.scandir(path):
                        for inner in (os.scandir(entry.path) if entry.is_dir() else ()):
                            os.remove(inner.path)
                        (os.rmdir if entry.is_dir() else os.remove)(entry.path)
                    os.rmdir(path)


def test_only_a_pass_that_merges_tails_makes_a_board(shards):
    """``make_loader`` (it merges in its own process) and one-worker or in-process DataLoader passes never merge:
    they make no directory; two DataLoader workers make one, named with the dataset's process id."""
    gc.collect()
    earlier = set(_boards(os.getpid()))  # datasets of earlier tests in this process, if any are still alive
    loader = make_loader(shards["paths"], seed=5, num_workers=2, **OPTIONS)
    keys = [k for batch in loader for k in batch.sample_keys]
    assert sorted(keys) == _windows(shards) and set(_boards(os.getpid())) == earlier
    for num_workers in (0, 1):
        ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
        assert sorted(k for b in DataLoader(ds, batch_size=None, num_workers=num_workers) for k in b.sample_keys) == sorted(keys)
        assert set(_boards(os.getpid())) == earlier
    ds = make_dataset(shards["paths"], seed=5, **OPTIONS)
    assert sorted(k for b in DataLoader(ds, batch_size=None, num_workers=2) for k in b.sample_keys) == sorted(keys)
    [mine] = set(_boards(os.getpid())) - earlier
    assert os.path.basename(mine).startswith(f"avalign-tails-{os.getpid()}-")
    del ds
    gc.collect()
    assert set(_boards(os.getpid())) == earlier


_PERSISTENT_RUN = """
import sys
from torch.utils.data import DataLoader
import loaders
dataset = loaders.make_dataset(sys.argv[1:], seed=5, budgets=(20, 32000, 16), window_seconds=0.5, buffer_size=4,
                               frame_size=(24, 32), max_items=8, max_words=16)
loader = DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
for epoch in range(2):
    dataset.set_epoch(epoch)
    print(sum(len(batch.sample_keys) for batch in loader))
"""


def test_a_run_with_persistent_workers_leaves_no_multiprocessing_temp_dirs(shards, tmp_path):
    """Persistent DataLoader workers are terminated at interpreter exit; each had made its own ``/tmp/pymp-*``
    directory (to send shared-memory descriptors) and left it behind: 2 per run. Now they use the main process's."""
    # A short TMPDIR: multiprocessing's listener socket lives in it (AF_UNIX paths are at most 107 bytes; under
    # pytest-xdist tmp_path is too deep, and the workers could not send a batch)
    temp = Path(tempfile.mkdtemp(prefix="soak66-", dir="/tmp" if os.path.isdir("/tmp") else None))
    try:
        env = dict(os.environ, TMPDIR=str(temp), PYTHONPATH=str(REPO))
        proc = subprocess.run([sys.executable, "-c", _PERSISTENT_RUN, *shards["paths"][:2]], env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        windows = len([w for w in _windows(shards) if w.startswith(("s0", "s1"))])
        assert proc.stdout.split() == [str(windows)] * 2, proc.stderr[-2000:]
        assert sorted(os.listdir(temp)) == []
    finally:
        shutil.rmtree(temp, ignore_errors=True)


_EXIT_WHILE_ITERATING = """
import sys, threading, time
from torch.utils.data import DataLoader
import loaders
dataset = loaders.make_dataset(sys.argv[1:], seed=5, budgets=(20, 32000, 16), window_seconds=0.5, buffer_size=4,
                               frame_size=(24, 32), max_items=8, max_words=16)
loader = DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
batches = []

def train():  # a training thread still iterating when the main thread ends the script
    while True:
        for batch in loader:
            batches.append(len(batch.sample_keys))

threading.Thread(target=train, daemon=True).start()
while len(batches) < 30:
    time.sleep(0.05)
print("exiting")
"""


def test_a_board_is_removed_at_exit_after_the_workers_that_write_to_it(shards):
    """At exit the board used to be removed (weakref.finalize) before multiprocessing terminated the persistent
    workers, which were still publishing their counts: a worker's next record made the board again, left behind
    (4 runs in 4). Now it is removed after the workers are gone."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", _EXIT_WHILE_ITERATING, *shards["paths"]], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and out.split() == ["exiting"], err
    assert _boards(proc.pid) == []
