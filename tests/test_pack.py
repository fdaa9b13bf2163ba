"""Packing: plan_packs invariants and quality, the online packer, and its resume."""
from __future__ import annotations

import itertools
import logging

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loaders.pipeline import OnlinePacker, PackItem, lower_bound_num_packs, plan_packs
from resume_helper import run_test_save_load_state


def lognormal_text_lengths(num_items: int, *, seed: int) -> np.ndarray:
    """Token counts ~ round(lognormal(mean=6, sigma=1)) clipped to [1, 4096] (median 403, mean ~660)."""
    rng = np.random.default_rng(seed)
    return np.clip(np.round(rng.lognormal(mean=6, sigma=1, size=num_items)), 1, 4096).astype(np.int64)


def correlated_av_text_lengths(num_items: int, *, seed: int) -> tuple[np.ndarray, list[int]]:
    """Clips of lognormal duration (median 8 s, sigma 0.8, clipped to [0.5, 60] s) as 3 columns:
    frames at 4 fps, 20 ms audio hops, and tokens at a per-clip speech rate uniform in [1, 5] tokens/s.
    Budgets 256 frames / 3200 hops / 192 tokens are all 64 s at the mean rate, so every column binds."""
    rng = np.random.default_rng(seed)
    duration_seconds = np.clip(rng.lognormal(mean=np.log(8), sigma=0.8, size=num_items), 0.5, 60)
    frames = np.ceil(duration_seconds * 4)
    hops = np.ceil(duration_seconds * 50)
    tokens = np.maximum(1, np.round(duration_seconds * rng.uniform(1, 5, size=num_items)))
    budgets = [256, 3200, 192]
    return np.minimum(np.stack([frames, hops, tokens], axis=1).astype(np.int64), budgets), budgets


def check_packs(packs: list[list[int]], table: np.ndarray, budgets: np.ndarray) -> None:
    flat = sorted(itertools.chain.from_iterable(packs))
    assert flat == list(range(len(table)))
    for pack in packs:
        assert pack, "empty pack"
        assert (table[pack].sum(axis=0) <= budgets).all(), (pack, table[pack].sum(axis=0), budgets)


def optimal_num_packs(sizes: list[int], budget: int) -> int:
    """Brute force: the fewest packs for a handful of 1-D items (independent oracle)."""
    best = len(sizes)

    def place(i: int, loads: list[int]) -> None:
        nonlocal best
        if len(loads) >= best:
            return
        if i == len(sizes):
            best = len(loads)
            return
        for k in range(len(loads)):
            if loads[k] + sizes[i] <= budget:
                loads[k] += sizes[i]
                place(i + 1, loads)
                loads[k] -= sizes[i]
        place(i + 1, loads + [sizes[i]])

    place(0, [])
    return best


@st.composite
def tables(draw, max_columns: int = 3):
    num_columns = draw(st.integers(1, max_columns))
    budgets = draw(st.lists(st.integers(1, 60), min_size=num_columns, max_size=num_columns))
    num_items = draw(st.integers(0, 40))
    rows = [[draw(st.integers(0, b)) for b in budgets] for _ in range(num_items)]
    return np.array(rows, dtype=np.int64).reshape(num_items, num_columns), np.array(budgets)


@settings(max_examples=150, deadline=None)
@given(tables())
def test_every_index_once_and_no_pack_over_budget(case):
    table, budgets = case
    packs = plan_packs(table, budgets)
    check_packs(packs, table, budgets)
    assert len(packs) >= lower_bound_num_packs(table, budgets)
    assert plan_packs(table, budgets) == packs  # deterministic


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 30).flatmap(lambda b: st.tuples(st.just(b), st.lists(st.integers(1, b), max_size=7))))
def test_1d_within_best_fit_decreasing_bound_of_optimum(case):
    budget, sizes = case
    packs = plan_packs(sizes, budget)
    check_packs(packs, np.array(sizes, dtype=np.int64).reshape(-1, 1), np.array([budget]))
    # Best-fit decreasing is proven to use at most 11/9 OPT + 6/9 packs.
    assert len(packs) <= 11 / 9 * optimal_num_packs(sizes, budget) + 6 / 9


