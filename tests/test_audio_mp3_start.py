"""read_audio on MP3: the first returned sample is at the time of the content it carries.

Oracle: a click generated at a known sample of a PCM signal (``aevalsrc``), encoded with libmp3lame; the click must
come back at its time on the returned clock (``start_seconds + n / sample_rate``) within 0.2 ms. A raw ``.mp3``
with a LAME/Info header is the case FFmpeg times late: ffprobe's first frame is at the encoder delay
((576 + 529) / sr: 69 ms at 16 kHz, 25 ms at 44.1 kHz, 23 ms at 48 kHz) although that frame is content time 0
(the decoder already dropped the delay), while the same audio in MP4 (edit list) or M4A is exact.
"""
import numpy as np
import pytest

import loaders
from conftest import ffmpeg, ffprobe_audio_start

_TOLERANCE_SECONDS = 0.0002


def _click(path, *, rate: int, at_seconds: float, seconds: float, codec=("-c:a", "libmp3lame"), extra=()):
    """A mono signal of silence with a two-sample click (+0.9, -0.9) at ``at_seconds``, encoded to ``path``."""
    n = round(at_seconds * rate)
    ffmpeg("-f", "lavfi", "-i", f"aevalsrc='if(eq(n,{n}),0.9,if(eq(n,{n + 1}),-0.9,0))':s={rate}:d={seconds}",
           *codec, *extra, str(path))


def _click_seconds(clip) -> float:
    """The click's time on the clip's clock: its largest sample."""
    k = int(np.argmax(np.abs(clip.samples[0].numpy())))
    return clip.start_seconds + k / clip.sample_rate


@pytest.mark.parametrize("rate", [16000, 44100, 48000])
def test_mp3_with_lame_header_starts_at_its_content(tmp_path, rate):
    path = tmp_path / f"click{rate}.mp3"
    _click(path, rate=rate, at_seconds=0.5, seconds=1)
    delay = ffprobe_audio_start(path)
    assert delay == pytest.approx((576 + 529) / rate, abs=1e-6)  # FFmpeg's view: the first frame at the delay
    for backend in ("auto", "pyav"):
        native = loaders.read_audio(path, backend=backend)
        assert native.sample_rate == rate
        assert native.start_seconds == 0.0
        assert native.num_samples == rate  # the header's delay and padding trimmed: the 1 s encoded, exactly
        assert _click_seconds(native) == pytest.approx(0.5, abs=_TOLERANCE_SECONDS)
        at16k = loaders.read_audio(path, backend=backend, sample_rate=16000)
        assert at16k.start_seconds == 0.0
        assert _click_seconds(at16k) == pytest.approx(0.5, abs=_TOLERANCE_SECONDS)
    from_bytes = loaders.read_audio(path.read_bytes(), name="KEY.mp3")  # as a shard's KEY.mp3 member is read
    assert from_bytes.start_seconds == 0.0
    assert _click_seconds(from_bytes) == pytest.approx(0.5, abs=_TOLERANCE_SECONDS)


def test_mp3_window_read_by_seeking_keeps_the_content_time(tmp_path):
    """A window starting after 2 s is read by seeking (PyAV): the seek and the frames' times move by the delay too."""
    path = tmp_path / "long.mp3"
    _click(path, rate=44100, at_seconds=3.0, seconds=4)
    window = loaders.read_audio(path, start_seconds=2.5, stop_seconds=3.5)
    assert window.start_seconds == pytest.approx(2.5, abs=1e-9)
    assert window.num_samples == 44100
    assert _click_seconds(window) == pytest.approx(3.0, abs=_TOLERANCE_SECONDS)
    full = loaders.read_audio(path)
    assert _click_seconds(full) == pytest.approx(3.0, abs=_TOLERANCE_SECONDS)


@pytest.mark.parametrize("codec,ext", [(("-c:a", "libmp3lame"), "mp4"), (("-c:a", "aac"), "m4a")])
def test_the_same_click_in_mp4_and_m4a_agrees_with_the_mp3(tmp_path, codec, ext):
    """MP3 in MP4 (the muxer's edit list carries the delay) and AAC in M4A: the click at 0.5 s as in the raw .mp3."""
    mp3 = tmp_path / "click.mp3"
    other = tmp_path / f"click.{ext}"
    _click(mp3, rate=48000, at_seconds=0.5, seconds=1)
    _click(other, rate=48000, at_seconds=0.5, seconds=1, codec=codec)
    a = loaders.read_audio(mp3, sample_rate=16000)
    b = loaders.read_audio(other, sample_rate=16000)
    assert _click_seconds(b) == pytest.approx(0.5, abs=_TOLERANCE_SECONDS)
    assert _click_seconds(a) == pytest.approx(_click_seconds(b), abs=_TOLERANCE_SECONDS)
