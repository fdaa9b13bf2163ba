"""Packed collate: aligned samples → one ``PackedBatch`` of fixed-capacity flat tensors per modality.

Items are laid end to end in every modality; capacities equal the packing budgets, so every batch has
the same shapes (no recompilation, a flat caching-allocator footprint)::

    frames   |<- item 0: 90 ->|<- item 1: 60 ->|<- item 2: 120 ->|<---- padding ---->|   cap_frames = 300
    cu_seqlens_frames   [0, 90, 150, 270, 270, 270, …]            (max_items + 1 entries, last value repeated)
    segment_ids_frames  0 … 0 1 … 1 2 … 2 -1 … -1
    position_ids_frames 0 … 89 0 … 59 0 … 119 0 … 0
    samples  |<- item 0: 48000 ->|<- item 1: 32000 ->|<- item 2: 64000 ->|<- pad ->|   cap_samples = 160000

Span index maps are in packed coordinates: a word with frames ``[f0, f1)`` of item ``i`` becomes
``[cu_seqlens_frames[i] + f0, cu_seqlens_frames[i] + f1)``; likewise samples, tokens. Tokens (``token_ids`` with a
tokenizer) are laid out like the other modalities, each with the packed frame and sample range of its text unit
(``token_spans``)::

    tokens   |<- item 0: 12 ->|<- item 1: 7 ->|<------- padding ------->|   cap_tokens = 512
    token_ids           101 7592 … 102 101 … 102 0 0 0 …                    (pad_token_id on padding)
    token_spans[t]      (frame_start, frame_stop, sample_start, sample_stop) of token t's word/segment, packed

On CUDA the uint8 frames and float32 audio are copied into reusable pinned staging buffers, sent with
non-blocking copies, then resized (``interpolate``, bilinear, antialias), scaled to [0, 1] and normalised
on the device. On CPU the same operations run in the same order on the host (no staging copy).
"""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Sequence
from typing import Any, Optional, Union

import numpy as np
import torch
import torch.nn.functional as F

from aligner import AlignedSample
from avcore import BatchItem
from loaders.pipeline._buffers import RecycledBuffers
from loaders.pipeline._shared_slots import SharedSlots, SlotWriter, reduce_to_slot
from loaders.pipeline._budgets import first_over_budget
from loaders.pipeline._text import tokenize_item

logger = logging.getLogger(__name__)

__all__ = ["Collator", "PackedBatch", "item_lengths"]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
"""Default per-channel mean (RGB, on [0, 1] values)."""
IMAGENET_STD = (0.229, 0.224, 0.225)
"""Default per-channel standard deviation."""
SPAN_COLUMNS = ("item", "frame_start", "frame_stop", "sample_start", "sample_stop", "token_start", "token_stop")
"""Columns of ``PackedBatch.word_spans`` / ``segment_spans``."""
TOKEN_SPAN_COLUMNS = ("frame_start", "frame_stop", "sample_start", "sample_stop")
"""Columns of ``PackedBatch.token_spans``."""
_CACHE_BLOCK_BYTES = 2 * 1024 * 1024
"""On CPU, frames are converted and normalised in blocks of about this many float32 bytes (one L2 cache's worth):
the multiply-add then reads the block from cache, not memory (0.8x the time of converting the whole batch then
normalising it: 34 vs 41 ms for 240 frames of 112x112, one thread; BENCHMARKS.md)."""


def as_batch_item(item: Union[BatchItem, AlignedSample]) -> BatchItem:
    """A :class:`BatchItem` as is; an aligned sample with its whitespace tokens (no ids)."""
    if isinstance(item, BatchItem):
        return item
    return tokenize_item(item, None)


def item_lengths(item: Union[BatchItem, AlignedSample]) -> tuple[int, int, int]:
    """``(num_frames, num_samples, num_tokens)`` of an item: the packing lengths (tokens as in :class:`TextTokens`)."""
    item = as_batch_item(item)
    num_frames = 0 if item.sample.video is None else item.sample.video.num_frames
    return int(num_frames), int(item.sample.audio.num_samples), item.tokens.num_tokens


