"""``preprocess --reencode mp4``: does the output keep the source's clock, and what does the re-encode cost?

For each generated source kind (64x48, 2 s; ``--cases`` lists them) the source is re-encoded twice, alternating:
"before" = the ffmpeg command of ``avalign.preprocess`` before branch clock8 (kept below, verbatim), "after" =
``avalign.preprocess.reencode_mp4``. Reported per kind, output vs source:

- frames: frame count, and the largest |pts difference| over all frames (ffprobe's best_effort_timestamp_time);
- audio: first sample time difference and sample count difference (``loaders.read_audio``, native rate), and the
  content lag: samples by which the output's audio content is presented later than the source's (FFT
  cross-correlation of the two decodes placed on their own timelines; 0 = same clock);
- cost: CPU seconds (user + sys of this process and its children: ffmpeg, and PyAV's probes for "after") and
  wall seconds, medians over ``--repeats`` alternating runs.

With ``--sample-data`` it also re-encodes ``sample_data/clip0*`` both ways and prints ``avalign measure``'s A/V
offset of the source, "before" and "after", next to the generator's truth.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 .venv/bin/python scripts/bench_reencode_clock.py --repeats 3 --sample-data
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

BEFORE = ["-map", "0:v:0?", "-map", "0:a:0?", "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt",
          "yuv420p", "-threads", "1", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2", "-c:a", "aac", "-b:a", "128k",
          "-map_metadata", "-1", "-fflags", "+bitexact", "-flags:v", "+bitexact", "-flags:a", "+bitexact",
          "-movflags", "+faststart"]
"""The re-encode of ``avalign preprocess`` at main 2ae936f (``_sample._reencode_mp4``), output options."""

VIDEO = ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=30"]
NOISE = "anoisesrc=r={rate}:a=0.3:seed=7"
VFR = ["-vf", "select='lt(n,30)+eq(mod(n,2),0)',setpts='if(lt(N,30),N/30,(30+2*(N-30))/30)/TB'", "-fps_mode", "vfr"]
CASES: dict[str, tuple[str, list[str]]] = {
    # name: (file name, ffmpeg arguments after the inputs' -f lavfi ones are placed by _make)
    "mp4 h264+aac, start 0": ("base.mp4", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "aac"]),
    "mp4 start 5 s": ("start5.mp4", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "aac",
                                     "-output_ts_offset", "5"]),
    "MPEG-TS start 1.4 s": ("start.ts", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "aac"]),
    "mkv start 100000 s": ("start1e5.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "aac",
                                            "-output_ts_offset", "100000"]),
    "mp4 29.97 fps": ("ntsc.mp4", ["-f", "lavfi", "-i", "testsrc=size=64x48:rate=30000/1001", "-f", "lavfi", "-i",
                                   NOISE.format(rate=44100), "-c:a", "aac"]),
    "mp4 VFR (30 then 15 fps)": ("vfr.mp4", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), *VFR,
                                             "-c:a", "aac", "-t", "3"]),
    "mkv VFR + Opus": ("vfr.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), *VFR, "-c:a", "libopus",
                                   "-t", "3"]),
    "mp4 audio starts 0.3 s": ("astart.mp4", [*VIDEO, "-itsoffset", "0.3", "-f", "lavfi", "-i",
                                              NOISE.format(rate=48000), "-c:a", "aac"]),
    "mkv Opus starts 0.3 s": ("astart.mkv", [*VIDEO, "-itsoffset", "0.3", "-f", "lavfi", "-i",
                                             NOISE.format(rate=48000), "-c:a", "libopus"]),
    "webm VP9 + Opus": ("opus.webm", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:v", "libvpx-vp9",
                                      "-c:a", "libopus"]),
    "webm VP9 + Vorbis": ("vorbis.webm", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:v",
                                          "libvpx-vp9", "-c:a", "libvorbis"]),
    "mov PCM starts 10 ms, 16 kHz": ("pcm.mov", [*VIDEO, "-itsoffset", "0.01", "-f", "lavfi", "-i",
                                                 NOISE.format(rate=16000), "-c:a", "pcm_s16le"]),
    "avi MPEG-4 + PCM": ("pcm.avi", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=16000), "-c:v", "mpeg4",
                                     "-c:a", "pcm_s16le"]),
    "mkv MP3": ("mp3.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "libmp3lame"]),
    "mkv AC-3": ("ac3.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "ac3"]),
    "mkv E-AC-3, 44.1 kHz": ("eac3.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=44100), "-c:a", "eac3"]),
    "mkv FLAC": ("flac.mkv", [*VIDEO, "-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "flac"]),
    "mkv PCM starts -50 ms": ("aneg.mkv", [*VIDEO, "-itsoffset", "-0.05", "-f", "lavfi", "-i",
                                           NOISE.format(rate=48000), "-c:a", "pcm_s16le", "-avoid_negative_ts",
                                           "disabled"]),
    "audio only: m4a AAC": ("aonly.m4a", ["-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "aac"]),
    "audio only: wav": ("aonly.wav", ["-f", "lavfi", "-i", NOISE.format(rate=48000)]),
    "audio only: mp3": ("aonly.mp3", ["-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "libmp3lame"]),
    "audio only: ogg Opus": ("aonly.opus", ["-f", "lavfi", "-i", NOISE.format(rate=48000), "-c:a", "libopus"]),
    "video only": ("vonly.mp4", [*VIDEO]),
    "odd size 33x25 (4:4:4)": ("odd.mp4", ["-f", "lavfi", "-i", "testsrc=size=33x25:rate=30", "-f", "lavfi", "-i",
                                           NOISE.format(rate=48000), "-pix_fmt", "yuv444p", "-c:a", "aac"]),
}


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", *args], check=True)


def _make(work: Path, name: str) -> Path:
    file_name, args = CASES[name]
    out = work / file_name
    if not out.exists():
        video_codec = [] if "-c:v" in args or not any("testsrc" in a for a in args) else ["-c:v", "libx264"]
        duration = [] if "-t" in args else ["-t", "2"]
        _ffmpeg(*args, *video_codec, *duration, str(out))
    return out


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _before(src: Path, dst: Path) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-i", str(src), *BEFORE, str(dst)], check=True)


def _after(src: Path, dst: Path) -> dict:
    from avalign.preprocess import reencode_mp4

    result = reencode_mp4(src.read_bytes(), label=src.name, timeout_seconds=120)
    dst.write_bytes(result.data)
    return result.record()


def _frame_times(path: Path) -> np.ndarray:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_frames", "-show_entries",
                                   "frame=best_effort_timestamp_time", "-of", "json", str(path)])
    return np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in json.loads(out)["frames"]])


def _audio(path: Path, rate=None):
    import loaders

    try:
        return loaders.read_audio(str(path), sample_rate=rate)
    except loaders.DecodeError:
        return None


def content_lag_samples(src, out) -> int:
    """Samples by which ``out``'s content is presented later than ``src``'s (both AudioClips, same rate)."""
    rate = src.sample_rate
    x = src.samples[0].numpy().astype(np.float64)
    y = out.samples[0].numpy().astype(np.float64)
    offset = round((out.start_seconds - src.start_seconds) * rate)
    n = 1 << (len(x) + len(y)).bit_length()
    c = np.fft.irfft(np.fft.rfft(x, n).conj() * np.fft.rfft(y, n), n)
    k = int(np.argmax(c))
    return (k if k < n // 2 else k - n) + offset


def _clock(src: Path, out: Path) -> dict:
    row = {}
    a, b = _frame_times(src), _frame_times(out)
    if a.size or b.size:
        row["frames"] = f"{b.size}"
        row["max |Δpts| ms"] = (f"{np.nanmax(np.abs(a - b)) * 1000:.3f}" if a.size == b.size and a.size else "n/a")
        row["first pts s"] = f"{b[0]:.4f}" if b.size else "n/a"
    sa = _audio(src)
    sb = _audio(out, sa.sample_rate) if sa is not None else None
    if sa is not None and sb is not None:
        row["audio start Δ ms"] = f"{(sb.start_seconds - sa.start_seconds) * 1000:+.3f}"
        row["samples Δ"] = f"{sb.samples.shape[1] - sa.samples.shape[1]:+d}"
        row["content lag (samples)"] = f"{content_lag_samples(sa, sb):+d}"
    return row


def _measure(path: Path) -> float:
    import avalign

    return avalign.measure(str(path))["av_offset_ms"]


def _cost(paths: list[Path], repeats: int) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-reencode-") as tmp:
        work = Path(tmp)
        _after(paths[0], work / "warm-up.mp4")
        print("| media | CPU s before | CPU s after | ratio | wall s before | wall s after | bytes before | bytes after |")
        print("|---|---|---|---|---|---|---|---|")
        for path in paths:
            cpu, wall, size = {"before": [], "after": []}, {"before": [], "after": []}, {}
            for _ in range(repeats):
                for variant in ("before", "after"):
                    dst = work / f"{variant}.mp4"
                    cpu0, t0 = _cpu(), time.perf_counter()
                    _before(path, dst) if variant == "before" else _after(path, dst)
                    cpu[variant].append(_cpu() - cpu0)
                    wall[variant].append(time.perf_counter() - t0)
                    size[variant] = dst.stat().st_size
            b, a = statistics.median(cpu["before"]), statistics.median(cpu["after"])
            print(f"| {path.name} | {b:.3f} | {a:.3f} | {a / b:.2f} | {statistics.median(wall['before']):.3f} | "
                  f"{statistics.median(wall['after']):.3f} | {size['before']} | {size['after']} |", flush=True)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cases", action="store_true", help="list the case names and exit")
    parser.add_argument("--only", action="append", default=[], help="run only these cases (repeatable)")
    parser.add_argument("--sample-data", action="store_true", help="also avalign measure sample_data/clip0*")
    parser.add_argument("--cost", nargs="+", metavar="MEDIA", help="only the cost: re-encode these files before / "
                        "after alternately, --repeats times each; medians of CPU and wall seconds")
    args = parser.parse_args()
    if args.cost:
        return _cost([Path(p) for p in args.cost], args.repeats)
    if args.cases:
        print("\n".join(CASES))
        return 0
    names = args.only or list(CASES)
    with tempfile.TemporaryDirectory(prefix="bench-reencode-") as tmp:
        work = Path(tmp)
        warm = _make(work, names[0])
        _after(warm, work / "warm-up.mp4")  # imports PyAV and avalign once, outside the timed runs
        rows = []
        for name in names:
            src = _make(work, name)
            cost = {"before": ([], []), "after": ([], [])}
            record = None
            for _ in range(args.repeats):
                for variant in ("before", "after"):
                    dst = work / f"{src.name}.{variant}.mp4"
                    cpu0, t0 = _cpu(), time.perf_counter()
                    if variant == "before":
                        _before(src, dst)
                    else:
                        record = _after(src, dst)
                    cost[variant][0].append(_cpu() - cpu0)
                    cost[variant][1].append(time.perf_counter() - t0)
            source_pts = _frame_times(src)
            row = {"case": name, "audio": record["audio"] or "-",
                   "source": f"{source_pts.size} frames from {source_pts[0]:.4f} s" if source_pts.size else "no video",
                   "before": _clock(src, work / f"{src.name}.before.mp4"),
                   "after": _clock(src, work / f"{src.name}.after.mp4"),
                   "deltas ms": (record["video_start_delta_ms"], record["audio_start_delta_ms"]),
                   "cpu s": (statistics.median(cost["before"][0]), statistics.median(cost["after"][0])),
                   "wall s": (statistics.median(cost["before"][1]), statistics.median(cost["after"][1]))}
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
        keys = ["frames", "max |Δpts| ms", "first pts s", "audio start Δ ms", "samples Δ", "content lag (samples)"]
        print("\n| source | frames | audio after | " + " | ".join(f"{k} before / after" for k in keys)
              + " | align.json reencode start delta ms (video, audio) | CPU s before → after | wall s before → after |")
        print("|" + "---|" * (len(keys) + 6))
        for row in rows:
            cells = []
            for k in keys:
                b, a = row["before"].get(k, "-"), row["after"].get(k, "-")
                cells.append(f"{b} / {a}")
            print(f"| {row['case']} | {row['source']} | {row['audio']} | " + " | ".join(cells)
                  + f" | {row['deltas ms'][0]}, {row['deltas ms'][1]}"
                  + f" | {row['cpu s'][0]:.3f} → {row['cpu s'][1]:.3f} | {row['wall s'][0]:.3f} → {row['wall s'][1]:.3f} |")
        if args.sample_data:
            truth = json.loads((REPO / "sample_data" / "truth.json").read_text())["clips"]
            print("\n| clip | truth av_offset_ms | source | before | after |\n|---|---|---|---|---|")
            for key, clip in sorted(truth.items()):
                src = REPO / "sample_data" / clip["media"]
                _before(src, work / f"{key}.before.mp4")
                _after(src, work / f"{key}.after.mp4")
                values = [_measure(p) for p in (src, work / f"{key}.before.mp4", work / f"{key}.after.mp4")]
                print(f"| {clip['media']} | {clip['av_offset_ms']} | " + " | ".join(
                    "null" if v is None else f"{v:.1f}" for v in values) + " |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
