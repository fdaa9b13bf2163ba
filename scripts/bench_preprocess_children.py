"""CPU seconds (this process + its children) of three ``preprocess`` runs on four small generated clips, in one
process: what the per-sample watchdog children cost (BENCHMARKS.md "Cheaper tests, same oracles").

Usage::

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_preprocess_children.py LABEL

Clips: 2 s, 64x48 at 25 fps (H.264) with a 16 kHz AAC tone; one with an SRT (no word times: forced alignment),
one with a WhisperX JSON (word times), two without a transcript.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

SRT = "1\n00:00:00,200 --> 00:00:01,000\nhello there\n\n2\n00:00:01,000 --> 00:00:01,800\ngood day\n"
WHISPER = {"segments": [{"text": "hi you", "start": 0.1, "end": 0.9,
                         "words": [{"word": "hi", "start": 0.1, "end": 0.4}, {"word": "you", "start": 0.5, "end": 0.9}]}]}


def _cpu_seconds() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main() -> int:
    from avalign.preprocess import preprocess

    label = sys.argv[1] if len(sys.argv) > 1 else ""
    with tempfile.TemporaryDirectory() as scratch:
        inputs = Path(scratch) / "in"
        inputs.mkdir()
        for i, name in enumerate(["c0", "c1", "c2", "d3"]):
            subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=25",
                            "-f", "lavfi", "-i", f"sine=f={300 + 100 * i}:r=16000", "-t", "2", "-c:v", "libx264",
                            "-g", "10", "-c:a", "aac", str(inputs / f"{name}.mp4")], check=True)
        (inputs / "c0.srt").write_text(SRT)
        (inputs / "c1.json").write_text(json.dumps(WHISPER))
        runs = []
        for k in range(3):
            before = _cpu_seconds()
            preprocess(str(inputs), str(Path(scratch) / f"out{k}"), samples_per_shard=2, progress=False)
            runs.append(round(_cpu_seconds() - before, 2))
    print(label, "CPU-s per run:", runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
