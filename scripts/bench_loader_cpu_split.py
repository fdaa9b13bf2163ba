"""Where one loader epoch's CPU goes: the iterating (main) process vs its worker processes, ``make_loader`` against
``DataLoader(make_dataset(...))`` (2 workers each, options as ``scripts/bench_loader.py``).

One process builds both loaders, runs one warm-up epoch of each, then ``ROUNDS`` rounds of one epoch each,
alternating; main = ``RUSAGE_SELF``, workers = ``RUSAGE_CHILDREN`` (both loaders' workers end with their epoch, so
they are reaped by then). Medians per loader.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_loader_cpu_split.py '/tmp/dl14/long/*.tar' 2 8 pad 4
    (SHARDS_GLOB FPS|none WINDOW_SECONDS TAIL ROUNDS)
"""
from __future__ import annotations

import glob
import resource
import statistics
import sys
import time

import torch

import loaders


def main() -> int:
    pattern, fps_arg, window_arg, tail, rounds_arg = sys.argv[1:6]
    torch.set_num_threads(1)
    paths = sorted(glob.glob(pattern))
    fps, window, rounds = (None if fps_arg == "none" else float(fps_arg)), float(window_arg), int(rounds_arg)
    budgets = (int(round((fps or 30) * window * 2)), int(16000 * window * 2), 512)
    options = dict(seed=0, fps=fps, sample_rate=16000, budgets=budgets, window_seconds=window, buffer_size=8,
                   frame_size=(112, 112), max_items=64, tail=tail)
    make_loader = loaders.make_loader(paths, num_workers=2, **options)
    dataset = loaders.make_dataset(paths, **options)
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2)

    def usage() -> tuple[float, float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime, time.perf_counter()

    results: dict[str, list[tuple[float, float, float]]] = {"make_loader": [], "DataLoader": []}
    for r in range(rounds + 1):  # round 0 warms up (imports, first decodes)
        for name, loader in (("make_loader", make_loader), ("DataLoader", dataloader)):
            if name == "DataLoader":
                dataset.set_epoch(r)
            main0, workers0, wall0 = usage()
            batches = sum(1 for _ in loader)
            main1, workers1, wall1 = usage()
            if r:
                results[name].append((wall1 - wall0, main1 - main0, workers1 - workers0))
                print(f"{r} {name}: {batches} batches, wall {wall1 - wall0:.2f} s, main CPU {main1 - main0:.2f} s, "
                      f"workers CPU {workers1 - workers0:.2f} s", flush=True)
    print("\n| loader | median wall s | main CPU s | workers CPU s | total CPU s |\n|---|---|---|---|---|")
    for name, rows in results.items():
        wall, main_cpu, workers_cpu = (statistics.median(row[i] for row in rows) for i in range(3))
        print(f"| {name} | {wall:.2f} | {main_cpu:.2f} | {workers_cpu:.2f} | {main_cpu + workers_cpu:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
