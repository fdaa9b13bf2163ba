"""Audio events that start while a bed rises in the same bins are dated at their start, and the short bedded clips
they belong to answer (issue #12, branch avrate37).

Under a speech or music bed, the excess amplitude the dating line goes through keeps growing after the event's own
attack (the bed's syllable or note swells in the same bins): its 20 % point is still the event's start, but its 50 %
point comes 9-28 ms later and the line through both reached 10-18 ms before the start. The line now reaches back at
most 4 ms from the 20 % point (a clean attack of up to 30 ms reaches back 0.14·T, Hann, or 0.2·T, linear).

Oracle: the wild generator's truth (each sound's first sample, ``avalign.synth.make_wild_clip``), TUNE seeds only.
"""
from __future__ import annotations

import numpy as np
import pytest

import loaders
from aligner import estimate_av_offset
from aligner.estimators import audio_onsets
from avalign import read_video_for_estimation


@pytest.mark.slow
@pytest.mark.parametrize(("seed", "main_worst_ms"), [(1012, 14.1), (1016, 10.0)])
def test_every_event_under_a_music_bed_is_dated_within_5_ms(wild_tune, seed: int, main_worst_ms: float) -> None:
    """wild1012 (music bed at 6.6 dB) and wild1016 (music at 16 dB, reverb): main dated one event of each
    ``main_worst_ms`` early (a beep with a 10.9 ms sharp attack, a clap with a 29.7 ms Hann attack)."""
    record, audio, _ = wild_tune(seed)
    onsets = audio_onsets(audio.samples, audio.sample_rate, start_seconds=audio.start_seconds)
    errors_ms = [1000.0 * float(np.min(np.abs(onsets.times_seconds - event["audio_seconds"])))
                 for event in record["events"]]
    assert len(errors_ms) >= 5
    assert max(errors_ms) <= 5.0, np.round(errors_ms, 1)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1007, 1009])
def test_short_bedded_clips_answer_within_a_frame(tmp_path_factory, seed: int) -> None:
    """wild1007 (11 s, 4 events under music at 10 dB, reverb 78) and wild1009 (11 s, 4 events under speech and
    music at 4 dB, reverb 68) abstained on main (``below_null_threshold``, scores 0.67 and 0.38): one event of
    wild1009 was dated 17.8 ms early. Both now answer within one frame of the truth over the whole clip."""
    from conftest import wild_clip

    record, directory = wild_clip(tmp_path_factory, seed)
    media = str(directory / record["media"])
    video, _ = read_video_for_estimation(media, name=media)
    estimate = estimate_av_offset(video, loaders.read_audio(media, name=media))
    assert not estimate.abstained, estimate.abstain
    t = np.linspace(0.0, record["duration_seconds"], 65)
    applied = estimate.av_offset_ms + (estimate.drift_ppm or 0.0) * 1e-3 * t
    true = record["av_offset_ms"] + record["drift_ppm"] * 1e-3 * t
    assert float(np.max(np.abs(applied - true))) <= 1000.0 / record["fps_nominal"], (estimate.av_offset_ms, record)
