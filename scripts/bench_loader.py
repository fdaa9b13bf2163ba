"""Loader throughput: ``make_loader`` and ``DataLoader(make_dataset(...))`` (packed, 2 workers each) vs avalign's own
decode alone (the loader's ceiling) and a naive webdataset + decord + pad-to-max pipeline.

All read the same shards, decode every frame at the native frame rate and the audio at 16 kHz mono, and
run 2 worker processes. The naive pipeline batches a fixed number of clips and pads every clip to the
longest in the batch (frames and samples); ours packs windows into fixed budgets. Reported: clips/s,
decoded frames/s, padding fraction of the delivered tensors, and the wall time of one epoch.

Usage::

    .venv/bin/python scripts/bench_loader.py [--shards 'sample_data/shards/*.tar'] [--out /tmp/bench_loader.md]
    .venv/bin/python scripts/bench_loader.py --synthetic-shards 4 --repeats 4              # 32 clips, every frame
    .venv/bin/python scripts/bench_loader.py --long-shards 4 --fps 2 --window-seconds 8   # 16 x 30 s 360p, 2 fps

Both loaders run once per tail policy of ``--tails`` (default ``pad,trim,drop``: the library default first, then
the others), each row with its padding of the delivered capacity (a trimmed tail counts at its own size; with
``drop`` the dropped items count nowhere: see the frames column).

Without shards (``sample_data/shards`` not generated yet), synthetic shards are made with ffmpeg::

    ffmpeg -f lavfi -i testsrc=size=160x120:rate=30 -f lavfi -i sine=f=440:r=48000 -t SECONDS \\
           -c:v libx264 -g 30 -c:a aac clipNN.mp4          # SECONDS from 2 to 6, 4 clips per shard
"""
from __future__ import annotations

import argparse
import gc
import glob
import io
import json
import logging
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Optional

import numpy as np
import torch

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

logger = logging.getLogger(__name__)


def make_demo_shards(out_dir: Path, *, num_shards: int = 3, clips_per_shard: int = 4, fps: int = 30,
                     size: str = "160x120", seconds_choices: tuple = (2.0, 3.0, 4.0, 5.0, 6.0)) -> list[str]:
    """Synthetic shards of testsrc clips (``size``, durations drawn from ``seconds_choices``, AAC 48 kHz) with
    WhisperX-style JSON transcripts."""
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for shard in range(num_shards):
        path = out_dir / f"demo-{shard:06d}.tar"
        with tarfile.open(path, "w") as tar:
            for clip in range(clips_per_shard):
                seconds = float(rng.choice(seconds_choices))
                media = out_dir / f"clip{shard}{clip}.mp4"
                subprocess.run(
                    ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc=size={size}:rate={fps}",
                     "-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", str(seconds), "-c:v", "libx264", "-g", "30",
                     "-c:a", "aac", str(media)],
                    check=True,
                )
                words = [{"word": f"w{i}", "start": 0.4 * i + 0.1, "end": 0.4 * i + 0.35} for i in range(int(seconds / 0.4))]
                transcript = json.dumps({"segments": [{"start": 0.1, "end": words[-1]["end"], "text": " ".join(
                    w["word"] for w in words), "words": words}]}).encode()
                for name, data in ((f"c{shard}{clip}.mp4", media.read_bytes()), (f"c{shard}{clip}.json", transcript)):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                media.unlink()
        paths.append(str(path))
    return paths


def find_shards(pattern: str) -> list[str]:
    """Shards matching ``pattern``, else freshly made synthetic ones (logged)."""
    paths = sorted(glob.glob(pattern))
    if paths:
        return paths
    out = Path(tempfile.mkdtemp(prefix="avalign-bench-"))
    logger.warning("no shards match %s; making synthetic shards in %s", pattern, out)
    return make_demo_shards(out)


