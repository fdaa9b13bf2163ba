"""``read_audio``: samples with the presentation time of the first one.

FFmpeg removes the encoder's priming (AAC: 1024 samples, 21 ms at 48 kHz, 64 ms at 16 kHz) and Opus
pre-skip when it honours the container's edit list / codec delay; what is left is the time of the
first *decoded* frame, which we report, never assume to be 0::

    packets      [prime][  1  ][  2  ] ...          first packet pts = -1024/sr (priming)
    decoded             [  1  ][  2  ] ...          first frame time = 0.0 (or the stream's start,
    AudioClip.start_seconds = time of sample 0          e.g. 0.4 s when audio starts after video)

MP3 is the exception to "FFmpeg's time of the first decoded frame": its demuxer does not move the timestamps by
the encoder delay that a LAME/Info header declares (``start_pad`` + the decoder's 529 samples: 1105 at 16 kHz from
libmp3lame); it counts packets from 0, has the decoder drop the delay (``AV_PKT_DATA_SKIP_SAMPLES``) and sets the
stream's ``start_time`` to the delay, so the first decoded sample, content time 0, would read as 69 ms (16 kHz),
25 ms (44.1 kHz) or 23 ms (48 kHz)::

    raw .mp3 packets  [ delay |  content ... ]     first packet pts = 0
    FFmpeg's frames           [  content ... ]     first frame time = start_time = delay / sr   (late)
    AudioClip                 [  content ... ]     start_seconds = 0.0: the delay takes no time, as AAC's
                                                   priming in MP4 (first packet pts -1024/sr, frame at 0)

So for the raw MP3 demuxer the stream's timeline is read ``start_time`` earlier
(:func:`audio_timeline_shift_seconds`; preprocess's re-encode moves the audio by the same amount). MP3 in MP4
needs nothing (FFmpeg's muxer writes the delay into the edit list, as for AAC); an MP3 without the header
(``-write_xing 0``, a pipe) or in Matroska declares no delay anywhere, so its decoded samples, delay included,
start at the first packet's time, as every decoder presents them (not guessed).

The end is FFmpeg's too: the samples run to the end of the last decoded frame. FFmpeg (5.1 and 8.x) applies an
MP4 edit list's end by dropping the packets wholly after it, not by cutting inside the last one, so AAC's padding
stays: a 1.000 s AAC file from ffmpeg's encoder (edit list: 16000 samples at 16 kHz) decodes to 16384 samples, as
``ffmpeg -i FILE -f s16le -`` gives, while ``ffprobe`` reports the edit list's 1.000 s. An edit list starting
inside a frame (a stream-copied cut) keeps that frame's tail from the edit's start, as FFmpeg does.

Resampling uses soxr (the SoX resampler, "HQ": linear phase, its delay removed), so sample 0 of the
output is still at ``start_seconds``; the output length is the half-up count of the input duration
at the new rate. Gaps between decoded frames are filled with silence and overlaps trimmed, so
sample ``n`` is always at ``start_seconds + n / sample_rate``.

A window starting past :data:`_SEEK_FROM_SECONDS` is decoded from a seek (PyAV backend). Its first sample is put on
the whole read's sample grid (:mod:`loaders._audio_grid`) where the container's tick is coarser than a sample
(Matroska/WebM: 1 ms) and the codec's frames are multiples of a known step (Opus 2.5 ms, AAC, MP3, fixed-block
FLAC), so the window holds the samples of a whole read at the same times. Vorbis and PCM in Matroska are placed on
that grid by the stamps of their first frames (:class:`loaders._audio_grid.StampedGrid`; Vorbis frames are multiples of
a quarter of its short block, PCM blocks are taken to have the size of the stream's first block, as FFmpeg's muxer
writes them; BENCHMARKS.md, mkv64). Where the tick is one sample (MP4, MOV, Ogg, WAV, FLAC), one frame (MP3 in AVI)
or divides the frames (MP3, MPEG-TS at 48 or 16 kHz) FFmpeg's timestamp names the sample already; where it is under
half a sample and does not divide the frames (MPEG-TS at 44.1 or 22.05 kHz: 1/90000 s) the stamp is put on the
nearest sample of the grid. Other codecs of no known step in Matroska, and PCM whose blocks before the window differ
in size, keep FFmpeg's stamp, which may lie up to a millisecond off the whole read's (BENCHMARKS.md, opus63).
A window resampled (``sample_rate``) from a seek starts its native samples where the whole read's native and resampled
grids meet (every 3rd sample from 48 to 16 kHz, every 441st from 44.1 kHz: :func:`_resampled_phase_samples`), so its
resampled samples are the whole read's at the same instants (within float rounding), not a fraction of a sample off;
this needs the whole read's first frame's time wherever the codec has no grid too (one more open and decode, 1-2 ms).
The grid is found by a decode of its own, the source then opened again: a file object that cannot seek (a pipe,
:func:`loaders._source.can_reopen`) is decoded from its start instead, as a whole read (BENCHMARKS.md, adv63b).

Backends (chosen in :func:`read_audio`, the one place): ``torchcodec`` (:mod:`loaders._audio_torchcodec`:
FFmpeg's C++ decode loop, overlapped with the downmix and soxr; only AAC-LC in MP4 and PCM in WAV whose
timeline it can show to be the frames end to end) and the PyAV code below (any file; fills gaps and trims
overlaps by timestamp). ``auto`` tries torchcodec unless the read seeks or stops in the first half of the media
(``stop_seconds``: PyAV stops decoding a second past it, torchcodec, twice as fast, decodes the whole stream), and
falls back to PyAV.

PyAV speed: frames are copied into large blocks as they are decoded (no per-frame arrays), and with
``mono=True`` and a new rate each full block is downmixed and resampled on a helper thread while
decoding goes on (the result is bit-identical to resampling the whole at once); the blocks are then reused,
so the native-rate samples are never held whole (a stream whose channel count grows is decoded again, keeping
them). Mono and stereo planar float frames take a short path (one numpy copy per plane).
"""
from __future__ import annotations

import logging
import math
from typing import Callable, Literal, Optional

import numpy as np
import torch

from avcore import AudioClip, DecodeError, check_window_overlaps, downmix, resample, seconds_to_samples
from loaders import _audio_torchcodec
from loaders._audio_grid import (SampleGrid, StampedGrid, frame_step_samples, grid_step_samples, stamp_interval,
                                 tolerance_samples, vorbis_step_samples)