@dataclasses.dataclass(frozen=True)
class PackedBatch:
    """Several aligned samples packed into flat, fixed-capacity tensors (one per modality).

    Shapes are fixed by the budgets (``cap_frames``, ``cap_samples``, ``cap_tokens``) and the collator's
    ``max_items`` / ``max_words`` / ``max_segments``; all index tensors are int32 except the span maps (int64).
    One exception: with ``tail="trim"`` the last, partly filled batch of a stream has smaller ``cap_frames`` /
    ``cap_samples`` / ``cap_tokens`` (what it holds, rounded up: ``loaders.pipeline._tail``).
    """

    frames: torch.Tensor
    """float32 ``[cap_frames, 3, H, W]``: frames resized to ``frame_size``, scaled to [0, 1], normalised
    with the collator's mean/std; zeros on padding."""
    audio: torch.Tensor
    """float32 ``[cap_samples]``: mono audio on the video clock at the loader's sample rate; zeros on padding."""
    log_mel: Optional[torch.Tensor]
    """float32 ``[cap_hops, n_mels]`` natural-log mel energies, hop ``h`` of an item covering its samples
    ``[h·hop, h·hop + n_fft)`` (zero-padded at the item's end); None unless the collator has ``log_mel=True``."""
    cu_seqlens_frames: torch.Tensor
    """int32 ``[max_items + 1]``: item ``i`` owns frames ``[cu[i], cu[i+1])``; padded by repeating the last value."""
    cu_seqlens_samples: torch.Tensor
    """int32 ``[max_items + 1]``: the same for audio samples."""
    cu_seqlens_tokens: torch.Tensor
    """int32 ``[max_items + 1]``: the same for text tokens (the words' token ranges)."""
    cu_seqlens_hops: Optional[torch.Tensor]
    """int32 ``[max_items + 1]``: the same for log-mel hops; None without ``log_mel``."""
    position_ids_frames: torch.Tensor
    """int32 ``[cap_frames]``: index of each frame inside its item; 0 on padding."""
    position_ids_samples: torch.Tensor
    """int32 ``[cap_samples]``: index of each sample inside its item; 0 on padding."""
    position_ids_tokens: torch.Tensor
    """int32 ``[cap_tokens]``: index of each token inside its item; 0 on padding."""
    position_ids_hops: Optional[torch.Tensor]
    """int32 ``[cap_hops]``: index of each hop inside its item; None without ``log_mel``."""
    segment_ids_frames: torch.Tensor
    """int32 ``[cap_frames]``: item index of each frame; -1 on padding."""
    segment_ids_samples: torch.Tensor
    """int32 ``[cap_samples]``: item index of each audio sample; -1 on padding."""
    segment_ids_tokens: torch.Tensor
    """int32 ``[cap_tokens]``: item index of each token; -1 on padding."""
    segment_ids_hops: Optional[torch.Tensor]
    """int32 ``[cap_hops]``: item index of each hop; -1 on padding; None without ``log_mel``."""
    word_spans: torch.Tensor
    """int64 ``[max_words, 7]``, columns :data:`SPAN_COLUMNS` (item, frame start/stop, sample start/stop,
    token start/stop) in packed coordinates, half-open; rows past ``num_words`` are -1. A word of an item
    without video has an empty frame range at the item's first packed frame."""
    segment_spans: torch.Tensor
    """int64 ``[max_segments, 7]``: transcript segments (caption lines, cues, clip-level captions), same columns
    (token columns set when the item's tokens come from its segments, i.e. it has no words; else -1);
    -1 past ``num_segments``."""
    token_ids: Optional[torch.Tensor]
    """int64 ``[cap_tokens]``: the tokenizer's ids of each item's text, laid out by ``cu_seqlens_tokens``;
    ``pad_token_id`` on padding; None without a tokenizer."""
    token_spans: torch.Tensor
    """int64 ``[cap_tokens, 4]``, columns :data:`TOKEN_SPAN_COLUMNS`: the packed frame and sample range of each
    token's word (or segment); a special token spans its whole item; -1 on padding."""
    word_texts: tuple[str, ...]
    """Text of each word row, in row order (``num_words`` entries)."""
    segment_texts: tuple[str, ...]
    """Text of each segment row, in row order (``num_segments`` entries)."""
    num_items: int
    """Items packed (``<= max_items``)."""
    num_words: int
    """Valid rows of ``word_spans``."""
    num_segments: int
    """Valid rows of ``segment_spans``."""
    sample_keys: tuple[str, ...]
    """Key of each item (``clip`` or ``clip@2`` for a window), in packed order."""
    padding: dict[str, float]
    """Fraction of each capacity that is padding: keys ``frames``, ``samples``, ``tokens`` (and ``hops``)."""
    caption_texts: tuple[Optional[str], ...] = ()
    """The clip-level caption of each item (``BatchItem.caption``: ``KEY.txt`` / metadata ``caption``, a description
    of the clip), in packed order (``num_items`` entries), None for an item without one. Passed through: not aligned
    and not tokenized for a sample with a transcript (its segments and words are the transcript's); a caption-only
    sample's caption is also its one segment (``segment_texts``)."""
    frame_seconds: Optional[torch.Tensor] = None
    """float32 ``[cap_frames]``: each frame's presentation time on the video timeline, in seconds after its item's
    first audio sample (``audio[cu_seqlens_samples[i]]``), so frame ``f`` of item ``i`` shows what the audio holds
    at sample ``cu_seqlens_samples[i] + frame_seconds[f] · sample_rate``; real times, not ``k / fps`` (variable frame
    rates, a first frame after the window's start); 0 on padding. None only for a batch built by hand without it."""


    def to(self, device: Union[str, torch.device], *, non_blocking: bool = False) -> "PackedBatch":
        """A copy with every tensor on ``device`` (``non_blocking`` copies from pinned memory overlap compute)."""
        return self._map_tensors(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "PackedBatch":
        """A copy with every tensor in pinned (page-locked) host memory; what ``DataLoader(pin_memory=True)`` calls."""
        return self._map_tensors(lambda t: t.pin_memory())

    def _map_tensors(self, fn) -> "PackedBatch":
        changes = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, torch.Tensor):
                changes[field.name] = fn(value)
        return dataclasses.replace(self, **changes)

    def __reduce_ex__(self, protocol: int) -> Any:
        """Built in a DataLoader worker's shared slot (``loaders.pipeline._shared_slots``): pickles as the slot and
        byte offsets, and the receiving process releases the slot once it has dropped the batch. Otherwise as usual."""
        slot = self.__dict__.get("_shared_slot")
        if slot is not None:
            fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
            reduced = reduce_to_slot(self, slot, fields)
            if reduced is not None:
                return reduced
        return super().__reduce_ex__(protocol)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state.pop("_shared_slot", None)  # a copy pickled the usual way owns no slot
        return state

    def __repr__(self) -> str:
        parts = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, torch.Tensor):
                parts.append(f"{field.name}={tuple(value.shape)}")
            elif field.name in ("word_texts", "segment_texts", "sample_keys", "caption_texts"):
                parts.append(f"{field.name}=<{len(value)}>")
            elif field.name == "padding":
                parts.append("padding={" + ", ".join(f"{k}: {v:.3f}" for k, v in value.items()) + "}")
            else:
                parts.append(f"{field.name}={value!r}")
        return "PackedBatch(" + ", ".join(parts) + ")"


