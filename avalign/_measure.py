"""``avalign measure``: estimate and report one media file's alignment in the DESIGN.md schema."""
from __future__ import annotations

import logging
import os
import shlex
from dataclasses import dataclass
from typing import Any, Optional

logger = logging.getLogger(__name__)

__all__ = ["ESTIMATION_MAX_WIDTH", "FIGURE_BESIDE_ABSTENTION", "Measurement", "count_words", "format_measurement", "given_transcript",
           "import_measure_dependencies", "measure", "measure_aligned", "measure_media", "measure_sample", "read_video_for_estimation",
           "transcripts_not_read"]

FIGURE_BESIDE_ABSTENTION = {"av": "best lag's match strength", "text": "figure of the methods tried"}
"""What a measure record's ``av_confidence`` / ``text_confidence`` is when its offset is null: no confidence in the
abstention (an ``ambiguous_peak`` abstains at A/V 1.0: the best lag matches well, and so does another). The measure
table, the report's clip table and its clip pages name it so; ``--json`` and ``report.json`` keep the figure under its
key."""
ESTIMATION_MAX_WIDTH = 64
"""Frames are decoded at most this wide for estimation (area-scaled by swscale while converting to RGB). The
estimators use per-frame luma changes only: ``background_rise`` averages an 8-column grid of blocks over a lattice
of about 8 x 8 pixels each, i.e. 64 pixels across, and the other visual features reduce frames to a 32-pixel short
side. Decoding at 64 instead of 256 gives the same answers on the seven held-out wild sets and the three real A/V
clips (BENCHMARKS.md, "Estimation frames 64 wide") with 16x less memory for the frames: ``measure`` of 5 min of
360p peaked at 3.3 GB at 256 wide and 1.2 GB at 64 (0.75 GB of it imports); 1 h of 720p holds ~0.75 GB of frames."""


_LAZY_DEPENDENCIES = ("scipy.ndimage", "scipy.signal", "scipy.special", "scipy.stats", "soxr", "av", "torchcodec.decoders",
                      "pysubs2", "webvtt", "praatio.utilities.textgrid_io", "pocketsphinx", "num2words")
"""Modules that the decoders, transcript readers and estimators import inside the functions that use them."""


def import_measure_dependencies(*, forced_alignment: bool = False) -> None:
    """Import, in this process, the modules that :func:`measure_media` would import on first use (those that fail to
    import are left out: their error is raised where they are needed); with ``forced_alignment``, also
    create the process's pocketsphinx decoder (``aligner.estimators.shared_decoder``) when pocketsphinx is installed.

    Call it before forking a child per sample (``preprocess``'s watchdog and process pool): the children inherit the
    modules and the decoder instead of each loading them again (BENCHMARKS.md "Cheaper tests, same oracles").
    """
    import importlib

    for name in _LAZY_DEPENDENCIES:
        try:
            importlib.import_module(name)
        except Exception as e:  # noqa: BLE001 - not installed or not loadable: the code that needs it says so
            logger.debug("%s not imported: %s: %s", name, type(e).__name__, e)
    if forced_alignment:
        from aligner.estimators import shared_decoder

        try:
            shared_decoder()
        except ImportError:
            logger.debug("pocketsphinx is not installed: no forced alignment")


def read_video_for_estimation(media, *, name: str, max_width: int = ESTIMATION_MAX_WIDTH, **options):
    """``read_video`` scaled down (aspect kept, even sizes) to at most ``max_width``; pts and metadata are
    those of the full stream (scaling happens in the RGB conversion). Returns ``(VideoClip, FrameIndex)``."""
    import loaders

    meta, index = loaders.probe_video(media, name=name, max_duration_seconds=options.get("max_duration_seconds"))
    size = None
    if meta.width > max_width:
        height = max(2, int(round(meta.height * max_width / meta.width / 2)) * 2)
        size = (height, max_width)
    return loaders.read_video(media, name=name, frame_size=size, frame_index=index, **options), index


