"""``read_audio``'s torchcodec backend: FFmpeg's decode loop in C++, chunk by chunk, overlapped with our downmix
and soxr.

torchcodec's core decodes a time range of frames in one C++ call (no Python per frame). The calls are queued
on torch's inter-op thread pool :data:`_CHUNKS_AHEAD` ahead (``torch.jit.fork`` from TorchScript: they hold no
GIL), each waiting for the one before (it starts where that one's samples end), so the decoder goes from chunk
to chunk on its own, while this thread downmixes each finished chunk (:func:`avcore.downmix`) and pushes it
through a soxr stream::

    decoder (inter-op thread)  [ chunk 0 ][ chunk 1 ][ chunk 2 ] ...
    this thread                           [mix+soxr 0][mix+soxr 1] ...

The samples are decoded at the native rate and channel count (no swresample: its stereo downmix is
``(L + R) / sqrt(2)``, not the mean), so the downmix and resampling are the PyAV backend's, operation for
operation; the downmix of more than two channels takes the layout PyAV reads (MP4; a WAV of more than two
channels is left to PyAV when downmixed: torchcodec does not say its layout). torchcodec concatenates frames
without looking at their timestamps, so this backend only answers where the timeline is provably the frames laid
end to end, and raises :class:`NotExact` otherwise (the caller then decodes with PyAV, which fills gaps and trims
overlaps by timestamp):

- AAC-LC in ISO base media (MP4/M4A/MOV) and PCM in WAV only (:data:`_WAV_CODECS`): their sample times are
  cumulative durations (``stts``, the byte position), so a jump in time shows at every later frame. (A jump
  that a later one cancels within one chunk would need ``ctts`` offsets on an audio track; not checked.)
- Every chunk starts where the samples before it end (within ``gap_tolerance_seconds``), every chunk but the
  last reaches the time it was asked to reach, and (MP4) the samples end where the stream's last frame ends (its
  pts plus its samples, decoded by PyAV after a seek to the end: a few ms): a gap or overlap anywhere in a chunk
  shows at the next boundary or at the end. (WAV's times are its byte positions: no gap can exist.) (MP4) The
  samples also start where PyAV's first frame does: an edit list whose start falls inside a frame (a stream-copied
  cut, ``ffmpeg -ss X -c copy``) makes FFmpeg keep that frame's tail, which the system FFmpeg torchcodec links
  drops whole (its first sample a frame's remainder late).
- The channel count never changes (torchcodec refuses such a frame: NotExact), the stream decodes without an
  error (the PyAV backend skips and counts a bad packet), and the samples stay within ``max_duration_seconds``.

Chunks are consecutive: each starts :data:`_STEP_SECONDS` after the end of the samples before it, after the last
frame decoded and inside the next one (torchcodec would decode from the file's start again for a start before
its last frame's end, and skip a frame wholly before the start; either shows as an overlap or gap: NotExact).
"""
from __future__ import annotations

import collections
import functools
import logging
import math
import os
import threading
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch

from avcore import downmix, resample, seconds_to_samples

logger = logging.getLogger(__name__)

__all__ = ["NoAudioStream", "NotExact", "TorchcodecAudio", "preload", "read_torchcodec_audio"]

_CHUNK_SECONDS = 2.0
"""Audio per torchcodec call: long enough that a call's overhead (~0.1 ms) is nothing, short enough that the
downmix and resampling follow the decoder closely (chosen on the 48 kHz bench file: BENCHMARKS.md, #17's audio
section)."""
_CHUNKS_AHEAD = 8
"""Chunks queued ahead of the one this thread waits for: the decoder never waits for this thread unless it
falls 16 s of audio behind, and no more than that is held decoded (6 MB of 48 kHz stereo)."""
_STEP_SECONDS = 0.001
"""A chunk starts this far after the end of the samples before it (see the module docstring)."""
_WAV_CODECS = frozenset({"pcm_u8", "pcm_s16le", "pcm_s24le", "pcm_s32le", "pcm_f32le", "pcm_f64le"})
"""WAV sample formats answered here (swresample's conversion to float is the PyAV backend's scaling, exactly).
In MP4 only AAC-LC: torchcodec links the system's FFmpeg (5.1 here) and PyAV its own (8.x); they agree on
AAC-LC's start and sample count (and on samples within 1e-7), but not on Opus or MP3 in MP4 (5.1 drops the
first Opus frame: start 20 ms late; MP3's first frame 1 ms late), so those stay with PyAV."""
_LAST_CHUNK_MARGIN_SECONDS = 1.0
"""The chunk whose stop would be within this of the header's end decodes to the end of the stream."""


