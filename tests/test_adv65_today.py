"""adv65: adversarial round on the fifteenth session's merges (BENCHMARKS.md, "adv65").

Each test asserts against an oracle and failed before its fix.
"""
from __future__ import annotations

import pytest

from loaders import read_audio
from loaders.errors import DecodeError
from tests.conftest import encode_once


@pytest.mark.parametrize("suffix", [".mkv", ".webm"])
def test_seeked_window_past_the_end_of_vorbis_is_outside_the_audio_not_an_empty_track(tmp_path, suffix):
    """A window that starts over a second past the end of a Vorbis track in Matroska/WebM was refused as 'the audio
    stream holds no samples (an empty track)' (DecodeError, reason missing_audio: the loader's video-only clip), as the
    one packet the seek lands on gives no samples. Oracle: the whole read's span, which the IndexError names."""
    path = tmp_path / f"vorbis{suffix}"
    encode_once(path, "-f", "lavfi", "-i", "anoisesrc=d=2.5:c=pink:seed=7:r=48000", "-c:a", "libvorbis")
    whole = read_audio(path, backend="pyav")
    end_seconds = whole.start_seconds + whole.samples.shape[1] / whole.sample_rate
    assert 2.49 < end_seconds < 2.52
    for backend, start, stop in (("pyav", 4.0, 5.0), ("auto", 9.5, None)):
        try:
            read_audio(path, start_seconds=start, stop_seconds=stop, backend=backend)
        except DecodeError as e:
            pytest.fail(f"{backend} [{start}, {stop}): DecodeError({e.reason}): {e}")
        except IndexError as e:
            assert "outside the audio" in str(e) and f"{end_seconds:.6f}) s" in str(e), str(e)
        else:
            pytest.fail("a window past the end was not refused")
