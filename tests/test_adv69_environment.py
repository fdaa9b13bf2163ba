"""adv69: training runs in hostile environments (BENCHMARKS.md, "adv69").

Each test starts a fresh interpreter in the hostile setting and checks what the run ends with.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARDS = str(ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar")
ENV = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")

_DATALOADER = """
import os, re, resource, sys, loaders
from torch.utils.data import DataLoader


class Tokenizer:
    \"\"\"Words as tokens; in each worker, its first call leaves the process 2 file descriptors (as a low `ulimit -n`
    on a busy worker does): decoding goes on, sending the batch runs out.\"\"\"

    def __init__(self, free):
        self.parent, self.free, self.limited = os.getpid(), free, False

    def __call__(self, text):
        if os.getpid() != self.parent and not self.limited and self.free is not None:
            self.limited = True
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (len(os.listdir("/proc/self/fd")) + self.free, hard))
        pieces = [m.span() for m in re.finditer(r"\\S+", text)]
        return list(range(len(pieces))), pieces


free = None if sys.argv[2] == "none" else int(sys.argv[2])
ds = loaders.make_dataset(sys.argv[1], seed=0, budgets=(300, 160_000, 512), window_seconds=2.0, frame_size=(112, 112),
                          tokenizer=Tokenizer(free))
print("KEYS", len([k for batch in DataLoader(ds, batch_size=None, num_workers=2) for k in batch.sample_keys]))
"""


def _run(free: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _DATALOADER, SHARDS, free], cwd=ROOT, env=ENV, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.timeout(300)
def test_a_dataloader_worker_out_of_descriptors_ends_the_epoch_naming_ulimit():
    """Before: the worker's queue feeder printed "Too many open files", dropped the batch, and the main process
    waited for it forever (a DataLoader has no timeout by default)."""
    try:
        run = _run("2", timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("DataLoader(make_dataset(...)) with a worker out of descriptors hung instead of ending the epoch")
    assert run.returncode != 0, run.stdout
    assert "exited unexpectedly" in run.stderr.strip().splitlines()[-1]
    named = [line for line in run.stderr.splitlines() if line.startswith("loader: DataLoader worker (pid ")]
    assert len(named) >= 1, run.stderr[-3000:]
    assert "could not send a batch to the main process" in named[0]
    assert "it has no file descriptor left" in named[0] and "limit `ulimit -n`:" in named[0]
    assert "ulimit -n 65536" in named[0] and "The worker exits so that the epoch ends" in named[0]


@pytest.mark.timeout(300)
def test_the_same_run_under_the_usual_limit_delivers_every_window():
    run = _run("none", timeout=200)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["KEYS", "20"]
    assert "could not send a batch" not in run.stderr


_UNGUARDED = """
import sys
import loaders

loader = loaders.make_loader(sys.argv[1], seed=0, num_workers=2, multiprocessing_context="spawn",
                             budgets=(300, 160_000, 512), window_seconds=2.0, frame_size=(112, 112))
print("KEYS", len([k for batch in loader for k in batch.sample_keys]))
"""


@pytest.mark.timeout(300)
def test_spawned_workers_of_a_script_without_a_main_guard_are_named_as_such(tmp_path):
    """Before: "loader worker 0 (pid …) exited with code 1 without finishing; a native decoder crash or the OOM killer
    are the usual causes", for a worker that failed re-importing the script (no ``if __name__ == '__main__':``)."""
    script = tmp_path / "train.py"
    script.write_text(_UNGUARDED)
    run = subprocess.run([sys.executable, str(script), SHARDS], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         timeout=200)
    assert run.returncode != 0, run.stdout
    last = run.stderr.strip().splitlines()[-1]
    assert re.fullmatch(r"RuntimeError: loader worker \d \(pid \d+\) exited with code 1 without finishing; an exit "
                        r"code \(not a signal\) is an error outside its read loop, printed above by the worker; with "
                        r"multiprocessing_context='spawn' or 'forkserver' the usual one is a script whose loader code "
                        r"is not under `if __name__ == '__main__':` \(each worker imports the main script again\)\.",
                        last), last
    assert "native decoder crash" not in run.stderr
    assert "freeze_support()" in run.stderr  # the worker's own traceback, above


@pytest.mark.timeout(300)
def test_the_same_script_with_a_main_guard_reads_every_window(tmp_path):
    script = tmp_path / "train.py"
    body = "".join(f"    {line}\n" for line in _UNGUARDED.strip().splitlines()[2:])
    script.write_text("import sys\nimport loaders\n\nif __name__ == '__main__':\n" + body)
    run = subprocess.run([sys.executable, str(script), SHARDS], cwd=ROOT, env=ENV, capture_output=True, text=True,
                         timeout=200)
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.split() == ["KEYS", "20"]


_MEMORY = """
import os, re, resource, sys, loaders


class Tokenizer:
    \"\"\"Words as tokens; in each worker, its first call caps the address space 1 MiB above what it uses (as a tight
    ulimit -v or memory limit on a busy worker does).\"\"\"

    def __init__(self):
        self.parent, self.limited = os.getpid(), False

    def __call__(self, text):
        if os.getpid() != self.parent and not self.limited:
            self.limited = True
            size = [line for line in open("/proc/self/status") if line.startswith("VmSize")][0].split()[1]
            resource.setrlimit(resource.RLIMIT_AS, (int(size) * 1024 + 2**20, resource.RLIM_INFINITY))
        pieces = [m.span() for m in re.finditer(r"\\S+", text)]
        return list(range(len(pieces))), pieces


loader = loaders.make_loader(sys.argv[1], seed=0, num_workers=2, budgets=(300, 160_000, 512), window_seconds=2.0,
                             frame_size=(112, 112), tokenizer=Tokenizer())
print("KEYS", len([k for batch in loader for k in batch.sample_keys]))
"""


@pytest.mark.timeout(300)
def test_a_make_loader_worker_out_of_memory_for_its_sender_thread_ends_the_epoch_naming_it():
    """Before: the worker's queue could not start its feeder thread ("can't start new thread"), its steps stayed in
    the queue's buffer, the worker waited to be stopped and the main process waited for them forever."""
    try:
        run = subprocess.run([sys.executable, "-c", _MEMORY, SHARDS], cwd=ROOT, env=ENV, capture_output=True,
                             text=True, timeout=120)
    except subprocess.TimeoutExpired:
        pytest.fail("make_loader with a worker out of memory for a thread hung instead of ending the epoch")
    assert run.returncode != 0, run.stdout
    named = [line for line in run.stderr.splitlines() if "cannot send to the main process" in line]
    assert named, run.stderr[-3000:]
    assert re.fullmatch(r"loader worker \d \(pid \d+\) cannot send to the main process: the thread that sends its "
                        r"steps could not start \(can't start new thread\): this process is out of memory or threads "
                        r"\(ulimit -v / -u, a container's memory or pids limit\)\. Raise the limit, or lower "
                        r"num_workers, budgets or frame_size\.", named[0]), named[0]
    assert re.fullmatch(r"RuntimeError: loader worker \d \(pid \d+\) exited with code 1 without finishing; an exit .*",
                        run.stderr.strip().splitlines()[-1])
