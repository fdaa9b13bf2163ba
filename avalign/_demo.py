"""``avalign demo``: the whole pipeline on ``sample_data/`` with real figures.

Read shards → decode with real timestamps → read transcripts → estimate A/V offset, drift and text
offset → map words to frames/samples/tokens → plan packs. Where ``truth.json`` exists each figure is
compared with the ground truth, and with the naive assumption (frame k at k/fps, sample n at n/sr,
transcript stamps taken as they are).
"""
from __future__ import annotations

import glob
import json
import logging
import os
import time

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["format_summary", "run_demo"]



def _ffprobe_matches(data_dir: str, truth: dict, pts: np.ndarray):
    frames_json = os.path.join(data_dir, truth.get("ffprobe_frames", "") or "")
    if not truth.get("ffprobe_frames") or not os.path.exists(frames_json):
        return None
    probe = json.load(open(frames_json))["frames"]
    ref = np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in probe])
    ok = np.isfinite(ref)
    return bool(len(ref) == len(pts) and np.allclose(ref[ok], pts[ok], atol=1e-6))


def _word_errors_ms(sample, truth: dict, transcript) -> tuple[list[float], list[float]]:
    """|aligned word start − true start| and |naive (raw stamp) − true start|, matched by order."""
    true_words = truth.get("words") or []
    aligned = [w.start_seconds for w in sample.words]
    raw = [w.start_seconds for w in transcript.words]
    n = min(len(true_words), len(aligned), len(raw))
    t = np.asarray([w["start_seconds"] for w in true_words[:n]])
    return list(np.abs(np.asarray(aligned[:n]) - t) * 1000), list(np.abs(np.asarray(raw[:n]) - t) * 1000)


def _run_loader(shards: list[str], *, sample_rate: int) -> dict:
    """One epoch of ``make_loader`` (2 s windows, fixed-capacity packed batches) over the shards."""
    import loaders

    budgets = (240, 4 * sample_rate * 2, 64)
    loader = loaders.make_loader(shards, seed=0, sample_rate=sample_rate, budgets=budgets, window_seconds=2.0,
                                 estimate=True, frame_size=(112, 112), max_items=16)
    t0 = time.perf_counter()
    batches = list(loader)
    seconds = time.perf_counter() - t0
    stats = loader.stats
    first = batches[0] if batches else None
    return {
        "budgets": {"frames": budgets[0], "samples": budgets[1], "tokens": budgets[2]},
        "batches": len(batches),
        "items": stats.items_yielded,
        "seconds": seconds,
        "frames_shape": list(first.frames.shape) if first is not None else None,
        "audio_shape": list(first.audio.shape) if first is not None else None,
        "keys_first_batch": list(first.sample_keys) if first is not None else [],
        "padding_percent": {k: round(100 * v, 1) for k, v in stats.padding.items()},
        "skipped": dict(stats.skipped),
    }


