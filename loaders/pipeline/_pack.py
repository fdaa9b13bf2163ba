"""Multi-budget bin packing: an offline planner and an online, checkpointable packer stage.

Packing puts variable-length items (clips, windows) into packs whose summed lengths stay within a
budget in every modality column (frames, audio samples, tokens), so a batch carries little padding::

    budget 4096  |<---------------------------- pack ---------------------------->|
                 [ item 7: 2900            ][ item 3: 800     ][ 1: 350 ][..pad..]
                 fill = (2900 + 800 + 350) / 4096 = 98.9 %

The packer reads lengths only (metadata); payloads are carried through untouched.

Example:
    >>> plan_packs([3000, 1000, 900, 100, 4000], 4096)
    [[4], [0, 1], [2, 3]]
"""
from __future__ import annotations

import bisect
import dataclasses
import logging
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Union

import numpy as np

from loaders.pipeline._budgets import first_over_budget

logger = logging.getLogger(__name__)

__all__ = ["OnlinePacker", "PackItem", "PackStats", "plan_packs"]

Budgets = Union[int, Sequence[int]]


def plan_packs(lengths: Any, budgets: Budgets, *, truncate: bool = False) -> list[list[int]]:
    """Plans packs of item indices so that no pack exceeds any budget.

    One column (``lengths`` of N ints): best-fit decreasing. Items are placed longest first, each into the
    open pack with the smallest residual that still fits it (a sorted residual index, O(log P) per item).
    Several columns (``lengths`` N×M): packs are filled one at a time. Each opens with the longest
    remaining item by normalised sum ``sum_j lengths[i, j] / budgets[j]``, then takes, while anything
    fits, the item leaving the normalised residual closest to zero (L2), which keeps columns balanced.

    The result is deterministic: ties are broken by item index. Packs are listed in the order they were
    opened (the first holds the longest item); indices inside a pack are ascending.

    Args:
        lengths: N non-negative ints, or an N×M table (one column per modality, e.g. frames, audio
            samples, tokens). Floats are accepted when they are whole numbers.
        budgets: One positive int per column, or one int used for every column.
        truncate: Cap items longer than a budget to that budget (the caller must cut the payload to
            match) instead of raising. The number of capped items is logged.

    Returns:
        Packs as lists of item indices; every index in ``range(N)`` appears exactly once.

    Raises:
        ValueError: On a negative or non-integer length, a ragged or >2-D table, a budget count that does
            not match the number of columns, a budget <= 0, or (without ``truncate``) an item longer than a
            budget; the message names the item index, the column, the length and the budget.

    Example:
        >>> plan_packs([[10, 3], [6, 6], [4, 1]], [16, 8])
        [[1, 2], [0]]
    """
    table, budget_row = _validate_table(lengths, budgets)
    table = _enforce_budgets(table, budget_row, truncate=truncate)
    if table.shape[0] == 0:
        return []
    if table.shape[1] == 1:
        packs = _best_fit_decreasing_1d(table[:, 0], int(budget_row[0]))
    else:
        packs = _greedy_fill_nd(table, budget_row)
    return [sorted(pack) for pack in packs]


