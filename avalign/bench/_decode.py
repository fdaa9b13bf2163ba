"""``avalign bench decode``: read_video against ffmpeg, PyAV, decord and torchcodec on the same files.

Workloads (all at the same thread count, RGB24 output, the same file):
  (a) full decode of every frame;
  (b) sparse: 8 frames at 1 fps starting 10 s into a 30 s clip (seek + decode only what is needed);
  (c) decoder creation: from a path to a ready-to-decode object (read_video: the demux frame index).
``--long`` (:func:`bench_long`): issue #17's table in one interleaved run: sparse reads (with and without resize),
1 fps and audio (48 kHz and 44.1 kHz stereo) on 600 s files, full decode at 720p and 1080p; ``read_video`` with each
of its backends (PyAV, torchcodec) beside the peers.
Each figure is the median of ``repeats`` runs; ratios are against ffmpeg's own CLI speed.
"""
from __future__ import annotations

import logging
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Callable, Optional

import numpy as np

from avcore import frame_played_at

logger = logging.getLogger(__name__)

__all__ = ["bench_decode", "bench_long", "format_decode_table", "format_long_table", "make_bench_clips", "make_full_clips",
           "make_long_clips"]


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


def _decord_every_frame(path: str, threads: int) -> dict[str, Callable[[], int]]:
    """``{"decord get_batch": every frame of path}``, or ``{}`` where decord is not installed."""
    try:
        import decord
    except ImportError:
        return {}

    def decord_batch() -> int:
        reader = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=threads)
        return int(reader.get_batch(list(range(len(reader)))).shape[0])

    return {"decord get_batch": decord_batch}


