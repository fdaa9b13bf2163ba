"""Two-rank DDP over make_loader with torchrun (gloo on CPU): every rank gets the same number of batches.

Usage:
    .venv/bin/python -m torch.distributed.run --nproc_per_node 2 scripts/ddp_example.py SHARDS OUT_DIR [--even-batches pad|drop ...]
        [--budgets FRAMES SAMPLES TOKENS] [--window-seconds S]   (make_loader's; defaults 120 64000 64, 2.0)

Each rank trains a tiny DistributedDataParallel model on its PackedBatch stream (an all-reduce per step:
a rank with fewer batches than the other would hang the job) and writes OUT_DIR/rank{R}.json with the
keys it saw, its batch count and the loader's stats. Given several ``--even-batches`` modes, it runs one epoch
(a new model and loader) per mode in turn, in the same process group, and writes OUT_DIR/rank{R}-{MODE}.json.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import loaders  # noqa: E402


def run_epoch(shards: str, even_batches: str, *, budgets: tuple[int, int, int] = (120, 64_000, 64),
              window_seconds: float = 2.0) -> dict:
    """One epoch of a tiny DDP model over ``make_loader(shards, even_batches=...)``: the keys of every batch, the
    batch count and the batches dropped to keep the ranks in step."""
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3 * 16 * 16, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = loaders.make_loader(shards, seed=0, budgets=budgets, window_seconds=window_seconds,
                                 frame_size=(16, 16), max_items=8, even_batches=even_batches)  # rank from torch.distributed
    keys = []
    for batch in loader:
        frames = batch.frames.flatten(1)  # [capacity, 3*16*16], padding rows included (fixed shapes)
        valid = (batch.segment_ids_frames >= 0).float().unsqueeze(1)
        loss = (model(frames) * valid).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()  # DDP all-reduces gradients here: every rank must take the same number of steps
        optimiser.step()
        keys.append(list(batch.sample_keys))
    return {"batches": len(keys), "keys": keys, "dropped": loader.stats.batches_dropped_for_sync}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards")
    parser.add_argument("out_dir")
    parser.add_argument("--even-batches", choices=["pad", "drop"], nargs="+", default=["pad"])
    parser.add_argument("--budgets", type=int, nargs=3, default=[120, 64_000, 64], metavar=("FRAMES", "SAMPLES", "TOKENS"),
                        help="make_loader's per-batch budgets")
    parser.add_argument("--window-seconds", type=float, default=2.0, help="make_loader's window length")
    args = parser.parse_args()
    dist.init_process_group("gloo")  # rank / world size / master address from torchrun's environment
    rank = dist.get_rank()
    for mode in args.even_batches:
        result = run_epoch(args.shards, mode, budgets=tuple(args.budgets), window_seconds=args.window_seconds)
        name = f"rank{rank}.json" if len(args.even_batches) == 1 else f"rank{rank}-{mode}.json"
        with open(os.path.join(args.out_dir, name), "w") as f:
            json.dump(dict(result, rank=rank, world_size=dist.get_world_size()), f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
