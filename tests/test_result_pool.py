"""loaders.media.ResultPool: freed large results reused, never while anything can still reach them."""
import gc
import os
import subprocess
import threading

import numpy as np
import pytest
import torch

import loaders
from conftest import collector_on_new_objects, ffmpeg, ffprobe_frame_times
from loaders.media import ResultPool, result_pool

MIB = 1 << 20


def _pool(**limits) -> ResultPool:
    return ResultPool(**{"max_bytes": 64 * MIB, "max_count": 2, "min_bytes": 0, "min_available_bytes": 0, **limits})


def test_a_freed_result_is_handed_out_again():
    pool = _pool()
    first, reused = pool.empty((4, 256, 256, 3))
    assert not reused
    address = first.data_ptr()
    first.fill_(7)
    del first
    assert pool.idle_count == 1
    second, reused = pool.empty((4, 256, 256, 3))
    assert reused and second.data_ptr() == address
    assert int(second[3, 255, 255, 2]) == 7  # the same memory, contents unspecified (the caller overwrites)
    assert pool.idle_count == 0


@pytest.mark.parametrize("keep", ["view", "numpy", "storage", "dlpack"])
def test_memory_anything_still_reaches_is_never_handed_out(keep):
    """Whatever still reaches the memory (a torch view, a numpy array of it, its storage, a DLPack capsule)
    keeps it out of the pool: new results get other memory, and the kept values stay as written. (The pool,
    results and keepers are this test's own objects: the collector runs over them only.)"""
    with collector_on_new_objects():
        _check_what_still_reaches_is_never_handed_out(keep)


def _check_what_still_reaches_is_never_handed_out(keep: str) -> None:
    pool = _pool(max_count=4)
    result, _ = pool.empty((8, 64, 64, 3))
    result.fill_(200)
    kept = {"view": lambda: result[2:5], "numpy": lambda: result.numpy()[1], "storage": lambda: result.untyped_storage(),
            "dlpack": lambda: torch.utils.dlpack.to_dlpack(result)}[keep]()
    lo, hi = result.data_ptr(), result.data_ptr() + result.numel()
    del result
    gc.collect()
    assert pool.idle_count == 0
    others = []
    for _ in range(3):  # all alive at once
        other, reused = pool.empty((8, 64, 64, 3))
        assert not reused and not (lo <= other.data_ptr() < hi)
        other.fill_(1)
        others.append(other)
    del other, others
    if keep == "dlpack":
        kept = torch.utils.dlpack.from_dlpack(kept)
    values = torch.empty(0, dtype=torch.uint8).set_(kept) if keep == "storage" else torch.as_tensor(kept)
    assert int(values.min()) == 200 and int(values.max()) == 200
    del kept, values
    gc.collect()
    again = [pool.empty((8, 64, 64, 3)) for _ in range(4)]  # the four freed buffers, in some order
    assert all(reused for _, reused in again) and lo in [t.data_ptr() for t, _ in again]