def run_demo(data_dir: str, *, sample_rate: int = 16000) -> dict:
    """Run the pipeline over ``data_dir/shards/*.tar`` and return a JSON-able summary."""
    import aligner
    import loaders
    from avcore import sample_media
    from loaders.pipeline import lower_bound_num_packs
    from loaders.shards import shard_samples
    from loaders.transcripts import pick_transcript

    shards = sorted(glob.glob(os.path.join(data_dir, "shards", "*.tar")))
    if not shards:
        raise FileNotFoundError(f"no shards under {os.path.abspath(os.path.join(data_dir, 'shards'))!r}: pass --data DIR, the sample_data "
                                "folder of the avalign checkout (it holds shards/ and truth.json); if it has no shards/, "
                                "run `make sample-data` in the checkout")
    truth_path = os.path.join(data_dir, "truth.json")
    truth_all = json.load(open(truth_path))["clips"] if os.path.exists(truth_path) else {}
    skipped: list[dict] = []
    rows: list[dict] = []
    lengths: list[list[int]] = []
    word_err, word_err_naive = [], []
    started = time.perf_counter()

    def report(shard: str, key: str, reason: str) -> None:
        skipped.append({"shard": shard, "key": key, "reason": reason})

    logger.info("demo: decoding and aligning the samples of %d shard(s) in %s", len(shards), data_dir)
    for sample in shard_samples(shards, report=report):
        key = sample["__key__"]
        media_ext, _ = sample_media(sample)  # (a separate audio member is not in the demo's samples)
        text_ext = pick_transcript(sample, sample.__getitem__)
        if media_ext is None:
            report(sample["__url__"], key, "missing_media")
            continue
        data = sample[media_ext]
        try:
            t0 = time.perf_counter()
            video = loaders.read_video(data, name=key)
            audio = loaders.read_audio(data, name=key)
            decode_seconds = time.perf_counter() - t0
            transcript = loaders.read_transcript(sample[text_ext], name=f"{key}.{text_ext}") if text_ext else None
            t0 = time.perf_counter()
            aligned = aligner.align(video, audio, transcript, sample_rate=sample_rate, key=key)
            align_seconds = time.perf_counter() - t0
            logger.info("demo: %s decoded in %.1f s, aligned in %.1f s", key, decode_seconds, align_seconds)
        except (loaders.DecodeError, loaders.TranscriptError, IndexError) as e:
            report(sample["__url__"], key, f"{type(e).__name__}: {e}")
            continue
        pts = video.pts_seconds.numpy()
        meta, r = video.metadata, aligned.report
        fps = meta.fps_from_header or 0.0
        row = {
            "key": key,
            "container": media_ext,
            "codecs": f"{meta.codec}+{audio.codec}",
            "num_frames": video.num_frames,
            "first_pts_seconds": float(pts[0]),
            "fps_from_header": fps,
            "fps_from_content": meta.fps_from_content,
            "vfr": meta.vfr,
            "audio_start_seconds": audio.start_seconds,
            "naive_frame_time_error_ms": float(np.max(np.abs(np.arange(len(pts)) / fps - pts)) * 1000) if fps else None,
            "av_offset_ms": r.av_offset_ms,
            "drift_ppm": r.drift_ppm,
            "text_offset_ms": r.text_offset_ms,
            "av_confidence": r.av_confidence,
            "text_confidence": r.text_confidence,
            "words": len(aligned.words),
            "decode_seconds": decode_seconds,
            "align_seconds": align_seconds,
        }
        truth = truth_all.get(key)
        if truth is not None:
            row["pts_equal_ffprobe"] = _ffprobe_matches(data_dir, truth, pts)
            row["true_av_offset_ms"] = truth["av_offset_ms"]
            row["true_drift_ppm"] = truth["drift_ppm"]
            row["true_text_offset_ms"] = truth["text_offset_ms"]
            if transcript is not None:
                e, naive = _word_errors_ms(aligned, truth, transcript)
                word_err += e
                word_err_naive += naive
                row["word_start_error_ms_median"] = float(np.median(e)) if e else None
                row["naive_word_start_error_ms_median"] = float(np.median(naive)) if naive else None
        rows.append(row)
        tokens = max((w.token_stop or 0) for w in aligned.words) if aligned.words else 0
        lengths.append([video.num_frames, aligned.audio.num_samples, tokens])

    packing = None
    if lengths:
        table = np.asarray(lengths)
        budgets = [int(table[:, 0].max() * 2), int(table[:, 1].max() * 2), max(int(table[:, 2].max() * 2), 1)]
        packs = loaders.plan_packs(table, budgets)
        used = table.sum(axis=0)
        packing = {
            "budgets": {"frames": budgets[0], "samples": budgets[1], "tokens": budgets[2]},
            "num_packs": len(packs),
            "lower_bound": lower_bound_num_packs(table, budgets),
            "packs": [[rows[i]["key"] for i in p] for p in packs],
            "padding_percent": [round(100 * (1 - used[j] / (len(packs) * budgets[j])), 1) for j in range(3)],
        }
    logger.info("demo: make_loader over the %d shard(s) (2 s windows, fixed-capacity batches)", len(shards))
    loader_summary = _run_loader(shards, sample_rate=sample_rate)
    return {
        "data_dir": data_dir,
        "loader": loader_summary,
        "shards": len(shards),
        "samples_aligned": len(rows),
        "skipped": skipped,
        "seconds": time.perf_counter() - started,
        "clips": rows,
        "word_start_error_ms": {
            "aligned_median": float(np.median(word_err)) if word_err else None,
            "aligned_p90": float(np.percentile(word_err, 90)) if word_err else None,
            "naive_median": float(np.median(word_err_naive)) if word_err_naive else None,
            "count": len(word_err),
        },
        "packing": packing,
    }


def _fmt(value, spec: str = ".1f", none: str = "abst.") -> str:
    return none if value is None else format(value, spec)


