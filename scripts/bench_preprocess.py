"""Benchmark ``avalign preprocess``: clips/s and × realtime for 1 and 2 local workers and Ray.

Generates 8 clips of 5 s (320×240, 30 fps H.264 + 48 kHz AAC, each with an SRT) with ffmpeg, or uses
the clips given with ``--input``; runs each configuration into a fresh output directory, checks that
every run's shards are byte-identical to the first, and writes a Markdown table.

    .venv/bin/python scripts/bench_preprocess.py                       # table → /tmp/bench_preprocess.md
    .venv/bin/python scripts/bench_preprocess.py --input sample_data --repeats 1
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from avalign.preprocess import preprocess  # noqa: E402

SRT = "1\n00:00:00,500 --> 00:00:02,000\nhello there\n\n2\n00:00:02,500 --> 00:00:04,000\ngood morning\n"


def make_clips(directory: Path, count: int, seconds: float) -> None:
    for i in range(count):
        subprocess.run(
            ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30",
             "-f", "lavfi", "-i", f"sine=f={300 + 50 * i}:r=48000", "-t", str(seconds), "-c:v", "libx264", "-g", "30",
             "-c:a", "aac", str(directory / f"clip{i:02d}.mp4")],
            check=True,
        )
        (directory / f"clip{i:02d}.srt").write_text(SRT)


def shard_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.glob("shard-*.tar"))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", help="directory of clips (default: generate 8 × 5 s clips)")
    parser.add_argument("--clips", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--repeats", type=int, default=1, help="runs per configuration; the fastest is reported")
    parser.add_argument("--out", default="/tmp/bench_preprocess.md")
    parser.add_argument("--no-ray", action="store_true")
    parser.add_argument("--samples-per-shard", type=int, default=2,
                        help="output shard size (default 2; 100 puts 8 clips in one shard: parallel over samples)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-preprocess-"))
    try:
        source = Path(args.input) if args.input else work / "in"
        if not args.input:
            source.mkdir()
            make_clips(source, args.clips, args.seconds)
        configs = [("local", 1), ("local", 2)]
        try:
            import ray  # noqa: F401

            if not args.no_ray:
                configs.append(("ray", 2))
        except ImportError:
            print("ray not installed: skipping the Ray row", file=sys.stderr)
        rows, reference, ray_start_seconds = [], None, None
        for backend, workers in configs:
            if backend == "ray":  # start the instance outside the timed runs (preprocess reuses it)
                import ray

                t0 = time.perf_counter()
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
                ray_start_seconds = time.perf_counter() - t0
            best = None
            for repeat in range(args.repeats):
                out = work / f"out-{backend}-{workers}-{repeat}"
                t0 = time.perf_counter()
                result = preprocess(str(source), str(out), backend=backend, workers=workers, samples_per_shard=args.samples_per_shard, progress=False)
                wall = time.perf_counter() - t0
                data = shard_bytes(out)
                reference = reference or data
                if data != reference:
                    raise SystemExit(f"{backend} × {workers}: shards differ from the first run")
                best = min(best or wall, wall)
            rows.append((backend, workers, result.num_samples, result.media_seconds, best))
            if backend == "ray":
                ray.shutdown()
            print(f"{backend} × {workers}: {result.num_samples} clips, {best:.2f} s", file=sys.stderr)
        cpus = os.cpu_count()
        lines = [
            f"# avalign preprocess benchmark\n",
            f"{rows[0][2]} clips, {rows[0][3]:.1f} s of media in total ({'generated 320×240 30 fps H.264 + 48 kHz AAC + SRT' if not args.input else args.input}); "
            f"{cpus} CPU(s); fastest of {args.repeats} run(s); the Ray row runs on an already started local instance "
            f"(start-up, not counted: {ray_start_seconds or 0:.1f} s). "
            f"{args.samples_per_shard} samples per shard. Every run's shards are byte-identical to the first.\n",
            "| backend | workers | clips | wall s | clips/s | × realtime |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for backend, workers, n, media, wall in rows:
            lines.append(f"| {backend} | {workers} | {n} | {wall:.2f} | {n / wall:.2f} | {media / wall:.1f} |")
        Path(args.out).write_text("\n".join(lines) + "\n")
        print("\n".join(lines))
        print(json.dumps({"out": args.out}), file=sys.stderr)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
