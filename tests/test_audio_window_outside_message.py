"""``read_audio`` with a window past the audio's end: the ``IndexError`` names the span the audio covers. Past the
seek threshold the audio is decoded from a seek near the window, and the message gave the decoded tail as the
audio's span ("covers [5.994667, 6.016000) s" for a clip whose audio starts at 0.376 s). Oracle: ffprobe's
``start_time`` and ``duration`` of the audio stream."""
from __future__ import annotations

import re
import subprocess

import pytest

import loaders
from tests.conftest import SAMPLE_DATA

MOV = SAMPLE_DATA / "clip03.mov"  # AAC starting at 0.376 s


def _ffprobe_audio_span() -> tuple[float, float]:
    out = subprocess.check_output(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                                   "stream=start_time,duration", "-of", "csv=p=0", str(MOV)], text=True)
    start, duration = (float(x) for x in out.strip().split(","))
    return start, start + duration


@pytest.mark.parametrize("window", [(100.0, 101.0), (7.0, 8.0)])
def test_window_past_the_end_names_the_whole_audio_span(window):
    start, stop = _ffprobe_audio_span()
    with pytest.raises(IndexError, match="is outside the audio") as info:
        loaders.read_audio(MOV, start_seconds=window[0], stop_seconds=window[1])
    covered = [float(x) for x in re.search(r"covers \[([0-9.]+), ([0-9.]+)\) s", str(info.value)).groups()]
    assert covered[0] == pytest.approx(start, abs=1e-6)
    assert stop - 0.001 <= covered[1] <= stop + 0.03  # AAC's last frame may carry up to 1024 samples of padding