class NotExact(Exception):
    """This backend cannot show that its result equals the PyAV backend's timeline rules (the message says why)."""


class NoAudioStream(NotExact):
    """The file has no audio stream (or not the one asked for): PyAV would say ``missing_audio`` too."""


@dataclass(frozen=True)
class TorchcodecAudio:
    """What :func:`read_torchcodec_audio` decoded."""

    samples: np.ndarray
    """float32 ``[C, N]``, or ``[1, N]`` channel means with ``mono``, at ``sample_rate`` or the stream's rate."""
    start_seconds: float
    """Presentation time of sample 0 (the first decoded frame's pts)."""
    source_sample_rate: int
    """The stream's own rate."""
    stream_index: int
    """The container index of the decoded stream."""
    codec: str
    """The decoder's name, as PyAV's ``codec_context.name`` gives it (``mp3float``, ``aac``, ...)."""


def _container_head(source) -> bytes:
    """The first 12 bytes of the file (a file object is rewound, as the PyAV backend reads it from the start)."""
    if isinstance(source, (str, os.PathLike)):
        with open(os.fspath(source), "rb") as handle:
            return handle.read(12)
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source[:12])
    if not (hasattr(source, "seek") and hasattr(source, "read")):
        raise NotExact("a file object that cannot seek")
    source.seek(0)
    head = source.read(12)
    source.seek(0)
    return bytes(head or b"")


def _create_decoder(source):
    from torchcodec import _core as core

    if isinstance(source, (str, os.PathLike)):
        return core.create_from_file(os.fspath(source), "approximate")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return core.create_from_bytes(bytes(source) if not isinstance(source, bytes) else source, "approximate")
    return core.create_from_file_like(source, "approximate")


class _InterOpPool:
    """Whether torch's inter-op thread pool works in this process, and starting it safely.

    torch starts the pool on first use and has no fork handler for it: in a process forked after its parent used
    it, a forked task never runs and waiting for it hangs (a preprocess pool or DataLoader worker forked from a
    parent that read audio, or whose own code used ``torch.jit.fork``). Such a process decodes each chunk on the
    calling thread instead (no overlap, same result). Which process that is: one whose parent had started the pool
    through this module, or had the pool's threads running when it forked (Linux: a thread named
    ``PTThreadPool``, torch's name for them, in ``/proc/self/task``; then also its descendants).

    Starting the pool in a forked child can also abort the child (``Invalid thread pool!``): each new pool thread
    first runs ``at::init_num_threads``, which, once ``torch.set_num_threads`` was called in this process or an
    ancestor, calls ``caffe2::pthreadpool()``; in a child of a process that created that (QNNPACK/XNNPACK) pool,
    the first such call replaces the inherited, dead pool, and a second thread calling meanwhile gets a null pool
    and aborts the process. torch's own at-fork handler (``torch.get_num_threads()``) makes that first call only
    when the forking thread had not run a parallel op yet. So before this process's first task, one thread of its
    own runs that same per-thread initialisation alone (``torch.get_num_threads()`` on a new thread, joined):
    exactly what each pool thread does next, nothing set that they would not set. See BENCHMARKS.md, "torchcodec
    audio in forked children"."""

    def __init__(self) -> None:
        self._started_in_pid: Optional[int] = None
        self._lock = threading.Lock()
        self._threads_running_at_fork = False
        self._pid_at_fork = 0

    def usable(self) -> bool:
        """True if the pool was started by this process or may be started now (then it prepares this process
        for it, see above, and records that it is started)."""
        with self._lock:
            if self._started_in_pid is None:
                _init_thread_settings_alone()
                self._started_in_pid = os.getpid()
        return self._started_in_pid == os.getpid()

    def before_fork(self) -> None:
        """Records whether the pool's threads run in the process about to fork (whoever started them)."""
        self._threads_running_at_fork = _inter_op_threads_running()
        self._pid_at_fork = os.getpid()

    def after_fork_in_child(self) -> None:
        """The child's pool is dead if the parent's threads ran; a lock held by another thread at the fork stays
        held in the child: a fresh one."""
        self._lock = threading.Lock()
        if self._threads_running_at_fork:
            self._started_in_pid = self._pid_at_fork


