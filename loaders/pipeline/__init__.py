"""The training pipeline: windows, packing, collate, dataset and loader (a public submodule). Re-exports only.

This layer sits above both the readers (``loaders._video``, ``loaders._audio``, ``loaders._transcripts``,
``loaders._shards`` …) and the alignment stage (``aligner``); neither of those imports it. The top-level
``loaders`` re-exports the contract (``make_dataset``, ``make_loader``, ``plan_packs``, ``PackedBatch``,
``decode_items``, ``pack_batches``); the parts below are for those who build their own pipeline or test one.
"""
from loaders.pipeline._buffers import RecycledBuffers
from loaders.pipeline._budgets import first_over_budget
from loaders.pipeline._collate import IMAGENET_MEAN, IMAGENET_STD, Collator, PackedBatch
from loaders.pipeline._dataset import AVDataset, LoaderStats, make_dataset
from loaders.pipeline._items import sample_items
from loaders.pipeline._loader import Loader, make_loader
from loaders.pipeline._options import worker_decoder_threads
from loaders.pipeline._pack import OnlinePacker, PackItem, PackStats, lower_bound_num_packs, plan_packs
from loaders.pipeline._resume import ResumePlan, order_key
from loaders.pipeline._shared_slots import SharedSlots
from loaders.pipeline._shard_loop import interleave_steps, shard_groups
from loaders.pipeline._stages import decode_items, pack_batches
from loaders.pipeline._text import (
    MAX_CAPTION_BYTES,
    caption_text,
    encode_text,
    join_unit_texts,
    locate_words,
    token_owners,
    tokenize_item,
    unit_token_ranges,
)
from loaders.pipeline._window import split_windows, windows

__all__ = [
    "AVDataset",
    "Collator",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "Loader",
    "LoaderStats",
    "MAX_CAPTION_BYTES",
    "OnlinePacker",
    "PackItem",
    "PackStats",
    "PackedBatch",
    "RecycledBuffers",
    "ResumePlan",
    "SharedSlots",
    "caption_text",
    "decode_items",
    "encode_text",
    "first_over_budget",
    "interleave_steps",
    "join_unit_texts",
    "locate_words",
    "lower_bound_num_packs",
    "make_dataset",
    "make_loader",
    "order_key",
    "pack_batches",
    "plan_packs",
    "sample_items",
    "shard_groups",
    "split_windows",
    "token_owners",
    "tokenize_item",
    "unit_token_ranges",
    "windows",
    "worker_decoder_threads",
]