from loaders._source import (MediaSource, can_reopen, check_source, decode_failure, describe_source, open_container,
                             pick_stream)
from loaders._truncated import check_not_truncated

logger = logging.getLogger(__name__)

__all__ = ["audio_timeline_shift_seconds", "read_audio"]

_GAP_TOLERANCE_SECONDS = 0.002
"""Frame timestamps may jitter by a sample or two; only larger gaps/overlaps are repaired."""
_SEEK_MARGIN_SECONDS = 1.0
"""Decode this much before a requested start so the codec's overlap/priming has settled."""
_SEEK_FROM_SECONDS = 2 * _SEEK_MARGIN_SECONDS
"""A window starting later than this is read by seeking (PyAV backend); earlier ones decode from the start."""
Backend = Literal["auto", "pyav", "torchcodec"]
_BACKENDS = ("auto", "pyav", "torchcodec")
_MAX_TICK_SECONDS = 0.5
"""A time base coarser than this cannot time audio frames (~20 ms each): a corrupt ``mdhd`` timescale."""
_GAP_FILL_ALLOWANCE_SECONDS = 10.0
"""Silence filled into timestamp gaps may exceed the decoded audio by at most this much. More means the
timestamps are in the wrong unit (a corrupt timescale put 2 s of AAC 1024 s apart), not real gaps."""


def _planar(frame, packer: list) -> np.ndarray:
    """An AudioFrame as float32 ``[C, n]`` whatever its sample format.

    Planar frames of more than two channels are first interleaved by FFmpeg's resampler (format ``flt``,
    same layout and rate: no resampling, no delay): PyAV 18.1's ``to_ndarray`` on a planar 7.1 frame
    (which reports 9 planes for 8 channels) reads past the frame and segfaults. ``packer`` holds the
    resampler between frames (one per stream).
    """
    channels = len(frame.layout.channels)
    if frame.format.is_planar and channels > 2:
        import av

        setup = (frame.layout.name, frame.rate)
        if not packer or packer[0] != setup:  # the first frame, or the layout/rate changed mid-stream
            packer[:] = [setup, av.AudioResampler(format="flt", layout=frame.layout, rate=frame.rate)]
        packed = packer[1].resample(frame)
        array = np.concatenate([p.to_ndarray().reshape(-1) for p in packed]) if packed else np.zeros(0, np.float32)
        return np.ascontiguousarray(array.reshape(-1, channels).T, dtype=np.float32)
    array = frame.to_ndarray()
    if not frame.format.is_planar:
        array = array.reshape(-1, channels).T
    if array.dtype.kind == "i":
        array = array.astype(np.float32) / float(np.iinfo(array.dtype).max + 1)
    elif array.dtype.kind == "u":  # u8: centred on 128
        array = (array.astype(np.float32) - 128.0) / 128.0
    return array.astype(np.float32, copy=False)


_SAMPLE_DTYPES = {"u8": np.uint8, "s16": np.int16, "s32": np.int32, "s64": np.int64, "flt": np.float32, "dbl": np.float64}
"""FFmpeg sample formats (planar ones end in ``p``) and their numpy types."""
_BLOCK_SAMPLES = 1 << 18
"""Samples per block of :class:`_SampleBuffer` (5.5 s at 48 kHz: 2 MiB per stereo block)."""


