"""``align``: one reference clock (the video's presentation timeline) for video, audio and text.

::

    estimate (or take given values)      apply on the video timeline             map spans
    av_offset, drift  ← flashes/cuts vs   audio ─soxr(rate·(1+drift))─shift─▶     words/segments ─▶ frames [f0, f1)
                        sound onsets      AudioClip(start = window start)                         samples [a0, a1)
    text_offset       ← speech activity                                                           tokens [t0, t1)
                        vs word onsets
"""
from __future__ import annotations

import dataclasses
import logging
import os
from dataclasses import dataclass
from typing import Optional

import numpy as np

from aligner._apply import audio_on_video_clock
from aligner._av_records import av_abstain as av_abstain_estimate
from aligner._clock import ClockModel
from aligner._options import TEXT_METHODS, AVOptions, TextMethod, TextOptions
from aligner._spans import AlignedSpan, map_spans
from aligner._text_records import text_abstain as text_abstain_estimate
from aligner._tokens import Tokenizer
from avcore import AudioClip, DecodeError, Transcript, VideoClip, check_window

logger = logging.getLogger(__name__)

__all__ = ["AlignedSample", "AlignmentReport", "align"]


@dataclass(frozen=True)
class AlignmentReport:
    """What was estimated (with confidences) and what was applied."""

    av_offset_ms: Optional[float]
    """Estimated or given A/V offset; None when the estimator abstained (0 was applied)."""
    drift_ppm: Optional[float]
    """Estimated or given drift; None when unknown (0 was applied)."""
    av_confidence: float
    """Confidence of the A/V estimate in [0, 1]; 1.0 for given values. Beside an abstention (``av_offset_ms`` None)
    it is the best lag's match strength, not a confidence in the abstention (``ambiguous_peak`` abstains at 1.0)."""
    text_offset_ms: Optional[float]
    """Estimated or given transcript offset; None without transcript or when the estimator abstained."""
    text_confidence: float
    """Confidence of the text estimate in [0, 1]; beside an abstention, a figure of the methods tried (see
    ``text_abstain``), not a confidence in the abstention."""
    clock: ClockModel
    """The clock model actually applied (abstentions applied as 0)."""
    av_method: str = ""
    """How the A/V values were obtained: ``given``, the estimator's method, ``abstain:<reason>`` or ``none``."""
    text_method: str = ""
    """How the text offset was obtained."""
    spans_outside: int = 0
    """Transcript words/segments that fall entirely outside the media window."""
    words_refined: int = 0
    """Words whose start was snapped to an acoustic onset."""
    av_abstain: Optional[dict] = None
    """When the A/V estimator abstained: ``{reason, found, needed, best_guess_ms, hint}`` (``AVAbstain.to_json``)."""
    text_abstain: Optional[dict] = None
    """When the text estimator abstained: ``{reason, found, needed, best_guess_ms, hint}``; else None."""
    caption_words_failed: int = 0
    """Captions (spans without word times) whose forced alignment into words failed; they are kept as segments."""

    def to_json(self) -> dict:
        """Every field as JSON; the applied ``clock`` as ``applied`` (``{av_offset_ms, drift_ppm, text_offset_ms}``)."""
        out = {k: v for k, v in self.__dict__.items() if k != "clock"}
        out["applied"] = dataclasses.asdict(self.clock)
        return out


@dataclass(frozen=True)
class AlignedSample:
    """Video, audio and text on the video's presentation timeline, over ``[start_seconds, stop_seconds)``."""

    video: Optional[VideoClip]
    """Frames and their pts (unchanged: they define the timeline); None for audio-only media."""
    audio: AudioClip
    """Audio at the target rate, sample ``j`` at video time ``audio.start_seconds + j / sample_rate``."""
    words: tuple[AlignedSpan, ...]
    """Words with frame, sample and token ranges."""
    segments: tuple[AlignedSpan, ...]
    """Transcript segments with frame and sample ranges."""
    report: AlignmentReport
    """Estimates, confidences and the applied clock."""
    start_seconds: float = 0.0
    """Window start on the video timeline."""
    stop_seconds: float = 0.0
    """Window stop (exclusive)."""
    key: str = ""
    """Sample key, when it came from a shard."""
    transcript: Optional[Transcript] = None
    """The transcript on its own clock as aligned: the input, with caption words from forced alignment when
    it had none (``caption_words``); None without transcript. Preprocessing stores it so loading need not re-align."""

    def __repr__(self) -> str:
        video = "None" if self.video is None else f"{tuple(self.video.frames.shape)}"
        return (
            f"AlignedSample(key={self.key!r}, window=[{self.start_seconds:.3f}, {self.stop_seconds:.3f}), video={video}, "
            f"audio={tuple(self.audio.samples.shape)}@{self.audio.sample_rate}, words={len(self.words)}, "
            f"segments={len(self.segments)})"
        )


