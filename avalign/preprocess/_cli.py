"""The ``avalign preprocess`` subcommand: parse arguments and call :func:`avalign.preprocess.preprocess`.

Wired into ``avalign/cli.py`` with::

    from avalign.preprocess._cli import add_parser as _add_preprocess_parser
    _add_preprocess_parser(sub)            # in build_parser(), after the other subcommands
"""
from __future__ import annotations

import argparse
import json
import logging
import sys

from avalign._cli_common import (DEFAULT_MAX_PIXELS, check_local_input, display_path, error_document, error_reason,
                                 limit_seconds, positive_int, positive_seconds)

logger = logging.getLogger(__name__)

__all__ = ["add_parser", "format_result", "no_input_message", "run_command"]

EPILOG = """examples:
  avalign preprocess clips/ out/                             # media + same-stem .srt/.vtt/.json/.TextGrid (or .en.vtt)
  avalign preprocess clips/talk.mp4 out/                     # one clip (and clips/talk.srt, if there): one sample
  avalign preprocess 'v2d/{00000..00009}.tar' out/ --workers 8 --samples-per-shard 500
  avalign preprocess s3://bucket/shards/data-{000..099}.tar out/ --backend ray --ray-address auto
  avalign preprocess clips/ out/ --dry-run                   # list the shards and keys, write nothing
  avalign preprocess clips/ out/                             # rerun after a crash: complete shards are kept

output: out/shard-000000.tar … (<key>.<media>, <key>.align.json, <key>.frames.json, <key>.transcript.json),
out/manifest.jsonl (key, shard, duration: seconds, num_frames, num_samples: audio samples at --sample-rate (0: no
audio; --json's num_samples counts the samples written, clips), num_words, media_ext, source; num_words counts
the transcript's words: align.json's "words" lists only those placed on the timeline, so a caption forced alignment
could not split, counted in num_words, is in align.json's "segments" only and in its caption_words_failed),
out/skipped.jsonl (input, key, reason: decode, missing_audio, too_large, transcript, unsafe_name, duplicate_key,
truncated…), out/state.jsonl (resume state). A shard whose every sample is skipped is not written (the summary
names it; its skips are in skipped.jsonl). Same inputs and options give byte-identical shards for any --workers.
exit: 0 done, 1 no sample written (empty input, only broken files), 2 error.
"""


def _call(preprocess, args: argparse.Namespace):
    return preprocess(
        args.input,
        args.output_dir,
        workers=args.workers,
        backend=args.backend,
        ray_address=args.ray_address,
        samples_per_shard=args.samples_per_shard,
        sample_rate=args.sample_rate,
        reencode=args.reencode,
        dry_run=args.dry_run,
        on_error=args.on_error,
        progress=not args.no_progress,
        timeout_seconds=args.timeout if args.timeout > 0 else None,
        max_pixels=args.max_pixels,
        max_duration_seconds=args.max_duration,
        decoder_threads=args.decoder_threads,
    )


def run_command(args: argparse.Namespace) -> int:
    """Handler: one call to ``preprocess``, then a summary (or JSON) on stdout."""
    check_local_input(args.input)  # a typo fails in milliseconds, not after loading torch
    from avalign.preprocess._run import preprocess

    try:
        result = _call(preprocess, args)
    except ImportError as e:  # ray missing; OSError, ValueError… are reported by avalign.cli.main (and --json's error)
        print(f"avalign preprocess: error: {e}", file=sys.stderr)
        if args.json:
            print(error_document("preprocess", file=None, reason=error_reason(e), message=str(e), exit_code=2))
        return 2
    found_none = not result.shards and result.num_skipped == 0  # nothing in INPUT looked like a sample
    if args.json:
        document = {k: (list(v) if isinstance(v, tuple) else v) for k, v in result.__dict__.items()}
        if found_none:
            document["error"] = {"command": "preprocess", "file": args.input, "reason": "no_sample",
                                 "message": no_input_message(args.input), "exit_code": 1}
        elif not result.dry_run and result.num_samples == 0:  # exit 1 below: the one document says why
            document["error"] = {"command": "preprocess", "file": args.input, "reason": "no_sample",
                                 "message": f"no sample was written ({result.num_skipped} input(s) skipped, see "
                                            f"{display_path(result.output_dir, 'skipped.jsonl')})", "exit_code": 1}
        elif result.dry_run and not result.keys_by_shard:
            document["error"] = {"command": "preprocess", "file": args.input, "reason": "no_sample",
                                 "message": "INPUT holds no sample to process", "exit_code": 1}
        print(json.dumps(document, indent=2))
    elif found_none:
        pass  # the error below says it all
    elif result.dry_run:
        for name in result.shards:
            state = "done" if name in result.shards_reused else "empty" if name in result.shards_empty else "to do"
            keys = result.keys_by_shard.get(name, [])
            print(f"{name}  {state:6}  {len(keys)} sample(s): {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''}")
        print(f"{len(result.shards_written)} shard(s) to write, {len(result.shards_reused)} already complete, "
              f"{result.num_skipped} input(s) skipped up front (dry run: nothing written)")
    else:
        print(format_result(result))
    if found_none:
        print(f"avalign preprocess: error: {no_input_message(args.input)}", file=sys.stderr)
        return 1
    if not result.dry_run and result.num_samples == 0:
        print(f"avalign preprocess: error: no sample was written ({result.num_skipped} input(s) skipped, see "
              f"{display_path(result.output_dir, 'skipped.jsonl')}); hint: every input was skipped: the reason of "
              "each (a file that does not decode, a missing media member, ...) is in skipped.jsonl", file=sys.stderr)
        return 1
    if result.dry_run and not result.keys_by_shard:
        print("avalign preprocess: error: INPUT holds no sample to process", file=sys.stderr)
        return 1
    return 0