class _SampleBuffer:
    """Decoded samples copied frame by frame into float32 ``[C, 2**18]`` blocks, joined once at the end.

    Per frame this costs a few numpy views and copies instead of ``to_ndarray`` + ``vstack`` + a list of small
    pieces concatenated at the end (ten times less: BENCHMARKS.md, Lab notes). Nothing is sized from the
    header (a corrupt one cannot make it allocate), and the join downmixes to mono on the way (:meth:`join`).
    Channel rule (as before): the output has as many rows as the widest frame; a stretch of frames with fewer
    channels contributes its first channel to every row. The mono downmix is :func:`avcore.downmix` with the layout
    of the widest frames (:attr:`channel_names`).
    """

    def __init__(self, on_block: Optional[Callable[[np.ndarray, int], None]] = None, *, keep: bool = True) -> None:
        self._blocks: list[tuple[np.ndarray, int]] = []  # (block [C, _BLOCK_SAMPLES], samples used)
        self._block: Optional[np.ndarray] = None
        self._used = 0
        self.count = 0
        self._on_block = on_block  # called with (block, samples used) when a block is full (and by finish())
        self._keep = keep  # False: full blocks go to on_block only, which hands them back through recycle()
        self._free: list[np.ndarray] = []  # blocks handed back, reused (appended to from the helper thread)
        self._max_rows = 0
        self.channel_names: Optional[tuple[str, ...]] = None
        """FFmpeg's channel names of the last frame as wide as the widest so far (the downmix's layout)."""
        self._layout_name: Optional[str] = None
        self._handed = False  # a block has gone to on_block

    def _note_layout(self, frame, channels: int) -> None:
        layout = frame.layout
        if channels >= len(self.channel_names or ()) and layout.name != self._layout_name:
            self._layout_name = layout.name
            self.channel_names = tuple(channel.name for channel in layout.channels)

    def recycle(self, block: np.ndarray) -> None:
        """Take back a block ``on_block`` is done with (``keep=False``): the next block reuses its memory, so a
        long stream passes through a few blocks instead of new memory for every sample (and no final join).
        May be called from another thread."""
        self._free.append(block)

    def _new_block(self, rows: int, samples: int) -> np.ndarray:
        while self._free:
            block = self._free.pop()
            if block.shape == (rows, samples):
                return block
        return np.empty((rows, samples), dtype=np.float32)

    def reserve(self, channels: int, n: int) -> np.ndarray:
        """The ``[C, n]`` view the next ``n`` samples go to (``C`` >= ``channels``)."""
        block = self._block
        if block is None or self._used + n > block.shape[1] or channels > block.shape[0]:
            if block is not None:
                if self._keep:
                    self._blocks.append((block, self._used))
                if self._on_block is not None:
                    self._handed = True
                    self._on_block(block, self._used)
            rows = max(channels, block.shape[0] if block is not None else 0)
            self._max_rows = max(self._max_rows, rows)
            block = self._block = self._new_block(rows, max(_BLOCK_SAMPLES, n))
            self._used = 0
        view = block[:, self._used : self._used + n]
        self._used += n
        self.count += n
        return view

    def _put(self, data: np.ndarray) -> int:
        view = self.reserve(data.shape[0], data.shape[1])
        view[...] = data if data.shape[0] == view.shape[0] else data[:1]
        return data.shape[1]

    def write(self, frame, cut: int, packer: list) -> int:
        """Copy ``frame``'s samples from ``cut`` on, as float32 in [-1, 1); returns how many were written.

        Mono and stereo planar float frames (AAC, MP3, Opus, Vorbis decode to ``fltp``) that fit the current
        block take a short path: one numpy copy per plane straight into the block, no views or dtype dispatch."""
        n = frame.samples
        m = n - cut
        block = self._block
        if (block is not None and self._used + m <= block.shape[1] and frame.format.name == "fltp"
                and frame.layout.nb_channels == block.shape[0] <= 2):
            at = self._used
            for ch, plane in enumerate(frame.planes):
                block[ch, at : at + m] = np.frombuffer(plane, np.float32, count=m, offset=4 * cut)
            self._used = at + m
            self.count += m
            return m
        channels = frame.layout.nb_channels
        if channels <= 2:
            return self._write(frame, cut, packer, channels)
        written = self._write(frame, cut, packer, channels)
        self._note_layout(frame, channels)  # after: a block handed on while reserving holds the frames before this
        return written

    def _write(self, frame, cut: int, packer: list, channels: int) -> int:
        n = frame.samples
        m = n - cut
        fmt = frame.format
        planar = fmt.is_planar
        if planar and channels > 2:  # PyAV's planes are wrong for these: FFmpeg's packer (see _planar)
            return self._put(_planar(frame, packer)[:, cut:])
        name = fmt.name[:-1] if planar else fmt.name
        dtype = _SAMPLE_DTYPES.get(name)
        if dtype is None:  # an unusual format: the general path
            return self._put(_planar(frame, packer)[:, cut:])
        view = self.reserve(channels, m)
        same = view.shape[0] == channels
        if planar:
            planes = frame.planes
            if same:
                for ch in range(channels):
                    view[ch] = np.frombuffer(planes[ch], dtype, count=n)[cut:]
            else:
                view[...] = np.frombuffer(planes[0], dtype, count=n)[cut:]
        else:
            packed = np.frombuffer(frame.planes[0], dtype, count=n * channels).reshape(n, channels)[cut:]
            view[...] = packed.T if same else packed[:, 0]
        if dtype is np.uint8:  # centred on 128
            view -= 128.0
            view *= 1.0 / 128.0
        elif dtype not in (np.float32, np.float64):
            view *= 1.0 / float(np.iinfo(dtype).max + 1)  # a power of two: exact, as the division was
        return m

    def drop_head(self, n: int) -> bool:
        """Forget the first ``n`` samples written, while they are all still in the first block (none handed on);
        returns whether it could."""
        block = self._block
        if self._blocks or block is None or self._handed or not 0 <= n <= self._used:
            return False
        block[:, : self._used - n] = block[:, n : self._used]  # numpy copies overlapping ranges safely
        self._used -= n
        self.count -= n
        return True

    def finish(self) -> None:
        """Hand the last, partly filled block to ``on_block``."""
        if self._block is not None and self._on_block is not None:
            self._on_block(self._block, self._used)

    @property
    def width(self) -> int:
        """Rows of the joined array: the most channels any frame had."""
        return self._max_rows or 1

    def join(self, gaps: list[tuple[int, int]], *, mono: bool) -> np.ndarray:
        """All samples as one ``[C, N]`` array (``[1, N]``: the downmix, when ``mono``), with
        ``pad`` samples of silence inserted before decoded sample ``position`` for each ``(position, pad)``.
        Only with ``keep=True`` (the default): otherwise the blocks were handed on."""
        if not self._keep:
            raise RuntimeError("join() needs the blocks: this buffer was made with keep=False")
        blocks = self._blocks + ([(self._block, self._used)] if self._block is not None else [])
        width = max((block.shape[0] for block, _ in blocks), default=1)
        total = self.count + sum(pad for _, pad in gaps)
        rows = 1 if mono else width
        out = (np.zeros if gaps else np.empty)((rows, total), dtype=np.float32)
        cuts = sorted({position for position, _ in gaps})
        shift = {position: 0 for position in cuts}
        for position, pad in gaps:
            shift[position] += pad
        decoded = 0
        offset = 0  # silence inserted before the current decoded position
        for block, used in blocks:
            start = 0
            while start < used:
                while cuts and cuts[0] <= decoded + start:
                    offset += shift[cuts.pop(0)]
                stop = used if not cuts else min(used, cuts[0] - decoded)
                at = decoded + start + offset
                self._copy(block[:, start:stop], out[:, at : at + stop - start], width, mono, self.channel_names)
                start = stop
            decoded += used
        return out

    @staticmethod
    def _copy(source: np.ndarray, target: np.ndarray, width: int, mono: bool,
              channel_names: Optional[tuple[str, ...]]) -> None:
        if source.shape[0] < width:  # a narrower stretch: its first channel on every row
            target[...] = source[:1]
        elif not mono or width == 1:
            target[...] = source
        else:
            downmix(source, channel_names, out=target[0])


def _tolerant_frames(container, stream, label: str, bad_packets: list):
    """Decoded frames of ``stream``; a packet the decoder rejects is skipped and its pts appended to
    ``bad_packets`` (as ``ffmpeg -i`` does), so its time becomes a gap that :func:`_decode_all` fills with silence."""
    import av

    for packet in container.demux(stream):
        try:
            frames = packet.decode()
        except (av.error.EOFError, av.error.ExitError):
            raise
        except av.FFmpegError as error:
            bad_packets.append(packet.pts)
            logger.info("%s: skipping an undecodable audio packet at pts %s: %s", label, packet.pts, error)
            continue
        yield from frames


