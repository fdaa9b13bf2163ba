"""``avalign preprocess`` on shards that cannot seek (``.tar.gz``, ``pipe:``): each is streamed once per process, not
once per sample, and the output is the bytes the same shard gives as a plain tar (read back by seeking).

Oracles: the output of the plain tar (the seek path), and how many times the shard's ``pipe:`` command ran (it
appends a line to a file each time).
"""
from __future__ import annotations

import gzip
import io
import json
import shlex
import tarfile
from pathlib import Path

import pytest

from avalign.preprocess import preprocess
from tests.conftest import ffmpeg

NUM_SAMPLES = 5


@pytest.fixture(scope="module")
def members(tmp_path_factory) -> dict[str, bytes]:
    """Five one-second clips (video and audio, no transcript), members of keys k0..k4 in key order."""
    d = tmp_path_factory.mktemp("streamed_in")
    out = {}
    for i in range(NUM_SAMPLES):
        path = d / f"k{i}.mp4"
        ffmpeg("-f", "lavfi", "-i", "testsrc=size=32x24:rate=10", "-f", "lavfi", "-i", f"sine=f={300 + 50 * i}:r=16000",
               "-t", "1", "-c:v", "libx264", "-c:a", "aac", str(path))
        out[f"k{i}.mp4"] = path.read_bytes()
        out[f"k{i}.txt"] = f"clip number {i}".encode()
    return out


def _tar_bytes(members: dict[str, bytes], names: list[str]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in names:
            info = tarfile.TarInfo(name)
            info.size = len(members[name])
            tar.addfile(info, io.BytesIO(members[name]))
    return buf.getvalue()


def _outputs(directory: Path) -> dict:
    """The output shards' bytes, and the manifest's rows without ``source`` (which names the input URL)."""
    rows = [json.loads(line) for line in (directory / "manifest.jsonl").read_text().splitlines()]
    return {"manifest": [{k: v for k, v in row.items() if k != "source"} for row in rows],
            "skipped": (directory / "skipped.jsonl").read_text(),
            **{p.name: p.read_bytes() for p in sorted(directory.glob("shard-*"))}}


def _run(url: str, out: Path) -> None:
    result = preprocess(url, str(out), samples_per_shard=2, progress=False, timeout_seconds=None)
    assert result.num_samples == NUM_SAMPLES and result.num_skipped == 0


@pytest.fixture(scope="module")
def reference(members, tmp_path_factory) -> dict:
    d = tmp_path_factory.mktemp("streamed_ref")
    (d / "data.tar").write_bytes(_tar_bytes(members, sorted(members)))
    _run(str(d / "data.tar"), d / "out")
    return _outputs(d / "out")


def _counted_pipe(shard: Path, count: Path) -> str:
    return f"pipe:echo run >> {shlex.quote(str(count))}; cat {shlex.quote(str(shard))}"


def test_a_compressed_pipe_shard_is_streamed_once_for_all_its_samples(members, reference, tmp_path):
    """Planning streams the shard once and reading the samples back once more: 2 runs of the command (the code
    before: 1 + one per sample, 6), and the output is the plain tar's, byte for byte."""
    shard, count = tmp_path / "data.tar.gz", tmp_path / "runs.txt"
    shard.write_bytes(gzip.compress(_tar_bytes(members, sorted(members))))
    _run(_counted_pipe(shard, count), tmp_path / "out")
    assert _outputs(tmp_path / "out") == reference
    assert count.read_text().count("run") == 2


def test_a_local_tar_gz_gives_the_plain_tars_output(members, reference, tmp_path):
    shard = tmp_path / "data.tar.gz"
    shard.write_bytes(gzip.compress(_tar_bytes(members, sorted(members))))
    _run(str(shard), tmp_path / "out")
    assert _outputs(tmp_path / "out") == reference


def test_a_shard_not_in_key_order_is_read_again_from_its_start_where_it_must(members, reference, tmp_path):
    """Members in reverse key order (k4 first): every sample after the first is behind the last read, so each is read
    by streaming the shard again (1 + 5 runs, as before); the output is the same."""
    names = [f"k{i}.{ext}" for i in reversed(range(NUM_SAMPLES)) for ext in ("mp4", "txt")]
    shard, count = tmp_path / "data.tar.gz", tmp_path / "runs.txt"
    shard.write_bytes(gzip.compress(_tar_bytes(members, names)))
    _run(_counted_pipe(shard, count), tmp_path / "out")
    assert _outputs(tmp_path / "out") == reference
    assert count.read_text().count("run") == 1 + NUM_SAMPLES


def test_two_workers_stream_the_shard_once_each(members, reference, tmp_path):
    """With a pool of 2 processes each streams the shard once (the plan's stream is closed before they fork): at
    most 1 + 2 runs, and the output is the same."""
    shard, count = tmp_path / "data.tar.gz", tmp_path / "runs.txt"
    shard.write_bytes(gzip.compress(_tar_bytes(members, sorted(members))))
    result = preprocess(_counted_pipe(shard, count), str(tmp_path / "out"), samples_per_shard=2, progress=False,
                        timeout_seconds=None, workers=2)
    assert result.num_samples == NUM_SAMPLES
    assert _outputs(tmp_path / "out") == reference
    assert 2 <= count.read_text().count("run") <= 3


def test_a_shard_changed_between_two_samples_reads_is_refused_naming_the_change(members, tmp_path):
    """The shard is touched after the first sample was read from the stream kept open: the next sample's read is an
    ``OSError`` that says the shard changed (read_members' rule for every shard), not a failure of the kept stream."""
    import os
    import time

    from avalign.preprocess import list_inputs, read_members

    shard = tmp_path / "data.tar.gz"
    shard.write_bytes(gzip.compress(_tar_bytes(members, sorted(members))))
    first, second = list_inputs(str(shard)).samples[:2]
    assert read_members([first.media]) == [members["k0.mp4"]]
    time.sleep(0.01)
    os.utime(shard)
    with pytest.raises(OSError, match="the shard changed after it was listed"):
        read_members([second.media])
