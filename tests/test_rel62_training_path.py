"""Regression tests of the training-path leftovers of adv61 (helper rel62; BENCHMARKS.md, "rel62: training-path
leftovers"). Inputs are generated here (tiny ffmpeg clips in tar shards); oracles are the keys, captions and members
written into the shards, and the pid of the worker stopped on purpose."""
from __future__ import annotations

import io
import os
import tarfile

import pytest

import loaders
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar

OPTIONS = dict(frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None, max_items=2)
SRT = b"1\n00:00:00,100 --> 00:00:00,800\nhello there\n\n"


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> bytes:
    return tiny_clip(tmp_path_factory.mktemp("rel62_clip") / "c.mp4", 1.0, fps=10, sample_rate=16000)


def _tar(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, blob in members:
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return out.getvalue()


# ------------------------------------------- 3: a shard rewritten with the same layout is redone by a preprocess rerun


def test_preprocess_rerun_redoes_a_shard_rewritten_in_place_with_the_same_layout(tmp_path, clip):
    # Before: the plan fingerprint held each member's offset and size only, so the rerun reused the old output and
    # its caption 'old caption text' (shards_reused == ('shard-000000.tar',)).
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    shard = raw / "a.tar"
    write_tar(shard, [("x.mp4", clip), ("x.txt", b"old caption text"), ("y.mp4", clip), ("y.txt", b"second one")])
    out = tmp_path / "out"
    first = preprocess(str(raw), str(out), progress=False)
    assert first.shards_written == ("shard-000000.tar",) and first.num_samples == 2

    again = preprocess(str(raw), str(out), progress=False)  # unchanged input: a no-op
    assert again.shards_reused == ("shard-000000.tar",) and again.shards_written == ()

    before = shard.stat()
    with tarfile.open(shard) as tar:
        offset = tar.getmember("x.txt").offset_data
    with open(shard, "r+b") as handle:  # the caption edited in place, same length: same members, offsets and sizes
        handle.seek(offset)
        handle.write(b"new caption TEXT")
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns + 10**9))  # a later mtime even where the clock is coarse
    assert shard.stat().st_size == before.st_size

    rerun = preprocess(str(raw), str(out), progress=False)
    assert rerun.shards_written == ("shard-000000.tar",) and rerun.shards_reused == ()
    with tarfile.open(out / "shard-000000.tar") as tar:
        captions = {m.name: tar.extractfile(m).read() for m in tar if m.name.endswith(".txt")}
    assert captions == {"x.txt": b"new caption TEXT", "y.txt": b"second one"}

    last = preprocess(str(raw), str(out), progress=False)  # and unchanged since: a no-op again
    assert last.shards_reused == ("shard-000000.tar",) and last.shards_written == ()
