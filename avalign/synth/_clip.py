"""One synthetic clip with exact ground truth: :func:`make_clip`.

Timeline (video presentation time ``t``; audio presentation time ``a``)::

    video  |--frame--|--frame--|--WHITE--|--frame--| ...        flash at pts t_k (real container pts)
    audio        a_k = t_k * (1 + drift_ppm*1e-6) + av_offset_ms/1000
                 |----- speech -----|   [beep 1 kHz, 40 ms, sharp onset at a_k]
    text                 word stamped  a_word + text_offset_ms/1000

Steps (every FFmpeg command is logged at INFO):

1. video: raw RGB frames piped into ffmpeg (``-f rawvideo``), encoded alone into the target container;
   ffprobe gives the real pts of every frame (container time bases round, e.g. mkv to 1 ms);
2. audio: built sample by sample at presentation time ``audio_start_seconds + n / sample_rate``;
   beeps evaluated analytically from their exact onset (sub-sample exact), speech resampled by
   ``1 + drift`` with soxr and band-stopped around the beep tone;
3. mux: ``-c:v copy`` plus the audio encoder; ``-itsoffset`` delays the audio stream when
   ``audio_start_seconds > 0``;
4. verify by decoding with PyAV: the decoded audio (priming / pre-skip removed by the demuxer and
   decoder) must sit where the clock model says, to within a quarter sample; if a container shifts
   it, the shift is measured by cross-correlation, the source is pre-shifted and the audio re-encoded
   once, and the shift is recorded (``encoder_shift_samples``).
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
import random
import shlex
import subprocess
from fractions import Fraction
from pathlib import Path
from typing import Sequence

import numpy as np

from ._espeak import Speech, synthesize_speech
from ._spec import SENTENCES, ClipSpec
from ._transcript_writers import StampedWord, render_transcript

logger = logging.getLogger(__name__)

__all__ = ["BEEP_FREQUENCY_HZ", "BEEP_SECONDS", "make_clip"]

BEEP_FREQUENCY_HZ = 1000.0
"""Tone of the sync beeps."""
BEEP_SECONDS = 0.04
"""Length of a beep."""
_BEEP_AMPLITUDE = 0.5
_SPEECH_PEAK = 0.3
_FLASH_MIN_GAP_SECONDS = 0.7
_BITEXACT = ["-map_metadata", "-1", "-fflags", "+bitexact", "-flags", "+bitexact"]
# round(): a plain ``/TB`` truncates, e.g. 99.99999 ticks to 99.
_VFR_SETPTS = "setpts='round(if(lt(N,60),N/30,if(lt(N,90),2+(N-60)/15,4+(N-90)/30))/TB)'"
_VIDEO_ARGS = {
    "h264": ["-c:v", "libx264", "-preset", "medium", "-crf", "30", "-g", "30", "-bf", "2", "-pix_fmt", "yuv420p",
             "-threads", "1"],
    "vp9": ["-c:v", "libvpx-vp9", "-b:v", "0", "-crf", "45", "-deadline", "good", "-cpu-used", "4", "-g", "30",
            "-threads", "1", "-row-mt", "0", "-pix_fmt", "yuv420p"],
    "mpeg4": ["-c:v", "mpeg4", "-q:v", "6", "-bf", "2", "-g", "30", "-pix_fmt", "yuv420p", "-threads", "1"],
}
_AUDIO_ARGS = {
    "aac": ["-c:a", "aac", "-b:a", "96k"],
    "opus": ["-c:a", "libopus", "-b:a", "96k"],
    "pcm_s16le": ["-c:a", "pcm_s16le"],
}


def _run_ffmpeg(args: Sequence[str], *, stdin: bytes | None = None) -> None:
    command = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args] if stdin is None else \
        ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", *args]
    logger.info("ffmpeg: %s", shlex.join(command))
    result = subprocess.run(command, input=stdin, capture_output=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(f"ffmpeg failed ({result.returncode}): {shlex.join(command)}\n{result.stderr.decode()}")


def ffprobe_json(path: Path, args: Sequence[str]) -> dict:
    """Run ffprobe with ``args`` on ``path`` and parse its JSON output."""
    command = ["ffprobe", "-v", "error", *args, "-of", "json", str(path)]
    logger.info("ffprobe: %s", shlex.join(command))
    return json.loads(subprocess.run(command, capture_output=True, check=True).stdout)


FRAMES_ARGS = ("-select_streams", "v:0", "-show_frames", "-show_entries",
               "frame=best_effort_timestamp_time,pts_time,pkt_dts_time,key_frame,duration_time")
STREAMS_ARGS = ("-show_streams", "-show_format")


def _nominal_pts(spec: ClipSpec) -> np.ndarray:
    """Intended presentation time of every frame (what we ask the encoder for)."""
    if spec.vfr:
        pts, n = [], 0
        while True:
            t = n / 30 if n < 60 else (2 + (n - 60) / 15 if n < 90 else 4 + (n - 90) / 30)
            if t >= spec.duration_seconds - 1e-9:
                return np.asarray(pts)
            pts.append(t)
            n += 1
    count = math.floor(spec.duration_seconds * spec.fps_fraction + Fraction(1, 10**6))
    return np.arange(count) / float(spec.fps_fraction)


def _frame_image(index: int, t: float, width: int, height: int) -> np.ndarray:
    """A dark moving pattern (luma 16..80): drifting stripes and a moving square, so the codec sees motion."""
    y, x = np.mgrid[0:height, 0:width]
    luma = 40 + 20 * np.sin(2 * np.pi * (x / 37.0 + y / 53.0 - 0.8 * t))
    cx, cy = (width * 0.5 + width * 0.3 * math.sin(1.3 * t)), (height * 0.5 + height * 0.3 * math.cos(0.9 * t))
    luma[(np.abs(x - cx) < 12) & (np.abs(y - cy) < 12)] = 75
    luma += (index % 5) * 1.0
    return np.repeat(np.clip(luma, 0, 255).astype(np.uint8)[:, :, None], 3, axis=2)


def _choose_flashes(pts: np.ndarray, *, earliest_seconds: float, latest_seconds: float,
                    rng: random.Random) -> list[int]:
    """Frame indices of 4..8 flashes, >= 0.7 s apart, at irregular (seeded) times."""
    chosen: list[int] = []
    t = earliest_seconds + rng.uniform(0.0, 0.3)
    while len(chosen) < 8:
        candidates = np.nonzero(pts >= t)[0]
        if candidates.size == 0 or pts[candidates[0]] > latest_seconds:
            break
        index = int(candidates[0])
        chosen.append(index)
        t = pts[index] + _FLASH_MIN_GAP_SECONDS + rng.uniform(0.0, 0.45)
    if len(chosen) < 4:
        raise ValueError(f"only {len(chosen)} flashes fit in [{earliest_seconds:.2f}, {latest_seconds:.2f}] s; "
                         "make the clip longer")
    return chosen


def _encode_video(spec: ClipSpec, pts: np.ndarray, flashes: Sequence[int], path: Path) -> None:
    frames = []
    flash_set = set(flashes)
    for index, t in enumerate(pts):
        image = np.full((spec.height, spec.width, 3), 255, np.uint8) if index in flash_set else \
            _frame_image(index, float(t), spec.width, spec.height)
        frames.append(image.tobytes())
    rate = "30" if spec.vfr else spec.fps
    args = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{spec.width}x{spec.height}", "-framerate", rate,
            "-i", "pipe:0"]
    if spec.vfr:
        args += ["-vf", _VFR_SETPTS, "-fps_mode", "vfr"]
    args += [*_VIDEO_ARGS[spec.video_codec], "-an", *_BITEXACT, str(path)]
    _run_ffmpeg(args, stdin=b"".join(frames))


def _place_speech(spec: ClipSpec, speech_list: Sequence[Speech], rng: random.Random) -> list[float]:
    """Video start time of each sentence, spread over the clip, audio-sample aligned (see :func:`_audio`)."""
    drift = 1 + spec.drift_ppm * 1e-6
    offset = spec.av_offset_ms / 1000
    # Earliest video time whose sound falls at least 50 ms after the audio stream starts.
    earliest = max(0.15, (spec.audio_start_seconds + 0.05 - offset) / drift)
    total = sum(s.samples.shape[0] / s.sample_rate for s in speech_list)
    latest_end = spec.duration_seconds - 0.25
    slack = latest_end - earliest - total
    if slack < 0:
        raise ValueError(f"{spec.key}: {total:.2f} s of speech does not fit in {spec.duration_seconds} s")
    gaps = [rng.uniform(0, 1) for _ in range(len(speech_list) + 1)]
    scale = slack / sum(gaps)
    starts, cursor = [], earliest
    for gap, speech in zip(gaps, speech_list):
        cursor += gap * scale
        # Snap the audio start of the sentence to the audio sample grid; derive the video start from it.
        audio_index = round((cursor * drift + offset - spec.audio_start_seconds) * spec.sample_rate)
        start = ((spec.audio_start_seconds + audio_index / spec.sample_rate) - offset) / drift
        starts.append(start)
        cursor = start + speech.samples.shape[0] / speech.sample_rate
    return starts


def _audio(spec: ClipSpec, speech_list: Sequence[Speech], speech_starts: Sequence[float],
           flash_pts: Sequence[float], num_samples: int) -> np.ndarray:
    """The audio track: sample ``n`` is presented at ``audio_start_seconds + n / sample_rate``."""
    import scipy.signal
    import soxr

    sr = spec.sample_rate
    drift = 1 + spec.drift_ppm * 1e-6
    offset = spec.av_offset_ms / 1000
    out = np.zeros(num_samples, np.float64)
    for speech, start in zip(speech_list, speech_starts):
        stretched = soxr.resample(speech.samples.astype(np.float64), speech.sample_rate, sr * drift, quality="VHQ")
        band_stop = scipy.signal.butter(4, [700, 1400], btype="bandstop", fs=sr, output="sos")
        stretched = scipy.signal.sosfiltfilt(band_stop, stretched)
        stretched *= _SPEECH_PEAK / max(1e-9, float(np.max(np.abs(stretched))))
        index = round((start * drift + offset - spec.audio_start_seconds) * sr)
        if index < 0 or index + stretched.shape[0] > num_samples:
            raise ValueError(f"{spec.key}: speech at sample {index} does not fit in {num_samples} samples")
        out[index:index + stretched.shape[0]] += stretched
    times = spec.audio_start_seconds + np.arange(num_samples) / sr
    for t in flash_pts:
        onset = t * drift + offset
        local = times - onset
        inside = (local >= 0) & (local < BEEP_SECONDS)
        if not inside.any() or onset < spec.audio_start_seconds or onset + BEEP_SECONDS > times[-1]:
            raise ValueError(f"{spec.key}: beep at audio time {onset:.3f} s is outside the audio track")
        fade = np.clip((BEEP_SECONDS - local[inside]) / 0.005, 0, 1)  # 5 ms fade-out, sharp onset
        out[inside] += _BEEP_AMPLITUDE * fade * np.sin(2 * np.pi * BEEP_FREQUENCY_HZ * local[inside])
    return out.astype(np.float32)


def decode_video(path: Path, *, luma: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Exact presentation time and mean luma of every decoded frame (PyAV ``frame.pts * time_base``, else ``dts``);
    ``luma=False``: the times only (the luma array is empty; its conversion is most of the cost on small frames).

    PyAV 18 has no ``best_effort_timestamp`` attribute; :func:`make_clip` checks these against ffprobe's
    ``best_effort_timestamp_time`` (to 1 µs, ffprobe's print precision).
    """
    import av

    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        pts, lumas = [], []
        for frame in container.decode(stream):
            if luma:
                lumas.append(float(frame.to_ndarray(format="gray").mean()))
            stamp = frame.pts if frame.pts is not None else frame.dts
            if stamp is None:
                raise RuntimeError(f"{path}: frame {len(pts)} has neither pts nor dts")
            pts.append(float(stamp * frame.time_base))
    return np.asarray(pts), np.asarray(lumas)


