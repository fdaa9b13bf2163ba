"""Regression tests of the training-path leftovers of adv61 (helper rel62; BENCHMARKS.md, "rel62: training-path
leftovers"). Inputs are generated here (tiny ffmpeg clips in tar shards); oracles are the keys, captions and members
written into the shards, and the pid of the worker stopped on purpose."""
from __future__ import annotations

import gzip
import io
import json
import logging
import os
import re
import signal
import tarfile
import time

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


# ------------------------------------------------------ 2: a tar member whose header claims fewer bytes than it has

CAPTION = " ".join(f"word{j:03d}" for j in range(90)).encode()  # 719 bytes: two blocks of data
CAPTION_OPTIONS = dict(OPTIONS, budgets=(100, 64_000, 256))  # 90 tokens a caption


def _short_size(data: bytes, member: str, size: int) -> bytes:
    """``data`` (a tar) with ``member``'s header claiming ``size`` bytes, fewer than it holds (checksum fixed: the
    header itself is valid, as after a writer's bug or a bit flip in the size field that was then re-summed)."""
    offset = tarfile.open(fileobj=io.BytesIO(data)).getmember(member).offset
    block = bytearray(data[offset:offset + 512])
    block[124:136] = b"%011o\0" % size
    block[148:156] = b"%06o\0 " % (sum(block[:148]) + 8 * 32 + sum(block[156:]))
    assert tarfile.TarInfo.frombuf(bytes(block), "utf-8", "surrogateescape").size == size
    return data[:offset] + bytes(block) + data[offset + 512:]


def _caption_members(prefix: str, clip: bytes, n: int) -> list[tuple[str, bytes]]:
    return [m for j in range(n) for m in ((f"{prefix}k{j}.mp4", clip), (f"{prefix}k{j}.txt", CAPTION))]


@pytest.mark.usefixtures("collector_on_test_objects")
@pytest.mark.parametrize("num_workers", [0, 2])
def test_a_member_claiming_fewer_bytes_than_it_has_drops_its_sample_in_the_loader(tmp_path, clip, caplog, num_workers):
    # Before: 'bk0' was delivered with its caption cut to its first 100 bytes ('word000 … word012 w'), and the loss
    # was counted under no key: ('…/b.tar', '', 'truncated'), "tar header after member 'bk0.txt' is damaged".
    good = write_tar(tmp_path / "a.tar", _caption_members("a", clip, 2))
    short = tmp_path / "b.tar"
    short.write_bytes(_short_size(_tar(_caption_members("b", clip, 2)), "bk0.txt", 100))
    # The rule's other side (unchanged): a block that still reads as a header (octal fields, ustar magic) whose
    # checksum fails is a damaged header of the member after, not data: the sample before it is whole and kept.
    data = bytearray(_tar(_caption_members("c", clip, 2)))
    offset = tarfile.open(fileobj=io.BytesIO(bytes(data))).getmember("ck1.mp4").offset
    data[offset + 148:offset + 156] = b"0000000\0"  # a wrong checksum
    bad_sum = tmp_path / "c.tar"
    bad_sum.write_bytes(bytes(data))
    loader = loaders.make_loader([good, str(short), str(bad_sum)], seed=0, num_workers=num_workers, **CAPTION_OPTIONS)
    with caplog.at_level(logging.WARNING):
        batches = list(loader)
    assert sorted(k for batch in batches for k in batch.sample_keys) == ["ak0", "ak1", "ck0"]
    assert all(text == CAPTION.decode() for batch in batches for text in batch.segment_texts)
    assert sorted(loader.stats.skipped_samples) == [(str(short), "bk0", "truncated"), (str(bad_sum), "ck1", "truncated")]
    if num_workers == 0:  # (the workers' log records stay in the workers)
        assert ("sample 'bk0' dropped (truncated): tar member 'bk0.txt' is followed by a block that is no tar header "
                "where the next header must be (invalid header; name field 'word064 word065 " in caplog.text)
        assert "the member's header may claim fewer bytes (100) than it has" in caplog.text


@pytest.mark.parametrize("compressed", [False, True], ids=["seekable_tar", "streamed_tar_gz"])
def test_preprocess_drops_the_sample_of_a_member_claiming_fewer_bytes_than_it_has(tmp_path, clip, compressed):
    # Before: preprocess wrote 'dk0' with its caption cut to 100 bytes, and recorded the damage with an empty key.
    from avalign.preprocess import preprocess

    raw = tmp_path / "raw"
    raw.mkdir()
    write_tar(raw / "a.tar", _caption_members("a", clip, 1))
    data = _short_size(_tar(_caption_members("d", clip, 2)), "dk0.txt", 100)
    (raw / ("d.tar.gz" if compressed else "d.tar")).write_bytes(gzip.compress(data) if compressed else data)
    result = preprocess(str(raw), str(tmp_path / "out"), progress=False)
    manifest = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    skipped = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert [row["key"] for row in manifest] == ["ak0"]
    assert [(row["key"], row["reason"]) for row in skipped] == [("dk0", "truncated")]
    assert "tar member 'dk0.txt' is followed by a block that is no tar header" in skipped[0]["message"]
    assert result.num_samples == 1 and result.num_skipped == 1


