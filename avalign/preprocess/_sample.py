"""One sample: read its bytes, decode, measure, and produce the output members and its manifest row.

Output members of a sample (the contract with ``loaders.make_loader``)::

    <key>.<media ext>       the media bytes as they are (or re-encoded with reencode="mp4")
    <key>.align.json        the ``avalign measure`` record + "config" (seed, fps, sample_rate, methods, versions)
                            + "reencode" with reencode="mp4" (audio copied or encoded, start deltas vs the source)
    <key>.frames.json       FrameIndex.to_json(): pts, keyframe indices, end (video only)
    <key>.transcript.json   {"spans": [{"text", "start_seconds", "stop_seconds", "words": [...]}]}
                            on the ORIGINAL transcript clock (align.json holds text_offset_ms); a caption's
                            words placed by forced alignment (SRT, WebVTT, segment-only JSON) have
                            "words_derived": true on their span: preprocessing this output again measures from
                            the captions alone, as the first run did (same offsets, same words), and the loader
                            uses the words (older files without the key read as before)
    <key>.meta.json, .txt   passed through (video2dataset metadata and caption), when present, as UTF-8:
                            decoded as the loader decodes them (``loaders.transcripts.decode_text``: a cp1252
                            member is read as such, with its warning; another encoding refuses the sample)

JSON is written with sorted keys and no spaces, so equal inputs give equal bytes in every process.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Literal, Optional

from avalign.preprocess._inputs import InputSample, read_members
from avalign.preprocess._reencode import reencode_mp4
from avcore import canonical_json, dump_align_json
from loaders.media import DEFAULT_MAX_PIXELS
from loaders.errors import SampleError, sample_error
from avalign._measure import count_words

logger = logging.getLogger(__name__)

__all__ = ["SampleOptions", "dumps", "process_sample", "run_config"]

Reencode = Literal["mp4"]
_REENCODE_MARGIN_SECONDS = 10.0
"""The re-encode's watchdog waits this much longer than ffmpeg's own limit, so that ffmpeg is stopped by it."""
FORMAT_VERSION = 1
"""Version of the output layout; bumped when members or their schema change."""


@dataclass(frozen=True)
class SampleOptions:
    """Options that decide a sample's output (all but ``max_pixels``, ``max_duration_seconds`` and
    ``decoder_threads`` go into ``align.json``'s config)."""

    sample_rate: int = 16000
    """Rate for sample indices and ``num_samples`` in the record (Hz)."""
    reencode: Optional[Reencode] = None
    """None: keep the media bytes; ``"mp4"``: H.264 in MP4 on the source's clock, audio copied (AAC, AC-3, E-AC-3)
    or encoded to AAC, bit-exact flags, one thread (:mod:`avalign.preprocess._reencode`)."""
    timeout_seconds: Optional[float] = 300.0
    """Give up on one sample's decode + measure after this long (watchdog child); None: no limit."""
    seed: int = 0
    """Recorded in the config; the estimators are deterministic and draw no random numbers."""
    max_duration_seconds: Optional[float] = None
    """Skip media spanning longer than this with reason ``too_large`` (None: no limit); like ``max_pixels``,
    recorded in ``state.jsonl``'s options (when set), not in ``align.json``."""
    max_pixels: int = DEFAULT_MAX_PIXELS
    """Skip media whose frames are larger (width × height) with reason ``too_large``. It decides which samples
    are written, not their bytes: recorded in ``state.jsonl``'s options, not in ``align.json``."""
    decoder_threads: int = 1
    """FFmpeg threads per video decode (0: FFmpeg's choice, one per core). It changes how fast a sample is decoded,
    never its frames or timestamps, so it is recorded nowhere; ``preprocess`` gives each worker its share of the
    cores (``loaders.pipeline.worker_decoder_threads``)."""


dumps = canonical_json
"""Canonical JSON bytes (``avcore.canonical_json``), for every member preprocess writes."""


def run_config(options: SampleOptions) -> dict:
    """The ``config`` block of ``align.json``: everything besides the input that decides the output."""
    import av
    import numpy
    import soxr
    import torch

    import avalign

    codec = av.library_versions.get("libavcodec", ())
    return {
        "format_version": FORMAT_VERSION,
        "seed": options.seed,
        "fps": None,  # every frame is decoded (no fps subsampling)
        "sample_rate": options.sample_rate,
        "reencode": options.reencode,
        "methods": {"video_pts": "best_effort", "av": "estimate_av_offset", "text": "estimate_text_offset",
                    "resampler": "soxr_hq"},
        "avalign": avalign.__version__,
        "libraries": {"av": av.__version__, "libavcodec": ".".join(map(str, codec)), "numpy": numpy.__version__,
                      "soxr": soxr.__version__, "torch": torch.__version__.split("+")[0]},
    }


