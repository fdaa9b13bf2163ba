"""Transcript offset on transcripts that do not belong to the audio: null pairings of a wild set, judged by the
generator's truth (BENCHMARKS.md, "Transcript offset on transcripts that do not belong to the audio").

A null pairing is clip i's audio with clip j's transcript (i != j). The wild clips draw their sentences from one
pool, so j's transcript may hold sentences that i's audio speaks: an answer is *right for the pairing* when the
generator speaks every word of j within 50 ms of where the answer puts it (``stamp - offset``, i's audio clock),
else *wrong*. True pairings (i == j) are scored against the generator's ``text_offset_ms``.

Usage (from a checkout; ``PYTHONPATH`` chooses the code measured)::

    # auto, energy and forced alignment (with per-item differences) on the given pairings and all true ones
    PYTHONPATH=. python scripts/bench_text_nulls.py run CLIPDIR OUT.json [--pairs PAIRS.json]
    # main vs branch, side by side
    python scripts/bench_text_nulls.py summary CLIPDIR MAIN.json BRANCH.json

``CLIPDIR`` holds ``*.truth.json`` with the media and transcript they name (``avalign.synth.make_wild_clip``);
``PAIRS.json`` is ``[[audio_media, transcript_media], ...]`` (default: all ordered pairings, slow: ~0.3 s each).
"""
from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

TRUTH_TOLERANCE_SECONDS = 0.05


def _norm(text: str) -> str:
    return re.sub(r"[^a-z']", "", text.lower())


def records(clip_dir: Path) -> dict[str, dict]:
    """``{media name: truth record}`` of a wild set."""
    return {r["media"]: r for r in (json.loads(p.read_text()) for p in sorted(clip_dir.glob("*.truth.json")))}


def _spoken(record: dict) -> list[tuple[str, float]]:
    """The generator's words on the clip's audio clock: (word, start seconds)."""
    scale = 1 + record["drift_ppm"] * 1e-6
    return [(_norm(w["text"]), w["start_seconds"] * scale + record["av_offset_ms"] / 1000) for w in record["words"]]


def heard_fraction(audio_record: dict, text_record: dict, offset_ms: float) -> float:
    """Fraction of ``text_record``'s words that ``audio_record``'s audio speaks within 50 ms of where ``offset_ms``
    puts them."""
    spoken = _spoken(audio_record)
    stamps = [(w, start + text_record["text_offset_ms"] / 1000) for w, start in _spoken(text_record)]
    heard = sum(any(w == u and abs(s - offset_ms / 1000 - a) <= TRUTH_TOLERANCE_SECONDS for u, a in spoken)
                for w, s in stamps)
    return heard / max(1, len(stamps))


def shares(a: dict, b: dict) -> bool:
    """Whether two clips share a sentence or a run of 3 words (a *clean* null pairing shares neither)."""
    if set(a["spec"]["sentences"]) & set(b["spec"]["sentences"]):
        return True

    def grams(r: dict) -> set:
        words = [w for w, _ in _spoken(r) if w]
        return {tuple(words[k:k + 3]) for k in range(len(words) - 2)}

    return bool(grams(a) & grams(b))


def run(clip_dir: Path, out: Path, pairs_path: Path | None) -> None:
    import loaders
    from aligner.estimators import estimate_transcript_offsets, shared_decoder

    recs = records(clip_dir)
    clips = {m: (r, loaders.read_audio(str(clip_dir / m)), loaders.read_transcript(str(clip_dir / r["transcript"])))
             for m, r in recs.items()}
    if pairs_path is None:
        pairs = [(a, t) for a in clips for t in clips if a != t]
    else:
        pairs = [tuple(p[:2]) for p in json.loads(pairs_path.read_text()) if p[0] != p[1]]
    pairs += [(m, m) for m in clips]
    decoder = shared_decoder()

    def brief(e) -> dict:
        return dict(offset_ms=e.text_offset_ms, guess_ms=e.best_guess_ms, conf=round(e.confidence, 3), method=e.method,
                    found=e.found)

    rows = []
    for audio_media, text_media in pairs:
        record, audio, _ = clips[audio_media]
        cpu = time.process_time()
        by = estimate_transcript_offsets(audio, clips[text_media][2], methods=("energy", "forced", "auto"),
                                         decoder=decoder)
        rows.append(dict(audio=audio_media, text=text_media, duration_s=record["duration_seconds"],
                         truth_ms=record["text_offset_ms"] if audio_media == text_media else None,
                         energy=brief(by["energy"]), forced=brief(by["forced"]), auto=brief(by["auto"]),
                         items=getattr(by["forced"], "item_differences_ms", ()),
                         cpu=round(time.process_time() - cpu, 3)))
        print(audio_media, text_media, rows[-1]["auto"]["method"], rows[-1]["auto"]["offset_ms"], flush=True)
    out.write_text(json.dumps(rows))


