"""Issue #17 paths: sparse reads with frame threading, and read_audio's block conversion, against oracles
(ffprobe's frame times, a single-threaded full decode's pixels, ffmpeg's own PCM output)."""
import subprocess

import numpy as np
import pytest

import loaders
from conftest import ffmpeg, ffprobe_frame_times
from loaders.media import SampleBuffer


@pytest.fixture(scope="module")
def bframe_clip(tmp_path_factory):
    """x264 with 3 B-frames (B-pyramid: some B-frames are references) and a keyframe every 50 frames."""
    path = tmp_path_factory.mktemp("sparse") / "bframes.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=320x240:rate=30", "-t", "6", "-c:v", "libx264", "-bf", "3",
           "-g", "50", "-pix_fmt", "yuv420p", str(path))
    return path


@pytest.fixture(scope="module")
def bframe_times(bframe_clip) -> np.ndarray:
    """ffprobe's frame times of the clip (the time oracle), read once for the module."""
    return ffprobe_frame_times(bframe_clip)


@pytest.fixture(scope="module")
def bframe_full(bframe_clip):
    """A plain single-threaded full decode of the clip (the pixel reference of the sparse reads), made once."""
    return loaders.read_video(bframe_clip, num_threads=1)


@pytest.mark.parametrize("threads", [1, 2, 4])
@pytest.mark.parametrize("fps", [7.0, 2.5])
def test_sparse_frame_threaded_reads_are_exact(bframe_clip, bframe_times, bframe_full, threads, fps):
    ref, full = bframe_times, bframe_full
    start, stop = 0.45, 5.2
    clip = loaders.read_video(bframe_clip, start_seconds=start, stop_seconds=stop, fps=fps, num_threads=threads)
    targets = start + np.arange(int(np.ceil((stop - start) * fps - 1e-9))) / fps
    expected = ref[np.searchsorted(ref - 5e-7, targets, side="right") - 1]  # the frame on screen at each target
    np.testing.assert_allclose(clip.pts_seconds.numpy(), expected, atol=1e-6)
    rows = np.searchsorted(full.pts_seconds.numpy(), clip.pts_seconds.numpy())
    assert bool((clip.frames == full.frames[rows]).all())  # the same pixels as a plain single-threaded decode


def test_sparse_read_with_a_given_index_matches_the_full_decode(bframe_clip, bframe_full):
    full = bframe_full
    index = loaders.probe_video(bframe_clip)[1]
    clip = loaders.read_video(bframe_clip, fps=1.0, frame_index=index, num_threads=2, frame_size=(120, 160))
    small = loaders.read_video(bframe_clip, num_threads=1, frame_size=(120, 160))
    rows = np.searchsorted(full.pts_seconds.numpy(), clip.pts_seconds.numpy())
    assert clip.pts_seconds.tolist() == [float(i) for i in range(6)]
    assert bool((clip.frames == small.frames[rows]).all())


def _ffmpeg_f32(path, channels: int) -> np.ndarray:
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", str(path), "-f", "f32le", "-"], capture_output=True,
                         check=True).stdout
    return np.frombuffer(raw, dtype="<f4").reshape(-1, channels).T


@pytest.mark.parametrize("codec,ext", [("aac", "m4a"), ("pcm_s16le", "wav"), ("pcm_u8", "wav"), ("pcm_s32le", "wav"),
                                       ("flac", "flac"), ("libopus", "ogg")])
def test_read_audio_samples_equal_ffmpeg(tmp_path, codec, ext):
    path = tmp_path / f"stereo_{codec}.{ext}"
    rate = 48000
    ffmpeg("-f", "lavfi", "-i", f"sine=f=440:r={rate}", "-f", "lavfi", "-i", f"sine=f=660:r={rate}", "-t", "3",
           "-filter_complex", "[0][1]amerge=inputs=2", "-c:a", codec, str(path))
    ref = _ffmpeg_f32(path, 2)  # ffmpeg's own conversion to float: the oracle
    stereo = loaders.read_audio(path, mono=False)
    mono = loaders.read_audio(path)
    n = min(ref.shape[1], stereo.num_samples)
    assert abs(ref.shape[1] - stereo.num_samples) <= 1024
    atol = 1.0 / 128 if codec == "pcm_u8" else 1e-6
    np.testing.assert_allclose(stereo.samples.numpy()[:, :n], ref[:, :n], atol=atol)
    np.testing.assert_allclose(mono.samples.numpy()[0], stereo.samples.numpy().mean(axis=0), rtol=0, atol=0)
    assert mono.start_seconds == stereo.start_seconds


