"""Sample → items: one tar sample becomes its batch items (decode → align → window → tokenize → budget check).

One rule for failures: ANY exception raised while decoding, parsing, aligning or tokenizing one sample
becomes a :class:`~loaders.errors.SampleError` with the sample's shard, key and a reason from
``loaders.errors.REASONS`` (``decode``, ``missing_video``, ``too_large``, ``transcript``, ``align_json``,
``align``, ``over_budget``, ``timeout``, ``error`` for anything unforeseen). The shard loop counts it as a
named skip and goes on with the next sample; only failures of the loader itself end an epoch.

Missing modalities: media without a video stream (or an audio-only member: ``flac``, ``wav``, ``mp3``, ``m4a``…)
load with no frames (``video=None``); media without an audio stream load with an empty audio span (0 samples)
or, with ``missing_audio="silence"``, with silence over the clip. A sample with no media member at all is
skipped (``missing_video``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import signal
import threading
from collections.abc import Iterator
from typing import Any, Optional

import torch

from avcore import (
    ALIGN_JSON,
    CAPTION_EXTENSIONS,
    MEDIA_EXTENSIONS,
    TRANSCRIPT_EXTENSIONS,
    AudioClip,
    BatchItem,
    DecodeError,
    SampleError,
    clock_values,
    read_align_json,
    sample_error,
    sample_media,
)
from loaders._audio import read_audio
from loaders._index import FrameIndex
from loaders._transcripts import pick_transcript, read_transcript, transcript_format_of
from loaders._video import read_video
from loaders.pipeline._budgets import first_over_budget
from loaders.pipeline._options import AUTO, SampleOptions
from loaders.pipeline._text import _record_holding_a_transcript, caption_text, tokenize_item, with_caption
from loaders.pipeline._window import split_windows

logger = logging.getLogger(__name__)

__all__ = ["pack_lengths", "sample_items"]



_TEXT_MEMBERS = frozenset(TRANSCRIPT_EXTENSIONS) | frozenset(CAPTION_EXTENSIONS) | {ALIGN_JSON}
"""Members that carry a sample's text (or its clock values) but no media."""

_MAX_TEXT_WINDOWS_FACTOR = 8
"""``window_seconds="auto"`` cuts a clip into more windows than its frames and samples need only for its text, and
at most this many times more; denser text (e.g. a 10^6-cue SRT on a short clip) is skipped as ``over_budget``
without cutting (cutting costs windows x spans)."""


_MIN_AUTO_WINDOW_SECONDS = 0.010
"""``window_seconds="auto"`` never cuts windows shorter than this: a shorter window holds no log-mel hop (the
collator's ``hop_length`` of 160 samples at 16 kHz), and a clip would become thousands of items
(``budgets=(300, 1, 512)`` made 32,000 one-sample windows of a 2 s clip and retried 3 more counts: minutes per
sample). Such a clip is skipped as ``over_budget``, uncut, with a hint to raise the budgets."""


class _SampleTimeout(BaseException):
    """Raised inside a sample by the SIGALRM handler of :func:`_time_limit`; a ``BaseException`` (as
    ``KeyboardInterrupt``) so that the decoders' ``except Exception`` handlers do not turn it into a decode error."""


@contextlib.contextmanager
def _time_limit(seconds: Optional[float]) -> Iterator[None]:
    """Raises :class:`_SampleTimeout` in the body after ``seconds`` (wall clock); a no-op for None or off the
    main thread (signals are delivered to the main thread only)."""
    if seconds is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: Any) -> None:
        raise _SampleTimeout()

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, float(seconds))
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


def sample_items(sample: dict, options: SampleOptions) -> list[BatchItem]:
    """The batch items of one tar sample (one, or its windows ``key@0``, ``key@1``…), tokens included.

    Raises:
        SampleError: the sample cannot be used; ``reason`` says why (see the module docstring).
    """
    key, url = sample.get("__key__", ""), sample.get("__url__", "")
    try:
        with _time_limit(options.sample_timeout_seconds):
            return _items(sample, options, key)
    except SampleError:
        raise
    except _SampleTimeout:
        raise SampleError(f"the sample ran past sample_timeout_seconds={options.sample_timeout_seconds}",
                          shard=url, key=key, reason="timeout") from None
    except MemoryError as error:
        raise SampleError(f"out of memory ({error})", shard=url, key=key, reason="too_large") from None
    except Exception as error:  # noqa: BLE001 - the one rule: a sample's failure is a named skip
        logger.debug("sample %s failed", key, exc_info=True)
        raise sample_error(error, shard=url, key=key, stage=getattr(error, "_avalign_stage", "sample")) from None


