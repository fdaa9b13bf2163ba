"""One clock for video, audio and text. Re-exports only; implementation in underscore modules."""
from aligner._time import frame_played_at, frame_range, sample_range, samples_to_seconds, seconds_to_samples

__all__ = sorted(
    [
        "frame_played_at",
        "frame_range",
        "sample_range",
        "samples_to_seconds",
        "seconds_to_samples",
    ]
)
