"""read_audio's two backends (issue #17): torchcodec (C++ decode loop, chunked, overlapped with our mean and soxr)
against PyAV (frame by frame) and the ffprobe oracle: the same start time and sample count exactly, samples
within float rounding (the two link different FFmpeg builds), and PyAV wherever torchcodec cannot show the
timeline is the frames end to end (a timestamp gap, a codec the builds disagree on)."""
import io
import json
import subprocess

import numpy as np
import pytest

import loaders
from avcore import downmix
from conftest import ffmpeg, ffprobe_audio_start

_STEREO = ["-f", "lavfi", "-i", "sine=f=440:r=48000", "-f", "lavfi", "-i", "sine=f=660:r=48000"]
AAC = ("-c:a", "aac", "-aac_coder", "fast")
"""FFmpeg's AAC encoder with its fast coder (a third of the default coder's time): these files test decoding (start
time, priming, sample counts, the two backends' samples), which the coder's quantisation choices do not touch."""


def _stereo(path, seconds, codec, *, rate=48000, extra=()):
    codec_args = AAC if codec == "aac" else ("-c:a", codec)
    ffmpeg(*_STEREO, "-t", str(seconds), "-filter_complex", "[0][1]amerge=inputs=2", "-ar", str(rate),
           *codec_args, *extra, str(path))


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    d = tmp_path_factory.mktemp("audio_backends")
    files = {}

    def add(name, make):
        files[name] = d / name
        make(files[name])

    add("aac48_stereo.m4a", lambda p: _stereo(p, 4, "aac"))  # AAC priming: 1024 samples trimmed by the edit list
    add("aac441_stereo.m4a", lambda p: _stereo(p, 4, "aac", rate=44100))
    add("aac16_mono.m4a", lambda p: ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=16000", "-t", "4", *AAC, str(p)))
    add("aac_5.1.m4a", lambda p: ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", "3", "-af",
                                         "pan=5.1|c0=c0|c1=0.5*c0|c2=0.25*c0|c3=c0|c4=0.1*c0|c5=0.7*c0",
                                         *AAC, str(p)))
    # video first, audio starting 0.4 s later: an edit list and a non-zero first audio time
    add("late_audio.mp4", lambda p: ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-itsoffset", "0.4",
                                           "-f", "lavfi", "-i", "sine=f=440:r=48000", "-t", "3", "-c:v", "libx264",
                                           *AAC, str(p)))
    add("pcm_s16.wav", lambda p: _stereo(p, 3, "pcm_s16le"))
    add("pcm_u8.wav", lambda p: _stereo(p, 3, "pcm_u8"))
    add("pcm_s24.wav", lambda p: _stereo(p, 3, "pcm_s24le"))
    add("aac_25s.m4a", lambda p: _stereo(p, 25, "aac"))  # three torchcodec chunks (10 s each, the last to the end)
    return files


def _ffprobe_sample_count(path) -> int:
    """The oracle for the count: the samples of every decoded audio frame, per ffprobe."""
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_frames",
                                   "-show_entries", "frame=nb_samples", "-of", "json", str(path)])
    return sum(int(f["nb_samples"]) for f in json.loads(out)["frames"])


def _sources(path):
    yield "path", str(path)
    yield "bytes", path.read_bytes()
    yield "file object", io.BytesIO(path.read_bytes())


def _same_clip(tc, pyav, *, atol=1e-6):
    assert tc.start_seconds == pyav.start_seconds
    assert tuple(tc.samples.shape) == tuple(pyav.samples.shape)
    assert (tc.sample_rate, tc.source_sample_rate, tc.codec, tc.stream_index, tc.decode_errors) == (
        pyav.sample_rate, pyav.source_sample_rate, pyav.codec, pyav.stream_index, pyav.decode_errors)
    np.testing.assert_allclose(tc.samples.numpy(), pyav.samples.numpy(), rtol=0, atol=atol)


@pytest.mark.parametrize("name", ["aac48_stereo.m4a", "aac441_stereo.m4a", "aac16_mono.m4a", "aac_5.1.m4a",
                                  "late_audio.mp4", "pcm_s16.wav", "pcm_u8.wav", "pcm_s24.wav", "aac_25s.m4a"])
def test_torchcodec_backend_equals_pyav_and_ffprobe(media, name):
    path = media[name]
    native = loaders.read_audio(path, backend="torchcodec", mono=False)
    assert native.start_seconds == pytest.approx(ffprobe_audio_start(path), abs=1e-6)
    assert native.num_samples == _ffprobe_sample_count(path)
    for options in ({"mono": False}, {"mono": True}, {"sample_rate": 16000}, {"sample_rate": 16000, "mono": False},
                    {"sample_rate": 22050}):
        pyav = loaders.read_audio(path, backend="pyav", **options)
        for kind, source in _sources(path):
            tc = loaders.read_audio(source, backend="torchcodec", **options)
            _same_clip(tc, pyav)
    mono = loaders.read_audio(path, backend="torchcodec")
    layout = ["FL", "FR", "FC", "LFE", "BL", "BR"] if native.samples.shape[0] == 6 else None
    # the mean (stereo), or 5.1's ITU downmix, exactly
    np.testing.assert_array_equal(mono.samples.numpy()[0], downmix(native.samples.numpy(), layout))
    if layout is None:
        np.testing.assert_array_equal(mono.samples.numpy()[0], native.samples.numpy().mean(axis=0))


