"""Every committed sample clip, read from its file and from its shard, against the ffprobe oracle and truth.json."""
import json

import numpy as np
import pytest

import loaders
from conftest import SAMPLE_DATA, sample_truth
from loaders.shards import shard_samples


def _oracle(truth_clip: dict) -> np.ndarray:
    frames = json.loads((SAMPLE_DATA / truth_clip["ffprobe_frames"]).read_text())["frames"]
    return np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in frames])


def _clips():
    path = SAMPLE_DATA / "truth.json"
    return sorted(json.loads(path.read_text())["clips"]) if path.exists() else []


@pytest.fixture(scope="module")
def shard_bytes() -> dict:
    urls = sorted(str(p) for p in (SAMPLE_DATA / "shards").glob("*.tar"))
    return {s["__key__"]: s for s in shard_samples(urls, on_error="raise")}


@pytest.mark.parametrize("key", _clips())
def test_every_frame_time_equals_ffprobe(key, shard_bytes):
    truth = sample_truth()[key]
    ref = _oracle(truth)
    timed = np.isfinite(ref)
    for source in (SAMPLE_DATA / truth["media"], shard_bytes[key][truth["media"].split(".", 1)[1]]):
        clip = loaders.read_video(source, name=key)
        assert clip.num_frames == len(ref) == truth["num_frames"]
        np.testing.assert_allclose(clip.pts_seconds.numpy()[timed], ref[timed], atol=1e-6)
        assert clip.metadata.vfr == truth["vfr"]


@pytest.mark.parametrize("key", _clips())
def test_decord_backend_agrees_or_refuses(key):
    """decord's pixels with our demux times: identical to PyAV's, or a DecodeError (decord fails on some VP9/WebM
    streams with 'Error sending packet'); never different frames or times."""
    truth = sample_truth()[key]
    ref = _oracle(truth)
    timed = np.isfinite(ref)
    path = SAMPLE_DATA / truth["media"]
    try:
        clip = loaders.read_video(path, backend="decord")
    except loaders.DecodeError:
        assert loaders.read_video(path, backend="auto").num_frames == truth["num_frames"]
        return
    np.testing.assert_allclose(clip.pts_seconds.numpy()[timed], ref[timed], atol=1e-6)
    pyav = loaders.read_video(path, backend="pyav")
    assert float((clip.frames.float() - pyav.frames.float()).abs().mean()) < 2.0


@pytest.mark.parametrize("key", _clips())
def test_audio_start_and_rate_equal_truth(key):
    truth = sample_truth()[key]
    clip = loaders.read_audio(SAMPLE_DATA / truth["media"])
    assert clip.source_sample_rate == truth["sample_rate"]
    assert clip.start_seconds == pytest.approx(truth["audio_start_seconds"], abs=1e-6)
    # The first beep is where truth says: an acoustic check of the decoded timeline, 1 ms tolerance.
    x = np.abs(clip.samples[0].numpy())
    beep = truth["beep_audio_seconds"][0]
    i = int(round((beep - clip.start_seconds) * clip.sample_rate))
    window = x[i - clip.sample_rate // 50 : i + clip.sample_rate // 50]
    assert window.max() > 0.05


@pytest.mark.parametrize("key", _clips())
def test_fps_sampling_on_sample_clips(key):
    truth = sample_truth()[key]
    ref = _oracle(truth)
    ref = ref[np.isfinite(ref)]
    clip = loaders.read_video(SAMPLE_DATA / truth["media"], start_seconds=1.0, stop_seconds=3.0, fps=4.0)
    targets = 1.0 + np.arange(8) / 4.0
    expected = ref[np.searchsorted(ref - 5e-7, targets, side="right") - 1]
    np.testing.assert_allclose(clip.pts_seconds.numpy(), expected, atol=1e-6)
