"""read_audio with a window that seeks gives the samples a whole read gives, at the same times: Vorbis and PCM in
Matroska/WebM, and MPEG-TS at rates whose samples its 90 kHz tick does not name.

Matroska stamps each block with its time rounded to 1 ms (48 samples at 48 kHz, 44.1 at 44.1 kHz). A whole read
stamps its first frame and counts samples from there; a read that seeks took the first frame's rounded stamp, so its
samples came back up to 20 samples (0.5 ms) early or late, and at 44.1 and 22.05 kHz off the whole read's sample grid.
Vorbis frames (a multiple of 64 samples here) and PCM blocks (1024 or 1500 samples) have no one step that a single
stamp pins; the stamps of several frames do (BENCHMARKS.md, mkv64). MPEG-TS ticks are 1/90000 s (0.49 samples at
44.1 kHz): a seeked window's ``start_seconds`` lay up to half a sample off the whole read's grid.

Oracles: the whole read of the same file (the window's samples at the index its ``start_seconds`` names, bit for bit),
and for PCM the generator's samples themselves (lossless; the whole read starts at content time 0). Media are made here
with ffmpeg; ``-cluster_time_limit 700`` makes clusters (the seek points) start at blocks whose time is not a whole
millisecond.
"""
import wave

import numpy as np
import pytest

import loaders
from conftest import ffmpeg

SECONDS = 11
STARTS = [3.0005, 6.0104, 8.123457]
"""Window starts past the seek threshold: mid-millisecond, mid-frame."""

_ENCODINGS = {  # name: (extension, sample rate, ffmpeg output arguments)
    "webm-vorbis-48k": ("webm", 48000, ("-c:a", "libvorbis", "-q:a", "4")),
    "mkv-vorbis-44k": ("mkv", 44100, ("-c:a", "libvorbis", "-q:a", "4")),
    "mkv-vorbis-22k": ("mkv", 22050, ("-c:a", "libvorbis", "-q:a", "4")),
    "mkv-pcm-48k": ("mkv", 48000, ("-c:a", "pcm_s16le")),
    "mkv-pcm-44k": ("mkv", 44100, ("-c:a", "pcm_s16le")),
    "mkv-pcm-22k-1500": ("mkv", 22050, ("-af", "asetnsamples=n=1500", "-c:a", "pcm_s16le")),
    "ts-mp2-44k": ("ts", 44100, ("-c:a", "mp2")),
    "ts-mp2-22k": ("ts", 22050, ("-c:a", "mp2")),
}
_DITHER = {"ts-mp2-44k": 1 / 32768, "ts-mp2-22k": 1 / 32768}
"""FFmpeg's MP2 decoder dithers its rounding with a state that a seek restarts: the samples after a seek may differ
from a whole read's by one 16-bit step (measured; BENCHMARKS.md, mkv64). Every other codec here: bit for bit."""


def _source(path, rate: int) -> np.ndarray:
    """A quiet chirp with a click every second, off any millisecond; returns its 16-bit samples."""
    t = np.arange(SECONDS * rate) / rate
    signal = 0.05 * np.sin(2 * np.pi * (150.0 + 40.0 * t) * t)
    for k in range(1, SECONDS):
        n = rate * k + 777 + 131 * k
        signal[n], signal[n + 1] = 0.9, -0.9
    samples = (signal * 32767).astype("<i2")
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(samples.tobytes())
    return samples


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    folder = tmp_path_factory.mktemp("windowed_mkv64")
    paths, sources = {}, {}
    for name, (extension, rate, codec) in _ENCODINGS.items():
        source = folder / f"source{rate}.wav"
        if rate not in sources:
            sources[rate] = _source(source, rate)
        paths[name] = folder / f"{name}.{extension}"
        ffmpeg("-i", str(source), *codec, "-cluster_time_limit", "700", str(paths[name]))
    return paths, sources


@pytest.fixture(scope="module")
def whole_reads(media):
    paths, _ = media
    return {name: loaders.read_audio(path, backend="pyav") for name, path in paths.items()}


@pytest.mark.parametrize("name", sorted(_ENCODINGS))
def test_seeked_windows_hold_the_whole_reads_samples_at_their_times(media, whole_reads, name):
    paths, _ = media
    whole = whole_reads[name]
    rate = whole.sample_rate
    everything = whole.samples[0].numpy()
    for start_seconds in STARTS:
        window = loaders.read_audio(paths[name], start_seconds=start_seconds, stop_seconds=start_seconds + 0.5,
                                    backend="pyav")
        at = (window.start_seconds - whole.start_seconds) * rate
        assert at == pytest.approx(round(at), abs=1e-6), f"off the whole read's sample grid ({start_seconds = })"
        assert abs(window.start_seconds - start_seconds) <= 0.5 / rate
        samples = window.samples[0].numpy()
        assert abs(samples.size - 0.5 * rate) <= 1
        same = everything[round(at): round(at) + samples.size]
        assert np.max(np.abs(samples - same)) <= _DITHER.get(name, 0.0), (
            f"{start_seconds = }: the window's samples are not the whole read's at its times")


@pytest.mark.parametrize("name", ["mkv-pcm-44k", "mkv-pcm-22k-1500"])
def test_seeked_pcm_window_holds_the_generators_samples(media, name):
    paths, sources = media
    rate = _ENCODINGS[name][1]
    for start_seconds in STARTS:
        window = loaders.read_audio(paths[name], start_seconds=start_seconds, stop_seconds=start_seconds + 0.25,
                                    backend="pyav")
        first = round(window.start_seconds * rate)
        assert window.start_seconds == pytest.approx(first / rate, abs=1e-9)
        assert first == round(start_seconds * rate)
        samples = window.samples[0].numpy()
        assert abs(samples.size - 0.25 * rate) <= 1
        expected = sources[rate][first: first + samples.size].astype(np.float32) / 32768.0
        assert np.array_equal(samples, expected), f"{start_seconds = }"


@pytest.mark.parametrize("name", ["webm-vorbis-48k", "mkv-pcm-44k", "mkv-vorbis-22k", "wav-44k"])
def test_seeked_resampled_window_holds_the_resampled_whole_reads_samples(media, name):
    """Resampled to 16 kHz, a window starting at a native sample that no 16 kHz sample of the whole read shares (64-
    sample Vorbis frames from 48 kHz; anywhere but every 441st sample from 44.1 kHz) had its samples a third of a
    sample or so off the whole read's: it now starts where the two grids meet, so its samples are the whole read's."""
    paths, _ = media
    path = paths[name] if name in paths else paths["mkv-pcm-44k"].with_name("source44100.wav")
    whole = loaders.read_audio(path, sample_rate=16000, backend="pyav")
    everything = whole.samples[0].numpy()
    for start_seconds in STARTS:
        window = loaders.read_audio(path, sample_rate=16000, start_seconds=start_seconds,
                                    stop_seconds=start_seconds + 0.5, backend="pyav")
        at = (window.start_seconds - whole.start_seconds) * 16000
        assert at == pytest.approx(round(at), abs=1e-6), f"off the whole read's 16 kHz grid ({start_seconds = })"
        assert abs(window.start_seconds - start_seconds) <= 0.5 / 16000
        samples = window.samples[0].numpy()
        assert np.max(np.abs(samples - everything[round(at): round(at) + samples.size])) < 1e-6, f"{start_seconds = }"