@pytest.mark.parametrize("zeroed, dropped", [("zk1.mp4", "zk0"), ("zk0.mp4", "")], ids=["after_a_member", "first"])
def test_a_header_zeroed_in_place_is_not_taken_for_the_end_of_the_archive(tmp_path, clip, zeroed, dropped):
    # Before: tarfile took the zero block for the end of the archive: 'zk0' was delivered (maybe without a member of
    # its own: the zeroed header may have been one) and every later sample was lost with no record (skipped: ()).
    good = write_tar(tmp_path / "a.tar", _caption_members("a", clip, 1))
    data = bytearray(_tar(_caption_members("z", clip, 3)))
    offset = tarfile.open(fileobj=io.BytesIO(bytes(data))).getmember(zeroed).offset
    data[offset:offset + 512] = bytes(512)
    url = tmp_path / "z.tar"
    url.write_bytes(bytes(data))
    loader = loaders.make_loader([good, str(url)], seed=0, **CAPTION_OPTIONS)
    assert [k for batch in loader for k in batch.sample_keys] == ["ak0"]
    assert loader.stats.skipped_samples == ((str(url), dropped, "truncated"),)


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


# ------------------------------------------------------- 1: a loader worker that stops without dying (SIGSTOP, hung NFS)


class _StopsOnCaption:
    """A tokenizer that stops its own process (SIGSTOP) on the caption ``text`` inside a loader worker, after writing
    its pid and the time to ``record``: a worker that is alive but never sends again. Elsewhere it splits on spaces."""

    def __init__(self, text: str, record: str) -> None:
        self.text, self.record, self.parent = text, record, os.getpid()

    def __call__(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        if self.text in text and os.getpid() != self.parent:
            with open(self.record, "w") as handle:
                handle.write(f"{os.getpid()} {time.time()}")
            os.kill(os.getpid(), signal.SIGSTOP)
        pieces = [m.span() for m in re.finditer(r"\S+", text)]
        return list(range(len(pieces))), pieces


def _captioned(prefix: str, clip: bytes, n: int) -> list[tuple[str, bytes]]:
    return [m for j in range(n) for m in ((f"{prefix}k{j}.mp4", clip), (f"{prefix}k{j}.txt", f"caption {prefix}k{j}".encode()))]


@pytest.mark.usefixtures("collector_on_test_objects")  # make_loader's pre-fork collection: this test's objects
def test_a_stopped_loader_worker_ends_the_epoch_with_its_pid_and_shard_within_the_stall_limit(tmp_path, clip):
    # Before: the main process waited for the stopped worker forever (as torch's DataLoader does without timeout=).
    shards = [write_tar(tmp_path / f"{p}.tar", _captioned(p, clip, 3)) for p in "ab"]
    record = tmp_path / "stopped"
    stall_seconds = 2.0
    loader = loaders.make_loader(shards, seed=0, num_workers=2, tokenizer=_StopsOnCaption("caption bk1", str(record)),
                                 pipe_stall_seconds=1.0, worker_stall_seconds=stall_seconds, **OPTIONS)
    pid = None
    try:
        with pytest.raises(RuntimeError) as info:
            for _ in loader:
                pass
        raised = time.time()
        pid, stopped = record.read_text().split()
        pid = int(pid)
        assert raised - float(stopped) < stall_seconds + 5.0  # within the limit (and the 1 s poll, on a busy machine)
        message = str(info.value)
        # bk0's step is queued before the worker stops on bk1. Received first, it is the last key named; on a busy
        # machine the main process may still be unpickling it when the worker stops (its tensors' descriptors come
        # from the stopped worker), and the stall watch ends that receive: nothing was received from the shard then.
        assert re.fullmatch(rf"loader worker [01] \(pid {pid}, stopped\) sent nothing for \d+\.\d s "
                            rf"\(worker_stall_seconds=2\) while reading shard '{re.escape(shards[1])}', (after its "
                            r"sample 'bk0'|before its first sample); it is alive but not progressing: stopped "
                            r"\(SIGSTOP, a debugger\), .*", message)
        assert float(re.search(r"sent nothing for (\S+) s", message).group(1)) >= stall_seconds
        with pytest.raises(ProcessLookupError):  # killed and reaped: no stopped process is left behind
            os.kill(pid, 0)
    finally:
        if pid is not None:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass


@pytest.mark.usefixtures("collector_on_test_objects")
def test_the_default_worker_stall_limit_leaves_a_normal_run_whole(tmp_path, clip):
    import inspect

    assert inspect.signature(loaders.make_loader).parameters["worker_stall_seconds"].default == 900.0
    shards = [write_tar(tmp_path / f"{p}.tar", _captioned(p, clip, 3)) for p in "ab"]
    loader = loaders.make_loader(shards, seed=0, num_workers=2, **OPTIONS)
    assert sorted(k for batch in loader for k in batch.sample_keys) == ["ak0", "ak1", "ak2", "bk0", "bk1", "bk2"]
    assert loader.stats.skipped_samples == ()


@pytest.mark.parametrize("value, match", [
    (0, r"worker_stall_seconds must be a positive number of seconds or None \(wait forever\), got 0; try 900"),
    (float("inf"), r"worker_stall_seconds must be a positive number of seconds or None .*got inf"),
    ("60", r"worker_stall_seconds must be a positive number of seconds or None .*got '60'"),
    (True, r"worker_stall_seconds must be a positive number of seconds or None .*got True"),
    (120, r"worker_stall_seconds must be above pipe_stall_seconds \(300 s: .*got worker_stall_seconds = 120; try 900"),
])
def test_worker_stall_seconds_is_checked(tmp_path, clip, value, match):
    shard = write_tar(tmp_path / "a.tar", _captioned("a", clip, 1))
    with pytest.raises(ValueError, match=match):
        loaders.make_loader([shard], seed=0, num_workers=2, worker_stall_seconds=value, **OPTIONS)