def count_words(transcript) -> int:
    """Words of a ``Transcript``: per span, its timed words, else the whitespace-separated tokens of its text (a
    caption). The one count of ``preprocess``'s manifest (``num_words``) and ``report``'s totals.

    It counts the transcript's words, whatever alignment made of them, and is the same for the input transcript and
    for the ``transcript.json`` that preprocess writes (whose captions carry the words forced alignment placed).
    ``align.json``'s ``words`` (the ``measure`` record) lists only the words placed on the video timeline: a caption
    that forced alignment could not split (``caption_words_failed``) is there as a segment only, and a word or
    segment outside the media (``aligned.spans_outside``) is not listed. So, when forced alignment gives one word
    per token::

        num_words == len(words) + tokens of the segments holding no word    (no span outside the media)
    """
    return sum(len(s.text.split()) if s.words_derived or not s.words else len(s.words) for s in transcript.spans)


def given_transcript(transcript):
    """``transcript`` as its source gave it: the spans whose words forced alignment placed inside the caption
    (``Span.words_derived``: ``transcript.json`` of a caption clip, written by ``preprocess``) without those words,
    so that measuring it again estimates from the captions as the first measurement did, and places the words
    again (the same words: the same input). Other spans, and a transcript without such spans, as they are; None
    stays None."""
    import dataclasses

    if transcript is None or not any(s.words_derived for s in transcript.spans):
        return transcript
    spans = tuple(dataclasses.replace(s, words=(), words_derived=False) if s.words_derived else s
                  for s in transcript.spans)
    return dataclasses.replace(transcript, spans=spans)


def _mark_derived_words(given, aligned_transcript):
    """``aligned_transcript`` (``AlignedSample.transcript``) with ``words_derived`` set on the spans whose words
    ``aligner.align`` placed: it places caption words only in a transcript with no word at all (``given``)."""
    import dataclasses

    if given is None or aligned_transcript is None or given.words or not aligned_transcript.words:
        return aligned_transcript
    spans = tuple(dataclasses.replace(s, words_derived=True) if s.words else s for s in aligned_transcript.spans)
    return dataclasses.replace(aligned_transcript, spans=spans)


def _outside_line(record: dict, outside: int) -> str:
    """The text report's line for ``outside`` spans left out: the aligned window they fall outside, and why that may
    be: audio that runs past the video's end (the window is the video's timeline), else a transcript of another
    clip or stamps in another unit."""
    aligned, audio = record.get("aligned") or {}, record.get("audio") or {}
    start, stop = aligned.get("start_seconds"), aligned.get("stop_seconds")
    window = f"'s aligned window [{start:.3f}, {stop:.3f}) s" if start is not None and stop is not None else ""
    audio_stop = None
    if audio.get("sample_rate") and audio.get("start_seconds") is not None:
        audio_stop = audio["start_seconds"] + audio["num_samples"] / audio["sample_rate"]
    if record.get("video") and stop is not None and audio_stop is not None and audio_stop > stop + 0.5:
        hint = (f"the audio runs to {audio_stop:.3f} s, past the video's end: spans are placed on the video's "
                "timeline, so words heard after its last frame are left out")
    else:
        hint = "a transcript of another clip, or stamps in the wrong unit?"
    return (f"  {outside} word(s)/segment(s) of the transcript lie outside the media{window} and are not listed; "
            f"hint: {hint}")


def _round(x: Optional[float], digits: int = 3) -> Optional[float]:
    return None if x is None else round(float(x), digits)


def measure_sample(video, audio, transcript=None, *, sample_rate: int = 16000, estimate: bool = True, **given) -> dict:
    """The ``measure`` record for decoded media (used by ``measure``, ``preprocess`` and ``report``)."""
    return measure_aligned(video, audio, transcript, sample_rate=sample_rate, estimate=estimate, **given)[0]