def _media_window(video: Optional[VideoClip], audio: AudioClip, clock: ClockModel) -> tuple[float, float]:
    """The reference window: the video's frames (origin 0 unless frames start earlier), else the audio's span."""
    if video is not None and video.num_frames:
        pts = video.pts_seconds.numpy()
        fps = video.metadata.fps_from_content or video.metadata.fps_from_header or 0.0
        last_duration = float(np.median(np.diff(pts))) if pts.size > 1 else (1.0 / fps if fps else 0.0)
        return min(0.0, float(pts[0])), float(pts[-1]) + last_duration
    start = float(clock.audio_to_video(audio.start_seconds))
    return min(0.0, start), float(clock.audio_to_video(audio.stop_seconds))


MAX_LEADING_GAP_SECONDS = 600.0
"""The longest time from 0 to the media's first frame (or, with no frame, first audio sample) that :func:`align` puts
on the timeline when no window is given: the timeline starts at 0 (the video's presentation time), so a clip whose
streams start at 100000 s (a stream copy cut from a long recording, a broadcast MPEG-TS) would be 100000 s of silence
before its media, gigabytes of audio samples. Longer gaps raise before anything is allocated."""


def _check_leading_gap(video: Optional[VideoClip], audio: AudioClip, sample_rate: int, key: str) -> None:
    """Raise DecodeError (``too_large``) when the media starts more than :data:`MAX_LEADING_GAP_SECONDS` after 0."""
    frames = video is not None and video.num_frames > 0
    first = float(video.pts_seconds[0]) if frames else float(audio.start_seconds)
    if not first > MAX_LEADING_GAP_SECONDS:
        return
    streams = (f"first frame at {first:.3f} s, audio from {float(audio.start_seconds):.3f} s" if frames
               else f"audio from {first:.3f} s")
    name = f"{key}: " if key else ""
    samples = round(first * sample_rate)
    raise DecodeError(
        f"{name}the media starts {first:.3f} s after time 0 ({streams}): on the timeline, which starts at 0 (the "
        f"video's presentation time), it would follow {first:.0f} s of silence without frames ({samples} audio samples "
        f"at {sample_rate} Hz, {samples * 4 / 2**30:.2f} GiB), more than {MAX_LEADING_GAP_SECONDS:.0f} s. Re-mux it "
        "to start near 0 (`ffmpeg -i IN -c copy -avoid_negative_ts make_zero OUT`) or re-encode it; aligner.align "
        "also takes start_seconds/stop_seconds around the media.", reason="too_large")


MAX_WINDOW_BEYOND_MEDIA_SECONDS = MAX_LEADING_GAP_SECONDS
"""How far an explicit window (``start_seconds`` / ``stop_seconds`` of :func:`align`) may reach before the media's first
frame or sample, or after its last: as much silence without frames as a default window may hold before the media. A
window of ``start_seconds = -1e7`` asked for 160 billion samples at 16 kHz (596 GiB) and raised MemoryError."""


def _check_pts_increase(video: Optional[VideoClip], key: str) -> None:
    """Raise ValueError for a video of several frames whose pts are all equal: it has no presentation timeline (its
    window was empty or one instant long, and every span fell outside it, silently)."""
    if video is None or video.num_frames < 2:
        return
    pts = video.pts_seconds
    if float(pts[-1]) > float(pts[0]):
        return
    name = f"{key}: " if key else ""
    raise ValueError(f"{name}video pts_seconds must increase: all {video.num_frames} frames have pts "
                     f"{float(pts[0])!r} s, so the frames span no time on the video timeline (every span would fall "
                     "outside it). Decode with real timestamps (loaders.read_video), or give each frame its own "
                     "presentation time.")


