"""``preprocess``: raw media (or shards) → aligned WebDataset shards, in local processes or on Ray.

::

    INPUT ──list──▶ sorted samples ──chunk by samples_per_shard──▶ shard tasks ──skip done (state.jsonl)──▶
        pending tasks ──local: samples measured in a pool of --workers processes, shards written in order here
                       Ray: one task per shard──▶ .shard-N.tar.<pid>.tmp ──rename──▶ shard-N.tar ──▶ state.jsonl line
    end: manifest.jsonl + skipped.jsonl rewritten from state.jsonl (shard order), atomically

A shard whose every sample is skipped is not written (no tar without samples): ``state.jsonl`` records it as
done with ``sha256`` null, its skips go to ``skipped.jsonl`` and ``PreprocessResult.shards_empty`` names it.

Same inputs and options give byte-identical shards, manifest and skipped list whatever the number
of workers or the backend; a killed run leaves no partial ``shard-*.tar`` and a rerun completes it.
"""
from __future__ import annotations

import collections
import errno
import itertools
import logging
import os
import re
import tempfile
import time
from dataclasses import dataclass, field
from typing import Iterator, Literal, Optional

from avalign.preprocess._inputs import InputPlan, InputSample, list_inputs
from avalign.preprocess._lock import output_lock
from avalign.preprocess._sample import SampleOptions, dumps, process_sample, run_config
from avalign.preprocess._shard import ShardTask, process_shard
from avalign.preprocess._state import RunState, plan_sha256
from avalign.preprocess._streamed import close_streamed
from avalign.preprocess._writer import atomic_write_bytes, remove_stale_temporaries, shard_name
from loaders.media import DEFAULT_MAX_PIXELS
from loaders.errors import SampleError

logger = logging.getLogger(__name__)

__all__ = ["PreprocessResult", "plan_shards", "preprocess"]

Backend = Literal["local", "ray"]
_SHARD_FILE = re.compile(r"^shard-(\d{6})\.tar$")


@dataclass(frozen=True)
class PreprocessResult:
    """What a run did (or, with ``dry_run``, would do)."""

    output_dir: str
    """Where the shards, ``manifest.jsonl`` and ``skipped.jsonl`` are."""
    shards: tuple[str, ...]
    """All shard file names of the plan, in order (those in ``shards_empty`` have no file)."""
    shards_written: tuple[str, ...]
    """Shards written by this run (to be written, with ``dry_run``)."""
    shards_reused: tuple[str, ...]
    """Shards already complete from an earlier run (checksum verified)."""
    num_samples: int
    """Samples written (in all shards, reused ones included); 0 with ``dry_run``."""
    num_skipped: int
    """Inputs skipped (input-level and sample-level), as listed in ``skipped.jsonl``."""
    media_seconds: float
    """Total duration of the samples written (from the manifest)."""
    wall_seconds: float
    """How long this run took."""
    dry_run: bool = False
    """True when nothing was written."""
    keys_by_shard: dict = field(default_factory=dict)
    """Shard name → keys planned for it (filled for every run; handy for ``--dry-run``)."""
    media_seconds_processed: float = 0.0
    """Duration of the samples this run measured and wrote (shards reused from an earlier run excluded):
    the figure to divide by ``wall_seconds`` for a throughput."""
    shards_empty: tuple[str, ...] = ()
    """Shards of the plan whose every sample was skipped (this run or an earlier one): no file is written for
    them (a tar without samples), their skips are in ``skipped.jsonl`` and ``state.jsonl`` records them as done,
    so a rerun does not measure them again. Not in ``shards_written`` or ``shards_reused``. With ``dry_run``:
    those an earlier run found empty."""