class _PipelinedResample:
    """Mono downmix (:func:`avcore.downmix`) and soxr resampling of each full block on one helper thread while
    decoding goes on.

    soxr releases the GIL, so on two cores the resampling costs next to nothing in wall time. The output is
    bit-identical to joining everything and calling :func:`resample` (soxr's stream output does not depend on
    how the input is chunked, and the downmix sums the channels in the same order), provided every block has
    the final channel count: :meth:`result` returns None otherwise and the caller resamples the joined
    samples. Silence of timestamp gaps is streamed where it belongs.
    """

    def __init__(self, from_rate: int, to_rate: int, gaps: list[tuple[int, int]]) -> None:
        import soxr
        from concurrent.futures import ThreadPoolExecutor

        self._stream = soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32", quality="HQ")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="avalign-soxr")
        self._futures: list = []
        self._parts: list[np.ndarray] = []
        self._gaps = gaps  # the decode loop's list, appended to as gaps are found
        self._next_gap = 0
        self._decoded = 0
        self._rows: set[int] = set()
        self._rates = (from_rate, to_rate)
        self.recycle: Optional[Callable[[np.ndarray], None]] = None  # called with each block once it is processed
        self.channel_names: Callable[[], Optional[tuple[str, ...]]] = lambda: None  # the layout of the blocks so far
        self._layouts: set = set()

    def __call__(self, block: np.ndarray, used: int) -> None:
        """Queue ``block[:, :used]`` (the next decoded samples) with the gaps that fall inside it."""
        silence = []
        while self._next_gap < len(self._gaps) and self._gaps[self._next_gap][0] < self._decoded + used:
            position, pad = self._gaps[self._next_gap]
            silence.append((position - self._decoded, pad))
            self._next_gap += 1
        self._decoded += used
        self._rows.add(block.shape[0])
        names = self.channel_names() if block.shape[0] > 2 else None
        self._layouts.add(names)
        self._futures.append(self._pool.submit(self._process, block, used, silence, names))

    def _push(self, mono: np.ndarray) -> None:
        if mono.size:
            self._parts.append(self._stream.resample_chunk(mono.reshape(-1, 1)))

    def _process(self, block: np.ndarray, used: int, silence: list[tuple[int, int]],
                 channel_names: Optional[tuple[str, ...]]) -> None:
        at = 0
        for position, pad in silence + [(used, 0)]:
            if position > at:
                piece = block[:, at:position]
                self._push(downmix(piece, channel_names))
            if pad:
                self._push(np.zeros(pad, dtype=np.float32))
            at = position
        if self.recycle is not None:
            self.recycle(block)

    def result(self, width: int, total: int) -> Optional[np.ndarray]:
        """The resampled ``[1, round_half_up(total * to / from)]`` samples, or None when a block had fewer
        channels than ``width`` (the channel rule needs the joined array) or the layout changed (the downmix takes
        the final one). Waits for the helper thread."""
        for future in self._futures:
            future.result()
        if self._rows != {width} or len(self._layouts) > 1:
            return None
        trailing = sum(pad for position, pad in self._gaps[self._next_gap:])
        if trailing:
            self._push(np.zeros(trailing, dtype=np.float32))
        self._parts.append(self._stream.resample_chunk(np.zeros((0, 1), dtype=np.float32), last=True))
        out = np.concatenate(self._parts)[:, 0] if self._parts else np.zeros(0, dtype=np.float32)
        from_rate, to_rate = self._rates
        target = seconds_to_samples(total / from_rate, to_rate)
        if out.size < target:
            out = np.pad(out, (0, target - out.size))
        return out[:target].reshape(1, -1)

    def close(self) -> None:
        for future in self._futures:
            future.cancel()
        self._pool.shutdown(wait=True)


class _SeekFailed(Exception):
    """The demuxer refused the seek of a window read (FFmpeg's EPERM for an empty Vorbis track in Matroska, which has no
    index to seek by). :func:`read_audio` reads the stream without it."""


class _ChannelsGrew(Exception):
    """Streaming could not finish: a frame had more channels than the blocks already handed on, or the channel
    layout changed (rare: the channel rule and the downmix need the joined samples). :func:`read_audio` decodes
    once more, keeping every block."""


def audio_timeline_shift_seconds(container, stream) -> float:
    """How far FFmpeg's timestamps of ``stream`` run ahead of its content's time: the encoder delay of a raw MP3
    with a LAME/Info header (the stream's ``start_time``, which that demuxer sets to the delay it has the decoder
    skip, see the module docstring), else 0.0 (every other demuxer moves the timestamps itself)."""
    if container.format is None or container.format.name != "mp3" or not stream.start_time:
        return 0.0
    shift = float(stream.start_time * stream.time_base)
    return shift if 0.0 < shift < 1.0 else 0.0  # a delay is at most a few frames (12 bits of samples)


