"""The run's state file: which shards are complete, with their checksum, so a rerun can skip them.

``state.jsonl`` in the output directory, appended (and fsynced) by the coordinating process after each
shard is renamed into place::

    {"config": {...}}                                              first line: options that decide the bytes
    {"shard": "shard-000000.tar", "plan_sha256": "…", "sha256": "…", "size": 10240,
     "manifest": [...], "skipped": [...]}                          one line per completed shard
    {"shard": "shard-000002.tar", "plan_sha256": "…", "sha256": null, "size": 0,
     "manifest": [], "skipped": [...]}                             a shard whose every sample was skipped: no file

A shard counts as done when its latest line's ``plan_sha256`` matches the current plan (same keys, same
input fingerprints) and the file on disk has that size and sha256 (for a shard with no sample, ``sha256`` null:
when there is no file of that name), and none of its samples was skipped for a reason that may not recur
(``RETRIED_REASONS``: a time limit on a loaded machine, an I/O error): such a shard is written again, its skipped
samples tried again. A torn last line (SIGKILL during the
append) is ignored, so at worst one finished shard is written again — with identical bytes.
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["RunState", "file_sha256", "plan_sha256"]

STATE_NAME = "state.jsonl"
RETRIED_REASONS = ("timeout", "read")
"""Skip reasons of the moment, not of the input (the time limit, a file system's error): a rerun tries the sample
again, where a ``decode`` or ``transcript`` skip is kept (the same input fails the same way)."""


def plan_sha256(shard: str, fingerprints: list, config: dict) -> str:
    """Identity of one shard's work: its name, its samples' input fingerprints and the run config."""
    blob = json.dumps([shard, fingerprints, config], sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


def file_sha256(path: str) -> tuple[str, int]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


class RunState:
    """Completed shards of an output directory, read at start and appended as shards finish."""

    def __init__(self, output_dir: str, config: dict, *, read_only: bool = False) -> None:
        self.path = os.path.join(output_dir, STATE_NAME)
        self.config = config
        self.read_only = read_only
        self.entries: dict[str, dict] = {}
        existing = self._read()
        if existing is None and not read_only:
            self._append({"config": config}, fresh=True)

    def _read(self) -> Optional[dict]:
        """Load entries; returns the stored config, or None when there is no state yet."""
        if not os.path.exists(self.path):
            return None
        stored = None
        with open(self.path, "rb") as handle:
            for number, line in enumerate(handle, 1):
                try:
                    entry = json.loads(line)
                except ValueError:
                    logger.warning("%s: line %d is torn (interrupted write); ignored", self.path, number)
                    continue
                if "config" in entry and stored is None:
                    stored = entry["config"]
                elif "shard" in entry:
                    self.entries[entry["shard"]] = entry
        if stored is None:
            return None
        if stored != self.config:
            changed = sorted(k for k in set(stored) | set(self.config) if stored.get(k) != self.config.get(k))
            raise ValueError(
                f"{self.path} records a run with different options ({', '.join(changed)}: "
                f"{ {k: stored.get(k) for k in changed} } then, { {k: self.config.get(k) for k in changed} } now); "
                "hint: use a new output directory, or delete this one to start over"
            )
        return stored

    def _append(self, entry: dict, *, fresh: bool = False) -> None:
        line = json.dumps(entry, sort_keys=True, separators=(",", ":")).encode() + b"\n"
        with open(self.path, "wb" if fresh else "ab") as handle:
            if not fresh and handle.tell() > 0:
                with open(self.path, "rb") as check:
                    check.seek(-1, os.SEEK_END)
                    if check.read(1) != b"\n":
                        handle.write(b"\n")  # close a torn line so this entry parses
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    def is_done(self, shard: str, plan: str, path: str) -> bool:
        """True when ``shard`` was completed for this exact plan, none of its samples was skipped for one of
        ``RETRIED_REASONS``, and the file on disk matches its checksum (a shard whose every sample was skipped: when
        no file of that name exists)."""
        entry = self.entries.get(shard)
        if entry is None or entry.get("plan_sha256") != plan:
            return False
        retried = [s for s in entry.get("skipped") or () if isinstance(s, dict) and s.get("reason") in RETRIED_REASONS]
        if retried:
            logger.warning("%s: %d sample(s) skipped for %s last time (%s): writing the shard again, trying them again",
                           path, len(retried), "/".join(sorted({s["reason"] for s in retried})),
                           ", ".join(str(s.get("key")) for s in retried[:5]) + (", ..." if len(retried) > 5 else ""))
            return False
        if entry.get("sha256") is None:  # every sample skipped: done when no file is there (none was written)
            return not os.path.exists(path)
        if not os.path.exists(path):
            return False
        if os.path.getsize(path) != entry.get("size"):
            logger.warning("%s: size differs from the recorded one; writing it again", path)
            return False
        if file_sha256(path)[0] != entry.get("sha256"):
            logger.warning("%s: checksum differs from the recorded one; writing it again", path)
            return False
        return True

    def record(self, result: dict) -> None:
        """Append a completed shard's result (shard, plan_sha256, sha256, size, manifest, skipped)."""
        if self.read_only:
            raise RuntimeError(f"{self.path} was opened read-only")
        self.entries[result["shard"]] = result
        self._append(result)
