"""Loader workers decode with their share of the cores, observed inside the live worker processes.

The oracle is FFmpeg itself: it names each frame thread of a decoder ``av:<codec>:df<N>`` (one per thread when it
frame-threads; none with one thread), so the distinct names a worker process shows while it decodes are the
threads its decoder really ran. A probe passed as the public ``tokenizer`` (called in the worker after each
sample's decode) starts a thread in that worker which samples ``/proc/self/task/*/comm``, and writes the names seen
to a file per process. FFmpeg's own default (``num_threads=0``) would show ``cores + 1`` names in every worker.
"""
from __future__ import annotations

import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
import torch

from loaders import make_dataset, make_loader
from loaders.pipeline import worker_decoder_threads
from tests.conftest import ffmpeg
from tests.corrupt_cases import write_tar

_FRAME_THREAD = re.compile(r"^av:[^:]+:df\d+$")
_WORDS = json.dumps({"segments": [{"start": 0.2, "end": 1.0, "text": "one two",
                                   "words": [{"word": "one", "start": 0.2, "end": 0.5},
                                             {"word": "two", "start": 0.6, "end": 1.0}]}]}).encode()


class ThreadNameProbe:
    """A tokenizer (``text -> (ids, offsets)``, whitespace words) that, in each process it is called in, starts a
    thread recording the names of that process's threads, and writes them to ``out_dir/<pid>.json`` at each call."""

    def __init__(self, out_dir: str):
        self.out_dir = out_dir
        self._pid = None
        self._seen: set = set()

    def _sample(self) -> None:
        while True:
            for task in os.listdir("/proc/self/task"):
                try:
                    with open(f"/proc/self/task/{task}/comm") as handle:
                        self._seen.add(handle.read().strip())
                except OSError:  # the thread ended meanwhile
                    pass
            time.sleep(0.0005)

    def __call__(self, text: str):
        if self._pid != os.getpid():  # first call in this process (a forked worker starts with its parent's copy)
            self._pid, self._seen = os.getpid(), set()
            threading.Thread(target=self._sample, daemon=True, name="probe").start()
        with open(os.path.join(self.out_dir, f"{os.getpid()}.json"), "w") as handle:
            json.dump(sorted(self._seen), handle)
        spans = [m.span() for m in re.finditer(r"\S+", text)]
        return [1] * len(spans), spans


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[str]:
    """2 shards of 3 clips each: 2 s of 30 fps 160x120 H.264 (GOP 30) + AAC, with two timed words."""
    d = tmp_path_factory.mktemp("threads")
    clip = d / "clip.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc=size=160x120:rate=30", "-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "2",
           "-c:v", "libx264", "-g", "30", "-c:a", "aac", "-ac", "1", str(clip))
    media = clip.read_bytes()
    paths = []
    for s in range(2):
        path = d / f"shard-{s:06d}.tar"
        write_tar(path, [m for k in range(3) for m in ((f"k{s}{k}.mp4", media), (f"k{s}{k}.json", _WORDS))])
        paths.append(str(path))
    return paths


def _frame_threads_per_worker(out_dir: Path) -> dict[str, list[str]]:
    return {p.stem: [n for n in json.loads(p.read_text()) if _FRAME_THREAD.match(n)] for p in out_dir.glob("*.json")}


@pytest.mark.parametrize("kind, num_workers", [("make_loader", 2), ("DataLoader", 1)])
@pytest.mark.usefixtures("collector_on_test_objects")  # the pre-fork collection: this test's objects
def test_each_live_worker_decodes_with_its_share_of_the_cores(shards, tmp_path, kind, num_workers):
    """Both loaders' workers, and both sides of the rule: with 2 cores, 2 workers get 1 thread each (no frame
    thread), 1 worker gets 2; FFmpeg's default would show 3 frame threads in either case."""
    if not os.path.isdir("/proc/self/task") or not hasattr(os, "sched_getaffinity"):
        pytest.skip("thread names are read from Linux's /proc")
    cores = len(os.sched_getaffinity(0))
    if cores < 2:
        pytest.skip("one core: the share (1 thread) cannot be told from FFmpeg's default here")
    share = worker_decoder_threads(num_workers)
    options = dict(seed=0, tokenizer=ThreadNameProbe(str(tmp_path)), budgets=(120, 64000, 64), window_seconds=None,
                   frame_size=(24, 32), buffer_size=2)
    if kind == "make_loader":
        batches = list(make_loader(shards, num_workers=num_workers, **options))
    else:
        batches = list(torch.utils.data.DataLoader(make_dataset(shards, **options), batch_size=None,
                                                   num_workers=num_workers))
    assert sum(b.num_items for b in batches) == 6
    seen = _frame_threads_per_worker(tmp_path)
    assert len(seen) == num_workers and str(os.getpid()) not in seen  # decoded in the workers only
    want = [] if share == 1 else sorted(f"df{i}" for i in range(share))
    for pid, names in seen.items():
        assert sorted(n.rsplit(":", 1)[1] for n in set(names)) == want, (kind, num_workers, cores, pid, names)