def _staged(stage: str, error: BaseException) -> BaseException:
    """Tags an exception with the stage it came from (its default reason)."""
    try:
        error._avalign_stage = stage  # type: ignore[attr-defined]
    except AttributeError:  # built-in exceptions without a __dict__: reason falls back to "error"
        pass
    return error


def _items(sample: dict, options: SampleOptions, key: str) -> list[BatchItem]:
    url = sample.get("__url__", "")
    media_ext, audio_ext = sample_media(sample)
    if media_ext is None:
        members = sorted(k for k in sample if not k.startswith("__"))
        text_only = bool(members) and all(m.lower() in _TEXT_MEMBERS for m in members)
        hint = ("; a transcript or caption alone: is its media in another shard? a key's members must be adjacent in "
                "one shard" if text_only else "")
        dotted = [m for m in members if "." in m and m.rsplit(".", 1)[1].lower() in MEDIA_EXTENSIONS]
        if dotted:  # 'my.clip.mp4' is member 'clip.mp4' of key 'my'
            whole, renamed = f"{key}.{dotted[0]}", f"{key}_{dotted[0]}"
            hint = (f"; {dotted[0]!r} is media under a key with a dot in it: a tar member's key ends at the first dot "
                    f"of its file name (webdataset's rule), so {whole!r} is member {dotted[0]!r} of key {key!r}: "
                    f"write the shard without dots in keys (e.g. {renamed!r})")
        raise SampleError(f"no media member (have {members}; expected one of {list(MEDIA_EXTENSIONS)}){hint}",
                          shard=url, key=key, reason="missing_video")
    given = _given_values(sample, url, key)
    video, audio, decode_errors = _decode(sample[media_ext], media_ext, key, options, _frame_index(sample, key))
    if audio is None and audio_ext is not None:  # video2dataset: KEY.mp4 (a video-only stream) + KEY.m4a (its audio)
        _, audio, more_errors = _decode(sample[audio_ext], audio_ext, key, options, None, with_video=False)
        decode_errors += more_errors
    try:
        transcript_ext = pick_transcript(sample, sample.__getitem__)  # a video2dataset key.json (metadata) is not one
        transcript = _transcript(sample, transcript_ext, key)
        caption = (caption_text(sample) if transcript is None
                   else _caption_beside_transcript({k: v for k, v in sample.items() if k != transcript_ext
                                                    or _record_holding_a_transcript(v)}, key))
    except Exception as error:
        raise _staged("transcript", error)
    kwargs: dict[str, Any]
    if given:
        kwargs = dict(estimate=False, **{name: float(value or 0.0) for name, value in given.items()})
    else:
        kwargs = dict(estimate=options.estimate and audio is not None)
        if not options.estimate and audio is not None:
            _warn_unaligned(url, key, has_text=transcript is not None)
    empty_audio = audio is None
    if empty_audio:  # video-only: align on a 0-sample track at the video's start
        start = float(video.pts_seconds[0]) if video is not None and video.num_frames else 0.0
        audio = AudioClip(torch.zeros((1, 0), dtype=torch.float32), options.sample_rate, start)
    try:
        from aligner import align

        aligned = align(video, audio, transcript, sample_rate=options.sample_rate, key=key, **kwargs)
    except Exception as error:
        raise _staged("align", error)
    if caption is not None and transcript is None:
        aligned = with_caption(aligned, caption)
    if empty_audio and options.missing_audio == "empty":
        aligned = _without_audio(aligned)
    items = _windowed_items(aligned, options)
    if caption is not None:
        items = [dataclasses.replace(item, caption=caption) for item in items]
    _check_budgets(items, options, url)
    if decode_errors:
        items[0] = dataclasses.replace(items[0], decode_errors=decode_errors)
    return items


_warned_unaligned = False


def _warn_unaligned(url: str, key: str, *, has_text: bool) -> None:
    """Once per process: a sample with audio, no ``align.json`` and ``estimate=False`` is loaded with its A/V offset,
    drift and transcript offset all 0, which on raw shards is rarely true (AAC priming, late ASR stamps: tens to
    hundreds of ms). Said so that a raw shard read with the defaults is not silently unaligned."""
    global _warned_unaligned
    if _warned_unaligned:
        return
    _warned_unaligned = True
    what = "A/V offset, drift and transcript offset" if has_text else "A/V offset and drift"
    logger.warning(
        "%s in %s has no %s and estimate=False: its %s are taken as 0 (no correction). On raw shards run "
        "`avalign preprocess` once (it writes each clip's measured offsets into %s), or pass estimate=True (each clip "
        "measured as it is loaded, every epoch). (Said once per process; other such samples are loaded the same way.)",
        key, url or "the input", ALIGN_JSON, what, ALIGN_JSON)


