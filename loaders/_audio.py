"""``read_audio``: samples with the presentation time of the first one.

FFmpeg removes the encoder's priming (AAC: 1024 samples, 21 ms at 48 kHz, 64 ms at 16 kHz) and Opus
pre-skip when it honours the container's edit list / codec delay; what is left is the time of the
first *decoded* frame, which we report, never assume to be 0::

    packets      [prime][  1  ][  2  ] ...          first packet pts = -1024/sr (priming)
    decoded             [  1  ][  2  ] ...          first frame time = 0.0 (or the stream's start,
    AudioClip.start_seconds = time of sample 0          e.g. 0.4 s when audio starts after video)

Resampling uses soxr (the SoX resampler, "HQ": linear phase, its delay removed), so sample 0 of the
output is still at ``start_seconds``; the output length is the half-up count of the input duration
at the new rate. Gaps between decoded frames are filled with silence and overlaps trimmed, so
sample ``n`` is always at ``start_seconds + n / sample_rate``.
"""
from __future__ import annotations

import logging
import math
from typing import Optional

import numpy as np
import torch

from aligner._time import seconds_to_samples
from loaders._records import AudioClip
from loaders._source import MediaSource, check_source, describe_source, open_container, pick_stream
from loaders.errors import DecodeError

logger = logging.getLogger(__name__)

__all__ = ["read_audio", "resample"]

_GAP_TOLERANCE_SECONDS = 0.002
"""Frame timestamps may jitter by a sample or two; only larger gaps/overlaps are repaired."""
_SEEK_MARGIN_SECONDS = 1.0
"""Decode this much before a requested start so the codec's overlap/priming has settled."""
_MAX_TICK_SECONDS = 0.5
"""A time base coarser than this cannot time audio frames (~20 ms each): a corrupt ``mdhd`` timescale."""
_GAP_FILL_ALLOWANCE_SECONDS = 10.0
"""Silence filled into timestamp gaps may exceed the decoded audio by at most this much. More means the
timestamps are in the wrong unit (a corrupt timescale put 2 s of AAC 1024 s apart), not real gaps."""


def resample(samples: np.ndarray, from_rate: int, to_rate: int) -> np.ndarray:
    """Resample ``[C, N]`` float32 with soxr HQ; the result has ``round_half_up(N * to / from)`` samples."""
    if from_rate == to_rate:
        return samples
    import soxr

    target = seconds_to_samples(samples.shape[1] / from_rate, to_rate)
    if samples.shape[1] == 0:
        return np.zeros((samples.shape[0], 0), dtype=np.float32)
    out = soxr.resample(np.ascontiguousarray(samples.T), from_rate, to_rate, quality="HQ").T
    if out.shape[1] < target:
        out = np.pad(out, ((0, 0), (0, target - out.shape[1])))
    return np.ascontiguousarray(out[:, :target], dtype=np.float32)


def _planar(frame, packer: list) -> np.ndarray:
    """An AudioFrame as float32 ``[C, n]`` whatever its sample format.

    Planar frames of more than two channels are first interleaved by FFmpeg's resampler (format ``flt``,
    same layout and rate: no resampling, no delay): PyAV 18.1's ``to_ndarray`` on a planar 7.1 frame
    (which reports 9 planes for 8 channels) reads past the frame and segfaults. ``packer`` holds the
    resampler between frames (one per stream).
    """
    channels = len(frame.layout.channels)
    if frame.format.is_planar and channels > 2:
        import av

        setup = (frame.layout.name, frame.rate)
        if not packer or packer[0] != setup:  # the first frame, or the layout/rate changed mid-stream
            packer[:] = [setup, av.AudioResampler(format="flt", layout=frame.layout, rate=frame.rate)]
        packed = packer[1].resample(frame)
        array = np.concatenate([p.to_ndarray().reshape(-1) for p in packed]) if packed else np.zeros(0, np.float32)
        return np.ascontiguousarray(array.reshape(-1, channels).T, dtype=np.float32)
    array = frame.to_ndarray()
    if not frame.format.is_planar:
        array = array.reshape(-1, channels).T
    if array.dtype.kind == "i":
        array = array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)
    elif array.dtype.kind == "u":  # u8: centred on 128
        array = (array.astype(np.float32) - 128.0) / 128.0
    return array.astype(np.float32, copy=False)


