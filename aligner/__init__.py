"""One clock for video, audio and text. Re-exports only; implementation in underscore modules.

The alignment stage: imports only :mod:`avcore` (records, time rules, errors), never ``loaders`` or
``avalign``. The time-rule functions re-exported here live in ``avcore._time``.
"""
from aligner._align import AlignedSample, AlignmentReport, align
from aligner._apply import audio_on_video_clock
from aligner._clock import ClockModel
from aligner._estimate import (
    AVAbstain,
    AVEstimate,
    estimate_av_offset,
    estimate_av_offset_from_arrays,
    estimate_av_offset_from_features,
)
from aligner._forced import forced_align_words
from aligner._interpolate import interpolate_features
from aligner._signals import audio_onset_envelope, visual_change_events
from aligner._spans import AlignedSpan, map_spans
from aligner._text_forced import TEXT_METHODS, estimate_text_offset_forced, estimate_transcript_offset
from aligner._text_offset import TextEstimate, estimate_text_offset, refine_word_times
from aligner._tokens import word_token_ranges
from avcore import frame_played_at, frame_range, sample_range, samples_to_seconds, seconds_to_samples

__all__ = [
    "AVAbstain",
    "AVEstimate",
    "AlignedSample",
    "AlignedSpan",
    "AlignmentReport",
    "ClockModel",
    "TEXT_METHODS",
    "TextEstimate",
    "align",
    "audio_on_video_clock",
    "audio_onset_envelope",
    "estimate_av_offset",
    "estimate_av_offset_from_arrays",
    "estimate_av_offset_from_features",
    "estimate_text_offset",
    "estimate_text_offset_forced",
    "estimate_transcript_offset",
    "forced_align_words",
    "frame_played_at",
    "frame_range",
    "interpolate_features",
    "map_spans",
    "refine_word_times",
    "sample_range",
    "samples_to_seconds",
    "seconds_to_samples",
    "visual_change_events",
    "word_token_ranges",
]