def _inter_op_threads_running() -> bool:
    """Whether this process has a thread named as torch names its inter-op pool's (False where ``/proc`` is not)."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return False
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/comm", "rb") as comm:
                if comm.read().strip() == b"PTThreadPool":
                    return True
        except OSError:  # the thread ended meanwhile
            continue
    return False


def _init_thread_settings_alone() -> None:
    """Runs torch's per-thread initialisation (``at::init_num_threads``) on a new thread, alone (the caller waits
    for it): in a forked child, it replaces the inherited ``caffe2::pthreadpool()`` before threads can race to."""
    thread = threading.Thread(target=torch.get_num_threads, name="avalign-torch-thread-init")
    thread.start()
    thread.join()


_INTER_OP_POOL = _InterOpPool()
"""A fact about this process, not a setting: which process started torch's inter-op pool."""
if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_INTER_OP_POOL.before_fork, after_in_child=_INTER_OP_POOL.after_fork_in_child)


def _first_chunk(decoder: torch.Tensor, stop: Optional[float]
                 ) -> tuple[torch.Tensor, float, float, int, Optional[float]]:
    """The stream's first chunk. Every chunk is (frames ``[C, n]``, pts of its first frame, pts of the stream's
    first frame, samples decoded so far including these, the stop it was asked for: None for the last one)."""
    frames, first = torch.ops.torchcodec_ns.get_frames_by_pts_in_range_audio(decoder, start_seconds=-1e9,
                                                                              stop_seconds=stop)
    first_seconds = first.item()
    return frames, first_seconds, first_seconds, frames.size(1), stop


def _next_chunk(decoder: torch.Tensor,
                previous: torch.jit.Future[tuple[torch.Tensor, float, float, int, Optional[float]]],
                sample_rate: int, chunk_seconds: float, last_from_seconds: float, step_seconds: float
                ) -> tuple[torch.Tensor, float, float, int, Optional[float]]:
    """The chunk after ``previous`` (waited for): from ``step_seconds`` after its samples end, ``chunk_seconds``
    long, or to the end of the stream once the stop would pass ``last_from_seconds``. After the last chunk: an
    empty one."""
    frames, first, first_of_stream, total, previous_stop = torch.jit.wait(previous)
    if previous_stop is None:
        return torch.zeros(0, 0), 0.0, first_of_stream, total, previous_stop
    start = first_of_stream + total / sample_rate + step_seconds
    stop: Optional[float] = start + chunk_seconds
    if start + chunk_seconds >= last_from_seconds:
        stop = None
    frames, first_pts = torch.ops.torchcodec_ns.get_frames_by_pts_in_range_audio(decoder, start_seconds=start,
                                                                                  stop_seconds=stop)
    return frames, first_pts.item(), first_of_stream, total + frames.size(1), stop


def _fork_first(decoder: torch.Tensor, stop: Optional[float]
                ) -> torch.jit.Future[tuple[torch.Tensor, float, float, int, Optional[float]]]:
    return torch.jit.fork(_first_chunk, decoder, stop)


def _fork_next(decoder: torch.Tensor,
               previous: torch.jit.Future[tuple[torch.Tensor, float, float, int, Optional[float]]],
               sample_rate: int, chunk_seconds: float, last_from_seconds: float, step_seconds: float
               ) -> torch.jit.Future[tuple[torch.Tensor, float, float, int, Optional[float]]]:
    return torch.jit.fork(_next_chunk, decoder, previous, sample_rate, chunk_seconds, last_from_seconds,
                          step_seconds)