def test_oversize_item_raises_naming_index_column_length_budget():
    with pytest.raises(ValueError, match=r"item index 2 has length 11 in column 1, over the budget 10"):
        plan_packs([[1, 1], [2, 2], [3, 11]], [10, 10])
    with pytest.raises(ValueError, match=r"item index 1 has length 5000 in column 0, over the budget 4096"):
        plan_packs([10, 5000], 4096)


def test_truncate_caps_and_logs(caplog):
    table = np.array([[30, 2], [5, 50], [4, 4]])
    with caplog.at_level(logging.INFO, logger="loaders.pipeline._pack"):
        packs = plan_packs(table, [20, 10], truncate=True)
    check_packs(packs, np.minimum(table, [20, 10]), np.array([20, 10]))
    assert "capped 2 of 3 items" in caplog.text


@pytest.mark.parametrize(
    ("lengths", "budgets", "match"),
    [
        ([3, -1], 10, r"item index 1 has length -1 in column 0"),
        ([[1, 2], [3, 4]], [10, 10, 10], r"got 3 budgets for 2 length column"),
        ([1, 2], 0, r"budget in column 0 is 0"),
        ([[1, 2], [3, 4]], [5, -2], r"budget in column 1 is -2"),
        ([1.5, 2], 10, r"whole numbers; got 1.5"),
        ([[1, 2], [3]], [10, 10], r"ragged"),
        (np.zeros((2, 2, 2)), 10, r"shape \(2, 2, 2\)"),
    ],
)
def test_bad_inputs_raise(lengths, budgets, match):
    with pytest.raises(ValueError, match=match):
        plan_packs(lengths, budgets)


def test_empty_and_single_budget_broadcast():
    assert plan_packs([], 10) == []
    assert plan_packs(np.zeros((0, 3), dtype=int), [1, 2, 3]) == []
    check_packs(plan_packs([[6, 6], [5, 5], [4, 4]], 10), np.array([[6, 6], [5, 5], [4, 4]]), np.array([10, 10]))


