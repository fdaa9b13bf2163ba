"""The ``report`` subcommand: ``add_parser(subparsers)`` registers it on ``avalign``'s parser."""
from __future__ import annotations

import argparse
import logging

from avalign._cli_common import DEFAULT_MAX_PIXELS, check_local_input, finite_float, positive_int

logger = logging.getLogger(__name__)

__all__ = ["add_parser"]

EPILOG = """examples:
  avalign report out_shards/ --out report/                        # preprocess output: align.json + skipped.jsonl
  avalign report "raw/shard-{000000..000009}.tar" --out report/   # raw WebDataset shards: measured on the fly
  avalign report clips/ --out report/ --fail-over-ms 60           # media + sidecar transcripts; exit 1 over 60 ms
  avalign report sample_data/shards --out report/ --truth sample_data/truth.json   # residuals vs ground truth

signs: av_offset_ms > 0 = audio late; the BT.1359 / EBU R37 columns convert to their + = audio early.
gate: a clip fails when |av_offset_ms| or |text_offset_ms| > X (see --gate-on); null (abstained)
offsets do not fail their clip and are listed with the reason. The gate itself fails (reason printed)
when the input holds no media, when nothing was measured, or when more than --max-abstain of the
gated clips abstained. Skipped/corrupt inputs are counted (reasons: decode, missing_audio,
too_large, transcript, missing_media, align_json, unsafe_name, duplicate_key, truncated…), or with
--on-error raise the first one stops the report. exit 0 pass, 1 fail, 2 error.
"""


def _cmd_report(args: argparse.Namespace) -> int:
    check_local_input(args.input)  # a typo fails in milliseconds, not after loading torch
    from avalign.report import run_report

    result = run_report(
        args.input,
        out_dir=args.out,
        fail_over_ms=args.fail_over_ms,
        gate_on=args.gate_on,
        truth_path=args.truth,
        sample_rate=args.sample_rate,
        progress=not args.no_progress,
        on_error=args.on_error,
        max_pixels=args.max_pixels,
        max_abstain=args.max_abstain,
        clip_pages=args.clip_pages,
    )
    print(result.terminal_summary)
    return result.exit_code


def add_parser(subparsers) -> argparse.ArgumentParser:
    """Register ``report`` on ``subparsers`` (from ``ArgumentParser.add_subparsers``); returns its parser."""
    parser = subparsers.add_parser(
        "report",
        help="alignment error report (HTML, JSON, plots) and a dataset gate",
        description=(
            "Report container facts, A/V offset, drift and transcript offset of every clip of INPUT, whether each "
            "offset is within ITU-R BT.1359 and EBU R37, dataset histograms and the worst clips. Writes "
            "DIR/report.html (self-contained), DIR/report.json and DIR/*.png."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("input", help="preprocessed or raw shards (path, dir of .tar, brace pattern) or a media directory")
    parser.add_argument("--out", required=True, metavar="DIR", help="output directory")
    parser.add_argument("--fail-over-ms", type=finite_float, metavar="X", help="gate: exit 1 when any clip's |offset| exceeds X ms, or when the input holds no media, nothing was "
                             "measured, or more than --max-abstain of the clips abstained")
    parser.add_argument("--gate-on", choices=["av", "text", "any"], default="any", help="offsets the gate checks (default any)")
    parser.add_argument("--max-abstain", type=finite_float, default=0.5, metavar="SHARE",
                        help="the gate fails when more than this share (0-1) of gated clips abstained (default 0.5)")
    parser.add_argument("--clip-pages", type=int, default=50, metavar="N",
                        help="a page per flagged clip (over the gate, outside EBU R37, or abstained), worst first, "
                             "at most N (default 50; 0: none). Each decodes its clip again")
    parser.add_argument("--truth", metavar="FILE", help='truth JSON {"clips": {key: {"av_offset_ms", ...}}}: adds residuals')
    parser.add_argument("--sample-rate", type=positive_int, default=16000, help="rate for sample indices when measuring (default 16000)")
    parser.add_argument("--on-error", choices=["skip", "raise"], default="skip",
                        help="count bad inputs in the report (default) or stop at the first")
    parser.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                        help=f"skip media whose frames have more than N pixels (width x height) as too_large "
                             f"(default {DEFAULT_MAX_PIXELS} = 3840x2160)")
    parser.add_argument("--no-progress", action="store_true",
                        help="no progress (default: a bar with ETA on a terminal, else a line every 10 s on stderr)")
    parser.set_defaults(func=_cmd_report)
    return parser
