"""Shard-level losses are told as shard problems, and a damaged header's bytes are not a sample key (adv43 F10).

Before: a shard that was empty or not a tar was summed up as "1 sample(s) skipped: truncated 1"; a damaged tar
header with a NUL in its name field gave a "sample" keyed by its raw bytes (mojibake in the log and in
``stats.skipped_samples``); nothing said that the samples after the damage were lost and not counted.
"""
from __future__ import annotations

import logging
import tarfile

import loaders
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar

LOST = "a truncated shard's samples after the damage are lost and not counted"


def _epoch_line(caplog) -> str:
    return [r.getMessage() for r in caplog.records if r.getMessage().startswith("epoch 0: ")][-1]


def test_a_damaged_header_is_a_shard_problem_named_without_its_bytes(tmp_path, caplog):
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    url = write_tar(tmp_path / "s.tar", [("a.mp4", clip), ("a.txt", b"one"), ("b.mp4", clip), ("b.txt", b"two")])
    with tarfile.open(url) as tar:
        offset = tar.getmember("b.mp4").offset
    data = bytearray(open(url, "rb").read())
    data[offset:offset + 512] = (b"\xff\xfe\x80abc\x00" + bytes(range(128, 256)) * 4)[:512]
    open(url, "wb").write(bytes(data))
    ds = loaders.make_dataset([url], seed=0, frame_size=(16, 16), window_seconds=None, budgets=(40, 64000, 64),
                              allow_empty_epoch=True)
    with caplog.at_level(logging.INFO, logger="loaders"):
        keys = [k for batch in ds for k in batch.sample_keys]
    # rel62: a whole block that is no header where the header after 'a.txt' must be drops sample 'a' (a.txt's header
    # may claim fewer bytes than it has: tar keeps no checksum of data); before, 'a' was kept and the loss had no key.
    assert keys == []
    assert ds.stats.skipped_samples == ((url, "a", "truncated"),)  # a key of the shard, not the damaged bytes
    messages = [r.getMessage() for r in caplog.records]
    assert (f"shard {url}: sample 'a' dropped (truncated): tar member 'a.txt' is followed by a block that is no tar "
            "header where the next header must be (invalid header; name field <6 bytes that are not text>): the "
            "member's header may claim fewer bytes (3) than it has, so its data was cut there (tar keeps no checksum of "
            "data), or the header after it was overwritten; its sample is dropped, and the members after it are "
            "lost") in messages, messages


def test_a_shard_that_is_not_a_tar_is_not_a_skipped_sample(tmp_path, caplog):
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    good = write_tar(tmp_path / "good.tar", [("a.mp4", clip)])
    empty = tmp_path / "empty.tar"
    empty.write_bytes(b"")
    ds = loaders.make_dataset([good, str(empty)], seed=0, frame_size=(16, 16), window_seconds=None,
                              budgets=(40, 64000, 64))
    with caplog.at_level(logging.INFO, logger="loaders"):
        assert [k for batch in ds for k in batch.sample_keys] == ["a"]
    assert ds.stats.skipped_samples == ((str(empty), "", "truncated"),)
    assert _epoch_line(caplog) == f"epoch 0: 1 shard problem(s): truncated 1; {LOST} (stats.skipped_samples lists them)"
