"""read_audio: presentation time of sample 0 against ffprobe, resampling lengths, windows."""
import numpy as np
import pytest

from avcore import seconds_to_samples
import loaders
from conftest import ffprobe_audio_start


@pytest.mark.parametrize("name", ["cfr30.mp4", "ntsc.mkv", "vp9.webm", "bframes.avi", "audio.m4a"])
def test_start_seconds_equals_ffprobe_first_frame(media_dir, name):
    path = media_dir / name
    clip = loaders.read_audio(path)
    assert clip.start_seconds == pytest.approx(ffprobe_audio_start(path), abs=1e-6)


def test_resampled_length_and_tone_frequency(media_dir):
    native = loaders.read_audio(media_dir / "cfr30.mp4")
    assert native.sample_rate == 48000 and native.source_sample_rate == 48000
    clip = loaders.read_audio(media_dir / "cfr30.mp4", sample_rate=16000)
    assert clip.num_samples == seconds_to_samples(native.num_samples / 48000, 16000)
    # The 440 Hz tone survives resampling at the right frequency (an independent check of the rate).
    x = clip.samples[0, 4000:12000].numpy()
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x))))
    assert np.fft.rfftfreq(len(x), 1 / 16000)[np.argmax(spectrum)] == pytest.approx(440, abs=2.5)


def test_window_sample_counts(media_dir):
    clip = loaders.read_audio(media_dir / "cfr30.mp4", sample_rate=16000, start_seconds=0.5, stop_seconds=1.25)
    assert clip.num_samples == 12000
    assert clip.start_seconds == pytest.approx(0.5)
    empty = loaders.read_audio(media_dir / "cfr30.mp4", sample_rate=16000, start_seconds=1.0, stop_seconds=1.0)
    assert empty.num_samples == 0
    with pytest.raises(IndexError, match="outside the audio"):
        loaders.read_audio(media_dir / "cfr30.mp4", start_seconds=10, stop_seconds=11)


def test_window_samples_equal_full_decode(media_dir):
    full = loaders.read_audio(media_dir / "ntsc.mkv", sample_rate=16000)
    part = loaders.read_audio(media_dir / "ntsc.mkv", sample_rate=16000, start_seconds=0.5, stop_seconds=1.0)
    i = seconds_to_samples(0.5 - full.start_seconds, 16000)
    np.testing.assert_allclose(part.samples.numpy(), full.samples[:, i : i + part.num_samples].numpy(), atol=1e-6)


def test_missing_audio_stream(media_dir):
    with pytest.raises(loaders.DecodeError, match="no audio stream"):
        loaders.read_audio(media_dir / "silent.mp4")
