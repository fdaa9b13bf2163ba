"""Benchmark packing: padding, packs vs the lower bound, plan time; prints a markdown table.

Workloads (fixed seeds):
  text-1d  token counts round(lognormal(mean=6, sigma=1)) clipped to [1, 4096], budget 4096.
  av-3col  clip durations lognormal (median 8 s, sigma 0.8) clipped to [0.5, 60] s, as frames at 4 fps,
           20 ms audio hops and tokens at a per-clip rate uniform in [1, 5] tokens/s; budgets
           256 frames / 3200 hops / 192 tokens (64 s each at the mean rate, so every column binds).

Usage:
    .venv/bin/python scripts/bench_pack.py [--num-items 20000] [--runs 5] [--ffd-subset N]
"""
from __future__ import annotations

import argparse
import shlex
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from loaders.pipeline import OnlinePacker, PackItem, lower_bound_num_packs, plan_packs  # noqa: E402


def text_lengths(num_items: int, *, seed: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    lengths = np.clip(np.round(rng.lognormal(mean=6, sigma=1, size=num_items)), 1, 4096).astype(np.int64)
    return lengths.reshape(-1, 1), [4096]


def av_lengths(num_items: int, *, seed: int) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    duration_seconds = np.clip(rng.lognormal(mean=np.log(8), sigma=0.8, size=num_items), 0.5, 60)
    tokens = np.maximum(1, np.round(duration_seconds * rng.uniform(1, 5, size=num_items)))
    table = np.stack([np.ceil(duration_seconds * 4), np.ceil(duration_seconds * 50), tokens], axis=1)
    budgets = [256, 3200, 192]
    return np.minimum(table.astype(np.int64), budgets), budgets


def plain_python_ffd(sizes: list[int], budget: int) -> list[list[int]]:
    """Textbook first-fit decreasing with a linear scan over open packs (the baseline)."""
    order = sorted(range(len(sizes)), key=lambda i: -sizes[i])
    loads: list[int] = []
    packs: list[list[int]] = []
    for i in order:
        for k, load in enumerate(loads):
            if load + sizes[i] <= budget:
                loads[k] += sizes[i]
                packs[k].append(i)
                break
        else:
            loads.append(sizes[i])
            packs.append([i])
    return packs


def pad_to_batch_max_waste(table: np.ndarray, *, batch_size: int, seed: int) -> np.ndarray:
    """Per column: 1 - sum / (batch_size * sum of per-batch maxima) over random batches (tail dropped)."""
    shuffled = np.random.default_rng(seed).permutation(table)
    usable = len(table) // batch_size * batch_size
    batches = shuffled[:usable].reshape(-1, batch_size, table.shape[1])
    return 1 - batches.sum(axis=(0, 1)) / (batch_size * batches.max(axis=1).sum(axis=0))


def median_seconds(function, runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def percent(values) -> str:
    return " / ".join(f"{100 * v:.2f}" for v in np.atleast_1d(values))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--num-items", type=int, default=20_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--ffd-subset", type=int, default=None, help="items for the plain-Python FFD baseline (default: all)"
    )
    parser.add_argument("--buffer-size", type=int, default=1024, help="online packer look-ahead")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    print(f"Command: `{shlex.join(['python', *sys.argv])}`\n")
    print("| workload | method | N | budget | padding % (per column) | packs / lower bound | time s (median of runs) "
          "| pad-to-batch-max waste %, batches of 16 |")
    print("|---|---|---|---|---|---|---|---|")
    for name, make in (("text-1d", text_lengths), ("av-3col", av_lengths)):
        table, budgets = make(args.num_items, seed=args.seed)
        budget_array = np.array(budgets)
        lower_bound = lower_bound_num_packs(table, budgets)
        waste = percent(pad_to_batch_max_waste(table, batch_size=16, seed=args.seed + 1))
        budget_text = "/".join(map(str, budgets))

        packs = plan_packs(table, budgets)
        seconds = median_seconds(lambda: plan_packs(table, budgets), args.runs)
        padding = 1 - table.sum(axis=0) / (len(packs) * budget_array)
        print(f"| {name} | plan_packs | {len(table)} | {budget_text} | {percent(padding)} "
              f"| {len(packs)} / {lower_bound} (+{100 * (len(packs) / lower_bound - 1):.2f} %) | {seconds:.3f} | {waste} |")

        items = [PackItem(str(i), tuple(row)) for i, row in enumerate(table.tolist())]
        packer = OnlinePacker(budgets, buffer_size=args.buffer_size, seed=args.seed)
        start = time.perf_counter()
        num_packs = sum(1 for _ in packer.pack(items))
        seconds = time.perf_counter() - start
        stats = packer.stats()
        print(f"| {name} | OnlinePacker(buffer_size={args.buffer_size}) | {len(table)} | {budget_text} "
              f"| {percent(stats.padding)} | {num_packs} / {lower_bound} (+{100 * (num_packs / lower_bound - 1):.2f} %) "
              f"| {seconds:.3f} (1 run) | {waste} |")

        if table.shape[1] == 1:
            subset = table[: args.ffd_subset or len(table), 0].tolist()
            start = time.perf_counter()
            baseline = plain_python_ffd(subset, budgets[0])
            seconds = time.perf_counter() - start
            subset_lower_bound = lower_bound_num_packs(subset, budgets)
            sub_padding = 1 - sum(subset) / (len(baseline) * budgets[0])
            ours = median_seconds(lambda: plan_packs(subset, budgets), args.runs)
            print(f"| {name} | plain-Python FFD (first {len(subset)} items) | {len(subset)} | {budget_text} "
                  f"| {percent(sub_padding)} | {len(baseline)} / {subset_lower_bound} | {seconds:.3f} (1 run; "
                  f"plan_packs on the same: {ours:.4f}) | – |")


if __name__ == "__main__":
    main()