def test_auto_takes_torchcodec_for_aac_in_mp4(media):
    """The builds' samples differ in the last bits on AAC, which tells which backend ``auto`` used."""
    path = media["aac48_stereo.m4a"]
    auto = loaders.read_audio(path, sample_rate=16000).samples.numpy()
    torchcodec = loaders.read_audio(path, sample_rate=16000, backend="torchcodec").samples.numpy()
    pyav = loaders.read_audio(path, sample_rate=16000, backend="pyav").samples.numpy()
    np.testing.assert_array_equal(auto, torchcodec)
    assert not np.array_equal(auto, pyav)


@pytest.mark.parametrize("stop", [1.75, None])
def test_windows_from_the_start_agree(media, stop):
    path = media["aac48_stereo.m4a"]
    for options in ({}, {"sample_rate": 16000}):
        pyav = loaders.read_audio(path, backend="pyav", start_seconds=0.5, stop_seconds=stop, **options)
        _same_clip(loaders.read_audio(path, start_seconds=0.5, stop_seconds=stop, **options), pyav)


def test_window_in_the_middle(media):
    """A window past 2 s seeks (PyAV, also under ``auto``); torchcodec decodes from the start and cuts the same
    samples at the native rate. (PyAV's seek restarts the AAC decoder 1 s before the window, which moves the
    samples by up to 6e-6 from a full decode; the two full decodes differ by 3e-8.)"""
    path = media["aac_25s.m4a"]
    pyav = loaders.read_audio(path, backend="pyav", start_seconds=12.0, stop_seconds=13.5)
    assert pyav.start_seconds == 12.0 and pyav.num_samples == 72000
    np.testing.assert_array_equal(loaders.read_audio(path, start_seconds=12.0, stop_seconds=13.5).samples.numpy(),
                                  pyav.samples.numpy())
    _same_clip(loaders.read_audio(path, backend="torchcodec", start_seconds=12.0, stop_seconds=13.5), pyav, atol=2e-5)
    full = loaders.read_audio(path, backend="pyav").samples.numpy()[:, 12 * 48000:27 * 24000]
    np.testing.assert_allclose(loaders.read_audio(path, backend="torchcodec", start_seconds=12.0,
                                                  stop_seconds=13.5).samples.numpy(), full, rtol=0, atol=1e-6)


@pytest.mark.parametrize("seconds,gap_at", [(4, 1.5), (25, 12.0)])
def test_a_timestamp_gap_falls_back_to_pyav(tmp_path, seconds, gap_at):
    """0.5 s of missing time in an MP4 (the muxer lengthens one ``stts`` delta): torchcodec would join the frames
    end to end, so it refuses (at the end check, or at the next chunk's start), and ``auto`` decodes with PyAV,
    which fills the gap with silence where the timestamps put it."""
    path = tmp_path / "gap.m4a"
    ffmpeg(*_STEREO, "-t", str(seconds), "-filter_complex",
           f"[0][1]amerge=inputs=2,asetpts='PTS+if(gte(T,{gap_at}),0.5/TB,0)'", *AAC, str(path))
    with pytest.raises(loaders.DecodeError, match="torchcodec audio backend cannot decode this exactly.*gap"):
        loaders.read_audio(path, backend="torchcodec")
    auto = loaders.read_audio(path)
    np.testing.assert_array_equal(auto.samples.numpy(), loaders.read_audio(path, backend="pyav").samples.numpy())
    mix = auto.samples.numpy()[0]
    rate = auto.sample_rate
    assert float(np.abs(mix[int((gap_at + 0.05) * rate):int((gap_at + 0.45) * rate)]).max()) == 0.0
    assert float(np.abs(mix[int((gap_at + 0.55) * rate):int((gap_at + 0.95) * rate)]).max()) > 0.05
    assert auto.num_samples == _ffprobe_sample_count(path) + round(0.5 * rate)


@pytest.mark.parametrize("codec,ext", [("libopus", "mp4"), ("libmp3lame", "mp4"), ("flac", "flac")])
def test_codecs_the_builds_disagree_on_stay_with_pyav(tmp_path, codec, ext):
    """Opus/MP3 in MP4: torchcodec's FFmpeg (the system's) trims their priming differently from PyAV's (start
    20 ms / 1 ms apart), so they are refused, as is any container but MP4 and WAV (FLAC here); ``auto`` gives
    exactly the PyAV result."""
    path = tmp_path / f"a.{ext}"
    _stereo(path, 2, codec)
    with pytest.raises(loaders.DecodeError, match="torchcodec audio backend"):
        loaders.read_audio(path, backend="torchcodec")
    auto = loaders.read_audio(path)
    pyav = loaders.read_audio(path, backend="pyav")
    assert auto.start_seconds == pyav.start_seconds
    np.testing.assert_array_equal(auto.samples.numpy(), pyav.samples.numpy())