def no_input_message(source: str) -> str:
    """What to say when ``source`` holds nothing that could become a sample (an empty directory, one of only
    unrelated files, shards without members)."""
    from avcore import MEDIA_EXTENSIONS

    return (f"no samples found in {source!r}: no media file or shard member to process; hint: INPUT must be a "
            f"directory of media files ({', '.join('.' + e for e in MEDIA_EXTENSIONS)}) with same-stem transcripts, "
            "one media file, or WebDataset .tar shards")


def format_result(result) -> str:
    """One line: shards written and reused, samples, skips, and the throughput of this run's own work
    (media of shards reused from an earlier run is not counted as processed)."""
    empty = (f", {len(result.shards_empty)} not written: every sample skipped ({', '.join(result.shards_empty[:3])}"
             f"{' …' if len(result.shards_empty) > 3 else ''})" if result.shards_empty else "")
    line = (f"{display_path(result.output_dir)}: {len(result.shards)} shard(s) ({len(result.shards_written)} written, "
            f"{len(result.shards_reused)} reused{empty}), {result.num_samples} sample(s), {result.num_skipped} skipped "
            f"(see skipped.jsonl); ")
    processed = result.media_seconds_processed
    if not result.shards:
        return line + "nothing processed: the input holds no sample"
    if not result.shards_written and result.shards_reused:
        return line + f"nothing processed: all {result.media_seconds:.1f} s of media reused from an earlier run"
    rate = processed / result.wall_seconds if result.wall_seconds > 0 else 0.0
    line += f"processed {processed:.1f} s of media in {result.wall_seconds:.1f} s ({rate:.1f}x realtime)"
    if result.shards_reused:
        line += f"; {result.media_seconds - processed:.1f} s reused, not counted"
    return line


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``preprocess`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``)."""
    parser = subparsers.add_parser(
        "preprocess",
        help="measure every clip once and write aligned WebDataset shards",
        description=(
            "Decode every sample of INPUT once, estimate its A/V offset, drift and transcript offset, and write "
            "WebDataset shards whose samples carry align.json (the `avalign measure` record), frames.json and a "
            "normalised transcript.json, so training only decodes. Shards appear atomically; a rerun resumes."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", help="directory of media + sidecar transcripts, one media file, or shards (path, {..} "
                                      "pattern, URL)")
    parser.add_argument("output_dir", help="where shards, manifest.jsonl and skipped.jsonl go (not inside INPUT)")
    parser.add_argument("--backend", choices=["local", "ray"], default="local", help="local processes or Ray (default local)")
    parser.add_argument("--workers", type=positive_int, default=1,
                        help="parallel processes (default 1): local, each sample is measured in its own worker "
                             "process, so one shard of 100 samples keeps N workers busy; shards are still written "
                             "in order by the main process. Ray: CPUs of a local instance, one task per shard")
    parser.add_argument("--ray-address", default=None, help="Ray cluster address (default: start a local instance)")
    parser.add_argument("--samples-per-shard", type=positive_int, default=100, help="samples per output shard (default 100)")
    parser.add_argument("--sample-rate", type=positive_int, default=16000, help="rate for sample indices (default 16000)")
    parser.add_argument("--reencode", choices=["mp4"], default=None,
                        help="re-encode media to H.264 MP4 on the source's clock: AAC/AC-3/E-AC-3 audio copied, "
                             "other audio to AAC (default: keep bytes)")
    parser.add_argument("--on-error", choices=["skip", "raise"], default="skip",
                        help="skip bad samples into skipped.jsonl (default) or stop at the first")
    parser.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                        help=f"skip media whose frames have more than N pixels (width x height) as too_large "
                             f"(default {DEFAULT_MAX_PIXELS} = 3840x2160)")
    parser.add_argument("--max-duration", type=positive_seconds, default=None, metavar="SECONDS",
                        help="skip media whose video or audio spans longer as too_large (default: no limit)")
    parser.add_argument("--decoder-threads", type=int, default=None, metavar="N",
                        help="FFmpeg threads per video decode (0: FFmpeg's choice, one per core; default: each "
                             "worker's share of the cores). The output does not depend on it")
    parser.add_argument("--timeout", type=limit_seconds, default=300.0, help="seconds per sample before giving up (0: none; default 300); a rerun tries a timed-out "
                        "sample again")
    parser.add_argument("--dry-run", action="store_true", help="list what would be done; write nothing")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar with ETA on a terminal, else a line every 10 s on stderr)")
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    parser.set_defaults(func=run_command)
    return parser
