"""``avalign bench decode``: read_video against ffmpeg, PyAV, decord and torchcodec on the same files.

Workloads (all at the same thread count, RGB24 output, the same file):
  (a) full decode of every frame;
  (b) sparse: 8 frames at 1 fps starting 10 s into a 30 s clip (seek + decode only what is needed);
  (c) decoder creation: from a path to a ready-to-decode object (read_video: the demux frame index).
Each figure is the median of ``repeats`` runs; ratios are against ffmpeg's own CLI speed.
"""
from __future__ import annotations

import logging
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Callable, Optional

import numpy as np

logger = logging.getLogger(__name__)

__all__ = ["bench_decode", "format_decode_table", "make_bench_clips"]


def make_bench_clips(out_dir: str) -> tuple[str, str]:
    """A 10 s 1280x720 30 fps H.264 clip and a 30 s 640x360 one (x264 defaults: keyframe every <= 250 frames)."""
    full = os.path.join(out_dir, "bench_720p_10s.mp4")
    sparse = os.path.join(out_dir, "bench_360p_30s.mp4")
    for path, size, seconds in ((full, "1280x720", 10), (sparse, "640x360", 30)):
        if not os.path.exists(path):
            subprocess.run(
                ["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30",
                 "-t", str(seconds), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", path],
                check=True,
            )
    return full, sparse


def _median_seconds(fn: Callable[[], int], repeats: int) -> tuple[float, int]:
    fn()  # warm-up: page cache, library initialisation
    times, count = [], 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        count = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), count


def _full_decoders(path: str, threads: int) -> dict[str, Callable[[], int]]:
    import av

    import loaders

    def ffmpeg_cli() -> int:
        subprocess.run(
            ["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-i", path, "-f", "rawvideo",
             "-pix_fmt", "rgb24", "-y", "/dev/null"],
            check=True,
        )
        return -1

    def avalign_read_video() -> int:
        return loaders.read_video(path, num_threads=threads).num_frames

    def pyav_loop() -> int:
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            s.codec_context.thread_count = threads
            return len([f.to_ndarray(format="rgb24") for f in c.decode(s)])

    out = {"ffmpeg -f rawvideo rgb24": ffmpeg_cli, "avalign read_video": avalign_read_video, "PyAV decode loop": pyav_loop}
    try:
        import decord

        def decord_batch() -> int:
            vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=threads)
            return int(vr.get_batch(list(range(len(vr)))).shape[0])

        out["decord get_batch"] = decord_batch
    except ImportError:
        pass
    try:
        from torchcodec.decoders import VideoDecoder

        def torchcodec_all() -> int:
            d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
            return int(d.get_frames_in_range(0, len(d)).data.shape[0])

        out["torchcodec 0.9"] = torchcodec_all
    except Exception as e:  # torchcodec needs FFmpeg shared libraries
        logger.warning("torchcodec unavailable: %s", e)
    return out


def _sparse_decoders(path: str, threads: int, start: float, count: int, fps: float) -> dict[str, Callable[[], int]]:
    import av

    import loaders

    times = [start + i / fps for i in range(count)]

    def ffmpeg_cli() -> int:
        subprocess.run(
            ["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-ss", str(start), "-i", path,
             "-t", str(count / fps), "-vf", f"fps={fps}", "-f", "rawvideo", "-pix_fmt", "rgb24", "-y", "/dev/null"],
            check=True,
        )
        return count

    def avalign_read_video() -> int:
        return loaders.read_video(path, start_seconds=start, stop_seconds=start + count / fps, fps=fps, num_threads=threads).num_frames

    def pyav_seek_each() -> int:
        got = 0
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            s.codec_context.thread_count = threads
            for t in times:
                c.seek(int(t / s.time_base), stream=s, backward=True)
                prev = None
                for f in c.decode(s):
                    if f.time > t + 1e-9:
                        break
                    prev = f
                if prev is not None:
                    prev.to_ndarray(format="rgb24")
                    got += 1
        return got

    out = {"ffmpeg -ss + fps filter": ffmpeg_cli, "avalign read_video(fps=)": avalign_read_video, "PyAV seek per frame": pyav_seek_each}
    try:
        import decord

        def decord_batch() -> int:
            vr = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=threads)
            ts = vr.get_frame_timestamp(range(len(vr)))[:, 0]
            idx = [int(np.searchsorted(ts, t + 1e-9, side="right") - 1) for t in times]
            return int(vr.get_batch(idx).shape[0])

        out["decord get_batch"] = decord_batch
    except ImportError:
        pass
    try:
        from torchcodec.decoders import VideoDecoder

        def torchcodec_played_at() -> int:
            d = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
            return int(d.get_frames_played_at(seconds=times).data.shape[0])

        out["torchcodec get_frames_played_at"] = torchcodec_played_at
    except Exception:
        pass
    return out


