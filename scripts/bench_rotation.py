"""The cost of display rotation at 720p, before/after, in ``avalign bench decode``'s style (BENCHMARKS.md,
"Rotation and pipe shards").

    PYTHONPATH=$PWD python scripts/bench_rotation.py --repeats 5 /work/main .
    PYTHONPATH=$PWD python scripts/bench_rotation.py --repeats 5 --turn-costs --cases -- .

Makes a 10 s 1280x720 30 fps H.264 clip (testsrc2, x264 ``veryfast``, as ``avalign bench decode``'s full-decode
files) and the same stream remuxed with ``-metadata:s:v:0 rotate=90``. Each checkout gets one long-lived worker
process (its ``loaders`` on the path); the cases run interleaved (every checkout, every case, once per round) and
each row gives the median wall seconds and the median CPU seconds (user + sys of the worker, all its threads) of
one call. ``num_threads=1`` (FFmpeg), ``OMP_NUM_THREADS=1``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

_WORKER = r"""
import json, resource, sys, time
import loaders
from loaders.media import clear_frame_index_cache, result_pool

def run(case, path):
    if case == "probe_video (index cache cleared)":
        clear_frame_index_cache()
        return loaders.probe_video(path)[1].num_frames
    if case == "read_video full, pyav":
        return tuple(loaders.read_video(path, num_threads=1, backend="pyav").frames.shape)
    if case == "read_video full, torchcodec":
        return tuple(loaders.read_video(path, num_threads=1, backend="torchcodec").frames.shape)
    if case == "read_video frame_size 1/4, pyav":
        meta, _ = loaders.probe_video(path)
        size = (meta.height // 4, meta.width // 4)
        return tuple(loaders.read_video(path, num_threads=1, backend="pyav", frame_size=size).frames.shape)
    raise ValueError(case)

for line in sys.stdin:
    case, path = json.loads(line)
    result_pool.release()
    before = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    shape = run(case, path)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    print(json.dumps({"wall": wall, "cpu": cpu, "shape": shape}), flush=True)
"""

CASES = ("read_video full, pyav", "read_video frame_size 1/4, pyav", "read_video full, torchcodec",
         "probe_video (index cache cleared)")


def make_clips(folder: str) -> dict[str, str]:
    plain = os.path.join(folder, "bench_720p_10s.mp4")
    turned = os.path.join(folder, "bench_720p_10s_rotate90.mp4")
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=1280x720:rate=30",
                    "-t", "10", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "veryfast", plain], check=True)
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", plain, "-c", "copy", "-metadata:s:v:0", "rotate=90",
                    turned], check=True)
    return {"0": plain, "90": turned}


def turn_costs(path: str, repeats: int) -> None:
    """CPU ms per 720p frame of the ways to turn a frame by 90 degrees, on 60 decoded frames (this process, the
    checkout on PYTHONPATH): RGB conversion alone; FFmpeg's ``transpose`` filter on the YUV frame, then RGB (what
    the PyAV backend does); RGB, then numpy's ``rot90`` copied into place; RGB, then ``torch.rot90().contiguous()``
    (what the torchcodec backend does to its frames). Medians over ``repeats`` interleaved rounds."""
    import time

    import av
    import numpy as np
    import torch
    from av.video.reformatter import VideoReformatter

    torch.set_num_threads(1)
    with av.open(path) as container:
        frames = [frame for _, frame in zip(range(60), container.decode(video=0))]
    reformatter = VideoReformatter()
    graph = av.filter.Graph()  # what loaders' PyAV backend builds for 90 degrees (loaders._rotation.FrameTurner)
    source = graph.add_buffer(width=frames[0].width, height=frames[0].height, format=frames[0].format,
                              time_base=frames[0].time_base)
    transpose, sink = graph.add("transpose", "cclock"), graph.add("buffersink")
    source.link_to(transpose)
    transpose.link_to(sink)
    graph.configure()

    def turner(frame):
        graph.push(frame)
        return graph.pull()

    out = np.empty((1280, 720, 3), dtype=np.uint8)
    ways = {
        "rgb24 only": lambda f: reformatter.reformat(f, format="rgb24").to_ndarray(),
        "transpose filter (YUV) + rgb24": lambda f: reformatter.reformat(turner(f), format="rgb24").to_ndarray(),
        "rgb24 + numpy rot90 copy": lambda f: np.copyto(out, np.rot90(reformatter.reformat(f, format="rgb24").to_ndarray())),
        "rgb24 + torch.rot90 contiguous": lambda f: torch.rot90(torch.from_numpy(
            reformatter.reformat(f, format="rgb24").to_ndarray()), 1, dims=(0, 1)).contiguous(),
    }
    costs: dict[str, list[float]] = {name: [] for name in ways}
    for _ in range(repeats):
        for name, way in ways.items():
            start = time.process_time()
            for frame in frames:
                way(frame)
            costs[name].append((time.process_time() - start) / len(frames) * 1000)
    print("| way to turn a 1280x720 frame by 90 degrees | CPU ms per frame (median) |")
    print("|---|---:|")
    for name, values in costs.items():
        print(f"| {name} | {statistics.median(values):.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", help="repository roots whose loaders to compare (before first)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=CASES, metavar="CASE",
                        help=f"cases to run (default: all of {CASES})")
    parser.add_argument("--turn-costs", action="store_true", help="also measure the ways to turn one frame (this process)")
    args = parser.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    with tempfile.TemporaryDirectory() as folder:
        clips = make_clips(folder)
        if args.turn_costs:
            turn_costs(clips["0"], args.repeats)
        workers = {}
        for root in args.checkouts:
            root = os.path.abspath(root)
            workers[root] = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                             text=True, env=dict(env, PYTHONPATH=root), cwd=root)
        runs = [(root, case, tag) for case in args.cases for tag in clips for root in workers]
        samples: dict[tuple, list[dict]] = {run: [] for run in runs}
        for round_index in range(args.repeats + 1):  # round 0: warm-up, not counted
            for run in runs:
                root, case, tag = run
                worker = workers[root]
                worker.stdin.write(json.dumps([case, clips[tag]]) + "\n")
                worker.stdin.flush()
                result = json.loads(worker.stdout.readline())
                if round_index:
                    samples[run].append(result)
        for worker in workers.values():
            worker.stdin.close()
            worker.wait()
    print("| case | clip | checkout | output shape | wall s (median) | CPU s (median) |")
    print("|---|---|---|---|---:|---:|")
    for run in runs:
        root, case, tag = run
        rows = samples[run]
        print(f"| {case} | rotate={tag} | {os.path.basename(root.rstrip('/'))} | {rows[0]['shape'] if isinstance(rows[0]['shape'], int) else tuple(rows[0]['shape'])} | "
              f"{statistics.median(r['wall'] for r in rows):.3f} | {statistics.median(r['cpu'] for r in rows):.3f} |")


if __name__ == "__main__":
    main()