def _tolerant_frames(container, stream, label: str, bad_packets: list):
    """Decoded frames of ``stream``; a packet the decoder rejects is skipped and its pts appended to
    ``bad_packets`` (as ``ffmpeg -i`` does), so its time becomes a gap that :func:`_decode_all` fills with silence."""
    import av

    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except (av.error.EOFError, av.error.ExitError):
            raise
        except av.FFmpegError as error:
            bad_packets.append(packet.pts)
            logger.info("%s: skipping an undecodable audio packet at pts %s: %s", label, packet.pts, error)
            continue
        yield from frames


def _decode_all(container, stream, label: str, seek_seconds: Optional[float],
                max_duration_seconds: Optional[float] = None) -> tuple[np.ndarray, float, int, int]:
    """Decode the stream: (samples [C, N], time of sample 0, rate, packets skipped), repairing gaps and overlaps.

    Gaps are only counted while decoding and filled once the whole stream has been checked: timestamps
    that would need more silence than :data:`_GAP_FILL_ALLOWANCE_SECONDS` beyond the decoded audio, or an
    output longer than ``max_duration_seconds``, are refused before anything that large is allocated.
    """
    rate = int(stream.codec_context.sample_rate or stream.rate or 0)
    if rate <= 0:
        raise DecodeError(f"{label}: audio stream has no sample rate")
    time_base = stream.time_base
    if time_base is None or not 0 < float(time_base) <= _MAX_TICK_SECONDS:
        raise DecodeError(f"{label}: the audio stream's time base is {time_base} s per tick, too coarse to time its "
                          f"frames (limit {_MAX_TICK_SECONDS} s): a corrupt header (mdhd timescale 0 or 1?)")
    if seek_seconds is not None:
        container.seek(int(math.floor(seek_seconds / float(time_base))), stream=stream, backward=True)
    pieces: list = []  # float32 [C, n] arrays, or an int: that many samples of silence
    start: Optional[float] = None
    written = decoded = filled = 0
    gaps = overlaps = 0
    packer: list = []
    bad_packets: list = []
    for frame in _tolerant_frames(container, stream, label, bad_packets):
        if frame.samples == 0:
            continue
        data = _planar(frame, packer)
        if frame.time is not None:
            if start is None:
                start = float(frame.time)
            expected = start + written / rate
            drift = float(frame.time) - expected
            if drift > _GAP_TOLERANCE_SECONDS:
                pad = seconds_to_samples(drift, rate)
                pieces.append(pad)
                written += pad
                filled += pad
                gaps += 1
            elif drift < -_GAP_TOLERANCE_SECONDS:
                cut = min(seconds_to_samples(-drift, rate), data.shape[1])
                data = data[:, cut:]
                overlaps += 1
        elif start is None:
            start = 0.0
        pieces.append(data)
        written += data.shape[1]
        decoded += data.shape[1]
        if filled > decoded + _GAP_FILL_ALLOWANCE_SECONDS * rate and filled > decoded * 8:
            break  # already hopeless: stop decoding (refused below)
        if max_duration_seconds is not None and written > max_duration_seconds * rate:
            break  # over the limit: refused below, without decoding the rest
    if start is None:
        raise DecodeError(f"{label}: the audio stream decoded to no samples (corrupt or truncated?)")
    if filled > decoded + _GAP_FILL_ALLOWANCE_SECONDS * rate:
        raise DecodeError(
            f"{label}: the audio timestamps span {written / rate:.3f} s but the stream holds {decoded / rate:.3f} s of "
            f"samples ({filled / rate:.3f} s of gaps): timestamps in the wrong unit (corrupt mdhd timescale?)"
        )
    if max_duration_seconds is not None and written > max_duration_seconds * rate:
        raise DecodeError(f"{label}: the audio spans {written / rate:.3f} s, over max_duration_seconds="
                          f"{max_duration_seconds:g}; raise the limit to decode it", reason="too_large")
    if gaps or overlaps:
        logger.info("%s: filled %d audio gap(s) with silence, trimmed %d overlap(s)", label, gaps, overlaps)
    width = max((p.shape[0] for p in pieces if not isinstance(p, int)), default=1)
    out = np.zeros((width, written), dtype=np.float32)
    at = 0
    for piece in pieces:
        if isinstance(piece, int):
            at += piece
            continue
        n = piece.shape[1]
        out[:, at:at + n] = piece if piece.shape[0] == width else piece[:1]  # a mono stretch is copied to every channel
        at += n
    return out, start, rate, len(bad_packets)


