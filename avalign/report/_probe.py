"""Container facts read from headers and the first packets (no decoding): stream starts, priming, durations.

What a naive reader gets wrong is visible here before any decoding::

    AAC in MP4      first audio packet pts = -1024 / sample_rate   (priming, -64 ms at 16 kHz, -21.3 ms at 48 kHz)
    Opus            codec delay (pre-skip) = 312 samples at 48 kHz (6.5 ms)
    stream starts   video start 0.0 s, audio start 0.4 s            (audio starts after video)
"""
from __future__ import annotations

import logging
from typing import Optional

from loaders.media import MediaSource, describe_source, open_for_pyav
from loaders.errors import DecodeError

logger = logging.getLogger(__name__)

__all__ = ["probe_container"]

_MAX_PACKETS = 256
"""Stop looking for the first audio packet after this many packets of any stream."""


def _seconds(value: Optional[int], time_base) -> Optional[float]:
    if value is None or not time_base:
        return None
    return float(value * time_base)


def probe_container(source: MediaSource, *, name: Optional[str] = None) -> dict:
    """Header facts of ``source`` and the pts of its first audio packet, demuxing at most a few packets.

    Returns:
        ``{"format", "video_start_seconds", "video_duration_seconds_from_header", "audio_start_seconds",
        "audio_duration_seconds_from_header", "audio_first_packet_seconds", "priming_ms", "codec_delay_samples",
        "codec_delay_ms", "audio_sample_rate_from_header"}``; fields of an absent stream are None.
        ``priming_ms`` is ``-first packet pts`` in ms when that pts is negative, else None (not visible).

    Raises:
        DecodeError: the container cannot be opened or has no audio or video stream.
    """
    import av

    label = describe_source(source, name)
    try:
        container = av.open(open_for_pyav(source), mode="r", metadata_errors="ignore")
    except (av.error.FFmpegError, ValueError, OSError) as e:
        raise DecodeError(f"cannot open {label}: {e}") from e
    try:
        video = container.streams.video[0] if container.streams.video else None
        audio = container.streams.audio[0] if container.streams.audio else None
        if video is None and audio is None:
            raise DecodeError(f"{label} has neither an audio nor a video stream")
        facts: dict = {"format": container.format.name if container.format else None}
        for prefix, stream in (("video", video), ("audio", audio)):
            facts[f"{prefix}_start_seconds"] = _seconds(stream.start_time, stream.time_base) if stream else None
            facts[f"{prefix}_duration_seconds_from_header"] = (
                _seconds(stream.duration, stream.time_base) if stream and stream.duration else None
            )
        facts.update(audio_first_packet_seconds=None, priming_ms=None, codec_delay_samples=None, codec_delay_ms=None)
        facts["audio_sample_rate_from_header"] = int(audio.codec_context.sample_rate or 0) or None if audio else None
        if audio is not None:
            rate = facts["audio_sample_rate_from_header"]
            delay = int(getattr(audio.codec_context, "delay", 0) or 0)
            if delay > 0:
                facts["codec_delay_samples"] = delay
                facts["codec_delay_ms"] = round(1000.0 * delay / rate, 3) if rate else None
            first = _first_audio_packet_seconds(container, audio)
            facts["audio_first_packet_seconds"] = first
            if first is not None and first < 0:
                facts["priming_ms"] = round(-1000.0 * first, 3)
        return facts
    except av.error.FFmpegError as e:
        raise DecodeError(f"{label}: cannot read packets: {e}") from e
    finally:
        container.close()


def _first_audio_packet_seconds(container, audio) -> Optional[float]:
    for count, packet in enumerate(container.demux()):
        if count >= _MAX_PACKETS:
            return None
        if packet.stream.index == audio.index and packet.pts is not None:
            return round(float(packet.pts * packet.time_base), 6)
    return None