def _reencode(media: bytes, label: str, timeout_seconds: Optional[float]):
    return reencode_mp4(media, label=label, timeout_seconds=timeout_seconds)


def _transcript_json(transcript) -> dict:
    def word(w) -> dict:
        out = {"text": w.text, "start_seconds": w.start_seconds, "stop_seconds": w.stop_seconds}
        if w.score is not None:
            out["score"] = w.score
        return out

    def span(s) -> dict:
        out = {"text": s.text, "start_seconds": s.start_seconds, "stop_seconds": s.stop_seconds,
               "words": [word(w) for w in s.words]}
        if s.words_derived:  # placed by forced alignment inside the caption, not the transcript's stamps
            out["words_derived"] = True
        return out

    return {"spans": [span(s) for s in transcript.spans]}


def _analyse(media: bytes, transcript_bytes: Optional[bytes], *, media_name: str, transcript_name: str, sample_rate: int,
             max_pixels: int = DEFAULT_MAX_PIXELS, max_duration_seconds: Optional[float] = None,
             decoder_threads: int = 1, audio_media: Optional[bytes] = None, audio_name: str = "") -> dict:
    """Decode and measure (runs in the watchdog child when there is a time limit). torch and BLAS run one thread
    (the estimators' sums in one order); the video decoder runs ``decoder_threads`` (its frames do not depend on
    them). ``audio_media``: the sample's audio member (``KEY.m4a``, ``KEY.wav``…), measured when the media has no
    audio stream, the audio the loader then yields."""
    import torch

    import loaders
    from avalign._measure import measure_media

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        try:
            from threadpoolctl import threadpool_limits
        except ImportError:  # pragma: no cover - threadpoolctl ships with the dependencies
            limits = None
        else:
            limits = threadpool_limits(1)
        try:
            transcript = None
            if transcript_bytes is not None:
                transcript = loaders.read_transcript(transcript_bytes, name=transcript_name)
            measured = measure_media(media, transcript, name=media_name, sample_rate=sample_rate, errors_as_skips=True,
                                     audio_media=audio_media, audio_name=audio_name,
                                     decode_options=dict(num_threads=decoder_threads, max_pixels=max_pixels,
                                                         max_duration_seconds=max_duration_seconds))
            record, aligned, index = measured.record, measured.aligned, measured.frame_index
            if transcript is not None:  # num_words: the transcript's words (count_words), not align.json's placed words
                num_words = count_words(transcript)
                transcript = aligned.transcript  # with caption words (forced alignment): loading need not redo it
        finally:
            if limits is not None:
                limits.unregister()
    finally:
        torch.set_num_threads(threads)
    words = num_words if transcript is not None else 0
    return {
        "record": record,
        "frames": index.to_json() if index is not None else None,
        "transcript": _transcript_json(transcript) if transcript is not None else None,
        "num_words": words,
    }


_TEXT_MEMBERS = {"txt": "caption", "caption": "caption", "meta.json": "metadata"}
"""Passed-through members that are text (output extension → what ``decode_text`` calls it): written as UTF-8."""


def _as_utf8(ext: str, blob: bytes, *, name: str) -> bytes:
    """A passed-through member's bytes for the output: a text member (:data:`_TEXT_MEMBERS`) decoded by
    ``decode_text`` (UTF-8, or UTF-16/32 with a BOM; Western European cp1252 with a warning naming ``name``, the
    input member) and written as UTF-8 without a BOM; any other member (``KEY.m4a``) as it is.

    Raises:
        TranscriptError: ``decode_text`` refuses the bytes (another legacy encoding, broken UTF-8, binary): the
            message names ``name``, the byte offset and a hint (``iconv``).
    """
    from loaders.transcripts import decode_text

    what = _TEXT_MEMBERS.get(ext)
    return blob if what is None else decode_text(bytes(blob), name, what=what).encode("utf-8")


def _audio_member(sample: InputSample, blobs: list[bytes]) -> dict:
    """``audio_media`` / ``audio_name`` for :func:`_analyse`: the sample's passed-through audio member (at most one:
    ``avalign.preprocess._inputs`` keeps the first of ``AUDIO_EXTENSIONS`` beside a video), else empty."""
    from avcore import AUDIO_EXTENSIONS

    for (ext, loc), blob in zip(sample.extras, blobs):
        if ext in AUDIO_EXTENSIONS:
            return dict(audio_media=blob, audio_name=f"{loc.path}:{loc.member}" if loc.member else loc.path)
    return {}


