"""A key's members not adjacent in the tar, and the same key in two shards: one rule, counted truthfully (adv43 F7).

Before: with ``a.mp4 b.mp4 b.txt a.txt`` sample ``a`` was delivered (without its caption) and yet logged as
"sample 'a' dropped (duplicate_key)" and listed in ``stats.skipped_samples``; the same key in two shards reached the
batches twice with no warning (``avalign preprocess`` keeps the first only).
"""
from __future__ import annotations

import logging

import loaders
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar


def _keys_and_texts(dataset) -> tuple[list[str], list[str]]:
    keys, texts = [], []
    for batch in dataset:
        keys += list(batch.sample_keys)
        texts += list(batch.segment_texts)
    return keys, texts


def test_a_stray_member_is_a_dropped_member_and_a_key_in_two_shards_is_counted(tmp_path, caplog):
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    split = write_tar(tmp_path / "s0.tar", [("a.mp4", clip), ("b.mp4", clip), ("b.txt", b"caption b"),
                                            ("a.txt", b"caption a")])
    again = write_tar(tmp_path / "s1.tar", [("b.mp4", clip), ("b.txt", b"caption b again")])
    ds = loaders.make_dataset([split, again], seed=0, frame_size=(16, 16), window_seconds=None,
                              budgets=(40, 64000, 64))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        keys, texts = _keys_and_texts(ds)
    assert sorted(keys) == ["a", "b", "b"]
    assert sorted(texts) == ["caption b", "caption b again"]  # 'a' came without its caption
    stats = ds.stats
    assert stats.skipped == {} and stats.skipped_samples == ()  # 'a' was delivered: not a skip
    assert stats.samples_read == 3
    assert stats.members_dropped == ((split, "a", "stray_member"),)
    assert len(stats.duplicate_keys) == 1 and stats.duplicate_keys[0][1] == "b"
    second = stats.duplicate_keys[0][0]
    first = split if second == again else again
    messages = [r.getMessage() for r in caplog.records]
    assert (f"shard {split}: member 'a.txt' dropped (stray_member): its key 'a' appeared earlier, before other keys, "
            "and sample 'a' was delivered without it.") in " ".join(messages)
    assert not any("sample 'a' dropped" in m for m in messages), messages
    assert any(m.startswith(f"shard {second}: sample key 'b' was already read from {first} this epoch: both are "
                            "delivered") for m in messages), messages


def test_a_second_copy_after_other_keys_is_a_skipped_copy(tmp_path, caplog):
    # The repeat starts with an extension the first copy has: a second copy, skipped; the first is delivered.
    clip = tiny_clip(tmp_path / "c.mp4", 0.5, fps=10, sample_rate=16000)
    url = write_tar(tmp_path / "s.tar", [("a.mp4", clip), ("a.txt", b"first"), ("b.mp4", clip),
                                         ("a.mp4", clip), ("a.txt", b"second")])
    ds = loaders.make_dataset([url], seed=0, frame_size=(16, 16), window_seconds=None, budgets=(40, 64000, 64))
    with caplog.at_level(logging.WARNING, logger="loaders"):
        keys, texts = _keys_and_texts(ds)
    assert sorted(keys) == ["a", "b"] and texts == ["first"]
    assert ds.stats.skipped_samples == ((url, "a", "duplicate_key"),)
    assert ds.stats.members_dropped == () and ds.stats.duplicate_keys == ()
    assert any(f"shard {url}: a second copy of key 'a' (member 'a.mp4') after other keys is skipped (duplicate_key); "
               "the first copy was delivered." in r.getMessage() for r in caplog.records)
