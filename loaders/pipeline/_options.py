"""Options of the training pipeline: one frozen record per job, validated once, picklable for workers.

``SampleOptions`` is what turns one tar sample into batch items (decode, align, window, tokenize, check the
budgets); ``check_*`` helpers raise ``ValueError`` naming the option, the value, the valid range and a hint.
"""
from __future__ import annotations

import logging
import math
import operator
import os
from dataclasses import dataclass
from typing import Any, Literal, Optional, Union

import torch

from loaders._pipe import DEFAULT_PIPE_STALL_SECONDS
from loaders._video import DEFAULT_MAX_PIXELS
from loaders.pipeline._collate import Collator
from loaders.pipeline._tail import TAIL_CHOICES, check_tail_multiple

logger = logging.getLogger(__name__)

__all__ = ["AUTO", "MissingAudio", "OnError", "ResolvedOptions", "SampleOptions", "WindowSeconds", "check_choice",
           "check_counter", "check_window_seconds", "resolve_options"]

OnError = Literal["skip", "raise"]
MissingAudio = Literal["empty", "silence"]
AUTO = "auto"
WindowSeconds = Union[float, None, Literal["auto"]]
"""``float``: cut every clip longer than this; ``"auto"``: cut only clips over a budget, into the fewest equal
windows that fit; ``None``: never cut (an item over a budget is skipped as ``over_budget``)."""


@dataclass(frozen=True)
class SampleOptions:
    """What a worker needs to turn one tar sample into batch items (picklable: workers receive a copy)."""

    sample_rate: int
    """Audio rate of the items."""
    limits: tuple[int, int, int, int, int, int]
    """``(frames, samples, tokens, items, words, segments)`` a batch holds at most: an item over any of them is
    windowed (``window_seconds="auto"``) or skipped as ``over_budget``."""
    fps: Optional[float] = None
    """Sample frames at this rate; None keeps every frame."""
    window_seconds: WindowSeconds = AUTO
    """See :data:`WindowSeconds`."""
    estimate: bool = False
    """Estimate A/V and text offsets for samples without ``align.json``."""
    on_error: OnError = "skip"
    """``skip`` a bad sample (counted) or ``raise`` :class:`~loaders.errors.SampleError`."""
    decode_size: Optional[tuple[int, int]] = None
    """``(height, width)`` to scale frames to while decoding; None keeps the stream's size."""
    max_pixels: int = 3840 * 2160
    """Media with frames over this many pixels are skipped (``too_large``) before decoding."""
    tokenizer: Any = None
    """A ``tokenizers.Tokenizer``, a Hugging Face fast tokenizer, or a callable ``text -> (ids, offsets)``;
    None counts whitespace-separated tokens and carries no ids."""
    missing_audio: MissingAudio = "empty"
    """A video-only clip gets an ``empty`` audio span (0 samples) or ``silence`` over its whole duration."""
    max_duration_seconds: Optional[float] = None
    """Skip (``too_large``) media whose video or audio spans longer than this, checked before it is all decoded."""
    sample_timeout_seconds: Optional[float] = None
    """Wall-clock limit for one sample (decode + align + tokenize); over it the sample is skipped (``timeout``).
    Enforced with ``SIGALRM``, so only in a process's main thread (loader workers and DataLoader workers are)."""
    pipe_stall_seconds: float = DEFAULT_PIPE_STALL_SECONDS
    """A ``pipe:`` shard's command that sends no byte for this long is killed and the shard skipped."""
    decoder_threads: int = 0
    """FFmpeg threads per video decode; 0 lets FFmpeg choose (one per core). Loader workers get their share of the
    cores instead (:func:`worker_decoder_threads`)."""



def _check_device(device) -> None:
    """Refuse a CUDA ``device`` that torch cannot reach, naming it (torch's own error names no option)."""
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError) as error:
        raise ValueError(f"device must be a torch device such as 'cpu' or 'cuda:0', got {device!r} ({error})") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={device!r}, but torch sees no CUDA device (torch.cuda.is_available() is False): "
                         "build batches with device='cpu' and move them with batch.to(...) where a GPU is.")

