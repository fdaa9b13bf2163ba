"""The wild generator: one clip with real-footage nuisances and exact truth, :func:`make_wild_clip`.

Independent of :func:`avalign.synth.make_clip` (which the estimators were first built on): its flashes
are partial, coloured or weak and last 1-3 frames; the camera moves over a drifting texture; objects
move; a mouth-like box follows the speech envelope; hard cuts change the scene silently; sounds are
beeps, claps (noise bursts) and knocks with sharp, Hann, exponential or linear attacks of up to 30 ms,
under speech and/or music beds at 0-30 dB SNR, optionally reverberated (sox) and MP3-re-encoded. A second
nuisance stream (an independent evaluator's clips, issue #12 follow-up): on about half the clips speech runs over
the whole clip, unfiltered, with 30-60 ms tone beeps (mostly Hann attacks of 3-12 ms) under it; clicks (noise
bursts) start with a third of the sounds; a white noise floor 15-45 dB below the bed; a texture that scrolls
0.5-4 px every frame on about half.

Truth::

    flash of event k enters at frame f_k (first pts >= requested time): video time t_k = pts[f_k] (real pts),
        or, with the sub-frame stream, t_k = pts[f_k] - phase_k * (pts[f_k] - pts[f_k-1]) (the frame before shows
        the light in part: the share of its exposure, shutter x interval from its pts, that the light is on)
    its sound starts (attack begins) at audio time a_k = t_k * (1 + drift_ppm*1e-6) + av_offset_ms/1000
    word w heard at audio time a_w: truth start on the video timeline (a_w - av_offset/1000) / (1 + drift)

Steps: render frames → ffmpeg encode (video only) → decode real pts (PyAV) → build audio at those pts
(events evaluated analytically at exact sample times; speech resampled by 1 + drift with soxr) → reverb
(sox) and MP3 generation (ffmpeg), each checked by cross-correlation to move nothing (a measured shift is
undone) → mux → decode and verify the audio sits where the clock model says (within a quarter sample).
"""
from __future__ import annotations

import logging
import math
import subprocess
import tempfile
import types
from pathlib import Path

import numpy as np

from ._clip import (_VFR_SETPTS, _measure_shift_samples, _nominal_pts, _run_ffmpeg, _shift, _trim, decode_audio,
                    decode_video)
from ._espeak import synthesize_speech
from ._transcript_writers import StampedWord, render_transcript
from ._wild_spec import WildEvent, WildSpec, spec_record

logger = logging.getLogger(__name__)

__all__ = ["make_wild_clip", "attack_envelope"]

_VIDEO_ARGS = {
    "h264": ["-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-bf", "2", "-pix_fmt", "yuv420p", "-threads", "1"],
    "vp9": ["-c:v", "libvpx-vp9", "-b:v", "0", "-deadline", "realtime", "-cpu-used", "8", "-g", "60",
            "-threads", "1", "-row-mt", "0", "-pix_fmt", "yuv420p"],
}
_AUDIO_ARGS = {"aac": ["-c:a", "aac", "-b:a", "96k"], "opus": ["-c:a", "libopus", "-b:a", "64k"],
               "pcm_s16le": ["-c:a", "pcm_s16le"]}
_BITEXACT = ["-map_metadata", "-1", "-fflags", "+bitexact", "-flags", "+bitexact"]
_EVENT_SECONDS = {"beep": 0.09, "clap": 0.08, "knock": 0.12}


def attack_envelope(local_seconds: np.ndarray, *, attack: str, attack_ms: float) -> np.ndarray:
    """Gain in [0, 1] at ``local_seconds`` after the sound's start (0 before it): the attack part only."""
    x = np.asarray(local_seconds, dtype=np.float64)
    out = np.where(x >= 0, 1.0, 0.0)
    if attack == "sharp" or attack_ms <= 0:
        return out
    u = np.clip(x / (attack_ms / 1000.0), 0.0, 1.0)
    if attack == "hann":
        ramp = 0.5 * (1.0 - np.cos(np.pi * u))
    elif attack == "exponential":
        ramp = (1.0 - np.exp(-4.0 * u)) / (1.0 - math.exp(-4.0))
    elif attack == "linear":
        ramp = u
    else:
        raise ValueError(f"attack must be sharp|hann|exponential|linear, got {attack!r}")
    return out * ramp


