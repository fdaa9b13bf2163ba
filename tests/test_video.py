"""read_video against ffprobe's best-effort timestamps: every frame, every container, both backends."""
import io

import numpy as np
import pytest

import loaders
from conftest import ffprobe_frame_times

CLIPS = ["cfr30.mp4", "start05.mp4", "ntsc.mkv", "vp9.webm", "vfr.mp4", "bframes.avi", "silent.mp4"]


@pytest.mark.parametrize("name", CLIPS)
def test_every_pts_equals_ffprobe(media_dir, name):
    path = media_dir / name
    clip = loaders.read_video(path)
    ref = ffprobe_frame_times(path)
    assert clip.num_frames == len(ref)
    timed = np.isfinite(ref)
    assert timed.sum() >= len(ref) - 1
    np.testing.assert_allclose(clip.pts_seconds.numpy()[timed], ref[timed], atol=1e-6)  # ffprobe prints 6 decimals
    assert clip.frames.shape[1:] == (120, 160, 3)
    assert clip.metadata.num_frames_from_content == len(ref)


@pytest.mark.parametrize("name", ["cfr30.mp4", "ntsc.mkv", "vfr.mp4", "start05.mp4"])
def test_decord_backend_times_equal_ffprobe(media_dir, name):
    path = media_dir / name
    clip = loaders.read_video(path, backend="decord")
    np.testing.assert_allclose(clip.pts_seconds.numpy(), ffprobe_frame_times(path), atol=1e-6)
    pyav = loaders.read_video(path, backend="pyav")
    # Same decoder family, same pixels (decord bundles its own FFmpeg: allow rounding in colour conversion).
    assert float((clip.frames.float() - pyav.frames.float()).abs().mean()) < 2.0


def test_metadata_provenance(media_dir):
    ntsc = loaders.read_video(media_dir / "ntsc.mkv").metadata
    # Matroska stores ms ticks: over 2 s the mean rate is exact to 1 ms / 2 s = 500 ppm.
    assert ntsc.fps_from_content == pytest.approx(30000 / 1001, rel=1e-3)
    assert ntsc.vfr is False
    vfr = loaders.read_video(media_dir / "vfr.mp4").metadata
    assert vfr.vfr is True
    ref = ffprobe_frame_times(media_dir / "vfr.mp4")
    assert vfr.fps_from_content == pytest.approx((len(ref) - 1) / (ref[-1] - ref[0]), rel=1e-6)  # mean rate
    start = loaders.read_video(media_dir / "start05.mp4").metadata
    assert start.start_seconds == pytest.approx(0.5, abs=1e-3)


def test_window_is_half_open_at_exact_frame_boundaries(media_dir):
    path = media_dir / "cfr30.mp4"
    ref = ffprobe_frame_times(path)
    a, b = ref[30], ref[45]  # exact pts of frames 30 and 45
    clip = loaders.read_video(path, start_seconds=a, stop_seconds=b)
    np.testing.assert_allclose(clip.pts_seconds.numpy(), ref[30:45], atol=1e-6)
    full = loaders.read_video(path)
    assert bool((clip.frames == full.frames[30:45]).all())  # the seek lands on the same pixels


def test_window_mid_frame_and_empty(media_dir):
    path = media_dir / "start05.mp4"  # first pts 0.5, 25 fps
    ref = ffprobe_frame_times(path)
    clip = loaders.read_video(path, start_seconds=ref[3] + 0.01, stop_seconds=ref[6] + 0.01)
    np.testing.assert_allclose(clip.pts_seconds.numpy(), ref[4:7], atol=1e-6)
    empty = loaders.read_video(path, start_seconds=1.0, stop_seconds=1.0)
    assert empty.num_frames == 0 and empty.frames.shape == (0, 120, 160, 3)


def test_window_out_of_range_raises_with_valid_range(media_dir):
    with pytest.raises(IndexError, match=r"outside the video.*\[0\.500000, 2\.500000\)"):
        loaders.read_video(media_dir / "start05.mp4", start_seconds=3.0, stop_seconds=4.0)
    with pytest.raises(IndexError, match="outside"):
        loaders.read_video(media_dir / "start05.mp4", start_seconds=0.0, stop_seconds=0.4)
    with pytest.raises(ValueError, match="stop >= start"):
        loaders.read_video(media_dir / "start05.mp4", start_seconds=2.0, stop_seconds=1.0)


@pytest.mark.parametrize("name", ["cfr30.mp4", "vfr.mp4", "ntsc.mkv", "bframes.avi"])
def test_fps_sampling_returns_frame_played_at_each_time(media_dir, name):
    path = media_dir / name
    ref = ffprobe_frame_times(path)
    ref = ref[np.isfinite(ref)]
    clip = loaders.read_video(path, fps=3.0)
    end = ref[-1] + np.median(np.diff(ref))  # the last frame is shown for one frame duration
    assert clip.num_frames == int(np.ceil((end - ref[0]) * 3.0 - 1e-9))
    targets = ref[0] + np.arange(clip.num_frames) / 3.0
    # ffprobe prints 6 decimals (2/3 s as 0.666667): compare with its rounding undone.
    expected = ref[np.searchsorted(ref - 5e-7, targets, side="right") - 1]
    np.testing.assert_allclose(clip.pts_seconds.numpy(), expected, atol=1e-6)
    full = loaders.read_video(path)
    for k, t in enumerate(clip.pts_seconds.numpy()):  # pixels are those of the frame with that pts
        j = int(np.argmin(np.abs(full.pts_seconds.numpy() - t)))
        assert bool((clip.frames[k] == full.frames[j]).all())


