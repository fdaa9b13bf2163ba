"""Decoded records: what the loaders hand to the aligner.

Every record carries its own timestamps. Tensors are torch tensors; ``__repr__`` prints shapes,
never contents. Change a record with ``dataclasses.replace``.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import torch

logger = logging.getLogger(__name__)

__all__ = ["AudioClip", "BatchItem", "Span", "TextTokens", "Transcript", "VideoClip", "VideoMetadata", "Word"]


@dataclass(frozen=True)
class VideoMetadata:
    """Facts about a video stream, each named by where it comes from (header or decoded content)."""

    codec: str
    """Codec name as FFmpeg spells it (``h264``, ``vp9``, ``mpeg4``…)."""
    width: int
    """Frame width in pixels, as displayed: the stored frame's height when ``rotation_degrees`` is 90 or 270."""
    height: int
    """Frame height in pixels, as displayed: the stored frame's width when ``rotation_degrees`` is 90 or 270."""
    fps_from_header: Optional[float]
    """The stream's declared frame rate (``avg_frame_rate``, else ``r_frame_rate``); None if absent."""
    num_frames_from_header: Optional[int]
    """The container's frame count; None when the container does not store it. May be wrong."""
    start_seconds: float
    """Presentation time of the first frame in the file (the stream's real start, not assumed 0)."""
    duration_seconds_from_header: Optional[float]
    """The stream's declared duration; None if absent."""
    fps_from_content: Optional[float] = None
    """Mean frame rate of the decoded / indexed pts, ``(T - 1) / (pts[T-1] - pts[0])``; None when not decoded.

    The mean, not ``1 / median(diff(pts))``: with timestamps rounded to the container's tick (Matroska: 1 ms, so
    29.97 fps shows as 33/33/34 ms durations) the median duration says 30.30 fps while the mean is exact to one tick
    over the clip (``tests/test_video.py::test_metadata_provenance`` checks both against ffprobe's pts)."""
    num_frames_from_content: Optional[int] = None
    """Frames actually decoded over the whole file; None when only part of the file was decoded."""
    vfr: Optional[bool] = None
    """True when frame durations vary by more than 10 % of the median (variable frame rate)."""
    backend: str = ""
    """Which decoder produced the frames: ``decord`` or ``pyav``."""
    stream_index: Optional[int] = None
    """Index of the decoded stream in its container (``ffprobe``'s ``index``); None when unknown."""
    decode_errors: int = 0
    """Packets the decoder rejected and that were skipped (the frames after them keep their own pts)."""
    rotation_degrees: int = 0
    """The display rotation the frames were turned by (0, 90, 180 or 270, counterclockwise): the stream's display
    matrix (a phone clip's ``tkhd``), as ffprobe's side-data ``rotation`` modulo 360. Frames are returned as
    displayed (as the ffmpeg CLI autorotates); times are not affected. See :mod:`loaders._rotation`."""

    def __post_init__(self) -> None:
        if self.rotation_degrees not in (0, 90, 180, 270):
            raise ValueError(f"rotation_degrees must be 0, 90, 180 or 270, got {self.rotation_degrees = }")


@dataclass(frozen=True)
class VideoClip:
    """Decoded frames with their presentation timestamps.

    ``pts_seconds[k]`` is when frame ``k`` appears on screen (ffprobe's ``best_effort_timestamp_time``);
    frame ``k`` is shown over ``[pts_seconds[k], pts_seconds[k+1])``.
    """

    frames: torch.Tensor
    """uint8 tensor ``[T, H, W, C]`` (RGB, C = 3)."""
    pts_seconds: torch.Tensor
    """float64 tensor ``[T]`` in presentation order, finite; strictly increasing for a plain decode, with repeats when
    sampling at a rate above the clip's (the same frame is on screen at two grid times)."""
    metadata: VideoMetadata
    """Stream facts (header and content)."""

    def __post_init__(self) -> None:
        if self.frames.dtype != torch.uint8 or self.frames.ndim != 4:
            raise ValueError(
                f"frames must be uint8 [T, H, W, C], got dtype={self.frames.dtype}, shape={tuple(self.frames.shape)}"
            )
        if self.pts_seconds.dtype != torch.float64 or self.pts_seconds.ndim != 1:
            raise ValueError(f"pts_seconds must be float64 [T], got {self.pts_seconds.dtype} {tuple(self.pts_seconds.shape)}")
        if self.frames.shape[0] != self.pts_seconds.shape[0]:
            raise ValueError(
                f"frames and pts_seconds disagree: {self.frames.shape[0]} frames, {self.pts_seconds.shape[0]} pts"
            )
        finite = torch.isfinite(self.pts_seconds)
        if not bool(finite.all()):
            first = int((~finite).nonzero()[0, 0])
            raise ValueError(f"pts_seconds must be finite: {int((~finite).sum())} of {finite.numel()} are NaN or "
                             f"infinite, the first at frame {first} ({float(self.pts_seconds[first])})")
        if self.pts_seconds.numel() > 1 and not bool((self.pts_seconds[1:] >= self.pts_seconds[:-1]).all()):
            raise ValueError("pts_seconds must be non-decreasing (presentation order)")

    @property
    def num_frames(self) -> int:
        return int(self.frames.shape[0])

    def __repr__(self) -> str:
        first = float(self.pts_seconds[0]) if self.num_frames else float("nan")
        last = float(self.pts_seconds[-1]) if self.num_frames else float("nan")
        return (
            f"VideoClip(frames={tuple(self.frames.shape)}, pts_seconds=[{first:.6f} .. {last:.6f}], "
            f"backend={self.metadata.backend!r})"
        )


