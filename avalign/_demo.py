"""``avalign demo``: the pipeline, as far as it exists, on ``sample_data/``, with real figures."""
from __future__ import annotations

import glob
import json
import logging
import os
import time

logger = logging.getLogger(__name__)

__all__ = ["format_summary", "run_demo"]

_VIDEO_EXTS = ("mp4", "mkv", "webm", "mov", "avi")
_TRANSCRIPT_EXTS = ("json", "srt", "vtt", "textgrid")


def run_demo(data_dir: str) -> dict:
    """Read every sample of ``data_dir/shards/*.tar``, decode it and, where ``truth.json`` exists,
    compare the decoded timestamps and the naive ``k / fps`` assumption with the ground truth."""
    import numpy as np

    import loaders

    shards = sorted(glob.glob(os.path.join(data_dir, "shards", "*.tar")))
    if not shards:
        raise FileNotFoundError(f"no shards under {os.path.join(data_dir, 'shards')!r}: run `make sample-data` first")
    truth_path = os.path.join(data_dir, "truth.json")
    truth = json.load(open(truth_path))["clips"] if os.path.exists(truth_path) else {}
    skipped: list[dict] = []
    rows = []
    started = time.perf_counter()

    def report(shard: str, key: str, reason: str) -> None:
        skipped.append({"shard": shard, "key": key, "reason": reason})

    for sample in loaders._shards.shard_samples(shards, report=report):
        key = sample["__key__"]
        media_ext = next((e for e in _VIDEO_EXTS if e in sample), None)
        if media_ext is None:
            report(sample["__url__"], key, "missing_video")
            continue
        data = sample[media_ext]
        try:
            t0 = time.perf_counter()
            video = loaders.read_video(data, name=key)
            audio = loaders.read_audio(data, sample_rate=16000, name=key)
            decode_seconds = time.perf_counter() - t0
        except (loaders.DecodeError, IndexError) as e:
            report(sample["__url__"], key, f"decode: {e}")
            continue
        pts = video.pts_seconds.numpy()
        meta = video.metadata
        fps = meta.fps_from_header or 0.0
        naive = np.arange(len(pts)) / fps if fps else pts
        row = {
            "key": key,
            "container": media_ext,
            "video_codec": meta.codec,
            "audio_codec": audio.codec,
            "num_frames": video.num_frames,
            "first_pts_seconds": float(pts[0]),
            "fps_from_header": fps,
            "fps_from_content": meta.fps_from_content,
            "vfr": meta.vfr,
            "audio_start_seconds": audio.start_seconds,
            "audio_source_rate": audio.source_sample_rate,
            "naive_frame_time_error_ms_max": float(np.max(np.abs(naive - pts)) * 1000),
            "decode_seconds": decode_seconds,
        }
        t = truth.get(key)
        if t is not None:
            frames_json = os.path.join(data_dir, t.get("ffprobe_frames", ""))
            if os.path.exists(frames_json):
                probe = json.load(open(frames_json))["frames"]
                ref = np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in probe])
                ok = np.isfinite(ref)
                row["pts_equal_ffprobe"] = bool(len(ref) == len(pts) and np.allclose(ref[ok], pts[ok], atol=1e-6))
            row["truth_av_offset_ms"] = t.get("av_offset_ms")
            row["truth_drift_ppm"] = t.get("drift_ppm")
            row["truth_text_offset_ms"] = t.get("text_offset_ms")
        rows.append(row)
    return {
        "data_dir": data_dir,
        "shards": len(shards),
        "samples_decoded": len(rows),
        "skipped": skipped,
        "seconds": time.perf_counter() - started,
        "clips": rows,
    }


def format_summary(summary: dict) -> str:
    """A short, honest table of what the demo read and decoded."""
    lines = [
        f"avalign demo on {summary['data_dir']}: {summary['shards']} shards, "
        f"{summary['samples_decoded']} samples decoded, {len(summary['skipped'])} skipped, "
        f"{summary['seconds']:.1f} s",
        "",
        f"{'key':<24}{'fmt':<6}{'codecs':<14}{'frames':>7}{'first pts':>11}{'fps hdr':>9}{'fps real':>9}"
        f"{'vfr':>5}{'audio t0':>10}{'k/fps err':>11}{'= ffprobe':>10}",
    ]
    for r in summary["clips"]:
        fps_real = r["fps_from_content"] or 0.0
        lines.append(
            f"{r['key']:<24}{r['container']:<6}{r['video_codec'] + '+' + r['audio_codec']:<14}{r['num_frames']:>7}"
            f"{r['first_pts_seconds']:>10.3f}s{r['fps_from_header']:>9.3f}{fps_real:>9.3f}{str(r['vfr'])[0]:>5}"
            f"{r['audio_start_seconds']:>9.3f}s{r['naive_frame_time_error_ms_max']:>9.1f}ms"
            f"{str(r.get('pts_equal_ffprobe', '-')):>10}"
        )
    for s in summary["skipped"]:
        lines.append(f"skipped {s['key'] or '(shard)'} in {s['shard']}: {s['reason']}")
    lines.append("")
    lines.append("k/fps err: how far the naive 'frame k is at k/fps' time is from the real pts (max over the clip).")
    return "\n".join(lines)
