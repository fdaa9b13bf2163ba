"""read_audio(mono=True) of more than two channels: ITU-R BS.775's downmix, as ``ffmpeg -ac 1`` mixes.

Oracle: ``ffmpeg -ac 1`` to 16-bit WAV (swresample's matrix, scaled to sum to 1 for integer output) on the same
file. 5.1 weights: C 0.293, L/R 0.207, Ls/Rs 0.146, LFE 0 (the plain mean gave every channel 1/6: a centre-only
dialog 4.9 dB low). Stereo stays the mean.
"""
import numpy as np
import pytest

import loaders
from avcore import downmix, downmix_weights
from conftest import ffmpeg

_TONES_HZ = (440, 550, 660, 60, 770, 880)
"""One tone per 5.1 channel (FL FR FC LFE BL BR), so each channel's weight shows in the spectrum."""


def _rms(x) -> float:
    return float(np.sqrt(np.mean(np.asarray(x, dtype=np.float64) ** 2)))


def _db(a, b) -> float:
    return 20 * np.log10(_rms(a) / _rms(b))


@pytest.fixture(scope="module")
def surround(tmp_path_factory):
    d = tmp_path_factory.mktemp("downmix")
    files = {}
    centre = "pan=5.1|FL=0*c0|FR=0*c0|FC=c0|LFE=0*c0|BL=0*c0|BR=0*c0"
    ffmpeg("-f", "lavfi", "-i", "sine=f=440:r=48000:d=2", "-af", f"volume=0.5,{centre}", "-c:a", "aac",
           str(d / "dialog51.m4a"))
    inputs = [arg for hz in _TONES_HZ for arg in ("-f", "lavfi", "-i", f"sine=f={hz}:r=48000:d=2")]
    join = "join=inputs=6:channel_layout=5.1:map=0.0-FL|1.0-FR|2.0-FC|3.0-LFE|4.0-BL|5.0-BR"
    ffmpeg(*inputs, "-filter_complex", join, "-c:a", "pcm_f32le", str(d / "mix51.wav"))
    ffmpeg("-i", str(d / "mix51.wav"), "-c:a", "aac", str(d / "mix51.m4a"))
    for name in ("dialog51.m4a", "mix51.wav", "mix51.m4a"):
        files[name] = d / name
        ffmpeg("-i", str(d / name), "-ac", "1", str(d / f"{name}.ffmpeg_mono.wav"))
        files[f"{name}.ffmpeg_mono.wav"] = d / f"{name}.ffmpeg_mono.wav"
    return files


@pytest.mark.parametrize("backend", ["auto", "pyav", "torchcodec"])
def test_centre_dialog_level_matches_ffmpeg_mono(surround, backend):
    clip = loaders.read_audio(surround["dialog51.m4a"], backend=backend)
    reference = loaders.read_audio(surround["dialog51.m4a.ffmpeg_mono.wav"])
    assert abs(_db(clip.samples[0], reference.samples[0])) < 0.5
    channels = loaders.read_audio(surround["dialog51.m4a"], mono=False, backend=backend).samples.numpy()
    centre = channels[2]
    assert _rms(clip.samples[0]) == pytest.approx(_rms(centre) / (2 + np.sqrt(2)), rel=1e-3)  # C: 1 / 3.414
    at16k = loaders.read_audio(surround["dialog51.m4a"], backend=backend, sample_rate=16000)
    assert abs(_db(at16k.samples[0], reference.samples[0])) < 0.5


@pytest.mark.parametrize("name", ["mix51.wav", "mix51.m4a"])
def test_full_mix_equals_ffmpeg_mono_sample_by_sample(surround, name):
    clip = loaders.read_audio(surround[name]).samples[0].numpy()
    reference = loaders.read_audio(surround[f"{name}.ffmpeg_mono.wav"]).samples[0].numpy()
    n = min(clip.size, reference.size)
    assert n > 90000
    np.testing.assert_allclose(clip[:n], reference[:n], atol=1e-4)  # 16-bit quantisation of the reference
    spectrum = np.abs(np.fft.rfft(clip[:96000])) / 48000  # amplitude of each 2 s tone (bins at 0.5 Hz)
    lfe = spectrum[2 * 60]
    centre = spectrum[2 * 660]
    assert lfe < 1e-3 * centre  # the LFE is dropped
    assert spectrum[2 * 440] / centre == pytest.approx(np.sqrt(0.5), rel=0.02)
    assert spectrum[2 * 770] / centre == pytest.approx(0.5, rel=0.02)
    pipelined = loaders.read_audio(surround[name], sample_rate=16000, backend="pyav")  # blocks mixed as decoded
    whole = loaders.read_audio(surround[name], mono=False, backend="pyav")
    expected = downmix(whole.samples.numpy(), ["FL", "FR", "FC", "LFE", "BL", "BR"])
    ratio = _rms(pipelined.samples[0]) / _rms(expected)
    assert ratio == pytest.approx(1.0, abs=0.01)


def test_downmix_weights_and_the_stereo_mean():
    weights = downmix_weights(["FL", "FR", "FC", "LFE", "BL", "BR"])
    assert weights.sum() == pytest.approx(1.0)
    assert weights.tolist() == pytest.approx([0.2071, 0.2071, 0.2929, 0.0, 0.1464, 0.1464], abs=1e-4)
    assert downmix_weights(["FL", "FR"]) is None and downmix_weights(["USR0", "USR1", "USR2"]) is None
    rng = np.random.default_rng(0)
    stereo = rng.standard_normal((2, 1000)).astype(np.float32)
    np.testing.assert_array_equal(downmix(stereo, ["FL", "FR"]), stereo.mean(axis=0))
    six = rng.standard_normal((6, 1000)).astype(np.float32)
    np.testing.assert_allclose(downmix(six, None), six.mean(axis=0), atol=1e-6)  # no layout: the plain mean
