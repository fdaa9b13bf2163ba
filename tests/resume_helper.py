"""One shared check that a stateful stage resumes exactly: save at start, middle and end, restore, compare.

What a *stage* must provide:

- It is built by ``make_stage()`` (a zero-argument callable returning a fresh, identically configured stage).
- ``iterate(stage, iterator)`` returns an iterator of outputs; by default ``stage(iterator)``. The stage must
  pull inputs lazily from ``iterator`` and must hold every input it has pulled but not yet fully emitted in
  its state. Source stages with no upstream (e.g. a loader over shard URLs) take ``inputs=()`` and ignore
  the iterator.
- ``stage.state_dict()`` returns picklable state; ``stage.load_state_dict(state)`` on a fresh stage restores it.

How the input position is represented: the helper counts how many inputs the stage has pulled from its
iterator when the state is saved (the stage need not report it). The restored stage is fed
``inputs[num_pulled:]``, the inputs not yet consumed, and must produce exactly what the reference run
produced after the save point.

Example:
    run_test_save_load_state(lambda: OnlinePacker([64], buffer_size=8, seed=1), items)
"""
from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Optional, Union

import numpy as np

Position = Union[str, int]


class _CountingIterator:
    """Wraps a sequence and counts how many items were pulled."""

    def __init__(self, items: Sequence[Any]) -> None:
        self._items = items
        self.num_pulled = 0

    def __iter__(self) -> "_CountingIterator":
        return self

    def __next__(self) -> Any:
        if self.num_pulled >= len(self._items):
            raise StopIteration
        item = self._items[self.num_pulled]
        self.num_pulled += 1
        return item


def run_test_save_load_state(
    make_stage: Callable[[], Any],
    inputs: Iterable[Any],
    *,
    positions: Sequence[Position] = ("start", "middle", "end"),
    iterate: Optional[Callable[[Any, Iterator[Any]], Iterable[Any]]] = None,
    reference: Optional[Sequence[Any]] = None,
) -> list[Any]:
    """Checks that saving and restoring a stage at each position continues the reference output exactly.

    For each position: a fresh stage runs until it has yielded that many outputs (``"start"`` = 0,
    ``"middle"`` = half, ``"end"`` = all, or an int), its ``state_dict()`` is pickled and unpickled, and
    the original stage runs on (its remaining output must still match: saving must not disturb it). A
    second fresh stage loads the state, is fed the inputs not yet pulled, and its outputs must equal the
    reference outputs after that position.

    Args:
        make_stage: Builds a fresh stage.
        inputs: The whole input (materialised into a list).
        positions: Save points, as ``"start"``, ``"middle"``, ``"end"`` or output counts.
        iterate: ``iterate(stage, iterator)`` gives the stage's outputs; default ``stage(iterator)``.
        reference: The uninterrupted outputs, when the caller already has them (from a run of an identically
            configured stage over the same inputs); default: one more run of a fresh stage here.

    Returns:
        The reference outputs (so callers can assert more on them).

    Raises:
        AssertionError: A continuation differs; the message names the position and the first difference.
        ValueError: A position is unknown or beyond the number of outputs.
    """
    inputs = list(inputs)
    run = iterate if iterate is not None else (lambda stage, iterator: stage(iterator))
    reference = list(run(make_stage(), iter(inputs))) if reference is None else list(reference)
    for position in positions:
        num_outputs = _resolve_position(position, len(reference))
        stage = make_stage()
        counting = _CountingIterator(inputs)
        outputs = iter(run(stage, counting))
        head = [next(outputs) for _ in range(num_outputs)]
        assert_same(head, reference[:num_outputs], where=f"position {position!r}: outputs before saving")
        state = pickle.loads(pickle.dumps(stage.state_dict()))
        num_pulled = counting.num_pulled
        assert_same(list(outputs), reference[num_outputs:], where=f"position {position!r}: original after saving")
        restored = make_stage()
        restored.load_state_dict(state)
        continuation = list(run(restored, iter(inputs[num_pulled:])))
        assert_same(
            continuation,
            reference[num_outputs:],
            where=f"position {position!r} (saved after {num_outputs} outputs, {num_pulled} inputs pulled): restored",
        )
    return reference


def _resolve_position(position: Position, num_outputs: int) -> int:
    """Maps a named or numeric save point to a count of outputs drawn before saving."""
    named = {"start": 0, "middle": num_outputs // 2, "end": num_outputs}
    if isinstance(position, str):
        if position not in named:
            raise ValueError(f"unknown position {position!r}; use 'start', 'middle', 'end' or an int.")
        return named[position]
    if not 0 <= int(position) <= num_outputs:
        raise ValueError(f"position {position} outside [0, {num_outputs}] (the reference has {num_outputs} outputs).")
    return int(position)


def assert_same(actual: Any, expected: Any, *, where: str = "value") -> None:
    """Raises AssertionError unless ``actual`` equals ``expected`` exactly (recursing into containers).

    Handles dicts, lists, tuples, dataclasses, numpy arrays (dtype and values) and torch tensors.
    """
    if type(actual) is not type(expected):
        raise AssertionError(f"{where}: type {type(actual).__name__} != {type(expected).__name__}")
    if isinstance(actual, dict):
        if list(actual.keys()) != list(expected.keys()):
            raise AssertionError(f"{where}: keys {list(actual)} != {list(expected)}")
        for key in actual:
            assert_same(actual[key], expected[key], where=f"{where}[{key!r}]")
    elif isinstance(actual, (list, tuple)):
        if len(actual) != len(expected):
            raise AssertionError(f"{where}: length {len(actual)} != {len(expected)}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_same(a, e, where=f"{where}[{i}]")
    elif dataclasses.is_dataclass(actual) and not isinstance(actual, type):
        for field in dataclasses.fields(actual):
            assert_same(getattr(actual, field.name), getattr(expected, field.name), where=f"{where}.{field.name}")
    elif isinstance(actual, np.ndarray):
        if actual.dtype != expected.dtype or actual.shape != expected.shape or not np.array_equal(actual, expected):
            raise AssertionError(f"{where}: arrays differ ({actual.dtype}{actual.shape} vs {expected.dtype}{expected.shape})")
    elif type(actual).__module__.startswith("torch"):
        import torch

        if not (actual.dtype == expected.dtype and actual.shape == expected.shape and torch.equal(actual, expected)):
            raise AssertionError(f"{where}: tensors differ ({actual.dtype}{tuple(actual.shape)} vs {expected.dtype}{tuple(expected.shape)})")
    elif actual != expected:
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")