def measure_aligned(video, audio, transcript=None, *, sample_rate: int = 16000, estimate: bool = True, **given):
    """``(record, AlignedSample)``: :func:`measure_sample`'s record and the aligned sample it came from (whose
    ``transcript`` carries caption words from forced alignment, for preprocessing to store)."""
    import dataclasses

    import aligner

    transcript = given_transcript(transcript)  # caption words a preprocess placed: measured as the captions they were
    sample = aligner.align(video, audio, transcript, sample_rate=sample_rate, estimate=estimate, **given)
    sample = dataclasses.replace(sample, transcript=_mark_derived_words(transcript, sample.transcript))
    r = sample.report
    video_json = None
    if video is not None:
        m = video.metadata
        video_json = {
            "num_frames": video.num_frames,
            "fps_from_header": _round(m.fps_from_header, 6),
            "fps_from_content": _round(m.fps_from_content, 6),
            "vfr": m.vfr,
            "start_seconds": _round(float(video.pts_seconds[0]) if video.num_frames else m.start_seconds, 6),
            "num_frames_from_header": m.num_frames_from_header,
            "codec": m.codec,
            "width": m.width,
            "height": m.height,
            "rotation_degrees": m.rotation_degrees,
            "stream_index": m.stream_index,
        }
    return {
        "av_offset_ms": _round(r.av_offset_ms),
        "drift_ppm": _round(r.drift_ppm, 1),
        "av_confidence": _round(r.av_confidence),
        "text_offset_ms": _round(r.text_offset_ms),
        "text_confidence": _round(r.text_confidence) if transcript is not None else None,
        "av_method": r.av_method,
        "av_abstain": r.av_abstain,
        "text_method": r.text_method,
        "video": video_json,
        "audio": {
            "sample_rate": audio.source_sample_rate or audio.sample_rate,
            "start_seconds": _round(audio.start_seconds, 6),
            "num_samples": audio.num_samples,
            "codec": audio.codec,
            "stream_index": audio.stream_index,
        },
        "aligned": {
            "sample_rate": sample_rate,
            "start_seconds": _round(sample.start_seconds, 6),
            "stop_seconds": _round(sample.stop_seconds, 6),
            "num_samples": sample.audio.num_samples,
            "spans_outside": r.spans_outside,
        },
        "text_abstain": r.text_abstain,
        "caption_words_failed": r.caption_words_failed,
        "segments": [_span_json(s) for s in sample.segments],
        "words": [_span_json(w) for w in sample.words],
    }, sample


def _span_json(span) -> dict:
    """A word or segment in the ``measure`` schema: text, seconds and frame/sample ranges (half-open)."""
    return {k: v for k, v in span.to_json().items() if k not in ("level", "token_start", "token_stop")}


def decode_for_measure(media, *, name: str, audio_media=None, audio_name: str = "", **options):
    """``(video or None, frame index or None, audio, video_only)``: the one decode rule of ``measure``,
    ``preprocess`` and ``report``. Audio-only media (no video stream) give ``video=None``; video-only media (no
    audio stream) give a 0-sample audio track at the video's first pts and ``video_only=True`` (nothing to
    estimate against: :func:`null_unmeasurable` then nulls the offsets). Media with neither raise the
    ``missing_audio`` :class:`loaders.DecodeError`. ``options`` go to both readers (``max_duration_seconds``)
    and to ``read_video`` (``num_threads``, ``max_pixels``).

    ``audio_media`` (path or bytes, named ``audio_name`` in messages): the sample's separate audio member
    (video2dataset's ``KEY.m4a``, a ``KEY.wav``), read when ``media`` has no audio stream, as the loader reads it
    (its first sample's time on the same clock as the video's pts); ignored when ``media`` has audio.
    """
    import torch

    import loaders

    audio = None
    try:
        audio = loaders.read_audio(media, name=name, max_duration_seconds=options.get("max_duration_seconds"))
    except loaders.DecodeError as e:
        if e.reason != "missing_audio":
            raise
        missing_audio = e
        if audio_media is not None:
            try:
                audio = loaders.read_audio(audio_media, name=audio_name or name,
                                           max_duration_seconds=options.get("max_duration_seconds"))
            except loaders.DecodeError as error:
                if isinstance(audio_media, str):  # the file a --json error names: this one, not the media
                    error.path = audio_media
                raise
    try:
        video, index = read_video_for_estimation(media, name=name, **options)
    except loaders.DecodeError as e:
        if e.reason != "missing_video" or audio is None:
            raise missing_audio if audio is None and e.reason == "missing_video" else e
        video, index = None, None
    if audio is not None:
        return video, index, audio, False
    start_seconds = float(video.pts_seconds[0]) if video.num_frames else float(video.metadata.start_seconds or 0.0)
    return video, index, loaders.AudioClip(torch.zeros((1, 0), dtype=torch.float32), 16000, start_seconds), True