def read_audio(
    source: MediaSource,
    *,
    sample_rate: Optional[int] = None,
    start_seconds: Optional[float] = None,
    stop_seconds: Optional[float] = None,
    mono: bool = True,
    name: Optional[str] = None,
    stream_index: Optional[int] = None,
    max_duration_seconds: Optional[float] = None,
) -> AudioClip:
    """Decode the first audio stream of ``source`` with the presentation time of its first sample.

    Args:
        source: a path, the file's bytes or a binary file object; audio-only files are fine.
        sample_rate: resample to this rate (soxr HQ); default: the stream's own rate.
        start_seconds: keep samples from this presentation time (half-open window ``[start, stop)``).
        stop_seconds: keep samples before this time.
        mono: average the channels into one.
        name: label for error messages when ``source`` is bytes.
        stream_index: the container index of the audio stream (``ffprobe``'s ``index``); default: the stream
            FFmpeg picks (``av_find_best_stream``). Recorded in ``AudioClip.stream_index``.
        max_duration_seconds: refuse (``too_large``) audio spanning longer than this; None: no limit. Whatever
            the limit, timestamps that need far more silence than the stream holds (a corrupt timescale) are
            refused (``decode``) before that silence is allocated.

    Returns:
        AudioClip whose sample ``n`` is presented at ``start_seconds + n / sample_rate``.

    Raises:
        DecodeError: ANY failure caused by the file: no audio stream (``reason`` ``missing_audio``), nothing
            decodable or corrupt timestamps (``decode``), over ``max_duration_seconds`` (``too_large``).
        IndexError: the window lies entirely outside the audio (the message gives the valid range).
        ValueError: bad arguments.

    Example:
        >>> clip = read_audio("sample_data/clip00.mp4", sample_rate=16000)  # doctest: +SKIP
        >>> clip.start_seconds                                             # doctest: +SKIP
        0.0
    """
    check_source(source)
    label = describe_source(source, name)
    if stream_index is not None and (isinstance(stream_index, bool) or not isinstance(stream_index, int) or stream_index < 0):
        raise ValueError(f"stream_index must be an int >= 0 or None, got {stream_index = !r}")
    if max_duration_seconds is not None and not max_duration_seconds > 0:
        raise ValueError(f"max_duration_seconds must be > 0 or None, got {max_duration_seconds = !r}")
    if sample_rate is not None and (not isinstance(sample_rate, int) or sample_rate <= 0):
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate = !r}")
    if start_seconds is not None and stop_seconds is not None and stop_seconds < start_seconds:
        raise ValueError(f"window must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    try:
        container = open_container(source, label, kind="audio")
        try:
            stream = pick_stream(container, "audio", label, stream_index=stream_index)
            index_of_stream = int(stream.index)
            codec = stream.codec_context.name
            seek = None
            if start_seconds is not None and start_seconds > 2 * _SEEK_MARGIN_SECONDS:
                seek = start_seconds - _SEEK_MARGIN_SECONDS
            samples, first_seconds, rate, decode_errors = _decode_all(container, stream, label, seek, max_duration_seconds)
        finally:
            container.close()
        if mono and samples.shape[0] > 1:
            samples = samples.mean(axis=0, keepdims=True)
        out_rate = sample_rate or rate
        samples = resample(samples, rate, out_rate)
    except DecodeError:
        raise
    except MemoryError as e:
        raise DecodeError(f"{label}: out of memory decoding the audio ({e})", reason="too_large") from e
    except Exception as e:  # noqa: BLE001 - FFmpeg/PyAV/soxr errors on a corrupt file
        raise DecodeError(f"{label}: audio decode failed: {type(e).__name__}: {e}") from e
    end_seconds = first_seconds + samples.shape[1] / out_rate
    if start_seconds is not None or stop_seconds is not None:
        lo = first_seconds if start_seconds is None else start_seconds
        hi = end_seconds if stop_seconds is None else stop_seconds
        if hi > lo and (lo >= end_seconds or hi <= first_seconds):
            raise IndexError(
                f"{label}: window [{lo:.6f}, {hi:.6f}) s is outside the audio, which covers "
                f"[{first_seconds:.6f}, {end_seconds:.6f}) s"
            )
        a = min(max(seconds_to_samples(lo - first_seconds, out_rate), 0), samples.shape[1])
        b = min(max(seconds_to_samples(hi - first_seconds, out_rate), a), samples.shape[1])
        samples = samples[:, a:b]
        first_seconds = first_seconds + a / out_rate
    return AudioClip(
        samples=torch.from_numpy(np.ascontiguousarray(samples, dtype=np.float32)),
        sample_rate=int(out_rate),
        start_seconds=float(first_seconds),
        source_sample_rate=rate,
        codec=codec,
        decode_errors=decode_errors,
        stream_index=index_of_stream,
    )
