"""Adversarial round three, the media part: containers, codecs, sizes and time layouts made with ffmpeg, each
decoded by ``read_video`` / ``read_audio`` and checked against the ffmpeg tools (ffprobe's frame times, the ffmpeg
CLI's decoded sample count), then all of them through ``make_loader`` in shards (delivered or skipped with a
reason, nothing silent). Prints one JSON object; results go in BENCHMARKS.md ("Adversarial round three").

    PYTHONPATH=$PWD python scripts/adversarial_round3.py [--work DIR]

The scenario cases of the round (resume on changed shards, more ranks than shards, tokenizers, tars written by
extension, ...) are regression tests in ``tests/test_adversarial_round3.py``.
"""
from __future__ import annotations

import argparse
import io
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

V = ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=2"]
A = ["-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000:duration=2"]
CLIPS: dict[str, list[str]] = {
    "h264_aac.mp4": V + A + ["-c:v", "libx264", "-c:a", "aac"],
    "vp9_opus.webm": V + A + ["-c:v", "libvpx-vp9", "-b:v", "200k", "-c:a", "libopus"],
    "mpeg4_mp3.avi": V + A + ["-c:v", "mpeg4", "-c:a", "libmp3lame"],
    "h264_pcm.mov": V + A + ["-c:v", "libx264", "-c:a", "pcm_s16le"],
    "h264_ac3.mkv": V + A + ["-c:v", "libx264", "-c:a", "ac3"],
    "aac_44k.mp4": V + ["-f", "lavfi", "-i", "sine=sample_rate=44100:duration=2", "-c:v", "libx264", "-c:a", "aac"],
    "pcm_8k.mkv": V + ["-f", "lavfi", "-i", "sine=sample_rate=8000:duration=2", "-c:v", "libx264", "-c:a", "pcm_s16le"],
    "aac_5.1.mp4": V + A + ["-af", "pan=5.1|c0=c0|c1=c0|c2=c0|c3=c0|c4=c0|c5=c0", "-c:v", "libx264", "-c:a", "aac"],
    "1x1.mkv": ["-f", "lavfi", "-i", "color=c=red:s=16x16:r=25:d=1", "-vf", "scale=1:1", "-c:v", "ffv1"],
    "4097x3.mkv": ["-f", "lavfi", "-i", "color=s=4100x4:r=25:d=0.4", "-vf", "scale=4097:3", "-c:v", "ffv1"],
    "161x121_444.mp4": ["-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=1", "-vf", "scale=161:121", "-c:v",
                        "libx264", "-pix_fmt", "yuv444p"],
    "one_frame.mp4": ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=0.04", "-c:v", "libx264"],
    "0.05s.mp4": ["-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25:duration=0.05", "-f", "lavfi", "-i",
                  "sine=sample_rate=48000:duration=0.05", "-c:v", "libx264", "-c:a", "aac"],
    "bframes.mp4": V + A + ["-c:v", "libx264", "-bf", "3", "-g", "12", "-c:a", "aac"],
    "open_gop.mp4": V + A + ["-c:v", "libx264", "-x264-params", "open-gop=1:keyint=10", "-bf", "2", "-c:a", "aac"],
    "vfr.mkv": V + ["-vf", "setpts='if(lt(N,25),N*2,N*2+25)/TB/50'", "-fps_mode", "vfr", "-c:v", "libx264"],
    "fragmented.mp4": V + A + ["-c:v", "libx264", "-c:a", "aac", "-movflags", "frag_keyframe+empty_moov"],
    "mpeg2_mp2.ts": V + A + ["-c:v", "mpeg2video", "-c:a", "mp2"],
    "mpeg1.mpg": V + A + ["-c:v", "mpeg1video", "-c:a", "mp2"],
    "h264.3gp": V + A + ["-c:v", "libx264", "-c:a", "aac", "-ar", "44100"],
    "flv1.flv": V + A + ["-c:v", "flv1", "-c:a", "libmp3lame", "-ar", "44100"],
    "wmv2.wmv": V + A + ["-c:v", "wmv2", "-c:a", "wmav2"],
    "theora.ogv": V + A + ["-c:v", "libtheora", "-c:a", "libvorbis"],
    "opus_only.ogg": A + ["-c:a", "libopus"],
    "aac_only.m4a": A + ["-c:a", "aac"],
    "video_only.mp4": V + ["-c:v", "libx264"],
}
REMUX: dict[str, tuple[str, list[str], list[str]]] = {  # name: (source clip, input options, output options)
    "start_5s.mp4": ("h264_aac.mp4", ["-itsoffset", "5"], ["-c", "copy"]),
    "start_negative.mp4": ("h264_aac.mp4", ["-itsoffset", "-1"], ["-c", "copy"]),
    "edit_list.mp4": ("h264_aac.mp4", ["-ss", "0.5"], ["-c", "copy"]),
    "start_100000s.mkv": ("h264_aac.mp4", [], ["-c", "copy", "-output_ts_offset", "100000"]),
    "rotate90.mp4": ("h264_aac.mp4", [], ["-c", "copy", "-metadata:s:v:0", "rotate=90"]),  # display matrix 90
}


