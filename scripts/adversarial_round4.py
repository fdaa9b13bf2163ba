"""Adversarial round four (BENCHMARKS.md, "Adversarial round four"): what a long training job meets. Generates tiny
shards of one ffmpeg clip (64x48, 2 s, 10 fps, AAC 16 kHz) under a scratch directory and runs, one JSON line per case:

- option edges of ``make_loader``: budgets below one item, tiny/huge ``window_seconds``, ``fps`` far over the
  native rate, seeds and epochs that are not non-negative ints, tokenizers returning unusable output;
- shard lists: a shard listed twice, paths in a list, mixed transcript layouts in one shard, a transcript in
  another shard than its media, a gzip'd tar, 2,000 unreadable media in one shard (the skip path's speed);
- the DataLoader path: RSS, open fds, threads, children and /dev/shm over 20 epochs with persistent workers;
  ``StatefulDataLoader`` state saved after every batch and restored in a fresh process (exact?), and restored
  into another ``num_workers``;
- the CLI: ``measure --json`` into /dev/full, ``report`` under a file-size limit (a full disk), SIGINT to ``report``.

One run: 9 min 32 s wall, 253 user + 37 sys CPU-s (2 cores, load 2-4); ``--quick``: about 4 min.

    PYTHONPATH=$PWD python scripts/adversarial_round4.py [--work /tmp/robust8-script] [--quick]
    PYTHONPATH=$PWD python scripts/adversarial_round4.py --decord-rescue 1 9    # seeds 1-8 of the fuzz mutants

``--decord-rescue FIRST STOP`` only counts, over ``tests/test_fuzz_pipeline``'s corrupt media mutants (22 a seed),
how often decord decodes a file PyAV cannot open or decode: the evidence for refusing a container FFmpeg cannot
open without the decord fallback.
"""
from __future__ import annotations

import argparse
import gzip
import json
import logging
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
PY = sys.executable
SRT = b"1\n00:00:00,100 --> 00:00:00,900\nhello there\n\n2\n00:00:01,000 --> 00:00:01,800\nbig world\n"
OPTIONS = dict(frame_size=(16, 16), max_items=4)


def emit(case: str, **result) -> None:
    print(json.dumps({"case": case, **result}, default=str), flush=True)


def epoch(urls, **kwargs) -> dict:
    """One epoch of ``make_loader``: delivered keys, skips by reason, wall seconds; or the error it raised."""
    import loaders

    t0 = time.monotonic()
    try:
        loader = loaders.make_loader(urls, **{**OPTIONS, "seed": 0, **kwargs})
        keys = [k for b in loader for k in b.sample_keys]
        return {"items": len(keys), "distinct": len(set(keys)), "skipped": loader.stats.skipped,
                "seconds": round(time.monotonic() - t0, 2)}
    except Exception as e:  # noqa: BLE001 - what it raised is the result
        return {"error": f"{type(e).__name__}: {str(e)[:160]}", "seconds": round(time.monotonic() - t0, 2)}


def make_inputs(work: Path) -> dict:
    from tests import hostile_inputs as hostile

    work.mkdir(parents=True, exist_ok=True)
    clip = hostile.clip(work / "c.mp4", seconds=2.0, fps=10, size="64x48")
    urls = []
    for s in range(3):
        members = [m for j in range(4) for m in ((f"s{s}k{j}.mp4", clip), (f"s{s}k{j}.srt", SRT))]
        (work / f"s{s}.tar").write_bytes(hostile.tar_bytes(members))
        urls.append(str(work / f"s{s}.tar"))
    return {"clip": clip, "urls": urls, "tar": hostile.tar_bytes}