@functools.lru_cache(maxsize=2)
def _launchers(overlap: bool):
    """(fork_first, fork_next). ``overlap``: scripted once per process (a few ms), so the forks run on torch's
    inter-op pool, each chunk's task waiting (suspended, not blocking a thread) for the one before: the decoder
    goes from chunk to chunk without waiting for this thread. (A custom op called from Python holds the GIL, and
    ``torch.jit.fork`` runs in parallel only from TorchScript.) Without it, plain Python: each fork runs at once,
    on this thread."""
    from torchcodec import _core  # noqa: F401 - registers torch.ops.torchcodec_ns

    if overlap:
        return torch.jit.script(_fork_first), torch.jit.script(_fork_next)
    return _fork_first, _fork_next


def preload() -> bool:
    """Imports torchcodec's core and scripts the chunk launchers in this process, so that processes forked from it
    afterwards (loader and DataLoader workers) inherit them instead of each importing torchcodec on its first read
    (the import is the bulk of a worker's start-up: BENCHMARKS.md, "Time to first batch"). Starts no thread (the
    inter-op pool starts on the first read). False when torchcodec cannot be imported (``read_audio`` then uses
    PyAV)."""
    try:
        _launchers(True)
    except (ImportError, OSError, RuntimeError) as error:  # not installed, or its FFmpeg libraries do not load
        logger.debug("torchcodec not preloaded: %s", error)
        return False
    return True


class _Output:
    """Where the chunks go: kept as they are, downmixed, or downmixed and streamed through soxr HQ."""

    def __init__(self, *, mono: bool, from_rate: int, to_rate: int) -> None:
        import soxr

        self._mono = mono
        self.channel_names: Optional[tuple[str, ...]] = None
        """The layout the downmix follows (set before the first chunk is added)."""
        self._rates = (from_rate, to_rate)
        self._parts: list[np.ndarray] = []
        self._stream = (soxr.ResampleStream(from_rate, to_rate, 1, dtype="float32", quality="HQ")
                        if mono and from_rate != to_rate else None)

    def add(self, chunk: np.ndarray) -> None:
        if not self._mono:
            self._parts.append(chunk)
        elif self._stream is None:
            self._parts.append(downmix(chunk, self.channel_names)[None])
        else:
            self._parts.append(self._stream.resample_chunk(downmix(chunk, self.channel_names))[None])

    def result(self, channels: int, total: int) -> np.ndarray:
        """All samples; resampled ones have ``round_half_up(total * to / from)`` (the rule of ``resample``)."""
        from_rate, to_rate = self._rates
        if self._stream is not None:
            self._parts.append(self._stream.resample_chunk(np.zeros(0, dtype=np.float32), last=True)[None])
        rows = 1 if self._mono else channels
        out = np.concatenate(self._parts, axis=1) if self._parts else np.zeros((rows, 0), dtype=np.float32)
        if self._stream is None:
            return resample(out, from_rate, to_rate)
        target = seconds_to_samples(total / from_rate, to_rate)
        if out.shape[1] < target:
            out = np.pad(out, ((0, 0), (0, target - out.shape[1])))
        return out[:, :target]


@dataclass(frozen=True)
class _Mp4Facts:
    """What PyAV says of the MP4's audio stream."""

    index: int
    """The stream the PyAV backend would decode (``pick_stream``)."""
    sample_rate: int
    first_frame_seconds: float
    """The time of the first decoded sample (the first frame's pts, after FFmpeg applied the edit list's start)."""
    last_frame_end_seconds: float
    """Where the last frame ends on the stream's timeline: its pts plus its samples / rate."""
    codec: str
    """PyAV's decoder name (``AudioClip.codec``)."""
    channel_names: tuple[str, ...]
    """FFmpeg's names of the channels (the layout the downmix follows)."""


