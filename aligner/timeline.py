"""Audio and features onto the video's presentation timeline (DESIGN's "resample" and "interpolate" steps).

:func:`audio_on_video_clock` resamples audio to a target rate on the video clock (drift and offset removed,
exact sample counts); :func:`interpolate_features` carries per-frame or per-hop features onto other times.
"""
from aligner._apply import audio_on_video_clock
from aligner._interpolate import InterpolationMode, interpolate_features

__all__ = ["InterpolationMode", "audio_on_video_clock", "interpolate_features"]