def _event_wave(event: WildEvent, local: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The event's sound at ``local`` seconds after its start (exact sample times; zero outside)."""
    length = event.length_ms / 1000.0 if event.length_ms > 0 else _EVENT_SECONDS[event.sound]
    inside = (local >= 0) & (local < length)
    x = local[inside]
    gain = attack_envelope(x, attack=event.attack, attack_ms=event.attack_ms)
    gain *= np.clip((length - x) / 0.01, 0.0, 1.0)  # 10 ms release
    if event.sound == "beep":
        carrier = np.sin(2 * np.pi * event.frequency_hz * x)
    elif event.sound == "clap":
        carrier = rng.standard_normal(x.size) * np.exp(-x / 0.03) * 1.5
    else:
        carrier = np.sin(2 * np.pi * min(event.frequency_hz, 600.0) * x) * np.exp(-x / 0.04) + \
            0.3 * rng.standard_normal(x.size) * np.exp(-x / 0.01)
    out = np.zeros(local.shape, np.float64)
    out[inside] = gain * carrier
    if event.click:  # a noise burst with a sharp start, at the same instant
        near = (local >= 0) & (local < 0.03)
        out[near] += 0.8 * rng.standard_normal(int(near.sum())) * np.exp(-local[near] / 0.006)
    return out


# ---------------------------------------------------------------------------------------------- video


def _texture(rng: np.random.Generator, size: int = 384) -> np.ndarray:
    """A smooth random RGB texture (sum of a few blurred noise octaves), values 20..200."""
    import scipy.ndimage

    base = np.zeros((size, size, 3))
    for sigma, weight in ((24, 1.0), (8, 0.6), (2, 0.35)):
        noise = rng.standard_normal((size, size, 3))
        base += weight * scipy.ndimage.gaussian_filter(noise, (sigma, sigma, 0), mode="wrap") * sigma
    base -= base.mean()
    base /= base.std() + 1e-9
    tint = rng.uniform(60, 140, 3)
    return np.clip(tint + 35 * base, 20, 200)


class _Scene:
    """Texture + camera + moving objects + mouth; ``frame(t, speech_level)`` renders one RGB frame."""

    def __init__(self, spec: WildSpec, rng: np.random.Generator) -> None:
        self.spec = spec
        self.rng = rng
        self.textures = [_texture(rng) for _ in range(1 + len(spec.cut_seconds))]
        self.cameras = [(rng.uniform(-25, 25), rng.uniform(-15, 15), rng.uniform(0, 100), rng.uniform(0, 100))
                        for _ in self.textures]
        self.objects = [(rng.uniform(0, spec.width), rng.uniform(0, spec.height), rng.uniform(-60, 60),
                         rng.uniform(-40, 40), rng.integers(6, 20), rng.uniform(0, 255, 3))
                        for _ in range(spec.num_objects)]
        self.shake = rng.standard_normal((4096, 2)) * 2.5

    def frame(self, index: int, t: float, mouth_open: float) -> np.ndarray:
        spec = self.spec
        scene = int(np.searchsorted(np.asarray(spec.cut_seconds), t, side="right"))
        texture = self.textures[scene]
        vx, vy, x0, y0 = self.cameras[scene]
        scale = 1.0
        cx, cy = x0 + 4.0 * t + spec.texture_px_per_frame * index, y0 + 2.5 * t  # the texture drifts every frame
        if spec.camera == "pan":
            cx, cy = cx + vx * t, cy + vy * t
        elif spec.camera == "zoom":
            scale = 1.0 + 0.25 * math.sin(0.7 * t)
        elif spec.camera == "shake":
            dx, dy = self.shake[index % self.shake.shape[0]]
            cx, cy = cx + dx, cy + dy
        ys = (cy + (np.arange(spec.height) - spec.height / 2) / scale).astype(np.int64) % texture.shape[0]
        xs = (cx + (np.arange(spec.width) - spec.width / 2) / scale).astype(np.int64) % texture.shape[1]
        image = texture[ys[:, None], xs[None, :]].copy()
        for px, py, vxo, vyo, size, colour in self.objects:
            ox = (px + vxo * t) % (2 * spec.width)
            oy = (py + vyo * t) % (2 * spec.height)
            ox = ox if ox < spec.width else 2 * spec.width - ox  # bounce
            oy = oy if oy < spec.height else 2 * spec.height - oy
            image[max(0, int(oy - size)):int(oy + size), max(0, int(ox - size)):int(ox + size)] = colour
        if spec.mouth:
            height = int(2 + 22 * mouth_open)
            mid = int(spec.height * 0.62)
            image[mid - height // 2: mid + (height + 1) // 2, spec.width // 2 - 16: spec.width // 2 + 16] = 15
        return image


def _render_video(spec: WildSpec, pts: np.ndarray, flash_frames: list[int], mouth: np.ndarray,
                  rng: np.random.Generator) -> bytes:
    scene = _Scene(spec, rng)
    flash_of: dict[int, tuple] = {}
    for event, first in zip(spec.events, flash_frames):
        for k, shown in _flash_exposure(spec, event, first, pts).items():
            flash_of[k] = (event, shown)
    out = bytearray()
    for k, t in enumerate(pts):
        image = scene.frame(k, float(t), float(mouth[k]))
        if k in flash_of:
            event, shown = flash_of[k]
            x0, y0, x1, y1 = event.flash_area
            colour = np.asarray(event.flash_colour)
            colour = colour / (0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2])
            region = image[int(y0 * spec.height):int(math.ceil(y1 * spec.height)),
                           int(x0 * spec.width):int(math.ceil(x1 * spec.width))]
            region += shown * event.flash_level * colour
        out += np.clip(image, 0, 255).astype(np.uint8).tobytes()
    return bytes(out)


def _event_start_seconds(event, first: int, pts: np.ndarray) -> float:
    """When the event really starts on the clock of ``pts``: its flash frame's pts, or ``phase`` of the frame interval
    before it (:attr:`WildEvent.phase`)."""
    if event.phase == 0.0 or first == 0:
        return float(pts[first])
    return float(pts[first] - event.phase * (pts[first] - pts[first - 1]))


def _flash_exposure(spec: WildSpec, event, first: int, pts: np.ndarray) -> dict[int, float]:
    """``{frame: fraction of the flash's light it shows}``. On the frame grid (phase 0): 1 on ``flash_frames`` frames
    from ``first``. Between frames: the light is on for ``flash_frames`` frame intervals from the event's start, and a
    frame shows the part of its exposure (``shutter`` of its interval, from its pts) that overlaps it."""
    stop = min(first + event.flash_frames, pts.size)
    if event.phase == 0.0 or first == 0:
        return {k: 1.0 for k in range(first, stop)}
    interval = float(pts[first] - pts[first - 1])
    on = _event_start_seconds(event, first, pts)
    off = on + event.flash_frames * interval
    shown = {}
    for k in range(first - 1, min(stop + 1, pts.size)):
        frame_interval = float(pts[k + 1] - pts[k]) if k + 1 < pts.size else interval
        open_seconds = spec.shutter * frame_interval
        overlap = min(off, pts[k] + open_seconds) - max(on, pts[k])
        if overlap > 0:
            shown[k] = min(1.0, overlap / open_seconds)
    return shown


# ---------------------------------------------------------------------------------------------- audio


def _music(spec: WildSpec, num_samples: int, rng: np.random.Generator) -> np.ndarray:
    """Three harmonic voices, notes of 0.2-1 s with 5-20 ms attacks (onsets that have no visual partner)."""
    sr = spec.sample_rate
    out = np.zeros(num_samples)
    times = np.arange(num_samples) / sr
    for _ in range(3):
        t = rng.uniform(0, 0.5)
        while t < times[-1]:
            length = rng.uniform(0.2, 1.0)
            f0 = 110.0 * 2 ** (rng.integers(0, 36) / 12)
            lo, hi = int(t * sr), min(num_samples, int((t + length) * sr))
            x = times[lo:hi] - t
            env = attack_envelope(x, attack="hann", attack_ms=rng.uniform(5, 20)) * np.exp(-x / (0.6 * length))
            out[lo:hi] += env * sum(np.sin(2 * np.pi * f0 * h * x) / h for h in (1, 2, 3))
            t += length
    return out


def _speech(spec: WildSpec, num_samples: int, rng: np.random.Generator) -> tuple[np.ndarray, list, np.ndarray]:
    """Speech of ``spec.sentences`` spread over the clip; returns (audio, sentences of (word, audio start,
    audio stop)), and its 20 ms RMS envelope per sample (for the mouth)."""
    import soxr

    sr = spec.sample_rate
    drift = 1 + spec.drift_ppm * 1e-6
    out = np.zeros(num_samples)
    speech_list = [_trim(synthesize_speech(s)) for s in spec.sentences]
    total = sum(s.samples.size / s.sample_rate * drift for s in speech_list)
    start_audio = 0.5 + max(0.0, 0.3 - spec.text_offset_ms / 1000)
    end_audio = num_samples / sr - 0.3
    pauses = 0.75 * len(speech_list) if spec.speech_everywhere else 0.0  # end to end, 0.3-1.2 s pauses
    while speech_list and total + pauses > end_audio - start_audio:
        total -= speech_list[-1].samples.size / speech_list[-1].sample_rate * drift
        speech_list = speech_list[:-1]
        pauses = 0.75 * len(speech_list) if spec.speech_everywhere else 0.0
    slack = end_audio - start_audio - total
    if spec.speech_everywhere:
        gaps = rng.uniform(0.3, 1.2, len(speech_list) + 1)
        gaps *= min(1.0, slack / gaps.sum())
    else:
        gaps = rng.uniform(0, 1, len(speech_list) + 1)
        gaps *= slack / gaps.sum()
    cursor, sentences = start_audio, []
    for gap, speech in zip(gaps, speech_list):
        cursor += gap
        index = round(cursor * sr)
        stretched = soxr.resample(speech.samples.astype(np.float64), speech.sample_rate, sr * drift, quality="VHQ")
        stretched = stretched[: num_samples - index]
        out[index:index + stretched.size] += stretched / max(1e-9, float(np.max(np.abs(stretched))))
        begin = index / sr
        sentences.append([(w.text, begin + w.start_seconds * drift, begin + w.stop_seconds * drift) for w in speech.words])
        cursor = begin + stretched.size / sr
    window = max(1, int(0.02 * sr))
    envelope = np.sqrt(np.convolve(np.square(out), np.ones(window) / window, mode="same"))
    return out, sentences, envelope


def _sox_reverb(x: np.ndarray, sr: int, reverberance: float, work: Path) -> np.ndarray:
    import soundfile

    dry, wet = work / "dry.wav", work / "wet.wav"
    soundfile.write(dry, x.astype(np.float32), sr, subtype="FLOAT")
    command = ["sox", str(dry), str(wet), "reverb", f"{reverberance:.0f}"]
    logger.info("sox: %s", " ".join(command))
    subprocess.run(command, check=True, capture_output=True)
    y, _ = soundfile.read(wet, dtype="float64")
    y = y.mean(axis=1) if y.ndim == 2 else y
    return y[: x.size] if y.size >= x.size else np.pad(y, (0, x.size - y.size))


def _mp3_generation(x: np.ndarray, sr: int, kbps: int, work: Path) -> np.ndarray:
    raw, mp3 = work / "gen.f32", work / "gen.mp3"
    raw.write_bytes(x.astype("<f4").tobytes())
    _run_ffmpeg(["-f", "f32le", "-ar", str(sr), "-ac", "1", "-i", str(raw), "-c:a", "libmp3lame", "-b:a", f"{kbps}k",
                 str(mp3)])
    _, rate, decoded = decode_audio(mp3)
    if rate != sr:
        raise RuntimeError(f"mp3 generation changed the rate {sr} -> {rate}")
    return decoded[: x.size] if decoded.size >= x.size else np.pad(decoded, (0, x.size - decoded.size))


def _undo_shift(reference: np.ndarray, processed: np.ndarray, sr: int, what: str) -> np.ndarray:
    """``processed`` moved back onto ``reference``'s time grid (sub-sample, xcorr of the first 30 s)."""
    import scipy.signal

    n = min(reference.size, processed.size, 30 * sr)
    corr = scipy.signal.correlate(processed[:n], reference[:n], mode="full", method="fft")
    lags = scipy.signal.correlation_lags(n, n, mode="full")
    best = int(np.argmax(np.where(np.abs(lags) <= sr // 2, corr, -np.inf)))
    y0, y1, y2 = corr[best - 1], corr[best], corr[best + 1]
    lag = lags[best] + 0.5 * (y0 - y2) / (y0 - 2 * y1 + y2)
    logger.info("%s moved the audio by %.3f samples; undone", what, lag)
    return processed if abs(lag) < 0.05 else _shift(processed, -lag).astype(np.float64)


def _audio(spec: WildSpec, speech: np.ndarray, event_audio_seconds: list[float], rng: np.random.Generator,
           work: Path) -> np.ndarray:
    sr = spec.sample_rate
    num_samples = speech.size
    bed = 0.6 * speech
    if "music" in spec.bed or spec.bed == "music":
        music = _music(spec, num_samples, rng)
        bed += 0.5 * music / (np.sqrt(np.mean(np.square(music))) + 1e-9) * np.sqrt(np.mean(np.square(bed)) + 1e-4)
    floor = rng.standard_normal(num_samples)
    floor = np.cumsum(floor) * 0.02 + floor  # reddish
    floor -= np.convolve(floor, np.ones(401) / 401, mode="same")
    bed_rms = float(np.sqrt(np.mean(np.square(bed[bed != 0])))) if np.any(bed) else 0.05
    bed += floor / (np.std(floor) + 1e-9) * bed_rms * 10 ** (-35 / 20)
    if spec.noise_floor_db > 0:
        bed += rng.standard_normal(num_samples) * bed_rms * 10 ** (-spec.noise_floor_db / 20)
    times = np.arange(num_samples) / sr
    events = np.zeros(num_samples)
    for event, a in zip(spec.events, event_audio_seconds):
        lo, hi = max(0, int((a - 0.01) * sr)), min(num_samples, int((a + 0.2) * sr))
        wave = _event_wave(event, times[lo:hi] - a, rng)
        level = float(np.sqrt(np.mean(np.square(wave[: int(0.06 * sr)])))) + 1e-12
        events[lo:hi] += wave / level * bed_rms * 10 ** (spec.snr_db / 20)
    mix = bed + events
    if spec.reverb > 0:
        mix = _undo_shift(mix, _sox_reverb(mix, sr, spec.reverb, work), sr, "sox reverb")
    mix *= 0.8 / max(1e-9, float(np.max(np.abs(mix))))
    if spec.reencode_kbps:
        mix = _undo_shift(mix, _mp3_generation(mix, sr, spec.reencode_kbps, work), sr, "mp3 generation")
    return mix.astype(np.float32)


# ---------------------------------------------------------------------------------------------- clip


def make_wild_clip(spec: WildSpec, out_dir: Path) -> dict:
    """Write ``<key>.<container>`` and its transcript into ``out_dir``; return the truth record.

    The record has the keys of :func:`avalign.synth.make_clip`'s where they apply (``media``,
    ``transcript``, ``av_offset_ms``, ``drift_ppm``, ``text_offset_ms``, ``fps_nominal``, ``words`` on the
    video timeline…) plus ``events`` (per event: frame, pts, audio time, sound, attack), ``num_events``,
    ``talking_head`` and the nuisance settings.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(spec.seed)
    drift, offset = 1 + spec.drift_ppm * 1e-6, spec.av_offset_ms / 1000
    media = out_dir / f"{spec.key}.{spec.container}"
    with tempfile.TemporaryDirectory(prefix="avalign-wild-") as tmp:
        work = Path(tmp)
        pts = _nominal_pts(spec)
        flash_frames = [int(np.searchsorted(pts, e.video_seconds - 1e-9)) for e in spec.events]
        num_samples = round(spec.duration_seconds * spec.sample_rate)
        # The mouth follows the speech heard mouth_lead_ms later (lips lead the sound), so speech first.
        speech, sentences, envelope = _speech(spec, num_samples, np.random.default_rng(spec.seed + 1))
        heard = (pts + spec.mouth_lead_ms / 1000.0) * drift + offset  # the lips lead the sound by mouth_lead_ms
        audio_index = np.clip(np.round(heard * spec.sample_rate).astype(np.int64), 0, num_samples - 1)
        mouth = np.clip(envelope[audio_index] / (np.percentile(envelope, 99) + 1e-9), 0, 1)
        video_only = work / f"video.{spec.container}"
        rate = "30" if spec.vfr else spec.fps
        args = ["-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{spec.width}x{spec.height}", "-framerate", rate,
                "-i", "pipe:0"]
        if spec.vfr:
            args += ["-vf", _VFR_SETPTS, "-fps_mode", "vfr"]
        args += [*_VIDEO_ARGS[spec.video_codec], "-crf", str(spec.video_crf), "-an", *_BITEXACT, str(video_only)]
        _run_ffmpeg(args, stdin=_render_video(spec, pts, flash_frames, mouth, rng))
        real_pts, _ = decode_video(video_only, luma=False)
        if real_pts.shape != pts.shape or np.max(np.abs(real_pts - real_pts[0] - pts)) > 0.0011:
            raise RuntimeError(f"{spec.key}: encoder changed the frames ({real_pts.shape[0]} vs {pts.shape[0]})")
        video_pts, shift_samples, source, source_events = real_pts, 0.0, None, None
        for attempt in range(4):
            event_audio = [_event_start_seconds(e, k, video_pts) * drift + offset for e, k in zip(spec.events, flash_frames)]
            if event_audio != source_events:  # the mix depends only on these (same seed): made again if the video moved
                source = _audio(spec, speech, event_audio, np.random.default_rng(spec.seed + 2), work)
                source_events = event_audio
            shifted = source if shift_samples == 0 else _shift(source, -shift_samples)
            raw = work / "audio.f32"
            raw.write_bytes(shifted.astype("<f4").tobytes())
            _run_ffmpeg(["-i", str(video_only), "-f", "f32le", "-ar", str(spec.sample_rate), "-ac", "1", "-i", str(raw),
                         "-map", "0:v:0", "-map", "1:a:0", "-c:v", "copy", *_AUDIO_ARGS[spec.audio_codec],
                         "-ar", str(spec.sample_rate), *_BITEXACT, str(media)])
            final_pts, _ = decode_video(media, luma=False)
            first_pts, _, decoded = decode_audio(media)
            # The audio track starts at presentation time 0 (no stream delay is requested).
            clock = types.SimpleNamespace(sample_rate=spec.sample_rate, audio_start_seconds=0.0)
            measured = _measure_shift_samples(source, decoded, first_pts, clock)
            moved = final_pts.shape != video_pts.shape or np.max(np.abs(final_pts - video_pts)) > 1e-9
            if not moved and abs(measured) <= 0.25:
                break
            if attempt == 3:
                raise RuntimeError(f"{spec.key}: could not place the audio (video moved {moved}, shift {measured:.2f})")
            if moved:
                video_pts = final_pts
            else:
                shift_samples += measured
    words, stamped = [], []
    for sentence in sentences:
        stamped.append([StampedWord(text, a0 + spec.text_offset_ms / 1000, a1 + spec.text_offset_ms / 1000)
                        for text, a0, a1 in sentence])
        words += [{"text": text, "start_seconds": (a0 - offset) / drift, "stop_seconds": (a1 - offset) / drift}
                  for text, a0, a1 in sentence]
    extension = {"whisperx": "json", "srt": "srt", "vtt": "vtt"}[spec.transcript_format]
    transcript = out_dir / f"{spec.key}.{extension}"
    transcript.write_text(render_transcript(stamped, transcript_format=spec.transcript_format,
                                            duration_seconds=spec.duration_seconds * 1.01 + 1))
    events = [{"frame_index": k, "video_seconds": _event_start_seconds(e, k, video_pts),
               "audio_seconds": _event_start_seconds(e, k, video_pts) * drift + offset, "phase": e.phase,
               "sound": e.sound, "attack": e.attack, "attack_ms": e.attack_ms, "flash_level": e.flash_level,
               "flash_frames": e.flash_frames, "flash_area": list(e.flash_area)}
              for e, k in zip(spec.events, flash_frames)]
    return {
        "generator": "wild",
        "media": media.name,
        "transcript": transcript.name,
        "transcript_format": spec.transcript_format,
        "container": spec.container,
        "video_codec": spec.video_codec,
        "audio_codec": spec.audio_codec,
        "fps_nominal": float(spec.fps_fraction),
        "vfr": spec.vfr,
        "sample_rate": spec.sample_rate,
        "duration_seconds": spec.duration_seconds,
        "num_frames": int(video_pts.size),
        "video_start_seconds": float(video_pts[0]),
        "audio_start_seconds": first_pts,
        "av_offset_ms": spec.av_offset_ms,
        "drift_ppm": spec.drift_ppm,
        "text_offset_ms": spec.text_offset_ms,
        "events": events,
        "num_events": len(events),
        "talking_head": spec.talking_head,
        "bed": spec.bed,
        "snr_db": spec.snr_db,
        "camera": spec.camera,
        "num_objects": spec.num_objects,
        "mouth": spec.mouth,
        "cut_seconds": list(spec.cut_seconds),
        "reverb": spec.reverb,
        "reencode_kbps": spec.reencode_kbps,
        "words": words,
        "seed": spec.seed,
        "spec": spec_record(spec),
    }