def _ffmpeg(*args: str) -> None:
    subprocess.run(["ffmpeg", "-v", "error", "-y", *args], check=True)


def _ffprobe_times(path: Path) -> list[float]:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_frames", "-show_entries",
                          "frame=best_effort_timestamp_time", "-of", "json", str(path)], capture_output=True, text=True)
    frames = json.loads(out.stdout or "{}").get("frames", [])
    return [float(f["best_effort_timestamp_time"]) for f in frames if "best_effort_timestamp_time" in f]


def _ffprobe_rotation(path: Path) -> int:
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream_side_data=rotation",
                          "-of", "csv=p=0", str(path)], capture_output=True, text=True).stdout.strip()
    return int(float(out.split(",")[0])) if out else 0


def _ffmpeg_num_samples(path: Path) -> int:
    out = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-vn", "-ac", "1", "-f", "s16le", "-"],
                         capture_output=True)
    return len(out.stdout) // 2


def check_clip(path: Path) -> dict:
    import numpy as np

    import loaders

    row: dict = {"clip": path.name}
    truth = _ffprobe_times(path)
    try:
        video = loaders.read_video(str(path))
        pts = video.pts_seconds.numpy()
        row["frames"], row["height_width"] = len(pts), list(video.frames.shape[1:3])
        if _ffprobe_rotation(path):  # players (and the ffmpeg CLI) show the frames rotated by this
            row["rotation_ffprobe"] = _ffprobe_rotation(path)
            row["rotation_applied"] = video.metadata.rotation_degrees == _ffprobe_rotation(path) % 360
        row["pts_equal_ffprobe"] = len(pts) == len(truth) and bool(np.array_equal(pts, np.array(truth)))
    except loaders.DecodeError as e:
        row["video"] = e.reason
        row["pts_equal_ffprobe"] = not truth  # no video stream: ffprobe has no frames either
    try:
        audio = loaders.read_audio(str(path))
        row["samples"] = int(audio.samples.shape[-1])
        row["samples_ffmpeg_cli"] = _ffmpeg_num_samples(path)
    except loaders.DecodeError as e:
        row["audio"] = e.reason
    return row


def loader_epoch(paths: list[Path], work: Path) -> dict:
    import loaders

    shards = []
    for index in range(0, len(paths), 8):
        shard = work / f"shard-{index // 8:06d}.tar"
        with tarfile.open(shard, "w") as tar:
            for path in paths[index:index + 8]:
                key = path.name.replace(".", "_")  # one key per clip, whatever its name
                for name, data in ((f"{key}.{path.suffix[1:]}", path.read_bytes()), (f"{key}.txt", b"a caption")):
                    info = tarfile.TarInfo(name)
                    info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
        shards.append(str(shard))
    loader = loaders.make_loader(shards, seed=0, num_workers=2, frame_size=(32, 32), budgets=(300, 160_000, 64))
    delivered = {key.split("@")[0] for batch in loader for key in batch.sample_keys}
    skipped = {key: reason for _, key, reason in loader.stats.skipped_samples}
    keys = {p.name.replace(".", "_") for p in paths}
    return {"samples": len(keys), "delivered": len(delivered), "skipped": skipped,
            "silent_losses": sorted(keys - delivered - set(skipped))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", help="where the clips are made (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="avalign-round3-") as tmp:
        work = Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        for name, ffmpeg_args in CLIPS.items():
            _ffmpeg(*ffmpeg_args, str(work / name))
        for name, (source, before, after) in REMUX.items():
            _ffmpeg(*before, "-i", str(work / source), *after, str(work / name))
        paths = [work / name for name in [*CLIPS, *REMUX]]
        rows = [check_clip(path) for path in paths]
        print(json.dumps({"clips": rows, "loader": loader_epoch(paths, work),
                          "pts_mismatches": [r["clip"] for r in rows if not r["pts_equal_ffprobe"]],
                          "sample_count_mismatches": [r["clip"] for r in rows
                                                      if "samples" in r and r["samples"] != r["samples_ffmpeg_cli"]],
                          "rotated_not_applied": [r["clip"] for r in rows
                                                  if r.get("rotation_ffprobe") and not r.get("rotation_applied")]},
                         indent=1))


if __name__ == "__main__":
    main()
