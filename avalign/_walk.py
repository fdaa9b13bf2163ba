"""Walking an input directory the same way in ``preprocess`` and ``report``: :func:`walk`."""
from __future__ import annotations

import os
from typing import Iterator

__all__ = ["walk"]


def walk(root: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """``os.walk(root)`` in name order, following links to directories (a dataset folder often links its parts in),
    each real directory once (a link back up the tree is not a loop). Like ``os.walk``, the caller may prune the
    ``dirnames`` list it is given."""
    seen: set[str] = set()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=True):
        real = os.path.realpath(dirpath)
        if real in seen:
            dirnames[:] = []
            continue
        seen.add(real)
        dirnames.sort()
        filenames.sort()
        yield dirpath, dirnames, filenames