class _CountingReader(io.BytesIO):
    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.bytes_read = 0

    def read(self, size=-1):
        out = super().read(size)
        self.bytes_read += len(out)
        return out

    def readinto(self, buffer):
        n = super().readinto(buffer)
        self.bytes_read += n or 0
        return n


def test_chunks_continue_without_decoding_from_the_start_again(media):
    """torchcodec decodes a range from the file's start when the range begins before its last decoded frame ends;
    each chunk starts just after it, so the 25 s file (three chunks) is read about once, not three times."""
    data = media["aac_25s.m4a"].read_bytes()
    reader = _CountingReader(data)
    clip = loaders.read_audio(reader, backend="torchcodec", sample_rate=16000)
    assert clip.num_samples == loaders.read_audio(data, backend="pyav", sample_rate=16000).num_samples
    assert reader.bytes_read < 1.5 * len(data)


def test_bad_backend_name():
    with pytest.raises(ValueError, match="backend"):
        loaders.read_audio(b"\0" * 10, backend="ffmpeg")


def _in_forked_child(target, path):
    """What ``target(path, queue)`` puts on the queue, run in a child forked from this process."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=target, args=(path, queue))
    child.start()
    try:
        return queue.get(timeout=120)
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()


def _read_in_child(path, queue):
    queue.put(loaders.read_audio(path, sample_rate=16000).samples.numpy())


def test_a_process_forked_after_its_parent_decoded_still_decodes(media):
    """torch's inter-op pool (where chunks decode) does not survive a fork; a child forked after the parent used
    it (a preprocess pool, DataLoader workers) decodes on its own thread and gets the same samples, not a hang."""
    path = str(media["aac48_stereo.m4a"])
    parent = loaders.read_audio(path, sample_rate=16000).samples.numpy()
    np.testing.assert_array_equal(_in_forked_child(_read_in_child, path), parent)


def test_refusals_keep_their_reasons(media, tmp_path):
    """What torchcodec cannot answer, PyAV answers with read_audio's documented errors: over
    ``max_duration_seconds`` is ``too_large``, an MP4 without audio is ``missing_audio``, a video stream's index
    is ``missing_audio``; under the limit the torchcodec result stands."""
    path = media["aac_25s.m4a"]
    with pytest.raises(loaders.DecodeError, match="max_duration_seconds") as raised:
        loaders.read_audio(path, max_duration_seconds=10.0)
    assert raised.value.reason == "too_large"
    _same_clip(loaders.read_audio(path, max_duration_seconds=30.0),
               loaders.read_audio(path, backend="pyav", max_duration_seconds=30.0))
    silent = tmp_path / "video_only.mp4"
    ffmpeg("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30", "-t", "1", "-c:v", "libx264", str(silent))
    with pytest.raises(loaders.DecodeError) as raised:
        loaders.read_audio(silent)
    assert raised.value.reason == "missing_audio"
    with pytest.raises(loaders.DecodeError) as raised:
        loaders.read_audio(media["late_audio.mp4"], stream_index=0)  # stream 0 is the video
    assert raised.value.reason == "missing_audio"


def _outcome(path, backend):
    """What ``read_audio`` gives: ("samples", array, decode_errors) or ("error", reason) for a DecodeError;
    anything else propagates (a bare RuntimeError from a backend is the defect this guards)."""
    try:
        clip = loaders.read_audio(path, sample_rate=16000, backend=backend)
    except loaders.DecodeError as e:
        return ("error", e.reason)
    return ("samples", clip.samples.numpy(), clip.decode_errors)


def _outcome_in_child(path, queue):
    try:
        queue.put(_outcome(path, "auto"))
    except BaseException as e:  # noqa: BLE001 - reported to the parent, which fails the test
        queue.put(("raised", f"{type(e).__name__}: {e}"))


def test_corrupt_packets_fall_back_to_pyav_in_a_forked_process_too(media, tmp_path):
    """Garbage inside the AAC payload: ``auto`` answers as the PyAV backend does (its tolerant decode or its
    DecodeError), both in this process and in a child forked after the parent decoded (where torchcodec decodes
    on the calling thread and the failure surfaced as a bare RuntimeError, a reason-``error`` skip, before)."""
    data = bytearray(media["aac48_stereo.m4a"].read_bytes())
    mdat = data.index(b"mdat")
    rng = np.random.default_rng(5)
    for offset in rng.integers(mdat + 4096, len(data) - 4096, size=40):
        data[int(offset):int(offset) + 64] = rng.integers(0, 256, size=64, dtype=np.uint8).tobytes()
    path = tmp_path / "corrupt.m4a"
    path.write_bytes(bytes(data))
    expected = _outcome(str(path), "pyav")

    def same(got):
        assert got[0] == expected[0], (got[:2], expected[:2])
        if expected[0] == "samples":
            np.testing.assert_array_equal(got[1], expected[1])
            assert got[2] == expected[2]
        else:
            assert got[1] == expected[1]

    same(_outcome(str(path), "auto"))
    got = _in_forked_child(_outcome_in_child, str(path))
    assert got[0] != "raised", got
    same(got)