def null_unmeasurable(record: dict, *, video, video_only: bool, decode_errors: int = 0) -> dict:
    """Null what could not be measured: the A/V fields without video or without audio, the text offset and the
    spans' sample ranges without audio (and ``aligned.num_samples`` is 0, as ``audio.num_samples``); record
    ``decode_errors`` (packets the decoders skipped). Returns ``record``."""
    if video is None or video_only:
        missing = "audio" if video_only else "video"
        record.update(av_offset_ms=None, drift_ppm=None, av_confidence=None,
                      av_abstain=_missing_stream(missing, "an A/V offset needs both a video and an audio stream"))
    if video_only:  # no samples to index: sample ranges are null, as frame ranges are for audio-only media
        record.update(text_offset_ms=None, text_confidence=None)
        # No audio stream: no rate or first-sample time to report (not the placeholder track's 16000 Hz at the
        # first frame's time); num_samples stays 0.
        record["audio"] = dict(record["audio"], sample_rate=None, start_seconds=None)
        # Nor aligned samples: 0, not the silence ``aligner.align`` pads the window with (the window's length at
        # ``sample_rate``): what the loader yields by default (``missing_audio="empty"``) and what preprocess's
        # manifest ``num_samples`` counts. The window (start/stop_seconds) and the index rate stay.
        record["aligned"] = dict(record["aligned"], num_samples=0)
        if record.get("transcript") is not None or record.get("segments"):
            record["text_abstain"] = _missing_stream("audio", "a transcript offset is measured against the speech")
        for span in (record.get("segments") or []) + (record.get("words") or []):
            span.update(sample_start=None, sample_stop=None)
    record["decode_errors"] = int(decode_errors)
    return record


def _missing_stream(stream: str, why: str) -> dict:
    """The abstain record of an estimate that cannot be made: the media has no ``stream`` (``audio``/``video``)."""
    return {"reason": f"no_{stream}_stream", "found": f"no {stream} stream in the media", "needed": f"{'an' if stream == 'audio' else 'a'} {stream} stream",
            "best_guess_ms": None, "hint": f"{why}; nothing to do unless the {stream} is in another file"}