def _check_options(workers: int, backend: str, samples_per_shard: int, sample_rate: int, reencode, on_error: str,
                   timeout_seconds, max_pixels) -> None:
    if backend not in ("local", "ray"):
        raise ValueError(f"backend must be 'local' or 'ray', got {backend!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be an int >= 1, got {workers = !r}")
    if not isinstance(samples_per_shard, int) or samples_per_shard < 1:
        raise ValueError(f"samples_per_shard must be an int >= 1, got {samples_per_shard = !r}")
    if not isinstance(sample_rate, int) or sample_rate <= 0:
        raise ValueError(f"sample_rate must be a positive int (Hz), got {sample_rate = !r}")
    if reencode not in (None, "mp4"):
        raise ValueError(f"reencode must be None or 'mp4', got {reencode = !r}")
    if on_error not in ("skip", "raise"):
        raise ValueError(f"on_error must be 'skip' or 'raise', got {on_error!r}")
    if timeout_seconds is not None and not timeout_seconds > 0:
        raise ValueError(f"timeout_seconds must be > 0 or None, got {timeout_seconds = !r}")
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, int) or max_pixels <= 0:
        raise ValueError(f"max_pixels must be a positive int (width x height), got {max_pixels = !r}; try {DEFAULT_MAX_PIXELS}")


def _decoder_threads(decoder_threads: Optional[int], *, workers: int, backend: str) -> int:
    """FFmpeg threads per video decode in each measuring process: ``decoder_threads`` when given, else that
    process's share of the cores (several decoding processes with FFmpeg's one thread per core each would run
    ``workers × cores`` threads on ``cores`` cores: BENCHMARKS.md, "Decoder threads in loader workers")."""
    if decoder_threads is not None:
        if isinstance(decoder_threads, bool) or not isinstance(decoder_threads, int) or decoder_threads < 0:
            raise ValueError(f"decoder_threads must be None or an int >= 0 (0: FFmpeg's choice), got {decoder_threads = !r}")
        return decoder_threads
    if backend == "ray":
        return 1
    from loaders.pipeline import worker_decoder_threads

    return worker_decoder_threads(workers)


def _inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _check_output_location(source: str, output_dir: str, plan: InputPlan) -> None:
    if plan.kind == "directory" and _inside(output_dir, source):
        raise ValueError(
            f"output directory {output_dir!r} is inside the input directory {source!r}: its shards would be "
            "read as input on the next run; hint: choose an output directory outside the input"
        )
    for url in plan.shard_urls:
        local = url[len("file://"):] if url.startswith("file://") else url
        if "://" not in local and not local.startswith("pipe:") and _inside(local, output_dir):
            raise ValueError(
                f"input shard {url!r} is inside the output directory {output_dir!r}, where it could be overwritten; "
                "hint: choose another output directory"
            )


def _prepare_output(output_dir: str) -> None:
    """Create ``output_dir`` and prove it writable (clear errors for permissions and a full disk)."""
    if os.path.exists(output_dir) and not os.path.isdir(output_dir):
        shard = output_dir.endswith(".tar") or output_dir.endswith(".tar.gz")
        raise NotADirectoryError(f"output {output_dir!r} exists and is not a directory; hint: pass a directory path"
                                 + ("; it is a shard: was a pattern such as dir/*.tar left unquoted, so that the shell "
                                    "expanded it into INPUT and OUTPUT_DIR? Pass the shards' directory or a brace pattern "
                                    "(e.g. 'dir/shard-{000000..000005}.tar'): a glob is not expanded, even quoted"
                                    if shard else ""))
    try:
        os.makedirs(output_dir, exist_ok=True)
    except PermissionError as e:
        raise PermissionError(f"cannot create output directory {output_dir!r}: {e.strerror}; hint: check permissions") from e
    try:
        with tempfile.NamedTemporaryFile(dir=output_dir, prefix=".write-check-", suffix=".tmp"):
            pass
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise OSError(errno.ENOSPC, f"output directory {output_dir!r} is on a full disk; hint: free space") from e
        raise PermissionError(f"output directory {output_dir!r} is not writable: {e.strerror}; hint: check permissions") from e