def _media_extent(video: Optional[VideoClip], audio: AudioClip, clock: ClockModel) -> tuple[float, float]:
    """``[first, last)`` of the media on the video timeline: its frames (the last one's duration included) and its audio
    (where the clock puts it), together."""
    a0, a1 = (float(clock.audio_to_video(t)) for t in (audio.start_seconds, audio.stop_seconds))
    if video is None or not video.num_frames:
        return a0, a1
    last = _media_window(video, audio, clock)[1]
    return min(float(video.pts_seconds[0]), a0), max(last, a1)


def _check_window_near_media(lo: float, hi: float, video: Optional[VideoClip], audio: AudioClip, clock: ClockModel,
                             sample_rate: int, start_seconds, stop_seconds) -> None:
    """Raise ValueError when an explicit window bound reaches more than :data:`MAX_WINDOW_BEYOND_MEDIA_SECONDS` past
    the media (:func:`_media_extent`); the message names the argument and its value."""
    first, last = _media_extent(video, audio, clock)
    reach = MAX_WINDOW_BEYOND_MEDIA_SECONDS
    for name, value, beyond, where in (("start_seconds", start_seconds, first - lo, "before"),
                                       ("stop_seconds", stop_seconds, hi - last, "after")):
        if value is None or not beyond > reach:
            continue
        samples = (hi - lo) * sample_rate
        raise ValueError(
            f"{name} = {value!r} reaches {beyond:.3f} s {where} the media, which covers [{first:.3f}, {last:.3f}) s "
            f"on the video timeline (frames and audio): an explicit window may reach at most "
            f"{MAX_WINDOW_BEYOND_MEDIA_SECONDS:.0f} s past it (this one would be {samples:.0f} audio samples at "
            f"{sample_rate} Hz, {samples * 4 / 2**30:.2f} GiB a channel, mostly silence without frames). Pass a window "
            "around the media.")


FIRST_SAMPLE_ORIGIN_MIN_SECONDS = 0.25
"""Audio that starts at least this late (``audio.start_seconds``) gets a second transcript-offset search when the
first abstains: stamps counted from the audio's first sample (:func:`_estimate_either_origin`)."""


def _estimate_either_origin(audio: AudioClip, transcript: Transcript, *, method, options):
    """The transcript offset with stamps on the media's clock from 0 (the convention), else from the audio's first
    sample.

    ASR tools (Whisper, WhisperX, whisper.cpp) decode the audio with FFmpeg into raw samples, so they stamp words from
    the first audio sample, not from the container's time 0: on media whose audio starts late (MPEG-TS starts at
    1.4 s; a cut from a broadcast anywhere) the stamps are early by that start, beyond the search range. When the
    search on the convention's clock abstains and the audio starts at least ``FIRST_SAMPLE_ORIGIN_MIN_SECONDS``
    late, the transcript is searched again moved by the audio's start; an answer there is ``text_offset_ms`` = that
    answer − the start (ms), its method suffixed ``+from_first_sample``. Otherwise the first search's result (its
    abstention) stands."""
    from aligner._text_method import estimate_transcript_offset

    first = estimate_transcript_offset(audio, transcript, method=method, options=options)
    origin = float(audio.start_seconds)
    if not first.abstained or origin < FIRST_SAMPLE_ORIGIN_MIN_SECONDS:
        return first
    second = estimate_transcript_offset(audio, transcript.shifted(origin), method=method, options=options)
    if second.abstained:
        return first
    moved_ms = 1000.0 * origin
    return dataclasses.replace(
        second, text_offset_ms=second.text_offset_ms - moved_ms, best_guess_ms=second.text_offset_ms - moved_ms,
        method=f"{second.method}+from_first_sample",
        item_differences_ms=tuple((text, None if d is None else d - moved_ms) for text, d in second.item_differences_ms))


_warned_unestimated_origin = False