def _reference_join(pieces, mono):
    """The former implementation: pieces (arrays, or ints of silence) concatenated, then averaged."""
    width = max((p.shape[0] for p in pieces if not isinstance(p, int)), default=1)
    total = sum(p if isinstance(p, int) else p.shape[1] for p in pieces)
    out = np.zeros((width, total), dtype=np.float32)
    at = 0
    for p in pieces:
        if isinstance(p, int):
            at += p
            continue
        out[:, at:at + p.shape[1]] = p if p.shape[0] == width else p[:1]
        at += p.shape[1]
    return out.mean(axis=0, keepdims=True) if mono and width > 1 else out


@pytest.mark.parametrize("mono", [False, True])
def test_sample_buffer_join_equals_concatenation(monkeypatch, mono):
    monkeypatch.setattr("loaders._audio._BLOCK_SAMPLES", 1000)  # frames straddle many blocks
    rng = np.random.default_rng(7)
    pieces = []
    for k in range(60):
        if k in (5, 17, 18, 40):
            pieces.append(int(rng.integers(1, 700)))  # a gap, two in a row at 17/18
        channels = 1 if 25 <= k < 30 else (6 if k >= 50 else 2)  # a mono stretch, then wider frames
        pieces.append(rng.standard_normal((channels, int(rng.integers(1, 900)))).astype(np.float32))
    pieces.append(300)  # silence at the very end
    buffer = SampleBuffer()
    gaps = []
    for p in pieces:
        if isinstance(p, int):
            gaps.append((buffer.count, p))
        else:
            buffer.reserve(p.shape[0], p.shape[1])[...] = p  # a narrower piece broadcasts its first row, as write() does
    got = buffer.join(gaps, mono=mono)
    want = _reference_join(pieces, mono)
    assert got.shape == want.shape
    # Where the widest frames have 6 channels, the mean of a narrow stretch copied to 6 rows is that stretch up to
    # float32 rounding in the old sum; the new join copies it exactly.
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    assert np.count_nonzero(got[:, -300:]) == 0


@pytest.fixture(scope="module")
def gap_audio(tmp_path_factory):
    """4 s of stereo AAC (two sines) with 0.5 s of silence inserted at 1.5 s by a timestamp gap."""
    path = tmp_path_factory.mktemp("gap") / "gap.mka"
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000", "-f", "lavfi", "-i", "sine=f=660:r=48000", "-t", "4",
           "-filter_complex", "[0][1]amerge=inputs=2,asetpts='PTS+if(gte(T,1.5),0.5/TB,0)'", "-c:a", "aac", str(path))
    return path


@pytest.mark.parametrize("block_samples", [4096, 1 << 18])
def test_pipelined_resampling_equals_resampling_the_whole(gap_audio, monkeypatch, block_samples):
    """Mono + a new rate resamples block by block on a helper thread: bit-identical to joining all samples and
    resampling once, also across a timestamp gap (0.5 s of silence inserted at 1.5 s) and at any block size."""
    from avcore import resample

    monkeypatch.setattr("loaders._audio._BLOCK_SAMPLES", block_samples)
    path = gap_audio
    native = loaders.read_audio(path)
    mix = native.samples.numpy()[0]
    assert float(np.abs(mix[int(1.55 * 48000):int(1.95 * 48000)]).max()) == 0.0  # the gap: silence
    assert float(np.abs(mix[int(1.0 * 48000):int(1.4 * 48000)]).max()) > 0.05  # sine's amplitude is 1/8
    resampled = loaders.read_audio(path, sample_rate=16000)
    whole = resample(native.samples.numpy(), 48000, 16000)
    assert resampled.samples.shape == whole.shape
    np.testing.assert_array_equal(resampled.samples.numpy(), whole)
    assert resampled.start_seconds == native.start_seconds
    window = loaders.read_audio(path, sample_rate=16000, start_seconds=1.0, stop_seconds=2.5)
    np.testing.assert_array_equal(window.samples.numpy(), whole[:, 16000:40000])


