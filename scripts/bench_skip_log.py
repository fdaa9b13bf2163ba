"""How much one epoch of many skipped samples logs, per checkout (BENCHMARKS.md, "Adversarial round five").

A shard of 10,000 caption-only samples (``missing_video``) and 100 undecodable ``.mp4`` members (``decode``) is read
once by ``make_loader`` with each checkout on ``sys.path`` in turn, alternating; per run: ``stats.skipped``, the
number of log lines at WARNING and above, their bytes, and the epoch's wall and CPU seconds. Each run is a fresh
process (one checkout's modules per interpreter)::

    python scripts/bench_skip_log.py /work/main /work/wt/robust9 --repeats 2
"""
from __future__ import annotations

import argparse
import io
import json
import logging
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time


def _shard(path: str) -> None:
    members = [(f"t{i:05d}.txt", b"a caption") for i in range(10000)]
    members += [(f"d{i:03d}.mp4", b"\0" * 100) for i in range(100)]
    with tarfile.open(path, "w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _one(checkout: str, shard: str) -> dict:
    sys.path[0] = checkout  # not this script's folder: the checkout's packages only
    import loaders

    stream = io.StringIO()
    logging.getLogger().addHandler(logging.StreamHandler(stream))
    logging.getLogger().setLevel(logging.WARNING)
    loader = loaders.make_loader([shard], seed=0, frame_size=(16, 16), allow_empty_epoch=True)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    list(loader)
    r1, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - t0
    return {"checkout": checkout, "skipped": loader.stats.skipped, "log_lines": len(stream.getvalue().splitlines()),
            "log_bytes": len(stream.getvalue()), "wall_seconds": round(wall, 2),
            "cpu_seconds": round(r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="*", help="repository roots to compare")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--one", nargs=2, metavar=("CHECKOUT", "SHARD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_one(*args.one)))
        return
    with tempfile.TemporaryDirectory() as work:
        shard = os.path.join(work, "bad.tar")
        _shard(shard)
        env = dict(os.environ, OMP_NUM_THREADS="1")
        for _ in range(args.repeats):
            for checkout in args.checkouts:
                run = subprocess.run([sys.executable, __file__, "--one", checkout, shard], capture_output=True,
                                     text=True, env=env, check=True)
                print(run.stdout.strip())


if __name__ == "__main__":
    main()
