"""One clock for video, audio and text: the contract of DESIGN.md. Re-exports only.

``align`` and the records it returns, one entry point per estimator family and their options. Estimator
variants and building blocks live in :mod:`aligner.estimators`; span index mapping in :mod:`aligner.spans`;
audio and features onto the video timeline in :mod:`aligner.timeline`. Time rules (seconds ↔ samples/frames)
live in the base package :mod:`avcore`, not here.

The alignment stage: imports only :mod:`avcore` (records, time rules, errors), never ``loaders`` or
``avalign``.
"""
from aligner._align import AlignedSample, AlignmentReport, align
from aligner._av_records import AVAbstain, AVEstimate
from aligner._clock import ClockModel
from aligner._estimate import estimate_av_offset
from aligner._options import AVOptions, TextOptions
from aligner._spans import AlignedSpan
from aligner._text_method import estimate_transcript_offset
from aligner._text_records import TextEstimate

__all__ = [
    "AVAbstain",
    "AVEstimate",
    "AVOptions",
    "AlignedSample",
    "AlignedSpan",
    "AlignmentReport",
    "ClockModel",
    "TextEstimate",
    "TextOptions",
    "align",
    "estimate_av_offset",
    "estimate_transcript_offset",
]