def test_lognormal_text_padding_below_one_percent():
    lengths = lognormal_text_lengths(20_000, seed=0)
    packs = plan_packs(lengths, 4096)
    check_packs(packs, lengths.reshape(-1, 1), np.array([4096]))
    padding = 1 - lengths.sum() / (len(packs) * 4096)
    assert padding < 0.01, padding
    # Pad-to-batch-max on random batches of 16 wastes far more (closed form over the same lengths).
    batches = np.random.default_rng(1).permutation(lengths)[: len(lengths) // 16 * 16].reshape(-1, 16)
    pad_waste = 1 - batches.sum() / (batches.max(axis=1).sum() * 16)
    assert pad_waste > 0.5, pad_waste


def test_multi_budget_within_three_percent_of_lower_bound():
    table, budgets = correlated_av_text_lengths(5_000, seed=0)
    packs = plan_packs(table, budgets)
    check_packs(packs, table, np.array(budgets))
    lower_bound = lower_bound_num_packs(table, budgets)
    assert lower_bound == int(max(np.ceil(table.sum(axis=0) / budgets)))
    assert len(packs) <= 1.03 * lower_bound, (len(packs), lower_bound)


def make_items(table: np.ndarray, *, with_payload: bool = False) -> list[PackItem]:
    return [
        PackItem(f"clip{i:05d}", tuple(row), np.arange(3) + i if with_payload else None)
        for i, row in enumerate(table.tolist())
    ]


def test_online_packer_emits_every_item_once_within_budgets_and_counts():
    table, budgets = correlated_av_text_lengths(3_000, seed=3)
    packer = OnlinePacker(budgets, buffer_size=256, seed=7)
    packs = list(packer.pack(make_items(table)))
    keys = sorted(item.key for pack in packs for item in pack)
    assert keys == [f"clip{i:05d}" for i in range(len(table))]
    for pack in packs:
        assert (np.array([item.lengths for item in pack]).sum(axis=0) <= budgets).all()
    stats = packer.stats()
    assert (stats.num_items, stats.num_packs) == (len(table), len(packs))
    assert stats.total_lengths == tuple(int(v) for v in table.sum(axis=0))
    expected_fill = table.sum(axis=0) / (len(packs) * np.array(budgets))
    np.testing.assert_allclose(stats.fill, expected_fill)
    assert len(packs) <= 1.04 * lower_bound_num_packs(table, budgets)


def test_online_packer_lognormal_padding_and_seed():
    lengths = lognormal_text_lengths(5_000, seed=2)
    items = make_items(lengths.reshape(-1, 1))
    first = [[item.key for item in pack] for pack in OnlinePacker(4096, buffer_size=512, seed=1).pack(items)]
    again = [[item.key for item in pack] for pack in OnlinePacker(4096, buffer_size=512, seed=1).pack(items)]
    other = [[item.key for item in pack] for pack in OnlinePacker(4096, buffer_size=512, seed=2).pack(items)]
    assert first == again
    assert first != other and sorted(map(sorted, first)) == sorted(map(sorted, other))
    assert 1 - lengths.sum() / (len(first) * 4096) < 0.01


def test_online_packer_rejects_oversize_and_truncates():
    with pytest.raises(ValueError, match=r"item 'big' has length 9 in column 0, over the budget 8"):
        list(OnlinePacker(8, buffer_size=4).pack([PackItem("big", (9,))]))
    packer = OnlinePacker([8, 8], buffer_size=4, truncate=True)
    packs = list(packer.pack([PackItem("big", (9, 3)), PackItem("ok", (2, 2))]))
    assert sorted(item.lengths for pack in packs for item in pack) == [(2, 2), (8, 3)]
    assert packer.stats().num_truncated == 1


def test_online_packer_resume_at_start_middle_end():
    table, budgets = correlated_av_text_lengths(400, seed=5)
    items = make_items(table, with_payload=True)
    reference = run_test_save_load_state(
        lambda: OnlinePacker(budgets, buffer_size=64, seed=11),
        items,
        positions=("start", "middle", "end", 1, 17),
    )
    assert sum(len(pack) for pack in reference) == len(items)


def test_resume_helper_catches_a_stage_that_forgets_its_buffer():
    class ForgetfulPacker(OnlinePacker):
        def state_dict(self):
            state = super().state_dict()
            state["buffer"] = []
            return state

    items = make_items(lognormal_text_lengths(200, seed=4).reshape(-1, 1))
    with pytest.raises(AssertionError, match=r"position 'middle'"):
        run_test_save_load_state(lambda: ForgetfulPacker(4096, buffer_size=32, seed=0), items, positions=("middle",))


def test_load_state_dict_rejects_other_budgets():
    state = OnlinePacker([10, 20], buffer_size=4).state_dict()
    with pytest.raises(ValueError, match=r"state budgets \[10, 20\] differ"):
        OnlinePacker([10, 30], buffer_size=4).load_state_dict(state)


def test_held_payloads_are_the_items_not_yet_emitted():
    from loaders.pipeline import OnlinePacker, PackItem

    packer = OnlinePacker([8], buffer_size=4, seed=0)
    items = [PackItem(f"k{i}", (n,), payload=i) for i, n in enumerate([5, 3, 4, 4, 8, 2])]
    packs = packer.pack(iter(items))
    first = next(packs)
    emitted = {item.payload for item in first}
    held = set(packer.held_payloads())
    assert held and not held & emitted and held | emitted <= set(range(6))
    rest = [item.payload for pack in packs for item in pack]
    assert held <= set(rest) and packer.held_payloads() == []


def test_one_over_budget_rule_everywhere():
    """A length equal to its budget fits, one more is over: the same rule in plan_packs and OnlinePacker (and the
    collator and the item stage: all call loaders.pipeline.first_over_budget)."""
    from loaders.pipeline import first_over_budget

    assert first_over_budget((4, 10), (4, 10)) is None and first_over_budget((4, 11), (4, 10)) == (1,)
    assert first_over_budget(np.array([[4, 10], [5, 3]]), (4, 10)) == (1, 0)
    assert plan_packs(np.array([[4, 10]]), [4, 10]) == [[0]]
    with pytest.raises(ValueError, match=r"item index 0 has length 11 in column 1, over the budget 10"):
        plan_packs(np.array([[4, 11]]), [4, 10])
    assert [[i.key for i in p] for p in OnlinePacker([4, 10], buffer_size=2).pack(iter([PackItem("a", (4, 10))]))] == [["a"]]
    with pytest.raises(ValueError, match=r"item 'b' has length 5 in column 0, over the budget 4"):
        list(OnlinePacker([4, 10], buffer_size=2).pack(iter([PackItem("b", (5, 10))])))
