"""adv67: adversarial round on the sixteenth session's merges (BENCHMARKS.md, "adv67").

Each test asserts against an oracle and failed before its fix.
"""
from __future__ import annotations

import gzip
import io
import tarfile

import pytest

from avalign.preprocess import list_inputs, read_members


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue())


def _members(tag: bytes) -> dict[str, bytes]:
    return {name: tag + name.encode() for i in range(3) for name in (f"k{i}.mp4", f"k{i}.txt")}


def test_a_streamed_shard_rewritten_after_it_was_listed_is_an_oserror_naming_the_change(tmp_path):
    """A ``.tar.gz`` shard rewritten between planning and reading (in place: same inode, new size and mtime).
    Before: ``UnboundLocalError: cannot access local variable 'fresh'`` (the check ran before ``fresh`` was set), on
    the kept stream (``a``, read on after its first sample) and on a first read (``b``); not an ``OSError``, so
    ``preprocess`` could not count it as the shard's skip. Now the ``OSError`` that says the shard changed."""
    a, b = tmp_path / "a.tar.gz", tmp_path / "b.tar.gz"
    a.write_bytes(_tar_gz(_members(b"A")))
    b.write_bytes(_tar_gz(_members(b"B")))
    samples = {}
    for shard in (a, b):
        samples[shard.name] = sorted(list_inputs(str(shard)).samples, key=lambda s: s.key)
    first = samples["a.tar.gz"][0]
    assert read_members([first.media, first.extras[0][1]]) == [b"Ak0.mp4", b"Ak0.txt"]  # oracle: the bytes written
    for shard in (a, b):
        shard.write_bytes(_tar_gz({**_members(b"C"), "k9.txt": b"new"}))
    for name, sample in (("a.tar.gz", samples["a.tar.gz"][1]), ("b.tar.gz", samples["b.tar.gz"][0])):
        with pytest.raises(OSError, match=rf"{name}: the shard changed after it was listed \(size "):
            read_members([sample.media])
