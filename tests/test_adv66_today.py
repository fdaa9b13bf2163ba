"""adv66: adversarial round on shard sources, video2dataset layouts, preprocess backends and DataLoader resume
(BENCHMARKS.md, "adv66").

Each test asserts against an oracle and failed before its fix. The HTTP shards come from a ``http.server`` on
127.0.0.1 in a thread of the test (no network).
"""
from __future__ import annotations

import contextlib
import http.server
import os
import threading
from pathlib import Path

import pytest

from loaders.pipeline import make_loader
from tests.conftest import local_http_server
from tests.loader_shards import BUDGETS, WINDOW_SECONDS, write_loader_shards


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> dict:
    return write_loader_shards(tmp_path_factory.mktemp("shards"))


@contextlib.contextmanager
def serve(directory: str, *, cut: dict[str, int], stall: bool = False):
    """An HTTP server of ``directory``'s files on 127.0.0.1; a file named in ``cut`` is announced whole
    (``Content-Length``) but its connection is closed after that many bytes of it (with ``stall``: left open, sending
    nothing more, until the server shuts down). Yields the base URL."""
    stop = threading.Event()

    def answer(handler, body: bool) -> None:
        name = os.path.basename(handler.path)
        path = os.path.join(directory, name)
        if not os.path.isfile(path):
            handler.send_error(404)
            return
        data = Path(path).read_bytes()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        if body:
            handler.wfile.write(data[: cut.get(name, len(data))])
            handler.wfile.flush()
            if name in cut:
                if stall:
                    stop.wait(60)
                handler.close_connection = True
                handler.connection.shutdown(2)

    with local_http_server(answer, on_close=stop.set) as base:
        yield base


def test_http_shard_cut_mid_body_is_a_counted_skip_not_the_end_of_the_epoch(shards):
    """An HTTP server that drops the connection in the middle of a shard's body ended the epoch with aiohttp's
    ``ClientPayloadError`` (not an ``OSError``: the shard readers' net did not catch it), the training loop with it.
    It is now that shard's ``truncated`` skip, named, and the other shards' samples all come. Oracle: the windows
    the generator wrote into the two whole shards, and their known bad samples."""
    directory = os.path.dirname(shards["paths"][0])
    names = [os.path.basename(p) for p in shards["paths"]]
    size = os.path.getsize(shards["paths"][1])
    with serve(directory, cut={names[1]: size // 2}) as base:
        urls = [f"{base}/{name}" for name in names]
        loader = make_loader(urls, seed=3, budgets=BUDGETS, window_seconds=WINDOW_SECONDS, buffer_size=4,
                             frame_size=(24, 32), max_items=8, max_words=16)
        keys = sorted(k for batch in loader for k in batch.sample_keys)
    whole = {"k00", "k01", "k20", "k21"}  # shards 0 and 2
    assert keys == sorted(f"{k}@{i}" for k, n in shards["expected"].items() if k in whole for i in range(n))
    stats = loader.stats
    assert stats.skipped == {"decode": 1, "missing_video": 1, "truncated": 1}
    truncated = [(shard, reason) for shard, _, reason in stats.skipped_samples if reason == "truncated"]
    assert truncated == [(urls[1], "truncated")]


def test_a_server_that_never_answers_is_skipped_with_the_timeout_named(monkeypatch):
    """A server that accepts the connection and never answers held a shard for fsspec's HTTP time limit (aiohttp's 300 s,
    a HEAD then a GET: 602 s measured) and was then skipped as 'cannot open shard: URL', nothing saying why (the
    timeout's message is empty). Now its type is named, with the setting that shortens it; here that setting (1 s)."""
    import socket

    import aiohttp
    import fsspec

    from loaders.shards import ShardError, shard_samples

    monkeypatch.setitem(fsspec.config.conf, "http", {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=1)}})
    with socket.socket() as listener:  # listens (the kernel completes the handshake) and never accepts
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/shard-000000.tar"
        with pytest.raises(ShardError) as info:
            list(shard_samples(url, on_error="raise"))
    assert info.value.reason == "open" and info.value.shard == url
    assert "TimeoutError: the server did not answer in its client's time limit" in str(info.value)


