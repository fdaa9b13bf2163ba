"""``pipe:`` shards: a failing command is a shard that could not be opened (``open``), with its exit status and
stderr in the message; a command that stalls is killed with its whole process group after ``pipe_stall_seconds``
and its shard skipped by name. Oracles: the statuses and stderr the shell commands are written to produce, the
keys written into the tar, and the kernel's process table (``/proc/*/stat``: live processes of the group) for leftovers.

The stall tests use a 0.5 s bound against ``sleep 1000``: the reason's message ("sent no bytes for 0.5 s") shows
the bound ended the read, not the command (no wall-clock assertion; the timeout mark only guards a hang).
"""
from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

import loaders
from loaders.shards import ShardError, expand_shard_urls, shard_samples, tar_members

STALL_SECONDS = 0.5


@pytest.fixture(scope="module")
def tar_path(tmp_path_factory) -> Path:
    """A tar of three 20,000-byte samples k0, k1, k2 (k0 ends before byte 30,000, k1 does not)."""
    path = tmp_path_factory.mktemp("pipe") / "three.tar"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for k in range(3):
            data = bytes([k]) * 20_000
            info = tarfile.TarInfo(f"k{k}.bin")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    path.write_bytes(buffer.getvalue())
    return path


def _samples(url: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    reports: list[tuple[str, str, str]] = []
    keys = [s["__key__"] for s in shard_samples(url, report=lambda *r: reports.append(r), pipe_stall_seconds=STALL_SECONDS)]
    return keys, reports


def _raised(url: str) -> ShardError:
    with pytest.raises(ShardError) as info:
        for member in tar_members(url, pipe_stall_seconds=STALL_SECONDS):
            if member.problem:
                raise ShardError(member.message, shard=url, key=member.name, reason=member.problem)
    return info.value


def _live_members(pgid: int) -> list[int]:
    """Pids of the live (not zombie) processes whose process group is ``pgid``."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # the process ended while we looked
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            found.append(int(stat.parent.name))
    return found


def _group_is_gone(pid_file: Path) -> bool:
    """No live process is left in the command's process group (the shell wrote its pid, which is the group's id).
    SIGKILL is sent to the whole group and the shell reaped before the read returns; the shell's children die
    as the kernel delivers it (then zombies until init reaps them): allowed a few seconds, not a hang's 1000 s."""
    import time

    pgid = int(pid_file.read_text())
    for _ in range(100):
        if not _live_members(pgid):
            return True
        time.sleep(0.1)
    return False


def test_a_good_pipe_delivers_every_sample(tar_path):
    assert _samples(f"pipe:cat {tar_path}") == (["k0", "k1", "k2"], [])


@pytest.mark.parametrize("command, status, stderr", [
    ("false", 1, None),
    ("cat /missing/shard.tar", 1, "cat: /missing/shard.tar: No such file or directory"),
    ("echo 'bucket not found' >&2; exit 7", 7, "bucket not found"),
])
def test_a_failing_pipe_is_a_shard_that_could_not_be_opened_with_its_status_and_stderr(command, status, stderr):
    url = f"pipe:{command}"
    assert _samples(url) == ([], [(url, "", "open")])
    error = _raised(url)
    assert error.reason == "open" and error.shard == url
    assert f"exited with status {status} after 0 bytes of output" in error.message
    assert (f"stderr: {stderr!r}" if stderr else "no stderr") in error.message


def test_a_pipe_failing_after_some_output_is_truncated_there_with_its_status(tar_path):
    url = f"pipe:head -c 30000 {tar_path}; echo 'connection reset' >&2; exit 18"
    assert _samples(url) == (["k0"], [(url, "k1", "truncated")])
    error = _raised(url)
    assert error.reason == "truncated" and error.key == "k1.bin"
    assert "exited with status 18 after 30000 bytes of output; stderr: 'connection reset'" in error.message


@pytest.mark.timeout(60)
def test_a_pipe_that_never_sends_a_byte_is_killed_and_skipped_within_the_bound(tmp_path):
    pid_file = tmp_path / "pgid"
    url = f"pipe:echo $$ > {pid_file}; sleep 1000 & sleep 1000"  # two processes in the group
    assert _samples(url) == ([], [(url, "", "open")])
    assert _group_is_gone(pid_file)
    error = _raised(url)
    assert error.reason == "open"
    assert f"sent no bytes for {STALL_SECONDS:g} s after 0 bytes of output; killed with its process group" in error.message
    assert _group_is_gone(pid_file)