def plan_shards(plan: InputPlan, *, samples_per_shard: int, config: dict) -> list[ShardTask]:
    """Assign samples to shards by position in key order (independent of workers and of failures)."""
    samples = sorted(plan.samples, key=lambda s: s.key + ".")  # = the order of their tar member names
    tasks = []
    for index, start in enumerate(range(0, len(samples), samples_per_shard)):
        chunk = tuple(samples[start:start + samples_per_shard])
        name = shard_name(index)
        tasks.append(ShardTask(index, name, chunk, plan_sha256(name, [s.fingerprint() for s in chunk], config)))
    return tasks


def _measure_one(sample: InputSample, options: SampleOptions, config: dict):
    """Pool worker: ``("ok", (members, row))`` or ``("skip", SampleError)`` (returned, not raised: ordered results)."""
    try:
        return "ok", process_sample(sample, options, config)
    except SampleError as e:
        return "skip", e


def _measured_ahead(new_pool, samples, *, options: SampleOptions, config: dict, ahead: int) -> Iterator[tuple]:
    """Results of ``_measure_one`` for ``samples`` in their order, with at most ``ahead`` submitted and not yet
    consumed (bounds the media bytes held in memory), in pools made by ``new_pool()``.

    A worker that dies (the OOM killer; with no time limit the worker itself decodes, so a crash in a native
    library too) breaks its pool and every sample in flight: a new pool measures them again, the one first in line
    alone, so that a sample that breaks a pool on its own is a ``decode`` skip naming it, not the end of the run.
    """
    from concurrent.futures.process import BrokenProcessPool

    pools = [new_pool()]
    pending: collections.deque = collections.deque()

    def submit(sample: InputSample) -> None:
        pending.append((sample, pools[-1].submit(_measure_one, sample, options, config)))

    def replace_pool() -> None:
        pools[-1].shutdown(wait=False, cancel_futures=True)
        pools.append(new_pool())

    try:
        queue = iter(samples)
        for sample in itertools.islice(queue, ahead):
            submit(sample)
        while pending:
            sample, future = pending.popleft()
            try:
                result = future.result()
            except BrokenProcessPool:
                in_flight = [s for s, _ in pending]
                pending.clear()
                replace_pool()
                logger.warning("%s: a worker process died (killed by a signal: the OOM killer?); measuring the %d "
                               "sample(s) in flight again, this one alone", sample.source or sample.key,
                               len(in_flight) + 1)
                submit(sample)
                _, alone = pending.pop()
                try:
                    result = alone.result()
                except BrokenProcessPool:
                    replace_pool()
                    result = "skip", SampleError(
                        f"{sample.source or sample.key}: the worker process measuring it died on its own (killed by a "
                        "signal: the OOM killer, or a crash in a native library); the crash was contained to it",
                        key=sample.key, reason="decode")
                for other in in_flight:
                    submit(other)
            for other in itertools.islice(queue, 1):
                submit(other)
            yield sample.key, result
        pools[-1].shutdown(wait=True)  # all consumed: its workers are idle, and waited for
    finally:
        for pool in pools:
            pool.shutdown(wait=False, cancel_futures=True)


def _run_local(tasks, *, workers: int, on_result, on_sample, options: SampleOptions, config: dict, **shard_kwargs) -> None:
    """Shards in order in this process; with ``workers > 1`` their samples are measured in a pool of ``workers``
    processes, up to ``4 × workers`` samples ahead, so even one shard uses every worker."""
    if workers == 1:
        for task in tasks:
            on_result(process_shard(task, on_sample=on_sample, options=options, config=config, **shard_kwargs))
        return
    samples = [sample for task in tasks for sample in task.samples]
    if not samples:
        for task in tasks:
            on_result(process_shard(task, on_sample=on_sample, options=options, config=config, **shard_kwargs))
        return
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from loaders.media import exit_with_parent, heap_frozen_for_fork

    def new_pool() -> ProcessPoolExecutor:
        # Workers exit when this process dies (SIGKILL, the OOM killer): never blocked forever on the call queue. They
        # fork lazily (at the first submit), so the heap stays frozen for the pool's life.
        return ProcessPoolExecutor(max_workers=min(workers, len(samples)), mp_context=multiprocessing.get_context("fork"),
                                   initializer=exit_with_parent)

    with heap_frozen_for_fork():
        results = _measured_ahead(new_pool, samples, options=options, config=config, ahead=4 * workers)

        def take(sample: InputSample):
            key, (kind, value) = next(results)
            if key != sample.key:  # pragma: no cover - both walk the same list
                raise RuntimeError(f"result for {key!r} arrived for sample {sample.key!r}")
            if kind == "skip":
                raise value
            return value

        try:
            for task in tasks:
                on_result(process_shard(task, on_sample=on_sample, options=options, config=config, process=take,
                                        **shard_kwargs))
            next(results, None)  # the end: the pool is shut down, its workers waited for
        finally:
            results.close()  # after an exception or Ctrl-C: the pools shut down without waiting