def _given_values(sample: dict, url: str, key: str) -> dict[str, Optional[float]]:
    if ALIGN_JSON not in sample:
        return {}
    return clock_values(read_align_json(sample[ALIGN_JSON], key=key, shard=url))


def _frame_index(sample: dict, key: str) -> Optional[FrameIndex]:
    if "frames.json" not in sample:  # written by `avalign preprocess`: seek without scanning the file
        return None
    try:
        return FrameIndex.from_json(json.loads(sample["frames.json"]))
    except (ValueError, KeyError, TypeError, IndexError) as error:
        logger.warning("%s: ignoring unreadable frames.json (%s); the file is scanned instead", key, error)
        return None


def _decode(media: bytes, ext: str, key: str, options: SampleOptions, index: Optional[FrameIndex], *,
            with_video: bool = True) -> tuple:
    """``(video or None, audio or None, decode_errors)``; at least one of video and audio is present (the audio, with
    ``with_video=False``: an audio member read for the audio only)."""
    name = f"{key}.{ext}"
    video = audio = None
    try:
        if with_video:
            video = read_video(media, fps=options.fps, frame_size=options.decode_size, frame_index=index,
                               num_threads=options.decoder_threads, max_pixels=options.max_pixels,
                               max_duration_seconds=options.max_duration_seconds, name=name)
    except DecodeError as error:
        if error.reason != "missing_video":
            raise
    except Exception as error:
        raise _staged("decode", error)
    try:
        audio = read_audio(media, max_duration_seconds=options.max_duration_seconds, name=name)
    except DecodeError as error:
        if error.reason != "missing_audio" or video is None:
            raise
    except Exception as error:
        raise _staged("decode", error)
    decode_errors = int(getattr(video.metadata, "decode_errors", 0) if video is not None else 0)
    decode_errors += int(getattr(audio, "decode_errors", 0) if audio is not None else 0)
    return video, audio, decode_errors


def _transcript(sample: dict, ext: Optional[str], key: str):
    if ext is None:
        return None
    return read_transcript(sample[ext], format=transcript_format_of(ext), name=f"{key}.{ext}")


def _caption_beside_transcript(sample: dict, key: str) -> Optional[str]:
    """The clip-level caption of a sample that has a transcript (:func:`~loaders.pipeline._text.caption_text` of
    ``sample`` without the transcript's member), passed through as ``BatchItem.caption`` (never aligned, not a segment:
    the transcript's spans are the item's text). One that cannot be read (binary, too large) is left out with a
    warning: the sample keeps its transcript, as it did when such a caption was not read at all."""
    try:
        return caption_text(sample)
    except ValueError as error:  # TranscriptError: a broken KEY.txt beside a readable transcript
        logger.warning("%s: caption beside the transcript left out: %s", key, error)
        return None


def _without_audio(aligned: Any) -> Any:
    """The aligned sample with a 0-sample audio track; spans keep their frames, their sample ranges are empty."""
    audio = dataclasses.replace(aligned.audio, samples=aligned.audio.samples[:, :0].contiguous())

    def empty(spans: tuple) -> tuple:
        return tuple(dataclasses.replace(s, sample_start=0, sample_stop=0) for s in spans)

    return dataclasses.replace(aligned, audio=audio, words=empty(aligned.words), segments=empty(aligned.segments))


def pack_lengths(item: BatchItem) -> tuple[int, ...]:
    """``(frames, samples, tokens, items, words, segments)`` of one item: the packer's columns."""
    sample = item.sample
    num_frames = 0 if sample.video is None else sample.video.num_frames
    return (num_frames, sample.audio.num_samples, item.tokens.num_tokens, 1, len(sample.words), len(sample.segments))


