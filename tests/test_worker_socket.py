"""Loader workers under a TMPDIR too deep for a Unix socket: a clear error naming TMPDIR, not lost batches.

A worker hands each batch's shared memory to the main process over a Unix socket in ``TMPDIR/pymp-*``; a socket's
path must fit in 107 bytes. Before: torch's ``DataLoader`` over ``make_dataset`` dropped the batches or waited forever
(the feeder thread printed ``OSError: AF_UNIX path too long`` and went on), and ``make_loader`` ended the epoch with
"no sample could be read from the shards ... they are empty or their source failed". Each case runs in a fresh
interpreter with its own TMPDIR.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARDS = ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar"

_SCRIPT = """
import sys, loaders
from torch.utils.data import DataLoader
kind, workers = sys.argv[2], int(sys.argv[3])
options = dict(seed=0, budgets=(300, 160_000, 512), window_seconds=2.0, frame_size=(32, 32))
if kind == "dataloader":
    batches = DataLoader(loaders.make_dataset(sys.argv[1], **options), batch_size=None, num_workers=workers)
else:
    batches = loaders.make_loader(sys.argv[1], num_workers=workers, worker_stall_seconds=400, **options)
print("KEYS", " ".join(sorted(k for batch in batches for k in batch.sample_keys)))
"""


def _run(kind: str, workers: int, temp: Path) -> subprocess.CompletedProcess:
    temp.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1", TMPDIR=str(temp))
    return subprocess.run([sys.executable, "-c", _SCRIPT, str(SHARDS), kind, str(workers)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=240)


def _keys(run: subprocess.CompletedProcess) -> list[str]:
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout.split("KEYS", 1)[1].split()


@pytest.fixture(scope="module")
def short_temp():
    import shutil
    import tempfile

    temp = Path(tempfile.mkdtemp(prefix="ws-", dir="/tmp"))  # tmp_path is itself too deep for the control
    yield temp
    shutil.rmtree(temp, ignore_errors=True)


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dataloader", "make_loader"])
def test_a_tmpdir_too_deep_for_a_unix_socket_is_named_not_a_silent_loss(kind, short_temp):
    deep = short_temp / ("d" * 100)  # TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX is then over 107 bytes
    run = _run(kind, 2, deep)
    assert run.returncode != 0, run.stdout  # before: dataloader 0 batches or a hang; make_loader "shards are empty"
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith("OSError: loader workers cannot hand batches to the main process"), run.stderr[-3000:]
    assert f"TMPDIR='{deep}'" in last and "107 bytes" in last and "TMPDIR=/tmp" in last
    assert "no sample could be read" not in run.stderr


@pytest.mark.timeout(600)
@pytest.mark.parametrize("kind", ["dataloader", "make_loader"])
def test_workers_under_a_short_tmpdir_deliver_every_window(kind, short_temp):
    """The control: the check passes where sockets fit, and the workers deliver the windows read in-process."""
    in_process = _keys(_run(kind, 0, short_temp / "a"))
    assert len(in_process) == 20  # the six sample clips in 2 s windows
    assert sorted(_keys(_run(kind, 2, short_temp / "b"))) == sorted(in_process)
