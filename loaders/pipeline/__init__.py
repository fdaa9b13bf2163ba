"""The training pipeline: windows, packing, collate, dataset and loader. Re-exports only.

This layer sits above both the readers (``loaders._video``, ``loaders._audio``, ``loaders._transcripts``,
``loaders._shards`` …) and the alignment stage (``aligner``); neither of those imports it. ``loaders``
re-exports these names, so users write ``loaders.make_dataset`` / ``loaders.PackedBatch``.
"""
from loaders.pipeline._collate import Collator, PackedBatch
from loaders.pipeline._dataset import AVDataset, LoaderStats, make_dataset
from loaders.pipeline._loader import Loader, make_loader
from loaders.pipeline._pack import OnlinePacker, PackItem, PackStats, lower_bound_num_packs, plan_packs
from loaders.pipeline._stages import decode_items, pack_batches
from loaders.pipeline._window import windows

__all__ = [
    "AVDataset",
    "Collator",
    "Loader",
    "LoaderStats",
    "OnlinePacker",
    "PackItem",
    "PackStats",
    "PackedBatch",
    "decode_items",
    "lower_bound_num_packs",
    "make_dataset",
    "make_loader",
    "pack_batches",
    "plan_packs",
    "windows",
]
