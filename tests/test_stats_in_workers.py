"""``ds.stats`` read in the main process while DataLoader workers did the counting says so (adv43 F14).

Before: after an epoch under ``DataLoader(ds, num_workers=2)`` the main process's ``ds.stats`` was all zero
(``samples_read 0``, ``skipped {}``) with no warning, while the workers had read and skipped samples.
"""
from __future__ import annotations

import logging

import torch

import loaders
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar

WARNING_START = "stats read in the main process are all zero: the dataset was iterated by DataLoader worker processes"


def _shards(tmp_path) -> list[str]:
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    return [write_tar(tmp_path / f"s{i}.tar", [(f"k{i}.mp4", clip), (f"bad{i}.mp4", b"\0" * 64)]) for i in range(2)]


def _warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith(WARNING_START)]


def test_stats_read_in_the_main_process_after_worker_passes_warn_once(tmp_path, caplog):
    ds = loaders.make_dataset(_shards(tmp_path), seed=0, frame_size=(16, 16), window_seconds=None,
                              budgets=(40, 64000, 64))
    batches = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=2, multiprocessing_context="fork"))
    assert sorted(k for b in batches for k in b.sample_keys) == ["k0", "k1"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="loaders"):
        first, second = ds.stats, ds.stats
    assert first.samples_read == 0 and first.skipped == {} and second == first
    warned = _warnings(caplog)
    assert len(warned) == 1, caplog.records
    assert "(2 pass(es) so far)" in warned[0] and "loaders.make_loader(..., num_workers=N)" in warned[0]


def test_stats_of_a_dataset_iterated_in_the_main_process_do_not_warn(tmp_path, caplog):
    ds = loaders.make_dataset(_shards(tmp_path), seed=0, frame_size=(16, 16), window_seconds=None,
                              budgets=(40, 64000, 64))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
        stats = ds.stats
    assert stats.samples_read == 4 and stats.skipped == {"decode": 2}
    assert _warnings(caplog) == []
