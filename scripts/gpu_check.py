"""One prepared check for a CUDA machine: collate CPU/CUDA equality, flat reserved memory, throughput.

1. Equality: the same packs collated on CPU and on CUDA give identical index tensors (cu_seqlens, position
   and segment ids, span maps, keys) and audio, and frames / log-mel equal within float tolerance (the
   antialiased resize and the FFT differ in the last bits between devices).
2. Memory: 1,000 collate steps with varying item counts and input sizes after 50 warm-up steps;
   ``torch.cuda.memory_reserved()`` must not change (fixed capacities → the caching allocator reuses blocks).
3. Throughput: collated frames per second on CUDA vs CPU, and (when shards are given and found) one epoch of
   ``make_loader(device="cuda", num_workers=2)``.

On a machine without CUDA it says so and exits 0 (``--cpu-smoke`` runs parts 1 and 3 on CPU only, to test the
script). Results are printed and written as JSON to ``--out``.

Usage::

    .venv/bin/python scripts/gpu_check.py [--steps 1000] [--shards 'sample_data/shards/*.tar'] [--out gpu_check.json]
"""
from __future__ import annotations

import argparse
import glob
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from aligner import align  # noqa: E402
from avcore import AudioClip, Span, Transcript, VideoClip, VideoMetadata, Word  # noqa: E402
from loaders.pipeline import Collator  # noqa: E402

BUDGETS = (256, 160_000, 512)
FRAME_SIZE = (112, 112)
SAMPLE_RATE = 16000


def synthetic_pool(*, num: int = 16, seed: int = 0) -> list:
    """Aligned samples of 1–4 s at 25 fps with 240p or 180p frames, random pixels and audio, a few words."""
    rng = np.random.default_rng(seed)
    pool = []
    for i in range(num):
        seconds = float(rng.choice([1.0, 2.0, 3.0, 4.0]))
        height, width = ((240, 320), (180, 320))[i % 2]
        num_frames = int(seconds * 25)
        frames = torch.from_numpy(rng.integers(0, 256, size=(num_frames, height, width, 3), dtype=np.uint8))
        pts = torch.arange(num_frames, dtype=torch.float64) / 25
        video = VideoClip(frames, pts, VideoMetadata("h264", width, height, 25.0, num_frames, 0.0, seconds))
        audio = AudioClip(torch.from_numpy(rng.uniform(-0.5, 0.5, (1, int(seconds * SAMPLE_RATE))).astype(np.float32)),
                          SAMPLE_RATE, 0.0)
        words = tuple(Word(f"w{k}", 0.3 * k, 0.3 * k + 0.2) for k in range(int(seconds / 0.3)))
        transcript = Transcript((Span(" ".join(w.text for w in words), 0.0, seconds, words=words),))
        pool.append(align(video, audio, transcript, sample_rate=SAMPLE_RATE, estimate=False, key=f"s{i}"))
    return pool


def packs_from(pool: list, *, count: int, seed: int) -> list[list]:
    """``count`` random packs of 1–4 samples within the budgets."""
    rng = np.random.default_rng(seed)
    packs = []
    while len(packs) < count:
        chosen = [pool[j] for j in rng.choice(len(pool), size=int(rng.integers(1, 5)), replace=False)]
        if sum(s.video.num_frames for s in chosen) <= BUDGETS[0] and sum(s.audio.num_samples for s in chosen) <= BUDGETS[1]:
            packs.append(chosen)
    return packs


def compare(cpu, cuda) -> dict:
    """Max differences between a CPU and a CUDA batch (exact fields must be 0)."""
    exact = ["cu_seqlens_frames", "cu_seqlens_samples", "cu_seqlens_tokens", "cu_seqlens_hops", "position_ids_frames",
             "position_ids_samples", "segment_ids_frames", "segment_ids_samples", "segment_ids_hops", "word_spans",
             "segment_spans", "audio", "frame_seconds"]
    out = {"exact_mismatches": [name for name in exact if not torch.equal(getattr(cpu, name), getattr(cuda, name).cpu())]}
    out["frames_max_abs_diff"] = float((cpu.frames - cuda.frames.cpu()).abs().max())
    out["log_mel_max_abs_diff"] = float((cpu.log_mel - cuda.log_mel.cpu()).abs().max())
    out["keys_equal"] = cpu.sample_keys == cuda.sample_keys and cpu.word_texts == cuda.word_texts
    return out


