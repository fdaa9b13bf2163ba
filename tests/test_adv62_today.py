"""Adversarial round on the thirteenth session's changes (helper adv62; BENCHMARKS.md, "adv62"). Inputs are
generated here (tiny ffmpeg clips in tar shards, tars written by GNU tar); oracles are the keys, members and bytes
written, and the pid of the worker stopped on purpose."""
from __future__ import annotations

import os
import re
import signal
import threading
import time

import pytest

import loaders
from tests.conftest import tiny_clip
from tests.corrupt_cases import write_tar

OPTIONS = dict(frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None, max_items=1)


@pytest.fixture(scope="module")
def clip(tmp_path_factory) -> bytes:
    return tiny_clip(tmp_path_factory.mktemp("adv62_clip") / "c.mp4", 1.0, fps=10, sample_rate=16000)


# ---------------------------------------------- worker_stall_seconds: a worker stopped after it queued its steps


class _RecordsPid:
    """A tokenizer that writes its worker's pid to ``record`` (once) and splits on spaces."""

    def __init__(self, record: str) -> None:
        self.record, self.parent = record, os.getpid()

    def __call__(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        if os.getpid() != self.parent and not os.path.exists(self.record):
            with open(self.record, "w") as handle:
                handle.write(str(os.getpid()))
        pieces = [m.span() for m in re.finditer(r"\S+", text)]
        return list(range(len(pieces))), pieces


SRT = b"1\n00:00:00,100 --> 00:00:00,800\nhello there\n\n"


@pytest.mark.usefixtures("collector_on_test_objects")
@pytest.mark.parametrize("big_steps", [False, True], ids=["small_steps", "steps_over_the_pipe_buffer"])
def test_a_worker_stopped_with_steps_on_its_queue_ends_the_epoch_within_the_stall_limit(tmp_path, clip, big_steps):
    # Before: the main process found the stopped worker's queued step at once, and unpickling its tensors asked the
    # stopped worker for their shared-memory file descriptors (torch's resource_sharer, no timeout): it hung there
    # forever whatever worker_stall_seconds. With steps over the pipe's 64 KiB (a 320 KB caption passed through
    # beside a transcript), the worker stopped in the middle of writing one, and the main process waited for the rest
    # of it, forever too. (Here a timer continues the worker after 20 s: the epoch then ended normally, with no
    # error: "DID NOT RAISE".)
    def members(p: str, j: int) -> list[tuple[str, bytes]]:
        if big_steps:
            return [(f"{p}k{j}.mp4", clip), (f"{p}k{j}.srt", SRT), (f"{p}k{j}.txt", f"cap {p}{j} ".encode() * 40000)]
        return [(f"{p}k{j}.mp4", clip), (f"{p}k{j}.txt", f"cap {p}{j}".encode())]

    shards = [write_tar(tmp_path / f"{p}.tar", [m for j in range(60 if big_steps else 100) for m in members(p, j)])
              for p in "ab"]
    record = tmp_path / "pid"
    stall_seconds = 2.0
    loader = loaders.make_loader(shards, seed=0, num_workers=1, tokenizer=_RecordsPid(str(record)),
                                 pipe_stall_seconds=1.0, worker_stall_seconds=stall_seconds, **OPTIONS)
    it = iter(loader)
    first = next(it)
    assert len(first.sample_keys) == 1
    time.sleep(1.0)  # the worker fills its queue with steps (their tensors in its shared memory)
    pid = int(record.read_text())
    os.kill(pid, signal.SIGSTOP)
    rescue = threading.Timer(20.0, lambda: os.kill(pid, signal.SIGCONT))
    rescue.start()
    stopped = time.monotonic()
    try:
        with pytest.raises(RuntimeError) as info:
            for _ in it:
                pass
        assert time.monotonic() - stopped < stall_seconds + 6.0
        assert re.match(rf"loader worker 0 \(pid {pid}, stopped\) sent nothing for \d+\.\d s "
                        r"\(worker_stall_seconds=2\) while reading shard '.*[ab]\.tar', after its sample '[ab]k\d+'",
                        str(info.value))
        time.sleep(0.5)
        with pytest.raises(ProcessLookupError):  # killed and reaped
            os.kill(pid, 0)
    finally:
        rescue.cancel()
        for sig in (signal.SIGCONT, signal.SIGKILL):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


@pytest.mark.timeout(120)  # on the code before, this test hangs: pytest-timeout ends it
@pytest.mark.usefixtures("collector_on_test_objects")
@pytest.mark.parametrize("stall_seconds", [60.0, None], ids=["stall_limit", "no_stall_limit"])
def test_a_worker_killed_in_the_middle_of_sending_a_step_is_named_not_waited_for(tmp_path, clip, stall_seconds):
    # Before: a worker SIGKILLed (the OOM killer) while its queue's feeder thread was writing a step over the pipe's
    # 64 KiB left the main process reading the rest of that message forever: the main process (and any other forked
    # worker) holds the pipe's write end too, so no end of file comes. Now the stall watch sees the zombie, ends the
    # read within seconds (not after worker_stall_seconds) and names the death. Without a stall limit
    # (worker_stall_seconds=None: wait forever for a live worker) there was no watch, and the death hung the epoch
    # (fourteenth session).
    shards = [write_tar(tmp_path / f"{p}.tar", [m for j in range(60) for m in (
        (f"{p}k{j}.mp4", clip), (f"{p}k{j}.srt", SRT), (f"{p}k{j}.txt", f"cap {p}{j} ".encode() * 40000))])
        for p in "ab"]
    record = tmp_path / "pid"
    loader = loaders.make_loader(shards, seed=0, num_workers=1, tokenizer=_RecordsPid(str(record)),
                                 pipe_stall_seconds=1.0, worker_stall_seconds=stall_seconds, **OPTIONS)
    it = iter(loader)
    next(it)
    time.sleep(1.0)  # the worker's queue is full: its feeder thread is in the middle of writing a step
    pid = int(record.read_text())
    os.kill(pid, signal.SIGKILL)
    killed = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        for _ in it:
            pass
    assert time.monotonic() - killed < 8.0  # not the stall limit (60 s): the zombie is seen within seconds
    assert str(info.value).startswith(f"loader worker 0 (pid {pid}) was killed by signal 9 without finishing")


# ---------------------------------------------------------- tars from other writers: a sparse member (GNU tar -S)


def _sparse_mp4(path, clip: bytes, hole: int) -> bytes:
    """``clip`` with a trailing ``free`` box of ``hole`` zero bytes left as a hole in the file (ignored by decoders)."""
    import struct

    with open(path, "wb") as handle:
        handle.write(clip + struct.pack(">I", 8 + hole) + b"free")
        handle.seek(hole - 1, os.SEEK_CUR)
        handle.write(b"\0")
    return path.read_bytes()


@pytest.mark.parametrize("last", [False, True], ids=["mid_shard", "last_member"])
def test_preprocess_reads_a_sparse_member_of_a_seekable_tar_as_its_content(tmp_path, clip, last):
    # Before: preprocess read `size` bytes at the member's offset, which for a sparse member are its stored pieces
    # and the headers after it: mid-shard it wrote those bytes as x.mp4 (the output's x.mp4 != the member); as the
    # last member it dropped the good sample 'x' as truncated (skipped.jsonl: [('x', 'truncated')]).
    import json
    import shutil
    import subprocess
    import tarfile

    from avalign.preprocess import preprocess

    if shutil.which("tar") is None:
        pytest.skip("GNU tar is not installed")
    src = tmp_path / "src"
    src.mkdir()
    content = _sparse_mp4(src / "x.mp4", clip, 256 * 1024)
    if os.stat(src / "x.mp4").st_blocks * 512 >= len(content):
        pytest.skip("this filesystem keeps no holes")
    (src / "y.mp4").write_bytes(clip)
    (src / "y.txt").write_bytes(os.urandom(300 * 1024).hex().encode())  # room after x for its full size
    raw = tmp_path / "raw"
    raw.mkdir()
    order = ["y.mp4", "y.txt", "x.mp4"] if last else ["x.mp4", "y.mp4", "y.txt"]
    subprocess.run(["tar", "--format=gnu", "-S", "-cf", str(raw / "s.tar"), "-C", str(src), *order], check=True)
    with tarfile.open(raw / "s.tar") as tar:
        assert tar.getmember("x.mp4").issparse()
    result = preprocess(str(raw), str(tmp_path / "out"), progress=False)
    manifest = [json.loads(line)["key"] for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    assert sorted(manifest) == ["x", "y"] and result.num_skipped == 0
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as tar:
        assert tar.extractfile("x.mp4").read() == content


# ------------------------------------------- a PAX extended header whose records do not parse: not a silent end


def test_a_pax_header_that_does_not_parse_is_counted_not_taken_for_the_end(tmp_path, clip):
    # Before: tarfile raised InvalidHeaderError inside the PAX header of the member after 'a' and ended the archive
    # there with no error: the loader delivered 'a' and lost 'b' and 'c' with no record (skipped_samples == ()), and
    # preprocess wrote 'a' alone with an empty skipped.jsonl.
    import io
    import json
    import tarfile

    from avalign.preprocess import preprocess

    long_key = "b" * 120  # a name over 100 characters: a PAX header carries it
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, blob in [("a.mp4", clip), ("a.txt", b"cap a"), (f"{long_key}.mp4", clip), (f"{long_key}.txt", b"b"),
                           ("c.mp4", clip), ("c.txt", b"cap c")]:
            info = tarfile.TarInfo(name)
            info.size = len(blob)
            tar.addfile(info, io.BytesIO(blob))
    data = bytearray(out.getvalue())
    pax = next(off for off in range(0, len(data), 512) if data[off + 156:off + 157] == b"x")
    assert data[pax + 512:pax + 516] == b"134 "  # "134 path=bbb…"
    data[pax + 512:pax + 516] = b"0   "  # its first record's length: 0
    raw = tmp_path / "raw"
    raw.mkdir()
    shard = raw / "p.tar"
    shard.write_bytes(bytes(data))

    loader = loaders.make_loader([str(shard)], seed=0, **OPTIONS)
    assert [k for batch in loader for k in batch.sample_keys] == ["a"]
    assert loader.stats.skipped_samples == ((str(shard), "", "truncated"),)

    preprocess(str(raw), str(tmp_path / "out"), progress=False)
    manifest = [json.loads(line)["key"] for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    skipped = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert manifest == ["a"]
    assert [(row["key"], row["reason"]) for row in skipped] == [("", "truncated")]
    assert "its records do not parse" in skipped[0]["message"]


def test_a_gnu_volume_label_is_not_a_dropped_sample(tmp_path, clip):
    # Before: the label header of `tar -V LABEL` was read as a member that is not a regular file: a good shard
    # counted a dropped sample named after the label (skipped_samples == ((url, 'my volume', 'member_type'),)).
    import shutil
    import subprocess

    if shutil.which("tar") is None:
        pytest.skip("GNU tar is not installed")
    src = tmp_path / "src"
    src.mkdir()
    for key in ("a", "b"):
        (src / f"{key}.mp4").write_bytes(clip)
        (src / f"{key}.txt").write_bytes(f"caption {key}".encode())
    shard = tmp_path / "v.tar"
    subprocess.run(["tar", "-cf", str(shard), "-V", "my volume", "-C", str(src), "a.mp4", "a.txt", "b.mp4", "b.txt"],
                   check=True)
    loader = loaders.make_loader([str(shard)], seed=0, **OPTIONS)
    assert sorted(k for batch in loader for k in batch.sample_keys) == ["a", "b"]
    assert loader.stats.skipped_samples == ()
