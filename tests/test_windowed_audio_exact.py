"""read_audio with a window that seeks gives the samples a whole read gives, at the same times.

A window starting past 2 s is read from a seek. In Matroska/WebM (1 ms ticks: 48 samples at 48 kHz) FFmpeg stamps
the first frame after the seek from a rounded millisecond (Opus: rounded twice, the packet's time and the pre-skip
its new decoder drops), so the window's samples came back 1 ms late (Opus) or up to 0.7 ms early (AAC), and at
44.1 kHz off the whole read's sample grid (MP3, FLAC); they must be the whole read's samples at its times.

Oracles: the whole read of the same file (the window's samples at the index its ``start_seconds`` names), and the
generator's clicks at known sample positions (Opus, whose whole read starts at content time 0). Media are made here
with ffmpeg; ``-cluster_time_limit 700`` makes clusters (the seek points) start at packets whose time is not a
whole millisecond.
"""
import wave

import numpy as np
import pytest

import loaders
from conftest import ffmpeg

RATE = 48000
SECONDS = 12
CLICKS = [RATE * k + 777 + 131 * k for k in range(3, SECONDS - 1)]
"""Generator sample positions of the clicks: neither on a millisecond nor on a codec frame boundary."""
STARTS = [3.0005, 6.0104, 9.123457]
"""Window starts past the seek threshold: mid-millisecond, mid-frame."""


def _source(path, rate: int) -> None:
    """A quiet chirp with a click (+0.9, -0.9) at each of :data:`CLICKS` (at 48 kHz): the content dates itself."""
    t = np.arange(SECONDS * rate) / rate
    signal = 0.05 * np.sin(2 * np.pi * (150.0 + 40.0 * t) * t)
    for n in CLICKS if rate == RATE else ():
        signal[n], signal[n + 1] = 0.9, -0.9
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes((signal * 32767).astype("<i2").tobytes())


_ENCODINGS = {  # name: (extension, sample rate of the source, codec)
    "webm-opus": ("webm", RATE, ("-c:a", "libopus", "-b:a", "96k")),
    "mkv-opus": ("mkv", RATE, ("-c:a", "libopus", "-b:a", "96k")),
    "mkv-aac": ("mkv", RATE, ("-c:a", "aac", "-b:a", "128k")),
    "mkv-mp3-44k": ("mkv", 44100, ("-c:a", "libmp3lame", "-b:a", "192k")),
    "mkv-flac-44k": ("mkv", 44100, ("-c:a", "flac")),
}


@pytest.fixture(scope="module")
def media(tmp_path_factory):
    folder = tmp_path_factory.mktemp("windowed")
    paths = {}
    for name, (extension, rate, codec) in _ENCODINGS.items():
        source = folder / f"source{rate}.wav"
        if not source.exists():
            _source(source, rate)
        paths[name] = folder / f"{name}.{extension}"
        ffmpeg("-i", str(source), *codec, "-cluster_time_limit", "700", str(paths[name]))
    return paths


def _offset_in_whole(whole: np.ndarray, window: np.ndarray, at: int, search: int = 96) -> tuple[int, float]:
    """(k, max |difference|) for the shift k in [-search, search] where ``window`` best matches ``whole[at + k:]``."""
    errors = [float(np.max(np.abs(whole[at + k: at + k + window.size] - window))) for k in range(-search, search + 1)]
    best = int(np.argmin(errors))
    return best - search, errors[best]


@pytest.mark.parametrize("name", sorted(_ENCODINGS))
@pytest.mark.parametrize("start_seconds", STARTS)
def test_seeked_window_holds_the_whole_reads_samples_at_their_times(media, name, start_seconds):
    whole = loaders.read_audio(media[name], backend="pyav")
    window = loaders.read_audio(media[name], start_seconds=start_seconds, stop_seconds=start_seconds + 0.5,
                                backend="pyav")
    rate = whole.sample_rate
    at = (window.start_seconds - whole.start_seconds) * rate
    assert at == pytest.approx(round(at), abs=1e-6)  # the window starts on the whole read's sample grid
    assert abs(window.start_seconds - start_seconds) <= 0.5 / rate
    shift, error = _offset_in_whole(whole.samples[0].numpy(), window.samples[0].numpy(), round(at))
    assert (shift, error) == (0, pytest.approx(0.0, abs=1e-6))


@pytest.mark.parametrize("name", ["mkv-opus", "webm-opus"])
def test_seeked_opus_window_dates_the_generators_clicks(media, name):
    for start_seconds in STARTS:
        window = loaders.read_audio(media[name], start_seconds=start_seconds, stop_seconds=start_seconds + 2.5,
                                    backend="pyav")
        samples = np.abs(window.samples[0].numpy())
        first = round(window.start_seconds * RATE)
        inside = [n for n in CLICKS if first + 240 <= n < first + samples.size - 240]
        assert inside, "the window holds a click"
        for n in inside:
            around = n - first - 240
            found = first + around + int(np.argmax(samples[around: around + 480]))
            assert abs(found - n) <= 3, f"click of generator sample {n} found at {found} ({start_seconds = })"


def test_seeked_opus_window_resampled_matches_the_whole_read_resampled(media):
    whole = loaders.read_audio(media["webm-opus"], sample_rate=16000, backend="pyav")
    window = loaders.read_audio(media["webm-opus"], sample_rate=16000, start_seconds=7.0104, stop_seconds=8.0,
                                backend="pyav")
    at = round((window.start_seconds - whole.start_seconds) * 16000)
    shift, error = _offset_in_whole(whole.samples[0].numpy(), window.samples[0].numpy(), at, search=32)
    assert shift == 0
    assert error < 1e-3
