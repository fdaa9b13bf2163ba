"""What a synthetic clip is made of: :class:`ClipSpec`, the committed set and random sets.

Clock model (DESIGN.md, kept exactly): a sound belonging to video time ``t`` is heard at audio
presentation time ``a = t * (1 + drift_ppm * 1e-6) + av_offset_ms / 1000``; a word heard at audio
time ``a`` is stamped ``a + text_offset_ms / 1000`` in the transcript.
"""
from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

logger = logging.getLogger(__name__)

__all__ = ["SENTENCES", "ClipSpec", "random_specs", "sample_specs"]

Container = Literal["mp4", "mkv", "webm", "mov", "avi"]
TranscriptFormat = Literal["srt", "vtt", "whisperx", "textgrid", "jsonlist"]

SENTENCES = (
    "Seven bright lamps glow above quiet harbors.",
    "Every morning Maria walks her dog near the river.",
    "Blue paper boats drift slowly past green fields.",
    "Robots sorted heavy boxes during long nights.",
    "Please bring fresh bread and warm soup tonight.",
    "Tiny birds sing loudly before sunrise.",
    "Our team painted seven wooden chairs yesterday.",
    "Cold wind pushed dark clouds across wide hills.",
    "Jack found golden keys under soft moss.",
    "Quick thinking saved many lives today.",
    "Farmers carry baskets full of ripe apples.",
    "Nine silver trains arrived early.",
    "Maps show hidden valleys.",
    "Lucy plays violin beautifully.",
)
"""Sentences for which espeak-ng (en-us, 165 wpm) emits one WORD event per word (no merged words)."""

# (container, video codec, audio codec, allowed sample rates) that encode with exact audio timing.
_COMBOS: tuple[tuple[str, str, str, tuple[int, ...]], ...] = (
    ("mp4", "h264", "aac", (16000, 44100, 48000)),
    ("mkv", "h264", "opus", (48000,)),
    ("mkv", "h264", "aac", (16000, 48000)),
    ("webm", "vp9", "opus", (48000,)),
    ("mov", "h264", "aac", (44100, 48000)),
    ("avi", "mpeg4", "pcm_s16le", (16000, 22050)),
)
_FORMATS: tuple[str, ...] = ("srt", "vtt", "whisperx", "textgrid", "jsonlist")
_FPS_CHOICES = ("24", "25", "30", "30000/1001")


@dataclass(frozen=True)
class ClipSpec:
    """Everything that determines one synthetic clip (same spec → same truth)."""

    key: str
    """Sample key, also the file stem (no dots)."""
    container: Container
    """File extension and muxer: ``mp4``, ``mkv``, ``webm``, ``mov`` or ``avi``."""
    video_codec: Literal["h264", "vp9", "mpeg4"]
    """Video codec (FFmpeg name)."""
    audio_codec: Literal["aac", "opus", "pcm_s16le"]
    """Audio codec (FFmpeg name)."""
    fps: str
    """Nominal frame rate as a fraction string (``"30"``, ``"30000/1001"``); the header's rate."""
    sample_rate: int
    """Audio sample rate in Hz."""
    duration_seconds: float
    """Video duration on the video timeline."""
    av_offset_ms: float
    """Audio lag: a sound of video time ``t`` is heard at ``t * (1 + drift) + av_offset_ms / 1000``."""
    drift_ppm: float
    """Audio clock rate error in parts per million."""
    text_offset_ms: float
    """Transcript lateness: a word heard at audio time ``a`` is stamped ``a + text_offset_ms / 1000``."""
    transcript_format: TranscriptFormat
    """``srt``, ``vtt``, ``whisperx`` (JSON), ``textgrid`` (Praat long format) or ``jsonlist`` (JSON)."""
    seed: int
    """Seeds flash times and sentence choice."""
    vfr: bool = False
    """Variable frame rate: frames 0..59 at 30 fps, 60..89 at 15 fps, then 30 fps again (header says 30)."""
    audio_start_seconds: float = 0.0
    """Presentation time of the first audio sample (container-level stream delay, e.g. 0.4 s)."""
    width: int = 160
    """Frame width in pixels."""
    height: int = 120
    """Frame height in pixels."""
    num_sentences: int = 2
    """Sentences spoken in the clip."""

    def __post_init__(self) -> None:
        if not self.key or "." in self.key or "/" in self.key:
            raise ValueError(f"key must be non-empty without '.' or '/', got {self.key = }")
        if not 3.0 <= self.duration_seconds <= 30.0:
            raise ValueError(f"duration_seconds must be in [3, 30], got {self.duration_seconds = }")
        if abs(self.av_offset_ms) > 500 or abs(self.drift_ppm) > 5000 or abs(self.text_offset_ms) > 500:
            raise ValueError(f"offsets out of range: {self.av_offset_ms = } (±500), {self.drift_ppm = } (±5000), "
                             f"{self.text_offset_ms = } (±500)")
        if self.vfr and (self.container != "mp4" or Fraction(self.fps) != 30):
            raise ValueError(f"vfr clips are mp4 at a 30 fps header, got {self.container = }, {self.fps = }")
        if self.transcript_format not in _FORMATS:
            raise ValueError(f"transcript_format must be one of {_FORMATS}, got {self.transcript_format = }")

    @property
    def fps_fraction(self) -> Fraction:
        """The nominal frame rate as an exact fraction."""
        return Fraction(self.fps)

    @property
    def transcript_extension(self) -> str:
        """File extension of the transcript (``json`` for both JSON flavours)."""
        return {"srt": "srt", "vtt": "vtt", "whisperx": "json", "textgrid": "TextGrid", "jsonlist": "json"}[
            self.transcript_format]