def option_edges(inputs: dict, quick: bool) -> None:
    import numpy as np

    urls = inputs["urls"]
    emit("budgets (1, 1, 1), window auto (a caption over the token budget)", **epoch(urls, budgets=(1, 1, 1)))
    emit("budgets (300, 160, 512): 10 ms of audio a window", **epoch(urls, budgets=(300, 160, 512)))
    emit("window_seconds 1e-3", **epoch(urls, window_seconds=1e-3))
    emit("window_seconds 1e300", **epoch(urls, window_seconds=1e300))
    emit("fps 100 on a 10 fps clip", **epoch(urls, fps=100.0))
    emit("fps 1e-6", **epoch(urls, fps=1e-6))
    for seed in (np.int64(3), -1, 1.5):
        emit(f"seed {seed!r}", **epoch(urls, seed=seed))
    import loaders

    for value in (-1, 1.5, "2", 2**64, np.int64(2)):
        ds = loaders.make_dataset(urls, seed=0, **OPTIONS)
        try:
            ds.set_epoch(value)
            emit(f"set_epoch({value!r})", epoch=ds.state_dict()["epoch"])
        except Exception as e:  # noqa: BLE001
            emit(f"set_epoch({value!r})", error=f"{type(e).__name__}: {e}")
    words = lambda t: [m.span() for m in __import__("re").finditer(r"\S+", t)]  # noqa: E731
    tokenizers = {
        "numpy ids and offsets": lambda t: (np.arange(len(words(t))), np.array(words(t))),
        "empty ids": lambda t: ([], []),
        "negative ids": lambda t: ([-5] * len(words(t)), words(t)),
        "HF dict without offset_mapping": lambda t: {"input_ids": [1] * len(words(t)), "attention_mask": [1]},
        "offsets past the text": lambda t: ([1] * len(words(t)), [(a, b + 1000) for a, b in words(t)]),
    }
    for name, tok in tokenizers.items():
        emit(f"tokenizer: {name}", **epoch(urls, tokenizer=tok))


def shard_lists(inputs: dict, work: Path, quick: bool) -> None:
    clip, urls, tar = inputs["clip"], inputs["urls"], inputs["tar"]
    emit("a shard listed twice", **epoch([urls[0], urls[0], urls[1]]))
    emit("paths (os.PathLike) in a list", **epoch([Path(u) for u in urls]))
    wj = json.dumps({"segments": [{"start": 0.1, "end": 0.9, "text": "hello there"}]}).encode()
    mixed = [("a.mp4", clip), ("a.srt", SRT), ("b.mp4", clip), ("b.json", wj), ("c.mp4", clip), ("c.txt", b"a caption"),
             ("e.MP4", clip), ("e.SRT", SRT), ("f.mp4", clip), ("f.Srt", SRT)]
    (work / "mixed.tar").write_bytes(tar(mixed))
    emit("mixed layouts in one shard (srt, json, txt, upper-case)", **epoch([str(work / "mixed.tar")], window_seconds=None))
    (work / "tA.tar").write_bytes(tar([("k1.mp4", clip), ("k2.mp4", clip)]))
    (work / "tB.tar").write_bytes(tar([("k1.srt", SRT), ("k3.mp4", clip)]))
    emit("a transcript in another shard than its media", **epoch([str(work / "tA.tar"), str(work / "tB.tar")]))
    (work / "gz.tar.gz").write_bytes(gzip.compress(Path(urls[0]).read_bytes()))
    emit("a gzip'd tar", **epoch([str(work / "gz.tar.gz")]))
    count = 200 if quick else 2000
    members = [m for i in range(count) for m in ((f"k{i:05d}.mp4", b"\0" * 100), (f"k{i:05d}.txt", b"cap"))]
    (work / "garbage.tar").write_bytes(tar(members + [("zgood.mp4", clip), ("zgood.txt", b"good")]))
    logging.disable(logging.WARNING)  # one warning per skipped sample
    emit(f"{count} unreadable media in one shard", **epoch([str(work / "garbage.tar")]))
    logging.disable(logging.NOTSET)