def _full_decoders(path: str, threads: int) -> dict[str, Callable[[], int]]:
    import av

    import loaders
    from loaders.media import result_pool

    def ffmpeg_cli() -> int:
        subprocess.run(
            ["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-i", path, "-f", "rawvideo",
             "-pix_fmt", "rgb24", "-y", "/dev/null"],
            check=True,
        )
        return -1

    def avalign_read_video() -> int:  # cold, like its peers: no memory of an earlier result reused
        result_pool.release()
        return loaders.read_video(path, num_threads=threads).num_frames

    def pyav_loop() -> int:
        with av.open(path) as c:
            s = c.streams.video[0]
            s.thread_type = "AUTO"
            s.codec_context.thread_count = threads
            return len([f.to_ndarray(format="rgb24") for f in c.decode(s)])

    out = {"ffmpeg -f rawvideo rgb24": ffmpeg_cli, "avalign read_video": avalign_read_video, "PyAV decode loop": pyav_loop}
    out.update(_decord_every_frame(path, threads))
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
            idx = frame_played_at(ts, np.asarray(times) + 1e-9, before_first="none").tolist()  # decord rounds its times
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
    from loaders.media import clear_frame_index_cache  # cleared before each call: a cold start

    out = {
        "avalign probe_video (header + frame index)": lambda: clear_frame_index_cache() or loaders.probe_video(path)[1].num_frames,
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


_SPARSE_START_SECONDS, _SPARSE_FRAMES, _SPARSE_FPS = 10.0, 8, 1.0
"""The sparse workload: 8 frames at 1 fps from 10 s (its file must reach 18 s)."""


def bench_decode(files: Optional[list[str]] = None, *, threads: int = 2, repeats: int = 5, work_dir: Optional[str] = None) -> dict:
    """Run the three workloads; returns ``{"full": rows, "sparse": rows, "creation": rows, ...}``."""
    if shutil.which("ffmpeg") is None:
        raise FileNotFoundError("ffmpeg is not installed (Debian package ffmpeg)")
    work_dir = work_dir or tempfile.mkdtemp(prefix="avalign-bench-")
    if not files:
        logger.info("bench decode: generating the 720p and 30 s clips in %s", work_dir)
    full_path, sparse_path = (files + files)[:2] if files else make_bench_clips(work_dir)
    import loaders

    num_frames = loaders.probe_video(full_path)[1].num_frames
    sparse_index = loaders.probe_video(sparse_path)[1]
    needed = _SPARSE_START_SECONDS + _SPARSE_FRAMES / _SPARSE_FPS
    if sparse_index.num_frames == 0 or sparse_index.end_seconds <= _SPARSE_START_SECONDS:  # before the full decode runs
        first = float(sparse_index.pts_seconds[0]) if sparse_index.num_frames else 0.0
        raise ValueError(
            f"{sparse_path}: its video covers [{first:.3f}, {sparse_index.end_seconds:.3f}) s, and the sparse case reads "
            f"{_SPARSE_FRAMES} frames at {_SPARSE_FPS:g} fps from {_SPARSE_START_SECONDS:g} s; hint: give a clip longer "
            f"than {_SPARSE_START_SECONDS:g} s (all {_SPARSE_FRAMES} frames: {needed:g} s) as SPARSE_FILE (the second "
            "file; one file is used for both), or no file for the generated clips")
    result: dict = {"threads": threads, "repeats": repeats, "full_file": full_path, "sparse_file": sparse_path}
    rows = []
    full = _full_decoders(full_path, threads)
    for number, (name, fn) in enumerate(full.items(), start=1):
        logger.info("bench decode: (a) full decode of %s: %s [%d/%d], %d run(s)", os.path.basename(full_path), name,
                    number, len(full), repeats)
        seconds, _ = _median_seconds(fn, repeats)
        rows.append({"tool": name, "seconds": seconds, "fps": num_frames / seconds})
    base = rows[0]["fps"]
    for r in rows:
        r["vs_ffmpeg"] = r["fps"] / base
    result["full"] = rows
    rows = []
    sparse = _sparse_decoders(sparse_path, threads, _SPARSE_START_SECONDS, _SPARSE_FRAMES, _SPARSE_FPS)
    for number, (name, fn) in enumerate(sparse.items(), start=1):
        logger.info("bench decode: (b) %d frames at %g fps from %g s of %s: %s [%d/%d], %d run(s)", _SPARSE_FRAMES,
                    _SPARSE_FPS, _SPARSE_START_SECONDS, os.path.basename(sparse_path), name, number, len(sparse), repeats)
        seconds, count = _median_seconds(fn, repeats)
        rows.append({"tool": name, "seconds": seconds, "frames": count})
    result["sparse"] = rows
    rows = []
    creation = _creation(sparse_path, threads)
    logger.info("bench decode: (c) decoder creation: %d tool(s), %d run(s) each", len(creation), repeats)
    for name, fn in creation.items():
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


# ------------------------------------------------------------------ long files (issue #17): interleaved, medians

LONG_SECONDS = 600
"""Length of the generated long video and audio (``--long``)."""
LONG_VIDEO_SIZE = "854x480"
"""Frame size of the generated long video (``--long``)."""


def make_long_clips(out_dir: str, seconds: int = LONG_SECONDS, audio_rate: int = 48000, *,
                    video_size: str = LONG_VIDEO_SIZE) -> tuple[str, str]:
    """A ``seconds``-long ``video_size`` (default 854x480) 30 fps H.264 file (x264 ``veryfast`` defaults: B-frames,
    a keyframe every <= 250 frames) and a ``seconds``-long ``audio_rate`` stereo AAC file (a tone plus noise).
    Generated once, reused."""
    tag = "480p" if video_size == LONG_VIDEO_SIZE else video_size
    video = os.path.join(out_dir, f"bench_{tag}_{seconds}s.mp4")
    tag = f"{audio_rate // 1000}k" if audio_rate % 1000 == 0 else f"{audio_rate / 1000:g}k"
    audio = os.path.join(out_dir, f"bench_aac{tag}_{seconds}s.m4a")
    if not os.path.exists(video):
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc2=size={video_size}:rate=30",
                        "-t", str(seconds), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", video], check=True)
    if not os.path.exists(audio):
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i",
                        f"sine=frequency=440:sample_rate={audio_rate}:duration={seconds}", "-f", "lavfi", "-i",
                        f"anoisesrc=d={seconds}:r={audio_rate}:a=0.1", "-filter_complex", "[0][1]amerge=inputs=2",
                        "-c:a", "aac", "-b:a", "128k", audio], check=True)
    return video, audio


