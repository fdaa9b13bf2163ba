"""Collate + worker-to-main transfer alone: a DataLoader (2 workers) over a dataset that only collates the same two
synthetic aligned items (2 x 117 frames of 112x112, 3.9 s of 16 kHz audio) into PackedBatches of budgets
(240, 128000, 512), N batches; the main process touches each batch. No decoding: what moving batches costs.

Prints one JSON line: wall seconds of the epoch, CPU seconds (user + system) of the main process and of the
workers. Run it once per checkout in fresh processes, alternating, e.g.::

    for r in 1 2 3; do for repo in /work/main $PWD; do
        OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_batch_transfer.py --repo $repo --batches 40; done; done
"""
from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repo", required=True, help="checkout whose loaders/aligner are measured")
    parser.add_argument("--batches", type=int, default=40)
    parser.add_argument("--num-workers", type=int, default=2)
    args = parser.parse_args()
    sys.path.insert(0, args.repo)
    import numpy as np
    import torch

    from aligner import align
    from avcore import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word
    from loaders.pipeline import Collator

    torch.set_num_threads(1)
    fps, rate = 30, 16000

    def sample(key: str, seconds: float, seed: int):
        rng = np.random.default_rng(seed)
        n = int(round(seconds * fps))
        frames = torch.from_numpy(rng.integers(0, 256, size=(n, 112, 112, 3), dtype=np.uint8))
        metadata = VideoMetadata("h264", 112, 112, float(fps), n, 0.0, seconds, fps_from_content=float(fps))
        video = VideoClip(frames, torch.arange(n, dtype=torch.float64) / fps, metadata)
        audio = AudioClip(torch.from_numpy(rng.uniform(-1, 1, size=(1, int(seconds * rate))).astype(np.float32)), rate, 0.0)
        words = (Word("a", 0.1, 0.3), Word("b", 0.3, 0.5))
        return align(video, audio, Transcript((Span("a b", 0.1, 0.5, words=words),)), sample_rate=rate, estimate=False,
                     key=key)

    items = [sample(f"k{i}", 3.9, i) for i in range(2)]

    class Batches(torch.utils.data.IterableDataset):
        def __init__(self) -> None:
            self.collate = Collator((240, 128000, 512), frame_size=(112, 112), max_items=64)

        def __iter__(self):
            info = torch.utils.data.get_worker_info()
            for _ in range(args.batches // (1 if info is None else info.num_workers)):
                yield self.collate(items)

    def cpu() -> tuple[float, float]:
        own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime

    own0, children0 = cpu()
    started = time.perf_counter()
    iterator = iter(torch.utils.data.DataLoader(Batches(), batch_size=None, num_workers=args.num_workers))
    touched = 0.0
    for batch in iterator:
        touched += float(batch.frames[0, 0, 0, 0]) + float(batch.frames[-1, 0, 0, 0])
    wall = time.perf_counter() - started
    del iterator
    gc.collect()  # shuts the workers down: their CPU time is then in RUSAGE_CHILDREN
    own1, children1 = cpu()
    print(json.dumps({"repo": args.repo, "wall_s": round(wall, 3), "main_cpu_s": round(own1 - own0, 3),
                      "workers_cpu_s": round(children1 - children0, 3)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
