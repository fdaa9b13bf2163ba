"""One output shard's work: process its samples in order and write them; runs in any worker (process, Ray).

Samples are assigned to shards before any work starts, by position in the sorted key list
(``samples_per_shard`` per shard), so the shard a sample lands in never depends on the number of
workers, on timing or on which samples fail: a failed sample leaves its shard one sample shorter. A shard whose
every sample failed is not written at all (no tar without samples): its state entry has ``sha256`` None and
``size`` 0, and any file of that name an earlier run left is removed.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Literal, Optional

from avalign._measure import import_measure_dependencies
from avalign.preprocess._inputs import InputSample
from avalign.preprocess._sample import SampleOptions, process_sample
from avalign.preprocess._writer import ShardWriter
from loaders.errors import SampleError, SkipLog

logger = logging.getLogger(__name__)

__all__ = ["ShardTask", "process_shard"]

OnError = Literal["skip", "raise"]


@dataclass(frozen=True)
class ShardTask:
    """The samples that go into one output shard."""

    index: int
    """Shard number (``shard-{index:06d}.tar``)."""
    name: str
    """File name in the output directory."""
    samples: tuple[InputSample, ...]
    """Its samples, in member order."""
    plan_sha256: str
    """Identity of this work (keys, input fingerprints, options): recorded when done, compared on rerun."""


def process_shard(
    task: ShardTask,
    *,
    output_dir: str,
    options: SampleOptions,
    config: dict,
    on_error: OnError = "skip",
    on_sample: Optional[Callable[[bool], None]] = None,
    process: Optional[Callable[[InputSample], tuple[dict, dict]]] = None,
) -> dict:
    """Process and write one shard; returns its state entry (shard, plan_sha256, sha256, size, manifest, skipped).
    When every sample was skipped no file is written (``sha256`` None, ``size`` 0).

    Args:
        on_sample: called with True (written) or False (skipped) after each sample (in-process progress).
        process: ``sample -> (members, manifest row)`` or raises ``SampleError``; default
            ``process_sample(sample, options, config)``. The local backend passes one that returns results
            measured ahead in a process pool (parallel over samples); the shard is still written here, in order.

    Raises:
        SampleError: a sample failed and ``on_error="raise"`` (the shard's temporary file is removed).
        OSError: the shard cannot be written (ENOSPC gives a message saying so; nothing partial remains).
    """
    # Before the per-sample children fork (watchdog, pool): loaded once here, not once per sample.
    import_measure_dependencies(forced_alignment=any(sample.transcript for sample in task.samples))
    manifest: list[dict] = []
    skipped: list[dict] = []
    skip_log = SkipLog(where="skipped.jsonl", scope="in this shard")  # the first few skips of each reason as warnings
    with ShardWriter(os.path.join(output_dir, task.name)) as writer:
        for sample in task.samples:
            try:
                members, row = process(sample) if process is not None else process_sample(sample, options, config)
            except SampleError as e:
                if on_sample:  # counted before a raise too: the last progress line holds the sample that raised
                    on_sample(False)
                if on_error == "raise":
                    raise
                skip_log.skipped(logger, e.reason, f"skipping {e if sample.source in str(e) else f'{sample.source}: {e}'}")
                skipped.append({"input": sample.source, "key": sample.key, "reason": e.reason, "message": str(e)})
                continue
            for name in sorted(members):
                writer.add(name, members[name])
            manifest.append(dict(row, shard=task.name))
            if on_sample:
                on_sample(True)
        if manifest:
            sha256, size = writer.commit()
        else:  # every sample skipped: no shard file (the writer's temporary goes with the context)
            sha256, size = None, 0
            path = os.path.join(output_dir, task.name)
            if os.path.exists(path):
                logger.info("removing %s: every sample of it was skipped this time", path)
                os.unlink(path)
    return {"shard": task.name, "plan_sha256": task.plan_sha256, "sha256": sha256, "size": size,
            "manifest": manifest, "skipped": skipped}
