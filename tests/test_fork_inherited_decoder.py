"""A decoder left as garbage in the training process does not kill torch's DataLoader workers.

A ``decord.VideoReader`` dropped inside a reference cycle is freed only by a collection. A DataLoader worker is a
fork of the training process: collected there, the reader's destructor touched decode threads that exist only in
the parent, and the worker died (segfault, or abort with "std::thread::detach: No such process"), ending the epoch:
seen as a flaky ``tests/test_tail_merge.py`` failure in the full suite. Run in a fresh interpreter (the parent's
collector is turned off to keep the garbage, and a tokenizer collects in the workers).
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """
import gc, re, sys
import decord, loaders
from torch.utils.data import DataLoader

class Cycle:
    def __init__(self, path):
        self.reader = decord.VideoReader(path)
        self.me = self

def tokenizer(text):  # runs in the workers: a collection there meets the inherited reader
    gc.collect()
    pieces = [m.span() for m in re.finditer(r"\\S+", text)]
    return list(range(len(pieces))), pieces

gc.disable()
cycle = Cycle(sys.argv[2])
cycle.reader[0]
del cycle  # garbage in a cycle, not collected in this process
ds = loaders.make_dataset(sys.argv[1], seed=0, tokenizer=tokenizer, budgets=(300, 160_000, 512), window_seconds=2.0,
                          frame_size=(32, 32))
print("WINDOWS", sum(len(b.sample_keys) for b in DataLoader(ds, batch_size=None, num_workers=2)))
"""


@pytest.mark.timeout(600)
def test_dataloader_workers_never_collect_a_decoder_of_the_training_process():
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    shards = str(ROOT / "sample_data" / "shards" / "shard-{000000..000001}.tar")
    run = subprocess.run([sys.executable, "-c", _SCRIPT, shards, str(ROOT / "sample_data" / "clip00.mp4")], cwd=ROOT,
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]  # before: "DataLoader worker (pid …) is killed by signal"
    assert "WINDOWS 20" in run.stdout  # every window of the six clips (2 s windows), as without the garbage
