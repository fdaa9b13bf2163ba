"""One report row per clip: container facts, measured offsets, lip-sync standards and residuals against truth.

A row (``report.json["clips"][i]``)::

    key, shard, source ("align.json" | "measured"), duration_seconds,
    av_offset_ms, av_confidence, av_method, drift_ppm, text_offset_ms, text_confidence, text_method,
    spans_outside, standard_offset_ms (+ = audio early), lipsync {bt1359_detectability, …: bool | None},
    container {video/audio start, priming, codec delay, durations and their mismatch, frame counts, fps, vfr},
    truth {…} | None, residual {av_offset_ms, drift_ppm, text_offset_ms: measured − true | None} | None,
    abstain_reasons {av_offset_ms | text_offset_ms: reason}, abstain_details {same keys: {found, needed,
    best_guess_ms, hint}}, problems [str]

Offsets keep avalign's signs (DESIGN.md): ``av_offset_ms > 0`` audio lags video; ``text_offset_ms > 0``
transcript stamps are late. A null offset means the estimator abstained (or there is no transcript).
"""
from __future__ import annotations

import logging
import math
from typing import Any, Iterable, Literal, Optional, Union

from avalign.report._inputs import ClipInput, Skipped, count_clips, iter_inputs
from avalign.report._standards import lipsync_status, to_standard_offset_ms
from loaders.media import DEFAULT_MAX_PIXELS
from loaders.errors import SampleError, reason_of

logger = logging.getLogger(__name__)

__all__ = ["abstain_reason", "clip_row", "collect", "measure_clip", "residual"]

MEASURED_FIELDS = ("av_offset_ms", "drift_ppm", "text_offset_ms")
_NEVER_RAISED = ("unknown_extension",)
"""Skip reasons that ``on_error="raise"`` still only lists: stray files that are not inputs."""
OnError = Literal["skip", "raise"]


def measure_clip(clip: ClipInput, *, sample_rate: int = 16000, max_pixels: int = DEFAULT_MAX_PIXELS,
                 transcript: Any = None) -> dict:
    """Decode ``clip``'s media (path or bytes) and return its ``measure`` record (as ``avalign measure``), against
    ``transcript`` (a :class:`avcore.Transcript` already read from ``clip.transcript``) or, when None, the transcript
    read from ``clip.transcript``.

    Audio-only media (no video stream) are measured with a null A/V offset; video-only media (no audio stream)
    with null A/V and text offsets, unless the shard sample has a separate audio member (``clip.audio_media``),
    which is then measured (``avalign.measure_media``, the flow ``measure`` and ``preprocess`` follow).

    Raises:
        DecodeError, TranscriptError, IndexError, ValueError: unreadable media or transcript (``DecodeError.reason``
            ``missing_audio`` for media with neither stream, ``too_large`` over ``max_pixels``).
    """
    import loaders
    from avalign._measure import measure_media

    text = transcript
    if text is None and clip.transcript is not None:
        text = loaders.read_transcript(clip.transcript, name=clip.transcript_name)
    return measure_media(clip.media, text, name=clip.media_name, sample_rate=sample_rate,
                         audio_media=clip.audio_media, audio_name=clip.audio_name,
                         decode_options=dict(max_pixels=max_pixels)).record


def residual(measured: Optional[float], true: Optional[float]) -> Optional[float]:
    """``measured − true`` rounded to 3 decimals; None when either is unknown."""
    if measured is None or true is None:
        return None
    return round(float(measured) - float(true), 3)


def _container_facts(record: dict, probe: Optional[dict], problems: list[str]) -> dict:
    """Facts from the measure record (content) and the container probe (headers, first packets). A value of the
    record that is not a finite number (a hand-edited align.json) is left null and named in ``problems``."""
    video, audio = record.get("video") or None, record.get("audio") or {}

    def number(block: dict, block_name: str, name: str):
        value = block.get(name)
        read = _number(value, f"{block_name}.{name}", problems)
        return value if read is not None and isinstance(value, int) and not isinstance(value, bool) else read

    facts: dict = {}
    if video:
        n_header, n_content = number(video, "video", "num_frames_from_header"), number(video, "video", "num_frames")
        fps_header, fps_content = number(video, "video", "fps_from_header"), number(video, "video", "fps_from_content")
        facts.update(
            video_start_seconds=number(video, "video", "start_seconds"),
            num_frames_from_header=n_header,
            num_frames_from_content=n_content,
            fps_from_header=fps_header,
            fps_from_content=fps_content,
            vfr=video.get("vfr"),
            video_codec=video.get("codec"),
        )
        facts["frame_count_mismatch"] = None if n_header is None or n_content is None else int(n_content) - int(n_header)
        fps = fps_content or fps_header
        facts["video_duration_seconds"] = round(n_content / fps, 6) if n_content and fps else None
    rate, num_samples = number(audio, "audio", "sample_rate"), number(audio, "audio", "num_samples")
    audio_start = number(audio, "audio", "start_seconds")
    facts.update(
        audio_start_seconds=audio_start,
        audio_sample_rate=rate,
        audio_codec=audio.get("codec"),
        audio_duration_seconds=round(num_samples / rate, 6) if rate and num_samples is not None else None,
    )
    if probe:
        facts.update({k: v for k, v in probe.items() if k not in ("video_start_seconds",)})
        facts["video_start_seconds_from_header"] = probe.get("video_start_seconds")
        facts["audio_start_seconds_from_header"] = probe.get("audio_start_seconds")
        facts["audio_start_seconds"] = audio_start
        if facts.get("video_duration_seconds") is None and probe.get("video_duration_seconds_from_header"):
            facts["video_duration_seconds"] = probe["video_duration_seconds_from_header"]
    v_start, a_start = facts.get("video_start_seconds"), facts.get("audio_start_seconds")
    facts["start_difference_ms"] = round(1000.0 * (a_start - v_start), 3) if v_start is not None and a_start is not None else None
    v_dur, a_dur = facts.get("video_duration_seconds"), facts.get("audio_duration_seconds")
    facts["duration_mismatch_ms"] = round(1000.0 * (a_dur - v_dur), 3) if v_dur is not None and a_dur is not None else None
    return facts


