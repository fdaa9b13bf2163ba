"""Worker start-up per epoch: non-persistent workers are forked again each epoch; what does an epoch cost, and how
long until its first batch? ``make_loader(num_workers=N)`` or ``DataLoader(make_dataset(...), batch_size=None,
num_workers=N)`` (default ``persistent_workers=False``) over the sample shards (SRT / WebVTT captions, force-aligned).

Prints one JSON line: the build (``make_loader`` / ``make_dataset`` call) and, per epoch, wall seconds to the first
batch, wall seconds of the epoch, and CPU seconds (user + system) of this process and of the workers (reaped
children). Run it in fresh processes, alternating checkouts, e.g.::

    for r in 1 2 3; do for mode in loader dataloader; do for repo in /tmp/before $PWD; do
        OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_worker_startup.py --repo $repo --mode $mode; done; done; done
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time


def _cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True, help="checkout whose loaders/aligner are measured")
    parser.add_argument("--mode", choices=("loader", "dataloader"), required=True)
    parser.add_argument("--shards", default="sample_data/shards/shard-{000000..000001}.tar")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, args.repo)
    import torch

    import loaders

    torch.set_num_threads(1)
    wall, own = time.perf_counter(), _cpu_seconds(resource.RUSAGE_SELF)
    if args.mode == "loader":
        source = loaders.make_loader(args.shards, seed=0, num_workers=args.num_workers)
        dataset = source
    else:
        dataset = loaders.make_dataset(args.shards, seed=0)
        source = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=args.num_workers)
    result = {"repo": args.repo, "mode": args.mode, "build_wall_s": time.perf_counter() - wall,
              "build_cpu_s": _cpu_seconds(resource.RUSAGE_SELF) - own, "epochs": []}
    for epoch in range(args.epochs):
        dataset.set_epoch(epoch)
        own, children = _cpu_seconds(resource.RUSAGE_SELF), _cpu_seconds(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        first = None
        batches = 0
        for _ in source:
            batches += 1
            if first is None:
                first = time.perf_counter() - start
        result["epochs"].append({"batches": batches, "first_batch_s": first, "wall_s": time.perf_counter() - start,
                                 "main_cpu_s": _cpu_seconds(resource.RUSAGE_SELF) - own,
                                 "worker_cpu_s": _cpu_seconds(resource.RUSAGE_CHILDREN) - children})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
