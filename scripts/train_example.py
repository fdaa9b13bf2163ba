"""A tiny audio-visual model trained a few steps on ``PackedBatch`` (CPU), attention restricted by segment ids.

Each packed frame becomes one token (a strided conv + mean pool), each log-mel hop another (a linear layer);
frame and hop tokens of the whole batch form one sequence, and attention is allowed only between tokens of
the same item (``segment_ids_frames`` / ``segment_ids_hops`` equal and not -1): packed items never see each
other. The toy target: is a word being spoken at this hop (from ``word_spans``)?

Usage::

    .venv/bin/python scripts/train_example.py [--shards 'sample_data/shards/*.tar'] [--steps 5]
"""
from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "scripts"))

from bench_loader import find_shards  # noqa: E402
from loaders._collate import PackedBatch  # noqa: E402
from loaders._loader import make_loader  # noqa: E402

logger = logging.getLogger(__name__)


def speech_targets(batch: PackedBatch, *, hop_length: int) -> torch.Tensor:
    """float ``[cap_hops]``: 1 where a hop's first sample lies inside a word (packed sample coordinates)."""
    cap_hops = batch.segment_ids_hops.shape[0]
    hop_start = torch.zeros(cap_hops, dtype=torch.int64)
    for i in range(batch.num_items):
        h0, h1 = int(batch.cu_seqlens_hops[i]), int(batch.cu_seqlens_hops[i + 1])
        hop_start[h0:h1] = int(batch.cu_seqlens_samples[i]) + torch.arange(h1 - h0) * hop_length
    target = torch.zeros(cap_hops)
    for row in batch.word_spans[: batch.num_words].tolist():
        target[(hop_start >= row[3]) & (hop_start < row[4]) & (batch.segment_ids_hops == row[0])] = 1.0
    return target


class TinyAVModel(nn.Module):
    """Frame and hop tokens → one block of segment-masked self-attention → per-hop speech logit."""

    def __init__(self, *, n_mels: int = 80, width: int = 32) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, width, kernel_size=8, stride=8)
        self.mel = nn.Linear(n_mels, width)
        self.modality = nn.Embedding(2, width)
        self.attention = nn.MultiheadAttention(width, num_heads=4, batch_first=True)
        self.head = nn.Linear(width, 1)

    def forward(self, batch: PackedBatch) -> torch.Tensor:
        frame_tokens = self.patch(batch.frames).mean(dim=(2, 3)) + self.modality.weight[0]
        hop_tokens = self.mel(batch.log_mel) + self.modality.weight[1]
        tokens = torch.cat([frame_tokens, hop_tokens])[None]
        segments = torch.cat([batch.segment_ids_frames, batch.segment_ids_hops])
        valid = segments >= 0
        allowed = (segments[:, None] == segments[None, :]) & valid[:, None] & valid[None, :]
        allowed |= torch.eye(len(segments), dtype=torch.bool)  # padding attends to itself: no empty rows
        out, _ = self.attention(tokens, tokens, tokens, attn_mask=~allowed)
        return self.head(out[0, frame_tokens.shape[0] :]).squeeze(-1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shards", default=str(REPO / "sample_data/shards/*.tar"))
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    torch.manual_seed(0)
    paths = find_shards(args.shards)
    loader = make_loader(paths, seed=0, fps=10, budgets=(40, 64000, 128), window_seconds=2.0, buffer_size=8,
                         frame_size=(32, 32), log_mel=True, max_items=16, max_words=128)
    model = TinyAVModel()
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    step = 0
    while step < args.steps:
        for batch in loader:
            target = speech_targets(batch, hop_length=loader.collator.hop_length)
            logits = model(batch)
            valid = (batch.segment_ids_hops >= 0).float()
            loss = (F.binary_cross_entropy_with_logits(logits, target, reduction="none") * valid).sum() / valid.sum()
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            print(f"step {step}: items {batch.num_items} keys {list(batch.sample_keys)[:3]}… loss {loss.item():.4f} "
                  f"padding frames {batch.padding['frames']:.1%} samples {batch.padding['samples']:.1%}")
            step += 1
            if step >= args.steps:
                break
    print(f"loader stats: {loader.stats}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
