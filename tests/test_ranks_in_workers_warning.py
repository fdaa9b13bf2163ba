"""Several ranks iterated through DataLoader workers without ``batches_per_epoch``: the ranks' batch counts are not
kept equal (workers cannot all-reduce; the module docstring of ``loaders.pipeline``'s dataset says so), which hangs
DDP at the end of an epoch. Worker 0 says so in the log, naming the rank and the remedy. Oracle: the batch counts
of the two ranks over shards of different sizes (unequal: the premise), and the log written by the forked worker."""
from __future__ import annotations

import io
import logging
import tarfile

from torch.utils.data import DataLoader

import loaders
from tests.conftest import SAMPLE_DATA

BUDGETS = (200, 100_000, 64)


def _shard(path, keys):
    media = (SAMPLE_DATA / "clip00.mp4").read_bytes()
    with tarfile.open(path, "w") as tar:
        for key in keys:
            info = tarfile.TarInfo(f"{key}.mp4")
            info.size = len(media)
            tar.addfile(info, io.BytesIO(media))


def _batches(urls, rank, **kwargs) -> int:
    ds = loaders.make_dataset(urls, seed=0, rank=rank, world_size=2, budgets=BUDGETS, window_seconds=None, **kwargs)
    return sum(1 for _ in DataLoader(ds, batch_size=None, num_workers=1, multiprocessing_context="fork"))


def test_worker_warns_that_ranks_are_not_in_step_without_batches_per_epoch(tmp_path):
    _shard(tmp_path / "s-0.tar", ["a0", "a1", "a2"])
    _shard(tmp_path / "s-1.tar", ["b0"])
    urls = [str(tmp_path / "s-0.tar"), str(tmp_path / "s-1.tar")]
    log_path = tmp_path / "worker.log"
    handler = logging.FileHandler(log_path)  # inherited by the forked worker, unlike pytest's capture
    handler.setLevel(logging.WARNING)
    logger = logging.getLogger("loaders")
    logger.addHandler(handler)
    try:
        counts = [_batches(urls, rank) for rank in (0, 1)]
        assert counts[0] != counts[1]  # the premise: unequal shares give unequal batch counts
        handler.flush()
        text = log_path.read_text()
        assert "rank 0 of 2 iterated in DataLoader workers without batches_per_epoch" in text
        assert "rank 1 of 2" in text and "batches_per_epoch=N" in text
        log_path.write_text("")
        assert [_batches(urls, rank, batches_per_epoch=3) for rank in (0, 1)] == [3, 3]
        assert "without batches_per_epoch" not in log_path.read_text()
    finally:
        logger.removeHandler(handler)
        handler.close()