def test_streamed_resampling_when_the_channel_count_grows(tmp_path, monkeypatch):
    """A stream whose frames go from mono to stereo (two ADTS files back to back) cannot be resampled block by
    block with reused blocks (the channel rule needs the joined samples): read_audio decodes once more and
    gives what resampling the whole mono mix gives."""
    from avcore import resample

    monkeypatch.setattr("loaders._audio._BLOCK_SAMPLES", 4096)  # many blocks, so blocks are handed on and reused
    mono, stereo = tmp_path / "mono.aac", tmp_path / "stereo.aac"
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", "1", "-c:a", "aac", "-ac", "1", str(mono))
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000", "-f", "lavfi", "-i", "sine=f=660:r=48000", "-t", "1",
           "-filter_complex", "[0][1]amerge=inputs=2", "-c:a", "aac", str(stereo))
    both = tmp_path / "mono_then_stereo.aac"
    both.write_bytes(mono.read_bytes() + stereo.read_bytes())
    native = loaders.read_audio(both, mono=False)
    assert native.samples.shape[0] == 2
    mix = loaders.read_audio(both)  # mono at the native rate: joined, not streamed
    streamed = loaders.read_audio(both, sample_rate=16000)
    np.testing.assert_array_equal(streamed.samples.numpy(), resample(mix.samples.numpy(), 48000, 16000))
    assert streamed.start_seconds == mix.start_seconds
    with open(both, "rb") as handle:  # decoded twice from a file object too
        np.testing.assert_array_equal(loaders.read_audio(handle, sample_rate=16000).samples.numpy(),
                                      streamed.samples.numpy())