def worker_decoder_threads(num_workers: int) -> int:
    """FFmpeg threads per video decode inside one of ``num_workers`` loader workers: the cores this process may
    use, shared among the workers, at least 1. The workers already decode in parallel; FFmpeg's own threads on top
    of them cost CPU without adding throughput (2 workers on 2 cores: BENCHMARKS.md, "Decoder threads in loader
    workers")."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, cores // max(1, int(num_workers)))


def check_choice(name: str, value: object, choices: tuple) -> None:
    """Raises ValueError unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value!r}.")


def check_counter(name: str, value: object, *, below: Optional[int] = None) -> int:
    """``value`` (a seed or an epoch) as a non-negative int; numpy ints pass. Raises TypeError for a float, a string
    or None (``1.5`` used to become seed 1), ValueError when negative (``numpy``'s "expected non-negative integer",
    naming nothing, used to come from deep in an epoch) or not below ``below``."""
    try:
        number = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int (numpy ints too), got {value!r} ({type(value).__name__}).") from None
    if isinstance(value, bool) or number < 0 or (below is not None and number >= below):
        limit = f", below {below}" if below is not None else ""
        raise ValueError(f"{name} must be a non-negative int{limit}, got {name} = {value!r}; try 0.")
    return int(number)


def _is_int(value: object) -> bool:
    """An int or a numpy int (anything ``operator.index`` takes), not a float."""
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def check_window_seconds(window_seconds: object) -> None:
    """Raises ValueError unless ``window_seconds`` is ``"auto"``, None or a positive finite number."""
    if window_seconds is None or window_seconds == AUTO:
        return
    if isinstance(window_seconds, bool) or not isinstance(window_seconds, (int, float)) or not (
        math.isfinite(window_seconds) and window_seconds > 0
    ):
        raise ValueError(f"window_seconds must be 'auto', None or a positive number of seconds, got {window_seconds = !r}; "
                         "try 10.0.")


@dataclass(frozen=True)
class ResolvedOptions:
    """The options of ``make_dataset`` checked and turned into the parts that use them."""

    sample: SampleOptions
    """What turns a sample into items (sent to workers)."""
    collator: Any
    """The :class:`~loaders.pipeline.Collator` (fixed capacities, device)."""
    rank: int
    world_size: int