def _decode_all(container, stream, label: str, seek_seconds: Optional[float],
                max_duration_seconds: Optional[float] = None, *, mono: bool = False,
                sample_rate: Optional[int] = None, stream_blocks: bool = True,
                grid: Optional[SampleGrid | StampedGrid] = None, phase_samples: int = 1,
                stop_seconds: Optional[float] = None) -> tuple[np.ndarray, float, int, int]:
    """Decode the stream: (samples [C, N], or [1, N] downmixed when ``mono``, at ``sample_rate`` (default:
    the stream's); time of sample 0; the stream's rate; packets skipped as undecodable), repairing gaps and
    overlaps.

    Gaps are only counted while decoding and filled once the whole stream has been checked: timestamps
    that would need more silence than :data:`_GAP_FILL_ALLOWANCE_SECONDS` beyond the decoded audio, or an
    output longer than ``max_duration_seconds``, are refused before anything that large is allocated.

    With ``mono`` and a new rate, blocks are resampled as they fill and (``stream_blocks``) reused, so the
    native-rate samples are never held whole; raises :class:`_ChannelsGrew` when that cannot give the result.
    ``grid``: the whole read's sample grid (:func:`_whole_read_grid`, :func:`_whole_read_stamped_grid`), on which the
    first frame after the seek is put (``container`` must be newly opened: see there); ``phase_samples``: see
    :func:`_decode_loop`. ``stop_seconds``: the end of the window read, if any: decoding stops a margin
    (:data:`_SEEK_MARGIN_SECONDS`) past it, unless ``max_duration_seconds`` asks for the whole span (a 1 s window at
    3 s of a 10 min MP3 decoded all of it: reading a file in consecutive windows took time quadratic in its length;
    BENCHMARKS.md, adv64).
    """
    context = stream.codec_context  # None when FFmpeg found no decoder parameters (a header cut short)
    rate = int((context.sample_rate if context is not None else 0) or getattr(stream, "rate", 0) or 0)
    if rate <= 0:
        raise DecodeError(f"{label}: the audio stream has no sample rate (a header cut short or damaged?); hint: "
                          f"check it with `ffprobe {label}`")
    time_base = stream.time_base
    if time_base is None or not 0 < float(time_base) <= _MAX_TICK_SECONDS:
        raise DecodeError(f"{label}: the audio stream's time base is {time_base} s per tick, too coarse to time its "
                          f"frames (limit {_MAX_TICK_SECONDS} s): a corrupt header (mdhd timescale 0 or 1?)")
    shift = audio_timeline_shift_seconds(container, stream)  # FFmpeg's time = ours + shift
    if seek_seconds is not None:
        try:
            container.seek(int(math.floor((seek_seconds + shift) / float(time_base))), stream=stream, backward=True)
        except OSError as e:  # PyAV's errno errors (av.error.PermissionError: EPERM) are OSErrors
            raise _SeekFailed(str(e)) from e
    gaps: list[tuple[int, int]] = []  # (position among the decoded samples, samples of silence inserted there)
    out_rate = sample_rate or rate
    pipeline = _PipelinedResample(rate, out_rate, gaps) if mono and out_rate != rate else None
    streaming = pipeline is not None and stream_blocks
    buffer = _SampleBuffer(on_block=pipeline, keep=not streaming)
    if pipeline is not None:
        pipeline.channel_names = lambda: buffer.channel_names
    if streaming:
        pipeline.recycle = buffer.recycle
    bad_packets: list = []
    try:
        until = (None if stop_seconds is None or max_duration_seconds is not None
                 else stop_seconds + shift + _SEEK_MARGIN_SECONDS)
        total, start = _decode_loop(container, stream, label, rate, buffer, gaps, max_duration_seconds, bad_packets,
                                    grid=grid, phase_samples=phase_samples, until_seconds=until)
        start -= shift
        if pipeline is not None:
            buffer.finish()
            resampled = pipeline.result(buffer.width, total)
            if resampled is not None:
                return resampled, start, rate, len(bad_packets)
            if streaming:
                raise _ChannelsGrew()
    finally:
        if pipeline is not None:
            pipeline.close()
    return resample(buffer.join(gaps, mono=mono), rate, out_rate), start, rate, len(bad_packets)


def _grid_step(stream) -> Optional[int]:
    """The step of the whole read's sample grid of ``stream`` (:func:`loaders._audio_grid.grid_step_samples`), or None
    where its timestamps already name a sample or its frames have no known step."""
    context = stream.codec_context
    rate = int((context.sample_rate if context is not None else 0) or 0)
    if rate <= 0:
        return None
    step = frame_step_samples(context.name, context.frame_size, rate, context.extradata)
    return grid_step_samples(step, sample_rate=rate, tick_seconds=float(stream.time_base or 0))


def _stamped_grid_wanted(stream) -> bool:
    """Whether a seeked read of ``stream`` is placed by :class:`StampedGrid`: Vorbis or PCM whose tick is longer than a
    sample (Matroska/WebM)."""
    context = stream.codec_context
    rate = int((context.sample_rate if context is not None else 0) or 0)
    if rate <= 0 or not float(stream.time_base or 0) * rate > 1.0:
        return False
    return context.name == "vorbis" or context.name.startswith("pcm_")


def _whole_read_stamped_grid(container, stream, label: str) -> Optional[StampedGrid]:
    """The :class:`StampedGrid` of a whole read of ``stream`` (:func:`_stamped_grid_wanted`) from its first frames, as
    ``container``'s decoder, newly opened, gives them; None when no frame decodes, the step is unknown (a Vorbis header
    not found) or the first frames are not multiples of it (PCM blocks of unequal sizes).

    The caller seeks ``container`` afterwards, which flushes the decoder: a Vorbis decoder then starts as a new one
    does (the first packet gives no samples) and PCM has no state, so the window is read without a second open."""
    context = stream.codec_context
    rate, tick = int(context.sample_rate), float(stream.time_base)
    step = vorbis_step_samples(context.extradata) if context.name == "vorbis" else None
    stamps: list[tuple[float, int, int]] = []
    before = 0
    for frame in _tolerant_frames(container, stream, label, []):
        if not frame.samples:
            continue
        if frame.time is None:
            break
        if step is None:
            step = frame.samples  # PCM: the first block's size
        if stamps and abs(float(frame.time) - stamps[0][0] - before / rate) > _GAP_TOLERANCE_SECONDS:
            break  # a gap or an overlap, which the whole read repairs: the frames after it are not counted from the first
        stamps.append((float(frame.time), before, frame.samples))
        before += frame.samples
        if len(stamps) >= StampedGrid.frames_wanted:
            break
    if not stamps or step is None or any(samples % step for _, _, samples in stamps[:-1]):
        return None
    origin = stamps[0][0]
    low, high = stamp_interval(stamps, origin_seconds=origin, sample_rate=rate, tick_seconds=tick)
    if low > high:
        return None  # the stamps disagree with rounding to the tick: not a muxer this models
    return StampedGrid(origin, step, rate, tick, low, high)


def _resampled_phase_samples(rate: int, out_rate: Optional[int]) -> int:
    """How many native samples apart the whole read's samples and its resampled samples fall at the same instant
    (``rate / gcd(rate, out_rate)``: 3 from 48 to 16 kHz, 441 from 44.1 kHz), or 1 (no resampling, or a period over a
    quarter of the seek margin, which the dropped samples must stay within).

    A seeked window resampled from a first sample a multiple of this after the whole read's first sample has its
    samples at the instants of the whole read's resampled samples, not a fraction of a sample off.

    Example:
        >>> _resampled_phase_samples(44100, 16000)
        441
    """
    if not out_rate or rate <= 0 or out_rate == rate:
        return 1
    period = rate // math.gcd(rate, out_rate)
    return period if period <= rate * _SEEK_MARGIN_SECONDS / 4 else 1