def test_fps_above_native_repeats_frames(media_dir):
    clip = loaders.read_video(media_dir / "start05.mp4", start_seconds=0.5, stop_seconds=0.6, fps=100)
    assert clip.num_frames == 10
    assert clip.pts_seconds.numpy().tolist() == pytest.approx([0.5] * 4 + [0.54] * 4 + [0.58] * 2)


def test_sources_path_bytes_filelike_agree(media_dir):
    path = media_dir / "ntsc.mkv"
    data = path.read_bytes()
    a = loaders.read_video(str(path))
    b = loaders.read_video(data)
    c = loaders.read_video(io.BytesIO(data))
    assert bool((a.frames == b.frames).all()) and bool((a.frames == c.frames).all())
    assert a.pts_seconds.tolist() == b.pts_seconds.tolist() == c.pts_seconds.tolist()


def test_bad_inputs_raise_clear_errors(media_dir, tmp_path):
    with pytest.raises(loaders.DecodeError, match="no video stream"):
        loaders.read_video(media_dir / "audio.m4a")
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes())
    with pytest.raises(loaders.DecodeError, match="junk.mp4"):
        loaders.read_video(junk)
    with pytest.raises(ValueError, match="empty"):
        loaders.read_video(b"")
    with pytest.raises(FileNotFoundError):
        loaders.read_video(tmp_path / "missing.mp4")
    with pytest.raises(loaders.DecodeError, match="max_pixels"):
        loaders.read_video(media_dir / "cfr30.mp4", max_pixels=100 * 100)
    with pytest.raises(ValueError, match="backend"):
        loaders.read_video(media_dir / "cfr30.mp4", backend="opencv")


def test_pts_are_the_correctly_rounded_tick_times(media_dir):
    """pts = ticks·num/den exactly: 4 ticks of 1/25 s must be 0.16, not 0.16000000000000003 (window edges)."""
    from fractions import Fraction

    clip = loaders.read_video(media_dir / "start05.mp4")
    index = loaders.probe_video(media_dir / "start05.mp4")[1]
    for t in clip.pts_seconds.tolist():
        assert t == float(Fraction(t).limit_denominator(10**6))  # exactly the nearest double of a short rational
    assert clip.pts_seconds.tolist() == index.pts_seconds.tolist()
    assert loaders.read_video(media_dir / "start05.mp4", start_seconds=0.54, stop_seconds=0.62).pts_seconds.tolist() == [0.54, 0.58]


def test_frame_size_scales_in_the_decoder(media_dir):
    full = loaders.read_video(media_dir / "cfr30.mp4")
    small = loaders.read_video(media_dir / "cfr30.mp4", frame_size=(60, 80))
    assert small.frames.shape == (full.num_frames, 60, 80, 3)
    assert small.pts_seconds.tolist() == full.pts_seconds.tolist()
    # Area scaling by 2: each output pixel is close to the mean of its 2x2 block of the full-size frame.
    blocks = full.frames.float().reshape(full.num_frames, 60, 2, 80, 2, 3).mean(dim=(2, 4))
    assert float((small.frames.float() - blocks).abs().mean()) < 4.0
    sparse = loaders.read_video(media_dir / "cfr30.mp4", fps=2, frame_size=(60, 80))
    assert sparse.frames.shape[1:] == (60, 80, 3)
    with pytest.raises(ValueError, match="frame_size"):
        loaders.read_video(media_dir / "cfr30.mp4", frame_size=(0, 80))


def test_given_frame_index_is_used_instead_of_a_scan(media_dir, monkeypatch):
    path = media_dir / "cfr30.mp4"
    _, index = loaders.probe_video(path)
    reference = loaders.read_video(path, start_seconds=1.0, stop_seconds=2.0)

    def no_scan(*args, **kwargs):
        raise AssertionError("scanned although an index was given")

    monkeypatch.setattr("loaders._video_pyav.frame_index", no_scan)
    clip = loaders.read_video(path, start_seconds=1.0, stop_seconds=2.0, frame_index=index)
    assert clip.pts_seconds.tolist() == reference.pts_seconds.tolist()
    assert bool((clip.frames == reference.frames).all())


def test_a_result_larger_than_memory_is_refused_before_it_is_allocated(media_dir, caplog):
    # fps=1e9 on a 2 s clip asks for a frame per grid time: ~2e9 frames, far beyond any machine's memory. Before,
    # the grid and then the result were allocated (torch refused 107 GiB at fps=1e6 with a RuntimeError, a plain
    # 'decode' failure), and auto then retried the read with decord, which aborted its watchdog child
    # (std::bad_alloc). Now: DecodeError 'too_large' at once, nothing allocated, no fallback.
    import logging
    import resource

    path = media_dir / "cfr30.mp4"
    before_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with caplog.at_level(logging.WARNING), pytest.raises(loaders.DecodeError) as info:
        loaders.read_video(path, fps=1e9)
    assert info.value.reason == "too_large"
    assert "does not fit in the" in str(info.value) and "GiB of memory available" in str(info.value)
    assert "trying decord" not in caplog.text
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before_kib < 256 * 1024  # < 256 MiB more at peak
    grid = loaders.read_video(path, fps=2.0)  # an ordinary grid on the same file still reads
    assert grid.frames.shape[0] == len(grid.pts_seconds) > 0
    assert set(np.round(grid.pts_seconds.numpy(), 6)) <= set(np.round(ffprobe_frame_times(path), 6))
