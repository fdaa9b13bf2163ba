"""Regression tests of the adversarial round on the training path (helper adv61; BENCHMARKS.md, "Adversarial round
on the training path"). Inputs are generated here (tiny ffmpeg clips in tar shards); oracles are the keys and
members written into the shards."""
from __future__ import annotations

import gzip
import io
import json
import logging
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
    return tiny_clip(tmp_path_factory.mktemp("adv61_clip") / "c.mp4", 1.0, fps=10, sample_rate=16000)


def _members(prefix: str, clip: bytes, n: int) -> list[tuple[str, bytes]]:
    return [m for j in range(n) for m in ((f"{prefix}k{j}.mp4", clip), (f"{prefix}k{j}.srt", SRT))]


def _tar(members: list[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, blob in members:
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    return out.getvalue()


def _lying_size(data: bytes, member: str, extra: int) -> bytes:
    """``data`` (a tar) with ``member``'s header claiming ``extra`` more bytes than it holds (checksum fixed)."""
    offset = tarfile.open(fileobj=io.BytesIO(data)).getmember(member).offset
    block = bytearray(data[offset:offset + 512])
    size = int(block[124:135].decode().strip("\0 "), 8)
    block[124:136] = b"%011o\0" % (size + extra)
    block[148:156] = b"%06o\0 " % (sum(block[:148]) + 8 * 32 + sum(block[156:]))
    return data[:offset] + bytes(block) + data[offset + 512:]


# ---------------------------------------------------------------- F1: a member whose header lies about its size


def test_a_member_claiming_more_bytes_than_it_has_drops_its_sample_in_the_loader(tmp_path, clip, caplog):
    # Before: 'bk0' was delivered with 700 bytes of the next member glued to its mp4 and without its transcript
    # (swallowed), and the skip was recorded under a "key" read from caption text: ('…/b.tar', 'hello there', ...).
    good = write_tar(tmp_path / "a.tar", _members("a", clip, 2))
    lying = tmp_path / "b.tar"
    lying.write_bytes(_lying_size(_tar(_members("b", clip, 2)), "bk0.mp4", 700))
    loader = loaders.make_loader([str(good), str(lying)], seed=0, **OPTIONS)
    with caplog.at_level(logging.WARNING):
        keys = sorted(k for batch in loader for k in batch.sample_keys)
    assert keys == ["ak0", "ak1"]
    assert loader.stats.skipped_samples == ((str(lying), "bk0", "truncated"),)
    size = len(clip) + 700
    assert (f"sample 'bk0' dropped (truncated): tar member 'bk0.mp4' runs into the members after it: its header says "
            f"{size} bytes, but the header of member 'bk0.srt' starts at byte {-(-len(clip) // 512) * 512} of them"
            in caplog.text)


@pytest.mark.parametrize("compressed", [False, True], ids=["seekable_tar", "streamed_tar_gz"])
def test_preprocess_drops_the_sample_of_a_member_claiming_more_bytes_than_it_has(tmp_path, clip, compressed):
    # Before: preprocess wrote 'dk0' to its output (mp4 with the swallowed bytes, no transcript: num_words 0) as a
    # good sample, and recorded the damage with an empty key.
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "a.tar", _members("a", clip, 1))
    data = _lying_size(_tar(_members("d", clip, 2)), "dk0.mp4", 700)
    (raw / ("d.tar.gz" if compressed else "d.tar")).write_bytes(gzip.compress(data) if compressed else data)
    result = preprocess(str(raw), str(tmp_path / "out"), progress=False)
    manifest = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    skipped = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert [(row["key"], row["num_words"]) for row in manifest] == [("ak0", 2)]
    assert [(row["key"], row["reason"]) for row in skipped] == [("dk0", "truncated")]
    assert "tar member 'dk0.mp4' runs into the members after it" in skipped[0]["message"]
    assert result.num_samples == 1 and result.num_skipped == 1


def test_a_damaged_header_after_a_whole_member_still_keeps_that_sample(tmp_path, clip):
    # The other side of the rule: a damaged header that still reads as one (here its checksum is wrong) keeps the
    # sample before it, as before. (Until rel62 garbage over a whole header block kept it too; such a block may be that
    # member's own data, its header claiming fewer bytes than it has, so it now drops it: test_rel62_training_path.py,
    # tests/test_shard_damage_counts.py.)
    data = bytearray(_tar(_members("a", clip, 2)))
    offset = tarfile.open(fileobj=io.BytesIO(bytes(data))).getmember("ak1.mp4").offset
    data[offset + 148:offset + 156] = b"0000000\0"
    url = tmp_path / "s.tar"
    url.write_bytes(bytes(data))
    loader = loaders.make_loader([str(url)], seed=0, **OPTIONS)
    assert [k for batch in loader for k in batch.sample_keys] == ["ak0"]
    assert loader.stats.skipped_samples == ((str(url), "ak1", "truncated"),)


def test_find_tar_header_whole_cut_and_absent():
    from loaders.shards import find_tar_header

    data = _tar([("x.mp4", b"\1" * 1000), ("x.srt", SRT)])
    whole = data[512:512 + 1024 + 512]  # x.mp4's data (2 blocks) and x.srt's whole header
    assert find_tar_header(whole) == (1024, "x.srt")
    assert find_tar_header(whole[:1024 + 300]) == (1024, "x.srt")  # the header cut after its magic
    assert find_tar_header(whole[:1024 + 160]) == (1024, "x.srt")  # ... and before it (name and numbers only)
    assert find_tar_header(whole[:1024 + 100]) is None  # the name alone is no evidence
    assert find_tar_header(b"\1" * 4096) is None
    assert find_tar_header(b"ustar" * 1000) is None


# ---------------------------------------------------------------- F2: compressed shards in a directory of shards


def test_preprocess_reads_compressed_shards_of_a_directory_and_counts_a_directory_named_as_a_shard(tmp_path, clip,
                                                                                                    caplog):
    # Before: in a directory of shards only `*.tar` files were read: `b.tar.gz` and `c.tgz` were left out with no
    # word (4 of 6 samples lost), a directory `d.tar` too; with only `.tar.gz` shards, 0 samples ("1 file ignored").
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "a.tar", _members("a", clip, 2))
    (raw / "b.tar.gz").write_bytes(gzip.compress(_tar(_members("b", clip, 2))))
    (raw / "c.tgz").write_bytes(gzip.compress(_tar(_members("c", clip, 2))))
    (raw / "d.tar").mkdir()
    (raw / "notes.txt").write_text("not a shard")
    with caplog.at_level(logging.INFO):
        result = preprocess(str(raw), str(tmp_path / "out"), dry_run=True, progress=False)
    assert sorted(k for keys in result.keys_by_shard.values() for k in keys) == [
        "ak0", "ak1", "bk0", "bk1", "ck0", "ck1"]
    assert result.num_skipped == 1
    assert "1 top-level entry not read (not shards: names ending .tar/.tar.gz/" in caplog.text
    assert "notes.txt" in caplog.text
    only_gz = tmp_path / "only_gz"
    only_gz.mkdir()
    (only_gz / "b.tar.gz").write_bytes(gzip.compress(_tar(_members("b", clip, 2))))
    result = preprocess(str(only_gz), str(tmp_path / "out2"), dry_run=True, progress=False)
    assert sorted(k for keys in result.keys_by_shard.values() for k in keys) == ["bk0", "bk1"]