def _creation(path: str, threads: int) -> dict[str, Callable[[], int]]:
    import av

    import loaders

    out = {
        "avalign probe_video (header + frame index)": lambda: loaders.probe_video(path)[1].num_frames,
        "PyAV av.open": lambda: av.open(path).close() or 0,
    }
    try:
        import decord

        out["decord VideoReader()"] = lambda: len(decord.VideoReader(path, ctx=decord.cpu(0), num_threads=threads))
    except ImportError:
        pass
    try:
        from torchcodec.decoders import VideoDecoder

        out["torchcodec VideoDecoder(exact)"] = lambda: len(VideoDecoder(path, num_ffmpeg_threads=threads))
        out["torchcodec VideoDecoder(approximate)"] = lambda: len(VideoDecoder(path, seek_mode="approximate"))
    except Exception:
        pass
    return out


def bench_decode(files: Optional[list[str]] = None, *, threads: int = 2, repeats: int = 5, work_dir: Optional[str] = None) -> dict:
    """Run the three workloads; returns ``{"full": rows, "sparse": rows, "creation": rows, ...}``."""
    if shutil.which("ffmpeg") is None:
        raise FileNotFoundError("ffmpeg is not installed (Debian package ffmpeg)")
    work_dir = work_dir or tempfile.mkdtemp(prefix="avalign-bench-")
    full_path, sparse_path = (files + files)[:2] if files else make_bench_clips(work_dir)
    import loaders

    num_frames = loaders.probe_video(full_path)[1].num_frames
    result: dict = {"threads": threads, "repeats": repeats, "full_file": full_path, "sparse_file": sparse_path}
    rows = []
    for name, fn in _full_decoders(full_path, threads).items():
        seconds, _ = _median_seconds(fn, repeats)
        rows.append({"tool": name, "seconds": seconds, "fps": num_frames / seconds})
    base = rows[0]["fps"]
    for r in rows:
        r["vs_ffmpeg"] = r["fps"] / base
    result["full"] = rows
    rows = []
    for name, fn in _sparse_decoders(sparse_path, threads, 10.0, 8, 1.0).items():
        seconds, count = _median_seconds(fn, repeats)
        rows.append({"tool": name, "seconds": seconds, "frames": count})
    result["sparse"] = rows
    rows = []
    for name, fn in _creation(sparse_path, threads).items():
        seconds, _ = _median_seconds(fn, repeats)
        rows.append({"tool": name, "seconds": seconds})
    result["creation"] = rows
    return result


def format_decode_table(result: dict) -> str:
    """Markdown tables of :func:`bench_decode`'s result."""
    lines = [
        f"threads={result['threads']}, median of {result['repeats']} runs",
        "",
        f"(a) full decode to RGB24: `{os.path.basename(result['full_file'])}`",
        "",
        "| tool | seconds | frames/s | × ffmpeg |",
        "|---|---:|---:|---:|",
    ]
    lines += [f"| {r['tool']} | {r['seconds']:.3f} | {r['fps']:.0f} | {r['vs_ffmpeg']:.2f} |" for r in result["full"]]
    lines += ["", f"(b) 8 frames at 1 fps from 10 s: `{os.path.basename(result['sparse_file'])}`", "",
              "| tool | seconds | frames |", "|---|---:|---:|"]
    lines += [f"| {r['tool']} | {r['seconds']:.3f} | {r['frames']} |" for r in result["sparse"]]
    lines += ["", "(c) decoder creation", "", "| tool | milliseconds |", "|---|---:|"]
    lines += [f"| {r['tool']} | {r['seconds'] * 1000:.1f} |" for r in result["creation"]]
    return "\n".join(lines)