def _whole_read_grid(container, stream, label: str, step: int,
                     tolerance: Optional[float] = None) -> Optional[SampleGrid]:
    """The sample grid of a whole read of ``stream`` with ``step`` (:func:`_grid_step`), or None when no frame
    decodes. Its origin is the time of the first frame that ``container``'s decoder, newly opened, gives, as in a
    whole read. ``tolerance``: default :func:`tolerance_samples`; 0 with a step of 1 gives the origin alone (stamps
    that name their samples: :func:`_resampled_phase_samples`).

    A decoder skips its initial delay (Opus pre-skip) once, in the first packets it decodes: the caller reads the
    window with a decoder of its own, newly opened, which skips the same delay after its seek (its first frame is
    then on the grid of the whole read's first frame)."""
    rate = int(stream.codec_context.sample_rate)  # > 0: checked by _grid_step
    if tolerance is None:
        tolerance = tolerance_samples(rate, float(stream.time_base))
    for frame in _tolerant_frames(container, stream, label, []):
        if frame.samples and frame.time is not None:
            return SampleGrid(float(frame.time), step, rate, tolerance)
    return None


def _decode_loop(container, stream, label: str, rate: int, buffer: _SampleBuffer, gaps: list[tuple[int, int]],
                 max_duration_seconds: Optional[float], bad_packets: list, *,
                 grid: Optional[SampleGrid | StampedGrid] = None, phase_samples: int = 1,
                 until_seconds: Optional[float] = None) -> tuple[int, float]:
    """Decode every frame into ``buffer``, appending timestamp gaps to ``gaps`` and the pts of packets the
    decoder rejects to ``bad_packets``; returns (samples including the silence of the gaps, time of sample 0).
    ``grid``: after a seek, the first frame's time is its point on the whole read's grid (:meth:`SampleGrid.place`,
    :meth:`StampedGrid.place`: from the first frames, up to the first gap or overlap; meanwhile FFmpeg's time).
    ``phase_samples``: then the samples before the first one a multiple of this after the grid's origin are dropped
    (:func:`_resampled_phase_samples`), where no gap or overlap came first.
    ``until_seconds``: FFmpeg's time at which decoding stops (the first frame that starts there or later is not read).
    Raises DecodeError as :func:`_decode_all` documents."""
    start: Optional[float] = None
    written = decoded = filled = 0
    overlaps = 0
    packer: list = []
    limit = None if max_duration_seconds is None else max_duration_seconds * rate
    stamps: list[tuple[float, int, int]] = []  # the first frames (time, samples before, samples) while grid places them
    placing = grid is not None
    to_drop = 0  # samples still to drop from the head once placed (phase_samples)

    def phase_drop(placed: float) -> int:
        return (-round((placed - grid.origin_seconds) * rate)) % phase_samples if phase_samples > 1 else 0

    def drop_head() -> None:  # once the samples to drop are written, before any block is handed on
        nonlocal written, decoded, start, to_drop
        if not gaps and not overlaps and buffer.drop_head(to_drop):
            written -= to_drop
            decoded -= to_drop
            start += to_drop / rate
        to_drop = 0

    for frame in _tolerant_frames(container, stream, label, bad_packets):
        n = frame.samples
        if n == 0:
            continue
        cut = 0
        t = frame.time
        if until_seconds is not None and t is not None and start is not None and float(t) >= until_seconds:
            break  # past the window (and its margin): the rest of the stream is not needed
        if t is not None:
            if start is None:
                start = float(t)
            drift = float(t) - (start + written / rate)
            if placing and abs(drift) <= _GAP_TOLERANCE_SECONDS:
                stamps.append((float(t), written, n))
                if grid.settled(stamps):
                    start, placing = grid.place(stamps), False
                    to_drop = phase_drop(start)
                    drift = float(t) - (start + written / rate)
            elif placing:  # a gap or an overlap among the first frames: place by the frames before it
                start, placing = (grid.place(stamps) if stamps else start), False
                drift = float(t) - (start + written / rate)
            if drift > _GAP_TOLERANCE_SECONDS:
                pad = seconds_to_samples(drift, rate)
                gaps.append((decoded, pad))
                written += pad
                filled += pad
            elif drift < -_GAP_TOLERANCE_SECONDS:
                cut = min(seconds_to_samples(-drift, rate), n)
                overlaps += 1
        elif start is None:
            start = 0.0
        kept = buffer.write(frame, cut, packer) if cut < n else 0
        written += kept
        decoded += kept
        if to_drop and written >= to_drop:
            drop_head()
        if filled > decoded + _GAP_FILL_ALLOWANCE_SECONDS * rate and filled > decoded * 8:
            break  # already hopeless: stop decoding (refused below)
        if limit is not None and written > limit:
            break  # over the limit: refused below, without decoding the rest
    if placing and stamps:  # the stream ended before the frames settled the grid
        start = grid.place(stamps)
        to_drop = phase_drop(start)
    if to_drop and written >= to_drop:
        drop_head()
    if start is None and not bad_packets:
        # Nothing decoded and nothing rejected: the track holds no audio (a stream-copied cut, a screen recording's
        # muted track). Like a file without an audio stream: a video-only clip to the loader, not a corrupt file.
        raise DecodeError(f"{label}: the audio stream holds no samples (an empty track)", reason="missing_audio")
    if start is None:
        raise DecodeError(f"{label}: the audio stream decoded to no samples (corrupt or truncated?)")
    if filled > decoded + _GAP_FILL_ALLOWANCE_SECONDS * rate:
        raise DecodeError(
            f"{label}: the audio timestamps span {written / rate:.3f} s but the stream holds {decoded / rate:.3f} s of "
            f"samples ({filled / rate:.3f} s of gaps): timestamps in the wrong unit (corrupt mdhd timescale?)"
        )
    if limit is not None and written > limit:
        raise DecodeError(f"{label}: the audio spans {written / rate:.3f} s, over max_duration_seconds="
                          f"{max_duration_seconds:g}; raise the limit to decode it", reason="too_large")
    if gaps or overlaps:
        logger.info("%s: filled %d audio gap(s) with silence, trimmed %d overlap(s)", label, len(gaps), overlaps)
    return written, start