def test_report_reads_the_same_shards_of_a_directory_as_preprocess(tmp_path, clip):
    # Before: report read `*.tar` and `*.tar.gz` but not `.tgz` (or .tar.xz …): one directory, two sets of shards.
    from avalign.report import iter_inputs

    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "a.tar", _members("a", clip, 1))
    (raw / "c.tgz").write_bytes(gzip.compress(_tar(_members("c", clip, 1))))
    (raw / "x.tar.xz").write_bytes(_xz(_tar(_members("x", clip, 1))))
    items = list(iter_inputs(str(raw)))
    assert sorted((type(item).__name__, item.key) for item in items) == [
        ("ClipInput", "ak0"), ("ClipInput", "ck0"), ("ClipInput", "xk0")]


def _xz(data: bytes) -> bytes:
    import lzma

    return lzma.compress(data)


# ------------------------------------------------------------------------- F3: a shard that changes under preprocess


def test_preprocess_refuses_to_read_members_of_a_shard_changed_after_it_was_listed(tmp_path, clip, monkeypatch):
    # Before: members were read back at the offsets of the listing from whatever file was there now: the rewritten
    # shard (same keys, another order) gave 'x' the bytes at x's old offsets (y's media, a tar header...), skipped as
    # "transcript: cannot decode as utf-8 … re-save the transcript as UTF-8" and "decode: not audio or video".
    from avalign.preprocess import list_inputs, preprocess

    short = tiny_clip(tmp_path / "short.mp4", 0.5, fps=10, sample_rate=16000)
    raw = tmp_path / "raw"
    raw.mkdir()
    shard = raw / "a.tar"
    write_tar(shard, [("x.mp4", clip), ("x.srt", SRT), ("y.mp4", short), ("y.srt", SRT)])

    def list_then_rewrite(*args, **kwargs):
        plan = list_inputs(*args, **kwargs)
        listed = shard.stat().st_mtime_ns
        write_tar(shard, [("y.mp4", short), ("y.srt", SRT), ("x.mp4", clip), ("x.srt", SRT)])  # in place: same size
        os.utime(shard, ns=(listed + 10**9, listed + 10**9))  # a later mtime even where the clock is coarse
        return plan

    monkeypatch.setattr("avalign.preprocess._run.list_inputs", list_then_rewrite)  # private: preprocess's listing
    result = preprocess(str(raw), str(tmp_path / "out"), progress=False)
    skipped = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert result.num_samples == 0
    assert sorted((row["key"], row["reason"]) for row in skipped) == [("x", "read"), ("y", "read")]
    for row in skipped:
        assert f"{shard}: the shard changed after it was listed (mtime_ns " in row["message"]
        assert f"member(s) ['{row['key']}.mp4', '{row['key']}.srt'] are not read from another file" in row["message"]