def decode_errors_of(video, audio) -> int:
    """Packets the decoders skipped in ``video`` and ``audio`` (either may be None)."""
    meta = getattr(video, "metadata", None)
    return int(getattr(meta, "decode_errors", 0) or 0) + int(getattr(audio, "decode_errors", 0) or 0)


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure_media` found for one media file."""

    record: dict
    """The ``measure`` record (DESIGN.md's JSON schema), unmeasurable fields nulled, ``decode_errors`` set."""
    aligned: Any
    """The ``aligner.AlignedSample`` the record came from (its ``transcript`` carries forced-alignment words)."""
    frame_index: Any
    """The video's ``loaders.media.FrameIndex`` (None for audio-only media)."""


def measure_media(media, transcript=None, *, name: str, sample_rate: int = 16000, errors_as_skips: bool = False,
                  decode_options: Optional[dict] = None, audio_media=None, audio_name: str = "",
                  **align_options) -> Measurement:
    """Measure one media file: the one flow of ``avalign measure``, ``preprocess`` and ``report``.

    decode (:func:`decode_for_measure`: audio-only and video-only media accepted) → estimate and align
    (:func:`measure_aligned`; nothing is estimated for video-only media) → null what could not be measured
    (:func:`null_unmeasurable`).

    Args:
        media: a path or the media's bytes; name: its name in messages.
        transcript: a decoded ``Transcript`` or None.
        errors_as_skips: an exception from the estimators becomes a ``SampleError`` with reason ``align``
            (preprocess counts it as a skip of the sample); else it propagates as raised.
        decode_options: for the readers (``num_threads``, ``max_pixels``, ``max_duration_seconds``).
        audio_media, audio_name: the sample's separate audio member, measured when ``media`` has no audio stream
            (:func:`decode_for_measure`).
        align_options: for ``aligner.align`` (``text_method``, ``max_offset_ms``, known ``av_offset_ms`` …).

    Raises:
        ValueError: a known ``av_offset_ms`` for media without a video stream.
    """
    from avcore import DecodeError

    video, index, audio, video_only = decode_for_measure(media, name=name, audio_media=audio_media,
                                                         audio_name=audio_name, **(decode_options or {}))
    if video is None and align_options.get("av_offset_ms") is not None:
        # align() would move the words by it, and the record null it: words off by an offset it does not show
        raise ValueError(f"{name} has no video stream: a known A/V offset (av_offset_ms = "
                         f"{align_options['av_offset_ms']!r}) does not apply; hint: leave it out (--av-offset-ms): the "
                         "words of audio-only media are on the audio's timeline")
    try:
        try:
            record, aligned = measure_aligned(video, audio, transcript, sample_rate=sample_rate,
                                              estimate=not video_only, **align_options)
        except DecodeError as e:  # e.g. media starting hours after 0: named by its file
            raise type(e)(f"{name}: {e}", reason=e.reason) from None
    except Exception as e:  # noqa: BLE001 - the estimators failing on this sample's content
        if not errors_as_skips:
            raise
        from avcore import sample_error

        raise sample_error(e, stage="align") from e
    null_unmeasurable(record, video=video, video_only=video_only, decode_errors=decode_errors_of(video, audio))
    return Measurement(record=record, aligned=aligned, frame_index=index)


def measure(media: str, *, transcript: Optional[str] = None, sample_rate: int = 16000, text_method: str = "auto",
            av_offset_ms: Optional[float] = None, max_offset_ms: float = 500.0,
            transcript_format: Optional[str] = None, text_offset_ms: Optional[float] = None,
            audio: Optional[str] = None) -> dict:
    """Decode ``media`` (and ``transcript``), estimate offsets and drift, return the ``measure`` record.

    ``audio``: the clip's audio in a separate file (video2dataset's ``KEY.m4a`` / ``KEY.wav`` beside ``KEY.mp4``),
    read when ``media`` has no audio stream, as ``preprocess``, ``report`` and the loader read that member (its first
    sample on the same clock as the video's pts); ignored when ``media`` has audio.

    ``text_method`` chooses the transcript offset estimator (``auto``, ``energy``, ``forced``; see ``aligner.align``).
    ``av_offset_ms`` (known A/V offset, ms) is used instead of the A/V estimate (``av_method`` then says so);
    ``text_offset_ms`` (known transcript offset, ms; > 0: stamps are late) likewise instead of the transcript offset
    estimate (``text_method`` ``given``; it needs a ``transcript``);
    ``max_offset_ms`` is the estimators' search range (``aligner.align``'s ``max_offset_ms``);
    ``transcript_format`` is ``read_transcript``'s ``format`` (None: from the suffix, else the content).

    Audio-only media are accepted: the A/V fields are then null and words are on the audio timeline. Video-only
    media are accepted: A/V and text offsets are null (no audio to measure against).
    """
    import loaders

    for path in (media, audio):
        if path is not None and not os.path.exists(path):
            raise FileNotFoundError(f"{'media' if path == media else 'audio'} file not found: {path!r}")
    text = loaders.read_transcript(transcript, format=transcript_format) if transcript else None
    if text_offset_ms is not None and not transcript:
        raise ValueError(f"a transcript offset was given ({text_offset_ms = }) without a transcript; hint: give the "
                         "transcript it applies to (--transcript)")
    given = {name: value for name, value in (("av_offset_ms", av_offset_ms), ("text_offset_ms", text_offset_ms))
             if value is not None}
    record = measure_media(media, text, name=media, sample_rate=sample_rate, text_method=text_method,
                           max_offset_ms=max_offset_ms, audio_media=audio, audio_name=audio or "", **given).record
    record["media"] = media
    record["transcript"] = transcript
    if audio is not None and _has_audio_stream(media) is False:  # the audio measured is that file's: say so
        record["audio"] = dict(record["audio"], file=audio)
    return record


def _has_audio_stream(media: str) -> Optional[bool]:
    """Whether ``media`` has an audio stream (None: FFmpeg cannot open it)."""
    try:
        import av

        with av.open(media) as container:
            return bool(container.streams.audio)
    except Exception:  # noqa: BLE001 - for notes only; the measurement itself has read the media
        return None


_TEXT_SUBTITLE_CODECS = ("subrip", "srt", "ass", "ssa", "webvtt", "mov_text", "text")
"""Subtitle stream codecs that hold text (FFmpeg writes them as SRT); bitmap ones (DVD, PGS) hold pictures."""


def _shell_argument(path: str) -> str:
    """``path`` as a shell word that no command takes for an option: quoted, and ``./`` before a relative path that
    starts with ``-`` (``avalign measure -talk.mp4 --transcript -talk.srt`` fails: 'expected one argument')."""
    return shlex.quote(os.path.join(".", path) if path.startswith("-") else path)


def transcripts_not_read(media: str, *, audio: Optional[str] = None) -> list[str]:
    """What ``measure MEDIA`` without ``--transcript`` leaves unread, as lines to tell the user: a transcript beside
    the media under its stem (``talk.srt``, yt-dlp's ``talk.en.vtt``: what ``preprocess`` would pair with it), and a
    text subtitle stream inside the media (an MKV's SRT track), with the command that extracts it (and the
    ``--audio`` given, kept in the command). Empty when there is neither."""
    from avcore import TRANSCRIPT_EXTENSIONS
    from loaders.transcripts import is_language_tagged

    folder, base = os.path.split(media)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    lines = []
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        names = []
    for name in names:
        if not name.startswith(stem + ".") or name == base:
            continue
        suffix = name[len(stem) + 1:]
        parts = suffix.lower().split(".")
        # talk.en.vtt (yt-dlp: the reader's rule, loaders.transcripts.is_language_tagged), talk.whisperx.json; not
        # records (talk.info.json, talk.frames.json, talk.streams.json)
        # talk.mp4.srt (whisper.cpp names its output after the input file whole)
        if suffix.lower() in TRANSCRIPT_EXTENSIONS or is_language_tagged(suffix) or name.lower() in (
                f"{base.lower()}.{ext}" for ext in TRANSCRIPT_EXTENSIONS) or (
                len(parts) == 2 and "whisper" in parts[0] and parts[1] in ("vtt", "srt", "json")):
            path = os.path.join(folder, name)
            if name.lower().endswith(".json") and not _json_transcript(path):
                continue  # video2dataset's KEY.json metadata (url, caption, status): a caption, not a transcript
            lines.append(f"{path} is beside the media and not read (measure reads only --transcript): "
                         f"`avalign measure {_shell_argument(media)} --transcript {_shell_argument(path)}"
                         + (f" --audio {_shell_argument(audio)}" if audio else "") + "`")
    try:
        import av

        with av.open(media) as container:
            for k, stream in enumerate(container.streams.subtitles):
                codec = stream.codec_context.name if stream.codec_context is not None else "unknown"
                if codec not in _TEXT_SUBTITLE_CODECS:
                    continue
                language = stream.metadata.get("language")
                extract = f"ffmpeg -i {_shell_argument(media)} -map 0:s:{k} subs.srt"
                lines.append(f"its subtitle stream {stream.index} ({codec}{', ' + language if language else ''}) is "
                             f"not read: `{extract}`, then `--transcript subs.srt`")
    except Exception:  # noqa: BLE001 - a note only; the measurement itself has read the media
        pass
    return lines