def resolve_options(o: dict[str, Any]) -> ResolvedOptions:
    """Checks ``make_dataset``'s options (``o``: every option by name) and builds the sample options and collator.

    Raises:
        ValueError: a bad option; the message names it, the value, the valid range and a hint.
    """
    check_choice("on_error", o["on_error"], ("skip", "raise"))
    check_choice("even_batches", o["even_batches"], ("drop", "pad"))
    check_choice("missing_audio", o["missing_audio"], ("empty", "silence"))
    check_window_seconds(o["window_seconds"])
    check_choice("tail", o["tail"], TAIL_CHOICES)
    check_tail_multiple(o["tail_multiple"])
    if check_counter("buffer_size", o["buffer_size"]) < 1:
        raise ValueError(f"buffer_size must be >= 1, got {o['buffer_size']!r}; try 64.")
    if o["fps"] is not None and not o["fps"] > 0:
        raise ValueError(f"fps must be > 0 or None, got {o['fps']!r}.")
    if isinstance(o["sample_rate"], bool) or not (_is_int(o["sample_rate"]) and o["sample_rate"] > 0):
        raise ValueError(f"sample_rate must be a positive int, got {o['sample_rate']!r}; try 16000.")
    o = {**o, "sample_rate": int(o["sample_rate"])}  # a numpy int becomes a plain one for every part
    if not all(_is_int(b) for b in o["budgets"]):  # 300.7 frames used to become 300
        raise TypeError(f"budgets must be 3 positive ints (frames, samples, tokens), got {o['budgets']!r}.")
    budget_row = tuple(int(b) for b in o["budgets"])
    if len(budget_row) != 3 or min(budget_row) <= 0:
        raise ValueError(f"budgets must be 3 positive ints (frames, samples, tokens), got {o['budgets']!r}.")
    max_pixels = o["max_pixels"]
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels <= 0:
        raise ValueError(f"max_pixels must be a positive int (width x height), got {max_pixels!r}; try {DEFAULT_MAX_PIXELS}.")
    size = o["frame_size"]
    limit = max(max_pixels, DEFAULT_MAX_PIXELS)  # output frames up to 3840x2160 whatever the sources' limit
    if len(size) == 2 and all(isinstance(v, int) for v in size) and size[0] * size[1] > limit:
        raise ValueError(f"frame_size = {tuple(size)} is {size[0] * size[1]} pixels a frame, over {limit} (3840x2160, "
                         "or max_pixels when larger): every sample would fail to decode (as 'decode' skips); try "
                         "(224, 224), or raise max_pixels.")
    max_duration = o.get("max_duration_seconds")
    if max_duration is not None and not (isinstance(max_duration, (int, float)) and max_duration > 0):
        raise ValueError(f"max_duration_seconds must be > 0 or None, got {max_duration!r}; try 600.")
    timeout = o["sample_timeout_seconds"]
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
        raise ValueError(f"sample_timeout_seconds must be > 0 or None, got {timeout!r}; try 60.")
    stall = o.get("pipe_stall_seconds", DEFAULT_PIPE_STALL_SECONDS)
    if isinstance(stall, bool) or not isinstance(stall, (int, float)) or not (math.isfinite(stall) and stall > 0):
        raise ValueError(f"pipe_stall_seconds must be a positive number of seconds, got {stall!r}; try 300.")
    per_epoch = o.get("batches_per_epoch")
    if per_epoch is not None and (isinstance(per_epoch, bool) or not isinstance(per_epoch, int) or per_epoch < 1):
        raise ValueError(f"batches_per_epoch must be a positive int or None, got {per_epoch!r}.")
    rank, world_size = o["rank"], o["world_size"]
    if rank is None or world_size is None:
        initialised = torch.distributed.is_available() and torch.distributed.is_initialized()
        rank = (torch.distributed.get_rank() if initialised else 0) if rank is None else rank
        world_size = (torch.distributed.get_world_size() if initialised else 1) if world_size is None else world_size
    rank, world_size = check_counter("rank", rank), check_counter("world_size", world_size)  # 0.5 used to become 0
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, {world_size}), got {rank = }.")
    tokenizer = o["tokenizer"]
    if tokenizer is not None and (isinstance(tokenizer, (str, bytes, os.PathLike))  # runs none of its code
                                  or not (callable(tokenizer) or hasattr(tokenizer, "encode"))):
        raise TypeError(f"tokenizer must be a tokenizers.Tokenizer, a fast Hugging Face tokenizer or a callable text -> "
                        f"(ids, offsets), got {type(tokenizer).__name__} {tokenizer!r:.60}; a model name is not one: "
                        "pass AutoTokenizer.from_pretrained(name). (A tokenizer that fails on text is found by a "
                        "probe in the decoding process, before its first sample.)")
    _check_device(o["device"])
    collator = Collator(budget_row, frame_size=o["frame_size"], device=o["device"], log_mel=o["log_mel"],
                        sample_rate=o["sample_rate"], max_items=o["max_items"], max_words=o["max_words"],
                        max_segments=o["max_segments"], pad_token_id=o["pad_token_id"],
                        with_token_ids=o["tokenizer"] is not None)
    frame_size = (int(o["frame_size"][0]), int(o["frame_size"][1]))
    options = SampleOptions(
        sample_rate=o["sample_rate"], limits=budget_row + (collator.max_items, collator.max_words, collator.max_segments),
        fps=o["fps"], window_seconds=o["window_seconds"], estimate=bool(o["estimate"]), on_error=o["on_error"],
        decode_size=frame_size if o["resize_in_decoder"] else None, max_pixels=max_pixels, tokenizer=o["tokenizer"],
        missing_audio=o["missing_audio"], sample_timeout_seconds=timeout, max_duration_seconds=max_duration,
        pipe_stall_seconds=float(stall))
    return ResolvedOptions(sample=options, collator=collator, rank=int(rank), world_size=int(world_size))