class Collator:
    """Packs a list of aligned samples into a :class:`PackedBatch` on ``device``.

    Example:
        >>> collate = Collator((300, 160000, 512), frame_size=(112, 112))       # doctest: +SKIP
        >>> batch = collate([sample_a, sample_b])                                # doctest: +SKIP
        >>> batch.cu_seqlens_frames[:3]                                          # doctest: +SKIP
        tensor([  0,  90, 150], dtype=torch.int32)
    """

    def __init__(
        self,
        budgets: Sequence[int],
        *,
        frame_size: tuple[int, int] = (112, 112),
        device: Union[str, torch.device] = "cpu",
        mean: Sequence[float] = IMAGENET_MEAN,
        std: Sequence[float] = IMAGENET_STD,
        log_mel: bool = False,
        sample_rate: int = 16000,
        n_mels: int = 80,
        n_fft: int = 400,
        hop_length: int = 160,
        max_items: int = 64,
        max_words: int = 1024,
        max_segments: int = 256,
        pad_token_id: int = 0,
        with_token_ids: bool = False,
    ) -> None:
        """Creates a collator.

        Args:
            budgets: ``(cap_frames, cap_samples, cap_tokens)``, the packing budgets.
            frame_size: Output ``(height, width)`` of every frame.
            device: Where the batch tensors live (``"cpu"``, ``"cuda"``, ``"cuda:1"``…).
            mean: Per-channel mean subtracted after scaling to [0, 1].
            std: Per-channel standard deviation divided by.
            log_mel: Also compute per-item log-mel features (torchaudio) on the device.
            sample_rate: Audio rate, for the mel filterbank.
            n_mels: Mel bands.
            n_fft: FFT size in samples.
            hop_length: Hop in samples; an item of ``n`` samples gets ``n // hop_length`` hops.
            max_items: Items per batch at most (fixes the ``cu_seqlens`` length).
            max_words: Word rows at most.
            max_segments: Segment rows at most.
            pad_token_id: ``token_ids`` value on padding.
            with_token_ids: Batches carry ``token_ids`` (items must then have ids: built with a tokenizer);
                without, ``token_ids`` is None.

        Raises:
            ValueError: A budget, size or count is not positive, or mean/std do not have 3 entries.
        """
        budgets = tuple(int(b) for b in budgets)
        if len(budgets) != 3 or min(budgets) <= 0:
            raise ValueError(f"budgets must be 3 positive ints (frames, samples, tokens), got {budgets = }.")
        if len(frame_size) != 2 or min(frame_size) <= 0:
            raise ValueError(f"frame_size must be (height, width) > 0, got {frame_size = }.")
        if len(mean) != 3 or len(std) != 3 or min(std) <= 0:
            raise ValueError(f"mean and std need 3 entries (RGB), std > 0; got {mean = }, {std = }.")
        for name, value in (("max_items", max_items), ("max_words", max_words), ("max_segments", max_segments),
                            ("hop_length", hop_length), ("n_fft", n_fft), ("n_mels", n_mels)):
            if int(value) <= 0:
                raise ValueError(f"{name} must be >= 1, got {value}.")
        if n_fft < hop_length:
            raise ValueError(f"n_fft must be >= hop_length, got {n_fft = }, {hop_length = }.")
        self.budgets = budgets
        self.frame_size = (int(frame_size[0]), int(frame_size[1]))
        self.device = torch.device(device)
        self.max_items, self.max_words, self.max_segments = int(max_items), int(max_words), int(max_segments)
        self.hop_length, self.n_fft = int(hop_length), int(n_fft)
        self._mean = torch.tensor(mean, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        self._std = torch.tensor(std, dtype=torch.float32, device=self.device).view(1, 3, 1, 1)
        self._scale = 1.0 / (255.0 * self._std)  # (x / 255 - mean) / std == x * scale - shift
        self._shift = self._mean / self._std
        self._mel = None
        if log_mel:
            import torchaudio

            self._mel = torchaudio.transforms.MelSpectrogram(
                sample_rate=sample_rate, n_fft=self.n_fft, hop_length=self.hop_length, n_mels=n_mels, center=False
            ).to(self.device)
        self.n_mels = int(n_mels)
        self.pad_token_id = int(pad_token_id)
        self.with_token_ids = bool(with_token_ids)
        self._staged = self.device.type == "cuda"
        self._staging_frames: Optional[torch.Tensor] = None
        self._staging_audio: Optional[torch.Tensor] = None
        self._staging_ready: Any = None  # CUDA event: last batch's copies out of staging are done
        self._buffers = RecycledBuffers()
        self.slots = SharedSlots()
        """Inside a DataLoader worker: the shared slots batches are built in (reused once the main process drops them)."""
        self._writer: Optional[SlotWriter] = None
        """The slot of the batch being built (inside a DataLoader worker, on the CPU), else None."""

    @property
    def cap_hops(self) -> int:
        """Hop capacity: ``cap_samples // hop_length``."""
        return self.budgets[1] // self.hop_length

    def __call__(self, items: Sequence[Union[BatchItem, AlignedSample]], *,
                 capacities: Optional[Sequence[int]] = None) -> PackedBatch:
        """Packs ``items`` (in order) into one batch; an aligned sample counts whitespace tokens (no ids).

        Args:
            items: The items of the batch.
            capacities: ``(frames, samples, tokens)`` capacities of this batch, each at most its budget (a trimmed
                tail batch: ``loaders.pipeline._tail``); None: the budgets. Hops follow ``samples // hop_length``.

        Raises:
            ValueError: Too many items, words or segments, or a modality over its capacity; the message
                names the counts, the limits and the keys; an item without token ids when ``with_token_ids``;
                a capacity over its budget.
        """
        caps = self.budgets if capacities is None else tuple(int(c) for c in capacities)
        if len(caps) != 3 or any(not 0 <= c <= b for c, b in zip(caps, self.budgets)):
            raise ValueError(f"capacities must be 3 ints in [0, budget] (budgets {self.budgets}), got {capacities = }.")
        items = [as_batch_item(item) for item in items]
        samples = [item.sample for item in items]
        lengths = np.array([item_lengths(item) for item in items], dtype=np.int64).reshape(-1, 3)
        self._check_fits(samples, lengths, caps)
        in_worker = self.device.type == "cpu" and torch.utils.data.get_worker_info() is not None
        self._writer = self.slots.writer() if in_worker else None
        try:
            batch = self._build(items, samples, lengths, caps)
        finally:
            writer, self._writer = self._writer, None
        if writer is not None:
            self.slots.finish(writer, sizes_slots=caps == self.budgets)
            if writer.slot is not None:
                object.__setattr__(batch, "_shared_slot", writer.slot)
        return batch

    def _build(self, items: list[BatchItem], samples: list[AlignedSample], lengths: np.ndarray,
               caps: tuple[int, ...]) -> PackedBatch:
        cap_frames, cap_samples, cap_tokens = caps
        cap_hops = cap_samples // self.hop_length
        hops = lengths[:, 1] // self.hop_length
        cu = {name: _cu(lengths[:, j], self.max_items) for j, name in enumerate(("frames", "samples", "tokens"))}
        cu["hops"] = _cu(hops, self.max_items)
        if self._staged:
            self._wait_staging()
        frames = self._pack_frames(samples, cu["frames"], cap_frames)
        audio = self._pack_audio(samples, cu["samples"], cap_samples)
        frame_seconds = _frame_seconds(samples, cu["frames"], cap_frames)
        if self._staged:
            self._staging_ready = torch.cuda.Event()
            self._staging_ready.record(torch.cuda.current_stream(self.device))
        log_mel = None
        if self._mel is not None:
            log_mel = self._pack_log_mel(audio, cu["samples"], cu["hops"], len(samples), cap_hops)
        ids = {}
        for name, cap in (("frames", cap_frames), ("samples", cap_samples), ("tokens", cap_tokens), ("hops", cap_hops)):
            ids[name] = _ids(cu[name], len(samples), cap)
        words, word_texts = self._span_rows(samples, cu, level="word", limit=self.max_words)
        segments, segment_texts = self._span_rows(samples, cu, level="segment", limit=self.max_segments)
        token_ids, token_spans = self._token_rows(items, cu, cap_tokens)
        padding = {
            "frames": 1.0 - int(cu["frames"][-1]) / max(cap_frames, 1),
            "samples": 1.0 - int(cu["samples"][-1]) / max(cap_samples, 1),
            "tokens": 1.0 - int(cu["tokens"][-1]) / max(cap_tokens, 1),
        }
        if self._mel is not None:
            padding["hops"] = 1.0 - int(cu["hops"][-1]) / max(cap_hops, 1)

        def dev(array: np.ndarray) -> torch.Tensor:
            if self._writer is not None:
                return self._writer.place(torch.from_numpy(array))
            return torch.from_numpy(array).to(self.device, non_blocking=True)

        if log_mel is not None and self._writer is not None:
            log_mel = self._writer.place(log_mel)

        with_mel = self._mel is not None
        return PackedBatch(
            frames=frames,
            audio=audio,
            log_mel=log_mel,
            cu_seqlens_frames=dev(cu["frames"]),
            cu_seqlens_samples=dev(cu["samples"]),
            cu_seqlens_tokens=dev(cu["tokens"]),
            cu_seqlens_hops=dev(cu["hops"]) if with_mel else None,
            position_ids_frames=dev(ids["frames"][0]),
            position_ids_samples=dev(ids["samples"][0]),
            position_ids_tokens=dev(ids["tokens"][0]),
            position_ids_hops=dev(ids["hops"][0]) if with_mel else None,
            segment_ids_frames=dev(ids["frames"][1]),
            segment_ids_samples=dev(ids["samples"][1]),
            segment_ids_tokens=dev(ids["tokens"][1]),
            segment_ids_hops=dev(ids["hops"][1]) if with_mel else None,
            word_spans=dev(words),
            segment_spans=dev(segments),
            token_ids=None if token_ids is None else dev(token_ids),
            token_spans=dev(token_spans),
            word_texts=tuple(word_texts),
            segment_texts=tuple(segment_texts),
            num_items=len(samples),
            num_words=len(word_texts),
            num_segments=int((segments[:, 0] >= 0).sum()),
            sample_keys=tuple(s.key for s in samples),
            padding=padding,
            caption_texts=tuple(item.caption for item in items),
            frame_seconds=dev(frame_seconds),
        )

    def empty(self) -> PackedBatch:
        """An all-padding batch (``num_items == 0``), e.g. to keep ranks in step."""
        return self([])

    def _check_fits(self, samples: list[AlignedSample], lengths: np.ndarray, caps: tuple[int, ...]) -> None:
        if len(samples) > self.max_items:
            raise ValueError(f"{len(samples)} items exceed max_items={self.max_items}; raise max_items or lower the budgets.")
        totals = lengths.sum(axis=0) if len(samples) else np.zeros(3, dtype=np.int64)
        over = first_over_budget(totals.tolist(), caps)
        if over is not None:
            j = over[0]
            raise ValueError(
                f"{('frames', 'samples', 'tokens')[j]}: {int(totals[j])} over the "
                f"{'budget' if caps == self.budgets else 'capacity'} {caps[j]} for keys "
                f"{[s.key for s in samples]}; pack with the same budgets as the collator."
            )
        num_words = sum(len(s.words) for s in samples)
        num_segments = sum(len(s.segments) for s in samples)
        if num_words > self.max_words or num_segments > self.max_segments:
            raise ValueError(
                f"{num_words} words / {num_segments} segments exceed max_words={self.max_words} / "
                f"max_segments={self.max_segments}; raise them."
            )
        for sample in samples:
            video = sample.video
            if video is not None and video.num_frames and video.frames.shape[-1] != 3:
                raise ValueError(f"item {sample.key!r}: frames must be RGB [T, H, W, 3], got {tuple(video.frames.shape)}.")

    def _empty(self, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
        """An uninitialised tensor on the device. On the CPU, the buffer of a batch nobody holds any more when there
        is one (``loaders.pipeline._buffers``); inside a DataLoader worker, in the batch's shared slot
        (``loaders.pipeline._shared_slots``: sending the batch to the main process does not copy it, and the slot is
        reused once the main process has dropped the batch)."""
        if self.device.type != "cpu":
            return torch.empty(shape, dtype=dtype, device=self.device)
        if self._writer is not None:
            return self._writer.empty(shape, dtype)
        return self._buffers.empty(shape, dtype)  # the buffers of dropped batches: no fresh pages to fault in

    def _wait_staging(self) -> None:
        """Blocks until the previous batch's copies have left the pinned staging buffers."""
        if self._staging_ready is not None:
            self._staging_ready.synchronize()
            self._staging_ready = None

    def _staging(self, attribute: str, numel: int, dtype: torch.dtype) -> torch.Tensor:
        """A pinned host buffer of at least ``numel`` elements, grown (×1.5) only when too small."""
        buffer = getattr(self, attribute)
        if buffer is None or buffer.numel() < numel:
            size = max(numel, int(1.5 * (0 if buffer is None else buffer.numel())))
            buffer = torch.empty(size, dtype=dtype, pin_memory=True)
            setattr(self, attribute, buffer)
            logger.debug("staging buffer %s grown to %d elements", attribute, size)
        return buffer

    def _to_device(self, pieces: list[torch.Tensor], attribute: str, dtype: torch.dtype) -> list[torch.Tensor]:
        """Copies host tensors to the device, through one pinned staging buffer when the device is CUDA."""
        if not self._staged:
            return pieces
        staging = self._staging(attribute, sum(p.numel() for p in pieces), dtype)
        out, offset = [], 0
        for piece in pieces:
            view = staging[offset : offset + piece.numel()].view(piece.shape)
            view.copy_(piece)
            out.append(view.to(self.device, non_blocking=True))
            offset += piece.numel()
        return out

    def _pack_frames(self, samples: list[AlignedSample], cu: np.ndarray, cap: int) -> torch.Tensor:
        height, width = self.frame_size
        out = self._empty((cap, 3, height, width), torch.float32)
        used = int(cu[len(samples)])
        out[used:].zero_()
        pieces = [s.video.frames for s in samples if s.video is not None and s.video.num_frames]
        moved = iter(self._to_device(pieces, "_staging_frames", torch.uint8))
        on_cpu = self.device.type == "cpu"
        chunk = max(1, _CACHE_BLOCK_BYTES // (3 * height * width * 4))
        for i, sample in enumerate(samples):
            if sample.video is None or not sample.video.num_frames:
                continue
            x = next(moved).permute(0, 3, 1, 2)
            if tuple(x.shape[-2:]) != self.frame_size:
                x = F.interpolate(x.float(), size=self.frame_size, mode="bilinear", antialias=True, align_corners=False)
            rows = out[int(cu[i]) : int(cu[i + 1])]
            if not on_cpu:
                rows.copy_(x)  # uint8 -> float32 in the copy, no temporary
                continue
            for start in range(0, x.shape[0], chunk):  # normalise each block while it is in cache
                block = rows[start : start + chunk]
                block.copy_(x[start : start + chunk])
                block.mul_(self._scale).sub_(self._shift)
        if not on_cpu:
            # (x / 255 - mean) / std as one in-place multiply-add over the used rows (measured 3x faster on CPU
            # than the out-of-place expression, which allocated three temporaries per item).
            out[:used].mul_(self._scale).sub_(self._shift)
        return out

    def _pack_audio(self, samples: list[AlignedSample], cu: np.ndarray, cap: int) -> torch.Tensor:
        out = self._empty((cap,), torch.float32).zero_()
        mono = [s.audio.samples.mean(dim=0) if s.audio.samples.shape[0] > 1 else s.audio.samples[0] for s in samples]
        for i, x in enumerate(self._to_device(mono, "_staging_audio", torch.float32)):
            out[int(cu[i]) : int(cu[i + 1])] = x
        return out

    def _pack_log_mel(self, audio: torch.Tensor, cu_samples: np.ndarray, cu_hops: np.ndarray, num_items: int,
                      cap_hops: int) -> torch.Tensor:
        out = torch.zeros((cap_hops, self.n_mels), dtype=torch.float32, device=self.device)
        for i in range(num_items):
            h0, h1 = int(cu_hops[i]), int(cu_hops[i + 1])
            if h1 == h0:
                continue
            x = F.pad(audio[int(cu_samples[i]) : int(cu_samples[i + 1])], (0, self.n_fft - self.hop_length))
            mel = self._mel(x)  # [n_mels, h1 - h0]
            out[h0:h1] = torch.log(mel.clamp_min(1e-10)).T
        return out

    def _span_rows(self, samples: list[AlignedSample], cu: dict, *, level: str, limit: int) -> tuple[np.ndarray, list[str]]:
        rows = np.full((limit, len(SPAN_COLUMNS)), -1, dtype=np.int64)
        texts: list[str] = []
        r = 0
        for i, sample in enumerate(samples):
            f, a, t = int(cu["frames"][i]), int(cu["samples"][i]), int(cu["tokens"][i])
            for span in sample.words if level == "word" else sample.segments:
                f0 = f + (span.frame_start or 0)
                f1 = f + (span.frame_stop or 0)
                t0 = -1 if span.token_start is None else t + span.token_start
                t1 = -1 if span.token_stop is None else t + span.token_stop
                rows[r] = (i, f0, f1, a + span.sample_start, a + span.sample_stop, t0, t1)
                texts.append(span.text)
                r += 1
        return rows, texts

    def _token_rows(self, items: list[BatchItem], cu: dict, cap: int) -> tuple[Optional[np.ndarray], np.ndarray]:
        """``token_ids`` (or None) and ``token_spans`` in packed coordinates."""
        ids = np.full(cap, self.pad_token_id, dtype=np.int64) if self.with_token_ids else None
        spans = np.full((cap, len(TOKEN_SPAN_COLUMNS)), -1, dtype=np.int64)
        for i, item in enumerate(items):
            t0, t1 = int(cu["tokens"][i]), int(cu["tokens"][i + 1])
            if t1 == t0:
                continue
            tokens = item.tokens
            if ids is not None:
                if tokens.ids is None:
                    raise ValueError(f"item {item.key!r} has no token ids; build the items with the collator's tokenizer.")
                ids[t0:t1] = tokens.ids
            spans[t0:t1, 0:2] = tokens.frame_ranges + int(cu["frames"][i])
            spans[t0:t1, 2:4] = tokens.sample_ranges + int(cu["samples"][i])
        return ids, spans


def _cu(lengths: np.ndarray, max_items: int) -> np.ndarray:
    """int32 cumulative lengths ``[0, l0, l0+l1, …]`` padded to ``max_items + 1`` by repeating the last value."""
    out = np.zeros(max_items + 1, dtype=np.int32)
    out[1 : len(lengths) + 1] = np.cumsum(lengths)
    out[len(lengths) + 1 :] = out[len(lengths)]
    return out


def _ids(cu: np.ndarray, num_items: int, cap: int) -> tuple[np.ndarray, np.ndarray]:
    """int32 position ids (0 on padding) and segment ids (-1 on padding) over a capacity of ``cap``."""
    positions = np.zeros(cap, dtype=np.int32)
    segments = np.full(cap, -1, dtype=np.int32)
    for i in range(num_items):
        start, stop = int(cu[i]), int(cu[i + 1])
        positions[start:stop] = np.arange(stop - start, dtype=np.int32)
        segments[start:stop] = i
    return positions, segments


def _frame_seconds(samples: list[AlignedSample], cu: np.ndarray, cap: int) -> np.ndarray:
    """float32 ``[cap]``: each frame's pts minus its item's audio start (``PackedBatch.frame_seconds``); 0 on padding.
    The difference is taken in float64, then rounded to float32 (about 1 µs at 10 s)."""
    out = np.zeros(cap, dtype=np.float32)
    for i, sample in enumerate(samples):
        if sample.video is None or not sample.video.num_frames:
            continue
        pts = sample.video.pts_seconds.numpy().astype(np.float64, copy=False)
        out[int(cu[i]) : int(cu[i + 1])] = pts - float(sample.audio.start_seconds)
    return out
