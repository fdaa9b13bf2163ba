"""The ``avalign`` command: parses arguments, sets up logging, calls one library function per subcommand."""
from __future__ import annotations

import argparse
import errno
import json
import logging
import os
import sys
import traceback
from typing import Optional, Sequence

from avalign._cli_common import (DEFAULT_MAX_PIXELS, MAX_OFFSET_MS, MAX_SEARCH_OFFSET_MS, MEDIA_HINT, SHARD_SUFFIXES,
                                 TRANSCRIPT_FORMATS,
                                 check_local_input, cli_message, display_path, error_document, error_reason, offset_ms,
                                 positive_int, search_offset_ms)
from avalign._progress import Progress, format_eta

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "MAX_OFFSET_MS",
    "MAX_SEARCH_OFFSET_MS",
    "Progress",
    "SHARD_SUFFIXES",
    "TRANSCRIPT_FORMATS",
    "build_parser",
    "check_local_input",
    "cli_message",
    "display_path",
    "failed_file",
    "format_eta",
    "main",
]

logger = logging.getLogger("avalign")

EPILOG = """examples:
  avalign measure clip.mp4 --transcript clip.srt      # offsets, drift, words on the video timeline
  avalign measure clip.mp4 --json > clip.align.json
  avalign preprocess clips/ out/ --workers 2              # aligned WebDataset shards with align.json
  avalign report clips/ --out report/ --fail-over-ms 60   # HTML/JSON report; exit 1 if a clip is over 60 ms
  avalign demo                                  # the whole pipeline on sample_data/
  avalign demo --data sample_data --json        # the same, as JSON
"""


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * verbose
    if os.environ.get("AVALIGN_LOG"):
        level = getattr(logging, os.environ["AVALIGN_LOG"].upper(), level)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _cmd_demo(args: argparse.Namespace) -> int:
    demo_log = logging.getLogger("avalign._demo")
    if demo_log.getEffectiveLevel() > logging.INFO:  # a line per clip on stderr: tens of seconds say where they are
        demo_log.setLevel(logging.INFO)
    from avalign._demo import format_summary, run_demo

    data = args.data
    if data is None:  # sample_data/ here, else the one of the checkout the package runs from (`pip install -e .`)
        checkout = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample_data")
        data = "sample_data" if os.path.isdir(os.path.join("sample_data", "shards")) or \
            not os.path.isdir(os.path.join(checkout, "shards")) else checkout
    summary = run_demo(data)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


def _cmd_measure(args: argparse.Namespace) -> int:
    if args.text_offset_ms is not None and not args.transcript:
        args.usage_error("--text-offset-ms is the offset of a transcript: give the transcript too (--transcript FILE)")
    check_local_input(args.media, what="media file", hint=MEDIA_HINT, file_only=True,
                      elsewhere="for a directory of clips or shards use `avalign report INPUT --out DIR` or "
                                "`avalign preprocess INPUT OUT_DIR`")
    if args.transcript:
        check_local_input(args.transcript, what="transcript", file_only=True,
                          hint="give one SRT, WebVTT, Whisper/WhisperX JSON, TextGrid or STM file")
    if args.audio:
        check_local_input(args.audio, what="audio file", file_only=True,
                          hint="give the clip's audio as one file (e.g. KEY.wav, KEY.m4a)")
    from avalign._measure import audio_not_read, format_measurement, measure, transcripts_not_read

    record = measure(args.media, transcript=args.transcript, sample_rate=args.sample_rate, text_method=args.text_method,
                     av_offset_ms=args.av_offset_ms, text_offset_ms=args.text_offset_ms,
                     max_offset_ms=args.max_offset_ms,
                     transcript_format=args.transcript_format, audio=args.audio)
    print(json.dumps(record, indent=2) if args.json else format_measurement(record))
    for line in audio_not_read(args.media, audio=args.audio, transcript=args.transcript):  # stderr, as below
        print(f"avalign measure: note: {line}", file=sys.stderr)
    if not args.transcript:  # no text offset, no words: say what was there to read (stderr: --json stays one document)
        for line in transcripts_not_read(args.media, audio=args.audio):
            print(f"avalign measure: note: no --transcript given; {line}", file=sys.stderr)
    return 0