# ------------------------------------------------------------------------- F4: a named pipe where a shard is expected


class Hang(BaseException):
    """Raised by the ``alarm`` fixture: a BaseException, so that no reader's ``except OSError`` takes it for a skip."""


@pytest.fixture
def alarm():
    """``alarm(seconds)``: the test fails (``Hang`` in the main thread) if it is still running then."""
    import signal

    def expire(signum, frame):
        raise Hang("still waiting after the alarm: the reader hangs")

    previous = signal.signal(signal.SIGALRM, expire)
    yield signal.alarm
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_named_pipe_among_the_shards_is_a_counted_open_skip_not_a_hang(tmp_path, clip, caplog, alarm):
    # Before: open() of a named pipe that no process writes waited forever: the epoch (and the training run) hung.
    good = write_tar(tmp_path / "a.tar", _members("a", clip, 1))
    fifo = tmp_path / "b.tar"
    os.mkfifo(fifo)
    loader = loaders.make_loader([str(good), str(fifo)], seed=0, **OPTIONS)
    alarm(30)
    with caplog.at_level(logging.WARNING):
        keys = [k for batch in loader for k in batch.sample_keys]
    assert keys == ["ak0"]
    assert loader.stats.skipped_samples == ((str(fifo), "", "open"),)
    assert "not a regular file but a named pipe: not read" in caplog.text
    assert f"hint: read it as `pipe:cat {fifo}`" in caplog.text


def test_preprocess_counts_a_named_pipe_in_a_directory_of_shards_without_opening_it(tmp_path, clip, alarm):
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "a.tar", _members("a", clip, 1))
    os.mkfifo(raw / "b.tar")
    alarm(30)
    result = preprocess(str(raw), str(tmp_path / "out"), dry_run=True, progress=False)
    assert [k for keys in result.keys_by_shard.values() for k in keys] == ["ak0"]
    assert result.num_skipped == 1


# ------------------------------------------------------------------------- F5: a shard that ends between two members


@pytest.mark.parametrize("keep, dropped", [(0, "b"), (4, "b"), (2, "")], ids=["at_the_header", "in_b.txt", "in_c.mp4"])
def test_a_shard_cut_between_members_drops_the_sample_that_may_lack_one(tmp_path, clip, keep, dropped, caplog):
    # A shard still being written (or a download cut at a member boundary): b.mp4 is whole, b.txt not there yet.
    # Before: 'b' was delivered without its caption, and the loss was counted under no key: ('…', '', 'truncated').
    # Where what is left of the next header's name shows another key ('c…'), 'b' is whole and delivered, as before.
    members = [("a.mp4", clip), ("a.txt", b"cap a"), ("b.mp4", clip), ("b.txt", b"cap b"), ("c.mp4", clip)]
    data = _tar(members)
    cut_at = "c.mp4" if dropped == "" else "b.txt"
    offset = tarfile.open(fileobj=io.BytesIO(data)).getmember(cut_at).offset
    url = tmp_path / "s.tar"
    url.write_bytes(data[:offset + keep])
    loader = loaders.make_loader([str(url)], seed=0, **OPTIONS)
    with caplog.at_level(logging.WARNING):
        delivered = {k: t for batch in loader for k, t in zip(batch.sample_keys, _texts_per_item(batch))}
    if dropped:
        assert delivered == {"a": ["cap a"]}
        assert loader.stats.skipped_samples == ((str(url), "b", "truncated"),)
        where = ("the tar ends after member 'b.mp4' without end-of-archive blocks" if keep == 0
                 else "the tar ends 4 bytes into the header after member 'b.mp4' (name field 'b.tx')")
        assert f"sample 'b' dropped (truncated): {where}: a shard still being written, or cut short" in caplog.text
    else:
        assert delivered == {"a": ["cap a"], "b": ["cap b"]}
        assert loader.stats.skipped_samples == ((str(url), "", "truncated"),)


def _texts_per_item(batch) -> list[list[str]]:
    """The segment texts of each item of ``batch``, by the item column of its segment rows."""
    items = batch.segment_spans[:batch.num_segments, 0].tolist()
    return [[t for t, i in zip(batch.segment_texts, items) if i == item] for item in range(batch.num_items)]
