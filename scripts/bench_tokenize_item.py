"""Cost of ``loaders.pipeline.tokenize_item`` on one item of 1000 caption words placed by forced alignment (100 SRT-like
cues of 10 words, each ending in a comma), this checkout against another one's (``--baseline``), interleaved.

Usage::

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_tokenize_item.py --baseline /path/to/main-checkout [--reps 7]

Prints, per checkout, the tokens of the item and the median wall and CPU (user+sys) milliseconds per call.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import resource
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

from tokenizers import Tokenizer, models, pre_tokenizers

from aligner import AlignedSpan


@dataclasses.dataclass(frozen=True)
class _Sample:
    video: object
    audio: object
    words: tuple
    segments: tuple
    start_seconds: float = 0.0
    stop_seconds: float = 1e4


def _text_module(checkout: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, checkout / "loaders" / "pipeline" / "_text.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another checkout of the repository")
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    vocab, words, segments = {"[UNK]": 0}, [], []
    for c in range(100):
        texts = [f"Word{c}x{i}," for i in range(10)]
        segments.append(AlignedSpan(" ".join(texts), "segment", c, c + 1, c * 10, c * 10 + 10, c * 16000, (c + 1) * 16000))
        for i, text in enumerate(texts):  # forced alignment's words: lowercased, punctuation stripped
            vocab.setdefault(text.rstrip(",").lower(), len(vocab))
            words.append(AlignedSpan(text.rstrip(",").lower(), "word", c + i / 10, c + (i + 1) / 10, c * 10 + i,
                                     c * 10 + i + 1, 0, 1))
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    sample = _Sample(SimpleNamespace(num_frames=1000), SimpleNamespace(num_samples=1_600_000), tuple(words), tuple(segments))
    checkouts = {"baseline": _text_module(args.baseline, "baseline_text"),
                 "this": _text_module(Path(__file__).resolve().parents[1], "this_text")}
    rows: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    for _ in range(args.reps):
        for name, module in checkouts.items():
            r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            for _ in range(20):
                module.tokenize_item(sample, tokenizer)
            wall, r1 = (time.perf_counter() - t0) / 20, resource.getrusage(resource.RUSAGE_SELF)
            rows[name].append((wall, (r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime) / 20))
    for name, module in checkouts.items():
        tokens = module.tokenize_item(sample, tokenizer).tokens.num_tokens
        print(f"{name}: {tokens} tokens, median wall {statistics.median(w for w, _ in rows[name]) * 1e3:.2f} ms, "
              f"median cpu {statistics.median(c for _, c in rows[name]) * 1e3:.2f} ms per call")


if __name__ == "__main__":
    main()