def read_audio(
    source: MediaSource,
    *,
    sample_rate: Optional[int] = None,
    start_seconds: Optional[float] = None,
    stop_seconds: Optional[float] = None,
    mono: bool = True,
    name: Optional[str] = None,
    stream_index: Optional[int] = None,
    max_duration_seconds: Optional[float] = None,
    backend: Backend = "auto",
) -> AudioClip:
    """Decode the first audio stream of ``source`` with the presentation time of its first sample.

    Args:
        source: a path, the file's bytes or a binary file object; audio-only files are fine. A file object that
            cannot seek (a pipe) is decoded from its start, whatever the window.
        sample_rate: resample to this rate (soxr HQ); default: the stream's own rate.
        start_seconds: keep samples from this presentation time (half-open window ``[start, stop)``).
        stop_seconds: keep samples before this time.
        mono: downmix the channels into one (:func:`avcore.downmix`: stereo's mean; 5.1 and other layouts as
            ``ffmpeg -ac 1`` mixes them, LFE dropped, scaled to sum to 1).
        name: label for error messages when ``source`` is bytes.
        stream_index: the container index of the audio stream (``ffprobe``'s ``index``); default: the stream
            FFmpeg picks (``av_find_best_stream``). Recorded in ``AudioClip.stream_index``.
        max_duration_seconds: refuse (``too_large``) audio spanning longer than this; None: no limit. Whatever
            the limit, timestamps that need far more silence than the stream holds (a corrupt timescale) are
            refused (``decode``) before that silence is allocated.
        backend: ``pyav`` (frame by frame, any file), ``torchcodec`` (:mod:`loaders._audio_torchcodec`: FFmpeg's
            C++ decode loop overlapped with the downmix and soxr; only where the timeline is provably the frames
            end to end, else DecodeError) or ``auto``: torchcodec where it can answer exactly and the read does not
            seek (no ``start_seconds`` past :data:`_SEEK_FROM_SECONDS`) nor stop in the first half of the media
            (``stop_seconds``, without ``max_duration_seconds``), else PyAV, which stops decoding a second past
            ``stop_seconds`` (the first 30 s of a two-hour MP4 were decoded whole: BENCHMARKS.md, adv64). Both give
            the same start time,
            sample count and gap/overlap/channel rules; sample values agree within float rounding (their FFmpeg
            builds differ).

    Returns:
        AudioClip whose sample ``n`` is presented at ``start_seconds + n / sample_rate``.

    Raises:
        DecodeError: ANY failure caused by the file: no audio stream or an empty one (``reason`` ``missing_audio``), nothing
            decodable or corrupt timestamps (``decode``), over ``max_duration_seconds`` (``too_large``).
        IndexError: the window lies entirely outside the audio (the message gives the valid range).
        ValueError: bad arguments.
        FileNotFoundError, TypeError: a path that does not exist, a source of an unsupported type.

    Example:
        >>> clip = read_audio("sample_data/clip00.mp4", sample_rate=16000)  # doctest: +SKIP
        >>> clip.start_seconds                                             # doctest: +SKIP
        0.0
    """
    check_source(source)
    label = describe_source(source, name)
    if stream_index is not None and (isinstance(stream_index, bool) or not isinstance(stream_index, int) or stream_index < 0):
        raise ValueError(f"stream_index must be an int >= 0 or None, got {stream_index = !r}")
    if max_duration_seconds is not None and not max_duration_seconds > 0:
        raise ValueError(f"max_duration_seconds must be > 0 or None, got {max_duration_seconds = !r}")
    if sample_rate is not None and (not isinstance(sample_rate, int) or sample_rate <= 0):
        raise ValueError(f"sample_rate must be a positive int, got {sample_rate = !r}")
    for bound, value in (("start_seconds", start_seconds), ("stop_seconds", stop_seconds)):
        if value is not None and not math.isfinite(value):  # NaN compared False everywhere: the whole audio came back
            raise ValueError(f"{bound} must be finite, got {bound} = {value!r}")
    if start_seconds is not None and stop_seconds is not None and stop_seconds < start_seconds:
        raise ValueError(f"window must have stop >= start, got {start_seconds = }, {stop_seconds = }")
    if backend not in _BACKENDS:
        raise ValueError(f"backend must be one of {_BACKENDS}, got {backend = !r}")
    check_not_truncated(source, label)
    seeks = start_seconds is not None and start_seconds > _SEEK_FROM_SECONDS
    stops = (backend == "auto" and not seeks and stop_seconds is not None and max_duration_seconds is None
             and _stops_early(source, label, stop_seconds))
    if backend == "torchcodec" or (backend == "auto" and not seeks and not stops):
        try:
            decoded = _audio_torchcodec.read_torchcodec_audio(
                source, label, stream_index=stream_index, mono=mono, sample_rate=sample_rate,
                max_duration_seconds=max_duration_seconds, gap_tolerance_seconds=_GAP_TOLERANCE_SECONDS)
        except MemoryError as e:
            raise DecodeError(f"{label}: out of memory decoding the audio ({e})", reason="too_large") from e
        except _audio_torchcodec.NotExact as why:
            if backend == "torchcodec" and isinstance(why, _audio_torchcodec.NoAudioStream):
                raise DecodeError(f"{label}: {why}", reason="missing_audio") from why
            if backend == "torchcodec":
                raise DecodeError(f"{label}: the torchcodec audio backend cannot decode this exactly ({why}); "
                                  f"use backend='pyav' or 'auto'") from why
            logger.debug("%s: audio with PyAV: %s", label, why)
        else:
            return _windowed(decoded.samples, decoded.start_seconds, sample_rate or decoded.source_sample_rate,
                             start_seconds, stop_seconds, label=label, source_sample_rate=decoded.source_sample_rate,
                             codec=decoded.codec, decode_errors=0, stream_index=decoded.stream_index)

    def decode(stream_blocks: bool):
        container = open_container(source, label, kind="audio")
        try:
            stream = pick_stream(container, "audio", label, stream_index=stream_index)
            seek = grid = None
            phase = 1
            if seeks and can_reopen(source):  # a pipe is decoded from its start: it cannot be opened twice
                seek = start_seconds - _SEEK_MARGIN_SECONDS
                step = _grid_step(stream)
                native_rate = int(stream.codec_context.sample_rate or 0) if stream.codec_context is not None else 0
                phase = _resampled_phase_samples(native_rate, sample_rate)
                if step is None and _stamped_grid_wanted(stream):  # the seek flushes the decoder: no second open
                    grid = _whole_read_stamped_grid(container, stream, label)
                elif step is not None or phase > 1:
                    grid = _whole_read_grid(container, stream, label, step or 1, None if step else 0.0)
                    if step is not None or not stream.codec_context.name.startswith("pcm_"):
                        # the grid's decoder has decoded: the seek needs a new one (PCM has no state: the seek's
                        # flush is enough, and a WAV's second open costs 15 ms)
                        container.close()
                        container = open_container(source, label, kind="audio")
                        stream = pick_stream(container, "audio", label, stream_index=stream_index)
            try:
                decoded = _decode_all(container, stream, label, seek, max_duration_seconds, mono=mono,
                                      sample_rate=sample_rate, stream_blocks=stream_blocks, grid=grid,
                                      phase_samples=phase, stop_seconds=stop_seconds)
            except (DecodeError, _SeekFailed) as why:
                if seek is None or (isinstance(why, DecodeError) and why.reason != "missing_audio"):
                    raise
                # Nothing decoded after the seek: the window starts past the audio's end (a Vorbis decoder gives no
                # samples for the one packet a seek past the end lands on), not an empty track; or the seek was
                # refused (an empty track in Matroska: EPERM, was 'audio decode failed'). Decode the end of the
                # stream (two margins before the container's duration; else all of it), so that the window is
                # refused naming the audio's span (BENCHMARKS.md, adv65).
                duration = container.duration  # microseconds (av.time_base), or None
                end = None if duration is None else ((container.start_time or 0) + duration) / 1e6
                retries = [None] if end is None else [max(0.0, min(seek, end - 2 * _SEEK_MARGIN_SECONDS)), None]
                for retry in retries:
                    container.close()
                    container = open_container(source, label, kind="audio")
                    stream = pick_stream(container, "audio", label, stream_index=stream_index)
                    try:
                        decoded = _decode_all(container, stream, label, retry, max_duration_seconds, mono=mono,
                                              sample_rate=sample_rate, stream_blocks=stream_blocks,
                                              grid=None if retry is None else grid,
                                              phase_samples=1 if retry is None else phase, stop_seconds=stop_seconds)
                        break
                    except (DecodeError, _SeekFailed) as again:
                        if retry is None or (isinstance(again, DecodeError) and again.reason != "missing_audio"):
                            raise
            return decoded, int(stream.index), stream.codec_context.name, _stream_start_seconds(container, stream)
        finally:
            container.close()

    try:
        try:
            decoded, index_of_stream, codec, stream_start = decode(True)
        except _ChannelsGrew:  # (open_container rewinds a file object)
            logger.info("%s: the channel count grew mid-stream: decoding again, keeping every block", label)
            decoded, index_of_stream, codec, stream_start = decode(False)
        samples, first_seconds, rate, decode_errors = decoded
        out_rate = sample_rate or rate
    except DecodeError:
        raise
    except MemoryError as e:
        raise DecodeError(f"{label}: out of memory decoding the audio ({e})", reason="too_large") from e
    except Exception as e:  # noqa: BLE001 - FFmpeg/PyAV/soxr errors on a corrupt file
        raise DecodeError(f"{label}: audio decode failed: {decode_failure(e)}") from e
    return _windowed(samples, first_seconds, out_rate, start_seconds, stop_seconds, label=label,
                     source_sample_rate=rate, codec=codec, decode_errors=decode_errors, stream_index=index_of_stream,
                     stream_start_seconds=stream_start if seeks else None)


