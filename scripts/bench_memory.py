"""RSS over repeated decodes: is memory flat? (issue: RSS growth <= 5 % over 1,000 read_video calls)

Usage: .venv/bin/python scripts/bench_memory.py [--calls 1000] [--backend pyav|decord] [FILE]
Without FILE, a 2 s 320x240 H.264+AAC clip is generated with ffmpeg. RSS is read from /proc/self/statm
after a warm-up of 50 calls (allocator pools and codec tables settle), then every 100 calls.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

import loaders  # noqa: E402


def rss_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file", nargs="?")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--backend", default="pyav", choices=["pyav", "decord", "auto"])
    args = parser.parse_args()
    path = args.file
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "mem.mp4")
        subprocess.run(["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=30", "-f", "lavfi",
                        "-i", "sine=r=16000", "-t", "2", "-c:v", "libx264", "-c:a", "aac", path], check=True)
    data = open(path, "rb").read()
    for _ in range(50):
        loaders.read_video(data, backend=args.backend)
        loaders.read_audio(data, sample_rate=16000)
    base = rss_mib()
    t0 = time.perf_counter()
    rows = [(0, base)]
    for i in range(1, args.calls + 1):
        loaders.read_video(data, backend=args.backend)
        loaders.read_audio(data, sample_rate=16000)
        if i % 100 == 0:
            rows.append((i, rss_mib()))
    seconds = time.perf_counter() - t0
    print(f"| calls (read_video + read_audio, backend={args.backend}) | RSS MiB |")
    print("|---:|---:|")
    for i, r in rows:
        print(f"| {i} | {r:.1f} |")
    growth = (rows[-1][1] - base) / base * 100
    print(f"\nRSS after warm-up {base:.1f} MiB, after {args.calls} more calls {rows[-1][1]:.1f} MiB: growth {growth:+.2f} % "
          f"({seconds:.1f} s, {args.calls / seconds:.1f} calls/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
