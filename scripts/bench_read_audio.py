#!/usr/bin/env python3
"""read_audio's backends against torchcodec's AudioDecoder: wall and CPU seconds, interleaved (issue #17).

    OMP_NUM_THREADS=1 python scripts/bench_read_audio.py --rounds 9 FILE [FILE ...]

For each file: ``read_audio(FILE, sample_rate=16000)`` (``auto``), the same with ``backend="pyav"`` and
``AudioDecoder(FILE, sample_rate=16000, num_channels=1).get_all_samples()``, each once as warm-up, then
``--rounds`` rounds running each once (so load hits all alike). Prints the median wall seconds, the spread,
the median CPU seconds (user + sys of all threads, ``time.process_time``) and both ratios to the peer. Checks
first that ``auto`` and ``pyav`` agree on the start time and the sample count.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--rate", type=int, default=16000)
    args = parser.parse_args()

    import loaders
    from torchcodec.decoders import AudioDecoder

    peer = "torchcodec AudioDecoder(sample_rate, num_channels=1)"
    for path in args.files:
        tools = {
            peer: lambda: AudioDecoder(path, sample_rate=args.rate, num_channels=1).get_all_samples().data.shape[1],
            "read_audio(sample_rate) auto": lambda: loaders.read_audio(path, sample_rate=args.rate).num_samples,
            "read_audio(sample_rate, backend=pyav)": lambda: loaders.read_audio(path, sample_rate=args.rate,
                                                                                backend="pyav").num_samples,
        }
        auto = loaders.read_audio(path, sample_rate=args.rate)
        pyav = loaders.read_audio(path, sample_rate=args.rate, backend="pyav")
        if (auto.start_seconds, auto.num_samples) != (pyav.start_seconds, pyav.num_samples):
            raise SystemExit(f"{path}: the backends disagree: {auto} vs {pyav}")
        difference = float(np.abs(auto.samples.numpy() - pyav.samples.numpy()).max())
        for fn in tools.values():
            fn()
        wall: dict[str, list[float]] = {name: [] for name in tools}
        cpu: dict[str, list[float]] = {name: [] for name in tools}
        load = os.getloadavg()[0]
        for _ in range(args.rounds):
            for name, fn in tools.items():
                w, c = time.perf_counter(), time.process_time()
                fn()
                wall[name].append(time.perf_counter() - w)
                cpu[name].append(time.process_time() - c)
        print(f"\n`{os.path.basename(path)}`: {args.rounds} interleaved rounds, 1-minute load {load:.1f} -> "
              f"{os.getloadavg()[0]:.1f}; max |auto - pyav| = {difference:.1e}\n")
        print("| tool | wall s (median) | min-max s | CPU s (median) | wall × peer | CPU × peer |")
        print("|---|---:|---:|---:|---:|---:|")
        base_wall, base_cpu = statistics.median(wall[peer]), statistics.median(cpu[peer])
        for name in tools:
            w, c = statistics.median(wall[name]), statistics.median(cpu[name])
            print(f"| {name} | {w:.3f} | {min(wall[name]):.3f}-{max(wall[name]):.3f} | {c:.3f} | "
                  f"{base_wall / w:.2f} | {base_cpu / c:.2f} |", flush=True)


if __name__ == "__main__":
    main()
