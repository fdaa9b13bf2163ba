"""The pipeline's stages on their own, for users who already have a webdataset (or any iterator) pipeline.

Each stage is a generator: iterator in, iterator out, options keyword-only (webdataset's ``compose`` protocol)::

    import webdataset as wds
    from functools import partial
    from loaders import decode_items, pack_batches

    pipeline = (wds.WebDataset(urls, shardshuffle=100, nodesplitter=wds.split_by_node)
                .compose(partial(decode_items, tokenizer=tok, budgets=(300, 160_000, 512)))   # samples → BatchItem
                .compose(partial(pack_batches, budgets=(300, 160_000, 512))))                 # BatchItem → PackedBatch
    loader = torch.utils.data.DataLoader(pipeline, batch_size=None, num_workers=4)

``decode_items`` does what the dataset does per sample (decode with real timestamps, align, window, tokenize,
check the budgets) and ``pack_batches`` packs and collates. What webdataset then owns is its own: shard
listing, shuffling, node/worker splitting and resume (these stages keep no state: for exact resume use
:func:`~loaders.make_dataset`).
"""
from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Optional, Union

import torch

from avcore import BatchItem, SampleError
from loaders._skip_log import SkipLog
from loaders._video import DEFAULT_MAX_PIXELS
from loaders.pipeline._collate import Collator, PackedBatch
from loaders.pipeline._items import pack_lengths, sample_items
from loaders.pipeline._options import AUTO, OnError, SampleOptions, WindowSeconds, check_choice, check_window_seconds
from loaders.pipeline._pack import OnlinePacker, PackItem
from loaders.pipeline._text import check_tokenizer

logger = logging.getLogger(__name__)

__all__ = ["decode_items", "pack_batches"]


def decode_items(
    samples: Iterable[dict],
    *,
    tokenizer: Any = None,
    fps: Optional[float] = None,
    sample_rate: int = 16000,
    budgets: Sequence[int] = (300, 160_000, 512),
    window_seconds: WindowSeconds = AUTO,
    max_items: int = 64,
    max_words: int = 1024,
    max_segments: int = 256,
    frame_size: Optional[tuple[int, int]] = (112, 112),
    estimate: bool = False,
    on_error: OnError = "skip",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    sample_timeout_seconds: Optional[float] = None,
    skipped: Optional[Counter] = None,
) -> Iterator[BatchItem]:
    """Tar samples (``{"__key__", "__url__", "mp4": bytes, "srt": bytes, …}``, as webdataset yields them undecoded)
    → :class:`BatchItem` (one per sample, or per window).

    Args:
        samples: Sample dicts; member keys are matched case-insensitively (``TextGrid``).
        skipped: A ``Counter`` that receives the reason of every skipped sample (optional).
        Others: As in :func:`~loaders.make_dataset`; ``frame_size`` None keeps the decoded size.

    Raises:
        SampleError: With ``on_error="raise"``, the first bad sample.
    """
    check_choice("on_error", on_error, ("skip", "raise"))
    check_window_seconds(window_seconds)
    row = tuple(int(b) for b in budgets)
    if len(row) != 3 or min(row) <= 0:
        raise ValueError(f"budgets must be 3 positive ints (frames, samples, tokens), got {budgets = }.")
    options = SampleOptions(sample_rate=sample_rate, limits=row + (int(max_items), int(max_words), int(max_segments)),
                            fps=fps, window_seconds=window_seconds, estimate=estimate, on_error=on_error,
                            decode_size=None if frame_size is None else (int(frame_size[0]), int(frame_size[1])),
                            max_pixels=max_pixels, tokenizer=tokenizer, sample_timeout_seconds=sample_timeout_seconds)
    check_tokenizer(tokenizer)  # one clear error for a tokenizer that fails on any text, before the first sample
    skip_log = SkipLog(where="the skipped= Counter", scope="in this call")  # the first few skips of each reason as warnings, then DEBUG
    for sample in samples:
        sample = {(k if k.startswith("__") else k.lower()): v for k, v in sample.items()}
        try:
            yield from sample_items(sample, options)
        except SampleError as error:
            if on_error == "raise":
                raise
            skip_log.skipped(logger, error.reason, f"skipping sample: {error}")
            if skipped is not None:
                skipped[error.reason] += 1


def pack_batches(
    items: Iterable[BatchItem],
    *,
    budgets: Sequence[int] = (300, 160_000, 512),
    max_items: int = 64,
    max_words: int = 1024,
    max_segments: int = 256,
    buffer_size: int = 64,
    min_fill: float = 0.9,
    seed: int = 0,
    frame_size: tuple[int, int] = (112, 112),
    device: Union[str, torch.device] = "cpu",
    log_mel: bool = False,
    sample_rate: int = 16000,
    with_token_ids: Optional[bool] = None,
) -> Iterator[PackedBatch]:
    """:class:`BatchItem` → :class:`PackedBatch` (multi-budget packing from a look-ahead buffer, then collate).

    Args:
        items: Items from :func:`decode_items` (built with the same budgets and limits).
        with_token_ids: Batches carry ``token_ids``; default: whether the first item has ids.
        Others: As in :func:`~loaders.make_dataset`.

    Raises:
        ValueError: An item over a budget (decode with the same budgets, or ``window_seconds="auto"``).
    """
    row = tuple(int(b) for b in budgets)
    limits = row + (int(max_items), int(max_words), int(max_segments))
    packer = OnlinePacker(limits, buffer_size=buffer_size, min_fill=min_fill, seed=seed)
    iterator = iter(items)
    first = next(iterator, None)
    if first is None:
        return
    ids = first.tokens.ids is not None if with_token_ids is None else bool(with_token_ids)
    collator = Collator(row, frame_size=frame_size, device=device, log_mel=log_mel, sample_rate=sample_rate,
                        max_items=max_items, max_words=max_words, max_segments=max_segments, with_token_ids=ids)
    held: dict[int, BatchItem] = {}

    def pack_items() -> Iterator[PackItem]:
        for index, item in enumerate(_chain(first, iterator)):
            held[index] = item
            yield PackItem(item.key, pack_lengths(item), payload=index)

    for pack in packer.pack(pack_items()):
        yield collator([held.pop(p.payload) for p in pack])


def _chain(first: BatchItem, rest: Iterator[BatchItem]) -> Iterator[BatchItem]:
    yield first
    yield from rest
