"""Audio onsets on long media and the wild sets: memory, CPU and identical answers between two checkouts
(BENCHMARKS.md, "Audio onsets blockwise"). ``PYTHONPATH`` chooses the checkout measured.

Usage::

    # decode each media's audio once (loaders.read_audio, native rate, mono) into AUDIO/<dir>__<name>.npz
    PYTHONPATH=. python scripts/bench_onsets.py decode AUDIO WILD/wild-tune/wild*.mp4 ...
    # audio_onsets of this checkout on each npz: OUT/<name>.npz (times, strength, rise, tonality, duration)
    PYTHONPATH=. python scripts/bench_onsets.py run OUT AUDIO/*.npz
    # one JSON line: CPU s and RSS added by audio_onsets on one media (its peak RSS, VmHWM reset before the call,
    # minus the RSS before it; Linux only), after decoding; the onsets go to OUT.npz
    PYTHONPATH=. python scripts/bench_onsets.py measure MEDIA OUT.npz
    # two OUT directories (or two npz files) side by side: counts, bitwise equality, max differences
    python scripts/bench_onsets.py compare BEFORE AFTER
"""
from __future__ import annotations

import glob
import json
import os
import re
import sys
import time

import numpy as np


def _save(path: str, onsets) -> None:
    nan = np.full(onsets.times_seconds.shape, np.nan)
    np.savez(path, times=onsets.times_seconds, strength=onsets.strength,
             rise=nan if onsets.rise_seconds is None else onsets.rise_seconds,
             tonal=nan if onsets.tonality_db is None else onsets.tonality_db, duration=onsets.duration_seconds)


def decode(out: str, media: list[str]) -> None:
    from loaders import read_audio

    os.makedirs(out, exist_ok=True)
    for path in media:
        audio = read_audio(path)
        name = os.path.basename(os.path.dirname(path)) + "__" + os.path.basename(path)
        np.savez(os.path.join(out, name + ".npz"), samples=audio.samples.numpy(), rate=audio.sample_rate,
                 start=audio.start_seconds)


def run(out: str, inputs: list[str]) -> None:
    from aligner.estimators import audio_onsets

    os.makedirs(out, exist_ok=True)
    for path in inputs:
        data = np.load(path)
        _save(os.path.join(out, os.path.basename(path)),
              audio_onsets(data["samples"], int(data["rate"]), start_seconds=float(data["start"])))


def _status_mb(field: str) -> float:
    with open("/proc/self/status") as f:
        return int(re.search(field + r":\s+(\d+)", f.read()).group(1)) / 1024


def measure(media: str, out: str) -> None:
    from aligner.estimators import audio_onsets
    from loaders import read_audio

    audio = read_audio(media)
    audio_onsets(np.full(16000 * 5, 1e-3, np.float32), 16000)  # imports, FFT plans
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # reset VmHWM
    before = _status_mb("VmRSS")
    cpu = time.process_time()
    onsets = audio_onsets(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds)
    cpu = time.process_time() - cpu
    added = _status_mb("VmHWM") - before
    _save(out, onsets)
    audio_mb = audio.samples.numel() * 4 / 2**20
    print(json.dumps({"media": os.path.basename(media), "seconds": audio.samples.shape[-1] / audio.sample_rate,
                      "events": int(onsets.times_seconds.size), "cpu_s": round(cpu, 2), "added_mb": round(added),
                      "added_x_audio": round(added / audio_mb, 2)}))


def compare(before: str, after: str) -> None:
    paths = sorted(glob.glob(os.path.join(before, "*.npz"))) if os.path.isdir(before) else [before]
    worst = dict.fromkeys(("times", "strength", "rise", "tonal", "duration"), 0.0)
    identical = events = mismatched = 0
    for path in paths:
        a = np.load(path)
        b = np.load(os.path.join(after, os.path.basename(path)) if os.path.isdir(after) else after)
        if a["times"].shape != b["times"].shape:
            mismatched += 1
            print("event count differs:", os.path.basename(path), a["times"].size, b["times"].size)
            continue
        events += a["times"].size
        same = True
        for key in worst:
            if not np.array_equal(a[key], b[key], equal_nan=True):
                same = False
                worst[key] = max(worst[key], float(np.nanmax(np.abs(a[key] - b[key]) / np.maximum(1.0, np.abs(a[key])))))
        identical += same
    print(f"inputs {len(paths)}, events {events}, event counts differ {mismatched}, bitwise identical {identical}, "
          f"max |difference| (relative above 1) {worst}")


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "decode":
        decode(args[0], args[1:])
    elif command == "run":
        run(args[0], args[1:])
    elif command == "measure":
        measure(args[0], args[1])
    elif command == "compare":
        compare(args[0], args[1])
    else:
        raise SystemExit(__doc__)