def test_sample_buffer_reuses_blocks_it_was_handed_back(monkeypatch):
    """keep=False: full blocks go to on_block only; a block handed back through recycle() is written again."""
    size = 1000
    monkeypatch.setattr("loaders._audio._BLOCK_SAMPLES", size)
    seen = []
    buffer = None

    def on_block(block, used):
        seen.append((id(block), block[:, :used].copy()))
        buffer.recycle(block)

    buffer = SampleBuffer(on_block=on_block, keep=False)
    data = np.arange(3 * size, dtype=np.float32).reshape(1, -1)
    for at in range(0, 3 * size, size // 2):
        buffer.reserve(1, size // 2)[...] = data[:, at : at + size // 2]
    buffer.finish()
    assert len(seen) == 3 and len({block_id for block_id, _ in seen}) == 1  # handed back at once: one block serves all
    np.testing.assert_array_equal(np.concatenate([part for _, part in seen], axis=1), data)
    with pytest.raises(RuntimeError, match="keep=False"):
        buffer.join([], mono=False)


def _ffmpeg_rgb24(path, shape) -> np.ndarray:
    """The pixel oracle: ffmpeg's own rawvideo rgb24 output of every frame."""
    raw = subprocess.run(["ffmpeg", "-v", "error", "-nostdin", "-i", str(path), "-f", "rawvideo", "-pix_fmt", "rgb24",
                          "pipe:1"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, dtype=np.uint8).reshape(shape)


@pytest.fixture(scope="module")
def bframe_rgb24(bframe_clip) -> np.ndarray:
    """ffmpeg's rgb24 of every frame of the clip (the pixel oracle), decoded once for the module."""
    return _ffmpeg_rgb24(bframe_clip, (180, 240, 320, 3))


@pytest.mark.parametrize("max_hint_frames", [2048, 16])  # 16: the header under-counts, the buffer grows 4 times
def test_full_decode_into_populated_pages_equals_ffmpeg(bframe_clip, bframe_times, bframe_rgb24, monkeypatch,
                                                        max_hint_frames):
    """Full decode with the result's memory populated ahead of the writer in small chunks (so the writer waits
    for it), with and without growing the buffer: every pixel equals ffmpeg's rgb24, every time ffprobe's."""
    monkeypatch.setattr("loaders._pages.MIN_POPULATE_BYTES", 0)
    monkeypatch.setattr("loaders._pages.CHUNK_BYTES", 64 << 10)
    monkeypatch.setattr("loaders._video_pyav._FrameBuffer._MAX_HINT_FRAMES", max_hint_frames)
    clip = loaders.read_video(bframe_clip, num_threads=2)
    np.testing.assert_allclose(clip.pts_seconds.numpy(), bframe_times, atol=1e-6)
    assert clip.frames.shape == (180, 240, 320, 3)
    np.testing.assert_array_equal(clip.frames.numpy(), bframe_rgb24)



def _resident_bytes(address: int, nbytes: int) -> int:
    """The kernel's count of resident bytes in the pages of ``[address, address + nbytes)`` (``mincore(2)``).

    Counted over the range itself, not over its mapping: the kernel merges neighbouring anonymous mappings, so a
    fresh buffer's mapping may also hold memory that earlier tests in this process made resident."""
    import ctypes
    import mmap

    page = mmap.PAGESIZE
    first = address // page * page
    length = address + nbytes - first
    pages = -(-length // page)
    vector = (ctypes.c_ubyte * pages)()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.POINTER(ctypes.c_ubyte))
    if libc.mincore(ctypes.c_void_p(first), ctypes.c_size_t(length), vector) != 0:
        raise OSError(ctypes.get_errno(), "mincore failed")
    return sum(byte & 1 for byte in vector) * page


def _fresh_mapping(nbytes: int):
    """A uint8 tensor over a new anonymous mapping: nothing of it is resident yet. (``torch.empty`` is not that
    in a long-lived test process: the C heap may hand back memory an earlier test made resident.)"""
    import mmap

    import torch

    return torch.frombuffer(mmap.mmap(-1, nbytes), dtype=torch.uint8)  # the tensor keeps the mapping alive


def test_page_populator_makes_the_tensor_resident_without_writing_it():
    import platform

    import torch

    from loaders.media import PagePopulator

    release = tuple(int(p) for p in platform.release().split(".")[:2] if p.isdigit())
    if platform.system() != "Linux" or release < (5, 14):
        pytest.skip("needs Linux >= 5.14 (MADV_POPULATE_WRITE)")
    nbytes = 96 << 20
    tensor = _fresh_mapping(nbytes)
    assert _resident_bytes(tensor.data_ptr(), tensor.numel()) < nbytes // 8
    populator = PagePopulator(tensor, chunk_bytes=8 << 20, min_bytes=0)
    populator.wait_for(nbytes)
    populator.close()
    assert _resident_bytes(tensor.data_ptr(), tensor.numel()) >= nbytes - 2 * 4096  # all but the partial pages at the ends
    tensor[::4096] = 7  # writable, and populating wrote nothing a caller could rely on being kept
    assert int(tensor[4096]) == 7


def test_page_populator_runs_at_most_its_lead_ahead_of_the_writer():
    """A decode whose header over-counts its frames must not populate the capacity it never fills: populating
    stops ``lead_bytes`` (plus one chunk) past the furthest byte asked for, and ``close()`` ends it there."""
    import platform
    import time

    import torch

    from loaders.media import PagePopulator

    release = tuple(int(p) for p in platform.release().split(".")[:2] if p.isdigit())
    if platform.system() != "Linux" or release < (5, 14):
        pytest.skip("needs Linux >= 5.14 (MADV_POPULATE_WRITE)")
    mib = 1 << 20
    tensor = _fresh_mapping(256 * mib)
    populator = PagePopulator(tensor, chunk_bytes=4 * mib, min_bytes=0, lead_bytes=16 * mib)
    populator.wait_for(8 * mib)
    time.sleep(0.3)  # room to run ahead, were it unbounded
    populator.close()
    resident = _resident_bytes(tensor.data_ptr(), tensor.numel())
    assert 8 * mib <= resident <= (8 + 16 + 4) * mib + 2 * 4096, resident / mib