def _trues(rows: dict) -> dict:
    answered = [r for k, r in rows.items() if k[0] == k[1] and r["auto"]["offset_ms"] is not None]
    errors = sorted(abs(r["auto"]["offset_ms"] - r["truth_ms"]) for r in answered)
    return dict(answered=len(answered), of=sum(k[0] == k[1] for k in rows), median_ms=round(statistics.median(errors), 1),
                max_ms=round(max(errors), 1), wrong_over_50_ms=sum(e > 50 for e in errors))


def _nulls(rows: dict, recs: dict) -> dict:
    out = dict(answered=0, right_for_pairing=0, wrong=0, clean_answered=0, methods={})
    for (a, t), r in rows.items():
        offset = r["auto"]["offset_ms"]
        if a == t or offset is None:
            continue
        out["answered"] += 1
        out["methods"][r["auto"]["method"]] = out["methods"].get(r["auto"]["method"], 0) + 1
        out["right_for_pairing" if heard_fraction(recs[a], recs[t], offset) >= 0.999 else "wrong"] += 1
        out["clean_answered"] += not shares(recs[a], recs[t])
    return out


def summary(clip_dir: Path, main_path: Path, branch_path: Path) -> None:
    recs = records(clip_dir)
    main = {(r["audio"], r["text"]): r for r in json.loads(main_path.read_text())}
    branch = {(r["audio"], r["text"]): r for r in json.loads(branch_path.read_text())}
    ordered = len(recs) * (len(recs) - 1)
    clean = sum(not shares(recs[a], recs[t]) for a in recs for t in recs if a != t)
    print(f"ordered null pairings {ordered} (clean {clean}); rows main {len(main)}, branch {len(branch)} "
          "(null pairings not in the rows count as abstained)")
    for label, rows in (("main", main), ("branch", branch)):
        print(label, "true:", _trues(rows), "nulls:", _nulls(rows, recs))
    for key, m in main.items():
        b = branch.get(key)
        if b is not None and (m["auto"]["method"], m["auto"]["offset_ms"]) != (b["auto"]["method"], b["auto"]["offset_ms"]):
            print("  changed", "TRUE" if key[0] == key[1] else "null", key, m["auto"]["method"], m["auto"]["offset_ms"],
                  "->", b["auto"]["method"], b["auto"]["offset_ms"], "|", b["auto"]["found"])
    for (a, t), r in branch.items():
        if a != t and r["auto"]["offset_ms"] is not None:
            offset = r["auto"]["offset_ms"]
            print("  branch null answer", (a, t), r["auto"]["method"], round(offset, 1), f"conf {r['auto']['conf']:.2f}",
                  f"generator heard {heard_fraction(recs[a], recs[t], offset):.2f}",
                  "shares sentences" if shares(recs[a], recs[t]) else "clean")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run")
    r.add_argument("clip_dir", type=Path)
    r.add_argument("out", type=Path)
    r.add_argument("--pairs", type=Path)
    s = sub.add_parser("summary")
    s.add_argument("clip_dir", type=Path)
    s.add_argument("main", type=Path)
    s.add_argument("branch", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args.clip_dir, args.out, args.pairs)
    else:
        summary(args.clip_dir, args.main, args.branch)


if __name__ == "__main__":
    main(sys.argv[1:])