LONG_CASES = ("sparse", "audio", "full", "one_fps")
"""The case groups of :func:`bench_long`: sparse 8-of-10 s (+224x224), 48/44.1 kHz audio, full decode, 1 fps."""
FULL_CLIPS = (("1280x720", 60), ("1920x1080", 20))
"""Full-decode files of issue #17's table: (size, seconds) of 30 fps H.264 (x264 ``veryfast``)."""


def make_full_clips(out_dir: str, clips: tuple[tuple[str, int], ...] = FULL_CLIPS) -> list[str]:
    """The full-decode files (testsrc2 at 30 fps, x264 ``veryfast`` defaults); generated once, reused."""
    paths = []
    for size, seconds in clips:
        path = os.path.join(out_dir, f"bench_full_{size.split('x')[1]}p_{seconds}s.mp4")
        if not os.path.exists(path):
            subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"testsrc2=size={size}:rate=30",
                            "-t", str(seconds), "-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", path],
                           check=True)
        paths.append(path)
    return paths


def _full_tools(path: str, threads: int) -> dict[str, Callable[[], int]]:
    """Every frame of ``path`` to RGB24: read_video with each backend, torchcodec, decord and ffmpeg's CLI
    (writing to /dev/null, and piped into one NumPy array: the in-memory result every other tool makes).

    ``read_video(backend=pyav)`` runs twice per round: *cold*, with the process's result pool released first
    (what the first decode of a process pays: the result's memory is new), then *warm* (the memory of the
    result freed just before is reused, as in a loop of decodes)."""
    import numpy as np

    import loaders
    from loaders.media import result_pool

    def avalign(backend: str) -> Callable[[], int]:
        return lambda: loaders.read_video(path, num_threads=threads, backend=backend).num_frames

    def avalign_cold() -> int:
        result_pool.release()
        return loaders.read_video(path, num_threads=threads, backend="pyav").num_frames

    def ffmpeg_cli() -> int:
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-i", path, "-f", "rawvideo",
                        "-pix_fmt", "rgb24", "-y", "/dev/null"], check=True)
        return loaders.probe_video(path)[1].num_frames  # what ffmpeg decoded: every frame

    def ffmpeg_to_array() -> int:
        # The same decode, its frames read into one NumPy array (how Python code gets ffmpeg's frames): pays what
        # read_video pays and /dev/null does not, the result's memory (first touch) and the copy out of the pipe.
        meta, index = loaders.probe_video(path)
        frame_bytes = meta.height * meta.width * 3
        frames = np.empty((index.num_frames, meta.height, meta.width, 3), np.uint8)
        view, filled = memoryview(frames).cast("B"), 0
        with subprocess.Popen(["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-i", path, "-f",
                               "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], stdout=subprocess.PIPE) as proc:
            while filled < len(view):
                got = proc.stdout.readinto(view[filled:])
                if not got:
                    break
                filled += got
            proc.stdout.read()
        if proc.returncode != 0:
            raise RuntimeError(f"ffmpeg failed on {path} (exit {proc.returncode})")
        return filled // frame_bytes

    out: dict[str, Callable[[], int]] = {"ffmpeg -f rawvideo rgb24": ffmpeg_cli,
                                         "ffmpeg rgb24 piped into a NumPy array": ffmpeg_to_array,
                                         "avalign read_video(backend=pyav), cold: result pool released": avalign_cold,
                                         "avalign read_video(backend=pyav), warm: result pool kept": avalign("pyav"),
                                         "avalign read_video(backend=torchcodec)": avalign("torchcodec")}
    try:
        from torchcodec.decoders import VideoDecoder

        def torchcodec_all() -> int:
            decoder = VideoDecoder(path, num_ffmpeg_threads=threads, dimension_order="NHWC")
            return int(decoder.get_frames_in_range(0, len(decoder)).data.shape[0])

        out["torchcodec get_frames_in_range"] = torchcodec_all
    except Exception as e:  # noqa: BLE001 - torchcodec needs FFmpeg shared libraries
        logger.warning("torchcodec unavailable: %s", e)
    out.update(_decord_every_frame(path, threads))
    return out


def _interleaved(tools: dict[str, Callable[[], int]], repeats: int) -> list[dict]:
    """Each tool once as warm-up, then ``repeats`` rounds running every tool once per round (so machine load
    hits all tools alike); rows with the median and the spread of each tool's wall seconds."""
    counts = {name: fn() for name, fn in tools.items()}
    times: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(repeats):
        for name, fn in tools.items():
            t0 = time.perf_counter()
            counts[name] = fn()
            times[name].append(time.perf_counter() - t0)
    return [{"tool": name, "seconds": statistics.median(times[name]), "min_seconds": min(times[name]),
             "max_seconds": max(times[name]), "frames": counts[name]} for name in tools]


def _played_at_tools(path: str, threads: int, start: float, stop: float, fps: float,
                     size: Optional[tuple[int, int]]) -> dict[str, Callable[[], int]]:
    """read_video(fps=) and its peers, each returning the frame played at ``start + i / fps < stop``."""
    import torch

    import loaders
    from loaders.media import clear_frame_index_cache

    count = max(0, math.ceil((stop - start) * fps - 1e-9))
    times = [start + i / fps for i in range(count)]

    def resize(frames: "torch.Tensor") -> "torch.Tensor":  # NCHW uint8 -> NCHW uint8 at ``size`` (area filter)
        if size is None:
            return frames
        return torch.nn.functional.interpolate(frames.float(), size=size, mode="area").round_().to(torch.uint8)

    def avalign(clear_cache: bool, backend: str = "auto") -> Callable[[], int]:
        def run() -> int:
            if clear_cache:
                clear_frame_index_cache()
            return loaders.read_video(path, start_seconds=start, stop_seconds=stop, fps=fps, num_threads=threads,
                                      frame_size=size, backend=backend).num_frames
        return run

    out: dict[str, Callable[[], int]] = {
        "avalign read_video(fps=)": avalign(False),
        "avalign read_video(fps=), index cache cleared": avalign(True),
        "avalign read_video(fps=, backend=pyav)": avalign(False, "pyav"),
        "avalign read_video(fps=, backend=torchcodec)": avalign(False, "torchcodec"),
    }
    try:
        from torchcodec.decoders import VideoDecoder

        def torchcodec(mode: str) -> Callable[[], int]:
            def run() -> int:
                decoder = VideoDecoder(path, num_ffmpeg_threads=threads, seek_mode=mode)
                return int(resize(decoder.get_frames_played_at(seconds=times).data).shape[0])
            return run

        out["torchcodec approximate" + (" + resize" if size else "")] = torchcodec("approximate")
        out["torchcodec exact" + (" + resize" if size else "")] = torchcodec("exact")
    except Exception as e:  # noqa: BLE001 - torchcodec needs FFmpeg shared libraries
        logger.warning("torchcodec unavailable: %s", e)
    try:
        import decord

        def decord_batch() -> int:
            height, width = size or (-1, -1)
            reader = decord.VideoReader(path, ctx=decord.cpu(0), num_threads=threads, width=width, height=height)
            rate = reader.get_avg_fps()  # CFR file: frame k at k / rate
            indices = [min(int(math.floor(t * rate + 1e-6)), len(reader) - 1) for t in times]
            return int(reader.get_batch(indices).shape[0])

        out["decord get_batch"] = decord_batch
    except ImportError:
        pass
    scale = f",scale={size[1]}:{size[0]}:flags=area" if size else ""

    def ffmpeg_cli() -> int:
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-threads", str(threads), "-ss", str(start), "-i", path,
                        "-t", str(stop - start), "-vf", f"fps={fps}{scale}", "-f", "rawvideo", "-pix_fmt", "rgb24",
                        "-y", "/dev/null"], check=True)
        return count

    out["ffmpeg -ss + fps filter"] = ffmpeg_cli
    return out


