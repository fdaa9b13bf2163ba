"""The ``avalign`` command: parses arguments, sets up logging, calls one library function per subcommand."""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from typing import Optional, Sequence

logger = logging.getLogger("avalign")

EPILOG = """examples:
  avalign demo                                  # the whole pipeline on sample_data/
  avalign demo --data sample_data --json        # the same, as JSON
"""


def _setup_logging(verbose: int) -> None:
    level = logging.WARNING - 10 * verbose
    if os.environ.get("AVALIGN_LOG"):
        level = getattr(logging, os.environ["AVALIGN_LOG"].upper(), level)
    logging.basicConfig(level=level, format="%(levelname)s %(name)s: %(message)s")


def _cmd_demo(args: argparse.Namespace) -> int:
    from avalign._demo import format_summary, run_demo

    summary = run_demo(args.data)
    print(json.dumps(summary, indent=2) if args.json else format_summary(summary))
    return 0


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
    demo.add_argument("--data", default="sample_data", help="folder with truth.json and shards/ (default: sample_data)")
    demo.add_argument("--json", action="store_true", help="print the summary as JSON")
    demo.set_defaults(func=_cmd_demo)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    _setup_logging(args.verbose)
    try:
        return int(args.func(args) or 0)
    except (FileNotFoundError, ValueError, IndexError) as e:
        print(f"avalign {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    raise SystemExit(main())