def audio_not_read(media: str, *, audio: Optional[str] = None, transcript: Optional[str] = None) -> list[str]:
    """What ``measure MEDIA`` leaves unread of a clip's audio, as lines to tell the user: with no ``--audio``, when
    MEDIA has no audio stream, an audio file beside it under its stem (video2dataset's ``KEY.wav`` / ``KEY.m4a``
    beside ``KEY.mp4``: what ``preprocess`` and the loader read as its audio), with the command that reads it; with
    ``--audio``, that it was not read because MEDIA has an audio stream of its own. Empty when there is neither."""
    from avcore import AUDIO_EXTENSIONS

    has_audio = _has_audio_stream(media)
    if has_audio is None:
        return []
    if audio is not None:
        return [f"--audio {_shell_argument(audio)} is not read: {_shell_argument(media)} has an audio stream of its "
                "own (the separate audio of a sample is read only when its media has none)"] if has_audio else []
    if has_audio:
        return []
    folder, base = os.path.split(media)
    stem = base.rsplit(".", 1)[0] if "." in base else base
    try:
        names = sorted(os.listdir(folder or "."))
    except OSError:
        return []
    lines = []
    for name in names:
        if name != base and "." in name and name.rsplit(".", 1)[0] == stem \
                and name.rsplit(".", 1)[1].lower() in AUDIO_EXTENSIONS:
            path = os.path.join(folder, name)
            command = f"avalign measure {_shell_argument(media)}" + (
                f" --transcript {_shell_argument(transcript)}" if transcript else "") + f" --audio {_shell_argument(path)}"
            lines.append(f"{_shell_argument(media)} has no audio stream; {path} is beside it and not read (measure "
                         f"reads only --audio; preprocess and the loader read it as the clip's audio): `{command}`")
    return lines