BENCHMARKS = ("decode", "align")
"""What ``avalign bench`` runs (its first argument)."""


def _require_benchmark(args: argparse.Namespace) -> None:
    """``avalign bench`` without a benchmark: a usage error that says what to run (argparse said only "the following
    arguments are required: what, files")."""
    if args.command == "bench" and args.what is None:
        args.usage_error(f"say which benchmark to run: avalign bench {{{','.join(BENCHMARKS)}}}, e.g. `avalign bench "
                         "decode` (decoding speed beside ffmpeg, PyAV, decord, torchcodec) or `avalign bench align "
                         "--num-clips 24` (alignment accuracy on generated clips); `avalign bench --help` for options")


def _cmd_bench(args: argparse.Namespace) -> int:
    bench_log = logging.getLogger("avalign.bench")
    if bench_log.getEffectiveLevel() > logging.INFO:  # its stage lines: minutes of work say where they are (stderr)
        bench_log.setLevel(logging.INFO)
    if args.what == "decode":
        from avalign.bench import LONG_CASES, bench_decode, bench_long, format_decode_table, format_long_table

        if args.long:
            cases = tuple(c for c in args.cases.split(",") if c) if args.cases else LONG_CASES
            result = bench_long(threads=args.threads, repeats=args.repeats, work_dir=args.work_dir, cases=cases)
            print(json.dumps(result, indent=2) if args.json else format_long_table(result))
            return 0
        result = bench_decode(args.files or None, threads=args.threads, repeats=args.repeats)
        print(json.dumps(result, indent=2) if args.json else format_decode_table(result))
        return 0
    if args.what == "align":
        from avalign.bench import bench_align, format_align_table

        if args.calibrate:
            from avalign.bench import calibrate_tune_nulls

            print(json.dumps(calibrate_tune_nulls(args.work_dir or os.path.expanduser("~/.cache/avalign/bench")), indent=2))
            return 0
        result = bench_align(num_clips=args.num_clips, seed=args.seed, work_dir=args.work_dir, real=not args.no_real,
                             cache_dir=args.cache_dir or os.path.expanduser("~/.cache/avalign"), repeats=args.repeats,
                             wild=not args.no_wild)
        print(json.dumps(result, indent=2, default=float) if args.json else format_align_table(result))
        return 0
    raise ValueError(f"unknown benchmark {args.what!r}")


