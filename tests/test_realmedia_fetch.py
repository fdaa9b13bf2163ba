"""The hand-timed speech sdists are fetched as files from pip's index and checked against their pinned SHA-256.

Oracle: a local index (PEP 691 JSON simple API on 127.0.0.1) that serves a file whose SHA-256 is known; what it
was asked for is recorded. The real download and the per-member pins are exercised by ``test_realmedia_text.py``.
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from avalign.bench import fetch_hand_timed_speech

pytest.importorskip("praatio")

PRAATIO_SDIST = "praatio-6.2.2.tar.gz"
PRAATIO_SDIST_SHA256 = "ed8fdee6121bdae142817879ed9a50cc8334e72c03c110162e21ed8160180d2a"  # PyPI's, pinned in the code
WRONG_BYTES = b"not praatio's sdist"


@pytest.fixture
def index():
    """A local index listing praatio's sdist (with a wrong file behind it) or, with ``index.missing``, 404 for all."""
    requests: list[tuple[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            requests.append((self.path, self.headers.get("User-Agent", "")))
            if server.missing:
                self.send_error(404)
            elif self.path == "/simple/praatio/":
                files = [{"filename": PRAATIO_SDIST, "url": f"/files/{PRAATIO_SDIST}",
                          "hashes": {"sha256": PRAATIO_SDIST_SHA256}}]
                self._reply(json.dumps({"meta": {"api-version": "1.1"}, "name": "praatio", "files": files}).encode(),
                            "application/vnd.pypi.simple.v1+json")
            elif self.path == f"/files/{PRAATIO_SDIST}":
                self._reply(WRONG_BYTES, "application/octet-stream")
            else:
                self.send_error(404)

        def _reply(self, body: bytes, content_type: str):
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.missing, server.requests = False, requests
    server.url = f"http://127.0.0.1:{server.server_address[1]}/simple"
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("configured_by", ["PIP_INDEX_URL", "pip.conf"])
def test_sdist_hash_mismatch_names_file_and_hashes(index, tmp_path, monkeypatch, configured_by):
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    if configured_by == "PIP_INDEX_URL":
        monkeypatch.setenv("PIP_INDEX_URL", index.url)
    else:  # pip's own configuration, as `pip download` reads it
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nindex-url = {index.url}\n")
        monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    cache = tmp_path / "cache"
    with pytest.raises(FileNotFoundError) as raised:
        fetch_hand_timed_speech(cache)
    message = str(raised.value)
    assert PRAATIO_SDIST in message, message
    assert PRAATIO_SDIST_SHA256 in message and hashlib.sha256(WRONG_BYTES).hexdigest() in message, message
    # The configured index was asked, once for the listing and once for the file; nothing else (no pip fallback
    # after a mismatch), and nothing of the bad file is kept.
    assert [path for path, _ in index.requests] == ["/simple/praatio/", f"/files/{PRAATIO_SDIST}"]
    assert not any(cache.iterdir())


def test_index_without_the_file_falls_back_to_pip_download(index, tmp_path, monkeypatch):
    index.missing = True
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    with pytest.raises(FileNotFoundError, match="pip download"):
        fetch_hand_timed_speech(tmp_path)
    direct, *by_pip = index.requests
    assert direct[0] == "/simple/praatio/" and "pip/" not in direct[1]
    assert by_pip and all("pip/" in agent for _, agent in by_pip), index.requests  # pip asked the same index


def test_no_index_configured_leaves_the_index_alone(index, tmp_path, monkeypatch):
    """pip configured with no-index: the direct fetch does not go to the index either; pip download decides."""
    monkeypatch.setenv("PIP_INDEX_URL", index.url)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    with pytest.raises(FileNotFoundError, match="pip download"):
        fetch_hand_timed_speech(tmp_path)
    assert index.requests == []


def test_pip_config_is_read_once_per_process_for_a_given_environment(index, tmp_path, monkeypatch):
    """``pip config list`` (a Python process, ~0.45 CPU-s) runs once for two fetches under the same environment,
    and again once the environment pip reads changes."""
    import subprocess

    monkeypatch.setenv("PIP_INDEX_URL", index.url)  # a fresh port: no earlier test read this environment
    monkeypatch.delenv("PIP_NO_INDEX", raising=False)
    real_run, config_reads = subprocess.run, []

    def counting_run(command, *args, **kwargs):
        if list(command[-2:]) == ["config", "list"]:
            config_reads.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)
    for attempt in ("first", "second"):
        with pytest.raises(FileNotFoundError, match="SHA-256"):  # the index's file is wrong: each fetch asks it
            fetch_hand_timed_speech(tmp_path / attempt)
    assert len(config_reads) == 1
    assert [path for path, _ in index.requests] == ["/simple/praatio/", f"/files/{PRAATIO_SDIST}"] * 2
    monkeypatch.setenv("PIP_INDEX_URL", index.url + "/")
    with pytest.raises(FileNotFoundError, match="SHA-256"):
        fetch_hand_timed_speech(tmp_path / "third")
    assert len(config_reads) == 2
