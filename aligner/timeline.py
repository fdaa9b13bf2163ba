"""Audio and features onto the video's presentation timeline (DESIGN's "resample" and "interpolate" steps).

:func:`audio_on_video_clock` resamples audio to a target rate on the video clock (drift and offset removed,
exact sample counts); :func:`interpolate_features` carries per-frame or per-hop features onto other times.
:data:`MAX_OFFSET_MS` bounds the offsets of a :class:`~aligner.ClockModel`; :data:`MAX_WINDOW_BEYOND_MEDIA_SECONDS`
how far an explicit window of :func:`~aligner.align` may reach past the media.
"""
from aligner._align import MAX_WINDOW_BEYOND_MEDIA_SECONDS
from aligner._apply import audio_on_video_clock
from aligner._clock import MAX_OFFSET_MS
from aligner._interpolate import InterpolationMode, interpolate_features

__all__ = ["InterpolationMode", "MAX_OFFSET_MS", "MAX_WINDOW_BEYOND_MEDIA_SECONDS", "audio_on_video_clock",
           "interpolate_features"]