def _format_name(value: str) -> str:
    """``--transcript-format`` in any case (``TextGrid``, ``SRT``); ``webvtt`` is ``vtt``."""
    value = value.lower()
    return "vtt" if value == "webvtt" else value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="avalign",
        description="Load video, audio and text for PyTorch training and put them on one clock.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more logging (-v info, -vv debug)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="run the pipeline on sample_data/ and print what it did",
        description="Read the sample shards, decode video/audio/transcripts with real timestamps and print real figures.",
        epilog="example:\n  avalign demo --data sample_data",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--data", default=None, help="folder with truth.json and shards/ (default: ./sample_data, else "
                                                   "the sample_data/ of the checkout avalign runs from)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(func=_cmd_demo)

    measure = sub.add_parser(
        "measure",
        help="estimate A/V offset, drift and transcript offset of one file",
        description=(
            "Decode MEDIA with real timestamps, estimate the A/V offset and clock drift from its content and the "
            "transcript's offset from speech activity, and print the words on the video timeline with their "
            "frame and sample ranges. Estimates below the confidence threshold are reported as null (abstained, with the "
            "reason); beside an A/V abstention, --json's av_confidence is the best lag's match strength, not a "
            "confidence in the abstention."
        ),
        epilog=(
            "examples:\n  avalign measure clip.mp4\n  avalign measure clip.mkv --transcript clip.vtt --json\n"
            "  avalign measure speech.m4a --transcript speech.json --sample-rate 16000   # audio-only\n"
            "  avalign measure 000042.mp4 --transcript 000042.json --audio 000042.m4a   # audio in its own file\n"
            "  avalign measure talk.mp4 --transcript talk.whisperx.json --text-method forced   # real speech\n"
            "  avalign measure talk.mp4 --transcript talk.srt --text-offset-ms 120   # stamps known 120 ms late"
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    measure.add_argument("media", help="video or audio file")
    measure.add_argument("--transcript", help="SRT, WebVTT, Whisper/WhisperX JSON (also whisper.cpp -oj/-ojf and the "
                         "Hugging Face ASR pipeline's chunks, word-level ones as words), TextGrid or NIST STM file")
    measure.add_argument("--transcript-format", choices=TRANSCRIPT_FORMATS, default=None, type=_format_name,
                         help="the transcript's format when its name does not tell (default: from the suffix, "
                              "else from the content)")
    measure.add_argument("--audio", default=None, metavar="FILE",
                         help="the clip's audio in a separate file (video2dataset's KEY.wav / KEY.m4a beside KEY.mp4), "
                              "read when MEDIA has no audio stream, as preprocess and the loader read it")
    measure.add_argument("--sample-rate", type=positive_int, default=16000, help="rate for sample indices (default 16000)")
    measure.add_argument("--json", action="store_true", help="one JSON object on stdout")
    measure.add_argument("--text-method", choices=("auto", "energy", "forced"), default="auto",
                         help="transcript offset: speech energy, pocketsphinx forced alignment, or auto = energy, then "
                              "forced alignment when energy abstains (default auto; forced needs avalign[align])")
    measure.add_argument("--av-offset-ms", type=offset_ms, default=None,
                         help="known A/V offset (ms, > 0: audio lags; within ±100000000): used instead of estimating "
                              "it (e.g. when the estimator abstains on a talking head)")
    measure.add_argument("--text-offset-ms", type=offset_ms, default=None,
                         help="known transcript offset (ms, > 0: the transcript's stamps are late; within "
                              "±100000000): used instead of estimating it (text_method then says \"given\"); needs "
                              "--transcript")
    measure.add_argument("--max-offset-ms", type=search_offset_ms, default=500.0,
                         help="search range ±MS of the A/V and transcript offset estimators (default 500, at most "
                              "10000)")
    measure.set_defaults(func=_cmd_measure, usage_error=measure.error)

    bench = sub.add_parser(
        "bench",
        help="measure speed side by side with ffmpeg, PyAV, decord and torchcodec",
        description="Benchmarks; every figure is a median of repeated runs, ratios are from one run.",
        usage="%(prog)s {decode,align} [files ...] [options]",
        epilog="examples:\n  avalign bench decode                      # generates a 720p and a 30 s clip\n"
        "  avalign bench align --num-clips 24         # generated clips with known truth + real media\n"
        "  avalign bench decode full.mp4 long.mp4 --threads 2 --repeats 5\n"
        "  avalign bench decode --long --work-dir /tmp/bench  # 600 s files, every peer interleaved",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bench.add_argument("what", nargs="?", choices=BENCHMARKS, help="which benchmark (required)")
    bench.add_argument("files", nargs="*", help="decode: FULL_FILE [SPARSE_FILE, over 10 s: 8 frames at 1 fps from 10 s; "
                       "default: FULL_FILE] (default: generated clips)")
    bench.add_argument("--threads", type=int, default=2, help="decoder threads for every tool (default 2)")
    bench.add_argument("--repeats", type=int, default=5, help="runs per figure; the median is reported")
    bench.add_argument("--json", action="store_true", help="print JSON instead of tables")
    bench.add_argument("--long", action="store_true",
                       help="decode: issue #17's table: 600 s files: sparse 8-of-10 s (+224x224), 1 fps, 48/44.1 kHz AAC -> "
                            "16 kHz mono; full decode 720p 60 s and 1080p 20 s; read_video with each backend (tools interleaved)")
    bench.add_argument("--cases", default=None,
                       help="decode --long: comma-separated subset of sparse,audio,full,one_fps (default: all)")
    bench.add_argument("--num-clips", type=int, default=24, help="align: generated clips (default 24)")
    bench.add_argument("--seed", type=int, default=2026, help="align: seed of the generated set")
    bench.add_argument("--work-dir", default=None, help="align, decode --long: where clips are generated (reused when present)")
    bench.add_argument("--cache-dir", default=None, help="align: fetched real media (default ~/.cache/avalign)")
    bench.add_argument("--no-real", action="store_true", help="align: skip the real-media checks (offline)")
    bench.add_argument("--no-wild", action="store_true", help="align: skip the wild tune / held-out sets")
    bench.add_argument("--calibrate", action="store_true",
                       help="align: print the null-pairing threshold derived on the wild and mouth-speech tune clips, and stop")
    bench.set_defaults(func=_cmd_bench, usage_error=bench.error)

    from avalign.preprocess import add_parser as add_preprocess_parser  # both light: no torch, no matplotlib
    from avalign.report import add_parser as add_report_parser

    add_preprocess_parser(sub)
    add_report_parser(sub)
    return parser


def _brace_pattern(paths: Sequence[str]) -> Optional[str]:
    """The one brace pattern that names exactly ``paths`` (``shards/train-{000000..000002}.tar`` for the three shards
    ``shards/train-000000.tar`` … ``-000002.tar``, as the shell expanded it), or None when no single pattern does:
    another folder, prefix, suffix or digit count, a gap in the numbers, a repeat."""
    import re

    parts = [re.fullmatch(r"(.*?)(\d+)((?:\.tar)(?:\.gz|\.bz2|\.xz)?|\.tgz)", p) for p in paths]
    if len(paths) < 2 or not all(parts):
        return None
    prefixes = {(m.group(1), m.group(3), len(m.group(2))) for m in parts}
    numbers = sorted(int(m.group(2)) for m in parts)
    if len(prefixes) != 1 or numbers != list(range(numbers[0], numbers[0] + len(numbers))):
        return None
    ((prefix, suffix, width),) = prefixes
    return f"{prefix}{{{numbers[0]:0{width}d}..{numbers[-1]:0{width}d}}}{suffix}"


def _hint_unquoted_pattern(argv: Sequence[str], code: object) -> None:
    """After a usage error: when ``preprocess`` / ``report`` got several ``.tar`` arguments, say that the shell expanded
    an unquoted pattern (argparse said only "unrecognized arguments: …"), and what to pass instead: the brace pattern
    that names exactly those shards, or their directory (a quoted glob is refused: INPUT expands no glob)."""
    command = next((a for a in argv if a in ("preprocess", "report")), None)
    shards = [a for a in argv if a.endswith((".tar", ".tar.gz")) and not a.startswith("-")]
    if code in (0, None) or command is None or len(shards) < 2:
        return
    folder = os.path.dirname(shards[0]) or "."
    pattern = _brace_pattern(shards)
    instead = (f"'{pattern}' (the brace pattern of exactly these {len(shards)}), or their directory ({folder})" if pattern
               else f"their directory ({folder}) or a brace pattern (e.g. "
                    f"'{os.path.join(folder, 'shard-{000000..000005}.tar')}')")
    print(f"avalign {command}: hint: {len(shards)} shard paths were given ({shards[0]}, {shards[1]}, …): a pattern "
          f"such as {os.path.join(folder, '*.tar')} left unquoted is expanded by the shell into several arguments, and "
          f"INPUT is one. Pass {instead}; a glob is not expanded, even quoted.", file=sys.stderr)


def _hint_out_option(argv: Sequence[str], code: object) -> None:
    """After a usage error: ``preprocess`` given ``report``'s ``--out DIR`` (argparse took DIR for OUTPUT_DIR and said
    only "unrecognized arguments: --out", under the top-level usage)."""
    command = next((a for a in argv if a in _COMMANDS), None)
    out = next((i for i, a in enumerate(argv) if a == "--out" or a.startswith("--out=")), None)
    if code in (0, None) or command != "preprocess" or out is None:
        return
    given = argv[out].partition("=")[2] or (argv[out + 1] if out + 1 < len(argv) else "OUTPUT_DIR")
    print(f"avalign preprocess: hint: the output directory is preprocess's second argument, not an option: "
          f"`avalign preprocess INPUT {given}` (`avalign report INPUT --out DIR` is the one with --out)", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run one subcommand; return its exit status.

    A command run with ``--json`` prints exactly one JSON document on stdout whatever happens: its result, or
    (exit status non-zero) :func:`avalign._cli_common.error_document` naming the file and the reason, while
    stderr carries the same message for a person. Only a stdout that cannot be written (a closed pipe, a full
    disk) gets nothing.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = build_parser().parse_args(argv)
        _require_benchmark(args)
    except SystemExit as e:  # a usage error: argparse has explained it on stderr
        _hint_unquoted_pattern(argv, e.code)
        _hint_out_option(argv, e.code)
        if e.code not in (0, None) and "--json" in argv:
            command = next((a for a in argv if a in _COMMANDS), None)
            _print_json_error(command, None, "usage", "invalid arguments (see the usage message on stderr)",
                              int(e.code) if isinstance(e.code, int) else 2)
        raise
    _setup_logging(args.verbose)
    json_out = bool(getattr(args, "json", False))
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:  # `avalign measure x --json | head -1`: the reader left; nothing more to say
        _detach_stdout()
        return 141
    except (OSError, ValueError, IndexError) as e:  # OSError: a full disk (ENOSPC/EFBIG), a read-only output…
        full = isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)
        hinted = "free space" in str(e).lower()  # the writer's own message already says what to do
        hint = "; hint: the disk (or a file-size limit) is full: what was written is incomplete; free space and rerun" \
            if full and not hinted else ""
        message = f"{cli_message(str(e))}{hint}"
        print(f"avalign {args.command}: error: {message}", file=sys.stderr)
        if json_out:  # detaches stdout itself if stdout is what failed
            about_output = full or isinstance(e, BlockingIOError)  # the output is full, or locked by another run
            output = getattr(args, "output_dir", None) or getattr(args, "out", None)
            file = output if about_output and output and not getattr(e, "filename", None) else failed_file(args, e)
            _print_json_error(args.command, file, error_reason(e), message, 2)
        elif isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            _detach_stdout()  # stdout may be what failed (`> /dev/full`): do not fail again at exit
        return 2
    except KeyboardInterrupt as e:  # Ctrl-C: say so (a bare exit 130 left a report's partial clips/ pages unexplained)
        message = _INTERRUPTED.get(args.command, "interrupted; what it wrote so far may be incomplete (preprocess: a "
                                                 "rerun reuses its complete shards)")
        print(f"avalign {args.command}: {message}", file=sys.stderr)
        if json_out:
            _print_json_error(args.command, failed_file(args, e), "interrupted", message, 130)
        return 130
    except Exception as e:  # noqa: BLE001 - a bug: the traceback for a person, and still one document for a program
        if not json_out:
            raise
        traceback.print_exc()
        _print_json_error(args.command, failed_file(args, e), error_reason(e), f"{type(e).__name__}: {e}", 1)
        return 1


_COMMANDS = ("demo", "measure", "bench", "preprocess", "report")
_INTERRUPTED = {
    "report": "interrupted; every file it wrote is whole (a clip page with its images, or nothing of it), but "
              "report.json and report.html, written last, are not (re)written: rerun to complete the report",
}
"""What Ctrl-C leaves behind, by command (the others: the default message)."""


def failed_file(args: argparse.Namespace, error: BaseException) -> Optional[str]:
    """The file a command's failure is about: the one the error names (``path``, ``filename``, a shard), the transcript
    for a transcript error, else the command's input (``measure``'s media, ``preprocess``'s INPUT…)."""
    for attr in ("path", "filename"):
        name = getattr(error, attr, None)
        if isinstance(name, str) and name:
            return name
    shard = getattr(error, "shard", None)
    if isinstance(shard, str) and shard:
        return shard
    if getattr(args, "transcript", None) and any(c.__name__ == "TranscriptError" for c in type(error).__mro__):
        return args.transcript
    for attr in ("media", "input", "data"):
        value = getattr(args, attr, None)
        if isinstance(value, str):
            return value
    files = getattr(args, "files", None)
    return files[0] if files else None


def _print_json_error(command: Optional[str], file: Optional[str], reason: str, message: str, exit_code: int) -> None:
    try:
        print(error_document(command or "", file=file, reason=reason, message=message, exit_code=exit_code), flush=True)
    except OSError:  # stdout itself failed (`> /dev/full`): stderr has said it
        _detach_stdout()


def _detach_stdout() -> None:
    """Points fd 1 at /dev/null so that the interpreter's final flush of a failed stdout raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout closed or replaced (tests): nothing to detach
        pass


if __name__ == "__main__":
    raise SystemExit(main())
