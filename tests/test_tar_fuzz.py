"""Bounded fuzz of the tar reader: flipped, cut and inserted bytes in a valid small shard through ``shard_samples``.

Invariants: with ``on_error="raise"`` the only exceptions are ``ShardError`` / other ``ValueError``
subclasses; with ``"skip"`` it never raises; it never hangs (hypothesis deadline + pytest timeout);
no member name that is absolute or holds ``..`` ever reaches a sample; nothing is written anywhere
(the working directory is an empty sandbox that must stay empty).
"""
from __future__ import annotations

import io
import os
import tarfile
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loaders.shards import safe_member_name, shard_samples

_MEMBERS = [
    ("a.mp4", b"\x00\x00\x00\x18ftypisom" + bytes(range(200))),
    ("a.json", b'{"segments": [{"start": 0.1, "end": 0.5, "text": "hi"}]}'),
    ("dir/b.mp4", bytes(300)),
    ("dir/b.align.json", b'{"av_offset_ms": 0}'),
    ("c.srt", b"1\n00:00:00,100 --> 00:00:00,500\nhi\n"),
]


def _valid_shard() -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, data in _MEMBERS:
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 0
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


VALID = _valid_shard()

_mutation = st.one_of(
    st.tuples(st.just("flip"), st.integers(0, len(VALID) - 1), st.integers(1, 255)),
    st.tuples(st.just("cut"), st.integers(0, len(VALID) - 1), st.just(0)),
    st.tuples(st.just("insert"), st.integers(0, len(VALID)), st.binary(min_size=1, max_size=600)),
    st.tuples(st.just("overwrite"), st.integers(0, len(VALID) - 1), st.binary(min_size=1, max_size=64)),
)


def _mutate(data: bytes, mutations) -> bytes:
    out = bytearray(data)
    for op, at, arg in mutations:
        at = min(at, len(out))
        if op == "flip" and at < len(out):
            out[at] ^= arg
        elif op == "cut":
            del out[at:]
        elif op == "insert":
            out[at:at] = arg
        elif op == "overwrite":
            out[at:at + len(arg)] = arg
    return bytes(out)


@pytest.fixture(scope="module")
def sandbox():
    """An empty working directory inside a private temp dir: both must stay as they are."""
    with tempfile.TemporaryDirectory(prefix="avalign-tarfuzz-") as root:
        cwd = Path(root) / "sandbox" / "inner"
        cwd.mkdir(parents=True)
        old = os.getcwd()
        os.chdir(cwd)
        try:
            yield Path(root)
        finally:
            os.chdir(old)


def _listing(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_the_unmutated_shard_reads_whole(tmp_path):
    path = tmp_path / "valid.tar"
    path.write_bytes(VALID)
    samples = list(shard_samples(str(path), on_error="raise"))
    assert [s["__key__"] for s in samples] == ["a", "dir/b", "c"]
    assert samples[0]["mp4"] == _MEMBERS[0][1] and samples[1]["align.json"] == _MEMBERS[3][1]


@pytest.mark.timeout(120)
@settings(max_examples=150, deadline=2000, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(_mutation, min_size=1, max_size=4))
def test_mutated_shards_fail_cleanly(sandbox, mutations):
    data = _mutate(VALID, mutations)
    path = sandbox / "shard.tar"
    path.write_bytes(data)
    before = _listing(sandbox)

    reports: list[tuple[str, str, str]] = []
    skipped = list(shard_samples(str(path), on_error="skip", report=lambda *r: reports.append(r)))  # never raises
    for sample in skipped:
        assert isinstance(sample["__key__"], str) and sample["__url__"] == str(path)
        assert safe_member_name(sample["__key__"] + ".x"), sample["__key__"]
        assert all(isinstance(v, bytes) for k, v in sample.items() if not k.startswith("__"))
    assert all(shard == str(path) and reason for shard, _, reason in reports)

    try:
        raised = list(shard_samples(str(path), on_error="raise"))
    except ValueError as error:  # ShardError is one; any other type fails the test
        assert str(path) in str(error)
    else:
        assert [s["__key__"] for s in raised] == [s["__key__"] for s in skipped] and not reports

    assert _listing(sandbox) == before, "a file was written while reading a shard"
    assert not any(Path(os.getcwd()).iterdir())