def _warn_unestimated_origin(audio: AudioClip, key: str) -> None:
    """Once per process: a transcript read with no offset (``estimate=False``, none given) on audio that starts
    ``FIRST_SAMPLE_ORIGIN_MIN_SECONDS`` or more late, where ASR stamps (counted from the first sample) would be early
    by that start (:func:`_estimate_either_origin`)."""
    global _warned_unestimated_origin
    if _warned_unestimated_origin:
        return
    _warned_unestimated_origin = True
    start = float(audio.start_seconds)
    logger.warning(
        "%s: the audio starts at %.3f s and the transcript is applied with text_offset_ms=0 (estimate=False, none "
        "given): its times are read on the media's clock from 0. A transcript made by ASR from this file (Whisper, "
        "WhisperX, whisper.cpp) counts from the first audio sample and would then be %.0f ms early: pass "
        "text_offset_ms=%.0f (or align.json from `avalign preprocess`), or estimate=True, which searches both clocks. "
        "(Said once per process.)", key or "sample", start, 1000.0 * start, -1000.0 * start)


def _with_caption_words(audio: AudioClip, transcript: Transcript, text_offset_ms: float) -> tuple[Transcript, int]:
    """``caption_words`` when pocketsphinx is installed; the transcript unchanged (0 failures) otherwise."""
    from aligner._text_forced import caption_words

    try:
        return caption_words(audio, transcript, text_offset_ms=text_offset_ms)
    except ImportError:
        logger.debug("pocketsphinx is not installed: captions get no words")
        return transcript, 0


def _check_inputs(video, audio, transcript) -> None:
    """``TypeError`` naming what was passed and what to pass, for clips or a transcript of another type (a path where
    a decoded record is expected, video and audio swapped), rather than an ``AttributeError`` from deep inside."""
    def got(value) -> str:
        text = repr(value)
        return f"{type(value).__name__} {text[:80] + '…' if len(text) > 80 else text}"

    if video is not None and not isinstance(video, VideoClip):
        swapped = "; video and audio are swapped: align(video, audio, …)" if isinstance(video, AudioClip) else ""
        raise TypeError(f"video must be a VideoClip (loaders.read_video(path)) or None, got {got(video)}{swapped}")
    if not isinstance(audio, AudioClip):
        raise TypeError(f"audio must be an AudioClip (loaders.read_audio(path)), got {got(audio)}")
    if transcript is not None and not isinstance(transcript, Transcript):
        hint = (f"; read it first: loaders.read_transcript({str(transcript)!r})"
                if isinstance(transcript, (str, os.PathLike)) else "")
        raise TypeError(f"transcript must be a Transcript (loaders.read_transcript(path)) or None, got "
                        f"{got(transcript)}{hint}")


def _check_arguments(sample_rate, start_seconds, stop_seconds, text_method, av_options, text_options,
                     given: dict) -> None:
    """Raise before any work for an argument of :func:`align` that no alignment can use (the message shows it).
    ``given``: the known clock values passed (``av_offset_ms``, ``drift_ppm``, ``text_offset_ms``; None when not)."""
    if isinstance(sample_rate, bool) or not isinstance(sample_rate, (int, np.integer)) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive int (Hz), got {sample_rate = !r}")
    ClockModel(**{name: value for name, value in given.items() if value is not None})  # finite, within their bounds
    for name, value in (("start_seconds", start_seconds), ("stop_seconds", stop_seconds)):
        if value is not None and not (isinstance(value, (int, float, np.number)) and np.isfinite(value)):
            raise ValueError(f"{name} must be None or a finite number of seconds, got {name} = {value!r}")
    if start_seconds is not None and stop_seconds is not None:
        check_window(start_seconds, stop_seconds)
    if text_method not in TEXT_METHODS:
        raise ValueError(f"text_method must be one of {TEXT_METHODS}, got {text_method!r}")
    for name, value, kind in (("av_options", av_options, AVOptions), ("text_options", text_options, TextOptions)):
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"{name} must be an aligner.{kind.__name__} or None, got {type(value).__name__} {value!r}")