def _windowed_items(aligned: Any, options: SampleOptions) -> list[BatchItem]:
    """Explicit windows, or with ``"auto"`` the fewest equal windows under the limits (no cut when it fits),
    each tokenized."""
    if options.window_seconds != AUTO:
        return _split(aligned, options.window_seconds, options)
    whole = [tokenize_item(aligned, options.tokenizer)]
    over = _overshoot(whole, options)
    duration = float(aligned.stop_seconds - aligned.start_seconds)
    if over <= 1.0 or duration <= 0:
        return whole
    media_windows = max(1, math.ceil(_overshoot(whole, options, columns=(0, 1))))
    if math.ceil(over) > _MAX_TEXT_WINDOWS_FACTOR * media_windows:
        return whole  # text far denser than any window can hold (a hostile transcript): over_budget, uncut
    if _largest_unit_tokens(whole[0]) > options.limits[2]:
        return whole  # a window keeps a word or segment whole: one over the token budget fits no window, uncut
    if duration / math.ceil(over) < _MIN_AUTO_WINDOW_SECONDS:
        return whole  # windows under a log-mel hop: over_budget, uncut
    items = whole
    for count in range(math.ceil(over), math.ceil(over) + 4):  # rounding can put one frame or sample more in a window
        items = _split(aligned, duration / count, options)
        if _overshoot(items, options) <= 1.0:
            break
    return items


def _split(aligned: Any, window_seconds: float, options: SampleOptions) -> list[BatchItem]:
    """The tokenized windows of ``aligned``; when the last window, holding a frameless rest merged into it
    (:mod:`~loaders.pipeline._window`), is over a limit that the unmerged windows fit (a budget sized to exactly one
    window: 5 s at 16 kHz is 80000 samples, the merged last window of a 10.01 s clip 80160), the rest stays a window of
    its own: an item without frames, rather than the whole clip skipped as ``over_budget``."""
    windows = split_windows(aligned, window_seconds=window_seconds)
    items = _tokenized_windows(windows, options)
    if _overshoot(items, options) <= 1.0:
        return items
    unmerged = split_windows(aligned, window_seconds=window_seconds, merge_rest=False)
    if len(unmerged) == len(windows):  # no rest was merged: nothing else to try
        return items
    unmerged_items = _tokenized_windows(unmerged, options)
    return unmerged_items if _overshoot(unmerged_items, options) <= 1.0 else items


def _tokenized_windows(windows: list, options: SampleOptions) -> list[BatchItem]:
    """Each window tokenized, told which of its edges are cuts (all but the clip's own start and stop)."""
    last = len(windows) - 1
    return [tokenize_item(w, options.tokenizer, cut_edges=(i > 0, i < last)) for i, w in enumerate(windows)]


def _largest_unit_tokens(item: BatchItem) -> int:
    """The most tokens one text unit (a word, else a segment or caption) of ``item`` has: windows clip a unit's
    times, never its text, so every window that holds the unit holds all of these tokens."""
    units = item.sample.words or item.sample.segments
    return max((u.token_stop - u.token_start for u in units if u.token_start is not None and u.token_stop is not None),
               default=0)


def _overshoot(items: list[BatchItem], options: SampleOptions, columns: tuple[int, ...] = (0, 1, 2, 3, 4, 5)) -> float:
    """The largest ``length / limit`` over the items and the given columns (> 1: something does not fit)."""
    return max(pack_lengths(item)[j] / options.limits[j] for item in items for j in columns)


_LIMITS = (("frames", "budgets[0]"), ("samples", "budgets[1]"), ("tokens", "budgets[2]"), ("items", "max_items"),
           ("words", "max_words"), ("segments", "max_segments"))
"""Each column of ``SampleOptions.limits``: what it counts and the option that sets it (named by ``over_budget``)."""


def _check_budgets(items: list[BatchItem], options: SampleOptions, url: str) -> None:
    for item in items:
        lengths = pack_lengths(item)
        if first_over_budget(lengths, options.limits) is not None:
            over = [j for j, (length, limit) in enumerate(zip(lengths, options.limits)) if length > limit]
            what = ", ".join(f"{lengths[j]} {_LIMITS[j][0]} > {_LIMITS[j][1]}={options.limits[j]}" for j in over)
            names = " and ".join(_LIMITS[j][1] for j in over)
            hint = ("a clip-level text or a segment longer than the budget, or a clip that would need windows "
                    f"shorter than 10 ms, cannot be cut; raise {names}"
                    if options.window_seconds == AUTO else f"set window_seconds (or 'auto') or raise {names}")
            raise SampleError(
                f"item {item.key!r} has (frames, samples, tokens, items, words, segments) = {lengths} over the "
                f"limits {options.limits} ({what}); {hint}", shard=url, key=item.key, reason="over_budget")