_EPOCHS = """
import json, os, sys, torch
from torch.utils.data import DataLoader
import loaders
def kids():
    return [int(c) for t in os.listdir("/proc/self/task") for c in open(f"/proc/self/task/{t}/children").read().split()]
def rss_kb(pid):
    return int(next(l for l in open(f"/proc/{pid}/status") if l.startswith("VmRSS")).split()[1])
def snap():
    return {"rss_mb": rss_kb(os.getpid()) // 1024, "workers_rss_mb": sum(rss_kb(k) for k in kids()) // 1024,
            "fds": len(os.listdir("/proc/self/fd")), "threads": len(os.listdir("/proc/self/task")),
            "children": len(kids()), "shm": len(os.listdir("/dev/shm"))}
if __name__ == "__main__":
    epochs = int(sys.argv[1])
    ds = loaders.make_dataset(sys.argv[2:], seed=0, frame_size=(16, 16), max_items=4, window_seconds=0.5)
    dl = DataLoader(ds, batch_size=None, num_workers=2, persistent_workers=True)
    rows = []
    for e in range(epochs):
        ds.set_epoch(e)
        keys = [k for b in dl for k in b.sample_keys]
        rows.append({**snap(), "items": len(keys), "distinct": len(set(keys))})
    print(json.dumps({"epoch_1": rows[1], "last": rows[-1]}))
"""

_STATEFUL = """
import hashlib, json, pickle, sys
from torchdata.stateful_dataloader import StatefulDataLoader
import loaders
def dl(urls, workers):
    ds = loaders.make_dataset(urls, seed=0, frame_size=(16, 16), max_items=3, window_seconds=0.5, buffer_size=4)
    return StatefulDataLoader(ds, batch_size=None, num_workers=workers)
def digest(b):
    return hashlib.md5(b.frames.numpy().tobytes() + b.audio.numpy().tobytes()).hexdigest() + ",".join(b.sample_keys)
if __name__ == "__main__":
    mode, workers, work, urls = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
    if mode == "full":
        d, out = dl(urls, workers), []
        for i, b in enumerate(d):
            out.append(digest(b))
            pickle.dump(d.state_dict(), open(f"{work}/state_{workers}_{i}.pkl", "wb"))
        print(json.dumps(out))
    else:
        saved, step = int(sys.argv[1].split(":")[1]), int(sys.argv[1].split(":")[2])
        d = dl(urls, workers)
        try:
            d.load_state_dict(pickle.load(open(f"{work}/state_{saved}_{step}.pkl", "rb")))
            print(json.dumps([digest(b) for b in d]))
        except Exception as e:
            print(json.dumps({"error": f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:200]}"}))
"""


