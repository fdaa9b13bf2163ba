"""Interleaved A/B of one loader epoch per fresh process: ``make_loader`` or ``DataLoader(make_dataset(...))`` from
any checkout, on the same shards, options as ``scripts/bench_loader.py`` (16 kHz mono, 112x112, ``buffer_size=8``,
budgets from ``--fps`` and ``--window-seconds``, 2 workers).

Per run: the epoch's wall time and CPU seconds (user + system of the process and its reaped workers, from
building the loader to the workers' shutdown; module imports excluded, the loader's own start-up included),
batches and frame padding; with ``--epochs N`` also epochs 2..N of the same process (``NAME#2``…: from ``iter()``,
what each later epoch of a training run costs). Rounds run the variants in turn (A B C, A B C, …) so the shared
machine's load falls on all alike; the medians and their ratios are the figures.

Usage::

    .venv/bin/python scripts/bench_dataloader_ab.py --shards '/tmp/short/*.tar' --rounds 5 \\
        --variant DataLoader@main=/work/main:DataLoader --variant DataLoader=$PWD:DataLoader \\
        --variant make_loader=$PWD:make_loader [--variant pf4=$PWD:DataLoader:4]

``KIND`` is ``make_loader`` or ``DataLoader[:PREFETCH_FACTOR]``, optionally followed by ``+TAIL`` (``+trim``,
``+drop``, ``+pad``: the ``tail`` option; without it the checkout's default, so older checkouts work too: a
checkout from before ``make_dataset`` runs ``make_loader`` only).
Padding is of the delivered capacity (a trimmed tail counts at its own size).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

_EPOCH = r'''
import gc, glob, json, resource, sys, time
import torch
torch.set_num_threads(1)
import loaders
from loaders import make_loader
paths = sorted(glob.glob(sys.argv[1]))
kind, fps, window = sys.argv[2], (None if sys.argv[3] == "none" else float(sys.argv[3])), float(sys.argv[4])
num_epochs = int(sys.argv[5])
kind, _, tail = kind.partition("+")
budgets = (int(round((fps or 30) * window * 2)), int(16000 * window * 2), 512)
options = dict(seed=0, fps=fps, sample_rate=16000, budgets=budgets, window_seconds=window, buffer_size=8,
               frame_size=(112, 112), max_items=64)
if tail:
    options["tail"] = tail
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
cpu0, started = cpu(), time.perf_counter()
if kind == "make_loader":
    loader = make_loader(paths, num_workers=2, **options)
else:
    prefetch = int(kind.split(":")[1]) if ":" in kind else 2
    dataset = loaders.make_dataset(paths, **options)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2, prefetch_factor=prefetch)
for epoch in range(num_epochs):
    if epoch:
        cpu0, started = cpu(), time.perf_counter()
        if kind != "make_loader":
            dataset.set_epoch(epoch)  # make_loader moves to the next epoch by itself
    batches, frames, capacity, first = 0, 0, 0, None
    iterator = iter(loader)
    for batch in iterator:
        first = first or time.perf_counter() - started
        batches += 1
        frames += int(batch.cu_seqlens_frames[-1])
        capacity += int(batch.frames.shape[0])
    wall = time.perf_counter() - started
    del iterator, batch
    gc.collect()
    print(json.dumps({"epoch": epoch, "wall_s": wall, "cpu_s": cpu() - cpu0, "batches": batches,
                      "padding": 1 - frames / capacity, "first_s": first}), flush=True)
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", required=True, help="glob of the shards (quote it)")
    parser.add_argument("--fps", default="none")
    parser.add_argument("--window-seconds", default="4")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=1,
                        help="epochs per process; rows NAME#2… are the epochs after the first (start-up excluded)")
    parser.add_argument("--variant", action="append", required=True, help="NAME=CHECKOUT:KIND")
    args = parser.parse_args()
    variants = {}
    for spec in args.variant:
        name, _, rest = spec.partition("=")
        checkout, _, kind = rest.partition(":")
        variants[name] = (checkout, kind)
    rows: dict[str, list[dict]] = {}
    for round_index in range(args.rounds):
        for name, (checkout, kind) in variants.items():
            done = subprocess.run([sys.executable, "-c", _EPOCH, args.shards, kind, args.fps, args.window_seconds,
                                   str(args.epochs)],
                                  capture_output=True, text=True, cwd=checkout, check=True,
                                  env=dict(os.environ, PYTHONPATH=checkout, OMP_NUM_THREADS="1"))
            for line in done.stdout.strip().splitlines()[-args.epochs:]:
                row = json.loads(line)
                label = name if row["epoch"] == 0 else f"{name}#{row['epoch'] + 1}"
                rows.setdefault(label, []).append(row)
                print(round_index, label, json.dumps(row), flush=True)
    medians = {}
    for name, group in rows.items():
        walls, cpus = [r["wall_s"] for r in group], [r["cpu_s"] for r in group]
        medians[name] = (statistics.median(walls), statistics.median(cpus))
        first_s = statistics.median(r["first_s"] for r in group)
        print(f"| {name} | {group[0]['batches']} | {' '.join(f'{w:.2f}' for w in walls)} | {medians[name][0]:.2f} | "
              f"{' '.join(f'{c:.2f}' for c in cpus)} | {medians[name][1]:.2f} | {first_s:.2f} | {group[0]['padding']:.1%} |")
    first = next(iter(medians))
    for name, (wall, cpu) in medians.items():
        print(f"{name} / {first}: {medians[first][0] / wall:.2f}x wall, {medians[first][1] / cpu:.2f}x CPU (throughput)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