def _json_transcript(path: str) -> bool:
    """Whether the ``.json`` file ``path`` is a transcript (``loaders.transcripts.is_transcript_json``), not a
    record such as video2dataset's ``KEY.json`` metadata; files too large to sniff cheaply count as transcripts."""
    from loaders.transcripts import is_transcript_json

    try:
        if os.path.getsize(path) > 64 * 1024 * 1024:
            return True
        with open(path, "rb") as f:
            return is_transcript_json(f.read())
    except OSError:
        return True


def _drift_note(record: dict) -> str:
    """Why ``drift_ppm`` is null, for :func:`format_measurement` (from ``av_method``).

    The A/V estimator's methods (``aligner.AVEstimate.method``): ``event_match`` fitted no line (too few matched
    events, or over too short a span), ``event_match+drift_unresolved`` fitted one whose slope is too uncertain;
    ``abstain:<reason>`` abstained on the offset too (its reason is printed below the drift line).
    """
    method = record.get("av_method") or ""
    if record.get("av_abstain"):
        return "abstained with the A/V offset: see why below"
    from aligner import AVOptions
    from aligner.estimators import MIN_PAIRS_FOR_DRIFT

    options = AVOptions()
    if method == "given":
        return "not estimated: the A/V offset was given; 0 ppm applied"
    if method.endswith("+drift_unresolved"):
        return (f"abstained: drift_unresolved: the matched events do not pin the slope down, its standard error is over "
                f"{options.max_drift_se_ppm:g} ppm; 0 ppm applied; hint: a longer clip with more events spread over it")
    if method.startswith("event_match"):
        return (f"abstained: too_few_matched_events: a drift line needs at least {MIN_PAIRS_FOR_DRIFT} matched A/V events spread over at "
                f"least {options.min_drift_span_seconds:g} s; 0 ppm applied; hint: a longer clip with more events "
                "spread over it")
    return "not estimated; 0 ppm applied"


