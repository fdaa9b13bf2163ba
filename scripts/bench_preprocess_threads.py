"""Interleaved A/B of ``avalign preprocess`` by worker count and FFmpeg decoder threads: wall and CPU seconds.

Each run is a fresh process (``preprocess(INPUT, fresh_dir, workers=W, decoder_threads=T)``, CPU = user + system of
that process and its reaped children: pool workers and watchdog children); rounds run the variants in turn
(A B C, A B C, …) so the shared machine's load falls on all alike. Every run's shards must be byte-identical to
the first run's (the script exits 1 otherwise). Clips are generated with ffmpeg (``--size``, ``--seconds``,
H.264 + 48 kHz AAC + an SRT each) unless ``--input`` is given.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_preprocess_threads.py --rounds 3 \\
        --variant 1:1 --variant 1:share --variant 2:share --variant 2:0

A variant is ``WORKERS:THREADS``; ``THREADS`` is a number (0: FFmpeg's choice) or ``share`` (the default,
``loaders.pipeline.worker_decoder_threads(WORKERS)``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRT = "1\n00:00:00,500 --> 00:00:02,000\nhello there\n\n2\n00:00:02,500 --> 00:00:04,000\ngood morning\n"

_RUN = r'''
import json, resource, sys, time
from avalign.preprocess import preprocess
def cpu():
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
workers, threads = int(sys.argv[3]), (None if sys.argv[4] == "share" else int(sys.argv[4]))
cpu0, t0 = cpu(), time.perf_counter()
result = preprocess(sys.argv[1], sys.argv[2], workers=workers, decoder_threads=threads, samples_per_shard=100,
                    progress=False)
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": cpu() - cpu0, "samples": result.num_samples}))
'''


def make_clips(directory: Path, count: int, seconds: float, size: str) -> None:
    for i in range(count):
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30",
                        "-f", "lavfi", "-i", f"sine=f={300 + 50 * i}:r=48000", "-t", str(seconds), "-c:v", "libx264",
                        "-g", "30", "-c:a", "aac", str(directory / f"clip{i:02d}.mp4")], check=True)
        (directory / f"clip{i:02d}.srt").write_text(SRT)


def digest(directory: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(directory.glob("shard-*.tar")):
        h.update(p.name.encode() + p.read_bytes())
    return h.hexdigest()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", help="directory of clips (default: generate)")
    parser.add_argument("--clips", type=int, default=6)
    parser.add_argument("--seconds", type=float, default=6.0)
    parser.add_argument("--size", default="1280x720")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--variant", action="append", required=True, help="WORKERS:THREADS (THREADS: int or share)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pre-threads-") as tmp:
        source = Path(args.input) if args.input else Path(tmp) / "in"
        if not args.input:
            source.mkdir()
            make_clips(source, args.clips, args.seconds, args.size)
        runs: dict[str, list[dict]] = {v: [] for v in args.variant}
        reference = None
        for r in range(args.rounds):
            for variant in args.variant:
                workers, threads = variant.split(":")
                out = Path(tmp) / f"out-{r}-{variant.replace(':', '-')}"
                proc = subprocess.run([sys.executable, "-c", _RUN, str(source), str(out), workers, threads],
                                      capture_output=True, text=True, check=True)
                row = json.loads(proc.stdout.strip().splitlines()[-1])
                row["digest"] = digest(out)
                reference = reference or row["digest"]
                if row["digest"] != reference:
                    print(f"shards differ: {variant} round {r}", file=sys.stderr)
                    return 1
                runs[variant].append(row)
                print(r, variant, json.dumps(row), flush=True)
    print(f"\n{args.clips if not args.input else '?'} clips of {args.seconds:g} s {args.size}; every run's shards "
          f"byte-identical ({reference[:12]}).\n")
    print("| workers:threads | wall s | median wall s | CPU s | median CPU s |")
    print("|---|---|---|---|---|")
    for variant, rows in runs.items():
        walls, cpus = [x["wall_s"] for x in rows], [x["cpu_s"] for x in rows]
        print(f"| {variant} | {' '.join(f'{w:.2f}' for w in walls)} | {statistics.median(walls):.2f} | "
              f"{' '.join(f'{c:.2f}' for c in cpus)} | {statistics.median(cpus):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
