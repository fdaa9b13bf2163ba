"""adv67: adversarial round on the sixteenth session's merges (BENCHMARKS.md, "adv67").

Each test asserts against an oracle and failed before its fix.
"""
from __future__ import annotations

import contextlib
import glob
import gzip
import io
import os
import shutil
import subprocess
import sys
import tarfile
import time

import pytest

from avalign.preprocess import list_inputs, read_members
from loaders import make_dataset
from loaders.shards import open_shard
from tests.conftest import REPO, local_http_server
from tests.test_dataset import OPTIONS, shards  # noqa: F401 - the module fixture
from tests.test_soak66_leftovers import PARENT


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


_OTHER_NAMESPACE_RUN = """
import os, sys, time
live = {int(p) for p in sys.argv[1].split(",")}  # pids alive in the test's namespace
while True:  # a process of this new pid namespace whose pid is free in the test's (as a pid seen from elsewhere is)
    child = os.fork()
    if child == 0 and os.getpid() not in live:
        break
    if child == 0:
        os._exit(7)  # a pid alive there too: the next one
    if os.waitstatus_to_exitcode(os.waitpid(child, 0)[1]) != 7:
        os._exit(0)  # the run below ended
from torch.utils.data import DataLoader
import loaders
dataset = loaders.make_dataset(sys.argv[2:], seed=5, budgets=(20, 32000, 16), window_seconds=0.5, buffer_size=4,
                               frame_size=(24, 32), max_items=8, max_words=16)
assert list(DataLoader(dataset, batch_size=None, num_workers=2))  # its board is made
print(os.getpid(), flush=True)
sys.stdin.read()  # alive, its board idle (an evaluation mid-epoch), until the test closes stdin
"""


def test_a_live_board_of_another_pid_namespace_is_not_removed_however_idle(shards, tmp_path):
    """A training process in another container sharing ``/dev/shm`` (its own pid namespace, same uid) whose board is
    idle for longer than MERGE_WAIT_SECONDS (its main process in a 20-minute evaluation mid-epoch). Its pid is not
    alive as seen from here. Before: building any dataset here removed its board (its stopped workers' done records
    and tails with it: its merger then waited 900 s and raised). Now a board of another pid namespace is left."""
    unshare = ["unshare", "--pid", "--fork", "--mount-proc"]
    if shutil.which("unshare") is None or subprocess.run([*unshare, "true"]).returncode != 0:
        pytest.skip("needs unshare --pid --mount-proc (a pid namespace of its own)")
    live = ",".join(p for p in os.listdir("/proc") if p.isdigit())
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([*unshare, sys.executable, "-c", _OTHER_NAMESPACE_RUN, live, *shards["paths"][:2]], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        pid = int(proc.stdout.readline())
        assert not os.path.exists(f"/proc/{pid}")  # not alive as seen from here
        [board] = glob.glob(os.path.join(PARENT, f"avalign-tails-{pid}-*"))
        old = time.time() - 1000.0  # idle longer than MERGE_WAIT_SECONDS (900 s)
        for entry in [*os.scandir(board), board]:
            os.utime(entry, (old, old))
        make_dataset(shards["paths"][:2], seed=5, **OPTIONS)  # removes abandoned boards
        assert os.path.isdir(board)
        assert sorted(os.listdir(board))  # its pass directories too
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        finally:
            proc.kill()
            proc.wait()



@contextlib.contextmanager
def _serve_without_ranges(blob: bytes, sent: list):
    """An HTTP server on 127.0.0.1 that ignores ``Range`` (200 and the whole file, as python's http.server and some
    static servers do); ``sent`` gets the size of each body it sent whole. Yields the file's URL."""

    def answer(handler, body: bool) -> None:
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(blob)))
        handler.end_headers()
        if body:
            try:
                handler.wfile.write(blob)
                sent.append(len(blob))
            except OSError:  # the client stopped reading (it had what it asked for)
                handler.close_connection = True

    with local_http_server(answer) as base:
        yield f"{base}/data.tar"


def _six_samples() -> dict[str, bytes]:
    members = {}
    for i in range(6):
        members[f"k{i}.mp4"] = bytes([i + 1]) * 2_000_000
        members[f"k{i}.txt"] = f"clip {i}".encode()
    return members


def test_an_http_shard_without_range_requests_is_read_back_in_one_stream():
    """preprocess's read-back of an HTTP shard whose server ignores ``Range``. The listing fell back to one stream
    (loaders._remote) but its locators stayed the seek kind: each sample's read-back asked for a range, got the whole
    file and streamed it again from its start to the member (quadratic in the shard's size; here the read even came
    back short: ``member 'k0.mp4' is truncated (589259 of 2000000 bytes)``). Now the shard's locators are the streamed
    kind and ``read_streamed`` reads it on in one pass. Oracles: the bytes written, the bodies the server sent."""
    members, sent = _six_samples(), []
    with _serve_without_ranges(gzip.decompress(_tar_gz(members)), sent) as url:
        samples = sorted(list_inputs(url).samples, key=lambda s: s.key)
        assert [s.key for s in samples] == [f"k{i}" for i in range(6)]
        listed = len(sent)
        for i, sample in enumerate(samples):
            assert read_members([sample.media, sample.extras[0][1]]) == [members[f"k{i}.mp4"], members[f"k{i}.txt"]]
    assert len(sent) - listed <= 2  # one stream (its first 5 MiB range answered whole), not one per sample


def test_a_streamed_http_shard_reads_the_size_asked_for():
    """``open_shard`` on a server without range requests, past its first 5 MiB (read on as one streamed GET): a
    ``read(n)`` returned what the connection held (589,259 of 2,000,000 bytes), which a reader takes for the end of
    the file. Now ``n`` bytes, as from a file. Oracle: the bytes served."""
    blob, sent = gzip.decompress(_tar_gz(_six_samples())), []
    with _serve_without_ranges(blob, sent) as url:
        with open_shard(url) as stream:
            stream.seek(6_000_000)
            assert stream.read(2_000_000) == blob[6_000_000:8_000_000]
            assert stream.read(2_000_000) == blob[8_000_000:10_000_000]
            assert stream.streamed