def format_summary(summary: dict) -> str:
    """A short, honest report of what the demo did."""
    lines = [
        f"avalign demo on {summary['data_dir']}: {summary['shards']} shards, {summary['samples_aligned']} samples "
        f"decoded and aligned, {len(summary['skipped'])} skipped, {summary['seconds']:.1f} s",
        "",
        "decode (real timestamps)",
        f"  {'key':<8}{'fmt':<6}{'codecs':<14}{'frames':>7}{'1st pts':>9}{'fps hdr':>9}{'fps real':>9}{'vfr':>5}"
        f"{'audio t0':>10}{'k/fps err':>11}{'=ffprobe':>10}",
    ]
    for r in summary["clips"]:
        lines.append(
            f"  {r['key']:<8}{r['container']:<6}{r['codecs']:<14}{r['num_frames']:>7}{r['first_pts_seconds']:>8.3f}s"
            f"{r['fps_from_header']:>9.3f}{(r['fps_from_content'] or 0):>9.3f}{str(r['vfr'])[0]:>5}"
            f"{r['audio_start_seconds']:>9.3f}s{_fmt(r['naive_frame_time_error_ms'], '.1f', '-'):>9}ms"
            f"{str(r.get('pts_equal_ffprobe', '-')):>10}"
        )
    lines += [
        "",
        "align (estimated vs true; 'abst.' = the estimator abstained)",
        f"  {'key':<8}{'A/V ms':>8}{'true':>8}{'drift ppm':>11}{'true':>8}{'text ms':>9}{'true':>8}"
        f"{'word err ms':>13}{'naive':>8}{'align s':>9}",
    ]
    for r in summary["clips"]:
        lines.append(
            f"  {r['key']:<8}{_fmt(r['av_offset_ms']):>8}{_fmt(r.get('true_av_offset_ms'), '.0f', '-'):>8}"
            f"{_fmt(r['drift_ppm'], '.0f'):>11}{_fmt(r.get('true_drift_ppm'), '.0f', '-'):>8}"
            f"{_fmt(r['text_offset_ms']):>9}{_fmt(r.get('true_text_offset_ms'), '.0f', '-'):>8}"
            f"{_fmt(r.get('word_start_error_ms_median'), '.1f', '-'):>13}{_fmt(r.get('naive_word_start_error_ms_median'), '.1f', '-'):>8}"
            f"{r['align_seconds']:>9.2f}"
        )
    w = summary["word_start_error_ms"]
    if w["count"]:
        lines.append(
            f"  word starts on the video timeline: median error {w['aligned_median']:.1f} ms, p90 {w['aligned_p90']:.1f} ms "
            f"over {w['count']} words (naive: median {w['naive_median']:.1f} ms)"
        )
    p = summary["packing"]
    if p:
        b = p["budgets"]
        lines += [
            "",
            f"pack (budgets: {b['frames']} frames, {b['samples']} samples, {b['tokens']} tokens)",
            f"  {p['num_packs']} packs (lower bound {p['lower_bound']}), padding frames/samples/tokens "
            f"{p['padding_percent'][0]} / {p['padding_percent'][1]} / {p['padding_percent'][2]} %",
        ]
        lines += [f"  pack {i}: {', '.join(keys)}" for i, keys in enumerate(p["packs"])]
    ld = summary.get("loader")
    if ld:
        lines += [
            "",
            f"load (make_loader: 2 s windows, budgets {ld['budgets']['frames']} frames / {ld['budgets']['samples']} samples"
            f" / {ld['budgets']['tokens']} tokens, fixed-capacity batches)",
            f"  {ld['batches']} batches, {ld['items']} windows, {ld['seconds']:.2f} s; frames {ld['frames_shape']}, "
            f"audio {ld['audio_shape']} in every batch",
            "  padding: " + ", ".join(f"{k} {v} %" for k, v in ld["padding_percent"].items())
            + (f"; skipped {ld['skipped']}" if ld["skipped"] else "; nothing skipped"),
            f"  first batch: {', '.join(ld['keys_first_batch'])}",
        ]
    for s in summary["skipped"]:
        lines.append(f"skipped {s['key'] or '(shard)'} in {s['shard']}: {s['reason']}")
    lines += ["", "k/fps err: max distance of the naive 'frame k at k/fps' time from the real pts."]
    return "\n".join(lines)