@pytest.mark.timeout(60)
def test_a_pipe_that_stalls_mid_shard_keeps_the_samples_before_and_names_the_cut(tar_path, tmp_path):
    pid_file = tmp_path / "pgid"
    url = f"pipe:echo $$ > {pid_file}; head -c 30000 {tar_path}; sleep 1000"
    assert _samples(url) == (["k0"], [(url, "k1", "truncated")])
    assert _group_is_gone(pid_file)
    error = _raised(url)
    assert error.reason == "truncated" and f"sent no bytes for {STALL_SECONDS:g} s after 30000 bytes" in error.message


@pytest.mark.timeout(60)
def test_a_reader_that_stops_early_kills_the_command_at_once(tar_path, tmp_path):
    pid_file = tmp_path / "pgid"
    members = tar_members(f"pipe:echo $$ > {pid_file}; cat {tar_path}; sleep 1000", pipe_stall_seconds=300.0)
    assert next(members).name == "k0.bin"
    members.close()  # a 300 s bound: only the close can have ended it
    assert _group_is_gone(pid_file)


@pytest.mark.timeout(120)
def test_the_loader_skips_failing_and_stalled_pipes_by_name_and_delivers_the_rest(tmp_path):
    from tests.conftest import tiny_clip

    clip = tiny_clip(tmp_path / "clip.mp4", 0.5, fps=10, sample_rate=16000)
    shard = tmp_path / "good.tar"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("g0.mp4")
        info.size = len(clip)
        tar.addfile(info, io.BytesIO(clip))
    shard.write_bytes(buffer.getvalue())
    urls = [str(shard), "pipe:cat /missing/shard.tar", "pipe:sleep 1000"]
    with pytest.raises(ValueError, match="pipe_stall_seconds must be a positive number of seconds, got 0"):
        loaders.make_loader(urls, seed=0, pipe_stall_seconds=0)
    loader = loaders.make_loader(urls, seed=0, frame_size=(16, 16), budgets=(100, 64_000, 64), window_seconds=None,
                                 max_items=2, pipe_stall_seconds=STALL_SECONDS)
    keys = [key for batch in loader for key in batch.sample_keys]
    assert keys == ["g0"]
    assert loader.stats.skipped == {"open": 2}


def test_preprocess_plans_a_failing_pipe_as_a_shard_that_could_not_be_opened(tar_path):
    from avalign.preprocess import list_inputs

    url = "pipe:cat /missing/shard.tar"
    plan = list_inputs(url)
    assert plan.samples == ()
    assert [(row["key"], row["reason"]) for row in plan.skipped] == [("", "open")]
    assert "exited with status 1 after 0 bytes of output; stderr: 'cat: /missing/shard.tar: No such file or directory'" \
        in plan.skipped[0]["message"]
    good = list_inputs(f"pipe:cat {tar_path}")  # read through: its three keys have no media member
    assert sorted((row["key"], row["reason"]) for row in good.skipped) == [(k, "missing_media") for k in ("k0", "k1", "k2")]


def _write_keyed_tar(path: Path, keys: list[str]) -> None:
    with tarfile.open(path, "w") as tar:
        for key in keys:
            info = tarfile.TarInfo(f"{key}.bin")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))


def test_pipe_brace_pattern_and_joined_pipes_are_one_command_per_shard(tmp_path):
    """``pipe:cat d/s-{0..1}.tar`` (webdataset's idiom for remote shards) is one command per shard, and
    ``pipe:A::pipe:B`` two commands: every key written into either tar is read once. Before, the braces
    reached the shell unexpanded (no shard opened) and ``::`` was passed to ``cat`` as part of a file name."""
    _write_keyed_tar(tmp_path / "s-0.tar", ["a0", "a1"])
    _write_keyed_tar(tmp_path / "s-1.tar", ["b0"])
    braces = f"pipe:cat {tmp_path}/s-{{0..1}}.tar"
    joined = f"pipe:cat {tmp_path}/s-0.tar::pipe:cat {tmp_path}/s-1.tar"
    for pattern in (braces, joined):
        urls = expand_shard_urls(pattern)
        assert urls == [f"pipe:cat {tmp_path}/s-0.tar", f"pipe:cat {tmp_path}/s-1.tar"]
        keys = [key for url in urls for key in _samples(url)[0]]
        assert keys == ["a0", "a1", "b0"]
    assert expand_shard_urls("pipe:awk '{print}' x.tar") == ["pipe:awk '{print}' x.tar"]  # no list, no range: as is