@dataclass(frozen=True)
class AudioClip:
    """Decoded audio: sample ``n`` of ``samples`` is presented at ``start_seconds + n / sample_rate``."""

    samples: torch.Tensor
    """float32 tensor ``[C, N]`` in [-1, 1]."""
    sample_rate: int
    """Samples per second of ``samples``."""
    start_seconds: float
    """Presentation time of the first returned sample (priming / pre-skip already removed); finite."""
    source_sample_rate: Optional[int] = None
    """The stream's own rate before any resampling."""
    codec: str = ""
    """Codec name as FFmpeg spells it (``aac``, ``opus``…)."""
    stream_index: Optional[int] = None
    """Index of the decoded stream in its container (``ffprobe``'s ``index``); None when unknown."""
    decode_errors: int = 0
    """Packets the decoder rejected and that were skipped; their time is silence, so the timeline stays exact."""

    def __post_init__(self) -> None:
        if self.samples.dtype != torch.float32 or self.samples.ndim != 2:
            raise ValueError(
                f"samples must be float32 [C, N], got dtype={self.samples.dtype}, shape={tuple(self.samples.shape)}"
            )
        if not (isinstance(self.sample_rate, int) and self.sample_rate > 0):
            raise ValueError(f"sample_rate must be a positive int, got {self.sample_rate = }")
        try:
            finite = math.isfinite(self.start_seconds)
        except TypeError:
            finite = False
        if not finite:
            raise ValueError(f"start_seconds must be a finite number, got {self.start_seconds = }")

    @property
    def num_samples(self) -> int:
        return int(self.samples.shape[1])

    @property
    def stop_seconds(self) -> float:
        """End of the clip: one past the last sample (half-open)."""
        return self.start_seconds + self.num_samples / self.sample_rate

    def __repr__(self) -> str:
        return (
            f"AudioClip(samples={tuple(self.samples.shape)}, sample_rate={self.sample_rate}, "
            f"start_seconds={self.start_seconds:.6f})"
        )


def _check_interval(kind: str, text: str, start_seconds: float, stop_seconds: float) -> None:
    if not (math.isfinite(start_seconds) and math.isfinite(stop_seconds)):
        raise ValueError(f"{kind} {text!r} has a time that is not finite (NaN or inf): {start_seconds = }, "
                         f"{stop_seconds = }")
    if stop_seconds < start_seconds:
        raise ValueError(
            f"{kind} {text!r} ends before it starts: {start_seconds = }, {stop_seconds = } (need stop >= start)"
        )


@dataclass(frozen=True)
class Word:
    """One word with its time interval ``[start_seconds, stop_seconds)``."""

    text: str
    """The word as written in the transcript (stripped)."""
    start_seconds: float
    """When the word starts, on the transcript's clock."""
    stop_seconds: float
    """When it ends (exclusive)."""
    score: Optional[float] = None
    """Confidence from the ASR / aligner, when the transcript has one."""

    def __post_init__(self) -> None:
        _check_interval("word", self.text, self.start_seconds, self.stop_seconds)