def _mp4_facts(source, label: str, stream_index: Optional[int]) -> _Mp4Facts:
    """PyAV's view of the stream: seek to the end and decode the last packet (a few ms). Raises NotExact when
    that fails or the codec is not AAC-LC (the note of :data:`_WAV_CODECS`)."""
    import av

    from loaders._source import open_for_pyav, pick_stream

    try:
        with av.open(open_for_pyav(source), mode="r", metadata_errors="ignore") as container:
            stream = pick_stream(container, "audio", label, stream_index=stream_index)
            context = stream.codec_context
            if context.name != "aac" or context.profile != "LC":
                raise NotExact(f"codec {context.name} profile {context.profile}: only AAC-LC in MP4 "
                               f"(the note of _WAV_CODECS)")
            rate = int(context.sample_rate)
            first = next((frame.time for frame in container.decode(stream) if frame.samples), None)
            if first is None:
                raise NotExact("no first frame")
            container.seek(1 << 62, stream=stream, backward=True)
            end = None
            for frame in container.decode(stream):
                if frame.time is not None and frame.samples:
                    end = float(frame.time) + frame.samples / rate
            if end is None:
                raise NotExact("no last frame after a seek to the end")
            return _Mp4Facts(index=int(stream.index), sample_rate=rate, first_frame_seconds=float(first),
                             last_frame_end_seconds=end, codec=context.name,
                             channel_names=tuple(channel.name for channel in context.layout.channels))
    except NotExact:
        raise
    except Exception as e:  # noqa: BLE001 - whatever fails here, the PyAV backend reports it properly
        raise NotExact(f"PyAV could not find the last frame: {type(e).__name__}: {e}") from e
    finally:
        if hasattr(source, "seek"):
            source.seek(0)


