"""Regression tests of the third adversarial round (BENCHMARKS.md, "Adversarial round three"): each input is
generated here (tiny tar shards of one ffmpeg clip); oracles are the keys written into the shards."""
from __future__ import annotations

import logging

import pytest

import loaders
from tests import hostile_inputs as hostile

OPTIONS = dict(frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None, max_items=2)


@pytest.fixture(scope="module")
def clip_bytes(tmp_path_factory) -> bytes:
    path = tmp_path_factory.mktemp("round3_clip") / "clip.mp4"
    hostile.clip(path, seconds=1.0)
    return path.read_bytes()


def write_shard(path, keys, media: bytes) -> str:
    members = []
    for key in keys:
        members += [(f"{key}.mp4", media), (f"{key}.txt", f"a caption for {key}".encode())]
    path.write_bytes(hostile.tar_bytes(members))
    return str(path)


# ------------------------------------------------------------------------- more ranks than shards


def test_more_ranks_than_shards_is_refused_where_every_rank_would_stop_at_once(tmp_path, clip_bytes):
    # Before: with even_batches="drop" (the default) the ranks with no shard have no first batch, so under
    # torch.distributed every rank stopped at once: 0 batches everywhere, no error (3 gloo ranks over 2 shards).
    urls = [write_shard(tmp_path / f"s{i}.tar", [f"s{i}k0"], clip_bytes) for i in range(2)]
    with pytest.raises(ValueError, match=r"world_size = 3 ranks but only 2 shard\(s\): ranks 2\.\.2 get no shard"):
        loaders.make_dataset(urls, seed=0, rank=0, world_size=3, **OPTIONS)
    with pytest.raises(ValueError, match="even_batches='drop'"):
        loaders.make_loader(urls, seed=0, rank=2, world_size=3, **OPTIONS)


def test_more_ranks_than_shards_with_padding_warns_and_the_empty_rank_only_pads(tmp_path, clip_bytes, caplog):
    urls = [write_shard(tmp_path / f"s{i}.tar", [f"s{i}k0"], clip_bytes) for i in range(2)]
    with caplog.at_level(logging.WARNING):
        ds = loaders.make_dataset(urls, seed=0, rank=2, world_size=3, even_batches="pad", **OPTIONS)
    assert "ranks 2..2 get no shard" in caplog.text
    assert [b.num_items for b in ds] == []  # not distributed: nothing to pad against; rank 2 has no data
    loaders.make_dataset(urls, seed=0, rank=1, world_size=2, **OPTIONS)  # as many ranks as shards: fine