def process_sample(sample: InputSample, options: SampleOptions, config: dict) -> tuple[dict[str, bytes], dict]:
    """Output members (``<key>.<ext>`` → bytes) and the manifest row of one sample.

    Raises:
        SampleError: the sample cannot be used; ``reason`` (``loaders.errors.REASONS``) is ``decode``,
            ``missing_audio``, ``too_large``, ``transcript``, ``timeout``, ``read`` or ``error``, and the
            message names the input.
    """
    from loaders.media import call_with_timeout
    from loaders.pipeline import caption_text

    shard = sample.media.path if sample.media.member else ""
    try:
        locators = [sample.media] + ([sample.transcript] if sample.transcript else []) + [loc for _, loc in sample.extras]
        data = read_members(locators)
    except Exception as e:  # noqa: BLE001 - I/O errors reading the input back
        error = sample_error(e, key=sample.key, shard=shard, stage="read")
        raise SampleError(f"{sample.source}: {error.message}", shard=shard, key=sample.key, reason=error.reason) from e
    try:
        media = data[0]
        transcript_bytes = data[1] if sample.transcript else None
        # Text members (meta.json, txt) are written as UTF-8 (a cp1252 one warns here, once, naming its input).
        extras = [_as_utf8(ext, blob, name=f"{loc.path}:{loc.member}" if loc.member else loc.path)
                  for (ext, loc), blob in zip(sample.extras, data[1 + bool(sample.transcript):])]
        # The caption members pass through: refuse here what the loader would refuse at every epoch.
        caption_text({"__key__": sample.key, **{ext: blob for (ext, _), blob in zip(sample.extras, extras)}})
        reencoded = None
        if options.reencode == "mp4" and options.timeout_seconds:  # PyAV probes the source: in the watchdog child
            reencoded = call_with_timeout(_reencode, media, sample.source, options.timeout_seconds,
                                          timeout_seconds=options.timeout_seconds + _REENCODE_MARGIN_SECONDS,
                                          label=sample.source)
        elif options.reencode == "mp4":
            reencoded = _reencode(media, sample.source, None)
        if reencoded is not None:
            media = reencoded.data
        media_ext = "mp4" if options.reencode == "mp4" else sample.media_ext
        kwargs = dict(media_name=sample.source, transcript_name=f"{sample.key}.{sample.transcript_format}",
                      sample_rate=options.sample_rate, max_pixels=options.max_pixels,
                      max_duration_seconds=options.max_duration_seconds, decoder_threads=options.decoder_threads,
                      **_audio_member(sample, extras))
        if options.timeout_seconds:
            result = call_with_timeout(_analyse, media, transcript_bytes, timeout_seconds=options.timeout_seconds,
                                       label=sample.source, **kwargs)
        else:
            result = _analyse(media, transcript_bytes, **kwargs)
        record = result["record"]
        record["key"] = sample.key
        record["media"] = f"{sample.key}.{media_ext}"
        record["transcript"] = f"{sample.key}.transcript.json" if result["transcript"] is not None else None
        record["config"] = dict(config, methods=dict(config["methods"], av=record["av_method"], text=record["text_method"]))
        if reencoded is not None:
            record["reencode"] = reencoded.record()
        members = {f"{sample.key}.{media_ext}": media, f"{sample.key}.align.json": dump_align_json(record, key=sample.key)}
        if result["frames"] is not None:
            members[f"{sample.key}.frames.json"] = dumps(result["frames"])
        if result["transcript"] is not None:
            members[f"{sample.key}.transcript.json"] = dumps(result["transcript"])
        for (ext, _), blob in zip(sample.extras, extras):
            members[f"{sample.key}.{ext}"] = blob
    except Exception as e:  # anything an input can cause becomes a typed, named skip (loaders.errors.sample_error)
        error = sample_error(e, key=sample.key, shard=shard, stage="sample")
        if error.reason == "error":
            logger.error("%s: unexpected %s while processing", sample.source, type(e).__name__, exc_info=True)
        message = error.message if sample.source in error.message else f"{sample.source}: {error.message}"
        raise SampleError(message, shard=error.shard, key=error.key, reason=error.reason) from e
    aligned = record["aligned"]
    row = {
        "key": sample.key,
        "duration": round(aligned["stop_seconds"] - aligned["start_seconds"], 6),
        "num_frames": record["video"]["num_frames"] if record["video"] else 0,
        "num_samples": aligned["num_samples"],
        "num_words": result["num_words"],
        "media_ext": media_ext,
        "source": sample.source,  # the file or shard member: keys are cleaned ('clip één' -> 'clip___n')
    }
    return members, row
