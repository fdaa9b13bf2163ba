"""Loading raw shards (estimate on the fly, scan for the frame index) vs shards written by `avalign preprocess`.

Usage: .venv/bin/python scripts/bench_preprocessed_loading.py [--shards 'sample_data/shards/*.tar'] [--repeats 3]

Both runs read the same clips with make_loader(num_workers=0) and produce the same batch keys; the raw
run estimates A/V offset, drift and text offset per sample (estimate=True), the preprocessed run takes
them from align.json and seeks with frames.json. Figures: median epoch seconds of `--repeats` epochs,
for every frame (fps=None) and for 2 fps sampling (where the frame index replaces a demux scan).
"""
from __future__ import annotations

import argparse
import glob
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import torch  # noqa: E402

import loaders  # noqa: E402
from avalign.preprocess import preprocess  # noqa: E402


def epoch_seconds(urls, *, estimate: bool, fps, repeats: int) -> tuple[float, list[str]]:
    times, keys = [], []
    for _ in range(repeats):
        loader = loaders.make_loader(urls, seed=0, num_workers=0, estimate=estimate, fps=fps,
                                     budgets=(600, 400_000, 512), window_seconds=None)
        t0 = time.perf_counter()
        keys = [k for batch in loader for k in batch.sample_keys]
        times.append(time.perf_counter() - t0)
    return statistics.median(times), sorted(keys)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shards", default="sample_data/shards/*.tar")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    raw = sorted(glob.glob(args.shards))
    out = tempfile.mkdtemp(prefix="avalign-pre-")
    t0 = time.perf_counter()
    preprocess("::".join(raw), out, workers=1, progress=False)
    pre_seconds = time.perf_counter() - t0
    pre = sorted(glob.glob(os.path.join(out, "shard-*.tar")))
    print(f"preprocess of {len(raw)} raw shards: {pre_seconds:.2f} s (once)\n")
    print("| frames | raw shards, estimate on the fly (s) | preprocessed shards (s) | speed-up |")
    print("|---|---:|---:|---:|")
    for fps in (None, 2.0):
        raw_s, raw_keys = epoch_seconds(raw, estimate=True, fps=fps, repeats=args.repeats)
        pre_s, pre_keys = epoch_seconds(pre, estimate=True, fps=fps, repeats=args.repeats)
        if raw_keys != pre_keys:
            print(f"(keys differ: raw {raw_keys} vs preprocessed {pre_keys})")
        print(f"| {'every frame' if fps is None else f'{fps:g} fps'} | {raw_s:.3f} | {pre_s:.3f} | {raw_s / pre_s:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
