#!/usr/bin/env python3
"""Start-up time of the ``avalign`` command against a bare interpreter, for one or more checkouts.

    python scripts/bench_cli_start.py --repeats 7 BEFORE_CHECKOUT AFTER_CHECKOUT

Each command runs ``--repeats`` times, interleaved across commands and checkouts (so machine load hits all
alike); the median wall time of each is printed with its ratio to ``python -c pass``.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "python -m avalign --help": ["-m", "avalign", "--help"],
    "avalign report --help": ["-m", "avalign", "report", "--help"],
    "avalign preprocess --help": ["-m", "avalign", "preprocess", "--help"],
    "avalign report MISSING (error before work)": ["-m", "avalign", "report", "/nonexistent/in", "--out", "/tmp/x"],
    "avalign preprocess MISSING (error before work)": ["-m", "avalign", "preprocess", "/nonexistent/in", "/tmp/x"],
}


def _time(args: list[str], checkout: str) -> float:
    env = dict(os.environ, PYTHONPATH=checkout)
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], env=env, cwd=checkout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.repeats):
        for checkout in args.checkouts:
            for name, command in COMMANDS.items():
                times.setdefault((checkout, name), []).append(_time(command, checkout))
    bare = statistics.median([t for c in args.checkouts for t in times[(c, "python -c pass")]])
    print(f"bare interpreter (all runs): {1000 * bare:.0f} ms")
    for checkout in args.checkouts:
        print(f"{checkout}")
        for name in COMMANDS:
            median = statistics.median(times[(checkout, name)])
            print(f"  {name:<45} {1000 * median:8.0f} ms  {median / bare:6.1f}x bare")


if __name__ == "__main__":
    main()