def test_an_http_shard_that_stalls_mid_body_is_a_truncated_skip_naming_the_timeout(shards, monkeypatch):
    """A server that stops sending in the middle of a shard's body: the client's timeout (an OSError without a message)
    was logged as 'tar stream ended early ...: ;' — nothing said what happened. Now the skip names the timeout."""
    import aiohttp
    import fsspec

    from loaders.shards import ShardError, shard_samples

    monkeypatch.setitem(fsspec.config.conf, "http", {"client_kwargs": {"timeout": aiohttp.ClientTimeout(total=1)}})
    directory = os.path.dirname(shards["paths"][0])
    name = os.path.basename(shards["paths"][1])
    with serve(directory, cut={name: os.path.getsize(shards["paths"][1]) // 2}, stall=True) as base:
        with pytest.raises(ShardError) as info:
            list(shard_samples(f"{base}/{name}", on_error="raise"))
    assert info.value.reason == "truncated" and info.value.shard == f"{base}/{name}"
    assert "TimeoutError (the server sent nothing within the client's time limit)" in str(info.value)


def test_shards_from_a_server_without_range_requests_are_read_whole(tmp_path):
    """fsspec reads HTTP files in 5 MiB range requests; a server that answers them with the whole file (python's
    http.server, some static servers and proxies) made the loader drop the sample at the 5 MiB mark and lose every
    later one (one ``truncated`` skip), and preprocess skip every sample (``read``). The stream now goes on as one
    GET. Oracle: the generator's keys and media bytes, all of them."""
    import functools
    import json
    import tarfile

    from avalign.preprocess import preprocess
    from tests.conftest import tiny_clip
    from tests.corrupt_cases import write_tar

    media = tiny_clip(tmp_path / "clip.mp4", 0.5, fps=10, sample_rate=16000)
    keys = [f"k{i:02d}" for i in range(6)]
    rng = __import__("numpy").random.default_rng(66)
    members = []
    for key in keys:  # 1 MB of labels each: the shard passes 5 MiB at its fifth sample
        members += [(f"{key}.mp4", media), (f"{key}.txt", f"clip {key}".encode()),
                    (f"{key}.cls", rng.integers(0, 256, 1_000_000, dtype="uint8").tobytes())]
    served = tmp_path / "served"
    served.mkdir()
    write_tar(served / "big.tar", members)
    assert (served / "big.tar").stat().st_size > 5 * 2**20

    class Handler(http.server.SimpleHTTPRequestHandler):  # no Range support
        def log_message(self, *args) -> None:
            pass

        def copyfile(self, source, outputfile) -> None:
            with contextlib.suppress(ConnectionError):  # the client closes a whole-file answer it cannot use
                super().copyfile(source, outputfile)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(served)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/big.tar"
        loader = make_loader([url], seed=0, budgets=BUDGETS, window_seconds=None, buffer_size=4, frame_size=(24, 32),
                             max_items=8, max_words=16)
        got = sorted(k for batch in loader for k in batch.sample_keys)
        assert got == keys and loader.stats.skipped == {}
        result = preprocess(url, str(tmp_path / "out"), workers=1, progress=False)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert result.num_samples == 6 and result.num_skipped == 0
    rows = [json.loads(line) for line in (tmp_path / "out" / "manifest.jsonl").read_text().splitlines()]
    assert [row["key"] for row in rows] == keys
    with tarfile.open(tmp_path / "out" / "shard-000000.tar") as archive:
        written = {m.name: archive.extractfile(m).read() for m in archive if m.name.endswith((".mp4", ".txt"))}
    assert written == {**{f"{k}.mp4": media for k in keys}, **{f"{k}.txt": f"clip {k}".encode() for k in keys}}


@pytest.mark.parametrize("field", ["__key__", "__url__"])
def test_a_member_named_like_a_sample_field_drops_its_sample_named(tmp_path, field):
    """A member ``a.__key__`` overwrote sample ``a``'s key with its bytes: the loader counted a ``missing_video`` skip
    under the key ``b'zzz'`` and dropped ``a.mp4`` as a stray member of an earlier sample; ``a.__url__`` dropped ``a``
    as a 'duplicate_key' ('appears twice'), which it was not. Now the sample is dropped as ``unsafe_name`` under its
    own key, in the loader and in preprocess; the sample after it is untouched. Oracle: the keys written."""
    import json

    from avalign.preprocess import preprocess
    from tests.conftest import tiny_clip
    from tests.corrupt_cases import write_tar

    media = tiny_clip(tmp_path / "clip.mp4", 0.5, fps=10, sample_rate=16000)
    shard = tmp_path / "fields.tar"
    write_tar(shard, [(f"a.{field}", b"zzz"), ("a.mp4", media), ("a.txt", b"hi"), ("b.mp4", media), ("b.txt", b"yo")])
    loader = make_loader([str(shard)], seed=0, budgets=BUDGETS, window_seconds=None, buffer_size=4,
                         frame_size=(24, 32), max_items=8, max_words=16)
    assert [k for batch in loader for k in batch.sample_keys] == ["b"]
    assert loader.stats.skipped_samples == ((str(shard), "a", "unsafe_name"),)
    result = preprocess(str(shard), str(tmp_path / "out"), workers=1, progress=False)
    assert result.num_samples == 1
    rows = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert [(row["key"], row["reason"]) for row in rows] == [("a", "unsafe_name")]
    assert f"'a.{field}' has extension '{field}'" in rows[0]["message"]


def test_a_state_saved_on_paths_resumes_on_their_file_urls_with_spaces_and_accents(shards, tmp_path):
    """A resume may read the same shards from another mount or URL (they are matched by file name), but a name with a
    space or an accent is percent-encoded in a URL (``Path.as_uri()``, an HTTP mirror): the state saved on the paths was
    refused on their ``file://`` URLs as 'the shard list differs' (3 added, 3 missing). Oracle: the rest of the
    uninterrupted epoch, byte for byte."""
    import pickle
    import shutil

    from loaders import make_dataset

    local = []
    for i, path in enumerate(shards["paths"]):
        local.append(str(tmp_path / f"my shard é {i}.tar"))
        shutil.copy(path, local[-1])
    options = dict(budgets=BUDGETS, window_seconds=WINDOW_SECONDS, buffer_size=4, frame_size=(24, 32), max_items=8,
                   max_words=16)

    def digest(batch) -> tuple:
        return batch.sample_keys, batch.frames.numpy().tobytes(), batch.audio.numpy().tobytes()

    saved = make_dataset(local, seed=5, **options)
    batches = iter(saved)
    head = [digest(next(batches)) for _ in range(2)]
    state = pickle.loads(pickle.dumps(saved.state_dict()))
    rest = [digest(b) for b in batches]
    assert head and rest
    resumed = make_dataset([Path(p).as_uri() for p in local], seed=5, **options)
    resumed.load_state_dict(state)
    assert [digest(b) for b in resumed] == rest


def test_a_pipe_command_that_fails_after_a_whole_tar_is_counted(tmp_path):
    """``pipe:tar cf - a.mp4 a.txt gone.mp4 b.mp4``: GNU tar writes a complete archive without the file it could not
    read and exits 2. The reader, done at the end-of-archive blocks, killed the command without its status: every
    other sample came and the loss went unsaid. Now one ``truncated`` report under no key names the status and
    stderr (the samples sent are all delivered); the same command without the missing file reports nothing."""
    import shlex

    from tests.conftest import tiny_clip

    media = tiny_clip(tmp_path / "a.mp4", 0.5, fps=10, sample_rate=16000)
    (tmp_path / "b.mp4").write_bytes(media)
    (tmp_path / "a.txt").write_text("hi")
    options = dict(seed=0, budgets=BUDGETS, window_seconds=None, buffer_size=4, frame_size=(24, 32), max_items=8,
                   max_words=16)
    for names, failed in ((["a.mp4", "a.txt", "gone.mp4", "b.mp4"], True), (["a.mp4", "a.txt", "b.mp4"], False)):
        url = f"pipe:tar cf - -C {shlex.quote(str(tmp_path))} {' '.join(names)}"
        loader = make_loader([url], **options)
        assert sorted(k for batch in loader for k in batch.sample_keys) == ["a", "b"]
        assert loader.stats.skipped_samples == (((url, "", "truncated"),) if failed else ())


def test_a_pipe_command_still_running_after_its_tar_is_not_waited_for_or_reported(shards):
    """The check above waits for the command's status a few seconds at most: ``cat shard; sleep 60`` (a command that
    lingers after its output) is killed at the end of its tar, as before, without a report. Oracle: the shard's keys."""
    import shlex
    import time

    from loaders.shards import shard_samples

    reports = []
    started = time.monotonic()
    url = f"pipe:cat {shlex.quote(shards['paths'][0])}; sleep 60"
    keys = [s["__key__"] for s in shard_samples(url, report=lambda *r: reports.append(r))]
    assert keys == ["k00", "k01", "bad_mp4"] and reports == []
    assert time.monotonic() - started < 30


@pytest.mark.slow
def test_the_ray_backend_raises_a_bad_sample_as_the_local_backend_does(shards, tmp_path):
    """``preprocess(..., backend="ray", on_error="raise")`` raised Ray's ``RayTaskError(SampleError)``, whose message is
    the worker's traceback with terminal colour codes (``\\x1b[36mray::process_shard()\\x1b[39m (pid=…)``): what
    ``avalign preprocess --json`` printed as the error's message. Now the task's own exception is raised. Oracle: the
    local backend's exception on the same input."""
    pytest.importorskip("ray")
    from avalign.preprocess import preprocess
    from loaders.errors import SampleError

    raised = {}
    for backend in ("local", "ray"):
        with pytest.raises(SampleError) as info:
            preprocess(shards["paths"][0], str(tmp_path / backend), backend=backend, workers=1, progress=False,
                       on_error="raise")
        raised[backend] = info.value
    local, ray_error = raised["local"], raised["ray"]
    assert type(ray_error) is type(local)
    assert (ray_error.reason, ray_error.key, ray_error.shard) == (local.reason, local.key, local.shard) == (
        "decode", "bad_mp4", shards["paths"][0])
    assert str(ray_error) == str(local)


def test_two_shard_keys_that_clean_to_one_output_key_are_named_as_such(tmp_path):
    """Shard keys ``clip 1`` and ``clip_1`` are both written as ``clip_1``; the second was skipped as 'key 'clip_1'
    already seen in …', naming a key the shard does not repeat. The message now names both keys and the output key.
    Oracle: the keys written into the shard."""
    import json

    from avalign.preprocess import preprocess
    from tests.conftest import tiny_clip
    from tests.corrupt_cases import write_tar

    media = tiny_clip(tmp_path / "clip.mp4", 0.5, fps=10, sample_rate=16000)
    shard = tmp_path / "keys.tar"
    write_tar(shard, [("clip 1.mp4", media), ("clip_1.mp4", media)])
    result = preprocess(str(shard), str(tmp_path / "out"), workers=1, progress=False)
    assert result.num_samples == 1
    rows = [json.loads(line) for line in (tmp_path / "out" / "skipped.jsonl").read_text().splitlines()]
    assert [(row["key"], row["reason"]) for row in rows] == [("clip_1", "duplicate_key")]
    assert "key 'clip_1' is written as 'clip_1'" in rows[0]["message"]
    assert f"as key 'clip 1' of {shard} is" in rows[0]["message"]


def test_a_brace_pattern_on_an_ipv6_host_is_not_split_at_its_colons(shards):
    """``http://[::1]:PORT/shard-{000000..000002}.tar``: the list separator ``::`` inside the IPv6 host split it into
    ``http://[`` and ``1]:PORT/shard-….tar`` (four shards, none of them real: an epoch of nothing). Oracle: the three
    URLs, and every window of the generator's shards read over IPv6."""
    import functools
    import socket

    from loaders.shards import expand_shard_urls

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

    directory = os.path.dirname(shards["paths"][0])
    try:
        server = Server(("::1", 0), functools.partial(Handler, directory=directory))
    except OSError as error:
        pytest.skip(f"no IPv6 loopback here: {error}")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://[::1]:{server.server_address[1]}"
        pattern = f"{base}/shard-{{000000..000002}}.tar"
        assert expand_shard_urls(pattern) == [f"{base}/{os.path.basename(p)}" for p in shards["paths"]]
        loader = make_loader(pattern, seed=3, budgets=BUDGETS, window_seconds=WINDOW_SECONDS, buffer_size=4,
                             frame_size=(24, 32), max_items=8, max_words=16)
        keys = sorted(k for batch in loader for k in batch.sample_keys)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
    assert keys == sorted(f"{k}@{i}" for k, n in shards["expected"].items() for i in range(n))
    assert loader.stats.skipped == {"decode": 1, "transcript": 1, "missing_video": 1}


def test_a_protocol_whose_package_is_missing_names_the_shard():
    """``make_loader(["gs://bucket/a.tar"])`` without gcsfs ended the epoch with fsspec's 'Please install gcsfs to access
    Google Storage', naming no shard. It stays an ImportError (a set-up error, not a bad shard), with the shard's URL."""
    import fsspec

    from loaders.shards import shard_samples

    missing = None
    for protocol in ("gs", "s3", "abfs", "oci", "webhdfs", "dropbox"):
        try:
            fsspec.get_filesystem_class(protocol)
        except ImportError:
            missing = protocol
            break
        except ValueError:
            continue
    if missing is None:
        pytest.skip("every protocol tried has its package installed")
    url = f"{missing}://bucket/shard-000000.tar"
    with pytest.raises(ImportError, match=f"to read shard {url}"):
        list(shard_samples(url))
