"""Which shards a resume state refers to: the shard list by name, so that a resume finds them in any list order.

A state's positions ``(p, e, w)`` index the epoch's shuffled shard list, and the shuffle permutes the list as it
was passed. The state therefore saves the list (by name, zlib-packed: a few bytes per shard) and a restore maps it
onto the list passed now:

- the same names in the same order: nothing to do;
- the same names in another order (``glob.glob`` / ``os.listdir`` order differs between machines and filesystems):
  the restored epoch runs on the saved order, so it continues exactly; :func:`restore_order` returns it;
- shards added, removed or renamed: ``ValueError`` naming them (the positions would point at other shards).

A shard's name is its file name (``shard-000001.tar``; query string dropped; a URL's percent-encoding decoded, so
``file:///d/my%20shard.tar`` and ``/d/my shard.tar`` are one name; for ``pipe:`` the last ``*.tar``-like word of the
command), so a resume may read the same shards from another directory, mount or bucket. Where names
repeat in the list (``a/0.tar``, ``b/0.tar``) the full URLs are the names. A shard rewritten in place keeps its name:
the keys checked at the saved positions (``ResumePlan.read_keys``, the packer's buffered keys) catch that.
"""
from __future__ import annotations

import logging
import os
import re
import zlib
from collections import Counter
from collections.abc import Sequence
from typing import Optional

logger = logging.getLogger(__name__)

__all__ = ["pack_names", "restore_order", "shard_names", "unpack_names"]

_TAR_WORD = re.compile(r"[^\s/'\"?#=]+\.tar(?:\.[A-Za-z0-9]+)?")


def shard_name(url: str) -> str:
    """A shard's name: its file name (see the module docstring)."""
    if url.startswith("pipe:"):
        words = _TAR_WORD.findall(url)
        return words[-1] if words else url
    path = url.split("?", 1)[0].split("#", 1)[0].rstrip("/")
    name = os.path.basename(path) or url
    if "://" in url and "%" in name:  # a URL's name is percent-encoded ('my%20shard.tar'), a path's is not (adv66)
        from urllib.parse import unquote

        name = unquote(name)
    return name


def shard_names(urls: Sequence[str]) -> list[str]:
    """The names of ``urls``, in order: file names when they are unique in the list, else the full URLs."""
    names = [shard_name(u) for u in urls]
    return names if len(set(names)) == len(names) else list(urls)


def pack_names(names: Sequence[str]) -> bytes:
    """The names as one zlib-compressed blob (a state holds it; newline-separated)."""
    return zlib.compress("\n".join(names).encode("utf-8"), 6)


def unpack_names(blob: bytes) -> list[str]:
    text = zlib.decompress(bytes(blob)).decode("utf-8")
    return text.split("\n") if text else []


def _shown(names: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(repr(n) for n in list(names)[:limit])
    return shown + (f" … ({len(names)} in all)" if len(names) > limit else "")


def restore_order(saved: Sequence[str], urls: Sequence[str], *, epoch: int) -> Optional[list[str]]:
    """``urls`` in the order of the saved names, or None when they are already in it.

    Args:
        saved: The names saved in the state (:func:`shard_names` of the list it was saved with).
        urls: The shard list of the dataset the state is loaded into.
        epoch: The state's epoch (for the messages).

    Raises:
        ValueError: The shards differ (added, removed, renamed); the message names them and what to do.
    """
    names = shard_names(urls)
    if list(names) == list(saved):
        return None
    if Counter(names) != Counter(saved):
        have, had = Counter(names), Counter(saved)
        added = [n for n in names if have[n] > had.get(n, 0)]
        removed = [n for n in saved if had[n] > have.get(n, 0)]
        parts = []
        if added:
            parts.append(f"{len(added)} shard(s) not in the saved list: {_shown(added)}")
        if removed:
            parts.append(f"{len(removed)} shard(s) of the saved list missing: {_shown(removed)}")
        raise ValueError(
            f"the shard list differs from the one the loader state was saved with ({len(saved)} shards, now "
            f"{len(names)}): {'; '.join(parts)}. The state's positions refer to the saved list: resume with the "
            f"same shards (in any order), or start epoch {epoch} afresh without loading the state.")
    by_name = dict(zip(names, urls))
    moved = sum(a != b for a, b in zip(names, saved))
    logger.info("the shard list is in another order than when the loader state was saved (%d of %d shards moved, "
                "e.g. %r): epoch %d continues in the saved order", moved, len(saved),
                next(a for a, b in zip(saved, names) if a != b), epoch)
    return [by_name[n] for n in saved]