def read_torchcodec_audio(source, label: str, *, stream_index: Optional[int], mono: bool,
                          sample_rate: Optional[int], max_duration_seconds: Optional[float],
                          gap_tolerance_seconds: float) -> TorchcodecAudio:
    """Decode the whole audio stream (``read_audio``'s rules, no window) or raise :class:`NotExact`.

    Raises:
        NotExact: anything this backend cannot show to be exact, or any failure (the caller decodes with PyAV,
            which raises the errors ``read_audio`` documents). Only ``MemoryError`` passes through.
    """
    try:
        return _read_torchcodec_audio(source, label, stream_index=stream_index, mono=mono, sample_rate=sample_rate,
                                      max_duration_seconds=max_duration_seconds,
                                      gap_tolerance_seconds=gap_tolerance_seconds)
    except (NotExact, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - e.g. a corrupt packet decoded on this thread (a forked process)
        raise NotExact(f"torchcodec: {type(e).__name__}: {e}".splitlines()[0]) from e


def _read_torchcodec_audio(source, label: str, *, stream_index: Optional[int], mono: bool,
                           sample_rate: Optional[int], max_duration_seconds: Optional[float],
                           gap_tolerance_seconds: float) -> TorchcodecAudio:
    try:
        head = _container_head(source)
    except OSError as e:
        raise NotExact(f"cannot read the header: {e}") from e
    is_mp4 = head[4:8] == b"ftyp"
    if not (is_mp4 or (head[:4] == b"RIFF" and head[8:12] == b"WAVE")):
        raise NotExact("not an MP4/MOV or WAV file")
    shared_reader = not isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview))
    facts = None
    if is_mp4 and shared_reader:  # before torchcodec reads it: a file object cannot be read by both at once
        facts = _mp4_facts(source, label, stream_index)
        stream_index = facts.index
    try:
        from torchcodec import _core as core

        decoder = _create_decoder(source)
        container = core.get_container_metadata(decoder)
        index = container.best_audio_stream_index if stream_index is None else stream_index
        if index is None or not 0 <= index < len(container.streams):
            raise NoAudioStream("no audio stream" if index is None else f"no audio stream {index}")
        meta = container.streams[index]
        if not isinstance(meta, core._metadata.AudioStreamMetadata) or not meta.sample_rate:
            raise NotExact(f"stream {index} is not audio with a sample rate")
        core.add_audio_stream(decoder, stream_index=index)
    except NotExact:
        raise
    except Exception as e:  # noqa: BLE001 - torchcodec missing, or a file it cannot open
        raise NotExact(f"torchcodec cannot open it: {type(e).__name__}: {e}") from e
    rate = int(meta.sample_rate)
    header_end = None
    if meta.duration_seconds_from_header:
        header_end = (meta.begin_stream_seconds_from_header or 0.0) + meta.duration_seconds_from_header
    codec = meta.codec or ""
    if not is_mp4 and codec not in _WAV_CODECS:
        raise NotExact(f"codec {codec} in WAV (see _WAV_CODECS)")
    out = _Output(mono=mono, from_rate=rate, to_rate=sample_rate or rate)
    limit = None if max_duration_seconds is None else max_duration_seconds * rate
    begin = meta.begin_stream_seconds_from_header or 0.0
    # the chunk whose stop would pass this decodes to the end (no header duration: one chunk, the whole stream)
    last_from = -math.inf if header_end is None else header_end - _LAST_CHUNK_MARGIN_SECONDS
    fork_first, fork_next = _launchers(_INTER_OP_POOL.usable())
    first_stop = None if begin + _CHUNK_SECONDS >= last_from else begin + _CHUNK_SECONDS
    futures = collections.deque([fork_first(decoder, first_stop)])

    def queue_next() -> None:  # (past the last chunk, a task returns an empty chunk at once)
        futures.append(fork_next(decoder, futures[-1], rate, _CHUNK_SECONDS, last_from, _STEP_SECONDS))

    for _ in range(_CHUNKS_AHEAD):
        queue_next()
    first_seconds: Optional[float] = None
    channels = total = 0
    try:
        if is_mp4 and facts is None:  # while the first chunks decode
            facts = _mp4_facts(source, label, stream_index)
        if facts is not None:
            if (facts.index, facts.sample_rate) != (index, rate):
                raise NotExact(f"PyAV picks stream {facts.index} at {facts.sample_rate} Hz, "
                               f"torchcodec {index} at {rate}")
            codec = facts.codec
        while True:
            queue_next()
            try:
                frames, first, _, decoded, stop = futures.popleft().wait()
            except RuntimeError as e:
                raise NotExact(f"torchcodec: {e}".splitlines()[0]) from e
            count = int(frames.shape[1])
            if decoded != total + count:
                raise NotExact(f"torchcodec's chunks count {decoded} samples, these add up to {total + count}")
            if first_seconds is None:
                first_seconds, channels = first, int(frames.shape[0])
                if mono and channels > 2:
                    if facts is None or len(facts.channel_names) != channels:
                        raise NotExact(f"{channels} channels whose layout PyAV has not read (the downmix needs it)")
                    out.channel_names = facts.channel_names
            expected = first_seconds + total / rate
            if abs(first - expected) > gap_tolerance_seconds:
                raise NotExact(f"a gap or overlap of {first - expected:+.4f} s before {first:.3f} s")
            total += count
            end = first_seconds + total / rate
            if limit is not None and total > limit:
                raise NotExact("longer than max_duration_seconds")
            if stop is not None and end < stop - gap_tolerance_seconds:
                raise NotExact(f"the samples end at {end:.3f} s, before {stop:.3f} s: a gap (or a wrong header)")
            out.add(frames.numpy())  # while the next chunks decode
            if stop is None:
                break
    finally:
        for future in futures:  # the last one finishes after all others: the decoder is not freed under a call
            try:
                future.wait()
            except RuntimeError:
                pass
    if total == 0 or first_seconds is None:
        raise NotExact("no samples")
    end = first_seconds + total / rate
    if facts is not None and abs(first_seconds - facts.first_frame_seconds) > gap_tolerance_seconds:
        raise NotExact(f"the samples start at {first_seconds:.4f} s, PyAV's first frame at "
                       f"{facts.first_frame_seconds:.4f} s (an edit list starting inside a frame: the system FFmpeg "
                       "drops that frame)")
    if facts is not None and abs(end - facts.last_frame_end_seconds) > gap_tolerance_seconds:
        raise NotExact(f"the samples end at {end:.4f} s, the last frame at {facts.last_frame_end_seconds:.4f} s: "
                       f"a gap or overlap")
    return TorchcodecAudio(samples=out.result(channels, total), start_seconds=first_seconds, source_sample_rate=rate,
                           stream_index=int(index), codec=codec)