def decode_audio(path: Path) -> tuple[float, int, np.ndarray]:
    """First decoded audio frame's presentation time, the sample rate and the mono samples (PyAV)."""
    import av

    with av.open(str(path)) as container:
        stream = container.streams.audio[0]
        first_pts, chunks, rate = None, [], stream.codec_context.sample_rate
        for frame in container.decode(stream):
            if first_pts is None:
                first_pts = float(frame.pts * frame.time_base)
            array = frame.to_ndarray().astype(np.float64)
            channels = len(frame.layout.channels)
            mono = array.mean(axis=0) if frame.format.is_planar else array.reshape(-1, channels).mean(axis=1)
            if frame.format.name.startswith("s16"):
                mono = mono / 32768.0
            elif frame.format.name.startswith("s32"):
                mono = mono / 2147483648.0
            chunks.append(mono)
    if first_pts is None:
        raise RuntimeError(f"no audio decoded from {path}")
    samples = np.concatenate(chunks)
    return first_pts, rate, samples


def _measure_shift_samples(source: np.ndarray, decoded: np.ndarray, first_pts: float, spec: ClipSpec) -> float:
    """Where the decoded audio really is, minus where the clock model puts it, in samples (sub-sample)."""
    import scipy.signal

    sr = spec.sample_rate
    # Decoded sample j is presented at first_pts + j/sr; it should hold source sample j + k0.
    k0 = (first_pts - spec.audio_start_seconds) * sr
    n = min(decoded.shape[0], source.shape[0])
    corr = scipy.signal.correlate(decoded[:n], source[:n], mode="full", method="fft")
    lags = scipy.signal.correlation_lags(n, n, mode="full")  # corr[k] = sum_j decoded[j + k] * source[j]
    best = int(np.argmax(np.where(np.abs(lags) <= 4096, corr, -np.inf)))
    y0, y1, y2 = corr[best - 1], corr[best], corr[best + 1]
    k = lags[best] + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2)
    lag = -k  # decoded[j] ~ source[j + lag]
    return float(k0 - lag)