def sample_specs(seed: int = 0) -> list[ClipSpec]:
    """The committed set in ``sample_data/``: six clips, one per container trap.

    Offsets span ±300 ms (positive, negative and zero), drift up to ±1000 ppm, text offsets mostly late.
    """
    s = seed * 100
    return [
        ClipSpec("clip00", "mp4", "h264", "aac", "30", 48000, 6.0, 120.0, 0.0, 180.0, "whisperx", s + 0),
        ClipSpec("clip01", "mkv", "h264", "opus", "30000/1001", 48000, 6.5, -85.0, 1000.0, 90.0, "srt", s + 1),
        ClipSpec("clip02", "webm", "vp9", "opus", "25", 48000, 6.5, 0.0, -400.0, 240.0, "vtt", s + 2),
        ClipSpec("clip03", "mov", "h264", "aac", "30", 44100, 6.0, 260.0, 0.0, -60.0, "textgrid", s + 3,
                 audio_start_seconds=0.4),
        ClipSpec("clip04", "avi", "mpeg4", "pcm_s16le", "25", 16000, 5.0, -300.0, 650.0, 130.0, "jsonlist", s + 4),
        ClipSpec("clip05", "mp4", "h264", "aac", "30", 16000, 5.0, 45.0, -1000.0, 210.0, "srt", s + 5, vfr=True,
                 num_sentences=1),
    ]


def random_specs(seed: int, n: int, *, prefix: str = "rand") -> list[ClipSpec]:
    """``n`` varied clips for benchmarks: containers, codecs, rates, offsets, drifts and formats drawn at random.

    Example:
        >>> [s.key for s in random_specs(1, 2)]
        ['rand0000', 'rand0001']
    """
    if n < 0:
        raise ValueError(f"n must be >= 0, got {n = }")
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        container, video_codec, audio_codec, rates = rng.choice(_COMBOS)
        vfr = container == "mp4" and rng.random() < 0.25
        fps = "30" if vfr else rng.choice(_FPS_CHOICES)
        audio_start = round(rng.choice((0.0, 0.0, 0.2, 0.4)), 3) if container == "mov" else 0.0
        specs.append(ClipSpec(
            key=f"{prefix}{i:04d}", container=container, video_codec=video_codec, audio_codec=audio_codec,
            fps=fps, sample_rate=rng.choice(rates), duration_seconds=round(rng.uniform(5.0, 8.0), 2),
            av_offset_ms=round(rng.uniform(-300, 300), 1), drift_ppm=round(rng.uniform(-1000, 1000)),
            text_offset_ms=round(rng.uniform(-100, 250), 1), transcript_format=rng.choice(_FORMATS),
            seed=seed * 100003 + i, vfr=vfr, audio_start_seconds=audio_start,
            num_sentences=rng.choice((1, 2))))
    return specs
