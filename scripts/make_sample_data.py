#!/usr/bin/env python
"""Generate synthetic clips with exact ground truth (``sample_data/`` or a benchmark set).

    python scripts/make_sample_data.py --out sample_data            # the committed set (6 clips)
    python scripts/make_sample_data.py --out /tmp/bench --random 50 # a varied benchmark set

Every ffmpeg/ffprobe command is logged (``ffmpeg: ...``) as it runs; the recipe is in
``avalign/synth/_clip.py``:

    video  ffmpeg -f rawvideo -pix_fmt rgb24 -s 160x120 -framerate FPS -i pipe:0 [-vf setpts=... -fps_mode vfr]
                  <libx264 | libvpx-vp9 | mpeg4 -bf 2> -threads 1 -an -map_metadata -1 -fflags +bitexact
                  -flags +bitexact KEY.video-only.EXT
    mux    ffmpeg -i KEY.video-only.EXT [-itsoffset S] -f f32le -ar SR -ac 1 -i KEY.audio.f32 -map 0:v:0 -map 1:a:0
                  -c:v copy <aac | libopus | pcm_s16le> -ar SR -map_metadata -1 -fflags +bitexact KEY.EXT
    oracle ffprobe -v error -select_streams v:0 -show_frames -show_entries
                  frame=best_effort_timestamp_time,pts_time,pkt_dts_time,key_frame,duration_time -of json KEY.EXT
           ffprobe -v error -show_streams -show_format -of json KEY.EXT
"""
from __future__ import annotations

import argparse
import logging
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from avalign.synth import random_specs, sample_specs, write_dataset  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="output directory")
    parser.add_argument("--seed", type=int, default=0, help="seed of the clip specs (default 0)")
    parser.add_argument("--random", type=int, default=0, metavar="N",
                        help="write N random clips instead of the committed set")
    parser.add_argument("--clips-per-shard", type=int, default=3)
    parser.add_argument("-v", "--verbose", action="store_true", help="log every ffmpeg command")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    if not args.verbose:
        logging.getLogger("avalign.synth._clip").setLevel(logging.WARNING)
    specs = random_specs(args.seed, args.random) if args.random else sample_specs(args.seed)
    command = "python scripts/make_sample_data.py " + shlex.join(
        ["--out", args.out.name, "--seed", str(args.seed)] + (["--random", str(args.random)] if args.random else []))
    generator = {"seed": args.seed, "command": command, "random": args.random,
                 "clock_model": "a = t*(1+drift_ppm*1e-6) + av_offset_ms/1000; stamp = a + text_offset_ms/1000",
                 "words_timeline": "video", "beep_timeline": "audio presentation"}
    write_dataset(specs, args.out, generator=generator, clips_per_shard=args.clips_per_shard)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