def align(
    video: Optional[VideoClip],
    audio: AudioClip,
    transcript: Optional[Transcript] = None,
    *,
    sample_rate: int = 16000,
    estimate: bool = True,
    av_offset_ms: Optional[float] = None,
    drift_ppm: Optional[float] = None,
    text_offset_ms: Optional[float] = None,
    refine_words: bool = False,
    tokenizer: Optional[Tokenizer] = None,
    start_seconds: Optional[float] = None,
    stop_seconds: Optional[float] = None,
    max_offset_ms: Optional[float] = None,
    min_confidence: Optional[float] = None,
    text_method: TextMethod = "auto",
    caption_words: bool = True,
    key: str = "",
    av_options: Optional[AVOptions] = None,
    text_options: Optional[TextOptions] = None,
) -> AlignedSample:
    """Put ``audio`` and ``transcript`` on ``video``'s presentation timeline.

    Args:
        video: decoded frames with real pts (the reference), or None for audio-only media.
        audio: decoded audio (any rate; its ``start_seconds`` honoured).
        transcript: stamps on the transcript's own clock, or None.
        sample_rate: rate of the aligned audio.
        estimate: estimate what is not given; with False, missing values are taken as 0 (a transcript on audio that
            starts ``FIRST_SAMPLE_ORIGIN_MIN_SECONDS`` or more late logs a warning, once per process: ASR stamps count
            from the first sample).
        av_offset_ms, drift_ppm, text_offset_ms: known values (e.g. from ``align.json``); they win over estimates.
        refine_words: snap word starts to acoustic onsets after the global correction.
        tokenizer: a ``tokenizers.Tokenizer`` (or a callable returning character offsets); whitespace by default.
        start_seconds, stop_seconds: the window on the video timeline; default: the whole media, from 0 (media that
            start more than ``MAX_LEADING_GAP_SECONDS`` after 0 raise ``DecodeError``, reason ``too_large``).
        max_offset_ms: estimators' search range (ms); when given, it replaces that field of both option sets.
        min_confidence: estimators abstain below this; when given, it replaces that field of both option sets.
        text_method: transcript offset estimator: ``"energy"`` (speech onsets and activity), ``"forced"``
            (pocketsphinx forced alignment) or ``"auto"`` (energy, then forced alignment when energy abstains
            and pocketsphinx is installed).
        caption_words: when the transcript has no word times (SRT, WebVTT, segment-only JSON) and pocketsphinx
            is installed, force-align each caption's text inside the caption (after the text offset) to get
            ``words``; a caption that fails keeps its segment and gets no words (``caption_words_failed``).
            A transcript whose spans are all single words (a JSON word list) is left as it is.
        key: sample key, carried into the result.
        av_options: every option of the A/V estimator (default ``AVOptions()``).
        text_options: every option of the transcript estimators (default ``TextOptions()``).

    Returns:
        AlignedSample with audio, words and segments on the video timeline.

    Raises:
        ValueError: ``sample_rate`` not a positive int, a window bound that is not finite or ``stop < start``, or that
            reaches more than ``MAX_WINDOW_BEYOND_MEDIA_SECONDS`` past the media, an unknown ``text_method``, an option
            out of range, a given offset beyond ``aligner.timeline.MAX_OFFSET_MS``, a video of several frames whose
            pts are all equal, audio samples that are not finite; ``DecodeError`` (``too_large``) for media that
            start long after 0 (above).
        TypeError: ``video`` / ``audio`` / ``transcript`` not a ``VideoClip`` / ``AudioClip`` / ``Transcript`` (a path
            for the transcript, swapped clips), ``av_options`` / ``text_options`` of another type.

    Example:
        >>> sample = align(read_video(p), read_audio(p), read_transcript(t))   # doctest: +SKIP
        >>> sample.report.av_offset_ms, sample.words[0].frame_start             # doctest: +SKIP
    """
    from aligner._estimate import estimate_av_offset
    from aligner._text_offset import refine_word_times

    _check_inputs(video, audio, transcript)
    _check_arguments(sample_rate, start_seconds, stop_seconds, text_method, av_options, text_options,
                     dict(av_offset_ms=av_offset_ms, drift_ppm=drift_ppm, text_offset_ms=text_offset_ms))
    _check_pts_increase(video, key)
    if start_seconds is None:
        _check_leading_gap(video, audio, sample_rate, key)

    shorthand = {name: value for name, value in (("max_offset_ms", max_offset_ms), ("min_confidence", min_confidence))
                 if value is not None}
    av_options = dataclasses.replace(av_options or AVOptions(), **shorthand)
    text_options = dataclasses.replace(text_options or TextOptions(), **shorthand)

    av_method, av_conf, av_abstain = "none", 0.0, None
    est_offset, est_drift = av_offset_ms, drift_ppm
    if av_offset_ms is not None or drift_ppm is not None:
        av_method, av_conf = "given", 1.0
    elif estimate and video is not None and video.num_frames > 1:
        est = estimate_av_offset(video, audio, options=av_options)
        est_offset, est_drift, av_conf, av_method = est.av_offset_ms, est.drift_ppm, est.confidence, est.method
        av_abstain = est.abstain.to_json() if est.abstain is not None else None
    elif estimate and video is not None:  # one frame (or none): nothing changes over time, said like any abstention
        est = av_abstain_estimate("no_visual_events",
                                  found=f"{video.num_frames} video frame(s): no change between frames to date",
                                  needed="a video of several frames with visual events (flashes, claps in view)")
        av_method, av_abstain = est.method, est.abstain.to_json()
    clock = ClockModel(av_offset_ms=est_offset or 0.0, drift_ppm=est_drift or 0.0)

    text_how, text_conf, est_text, text_abstain = "none", 0.0, text_offset_ms, None
    if transcript is not None:
        if text_offset_ms is not None:
            text_how, text_conf = "given", 1.0
        elif estimate and transcript.spans:
            t = _estimate_either_origin(audio, transcript, method=text_method, options=text_options)
            est_text, text_conf, text_how = t.text_offset_ms, t.confidence, t.method
            text_abstain = t.abstain_record()
        elif estimate:  # no span: nothing to estimate, said like every other abstention (not a silent null)
            t = text_abstain_estimate("empty_transcript", found="no text in the transcript (0 cues, segments or words)")
            text_how, text_abstain = t.method, t.abstain_record()
        elif transcript.spans and float(audio.start_seconds) >= FIRST_SAMPLE_ORIGIN_MIN_SECONDS:
            _warn_unestimated_origin(audio, key)
    clock = dataclasses.replace(clock, text_offset_ms=est_text or 0.0)
    captions_failed = 0
    if caption_words and transcript is not None and transcript.spans and not transcript.words and \
            any(len(s.text.split()) > 1 for s in transcript.spans):  # a list of one-word spans is a word list
        transcript, captions_failed = _with_caption_words(audio, transcript, clock.text_offset_ms)

    lo, hi = _media_window(video, audio, clock)
    lo = lo if start_seconds is None else float(start_seconds)
    hi = hi if stop_seconds is None else float(stop_seconds)
    if hi < lo:
        raise ValueError(f"window must have stop >= start, got {lo = }, {hi = }")
    if start_seconds is not None or stop_seconds is not None:
        _check_window_near_media(lo, hi, video, audio, clock, sample_rate, start_seconds, stop_seconds)
    aligned_audio = audio_on_video_clock(audio, clock, sample_rate=sample_rate, start_seconds=lo, stop_seconds=hi)

    words_src = transcript.words if transcript is not None else ()
    refined = 0
    if refine_words and words_src:
        # Refinement works on the audio clock: stamps minus the text offset.
        shift = -clock.text_offset_ms / 1000.0
        moved = [dataclasses.replace(w, start_seconds=w.start_seconds + shift, stop_seconds=w.stop_seconds + shift) for w in words_src]
        snapped = refine_word_times(audio, moved)
        refined = sum(1 for a, b in zip(moved, snapped) if a.start_seconds != b.start_seconds)
        words_src = tuple(
            dataclasses.replace(w, start_seconds=w.start_seconds - shift, stop_seconds=w.stop_seconds - shift) for w in snapped
        )
    pts = video.pts_seconds.numpy() if video is not None else None
    common = dict(clock=clock, pts_seconds=pts, window_start_seconds=lo, window_stop_seconds=hi, sample_rate=sample_rate)
    words, out_w = map_spans(list(words_src), level="word", tokenizer=tokenizer, **common)
    segments, out_s = map_spans(list(transcript.spans) if transcript is not None else [], level="segment", **common)
    report = AlignmentReport(
        av_offset_ms=est_offset,
        drift_ppm=est_drift,
        av_confidence=float(av_conf),
        text_offset_ms=est_text,
        text_confidence=float(text_conf),
        clock=clock,
        av_method=av_method,
        text_method=text_how,
        spans_outside=out_w + out_s,
        words_refined=refined,
        av_abstain=av_abstain,
        text_abstain=text_abstain,
        caption_words_failed=captions_failed,
    )
    return AlignedSample(video, aligned_audio, tuple(words), tuple(segments), report, lo, hi, key, transcript)
