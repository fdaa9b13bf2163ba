"""A tiny video-text model trained on ``PackedBatch`` through a ``DataLoader`` with workers, resumable mid-run.

Data: generated shards of short clips (a solid colour, 10 fps, a tone) whose text ("the red screen") names the
colour, in three layouts users have: video2dataset (``KEY.txt`` caption + ``KEY.json`` metadata), SRT cues, WhisperX JSON with
word times. A word-level tokenizer is trained here on that text (``tokenizers``; nothing is downloaded).

Model: each packed frame becomes a vector (a strided conv, mean-pooled); each token is predicted from the
mean of the frame vectors in its own frame range (``batch.token_spans``, on the clock ``align`` put it on)
plus a learned embedding of its position in its item, through one linear layer. Loss: cross-entropy of the
token ids over the non-padding tokens. The colour words are only predictable from the frames.

Resume: with ``--save-at K`` the run writes a checkpoint after step K (model, optimiser, the loader's state,
epoch, step) and stops (with ``--keep-going`` it goes on, as after a periodic checkpoint); ``--resume CHECKPOINT``
continues from it. The resumed run's losses and final weights
are byte-identical to an uninterrupted run (``StatefulDataLoader`` from torchdata restores each worker). The
workers are persistent (started once per run, as a training loop would keep them).

Usage::

    .venv/bin/python scripts/train_example.py --out /tmp/train-example [--steps 300] [--num-workers 2]
    .venv/bin/python scripts/train_example.py --out /tmp/train-example --save-at 120     # stops after step 120
    .venv/bin/python scripts/train_example.py --out /tmp/train-example --resume /tmp/train-example/ckpt.pt
    .venv/bin/python scripts/train_example.py --out /tmp/train-example --save-at 120 --keep-going  # saves, goes on
"""
from __future__ import annotations

import argparse
import io
import json
import logging
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from loaders import PackedBatch, make_dataset  # noqa: E402

logger = logging.getLogger(__name__)

COLOURS = {"red": 300, "green": 450, "blue": 600, "yellow": 750}
"""Clip colour → tone frequency (Hz)."""
LAYOUTS = ("v2d", "srt", "whisperx")
MAX_POSITIONS = 16


def _clip(path: Path, colour: str, seconds: float) -> bytes:
    subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", f"color=c={colour}:size=32x24:rate=10",
                    "-f", "lavfi", "-i", f"sine=f={COLOURS[colour]}:r=16000", "-t", f"{seconds:g}", "-c:v", "libx264",
                    "-g", "5", "-pix_fmt", "yuv420p", "-c:a", "aac", "-ac", "1", str(path)], check=True)
    return path.read_bytes()


def _text_members(layout: str, key: str, colour: str, seconds: float) -> list[tuple[str, bytes]]:
    """The clip's text ("the <colour> screen") in one layout: a caption, two cues, or three timed words."""
    half = round(seconds / 2, 1)
    if layout == "v2d":
        meta = {"url": f"https://example.invalid/{key}", "status": "success", "caption": f"the {colour} screen"}
        return [(f"{key}.txt", f"the {colour} screen".encode()), (f"{key}.json", json.dumps(meta).encode())]
    if layout == "srt":
        cue = lambda t: f"00:00:0{int(t)},{round(t % 1 * 1000):03d}"  # noqa: E731 - clips are under 10 s
        text = f"1\n{cue(0.1)} --> {cue(half)}\nthe {colour}\n\n2\n{cue(half)} --> {cue(seconds - 0.1)}\nscreen\n"
        return [(f"{key}.srt", text.encode())]
    words = [("the", 0.1, half / 2), (colour, half / 2, half), ("screen", half, seconds - 0.1)]
    segment = {"start": 0.1, "end": seconds - 0.1, "text": " ".join(w for w, _, _ in words),
               "words": [{"word": w, "start": s, "end": e, "score": 0.9} for w, s, e in words]}
    return [(f"{key}.json", json.dumps({"segments": [segment]}).encode())]


def make_shards(out_dir: Path, *, clips_per_shard: int = 8) -> list[str]:
    """One shard per layout, ``clips_per_shard`` clips each (1.0–1.6 s, colours in turn). Returns the paths.
    Clips of the same colour and length are the same bytes (each is encoded once)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    colours = list(COLOURS)
    paths = []
    encoded: dict[tuple[str, float], bytes] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for s, layout in enumerate(LAYOUTS):
            path = out_dir / f"{layout}-{s:06d}.tar"
            with tarfile.open(path, "w") as tar:
                for c in range(clips_per_shard):
                    key = f"{layout}{c:02d}"
                    colour, seconds = colours[(c + s) % len(colours)], 1.0 + 0.2 * (c % 4)
                    if (colour, seconds) not in encoded:
                        encoded[colour, seconds] = _clip(Path(scratch) / f"{key}.mp4", colour, seconds)
                    members = [(f"{key}.mp4", encoded[colour, seconds])]
                    for name, data in members + _text_members(layout, key, colour, seconds):
                        info = tarfile.TarInfo(name)
                        info.size = len(data)
                        tar.addfile(info, io.BytesIO(data))
            paths.append(str(path))
    return paths


def make_tokenizer():
    """A word-level tokenizer over the generated vocabulary (id 0 is padding)."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["[PAD]", "[UNK]", "the", "screen", *COLOURS]
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return tokenizer