def bench_ours(paths: list[str], *, num_workers: int, window_seconds: float, budgets: tuple[int, int, int],
               dataloader: bool = False, fps: Optional[float] = None, tail: str = "pad") -> dict:
    from loaders import make_dataset, make_loader

    options = dict(seed=0, fps=fps, sample_rate=16000, budgets=budgets, window_seconds=window_seconds, buffer_size=8,
                   frame_size=(112, 112), max_items=64, tail=tail)
    if dataloader:
        loader = torch.utils.data.DataLoader(make_dataset(paths, **options), batch_size=None, num_workers=num_workers,
                                             pin_memory=torch.cuda.is_available())
        name = f"avalign DataLoader(make_dataset) ({num_workers} workers, packed, windows {window_seconds:g} s, tail={tail})"
    else:
        loader = make_loader(paths, num_workers=num_workers, **options)
        name = f"avalign make_loader ({num_workers} workers, packed, windows {window_seconds:g} s, tail={tail})"
    started = time.perf_counter()
    first = None
    frames = samples = batches = capacity_frames = capacity_samples = 0
    keys = set()
    for batch in loader:
        first = first or time.perf_counter() - started
        frames += int(batch.cu_seqlens_frames[-1])
        samples += int(batch.cu_seqlens_samples[-1])
        capacity_frames += int(batch.frames.shape[0])  # a trimmed tail (tail="trim") counts at its own size
        capacity_samples += int(batch.audio.shape[0])
        batches += 1
        keys.update(k.split("@")[0] for k in batch.sample_keys)
    seconds = time.perf_counter() - started
    return {
        "pipeline": name,
        "clips": len(keys), "batches": batches, "frames": frames, "seconds": seconds, "first_batch_seconds": first,
        "padding_frames": 1 - frames / capacity_frames, "padding_samples": 1 - samples / capacity_samples,
    }


class _NaiveDataset(torch.utils.data.IterableDataset):
    """webdataset → decord (every frame at native fps, or the frame shown at each ``1/fps`` grid time) → 16 kHz
    audio; one clip per item."""

    def __init__(self, paths: list[str], fps: Optional[float] = None) -> None:
        self.paths, self.fps = paths, fps

    def __iter__(self):
        import decord
        import webdataset as wds

        dataset = wds.WebDataset(self.paths, shardshuffle=False, nodesplitter=None, workersplitter=wds.split_by_worker)
        for sample in dataset:
            ext = next((e for e in ("mp4", "mkv", "webm", "mov", "avi") if e in sample), None)
            if ext is None:
                continue
            try:  # decord cannot read some containers (e.g. VP9/WebM): the naive pipeline drops those clips
                video = decord.VideoReader(io.BytesIO(sample[ext]), width=112, height=112)
                indices = list(range(len(video)))
                if self.fps is not None:  # the frame shown at each grid time k / fps
                    native = video.get_avg_fps()
                    indices = sorted({min(int(k * native / self.fps), len(video) - 1)
                                      for k in range(int(len(video) / native * self.fps + 1e-9))})
                frames = video.get_batch(indices).asnumpy()
                audio = decord.AudioReader(io.BytesIO(sample[ext]), sample_rate=16000, mono=True)._array[0]
            except Exception as error:  # noqa: BLE001 - a benchmark baseline: count and go on
                logger.warning("naive pipeline: %s.%s failed: %s", sample["__key__"], ext, error)
                continue
            yield torch.from_numpy(frames), torch.from_numpy(np.ascontiguousarray(audio, dtype=np.float32))


class _DecodeOnlyDataset(torch.utils.data.IterableDataset):
    """avalign's own decode and nothing else: the same tar reading as the loader, ``read_video`` (the same frames,
    scaled to 112×112 in the decoder) and ``read_audio`` to 16 kHz mono (the samples the batches carry), shards split
    over DataLoader workers; yields counts only (no align, window, tokenize, pack, collate, nor tensors sent between
    processes)."""

    def __init__(self, paths: list[str], frame_size: tuple[int, int], fps: Optional[float] = None) -> None:
        self.paths, self.frame_size, self.fps = paths, frame_size, fps

    def __iter__(self):
        from avcore import MEDIA_EXTENSIONS
        from loaders import read_audio, read_video
        from loaders.shards import group_by_key, tar_members

        info = torch.utils.data.get_worker_info()
        worker, num_workers = (0, 1) if info is None else (info.id, info.num_workers)
        for url in self.paths[worker::num_workers]:
            for sample in group_by_key(tar_members(url), url=url):
                ext = next((e for e in MEDIA_EXTENSIONS if e in sample), None)
                if ext is None:
                    continue
                video = read_video(sample[ext], frame_size=self.frame_size, fps=self.fps)
                audio = read_audio(sample[ext], sample_rate=16000, mono=True)
                yield sample["__key__"], video.num_frames, audio.num_samples