def make_clip(spec: ClipSpec, out_dir: Path) -> dict:
    """Write ``<key>.<container>``, its transcript, ``<key>.frames.json`` and ``<key>.streams.json``.

    Returns:
        The truth record (schema of ``sample_data/truth.json``); words on the VIDEO timeline.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = random.Random(spec.seed)
    drift = 1 + spec.drift_ppm * 1e-6
    offset = spec.av_offset_ms / 1000
    media = out_dir / f"{spec.key}.{spec.container}"
    video_only = out_dir / f"{spec.key}.video-only.{spec.container}"
    audio_raw = out_dir / f"{spec.key}.audio.f32"
    try:
        pts = _nominal_pts(spec)
        earliest = max(0.6, (spec.audio_start_seconds + 0.1 - offset) / drift)
        latest = (spec.duration_seconds * min(1.0, 1 / drift) - 0.45 - max(0.0, offset))
        flashes = _choose_flashes(pts, earliest_seconds=earliest, latest_seconds=latest, rng=rng)
        _encode_video(spec, pts, flashes, video_only)
        real_pts, luma = decode_video(video_only)
        deviation = real_pts - pts if real_pts.shape == pts.shape else None
        # Containers may round pts (mkv: 1 ms) or start late (avi with B-frames: one frame), never more.
        if deviation is None or np.ptp(deviation) > 0.0011 or abs(deviation[0]) > 0.1:
            raise RuntimeError(f"{spec.key}: encoder changed the frames: {real_pts.shape[0]} decoded vs "
                               f"{pts.shape[0]} sent; first pts {real_pts[:3]} vs {pts[:3]}")
        white = np.nonzero(luma > 128)[0].tolist()
        if white != list(flashes):
            raise RuntimeError(f"{spec.key}: decoded white frames {white} != flash frames {flashes}")
        sentences = rng.sample(SENTENCES, spec.num_sentences)
        speech_list = [_trim(synthesize_speech(s)) for s in sentences]
        while len(speech_list) > 1 and sum(x.samples.shape[0] / x.sample_rate for x in speech_list) > \
                spec.duration_seconds - 1.2:
            speech_list, sentences = speech_list[:-1], sentences[:-1]
        speech_starts = _place_speech(spec, speech_list, rng)
        num_samples = round((spec.duration_seconds - spec.audio_start_seconds) * spec.sample_rate)

        # Mux, decode, compare; repeat when the muxer moved the video (mkv + Opus: every stream is delayed
        # so that the pre-skip does not give negative timestamps) or the audio (unsignalled encoder delay).
        video_pts, shift_samples, source, source_flashes = real_pts, 0.0, None, None
        for attempt in range(4):
            flash_pts = [float(video_pts[i]) for i in flashes]
            if flash_pts != source_flashes:  # the track depends only on these: made again if the video moved
                source = _audio(spec, speech_list, speech_starts, flash_pts, num_samples)
                source_flashes = flash_pts
            shifted = source if shift_samples == 0 else _shift(source, -shift_samples)
            audio_raw.write_bytes(shifted.astype("<f4").tobytes())
            args = ["-i", str(video_only)]
            if spec.audio_start_seconds:
                args += ["-itsoffset", f"{spec.audio_start_seconds:.6f}"]
            args += ["-f", "f32le", "-ar", str(spec.sample_rate), "-ac", "1", "-i", str(audio_raw),
                     "-map", "0:v:0", "-map", "1:a:0", "-c:v", "copy", *_AUDIO_ARGS[spec.audio_codec],
                     "-ar", str(spec.sample_rate), *_BITEXACT, str(media)]
            _run_ffmpeg(args)
            final_pts, _ = decode_video(media, luma=False)
            first_pts, rate, decoded = decode_audio(media)
            measured = _measure_shift_samples(source, decoded, first_pts, spec)
            video_moved = final_pts.shape != video_pts.shape or np.max(np.abs(final_pts - video_pts)) > 1e-9
            logger.info("%s: attempt %d: video starts at %.6f s (moved: %s); decoded audio starts at %.6f s, "
                        "shift vs clock model %.3f samples", spec.key, attempt, final_pts[0], video_moved,
                        first_pts, measured)
            if not video_moved and abs(measured) <= 0.25:
                break
            if attempt == 3:
                raise RuntimeError(f"{spec.key}: could not place the audio: video moved {video_moved}, "
                                   f"audio shift {measured:.2f} samples")
            if video_moved:
                if final_pts.shape != video_pts.shape:
                    raise RuntimeError(f"{spec.key}: muxing changed the frame count")
                video_pts = final_pts
            else:
                shift_samples += measured
        if rate != spec.sample_rate:
            raise RuntimeError(f"{spec.key}: decoded sample rate {rate} != {spec.sample_rate}")
    finally:
        video_only.unlink(missing_ok=True)
        audio_raw.unlink(missing_ok=True)

    frames_probe = ffprobe_json(media, FRAMES_ARGS)
    # ffprobe prints N/A for a frame without any timestamp (avi + B-frames: the last, flushed frame).
    probe_pts = np.asarray([float(f.get("best_effort_timestamp_time", "nan")) for f in frames_probe["frames"]])
    known = ~np.isnan(probe_pts)
    if probe_pts.shape != final_pts.shape or np.max(np.abs(probe_pts[known] - final_pts[known])) > 1e-6:
        raise RuntimeError(f"{spec.key}: ffprobe and PyAV disagree on frame pts")
    if not known.all():
        logger.info("%s: ffprobe has no timestamp for frames %s", spec.key, np.nonzero(~known)[0].tolist())
    (out_dir / f"{spec.key}.frames.json").write_text(json.dumps(frames_probe, indent=1) + "\n")
    streams_probe = ffprobe_json(media, STREAMS_ARGS)
    streams_probe["format"]["filename"] = media.name  # not the output directory: same seed, same bytes
    (out_dir / f"{spec.key}.streams.json").write_text(json.dumps(streams_probe, indent=1) + "\n")

    words, stamped = [], []
    for speech, start in zip(speech_list, speech_starts):
        sentence = []
        for w in speech.words:
            video_start, video_stop = start + w.start_seconds, start + w.stop_seconds
            words.append({"text": w.text, "start_seconds": video_start, "stop_seconds": video_stop})
            late = spec.text_offset_ms / 1000
            sentence.append(StampedWord(w.text, video_start * drift + offset + late, video_stop * drift + offset + late))
        stamped.append(sentence)
    transcript = out_dir / f"{spec.key}.{spec.transcript_extension}"
    transcript.write_text(render_transcript(stamped, transcript_format=spec.transcript_format,
                                            duration_seconds=spec.duration_seconds))
    video_stream = next(s for s in streams_probe["streams"] if s["codec_type"] == "video")
    audio_stream = next(s for s in streams_probe["streams"] if s["codec_type"] == "audio")
    return {
        "media": media.name,
        "transcript": transcript.name,
        "transcript_format": spec.transcript_format,
        "container": spec.container,
        "video_codec": video_stream["codec_name"],
        "audio_codec": audio_stream["codec_name"],
        "fps_nominal": float(spec.fps_fraction),
        "fps_nominal_fraction": spec.fps,
        "vfr": spec.vfr,
        "sample_rate": spec.sample_rate,
        "duration_seconds": spec.duration_seconds,
        "num_frames": int(final_pts.shape[0]),
        "video_start_seconds": float(final_pts[0]),
        "audio_start_seconds": first_pts,
        "audio_start_requested_seconds": spec.audio_start_seconds,
        "encoder_shift_samples": round(shift_samples, 3),
        "video_shift_seconds": float(final_pts[0] - pts[0]),
        "ffprobe_frames_without_pts": np.nonzero(~known)[0].tolist(),
        "av_offset_ms": spec.av_offset_ms,
        "drift_ppm": spec.drift_ppm,
        "text_offset_ms": spec.text_offset_ms,
        "flash_frame_indices": list(flashes),
        "flash_pts_seconds": flash_pts,
        "beep_audio_seconds": [t * drift + offset for t in flash_pts],
        "beep_frequency_hz": BEEP_FREQUENCY_HZ,
        "beep_seconds": BEEP_SECONDS,
        "sentences": list(sentences),
        "words": words,
        "ffprobe_frames": f"{spec.key}.frames.json",
        "ffprobe_streams": f"{spec.key}.streams.json",
        "seed": spec.seed,
    }


def _trim(speech: Speech) -> Speech:
    """Drop the trailing silence after the last word (keep 0.1 s)."""
    stop = round((speech.words[-1].stop_seconds + 0.1) * speech.sample_rate)
    return dataclasses.replace(speech, samples=speech.samples[:stop])


def _shift(x: np.ndarray, samples: float) -> np.ndarray:
    """``x`` delayed by ``samples`` (fractional, via FFT phase; positive = later)."""
    n = x.shape[0]
    size = 1 << (n + 4096).bit_length()
    spectrum = np.fft.rfft(x.astype(np.float64), size)
    spectrum *= np.exp(-2j * np.pi * np.fft.rfftfreq(size) * samples)
    return np.fft.irfft(spectrum, size)[:n].astype(np.float32)