class TinyVideoText(nn.Module):
    """Frames → vectors; each token's logits from the mean vector of its frame range and its position."""

    def __init__(self, vocab_size: int, *, width: int = 32) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, width, kernel_size=8, stride=8)
        self.position = nn.Embedding(MAX_POSITIONS, width)
        self.head = nn.Linear(width, vocab_size)

    def forward(self, batch: PackedBatch) -> torch.Tensor:
        frames = self.patch(batch.frames).mean(dim=(2, 3))  # [cap_frames, width]
        spans = batch.token_spans[:, :2].clamp_min(0)
        prefix = torch.cat([frames.new_zeros(1, frames.shape[1]), frames.cumsum(dim=0)])
        count = (spans[:, 1] - spans[:, 0]).clamp_min(1).unsqueeze(1)
        pooled = (prefix[spans[:, 1]] - prefix[spans[:, 0]]) / count  # mean frame vector of each token's range
        position = batch.position_ids_tokens.clamp(max=MAX_POSITIONS - 1).long()
        return self.head(torch.tanh(pooled + self.position(position)))


def train(paths: list[str], *, steps: int, num_workers: int, out_dir: Path, save_at: int = 0,
          resume: str = "", keep_going: bool = False) -> list[float]:
    """Trains for ``steps`` steps (epochs repeat, reshuffled); returns the losses of the steps run here.
    After step ``save_at`` (if > 0) a checkpoint is written, and the run stops there unless ``keep_going``."""
    from torchdata.stateful_dataloader import StatefulDataLoader

    torch.manual_seed(0)
    torch.set_num_threads(1)
    tokenizer = make_tokenizer()
    dataset = make_dataset(paths, seed=0, tokenizer=tokenizer, budgets=(40, 64000, 32), frame_size=(24, 32),
                           buffer_size=8, max_items=8, max_words=32, max_segments=16)
    # Persistent workers: started once per run, not once per epoch (set_epoch reaches them; see make_dataset).
    loader = StatefulDataLoader(dataset, batch_size=None, num_workers=num_workers, persistent_workers=num_workers > 0)
    model = TinyVideoText(tokenizer.get_vocab_size())
    optimiser = torch.optim.Adam(model.parameters(), lr=3e-3)
    step = epoch = 0
    if resume:
        checkpoint = torch.load(resume, weights_only=False)
        model.load_state_dict(checkpoint["model"])
        optimiser.load_state_dict(checkpoint["optimiser"])
        step, epoch = checkpoint["step"], checkpoint["epoch"]
        dataset.set_epoch(epoch)
        loader.load_state_dict(checkpoint["loader"])
    losses = []
    while step < steps:
        for batch in loader:
            valid = batch.segment_ids_tokens >= 0
            logits = model(batch)
            loss = F.cross_entropy(logits[valid], batch.token_ids[valid])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            step += 1
            losses.append(loss.item())
            print(f"step {step} epoch {epoch}: items {batch.num_items} tokens {int(valid.sum())} loss {loss.item():.6f}")
            if step == save_at:
                checkpoint = {"model": model.state_dict(), "optimiser": optimiser.state_dict(), "step": step,
                              "epoch": epoch, "loader": loader.state_dict()}
                torch.save(checkpoint, out_dir / "ckpt.pt")
                print(f"saved {out_dir / 'ckpt.pt'} after step {step}")
                if not keep_going:
                    return losses
            if step >= steps:
                break
        else:
            epoch += 1
            dataset.set_epoch(epoch)
    torch.save(model.state_dict(), out_dir / "final.pt")
    return losses


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "avalign-train-example"))
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--save-at", type=int, default=0, help="write a checkpoint after this step and stop")
    parser.add_argument("--keep-going", action="store_true", help="with --save-at: go on after the checkpoint")
    parser.add_argument("--resume", default="", help="continue from this checkpoint")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    out_dir = Path(args.out)
    shard_dir = out_dir / "shards"
    paths = sorted(str(p) for p in shard_dir.glob("*.tar")) or sorted(make_shards(shard_dir))
    losses = train(paths, steps=args.steps, num_workers=args.num_workers, out_dir=out_dir, save_at=args.save_at,
                   resume=args.resume, keep_going=args.keep_going)
    if losses:
        head, tail = losses[:10], losses[-10:]
        print(f"mean loss: first {len(head)} steps {sum(head) / len(head):.4f}, last {len(tail)} steps "
              f"{sum(tail) / len(tail):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