def throughput(collate: Collator, packs: list[list], *, sync: bool) -> float:
    """Collated frames per second over ``packs``."""
    frames = 0
    started = time.perf_counter()
    for pack in packs:
        batch = collate(pack)
        frames += int(batch.cu_seqlens_frames[-1])
    if sync:
        torch.cuda.synchronize()
    return frames / (time.perf_counter() - started)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--shards", default=str(REPO / "sample_data/shards/*.tar"))
    parser.add_argument("--out", default="gpu_check.json")
    parser.add_argument("--cpu-smoke", action="store_true", help="run the CPU parts only (no CUDA needed)")
    args = parser.parse_args()
    has_cuda = torch.cuda.is_available()
    if not has_cuda and not args.cpu_smoke:
        print("gpu_check: no CUDA device on this machine; nothing to check (exit 0). Use --cpu-smoke to test the script.")
        return 0
    torch.set_num_threads(max(1, torch.get_num_threads()))
    pool = synthetic_pool()
    packs = packs_from(pool, count=max(args.steps + args.warmup, 8), seed=1)
    options = dict(frame_size=FRAME_SIZE, log_mel=True, max_items=8, max_words=256, max_segments=8)
    cpu = Collator(BUDGETS, device="cpu", **options)
    result: dict = {"device": torch.cuda.get_device_name(0) if has_cuda else "cpu-smoke"}
    result["cpu_frames_per_second"] = throughput(cpu, packs[:8], sync=False)
    failures = []
    if has_cuda:
        gpu = Collator(BUDGETS, device="cuda", **options)
        diffs = [compare(cpu(pack), gpu(pack)) for pack in packs[:8]]
        result["equality"] = {
            "exact_mismatches": sorted({m for d in diffs for m in d["exact_mismatches"]}),
            "frames_max_abs_diff": max(d["frames_max_abs_diff"] for d in diffs),
            "log_mel_max_abs_diff": max(d["log_mel_max_abs_diff"] for d in diffs),
            "keys_equal": all(d["keys_equal"] for d in diffs),
        }
        eq = result["equality"]
        if eq["exact_mismatches"] or not eq["keys_equal"] or eq["frames_max_abs_diff"] > 1e-3 or eq["log_mel_max_abs_diff"] > 1e-2:
            failures.append(f"CPU/CUDA mismatch: {eq}")
        for pack in packs[: args.warmup]:
            gpu(pack)
        torch.cuda.synchronize()
        reserved = []
        started = time.perf_counter()
        frames = 0
        for pack in packs[args.warmup : args.warmup + args.steps]:
            batch = gpu(pack)
            frames += int(batch.cu_seqlens_frames[-1])
            reserved.append(torch.cuda.memory_reserved())
        torch.cuda.synchronize()
        result["cuda_frames_per_second"] = frames / (time.perf_counter() - started)
        result["reserved_bytes_min_max"] = [min(reserved), max(reserved)]
        result["steps"] = len(reserved)
        if max(reserved) != min(reserved):
            failures.append(f"reserved memory not flat over {len(reserved)} steps: {min(reserved)}..{max(reserved)} bytes")
        shards = sorted(glob.glob(args.shards))
        if shards:
            from loaders.pipeline import make_loader

            loader = make_loader(shards, seed=0, num_workers=2, device="cuda", window_seconds=8.0, buffer_size=16,
                                 budgets=BUDGETS, frame_size=FRAME_SIZE)
            started = time.perf_counter()
            loader_frames = sum(int(b.cu_seqlens_frames[-1]) for b in loader)
            torch.cuda.synchronize()
            result["loader_cuda_frames_per_second"] = loader_frames / (time.perf_counter() - started)
            result["loader_stats"] = str(loader.stats)
    result["failures"] = failures
    text = json.dumps(result, indent=2)
    print(text)
    Path(args.out).write_text(text)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