def _remove_stale_shards(output_dir: str, num_shards: int) -> None:
    """Shards numbered beyond the current plan come from an earlier, larger plan: remove them."""
    for name in sorted(os.listdir(output_dir)):
        match = _SHARD_FILE.match(name)
        if match and int(match.group(1)) >= num_shards:
            logger.info("removing %s: beyond the current plan of %d shard(s)", name, num_shards)
            os.unlink(os.path.join(output_dir, name))


def _jsonl(rows: list[dict]) -> bytes:
    return b"".join(dumps(row) + b"\n" for row in rows)


def preprocess(
    input: str,
    output_dir: str,
    *,
    workers: int = 1,
    backend: Backend = "local",
    ray_address: Optional[str] = None,
    samples_per_shard: int = 100,
    sample_rate: int = 16000,
    reencode: Optional[Literal["mp4"]] = None,
    dry_run: bool = False,
    on_error: Literal["skip", "raise"] = "skip",
    progress: bool = True,
    timeout_seconds: Optional[float] = 300.0,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    max_duration_seconds: Optional[float] = None,
    decoder_threads: Optional[int] = None,
) -> PreprocessResult:
    """Measure every sample of ``input`` once and write aligned WebDataset shards to ``output_dir``.

    Each sample becomes ``<key>.<media ext>`` (bytes as they are), ``<key>.align.json`` (the ``avalign
    measure`` record plus ``config``), ``<key>.frames.json`` (frame index, video only) and
    ``<key>.transcript.json`` (normalised, original clock), in ``shard-000000.tar``…; plus
    ``manifest.jsonl`` (key, shard, duration: seconds of the aligned clip, num_frames, num_samples: audio samples at
    ``sample_rate``, 0 for video-only media (the result's ``num_samples`` counts clips), num_words: the
    transcript's words as ``avalign.count_words`` counts them, which can exceed the words ``align.json`` places),
    ``skipped.jsonl``
    (input, key, reason, message; reason codes from ``loaders.errors.REASONS``) and ``state.jsonl`` (for resuming).

    Args:
        input: a directory of media with same-stem transcripts (``.srt .vtt .json .TextGrid``), one media file
            (with its same-stem transcript, if any: one sample), or WebDataset shards (path, brace pattern, fsspec
            URL, ``pipe:``), e.g. video2dataset output.
        output_dir: created if needed; must not be inside ``input``.
        workers: local: processes that measure samples (parallel over samples, also within one shard; shards
            are written in order by this process); Ray: CPUs of the local instance (one task per shard).
        backend: ``"local"`` (processes on this machine) or ``"ray"``.
        ray_address: Ray cluster address (``"auto"``, ``"ray://host:10001"``); None starts a local instance.
        samples_per_shard: samples per output shard (the last may hold fewer, failed samples make it shorter).
        sample_rate: rate for the sample indices in ``align.json`` and ``num_samples`` in the manifest.
        reencode: None keeps the media bytes; ``"mp4"`` re-encodes to H.264 in MP4 on the source's clock, audio
            copied (AAC, AC-3, E-AC-3) or encoded to AAC (deterministic flags; ``reencode_mp4``).
        dry_run: list what would be done, write nothing.
        on_error: ``"skip"`` records bad samples in ``skipped.jsonl`` (each logged once); ``"raise"`` stops at
            the first, naming the input: shard-level problems (hostile or duplicate members, truncated tar) raise
            while planning, before anything is written. Keys without media are listed in either mode.
        progress: show progress on stderr: a bar (total, ETA, done and skipped counts) on a terminal, else a
            plain line every 10 s.
        timeout_seconds: per-sample limit for decode + measure (None: no limit).
        max_pixels: skip media whose frames have more pixels (width × height) with reason ``too_large``
            (default 3840 × 2160).
        max_duration_seconds: skip media whose video or audio spans longer (reason ``too_large``); None: no
            limit. Timestamps that cannot be right (a corrupt ``mdhd`` timescale) are refused (``decode``) anyway.
        decoder_threads: FFmpeg threads per video decode; 0 lets FFmpeg choose (one per core). None (default): each
            process's share of the cores, ``loaders.pipeline.worker_decoder_threads(workers)`` locally (all of
            them for one worker, 1 each for as many workers as cores), 1 with Ray (a task holds one CPU). The output
            does not depend on it (frames and timestamps are the same for any thread count).

    Returns:
        PreprocessResult with the shards written and reused, counts and timings.

    Raises:
        FileNotFoundError: ``input`` does not exist.
        PermissionError: ``input`` unreadable or ``output_dir`` unwritable.
        ValueError: bad options, output inside input, or an output directory from a run with other options.
        OSError: disk full (errno ENOSPC; the message says so; completed shards stay, a rerun resumes).
        SampleError: a bad sample with ``on_error="raise"`` (its ``shard``, ``key`` and ``reason`` attached).
        BlockingIOError: another run is writing to ``output_dir`` (it holds ``.avalign-preprocess.lock``).

    Example:
        >>> result = preprocess("clips/", "shards/", workers=4, samples_per_shard=500)   # doctest: +SKIP
        >>> result.shards[:2], result.num_samples, result.num_skipped                    # doctest: +SKIP
    """
    start = time.monotonic()
    _check_options(workers, backend, samples_per_shard, sample_rate, reencode, on_error, timeout_seconds, max_pixels)
    input, output_dir = os.fspath(input), os.fspath(output_dir)
    try:
        plan = list_inputs(input, on_error=on_error)
    finally:  # planning reads JSON members back: no stream of it is kept open while the pool forks
        close_streamed()
    _check_output_location(input, output_dir, plan)
    if max_duration_seconds is not None and not max_duration_seconds > 0:
        raise ValueError(f"max_duration_seconds must be > 0 or None, got {max_duration_seconds = !r}")
    options = SampleOptions(sample_rate=sample_rate, reencode=reencode, timeout_seconds=timeout_seconds, max_pixels=max_pixels,
                            max_duration_seconds=max_duration_seconds,
                            decoder_threads=_decoder_threads(decoder_threads, workers=workers, backend=backend))
    config = run_config(options)
    state_config = dict(config, samples_per_shard=samples_per_shard, max_pixels=max_pixels,
                        **({"max_duration_seconds": max_duration_seconds} if max_duration_seconds is not None else {}))
    tasks = plan_shards(plan, samples_per_shard=samples_per_shard, config=state_config)
    keys_by_shard = {t.name: [s.key for s in t.samples] for t in tasks}
    logger.info("%s: %d sample(s), %d skipped up front, %d shard(s)", input, len(plan.samples), len(plan.skipped), len(tasks))

    if dry_run:
        done = []
        if os.path.isdir(output_dir):
            state = RunState(output_dir, state_config, read_only=True)
            done = [t for t in tasks if state.is_done(t.name, t.plan_sha256, os.path.join(output_dir, t.name))]
        todo = [t for t in tasks if t not in done]
        empty = {t.name for t in done if state.entries[t.name].get("sha256") is None}
        return PreprocessResult(
            output_dir=output_dir, shards=tuple(t.name for t in tasks), shards_written=tuple(t.name for t in todo),
            shards_reused=tuple(t.name for t in done if t.name not in empty), num_samples=0,
            num_skipped=len(plan.skipped), media_seconds=0.0, wall_seconds=time.monotonic() - start, dry_run=True,
            keys_by_shard=keys_by_shard, shards_empty=tuple(t.name for t in tasks if t.name in empty),
        )

    _prepare_output(output_dir)
    with output_lock(output_dir):  # one run per output directory (a second would delete our temporaries)
        remove_stale_temporaries(output_dir)
        state = RunState(output_dir, state_config)
        done = [t for t in tasks if state.is_done(t.name, t.plan_sha256, os.path.join(output_dir, t.name))]
        todo = [t for t in tasks if t not in done]
        if done:
            logger.info("resuming: %d shard(s) already complete, %d to do", len(done), len(todo))

        bar = None
        # done + skipped count the clips of the total; inputs refused while planning (a transcript without media, a
        # duplicate key, an unreadable file) are not among them, and have a counter of their own
        counts = {"done": sum(len(state.entries[t.name]["manifest"]) for t in done),
                  "skipped": sum(len(state.entries[t.name]["skipped"]) for t in done)}
        if plan.skipped:
            counts["not_clips"] = len(plan.skipped)
        if progress and plan.samples:  # nothing to count: no "0/0 clip" line before the summary
            from avalign._progress import Progress

            bar = Progress(total=len(plan.samples), initial=sum(len(t.samples) for t in done), desc="preprocess",
                           unit="clip")

        def on_sample(ok: bool) -> None:
            counts["done" if ok else "skipped"] += 1
            if bar is not None:
                bar.update(1, **counts)

        in_process = backend == "local"  # local: shards are written here, sample by sample (on_sample counts)

        def on_result(entry: dict) -> None:
            state.record(entry)
            if not in_process:
                counts["done"] += len(entry["manifest"])
                counts["skipped"] += len(entry["skipped"])
                if bar is not None:
                    bar.update(len(entry["manifest"]) + len(entry["skipped"]), **counts)

        shard_kwargs = dict(output_dir=output_dir, options=options, config=config, on_error=on_error)
        try:
            if backend == "ray":
                from avalign.preprocess._ray import run_shards_ray

                run_shards_ray(todo, on_result=on_result, ray_address=ray_address, workers=workers, **shard_kwargs)
            else:
                _run_local(todo, workers=workers, on_result=on_result, on_sample=on_sample, **shard_kwargs)
        finally:
            close_streamed()  # the streamed shard this process read on (workers=1), if any
            if bar is not None:
                bar.close()

        _remove_stale_shards(output_dir, len(tasks))
        manifest, skipped = [], list(plan.skipped)
        for task in tasks:
            entry = state.entries[task.name]
            manifest.extend(entry["manifest"])
            skipped.extend(entry["skipped"])
        skipped.sort(key=lambda row: (row["key"], row["input"], row["reason"]))
        atomic_write_bytes(os.path.join(output_dir, "manifest.jsonl"), _jsonl(manifest))
        atomic_write_bytes(os.path.join(output_dir, "skipped.jsonl"), _jsonl(skipped))
        media_seconds = sum(row["duration"] for row in manifest)
        written = {t.name for t in todo}
        media_seconds_processed = sum(row["duration"] for row in manifest if row["shard"] in written)
        empty = {t.name for t in tasks if state.entries[t.name].get("sha256") is None}
        return PreprocessResult(
            output_dir=output_dir, shards=tuple(t.name for t in tasks),
            shards_written=tuple(t.name for t in todo if t.name not in empty),
            shards_reused=tuple(t.name for t in done if t.name not in empty), num_samples=len(manifest),
            num_skipped=len(skipped), media_seconds=media_seconds, wall_seconds=time.monotonic() - start,
            keys_by_shard=keys_by_shard, media_seconds_processed=media_seconds_processed,
            shards_empty=tuple(t.name for t in tasks if t.name in empty),
        )