def bench_decode_only(paths: list[str], *, num_workers: int, fps: Optional[float] = None) -> dict:
    loader = torch.utils.data.DataLoader(_DecodeOnlyDataset(paths, (112, 112), fps), batch_size=None,
                                         num_workers=num_workers)
    started = time.perf_counter()
    first = None
    clips = frames = 0
    for _, num_frames, _ in loader:
        first = first or time.perf_counter() - started
        clips += 1
        frames += num_frames
    seconds = time.perf_counter() - started
    return {
        "pipeline": f"avalign decode only: read_video + read_audio ({num_workers} workers, no batches)",
        "clips": clips, "batches": 0, "frames": frames, "seconds": seconds, "first_batch_seconds": first,
        "padding_frames": float("nan"), "padding_samples": float("nan"),
    }


def _pad_to_max(items):
    frames = [f for f, _ in items]
    audio = [a for _, a in items]
    max_frames, max_samples = max(f.shape[0] for f in frames), max(a.shape[0] for a in audio)
    video = torch.zeros((len(items), max_frames, 3, 112, 112))
    sound = torch.zeros((len(items), max_samples))
    for i, (f, a) in enumerate(zip(frames, audio)):
        video[i, : f.shape[0]] = f.permute(0, 3, 1, 2).float() / 255.0
        sound[i, : a.shape[0]] = a
    return video, sound, [f.shape[0] for f in frames], [a.shape[0] for a in audio]


def bench_naive(paths: list[str], *, num_workers: int, batch_size: int, fps: Optional[float] = None) -> dict:
    loader = torch.utils.data.DataLoader(_NaiveDataset(paths, fps), batch_size=batch_size, num_workers=num_workers,
                                         collate_fn=_pad_to_max)
    started = time.perf_counter()
    first = None
    clips = frames = batches = capacity_frames = capacity_samples = samples = 0
    for video, sound, num_frames, num_samples in loader:
        first = first or time.perf_counter() - started
        clips += len(num_frames)
        frames += sum(num_frames)
        samples += sum(num_samples)
        capacity_frames += video.shape[0] * video.shape[1]
        capacity_samples += sound.numel()
        batches += 1
    seconds = time.perf_counter() - started
    return {
        "pipeline": f"naive webdataset + decord + pad-to-max ({num_workers} workers, batch {batch_size} clips)",
        "clips": clips, "batches": batches, "frames": frames, "seconds": seconds, "first_batch_seconds": first,
        "padding_frames": 1 - frames / capacity_frames, "padding_samples": 1 - samples / capacity_samples,
    }


def _percent(fraction: float) -> str:
    return "-" if fraction != fraction else f"{fraction:.1%}"  # NaN: no batches (decode only)


