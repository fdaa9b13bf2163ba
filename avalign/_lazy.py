"""Re-exports imported on first use (PEP 562), so that ``avalign --help`` does not load torch."""
from __future__ import annotations

import importlib
from typing import Callable

__all__ = ["lazy_exports"]


def lazy_exports(namespace: dict, exports: dict[str, str]) -> tuple[Callable, Callable]:
    """``(__getattr__, __dir__)`` for a package whose public ``name`` lives in module ``exports[name]``.

    ``namespace`` is the package's ``globals()``: a name is imported once, then cached there.
    """
    package = namespace["__name__"]

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(exports[name]), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
