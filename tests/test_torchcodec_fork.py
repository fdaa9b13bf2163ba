"""torchcodec audio in processes forked from a training process (BENCHMARKS.md, "torchcodec audio in forked children
(branch fork12)"). Two parent states broke a child's first torchcodec read, which starts torch's inter-op pool:

- the parent called ``torch.set_num_threads(n > 1)`` and ran a parallel op on the thread that forks: the child's
  pool threads, starting at once, aborted it (``Invalid thread pool!``). Each child must decode the samples PyAV
  decodes in this process, and DataLoader workers forked from that parent must deliver every item. That parent is a
  fresh interpreter: this test process may have started the inter-op pool itself (another test read audio), and a
  child of such a parent never starts one (it decodes on its own thread: no abort to test);
- the parent's own code had started the pool (``torch.jit.fork``): the child waited forever for a dead pool.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import avcore
import loaders
from tests.conftest import REPO, ffmpeg, tiny_clip
from tests.corrupt_cases import write_tar

CHILDREN = 3
"""Children forked one after the other: on the code before the fix each aborts (BENCHMARKS.md, the section named
above: 20 of 20 children with 4 threads), so passing by chance would need all three to."""

_PARENT = r"""
import json, multiprocessing, sys
import numpy as np
import torch
from torch.utils.data import DataLoader
import loaders

media, out, children, shards = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]


def decode(index):
    clip = loaders.read_audio(media, sample_rate=16000, backend="torchcodec")
    np.savez(f"{out}/child{index}.npz", samples=clip.samples.numpy(), start_seconds=clip.start_seconds)


torch.set_num_threads(4)  # a training process's thread setting (any n > 1) ...
assert float((torch.ones(1 << 20) * 2).sum()) == 2.0 * (1 << 20)  # ... and a parallel op on the forking thread
fork = multiprocessing.get_context("fork")
exit_codes = []
for index in range(children):
    child = fork.Process(target=decode, args=(index,))
    child.start()
    child.join(120)
    exit_codes.append(child.exitcode)
dataset = loaders.make_dataset(shards, seed=3, budgets=(20, 32000, 16), window_seconds=0.5, frame_size=(24, 32),
                               max_items=8, max_words=16)
keys = sorted(key for batch in DataLoader(dataset, batch_size=None, num_workers=2) for key in batch.sample_keys)
print(json.dumps({"exit_codes": exit_codes, "keys": keys}))
"""


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    """Video + 48 kHz stereo AAC in MP4, 3 s: a clip as video2dataset writes them, two torchcodec chunks."""
    path = tmp_path_factory.mktemp("torchcodec_fork_media") / "stereo48k.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=10", "-f", "lavfi", "-i", "sine=f=440:r=48000",
           "-f", "lavfi", "-i", "sine=f=660:r=48000", "-t", "3", "-filter_complex", "[1][2]amerge=inputs=2",
           "-c:v", "libx264", "-c:a", "aac", "-aac_coder", "fast", str(path))
    return path


@pytest.fixture(scope="module")
def forked(tmp_path_factory, media) -> dict:
    """Runs the parent once: the PyAV decode of ``media`` (this process), the children's decodes, the keys the
    DataLoader delivered and the keys expected (0.5 s windows of 0.7 / 1.3 s clips)."""
    d = tmp_path_factory.mktemp("torchcodec_fork")
    clips = {seconds: tiny_clip(d / f"clip{seconds}.mp4", seconds, fps=10, sample_rate=16000) for seconds in (0.7, 1.3)}
    shards, expected = [], []
    for index in range(2):
        members = [(f"s{index}c{j}.mp4", clips[seconds]) for j, seconds in enumerate((0.7, 1.3))]
        write_tar(d / f"shard-{index}.tar", members)
        shards.append(str(d / f"shard-{index}.tar"))
        expected += [f"s{index}c0@{w}" for w in range(2)] + [f"s{index}c1@{w}" for w in range(3)]
    run = subprocess.run([sys.executable, "-c", _PARENT, str(media), str(d), str(CHILDREN), *shards],
                         capture_output=True, text=True, cwd=REPO, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.splitlines()[-1])
    pyav = loaders.read_audio(media, sample_rate=16000, backend="pyav")
    children = [np.load(d / f"child{i}.npz") if (d / f"child{i}.npz").exists() else None for i in range(CHILDREN)]
    probe = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_frames",
                                     "-show_entries", "frame=nb_samples", "-of", "json", str(media)])
    native = sum(int(frame["nb_samples"]) for frame in json.loads(probe)["frames"])
    return dict(result, pyav=pyav, ffprobe_samples=native, children=children, expected=sorted(expected))


def test_forked_children_decode_aac_in_mp4_with_torchcodec_as_pyav_does(forked):
    # Before: each child died of SIGABRT (exit code -6) on a torch inter-op thread, nothing decoded.
    assert forked["exit_codes"] == [0] * CHILDREN
    pyav = forked["pyav"]
    native = forked["ffprobe_samples"]  # the oracle for the count: every decoded frame's samples, per ffprobe
    assert pyav.samples.shape == (1, avcore.seconds_to_samples(native / 48000, 16000)) and native > 3 * 48000
    for child in forked["children"]:
        assert float(child["start_seconds"]) == pyav.start_seconds == 0.0
        np.testing.assert_allclose(child["samples"], pyav.samples.numpy(), rtol=0, atol=1e-6)


def test_dataloader_workers_forked_from_that_parent_deliver_every_item(forked):
    # Passed before the fix too: torch's DataLoader worker sets one thread before anything else, which replaces the
    # inherited pool on the worker's own thread (BENCHMARKS.md, the section named above).
    assert forked["keys"] == forked["expected"]


def _decode_to(path, out):
    clip = loaders.read_audio(path, sample_rate=16000, backend="torchcodec")
    np.save(out, clip.samples.numpy())


def test_a_child_of_a_parent_whose_own_code_used_the_inter_op_pool_decodes_instead_of_hanging(media, tmp_path):
    """The parent started torch's inter-op pool itself (``torch.jit.fork``, not through avalign): its child
    inherits a pool without threads. Before: the child's first chunk never ran and the child hung; now it sees the
    parent's pool threads at the fork and decodes on its own thread: PyAV's samples."""
    import multiprocessing

    import torch

    @torch.jit.script
    def plus_one(x: torch.Tensor) -> torch.Tensor:
        return x + 1

    @torch.jit.script
    def on_the_pool(x: torch.Tensor) -> torch.Tensor:
        return torch.jit.wait(torch.jit.fork(plus_one, x))

    assert on_the_pool(torch.zeros(1)).tolist() == [1.0]  # the pool's threads run in this process now
    child = multiprocessing.get_context("fork").Process(target=_decode_to, args=(str(media), tmp_path / "c.npy"))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail("the child hung (still running after 60 s)")
    assert child.exitcode == 0
    expected = loaders.read_audio(media, sample_rate=16000, backend="pyav").samples.numpy()
    np.testing.assert_allclose(np.load(tmp_path / "c.npy"), expected, rtol=0, atol=1e-6)