def format_measurement(record: dict) -> str:
    """A readable table of a ``measure`` record."""
    def offset(value, abstain: "dict | None") -> str:
        if value is not None:
            return f"{value} ms"
        return f"n/a (abstained: {abstain['reason']})" if abstain else "n/a (abstained)"

    def confidence(value, answered: bool, method: str, *, av: bool) -> str:
        """``confidence X, method`` for an answer. Beside an abstention the figure is no confidence in it (an
        ``ambiguous_peak`` abstains at 1.0: the best lag matches well, and so does another): the A/V one is shown as
        what it is, the best lag's match strength; the text one, which mixes the methods' figures, not at all (the
        ``why`` line gives each method's). ``--json`` keeps both under their keys."""
        if answered or value is None:  # None: nothing was estimated (a missing stream)
            return f"confidence {'n/a' if value is None else value}, {method}"
        return f"{FIGURE_BESIDE_ABSTENTION['av']} {value}, not a confidence" if av else "no confidence: see why"

    v, a = record.get("video"), record["audio"] or {}
    lines = [f"media       {record.get('media')}"]
    if v:
        lines.append(
            f"video       {v['num_frames']} frames, first pts {v['start_seconds']} s, fps header {v['fps_from_header']}"
            f" / content {v['fps_from_content']}, vfr {v['vfr']}"
        )
    else:
        lines.append("video       none (audio-only)")
    if a.get("sample_rate") is None:
        lines.append("audio       none (video-only: the media has no audio stream)")
    else:
        lines.append(f"audio       {a['sample_rate']} Hz, first sample at {a['start_seconds']} s, {a['num_samples']} samples"
                     + (f" (from {a['file']}: the media has no audio stream)" if a.get("file") else ""))
    lines += [
        f"A/V offset  {offset(record['av_offset_ms'], record.get('av_abstain'))}  ("
        f"{confidence(record['av_confidence'], record['av_offset_ms'] is not None, record['av_method'], av=True)}"
        "; > 0: audio lags)",
        f"drift       {record['drift_ppm']} ppm" if record.get("drift_ppm") is not None else
        f"drift       n/a ({_drift_note(record)})",
    ]
    why = record.get("av_abstain")
    if why:
        guess = "none" if why["best_guess_ms"] is None else f"{why['best_guess_ms']} ms"
        lines += [f"  A/V abstained: {why['reason']}: found {why['found']}; needed {why['needed']}; best guess {guess}",
                  f"  hint: {why['hint']}"]
    if record.get("transcript"):
        figure = confidence(record["text_confidence"], record["text_offset_ms"] is not None, record["text_method"],
                            av=False)
        lines.append(f"text offset {offset(record['text_offset_ms'], record.get('text_abstain'))}  ({figure}; "
                     "> 0: stamps late)")
        why = record.get("text_abstain")
        if why:
            guess = "none" if why["best_guess_ms"] is None else f"{why['best_guess_ms']} ms"
            lines += [f"  why       {why['reason']}: found {why['found']}; needed {why['needed']}",
                      f"  best guess {guess} (not applied)", f"  hint      {why['hint']}"]
        if record.get("caption_words_failed"):
            no_audio = (record.get("audio") or {}).get("sample_rate") is None
            lines.append(f"  {record['caption_words_failed']} caption(s) could not be split into words (kept as segments)"
                         + ("; there is no audio to align them to" if no_audio else ""))
        outside = (record.get("aligned") or {}).get("spans_outside")
        if outside:
            lines.append(_outside_line(record, outside))
        for title, items in (("segment", record.get("segments", [])), ("word", record["words"])):
            lines.append("")
            lines.append(f"{title:<18}{'start s':>9}{'stop s':>9}{'frames':>12}{'samples':>18}")
            for w in items:
                frames = "-" if w["frame_start"] is None else f"[{w['frame_start']},{w['frame_stop']})"
                samples = "-" if w["sample_start"] is None else f"[{w['sample_start']},{w['sample_stop']})"
                lines.append(
                    f"{w['text'][:17]:<18}{w['start_seconds']:>9.3f}{w['stop_seconds']:>9.3f}{frames:>12}{samples:>18}"
                )
    return "\n".join(lines)
