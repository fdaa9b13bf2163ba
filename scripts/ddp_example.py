"""Two-rank DDP over make_loader with torchrun (gloo on CPU): every rank gets the same number of batches.

Usage:
    .venv/bin/python -m torch.distributed.run --nproc_per_node 2 scripts/ddp_example.py SHARDS OUT_DIR [--even-batches pad|drop]

Each rank trains a tiny DistributedDataParallel model on its PackedBatch stream (an all-reduce per step:
a rank with fewer batches than the other would hang the job) and writes OUT_DIR/rank{R}.json with the
keys it saw, its batch count and the loader's stats.
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("shards")
    parser.add_argument("out_dir")
    parser.add_argument("--even-batches", choices=["pad", "drop"], default="pad")
    args = parser.parse_args()
    dist.init_process_group("gloo")  # rank / world size / master address from torchrun's environment
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(3 * 16 * 16, 1))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = loaders.make_loader(args.shards, seed=0, budgets=(120, 64_000, 64), window_seconds=2.0,
                                 frame_size=(16, 16), max_items=8, even_batches=args.even_batches)  # rank from torch.distributed
    keys = []
    for batch in loader:
        frames = batch.frames.flatten(1)  # [capacity, 3*16*16], padding rows included (fixed shapes)
        valid = (batch.segment_ids_frames >= 0).float().unsqueeze(1)
        loss = (model(frames) * valid).pow(2).mean()
        optimiser.zero_grad()
        loss.backward()  # DDP all-reduces gradients here: every rank must take the same number of steps
        optimiser.step()
        keys.append(list(batch.sample_keys))
    stats = loader.stats
    with open(os.path.join(args.out_dir, f"rank{rank}.json"), "w") as f:
        json.dump({"rank": rank, "world_size": dist.get_world_size(), "batches": len(keys), "keys": keys,
                   "dropped": stats.batches_dropped_for_sync}, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