def _audio_tools(path: str, rate: int) -> dict[str, Callable[[], int]]:
    import loaders

    out: dict[str, Callable[[], int]] = {
        "avalign read_audio(sample_rate=16000, mono)": lambda: loaders.read_audio(path, sample_rate=rate).num_samples,
        "avalign read_audio(..., backend=pyav)": lambda: loaders.read_audio(path, sample_rate=rate,
                                                                            backend="pyav").num_samples,
    }
    try:
        from torchcodec.decoders import AudioDecoder

        out["torchcodec AudioDecoder(sample_rate, num_channels=1)"] = lambda: int(
            AudioDecoder(path, sample_rate=rate, num_channels=1).get_all_samples().data.shape[1])
    except Exception as e:  # noqa: BLE001
        logger.warning("torchcodec unavailable: %s", e)

    def ffmpeg_cli() -> int:
        subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", path, "-ac", "1", "-ar", str(rate), "-f", "f32le",
                        "-y", "/dev/null"], check=True)
        return -1

    out["ffmpeg -ac 1 -ar 16000 f32le"] = ffmpeg_cli
    return out


def bench_long(*, threads: int = 2, repeats: int = 5, work_dir: Optional[str] = None, seconds: int = LONG_SECONDS,
               one_fps_repeats: Optional[int] = None, full_clips: tuple[tuple[str, int], ...] = FULL_CLIPS,
               full_repeats: Optional[int] = None, video_size: str = LONG_VIDEO_SIZE,
               cases: tuple[str, ...] = LONG_CASES) -> dict:
    """Issue #17's cases on a ``seconds``-long file, every tool in the same interleaved rounds:

    - sparse: 8 frames from a 10 s window in the middle (``fps=0.8`` over ``[T/2, T/2 + 10)``), with and
      without scaling to 224x224;
    - 1 fps over the whole file;
    - audio: the whole 48 kHz and 44.1 kHz stereo AAC files to 16 kHz mono;
    - full decode of ``full_clips`` (default 720p 60 s and 1080p 20 s) to RGB24.

    The long video is ``video_size`` (default 854x480); the cases are the same at any size.

    Returns ``{"sparse": rows, "sparse_224": rows, "one_fps": rows, "audio": rows, "audio_44k": rows,
    "full_720p": rows, "full_1080p": rows, ...}``; each row has the median wall seconds of ``repeats`` rounds
    (``one_fps_repeats`` / ``full_repeats`` for those cases, default ``repeats``). ``cases``: which of
    :data:`LONG_CASES` to run (default all).
    """
    unknown = set(cases) - set(LONG_CASES)
    if unknown:
        raise ValueError(f"unknown cases {sorted(unknown)}; valid: {LONG_CASES}")
    if shutil.which("ffmpeg") is None:
        raise FileNotFoundError("ffmpeg is not installed (Debian package ffmpeg)")
    work_dir = work_dir or os.path.join(tempfile.gettempdir(), "avalign-bench-long")
    os.makedirs(work_dir, exist_ok=True)
    video, audio = make_long_clips(work_dir, seconds, video_size=video_size)
    middle = float(seconds // 2)
    result: dict = {"threads": threads, "repeats": repeats, "video": video, "audio_file": audio, "seconds": seconds,
                    "load_before": os.getloadavg()[0]}
    if "sparse" in cases:
        result["sparse"] = _interleaved(_played_at_tools(video, threads, middle, middle + 10.0, 0.8, None), repeats)
        result["sparse_224"] = _interleaved(_played_at_tools(video, threads, middle, middle + 10.0, 0.8, (224, 224)),
                                            repeats)
    if "audio" in cases:
        result["audio"] = _interleaved(_audio_tools(audio, 16000), repeats)
        _, audio_44k = make_long_clips(work_dir, seconds, audio_rate=44100, video_size=video_size)  # the same video
        result["audio_44k_file"] = audio_44k
        result["audio_44k"] = _interleaved(_audio_tools(audio_44k, 16000), repeats)
    result["full_repeats"] = full_repeats or repeats
    result["full_files"] = []
    for path in make_full_clips(work_dir, full_clips) if "full" in cases else []:
        key = "full_" + os.path.basename(path).split("_")[2]  # full_720p, full_1080p
        result["full_files"].append(path)
        result[key] = _interleaved(_full_tools(path, threads), result["full_repeats"])
    result["one_fps_repeats"] = one_fps_repeats or repeats
    if "one_fps" in cases:
        tools = _played_at_tools(video, threads, 0.0, float(seconds), 1.0, None)
        tools.pop("avalign read_video(fps=), index cache cleared")  # the index is a few ms of a ~10 s read
        tools.pop("avalign read_video(fps=, backend=pyav)")  # = auto, which is pyav for fps= reads (AUTO_BACKEND)
        result["one_fps"] = _interleaved(tools, result["one_fps_repeats"])
    result["load_after"] = os.getloadavg()[0]
    return result


def format_long_table(result: dict) -> str:
    """Markdown tables of :func:`bench_long`'s result, each tool's median against the first peer named."""
    lines = [f"threads={result['threads']}, tools interleaved, median of {result['repeats']} rounds "
             f"({result['one_fps_repeats']} for 1 fps); 1-minute load average {result['load_before']:.1f} before, "
             f"{result['load_after']:.1f} after; `{os.path.basename(result['video'])}`, "
             f"`{os.path.basename(result['audio_file'])}`"]
    titles = {
        "sparse": ("8 frames from a 10 s window in the middle (fps=0.8)", "torchcodec approximate"),
        "sparse_224": ("same, scaled to 224x224", "torchcodec approximate + resize"),
        "one_fps": ("1 fps over the whole file", "torchcodec approximate"),
        "audio": ("whole file, 48 kHz stereo AAC -> 16 kHz mono float32", "torchcodec AudioDecoder(sample_rate, num_channels=1)"),
        "audio_44k": ("whole file, 44.1 kHz stereo AAC -> 16 kHz mono float32",
                      "torchcodec AudioDecoder(sample_rate, num_channels=1)"),
    }
    for key in sorted(k for k in result if k.startswith("full_") and isinstance(result[k], list) and result[k]
                      and isinstance(result[k][0], dict)):
        titles[key] = (f"full decode to RGB24, {key[5:]} (median of {result['full_repeats']} rounds)",
                       "ffmpeg -f rawvideo rgb24")
    for key, (title, peer) in titles.items():
        rows = result.get(key)
        if not rows:
            continue
        base = next((r["seconds"] for r in rows if r["tool"] == peer), None)
        lines += ["", f"{title}", "", f"| tool | median s | min-max s | frames/samples | speed × {peer} |",
                  "|---|---:|---:|---:|---:|"]
        for r in rows:
            ratio = f"{base / r['seconds']:.2f}" if base else "-"
            lines.append(f"| {r['tool']} | {r['seconds']:.3f} | {r['min_seconds']:.3f}-{r['max_seconds']:.3f} | "
                         f"{r['frames']} | {ratio} |")
    return "\n".join(lines)