def lower_bound_num_packs(lengths: Any, budgets: Budgets) -> int:
    """Returns ``max_j ceil(sum_i lengths[i, j] / budgets[j])``, a lower bound on the number of packs.

    Args:
        lengths: As for :func:`plan_packs` (items over a budget are not allowed).
        budgets: As for :func:`plan_packs`.

    Returns:
        The bound (0 for no items).
    """
    table, budget_row = _validate_table(lengths, budgets)
    if table.shape[0] == 0:
        return 0
    totals = table.sum(axis=0)
    return int(max(-(-int(total) // int(budget)) for total, budget in zip(totals, budget_row)))


def _validate_table(lengths: Any, budgets: Budgets) -> tuple[np.ndarray, np.ndarray]:
    """Returns lengths as an int64 N×M array and budgets as an int64 M vector, or raises ValueError."""
    try:
        array = np.asarray(lengths)
    except ValueError as error:
        raise ValueError(
            f"lengths must be N ints or an N×M table of ints; got a ragged sequence ({error}). "
            "Hint: give every item the same number of columns."
        ) from None
    budget_array = np.asarray(budgets)
    if budget_array.ndim > 1:
        raise ValueError(f"budgets must be an int or a 1-D sequence of ints; got shape {budget_array.shape}.")
    if array.size == 0:
        num_columns = 1 if budget_array.ndim == 0 else len(budget_array)
        if array.ndim == 2:
            num_columns = array.shape[1]
        array = np.zeros((0, num_columns), dtype=np.int64)
    if array.ndim == 1:
        array = array.reshape(-1, 1)
    if array.ndim != 2:
        raise ValueError(f"lengths must be N ints or an N×M table; got an array of shape {array.shape}.")
    table = _as_int64(array, name="lengths")
    num_columns = table.shape[1]
    if budget_array.ndim == 0:
        budget_array = np.full(num_columns, budget_array)
    if len(budget_array) != num_columns:
        raise ValueError(
            f"got {len(budget_array)} budgets for {num_columns} length column(s) (lengths shape {table.shape}); "
            "give one budget per column or a single int."
        )
    budget_row = _as_int64(budget_array, name="budgets")
    if (budget_row <= 0).any():
        column = int(np.flatnonzero(budget_row <= 0)[0])
        raise ValueError(f"budget in column {column} is {int(budget_row[column])}; budgets must be >= 1.")
    if (table < 0).any():
        index, column = (int(v) for v in np.argwhere(table < 0)[0])
        raise ValueError(
            f"item index {index} has length {int(table[index, column])} in column {column}; "
            "lengths must be >= 0."
        )
    return table, budget_row


def _as_int64(array: np.ndarray, *, name: str) -> np.ndarray:
    """Converts an integer (or whole-number float) array to int64, else raises ValueError."""
    if array.dtype.kind in "iu":
        return array.astype(np.int64, copy=False)
    if array.dtype.kind == "f":
        finite = np.isfinite(array)
        if finite.all() and (array == np.round(array)).all():
            return array.astype(np.int64)
        position = np.argwhere(~finite | (array != np.round(array)))[0]
        raise ValueError(
            f"{name} must be whole numbers; got {array[tuple(position)].item()!r} at position {tuple(int(p) for p in position)}."
        )
    raise ValueError(f"{name} must be integers; got dtype {array.dtype}. Hint: pass ints or a numpy int array.")


def _enforce_budgets(table: np.ndarray, budget_row: np.ndarray, *, truncate: bool) -> np.ndarray:
    """Raises on (or, with ``truncate``, caps) items longer than a budget."""
    found = first_over_budget(table, budget_row)
    if found is None:
        return table
    if not truncate:
        index, column = found
        raise ValueError(
            f"item index {index} has length {int(table[index, column])} in column {column}, over the budget "
            f"{int(budget_row[column])}; pass truncate=True to cap it, raise the budget, or window the item."
        )
    num_capped = int((table > budget_row).any(axis=1).sum())
    logger.info("capped %d of %d items to the budgets %s", num_capped, table.shape[0], budget_row.tolist())
    return np.minimum(table, budget_row)


def _best_fit_decreasing_1d(sizes: np.ndarray, budget: int) -> list[list[int]]:
    """Best-fit decreasing for one column; open packs are indexed by their residual for O(log P) lookup."""
    order = np.argsort(-sizes, kind="stable")
    residuals: list[int] = []  # sorted distinct residuals of open packs
    packs_by_residual: dict[int, list[int]] = {}
    packs: list[list[int]] = []
    for index, size in zip(order.tolist(), sizes[order].tolist()):
        position = bisect.bisect_left(residuals, size)
        if position == len(residuals):
            pack_id = len(packs)
            packs.append([index])
            residual = budget - size
        else:
            old_residual = residuals[position]
            same = packs_by_residual[old_residual]
            pack_id = same.pop()
            if not same:
                del packs_by_residual[old_residual]
                del residuals[position]
            packs[pack_id].append(index)
            residual = old_residual - size
        same = packs_by_residual.get(residual)
        if same is None:
            packs_by_residual[residual] = [pack_id]
            bisect.insort(residuals, residual)
        else:
            same.append(pack_id)
    return packs


def _greedy_fill_nd(table: np.ndarray, budget_row: np.ndarray) -> list[list[int]]:
    """Bin-centric norm greedy for several columns: fills one pack at a time.

    A pack is opened with the longest remaining item (largest normalised sum ``sum_j w_j``, with
    ``w_j = lengths_j / budget_j``); then, while anything fits, the item that leaves the normalised residual
    ``r`` closest to zero (smallest ``||r - w||^2``) is added. This keeps packs balanced across columns,
    which item-by-item best fit does not (on the benchmark it packed 6 % over the lower bound; this 1.4 %).
    """
    num_items = table.shape[0]
    scale = 1.0 / budget_row.astype(np.float64)
    all_sums = (table * scale).sum(axis=1)
    order = np.lexsort((np.arange(num_items), -all_sums))
    candidates = _Candidates(order, table, scale, all_sums)
    num_left = num_items
    packs: list[list[int]] = []
    while num_left:
        candidates.compact_if_sparse()
        position = candidates.first_alive()
        residual = budget_row - candidates.lengths_at(position)
        pack = [candidates.take(position)]
        num_left -= 1
        while num_left and (residual >= candidates.alive_min).all():
            position = candidates.closest_fit(residual)
            if position < 0:
                break
            residual = residual - candidates.lengths_at(position)
            pack.append(candidates.take(position))
            num_left -= 1
        packs.append(pack)
    return packs


class _Candidates:
    """Unplaced items in decreasing normalised-sum order, stored column by column for fast scans."""

    def __init__(self, order: np.ndarray, table: np.ndarray, scale: np.ndarray, sums: np.ndarray) -> None:
        self.scale = scale
        self._set(order, table[order], sums[order])

    def _set(self, order: np.ndarray, ordered: np.ndarray, sums: np.ndarray) -> None:
        self.order = order
        self.ordered = ordered
        self.columns = [np.ascontiguousarray(ordered[:, j]) for j in range(ordered.shape[1])]
        self.normed = [column * s for column, s in zip(self.columns, self.scale)]
        self.sums = sums
        self.negated_sums = -sums  # ascending, for searchsorted
        self.alive = np.ones(len(order), dtype=bool)
        self.alive_min = ordered.min(axis=0)  # a lower bound on every alive item's length, per column
        self.num_dead = 0

    def compact_if_sparse(self) -> None:
        """Drops placed items once they are a quarter of the arrays."""
        if self.num_dead > len(self.order) // 4:
            keep = np.flatnonzero(self.alive)
            self._set(self.order[keep], self.ordered[keep], self.sums[keep])

    def first_alive(self) -> int:
        """Position of the longest unplaced item."""
        return int(np.argmax(self.alive))

    def lengths_at(self, position: int) -> np.ndarray:
        """Integer lengths (one per column) of the item at ``position``."""
        return self.ordered[position]

    def take(self, position: int) -> int:
        """Marks the item at ``position`` placed and returns its original index."""
        self.alive[position] = False
        self.num_dead += 1
        return int(self.order[position])

    def closest_fit(self, residual: np.ndarray) -> int:
        """Returns the position of the alive item that fits and minimises ``||r - w||^2``, or -1.

        Scans from the first item with ``sum(w) <= sum(r)`` in growing chunks; stops once
        ``(sum(r) - sum(w))^2 / M``, a lower bound on the score of every later item, reaches the best.
        """
        residual_normed = (residual * self.scale).tolist()
        residual_list = residual.tolist()
        residual_sum = float(sum(residual_normed))
        size = len(self.sums)
        position = int(np.searchsorted(self.negated_sums, -(residual_sum + 1e-9), side="left"))
        best_score, best_position, chunk = np.inf, -1, 128
        while position < size:
            if best_position >= 0 and (residual_sum - self.sums[position]) ** 2 / len(residual_list) >= best_score:
                break
            stop = min(position + chunk, size)
            fits = self.alive[position:stop].copy()
            for column, limit in zip(self.columns, residual_list):
                fits &= column[position:stop] <= limit
            if fits.any():
                score = np.zeros(stop - position)
                for normed, r in zip(self.normed, residual_normed):
                    score += (r - normed[position:stop]) ** 2
                score[~fits] = np.inf
                k = int(np.argmin(score))
                if score[k] < best_score:
                    best_score, best_position = float(score[k]), position + k
            position, chunk = stop, min(chunk * 2, 2048)
        return best_position


@dataclasses.dataclass(frozen=True)
class PackItem:
    """One item to pack: metadata for the packer plus an opaque payload carried through unchanged."""

    key: str
    """The sample key (e.g. ``clip017@2``); used in error messages."""
    lengths: tuple[int, ...]
    """Length in each budget column (frames, audio samples, tokens), non-negative ints."""
    payload: Any = None
    """Anything; the packer never reads it. Must be picklable for :meth:`OnlinePacker.state_dict`."""

    def __post_init__(self) -> None:
        lengths = tuple(int(v) for v in np.atleast_1d(np.asarray(self.lengths)).tolist())
        if any(v < 0 for v in lengths) or not lengths:
            raise ValueError(f"item {self.key!r}: lengths must be one or more ints >= 0; got {self.lengths = }.")
        object.__setattr__(self, "lengths", lengths)


@dataclasses.dataclass(frozen=True)
class PackStats:
    """Padding statistics of the packs emitted so far."""

    num_items: int
    """Items emitted inside packs."""
    num_packs: int
    """Packs emitted."""
    num_truncated: int
    """Items whose lengths were capped to the budgets (only with ``truncate=True``)."""
    budgets: tuple[int, ...]
    """Budget per column (in the loader: the six limits ``(frames, samples, tokens, items, words, segments)``, of
    which ``make_loader``'s ``budgets`` are the first three)."""
    total_lengths: tuple[int, ...]
    """Summed item lengths per column over the emitted packs."""

    @property
    def fill(self) -> tuple[float, ...]:
        """Per column: ``total_lengths / (num_packs * budget)``, in [0, 1]; 0 before any pack."""
        if self.num_packs == 0:
            return tuple(0.0 for _ in self.budgets)
        return tuple(total / (self.num_packs * budget) for total, budget in zip(self.total_lengths, self.budgets))

    @property
    def padding(self) -> tuple[float, ...]:
        """Per column: ``1 - fill``, the fraction of budgeted positions that are padding."""
        return tuple(1.0 - fill for fill in self.fill)


_END = object()


def _pack_fills(table: np.ndarray, packs: Sequence[Sequence[int]], budgets: Sequence[int]) -> np.ndarray:
    """Each pack's fill: its fullest column's summed length over that column's budget (``table``: items x columns,
    ``packs``: row indices)."""
    return np.array([(table[list(pack)].sum(axis=0) / np.asarray(budgets, dtype=np.float64)).max() for pack in packs])


class OnlinePacker:
    """Packs a stream of :class:`PackItem` from a bounded look-ahead buffer; checkpointable.

    Items are read into a buffer of ``buffer_size``. When it is full, packs are planned over the buffer
    with :func:`plan_packs`; packs whose fill (largest column fill, ``max_j sum_j / budget_j``) reaches
    ``min_fill`` are emitted and the rest stay buffered to be completed by later items. If that frees
    fewer than ``buffer_size // 16`` items (at least one), the next-fullest packs are emitted too, so every
    round makes progress. At end of input everything left is planned and emitted, the least-filled pack of that
    final round last (the stream's tail, for a tail policy: ``loaders.pipeline._tail``); :meth:`finished` then says
    the pack just emitted was the last.

    Within a round the emission order is a permutation seeded by ``(seed, round_index)``; the same input
    and seed give the same packs in the same order. ``state_dict()`` holds the buffered items (keys,
    lengths and payloads: payloads must be picklable plain data such as bytes, str, numbers, dicts,
    lists or numpy arrays), packs planned but not yet yielded, the counters and the seed; a packer
    restored with ``load_state_dict()`` and fed the input items not yet consumed continues exactly.
    The number of input items consumed is ``state_dict()["num_items_in"]``.

    Example:
        >>> packer = OnlinePacker([8], buffer_size=4, seed=0)
        >>> items = [PackItem(f"k{i}", (n,)) for i, n in enumerate([5, 3, 4, 4, 8])]
        >>> [[item.key for item in pack] for pack in packer.pack(items)]
        [['k0', 'k1'], ['k2', 'k3'], ['k4']]
        >>> packer.stats().padding
        (0.0,)
    """

    def __init__(
        self,
        budgets: Budgets,
        *,
        buffer_size: int = 1024,
        seed: int = 0,
        min_fill: float = 0.98,
        truncate: bool = False,
    ) -> None:
        """Creates a packer.

        Args:
            budgets: One positive int per length column, or one int for a single column.
            buffer_size: Items held for look-ahead (>= 1). Larger packs tighter and delays longer.
            seed: Seeds the emission order within each round.
            min_fill: Fill in (0, 1] at which a planned pack is emitted before end of input.
            truncate: Cap over-budget items (the consumer must cut payloads) instead of raising.
        """
        budget_row = np.atleast_1d(np.asarray(budgets))
        _, budget_row = _validate_table(np.zeros((0, len(budget_row)), dtype=np.int64), budget_row)
        if int(buffer_size) < 1:
            raise ValueError(f"{buffer_size = } must be >= 1; try 256 to 4096.")
        if not 0.0 < float(min_fill) <= 1.0:
            raise ValueError(f"{min_fill = } must be in (0, 1]; try 0.98.")
        self._budgets = tuple(int(v) for v in budget_row)
        self._buffer_size = int(buffer_size)
        self._min_fill = float(min_fill)
        self._truncate = bool(truncate)
        self._seed = int(seed)
        self._buffer: list[PackItem] = []
        self._ready: deque[list[PackItem]] = deque()
        self._num_items_in = 0
        self._num_items_out = 0
        self._num_packs_out = 0
        self._num_truncated = 0
        self._round_index = 0
        self._total_lengths = [0] * len(self._budgets)
        self._input_done = False

    def __call__(self, items: Iterable[PackItem]) -> Iterator[list[PackItem]]:
        """Same as :meth:`pack`."""
        return self.pack(items)

    def pack(self, items: Iterable[PackItem]) -> Iterator[list[PackItem]]:
        """Yields packs (lists of items) from ``items``, reading no further ahead than the buffer needs.

        Args:
            items: The stream. After ``load_state_dict``, pass only the items not yet consumed.

        Yields:
            Lists of :class:`PackItem` whose lengths sum within the budgets in every column.

        Raises:
            ValueError: An item has the wrong number of columns, or exceeds a budget without ``truncate``.
        """
        iterator = iter(items)
        while True:
            while self._ready:
                yield self._take_ready()
            if len(self._buffer) >= self._buffer_size:
                self._plan_round(final=False)
                continue
            item = next(iterator, _END)
            if item is _END:
                self._input_done = True
                break
            self._buffer.append(self._admit(item))
            self._num_items_in += 1
        self._plan_round(final=True)
        while self._ready:
            yield self._take_ready()

    def stats(self) -> PackStats:
        """Returns padding statistics over the packs emitted so far."""
        return PackStats(
            num_items=self._num_items_out,
            num_packs=self._num_packs_out,
            num_truncated=self._num_truncated,
            budgets=self._budgets,
            total_lengths=tuple(self._total_lengths),
        )

    def finished(self) -> bool:
        """Whether the input has ended and every pack has been emitted: the pack emitted last was the stream's last."""
        return self._input_done and not self._ready and not self._buffer

    def min_fill(self) -> float:
        """The fill at which a planned pack counts as full (``min_fill``)."""
        return self._min_fill

    def fill(self, pack: Sequence[PackItem]) -> float:
        """The fill of ``pack``: its fullest column's summed length over that column's budget."""
        if not pack:
            return 0.0
        table = np.array([item.lengths for item in pack], dtype=np.int64)
        return float(_pack_fills(table, [list(range(len(pack)))], self._budgets)[0])

    def held_payloads(self) -> list[Any]:
        """Payloads of the items taken in but not yet emitted (buffered, or in packs planned and not yielded)."""
        return [item.payload for item in self._buffer] + [item.payload for pack in self._ready for item in pack]

    def state_dict(self) -> dict[str, Any]:
        """Returns plain, picklable state: buffered and ready items, counters, seed and budgets."""
        return {
            "version": 1,
            "budgets": list(self._budgets),
            "seed": self._seed,
            "buffer": [_item_to_state(item) for item in self._buffer],
            "ready": [[_item_to_state(item) for item in pack] for pack in self._ready],
            "num_items_in": self._num_items_in,
            "num_items_out": self._num_items_out,
            "num_packs_out": self._num_packs_out,
            "num_truncated": self._num_truncated,
            "round_index": self._round_index,
            "total_lengths": list(self._total_lengths),
            "input_done": self._input_done,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores a state from :meth:`state_dict` (the seed is taken from the state).

        Raises:
            ValueError: The state has another version or other budgets than this packer.
        """
        if state.get("version") != 1:
            raise ValueError(f"unsupported packer state version {state.get('version')!r}; expected 1.")
        if tuple(state["budgets"]) != self._budgets:
            raise ValueError(
                f"state budgets {state['budgets']} differ from this packer's {list(self._budgets)}; "
                "build the packer with the budgets it was saved with."
            )
        self._seed = int(state["seed"])
        self._buffer = [_item_from_state(entry) for entry in state["buffer"]]
        self._ready = deque([_item_from_state(entry) for entry in pack] for pack in state["ready"])
        self._num_items_in = int(state["num_items_in"])
        self._num_items_out = int(state["num_items_out"])
        self._num_packs_out = int(state["num_packs_out"])
        self._num_truncated = int(state["num_truncated"])
        self._round_index = int(state["round_index"])
        self._total_lengths = [int(v) for v in state["total_lengths"]]
        self._input_done = bool(state.get("input_done", False))

    def _admit(self, item: PackItem) -> PackItem:
        """Checks an incoming item against the budgets (capping it with ``truncate``)."""
        if len(item.lengths) != len(self._budgets):
            raise ValueError(
                f"item {item.key!r} has {len(item.lengths)} length column(s) {item.lengths}; "
                f"the packer has {len(self._budgets)} budgets {self._budgets}."
            )
        over = first_over_budget(item.lengths, self._budgets)
        if over is None:
            return item
        if not self._truncate:
            j = over[0]
            raise ValueError(
                f"item {item.key!r} has length {item.lengths[j]} in column {j}, over the budget "
                f"{self._budgets[j]}; pass truncate=True, raise the budget, or window the item."
            )
        self._num_truncated += 1
        capped = tuple(min(n, b) for n, b in zip(item.lengths, self._budgets))
        return dataclasses.replace(item, lengths=capped)

    def _plan_round(self, *, final: bool) -> None:
        """Plans packs over the buffer and moves the chosen ones to the ready queue."""
        if not self._buffer:
            return
        table = np.array([item.lengths for item in self._buffer], dtype=np.int64)
        packs = plan_packs(table, self._budgets)
        fill = _pack_fills(table, packs, self._budgets)
        if final:
            chosen = list(range(len(packs)))
        else:
            by_fill = np.argsort(-fill, kind="stable").tolist()
            min_release = max(1, self._buffer_size // 16)
            chosen, released = [], 0
            for p in by_fill:
                if fill[p] < self._min_fill and released >= min_release:
                    break
                chosen.append(p)
                released += len(packs[p])
        rng = np.random.default_rng([self._seed, self._round_index])
        self._round_index += 1
        order = rng.permutation(len(chosen)).tolist()
        if final and order:  # the least-filled pack last: the stream's tail (loaders.pipeline._tail)
            order.append(order.pop(int(np.argmin([fill[chosen[p]] for p in order]))))
        emitted = set()
        for p in order:
            pack = packs[chosen[p]]
            self._ready.append([self._buffer[i] for i in pack])
            emitted.update(pack)
        self._buffer = [item for i, item in enumerate(self._buffer) if i not in emitted]

    def _take_ready(self) -> list[PackItem]:
        """Pops the next ready pack and counts it in the statistics."""
        pack = self._ready.popleft()
        self._num_packs_out += 1
        self._num_items_out += len(pack)
        for item in pack:
            for j, n in enumerate(item.lengths):
                self._total_lengths[j] += n
        return pack


def _item_to_state(item: PackItem) -> dict[str, Any]:
    """Plain-dict form of an item for ``state_dict``."""
    return {"key": item.key, "lengths": list(item.lengths), "payload": item.payload}


def _item_from_state(entry: dict[str, Any]) -> PackItem:
    """Inverse of :func:`_item_to_state`."""
    return PackItem(key=entry["key"], lengths=tuple(entry["lengths"]), payload=entry["payload"])
