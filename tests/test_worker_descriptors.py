"""``make_loader`` when the main process runs out of file descriptors: an error naming ``ulimit -n``.

Tensors that workers hand over in shared memory arrive as file descriptors (torch's ``file_descriptor`` strategy).
Before: with a low ``ulimit -n`` the epoch ended with multiprocessing's bare "RuntimeError: received 0 items of
ancdata" (or, where the socket could not be made, a worker "exited with code None" that had not exited).
"""
from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARDS = str(ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar")
LIMIT = 28  # here 40 is enough for these shards; 32-24 fail receiving a step, 20 in a worker sharing one

_SCRIPT = """
import sys, loaders
loader = loaders.make_loader(sys.argv[1], seed=0, num_workers=2, budgets=(300, 160_000, 512), window_seconds=1.0,
                             frame_size=(112, 112), worker_stall_seconds=400)
print("KEYS", len([k for batch in loader for k in batch.sample_keys]))
"""


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


@pytest.mark.timeout(600)
def test_running_out_of_descriptors_while_receiving_names_the_limit():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    run = subprocess.run([sys.executable, "-c", _SCRIPT, SHARDS], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=300, preexec_fn=_low_limit)
    assert run.returncode != 0, run.stdout
    last = run.stderr.strip().splitlines()[-1]
    assert last.startswith(("RuntimeError: receiving loader worker ", "RuntimeError: loader worker ")), run.stderr[-3000:]
    assert "no file descriptor left" in last and f"limit `ulimit -n`: {LIMIT}" in last and "ulimit -n 65536" in last