def _cpu_seconds() -> float:
    """User + system time of this process and of its finished children (the worker processes of past epochs)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed(run) -> dict:
    before = _cpu_seconds()
    row = run()
    gc.collect()  # DataLoader iterators shut their workers down when collected: count their CPU time here
    row["cpu_seconds"] = _cpu_seconds() - before
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", default=str(REPO / "sample_data/shards/*.tar"))
    parser.add_argument("--out", default="/tmp/bench_loader.md")
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--window-seconds", type=float, default=4.0)
    parser.add_argument("--fps", type=float, default=None, help="sample frames at this rate (default: every frame)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tails", default="pad,trim,drop",
                        help="tail policies to run make_loader and the DataLoader with (comma-separated; the first is the "
                             "library default, and the ratios below are given for each)")
    parser.add_argument("--synthetic-shards", type=int, default=0,
                        help="make this many synthetic shards of 8 testsrc clips (160x120, 2-6 s) instead of reading --shards")
    parser.add_argument("--long-shards", type=int, default=0,
                        help="make this many synthetic shards of 4 testsrc clips (640x360, 30 s) instead of reading --shards")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    torch.set_num_threads(1)
    if args.synthetic_shards:
        paths = make_demo_shards(Path(tempfile.mkdtemp(prefix="avalign-bench-")), num_shards=args.synthetic_shards,
                                 clips_per_shard=8)
    elif args.long_shards:
        paths = make_demo_shards(Path(tempfile.mkdtemp(prefix="avalign-bench-")), num_shards=args.long_shards,
                                 clips_per_shard=4, size="640x360", seconds_choices=(30.0,))
    else:
        paths = find_shards(args.shards)
    frame_rate = args.fps or 30
    budgets = (int(round(frame_rate * args.window_seconds * 2)), int(16000 * args.window_seconds * 2), 512)
    w, fps = args.num_workers, args.fps
    tails = [t.strip() for t in args.tails.split(",") if t.strip()]
    pipelines = {}
    for tail in tails:
        pipelines[f"make_loader+{tail}"] = lambda tail=tail: bench_ours(
            paths, num_workers=w, window_seconds=args.window_seconds, budgets=budgets, fps=fps, tail=tail)
        pipelines[f"DataLoader+{tail}"] = lambda tail=tail: bench_ours(
            paths, num_workers=w, window_seconds=args.window_seconds, budgets=budgets, fps=fps, dataloader=True, tail=tail)
    pipelines["decode only"] = lambda: bench_decode_only(paths, num_workers=w, fps=fps)
    pipelines["naive"] = lambda: bench_naive(paths, num_workers=w, batch_size=4, fps=fps)
    runs: dict[str, list[dict]] = {name: [] for name in pipelines}
    for _ in range(args.repeats):  # interleaved, to spread the shared machine's load over all four
        for name, run in pipelines.items():
            runs[name].append(_timed(run))
    median = {name: sorted(group, key=lambda r: r["seconds"])[len(group) // 2] for name, group in runs.items()}
    cpu = {name: float(np.median([r["cpu_seconds"] for r in group])) for name, group in runs.items()}
    frames_at = "every frame at native fps" if fps is None else f"{fps:g} fps"
    lines = [
        f"# Loader throughput ({len(paths)} shards, {frames_at}, audio 16 kHz mono, 112×112, {w} workers)",
        "",
        f"Median of {args.repeats} interleaved epochs each (all epochs listed); CPU = user + system of the process tree "
        f"(median). Budgets per packed batch: {budgets} (frames, samples, tokens).",
        "",
        "| pipeline | clips | batches | frames | epochs s | median s | CPU s | clips/s | first batch s | frame padding | "
        "audio padding |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in median.items():
        epochs = " ".join(f"{r['seconds']:.2f}" for r in runs[name])
        lines.append(
            f"| {row['pipeline']} | {row['clips']} | {row['batches']} | {row['frames']} | {epochs} | {row['seconds']:.2f} | "
            f"{cpu[name]:.2f} | {row['clips'] / row['seconds']:.2f} | {row['first_batch_seconds']:.2f} | "
            f"{_percent(row['padding_frames'])} | {_percent(row['padding_samples'])} |"
        )

    def ratio(a: str, b: str) -> str:  # throughput of a over b: b's time / a's time (wall, then CPU)
        return f"{median[b]['seconds'] / median[a]['seconds']:.2f}x (CPU {cpu[b] / cpu[a]:.2f}x)"

    lines += ["", "Throughput ratios (median epoch time of the second / of the first):", ""]
    for tail in tails:
        ml, dl = f"make_loader+{tail}", f"DataLoader+{tail}"
        lines += [f"- tail={tail}: loader vs decode only: make_loader {ratio(ml, 'decode only')}, "
                  f"DataLoader {ratio(dl, 'decode only')}; DataLoader / make_loader: {ratio(dl, ml)}; "
                  f"vs naive: make_loader {ratio(ml, 'naive')}, DataLoader {ratio(dl, 'naive')}"]
    reference = f"make_loader+{tails[0]}"
    lines += ["", f"Frame padding against make_loader under tail={tails[0]} ({_percent(median[reference]['padding_frames'])}, "
              f"#14's \"padding unchanged\"): " + ", ".join(
                  f"DataLoader tail={t} {_percent(median[f'DataLoader+{t}']['padding_frames'])}" for t in tails)]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
