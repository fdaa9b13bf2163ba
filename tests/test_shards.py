"""Shard stages on plain lists and on real tar files, including hostile and broken shards."""
import io
import tarfile

import pytest

from loaders.shards import (
    ShardError,
    expand_shard_urls,
    group_by_key,
    shard_samples,
    shuffle_shards,
    split_shards,
    tar_members,
)


def write_tar(path, members, *, links=()):
    with tarfile.open(path, "w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
        for name, target in links:
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return str(path)


def test_expand_brace_list_and_pipe():
    assert expand_shard_urls("d/s-{000..002}.tar") == ["d/s-000.tar", "d/s-001.tar", "d/s-002.tar"]
    assert expand_shard_urls(["a.tar", "b-{1..2}.tar"]) == ["a.tar", "b-1.tar", "b-2.tar"]
    assert expand_shard_urls("pipe:cat x.tar") == ["pipe:cat x.tar"]
    with pytest.raises(ValueError, match="empty"):
        expand_shard_urls([])


def test_split_covers_every_shard_once():
    urls = [f"s{i}" for i in range(11)]
    parts = [split_shards(urls, rank=r, world_size=2, worker_id=w, num_workers=3) for r in range(2) for w in range(3)]
    assert sorted(u for p in parts for u in p) == sorted(urls)
    with pytest.raises(ValueError, match="rank"):
        split_shards(urls, rank=2, world_size=2)


def test_shuffle_is_seeded_and_epoch_dependent():
    urls = [f"s{i}" for i in range(20)]
    assert shuffle_shards(urls, seed=1) == shuffle_shards(urls, seed=1)
    assert shuffle_shards(urls, seed=1) != shuffle_shards(urls, seed=1, epoch=1)
    assert sorted(shuffle_shards(urls, seed=3)) == sorted(urls)


def test_group_by_key_on_a_list():
    members = [("a.mp4", b"1"), ("a.json", b"2"), ("dir/b.mp4", b"3"), ("dir/b.align.json", b"4"), ("README", b"x")]
    samples = list(group_by_key(members, url="u"))
    assert [s["__key__"] for s in samples] == ["a", "dir/b"]
    assert samples[1]["align.json"] == b"4" and samples[0]["json"] == b"2"


def test_duplicates_are_dropped_and_reported_or_raised():
    # A key that comes back after another key is a duplicate, as is a repeated member within one key: the
    # sample with the repeat is dropped whole (which copy is right cannot be known), reported once.
    members = [("a.mp4", b"1"), ("b.mp4", b"2"), ("b.mp4", b"2'"), ("a.mp4", b"3"), ("c.json", b"x")]
    seen = []
    samples = list(group_by_key(members, url="u", report=lambda s, k, r: seen.append((k, r))))
    assert [s["__key__"] for s in samples] == ["a", "c"]
    assert samples[0]["mp4"] == b"1"
    assert seen == [("b", "duplicate_key"), ("a", "duplicate_key")]
    with pytest.raises(ShardError, match="member 'b.mp4' appears twice in sample 'b'.*key='b'"):
        list(group_by_key(members, url="u", on_error="raise"))


def test_hostile_members_never_become_samples(tmp_path):
    path = write_tar(
        tmp_path / "evil.tar",
        [("../escape.mp4", b"x"), ("/abs/path.mp4", b"y"), ("ok.mp4", b"good"), ("ok.pyd", b"\x80\x04pickle")],
        links=[("link.mp4", "/etc/passwd")],
    )
    seen = []
    samples = list(shard_samples(path, report=lambda s, k, r: seen.append((k, r))))
    assert [s["__key__"] for s in samples] == ["ok"]
    assert samples[0]["pyd"] == b"\x80\x04pickle"  # raw bytes: never unpickled
    assert sorted(r for _, r in seen) == ["member_type", "unsafe_name", "unsafe_name"]
    assert not (tmp_path.parent / "escape.mp4").exists()
    with pytest.raises(ShardError, match=r"'\.\./escape\.mp4'.*reason=unsafe_name"):
        list(shard_samples(path, on_error="raise"))


def test_truncated_tar_keeps_what_was_read(tmp_path):
    good = write_tar(tmp_path / "t.tar", [("a.mp4", b"1" * 3000), ("b.mp4", b"2" * 3000), ("c.mp4", b"3" * 3000)])
    data = open(good, "rb").read()
    cut = tmp_path / "cut.tar"
    cut.write_bytes(data[: 512 * 2 + 3000 + 600])  # into the second member's data
    seen = []
    samples = list(shard_samples(str(cut), report=lambda s, k, r: seen.append(r)))
    assert [s["__key__"] for s in samples] == ["a"]
    assert seen == ["truncated"]


def test_missing_shard_is_reported(tmp_path):
    seen = []
    assert list(shard_samples(str(tmp_path / "nope.tar"), report=lambda s, k, r: seen.append(r))) == []
    assert seen == ["open"]
    with pytest.raises(ShardError, match="reason=open"):
        list(shard_samples(str(tmp_path / "nope.tar"), on_error="raise"))


def test_pipe_and_file_urls_read_the_same(tmp_path):
    path = write_tar(tmp_path / "p.tar", [("k1.txt", b"a"), ("k2.txt", b"b")])
    via_pipe = [s["__key__"] for s in shard_samples(f"pipe:cat {path}")]
    via_file = [s["__key__"] for s in shard_samples(f"file://{path}")]
    assert via_pipe == via_file == ["k1", "k2"]


def test_shard_error_is_a_sample_error_that_survives_pickling():
    """One error type: a ShardError is a SampleError (callers catch one type) that always names its shard, and it
    crosses a process boundary (loader workers) as itself, with its fields."""
    import pickle

    from loaders.errors import SampleError

    error = ShardError("tar member '../x.mp4' is absolute or contains '..'", shard="s.tar", key="x", reason="unsafe_name")
    assert isinstance(error, SampleError) and isinstance(error, ValueError)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is ShardError and (back.message, back.shard, back.key, back.reason) == (
        error.message, "s.tar", "x", "unsafe_name")
    assert str(back) == str(error) and str(error).endswith("[shard='s.tar', key='x', reason=unsafe_name]")
    with pytest.raises(TypeError):
        ShardError("no shard named")  # the shard is required