def _stops_early(source: MediaSource, label: str, stop_seconds: float) -> bool:
    """Whether a read that stops at ``stop_seconds`` is faster with PyAV, which stops decoding a second past it, than
    with torchcodec, about twice as fast a decode of the whole stream: ``stop_seconds`` in the first half of the
    container's duration (or a duration not stated, or a source read once)."""
    if not can_reopen(source):
        return True
    try:
        container = open_container(source, label, kind="audio")
    except DecodeError:
        return True  # PyAV's decode says why
    try:
        duration = container.duration
    finally:
        container.close()
    return duration is None or stop_seconds < duration / 1_000_000 / 2  # av.time_base: microseconds


def _stream_start_seconds(container, stream) -> Optional[float]:
    """The stream's first time on our timeline (FFmpeg's ``start_time`` less :func:`audio_timeline_shift_seconds`), or
    None when the container does not say."""
    if stream.start_time is None:
        return None
    return float(stream.start_time * stream.time_base) - audio_timeline_shift_seconds(container, stream)


def _windowed(samples: np.ndarray, first_seconds: float, out_rate: int, start_seconds: Optional[float],
              stop_seconds: Optional[float], *, label: str, source_sample_rate: int, codec: str, decode_errors: int,
              stream_index: int, stream_start_seconds: Optional[float] = None) -> AudioClip:
    """The AudioClip of the decoded ``samples`` (sample 0 at ``first_seconds``) cut to the window, if any.

    ``stream_start_seconds``: where the stream begins when ``samples`` were decoded from a seek (they then start near
    the window, not at the stream's start): a window outside the audio is refused naming the stream's whole span."""
    end_seconds = first_seconds + samples.shape[1] / out_rate
    if start_seconds is not None or stop_seconds is not None:
        lo = first_seconds if start_seconds is None else start_seconds
        hi = end_seconds if stop_seconds is None else stop_seconds
        covered_from = first_seconds if stream_start_seconds is None else min(first_seconds, stream_start_seconds)
        check_window_overlaps(lo, math.inf if stop_seconds is None else hi, covered_from, end_seconds, label=label,
                              what="audio")  # [start, open end): past the end is outside, as [start, stop) is
        a = min(max(seconds_to_samples(lo - first_seconds, out_rate), 0), samples.shape[1])
        b = min(max(seconds_to_samples(hi - first_seconds, out_rate), a), samples.shape[1])
        samples = samples[:, a:b]
        first_seconds = first_seconds + a / out_rate
    samples = np.ascontiguousarray(samples, dtype=np.float32)
    if samples.base is not None and samples.base.nbytes > 2 * samples.nbytes:
        samples = samples.copy()  # a window or one row of the decode buffer: do not keep the whole buffer alive
    return AudioClip(
        samples=torch.from_numpy(samples),
        sample_rate=int(out_rate),
        start_seconds=float(first_seconds),
        source_sample_rate=int(source_sample_rate),
        codec=codec,
        decode_errors=decode_errors,
        stream_index=stream_index,
    )