def clip_row(clip: ClipInput, *, sample_rate: int = 16000, truth: Optional[dict] = None,
             max_pixels: int = DEFAULT_MAX_PIXELS) -> Union[dict, Skipped]:
    """The report row of one clip, or a :class:`Skipped` when its media cannot be read (never raises for bad data).

    The skip reason is the error's code (``loaders.errors.REASONS``): ``decode``, ``missing_audio``, ``too_large``,
    ``timeout``, ``transcript``; ``read`` for an I/O error; ``error`` (logged with its traceback) for anything else.
    """
    from avalign.report._probe import probe_container

    problems: list[str] = []
    transcript, unreadable = _read_transcript(clip)  # read once: for the measure and for the word count
    if clip.align is not None:
        record, source = clip.align, "align.json"
    else:
        try:
            if unreadable is not None:
                raise unreadable
            record = measure_clip(clip, sample_rate=sample_rate, max_pixels=max_pixels, transcript=transcript)
            source = "measured"
        except Exception as e:  # corrupt media must be counted, never stop the report
            reason = reason_of(e, default="decode" if isinstance(e, (ValueError, IndexError)) else "error")
            logger.warning("%s: %s: %s", clip.media_name or clip.key, reason, e, exc_info=reason == "error")
            return Skipped(clip.key, clip.shard, reason, f"{type(e).__name__}: {e}")
    probe = None
    if clip.media is not None:
        try:
            probe = probe_container(clip.media, name=clip.media_name)
        except Exception as e:  # header facts are extra information: a failure is noted, not fatal
            problems.append(f"container probe failed: {type(e).__name__}: {e}")
    container = _container_facts(record, probe, problems)
    aligned = record.get("aligned") or {}
    av_offset = _number(record.get("av_offset_ms"), "av_offset_ms", problems)
    text_offset = _number(record.get("text_offset_ms"), "text_offset_ms", problems)
    drift = _number(record.get("drift_ppm"), "drift_ppm", problems)
    has_video = record.get("video", "not recorded") is not None  # None only for audio-only media
    abstain_reasons = {}
    if has_video and av_offset is None:
        abstain_reasons["av_offset_ms"] = abstain_reason(record, "av")
    has_transcript = clip.transcript is not None or record.get("text_method") not in (None, "", "none")
    if has_transcript and text_offset is None:
        abstain_reasons["text_offset_ms"] = abstain_reason(record, "text")
    row = {
        "key": clip.key,
        "shard": clip.shard,
        "source": source,
        "has_transcript": has_transcript,
        "has_video": has_video,
        "num_words": _num_words(transcript, unreadable, record, problems),
        "abstain_reasons": abstain_reasons,
        "abstain_details": {field: _abstain_detail(record, field.split("_")[0]) for field in abstain_reasons},
        "duration_seconds": container.get("video_duration_seconds") or container.get("audio_duration_seconds"),
        "av_offset_ms": av_offset,
        "av_confidence": record.get("av_confidence"),
        "av_method": record.get("av_method"),
        "drift_ppm": drift,
        "text_offset_ms": text_offset,
        "text_confidence": record.get("text_confidence"),
        "text_method": record.get("text_method"),
        "spans_outside": aligned.get("spans_outside"),
        "standard_offset_ms": to_standard_offset_ms(av_offset),
        "lipsync": lipsync_status(av_offset),
        "container": container,
        "truth": None,
        "residual": None,
        "problems": problems,
    }
    if truth is not None:
        true = truth.get(clip.key)
        if true is None:
            problems.append("no truth entry for this key")
        else:
            row["truth"] = true
            row["residual"] = {f: residual(row[f], true.get(f)) for f in MEASURED_FIELDS}
    return row