def child(code: str, *args: str) -> str:
    proc = subprocess.run([PY, "-c", code, *args], capture_output=True, text=True, timeout=900, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1"))
    if proc.returncode:
        return json.dumps({"error": proc.stderr[-400:]})
    return proc.stdout.strip().splitlines()[-1]


def dataloader_path(inputs: dict, work: Path, quick: bool) -> None:
    urls = inputs["urls"]
    epochs = 5 if quick else 20
    emit(f"DataLoader, 2 persistent workers, {epochs} epochs", **json.loads(child(_EPOCHS, str(epochs), *urls)))
    full = {w: json.loads(child(_STATEFUL, "full", str(w), str(work), *urls)) for w in (0, 2)}
    for workers in (0, 2):
        steps = range(len(full[workers])) if not quick else (0, len(full[workers]) // 2)
        exact = 0
        for step in steps:
            rest = json.loads(child(_STATEFUL, f"resume:{workers}:{step}", str(workers), str(work), *urls))
            exact += rest == full[workers][step + 1:]
        emit(f"StatefulDataLoader num_workers={workers}: restored after each batch in a fresh process",
             batches=len(full[workers]), exact=f"{exact}/{len(steps)}")
    for saved, workers in ((2, 3), (2, 0), (0, 2)):
        rest = json.loads(child(_STATEFUL, f"resume:{saved}:3", str(workers), str(work), *urls))
        emit(f"state of num_workers={saved} restored into num_workers={workers}", **(rest if isinstance(rest, dict) else {"batches": len(rest)}))


def cli(inputs: dict, work: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
    avalign = [PY, "-m", "avalign"]
    (work / "clips").mkdir(exist_ok=True)
    for i in range(6):
        (work / "clips" / f"c{i}.mp4").write_bytes(inputs["clip"])
    with open("/dev/full", "w") as full:
        proc = subprocess.run(avalign + ["measure", str(work / "c.mp4"), "--json"], stdout=full, stderr=subprocess.PIPE,
                              text=True, env=env)
    emit("measure --json > /dev/full", rc=proc.returncode, stderr=proc.stderr.strip()[-200:])
    proc = subprocess.run(["bash", "-c", f"ulimit -f 20; exec {PY} -m avalign report {work / 'clips'} --out {work / 'rep_full'}"],
                          capture_output=True, text=True, env=env)
    emit("report under a 20-block file-size limit", rc=proc.returncode, stderr=proc.stderr.strip()[-200:])
    proc = subprocess.Popen(avalign + ["report", str(work / "clips"), "--out", str(work / "rep_int")], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    pages = work / "rep_int" / "clips"
    while proc.poll() is None and not (pages.is_dir() and any(pages.iterdir())):
        time.sleep(0.05)  # SIGINT once the first clip page is written: mid-run whatever the machine's load
    proc.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    proc.communicate(timeout=120)
    left = subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True, text=True).stdout.split()
    out = work / "rep_int"
    emit("SIGINT to report at its first clip page", rc=proc.returncode, exit_seconds=round(time.monotonic() - t0, 2),
         processes_left=len(left), files=sorted(os.listdir(out)) if out.is_dir() else None)


def decord_rescue(first: int, stop: int, work: Path) -> None:
    import collections
    import random

    from loaders import read_video
    from loaders.errors import DecodeError
    from loaders.media import call_with_timeout
    from tests import hostile_inputs as hostile
    from tests.test_fuzz_pipeline import _mutate_media

    work.mkdir(parents=True, exist_ok=True)
    base = {"mp4": hostile.clip(work / "base.mp4"),
            "mkv": hostile.clip(work / "base.mkv", container_args=("-c:a", "libopus", "-ar", "48000"))}
    table: collections.Counter = collections.Counter()
    for seed in range(first, stop):
        rng = random.Random(seed)
        for _ in range(22):
            data = _mutate_media(rng, base[rng.choice(sorted(base))])
            try:
                read_video(data, backend="pyav", name="x")
                table["pyav ok"] += 1
                continue
            except DecodeError as e:
                failure = "pyav cannot open" if "cannot open" in str(e) else "pyav cannot decode"
            try:
                call_with_timeout(lambda d: read_video(d, backend="decord", name="x").num_frames, data, timeout_seconds=20)
                table[f"{failure}, decord decodes"] += 1
            except Exception:  # noqa: BLE001 - any failure of decord counts as one
                table[f"{failure}, decord fails too"] += 1
    emit(f"decord fallback on the fuzz mutants, seeds {first}..{stop - 1}", **dict(table))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/avalign-round4")
    parser.add_argument("--quick", action="store_true", help="fewer epochs, resume points and unreadable media")
    parser.add_argument("--decord-rescue", type=int, nargs=2, metavar=("FIRST", "STOP"),
                        help="only count decord's rescues of PyAV failures over these fuzz seeds")
    args = parser.parse_args()
    work = Path(args.work)
    logging.basicConfig(level=logging.ERROR)
    if args.decord_rescue:
        decord_rescue(*args.decord_rescue, work)
        return
    inputs = make_inputs(work)
    option_edges(inputs, args.quick)
    shard_lists(inputs, work, args.quick)
    dataloader_path(inputs, work, args.quick)
    cli(inputs, work)


if __name__ == "__main__":
    main()
