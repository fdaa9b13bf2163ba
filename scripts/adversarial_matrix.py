"""Rerun of issue #13's adversarial matrix on generated inputs: corrupt media, hostile transcripts and cut
tars (the seeded mutators of ``tests/test_fuzz_pipeline.py``, more of them and over several seeds) through
``loaders.make_loader`` (``num_workers`` 0 and 2, each in a child process) and ``avalign preprocess``.

Counts what the issue's target names: crashes (a child killed by a signal), epoch aborts (the loader raised),
silent losses (a key neither delivered nor skipped with a reason), reasons outside the vocabulary or
``error``, and the loader child's peak RSS. Prints one JSON object; results go in BENCHMARKS.md.

    PYTHONPATH=$PWD python scripts/adversarial_matrix.py --seeds 1 2 3 4 --media 22 --text 11
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

_LOADER = """
import json, resource, sys
import loaders
workers = int(sys.argv[1])
loader = loaders.make_loader(sys.argv[2:], seed=0, num_workers=workers, budgets=(64, 64_000, 64), buffer_size=4,
                             frame_size=(24, 32), max_items=8, max_words=64, max_segments=16, on_error="skip")
keys = [k for batch in loader for k in batch.sample_keys]
peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(json.dumps({"keys": keys, "skipped": [list(s) for s in loader.stats.skipped_samples], "peak_rss_mb": peak / 1024}))
"""


def _check(delivered: set, named: dict, keys_by_shard: dict, lost_to_cut: set, cut_shard: str) -> dict:
    from loaders.errors import REASONS

    silent = []
    for shard, keys in keys_by_shard.items():
        expected = keys - (lost_to_cut if shard == cut_shard else set())
        names = {key for s, key in named if s == shard}
        silent += sorted(expected - (delivered & keys) - names)
    bad_reasons = sorted({r for r in named.values() if r not in REASONS or r == "error"})
    return {"silent_losses": silent, "bad_reasons": bad_reasons}


def run_seed(seed: int, media: int, text: int, work: Path) -> dict:
    from tests.test_fuzz_pipeline import build

    shards, keys_by_shard, good_keys, cut = build(work, seed=seed, media_mutants=media, text_mutants=text)
    cut_shard, cut_key = next(iter(cut.items()))
    lost_to_cut = {k for k in keys_by_shard[cut_shard] if k > cut_key}
    out: dict = {"seed": seed, "samples": sum(map(len, keys_by_shard.values())) - len(lost_to_cut)}
    for workers in (0, 2):
        proc = subprocess.run([sys.executable, "-c", _LOADER, str(workers), *shards], capture_output=True, text=True,
                              timeout=600, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
        entry: dict = {"rc": proc.returncode, "crash": proc.returncode < 0, "epoch_abort": proc.returncode > 0}
        if proc.returncode == 0:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            delivered = set(result["keys"])
            named = {(s, k): r for s, k, r in result["skipped"]}
            entry.update(_check(delivered, named, keys_by_shard, lost_to_cut, cut_shard),
                         good_lost=sorted(good_keys - delivered), skipped=len(named), peak_rss_mb=round(result["peak_rss_mb"]))
        else:
            entry["stderr"] = proc.stderr[-800:]
        out[f"loader_workers{workers}"] = entry
    from avalign.preprocess import preprocess

    t0 = time.monotonic()
    target = work / "out"
    try:
        preprocess("::".join(shards), str(target), workers=2, progress=False, timeout_seconds=60, samples_per_shard=8)
    except Exception as e:  # noqa: BLE001 - an abort is what we count
        out["preprocess"] = {"abort": f"{type(e).__name__}: {e}"}
        return out
    manifest = {json.loads(line)["key"] for line in (target / "manifest.jsonl").read_text().splitlines()}
    rows = [json.loads(line) for line in (target / "skipped.jsonl").read_bytes().splitlines()]
    named = {(r["input"].rsplit(":", 1)[0] if ":" in r["input"] else r["input"], r["key"]): r["reason"] for r in rows}
    everything = set().union(*keys_by_shard.values()) - lost_to_cut
    silent = sorted(everything - manifest - {r["key"] for r in rows})
    out["preprocess"] = {"silent_losses": silent, "good_lost": sorted(good_keys - manifest), "skipped": len(rows),
                         "bad_reasons": sorted({r for r in named.values() if r == "error"}),
                         "wall_seconds": round(time.monotonic() - t0, 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4])
    parser.add_argument("--media", type=int, default=22, help="corrupt media samples per seed")
    parser.add_argument("--text", type=int, default=11, help="hostile transcripts per seed")
    args = parser.parse_args()
    results = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix=f"avalign-matrix-{seed}-") as work:
            results.append(run_seed(seed, args.media, args.text, Path(work)))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)
    loaders_runs = [r[k] for r in results for k in r if k.startswith("loader_")]
    summary = {
        "seeds": args.seeds, "samples": sum(r["samples"] for r in results),
        "crashes": sum(e["crash"] for e in loaders_runs), "epoch_aborts": sum(e["epoch_abort"] for e in loaders_runs),
        "loader_silent_losses": sum(len(e.get("silent_losses", [])) for e in loaders_runs),
        "loader_good_lost": sum(len(e.get("good_lost", [])) for e in loaders_runs),
        "bad_reasons": sorted({x for e in loaders_runs for x in e.get("bad_reasons", [])}),
        "loader_peak_rss_mb": max((e.get("peak_rss_mb", 0) for e in loaders_runs), default=0),
        "preprocess_aborts": sum("abort" in r["preprocess"] for r in results),
        "preprocess_silent_losses": sum(len(r["preprocess"].get("silent_losses", [])) for r in results),
        "preprocess_good_lost": sum(len(r["preprocess"].get("good_lost", [])) for r in results),
    }
    print(json.dumps({"summary": summary, "runs": results}, indent=1))


if __name__ == "__main__":
    main()