def _abstain_detail(record: dict, prefix: str) -> dict:
    """What the measure record says about a ``prefix`` (``av`` / ``text``) abstention: ``found``, ``needed``,
    ``best_guess_ms`` and ``hint`` (each None where the record does not carry it, e.g. an older align.json)."""
    detail = record.get(f"{prefix}_abstain")
    detail = detail if isinstance(detail, dict) else {}
    return {k: detail.get(k) for k in ("found", "needed", "best_guess_ms", "hint")}


def abstain_reason(record: dict, prefix: str) -> Optional[str]:
    """Why the ``prefix`` (``av`` / ``text``) estimate of a measure record is null: ``{prefix}_abstain.reason`` when
    the record carries one, else the reason in an ``abstain:<reason>`` method, else ``"unknown"``."""
    detail = record.get(f"{prefix}_abstain")
    if isinstance(detail, dict) and detail.get("reason"):
        return str(detail["reason"])
    method = str(record.get(f"{prefix}_method") or "")
    if method.startswith("abstain:"):
        return method[len("abstain:"):] or "unknown"
    return "unknown"


def _read_transcript(clip: ClipInput) -> tuple[Any, Optional[Exception]]:
    """``(transcript, None)``, ``(None, None)`` without one, or ``(None, error)`` when it cannot be read (a measured
    clip is then skipped with the error's reason; a clip of ``align.json`` only loses its word count)."""
    if clip.transcript is None:
        return None, None
    import loaders

    try:
        return loaders.read_transcript(clip.transcript, name=clip.transcript_name), None
    except Exception as e:  # noqa: BLE001 - counted by the caller: bad data never stops the report
        return None, e


def _num_words(transcript: Any, unreadable: Optional[Exception], record: dict, problems: list[str]) -> int:
    """Words of the clip's transcript, counted as ``preprocess``'s manifest counts them: its word entries, else the
    whitespace-separated tokens of its spans (a caption-only SRT); without a transcript, the record's ``words``."""
    if unreadable is not None:
        problems.append(f"transcript unreadable for the word count: {unreadable}")
        return 0
    if transcript is not None:
        from avalign._measure import count_words

        return count_words(transcript)
    words = record.get("words")
    return len(words) if isinstance(words, list) else 0


def _number(value, name: str, problems: list[str]) -> Optional[float]:
    if value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        problems.append(f"{name} is not a number: {value!r}")
        return None
    if not math.isfinite(number):
        problems.append(f"{name} is not finite: {value!r}")
        return None
    return number


_NOT_CLIPS = ("unknown_extension", "missing_media", "duplicate_key", "stray_member")
"""Skips that are not clips of the progress total (``count_clips``: media keys, each key once)."""


def collect(
    path: str,
    *,
    sample_rate: int = 16000,
    truth: Optional[dict] = None,
    progress: bool = False,
    on_error: OnError = "skip",
    max_pixels: int = DEFAULT_MAX_PIXELS,
    exclude_dir: Optional[str] = None,
) -> tuple[list[dict], list[Skipped]]:
    """Rows and skip records for every input of ``path`` (see :func:`avalign.report._inputs.iter_inputs`).

    Args:
        path: media directory, media file, directory of shards or shard spec.
        sample_rate: the rate of the ``aligned`` sample indices when measuring.
        truth: ``{key: {"av_offset_ms", "drift_ppm", "text_offset_ms", …}}`` to compute residuals.
        progress: show progress on stderr (a bar with total and ETA on a terminal, else a line every 10 s).
        on_error: ``"skip"`` lists bad inputs; ``"raise"`` raises at the first (stray files in a media
            directory, reason ``unknown_extension``, are still only listed).
        max_pixels: media with larger frames (width × height) are skipped as ``too_large``.
        exclude_dir: a directory inside a media directory ``path`` that is not read (the report's own output).

    Raises:
        SampleError: the first bad input with ``on_error="raise"``, naming its shard, key and reason.
    """
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    items: Iterable = iter_inputs(path, on_error=on_error, exclude_dir=exclude_dir)
    bar = None
    if progress:
        from avalign._progress import Progress

        bar = Progress(total=count_clips(path), desc="report", unit="clip")
    rows: list[dict] = []
    skipped: list[Skipped] = []
    counts = {"reported": 0, "skipped": 0}  # the total counts media keys: inputs that are not clips have their own
    try:
        for item in items:
            result = item if isinstance(item, Skipped) else clip_row(item, sample_rate=sample_rate, truth=truth, max_pixels=max_pixels)
            if bar is not None:  # counted before a raise, so the last progress line holds the clip that raised
                if isinstance(item, Skipped) and (item.from_preprocess or item.reason in _NOT_CLIPS):
                    counts["not_clips"] = counts.get("not_clips", 0) + 1  # a stray file, a record of preprocess's skips
                    bar.update(0, **counts)
                else:
                    counts["skipped" if isinstance(result, Skipped) else "reported"] += 1
                    bar.update(1, **counts)
            if isinstance(result, Skipped):
                if on_error == "raise" and result.reason not in _NEVER_RAISED:
                    raise SampleError(result.message, shard=result.shard, key=result.key, reason=result.reason)
                skipped.append(result)
            else:
                rows.append(result)
    finally:
        if bar is not None:
            bar.close()
    return rows, skipped