def test_live_results_never_share_memory_under_threads():
    """Eight threads take, write, check and free results at once: no two live results ever overlap, and each
    reads back exactly what its owner wrote (a buffer handed out twice would be overwritten by the other)."""
    pool = _pool(max_count=3)
    errors: list = []

    def work(marker: int) -> None:
        for i in range(60):
            shape = (1 + (i + marker) % 3, 32, 32, 3)
            t, _ = pool.empty(shape)
            t.fill_(marker)
            if int(t.min()) != marker or int(t.max()) != marker:
                errors.append((marker, i))
            del t

    threads = [threading.Thread(target=work, args=(m,)) for m in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert pool.idle_count <= 3


def test_the_caps_hold_and_the_most_recently_freed_is_kept():
    pool = _pool(max_bytes=3 * MIB, max_count=2)
    a, _ = pool.empty((MIB,))
    b, _ = pool.empty((MIB,))
    c, _ = pool.empty((MIB,))
    addresses = [t.data_ptr() for t in (a, b, c)]
    del a, b, c  # freed in this order: the two most recent stay
    assert pool.idle_count == 2 and pool.idle_bytes == 2 * MIB
    big, reused = pool.empty((4 * MIB,))  # over max_bytes: never pooled, never taken from the pool
    assert not reused
    del big
    assert pool.idle_count == 2
    kept, reused = pool.empty((MIB,))
    assert reused and kept.data_ptr() in addresses[1:]  # b or c, never a (evicted)
    del kept
    pool.set_limits(max_count=0)
    assert pool.idle_count == 0


def test_a_buffer_serves_only_requests_close_to_its_size():
    pool = _pool()
    t, _ = pool.empty((8 * MIB,))
    del t
    small, reused = pool.empty((2 * MIB,))  # 4x smaller: would waste 6 MiB
    assert not reused
    near, reused = pool.empty((7 * MIB + 12345,))
    assert reused


def test_freed_buffers_go_back_to_the_system_when_memory_runs_short():
    """A pool that must leave more memory available than any machine has keeps nothing; one that asks for less
    than the kernel reports available (``MemAvailable``) keeps the freed buffer."""
    if not os.path.exists("/proc/meminfo"):
        pytest.skip("needs Linux's /proc/meminfo")
    with open("/proc/meminfo") as f:
        available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
    short = _pool(min_available_bytes=1 << 60)
    t, _ = short.empty((MIB,))
    del t
    assert short.idle_count == 0
    roomy = _pool(min_available_bytes=available // 4)
    t, _ = roomy.empty((MIB,))
    del t
    assert roomy.idle_count == 1


def test_release_frees_the_idle_buffers():
    pool = _pool()
    t, _ = pool.empty((2 * MIB,))
    del t
    assert pool.release() == 2 * MIB
    assert pool.idle_count == 0 and pool.idle_bytes == 0
    assert not pool.empty((2 * MIB,))[1]
    with pytest.raises(ValueError, match="max_bytes must be >= 0"):
        pool.set_limits(max_bytes=-1)


def test_a_forked_child_starts_empty_and_never_pools_inherited_memory():
    pool = _pool()
    idle, _ = pool.empty((MIB,))
    live, _ = pool.empty((2 * MIB,))
    del idle
    assert pool.idle_count == 1
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report (idle count after fork, idle count after freeing the inherited live result)
        try:
            before = pool.idle_count
            del live  # inherited, copy-on-write: freed here, never pooled here
            os.write(write, f"{before} {pool.idle_count}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        answer = f.read()
    os.waitpid(pid, 0)
    assert answer == "0 0"
    assert pool.idle_count == 1  # the parent's pool is unchanged


@pytest.fixture(scope="module")
def two_clips(tmp_path_factory) -> dict:
    """Two clips of the same size and length with different pictures (B-frames), made once per module: path →
    (ffmpeg's rgb24 pixels, ffprobe's frame times), the oracle."""
    d = tmp_path_factory.mktemp("pool")
    clips = {}
    for name, source in (("a.mp4", "testsrc2"), ("b.mp4", "smptehdbars")):
        ffmpeg("-f", "lavfi", "-i", f"{source}=size=320x240:rate=30", "-t", "2", "-c:v", "libx264", "-bf", "3",
               "-pix_fmt", "yuv420p", str(d / name))
        clips[d / name] = (_ffmpeg_rgb24(d / name, (60, 240, 320, 3)), ffprobe_frame_times(d / name))
    return clips


def _ffmpeg_rgb24(path, shape) -> np.ndarray:
    raw = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24",
                          "pipe:1"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


@pytest.mark.parametrize("max_hint_frames", [2048, 16])  # 16: the buffer grows, each old one freed mid-decode
def test_read_video_reuses_freed_results_and_never_a_live_one(two_clips, monkeypatch, max_hint_frames):
    """A training loop's order (the next clip decoded while the last is alive, then the last freed): every result
    equals ffmpeg's rgb24 pixels and ffprobe's times, a live result is never overwritten, a freed one is reused."""
    monkeypatch.setattr("loaders._video_pyav._FrameBuffer._MAX_HINT_FRAMES", max_hint_frames)
    limits = result_pool.limits
    result_pool.release()
    result_pool.set_limits(min_bytes=0, max_bytes=256 * MIB, max_count=2, min_available_bytes=0)
    try:
        expected = two_clips
        clip, addresses = None, []
        for path in [*two_clips, *two_clips]:
            new = loaders.read_video(path, num_threads=2, backend="pyav")
            addresses.append(new.frames.data_ptr())
            np.testing.assert_array_equal(new.frames.numpy(), expected[path][0])
            np.testing.assert_allclose(new.pts_seconds.numpy(), expected[path][1], atol=1e-6)
            if clip is not None:  # the live result was not written by the decode that ran while it lived
                np.testing.assert_array_equal(clip.frames.numpy(), expected[last][0])
                assert clip.frames.data_ptr() != new.frames.data_ptr()
            clip, last = new, path
        assert addresses[2] == addresses[0] and addresses[3] == addresses[1]  # freed results were reused
    finally:
        result_pool.release()
        result_pool.set_limits(**limits)


def test_loader_batches_are_identical_with_every_result_pooled(tmp_path):
    """The training pipeline with 2 forked DataLoader workers, every decode result taken from the pool (min_bytes
    0) vs the pool off: the same batches, byte for byte (a live frame tensor reused would corrupt them)."""
    from torch.utils.data import DataLoader

    from tests.loader_shards import BUDGETS, WINDOW_SECONDS, write_loader_shards

    shards = write_loader_shards(tmp_path)

    def epoch() -> list[tuple]:
        ds = loaders.make_dataset(shards["paths"], seed=3, budgets=BUDGETS, window_seconds=WINDOW_SECONDS)
        return [(b.sample_keys, b.frames.numpy().tobytes(), b.audio.numpy().tobytes())
                for b in DataLoader(ds, batch_size=None, num_workers=2)]

    limits = result_pool.limits
    try:
        result_pool.set_limits(max_bytes=0)
        off = epoch()
        result_pool.set_limits(max_bytes=256 * MIB, max_count=2, min_bytes=0, min_available_bytes=0)
        on = epoch()
    finally:
        result_pool.release()
        result_pool.set_limits(**limits)
    assert sum(len(keys) for keys, _, _ in off) == sum(shards["expected"].values())
    assert on == off