@dataclass(frozen=True)
class Span:
    """A transcript segment (caption line, ASR segment, interval) ``[start_seconds, stop_seconds)``."""

    text: str
    """Segment text."""
    start_seconds: float
    """Segment start on the transcript's clock."""
    stop_seconds: float
    """Segment end (exclusive)."""
    words: tuple[Word, ...] = ()
    """Word-level times when the source has them; empty otherwise."""
    words_derived: bool = False
    """Whether ``words`` were placed by forced alignment inside this caption (by ``aligner.align``'s
    ``caption_words``, stored by ``avalign preprocess`` in ``transcript.json`` as ``"words_derived": true``) rather
    than given by the transcript. Measuring again reads such a span as the caption it was
    (``avalign.given_transcript``); loading uses its words."""

    def __post_init__(self) -> None:
        _check_interval("span", self.text, self.start_seconds, self.stop_seconds)


@dataclass(frozen=True)
class Transcript:
    """Spans of a transcript, sorted by start time."""

    spans: tuple[Span, ...]
    """Segments in time order."""
    source: str = ""
    """Where it was read from (file name or key), for error messages."""
    format: str = ""
    """The format it was parsed from: ``srt``, ``vtt``, ``json``, ``textgrid``."""

    @property
    def words(self) -> tuple[Word, ...]:
        """All words of all spans, in order."""
        return tuple(w for s in self.spans for w in s.words)

    def shifted(self, seconds: float) -> "Transcript":
        """A copy with every time moved by ``seconds`` (e.g. ``-text_offset_ms / 1000`` to correct late stamps)."""
        def move_word(w: Word) -> Word:
            return dataclasses.replace(w, start_seconds=w.start_seconds + seconds, stop_seconds=w.stop_seconds + seconds)

        spans = tuple(
            dataclasses.replace(
                s,
                start_seconds=s.start_seconds + seconds,
                stop_seconds=s.stop_seconds + seconds,
                words=tuple(move_word(w) for w in s.words),
            )
            for s in self.spans
        )
        return dataclasses.replace(self, spans=spans)

    def __repr__(self) -> str:
        return f"Transcript(spans={len(self.spans)}, words={len(self.words)}, format={self.format!r}, source={self.source!r})"


@dataclass(frozen=True)
class TextTokens:
    """The tokens of one batch item, each with the frame and sample range of the text unit it belongs to.

    Ranges are half-open and relative to the item (its frames, its samples); a token that belongs to no unit
    (a special token) spans the whole item.
    """

    ids: Optional[np.ndarray]
    """int64 ``[num_tokens]`` token ids from the tokenizer; None without a tokenizer (tokens are counted only)."""
    frame_ranges: np.ndarray
    """int64 ``[num_tokens, 2]``: ``[frame_start, frame_stop)`` of each token's unit."""
    sample_ranges: np.ndarray
    """int64 ``[num_tokens, 2]``: ``[sample_start, sample_stop)`` of each token's unit."""
    unit: str = ""
    """What was tokenized: ``word`` (the item has words), ``segment`` (captions, cues) or ``""`` (no text)."""

    def __post_init__(self) -> None:
        n = self.frame_ranges.shape[0]
        if self.frame_ranges.shape != (n, 2) or self.sample_ranges.shape != (n, 2):
            raise ValueError(f"token ranges must be [n, 2], got {self.frame_ranges.shape = }, {self.sample_ranges.shape = }")
        if self.ids is not None and self.ids.shape != (n,):
            raise ValueError(f"ids must be [{n}], got {self.ids.shape = }")

    @property
    def num_tokens(self) -> int:
        return int(self.frame_ranges.shape[0])

    def __repr__(self) -> str:
        return f"TextTokens(num_tokens={self.num_tokens}, ids={'yes' if self.ids is not None else 'no'}, unit={self.unit!r})"


@dataclass(frozen=True)
class BatchItem:
    """One aligned sample (or window) ready to pack: the ``aligner.AlignedSample`` and its tokens."""

    sample: Any
    """The ``aligner.AlignedSample`` (video, audio, words and segments on one clock)."""
    tokens: TextTokens
    """Its tokens (see :func:`loaders.pipeline._text.tokenize_item`)."""
    decode_errors: int = 0
    """Packets the decoders skipped in this sample's media (counted once, on the sample's first window)."""
    caption: Optional[str] = None
    """The sample's clip-level caption (``KEY.txt`` / ``KEY.caption``, or video2dataset metadata's ``caption``: a
    description of the clip, with no times), passed through unaligned; every window of the sample carries it, with or
    without a transcript. None when the sample has none."""

    @property
    def key(self) -> str:
        return self.sample.key

    def __repr__(self) -> str:
        return f"BatchItem({self.sample!r}, {self.tokens!r})"
